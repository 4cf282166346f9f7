/* The BMC fan-out frame on a backend of stubs: short ops, streams that reconnect, Ctrl-C. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include <jansson.h>

#include "fleet/fanout.h"
#include "lib/buf.h"
#include "lib/util.h"

#define NNODES 3

/* What the stub BMCs do and saw; one per test. */
static struct stub {
	atomic_int opens[NNODES]; /* open calls, failed ones included */
	atomic_int sessions;      /* open now */
	atomic_int closes;
	int fail_opens;            /* each node's first this many opens fail ... */
	enum gf_errkind fail_kind; /* ... with this kind */
	const struct gf_bmc_opts *opts_seen[NNODES];
} stub;

struct stub_sess {
	size_t i;
	bool stale; /* the BMC dropped it: every call times out */
};

static size_t node_index(const char *name)
{
	return (size_t)(name[strlen(name) - 1] - '0');
}

static int stub_open(const struct gf_bmc_target *t, void **ret, struct gf_err *err)
{
	size_t i = node_index(t->node);
	struct stub_sess *s;

	assert_true(t->deadline > 0);
	stub.opts_seen[i] = t->opts;
	if (atomic_fetch_add(&stub.opens[i], 1) < stub.fail_opens)
		return gf_err_set(err, GF_E_NODE, stub.fail_kind, "bmc '%s' said no", t->node);
	s = gf_xcalloc(1, sizeof(*s));
	s->i = i;
	atomic_fetch_add(&stub.sessions, 1);
	*ret = s;
	return 0;
}

static void stub_close(void *sess)
{
	atomic_fetch_sub(&stub.sessions, 1);
	atomic_fetch_add(&stub.closes, 1);
	free(sess);
}

static int stub_power_get(void *sess, enum gf_power *ret, struct gf_err *err)
{
	if (((struct stub_sess *)sess)->stale)
		return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT, "bmc did not answer");
	*ret = ((struct stub_sess *)sess)->i % 2 ? GF_POWER_OFF : GF_POWER_ON;
	return 0;
}

static const struct gf_backend stub_backend = {
	.name = "stub",
	.title = "Stub",
	.open = stub_open,
	.close = stub_close,
	.power_get = stub_power_get,
};

static char names[NNODES][8] = {"node0", "node1", "node2"};
static char bmcs[NNODES][16] = {"192.0.2.10", "192.0.2.11", "192.0.2.12"};
static struct gf_node nodes[NNODES] = {
	{.name = names[0], .bmc = bmcs[0], .protocol = &stub_backend},
	{.name = names[1], .bmc = bmcs[1], .protocol = &stub_backend},
	{.name = names[2], .bmc = bmcs[2], .protocol = NULL},
};

/* What the hooks saw. */
struct hooks_seen {
	int starts, finishes, dones;
	int start_rc;
	bool done_seen[NNODES];
};

static int hook_start(void *ud, const struct gf_fanout *f)
{
	struct hooks_seen *h = ud;

	h->starts++;
	assert_false(f->tls); /* the stub has no certificates */
	for (size_t i = 0; i < NNODES; i++)
		assert_int_equal(atomic_load(&stub.opens[i]), 0); /* nothing sent before */
	return h->start_rc;
}

static void hook_done(void *ud, size_t i, const struct gf_result *slot)
{
	struct hooks_seen *h = ud;

	assert_false(h->done_seen[i]);
	h->done_seen[i] = true;
	h->dones++;
}

static void hook_finish(void *ud, const struct gf_result *slots)
{
	((struct hooks_seen *)ud)->finishes++;
}

static int power_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		    const void *ctx, struct gf_result *slot, struct gf_err *err);

/* A run of the stub nodes: power_op with @ctx, or a stream once stream_frame() says so. */
static void frame(struct gf_fanout *f, struct hooks_seen *h, double timeout, const void *ctx)
{
	memset(&stub, 0, sizeof(stub));
	*f = (struct gf_fanout){
		.nodes = nodes,
		.n = NNODES,
		.backend = &stub_backend,
		.exec = {.fanout = 2, .timeout = timeout},
		.backoff_min = 0.01,
		.backoff_max = 0.04,
		.hooks = {.start = hook_start, .done = hook_done, .finish = hook_finish, .ud = h},
		.op = power_op,
		.ctx = ctx,
	};
}

