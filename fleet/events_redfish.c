#include "fleet/events_redfish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/exec.h"
#include "lib/util.h"
#include "redfish/events.h"
#include "redfish/redfish.h"
#include "redfish/sse.h"

/* A LogService read: its session's calls end by then. */
#define LOG_READ_S 20.0
/* Probing the nodes of protocol auto, and their first log reads: how many at once. */
#define PROBE_FANOUT 64
#define PROBE_S 8.0
/* The longest the multiplexer waits in one turn (how soon a stop is seen). */
#define STEP_S 0.25

struct rf_node {
	bool on;                /* followed here (its protocol is Redfish) */
	struct gf_bmc_target t; /* as every session of it is opened */
	char *sse_cursor;       /* the stored "redfish-sse" cursor (the stream resumes after it) */
	char *log_cursor;       /* the "redfish-log" cursor: the newest LogEntry Id read */
	bool log_baseline;      /* no log cursor was stored: the first read is the baseline */
	bool log_failing;       /* the last LogService read failed (reported once) */
	bool polled;            /* no stream: its LogService is read every interval */
	double next_poll;       /* monotonic */
};

/* Both paths key an event by the BMC's id: one event however it came. */
static void key_events(struct gf_event_list *evs)
{
	for (size_t k = 0; k < evs->n; k++) {
		struct gf_event *e = &evs->v[k];
		struct gf_buf key = GF_BUF_INIT;

		if (e->key || !e->bmc_id)
			continue;
		gf_buf_addf(&key, "redfish:%s", e->bmc_id);
		e->key = gf_buf_detach(&key);
	}
}

/* Node @i's LogService after its cursor, pushed to the loop (on the multiplexer's thread). */
static void read_log(struct gf_events_redfish *x, size_t i)
{
	struct rf_node *rn = &x->nodes[i];
	struct gf_event_list evs = {0};
	struct gf_err err = {0};
	char *cursor = NULL;
	void *s = NULL;
	int rc;

	/* As every session of the node: its pin, or the certificate it showed first. */
	rc = gf_bmc_open(&x->run, i, &gf_redfish_backend, gf_monotime() + LOG_READ_S, &s, &err);
	if (rc == 0)
		rc = gf_redfish_log_since(s, rn->log_cursor, gf_walltime(), &evs, &cursor, &err);
	if (s)
		gf_redfish_backend.close(s);
	if (rc < 0) {
		if (!rn->log_failing)
			gf_events_push_state(x->f, i, &err);
		rn->log_failing = true;
		gf_event_list_release(&evs);
		free(cursor);
		return;
	}
	if (rn->log_failing)
		gf_events_push_state(x->f, i, NULL);
	rn->log_failing = false;
	key_events(&evs);
	if (rn->log_baseline)
		gf_events_push_baseline(x->f, i, GF_RF_SOURCE_LOG, &evs, cursor);
	else if (evs.n || (cursor && (!rn->log_cursor || strcmp(cursor, rn->log_cursor))))
		gf_events_push(x->f, i, GF_RF_SOURCE_LOG, &evs, cursor);
	rn->log_baseline = false;
	gf_event_list_release(&evs);
	free(rn->log_cursor);
	rn->log_cursor = cursor;
}

static void on_events(void *ud, size_t m, struct gf_event_list *evs, const char *cursor)
{
	struct gf_events_redfish *x = ud;

	key_events(evs);
	gf_events_push(x->f, x->of[m], GF_RF_SOURCE_SSE, evs, cursor);
}

static void on_resumed(void *ud, size_t m, const char *last_id)
{
	struct gf_events_redfish *x = ud;

	(void)last_id;
	read_log(x, x->of[m]); /* what the replay may not cover */
}

static void on_poll(void *ud, size_t m, const struct gf_err *why)
{
	struct gf_events_redfish *x = ud;
	struct rf_node *rn = &x->nodes[x->of[m]];

	(void)why;
	rn->polled = true;
	rn->next_poll = gf_monotime();
}

static void on_failed(void *ud, size_t m, const struct gf_err *err)
{
	struct gf_events_redfish *x = ud;

	gf_events_push_state(x->f, x->of[m], err);
}

static bool quitting(const struct gf_events_redfish *x)
{
	return x->quit || (x->f->stop && *x->f->stop) || gf_exec_cancelled();
}

/*
 * The certificate each stream was shown, for a node no log read has noted
 * one of yet: stored as its pin on first use when the follow ends (as a
 * verb's run stores them), and every later session held to it.
 */
