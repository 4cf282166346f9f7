#include "lib/bounded.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "lib/buf.h"
#include "lib/util.h"

/* How often a wait looks at the cancel flag. */
#define CANCEL_SLICE_S 0.05

/*
 * Each calling thread keeps one runner: a thread that waits for the next
 * call, so a worker's open, operations and close (each bounded) start no
 * thread of their own (creating and reaping one per call cost more CPU
 * than a round trip under load). A runner whose call is abandoned belongs
 * to that call: it runs @abandon and ends, and the caller makes a new one
 * at its next call. The caller's exit tells its runner to end.
 */
enum run_state { R_IDLE, R_QUEUED, R_RUNNING, R_DONE };

struct runner {
	pthread_mutex_t lock;
	pthread_cond_t work; /* the runner waits: a call queued, or quit */
	pthread_cond_t done; /* the caller waits (monotonic clock) */
	enum run_state state;
	bool finished;  /* the call returned (state R_DONE) */
	bool abandoned; /* nobody waits: the runner cleans up and ends */
	bool quit;      /* the caller's thread ended */
	void (*fn)(void *);
	void (*abandon)(void *);
	void *arg;
};

static pthread_key_t runner_key;
static pthread_once_t runner_once = PTHREAD_ONCE_INIT;
static bool runner_key_ok;

static void runner_free(struct runner *r)
{
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->work);
	pthread_cond_destroy(&r->done);
	free(r);
}

static void *runner_main(void *vr)
{
	struct runner *r = vr;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (r->state != R_QUEUED && !r->quit)
			pthread_cond_wait(&r->work, &r->lock);
		if (r->state != R_QUEUED)
			break; /* quit while idle */
		r->state = R_RUNNING;
		pthread_mutex_unlock(&r->lock);
		r->fn(r->arg);
		pthread_mutex_lock(&r->lock);
		r->state = R_DONE;
		r->finished = true;
		if (r->abandoned) {
			pthread_mutex_unlock(&r->lock);
			if (r->abandon)
				r->abandon(r->arg);
			runner_free(r);
			return NULL;
		}
		pthread_cond_signal(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	runner_free(r);
	return NULL;
}

/* The caller's thread ends: so does its idle runner. */
static void runner_quit(void *vr)
{
	struct runner *r = vr;

	pthread_mutex_lock(&r->lock);
	r->quit = true;
	pthread_cond_signal(&r->work);
	pthread_mutex_unlock(&r->lock);
}

static void runner_key_init(void)
{
	runner_key_ok = pthread_key_create(&runner_key, runner_quit) == 0;
}

/* The calling thread's runner, started on first use; NULL when none can be. */
static struct runner *runner_get(void)
{
	struct runner *r;
	pthread_attr_t attr;
	pthread_t tid;
	int e;

	pthread_once(&runner_once, runner_key_init);
	if (!runner_key_ok)
		return NULL;
	r = pthread_getspecific(runner_key);
	if (r)
		return r;
	r = gf_xcalloc(1, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->work, NULL);
	gf_cond_init_monotonic(&r->done);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, GF_THREAD_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	e = pthread_create(&tid, &attr, runner_main, r);
	pthread_attr_destroy(&attr);
	if (e || pthread_setspecific(runner_key, r) != 0) {
		if (!e)
			runner_quit(r); /* started but cannot be kept: it ends alone */
		else
			runner_free(r);
		return NULL;
	}
	return r;
}

struct job {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on the monotonic clock */
	bool done;           /* fn returned */
	bool abandoned;      /* nobody waits: the thread frees the job */
	void (*fn)(void *);
	void (*abandon)(void *);
	void *arg;
};

static void job_free(struct job *j)
{
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
}

static void *job_main(void *vj)
{
	struct job *j = vj;
	bool gone;

	j->fn(j->arg);
	pthread_mutex_lock(&j->lock);
	j->done = true;
	gone = j->abandoned;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	if (gone) {
		if (j->abandon)
			j->abandon(j->arg);
		job_free(j);
	}
	return NULL;
}

/*
 * Wait on @cond under @lock (held) until *@done, @until or *@cancel:
 * whether *@done; *@stopped when Ctrl-C ended the wait.
 */
static bool wait_done(pthread_mutex_t *lock, pthread_cond_t *cond, const bool *done, double until,
		      const gf_cancel_flag *cancel, bool *stopped)
{
	while (!*done) {
		double now = gf_monotime(), next;
		struct timespec ts;

		if (cancel && *cancel) {
			*stopped = true;
			break;
		}
		if (!(now < until))
			break;
		next = cancel && until - now > CANCEL_SLICE_S ? now + CANCEL_SLICE_S : until;
		ts = gf_monotime_ts(next);
		pthread_cond_timedwait(cond, lock, &ts);
	}
	return *done;
}

/* The call on a thread of its own: for a stack size the runners do not have. */
static int run_own_thread(void (*fn)(void *arg), void (*abandon)(void *arg), void *arg,
			  double until, const gf_cancel_flag *cancel, size_t stack, bool *stopped)
{
	struct job *j = gf_xcalloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t tid;
	bool done;
	int e;

	j->fn = fn;
	j->abandon = abandon;
	j->arg = arg;
	pthread_mutex_init(&j->lock, NULL);
	gf_cond_init_monotonic(&j->cond);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, stack);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	e = pthread_create(&tid, &attr, job_main, j);
	pthread_attr_destroy(&attr);
	if (e) {
		/* No thread: unbounded, but the work is still done. */
		job_free(j);
		fn(arg);
		return 0;
	}
	pthread_mutex_lock(&j->lock);
	done = wait_done(&j->lock, &j->cond, &j->done, until, cancel, stopped);
	if (!done)
		j->abandoned = true;
	pthread_mutex_unlock(&j->lock);
	if (done)
		job_free(j);
	return done ? 0 : -1;
}