/* ---- a short op ------------------------------------------------------------------ */

static int power_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		    const void *ctx, struct gf_result *slot, struct gf_err *err)
{
	enum gf_power p;

	if (strcmp(n->name, *(const char *const *)ctx) == 0)
		return gf_err_set(err, GF_E_NODE, GF_EK_REFUSED, "bmc '%s' refused", n->name);
	if (be->power_get(sess, &p, err) < 0)
		return GF_E_NODE;
	json_object_set_new(slot->data, "power", json_string(gf_power_name(p)));
	return 0;
}

static void short_op_on_every_node(void **state)
{
	const char *refuse = "node1";
	const struct gf_bmc_opts opts = {.log_name = "Log1"};
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};

	frame(&f, &h, 5, &refuse);
	f.opts = &opts;
	f.action = "status";
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	assert_int_equal(h.starts, 1);
	assert_int_equal(h.dones, NNODES);
	assert_int_equal(h.finishes, 1);
	assert_true(f.slots[0].ok);
	assert_string_equal(json_string_value(json_object_get(f.slots[0].data, "power")), "on");
	assert_string_equal(json_string_value(json_object_get(f.slots[0].data, "action")),
			    "status");
	/* A failed op fails its node alone, with its action and its error. */
	assert_false(f.slots[1].ok);
	assert_int_equal(f.slots[1].err.kind, GF_EK_REFUSED);
	assert_string_equal(json_string_value(json_object_get(f.slots[1].data, "action")),
			    "status");
	/* An auto node says which backend it got. */
	assert_true(f.slots[2].ok);
	assert_string_equal(json_string_value(json_object_get(f.slots[2].data, "protocol")),
			    "stub");
	/* One session per node, each closed; the knobs reached the backend as one pointer. */
	for (size_t i = 0; i < NNODES; i++) {
		assert_int_equal(atomic_load(&stub.opens[i]), 1);
		assert_ptr_equal(stub.opts_seen[i], &opts);
	}
	assert_int_equal(atomic_load(&stub.closes), NNODES);
	assert_int_equal(atomic_load(&stub.sessions), 0);
	assert_int_equal(f.npinned, 0);
	assert_int_equal(f.pins_rc, 0);
	gf_fanout_release(&f);
}

static void start_hook_stops_the_run_before_anything_is_sent(void **state)
{
	const char *refuse = "";
	struct hooks_seen h = {.start_rc = 7};
	struct gf_fanout f;
	struct gf_err err = {0};

	frame(&f, &h, 5, &refuse);
	assert_int_equal(gf_fanout_run(&f, &err), 7);
	assert_int_equal(h.dones, 0);
	assert_int_equal(h.finishes, 0);
	for (size_t i = 0; i < NNODES; i++)
		assert_int_equal(atomic_load(&stub.opens[i]), 0);
	gf_fanout_release(&f);
}

/* A node that may be restarting: its refused opens are tried again, each second. */
static bool restarting(const void *ctx, const struct gf_node *n)
{
	return strcmp(n->name, "node0") == 0;
}

static void restart_retry_opens_again(void **state)
{
	const char *refuse = "";
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};

	frame(&f, &h, 5, &refuse);
	f.may_be_restarting = restarting;
	stub.fail_opens = 1;
	stub.fail_kind = GF_EK_CONNECT;
	f.exec.retries = 0;
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	assert_true(f.slots[0].ok);
	assert_int_equal(atomic_load(&stub.opens[0]), 2);
	assert_false(f.slots[1].ok); /* not restarting: its refused open is its result */
	assert_int_equal(f.slots[1].err.kind, GF_EK_CONNECT);
	assert_int_equal(atomic_load(&stub.opens[1]), 1);
	assert_int_equal(atomic_load(&stub.sessions), 0);
	gf_fanout_release(&f);
}

/* ---- streams ----------------------------------------------------------------------- */

/* What a stream op does: per node, a script of returns, one per session. */
struct script {
	int ret[NNODES][4]; /* the session's return; past the end: the last */
	int nret;
	int cancel_node;   /* -1, or raise SIGINT in this node's second session */
	bool hold[NNODES]; /* hold each session until the deadline or Ctrl-C */
};

