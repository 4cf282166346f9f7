/* What the inventory verbs (drift, diff, inventory) share: targets, sweep references, output. */
#ifndef GF_CLI_INV_H
#define GF_CLI_INV_H

#include "cli/common.h"
#include "inventory/drift.h"
#include "inventory/store.h"
#include "lib/nodeset.h"

/*
 * TARGETS for a verb that reads the store: node set syntax, @group from the
 * registry, but names need not be registered (imported nodes are not).
 * No TARGETS: @ret is empty and *ret_all is true. 0 or an exit code (printed).
 */
int inv_targets(struct gf_cli *cli, char **args, int nargs, struct gf_nodeset *ret, bool *ret_all);

/*
 * inv_targets(), then the inventory opened into *@db, with the registry
 * loaded when the TARGETS name nodes or @registry asks for it (groups).
 * 0 or an exit code (printed).
 */
int inv_open(struct gf_cli *cli, char **args, int nargs, bool registry, struct gf_nodeset *ret,
	     bool *ret_all, struct gf_db **db);

/* A growing list of shell globs from options like --component a,b --component c. */
struct inv_globs {
	char **v;
	size_t n;
};

void inv_globs_add(struct inv_globs *g, const char *arg);
void inv_globs_release(struct inv_globs *g);

/* The sweep numbered @s ("12"); prints and returns an exit code when there is none. */
int inv_find_sweep(const struct gf_sweep_info *all, size_t n, const char *s,
		   const struct gf_sweep_info **ret);

/*
 * A baseline: the file @file ("-": stdin, in the form of inventory/codec.h),
 * or, when @file is NULL, "like node @node's last sweep". GF_E_USAGE when
 * the file cannot be read or the node has not been swept.
 */
int inv_load_baseline(struct gf_db *db, const char *file, const char *node,
		      struct gf_baseline **ret, struct gf_err *err);

/*
 * --since @s (a sweep number, a date, or a duration ago) as the bound of
 * @q (rows before it), and a description of it for JSON output (new
 * reference) in *ret_desc. 0 or an exit code (printed).
 */
int inv_since_bound(const char *s, const struct gf_sweep_info *all, size_t nall,
		    struct gf_store_query *q, json_t **ret_desc);

/* Is the output a human table (not json, ndjson, csv)? */
bool inv_is_table(const struct gf_cli *cli);

/* Print @objs in the output format (table/csv with @spec). */
void inv_print(const struct gf_cli *cli, json_t *const *objs, size_t n,
	       const struct gf_render_spec *spec);

/*
 * A plain table of @rows (objects) with the columns @cols (member, title),
 * for listings that are not one row per node. Cells as the node tables show them.
 */
void inv_table(const struct gf_col *cols, size_t ncols, json_t *const *rows, size_t n);

/*
 * Output one object at a time: json and ndjson are written as they come (a
 * fleet's worth of objects is never held at once); table and csv are
 * collected and printed by inv_out_end() with @spec.
 */
struct inv_out {
	const struct gf_cli *cli;
	const struct gf_render_spec *spec;
	json_t **objs; /* table, csv */
	size_t n, cap;
	bool any; /* json: an object was written */
};

void inv_out_begin(struct inv_out *o, const struct gf_cli *cli, const struct gf_render_spec *spec);
/* Takes the reference. */
void inv_out_add(struct inv_out *o, json_t *obj);
void inv_out_end(struct inv_out *o);

/* "2026-11-29T12:00:00.000Z" as a new JSON string. */
json_t *inv_time_json(double t);

/* The registry groups of @node joined by ',' ("" when none or unregistered); caller frees. */
char *inv_groups_of(const struct gf_cli *cli, const char *node);

/*
 * The metrics of each node's last sweep and its drift (gpufleet-metrics(1)),
 * of @nodes only when @nnodes > 0: to @path, replaced atomically, or to
 * stdout when @path is NULL. *ret_n (nullable): the nodes with a sweep.
 * 0 or an exit code (printed). cli/cmd_metrics.c.
 */
int inv_metrics_write(struct gf_cli *cli, const char *const *nodes, size_t nnodes, const char *path,
		      size_t *ret_n);
/* The same, with the consoles of @console_dir (NULL: none); inv_metrics_write() takes
 * $GPUFLEET_CONSOLE_DIR. GF_EXIT_FAILED when their state could not be read (written anyway). */
int inv_metrics_write_with(struct gf_cli *cli, const char *const *nodes, size_t nnodes,
			   const char *path, const char *console_dir, size_t *ret_n);

#endif
