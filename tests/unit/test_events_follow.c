/*
 * Unit tests for fleet/events.c: the SEL source's incremental reading (Get
 * SEL Info first, the entries after the last one seen, a clear or a wrap
 * detected) and the follow loop's rounds, stores and hooks, on a stub
 * backend whose event logs live in memory, with a real inventory.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleet/events.h"
#include "lib/buf.h"
#include "events_fixture.h"

#define NODES 2
#define MAXREC 16

struct rec {
	unsigned id;
	unsigned long stamp;
	enum gf_severity sev;
};

/* One BMC's log, and what was asked of it. */
struct sel {
	struct rec v[MAXREC];
	size_t n;
	unsigned long added, erased;
	bool refuse; /* the login is refused */
	unsigned infos, reads;
	char after[16]; /* the last sel_since's @after, "" for NULL */
};

static struct sel sels[NODES];

struct sess {
	struct sel *sel;
};

static int stub_open(const struct gf_bmc_target *t, void **ret, struct gf_err *err)
{
	struct sel *s = &sels[t->node[1] - '1'];
	struct sess *x;

	if (s->refuse)
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH, "bmc '%s' rejected the login",
				  t->node);
	x = gf_xcalloc(1, sizeof(*x));
	x->sel = s;
	*ret = x;
	return 0;
}

static void stub_close(void *sess)
{
	free(sess);
}

static int stub_info(void *sess, struct gf_sel_info *ret, struct gf_err *err)
{
	struct sel *s = ((struct sess *)sess)->sel;

	(void)err;
	s->infos++;
	*ret = (struct gf_sel_info){.entries = s->n, .added = s->added, .erased = s->erased};
	return 0;
}

static void add_entry(struct gf_sel_list *l, const struct rec *r)
{
	struct gf_sel_entry *e = gf_sel_list_add(l);
	char id[16];

	snprintf(id, sizeof(id), "%u", r->id);
	e->id = gf_xstrdup(id);
	e->has_time = true;
	e->time = (double)r->stamp;
	e->stamp = r->stamp;
	e->severity = r->sev;
	e->event = gf_xstrdup("event");
}

static int stub_since(void *sess, const char *after, struct gf_sel_since *ret, struct gf_err *err)
{
	struct sel *s = ((struct sess *)sess)->sel;
	struct gf_sel_since out = {0};
	size_t k = 0;

	(void)err;
	s->reads++;
	snprintf(s->after, sizeof(s->after), "%s", after ? after : "");
	if (after) {
		for (k = 0; k < s->n && s->v[k].id != (unsigned)atoi(after); k++)
			;
		if (k < s->n)
			k++;
		else
			out.from_start = true, k = 0;
	}
	for (; k < s->n; k++)
		add_entry(&out.entries, &s->v[k]);
	*ret = out;
	return 0;
}

static const struct gf_backend stub = {
	.name = "stub",
	.title = "Stub",
	.open = stub_open,
	.close = stub_close,
	.sel_info = stub_info,
	.sel_since = stub_since,
};

static void log_add(struct sel *s, unsigned id, unsigned long stamp, enum gf_severity sev)
{
	s->v[s->n++] = (struct rec){id, stamp, sev};
	s->added = stamp;
}

/* A pushed source's batch, handed over while the round runs (set by a test). */
static struct gf_events_follow *push_to;

static void push_two(struct gf_events_follow *f)
{
	struct gf_event_list l = {0};

	for (int k = 0; k < 2; k++)
		ev_add(&l, "n1", "redfish-sse", k ? "7" : "6", NULL, 0, GF_SEV_INFO, NULL);
	gf_events_push(f, 0, "redfish-sse", &l, "{\"last\":\"7\"}");
	assert_int_equal(l.n, 0); /* taken */
}

static int stub_fan(void *ud, const struct gf_rollout_fanout *rf)
{
	struct gf_fanout f = {
		.nodes = rf->nodes,
		.n = rf->n,
		.op = rf->op,
		.ctx = rf->ctx,
		.backend = &stub,
		.exec = {.fanout = 2, .timeout = 30},
		.hooks = {.done = rf->on_done, .ud = rf->done_ud},
	};
	struct gf_err err = {0};
	int rc;

	(void)ud;
	if (push_to)
		push_two(push_to);
	rc = gf_fanout_run(&f, &err);
	gf_fanout_release(&f);
	assert_int_equal(rc, 0);
	return 0;
}

