/*
 * A node's BMC: the backends (the table in bmc.c is the one place that names
 * them), the backend for a node's protocol (--protocol auto probes, nothing
 * secret sent), and opening a session with the node's profile and TLS pin.
 * Nothing here prints.
 */
#ifndef GF_FLEET_BMC_H
#define GF_FLEET_BMC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/cancel.h"
#include "lib/backend.h"
#include "lib/exec.h"
#include "lib/node.h"

struct gf_pins; /* fleet/pins.h: below this file, which it does not include */

/* What a fan-out needs to reach its nodes' BMCs; read-only while it runs but pins->seen. */
struct gf_bmc_run {
	const struct gf_node *nodes;
	const struct gf_profile *const *profs; /* per node, resolved in the main thread; NULL: none */
	struct gf_pins *pins;                  /* per node; seen[i] is written by node i's worker */
	const char *cache_dir;                 /* IPMI SDR caches, NULL: none */
	const char *cacert;               /* CA bundle for BMC certificates, NULL: system CAs */
	bool insecure;                    /* no certificate checks at all */
	const struct gf_bmc_opts *opts;   /* the verb's knobs for the backend, NULL: none */
	const gf_cancel_flag *cancel;     /* set on Ctrl-C: stop soon, still clean up */
	const struct gf_backend *backend; /* NULL: the node's protocol's; else every node's
						  * (a stub in tests) */
};

/*
 * Hand the table of backends to lib/ (gf_backends_set()): once, at start,
 * before any thread and before a protocol is named.
 */
void gf_bmc_register(void);

/*
 * The backend for node @i: its protocol's, or for auto the first whose probe
 * answers by @deadline (a few seconds at most), else the one without a probe.
 * NULL with @err (unsupported) when the node has no BMC. Thread-safe.
 */
const struct gf_backend *gf_bmc_choose(const struct gf_bmc_run *r, size_t i, double deadline,
				       struct gf_err *err);

/*
 * What node @i's session is opened with (gf_backend.open): its address,
 * profile, TLS settings and expected pin, every call bounded by @deadline;
 * its strings are borrowed from @r. For a session the frame does not open
 * (the Redfish event streams, fleet/events_redfish.c).
 */
void gf_bmc_target_of(const struct gf_bmc_run *r, size_t i, double deadline,
		      struct gf_bmc_target *ret);

/*
 * Open node @i's session on @be, every call bounded by @deadline, and note the
 * certificate its BMC showed in r->pins->seen[i]. Close it with be->close().
 * Thread-safe for distinct nodes.
 */
int gf_bmc_open(const struct gf_bmc_run *r, size_t i, const struct gf_backend *be, double deadline,
		void **ret_session, struct gf_err *err);

/*
 * The fleet ping of a fan-out (struct gf_ping_ops): started just before it,
 * one datagram to the BMC of every node of @r (n of them) registered with a
 * protocol that has a ping (IPMI; never auto, nor a node @skip(@ud, i) names),
 * all at once. Until a node's BMC answers, its BMC task is held
 * (GF_GATE_HELD); one that never does fails at the run's start + @timeout
 * with gf_bmc_gate_expired()'s timeout, no session opened. NULL when no node
 * is pinged: then nothing is held. Stop it after the run. The state and wait
 * calls are thread-safe.
 */
struct gf_bmc_gate;

struct gf_bmc_gate *gf_bmc_gate_start(const struct gf_bmc_run *r, size_t n, double timeout,
				      bool (*skip)(const void *ud, size_t i), const void *ud);
/* Node @i's BMC task: GF_GATE_HELD while its BMC has not answered, else GF_GATE_OPEN. */
enum gf_gate gf_bmc_gate_state(const struct gf_bmc_gate *g, size_t i);
void gf_bmc_gate_wait(struct gf_bmc_gate *g, double until);
/* The error of node @i whose BMC never answered: a timeout. */
void gf_bmc_gate_expired(const struct gf_bmc_gate *g, size_t i, struct gf_err *err);
void gf_bmc_gate_stop(struct gf_bmc_gate *g); /* NULL: nothing */

/*
 * The backends' checks of the profile keys they read, for gf_creds_load():
 * the first that refuses @value decides. Thread-safe.
 */
int gf_bmc_profile_check(const char *key, const char *value, struct gf_err *err);

/* May @n's BMC show a certificate to pin: a backend its protocol may use has them? */
bool gf_bmc_may_pin(const struct gf_node *n);

/*
 * The fingerprint of the certificate @n's BMC shows now, without credentials,
 * into @ret (GF_BMC_FP_SIZE bytes): for re-pinning. GF_E_NODE (unsupported)
 * when its protocol has no certificates. Thread-safe.
 */
int gf_bmc_peek_fingerprint(const struct gf_node *n, double deadline, const gf_cancel_flag *cancel,
			    char *ret, struct gf_err *err);

#endif
