/* Nodes' serial consoles (see fleet/console.h). */
#include "fleet/console.h"

#include "fleet/bmc.h"
#include "fleet/console_ssh.h"
#include "fleet/pins.h"
#include "lib/buf.h"
#include "lib/cancel.h"
#include "lib/util.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The engines started (one per backend with a console; two are plenty). */
static const struct gf_console_ops *started[4];
static size_t nstarted;
static size_t room = 1;

int gf_console_start(size_t n, struct gf_err *err)
{
	room = n ? n : 1;
	return 0;
}

/* Start @ops' engine the first time a console of it opens. */
static int engine(const struct gf_console_ops *ops, struct gf_err *err)
{
	int rc;

	for (size_t i = 0; i < nstarted; i++)
		if (started[i] == ops)
			return 0;
	if (nstarted == NELEM(started))
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "too many console engines");
	rc = ops->start(room, err);
	if (rc < 0)
		return rc;
	started[nstarted++] = ops;
	return 0;
}

void gf_console_stop(void)
{
	while (nstarted)
		started[--nstarted]->stop();
}

/*
 * The backend of node @n (its protocol, or the one --protocol auto finds by
 * @deadline) and the console ops to use: the backend's console, else the SSH
 * console its BMC may advertise; GF_E_NODE with GF_EK_UNSUPPORTED when it
 * has no BMC or neither.
 */
static int ops_of(const struct gf_node *n, const struct gf_profile *prof, double deadline,
		  const gf_cancel_flag *cancel, const struct gf_backend **ret_be,
		  const struct gf_console_ops **ret, struct gf_err *err)
{
	const struct gf_profile *profs[1] = {prof};
	char *pin[1] = {NULL};
	bool pin_new[1] = {false};
	char seen[1][GF_BMC_FP_SIZE] = {""};
	struct gf_pins none = {.n = 1, .pin = pin, .pin_new = pin_new, .seen = seen};
	struct gf_bmc_run r = {.nodes = n, .profs = profs, .pins = &none, .cancel = cancel};
	const struct gf_backend *be = gf_bmc_choose(&r, 0, deadline, err);

	if (!be)
		return GF_E_NODE;
	if (!be->console && !be->console_ssh)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s has no serial console gpufleet can use (node '%s')",
				  be->title, n->name);
	*ret_be = be;
	*ret = be->console ? be->console : &gf_console_ssh_ops;
	return 0;
}

/* The pin of node @n's BMC, if the inventory holds one (for the SSH console's Redfish read). */
static int pins_of(const struct gf_node *n, const struct gf_profile *prof,
		   const struct gf_console_env *env, struct gf_pins **ret, struct gf_err *err)
{
	const struct gf_profile *profs[1] = {prof};
	struct gf_pins *p = gf_xcalloc(1, sizeof(*p));
	int rc = gf_pins_load(env ? env->db : NULL, n, profs, 1, false, gf_bmc_may_pin, p, err);

	if (rc < 0) {
		free(p);
		return rc;
	}
	*ret = p;
	return 0;
}

static void pins_free(struct gf_pins *p)
{
	if (p)
		gf_pins_release(p);
	free(p);
}

/* Start opening node @n's console on @ops (@be's): @t filled, @pins its pin (SSH consoles). */
static int console_open(const struct gf_node *n, const struct gf_profile *prof,
			const struct gf_console_env *env, const struct gf_backend *be,
			const struct gf_console_ops *ops, bool steal, bool keepalive,
			double deadline, const gf_cancel_flag *cancel, struct gf_pins **pins,
			struct gf_bmc_target *t, struct gf_console **ret, struct gf_err *err)
{
	int rc;

	*t = (struct gf_bmc_target){
		.node = n->name,
		.host = n->bmc,
		.port = n->bmc_port,
		.prof = prof,
		.deadline = deadline,
		.cacert = env ? env->cacert : NULL,
		.insecure = env && env->insecure,
		.cancel = cancel,
	};
	rc = engine(ops, err);
	if (rc < 0)
		return rc;
	if (ops != &gf_console_ssh_ops)
		return ops->open(t, steal, keepalive, ret, err);
	if (!*pins && pins_of(n, prof, env, pins, err) < 0)
		return GF_E_NODE;
	t->tls_pin = gf_pins_expected(*pins, 0);
	return gf_console_ssh_open(be, t, env && env->ssh_accept_new, !keepalive, ret, err);
}

int gf_console_connect(const struct gf_node *n, const struct gf_profile *prof,
		       const struct gf_console_env *env, bool steal, bool keepalive,
		       double deadline, const gf_cancel_flag *cancel, struct gf_console_conn *ret,
		       struct gf_err *err)
{
	const struct gf_console_ops *ops;
	const struct gf_backend *be;
	struct gf_console *con;
	struct gf_pins *pins = NULL;
	int rc;

