#include "fleet/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/util.h"

void gf_event_poll_release(struct gf_event_poll *p)
{
	gf_event_list_release(&p->events);
	free(p->cursor);
	memset(p, 0, sizeof(*p));
}

/* ---- the IPMI SEL ------------------------------------------------------------ */

/*
 * The SEL cursor, as stored: {"entries":N,"added":A,"erased":E,"last":"ID"}
 * (Get SEL Info's counters when it was read, and the last record seen).
 * Unchanged counters: nothing new, no entry is read. Another erase stamp:
 * the log was cleared, every entry it holds now is new. Else the entries
 * after "last"; when that record is gone (a wrapped or cleared log whose
 * erase stamp did not move), all of them: the store keeps each one once.
 */
struct sel_cursor {
	bool set;
	unsigned long entries, added, erased;
	char *last; /* NULL: the log was empty */
};

static void sel_cursor_parse(const char *text, struct sel_cursor *c)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;
	const char *last;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(j)) {
		json_decref(j);
		return; /* none, or not ours: read it all */
	}
	c->set = true;
	c->entries = (unsigned long)json_integer_value(json_object_get(j, "entries"));
	c->added = (unsigned long)json_integer_value(json_object_get(j, "added"));
	c->erased = (unsigned long)json_integer_value(json_object_get(j, "erased"));
	last = json_string_value(json_object_get(j, "last"));
	c->last = last ? gf_xstrdup(last) : NULL;
	json_decref(j);
}

static char *sel_cursor_text(const struct gf_sel_info *info, const char *last)
{
	json_t *j = json_pack("{s:I,s:I,s:I,s:o}", "entries", (json_int_t)info->entries, "added",
			      (json_int_t)info->added, "erased", (json_int_t)info->erased, "last",
			      last ? json_string(last) : json_null());
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref(j);
	return s;
}

static void sel_event(const struct gf_node *n, const struct gf_sel_entry *s, double now,
		      struct gf_event *e)
{
	struct gf_buf key;

	gf_buf_init(&key);
	gf_buf_addf(&key, "sel:%s:%lu", s->id ? s->id : "", s->stamp);
	e->node = gf_xstrdup(n->name);
	e->source = gf_xstrdup("sel");
	e->bmc_id = s->id ? gf_xstrdup(s->id) : NULL;
	e->has_time = s->has_time;
	e->time = s->time;
	e->received = now;
	e->severity = s->severity;
	e->message = s->event ? gf_xstrdup(s->event) : NULL;
	e->sensor = s->sensor ? gf_xstrdup(s->sensor) : NULL;
	e->type = s->sensor_type ? gf_xstrdup(s->sensor_type) : NULL;
	e->payload = json_pack("{s:s}", "direction", s->deassertion ? "deassertion" : "assertion");
	if (s->time_note)
		json_object_set_new(e->payload, "time_note", json_string(s->time_note));
	e->key = gf_buf_detach(&key);
}

static int sel_poll(const struct gf_backend *be, void *sess, const struct gf_node *n,
		    const char *cursor, struct gf_event_poll *ret, struct gf_err *err)
{
	struct gf_event_poll p = {0};
	struct gf_sel_since since = {0};
	struct gf_sel_info info = {0};
	struct sel_cursor c;
	double now;
	int rc;

	if (!be->sel_info || !be->sel_since)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s cannot read the event log incrementally", be->name);
	sel_cursor_parse(cursor, &c);
	if ((rc = be->sel_info(sess, &info, err)) < 0)
		goto out;
	if (c.set && info.entries == c.entries && info.added == c.added &&
	    info.erased == c.erased) {
		*ret = p; /* nothing new: not one entry read */
		goto out;
	}
	p.cleared = c.set && (info.erased != c.erased || info.entries < c.entries);
	rc = be->sel_since(sess, c.set && !p.cleared ? c.last : NULL, &since, err);
	if (rc < 0)
		goto out;
	if (c.set && c.last && since.from_start && !p.cleared)
		p.cleared = true; /* the last record seen is gone: wrapped, or cleared */
	now = gf_walltime();
	for (size_t k = 0; k < since.entries.n; k++)
		sel_event(n, &since.entries.v[k], now, gf_event_list_add(&p.events));
	p.cursor = sel_cursor_text(&info, since.entries.n ? since.entries.v[since.entries.n - 1].id
							  : (since.from_start ? NULL : c.last));
	*ret = p;
	rc = 0;
out:
	gf_sel_list_release(&since.entries);
	free(c.last);
	return rc;
}

