#include "lib/exec.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/util.h"

struct exec_state {
	const struct gf_exec_opts *opts;
	size_t n;             /* nodes */
	size_t parts;         /* tasks per node, >= 1 */
	pthread_attr_t *attr; /* for the threads of a node's other parts */
	gf_exec_task task;
	void *ctx;
	struct gf_result *slots;
	double start;       /* monotonic time the run began */
	double wall_start;  /* the same on the wall clock */
	atomic_size_t next; /* next node index to take (no gate) */

	const struct gf_exec_gate *gate; /* NULL: none */
	double expiry;                   /* monotonic: held tasks fail then (start + timeout) */
	pthread_mutex_t take_lock;       /* guards taken and first (with a gate) */
	bool *taken;                     /* per node */
	size_t first;                    /* nodes before it are all taken */

	bool *served; /* per node: finished by the inline run (opts->inl) */
	bool inl_ran; /* then the other nodes' deadlines count from the run's start */
	size_t nserved;
	gf_exec_done done; /* called as nodes finish, on the calling thread */
	void *done_ud;

	pthread_mutex_t lock; /* guards the completion queue */
	pthread_cond_t cond;
	size_t *doneq; /* node indices in completion order */
	size_t ndone;
};

/* Set by Ctrl-C while a run is in progress; a signal handler can only set a flag. */
static gf_cancel_flag interrupted;

bool gf_exec_cancelled(void)
{
	return interrupted != 0;
}

const gf_cancel_flag *gf_exec_cancel_flag(void)
{
	return &interrupted;
}

/* The first Ctrl-C stops the run; a second one ends the process at once. */
static void on_sigint(int sig)
{
	int saved = errno; /* the interrupted code may be about to read it */

	if (interrupted) {
		signal(SIGINT, SIG_DFL);
		raise(SIGINT);
		errno = saved;
		return;
	}
	interrupted = 1;
	errno = saved;
}

/* What must be left of a node's deadline for another attempt: a tenth of it, 0.2 s at most. */
static double retry_min(const struct gf_exec_opts *o)
{
	return o->timeout / 10 < 0.2 ? o->timeout / 10 : 0.2;
}

static bool retryable(const struct gf_result *r)
{
	return !r->ok && (r->err.kind == GF_EK_TIMEOUT || r->err.kind == GF_EK_CONNECT);
}

/*
 * Task @k, retried as the options say, all of it by the node's @deadline:
 * a retry starts only while enough of it is left (an attempt that timed out
 * has used it up, so a dead peer costs one deadline, not one per attempt).
 */
static void run_task(struct exec_state *st, size_t k, double deadline)
{
	const struct gf_exec_opts *o = st->opts;
	struct gf_result *slot = &st->slots[k];

	slot->t_start = gf_walltime();
	if (interrupted) {
		/* Never attempted: attempts stays 0, so nobody records it as sent. */
		gf_err_set(&slot->err, GF_E_NODE, GF_EK_INTERNAL,
			   "interrupted before it was started");
		slot->t_end = slot->t_start;
		return;
	}
	for (;;) {
		json_decref(slot->data);
		slot->data = NULL;
		slot->ok = false;
		gf_err_clear(&slot->err);
		slot->attempts++;
		slot->no_retry = false;
		st->task(st->ctx, k, deadline, slot);
		if (!retryable(slot) || slot->no_retry || slot->attempts > o->retries ||
		    interrupted || gf_deadline_left(deadline) < retry_min(o))
			break;
	}
	slot->t_end = gf_walltime();
}

/* Task @k failed at the expiry: its peer never answered, so the task never ran. */
static void expire_task(struct exec_state *st, size_t k)
{
	struct gf_result *slot = &st->slots[k];

	slot->t_start = st->wall_start;
	slot->ok = false;
	st->gate->expire(st->gate->ud, k, slot);
	slot->attempts = 1; /* the gate's request was its attempt: completed, not "never sent" */
	slot->no_retry = true;
	slot->t_end = gf_walltime();
}

