/*
 * Every fuzz target runs its inputs where gpufleet runs that code: on a
 * fan-out worker of lib/exec.c, with the worker's stack (GF_THREAD_STACK), not on the
 * 8 MiB main thread, so that recursion a worker cannot afford is a finding.
 * A target includes this header and defines fuzz_input(); this header
 * defines libFuzzer's entry point around it.
 */
#ifndef GF_FUZZ_WORKER_H
#define GF_FUZZ_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The target's check of one input; aborts on a finding. */
static void fuzz_input(const uint8_t *data, size_t size);

struct fuzz_case {
	const uint8_t *data;
	size_t size;
};

static void fuzz_task(void *ctx, size_t i, double deadline, struct gf_result *slot)
{
	const struct fuzz_case *fc = ctx;

	fuzz_input(fc->data, fc->size);
	slot->ok = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_case fc = {data, size};
	struct gf_exec_opts o = {.fanout = 1}; /* the default worker stack */
	struct gf_result slot;

	if (gf_exec_run(&o, 1, fuzz_task, &fc, &slot, NULL, NULL, NULL) < 0)
		abort();
	gf_result_release(&slot);
	return 0;
}

#endif