static int count_sessions(struct gf_result *slot)
{
	json_t *c = json_object_get(slot->data, "sessions");
	int k = c ? (int)json_integer_value(c) + 1 : 1;

	json_object_set_new(slot->data, "sessions", json_integer(k));
	return k;
}

static int stream_op(const struct gf_fanout_session *s, const void *ctx, struct gf_result *slot,
		     struct gf_err *err);

/* Sessions that entered their hold (the script's hold[]), and how many nodes hold. */
static atomic_int holding;

static int held_nodes(const struct script *sc)
{
	int n = 0;

	for (size_t i = 0; i < NNODES; i++)
		n += sc->hold[i];
	return n;
}

static void stream_frame(struct gf_fanout *f, struct hooks_seen *h, const struct script *sc,
			 double timeout)
{
	frame(f, h, timeout, sc);
	f->mode = GF_FANOUT_STREAM;
	f->stream = stream_op;
}

static int stream_op(const struct gf_fanout_session *s, const void *ctx, struct gf_result *slot,
		     struct gf_err *err)
{
	const struct script *sc = ctx;
	int k = count_sessions(slot);
	int rc = sc->ret[s->i][(k - 1 < sc->nret ? k : sc->nret) - 1];

	/* The frame's count and the op's own, kept in slot->data, agree. */
	assert_int_equal((int)s->opened, k);
	assert_ptr_equal(s->be, &stub_backend);
	assert_non_null(s->sess);
	assert_int_equal(((struct stub_sess *)s->sess)->i, s->i);
	if (sc->cancel_node == (int)s->i && k == 2) {
		/* Ctrl-C once every held node is in its session, however slow the run */
		while (atomic_load(&holding) < held_nodes(sc) && gf_monotime() < s->deadline)
			gf_sleep_until(gf_monotime() + 0.005);
		raise(SIGINT);
	}
	if (sc->hold[s->i])
		atomic_fetch_add(&holding, 1);
	while (sc->hold[s->i] && !gf_exec_cancelled() && gf_monotime() < s->deadline)
		gf_sleep_until(gf_monotime() + 0.005);
	if (rc < 0)
		return gf_err_set(err, GF_E_NODE, (enum gf_errkind) - rc, "stream of '%s' broke",
				  s->node->name);
	return rc;
}

static void stream_reconnects_until_done(void **state)
{
	/* node0: two reconnects; node1: a dropped connection (a reconnect), then done;
	 * node2: a protocol error ends it. */
	struct script sc = {
		.ret = {{GF_FANOUT_RECONNECT, GF_FANOUT_RECONNECT, GF_FANOUT_DONE},
			{-GF_EK_CONNECT, GF_FANOUT_DONE, GF_FANOUT_DONE},
			{-GF_EK_PROTOCOL, GF_FANOUT_DONE, GF_FANOUT_DONE}},
		.nret = 3,
		.cancel_node = -1,
	};
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};
	double t0;

	stream_frame(&f, &h, &sc, 10);
	stub.fail_opens = 1; /* every BMC refuses its first connection */
	stub.fail_kind = GF_EK_CONNECT;
	t0 = gf_monotime();
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	assert_true(gf_monotime() - t0 < 5); /* done well before the deadline */
	assert_int_equal(h.dones, NNODES);
	assert_true(f.slots[0].ok);
	assert_int_equal(json_integer_value(json_object_get(f.slots[0].data, "sessions")), 3);
	assert_int_equal(atomic_load(&stub.opens[0]), 4); /* the refused one, then three */
	assert_true(f.slots[1].ok);
	assert_int_equal(json_integer_value(json_object_get(f.slots[1].data, "sessions")), 2);
	assert_false(f.slots[2].ok);
	assert_int_equal(f.slots[2].err.kind, GF_EK_PROTOCOL);
	assert_int_equal(json_integer_value(json_object_get(f.slots[2].data, "sessions")), 1);
	/* Every session the frame opened, it closed. */
	assert_int_equal(atomic_load(&stub.sessions), 0);
	assert_int_equal(atomic_load(&stub.closes), 3 + 2 + 1);
	gf_fanout_release(&f);
}

