#ifndef GF_CANCEL_H
#define GF_CANCEL_H

#include <stdatomic.h>
#include <stdbool.h>

/*
 * The Ctrl-C flag: set by the signal handler (lib/exec.c), read by every
 * worker thread while it waits on a peer. A lock-free atomic, so that both
 * the handler's write and the other threads' reads are defined behaviour
 * (a gf_cancel_flag is only for the thread the signal lands on).
 */
typedef atomic_int gf_cancel_flag;

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "gf_cancel_flag must be lock-free");

/*
 * Sleep until monotonic time @t, looking at *@cancel (NULL: none) every
 * 50 ms at most, so that Ctrl-C ends the wait soon. Returns whether *@cancel
 * is set (then it may have returned before @t). Thread-safe.
 */
bool gf_cancel_sleep_until(const gf_cancel_flag *cancel, double t);

#endif
