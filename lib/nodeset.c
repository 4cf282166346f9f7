/* Node sets: ClusterShell/pdsh-style expressions, expanded and collapsed. */
#include "lib/nodeset.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/util.h"

/* Longer than any host name (DNS allows 253); also bounds memory at the cap. */
#define NAME_MAX_LEN 255
/* Below 10^18, so a bound, a step and their differences fit in 64 bits. */
#define NUM_MAX_DIGITS 18
/* How much of the expression an error message quotes. */
#define QUOTE_MAX 200
#define NOT_FOUND SIZE_MAX

typedef unsigned long long u64;

/* ---- the set itself ---- */

void gf_nodeset_init(struct gf_nodeset *s)
{
	s->names = NULL;
	s->n = 0;
	s->cap = 0;
}

void gf_nodeset_release(struct gf_nodeset *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	gf_nodeset_init(s);
}

/* Append @name (taken over) without looking for duplicates. */
static void set_push(struct gf_nodeset *s, char *name)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;

		s->names = gf_xrealloc(s->names, cap * sizeof(*s->names));
		s->cap = cap;
	}
	s->names[s->n++] = name;
}

bool gf_nodeset_contains(const struct gf_nodeset *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name))
			return true;
	return false;
}

bool gf_nodeset_add(struct gf_nodeset *s, const char *name)
{
	if (gf_nodeset_contains(s, name))
		return false;
	set_push(s, gf_xstrdup(name));
	return true;
}

/* ---- a hash index over an array of strings owned elsewhere ---- */

struct slot {
	size_t pos;    /* 0: empty, else position in the key array + 1 */
	uint64_t hash; /* of that key: growing and probing need not touch the strings */
};

struct index {
	struct slot *slot;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

static void index_release(struct index *x)
{
	free(x->slot);
	x->slot = NULL;
	x->cap = 0;
	x->n = 0;
}

static void index_insert_raw(struct index *x, size_t pos, uint64_t hash)
{
	size_t mask = x->cap - 1;
	size_t i = (size_t)hash & mask;

	while (x->slot[i].pos)
		i = (i + 1) & mask;
	x->slot[i].pos = pos + 1;
	x->slot[i].hash = hash;
	x->n++;
}

/* Make room for @want entries at a load of at most one half. */
static void index_reserve(struct index *x, size_t want)
{
	struct slot *old = x->slot;
	size_t oldcap = x->cap;
	size_t cap = x->cap ? x->cap : 16;
	size_t i;

	while (cap / 2 < want)
		cap *= 2;
	if (cap == x->cap)
		return;
	x->slot = gf_xcalloc(cap, sizeof(*x->slot));
	x->cap = cap;
	x->n = 0;
	for (i = 0; i < oldcap; i++)
		if (old[i].pos)
			index_insert_raw(x, old[i].pos - 1, old[i].hash);
	free(old);
}

static size_t index_find(const struct index *x, char *const *keys, const char *key)
{
	uint64_t h;
	size_t mask, i;

	if (!x->cap)
		return NOT_FOUND;
	h = gf_hash64(key, strlen(key));
	mask = x->cap - 1;
	i = (size_t)h & mask;
	while (x->slot[i].pos) {
		size_t pos = x->slot[i].pos - 1;

		if (x->slot[i].hash == h && !strcmp(keys[pos], key))
			return pos;
		i = (i + 1) & mask;
	}
	return NOT_FOUND;
}

/* Index keys[pos], which must not be in the index yet. */
static void index_put(struct index *x, char *const *keys, size_t pos)
{
	index_reserve(x, x->n + 1);
	index_insert_raw(x, pos, gf_hash64(keys[pos], strlen(keys[pos])));
}

/* Index keys[0..n) afresh. */
static void index_rebuild(struct index *x, char *const *keys, size_t n)
{
	size_t i;

	index_release(x);
	index_reserve(x, n);
	for (i = 0; i < n; i++)
		index_insert_raw(x, i, gf_hash64(keys[i], strlen(keys[i])));
}

/* ---- a set under construction: the names plus an index, for O(1) lookups ---- */

struct wset {
	struct gf_nodeset s;
	struct index idx;
};

static void wset_init(struct wset *w)
{
	gf_nodeset_init(&w->s);
	w->idx.slot = NULL;
	w->idx.cap = 0;
	w->idx.n = 0;
}

static void wset_release(struct wset *w)
{
	gf_nodeset_release(&w->s);
	index_release(&w->idx);
}

/* Below this many names a set has no index: most terms are one name. */
#define WSET_SMALL 8

static bool wset_has(const struct wset *w, const char *name)
{
	size_t i;

	if (w->idx.cap)
		return index_find(&w->idx, w->s.names, name) != NOT_FOUND;
	for (i = 0; i < w->s.n; i++)
		if (!strcmp(w->s.names[i], name))
			return true;
	return false;
}

static void wset_reindex(struct wset *w)
{
	if (w->s.n < WSET_SMALL)
		index_release(&w->idx);
	else
		index_rebuild(&w->idx, w->s.names, w->s.n);
}

/* Take @name over; a duplicate is freed. Returns -1 (name freed) when the set is full. */
static int wset_take(struct wset *w, char *name)
{
	if (wset_has(w, name)) {
		free(name);
		return 0;
	}
	if (w->s.n >= GF_NODESET_MAX) {
		free(name);
		return -1;
	}
	set_push(&w->s, name);
	if (w->idx.cap)
		index_put(&w->idx, w->s.names, w->s.n - 1);
	else if (w->s.n >= WSET_SMALL)
		wset_reindex(w);
	return 0;
}

/* Keep the names of @w that are (@keep_common) or are not in @t, in their order. */
static void wset_filter(struct wset *w, const struct wset *t, bool keep_common)
{
	size_t i, j = 0;

	for (i = 0; i < w->s.n; i++) {
		if (wset_has(t, w->s.names[i]) == keep_common)
			w->s.names[j++] = w->s.names[i];
		else
			free(w->s.names[i]);
	}
	if (j == w->s.n)
		return; /* nothing moved: the index still holds */
	w->s.n = j;
	wset_reindex(w);
}

/* ---- the parser ---- */

struct parser {
	const char *expr;
	size_t len;
	gf_group_resolver resolve;
	void *ud;
	struct gf_err *err;
};

/* One "lo-hi/step" item of a bracket; width is that of the lower bound as written. */
struct range {
	u64 lo, hi, step;
	int width;
};

/* A bracket and the literal text before it. */
struct group {
	size_t lit; /* offset of the literal in the expression */
	size_t lit_len;
	struct range *r;
	size_t nr;
};

static bool is_op(char c)
{
	return c == ',' || c == '!' || c == '&' || c == '^';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Characters a name may hold outside brackets. */
static bool is_name_char(char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c))
		return true;
	return c != '\0' && strchr("-_.:+%/~=", c) != NULL;
}