/* What the hooks saw. */
struct seen {
	size_t pushed, pushed_baseline;
	size_t fresh[NODES], stale[NODES], baseline[NODES];
	size_t cleared[NODES], failed[NODES], recovered[NODES];
};

static void on_events(void *ud, size_t i, const char *source, const struct gf_event *v,
		      const bool *fresh, size_t n, bool baseline)
{
	struct seen *s = ud;

	if (!strcmp(source, "redfish-sse")) {
		for (size_t k = 0; k < n; k++)
			*(baseline ? &s->pushed_baseline : &s->pushed) += fresh[k];
		return;
	}
	assert_string_equal(source, "sel");
	for (size_t k = 0; k < n; k++) {
		assert_string_equal(v[k].source, "sel");
		if (!fresh[k])
			s->stale[i]++;
		else if (baseline)
			s->baseline[i]++;
		else
			s->fresh[i]++;
	}
}

static void on_cleared(void *ud, size_t i, const char *source)
{
	((struct seen *)ud)->cleared[i]++;
}

static void on_state(void *ud, size_t i, const struct gf_err *err)
{
	struct seen *s = ud;

	if (err)
		s->failed[i]++;
	else
		s->recovered[i]++;
}

struct fixture {
	struct ev_tmpdb t;
	struct gf_db *db; /* t's */
	struct gf_node nodes[NODES];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	memset(sels, 0, sizeof(sels));
	if (ev_tmpdb_open(&f->t, "evfollow") < 0)
		return -1;
	f->db = f->t.db;
	for (size_t i = 0; i < NODES; i++) {
		char name[8];

		snprintf(name, sizeof(name), "n%zu", i + 1);
		f->nodes[i].name = gf_xstrdup(name);
		f->nodes[i].bmc = gf_xstrdup("127.0.0.1");
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (size_t i = 0; i < NODES; i++) {
		free(f->nodes[i].name);
		free(f->nodes[i].bmc);
	}
	ev_tmpdb_close(&f->t);
	free(f);
	return 0;
}

/*
 * One round of follow over both nodes (@push: a pushed source hands over a
 * batch during it; @pu: one beside it, NULL: none).
 */
static void round_with(struct fixture *fx, struct seen *s, bool push,
		       const struct gf_events_pusher *pu)
{
	static const struct gf_event_source *const src[] = {&gf_event_source_sel};
	gf_cancel_flag stop = 0;
	struct gf_events_follow f = {
		.nodes = fx->nodes,
		.n = NODES,
		.sources = src,
		.nsources = 1,
		.interval = 60,
		.duration = 0.001, /* the next round would start after the end */
		.stop = &stop,
		.db = fx->db,
		.fan = {stub_fan, NULL},
		.hooks = {on_events, on_cleared, on_state, s},
	};
	struct gf_err err = {0};

	if (pu)
		f.pusher = *pu;
	push_to = push ? &f : NULL;
	assert_int_equal(gf_events_follow_run(&f, &err), 0);
	push_to = NULL;
	assert_int_equal(f.rounds, 1);
}

static void round_push(struct fixture *fx, struct seen *s, bool push)
{
	round_with(fx, s, push, NULL);
}

static void round_of(struct fixture *fx, struct seen *s)
{
	round_push(fx, s, false);
}

static void test_baseline_then_only_what_is_new(void **state)
{
	struct fixture *fx = *state;
	struct seen s = {0};

	log_add(&sels[0], 1, 0x60000000, GF_SEV_INFO);
	log_add(&sels[0], 2, 0x60000001, GF_SEV_CRITICAL);
	round_of(fx, &s);
	assert_int_equal(s.baseline[0], 2);
	assert_int_equal(s.fresh[0], 0);
	assert_string_equal(sels[0].after, ""); /* no cursor: all of it */
	/* Nothing changed: Get SEL Info only, not one entry read. */
	memset(&s, 0, sizeof(s));
	round_of(fx, &s);
	assert_int_equal(sels[0].infos, 2);
	assert_int_equal(sels[0].reads, 1);
	assert_int_equal(s.fresh[0] + s.baseline[0] + s.stale[0], 0);
	/* One more: read after record 2, reported once. */
	log_add(&sels[0], 3, 0x60000002, GF_SEV_WARNING);
	round_of(fx, &s);
	assert_string_equal(sels[0].after, "2");
	assert_int_equal(s.fresh[0], 1);
	assert_int_equal(s.baseline[0], 0);
	assert_int_equal(s.cleared[0], 0);
}

static void test_clear_and_wrap_are_detected(void **state)
{
	struct fixture *fx = *state;
	struct seen s = {0};

	log_add(&sels[0], 1, 0x60000000, GF_SEV_INFO);
	log_add(&sels[0], 2, 0x60000001, GF_SEV_INFO);
	round_of(fx, &s);
	/* Cleared (a new erase stamp), and record id 1 reused by a new event. */
	sels[0].n = 0;
	sels[0].erased = 0x60000005;
	log_add(&sels[0], 1, 0x60000006, GF_SEV_CRITICAL);
	memset(&s, 0, sizeof(s));
	round_of(fx, &s);
	assert_int_equal(s.cleared[0], 1);
	assert_string_equal(sels[0].after, ""); /* read from the start */
	assert_int_equal(s.fresh[0], 1);
	/* Wrapped: the oldest entries, the last one seen among them, are gone. */
	log_add(&sels[0], 2, 0x60000007, GF_SEV_INFO);
	log_add(&sels[0], 3, 0x60000008, GF_SEV_INFO);
	memmove(&sels[0].v[0], &sels[0].v[2], sizeof(sels[0].v[0]));
	sels[0].n = 1; /* only record 3 is left; the cursor says 1 */
	memset(&s, 0, sizeof(s));
	round_of(fx, &s);
	assert_int_equal(s.cleared[0], 1);
	assert_int_equal(s.fresh[0], 1);
	/* Once more: nothing is reported twice. */
	memset(&s, 0, sizeof(s));
	sels[0].added++;
	round_of(fx, &s);
	assert_int_equal(s.fresh[0], 0);
}

static void test_a_refused_node_is_reported_once_others_flow(void **state)
{
	struct fixture *fx = *state;
	struct seen s = {0};

	sels[1].refuse = true;
	for (unsigned r = 0; r < 3; r++) {
		log_add(&sels[0], r + 1, 0x60000000 + r, GF_SEV_INFO);
		round_of(fx, &s);
	}
	assert_int_equal(s.baseline[0], 1);
	assert_int_equal(s.fresh[0], 2);
	assert_int_equal(s.failed[1], 3); /* each run starts afresh: once a run */
	sels[1].refuse = false;
	round_of(fx, &s);
	assert_int_equal(s.recovered[1], 0); /* a new run did not know it failed */
}

/* What a pushed source (the SSE multiplexer) hands over is stored with its cursor, once. */
static void test_pushed_batches_are_stored_once(void **state)
{
	struct fixture *fx = *state;
	struct seen s = {0};
	char *cur = NULL;

	round_push(fx, &s, true);
	assert_int_equal(s.pushed, 2);
	assert_int_equal(gf_events_cursor(fx->db, "n1", "redfish-sse", &cur, NULL), 0);
	assert_string_equal(cur, "{\"last\":\"7\"}");
	free(cur);
	round_push(fx, &s, true);
	assert_int_equal(s.pushed, 2); /* the same two again: nothing new */
}

/* A pushed source run beside the rounds: node 1 is its own (as fleet/events_redfish.c's). */
struct pusher {
	unsigned started, stopped;
};

static int pusher_start(void *ud, struct gf_events_follow *f, bool *pushed_only, struct gf_err *err)
{
	struct pusher *p = ud;
	struct gf_err why = {.code = GF_E_NODE, .msg = "bmc 'n1': stream refused"};

	(void)err;
	p->started++;
	pushed_only[0] = true;
	push_two(f);
	gf_events_push_state(f, 0, &why);
	return 0;
}

static int pusher_stop(void *ud, struct gf_err *err)
{
	(void)err;
	((struct pusher *)ud)->stopped++;
	return 0;
}

/* A node a pushed source delivers is left out of the polled rounds; its batches are stored. */
static void test_pushed_only_nodes_are_not_polled(void **state)
{
	struct fixture *fx = *state;
	struct pusher pu = {0};
	const struct gf_events_pusher hook = {pusher_start, pusher_stop, &pu};
	struct seen s = {0};

	log_add(&sels[0], 1, 0x60000000, GF_SEV_INFO);
	log_add(&sels[1], 1, 0x60000000, GF_SEV_INFO);
	sels[0].refuse = true; /* polled, node 1 would fail */
	round_with(fx, &s, false, &hook);
	assert_int_equal(pu.started, 1);
	assert_int_equal(pu.stopped, 1);
	assert_int_equal(s.baseline[0], 0);
	assert_int_equal(s.baseline[1], 1); /* node 2 was polled */
	assert_int_equal(s.pushed, 2);
	assert_int_equal(s.failed[0], 1); /* the pushed state, not a poll */
}

/* A flood from a pushed source's thread: it waits for the loop past the bound, nothing lost. */
struct flooder {
	struct gf_events_follow *f;
	pthread_t t;
	size_t most; /* the most events seen waiting, after a push */
};

#define FLOOD_BATCHES 5
#define FLOOD_BATCH 10000

static void *flood_thread(void *ud)
{
	struct flooder *fl = ud;

	for (int b = 0; b < FLOOD_BATCHES; b++) {
		struct gf_event_list l = {0};
		char id[16];

		for (int k = 0; k < FLOOD_BATCH; k++) {
			snprintf(id, sizeof(id), "%d", b * FLOOD_BATCH + k + 1);
			ev_add(&l, "n1", "redfish-sse", id, NULL, 0, GF_SEV_INFO, NULL);
		}
		gf_events_push(fl->f, 0, "redfish-sse", &l, id);
		pthread_mutex_lock(&fl->f->lock);
		/* The bound holds while the loop takes them (before and after, a push never waits). */
		if (fl->f->draining && fl->f->pending > fl->most)
			fl->most = fl->f->pending;
		pthread_mutex_unlock(&fl->f->lock);
	}
	return NULL;
}

static int flood_start(void *ud, struct gf_events_follow *f, bool *pushed_only, struct gf_err *err)
{
	struct flooder *fl = ud;

	(void)err;
	fl->f = f;
	pushed_only[0] = true;
	return pthread_create(&fl->t, NULL, flood_thread, fl) == 0 ? 0 : GF_E_IO;
}

static int flood_stop(void *ud, struct gf_err *err)
{
	(void)err;
	pthread_join(((struct flooder *)ud)->t, NULL);
	return 0;
}

static void test_a_flood_waits_for_the_loop_and_loses_nothing(void **state)
{
	static const struct gf_event_source *const src[] = {&gf_event_source_sel};
	struct fixture *fx = *state;
	struct flooder fl = {0};
	struct seen s = {0};
	gf_cancel_flag stop = 0;
	struct gf_events_follow f = {
		.nodes = fx->nodes,
		.n = NODES,
		.sources = src,
		.nsources = 1,
		.interval = 0.2,
		.duration = 1.5,
		.stop = &stop,
		.db = fx->db,
		.fan = {stub_fan, NULL},
		.hooks = {on_events, on_cleared, on_state, &s},
		.pusher = {flood_start, flood_stop, &fl},
	};
	struct gf_err err = {0};

	assert_int_equal(gf_events_follow_run(&f, &err), 0);
	assert_int_equal(s.pushed, FLOOD_BATCHES * FLOOD_BATCH); /* every event, once */
	/* Never more than the bound and the batch that reached it were waiting. */
	assert_true(fl.most <= GF_EVENTS_PUSHED_MAX + FLOOD_BATCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_baseline_then_only_what_is_new, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_clear_and_wrap_are_detected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_refused_node_is_reported_once_others_flow,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pushed_batches_are_stored_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pushed_only_nodes_are_not_polled, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_flood_waits_for_the_loop_and_loses_nothing,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
