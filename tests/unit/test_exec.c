/* The fan-out executor: every slot filled once, window bounded, retries, batches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "lib/exec.h"
#include "lib/util.h"

struct ctx {
	atomic_int running;
	atomic_int peak;
	atomic_int calls[64];
	int fail_first;       /* node index whose first attempt times out */
	double last_deadline; /* the latest deadline a task was given */
};

static pthread_mutex_t deadline_lock = PTHREAD_MUTEX_INITIALIZER;

static void task(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	struct ctx *c = vctx;
	int now = atomic_fetch_add(&c->running, 1) + 1;
	int peak = atomic_load(&c->peak);

	while (now > peak && !atomic_compare_exchange_weak(&c->peak, &peak, now))
		;
	atomic_fetch_add(&c->calls[i], 1);
	/* Hold the slot long enough for the window to fill. */
	usleep(2000);
	if ((int)i == c->fail_first && atomic_load(&c->calls[i]) == 1) {
		struct gf_err e = {0};

		gf_err_set(&e, GF_E_NODE, GF_EK_TIMEOUT, "slow");
		gf_result_fail(slot, &e);
	} else {
		slot->ok = true;
		slot->data = json_pack("{s:i}", "i", (int)i);
	}
	assert_true(deadline > gf_monotime());
	pthread_mutex_lock(&deadline_lock);
	if (deadline > c->last_deadline)
		c->last_deadline = deadline;
	pthread_mutex_unlock(&deadline_lock);
	atomic_fetch_sub(&c->running, 1);
}

struct seen {
	int order[64];
	int n;
};

static void done(void *ud, size_t i, const struct gf_result *slot)
{
	struct seen *s = ud;

	s->order[s->n++] = (int)i;
}

static void window_and_slots(void **state)
{
	struct ctx c = {.fail_first = -1};
	struct gf_exec_opts o = {.fanout = 4, .timeout = 5};
	struct gf_result slots[64];
	struct seen s = {0};

	assert_int_equal(gf_exec_run(&o, 64, task, &c, slots, done, &s, NULL), 0);
	assert_int_equal(s.n, 64);
	assert_true(atomic_load(&c.peak) <= 4);
	assert_true(atomic_load(&c.peak) >= 2);
	for (int i = 0; i < 64; i++) {
		assert_true(slots[i].ok);
		assert_int_equal(json_integer_value(json_object_get(slots[i].data, "i")), i);
		assert_int_equal(atomic_load(&c.calls[i]), 1);
		gf_result_release(&slots[i]);
	}
}

static void retry_on_timeout(void **state)
{
	struct ctx c = {.fail_first = 3};
	struct gf_exec_opts o = {.fanout = 2, .timeout = 5, .retries = 1};
	struct gf_result slots[8];

	assert_int_equal(gf_exec_run(&o, 8, task, &c, slots, NULL, NULL, NULL), 0);
	assert_true(slots[3].ok);
	assert_int_equal(slots[3].attempts, 2);
	assert_int_equal(atomic_load(&c.calls[3]), 2);
	for (int i = 0; i < 8; i++)
		gf_result_release(&slots[i]);

	struct ctx c2 = {.fail_first = 3};

	o.retries = 0;
	assert_int_equal(gf_exec_run(&o, 8, task, &c2, slots, NULL, NULL, NULL), 0);
	assert_false(slots[3].ok);
	assert_int_equal(slots[3].err.kind, GF_EK_TIMEOUT);
	for (int i = 0; i < 8; i++)
		gf_result_release(&slots[i]);
}

static void batches(void **state)
{
	struct ctx c = {.fail_first = -1};
	struct gf_exec_opts o = {.fanout = 8, .timeout = 5, .batch = 2, .interval = 0.2};
	struct gf_result slots[6];

	assert_int_equal(gf_exec_run(&o, 6, task, &c, slots, NULL, NULL, NULL), 0);
	/* Nodes 0-1, 2-3, 4-5 start about 0.2 s apart. */
	assert_true(slots[2].t_start - slots[0].t_start >= 0.19);
	assert_true(slots[4].t_start - slots[2].t_start >= 0.19);
	assert_true(slots[1].t_start - slots[0].t_start < 0.15);
	for (int i = 0; i < 6; i++)
		gf_result_release(&slots[i]);
}

