/* The fan-out executor: a bounded window of worker threads over N nodes. */
#ifndef GF_EXEC_H
#define GF_EXEC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/cancel.h"
#include "lib/result.h"

/* What a gate says of a task (struct gf_exec_gate). */
enum gf_gate {
	GF_GATE_OPEN = 0, /* start it: its node is taken as soon as a worker is free */
	GF_GATE_HELD,     /* its peer has not shown it is there yet */
	GF_GATE_FOLLOW,   /* nothing to wait for, nothing urgent: runs when its node does */
};

/*
 * Tasks that may start only once their peer has answered (a fleet ping).
 * Workers take the nodes in order among those with an open task (or whose
 * tasks all follow); a worker that finds none waits (@wait) instead of
 * taking a held node, so held nodes take no worker. At the run's start +
 * opts->timeout every task still held fails through @expire without being
 * run (attempts 1: the gate's request), its deadline counted from the run's
 * start, never retried. A task that opens
 * later is run as any other, with a deadline of its node's own.
 */
struct gf_exec_gate {
	enum gf_gate (*state)(void *ud, size_t k); /* task k; thread-safe, cheap */
	void (*wait)(void *ud, double until);      /* until a state may have changed or
							      * @until (monotonic), 50 ms at most */
	void (*expire)(void *ud, size_t k, struct gf_result *slot); /* fill slot->err (a timeout) */
	/*
	 * NULL, or what the gate waits on starts here (a fleet ping): called by
	 * gf_exec_run() once Ctrl-C is caught, before any task; false: no gate
	 * after all, every task is taken in order.
	 */
	bool (*start)(void *ud);
	void *ud;
};

/*
 * Work the calling thread does itself before any worker starts: one event
 * loop that serves many nodes at once (the IPMI power status of a fleet),
 * where a thread per node would cost more than the work. @run is called by
 * gf_exec_run() once Ctrl-C is caught, before the gate starts, with every
 * slot initialised; it fills the slots of the nodes it serves and calls
 * gf_exec_inline_done() for each as it ends (done is called then, on this
 * thread). The nodes it did not finish run on workers once it returns, as
 * without it, but by the run's deadline (its start + timeout): a node the
 * loop handed back has had part of its time. Not with parts or batching.
 */
struct gf_exec_ctl; /* the run in progress, opaque */

struct gf_exec_inline {
	void (*run)(void *ud, struct gf_exec_ctl *c);
	void *ud;
};

/* Node @i's slot is filled: it is done (one attempt), no worker runs it. */
void gf_exec_inline_done(struct gf_exec_ctl *c, size_t i);

struct gf_exec_opts {
	unsigned fanout;   /* concurrent nodes, >= 1 */
	unsigned parts;    /* tasks per node, run at once (0: one); see gf_exec_run() */
	double timeout;    /* seconds per node: its whole deadline, all attempts and parts */
	unsigned retries;  /* extra attempts after a timeout or connect failure, by the deadline */
	unsigned batch;    /* 0: no staggering; else start at most @batch nodes per @interval */
	double interval;   /* seconds between batches */
	size_t stack_size; /* worker stack, 0: GF_THREAD_STACK (lib/util.h) */
	const struct gf_exec_gate
		*gate; /* NULL: every node is taken in order (no batching with one) */
	const struct gf_exec_inline *inl; /* NULL: every node on a worker */
};

/*
 * One attempt at task @i: node @i, or with parts, part i % parts of node
 * i / parts. Runs on a worker thread; it may only touch @slot and what @ctx
 * says is read-only. @deadline is monotonic (gf_monotime()): the node's,
 * the same for every attempt and part (its start plus opts->timeout); every
 * call the task makes must end by then. It sets slot->ok, slot->err and
 * slot->data.
 */
typedef void (*gf_exec_task)(void *ctx, size_t i, double deadline, struct gf_result *slot);
/*
 * Called on the calling (main) thread as node @i finishes (all its parts),
 * in completion order; @slot is its first part's, the others follow it.
 */
typedef void (*gf_exec_done)(void *ud, size_t i, const struct gf_result *slot);

/*
 * Run @task for nodes 0..n-1, filling @slots (initialised by this call).
 * Returns 0, or GF_E_NOMEM / GF_E_IO if threads could not be started (then
 * nothing ran). The slots' t_start reflect batching: node i starts no earlier
 * than start + (i / batch) * interval.
 *
 * With @opts->parts P > 1 a node is P tasks that run at once, each on its own
 * thread, with its own slot (@slots has n * P: node i's part p is i * P + p),
 * attempts and retries, and all under the node's one deadline; @fanout still
 * counts nodes, and a node is done when all its parts are.
 *
 * A retry (a timeout or connect failure, at most opts->retries of them)
 * starts only while a tenth of the timeout (0.2 s at most) is left of the
 * node's deadline: retries happen inside the deadline, never after it.
 *
 * Ctrl-C is the executor's while it runs (the calling thread's SIGINT
 * disposition is put back when it returns): the first stops the run soon.
 * No node starts any more (each fails "interrupted before it was started",
 * with no attempt), nothing is retried, a node waiting for its batch does
 * not wait, and the tasks running see gf_exec_cancelled() (and the flag they
 * gave their peers' calls) and end early, closing their sessions. A second
 * Ctrl-C ends the process at once. One run at a time.
 */
int gf_exec_run(const struct gf_exec_opts *opts, size_t n, gf_exec_task task, void *ctx,
		struct gf_result *slots, gf_exec_done done, void *ud, struct gf_err *err);

/*
 * Has Ctrl-C stopped the run in progress, or else the last one? For tasks
 * that wait or poll, and for the caller after the run. Thread-safe.
 */
bool gf_exec_cancelled(void);
/*
 * The flag behind gf_exec_cancelled(), for calls that watch one while they
 * wait on a peer (struct gf_bmc_target's cancel, struct gf_ssh_target's).
 */
const gf_cancel_flag *gf_exec_cancel_flag(void);

#endif
