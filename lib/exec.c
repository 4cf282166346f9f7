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
	size_t n;                  /* nodes */
	size_t parts;              /* tasks per node, >= 1 */
	pthread_attr_t *attr;      /* for the threads of a node's other parts */
	gf_exec_task task;
	void *ctx;
	struct gf_result *slots;
	double start;              /* monotonic time the run began */
	atomic_size_t next;        /* next node index to take */

	pthread_mutex_t lock;      /* guards the completion queue */
	pthread_cond_t cond;
	size_t *doneq;             /* node indices in completion order */
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

/* Sleep until @t (monotonic), in short steps so that Ctrl-C ends it soon. */
static void wait_turn(double t)
{
	while (!interrupted) {
		double now = gf_monotime();

		if (now >= t)
			return;
		gf_sleep_until(t - now > 0.05 ? now + 0.05 : t);
	}
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
		gf_err_set(&slot->err, GF_E_NODE, GF_EK_INTERNAL, "interrupted before it was started");
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

struct part {
	struct exec_state *st;
	size_t k;
	double deadline;           /* the node's */
	pthread_t tid;
	bool started;
};

static void *part_main(void *arg)
{
	struct part *p = arg;

	run_task(p->st, p->k, p->deadline);
	return NULL;
}

/*
 * Node @i: its turn in the stagger, then its parts at once (this thread runs
 * the first), all under one deadline that starts now.
 */
static void run_one(struct exec_state *st, size_t i)
{
	const struct gf_exec_opts *o = st->opts;
	struct part *ps = NULL;
	double deadline;

	if (o->batch)
		wait_turn(st->start + (double)(i / o->batch) * o->interval);
	deadline = gf_monotime() + o->timeout;
	if (st->parts > 1)
		ps = gf_xcalloc(st->parts - 1, sizeof(*ps));
	for (size_t p = 1; p < st->parts; p++) {
		ps[p - 1] = (struct part){.st = st, .k = i * st->parts + p, .deadline = deadline};
		ps[p - 1].started = pthread_create(&ps[p - 1].tid, st->attr, part_main, &ps[p - 1]) == 0;
	}
	run_task(st, i * st->parts, deadline);
	for (size_t p = 1; p < st->parts; p++) {
		if (ps[p - 1].started)
			pthread_join(ps[p - 1].tid, NULL);
		else
			run_task(st, ps[p - 1].k, deadline); /* no thread: after the first, by the same deadline */
	}
	free(ps);
}

static void *worker(void *arg)
{
	struct exec_state *st = arg;

	for (;;) {
		size_t i = atomic_fetch_add(&st->next, 1);

		if (i >= st->n)
			break;
		run_one(st, i);
		pthread_mutex_lock(&st->lock);
		st->doneq[st->ndone++] = i;
		pthread_cond_signal(&st->cond);
		pthread_mutex_unlock(&st->lock);
	}
	return NULL;
}

int gf_exec_run(const struct gf_exec_opts *opts, size_t n, gf_exec_task task, void *ctx,
		struct gf_result *slots, gf_exec_done done, void *ud, struct gf_err *err)
{
	struct exec_state st = {
		.opts = opts, .n = n, .parts = opts->parts ? opts->parts : 1, .task = task, .ctx = ctx,
		.slots = slots,
	};
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
	while (reported < n) {
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
	free(st.doneq);
	free(tids);
	return rc;
}
