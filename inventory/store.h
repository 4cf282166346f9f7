/*
 * The sweep store: sweeps, one row per node and sweep, and the component
 * lists of the nodes (schema version 3, see db.c).
 *
 * Identical component lists, and identical hardware or host documents, are
 * stored once and shared by every row that has them: a fleet mostly repeats
 * itself from night to night, so 30 sweeps of 10,000 nodes take little more
 * room than one. Each node's newest row is kept in node_last, so that
 * "every node as last seen" is a lookup, not a scan.
 *
 * Writes: one transaction per sweep (or per imported file), so a crash or a
 * kill -9 leaves all of it or none of it. A second sweep is kept out by a
 * lock file next to the database (gf_store_lock()), not by SQLite, so that
 * it never waits on a lock for the length of a whole fan-out.
 *
 * A store handle is the database handle: one thread.
 */
#ifndef GF_STORE_H
#define GF_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory/db.h"
#include "inventory/sweep.h"
#include "lib/err.h"

/* ---- writing ------------------------------------------------------------ */

struct gf_store_tx;

/* BEGIN IMMEDIATE: waits for other writers up to the busy timeout (GF_E_BUSY). */
int gf_store_begin(struct gf_db *db, struct gf_store_tx **ret, struct gf_err *err);

/*
 * Add the sweep row of @sw and set sw->id. A new sweep gets a new uid (when
 * sw->uid is NULL) and the next id. With @import, a sweep whose uid is
 * already stored is not added again: sw->id is set to it and *ret_existed
 * (nullable) is true; a new one keeps its id from the other site when that
 * id is free here.
 */
int gf_store_put_sweep(struct gf_store_tx *tx, struct gf_sweep *sw, bool import, bool *ret_existed,
		       struct gf_err *err);

/*
 * Add one node row to sweep sw->id (after gf_store_put_sweep()). With
 * @import, a node already in that sweep is left as it is and *ret_added
 * (nullable) is false.
 */
int gf_store_put_node(struct gf_store_tx *tx, const struct gf_sweep *sw,
		      const struct gf_sweep_node *n, bool import, bool *ret_added,
		      struct gf_err *err);

/* Commit (sweep counts and node_last brought up to date) and free @tx, also on failure. */
int gf_store_commit(struct gf_store_tx *tx, struct gf_err *err);
/* Roll back and free; accepts NULL. */
void gf_store_abort(struct gf_store_tx *tx);

/* A whole new sweep in one transaction; sets sw->id and sw->uid. */
int gf_store_sweep_add(struct gf_db *db, struct gf_sweep *sw, struct gf_err *err);

/* ---- reading ------------------------------------------------------------ */

struct gf_sweep_info {
	long long id;
	char uid[40];
	double started, finished;
	bool imported; /* came in by inventory import */
	unsigned nodes, ok, partial, failed;
};

/* Every sweep, oldest first (by start time, then id). Caller frees *ret. */
int gf_store_sweeps(struct gf_db *db, struct gf_sweep_info **ret, size_t *ret_n,
		    struct gf_err *err);

struct gf_store_query {
	long long sweep;          /* the rows of this sweep; 0: each node's newest row */
	bool bounded;             /* with sweep 0: newest row at or before the bound below */
	double before;            /* the bound: sweeps started before this ... */
	long long before_id;      /* ... or at it with an id up to this one */
	const char *history;      /* instead: every row of this node, oldest first */
	const char *const *nodes; /* only these nodes (NULL: all) */
	size_t nnodes;
	bool details; /* load the hardware and host documents too */
};

/*
 * Load rows as one gf_sweep (free with gf_sweep_free()). For one sweep, its
 * id, uid and times are set; otherwise sw->id is 0 and each node carries its
 * own sweep id and time. Nodes are in natural name order (gpu2 before gpu10),
 * or, for a history, in time order.
 */
int gf_store_load(struct gf_db *db, const struct gf_store_query *q, struct gf_sweep **ret,
		  struct gf_err *err);

/* What a node's previous SEL read left, for counting new entries. */
struct gf_sel_prev {
	bool read; /* the SEL was read in an earlier sweep */
	bool has_mark;
	double mark; /* the newest entry time then */
};

/* For each of @names (in order) its previous SEL read; @ret has @n elements. */
int gf_store_sel_prev(struct gf_db *db, const char *const *names, size_t n, struct gf_sel_prev *ret,
		      struct gf_err *err);

/* ---- upkeep ------------------------------------------------------------- */

/*
 * Delete sweeps: all but the newest @keep (when @keep >= 0), and those
 * started before @older_than (when > 0), with the component lists and
 * documents nothing uses any more, in one transaction.
 */
int gf_store_prune(struct gf_db *db, long keep, double older_than, size_t *ret_pruned,
		   size_t *ret_left, struct gf_err *err);

/*
 * The sweep lock: an exclusive flock(2) on "<db>.sweep-lock" (mode 0600),
 * held until gf_store_unlock() or the process ends (a kill -9 frees it).
 * Waits up to @wait seconds; then GF_E_BUSY naming the holder's pid.
 */
int gf_store_lock(const char *db_path, double wait, int *ret_fd, struct gf_err *err);
void gf_store_unlock(int fd);

#endif
