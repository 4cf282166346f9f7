/* Drift (majority, baseline, since) and diff over sweeps in memory. */
#include "inventory/drift.h"

#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/normalize.h"
#include "inventory/store.h"
#include "lib/buf.h"
#include "lib/util.h"

/* ---- filters ------------------------------------------------------------ */

bool gf_keyfilter_match(const struct gf_keyfilter *f, const char *key)
{
	bool in = !f || f->ninclude == 0;

	if (!f)
		return true;
	for (size_t i = 0; i < f->ninclude && !in; i++)
		if (fnmatch(f->include[i], key, FNM_CASEFOLD) == 0)
			in = true;
	for (size_t i = 0; i < f->nignore && in; i++)
		if (fnmatch(f->ignore[i], key, FNM_CASEFOLD) == 0)
			in = false;
	return in;
}

/*
 * What read a component: the host facts, the BIOS settings or the firmware
 * inventory. A key alone (a baseline's rule) that starts with "bios." may be
 * either (a setting, or Dell's "bios.previous"): both reads must have been made.
 */
enum part { PART_FW, PART_BIOS, PART_HOST, PART_BIOS_OR_FW };

static enum part part_of(const struct gf_inv_comp *c)
{
	if (strcmp(c->source, GF_SOURCE_HOST) == 0)
		return PART_HOST;
	return gf_norm_comp_is_setting(c) ? PART_BIOS : PART_FW;
}

static enum part part_of_key(const char *key)
{
	return gf_norm_key_is_host(key)        ? PART_HOST
	       : strncmp(key, "bios.", 5) == 0 ? PART_BIOS_OR_FW
					       : PART_FW;
}

/* Did the node's sweep read the part that gives components of @p? */
static bool reads(const struct gf_sweep_node *n, enum part p)
{
	switch (p) {
	case PART_HOST: return n->host_read;
	case PART_BIOS: return n->bios_read;
	case PART_BIOS_OR_FW: return n->bios_read && n->fw_read;
	default: return n->fw_read;
	}
}

static bool compared(const struct gf_sweep_node *n)
{
	return n->fw_read || n->host_read || n->bios_read;
}

static bool same_version(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return a == b || strcmp(a, b) == 0;
}

/* ---- baselines ------------------------------------------------------------ */

struct gf_baseline *gf_baseline_new(void)
{
	struct gf_baseline *b = gf_xcalloc(1, sizeof(*b));

	b->scopes = gf_xcalloc(1, sizeof(*b->scopes));
	b->n = 1;
	return b;
}

void gf_baseline_free(struct gf_baseline *b)
{
	if (!b)
		return;
	for (size_t s = 0; s < b->n; s++) {
		for (size_t r = 0; r < b->scopes[s].n; r++) {
			struct gf_baseline_rule *rule = &b->scopes[s].rules[r];

			free(rule->pattern);
			for (size_t v = 0; v < rule->nversions; v++)
				free(rule->versions[v]);
			free(rule->versions);
			free(rule->display);
		}
		free(b->scopes[s].rules);
		free(b->scopes[s].model);
	}
	free(b->scopes);
	for (size_t i = 0; i < b->nignore; i++)
		free(b->ignore[i]);
	free(b->ignore);
	free(b);
}

void gf_baseline_add_ignore(struct gf_baseline *b, const char *glob)
{
	b->ignore = gf_xrealloc(b->ignore, (b->nignore + 1) * sizeof(*b->ignore));
	b->ignore[b->nignore++] = gf_xstrdup(glob);
}

bool gf_baseline_ignores(const struct gf_baseline *b, const char *key)
{
	for (size_t i = 0; b && i < b->nignore; i++)
		if (fnmatch(b->ignore[i], key, FNM_CASEFOLD) == 0)
			return true;
	return false;
}

struct gf_baseline_scope *gf_baseline_add_model(struct gf_baseline *b, const char *model)
{
	struct gf_baseline_scope *s;

	b->scopes = gf_xrealloc(b->scopes, (b->n + 1) * sizeof(*b->scopes));
	s = &b->scopes[b->n++];
	memset(s, 0, sizeof(*s));
	s->model = gf_xstrdup(model);
	return s;
}

