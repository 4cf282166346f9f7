/* Node sets in ClusterShell/pdsh syntax: expansion and collapse. */
#ifndef GF_NODESET_H
#define GF_NODESET_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"

/* An ordered set of unique names. */
struct gf_nodeset {
	char **names; /* owned strings, in first-seen order */
	size_t n;
	size_t cap;
};

#define GF_NODESET_INIT    \
	{                  \
		NULL, 0, 0 \
	}

void gf_nodeset_init(struct gf_nodeset *s);
void gf_nodeset_release(struct gf_nodeset *s);
/* Add a copy of @name unless present. Returns true if it was added. */
bool gf_nodeset_add(struct gf_nodeset *s, const char *name);
bool gf_nodeset_contains(const struct gf_nodeset *s, const char *name);

/*
 * Resolve "@group" into the set @out (which is initialised and empty);
 * @group is the name without the '@'.
 * Returns 0, or a negative GF_E_* with @err filled (unknown group is GF_E_USAGE).
 */
typedef int (*gf_group_resolver)(void *ud, const char *group, struct gf_nodeset *out,
				 struct gf_err *err);

/*
 * Expand @expr: terms separated by ',' (union), '!' (difference), '&'
 * (intersection) and '^' (symmetric difference), evaluated left to right; a
 * term is a name pattern with any number of bracket groups "gpu[001-128]", "r[1-2]n[01-04,7]" (zero padding
 * kept, width of the lower bound), or "@group" when @resolve is not NULL.
 * Whitespace around operators is ignored. A leading operator applies to the
 * empty set. The result is in @ret (initialised by this call) only on success;
 * a syntax error is GF_E_USAGE with the position in the message.
 * Expansion is capped at GF_NODESET_MAX names. Thread-safe.
 */
#define GF_NODESET_MAX 1000000
int gf_nodeset_parse(const char *expr, gf_group_resolver resolve, void *ud, struct gf_nodeset *ret,
		     struct gf_err *err);

/*
 * Fold @names into range form as ClusterShell's "nodeset -f" does, e.g.
 * "gpu[001-004,007],login1" or "r[1-2]n[01-03]": every run of digits is a
 * dimension; names with the same text around their digit runs (and the same
 * digit width in each; numbers without a leading zero fold whatever their
 * width, as "gpu[9-10]") fold together over every dimension, the largest
 * blocks first. Order: by the first name of each such pattern in @names,
 * then ClusterShell's order inside a pattern, numbers ascending inside a
 * bracket. The result expands back to exactly @names (duplicates once).
 * Returns a string the caller frees. Thread-safe.
 */
char *gf_nodeset_collapse(const char *const *names, size_t n);

#endif
