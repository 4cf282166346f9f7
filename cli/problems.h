/*
 * cli/problems.c: the block every fan-out verb ends with on a terminal, after
 * its per-node lines (alone with -q): what needs attention, one row per
 * problem (a failed or partial node and its error, a node's critical
 * sensors, its new critical SEL entries), folded by -C like any table, then
 * one summary line ("201 nodes: 198 ok, 3 failed"). Built from the typed
 * results of every verb in one place; never in a pipe or another --format.
 *
 *   if (cli_problems_shown(cli, n)) {
 *           p = cli_problems_new(false);
 *           for each node: cli_problems_add_slot(p, name, &slots[i]);
 *           cli_problems_print(cli, p);   // prints and frees
 *   }
 */
#ifndef GF_CLI_PROBLEMS_H
#define GF_CLI_PROBLEMS_H

#include "cli/common.h"
#include "inventory/sweep.h"

/* Is the block printed: stdout a terminal, the table format, more than one node (or -q)? */
bool cli_problems_shown(const struct gf_cli *cli, size_t n);
/* A new block; @partial: the summary counts partial nodes (sweep). */
struct cli_problems *cli_problems_new(bool partial);
/* A fan-out node's result: failed with its error, or its critical sensors. */
void cli_problems_add_slot(struct cli_problems *p, const char *node, const struct gf_result *slot);
/* A sweep's node: partial or failed with its errors, critical sensors, new critical SEL entries. */
void cli_problems_add_sweep(struct cli_problems *p, const struct gf_sweep_node *sn);
/* A filter chose nothing on @n nodes (the summary says so); (size_t)-1: no filter given. */
void cli_problems_nomatch(struct cli_problems *p, size_t n);
/* Print the block and the summary on stdout, and free @p. */
void cli_problems_print(const struct gf_cli *cli, struct cli_problems *p);

#endif
