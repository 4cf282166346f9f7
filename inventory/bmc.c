/* The backends and the choice among them: a new protocol is one more row here. */
#include "inventory/bmc.h"

#include <stdio.h>
#include <string.h>

#include "ipmi/ipmi.h"
#include "redfish/redfish.h"
#include "lib/util.h"

/* How long --protocol auto waits for a probe before it tries the next backend. */
#define PROBE_S 3.0

/* In the order auto probes them; the one without a probe is auto's fallback. */
static const struct gf_backend *const backends[] = {
	&gf_redfish_backend,
	&gf_ipmi_backend,
};

/* The backend registered nodes name by @p, NULL for auto (or an unknown protocol). */
static const struct gf_backend *of_protocol(enum gf_proto p)
{
	const char *name = gf_proto_name(p);

	for (size_t k = 0; name && k < NELEM(backends); k++)
		if (strcmp(backends[k]->name, name) == 0)
			return backends[k];
	return NULL;
}

static void target_of(const struct gf_bmc_run *r, size_t i, double deadline,
		      struct gf_bmc_target *ret)
{
	const struct gf_node *n = &r->nodes[i];

	*ret = (struct gf_bmc_target){
		.node = n->name, .host = n->bmc, .port = n->bmc_port, .prof = r->profs[i],
		.deadline = deadline, .cache_dir = r->cache_dir, .cacert = r->cacert,
		.insecure = r->insecure, .tls_pin = gf_pins_expected(r->pins, i),
		.tls_pin_new = r->pins->pin_new[i], .log_name = r->log_name, .cancel = r->cancel,
		.no_thresholds = r->no_thresholds, .request_timeout = r->request_timeout,
	};
}

const struct gf_backend *gf_bmc_choose(const struct gf_bmc_run *r, size_t i, double deadline,
				       struct gf_err *err)
{
	const struct gf_node *n = &r->nodes[i];
	const struct gf_backend *be = of_protocol(n->protocol), *fallback = NULL;
	struct gf_bmc_target t;

	if (!n->bmc) {
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has no BMC", n->name);
		return NULL;
	}
	if (be)
		return be;
	if (n->protocol != GF_PROTO_AUTO) {
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has an unknown protocol",
			   n->name);
		return NULL;
	}
	target_of(r, i, deadline, &t);
	for (size_t k = 0; k < NELEM(backends); k++) {
		if (!backends[k]->probe)
			fallback = fallback ? fallback : backends[k];
		else if (backends[k]->probe(&t, PROBE_S))
			return backends[k];
	}
	return fallback;
}

int gf_bmc_open(const struct gf_bmc_run *r, size_t i, const struct gf_backend *be,
		double deadline, void **ret_session, struct gf_err *err)
{
	struct gf_bmc_target t;
	const char *fp;
	void *sess = NULL;
	int rc;

	target_of(r, i, deadline, &t);
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
	const struct gf_backend *be = of_protocol(n->protocol);

	if (!n->bmc)
		return NULL;
	if (be)
		return be->fingerprint ? be : NULL;
	for (size_t k = 0; n->protocol == GF_PROTO_AUTO && k < NELEM(backends); k++)
		if (backends[k]->probe && backends[k]->fingerprint)
			return backends[k];
	return NULL;
}

bool gf_bmc_may_pin(const struct gf_node *n)
{
	return pinnable(n) != NULL;
}

int gf_bmc_peek_fingerprint(const struct gf_node *n, double deadline,
			    const gf_cancel_flag *cancel, char *ret, struct gf_err *err)
{
	const struct gf_backend *be = pinnable(n);
	struct gf_bmc_target t = {
		.node = n->name, .host = n->bmc, .port = n->bmc_port, .deadline = deadline,
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
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has no %s BMC to pin",
				  n->name, title);
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
		int rc = backends[k]->profile_check ? backends[k]->profile_check(key, value, err) : 0;

		if (rc < 0)
			return rc;
	}
	return 0;
}
