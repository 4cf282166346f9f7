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

int gf_bounded_run(void (*fn)(void *arg), void (*abandon)(void *arg), void *arg, double until,
		   const gf_cancel_flag *cancel, size_t stack, const char *what, struct gf_err *err)
{
	struct job *j = gf_xcalloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t tid;
	bool done, stopped = false;
	int e;

	j->fn = fn;
	j->abandon = abandon;
	j->arg = arg;
	pthread_mutex_init(&j->lock, NULL);
	gf_cond_init_monotonic(&j->cond);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, stack ? stack : GF_THREAD_STACK);
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
	while (!j->done) {
		double now = gf_monotime(), next;
		struct timespec ts;

		if (cancel && *cancel) {
			stopped = true;
			break;
		}
		if (!(now < until))
			break;
		next = cancel && until - now > CANCEL_SLICE_S ? now + CANCEL_SLICE_S : until;
		ts = gf_monotime_ts(next);
		pthread_cond_timedwait(&j->cond, &j->lock, &ts);
	}
	done = j->done;
	if (!done)
		j->abandoned = true;
	pthread_mutex_unlock(&j->lock);
	if (done) {
		job_free(j);
		return 0;
	}
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