static void stream_gives_up_on_a_refused_login(void **state)
{
	struct script sc = {.ret = {{GF_FANOUT_DONE}, {GF_FANOUT_DONE}, {GF_FANOUT_DONE}},
			    .nret = 1,
			    .cancel_node = -1};
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};

	stream_frame(&f, &h, &sc, 10);
	stub.fail_opens = 1;
	stub.fail_kind = GF_EK_AUTH;
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	for (size_t i = 0; i < NNODES; i++) {
		assert_false(f.slots[i].ok);
		assert_int_equal(f.slots[i].err.kind, GF_EK_AUTH);
		assert_int_equal(atomic_load(&stub.opens[i]), 1); /* never tried again */
	}
	gf_fanout_release(&f);
}

static void stream_runs_until_its_deadline(void **state)
{
	/* Sessions that always end at once: reconnected with backoff until the deadline. */
	struct script sc = {.ret = {{GF_FANOUT_RECONNECT},
				    {GF_FANOUT_RECONNECT},
				    {GF_FANOUT_RECONNECT}},
			    .nret = 1,
			    .cancel_node = -1};
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};
	double t0;

	stream_frame(&f, &h, &sc, 0.4);
	f.exec.fanout = 1; /* raised: every stream runs at once */
	t0 = gf_monotime();
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	assert_true(gf_monotime() - t0 >= 0.35);
	assert_true(gf_monotime() - t0 < 0.4 * 2 + 0.5); /* all at once, not one after the other */
	for (size_t i = 0; i < NNODES; i++) {
		assert_true(f.slots[i].ok);
		/* Waits of 5..10 ms: several sessions, not a hot loop. */
		assert_true(atomic_load(&stub.opens[i]) >= 3);
		assert_true(atomic_load(&stub.opens[i]) <= 0.4 / 0.005 + 1);
	}
	assert_int_equal(atomic_load(&stub.sessions), 0);
	gf_fanout_release(&f);
}

static void stream_stops_on_ctrl_c(void **state)
{
	/* node1's and node2's sessions held until the end; node0's end at once, its second
	 * raises SIGINT. */
	struct script sc = {.ret = {{GF_FANOUT_RECONNECT},
				    {GF_FANOUT_RECONNECT},
				    {GF_FANOUT_RECONNECT}},
			    .nret = 1,
			    .cancel_node = 0,
			    .hold = {false, true, true}};
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};
	double t0;

	atomic_store(&holding, 0);
	stream_frame(&f, &h, &sc, 30);
	t0 = gf_monotime();
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	assert_true(gf_exec_cancelled());
	assert_true(gf_monotime() - t0 < 5); /* not the 30 s deadline */
	assert_int_equal(h.dones, NNODES);
	for (size_t i = 0; i < NNODES; i++)
		assert_true(f.slots[i].ok); /* stopped while up: ok, the caller sees the cancel */
	assert_int_equal(atomic_load(&stub.sessions), 0);
	assert_int_equal(atomic_load(&stub.closes), atomic_load(&stub.opens[0]) +
							    atomic_load(&stub.opens[1]) +
							    atomic_load(&stub.opens[2]));
	gf_fanout_release(&f);
}

/* ---- sessions kept from one run to the next ---------------------------------------- */

static atomic_int rearms;

static void stub_rearm(void *sess, double deadline)
{
	assert_true(deadline > gf_monotime());
	atomic_fetch_add(&rearms, 1);
}

static const struct gf_backend stub_keep_backend = {
	.name = "stub",
	.title = "Stub",
	.open = stub_open,
	.close = stub_close,
	.rearm = stub_rearm,
	.power_get = stub_power_get,
};