/* Node 0 presses Ctrl-C: the later batches start at once instead of at their time. */
static void cancelling_task(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	struct ctx *c = vctx;
	struct gf_err e = {0};

	atomic_fetch_add(&c->calls[i], 1);
	/* Node 0 times out as Ctrl-C comes: it is not tried again. */
	raise(SIGINT);
	assert_true(gf_exec_cancelled());
	assert_true(*gf_exec_cancel_flag());
	gf_err_set(&e, GF_E_NODE, GF_EK_TIMEOUT, "slow");
	gf_result_fail(slot, &e);
}

static void cancel_cuts_the_stagger_short(void **state)
{
	struct ctx c = {.fail_first = -1};
	struct gf_exec_opts o = {.fanout = 8,
				 .timeout = 5,
				 .retries = 3,
				 .batch = 1,
				 .interval = 30};
	struct gf_result slots[4];
	struct sigaction now;
	double t0 = gf_monotime();

	assert_int_equal(gf_exec_run(&o, 4, cancelling_task, &c, slots, NULL, NULL, NULL), 0);
	assert_true(gf_exec_cancelled()); /* the caller sees it after the run */
	/* The run's handler is gone: SIGINT is back to what it was (the default). */
	assert_int_equal(sigaction(SIGINT, NULL, &now), 0);
	assert_true(now.sa_handler == SIG_DFL);
	assert_true(gf_monotime() - t0 < 5.0); /* not the 90 s of the schedule */
	assert_false(slots[0].ok);
	assert_int_equal(slots[0].attempts, 1); /* retries = 3, but not after a cancel */
	assert_int_equal(atomic_load(&c.calls[0]), 1);
	for (int i = 1; i < 4; i++) {
		/* Never started: no attempt, and the error says why. */
		assert_false(slots[i].ok);
		assert_int_equal(slots[i].attempts, 0);
		assert_int_equal(atomic_load(&c.calls[i]), 0);
		assert_non_null(strstr(slots[i].err.msg, "interrupted"));
	}
	for (int i = 0; i < 4; i++)
		gf_result_release(&slots[i]);
	/* The next run starts afresh. */
	c = (struct ctx){.fail_first = -1};
	o = (struct gf_exec_opts){.fanout = 2, .timeout = 5};
	assert_int_equal(gf_exec_run(&o, 2, task, &c, slots, NULL, NULL, NULL), 0);
	assert_false(gf_exec_cancelled());
	assert_true(slots[0].ok && slots[1].ok);
	for (int i = 0; i < 2; i++)
		gf_result_release(&slots[i]);
}

/* Two parts per node: part 0 waits (bounded) for part 1, so they must run at once. */
struct parts_ctx {
	atomic_int started[8]; /* per task */
	atomic_int active[4];  /* per node: its parts running */
	atomic_int nodes_active, peak;
	size_t done_calls[4];
	const struct gf_result *slots;
};

static void parts_task(void *vctx, size_t k, double deadline, struct gf_result *slot)
{
	struct parts_ctx *c = vctx;
	size_t node = k / 2;

	if (atomic_fetch_add(&c->active[node], 1) == 0) {
		int now = atomic_fetch_add(&c->nodes_active, 1) + 1;
		int peak = atomic_load(&c->peak);

		while (now > peak && !atomic_compare_exchange_weak(&c->peak, &peak, now))
			;
	}
	atomic_fetch_add(&c->started[k], 1);
	if (k % 2 == 0) {
		double until = gf_monotime() + 5;

		while (!atomic_load(&c->started[k + 1]) && gf_monotime() < until)
			usleep(500);
		slot->ok = atomic_load(&c->started[k + 1]) != 0;
	} else {
		usleep(2000);
		slot->ok = true;
	}
	if (atomic_fetch_sub(&c->active[node], 1) == 1)
		atomic_fetch_sub(&c->nodes_active, 1);
}

static void parts_done(void *ud, size_t i, const struct gf_result *slot)
{
	struct parts_ctx *c = ud;

	assert_ptr_equal(slot, &c->slots[2 * i]); /* the node's first part, the other after it */
	assert_true(slot[0].attempts == 1 && slot[1].attempts == 1);
	c->done_calls[i]++;
}

static void parts_run_at_once_and_fanout_counts_nodes(void **state)
{
	struct parts_ctx c = {0};
	struct gf_exec_opts o = {.fanout = 1, .parts = 2, .timeout = 5};
	struct gf_result slots[8];

	c.slots = slots;
	assert_int_equal(gf_exec_run(&o, 4, parts_task, &c, slots, parts_done, &c, NULL), 0);
	for (int k = 0; k < 8; k++) {
		assert_true(slots[k].ok); /* part 0 saw part 1 start while it ran */
		assert_int_equal(atomic_load(&c.started[k]), 1);
	}
	assert_int_equal(atomic_load(&c.peak), 1); /* --fanout 1: one node at a time */
	for (int i = 0; i < 4; i++)
		assert_int_equal(c.done_calls[i], 1);
	for (int k = 0; k < 8; k++)
		gf_result_release(&slots[k]);
}

