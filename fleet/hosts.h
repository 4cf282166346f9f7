/*
 * The host facts of many nodes (gpufleet host): one executor run, each
 * node's facts read over SSH (or, for --local, on this machine), handed
 * back typed through a done callback on the calling thread. SSH is set up
 * and torn down here. Nothing here prints.
 */
#ifndef GF_FLEET_HOSTS_H
#define GF_FLEET_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

#include "host/hostcollect.h"
#include "lib/creds.h"
#include "lib/exec.h"
#include "lib/node.h"
#include "lib/result.h"

/* What a node's host answered. */
enum gf_hosts_status {
	GF_HOSTS_NOT_RUN = 0, /* never started (Ctrl-C) */
	GF_HOSTS_FAILED,      /* nothing read: the slot's err says why */
	GF_HOSTS_PARTIAL,     /* some read: the slot failed, its err names what is missing */
	GF_HOSTS_OK,
};

struct gf_hosts {
	/* ---- given by the caller ---------------------------------------------- */
	const struct gf_node *nodes;
	size_t n;
	const struct gf_profile *const *profs; /* per node, its SSH profile; NULL with local */
	bool local;                            /* this machine, without SSH (n is 1) */
	bool accept_new;                       /* SSH: record unknown host keys */
	struct gf_exec_opts exec;
	/*
	 * Called on the calling thread as node @i finishes: @slot (ok, err; the
	 * caller may set its data) and, unless @status is GF_HOSTS_NOT_RUN or
	 * GF_HOSTS_FAILED, @facts, what the host answered (valid during the call).
	 */
	void (*done)(void *ud, size_t i, struct gf_result *slot, enum gf_hosts_status status,
		     const struct gf_hostfacts *facts);
	void *ud;

	/* ---- filled by gf_hosts_run(), freed by gf_hosts_release() --------------- */
	struct gf_result *slots; /* n */
};

/*
 * Read the host facts of h->nodes. Returns 0 when the run happened (the
 * nodes' results in h->slots), or a negative GF_E_* with @err: SSH could not
 * be set up, or the executor could not start its threads (nothing ran).
 * Call from the main thread; then gf_hosts_release() whatever it returned.
 */
int gf_hosts_run(struct gf_hosts *h, struct gf_err *err);

void gf_hosts_release(struct gf_hosts *h);

#endif