static void note_fingerprints(struct gf_events_redfish *x)
{
	for (size_t m = 0; m < x->nstreams; m++) {
		size_t i = x->of[m];
		const char *fp;

		if (x->pins.seen[i][0] || !(fp = gf_rf_sse_fingerprint(x->m, m)))
			continue;
		snprintf(x->pins.seen[i], sizeof(x->pins.seen[i]), "%s", fp);
	}
}

static void *mux_thread(void *ud)
{
	struct gf_events_redfish *x = ud;
	struct gf_events_follow *f = x->f;

	/* The logs were read first (first_reads()): the streams resume after them. */
	for (size_t i = 0; i < f->n && !quitting(x); i++) {
		struct gf_err err = {0};
		size_t m;

		if (!x->nodes[i].on)
			continue;
		/* Now: the certificate its log read was shown, on first use, is its stream's pin. */
		gf_bmc_target_of(&x->run, i, 0, &x->nodes[i].t);
		if (gf_rf_sse_add(x->m, &x->nodes[i].t, x->nodes[i].sse_cursor, &m, &err) < 0) {
			gf_events_push_state(f, i, &err);
			continue;
		}
		x->of = gf_xrealloc(x->of, (m + 1) * sizeof(*x->of));
		x->of[m] = i;
		x->nstreams = m + 1;
	}
	while (!quitting(x)) {
		double now, next;
		int rc = gf_rf_sse_step(x->m, STEP_S, &x->err);

		if (rc < 0) {
			x->rc = rc;
			break;
		}
		note_fingerprints(x);
		now = gf_monotime();
		next = now + STEP_S;
		for (size_t i = 0; i < f->n && !quitting(x); i++) {
			struct rf_node *rn = &x->nodes[i];

			if (!rn->on || !rn->polled)
				continue;
			if (rn->next_poll <= now) {
				read_log(x, i);
				rn->next_poll = gf_monotime() + x->interval;
			}
			if (rn->next_poll < next)
				next = rn->next_poll;
		}
		if (rc == 0) /* no stream left: only the polled nodes */
			gf_cancel_sleep_until(&x->quit, next);
	}
	return NULL;
}

static void release(struct gf_events_redfish *x)
{
	gf_rf_sse_free(x->m);
	x->m = NULL;
	for (size_t i = 0; x->nodes && i < x->f->n; i++) {
		free(x->nodes[i].sse_cursor);
		free(x->nodes[i].log_cursor);
	}
	free(x->nodes);
	x->nodes = NULL;
	free(x->of);
	x->of = NULL;
	x->nstreams = 0;
}

void gf_events_redfish_release(struct gf_events_redfish *x)
{
	free(x->pinned);
	x->pinned = NULL;
	x->npinned = 0;
	gf_pins_release(&x->pins);
}

static void probe_task(void *ctx, size_t k, double deadline, struct gf_result *slot)
{
	struct gf_events_redfish *x = ctx;
	struct gf_err err = {0};

	slot->ok = gf_bmc_choose(&x->run, x->probe_of[k], deadline, &err) == &gf_redfish_backend;
}

/*
 * The nodes of protocol auto: those whose BMC answers as Redfish are
 * followed here (their streams), the others are left to the polled rounds.
 * Probed at once, a bounded number at a time, nothing secret sent.
 */
static void probe_auto(struct gf_events_redfish *x, const struct gf_events_follow *f)
{
	struct gf_exec_opts eo = {.fanout = PROBE_FANOUT, .timeout = PROBE_S};
	struct gf_result *slots;
	size_t n = 0;

	x->probe_of = gf_xcalloc(f->n ? f->n : 1, sizeof(*x->probe_of));
	for (size_t i = 0; i < f->n; i++)
		if (x->nodes[i].on && !f->nodes[i].protocol)
			x->probe_of[n++] = i;
	if (n) {
		slots = gf_xcalloc(n, sizeof(*slots));
		if (gf_exec_run(&eo, n, probe_task, x, slots, NULL, NULL, NULL) < 0)
			memset(slots, 0, n * sizeof(*slots)); /* no threads: polled, as IPMI */
		for (size_t k = 0; k < n; k++) {
			x->nodes[x->probe_of[k]].on = slots[k].ok;
			gf_result_release(&slots[k]);
		}
		free(slots);
	}
	free(x->probe_of);
	x->probe_of = NULL;
}

static void first_read_task(void *ctx, size_t k, double deadline, struct gf_result *slot)
{
	struct gf_events_redfish *x = ctx;

	(void)deadline;
	read_log(x, x->probe_of[k]);
	slot->ok = true;
}