/* Task @k as the gate says: a held one waits for its peer, or fails at the expiry. */
static void run_gated(struct exec_state *st, size_t k, double deadline)
{
	const struct gf_exec_gate *g = st->gate;

	if (g && g->state(g->ud, k) == GF_GATE_HELD) {
		while (!interrupted && gf_monotime() < st->expiry &&
		       g->state(g->ud, k) == GF_GATE_HELD)
			g->wait(g->ud, st->expiry);
		if (!interrupted && g->state(g->ud, k) == GF_GATE_HELD) {
			expire_task(st, k);
			return;
		}
	}
	run_task(st, k, deadline);
}

struct part {
	struct exec_state *st;
	size_t k;
	double deadline; /* the node's */
	pthread_t tid;
	bool started;
};

static void *part_main(void *arg)
{
	struct part *p = arg;

	run_gated(p->st, p->k, p->deadline);
	return NULL;
}

/*
 * Node @i: its turn in the stagger, then its parts at once (this thread runs
 * the first), all under one deadline that starts now (after an inline run:
 * that started with the run, for what the inline run handed back).
 */
static void run_one(struct exec_state *st, size_t i)
{
	const struct gf_exec_opts *o = st->opts;
	struct part *ps = NULL;
	double deadline;

	if (o->batch)
		gf_cancel_sleep_until(&interrupted,
				      st->start + (double)(i / o->batch) * o->interval);
	deadline = (st->inl_ran ? st->start : gf_monotime()) + o->timeout;
	if (st->parts > 1)
		ps = gf_xcalloc(st->parts - 1, sizeof(*ps));
	for (size_t p = 1; p < st->parts; p++) {
		ps[p - 1] = (struct part){.st = st, .k = i * st->parts + p, .deadline = deadline};
		ps[p - 1].started = pthread_create(&ps[p - 1].tid, st->attr, part_main,
						   &ps[p - 1]) == 0;
	}
	run_gated(st, i * st->parts, deadline);
	for (size_t p = 1; p < st->parts; p++) {
		if (ps[p - 1].started)
			pthread_join(ps[p - 1].tid, NULL);
		else
			run_gated(st, ps[p - 1].k,
				  deadline); /* no thread: after the first, by the same deadline */
	}
	free(ps);
}

/* May node @i be taken before the expiry: a task open, or all of them following? */
static bool node_ready(const struct exec_state *st, size_t i)
{
	bool follow = true;

	for (size_t p = 0; p < st->parts; p++) {
		enum gf_gate s = st->gate->state(st->gate->ud, i * st->parts + p);

		if (s == GF_GATE_OPEN)
			return true;
		follow = follow && s == GF_GATE_FOLLOW;
	}
	return follow;
}

/*
 * The next node for a worker, false when none is left. With a gate: the
 * first ready one; while none is, the worker waits on the gate (bounded by
 * the expiry, after which every node is taken in order).
 */
static bool take(struct exec_state *st, size_t *ret)
{
	if (!st->gate) {
		size_t i = atomic_fetch_add(&st->next, 1);

		while (i < st->n && st->served && st->served[i])
			i = atomic_fetch_add(&st->next, 1);
		*ret = i;
		return i < st->n;
	}
	pthread_mutex_lock(&st->take_lock);
	for (;;) {
		bool any = interrupted || gf_monotime() >= st->expiry;

		while (st->first < st->n && st->taken[st->first])
			st->first++;
		if (st->first == st->n)
			break;
		for (size_t i = st->first; i < st->n; i++) {
			if (st->taken[i] || !(any || node_ready(st, i)))
				continue;
			st->taken[i] = true;
			pthread_mutex_unlock(&st->take_lock);
			*ret = i;
			return true;
		}
		pthread_mutex_unlock(&st->take_lock);
		st->gate->wait(st->gate->ud, st->expiry);
		pthread_mutex_lock(&st->take_lock);
	}
	pthread_mutex_unlock(&st->take_lock);
	return false;
}

static void *worker(void *arg)
{
	struct exec_state *st = arg;
	size_t i;

	while (take(st, &i)) {
		run_one(st, i);
		pthread_mutex_lock(&st->lock);
		st->doneq[st->ndone++] = i;
		pthread_cond_signal(&st->cond);
		pthread_mutex_unlock(&st->lock);
	}
	return NULL;
}

