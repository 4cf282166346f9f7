/*
 * The IPMI fleet ping (ipmi/ping.h): one thread, one non-blocking UDP socket
 * per address family, every numeric BMC address of a run sent one request at
 * once and again while it has not answered. Whatever comes back from a
 * BMC's address and port counts as an answer (a malformed one too: the
 * session that follows decides); datagrams from anywhere else are dropped.
 */
#include "ipmi/ping.h"
#include "ipmi/internal.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/util.h"

#define RMCP_VERSION 0x06
#define RMCP_SEQ_NO_ACK 0xFF /* no RMCP ACK wanted */
#define RMCP_CLASS_IPMI 0x07
#define AUTH_NONE 0x00
#define ADDR_BMC 0x20      /* responder: the BMC */
#define ADDR_SOFTWARE 0x81 /* requester: remote console software ID 0x40 << 1 | 1 */
#define NETFN_APP 0x06
#define CMD_GET_CHANNEL_AUTH_CAPS 0x38
#define CHANNEL_THIS 0x0E /* the channel the request came in on */
#define PRIV_ADMIN 0x04

#define IPMI_PORT 623
#define POLL_S 0.05     /* Ctrl-C is seen within this */
#define RECV_BURST 1024 /* datagrams read per socket per wake-up */

static uint8_t checksum(const uint8_t *p, size_t n)
{
	uint8_t sum = 0;

	for (size_t k = 0; k < n; k++)
		sum = (uint8_t)(sum + p[k]);
	return (uint8_t)-sum;
}

size_t gf_ipmi_ping_encode(uint8_t seq, uint8_t *buf)
{
	uint8_t *m = buf + 14; /* the message, after RMCP (4) and the session header (10) */

	memset(buf, 0, GF_IPMI_PING_SIZE);
	buf[0] = RMCP_VERSION;
	buf[2] = RMCP_SEQ_NO_ACK;
	buf[3] = RMCP_CLASS_IPMI;
	buf[4] = AUTH_NONE; /* then session sequence number and ID, both 0 */
	buf[13] = GF_IPMI_PING_SIZE - 14;
	m[0] = ADDR_BMC;
	m[1] = NETFN_APP << 2; /* LUN 0 */
	m[2] = checksum(m, 2);
	m[3] = ADDR_SOFTWARE;
	m[4] = (uint8_t)((seq & 0x3F) << 2);
	m[5] = CMD_GET_CHANNEL_AUTH_CAPS;
	m[6] = CHANNEL_THIS;
	m[7] = PRIV_ADMIN;
	m[8] = checksum(m + 3, 5);
	return GF_IPMI_PING_SIZE;
}

int gf_ipmi_ping_decode(const uint8_t *d, size_t n, uint8_t *ret_seq, uint8_t *ret_cc)
{
	const uint8_t *m = d + 14;
	size_t len;

	if (n < 14 || d[0] != RMCP_VERSION || (d[3] & 0x1F) != RMCP_CLASS_IPMI || d[4] != AUTH_NONE)
		return -1;
	len = d[13];
	/* rqAddr, NetFn/LUN, checksum, rsAddr, rqSeq/LUN, cmd, completion code, checksum */
	if (len < 8 || n < 14 + len)
		return -1;
	if (m[0] != ADDR_SOFTWARE || m[1] >> 2 != (NETFN_APP | 1) || checksum(m, 2) != m[2] ||
	    m[3] != ADDR_BMC || m[5] != CMD_GET_CHANNEL_AUTH_CAPS ||
	    checksum(m + 3, len - 4) != m[len - 1])
		return -1;
	*ret_seq = m[4] >> 2;
	*ret_cc = m[6];
	return 0;
}

struct target {
	struct sockaddr_storage sa;
	socklen_t len;
	int fam;          /* 0: IPv4, 1: IPv6, -1: not pinged */
	atomic_int state; /* enum gf_ping_state */
};

struct gf_ping {
	size_t n;
	struct target *t;
	struct gf_ipmi_addr_entry *order; /* the pinged targets by address, for the answers */
	size_t norder;
	int fd[2]; /* IPv4, IPv6; -1: none */
	double start, end, interval;
	const gf_cancel_flag *cancel;
	atomic_bool stop;
	pthread_t tid;

	pthread_mutex_t lock; /* guards gen and done, for wait() */
	pthread_cond_t cond;  /* on CLOCK_MONOTONIC */
	unsigned long gen;    /* answers seen so far, in batches */
	bool done;
};

int gf_ipmi_addr_cmp(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return a->ss_family < b->ss_family ? -1 : 1;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		int c = memcmp(&x->sin_addr, &y->sin_addr, sizeof(x->sin_addr));

		return c ? c : (x->sin_port > y->sin_port) - (x->sin_port < y->sin_port);
	} else {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
		int c = memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));

		if (!c)
			c = (x->sin6_scope_id > y->sin6_scope_id) -
			    (x->sin6_scope_id < y->sin6_scope_id);
		return c ? c : (x->sin6_port > y->sin6_port) - (x->sin6_port < y->sin6_port);
	}
}