void gf_baseline_add_rule(struct gf_baseline_scope *s, const char *pattern,
			  const char *const *versions, size_t n)
{
	struct gf_baseline_rule *r;
	struct gf_buf disp = GF_BUF_INIT;

	s->rules = gf_xrealloc(s->rules, (s->n + 1) * sizeof(*s->rules));
	r = &s->rules[s->n++];
	memset(r, 0, sizeof(*r));
	r->pattern = gf_xstrdup(pattern);
	for (char *p = r->pattern; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	r->glob = strpbrk(pattern, "*?[") != NULL;
	r->versions = gf_xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		r->versions[r->nversions++] = gf_xstrdup(versions[i]);
		gf_buf_addf(&disp, "%s%s", i ? "|" : "", versions[i]);
	}
	r->display = gf_buf_detach(&disp);
}

struct gf_baseline *gf_baseline_from_node(const struct gf_sweep_node *n)
{
	struct gf_baseline *b = gf_baseline_new();

	for (size_t i = 0; i < n->set->n; i++)
		if (n->set->v[i].version)
			gf_baseline_add_rule(&b->scopes[0], n->set->v[i].key, &n->set->v[i].version,
					     1);
	return b;
}

static const struct gf_baseline_rule *scope_find(const struct gf_baseline_scope *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (!s->rules[i].glob && strcmp(s->rules[i].pattern, key) == 0)
			return &s->rules[i];
	for (size_t i = 0; i < s->n; i++)
		if (s->rules[i].glob && fnmatch(s->rules[i].pattern, key, 0) == 0)
			return &s->rules[i];
	return NULL;
}

static const struct gf_baseline_rule *bl_find(const struct gf_baseline *b, const char *model,
					      const char *key)
{
	const struct gf_baseline_rule *r = NULL;

	for (size_t s = 1; s < b->n && model && !r; s++)
		if (strcmp(b->scopes[s].model, model) == 0)
			r = scope_find(&b->scopes[s], key);
	if (!r)
		r = scope_find(&b->scopes[0], key);
	return r;
}

const char *gf_baseline_expect(const struct gf_baseline *b, const char *model, const char *key,
			       const char *const **ret_versions, size_t *ret_n)
{
	const struct gf_baseline_rule *r = bl_find(b, model, key);

	if (!r)
		return NULL;
	if (ret_versions)
		*ret_versions = (const char *const *)r->versions;
	if (ret_n)
		*ret_n = r->nversions;
	return r->display;
}

/* ---- items ----------------------------------------------------------------- */

static struct gf_drift_item *add_item(struct gf_drift_node *dn)
{
	struct gf_drift_item *it;

	dn->items = gf_xrealloc(dn->items, (dn->n + 1) * sizeof(*dn->items));
	it = &dn->items[dn->n++];
	memset(it, 0, sizeof(*it));
	return it;
}

void gf_drift_free(struct gf_drift *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		for (size_t k = 0; k < d->nodes[i].n; k++)
			free(d->nodes[i].items[k].tie);
		free(d->nodes[i].items);
	}
	free(d->nodes);
	free(d);
}

/* ---- majority ---------------------------------------------------------------- */

/* Stand-ins in value lists: the component is absent; it has no version. */
static const char absent_mark[] = "(absent)";
static const char nover_mark[] = "(no version)";

static const char *value_of(const struct gf_inv_comp *c)
{
	if (!c)
		return absent_mark;
	return c->version ? c->version : nover_mark;
}

static const char *shown(const char *v)
{
	return v == absent_mark || v == nover_mark ? NULL : v;
}

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (const char *const *)a,
		  y = (uintptr_t) * (const char *const *)b;

	return x < y ? -1 : x > y;
}

struct tally {
	const char *value;
	size_t count;
};

static int tally_cmp(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;
	const char *sx = shown(x->value), *sy = shown(y->value);

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (!sx || !sy)
		return sx ? -1 : sy ? 1 : 0;
	return strcmp(sx, sy);
}

static int cstr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * One class at a time. Keys and versions are pooled strings of the sweep, so
 * a pointer stands for its string: the counting compares pointers only. The
 * members' component lists are laid out once as rows over the class's keys
 * (one row per distinct list: nodes alike share one).
 */
struct class_ctx {
	const struct gf_sweep *cur;
	struct gf_drift *d;
	const struct gf_keyfilter *filter;
	size_t *members; /* indices into cur->nodes, compared ones only */
	size_t nmembers;
	size_t *row_of;                 /* per member: its row */
	const struct gf_inv_set **sets; /* the distinct lists, sorted by address */
	size_t nsets;
	const char **keys; /* the class's keys, sorted */
	size_t nkeys;
	const struct gf_inv_comp **rows; /* nsets x nkeys, NULL: absent */
	const struct gf_inv_comp **any;  /* per key: some member's component */
	/* scratch, reused for every key */
	const char **vals;
	struct tally *tally;
};