	rc = ops_of(n, prof, deadline, cancel, &be, &ops, err);
	if (rc < 0)
		return rc;
	rc = console_open(n, prof, env, be, ops, steal, keepalive, deadline, cancel, &pins, &ret->t,
			  &con, err);
	if (rc < 0) {
		pins_free(pins);
		return rc;
	}
	for (;;) {
		enum gf_console_state st = ops->state(con, err);

		if (st == GF_CONSOLE_CONNECTED)
			break;
		if (st == GF_CONSOLE_FAILED) {
			ops->close(con);
			pins_free(pins);
			return GF_E_NODE;
		}
		if ((cancel && atomic_load(cancel)) || gf_monotime() >= deadline) {
			ops->close(con);
			pins_free(pins);
			return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					  cancel && atomic_load(cancel)
						  ? "interrupted while connecting to the serial "
						    "console of node '%s'"
						  : "the serial console of node '%s' did not connect "
						    "in time",
					  n->name);
		}
		gf_cancel_sleep_until(cancel, gf_monotime() + 0.05);
	}
	ret->ops = ops;
	ret->con = con;
	ret->pins = pins;
	return 0;
}

void gf_console_close(struct gf_console_conn *c)
{
	if (c && c->con)
		c->ops->close(c->con);
	if (c) {
		c->con = NULL;
		pins_free(c->pins);
		c->pins = NULL;
	}
}

/* ---- console log ---------------------------------------------------------- */

const char *gf_console_log_state_name(enum gf_console_log_state s)
{
	static const char *const names[] = {
		[GF_CLOG_CONNECTING] = "connecting",
		[GF_CLOG_CONNECTED] = "connected",
		[GF_CLOG_RECONNECTING] = "reconnecting",
		[GF_CLOG_BUSY] = "busy",
		[GF_CLOG_FAILED] = "failed",
	};
	return (unsigned)s < NELEM(names) ? names[s] : "failed";
}

struct clog_node {
	const struct gf_console_ops *ops;
	const struct gf_backend *be;
	struct gf_console *con;
	struct gf_pins *pins;   /* SSH consoles: the BMC's stored TLS pin */
	struct gf_bmc_target t; /* what the console was opened with */
	enum gf_console_log_state st;
	double since; /* monotonic: connecting since */
	double next;  /* monotonic: the next attempt (reconnecting, busy) */
	double wait;  /* the next wait before jitter */
	unsigned seed;
};

static void clog_state(const struct gf_console_log *r, struct clog_node *c, size_t i,
		       enum gf_console_log_state st, const struct gf_err *err)
{
	bool report = c->st != st || err;

	c->st = st;
	if (report && r->on_state)
		r->on_state(r->ud, i, st, err);
}

/* Try again after a jittered wait: in [wait/2, wait], the wait doubled up to the max. */
static void clog_retry(const struct gf_console_log *r, struct clog_node *c, size_t i,
		       enum gf_console_log_state st, const struct gf_err *err)
{
	double w = c->wait / 2 + c->wait / 2 * (double)rand_r(&c->seed) / RAND_MAX;

	if (c->con) {
		c->ops->close(c->con);
		c->con = NULL;
	}
	c->next = gf_monotime() + w;
	c->wait = c->wait * 2 < r->backoff_max ? c->wait * 2 : r->backoff_max;
	clog_state(r, c, i, st, err);
}

static bool permanent(const struct gf_err *err)
{
	return err->code != GF_E_NODE || err->kind == GF_EK_AUTH ||
	       err->kind == GF_EK_UNSUPPORTED || err->kind == GF_EK_HOSTKEY;
}