const struct gf_event_source gf_event_source_sel = {
	.name = "sel",
	.poll = sel_poll,
};

/*
 * Sessions are kept from one round to the next below this interval: a BMC
 * drops an idle session after about a minute (IPMI's default), and a call
 * on a dropped one waits for its timeout before the session is reopened.
 */
#define KEEP_MAX_INTERVAL_S 30.0

/*
 * Events handed over and not yet stored, at most, while the loop runs
 * (GF_EVENTS_PUSHED_MAX): a pushed source that would go past waits for the
 * loop's next turn (its streams are not read meanwhile: the BMC's writes
 * wait), so that a flood costs bounded memory. The loop does not wait for
 * its next tick once half of it is waiting: the bound slows no flood down.
 */
#define PUSHED_MAX GF_EVENTS_PUSHED_MAX
#define PUSHED_WAKE (PUSHED_MAX / 2)

/* How long a pushed batch waits for the loop, at most, between two rounds. */
#define PUSHED_WAIT_S 0.1

/* ---- the loop ------------------------------------------------------------------ */

struct gf_events_pushed {
	struct gf_events_pushed *next;
	size_t i;
	char *source;
	struct gf_event_list events;
	char *cursor;
	bool baseline;      /* a first read: stored, not reported as new */
	bool state;         /* a node_state report, no events */
	struct gf_err *err; /* a state: why it failed (NULL: it answers again) */
};

/* Per node: each source's cursor as stored, what it last read, and its health. */
struct node_state {
	char **cursor;              /* per source, NULL: none yet */
	struct gf_event_poll *poll; /* per source: this round's (the worker's slot) */
	int *prc;                   /* per source: this round's return */
	bool failing;               /* the last round failed (reported once) */
	char failed_msg[512];
};

struct round {
	struct gf_events_follow *f;
	struct node_state *st;
	const struct gf_node *pn;          /* the polled nodes (copies) */
	const size_t *map;                 /* their indices in f->nodes */
	const struct gf_event_source *src; /* polled this round */
	size_t s;                          /* its index */
	int rc;                            /* the first store failure */
	struct gf_err err;
};

static int round_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		    const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct round *r = vctx;
	size_t i = r->map[n - r->pn];
	struct node_state *st = &r->st[i];

	(void)slot;
	st->prc[r->s] = r->src->poll(be, sess, n, st->cursor[r->s], &st->poll[r->s], err);
	return st->prc[r->s];
}

static int store(struct gf_events_follow *f, struct node_state *st, size_t i, size_t s,
		 const char *source, struct gf_event_poll *p, bool baseline, struct gf_err *err)
{
	struct gf_events_batch b = {
		.node = f->nodes[i].name,
		.source = source,
		.v = p->events.v,
		.n = p->events.n,
		.cursor = p->cursor,
	};
	int rc;

	if (!p->events.n && !p->cursor)
		return 0;
	b.fresh = gf_xcalloc(b.n ? b.n : 1, sizeof(*b.fresh));
	rc = gf_events_store(f->db, &b, 1, NULL, err);
	if (rc == 0) {
		if (p->cursor && s < f->nsources) {
			free(st->cursor[s]);
			st->cursor[s] = p->cursor;
			p->cursor = NULL;
		}
		if (p->cleared && f->hooks.cleared)
			f->hooks.cleared(f->hooks.ud, i, source);
		if (b.n && f->hooks.events)
			f->hooks.events(f->hooks.ud, i, source, b.v, b.fresh, b.n, baseline);
	}
	free(b.fresh);
	return rc;
}