/* Each attempt sleeps until its deadline and times out: one deadline per node in all. */
struct dl_ctx {
	double deadlines[4][8]; /* [task][attempt] as given */
	atomic_int attempts[4];
};

static void deadline_task(void *vctx, size_t k, double deadline, struct gf_result *slot)
{
	struct dl_ctx *c = vctx;
	int a = atomic_fetch_add(&c->attempts[k], 1);
	struct gf_err e = {0};

	if (a < 8)
		c->deadlines[k][a] = deadline;
	if (k % 2 == 0) {
		/* A connect failure at once: retried, by the same deadline. */
		gf_err_set(&e, GF_E_NODE, GF_EK_CONNECT, "refused");
		usleep(1000);
	} else {
		gf_sleep_until(deadline);
		gf_err_set(&e, GF_E_NODE, GF_EK_TIMEOUT, "no answer");
	}
	gf_result_fail(slot, &e);
}

static void one_deadline_for_attempts_and_parts(void **state)
{
	struct dl_ctx c = {0};
	struct gf_exec_opts o = {.fanout = 2, .parts = 2, .timeout = 0.3, .retries = 3};
	struct gf_result slots[4];
	double t0 = gf_monotime(), took;

	assert_int_equal(gf_exec_run(&o, 2, deadline_task, &c, slots, NULL, NULL, NULL), 0);
	took = gf_monotime() - t0;
	assert_true(took < 0.3 * 1.5); /* not 4 attempts of 0.3 s */
	for (int k = 0; k < 4; k++) {
		int n = atomic_load(&c.attempts[k]);

		/* Every attempt of a node's parts got the node's one deadline. */
		for (int a = 0; a < n; a++)
			assert_true(c.deadlines[k][a] == c.deadlines[k - k % 2][0]);
		/* The quick failure is retried inside it; the timed-out one is not. */
		assert_int_equal(n, k % 2 == 0 ? 4 : 1);
		assert_int_equal(slots[k].attempts, n);
		gf_result_release(&slots[k]);
	}
}

/* ---- a gate: held tasks take no worker, and fail at the run's start + timeout ---- */

struct gate_ctx {
	double t0;
	double open_at[8];      /* per task: monotonic time it opens, 0: open, -1: never */
	enum gf_gate follow[8]; /* per task: what it is once open (OPEN or FOLLOW) */
	atomic_int calls[8];
	atomic_int order[8];
	atomic_int norder;
	atomic_int expired[8];
	bool keep;      /* what start() answers */
	bool caught;    /* start() found SIGINT caught */
	int started_at; /* tasks run when start() came, -1: not called */
};

static enum gf_gate gate_state(void *ud, size_t k)
{
	struct gate_ctx *c = ud;

	if (c->open_at[k] < 0 || (c->open_at[k] > 0 && gf_monotime() < c->open_at[k]))
		return GF_GATE_HELD;
	return c->follow[k];
}

static void gate_wait(void *ud, double until)
{
	(void)ud;
	gf_sleep_until(until < gf_monotime() + 0.01 ? until : gf_monotime() + 0.01);
}

static void gate_expire(void *ud, size_t k, struct gf_result *slot)
{
	struct gate_ctx *c = ud;
	struct gf_err e = {0};

	atomic_fetch_add(&c->expired[k], 1);
	gf_err_set(&e, GF_E_NODE, GF_EK_TIMEOUT, "never answered");
	gf_result_fail(slot, &e);
}

static void gate_task(void *vctx, size_t k, double deadline, struct gf_result *slot)
{
	struct gate_ctx *c = vctx;

	atomic_fetch_add(&c->calls[k], 1);
	c->order[atomic_fetch_add(&c->norder, 1)] = (int)k;
	/* Its own deadline, from when it started, even when it opened late. */
	assert_true(deadline - gf_monotime() > 0.3);
	usleep(20000);
	slot->ok = true;
}

