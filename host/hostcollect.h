/*
 * Collecting host facts: run the fixed, read-only commands of hostfacts.h
 * through a runner (SSH channels, or local processes for --local), ask
 * nvidia-smi again without the fields an older driver refuses, run the
 * fallbacks that are needed, and build the facts.
 */
#ifndef GF_HOSTCOLLECT_H
#define GF_HOSTCOLLECT_H

#include "lib/cancel.h"
#include "host/hostfacts.h"
#include "host/ssh.h"

/*
 * A way to run commands: @run runs @n commands at once until each ends or
 * @deadline (monotonic) passes, filling their results; it returns 0, or
 * GF_E_NODE when the transport itself failed or @cancel was set (kind
 * internal).
 */
struct gf_host_runner {
	int (*run)(void *ud, struct gf_remote_cmd *cmds, size_t n, double deadline,
		   const gf_cancel_flag *cancel, struct gf_err *err);
	void *ud;
	const gf_cancel_flag *cancel; /* set on Ctrl-C: stop soon; NULL: none */
};

/*
 * Run the commands through @r and fill @ret (release with
 * gf_hostfacts_release()). Commands still running shortly before @deadline
 * are abandoned and reported as timed out (a health state when it is
 * nvidia-smi). Thread-safe for distinct runners.
 */
int gf_host_collect(const struct gf_host_runner *r, double deadline, struct gf_hostfacts *ret,
		    struct gf_err *err);

/*
 * The local runner (@ud unused): each command by /bin/sh -c with stdin from
 * /dev/null, in its own process group, killed at the deadline or on @cancel.
 */
int gf_host_run_local(void *ud, struct gf_remote_cmd *cmds, size_t n, double deadline,
		      const gf_cancel_flag *cancel, struct gf_err *err);
/*
 * A node's host facts over SSH: connect to @t, collect by @t->deadline
 * (or until @t->cancel is set), disconnect. On success fills @ret (release with gf_hostfacts_release());
 * errors are GF_E_NODE with the kind of gf_ssh_open() or gf_host_collect().
 * Needs gf_ssh_global_init(); thread-safe for distinct targets.
 */
int gf_host_facts_ssh(const struct gf_ssh_target *t, struct gf_hostfacts *ret, struct gf_err *err);

#endif