/* Node @i failed (@e), or answered (@e NULL): one message per node while it fails the same way. */
static void node_health(struct gf_events_follow *f, struct node_state *st, size_t i,
			const struct gf_err *e)
{
	if (e) {
		if (f->hooks.node_state && (!st->failing || strcmp(st->failed_msg, e->msg) != 0))
			f->hooks.node_state(f->hooks.ud, i, e);
		st->failing = true;
		snprintf(st->failed_msg, sizeof(st->failed_msg), "%s", e->msg);
		return;
	}
	if (st->failing && f->hooks.node_state)
		f->hooks.node_state(f->hooks.ud, i, NULL);
	st->failing = false;
}

static void round_done(void *ud, size_t k, const struct gf_result *slot)
{
	struct round *r = ud;
	struct gf_events_follow *f = r->f;
	size_t i = r->map[k];
	struct node_state *st = &r->st[i];
	struct gf_event_poll *p = &st->poll[r->s];

	node_health(f, st, i, slot->ok ? NULL : &slot->err);
	if (!slot->ok) {
		gf_event_poll_release(p);
		return;
	}
	if (r->rc == 0)
		r->rc = store(f, st, i, r->s, r->src->name, p, st->cursor[r->s] == NULL, &r->err);
	gf_event_poll_release(p);
}

static bool stopping(const struct gf_events_follow *f);

static void push(struct gf_events_follow *f, struct gf_events_pushed *b)
{
	pthread_mutex_lock(&f->lock);
	while (f->draining && f->pending >= PUSHED_MAX && !stopping(f)) {
		struct timespec ts;

		pthread_cond_signal(&f->more);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&f->drained, &f->lock, &ts);
	}
	f->pending += b->events.n;
	*f->pushed_tail = b;
	f->pushed_tail = &b->next;
	if (f->pending >= PUSHED_WAKE)
		pthread_cond_signal(&f->more);
	pthread_mutex_unlock(&f->lock);
}

static void push_events(struct gf_events_follow *f, size_t i, const char *source,
			struct gf_event_list *events, const char *cursor, bool baseline)
{
	struct gf_events_pushed *b = gf_xcalloc(1, sizeof(*b));

	b->i = i;
	b->source = gf_xstrdup(source);
	b->events = *events;
	memset(events, 0, sizeof(*events));
	/* A message's list holds one event in room for 16: what waits is no bigger than it. */
	if (b->events.n && b->events.cap > b->events.n) {
		b->events.v = gf_xrealloc(b->events.v, b->events.n * sizeof(*b->events.v));
		b->events.cap = b->events.n;
	}
	b->cursor = cursor ? gf_xstrdup(cursor) : NULL;
	b->baseline = baseline;
	push(f, b);
}

void gf_events_push(struct gf_events_follow *f, size_t i, const char *source,
		    struct gf_event_list *events, const char *cursor)
{
	push_events(f, i, source, events, cursor, false);
}

void gf_events_push_baseline(struct gf_events_follow *f, size_t i, const char *source,
			     struct gf_event_list *events, const char *cursor)
{
	push_events(f, i, source, events, cursor, true);
}

void gf_events_push_state(struct gf_events_follow *f, size_t i, const struct gf_err *err)
{
	struct gf_events_pushed *b = gf_xcalloc(1, sizeof(*b));

	b->i = i;
	b->state = true;
	if (err) {
		b->err = gf_xcalloc(1, sizeof(*b->err));
		*b->err = *err;
	}
	push(f, b);
}

/*
 * Store and report what pushed sources handed over, every batch in one
 * transaction (a flood of events costs one commit per turn of the loop, not
 * one per event); the failure is returned. @discard: free it all, nothing
 * stored (the loop failed).
 */
