/*
 * Console logs: what a node's serial console printed, one file per node,
 * DIR/NODE.log, a timestamp before each line ("2026-12-02T04:30:00.123Z "),
 * control bytes escaped as gf_term_escape() shows them (a tab stays), CR
 * before LF dropped; rotated at a size cap (NODE.log.1 the newest of @keep
 * older files), and a total cap over many logs. Marker lines ("-- ...")
 * say what the logger did. Protocol-free: the caller feeds the bytes.
 */
#ifndef GF_CONLOG_H
#define GF_CONLOG_H

#include <stddef.h>

#include "lib/err.h"

struct gf_conlog_opts {
	unsigned long long max_size; /* bytes of NODE.log before it rotates; 0: 10 MiB */
	unsigned keep;               /* rotated files kept, NODE.log.1..keep; 0: none */
};

struct gf_conlog;

/* Open (append to) @dir/@node.log; GF_E_IO or GF_E_USAGE (a name with '/'). */
int gf_conlog_open(const char *dir, const char *node, const struct gf_conlog_opts *o,
		   struct gf_conlog **ret, struct gf_err *err);
/* Flush a partial line, close; NULL: nothing. */
void gf_conlog_close(struct gf_conlog *l);

/* Bytes the console sent at @now (epoch seconds): whole lines written, the rest held. */
int gf_conlog_data(struct gf_conlog *l, const void *buf, size_t n, double now, struct gf_err *err);
/* A line of the logger's own: "TIME -- @text" (a partial line is ended first). */
int gf_conlog_marker(struct gf_conlog *l, double now, const char *text, struct gf_err *err);

/* Bytes of the console (before escaping) fed so far. */
unsigned long long gf_conlog_fed(const struct gf_conlog *l);
/* Bytes its files take on disk now: NODE.log and the rotated ones. */
unsigned long long gf_conlog_disk(const struct gf_conlog *l);

/*
 * Keep @v[0..n-1]'s files under @cap bytes together: the oldest rotated
 * file of the log that takes most is removed (a log with none is rotated
 * first), until they fit or only current files are left.
 */
void gf_conlog_total_cap(struct gf_conlog *const *v, size_t n, unsigned long long cap);

/*
 * Read node @node's log in @dir, oldest line first (NODE.log.K ... .1, then
 * NODE.log), calling @fn with the time of each line (NAN when it has none)
 * and the text after it, without the newline. A missing log is no line.
 * Returns 0, GF_E_IO, or what @fn returned when it was not 0 (it stops).
 */
int gf_conlog_read(const char *dir, const char *node,
		   int (*fn)(void *ud, double t, const char *text), void *ud, struct gf_err *err);

/*
 * A size as options write it: bytes, or with K, M, G (KiB, MiB, GiB; "10M").
 * -1 when @s is not one, or not in [@min, @max].
 */
int gf_conlog_parse_size(const char *s, unsigned long long min, unsigned long long max,
			 unsigned long long *ret);

#endif