static void kept_sessions_are_reused_and_reopened_after_an_error(void **state)
{
	const char *refuse = "none";
	struct gf_fanout_keep keep;
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};

	gf_fanout_keep_init(&keep, NNODES);
	atomic_store(&rearms, 0);
	for (int run = 0; run < 3; run++) {
		if (run == 2) /* node0's BMC dropped its session between two runs */
			((struct stub_sess *)keep.sess[0])->stale = true;
		memset(&h, 0, sizeof(h));
		frame(&f, &h, 5, &refuse); /* the stub's counts start again each run */
		f.backend = &stub_keep_backend;
		f.keep = &keep;
		f.hooks.start = NULL;
		assert_int_equal(gf_fanout_run(&f, &err), 0);
		for (size_t i = 0; i < NNODES; i++)
			assert_true(f.slots[i].ok);
		/* Run 1 opens one session per node and closes none; run 2 opens none. */
		for (size_t i = 0; i < NNODES; i++) {
			int want = run == 0 || (run == 2 && i == 0) ? 1 : 0;

			assert_int_equal(atomic_load(&stub.opens[i]), want);
			assert_non_null(keep.sess[i]);
		}
		/* Only the stale session was closed (and one opened in its place). */
		assert_int_equal(atomic_load(&stub.closes), run == 2 ? 1 : 0);
		gf_fanout_release(&f);
	}
	/* Every kept session was given the run's deadline before its op. */
	assert_int_equal(atomic_load(&rearms), 2 * NNODES);
	memset(&stub.closes, 0, sizeof(stub.closes));
	gf_fanout_keep_release(&keep);
	assert_int_equal(atomic_load(&stub.closes), NNODES);
	assert_null(keep.sess);
}

/* A keep made for fewer nodes than the run keeps theirs; the rest open and close each run. */
static void only_the_first_nodes_sessions_are_kept(void **state)
{
	const char *refuse = "none";
	struct gf_fanout_keep keep;
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};

	gf_fanout_keep_init(&keep, 1);
	for (int run = 0; run < 2; run++) {
		memset(&h, 0, sizeof(h));
		frame(&f, &h, 5, &refuse);
		f.backend = &stub_keep_backend;
		f.keep = &keep;
		f.hooks.start = NULL;
		assert_int_equal(gf_fanout_run(&f, &err), 0);
		for (size_t i = 0; i < NNODES; i++) {
			assert_true(f.slots[i].ok);
			assert_int_equal(atomic_load(&stub.opens[i]), i == 0 ? run == 0 : 1);
		}
		assert_non_null(keep.sess[0]);
		assert_int_equal(atomic_load(&stub.closes), NNODES - 1);
		gf_fanout_release(&f);
	}
	memset(&stub.closes, 0, sizeof(stub.closes));
	gf_fanout_keep_release(&keep);
	assert_int_equal(atomic_load(&stub.closes), 1);
}

/* A backend that cannot rearm a session never has one kept: each run opens and closes. */
static void sessions_of_a_backend_without_rearm_are_not_kept(void **state)
{
	const char *refuse = "none";
	struct gf_fanout_keep keep;
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};

	gf_fanout_keep_init(&keep, NNODES);
	frame(&f, &h, 5, &refuse);
	f.keep = &keep;
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	for (size_t i = 0; i < NNODES; i++)
		assert_null(keep.sess[i]);
	assert_int_equal(atomic_load(&stub.closes), NNODES);
	gf_fanout_release(&f);
	gf_fanout_keep_release(&keep);
}

/* ---- the power loop (reads_power): a backend that reads every node on one thread ---- */

static struct loop_seen {
	int calls;      /* power_get_many calls that read their targets */
	size_t n;       /* targets it got */
	bool refuse[3]; /* power_get_many cannot read these: it reads none */
	bool on_caller;
	pthread_t caller;
} loop;

/* node0 read (on), node1 handed back, node2 silent (a timeout). */
static void loop_get_many(const struct gf_bmc_target *t, size_t n, unsigned fanout,
			  gf_power_done done, void *ud)
{
	struct gf_err err = {0};

	for (size_t j = 0; j < n; j++)
		if (loop.refuse[node_index(t[j].node)])
			return; /* all or none: nothing sent, no node done */
	loop.calls++;
	loop.n = n;
	loop.on_caller = pthread_equal(pthread_self(), loop.caller);
	assert_int_equal(fanout, 2);
	for (size_t j = 0; j < n; j++) {
		assert_true(t[j].deadline > gf_monotime());
		switch (node_index(t[j].node)) {
		case 0: done(ud, j, 0, GF_POWER_ON, NULL); break;
		case 1: done(ud, j, GF_POWER_AGAIN, GF_POWER_UNKNOWN, NULL); break;
		default:
			gf_err_set(&err, GF_E_NODE, GF_EK_TIMEOUT, "bmc '%s' did not answer",
				   t[j].node);
			done(ud, j, GF_E_NODE, GF_POWER_UNKNOWN, &err);
		}
	}
}