static int drain_pushed(struct gf_events_follow *f, struct node_state *st, bool discard,
			struct gf_err *err)
{
	struct gf_events_pushed *list, *next, *b;
	struct gf_events_batch *bv = NULL;
	bool *fresh = NULL;
	size_t nb = 0, nev = 0, k = 0, off = 0;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	list = f->pushed;
	f->pushed = NULL;
	f->pushed_tail = &f->pushed;
	f->pending = 0;
	pthread_cond_broadcast(&f->drained);
	pthread_mutex_unlock(&f->lock);
	for (b = list; b && !discard; b = b->next)
		if (!b->state && b->i < f->n && (b->events.n || b->cursor)) {
			nb++;
			nev += b->events.n;
		}
	if (nb) {
		bv = gf_xcalloc(nb, sizeof(*bv));
		fresh = gf_xcalloc(nev ? nev : 1, sizeof(*fresh));
		for (b = list; b; b = b->next) {
			if (b->state || b->i >= f->n || (!b->events.n && !b->cursor))
				continue;
			bv[k++] = (struct gf_events_batch){
				.node = f->nodes[b->i].name,
				.source = b->source,
				.v = b->events.v,
				.n = b->events.n,
				.cursor = b->cursor,
				.fresh = fresh + off,
			};
			off += b->events.n;
		}
		rc = gf_events_store(f->db, bv, nb, NULL, err);
	}
	for (k = 0, b = list; b; b = next) {
		struct gf_event_poll p = {.events = b->events, .cursor = b->cursor};

		next = b->next;
		if (discard || b->i >= f->n)
			;
		else if (b->state)
			node_health(f, &st[b->i], b->i, b->err);
		else if (b->events.n || b->cursor) {
			if (rc == 0 && b->events.n && f->hooks.events)
				f->hooks.events(f->hooks.ud, b->i, b->source, bv[k].v, bv[k].fresh,
						bv[k].n, b->baseline);
			k++;
		}
		gf_event_poll_release(&p);
		free(b->source);
		free(b->err);
		free(b);
	}
	free(bv);
	free(fresh);
	return rc;
}

static bool stopping(const struct gf_events_follow *f)
{
	return (f->stop && *f->stop) || gf_exec_cancelled();
}

/* Until @until (monotonic), or sooner once half the bound waits to be stored. */
static void wait_pushed(struct gf_events_follow *f, double until)
{
	double wall = gf_walltime() + (until - gf_monotime());
	struct timespec ts = {.tv_sec = (time_t)wall,
			      .tv_nsec = (long)((wall - (double)(time_t)wall) * 1e9)};

	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&f->lock);
	if (f->pending < PUSHED_WAKE && !stopping(f))
		pthread_cond_timedwait(&f->more, &f->lock, &ts);
	pthread_mutex_unlock(&f->lock);
}

static void set_draining(struct gf_events_follow *f, bool on)
{
	pthread_mutex_lock(&f->lock);
	f->draining = on;
	pthread_cond_broadcast(&f->drained);
	pthread_mutex_unlock(&f->lock);
}

