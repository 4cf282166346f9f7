/* The backends and the choice among them: a new protocol is one more row here. */
#include "fleet/bmc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/pins.h"
#include "ipmi/ipmi.h"
#include "redfish/redfish.h"
#include "lib/buf.h"
#include "lib/util.h"

/* How long --protocol auto waits for a probe before it tries the next backend. */
#define PROBE_S 3.0

/* In the order auto probes them; the one without a probe is auto's fallback. */
static const struct gf_backend *const backends[] = {
	&gf_redfish_backend,
	&gf_ipmi_backend,
};

void gf_bmc_register(void)
{
	gf_backends_set(backends, NELEM(backends));
}

void gf_bmc_target_of(const struct gf_bmc_run *r, size_t i, double deadline,
		      struct gf_bmc_target *ret)
{
	const struct gf_node *n = &r->nodes[i];

	*ret = (struct gf_bmc_target){
		.node = n->name,
		.host = n->bmc,
		.port = n->bmc_port,
		.prof = r->profs ? r->profs[i] : NULL,
		.deadline = deadline,
		.cache_dir = r->cache_dir,
		.cacert = r->cacert,
		.insecure = r->insecure,
		.tls_pin = gf_pins_expected(r->pins, i),
		.tls_pin_new = r->pins->pin_new[i],
		.cancel = r->cancel,
		.opts = r->opts,
	};
}

const struct gf_backend *gf_bmc_choose(const struct gf_bmc_run *r, size_t i, double deadline,
				       struct gf_err *err)
{
	const struct gf_node *n = &r->nodes[i];
	const struct gf_backend *be = n->protocol, *fallback = NULL;
	struct gf_bmc_target t;

	if (!n->bmc) {
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has no BMC", n->name);
		return NULL;
	}
	if (r->backend)
		return r->backend;
	if (be)
		return be;
	gf_bmc_target_of(r, i, deadline, &t);
	for (size_t k = 0; k < NELEM(backends); k++) {
		if (!backends[k]->probe)
			fallback = fallback ? fallback : backends[k];
		else if (backends[k]->probe(&t, PROBE_S))
			return backends[k];
	}
	return fallback;
}

int gf_bmc_open(const struct gf_bmc_run *r, size_t i, const struct gf_backend *be, double deadline,
		void **ret_session, struct gf_err *err)
{
	struct gf_bmc_target t;
	const char *fp;
	void *sess = NULL;
	int rc;

	gf_bmc_target_of(r, i, deadline, &t);
	rc = be->open(&t, &sess, err);
	if (rc < 0)
		return rc;
	fp = be->fingerprint ? be->fingerprint(sess) : NULL;
	if (fp)
		snprintf(r->pins->seen[i], GF_BMC_FP_SIZE, "%s", fp);
	*ret_session = sess;
	return 0;
}

/* The first backend @n may speak that has certificates, NULL when none. */
static const struct gf_backend *pinnable(const struct gf_node *n)
{
	const struct gf_backend *be = n->protocol;

	if (!n->bmc)
		return NULL;
	if (be)
		return be->fingerprint ? be : NULL;
	for (size_t k = 0; !n->protocol && k < NELEM(backends); k++)
		if (backends[k]->probe && backends[k]->fingerprint)
			return backends[k];
	return NULL;
}

bool gf_bmc_may_pin(const struct gf_node *n)
{
	return pinnable(n) != NULL;
}

int gf_bmc_peek_fingerprint(const struct gf_node *n, double deadline, const gf_cancel_flag *cancel,
			    char *ret, struct gf_err *err)
{
	const struct gf_backend *be = pinnable(n);
	struct gf_bmc_target t = {
		.node = n->name,
		.host = n->bmc,
		.port = n->bmc_port,
		.deadline = deadline,
		.cancel = cancel,
	};
	char fp[GF_BMC_FP_SIZE];
	int rc;

	if (!be || !be->peek_fingerprint) {
		const char *title = "";

		/* "has no Redfish BMC to pin": name the protocols that have certificates. */
		for (size_t k = 0; k < NELEM(backends) && !*title; k++)
			if (backends[k]->peek_fingerprint)
				title = backends[k]->title;
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "node '%s' has no %s BMC to pin", n->name, title);
	}
	rc = be->peek_fingerprint(&t, fp, err);
	if (rc < 0)
		return rc;
	memcpy(ret, fp, sizeof(fp));
	return 0;
}

