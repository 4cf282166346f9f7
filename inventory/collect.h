/*
 * Collecting a sweep. Each node is two tasks of one fan-out (lib/exec.c),
 * run at once: its BMC part (one session: hardware, firmware inventory,
 * event log, sensors) and its SSH part (host facts). The workers fill only
 * their own part; then the calling thread turns each node's parts into one
 * typed gf_sweep_node: components under canonical keys (normalize.c), the
 * SEL and sensor summaries, the errors of what failed or is unsupported,
 * its status. Nothing here prints or stores.
 */
#ifndef GF_COLLECT_H
#define GF_COLLECT_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory/bmc.h"
#include "inventory/store.h"
#include "inventory/sweep.h"
#include "lib/exec.h"

struct gf_collect {
	size_t n;
	/* The nodes, their BMC profiles (NULL entries, or NULL: none), pins, TLS options. */
	struct gf_bmc_run bmc;
	const struct gf_profile *const *ssh_profs;  /* per node, NULL entries: no host facts */
	const struct gf_sel_prev *prev;             /* per node: its previous SEL read */
	bool accept_new;                            /* SSH: record unknown host keys */
	struct gf_exec_opts exec;   /* fanout, timeout (a node's whole deadline), retries */
	/*
	 * Called on the calling thread as each node is done (both parts), for
	 * progress: a summary result, its BMC part's (the times of both) when it
	 * has a BMC, else its SSH part's. NULL: none.
	 */
	gf_exec_done done;
	void *ud;
};

/*
 * Collect the nodes and append them to @sw in node order. SSH is set up and
 * torn down here when a node has host facts to read. Returns 0, or GF_E_IO
 * when no thread could start. After Ctrl-C (gf_exec_cancelled()) the nodes
 * are appended as far as they came: not a sweep to store.
 */
int gf_collect_sweep(const struct gf_collect *c, struct gf_sweep *sw, struct gf_err *err);

#endif
