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

#include "lib/backend.h"
#include "lib/node.h"

struct gf_console_conn {
	const struct gf_console_ops *ops; /* the node's backend's */
	struct gf_console *con;
};

/*
 * Start the console engines for @n consoles at once (before any open). Not
 * thread-safe; gf_console_stop() ends every console still open, their
 * payloads deactivated, and the engines.
 */
int gf_console_start(size_t n, struct gf_err *err);
void gf_console_stop(void);

/*
 * The console ops of node @n's backend (its protocol, or the one --protocol
 * auto finds by @deadline); GF_E_NODE with GF_EK_UNSUPPORTED when it has no
 * BMC or its backend no console.
 */
int gf_console_ops_of(const struct gf_node *n, const struct gf_profile *prof, double deadline,
		      const gf_cancel_flag *cancel, const struct gf_console_ops **ret,
		      struct gf_err *err);

/*
 * Open node @n's console with @prof (resolved: password present) and wait
 * until it is connected, by @deadline (monotonic) or until *@cancel: then
 * closed, GF_E_NODE (timeout). @steal, @keepalive: as the ops' open. On
 * success @ret holds it; gf_console_close() ends it.
 */
int gf_console_connect(const struct gf_node *n, const struct gf_profile *prof, bool steal,
		       bool keepalive, double deadline, const gf_cancel_flag *cancel,
		       struct gf_console_conn *ret, struct gf_err *err);
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