/*
 * Every followed node's log before its stream opens: the baseline, or what
 * came while nothing followed it. A bounded number at a time (one by one, a
 * fleet of slow BMCs took minutes before its first stream opened); each
 * node's reads touch only its own state, and push into the loop.
 */
static void first_reads(struct gf_events_redfish *x, const struct gf_events_follow *f)
{
	struct gf_exec_opts eo = {.fanout = PROBE_FANOUT, .timeout = LOG_READ_S + 5};
	struct gf_result *slots;
	size_t n = 0;

	x->probe_of = gf_xcalloc(f->n ? f->n : 1, sizeof(*x->probe_of));
	for (size_t i = 0; i < f->n; i++)
		if (x->nodes[i].on)
			x->probe_of[n++] = i;
	slots = gf_xcalloc(n ? n : 1, sizeof(*slots));
	if (n && gf_exec_run(&eo, n, first_read_task, x, slots, NULL, NULL, NULL) < 0)
		for (size_t k = 0; k < n; k++) /* no threads: one by one */
			read_log(x, x->probe_of[k]);
	for (size_t k = 0; k < n; k++)
		gf_result_release(&slots[k]);
	free(slots);
	free(x->probe_of);
	x->probe_of = NULL;
}

int gf_events_redfish_start(void *ud, struct gf_events_follow *f, bool *pushed_only,
			    struct gf_err *err)
{
	struct gf_events_redfish *x = ud;
	const struct gf_rf_sse_opts o = {.cancel = &x->quit};
	const struct gf_rf_sse_hooks h = {
		.ud = x,
		.events = on_events,
		.resumed = on_resumed,
		.poll = on_poll,
		.failed = on_failed,
	};
	size_t any = 0;
	int rc;

	x->f = f;
	x->quit = 0;
	x->rc = 0;
	x->started = false;
	x->nodes = gf_xcalloc(f->n ? f->n : 1, sizeof(*x->nodes));
	memset(&x->pins, 0, sizeof(x->pins));
	x->pinned = NULL;
	x->npinned = 0;
	for (size_t i = 0; i < f->n; i++) {
		x->nodes[i].on = f->nodes[i].bmc && (f->nodes[i].protocol == &gf_redfish_backend ||
						     !f->nodes[i].protocol);
		any += x->nodes[i].on;
	}
	if (!any) {
		release(x);
		return 0;
	}
	x->run = (struct gf_bmc_run){
		.nodes = f->nodes,
		.profs = x->profs,
		.pins = &x->pins,
		.cacert = x->cacert,
		.insecure = x->insecure,
		.cancel = &x->quit,
	};
	rc = gf_pins_load(f->db, f->nodes, x->profs, f->n, x->tls_pin_new, gf_bmc_may_pin, &x->pins,
			  err);
	if (rc == 0)
		probe_auto(x, f);
	for (size_t i = 0; rc == 0 && i < f->n; i++) {
		struct rf_node *rn = &x->nodes[i];

		if (!rn->on)
			continue;
		gf_bmc_target_of(&x->run, i, 0, &rn->t);
		rc = gf_events_cursor(f->db, f->nodes[i].name, GF_RF_SOURCE_SSE, &rn->sse_cursor,
				      err);
		if (rc == 0)
			rc = gf_events_cursor(f->db, f->nodes[i].name, GF_RF_SOURCE_LOG,
					      &rn->log_cursor, err);
		/* Followed before (a stream cursor): what the log has past it is news. */
		rn->log_baseline = !rn->log_cursor && !rn->sse_cursor;
	}
	if (rc == 0)
		first_reads(x, f);
	if (rc == 0)
		rc = gf_rf_sse_new(&o, &h, &x->m, err);
	if (rc == 0 && pthread_create(&x->thread, NULL, mux_thread, x) != 0)
		rc = gf_err_set(err, GF_E_IO, GF_EK_NONE, "cannot start the event stream thread");
	if (rc < 0) {
		release(x);
		return rc;
	}
	x->started = true;
	for (size_t i = 0; i < f->n; i++)
		pushed_only[i] = x->nodes[i].on;
	return 0;
}

int gf_events_redfish_stop(void *ud, struct gf_err *err)
{
	struct gf_events_redfish *x = ud;
	int rc;

	if (!x->started)
		return 0;
	x->quit = 1;
	pthread_join(x->thread, NULL);
	x->started = false;
	rc = x->rc;
	if (rc < 0 && err)
		*err = x->err;
	release(x);
	/* The certificates pinned on first use, as a verb's run stores them at its end. */
	x->pins_rc = gf_fanout_pins_store(x->f->db, x->f->nodes, &x->pins, &x->pinned, &x->npinned,
					  &x->pins_err);
	return rc;
}
