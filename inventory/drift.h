/*
 * Drift and diff: which nodes differ from their peers, from a baseline, or
 * from what they were. Pure functions over gf_sweep (no I/O), for one thread.
 * Results point into their inputs (sweeps, baseline): free them first.
 *
 * A node is compared only on what its sweep read: BMC components when the
 * firmware inventory was read (fw_read), host components when host facts
 * were (host_read). A component that a node lacks while its peers (or the
 * baseline) have it is drift with no actual version ("missing"); so is one
 * that only it has.
 */
#ifndef GF_DRIFT_H
#define GF_DRIFT_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory/sweep.h"
#include "lib/err.h"

/* ---- baselines ------------------------------------------------------------ */

/* What a baseline expects, per model; its file form is in inventory/codec.h. */
struct gf_baseline_rule {
	char *pattern;   /* a component key or a shell glob, lower case */
	bool glob;       /* has * ? or [ */
	char **versions; /* the accepted versions, at least one */
	size_t nversions;
	char *display; /* "1.2" or "1.2|1.3" */
};

struct gf_baseline_scope {
	char *model;                    /* NULL: every model */
	struct gf_baseline_rule *rules; /* in file order */
	size_t n;
};

struct gf_baseline {
	struct gf_baseline_scope *scopes; /* [0]: every model, then one per model */
	size_t n;
	char **ignore; /* key globs it does not judge (its "ignore"), any case */
	size_t nignore;
};

/* A baseline without rules (scope 0 only); gf_baseline_free() accepts NULL. */
struct gf_baseline *gf_baseline_new(void);
void gf_baseline_free(struct gf_baseline *b);
/* A new scope for the nodes of @model: valid until the next call on @b. */
struct gf_baseline_scope *gf_baseline_add_model(struct gf_baseline *b, const char *model);
/* Append a rule: @pattern (lower-cased) accepts the @n (>= 1) @versions (copied). */
void gf_baseline_add_rule(struct gf_baseline_scope *s, const char *pattern,
			  const char *const *versions, size_t n);

/* Append a key glob to @b's ignore list (copied). */
void gf_baseline_add_ignore(struct gf_baseline *b, const char *glob);
/* Does @b's ignore list name @key? */
bool gf_baseline_ignores(const struct gf_baseline *b, const char *key);

/*
 * The baseline that says "like node @n": every component it has with a
 * version, as an exact rule for every model. Owned by the caller.
 */
struct gf_baseline *gf_baseline_from_node(const struct gf_sweep_node *n);

/*
 * What @b expects of @key on a node of @model (nullable): the rules for that
 * model first, then the general ones; an exact key before patterns, patterns
 * in file order. NULL when nothing applies; else the accepted versions and a
 * display form ("1.2" or "1.2|1.3").
 */
const char *gf_baseline_expect(const struct gf_baseline *b, const char *model, const char *key,
			       const char *const **ret_versions, size_t *ret_n);

/* ---- filters ---------------------------------------------------------------- */

/* --component and --ignore: shell globs on component keys, matched without regard to case. */
struct gf_keyfilter {
	const char *const *include; /* none: every key */
	size_t ninclude;
	const char *const *ignore;
	size_t nignore;
};

bool gf_keyfilter_match(const struct gf_keyfilter *f, const char *key);

/* ---- drift ------------------------------------------------------------------ */

enum gf_drift_mode {
	GF_DRIFT_MAJORITY = 0, /* the most common version among a node's class */
	GF_DRIFT_BASELINE,     /* what a baseline expects */
	GF_DRIFT_SINCE,        /* what the node had before */
};

struct gf_drift_opts {
	enum gf_drift_mode mode;
	const char *const *classes; /* majority: per node of cur its class (NULL: one class) */
	const struct gf_baseline *baseline; /* baseline */
	const struct gf_sweep *before;      /* since: earlier rows, matched by node name */
	struct gf_keyfilter filter;
};

enum {
	GF_DRIFT_TIE = 1 << 0,     /* no single most common version: see tie */
	GF_DRIFT_MISSING = 1 << 1, /* the node lacks the component */
	GF_DRIFT_EXTRA = 1 << 2,   /* only the node has it (majority), or it is new (since) */
};

struct gf_drift_item {
	const char *component;
	const char *expected; /* NULL: absent, or a tie */
	const char *actual;   /* NULL: absent on the node, or reported without a version */
	const char *source;   /* where it was read (inventory/sweep.h) */
	unsigned flags;
	const char **tie; /* the tied versions, most common first (NULL: absent) */
	size_t ntie;
};

struct gf_drift_node {
	const struct gf_sweep_node *node;   /* in cur */
	const char *class;                  /* majority: its class ("" when none) */
	bool compared;                      /* false: its sweep read nothing to compare */
	size_t peers;                       /* majority: nodes compared in its class */
	const struct gf_sweep_node *before; /* since: the earlier row, NULL: none */
	struct gf_drift_item *items;
	size_t n;
};

struct gf_drift {
	struct gf_drift_node *nodes; /* one per node of cur, in its order */
	size_t n;
	size_t drifting; /* nodes with items */
	size_t items;
	size_t ties;       /* (class, component) pairs without a majority */
	size_t components; /* distinct components with items */
	size_t not_compared;
};

/*
 * The peers of a node for drift by model (the default): its hardware model,
 * or "(unknown model)" (a constant) when it has none. Points into @n.
 */
const char *gf_drift_model_class(const struct gf_sweep_node *n);
/* gf_drift_model_class() of every node of @sw, for gf_drift_opts.classes; caller frees the array. */
const char **gf_drift_model_classes(const struct gf_sweep *sw);

int gf_drift_compute(const struct gf_sweep *cur, const struct gf_drift_opts *o,
		     struct gf_drift **ret, struct gf_err *err);
void gf_drift_free(struct gf_drift *d);

/* ---- diff ------------------------------------------------------------------- */

enum gf_change {
	GF_CHANGE_ADDED = 0,
	GF_CHANGE_REMOVED,
	GF_CHANGE_CHANGED,
};

const char *gf_change_name(enum gf_change c); /* "added", "removed", "changed" */

struct gf_diff_comp {
	const char *component;
	const char *before, *after; /* NULL: absent (or no version) */
	const char *source;         /* where it was read (inventory/sweep.h) */
	enum gf_change change;
};

struct gf_diff_node {
	const char *node;
	enum gf_change change; /* the node itself: in B only, in A only, in both */
	const struct gf_sweep_node *a, *b;
	struct gf_diff_comp *v;
	size_t n;
};

struct gf_diff {
	struct gf_diff_node *nodes; /* only nodes with a change, in natural name order */
	size_t n;
	size_t added, removed, changed; /* nodes */
	size_t comps;                   /* component changes */
};

/*
 * What changed from @a to @b: nodes added and removed, and for nodes in
 * both, components added, removed or with another version (a status change
 * alone also counts). Components of a source that either sweep did not read
 * on that node are not compared.
 */
int gf_diff_compute(const struct gf_sweep *a, const struct gf_sweep *b,
		    const struct gf_keyfilter *f, struct gf_diff **ret, struct gf_err *err);
void gf_diff_free(struct gf_diff *d);

/*
 * The component changes from row @a (NULL: none, everything @b has is
 * added) to row @b of one node, into @out (zeroed by the caller; free
 * out->v). Sources that either row did not read are not compared.
 */
void gf_diff_rows(const struct gf_sweep_node *a, const struct gf_sweep_node *b,
		  const struct gf_keyfilter *f, struct gf_diff_node *out);

#endif
