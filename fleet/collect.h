/*
 * Collecting a sweep. Each node is two tasks of one fan-out (the frame of
 * fleet/fanout.h), run at once: its BMC part (one session: hardware,
 * firmware inventory, event log, sensors) and its SSH part (host facts). The workers fill only
 * their own part; then the calling thread turns each node's parts into one
 * typed gf_sweep_node: components under canonical keys (normalize.c), the
 * SEL and sensor summaries, the errors of what failed or is unsupported,
 * its status. Nothing here prints or stores.
 */
#ifndef GF_FLEET_COLLECT_H
#define GF_FLEET_COLLECT_H

#include <stdbool.h>
#include <stddef.h>

#include "fleet/fanout.h"
#include "inventory/store.h"
#include "inventory/sweep.h"
#include "lib/exec.h"

struct gf_collect {
	/*
	 * The frame of the BMC parts, as the caller sets it: the nodes (and n),
	 * their BMC profiles (NULL entries, or NULL: none), the TLS options,
	 * the executor's (timeout: a node's whole deadline, both parts), the
	 * hooks. Its hooks.done is called as each node is done (both parts),
	 * for progress, with a summary result: its BMC part's (the times of
	 * both) when it has a BMC, else its SSH part's. gf_collect_sweep()
	 * sets the op and the side part; after it the caller reports the pins
	 * (bmc.pinned) and calls gf_fanout_release().
	 */
	struct gf_fanout bmc;
	const struct gf_profile *const *ssh_profs; /* per node, NULL entries: no host facts */
	const struct gf_sel_prev *prev;            /* per node: its previous SEL read */
	bool accept_new;                           /* SSH: record unknown host keys */
};

/*
 * Collect the nodes and append them to @sw in node order. SSH is set up and
 * torn down here when a node has host facts to read. Returns 0; a hook's
 * code (> 0) when one stopped the run; or a negative GF_E_* with @err (the
 * pins could not be read, no thread could start). After Ctrl-C
 * (gf_exec_cancelled()) the nodes are appended as far as they came: not a
 * sweep to store.
 */
int gf_collect_sweep(struct gf_collect *c, struct gf_sweep *sw, struct gf_err *err);

#endif