int gf_ipmi_addr_entry_cmp(const void *a, const void *b)
{
	return gf_ipmi_addr_cmp(&((const struct gf_ipmi_addr_entry *)a)->sa,
				&((const struct gf_ipmi_addr_entry *)b)->sa);
}

size_t gf_ipmi_addr_lower(const struct gf_ipmi_addr_entry *v, size_t n,
			  const struct sockaddr_storage *sa)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (gf_ipmi_addr_cmp(&v[mid].sa, sa) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool gf_ipmi_numeric_addr(const struct gf_bmc_target *t, struct sockaddr_storage *sa,
			  socklen_t *len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char port[16];
	bool ok = false;

	if (!t->host || !*t->host)
		return false;
	snprintf(port, sizeof(port), "%d", t->port > 0 ? t->port : IPMI_PORT);
	if (getaddrinfo(t->host, port, &hints, &res) != 0)
		return false;
	if (res && (res->ai_family == AF_INET || res->ai_family == AF_INET6) &&
	    res->ai_addrlen <= sizeof(*sa)) {
		memset(sa, 0, sizeof(*sa));
		memcpy(sa, res->ai_addr, res->ai_addrlen);
		*len = res->ai_addrlen;
		ok = true;
	}
	freeaddrinfo(res);
	return ok;
}

/* @t's address if it is numeric (no name resolution: that is unbounded). */
static bool numeric_addr(const struct gf_bmc_target *t, struct target *ret)
{
	if (!gf_ipmi_numeric_addr(t, &ret->sa, &ret->len))
		return false;
	ret->fam = ret->sa.ss_family == AF_INET ? 0 : 1;
	return true;
}

int gf_ipmi_udp_socket(int family)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int buf = 1 << 20;

	/* Best effort: room for a burst of answers from a thousand BMCs. */
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	return fd;
}

void gf_ipmi_addr_norm(struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (void *)sa;

		if (!IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
			s6->sin6_scope_id = 0; /* as a numeric address without a zone has it */
		s6->sin6_flowinfo = 0;
	}
}

double gf_ipmi_ping_interval(double timeout)
{
	return timeout / 6 < 0.2 ? 0.2 : timeout / 6 > 1.0 ? 1.0 : timeout / 6;
}

/* Mark every pinged target at @sa answered; true when one was still waiting. */
static bool answered(struct gf_ping *p, const struct sockaddr_storage *sa)
{
	size_t lo = gf_ipmi_addr_lower(p->order, p->norder, sa);
	bool fresh = false;

	/* Two nodes may share one BMC address and port: all of them answered. */
	for (; lo < p->norder && gf_ipmi_addr_cmp(&p->order[lo].sa, sa) == 0; lo++) {
		int was = GF_PING_WAITING;

		fresh = atomic_compare_exchange_strong(&p->t[p->order[lo].j].state, &was,
						       GF_PING_ANSWERED) ||
			fresh;
	}
	return fresh;
}

/* Read what has arrived on @fd (bounded); how many targets it answered. */
static size_t receive(struct gf_ping *p, int fd)
{
	size_t fresh = 0;

	for (int k = 0; k < RECV_BURST; k++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		uint8_t d[512];
		ssize_t got;

		memset(&sa, 0, sizeof(sa));
		got = recvfrom(fd, d, sizeof(d), MSG_TRUNC, (struct sockaddr *)&sa, &len);
		if (got < 0)
			break; /* EAGAIN: all read; anything else: the next wake-up tries again */
		gf_ipmi_addr_norm(&sa);
		/* A valid answer or not (the session decides), it came from the BMC's address and port. */
		if (answered(p, &sa))
			fresh++;
	}
	return fresh;
}

/* One round from target @*next on: false when a socket is full (the rest after POLLOUT). */
static bool send_round(struct gf_ping *p, uint8_t seq, size_t *next)
{
	uint8_t req[GF_IPMI_PING_SIZE];
	size_t len = gf_ipmi_ping_encode(seq, req);

	for (; *next < p->n; (*next)++) {
		const struct target *t = &p->t[*next];

		if (t->fam < 0 || atomic_load(&t->state) != GF_PING_WAITING || p->fd[t->fam] < 0)
			continue;
		if (sendto(p->fd[t->fam], req, len, MSG_DONTWAIT, (const struct sockaddr *)&t->sa,
			   t->len) < 0 &&
		    (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS))
			return false;
		/* Other errors (unreachable): it stays unanswered, tried again next round. */
	}
	return true;
}

static size_t waiting(const struct gf_ping *p)
{
	size_t w = 0;

	for (size_t j = 0; j < p->norder; j++)
		w += atomic_load(&p->t[p->order[j].j].state) == GF_PING_WAITING;
	return w;
}

