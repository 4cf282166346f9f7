/* Small helpers: time, parsing numbers, the invoking user. */
#ifndef GF_UTIL_H
#define GF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "lib/err.h"

/* Monotonic seconds, for deadlines. */
double gf_monotime(void);
/* Wall clock, epoch seconds with fractions. */
double gf_walltime(void);
/* Sleep until monotonic time @t (returns at once when past). */
void gf_sleep_until(double t);
/* "2026-11-29T12:00:00.123Z" (@frac: with milliseconds) into @buf (>= 32 bytes). */
void gf_iso8601(double t, bool frac, char *buf, size_t size);

/*
 * ISO 8601 / RFC 3339 times as BMCs and people write them: "2026-11-29",
 * "2026-11-29T12:00", "2026-11-29 12:00:05.250", with "Z" or "+HH:MM" /
 * "-HHMM"; no zone means UTC. A day the month lacks is refused. Returns 0
 * and epoch seconds (with fractions) in *ret, or -1. Thread-safe.
 */
int gf_time_parse_iso8601(const char *s, double *ret);

/* Strict integer and number parsing: whole string, range checked. GF_E_USAGE otherwise. */
int gf_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret,
		  struct gf_err *err, const char *what);
int gf_parse_seconds(const char *s, double min, double max, double *ret, struct gf_err *err,
		     const char *what);

/* Who runs this: $SUDO_USER (as "root via sudo by X" is not needed: just X) or the login name. Static storage. */
const char *gf_invoking_user(void);

/* Turn off core dumps and ptrace attach for this process, so secrets stay in it. */
void gf_harden_process(void);

/* mkdir -p of the directory part of @path with mode 0700. */
int gf_mkdir_parents(const char *path, struct gf_err *err);

#endif