int gf_bmc_profile_check(const char *key, const char *value, struct gf_err *err)
{
	for (size_t k = 0; k < NELEM(backends); k++) {
		int rc = backends[k]->profile_check ? backends[k]->profile_check(key, value, err)
						    : 0;

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- the fleet ping ---------------------------------------------------------- */

struct gf_bmc_gate {
	const struct gf_bmc_run *r;
	double timeout;
	size_t n;
	struct gate_ping {
		const struct gf_backend *be;
		struct gf_ping *p; /* NULL: this backend pings nobody */
	} pings[NELEM(backends)];
	size_t *pos;          /* per node: SIZE_MAX, or its place in its ping */
	unsigned char *which; /* per node: its backend's index in pings */
};

struct gf_bmc_gate *gf_bmc_gate_start(const struct gf_bmc_run *r, size_t n, double timeout,
				      bool (*skip)(const void *ud, size_t i), const void *ud)
{
	struct gf_bmc_gate *g;
	struct gf_bmc_target *t;
	bool any = false;

	/* A Ctrl-C flag left set by an earlier run would end the ping at once. */
	if (r->cancel && *r->cancel)
		return NULL;
	g = gf_xcalloc(1, sizeof(*g));
	t = gf_xcalloc(n ? n : 1, sizeof(*t));

	*g = (struct gf_bmc_gate){.r = r, .timeout = timeout, .n = n};
	g->pos = gf_xcalloc(n ? n : 1, sizeof(*g->pos));
	g->which = gf_xcalloc(n ? n : 1, sizeof(*g->which));
	for (size_t i = 0; i < n; i++)
		g->pos[i] = SIZE_MAX;
	for (size_t k = 0; k < (r->backend ? 1 : NELEM(backends)); k++) {
		const struct gf_backend *be = r->backend ? r->backend : backends[k];
		size_t m = 0;

		g->pings[k].be = be;
		if (!be->ping)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (!r->nodes[i].bmc || (!r->backend && r->nodes[i].protocol != be) ||
			    (skip && skip(ud, i)))
				continue;
			/* No deadline of its own: the ping ends at @timeout. */
			gf_bmc_target_of(r, i, 0, &t[m]);
			g->pos[i] = m++;
			g->which[i] = (unsigned char)k;
		}
		if (m && be->ping->start(t, m, timeout, &g->pings[k].p, NULL) == 0) {
			any = true;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (g->which[i] == k)
				g->pos[i] = SIZE_MAX; /* not pinged: the normal path */
	}
	free(t);
	if (!any) {
		gf_bmc_gate_stop(g);
		return NULL;
	}
	return g;
}

enum gf_gate gf_bmc_gate_state(const struct gf_bmc_gate *g, size_t i)
{
	const struct gate_ping *gp;

	if (!g || i >= g->n || g->pos[i] == SIZE_MAX)
		return GF_GATE_OPEN;
	gp = &g->pings[g->which[i]];
	return gp->be->ping->state(gp->p, g->pos[i]) == GF_PING_WAITING ? GF_GATE_HELD
									: GF_GATE_OPEN;
}

void gf_bmc_gate_wait(struct gf_bmc_gate *g, double until)
{
	size_t np = 0;

	for (size_t k = 0; k < NELEM(g->pings); k++)
		np += g->pings[k].p != NULL;
	for (size_t k = 0; k < NELEM(g->pings); k++) {
		if (!g->pings[k].p)
			continue;
		/* With several pings, each is waited on in turn for a short while. */
		g->pings[k].be->ping->wait(g->pings[k].p, np > 1 && until > gf_monotime() + 0.01
								  ? gf_monotime() + 0.01
								  : until);
	}
}

void gf_bmc_gate_expired(const struct gf_bmc_gate *g, size_t i, struct gf_err *err)
{
	const struct gf_node *n = &g->r->nodes[i];
	const char *title = g->pos[i] == SIZE_MAX ? "" : g->pings[g->which[i]].be->title;

	gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
		   "bmc '%s' at %s did not answer in %g s (no answer to the %s ping sent at the "
		   "start of the run; no session was opened)",
		   n->name, n->bmc, g->timeout, title);
}

void gf_bmc_gate_stop(struct gf_bmc_gate *g)
{
	if (!g)
		return;
	for (size_t k = 0; k < NELEM(g->pings); k++)
		if (g->pings[k].p)
			g->pings[k].be->ping->stop(g->pings[k].p);
	free(g->pos);
	free(g->which);
	free(g);
}
