/*
 * The events table (issue 19): every source's events of every node, stored
 * once, with where each source got to (its cursor) in the same transaction.
 *
 * Dedupe: a node's events are one event when their keys are equal
 * (struct gf_event.key: the source chooses it so that two paths that deliver
 * the same event give the same key: "sel:<record id>:<raw stamp>" for an
 * IPMI SEL record whichever path read it); an event without a key is keyed
 * "<source>:<bmc id>". UNIQUE(node, key) stores it once: a re-read, a
 * restarted follow, a re-sweep add nothing.
 *
 * Cursors: one text per (node, source), the source's own (SEL: a small JSON
 * object), written in the transaction that stores the events it covers, so
 * a follow killed at any moment starts again where the store is.
 */
#ifndef GF_INVENTORY_EVENTS_H
#define GF_INVENTORY_EVENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "host/hostfacts.h"
#include "inventory/db.h"
#include "lib/err.h"
#include "lib/model.h"

/* One node's new events from one source, and the cursor that covers them. */
struct gf_events_batch {
	const char *node;
	const char *source;
	struct gf_event *v; /* v[i].node and v[i].source may be NULL: @node, @source */
	size_t n;
	const char *cursor; /* NULL: the stored cursor is kept */
	bool *fresh;        /* NULL, or n flags: set true for each event not stored before */
};

/*
 * Store @nb batches in one transaction (events and cursors together: all or
 * nothing). *@ret_added (nullable): events that were new. Main thread only.
 */
int gf_events_store(struct gf_db *db, const struct gf_events_batch *b, size_t nb, size_t *ret_added,
		    struct gf_err *err);

/* @l's events (each names its node and source) in one transaction, no cursor. */
int gf_events_store_list(struct gf_db *db, const struct gf_event_list *l, size_t *ret_added,
			 struct gf_err *err);

/* The stored cursor of (@node, @source) into *@ret (caller frees; NULL when none). */
int gf_events_cursor(struct gf_db *db, const char *node, const char *source, char **ret,
		     struct gf_err *err);

/* What events list asks for; zero values select everything. */
struct gf_events_query {
	const char *const *nodes; /* NULL: every node */
	size_t nnodes;
	bool has_since;
	double since;               /* epoch seconds: events that happened (or, without a time,
			      * were received) from then on */
	unsigned severities;        /* bit (1 << enum gf_severity); 0: all */
	const char *const *sources; /* NULL: every source */
	size_t nsources;
};

/* The matching events, oldest first, into *@ret (filled on success; release it). */
int gf_events_list(struct gf_db *db, const struct gf_events_query *q, struct gf_event_list *ret,
		   struct gf_err *err);

/* Delete the events received before @before (epoch seconds); *@ret_pruned (nullable). */
int gf_events_prune(struct gf_db *db, double before, size_t *ret_pruned, struct gf_err *err);

/*
 * The GPU Xid lines of a host's kernel log (what host and sweep read) as
 * events of source "host-xid" added to @ret, received @now: severity
 * critical for the Xids that take a GPU out (48, 63, 64, 74, 79, 92, 94, 95,
 * 119, 120), else warning; keyed by the line itself (its kernel timestamp
 * included), so a second read of the same log adds nothing.
 */
void gf_events_from_xids(const char *node, const struct gf_hostfacts *h, double now,
			 struct gf_event_list *ret);

/* Per node, source and severity: how many events are stored, and when the newest came. */
struct gf_events_count {
	char *node, *source;
	enum gf_severity severity;
	unsigned long n;
	double last; /* epoch seconds: when the newest of them was received */
};

/* The counts of @nodes (NULL: all) into *@ret, *@ret_n; free with gf_events_counts_free(). */
int gf_events_counts(struct gf_db *db, const char *const *nodes, size_t nnodes,
		     struct gf_events_count **ret, size_t *ret_n, struct gf_err *err);
void gf_events_counts_free(struct gf_events_count *v, size_t n);

#endif