struct gf_exec_ctl {
	struct exec_state *st;
};

void gf_exec_inline_done(struct gf_exec_ctl *c, size_t i)
{
	struct exec_state *st = c->st;
	struct gf_result *slot = &st->slots[i * st->parts];

	if (i >= st->n || st->served[i])
		return;
	st->served[i] = true;
	st->nserved++;
	slot->t_start = st->wall_start;
	slot->t_end = gf_walltime();
	slot->attempts = 1;
	if (st->done)
		st->done(st->done_ud, i, slot);
}

int gf_exec_run(const struct gf_exec_opts *opts, size_t n, gf_exec_task task, void *ctx,
		struct gf_result *slots, gf_exec_done done, void *ud, struct gf_err *err)
{
	struct exec_state st = {
		.opts = opts,
		.n = n,
		.parts = opts->parts ? opts->parts : 1,
		.task = task,
		.ctx = ctx,
		.slots = slots,
		.done = done,
		.done_ud = ud,
	};
	struct gf_exec_ctl ctl = {.st = &st};
	size_t nthreads = opts->fanout ? opts->fanout : 1;
	size_t started = 0, reported = 0;
	struct sigaction sa, old;
	pthread_t *tids;
	pthread_attr_t attr;
	int rc = 0;

	interrupted = 0;
	for (size_t k = 0; k < n * st.parts; k++)
		gf_result_init(&slots[k]);
	if (n == 0)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	if (nthreads > n)
		nthreads = n;
	st.doneq = gf_xcalloc(n, sizeof(*st.doneq));
	tids = gf_xcalloc(nthreads, sizeof(*tids));
	pthread_mutex_init(&st.lock, NULL);
	pthread_cond_init(&st.cond, NULL);
	atomic_init(&st.next, 0);
	st.start = gf_monotime();
	st.wall_start = gf_walltime();
	st.served = gf_xcalloc(n, sizeof(*st.served));
	if (opts->inl && st.parts == 1 && !opts->batch) {
		opts->inl->run(opts->inl->ud, &ctl);
		/* What it handed back keeps the run's deadline: start + timeout. */
		st.inl_ran = true;
	}
	/* Nothing left for a gate to wait on when the inline run served every node. */
	st.gate = opts->batch || st.nserved == n || interrupted ? NULL : opts->gate;
	/* Its peers contacted only now: a Ctrl-C from here on is this run's. */
	if (st.gate && st.gate->start && !st.gate->start(st.gate->ud))
		st.gate = NULL;
	st.expiry = st.start + opts->timeout;
	pthread_mutex_init(&st.take_lock, NULL);
	st.taken = gf_xcalloc(n, sizeof(*st.taken));
	memcpy(st.taken, st.served, n * sizeof(*st.taken));
	if (nthreads > n - st.nserved)
		nthreads = n - st.nserved;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, opts->stack_size ? opts->stack_size : GF_THREAD_STACK);
	st.attr = &attr;
	for (; started < nthreads; started++) {
		int e = pthread_create(&tids[started], &attr, worker, &st);

		if (e) {
			if (started == 0) {
				rc = gf_err_set(err, GF_E_IO, GF_EK_INTERNAL,
						"cannot start worker threads (%s)", strerror(e));
				goto out;
			}
			break; /* fewer workers than asked: they share the work */
		}
	}

	pthread_mutex_lock(&st.lock);
	while (reported < n - st.nserved) {
		while (reported == st.ndone)
			pthread_cond_wait(&st.cond, &st.lock);
		while (reported < st.ndone) {
			size_t i = st.doneq[reported++];

			if (done) {
				pthread_mutex_unlock(&st.lock);
				done(ud, i, &slots[i * st.parts]);
				pthread_mutex_lock(&st.lock);
			}
		}
	}
	pthread_mutex_unlock(&st.lock);
	for (size_t t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
out:
	sigaction(SIGINT, &old, NULL);
	pthread_attr_destroy(&attr);
	pthread_mutex_destroy(&st.lock);
	pthread_cond_destroy(&st.cond);
	pthread_mutex_destroy(&st.take_lock);
	free(st.taken);
	free(st.served);
	free(st.doneq);
	free(tids);
	return rc;
}