/* An open-addressing map from a pooled key to its column. */
struct keymap {
	const char **k;
	size_t *v;
	size_t cap;
};

static size_t ptr_hash(const void *p, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ULL;

	return (size_t)(h >> 17) & (cap - 1);
}

/* The slot of @key; *found tells whether it holds @key already. */
static size_t keymap_slot(const struct keymap *m, const char *key, bool *found)
{
	size_t at = ptr_hash(key, m->cap);

	while (m->k[at] && m->k[at] != key)
		at = (at + 1) & (m->cap - 1);
	*found = m->k[at] == key;
	return at;
}

static void class_layout(struct class_ctx *c)
{
	struct keymap m = {0};
	size_t total = 0, nk = 0;

	/* The distinct lists, and which one each member has. */
	c->sets = gf_xcalloc(c->nmembers ? c->nmembers : 1, sizeof(*c->sets));
	for (size_t i = 0; i < c->nmembers; i++)
		c->sets[i] = c->cur->nodes[c->members[i]].set;
	gf_sort(c->sets, c->nmembers, sizeof(*c->sets), ptr_cmp);
	c->nsets = 0;
	for (size_t i = 0; i < c->nmembers; i++)
		if (c->nsets == 0 || c->sets[c->nsets - 1] != c->sets[i])
			c->sets[c->nsets++] = c->sets[i];
	c->row_of = gf_xcalloc(c->nmembers ? c->nmembers : 1, sizeof(*c->row_of));
	for (size_t i = 0; i < c->nmembers; i++) {
		const struct gf_inv_set *want = c->cur->nodes[c->members[i]].set;
		const struct gf_inv_set **at = bsearch(&want, c->sets, c->nsets, sizeof(*c->sets),
						       ptr_cmp);

		c->row_of[i] = (size_t)(at - c->sets);
	}

	/* The keys (that the filter lets through), each once. */
	for (size_t i = 0; i < c->nsets; i++)
		total += c->sets[i]->n;
	m.cap = 64;
	while (m.cap < total * 2)
		m.cap *= 2;
	m.k = gf_xcalloc(m.cap, sizeof(*m.k));
	m.v = gf_xcalloc(m.cap, sizeof(*m.v));
	c->keys = gf_xcalloc(total ? total : 1, sizeof(*c->keys));
	for (size_t i = 0; i < c->nsets; i++)
		for (size_t k = 0; k < c->sets[i]->n; k++) {
			const char *key = c->sets[i]->v[k].key;
			bool found;
			size_t at = keymap_slot(&m, key, &found);

			if (found)
				continue;
			m.k[at] = key;
			m.v[at] = gf_keyfilter_match(c->filter, key) ? 0 : SIZE_MAX;
			if (m.v[at] == 0)
				c->keys[nk++] = key;
		}
	if (nk)
		gf_sort(c->keys, nk, sizeof(*c->keys), cstr_cmp);
	for (size_t k = 0; k < nk; k++) {
		bool found;

		m.v[keymap_slot(&m, c->keys[k], &found)] = k;
	}
	c->nkeys = nk;

	/* The rows. */
	c->rows = gf_xcalloc(c->nsets * nk + 1, sizeof(*c->rows));
	c->any = gf_xcalloc(nk + 1, sizeof(*c->any));
	for (size_t i = 0; i < c->nsets; i++)
		for (size_t k = 0; k < c->sets[i]->n; k++) {
			const struct gf_inv_comp *comp = &c->sets[i]->v[k];
			bool found;
			size_t col = m.v[keymap_slot(&m, comp->key, &found)];

			if (col == SIZE_MAX)
				continue;
			c->rows[i * nk + col] = comp;
			if (!c->any[col])
				c->any[col] = comp;
		}
	free(m.k);
	free(m.v);
}

static void class_release(struct class_ctx *c)
{
	free(c->sets);
	free(c->row_of);
	free(c->keys);
	free(c->rows);
	free(c->any);
	c->sets = NULL;
	c->row_of = NULL;
	c->keys = NULL;
	c->rows = NULL;
	c->any = NULL;
}

