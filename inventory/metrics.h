/*
 * The inventory as Prometheus metrics: the text exposition format (0.0.4)
 * of each node's last sweep and its drift from the majority of its model,
 * for node_exporter's textfile collector (`gpufleet metrics`, `sweep
 * --metrics`). Every family is a gauge; the names are documented in
 * gpufleet-metrics(1). For one thread.
 */
#ifndef GF_METRICS_H
#define GF_METRICS_H

#include <stddef.h>

#include "inventory/db.h"
#include "inventory/drift.h"
#include "inventory/sweep.h"
#include "lib/buf.h"
#include "lib/err.h"

/*
 * Append the metrics of the rows of @sw (loaded with details, for the GPU
 * counts and Xid errors) and of @d, their drift (one node of @d per row of
 * @sw, in its order; NULL: no drift families), to @out. Pure: no I/O.
 */
void gf_metrics_render(const struct gf_sweep *sw, const struct gf_drift *d, struct gf_buf *out);

/*
 * Load each node's last row from @db (only @nodes when @nnodes > 0),
 * compute its drift by model as `gpufleet drift` does by default, and
 * append the metrics to @out. *ret_n (nullable): how many nodes had rows.
 */
int gf_metrics_build(struct gf_db *db, const char *const *nodes, size_t nnodes, struct gf_buf *out,
		     size_t *ret_n, struct gf_err *err);

#endif