static int perr(const struct parser *p, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A GF_E_USAGE error about the expression at offset @off. */
static int perr(const struct parser *p, size_t off, const char *fmt, ...)
{
	char what[320];
	va_list ap;
	int q = p->len > QUOTE_MAX ? QUOTE_MAX : (int)p->len;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return gf_err_set(p->err, GF_E_USAGE, GF_EK_NONE, "%s at column %zu in '%.*s%s'", what,
			  off + 1, q, p->expr, p->len > QUOTE_MAX ? "..." : "");
}

/* Describe the character at @off for a message: "'x'", "end of input" or "byte 0x01". */
static void describe_char(const struct parser *p, size_t off, char *buf, size_t size)
{
	unsigned char c;

	if (off >= p->len) {
		snprintf(buf, size, "end of input");
		return;
	}
	c = (unsigned char)p->expr[off];
	if (c == ' ')
		snprintf(buf, size, "space");
	else if (c > 0x20 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "byte 0x%02x", c);
}

static int err_unexpected(const struct parser *p, size_t off, const char *where)
{
	char what[32];

	describe_char(p, off, what, sizeof(what));
	return perr(p, off, "unexpected %s%s", what, where);
}

/*
 * Find the end of the term starting at *@pos: it runs to whitespace or an
 * operator outside brackets. Checks that brackets balance and do not nest.
 */
static int scan_term(const struct parser *p, size_t *pos)
{
	size_t i = *pos;
	size_t open = 0;
	bool inside = false;

	for (; i < p->len; i++) {
		char c = p->expr[i];

		if (inside) {
			if (c == ']')
				inside = false;
			else if (c == '[')
				return perr(p, i, "nested '['");
			continue;
		}
		if (is_space(c) || is_op(c))
			break;
		if (c == '[') {
			inside = true;
			open = i;
		} else if (c == ']') {
			return perr(p, i, "unbalanced ']'");
		}
	}
	if (inside)
		return perr(p, open, "unbalanced '['");
	*pos = i;
	return 0;
}

/* Read a decimal number at *@pos; sets its digit count in @ret_digits. */
static int parse_num(const struct parser *p, size_t *pos, u64 *ret, int *ret_digits)
{
	size_t i = *pos;
	u64 v = 0;

	while (i < p->len && is_digit(p->expr[i])) {
		if (i - *pos >= NUM_MAX_DIGITS)
			return perr(p, *pos, "number too long (more than %d digits)",
				    NUM_MAX_DIGITS);
		v = v * 10 + (u64)(p->expr[i] - '0');
		i++;
	}
	if (i == *pos) {
		if (i < p->len && p->expr[i] == ']')
			return perr(p, i, "missing number before ']'");
		return err_unexpected(p, i, ", expected a number");
	}
	*ret_digits = (int)(i - *pos);
	*ret = v;
	*pos = i;
	return 0;
}

/*
 * Parse the bracket whose '[' is at *@pos into @g; on success *@pos is past the
 * ']' and *@count is the number of values it yields (capped just above the max).
 */
static int parse_bracket(const struct parser *p, size_t *pos, struct group *g, u64 *count)
{
	size_t i = *pos + 1;
	size_t cap = 0;
	u64 total = 0;
	int rc;

	if (i < p->len && p->expr[i] == ']')
		return perr(p, *pos, "empty brackets");
	for (;;) {
		struct range r = {0, 0, 1, 0};
		size_t start = i;
		int hw;

		rc = parse_num(p, &i, &r.lo, &r.width);
		if (rc)
			return rc;
		r.hi = r.lo;
		r.step = 1;
		if (i < p->len && p->expr[i] == '-') {
			i++;
			rc = parse_num(p, &i, &r.hi, &hw);
			if (rc)
				return rc;
			if (i < p->len && p->expr[i] == '/') {
				size_t soff = ++i;

				rc = parse_num(p, &i, &r.step, &hw);
				if (rc)
					return rc;
				if (r.step == 0)
					return perr(p, soff, "zero step in range '%.*s'",
						    (int)(i - start), p->expr + start);
			}
			if (r.hi < r.lo)
				return perr(p, start, "reversed range '%.*s'", (int)(i - start),
					    p->expr + start);
		}
		if (g->nr == cap) {
			cap = cap ? cap * 2 : 4;
			g->r = gf_xrealloc(g->r, cap * sizeof(*g->r));
		}
		g->r[g->nr++] = r;
		total += (r.hi - r.lo) / r.step + 1;
		if (total > GF_NODESET_MAX)
			total = (u64)GF_NODESET_MAX + 1;

		if (i < p->len && p->expr[i] == ',') {
			i++;
			continue;
		}
		if (i < p->len && p->expr[i] == ']')
			break;
		return err_unexpected(p, i, " in brackets");
	}
	*pos = i + 1;
	*count = total;
	return 0;
}

static size_t num_digits(u64 v)
{
	size_t d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/* Write @v with at least @width digits (zero padded) at the end of @b. */
static void add_num(struct gf_buf *b, u64 v, int width)
{
	char tmp[32];
	size_t d = num_digits(v);
	size_t n = d < (size_t)width ? (size_t)width : d;
	size_t i;

	for (i = 0; i < n; i++) {
		tmp[n - 1 - i] = (char)('0' + v % 10);
		v /= 10;
	}
	gf_buf_add(b, tmp, n);
}

static void groups_free(struct group *g, size_t ng)
{
	size_t i;

	for (i = 0; i < ng; i++)
		free(g[i].r);
	free(g);
}

/*
 * Expand the name pattern expr[off..off+len) into @out (initialised by the
 * caller), the first bracket varying slowest.
 */
static int expand_pattern(const struct parser *p, size_t off, size_t len, struct wset *out)
{
	struct group *g = NULL;
	size_t ng = 0, cap = 0;
	size_t i = off, end = off + len;
	size_t lit, tail, maxlen = 0;
	u64 product = 1;
	size_t *ri = NULL;
	u64 *v = NULL;
	struct gf_buf b = GF_BUF_INIT;
	int rc = 0;

	/* scan_term() saw every '[' closed within the term: brackets end before @end. */
	for (;;) {
		u64 count = 1;
		size_t k, widest = 0;

		lit = i;
		while (i < end && p->expr[i] != '[') {
			if (p->expr[i] == ']') {
				rc = perr(p, i, "unbalanced ']'");
				goto out;
			}
			if (!is_name_char(p->expr[i])) {
				rc = err_unexpected(p, i, " in a name");
				goto out;
			}
			i++;
		}
		maxlen += i - lit;
		if (i == end)
			break;
		if (ng == cap) {
			cap = cap ? cap * 2 : 4;
			g = gf_xrealloc(g, cap * sizeof(*g));
		}
		g[ng].lit = lit;
		g[ng].lit_len = i - lit;
		g[ng].r = NULL;
		g[ng].nr = 0;
		ng++;
		rc = parse_bracket(p, &i, &g[ng - 1], &count);
		if (rc)
			goto out;
		/* Counts are at least 1, so the cap bounds the product as it grows. */
		if (product > GF_NODESET_MAX / count) {
			rc = perr(p, off, "'%.*s' expands to more than %d names", (int)len,
				  p->expr + off, GF_NODESET_MAX);
			goto out;
		}
		product *= count;
		for (k = 0; k < g[ng - 1].nr; k++) {
			const struct range *r = &g[ng - 1].r[k];
			size_t d = num_digits(r->hi);

			if (d < (size_t)r->width)
				d = (size_t)r->width;
			if (d > widest)
				widest = d;
		}
		maxlen += widest;
	}
	tail = lit;
	if (maxlen == 0) {
		rc = perr(p, off, "empty name");
		goto out;
	}
	if (maxlen > NAME_MAX_LEN) {
		rc = perr(p, off, "name longer than %d characters", NAME_MAX_LEN);
		goto out;
	}

	if (ng) {
		ri = gf_xcalloc(ng, sizeof(*ri));
		v = gf_xcalloc(ng, sizeof(*v));
	}
	for (i = 0; i < ng; i++)
		v[i] = g[i].r[0].lo;
	for (;;) {
		bool more = false;
		size_t k;

		gf_buf_reset(&b);
		for (k = 0; k < ng; k++) {
			gf_buf_add(&b, p->expr + g[k].lit, g[k].lit_len);
			add_num(&b, v[k], g[k].r[ri[k]].width);
		}
		gf_buf_add(&b, p->expr + tail, end - tail);
		/* The product check above keeps this within the cap. */
		wset_take(out, gf_xstrndup(gf_buf_str(&b), b.len));

		/* Advance like an odometer, the last bracket fastest. */
		for (k = ng; k-- > 0;) {
			const struct range *r = &g[k].r[ri[k]];

			if (r->hi - v[k] >= r->step) {
				v[k] += r->step;
				more = true;
				break;
			}
			if (ri[k] + 1 < g[k].nr) {
				ri[k]++;
				v[k] = g[k].r[ri[k]].lo;
				more = true;
				break;
			}
			ri[k] = 0;
			v[k] = g[k].r[0].lo;
		}
		if (!more)
			break;
	}
out:
	gf_buf_release(&b);
	free(ri);
	free(v);
	groups_free(g, ng);
	return rc;
}

/* Expand "@group" at expr[off..off+len) through the resolver into @out. */
static int expand_group(const struct parser *p, size_t off, size_t len, struct wset *out)
{
	struct wset groups;
	size_t i, j;
	int rc;

	if (!p->resolve)
		return perr(p, off, "no group source for '%.*s'", (int)len, p->expr + off);
	if (len == 1)
		return perr(p, off, "missing group name after '@'");
	wset_init(&groups);
	/* A group name may itself be a pattern: "@rack[1-4]". */
	rc = expand_pattern(p, off + 1, len - 1, &groups);
	for (i = 0; !rc && i < groups.s.n; i++) {
		struct gf_nodeset members;

		gf_nodeset_init(&members);
		rc = p->resolve(p->ud, groups.s.names[i], &members, p->err);
		if (rc > 0)
			rc = perr(p, off, "group source failed for '%s'", groups.s.names[i]);
		for (j = 0; !rc && j < members.n; j++) {
			if (wset_take(out, members.names[j]) < 0)
				rc = perr(p, off, "'%.*s' expands to more than %d names", (int)len,
					  p->expr + off, GF_NODESET_MAX);
			members.names[j] = NULL;
		}
		gf_nodeset_release(&members);
	}
	wset_release(&groups);
	return rc;
}

/* @cur becomes the names in only one of @cur and @t: its own first, then @t's. */
static int apply_xor(const struct parser *p, struct wset *cur, struct wset *t, size_t off)
{
	bool *mine = gf_xcalloc(t->s.n ? t->s.n : 1, sizeof(*mine));
	size_t i;
	int rc = 0;

	for (i = 0; i < t->s.n; i++)
		mine[i] = wset_has(cur, t->s.names[i]);
	wset_filter(cur, t, false);
	for (i = 0; !rc && i < t->s.n; i++) {
		if (mine[i])
			continue;
		if (wset_take(cur, t->s.names[i]) < 0)
			rc = perr(p, off, "node set expands to more than %d names", GF_NODESET_MAX);
		t->s.names[i] = NULL; /* taken over, or freed by wset_take() */
	}
	free(mine);
	return rc;
}

/* Combine @t into @cur with @op; @t is emptied. */
static int apply(const struct parser *p, struct wset *cur, struct wset *t, char op, size_t off)
{
	size_t i;
	int rc = 0;

	switch (op) {
	case ',':
		for (i = 0; i < t->s.n; i++) {
			if (!rc && wset_take(cur, t->s.names[i]) < 0)
				rc = perr(p, off, "node set expands to more than %d names",
					  GF_NODESET_MAX);
			else if (rc)
				free(t->s.names[i]);
			t->s.names[i] = NULL;
		}
		t->s.n = 0;
		break;
	case '!': wset_filter(cur, t, false); break;
	case '&': wset_filter(cur, t, true); break;
	default: /* '^' */ rc = apply_xor(p, cur, t, off); break;
	}
	return rc;
}

int gf_nodeset_parse(const char *expr, gf_group_resolver resolve, void *ud, struct gf_nodeset *ret,
		     struct gf_err *err)
{
	struct parser p = {expr ? expr : "", 0, resolve, ud, err};
	struct wset cur, t;
	size_t i = 0;
	char op = ',';
	int rc = 0;

	p.len = strlen(p.expr);
	wset_init(&cur);
	while (i < p.len && is_space(p.expr[i]))
		i++;
	if (i == p.len)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "empty node set");
	if (is_op(p.expr[i]))
		op = p.expr[i++]; /* applies to the empty set */
	for (;;) {
		size_t start;

		while (i < p.len && is_space(p.expr[i]))
			i++;
		start = i;
		rc = scan_term(&p, &i);
		if (rc)
			goto out;
		if (i == start) {
			rc = perr(&p, start, "empty term after '%c'", op);
			goto out;
		}
		wset_init(&t);
		if (p.expr[start] == '@')
			rc = expand_group(&p, start, i - start, &t);
		else
			rc = expand_pattern(&p, start, i - start, &t);
		if (!rc)
			rc = apply(&p, &cur, &t, op, start);
		wset_release(&t);
		if (rc)
			goto out;

		while (i < p.len && is_space(p.expr[i]))
			i++;
		if (i == p.len)
			break;
		if (!is_op(p.expr[i])) {
			rc = err_unexpected(&p, i, ", expected ',', '!', '&' or '^'");
			goto out;
		}
		op = p.expr[i++];
	}
	index_release(&cur.idx);
	*ret = cur.s;
	return 0;
out:
	wset_release(&cur);
	return rc;
}

/* ---- collapse ---- */

/*
 * Folding follows ClusterShell's "nodeset -f": each run of at most
 * NUM_MAX_DIGITS digits in a name is a dimension, and names that share the
 * text around those runs (a pattern) fold together. Inside a pattern, when
 * only one dimension varies, its numbers share one bracket; otherwise every
 * name starts as its own block (a vector of one-number sets), and blocks that
 * differ in one dimension only merge, greedily, largest blocks first.
 */

/* A digit run of a name. */
struct run {
	size_t off, dig; /* where it starts in the name, and its digits */
	u64 val;
	bool padded; /* a leading zero: only folds with the same width */
};

/* The digit runs of @name into @runs (at most @cap); returns their count. */
static size_t name_runs(const char *name, struct run *runs, size_t cap)
{
	size_t i = 0, nr = 0;

	while (name[i]) {
		size_t s = i, k;
		u64 v = 0;

		if (!is_digit(name[i])) {
			i++;
			continue;
		}
		while (is_digit(name[i]))
			i++;
		if (i - s > NUM_MAX_DIGITS || nr == cap)
			continue; /* stays text */
		for (k = s; k < i; k++)
			v = v * 10 + (u64)(name[k] - '0');
		runs[nr].off = s;
		runs[nr].dig = i - s;
		runs[nr].val = v;
		runs[nr].padded = i - s > 1 && name[s] == '0';
		nr++;
	}
	return nr;
}

/* Names are at most NAME_MAX_LEN long when parsed; longer ones keep only so many runs. */
#define RUNS_MAX (NAME_MAX_LEN / 2 + 1)

/* The text of @name around its runs, lengths first so that keys cannot collide. */
static void text_key(struct gf_buf *key, const char *name, const struct run *r, size_t nr)
{
	size_t k, at = 0;

	gf_buf_reset(key);
	for (k = 0; k <= nr; k++) {
		size_t end = k < nr ? r[k].off : strlen(name);

		add_num(key, end - at, 0);
		gf_buf_addc(key, ':');
		gf_buf_add(key, name + at, end - at);
		if (k < nr)
			at = r[k].off + r[k].dig;
	}
}

/* A sorted set of numbers without duplicates. */
struct nums {
	u64 *v;
	size_t n, cap;
};

/* A block: one set per dimension, the names are every combination. */
struct block {
	struct nums *d;
	size_t nd;
	const size_t *width; /* the pattern's, per dimension */
	u64 size;            /* the number of names */
	size_t pos;          /* before the last sort: ties keep their order */
	bool dead;           /* merged into another */
};

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return (x > y) - (x < y);
}