static void majority_key(struct class_ctx *c, size_t col)
{
	const struct gf_sweep *cur = c->cur;
	const struct gf_inv_comp *any = c->any[col];
	size_t nvals = 0, ntally = 0;
	enum part part;
	bool tie;
	const char *expected;

	/* Which part gives this key here: a host key is compared among nodes that read hosts. */
	part = part_of(any);
	for (size_t m = 0; m < c->nmembers; m++) {
		const struct gf_sweep_node *n = &cur->nodes[c->members[m]];

		if (reads(n, part))
			c->vals[nvals++] = value_of(c->rows[c->row_of[m] * c->nkeys + col]);
	}
	if (nvals == 0)
		return;
	/*
	 * A component has a handful of versions across a class: count them in a
	 * short list, and sort only when there turn out to be many.
	 */
	for (size_t i = 0; i < nvals && ntally <= 16; i++) {
		size_t t = 0;

		while (t < ntally && c->tally[t].value != c->vals[i])
			t++;
		if (t == ntally) {
			c->tally[ntally].value = c->vals[i];
			c->tally[ntally].count = 0;
			ntally++;
		}
		c->tally[t].count++;
	}
	if (ntally > 16) {
		ntally = 0;
		gf_sort(c->vals, nvals, sizeof(*c->vals), ptr_cmp);
		for (size_t i = 0; i < nvals; i++) {
			if (ntally && c->tally[ntally - 1].value == c->vals[i]) {
				c->tally[ntally - 1].count++;
			} else {
				c->tally[ntally].value = c->vals[i];
				c->tally[ntally].count = 1;
				ntally++;
			}
		}
	}
	if (ntally == 1)
		return; /* everyone agrees */
	gf_sort(c->tally, ntally, sizeof(*c->tally), tally_cmp);
	tie = c->tally[0].count == c->tally[1].count;
	expected = tie ? NULL : c->tally[0].value;
	if (tie)
		c->d->ties++;

	for (size_t m = 0; m < c->nmembers; m++) {
		const struct gf_sweep_node *n = &cur->nodes[c->members[m]];
		struct gf_drift_node *dn = &c->d->nodes[c->members[m]];
		const struct gf_inv_comp *comp;
		const char *v;
		struct gf_drift_item *it;

		if (!reads(n, part))
			continue;
		comp = c->rows[c->row_of[m] * c->nkeys + col];
		v = value_of(comp);
		if (!tie && v == expected)
			continue;
		it = add_item(dn);
		it->component = gf_norm_comp_shown(comp ? comp : any);
		it->expected = tie ? NULL : shown(expected);
		it->actual = comp ? comp->version : NULL;
		it->source = comp ? comp->source : any->source;
		if (!comp)
			it->flags |= GF_DRIFT_MISSING;
		if (!tie && expected == absent_mark)
			it->flags |= GF_DRIFT_EXTRA;
		if (tie) {
			size_t k = 0;

			it->flags |= GF_DRIFT_TIE;
			while (k < ntally && c->tally[k].count == c->tally[0].count)
				k++;
			it->tie = gf_xcalloc(k, sizeof(*it->tie));
			for (size_t t = 0; t < k; t++)
				it->tie[t] = shown(c->tally[t].value);
			it->ntie = k;
		}
	}
}

struct by_class {
	const char *class;
	size_t index;
};