static const struct gf_backend loop_backend = {
	.name = "loop",
	.title = "Loop",
	.open = stub_open,
	.close = stub_close,
	.power_get = stub_power_get,
	.power_get_many = loop_get_many,
};

static struct gf_node loop_nodes[NNODES] = {
	{.name = names[0], .bmc = bmcs[0], .protocol = &loop_backend},
	{.name = names[1], .bmc = bmcs[1], .protocol = &loop_backend},
	{.name = names[2], .bmc = bmcs[2], .protocol = &loop_backend},
};

static void loop_frame(struct gf_fanout *f, struct hooks_seen *h, const char **refuse)
{
	frame(f, h, 5, refuse);
	memset(&loop.calls, 0, sizeof(loop) - offsetof(struct loop_seen, calls));
	loop.caller = pthread_self();
	f->nodes = loop_nodes;
	f->backend = NULL; /* each node's own: the loop's */
	f->reads_power = true;
}

static void power_loop_reads_on_the_calling_thread(void **state)
{
	const char *refuse = "";
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};

	loop_frame(&f, &h, &refuse);
	memset(loop.refuse, 0, sizeof(loop.refuse));
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	assert_int_equal(loop.calls, 1);
	assert_int_equal(loop.n, NNODES);
	assert_true(loop.on_caller);
	assert_int_equal(h.dones, NNODES);
	/* Read by the loop: no session opened for it. */
	assert_true(f.slots[0].ok);
	assert_string_equal(json_string_value(json_object_get(f.slots[0].data, "power")), "on");
	assert_int_equal(atomic_load(&stub.opens[0]), 0);
	/* Handed back: the op on a worker, with a session of its own. */
	assert_true(f.slots[1].ok);
	assert_string_equal(json_string_value(json_object_get(f.slots[1].data, "power")), "off");
	assert_int_equal(atomic_load(&stub.opens[1]), 1);
	/* Failed in the loop: its error, no second try on a worker. */
	assert_false(f.slots[2].ok);
	assert_int_equal(f.slots[2].err.kind, GF_EK_TIMEOUT);
	assert_int_equal(atomic_load(&stub.opens[2]), 0);
	assert_int_equal(atomic_load(&stub.sessions), 0);
	gf_fanout_release(&f);
}

static void power_loop_takes_all_or_none(void **state)
{
	const char *refuse = "";
	struct hooks_seen h = {0};
	struct gf_fanout f;
	struct gf_err err = {0};

	/* One node the loop cannot read: every node gets a session on a worker. */
	loop_frame(&f, &h, &refuse);
	loop.refuse[2] = true;
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	assert_int_equal(loop.calls, 0);
	for (size_t i = 0; i < NNODES; i++) {
		assert_true(f.slots[i].ok);
		assert_int_equal(atomic_load(&stub.opens[i]), 1);
	}
	gf_fanout_release(&f);
	/* An op that is not power status never goes to the loop. */
	loop_frame(&f, &h, &refuse);
	memset(&h, 0, sizeof(h));
	f.reads_power = false;
	assert_int_equal(gf_fanout_run(&f, &err), 0);
	assert_int_equal(loop.calls, 0);
	assert_int_equal(h.dones, NNODES);
	gf_fanout_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(short_op_on_every_node),
		cmocka_unit_test(start_hook_stops_the_run_before_anything_is_sent),
		cmocka_unit_test(restart_retry_opens_again),
		cmocka_unit_test(stream_reconnects_until_done),
		cmocka_unit_test(stream_gives_up_on_a_refused_login),
		cmocka_unit_test(stream_runs_until_its_deadline),
		cmocka_unit_test(stream_stops_on_ctrl_c),
		cmocka_unit_test(kept_sessions_are_reused_and_reopened_after_an_error),
		cmocka_unit_test(only_the_first_nodes_sessions_are_kept),
		cmocka_unit_test(sessions_of_a_backend_without_rearm_are_not_kept),
		cmocka_unit_test(power_loop_reads_on_the_calling_thread),
		cmocka_unit_test(power_loop_takes_all_or_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