/* Sort @v and drop duplicates; returns the new count. */
static size_t sort_unique(u64 *v, size_t n)
{
	size_t i, k = 0;

	gf_sort(v, n, sizeof(*v), cmp_u64);
	for (i = 0; i < n; i++)
		if (k == 0 || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

/* Compare @a and @b as written with @width digits, as strings ("10" before "9"). */
static int cmp_written(u64 a, u64 b, size_t width)
{
	char x[32], y[32];

	snprintf(x, sizeof(x), "%0*llu", (int)width, a);
	snprintf(y, sizeof(y), "%0*llu", (int)width, b);
	return strcmp(x, y);
}

/*
 * ClusterShell's order: larger blocks first, then per dimension larger sets,
 * the lower first number, the lower last number; ClusterShell compares the
 * numbers as written, as strings.
 */
static int cmp_block(const void *pa, const void *pb)
{
	const struct block *a = pa, *b = pb;
	size_t k;
	int c;

	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	for (k = 0; k < a->nd; k++) {
		const struct nums *x = &a->d[k], *y = &b->d[k];

		if (x->n != y->n)
			return x->n > y->n ? -1 : 1;
		c = cmp_written(x->v[0], y->v[0], a->width[k]);
		if (c)
			return c;
		c = cmp_written(x->v[x->n - 1], y->v[y->n - 1], a->width[k]);
		if (c)
			return c;
	}
	return (a->pos > b->pos) - (a->pos < b->pos);
}

enum rel { REL_SAME, REL_DISJOINT, REL_INSIDE, REL_HOLDS, REL_OVERLAP };

/* How @a relates to @b: the same, disjoint, strictly inside it, strictly holding it, or overlapping. */
static enum rel nums_relation(const struct nums *a, const struct nums *b)
{
	size_t i = 0, j = 0, common = 0;

	while (i < a->n && j < b->n) {
		if (a->v[i] == b->v[j]) {
			common++;
			i++;
			j++;
		} else if (a->v[i] < b->v[j]) {
			i++;
		} else {
			j++;
		}
	}
	if (common == a->n && common == b->n)
		return REL_SAME;
	if (common == 0)
		return REL_DISJOINT;
	if (common == a->n)
		return REL_INSIDE;
	if (common == b->n)
		return REL_HOLDS;
	return REL_OVERLAP;
}

/* @a becomes the union of @a and @b, which are disjoint. */
static void nums_union(struct nums *a, const struct nums *b)
{
	u64 *v;
	size_t i = 0, j = 0, k = 0;

	if (b->v[0] > a->v[a->n - 1]) {
		/* Above: the usual case, as blocks merge in ascending order. */
		if (a->n + b->n > a->cap) {
			a->cap = (a->n + b->n) * 2;
			a->v = gf_xrealloc(a->v, a->cap * sizeof(*a->v));
		}
		memcpy(a->v + a->n, b->v, b->n * sizeof(*b->v));
		a->n += b->n;
		return;
	}
	v = gf_xcalloc(a->n + b->n, sizeof(*v));

	while (i < a->n || j < b->n) {
		if (j == b->n || (i < a->n && a->v[i] < b->v[j]))
			v[k++] = a->v[i++];
		else
			v[k++] = b->v[j++];
	}
	free(a->v);
	a->v = v;
	a->n = k;
	a->cap = k;
}

/* Merge @b into @a when they differ in at most one dimension; @b is then dead. */
static bool block_merge(struct block *a, struct block *b)
{
	size_t k, diff = NOT_FOUND;
	enum rel how = REL_SAME;

	for (k = 0; k < a->nd; k++) {
		enum rel r = nums_relation(&a->d[k], &b->d[k]);

		if (r == REL_SAME)
			continue;
		if (r == REL_OVERLAP || diff != NOT_FOUND)
			return false;
		diff = k;
		how = r;
	}
	if (how == REL_DISJOINT) {
		nums_union(&a->d[diff], &b->d[diff]);
	} else if (how == REL_INSIDE) {
		struct nums t = a->d[diff];

		a->d[diff] = b->d[diff];
		b->d[diff] = t;
	}
	a->size = 1;
	for (k = 0; k < a->nd; k++)
		a->size *= a->d[k].n;
	b->dead = true;
	return true;
}

static void block_release(struct block *b)
{
	size_t k;

	for (k = 0; k < b->nd; k++)
		free(b->d[k].v);
	free(b->d);
}

/*
 * Merge the blocks b[0..nb) as ClusterShell does: passes over the sorted
 * blocks where each merges the ones right after it until one does not fit,
 * then, once that changes nothing, passes comparing every pair. Returns the
 * number of blocks left, in order at the start of @b.
 */
static size_t blocks_fold(struct block *b, size_t nb)
{
	bool full = false, changed = true;

	while (changed) {
		size_t i, j, k = 0;

		changed = false;
		for (i = 0; i < nb; i++) {
			if (b[i].dead) {
				block_release(&b[i]);
				continue;
			}
			b[k] = b[i];
			b[k].pos = k;
			k++;
		}
		nb = k;
		gf_sort(b, nb, sizeof(*b), cmp_block);
		for (i = 0; i + 1 < nb; i++) {
			if (b[i].dead)
				continue;
			for (j = i + 1; j < nb; j++) {
				if (b[j].dead)
					continue;
				if (block_merge(&b[i], &b[j]))
					changed = true;
				else if (!full)
					break;
			}
		}
		if (!changed && !full)
			changed = full = true;
	}
	return nb;
}

static void nums_render(struct gf_buf *out, const struct nums *s, size_t width)
{
	size_t i, j;

	if (s->n == 1) {
		add_num(out, s->v[0], (int)width);
		return;
	}
	gf_buf_addc(out, '[');
	for (i = 0; i < s->n; i = j + 1) {
		j = i;
		while (j + 1 < s->n && s->v[j + 1] == s->v[j] + 1)
			j++;
		if (i > 0)
			gf_buf_addc(out, ',');
		add_num(out, s->v[i], (int)width);
		if (j > i) {
			gf_buf_addc(out, '-');
			add_num(out, s->v[j], (int)width);
		}
	}
	gf_buf_addc(out, ']');
}

struct pattern {
	size_t first;  /* index in the names of the first member */
	size_t nd;     /* dimensions */
	size_t *width; /* per dimension; 0: unpadded */
	size_t *member;
	size_t n, cap;
};

/* Write the names of @d: the text of @name (the pattern's first) around its runs @r. */
static void block_render(struct gf_buf *out, const char *name, const struct run *r,
			 const struct pattern *p, const struct nums *d)
{
	size_t k, at = 0;

	if (out->len)
		gf_buf_addc(out, ',');
	for (k = 0; k < p->nd; k++) {
		gf_buf_add(out, name + at, r[k].off - at);
		nums_render(out, &d[k], p->width[k]);
		at = r[k].off + r[k].dig;
	}
	gf_buf_adds(out, name + at);
}

static void pattern_render(struct gf_buf *out, const char *const *names, const struct pattern *p)
{
	struct run r[RUNS_MAX], first[RUNS_MAX];
	size_t nd = p->nd, m, k, nvar = 0, var = 0;
	u64 *vals;

	if (nd == 0 || p->n == 1) {
		if (out->len)
			gf_buf_addc(out, ',');
		gf_buf_adds(out, names[p->first]);
		return;
	}
	name_runs(names[p->first], first, RUNS_MAX);
	vals = gf_xcalloc(p->n * nd, sizeof(*vals));
	for (m = 0; m < p->n; m++) {
		name_runs(names[p->member[m]], r, RUNS_MAX);
		for (k = 0; k < nd; k++)
			vals[m * nd + k] = r[k].val;
	}
	for (k = 0; k < nd; k++)
		for (m = 1; m < p->n; m++)
			if (vals[m * nd + k] != vals[k]) {
				nvar++;
				var = k;
				break;
			}
	if (nvar <= 1) {
		/* One dimension varies: its numbers share a bracket. */
		struct nums *d = gf_xcalloc(nd, sizeof(*d));
		u64 *v = gf_xcalloc(p->n, sizeof(*v));

		for (k = 0; k < nd; k++)
			d[k] = (struct nums){&vals[k], 1, 1};
		for (m = 0; m < p->n; m++)
			v[m] = vals[m * nd + var];
		d[var] = (struct nums){v, sort_unique(v, p->n), p->n};
		block_render(out, names[p->first], first, p, d);
		free(v);
		free(d);
	} else {
		struct block *b = gf_xcalloc(p->n, sizeof(*b));
		size_t nb;

		for (m = 0; m < p->n; m++) {
			b[m] = (struct block){gf_xcalloc(nd, sizeof(struct nums)),
					      nd,
					      p->width,
					      1,
					      m,
					      false};
			for (k = 0; k < nd; k++) {
				b[m].d[k].v = gf_xcalloc(1, sizeof(u64));
				b[m].d[k].v[0] = vals[m * nd + k];
				b[m].d[k].n = 1;
				b[m].d[k].cap = 1;
			}
		}
		nb = blocks_fold(b, p->n);
		for (m = 0; m < nb; m++) {
			block_render(out, names[p->first], first, p, b[m].d);
			block_release(&b[m]);
		}
		free(b);
	}
	free(vals);
}

/* Add @k to the keys of @x unless there; returns its position. */
static size_t key_intern(struct index *x, char ***keys, size_t *n, const char *k)
{
	size_t pos = index_find(x, *keys, k);

	if (pos != NOT_FOUND)
		return pos;
	if (!(*n & (*n - 1)))
		*keys = gf_xrealloc(*keys, (*n ? *n * 2 : 1) * sizeof(**keys));
	(*keys)[*n] = gf_xstrdup(k);
	index_put(x, *keys, (*n)++);
	return *n - 1;
}

/* The key of a padded class: the text, the dimension and the width. */
static void class_key(struct gf_buf *key, const struct gf_buf *text, size_t k, size_t width)
{
	gf_buf_reset(key);
	gf_buf_add(key, text->s, text->len);
	gf_buf_addc(key, '|');
	add_num(key, k, 0);
	gf_buf_addc(key, '|');
	add_num(key, width, 0);
}

char *gf_nodeset_collapse(const char *const *names, size_t n)
{
	struct gf_buf out = GF_BUF_INIT, key = GF_BUF_INIT, text = GF_BUF_INIT;
	struct index uniq = {NULL, 0, 0}, pad_idx = {NULL, 0, 0}, pat_idx = {NULL, 0, 0};
	char **pads = NULL, **pkeys = NULL;
	size_t npads = 0, npat = 0, i, k;
	struct pattern *pat;
	struct run r[RUNS_MAX];
	bool *dup;

	if (n == 0)
		return gf_xstrdup("");
	dup = gf_xcalloc(n, sizeof(*dup));
	pat = gf_xcalloc(n, sizeof(*pat));

	/* Duplicates once; which text, dimension and width have zero-padded members. */
	for (i = 0; i < n; i++) {
		size_t nr;

		if (index_find(&uniq, (char *const *)names, names[i]) != NOT_FOUND) {
			dup[i] = true;
			continue;
		}
		index_put(&uniq, (char *const *)names, i);
		nr = name_runs(names[i], r, RUNS_MAX);
		text_key(&text, names[i], r, nr);
		for (k = 0; k < nr; k++) {
			if (!r[k].padded)
				continue;
			class_key(&key, &text, k, r[k].dig);
			key_intern(&pad_idx, &pads, &npads, gf_buf_str(&key));
		}
	}

	/* Patterns: the text and the width of every dimension. */
	for (i = 0; i < n; i++) {
		size_t nr, w[RUNS_MAX], pos, before = npat;
		struct pattern *p;

		if (dup[i])
			continue;
		nr = name_runs(names[i], r, RUNS_MAX);
		text_key(&text, names[i], r, nr);
		for (k = 0; k < nr; k++) {
			w[k] = r[k].padded ? r[k].dig : 0;
			/*
			 * An unpadded number at least as wide as a padded class prints
			 * the same in it (gpu[098-100], r[01-120]): it joins the widest.
			 */
			for (size_t cw = r[k].dig; !r[k].padded && npads && cw > 1 && !w[k]; cw--) {
				class_key(&key, &text, k, cw);
				if (index_find(&pad_idx, pads, gf_buf_str(&key)) != NOT_FOUND)
					w[k] = cw;
			}
		}
		gf_buf_reset(&key);
		gf_buf_add(&key, text.s, text.len);
		for (k = 0; k < nr; k++) {
			gf_buf_addc(&key, '#');
			add_num(&key, w[k], 0);
		}
		pos = key_intern(&pat_idx, &pkeys, &npat, gf_buf_str(&key));
		p = &pat[pos];
		if (npat > before) {
			p->first = i;
			p->nd = nr;
			p->width = gf_xcalloc(nr ? nr : 1, sizeof(*p->width));
			memcpy(p->width, w, nr * sizeof(*w));
		}
		if (p->n == p->cap) {
			p->cap = p->cap ? p->cap * 2 : 4;
			p->member = gf_xrealloc(p->member, p->cap * sizeof(*p->member));
		}
		p->member[p->n++] = i;
	}

	for (i = 0; i < npat; i++) {
		pattern_render(&out, names, &pat[i]);
		free(pat[i].width);
		free(pat[i].member);
		free(pkeys[i]);
	}
	for (i = 0; i < npads; i++)
		free(pads[i]);
	free(pads);
	free(pkeys);
	free(pat);
	free(dup);
	index_release(&uniq);
	index_release(&pad_idx);
	index_release(&pat_idx);
	gf_buf_release(&key);
	gf_buf_release(&text);
	if (!out.s) /* a single empty name */
		return gf_xstrdup("");
	return gf_buf_detach(&out);
}