static int by_class_cmp(const void *a, const void *b)
{
	const struct by_class *x = a, *y = b;
	int c = strcmp(x->class, y->class);

	if (c)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

static void drift_majority(const struct gf_sweep *cur, const struct gf_drift_opts *o,
			   struct gf_drift *d)
{
	struct by_class *bc = gf_xcalloc(cur->n ? cur->n : 1, sizeof(*bc));
	struct class_ctx c = {.cur = cur, .d = d, .filter = &o->filter};
	size_t nbc = 0;

	for (size_t i = 0; i < cur->n; i++) {
		const char *cls = o->classes && o->classes[i] ? o->classes[i] : "";

		d->nodes[i].class = cls;
		if (!d->nodes[i].compared)
			continue;
		bc[nbc].class = cls;
		bc[nbc].index = i;
		nbc++;
	}
	gf_sort(bc, nbc, sizeof(*bc), by_class_cmp);
	c.members = gf_xcalloc(nbc ? nbc : 1, sizeof(*c.members));
	c.vals = gf_xcalloc(nbc ? nbc : 1, sizeof(*c.vals));
	c.tally = gf_xcalloc(nbc ? nbc : 1, sizeof(*c.tally));
	for (size_t start = 0; start < nbc;) {
		size_t end = start;

		while (end < nbc && strcmp(bc[end].class, bc[start].class) == 0)
			end++;
		c.nmembers = 0;
		for (size_t k = start; k < end; k++)
			c.members[c.nmembers++] = bc[k].index;
		for (size_t k = start; k < end; k++)
			d->nodes[bc[k].index].peers = c.nmembers;
		class_layout(&c);
		/* Items go to each node in key order: the columns are sorted. */
		for (size_t k = 0; k < c.nkeys; k++)
			majority_key(&c, k);
		class_release(&c);
		start = end;
	}
	free(c.members);
	free(c.vals);
	free(c.tally);
	free(bc);
}

/* ---- baseline ----------------------------------------------------------------- */

static int item_cmp(const void *a, const void *b)
{
	const struct gf_drift_item *x = a, *y = b;

	return strcmp(x->component, y->component);
}

static bool accepted(const char *actual, const char *const *versions, size_t n)
{
	for (size_t i = 0; actual && i < n; i++)
		if (strcmp(actual, versions[i]) == 0)
			return true;
	return false;
}

static void baseline_missing(const struct gf_sweep_node *n, const struct gf_baseline_scope *s,
			     const struct gf_baseline *b, const struct gf_keyfilter *f,
			     struct gf_drift_node *dn, bool model_scope)
{
	for (size_t r = 0; r < s->n; r++) {
		const struct gf_baseline_rule *rule = &s->rules[r];
		enum part part = part_of_key(rule->pattern);
		struct gf_drift_item *it;

		if (rule->glob || !gf_keyfilter_match(f, rule->pattern) || !reads(n, part) ||
		    gf_baseline_ignores(b, rule->pattern) || gf_inv_set_find(n->set, rule->pattern))
			continue;
		/* A model's own rule for the key wins over the general one: report it once. */
		if (!model_scope && bl_find(b, n->model, rule->pattern) != rule)
			continue;
		it = add_item(dn);
		it->component = rule->pattern;
		it->expected = rule->display;
		/* Missing: it would have come from the node's BMC, or its host. */
		it->source = part == PART_HOST ? GF_SOURCE_HOST
			     : n->protocol     ? n->protocol
					       : "unknown";
		it->flags = GF_DRIFT_MISSING;
	}
}

static void drift_baseline(const struct gf_sweep *cur, const struct gf_drift_opts *o,
			   struct gf_drift *d)
{
	const struct gf_baseline *b = o->baseline;

	for (size_t i = 0; i < cur->n; i++) {
		const struct gf_sweep_node *n = &cur->nodes[i];
		struct gf_drift_node *dn = &d->nodes[i];

		if (!dn->compared)
			continue;
		for (size_t k = 0; k < n->set->n; k++) {
			const struct gf_inv_comp *c = &n->set->v[k];
			const struct gf_baseline_rule *rule;
			struct gf_drift_item *it;

			if (!gf_keyfilter_match(&o->filter, c->key) || !reads(n, part_of(c)) ||
			    gf_baseline_ignores(b, c->key))
				continue;
			rule = bl_find(b, n->model, c->key);
			if (!rule || accepted(c->version, (const char *const *)rule->versions,
					      rule->nversions))
				continue;
			it = add_item(dn);
			it->component = gf_norm_comp_shown(c);
			it->expected = rule->display;
			it->actual = c->version;
			it->source = c->source;
		}
		for (size_t s = 1; s < b->n; s++)
			if (n->model && strcmp(b->scopes[s].model, n->model) == 0)
				baseline_missing(n, &b->scopes[s], b, &o->filter, dn, true);
		baseline_missing(n, &b->scopes[0], b, &o->filter, dn, false);
		if (dn->n > 1)
			gf_sort(dn->items, dn->n, sizeof(*dn->items), item_cmp);
	}
}

/* ---- comparing two rows of a node (diff, since) ------------------------------- */

typedef void (*change_fn)(void *ud, const char *key, const struct gf_inv_comp *a,
			  const struct gf_inv_comp *b);

static void compare_rows(const struct gf_sweep_node *a, const struct gf_sweep_node *b,
			 const struct gf_keyfilter *f, change_fn fn, void *ud)
{
	size_t i = 0, j = 0;

	while (i < a->set->n || j < b->set->n) {
		const struct gf_inv_comp *x = i < a->set->n ? &a->set->v[i] : NULL;
		const struct gf_inv_comp *y = j < b->set->n ? &b->set->v[j] : NULL;
		int c = !x ? 1 : !y ? -1 : strcmp(x->key, y->key);
		const struct gf_inv_comp *any;

		if (c < 0) {
			y = NULL;
			i++;
		} else if (c > 0) {
			x = NULL;
			j++;
		} else {
			i++;
			j++;
		}
		any = x ? x : y;
		if (!gf_keyfilter_match(f, any->key))
			continue;
		/* Only what both rows read can be told apart from what one failed to read. */
		if (!reads(a, part_of(any)) || !reads(b, part_of(any)))
			continue;
		if (x && y && same_version(x->version, y->version))
			continue;
		fn(ud, any->key, x, y);
	}
}

static void since_change(void *ud, const char *key, const struct gf_inv_comp *a,
			 const struct gf_inv_comp *b)
{
	struct gf_drift_item *it = add_item(ud);

	(void)key;
	it->component = gf_norm_comp_shown(b ? b : a);
	it->expected = a ? a->version : NULL;
	it->actual = b ? b->version : NULL;
	it->source = b ? b->source : a->source;
	if (!a)
		it->flags |= GF_DRIFT_EXTRA;
	if (!b)
		it->flags |= GF_DRIFT_MISSING;
}

/* The rows of @sw as named items, for ordering and finding them by node name. */
static struct gf_names rows_by_name(const struct gf_sweep *sw)
{
	return (struct gf_names){sw->nodes, sw->n, sizeof(*sw->nodes),
				 offsetof(struct gf_sweep_node, node)};
}

static void drift_since(const struct gf_sweep *cur, const struct gf_drift_opts *o,
			struct gf_drift *d)
{
	struct gf_names before = rows_by_name(o->before);
	size_t *idx = gf_node_name_order(&before);

	for (size_t i = 0; i < cur->n; i++) {
		struct gf_drift_node *dn = &d->nodes[i];
		size_t at;

		if (!dn->compared)
			continue;
		at = gf_node_name_find(&before, idx, cur->nodes[i].node);
		dn->before = at == GF_NAME_NONE ? NULL : &o->before->nodes[at];
		if (dn->before)
			compare_rows(dn->before, &cur->nodes[i], &o->filter, since_change, dn);
	}
	free(idx);
}

/* ---- drift ------------------------------------------------------------------- */

const char *gf_drift_model_class(const struct gf_sweep_node *n)
{
	return n->model ? n->model : "(unknown model)";
}

const char **gf_drift_model_classes(const struct gf_sweep *sw)
{
	const char **classes = gf_xcalloc(sw->n ? sw->n : 1, sizeof(*classes));

	for (size_t i = 0; i < sw->n; i++)
		classes[i] = gf_drift_model_class(&sw->nodes[i]);
	return classes;
}

int gf_drift_compute(const struct gf_sweep *cur, const struct gf_drift_opts *o,
		     struct gf_drift **ret, struct gf_err *err)
{
	struct gf_drift *d;

	if (o->mode == GF_DRIFT_BASELINE && !o->baseline)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "a baseline comparison needs a baseline");
	if (o->mode == GF_DRIFT_SINCE && !o->before)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "a since comparison needs earlier rows");
	d = gf_xcalloc(1, sizeof(*d));
	d->nodes = gf_xcalloc(cur->n ? cur->n : 1, sizeof(*d->nodes));
	d->n = cur->n;
	for (size_t i = 0; i < cur->n; i++) {
		d->nodes[i].node = &cur->nodes[i];
		d->nodes[i].class = "";
		d->nodes[i].compared = compared(&cur->nodes[i]);
		if (!d->nodes[i].compared)
			d->not_compared++;
	}
	switch (o->mode) {
	case GF_DRIFT_BASELINE: drift_baseline(cur, o, d); break;
	case GF_DRIFT_SINCE: drift_since(cur, o, d); break;
	default: drift_majority(cur, o, d); break;
	}
	{
		/* Totals: distinct components by name across all items. */
		const char **names = NULL;
		size_t nn = 0;

		for (size_t i = 0; i < d->n; i++) {
			if (d->nodes[i].n)
				d->drifting++;
			d->items += d->nodes[i].n;
		}
		names = gf_xcalloc(d->items ? d->items : 1, sizeof(*names));
		for (size_t i = 0; i < d->n; i++)
			for (size_t k = 0; k < d->nodes[i].n; k++)
				names[nn++] = d->nodes[i].items[k].component;
		if (nn)
			gf_sort(names, nn, sizeof(*names), cstr_cmp);
		for (size_t k = 0; k < nn; k++)
			if (k == 0 || strcmp(names[k], names[k - 1]) != 0)
				d->components++;
		free(names);
	}
	*ret = d;
	return 0;
}

