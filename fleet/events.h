/*
 * events follow: every node's new events, round after round, stored once
 * with the cursor that covers them (inventory/events.h) and handed to the
 * caller as they arrive.
 *
 * A source (struct gf_event_source) reads what is new on one node's open
 * BMC session after its stored cursor: the IPMI SEL (gf_event_source_sel:
 * Get SEL Info, then the entries after the last one seen). Every round is
 * one short fan-out over the nodes on the caller's frame (struct
 * gf_rollout_fan: cli/ adds the profiles), with the executor's bounded
 * worker count: no thread per BMC. Each node's session is kept open from
 * one round to the next (struct gf_fanout_keep; not above an interval of
 * 30 s, where BMCs drop idle sessions) and opened again only when a poll
 * on it failed. A pushed source (the Redfish SSE
 * multiplexer, one thread for all streams) hands its batches to the loop
 * through gf_events_push(): the loop stores and reports them between
 * rounds, on the calling thread, like the polled ones; past
 * GF_EVENTS_PUSHED_MAX events waiting, a source's push waits for the loop
 * (bounded memory under a flood), and the loop takes them as soon as half
 * of that waits.
 *
 * The first round of a node without a cursor is its baseline: what its log
 * holds then is stored (events list shows it) but not reported as new.
 * Nothing here prints.
 */
#ifndef GF_FLEET_EVENTS_H
#define GF_FLEET_EVENTS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "fleet/fanout.h"
#include "fleet/rollout.h"
#include "inventory/db.h"
#include "inventory/events.h"
#include "lib/cancel.h"
#include "lib/model.h"

/* Pushed events waiting to be stored, at most (a source past it waits). */
#define GF_EVENTS_PUSHED_MAX 1000u

/*
 * Polled sessions kept open from one round to the next, at most: each is a
 * FreeIPMI context of about 90 KiB, so the kept ones stay near 60 MiB
 * however large the fleet; a node past them opens a session each round.
 */
#define GF_EVENTS_SESSIONS_DEFAULT 700u

/* What one poll of a node read. */
struct gf_event_poll {
	struct gf_event_list events; /* new since the cursor (or all, first time) */
	char *cursor;                /* the new cursor, NULL: unchanged */
	bool cleared;                /* the log was cleared (or wrapped) since the cursor */
};

void gf_event_poll_release(struct gf_event_poll *p);

/* A polled source. */
struct gf_event_source {
	const char *name; /* the events' source and the cursor's ("sel") */
	/*
	 * On a worker thread, node @n's open session @sess: what is new after
	 * @cursor (the stored text, NULL: none yet) into @ret (filled on
	 * success). A backend without the operations: GF_EK_UNSUPPORTED.
	 */
	int (*poll)(const struct gf_backend *be, void *sess, const struct gf_node *n,
		    const char *cursor, struct gf_event_poll *ret, struct gf_err *err);
};

/* The IPMI SEL, read incrementally (Get SEL Info first). */
extern const struct gf_event_source gf_event_source_sel;

/* What the loop hands its caller, on the calling thread. */
struct gf_events_hooks {
	/*
	 * Events of node @i just stored: @fresh[k] when v[k] was not stored
	 * before (report those); @baseline: the node's first read.
	 */
	void (*events)(void *ud, size_t i, const char *source, const struct gf_event *v,
		       const bool *fresh, size_t n, bool baseline);
	/* Node @i's log was cleared or wrapped since its cursor (nothing is re-reported). */
	void (*cleared)(void *ud, size_t i, const char *source);
	/* Node @i failed this round (@err), or answered again after failing (@err NULL). */
	void (*node_state)(void *ud, size_t i, const struct gf_err *err);
	/* Storing failed: the loop stops and returns the error. */
	void *ud;
};

struct gf_events_follow {
	const struct gf_node *nodes;
	size_t n;
	const struct gf_event_source *const *sources; /* polled each round */
	size_t nsources;
	double interval;            /* seconds from one round's start to the next's */
	size_t sessions;            /* sessions kept between rounds, at most (the first nodes') */
	double duration;            /* > 0: stop after it; 0: until @stop */
	const gf_cancel_flag *stop; /* set: stop (Ctrl-C, SIGTERM) */
	struct gf_db *db;
	struct gf_rollout_fan fan; /* one round: the caller's fan-out */
	struct gf_events_hooks hooks;
	/*
	 * A pushed source run beside the rounds (NULL start: none): started
	 * once the loop is ready, on the calling thread; it marks in
	 * @pushed_only (n flags) the nodes whose events it alone delivers
	 * (they are left out of the polled rounds) and pushes from its own
	 * thread. Stopped before the loop's last store, so what it pushed is
	 * stored; its error (stop's < 0) is the loop's.
	 */
	struct gf_events_pusher {
		int (*start)(void *ud, struct gf_events_follow *f, bool *pushed_only,
			     struct gf_err *err);
		int (*stop)(void *ud, struct gf_err *err);
		void *ud;
	} pusher;

	/* ---- the loop's own ---- */
	unsigned rounds; /* how many rounds ran */
	int code;        /* a positive code of fan.run that stopped the loop, else 0 */
	pthread_mutex_t lock;
	struct gf_events_pushed *pushed;       /* batches handed in by pushed sources */
	struct gf_events_pushed **pushed_tail; /* where the next one goes */
	size_t pending;                        /* events in @pushed */
	bool draining;          /* the loop takes them: a source past the bound waits */
	pthread_cond_t drained; /* @pushed was taken, or @draining changed */
	pthread_cond_t more;    /* half the bound waits: the loop takes it now */
};

/*
 * Follow @f's nodes until its duration ends, @stop is set or the fan-out
 * stops (f->code). Returns 0, or a negative GF_E_* with @err (the store
 * failed: what was stored so far is consistent). Calling thread only.
 */
int gf_events_follow_run(struct gf_events_follow *f, struct gf_err *err);

/*
 * For a pushed source, from any thread while gf_events_follow_run() runs:
 * hand over node @i's events (taken: @events is emptied) and its cursor
 * (copied, NULL: unchanged); stored and reported by the loop. Waits (in
 * steps of 0.1 s, until the loop's next turn or a stop) while
 * GF_EVENTS_PUSHED_MAX events wait to be stored.
 */
void gf_events_push(struct gf_events_follow *f, size_t i, const char *source,
		    struct gf_event_list *events, const char *cursor);

/* As gf_events_push(), a first read: stored, reported as the baseline (not as new). */
void gf_events_push_baseline(struct gf_events_follow *f, size_t i, const char *source,
			     struct gf_event_list *events, const char *cursor);

/* Node @i failed (@err), or answers again (@err NULL): the node_state hook, from the loop. */
void gf_events_push_state(struct gf_events_follow *f, size_t i, const struct gf_err *err);

#endif
