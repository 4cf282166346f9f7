/* Small helpers: time, parsing numbers, the invoking user. */
#ifndef GF_UTIL_H
#define GF_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/err.h"

/*
 * The stack of the threads gpufleet starts (fan-out workers, bounded calls)
 * by default: what the parsers accept fits in it (deep documents on a
 * worker: tests/unit/test_redfish.c, tests/fuzz/worker.h). ThreadSanitizer's
 * allocator hooks take far more stack per call, so its builds give more.
 */
#if defined(__SANITIZE_THREAD__)
#define GF_THREAD_STACK (1024 * 1024)
#else
#define GF_THREAD_STACK (256 * 1024)
#endif

/* The number of elements of array @a (an array, never a pointer). */
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Monotonic seconds, for deadlines. */
double gf_monotime(void);
/*
 * What is left of a monotonic @deadline: seconds (0 once it has passed, and
 * for a NaN), and whole milliseconds rounded up for poll() and libraries
 * (0 once passed, at most INT_MAX). One node's deadline is carried down to
 * every request as such a monotonic time.
 */
double gf_deadline_left(double deadline);
int gf_deadline_ms(double deadline);
/*
 * A condition variable whose timed waits count on gf_monotime()'s clock, and
 * monotonic time @t as the timespec pthread_cond_timedwait() takes for it.
 */
void gf_cond_init_monotonic(pthread_cond_t *c);
struct timespec gf_monotime_ts(double t);
/* Wall clock, epoch seconds with fractions. */
double gf_walltime(void);
/* Sleep until monotonic time @t (returns at once when past). */
void gf_sleep_until(double t);
/* Round epoch seconds to whole milliseconds (what the store keeps). */
double gf_time_ms(double t);
/*
 * ISO 8601 UTC into @buf (>= 32 bytes): "2026-11-29T12:00:00.123Z", and
 * without the milliseconds "2026-11-29T12:00:00Z". Both round @t to whole
 * milliseconds first (as gf_time_ms()), so .9996 s is the next second.
 * Thread-safe.
 */
void gf_time_format(double t, char *buf, size_t size);
void gf_time_format_secs(double t, char *buf, size_t size);

/*
 * ISO 8601 / RFC 3339 times as BMCs and people write them: "2026-11-29",
 * "2026-11-29T12:00", "2026-11-29 12:00:05.250", with "Z" or "+HH:MM" /
 * "-HHMM"; no zone means UTC. A day the month lacks is refused. Returns 0
 * and epoch seconds (with fractions) in *ret, or -1. Thread-safe.
 */
int gf_time_parse_iso8601(const char *s, double *ret);
/* gf_time_parse_iso8601() with a message: GF_E_USAGE "time '...' is not in the form ...". */
int gf_time_parse(const char *s, double *ret, struct gf_err *err);

/* Strict integer and number parsing: whole string, range checked. GF_E_USAGE otherwise. */
int gf_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret,
		  struct gf_err *err, const char *what);
int gf_parse_seconds(const char *s, double min, double max, double *ret, struct gf_err *err,
		     const char *what);
/*
 * A duration for every option that takes one (sel list --since, drift
 * --since, inventory prune --older-than): a non-negative number, fractions
 * allowed, with a unit s, m, h, d or w, or none for seconds ("90d", "1.5h",
 * "45"). Seconds in *ret; GF_E_USAGE otherwise. Thread-safe.
 */
int gf_parse_duration(const char *s, double *ret, struct gf_err *err);
/*
 * A point in time as every --since takes it (sel list, drift, events list):
 * a date or time (gf_time_parse_iso8601's forms) or a duration before @now
 * (gf_parse_duration's: "7d", "1.5h", "45"). Epoch seconds in *ret, or
 * GF_E_USAGE with "'S' is neither a date (...) nor a duration (...)", which a
 * verb prefixes with its option. Thread-safe.
 */
int gf_time_parse_since(const char *s, double now, double *ret, struct gf_err *err);

/* A 64-bit hash of @n bytes (FNV-1a, finalised), for hash tables and content addressing. */
uint64_t gf_hash64(const void *p, size_t n);

/*
 * Who runs this: $SUDO_USER when the process really runs under sudo (its
 * parent the set-user-ID sudo, SUDO_UID that user's), else the name of the
 * effective uid. Static storage.
 */
const char *gf_invoking_user(void);

/* Turn off core dumps and ptrace attach for this process, so secrets stay in it. */
void gf_harden_process(void);

/* mkdir -p of the directory part of @path with mode 0700. */
int gf_mkdir_parents(const char *path, struct gf_err *err);

#endif