int gf_events_follow_run(struct gf_events_follow *f, struct gf_err *err)
{
	struct node_state *st = gf_xcalloc(f->n ? f->n : 1, sizeof(*st));
	double start = gf_monotime(), end = f->duration > 0 ? start + f->duration : 0;
	bool *pushed_only = gf_xcalloc(f->n ? f->n : 1, sizeof(*pushed_only));
	struct gf_node *pn = NULL;
	size_t *map = NULL, npolled = 0;
	struct gf_fanout_keep keep = {0};
	bool pusher = false;
	int rc = 0, src;

	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->drained, NULL);
	pthread_cond_init(&f->more, NULL);
	f->draining = false;
	f->pending = 0;
	f->pushed = NULL;
	f->pushed_tail = &f->pushed;
	f->code = 0;
	f->rounds = 0;
	for (size_t i = 0; i < f->n && rc == 0; i++) {
		st[i].cursor = gf_xcalloc(f->nsources + 1, sizeof(*st[i].cursor));
		st[i].poll = gf_xcalloc(f->nsources + 1, sizeof(*st[i].poll));
		st[i].prc = gf_xcalloc(f->nsources + 1, sizeof(*st[i].prc));
		for (size_t s = 0; s < f->nsources && rc == 0; s++)
			rc = gf_events_cursor(f->db, f->nodes[i].name, f->sources[s]->name,
					      &st[i].cursor[s], err);
	}
	if (rc == 0 && f->pusher.start) {
		rc = f->pusher.start(f->pusher.ud, f, pushed_only, err);
		pusher = rc == 0;
	}
	set_draining(f, true); /* from now on the loop takes what is pushed */
	/* The polled rounds go over the nodes no pushed source delivers alone. */
	pn = gf_xcalloc(f->n ? f->n : 1, sizeof(*pn));
	map = gf_xcalloc(f->n ? f->n : 1, sizeof(*map));
	for (size_t i = 0; i < f->n; i++) {
		if (pushed_only[i])
			continue;
		pn[npolled] = f->nodes[i];
		map[npolled++] = i;
	}
	/*
	 * One session per BMC for the whole follow, opened again only after an
	 * error: the first f->sessions polled nodes'; the others open one a round.
	 */
	if (f->interval <= KEEP_MAX_INTERVAL_S && f->sessions)
		gf_fanout_keep_init(&keep, npolled < f->sessions ? npolled : f->sessions);
	while (rc == 0 && !stopping(f)) {
		double round_start = gf_monotime(), next;

		for (size_t s = 0; npolled && s < f->nsources && rc == 0 && !stopping(f); s++) {
			struct round r = {.f = f,
					  .st = st,
					  .pn = pn,
					  .map = map,
					  .src = f->sources[s],
					  .s = s};
			struct gf_rollout_fanout fo = {
				.nodes = pn,
				.n = npolled,
				.op = round_op,
				.ctx = &r,
				.on_done = round_done,
				.done_ud = &r,
				.keep = keep.sess ? &keep : NULL,
			};
			int code = f->fan.run(f->fan.ud, &fo);

			if (r.rc < 0) {
				rc = r.rc;
				if (err)
					*err = r.err;
			} else if (code > 0) {
				f->code = code;
			}
		}
		if (rc == 0)
			rc = drain_pushed(f, st, false, err);
		f->rounds++;
		if (rc < 0 || f->code || stopping(f))
			break;
		next = round_start + f->interval;
		if (end > 0 && next >= end)
			break;
		/* Until the next round, what pushed sources hand over is stored as it comes. */
		while (rc == 0 && !stopping(f) && gf_monotime() < next) {
			double t = gf_monotime() + PUSHED_WAIT_S;

			wait_pushed(f, t < next ? t : next);
			rc = drain_pushed(f, st, false, err);
		}
	}
	gf_fanout_keep_release(&keep);
	set_draining(f, false); /* a source waiting for room goes on: it is being stopped */
	if (pusher) {
		struct gf_err perr = {0};

		src = f->pusher.stop(f->pusher.ud, &perr);
		if (src < 0 && rc == 0) {
			rc = src;
			if (err)
				*err = perr;
		}
	}
	if (rc == 0 && !f->code)
		rc = drain_pushed(f, st, false, err);
	else
		drain_pushed(f, st, true, NULL);
	for (size_t i = 0; i < f->n; i++) {
		for (size_t s = 0; st[i].cursor && s < f->nsources; s++) {
			free(st[i].cursor[s]);
			gf_event_poll_release(&st[i].poll[s]);
		}
		free(st[i].cursor);
		free(st[i].poll);
		free(st[i].prc);
	}
	free(st);
	free(pn);
	free(map);
	free(pushed_only);
	pthread_cond_destroy(&f->drained);
	pthread_cond_destroy(&f->more);
	pthread_mutex_destroy(&f->lock);
	return rc;
}
