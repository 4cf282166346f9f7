/*
 * The HTML report of the inventory (`gpufleet report --html`): each node's
 * last sweep, its drift (from the majority of its model, a baseline, or
 * what it had before), the versions of every component, the nodes that
 * failed, and GPU health from the host facts. gf_report_load() builds the
 * model; gf_report_html() renders it as one self-contained page (inline
 * CSS, no script, no external URL), every string from BMCs and hosts
 * escaped. Nodes alike are folded into node ranges (gf_nodeset_collapse()),
 * so that a fleet of 10,000 nodes gives a page of a few hundred rows.
 * For one thread.
 */
#ifndef GF_REPORT_H
#define GF_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory/db.h"
#include "inventory/drift.h"
#include "inventory/reconcile.h"
#include "inventory/store.h"
#include "inventory/sweep.h"
#include "lib/buf.h"
#include "lib/err.h"

/* A heat-map cell: how the nodes of a row stand on a component. */
enum gf_report_cell {
	GF_RCELL_SAME = 0, /* as expected */
	GF_RCELL_OFF,      /* another version */
	GF_RCELL_MISSING,  /* expected, absent */
	GF_RCELL_EXTRA,    /* present, not expected (or new since) */
	GF_RCELL_TIE,      /* no majority among the peers */
	GF_RCELL_NONE,     /* not compared: the sweep read nothing */
};

/* Nodes alike: the same class, status and drifting components. */
struct gf_report_row {
	const char *class; /* the model (or "" outside majority mode) */
	enum gf_node_status status;
	bool compared;
	char *nodes; /* folded range form, owned */
	size_t count;
	size_t first;                       /* its first node, an index into the sweep */
	unsigned char *cells;               /* one enum gf_report_cell per column */
	const struct gf_drift_item **items; /* per column: the first node's item, NULL when same */
};

/* One version of a component, and who has it. */
struct gf_report_version {
	const char *version; /* NULL: reported without one */
	size_t count;
	char *nodes; /* folded, owned; NULL for the most common version */
};

struct gf_report_comp {
	const char *key;
	const char *source;          /* where it was read (inventory/sweep.h) */
	bool drifted;                /* a column of the heat map */
	struct gf_report_version *v; /* most common first */
	size_t n;
};

/* A problem shared by nodes: a failure (op and error kind), or a GPU health finding. */
struct gf_report_issue {
	char *what;   /* "failed: bmc connect", "Xid 79" (owned) */
	char *detail; /* an example message or the total count (owned, nullable) */
	char *nodes;  /* folded, owned */
	size_t count;
	bool severe; /* failed nodes, Xid 79/48/... , uncorrected ECC */
};

struct gf_report {
	const char *mode; /* "majority by model", "baseline", "since ..." (a constant or owned) */
	double oldest, newest; /* the nodes' sweep times */
	size_t nodes, ok, partial, failed;
	size_t drifting, not_compared, items;
	const char **cols; /* heat-map columns: the components with drift, sorted */
	size_t ncols;
	struct gf_report_row *rows;
	size_t nrows;
	struct gf_report_comp *comps; /* every component, sorted by key */
	size_t ncomps;
	struct gf_report_issue *failures;
	size_t nfailures;
	struct gf_report_issue *health;
	size_t nhealth, health_nodes; /* findings; nodes with host facts read */
	struct gf_reconcile *rec;     /* the BMC's GPUs against the host's */
	/* owned inputs */
	struct gf_sweep *sw, *before;
	struct gf_drift *drift;
	char *mode_owned;
};

struct gf_report_query {
	const char *const *nodes; /* only these (NULL: every node) */
	size_t nnodes;
	enum gf_drift_mode mode;
	const struct gf_baseline *baseline; /* GF_DRIFT_BASELINE */
	const struct gf_store_query *since; /* GF_DRIFT_SINCE: the bound of the earlier rows */
	const char *since_text;             /* for the page: what --since said */
};

/*
 * Load each node's last row (with details) from @db, compute its drift as
 * @q says (majority: by model, as `gpufleet drift` by default) and build
 * the report. Free with gf_report_free() (accepts NULL).
 */
int gf_report_load(struct gf_db *db, const struct gf_report_query *q, struct gf_report **ret,
		   struct gf_err *err);

/* Build the report of @sw and its drift @d (taken over: freed with the report). */
struct gf_report *gf_report_build(struct gf_sweep *sw, struct gf_sweep *before, struct gf_drift *d,
				  const char *mode);
void gf_report_free(struct gf_report *r);

/* The page: a whole HTML document, appended to @out. Pure. */
void gf_report_html(const struct gf_report *r, struct gf_buf *out);

#endif
