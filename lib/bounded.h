/*
 * Work a library cannot bound, bounded anyway: a call on a thread of its own
 * that the caller stops waiting for at a deadline (the thread is left to
 * finish alone and clean up after itself), and name resolution built on it.
 */
#ifndef GF_BOUNDED_H
#define GF_BOUNDED_H

#include <netdb.h>
#include <signal.h>
#include <stddef.h>

#include "lib/cancel.h"
#include "lib/err.h"

/*
 * Run @fn(@arg) on a new detached thread (@stack bytes, 0: GF_THREAD_STACK) and wait
 * until it returns, @until (monotonic) passes or *@cancel is set. Returns 0
 * when it returned: what it wrote through @arg is the caller's. Otherwise
 * GF_E_NODE (kind timeout, or internal when cancelled) with "@what did not
 * finish by the deadline": the caller must never touch @arg again, and the
 * thread, when @fn returns, calls @abandon(@arg) (nullable), which frees
 * whatever @arg holds. When no thread can be started @fn runs on the
 * calling thread. Thread-safe.
 */
int gf_bounded_run(void (*fn)(void *arg), void (*abandon)(void *arg), void *arg, double until,
		   const gf_cancel_flag *cancel, size_t stack, const char *what,
		   struct gf_err *err);

/*
 * getaddrinfo() of @host and @port for @socktype by @deadline: a numeric
 * address at once, a name on a thread that is abandoned at the deadline or on
 * *@cancel (nullable). *@ret is the caller's (freeaddrinfo()). GF_E_NODE:
 * connect "'@host' does not resolve (...)", timeout or internal (cancelled).
 */
int gf_resolve(const char *host, int port, int socktype, double deadline,
	       const gf_cancel_flag *cancel, struct addrinfo **ret, struct gf_err *err);

/*
 * @host by @deadline as a numeric address ("10.0.0.1", "fe80::1") in
 * @buf, for libraries that would resolve it themselves without a bound.
 */
int gf_resolve_numeric(const char *host, int socktype, double deadline,
		       const gf_cancel_flag *cancel, char *buf, size_t size, struct gf_err *err);

#endif
