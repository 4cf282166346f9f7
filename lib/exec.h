/* The fan-out executor: a bounded window of worker threads over N nodes. */
#ifndef GF_EXEC_H
#define GF_EXEC_H

#include <signal.h>
#include <stddef.h>

#include "lib/result.h"

struct gf_exec_opts {
	unsigned fanout;     /* concurrent nodes, >= 1 */
	double timeout;      /* seconds per attempt, given to the task as a deadline */
	unsigned retries;    /* extra attempts after a timeout or connect failure */
	unsigned batch;      /* 0: no staggering; else start at most @batch nodes per @interval */
	double interval;     /* seconds between batches */
	size_t stack_size;   /* worker stack, 0: 256 KiB */
	/* Set (e.g. by a SIGINT handler) to stop soon: a node still waiting for its batch
	 * starts at once (its task sees the flag and fails fast) and nothing is retried.
	 * NULL: never. */
	const volatile sig_atomic_t *cancel;
};

/*
 * One attempt at node @i. Runs on a worker thread; it may only touch @slot and
 * what @ctx says is read-only. @deadline is monotonic (gf_monotime()).
 * It sets slot->ok, slot->err and slot->data.
 */
typedef void (*gf_exec_task)(void *ctx, size_t i, double deadline, struct gf_result *slot);
/* Called on the calling (main) thread as node @i finishes, in completion order. */
typedef void (*gf_exec_done)(void *ud, size_t i, const struct gf_result *slot);

/*
 * Run @task for nodes 0..n-1, filling @slots (initialised by this call).
 * Returns 0, or GF_E_NOMEM / GF_E_IO if threads could not be started (then
 * nothing ran). The slots' t_start reflect batching: node i starts no earlier
 * than start + (i / batch) * interval.
 */
int gf_exec_run(const struct gf_exec_opts *opts, size_t n, gf_exec_task task, void *ctx,
		struct gf_result *slots, gf_exec_done done, void *ud, struct gf_err *err);

#endif