static void clog_open(const struct gf_console_log *r, struct clog_node *c, size_t i)
{
	const struct gf_node *n = &r->nodes[i];
	double now = gf_monotime(), deadline = now + r->connect_timeout;
	struct gf_err err = {0};

	if (!r->profs[i]) {
		gf_err_set(&err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has no BMC", n->name);
		clog_state(r, c, i, GF_CLOG_FAILED, &err);
		return;
	}
	if ((!c->ops && ops_of(n, r->profs[i], deadline, r->cancel, &c->be, &c->ops, &err) < 0) ||
	    console_open(n, r->profs[i], r->env, c->be, c->ops, r->steal, true, deadline, r->cancel,
			 &c->pins, &c->t, &c->con, &err) < 0) {
		c->con = NULL;
		if (permanent(&err))
			clog_state(r, c, i, GF_CLOG_FAILED, &err);
		else
			clog_retry(r, c, i,
				   err.kind == GF_EK_BUSY ? GF_CLOG_BUSY : GF_CLOG_RECONNECTING,
				   &err);
		return;
	}
	c->since = now;
	clog_state(r, c, i, GF_CLOG_CONNECTING, NULL);
}

/* A connecting console: connected, failed, or still waiting (until its timeout). */
static void clog_check(const struct gf_console_log *r, struct clog_node *c, size_t i)
{
	struct gf_err err = {0};

	switch (c->ops->state(c->con, &err)) {
	case GF_CONSOLE_CONNECTED:
		c->wait = r->backoff_min;
		clog_state(r, c, i, GF_CLOG_CONNECTED, NULL);
		return;
	case GF_CONSOLE_FAILED:
		if (permanent(&err)) {
			c->ops->close(c->con);
			c->con = NULL;
			clog_state(r, c, i, GF_CLOG_FAILED, &err);
		} else {
			clog_retry(r, c, i,
				   err.kind == GF_EK_BUSY ? GF_CLOG_BUSY : GF_CLOG_RECONNECTING,
				   &err);
		}
		return;
	case GF_CONSOLE_CONNECTING:
		if (gf_monotime() - c->since < r->connect_timeout)
			return;
		gf_err_set(&err, GF_E_NODE, GF_EK_TIMEOUT,
			   "the serial console of node '%s' did not connect in time",
			   r->nodes[i].name);
		clog_retry(r, c, i, GF_CLOG_RECONNECTING, &err);
		return;
	}
}

int gf_console_log_run(const struct gf_console_log *r, struct gf_err *err)
{
	struct clog_node *c = calloc(r->n ? r->n : 1, sizeof(*c));
	struct pollfd *pfd = calloc(r->n ? r->n : 1, sizeof(*pfd));
	size_t *who = calloc(r->n ? r->n : 1, sizeof(*who));
	unsigned char buf[16384];

	if (!c || !pfd || !who) {
		free(c);
		free(pfd);
		free(who);
		return gf_err_set(err, GF_E_NOMEM, GF_EK_NONE, "out of memory");
	}
	for (size_t i = 0; i < r->n; i++) {
		c[i].st = GF_CLOG_RECONNECTING; /* so that the first state is reported */
		c[i].wait = r->backoff_min;
		c[i].seed = (unsigned)(i * 2654435761u) ^ (unsigned)getpid();
		clog_open(r, &c[i], i);
	}
	while (!(r->cancel && atomic_load(r->cancel)) && !(r->until && gf_monotime() >= r->until)) {
		double now = gf_monotime(), wake = now + 0.2;
		size_t np = 0, failed = 0;
		int rc;

		for (size_t i = 0; i < r->n; i++) {
			if (c[i].st == GF_CLOG_CONNECTING)
				clog_check(r, &c[i], i);
			if ((c[i].st == GF_CLOG_RECONNECTING || c[i].st == GF_CLOG_BUSY) &&
			    !c[i].con && gf_monotime() >= c[i].next)
				clog_open(r, &c[i], i);
			if (c[i].st == GF_CLOG_CONNECTED) {
				pfd[np] = (struct pollfd){.fd = c[i].ops->fd(c[i].con),
							  .events = POLLIN};
				who[np++] = i;
			} else if ((c[i].st == GF_CLOG_RECONNECTING || c[i].st == GF_CLOG_BUSY) &&
				   c[i].next < wake) {
				wake = c[i].next;
			}
		}
		for (size_t i = 0; i < r->n; i++)
			failed += c[i].st == GF_CLOG_FAILED;
		if (r->on_tick)
			r->on_tick(r->ud);
		if (failed == r->n)
			break; /* nothing left to log */
		if (r->until && r->until < wake)
			wake = r->until;
		now = gf_monotime();
		rc = poll(pfd, np, wake > now ? (int)((wake - now) * 1000) + 1 : 0);
		if (rc < 0 && errno != EINTR) {
			gf_err_set(err, GF_E_IO, GF_EK_NONE, "poll: %s", strerror(errno));
			break;
		}
		for (size_t k = 0; rc > 0 && k < np; k++) {
			size_t i = who[k];
			ssize_t got;

			if (!pfd[k].revents)
				continue;
			got = read(pfd[k].fd, buf, sizeof(buf));
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got > 0) {
				r->on_data(r->ud, i, buf, (size_t)got);
				continue;
			}
			{
				struct gf_err e = {0};

				if (c[i].ops->state(c[i].con, &e) != GF_CONSOLE_FAILED)
					gf_err_set(&e, GF_E_NODE, GF_EK_CONNECT,
						   "the serial console session of node '%s' ended",
						   r->nodes[i].name);
				clog_retry(r, &c[i], i,
					   e.kind == GF_EK_BUSY ? GF_CLOG_BUSY
								: GF_CLOG_RECONNECTING,
					   &e);
			}
		}
	}
	for (size_t i = 0; i < r->n; i++) {
		if (c[i].con)
			c[i].ops->close(c[i].con);
		pins_free(c[i].pins);
	}
	gf_console_stop();
	free(c);
	free(pfd);
	free(who);
	return err && err->code ? err->code : 0;
}