static void *ping_main(void *arg)
{
	struct gf_ping *p = arg;
	double next_round = p->start;
	size_t next = p->n; /* no round in progress */
	unsigned round = 0;

	while (!atomic_load(&p->stop) && !(p->cancel && *p->cancel)) {
		struct pollfd fds[2];
		nfds_t nfds = 0;
		double now = gf_monotime(), until;
		bool full = false;
		size_t fresh = 0;

		if (now >= p->end || waiting(p) == 0)
			break;
		if (next == p->n && now >= next_round) {
			next = 0;
			round++;
			next_round += p->interval;
		}
		if (next < p->n)
			full = !send_round(p, (uint8_t)round, &next);
		until = next < p->n ? now + POLL_S : next_round;
		if (until > p->end)
			until = p->end;
		if (until > now + POLL_S)
			until = now + POLL_S;
		for (int f = 0; f < 2; f++)
			if (p->fd[f] >= 0)
				fds[nfds++] = (struct pollfd){
					.fd = p->fd[f],
					.events = (short)(POLLIN | (full ? POLLOUT : 0)),
				};
		if (poll(fds, nfds, gf_deadline_ms(until)) < 0 && errno != EINTR)
			break;
		for (nfds_t f = 0; f < nfds; f++)
			if (fds[f].revents & POLLIN)
				fresh += receive(p, fds[f].fd);
		if (fresh) {
			pthread_mutex_lock(&p->lock);
			p->gen += fresh;
			pthread_cond_broadcast(&p->cond);
			pthread_mutex_unlock(&p->lock);
		}
	}
	pthread_mutex_lock(&p->lock);
	p->done = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void ping_free(struct gf_ping *p)
{
	for (int f = 0; f < 2; f++)
		if (p->fd[f] >= 0)
			close(p->fd[f]);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->order);
	free(p->t);
	free(p);
}

static int ping_start(const struct gf_bmc_target *t, size_t n, double timeout, struct gf_ping **ret,
		      struct gf_err *err)
{
	struct gf_ping *p = gf_xcalloc(1, sizeof(*p));
	pthread_attr_t attr;
	int e;

	p->n = n;
	p->t = gf_xcalloc(n ? n : 1, sizeof(*p->t));
	p->order = gf_xcalloc(n ? n : 1, sizeof(*p->order));
	p->fd[0] = p->fd[1] = -1;
	p->cancel = n ? t[0].cancel : NULL;
	pthread_mutex_init(&p->lock, NULL);
	gf_cond_init_monotonic(&p->cond);
	for (size_t j = 0; j < n; j++) {
		struct target *x = &p->t[j];

		if (!numeric_addr(&t[j], x)) {
			x->fam = -1;
			atomic_init(&x->state, GF_PING_SKIPPED);
			continue;
		}
		if (p->fd[x->fam] < 0)
			p->fd[x->fam] = gf_ipmi_udp_socket(x->fam == 0 ? AF_INET : AF_INET6);
		if (p->fd[x->fam] < 0) {
			x->fam = -1;
			atomic_init(&x->state, GF_PING_SKIPPED); /* no socket: the normal path */
			continue;
		}
		atomic_init(&x->state, GF_PING_WAITING);
		p->order[p->norder++] = (struct gf_ipmi_addr_entry){.sa = x->sa, .j = j};
	}
	if (p->norder == 0) {
		ping_free(p);
		return gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "no BMC address to ping");
	}
	gf_sort(p->order, p->norder, sizeof(*p->order), gf_ipmi_addr_entry_cmp);
	p->start = gf_monotime();
	p->end = p->start + timeout;
	/* A sixth of the deadline between rounds, within 0.2-1 s: lossy links get several. */
	p->interval = gf_ipmi_ping_interval(timeout);
	atomic_init(&p->stop, false);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, GF_THREAD_STACK);
	e = pthread_create(&p->tid, &attr, ping_main, p);
	pthread_attr_destroy(&attr);
	if (e) {
		ping_free(p);
		return gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "cannot start the ping thread (%s)",
				  strerror(e));
	}
	*ret = p;
	return 0;
}

static enum gf_ping_state ping_state(const struct gf_ping *p, size_t j)
{
	return j < p->n ? (enum gf_ping_state)atomic_load(&p->t[j].state) : GF_PING_SKIPPED;
}

static void ping_wait(struct gf_ping *p, double until)
{
	double cap = gf_monotime() + POLL_S;
	struct timespec ts;
	unsigned long gen;
	bool done;

	if (until > cap)
		until = cap;
	ts = gf_monotime_ts(until);
	pthread_mutex_lock(&p->lock);
	gen = p->gen;
	while (p->gen == gen && !p->done && gf_monotime() < until)
		if (pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT)
			break;
	done = p->done;
	pthread_mutex_unlock(&p->lock);
	/*
	 * Nothing more will come: do not spin. But when every target answered
	 * (the ping ended before the caller waited), the caller has work now:
	 * sleeping here cost a small fleet most of its run.
	 */
	if (done && gf_monotime() < until && waiting(p) > 0)
		gf_sleep_until(until);
}

static void ping_stop(struct gf_ping *p)
{
	if (!p)
		return;
	atomic_store(&p->stop, true);
	pthread_join(p->tid, NULL);
	ping_free(p);
}

const struct gf_ping_ops gf_ipmi_ping_ops = {
	.start = ping_start,
	.state = ping_state,
	.wait = ping_wait,
	.stop = ping_stop,
};
