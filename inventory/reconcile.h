/*
 * BMC against host: for a node whose BMC (Redfish GPU processors, HGX
 * firmware inventory) and host (nvidia-smi over SSH) both list GPUs, do
 * they agree? Three checks, each finding with both sides' values (the
 * BMC's as expected, the host's as actual):
 *   count     how many GPUs each side lists (component "gpus");
 *   serial    a GPU serial one side lists and the other does not: on the
 *             BMC only, a GPU fallen off the bus; on the host only, a stale
 *             BMC cache (component "gpus");
 *   firmware  for a GPU both list (matched by serial), the firmware the BMC
 *             holds against the VBIOS the driver runs: a firmware staged on
 *             the BMC, waiting for a power cycle (component "gpuN.firmware",
 *             the BMC's key for that GPU).
 * Pure (no I/O), one thread; results point into the sweep.
 */
#ifndef GF_RECONCILE_H
#define GF_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory/sweep.h"
#include "lib/err.h"

struct gf_reconcile_item {
	char *component;   /* "gpus", "gpu3.firmware" */
	const char *check; /* "count", "serial", "firmware" (a constant) */
	char *expected;    /* the BMC's value, NULL: the BMC lists none */
	char *actual;      /* the host's value, NULL: the host shows none */
	char *detail;      /* one line for people */
};

struct gf_reconcile_node {
	const struct gf_sweep_node *node;
	bool compared; /* both sides listed GPUs */
	struct gf_reconcile_item *items;
	size_t n;
};

struct gf_reconcile {
	struct gf_reconcile_node *nodes; /* one per node of the sweep, in its order */
	size_t n;
	size_t compared, findings, nodes_with_findings;
};

/*
 * Reconcile every node of @sw, which must be loaded with details (hardware
 * and host facts). Free with gf_reconcile_free() (accepts NULL) before @sw.
 */
struct gf_reconcile *gf_reconcile_compute(const struct gf_sweep *sw);
void gf_reconcile_free(struct gf_reconcile *r);

#endif
