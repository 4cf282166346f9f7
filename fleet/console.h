/*
 * Nodes' serial consoles: the backend that offers one, its engine started
 * once per process, a console opened and waited for until it is connected.
 * What is read and typed then goes through the backend's file descriptor
 * (struct gf_console_ops, lib/backend.h).
 */
#ifndef GF_FLEET_CONSOLE_H
#define GF_FLEET_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory/db.h"
#include "lib/backend.h"
#include "lib/node.h"

/*
 * What reaching consoles needs beyond a node and its profile: the TLS of a
 * Redfish BMC that is asked where its SSH serial console is (its stored pin
 * or the CA; nothing is pinned here), and the SSH host key rules.
 */
struct gf_console_env {
	struct gf_db *db;    /* the stored TLS pins; NULL: CA checks only */
	const char *cacert;  /* CA bundle for BMC certificates, NULL: system CAs */
	bool insecure;       /* no certificate checks */
	bool ssh_accept_new; /* SSH consoles: record an unknown host key (never a changed one) */
};

struct gf_console_conn {
	const struct gf_console_ops *ops; /* the node's backend's, or the SSH console's */
	struct gf_console *con;
	struct gf_pins *pins; /* the node's stored TLS pin, while it connects */
	struct gf_bmc_target t;
};

/*
 * Start the console engines for @n consoles at once (before any open). Not
 * thread-safe; gf_console_stop() ends every console still open, their
 * payloads deactivated, and the engines.
 */
int gf_console_start(size_t n, struct gf_err *err);
void gf_console_stop(void);

/*
 * Open node @n's console with @prof (resolved: password present) and wait
 * until it is connected, by @deadline (monotonic) or until *@cancel: then
 * closed, GF_E_NODE (timeout). The transport is the backend's console (IPMI
 * SOL), or for a backend without one the SSH console its BMC advertises
 * (fleet/console_ssh.h). @steal, @keepalive: as the ops' open (@keepalive:
 * the logger's, read-only; else a person's, with a terminal). On success
 * @ret holds it; gf_console_close() ends it.
 */
int gf_console_connect(const struct gf_node *n, const struct gf_profile *prof,
		       const struct gf_console_env *env, bool steal, bool keepalive,
		       double deadline, const gf_cancel_flag *cancel, struct gf_console_conn *ret,
		       struct gf_err *err);
void gf_console_close(struct gf_console_conn *c);

#endif

/* ---- console log: every console of many nodes, one thread ---------------- */

enum gf_console_log_state {
	GF_CLOG_CONNECTING = 0,
	GF_CLOG_CONNECTED,
	GF_CLOG_RECONNECTING, /* lost or not reached: tried again after a jittered wait */
	GF_CLOG_BUSY,         /* someone else holds it (without steal): tried again later */
	GF_CLOG_FAILED,       /* refused for good (credentials, no console): not tried again */
};

/* "connecting", "connected", "reconnecting", "busy", "failed". */
const char *gf_console_log_state_name(enum gf_console_log_state s);

struct gf_console_log {
	const struct gf_node *nodes;
	size_t n;
	const struct gf_profile *const *profs; /* per node, resolved; NULL: the node fails */
	const struct gf_console_env *env;      /* NULL: no pins, no CA file, known hosts only */
	bool steal;                            /* take over consoles in use */
	double until;                          /* monotonic end of the run; 0: until cancelled */
	double connect_timeout;                /* seconds a connection may take */
	double backoff_min, backoff_max;       /* seconds between attempts, doubled */
	const gf_cancel_flag *cancel;          /* set: every console closed, the run returns */
	/* Called on the thread of gf_console_log_run(); @err only with a reason. */
	void (*on_state)(void *ud, size_t i, enum gf_console_log_state st,
			 const struct gf_err *err);
	void (*on_data)(void *ud, size_t i, const void *buf, size_t len);
	void (*on_tick)(void *ud); /* at least every 0.2 s; NULL: none */
	void *ud;
};

/*
 * Keep every node's console open until @r->until or the cancel flag,
 * read-only (nothing is ever written to a console), reading all of them
 * with one poll loop on the calling thread (the backend's engine has its own
 * threads). Consoles are ended (payloads deactivated) before it returns.
 * GF_E_* only when the run itself cannot go on; nodes' failures are states.
 */
int gf_console_log_run(const struct gf_console_log *r, struct gf_err *err);