/* ---- diff -------------------------------------------------------------------- */

const char *gf_change_name(enum gf_change c)
{
	switch (c) {
	case GF_CHANGE_ADDED: return "added";
	case GF_CHANGE_REMOVED: return "removed";
	default: return "changed";
	}
}

static void diff_change(void *ud, const char *key, const struct gf_inv_comp *a,
			const struct gf_inv_comp *b)
{
	struct gf_diff_node *dn = ud;
	struct gf_diff_comp *c;

	dn->v = gf_xrealloc(dn->v, (dn->n + 1) * sizeof(*dn->v));
	c = &dn->v[dn->n++];
	c->component = key;
	c->before = a ? a->version : NULL;
	c->after = b ? b->version : NULL;
	c->source = b ? b->source : a->source;
	c->change = !a ? GF_CHANGE_ADDED : !b ? GF_CHANGE_REMOVED : GF_CHANGE_CHANGED;
}

static struct gf_diff_node *diff_add(struct gf_diff *d, const char *node, enum gf_change ch)
{
	struct gf_diff_node *dn;

	d->nodes = gf_xrealloc(d->nodes, (d->n + 1) * sizeof(*d->nodes));
	dn = &d->nodes[d->n++];
	memset(dn, 0, sizeof(*dn));
	dn->node = node;
	dn->change = ch;
	return dn;
}