static void gate_holds_and_expires(void **state)
{
	struct gate_ctx c = {0};
	struct gf_exec_gate g = {.state = gate_state,
				 .wait = gate_wait,
				 .expire = gate_expire,
				 .ud = &c};
	struct gf_exec_opts o = {.fanout = 1, .timeout = 0.4, .retries = 3, .gate = &g};
	struct gf_result slots[6];
	double took;

	(void)state;
	c.t0 = gf_monotime();
	c.open_at[1] = c.open_at[3] = -1;
	c.open_at[4] = c.t0 + 0.15;
	assert_int_equal(gf_exec_run(&o, 6, gate_task, &c, slots, NULL, NULL, NULL), 0);
	took = gf_monotime() - c.t0;
	/* One worker: the open ones first, the late one once it opened, the held ones failed at 0.4 s. */
	assert_true(took >= 0.39 && took < 0.4 + 0.2);
	assert_int_equal(atomic_load(&c.norder), 4);
	assert_int_equal(c.order[0], 0);
	assert_int_equal(c.order[1], 2);
	assert_int_equal(c.order[2], 5);
	assert_int_equal(c.order[3], 4);
	for (int i = 0; i < 6; i++) {
		bool held = i == 1 || i == 3;

		assert_int_equal(atomic_load(&c.calls[i]), held ? 0 : 1);
		assert_int_equal(atomic_load(&c.expired[i]), held ? 1 : 0);
		assert_true(slots[i].ok == !held);
		if (held) {
			assert_int_equal(slots[i].err.kind, GF_EK_TIMEOUT);
			assert_int_equal(slots[i].attempts, 1); /* not retried */
			assert_true(slots[i].t_end - slots[i].t_start >= 0.39);
		}
		gf_result_release(&slots[i]);
	}
}

/* With parts: a node with an open part starts at once (its held part waits in it). */
static void gate_with_parts(void **state)
{
	struct gate_ctx c = {0};
	struct gf_exec_gate g = {.state = gate_state,
				 .wait = gate_wait,
				 .expire = gate_expire,
				 .ud = &c};
	struct gf_exec_opts o = {.fanout = 1, .parts = 2, .timeout = 0.4, .gate = &g};
	struct gf_result slots[4];

	(void)state;
	c.t0 = gf_monotime();
	c.open_at[0] = c.open_at[2] = -1; /* both nodes' first part: never */
	c.follow[1] = GF_GATE_FOLLOW;     /* node 0's second: nothing urgent */
	c.follow[3] = GF_GATE_OPEN;       /* node 1's second: start the node */
	assert_int_equal(gf_exec_run(&o, 2, gate_task, &c, slots, NULL, NULL, NULL), 0);
	assert_int_equal(atomic_load(&c.norder), 2);
	assert_int_equal(c.order[0], 3); /* node 1 first, at once */
	assert_int_equal(c.order[1], 1); /* node 0 only at the expiry */
	assert_true(slots[3].t_start - slots[1].t_start < -0.3);
	for (int k = 0; k < 4; k++) {
		assert_int_equal(atomic_load(&c.expired[k]), k % 2 == 0 ? 1 : 0);
		assert_true(slots[k].ok == (k % 2 == 1));
		gf_result_release(&slots[k]);
	}
}

static bool gate_start(void *ud)
{
	struct gate_ctx *c = ud;
	struct sigaction cur;

	sigaction(SIGINT, NULL, &cur);
	c->caught = cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN;
	c->started_at = atomic_load(&c->norder);
	return c->keep;
}

/* The gate's peers are contacted once Ctrl-C is the run's, before any task; false: no gate. */
static void gate_starts_once_ctrl_c_is_caught(void **state)
{
	(void)state;
	for (int keep = 0; keep <= 1; keep++) {
		struct gate_ctx c = {.keep = keep, .started_at = -1};
		struct gf_exec_gate g = {.state = gate_state,
					 .wait = gate_wait,
					 .expire = gate_expire,
					 .start = gate_start,
					 .ud = &c};
		struct gf_exec_opts o = {.fanout = 1, .timeout = 5, .gate = &g};
		struct gf_result slots[3];
		struct sigaction after;

		c.t0 = gf_monotime();
		assert_int_equal(gf_exec_run(&o, 3, gate_task, &c, slots, NULL, NULL, NULL), 0);
		assert_true(c.caught);
		assert_int_equal(c.started_at, 0);
		assert_int_equal(atomic_load(&c.norder), 3);
		for (int k = 0; k < 3; k++) {
			assert_int_equal(c.order[k], k);
			assert_true(slots[k].ok);
			gf_result_release(&slots[k]);
		}
		sigaction(SIGINT, NULL, &after);
		assert_true(after.sa_handler == SIG_DFL); /* given back */
	}
}

