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