int gf_diff_compute(const struct gf_sweep *a, const struct gf_sweep *b,
		    const struct gf_keyfilter *f, struct gf_diff **ret, struct gf_err *err)
{
	struct gf_diff *d = gf_xcalloc(1, sizeof(*d));
	struct gf_names na = rows_by_name(a), nb = rows_by_name(b);
	size_t *ia = gf_node_name_order(&na), *ib = gf_node_name_order(&nb);
	size_t i = 0, j = 0;

	(void)err;
	while (i < a->n || j < b->n) {
		const struct gf_sweep_node *x = i < a->n ? &a->nodes[ia[i]] : NULL;
		const struct gf_sweep_node *y = j < b->n ? &b->nodes[ib[j]] : NULL;
		int c = !x ? 1 : !y ? -1 : gf_node_name_cmp(x->node, y->node);
		struct gf_diff_node *dn;

		if (c < 0) {
			dn = diff_add(d, x->node, GF_CHANGE_REMOVED);
			dn->a = x;
			d->removed++;
			i++;
			continue;
		}
		if (c > 0) {
			dn = diff_add(d, y->node, GF_CHANGE_ADDED);
			dn->b = y;
			d->added++;
			j++;
			continue;
		}
		dn = diff_add(d, y->node, GF_CHANGE_CHANGED);
		dn->a = x;
		dn->b = y;
		compare_rows(x, y, f, diff_change, dn);
		if (dn->n == 0 && x->status == y->status) {
			d->n--; /* nothing changed */
		} else {
			d->changed++;
			d->comps += dn->n;
		}
		i++;
		j++;
	}
	free(ia);
	free(ib);
	*ret = d;
	return 0;
}

void gf_diff_rows(const struct gf_sweep_node *a, const struct gf_sweep_node *b,
		  const struct gf_keyfilter *f, struct gf_diff_node *out)
{
	out->node = b->node;
	out->a = a;
	out->b = b;
	if (a) {
		out->change = GF_CHANGE_CHANGED;
		compare_rows(a, b, f, diff_change, out);
		return;
	}
	out->change = GF_CHANGE_ADDED;
	for (size_t k = 0; k < b->set->n; k++) {
		const struct gf_inv_comp *c = &b->set->v[k];

		if (gf_keyfilter_match(f, c->key) && reads(b, part_of(c)))
			diff_change(out, c->key, NULL, c);
	}
}

void gf_diff_free(struct gf_diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->nodes[i].v);
	free(d->nodes);
	free(d);
}