/* The call on the calling thread's runner @r: 0 when it returned in time. */
static int run_on_runner(struct runner *r, void (*fn)(void *arg), void (*abandon)(void *arg),
			 void *arg, double until, const gf_cancel_flag *cancel, bool *stopped)
{
	bool finished;

	pthread_mutex_lock(&r->lock);
	r->fn = fn;
	r->abandon = abandon;
	r->arg = arg;
	r->finished = false;
	r->state = R_QUEUED;
	pthread_cond_signal(&r->work);
	finished = wait_done(&r->lock, &r->done, &r->finished, until, cancel, stopped);
	if (finished)
		r->state = R_IDLE;
	else
		r->abandoned = true; /* the runner is the call's now */
	pthread_mutex_unlock(&r->lock);
	if (!finished)
		pthread_setspecific(runner_key, NULL);
	return finished ? 0 : -1;
}

int gf_bounded_run(void (*fn)(void *arg), void (*abandon)(void *arg), void *arg, double until,
		   const gf_cancel_flag *cancel, size_t stack, const char *what, struct gf_err *err)
{
	struct runner *r = NULL;
	bool stopped = false;
	int rc;

	if (!stack || stack == GF_THREAD_STACK)
		r = runner_get();
	if (r)
		rc = run_on_runner(r, fn, abandon, arg, until, cancel, &stopped);
	else
		rc = run_own_thread(fn, abandon, arg, until, cancel,
				    stack ? stack : GF_THREAD_STACK, &stopped);
	if (rc == 0)
		return 0;
	if (stopped)
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "interrupted while %s", what);
	return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT, "%s did not finish by the deadline", what);
}

/* ---- name resolution -------------------------------------------------- */

struct lookup {
	char *host;
	char port[16];
	struct addrinfo hints;
	struct addrinfo *res;
	int rc;
};

static void lookup_free(void *vl)
{
	struct lookup *l = vl;

	if (l->res)
		freeaddrinfo(l->res);
	free(l->host);
	free(l);
}

static void lookup_run(void *vl)
{
	struct lookup *l = vl;

	l->rc = getaddrinfo(l->host, l->port, &l->hints, &l->res);
}

int gf_resolve(const char *host, int port, int socktype, double deadline,
	       const gf_cancel_flag *cancel, struct addrinfo **ret, struct gf_err *err)
{
	struct lookup *l;
	struct gf_buf what = GF_BUF_INIT;
	struct addrinfo *res = NULL;
	int rc;

	if (!host || !*host)
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
				  "an empty host name does not resolve");
	l = gf_xcalloc(1, sizeof(*l));
	l->host = gf_xstrdup(host);
	snprintf(l->port, sizeof(l->port), "%d", port > 0 && port <= 65535 ? port : 0);
	l->hints = (struct addrinfo){.ai_family = AF_UNSPEC,
				     .ai_socktype = socktype,
				     .ai_flags = AI_NUMERICSERV | AI_NUMERICHOST};
	/* A numeric address needs no resolver. */
	if (getaddrinfo(l->host, l->port, &l->hints, &res) == 0) {
		lookup_free(l);
		*ret = res;
		return 0;
	}
	/* No time left: a name is not looked up (a fast lookup must not look in time). */
	if (!(gf_monotime() < deadline)) {
		lookup_free(l);
		return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
				  "resolving '%s' did not finish by the deadline", host);
	}
	l->hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
	gf_buf_addf(&what, "resolving '%s'", host);
	rc = gf_bounded_run(lookup_run, lookup_free, l, deadline, cancel, 0, gf_buf_str(&what),
			    err);
	gf_buf_release(&what);
	if (rc < 0)
		return rc;
	if (l->rc) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_CONNECT, "'%s' does not resolve (%s)", host,
				l->rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(l->rc));
		lookup_free(l);
		return rc;
	}
	*ret = l->res;
	l->res = NULL;
	lookup_free(l);
	return 0;
}

int gf_resolve_numeric(const char *host, int socktype, double deadline,
		       const gf_cancel_flag *cancel, char *buf, size_t size, struct gf_err *err)
{
	struct addrinfo *res = NULL;
	int rc = gf_resolve(host, 0, socktype, deadline, cancel, &res, err);

	if (rc < 0)
		return rc;
	rc = getnameinfo(res->ai_addr, res->ai_addrlen, buf, (socklen_t)size, NULL, 0,
			 NI_NUMERICHOST);
	freeaddrinfo(res);
	if (rc)
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT, "'%s' does not resolve (%s)", host,
				  gai_strerror(rc));
	return 0;
}
