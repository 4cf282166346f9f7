/*
 * Re-pinning (gpufleet nodes repin): the certificate each node's BMC shows
 * now is read without a session (nothing secret is sent), and becomes the
 * node's pin, in one transaction after the run; with an expected
 * fingerprint only that one does. A node that could not be read, or showed
 * another certificate than expected, keeps the pin it had. Each node's
 * outcome is handed back typed through a done callback on the calling
 * thread. Nothing here prints.
 */
#ifndef GF_FLEET_REPIN_H
#define GF_FLEET_REPIN_H

#include <stddef.h>

#include "fleet/pins.h"
#include "inventory/db.h"
#include "lib/exec.h"
#include "lib/node.h"
#include "lib/result.h"

/* What node i's BMC showed. */
enum gf_repin_status {
	GF_REPIN_NOT_RUN = 0, /* never started (Ctrl-C) */
	GF_REPIN_FAILED,      /* nothing read: the slot's err says why */
	GF_REPIN_OTHER,       /* not the expected certificate (the slot failed): pin kept */
	GF_REPIN_OK,          /* its certificate is the node's pin now */
};

struct gf_repin {
	/* ---- given by the caller ---------------------------------------------- */
	const struct gf_node *nodes;
	size_t n;
	const char *expect; /* lower-case hex: the only certificate to pin,
						 * or NULL */
	struct gf_exec_opts exec;
	/*
	 * Called on the calling thread as node @i finishes: @slot (ok, err; the
	 * caller may set its data), the pin it had (NULL: none) and, for
	 * GF_REPIN_OTHER and GF_REPIN_OK, the fingerprint it showed (hex).
	 */
	void (*done)(void *ud, size_t i, struct gf_result *slot, enum gf_repin_status status,
		     const char *previous, const char *seen);
	void *ud;

	/* ---- filled by gf_repin_run(), freed by gf_repin_release() --------------- */
	struct gf_result *slots; /* n */
	struct gf_pins pins;
};

/*
 * Read the certificates of r->nodes' BMCs and store the new pins in @db.
 * Returns 0 when the run happened and the pins were stored (the nodes'
 * results in r->slots), or a negative GF_E_* with @err: the pins could not
 * be read (nothing sent), the executor could not start its threads, or the
 * new pins could not be stored. Call from the main thread; then
 * gf_repin_release() whatever it returned.
 */
int gf_repin_run(struct gf_db *db, struct gf_repin *r, struct gf_err *err);

void gf_repin_release(struct gf_repin *r);

#endif