static void empty(void **state)
{
	struct gf_exec_opts o = {.fanout = 4, .timeout = 1};

	assert_int_equal(gf_exec_run(&o, 0, task, NULL, NULL, NULL, NULL, NULL), 0);
}

/* ---- the inline run: nodes served on the calling thread, the rest on workers ---- */

struct inl_ctx {
	struct gf_result *slots;
	pthread_t caller;
	bool on_caller; /* the run was called on the calling thread */
	double sleep_s; /* it takes this long */
	size_t n, step; /* serves nodes 0, step, 2 * step... of n */
};

static void inl_run(void *ud, struct gf_exec_ctl *c)
{
	struct inl_ctx *x = ud;

	x->on_caller = pthread_equal(pthread_self(), x->caller);
	usleep((useconds_t)(x->sleep_s * 1e6));
	for (size_t i = 0; i < x->n; i += x->step) {
		x->slots[i].ok = true;
		x->slots[i].data = json_pack("{s:s}", "by", "loop");
		gf_exec_inline_done(c, i);
		gf_exec_inline_done(c, i); /* twice: counted once */
	}
}

static void inline_serves_and_hands_back(void **state)
{
	struct ctx c = {.fail_first = -1};
	struct seen s = {0};
	struct gf_result slots[6];
	/* Serves the even nodes; hands the odd ones back. */
	struct inl_ctx x = {.slots = slots,
			    .caller = pthread_self(),
			    .sleep_s = 0.3,
			    .n = 6,
			    .step = 2};
	struct gf_exec_inline inl = {.run = inl_run, .ud = &x};
	struct gf_exec_opts o = {.fanout = 4, .timeout = 1.0, .inl = &inl};
	struct gf_err err = {0};
	double t0 = gf_monotime();

	(void)state;
	assert_int_equal(gf_exec_run(&o, 6, task, &c, slots, done, &s, &err), 0);
	assert_true(x.on_caller);
	assert_int_equal(s.n, 6); /* each node done once */
	for (int i = 0; i < 6; i++) {
		assert_true(slots[i].ok);
		assert_int_equal(slots[i].attempts, 1);
		/* Served nodes never reach a worker; the others run there once. */
		assert_int_equal(atomic_load(&c.calls[i]), i % 2 ? 1 : 0);
		assert_non_null(json_object_get(slots[i].data, i % 2 ? "i" : "by"));
	}
	/* The served ones were done first, as they ended. */
	assert_int_equal(s.order[0], 0);
	assert_int_equal(s.order[1], 2);
	assert_int_equal(s.order[2], 4);
	/*
	 * Handed-back nodes keep the run's deadline: its start + timeout, not
	 * a fresh timeout from when the inline run (0.3 s) gave them back.
	 */
	assert_true(c.last_deadline > 0);
	assert_true(c.last_deadline <= t0 + 1.0 + 0.05);
	assert_true(gf_monotime() - t0 < 1.0);
	for (int i = 0; i < 6; i++)
		gf_result_release(&slots[i]);
}

static void inline_serving_all_leaves_nothing_to_workers(void **state)
{
	struct ctx c = {.fail_first = -1};
	struct seen s = {0};
	struct gf_result slots[3];
	struct inl_ctx x = {.slots = slots, .caller = pthread_self(), .n = 3, .step = 1};
	struct gf_exec_inline inl = {.run = inl_run, .ud = &x};
	struct gf_exec_opts o = {.fanout = 4, .timeout = 1.0, .inl = &inl};
	struct gf_err err = {0};

	(void)state;
	assert_int_equal(gf_exec_run(&o, 3, task, &c, slots, done, &s, &err), 0);
	assert_int_equal(s.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_true(slots[i].ok);
		assert_int_equal(atomic_load(&c.calls[i]), 0);
		gf_result_release(&slots[i]);
	}
	assert_int_equal(atomic_load(&c.peak), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(window_and_slots),
		cmocka_unit_test(retry_on_timeout),
		cmocka_unit_test(batches),
		cmocka_unit_test(cancel_cuts_the_stagger_short),
		cmocka_unit_test(parts_run_at_once_and_fanout_counts_nodes),
		cmocka_unit_test(one_deadline_for_attempts_and_parts),
		cmocka_unit_test(gate_holds_and_expires),
		cmocka_unit_test(gate_with_parts),
		cmocka_unit_test(gate_starts_once_ctrl_c_is_caught),
		cmocka_unit_test(empty),
		cmocka_unit_test(inline_serves_and_hands_back),
		cmocka_unit_test(inline_serving_all_leaves_nothing_to_workers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
