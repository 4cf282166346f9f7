/* A sweep in memory: string pool, component sets (its JSON is in inventory/codec.c). */
#include "inventory/sweep.h"
#include "inventory/normalize.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "lib/backend.h"
#include "lib/buf.h"

/* ---- names ------------------------------------------------------------ */

static const char *const status_names[] = {
	[GF_NODE_OK] = "ok",
	[GF_NODE_PARTIAL] = "partial",
	[GF_NODE_FAILED] = "failed",
};

const char *gf_node_status_name(enum gf_node_status s)
{
	return (unsigned)s < NELEM(status_names) ? status_names[s] : "failed";
}

int gf_node_status_parse(const char *s)
{
	for (size_t i = 0; s && i < NELEM(status_names); i++)
		if (strcmp(s, status_names[i]) == 0)
			return (int)i;
	return -1;
}

bool gf_source_known(const char *s)
{
	const struct gf_backend *be = gf_backend_find(s);

	/* Spelt as the backend spells it: sources are compared as they are. */
	return s && (strcmp(s, GF_SOURCE_HOST) == 0 || (be && strcmp(be->name, s) == 0));
}

char *gf_source_names(void)
{
	return gf_backend_names(GF_SOURCE_HOST, ", ");
}

/* ---- the string pool ------------------------------------------------------ */

/*
 * Interned strings: a hash table of (hash, length, string), the strings
 * themselves in large chunks, so that a sweep of 10,000 nodes makes a few
 * allocations, not millions.
 */
struct pool_slot {
	const char *s; /* NULL: free */
	uint64_t hash;
	size_t len;
};

struct pool_chunk {
	struct pool_chunk *next;
	size_t used, size;
	char data[];
};

/* A component read from a stored body, by the bytes of its record. */
struct comp_slot {
	const char *rec; /* NULL: free */
	size_t len;
	uint64_t hash;
	struct gf_inv_comp comp;
};

struct gf_strpool {
	struct pool_slot *slot; /* open addressing */
	size_t cap;             /* a power of two */
	size_t n;
	struct pool_chunk *chunks;
	struct comp_slot *comps; /* components of bodies: most repeat from list to list */
	size_t ccap, cn;
};

#define POOL_CHUNK (64u * 1024u)

static void pool_free(struct gf_strpool *p)
{
	if (!p)
		return;
	while (p->chunks) {
		struct pool_chunk *next = p->chunks->next;

		free(p->chunks);
		p->chunks = next;
	}
	free(p->slot);
	free(p->comps);
	free(p);
}

static void pool_grow(struct gf_strpool *p)
{
	size_t cap = p->cap ? p->cap * 2 : 256;
	struct pool_slot *slot = gf_xcalloc(cap, sizeof(*slot));

	for (size_t i = 0; i < p->cap; i++) {
		size_t at;

		if (!p->slot[i].s)
			continue;
		at = (size_t)p->slot[i].hash & (cap - 1);
		while (slot[at].s)
			at = (at + 1) & (cap - 1);
		slot[at] = p->slot[i];
	}
	free(p->slot);
	p->slot = slot;
	p->cap = cap;
}

static char *pool_copy(struct gf_strpool *p, const char *s, size_t len)
{
	struct pool_chunk *c = p->chunks;
	char *dst;

	if (!c || c->size - c->used < len + 1) {
		size_t size = len + 1 > POOL_CHUNK ? len + 1 : POOL_CHUNK;

		c = gf_xmalloc(sizeof(*c) + size);
		c->size = size;
		c->used = 0;
		c->next = p->chunks;
		p->chunks = c;
	}
	dst = c->data + c->used;
	memcpy(dst, s, len);
	dst[len] = '\0';
	c->used += len + 1;
	return dst;
}

static const char *pool_get(struct gf_strpool *p, const char *s, size_t len)
{
	uint64_t hash = gf_hash64(s, len);
	size_t at;

	if ((p->n + 1) * 4 > p->cap * 3)
		pool_grow(p);
	at = (size_t)hash & (p->cap - 1);
	while (p->slot[at].s) {
		const struct pool_slot *e = &p->slot[at];

		if (e->hash == hash && e->len == len && memcmp(e->s, s, len) == 0)
			return e->s;
		at = (at + 1) & (p->cap - 1);
	}
	p->slot[at].s = pool_copy(p, s, len);
	p->slot[at].hash = hash;
	p->slot[at].len = len;
	p->n++;
	return p->slot[at].s;
}

const char *gf_sweep_str(struct gf_sweep *sw, const char *s)
{
	return s ? pool_get(sw->pool, s, strlen(s)) : NULL;
}

const char *gf_sweep_strn(struct gf_sweep *sw, const char *s, size_t len)
{
	const char *nul = s ? memchr(s, '\0', len) : NULL;

	if (!s)
		return NULL;
	return pool_get(sw->pool, s, nul ? (size_t)(nul - s) : len);
}

/* Is @s valid UTF-8: no stray, overlong or surrogate sequences, nothing beyond U+10FFFF? */
static bool utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s++, need, v;

		if (c < 0x80)
			continue;
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			v = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			v = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			v = c & 0x07;
		} else {
			return false;
		}
		for (unsigned k = 0; k < need; k++, s++) {
			if ((*s & 0xc0) != 0x80)
				return false;
			v = (v << 6) | (*s & 0x3f);
		}
		if ((need == 2 && v < 0x800) || (need == 3 && v < 0x10000) || v > 0x10ffff ||
		    (v >= 0xd800 && v <= 0xdfff))
			return false;
	}
	return true;
}

const char *gf_sweep_text(struct gf_sweep *sw, const char *s)
{
	char *c;
	const char *ret;

	if (!s || utf8_ok((const unsigned char *)s))
		return gf_sweep_str(sw, s);
	c = gf_xstrdup(s);
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	ret = gf_sweep_str(sw, c);
	free(c);
	return ret;
}

/* ---- sweeps, nodes, sets ------------------------------------------------ */

struct gf_sweep *gf_sweep_new(void)
{
	struct gf_sweep *sw = gf_xcalloc(1, sizeof(*sw));

	sw->pool = gf_xcalloc(1, sizeof(*sw->pool));
	return sw;
}

void gf_sweep_node_take_hardware(struct gf_sweep_node *n, struct gf_hardware *hw)
{
	if (n->hardware) {
		gf_hardware_release(n->hardware);
		free(n->hardware);
		n->hardware = NULL;
	}
	if (hw) {
		n->hardware = gf_xcalloc(1, sizeof(*n->hardware));
		*n->hardware = *hw;
		memset(hw, 0, sizeof(*hw));
	}
}

void gf_sweep_node_take_host(struct gf_sweep_node *n, struct gf_hostfacts *host)
{
	if (n->host) {
		gf_hostfacts_release(n->host);
		free(n->host);
		n->host = NULL;
	}
	if (host) {
		n->host = gf_xcalloc(1, sizeof(*n->host));
		*n->host = *host;
		memset(host, 0, sizeof(*host));
	}
}

void gf_sweep_node_add_leak(struct gf_sweep *sw, struct gf_sweep_node *n, const char *chassis,
			    const char *id, const char *name, enum gf_sensor_state state)
{
	struct gf_sensor_summary *s = &n->sensors;

	s->leaks = gf_xrealloc(s->leaks, (s->nleaks + 1) * sizeof(*s->leaks));
	s->leaks[s->nleaks++] = (struct gf_leak){.chassis = gf_sweep_text(sw, chassis),
						 .id = gf_sweep_text(sw, id),
						 .name = gf_sweep_text(sw, name),
						 .state = state};
}

void gf_sweep_node_clear_leaks(struct gf_sweep_node *n)
{
	free(n->sensors.leaks);
	n->sensors.leaks = NULL;
	n->sensors.nleaks = 0;
}

void gf_sweep_free(struct gf_sweep *sw)
{
	if (!sw)
		return;
	for (size_t i = 0; i < sw->n; i++) {
		gf_sweep_node_clear_leaks(&sw->nodes[i]);
		free(sw->nodes[i].errors);
		gf_sweep_node_take_hardware(&sw->nodes[i], NULL);
		gf_sweep_node_take_host(&sw->nodes[i], NULL);
	}
	free(sw->nodes);
	for (size_t i = 0; i < sw->nsets; i++) {
		free(sw->sets[i]->v);
		free(sw->sets[i]);
	}
	free(sw->sets);
	pool_free(sw->pool);
	free(sw);
}

void gf_sweep_clear_nodes(struct gf_sweep *sw)
{
	for (size_t i = 0; i < sw->n; i++) {
		gf_sweep_node_clear_leaks(&sw->nodes[i]);
		free(sw->nodes[i].errors);
		gf_sweep_node_take_hardware(&sw->nodes[i], NULL);
		gf_sweep_node_take_host(&sw->nodes[i], NULL);
	}
	sw->n = 0;
	for (size_t i = 0; i < sw->nsets; i++) {
		free(sw->sets[i]->v);
		free(sw->sets[i]);
	}
	sw->nsets = 0;
}

struct gf_inv_set *gf_sweep_new_set(struct gf_sweep *sw)
{
	struct gf_inv_set *s = gf_xcalloc(1, sizeof(*s));

	if (sw->nsets == sw->capsets) {
		sw->capsets = sw->capsets ? sw->capsets * 2 : 16;
		sw->sets = gf_xrealloc(sw->sets, sw->capsets * sizeof(*sw->sets));
	}
	sw->sets[sw->nsets++] = s;
	return s;
}

struct gf_sweep_node *gf_sweep_add_node(struct gf_sweep *sw, const char *name)
{
	struct gf_sweep_node *n;

	if (sw->n == sw->cap) {
		sw->cap = sw->cap ? sw->cap * 2 : 16;
		sw->nodes = gf_xrealloc(sw->nodes, sw->cap * sizeof(*sw->nodes));
	}
	n = &sw->nodes[sw->n++];
	memset(n, 0, sizeof(*n));
	n->node = gf_sweep_str(sw, name);
	n->sweep = sw->id;
	n->time = sw->started;
	n->set = gf_sweep_new_set(sw);
	return n;
}

void gf_sweep_node_error(struct gf_sweep *sw, struct gf_sweep_node *n, const char *op,
			 enum gf_errkind kind, const char *message)
{
	struct gf_sweep_error *e;

	n->errors = gf_xrealloc(n->errors, (n->nerrors + 1) * sizeof(*n->errors));
	e = &n->errors[n->nerrors++];
	e->op = gf_sweep_str(sw, op);
	e->kind = kind == GF_EK_NONE ? GF_EK_INTERNAL : kind;
	e->message = gf_sweep_str(sw, message ? message : "");
}

struct gf_inv_comp *gf_inv_set_add(struct gf_inv_set *s)
{
	struct gf_inv_comp *c;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = gf_xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	c = &s->v[s->n++];
	memset(c, 0, sizeof(*c));
	return c;
}

/*
 * Groups of equal keys for gf_inv_set_finish(): a key to the indices of the
 * components holding it, in the order they were added.
 */
struct key_group {
	const char *key;
	uint64_t hash;
	size_t *at; /* indices into the set being finished, ascending */
	size_t n, cap;
	bool queued; /* in the list of groups the next round renames */
};

struct key_groups {
	struct key_group *v;
	size_t n, cap;
	size_t *slot; /* open addressing: 1 + index into v, 0: empty */
	size_t nslot; /* a power of two */
};

static size_t *group_slot(struct key_groups *g, const char *key, uint64_t hash)
{
	size_t at = (size_t)hash & (g->nslot - 1);

	while (g->slot[at] &&
	       (g->v[g->slot[at] - 1].hash != hash || strcmp(g->v[g->slot[at] - 1].key, key) != 0))
		at = (at + 1) & (g->nslot - 1);
	return &g->slot[at];
}

/* The group of @key, made when there is none. */
static struct key_group *group_of(struct key_groups *g, const char *key)
{
	uint64_t hash = gf_hash64(key, strlen(key));
	size_t *slot;

	if ((g->n + 1) * 2 > g->nslot) {
		free(g->slot);
		g->nslot = g->nslot ? g->nslot * 2 : 64;
		g->slot = gf_xcalloc(g->nslot, sizeof(*g->slot));
		for (size_t i = 0; i < g->n; i++)
			*group_slot(g, g->v[i].key, g->v[i].hash) = i + 1;
	}
	slot = group_slot(g, key, hash);
	if (!*slot) {
		if (g->n == g->cap) {
			g->cap = g->cap ? g->cap * 2 : 64;
			g->v = gf_xrealloc(g->v, g->cap * sizeof(*g->v));
		}
		g->v[g->n] = (struct key_group){.key = key, .hash = hash};
		*slot = ++g->n;
	}
	return &g->v[*slot - 1];
}

/* Add component @at to @grp, keeping the order of addition. */
static void group_add(struct key_group *grp, size_t at)
{
	size_t i;

	if (grp->n == grp->cap) {
		grp->cap = grp->cap ? grp->cap * 2 : 2;
		grp->at = gf_xrealloc(grp->at, grp->cap * sizeof(*grp->at));
	}
	for (i = grp->n; i > 0 && grp->at[i - 1] > at; i--)
		grp->at[i] = grp->at[i - 1];
	grp->at[i] = at;
	grp->n++;
}

/* Stable order for equal keys: the order of addition, kept in a side array. */
struct keyed {
	struct gf_inv_comp c;
	size_t at;
};

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = strcmp(x->c.key, y->c.key);

	if (c)
		return c;
	return x->at < y->at ? -1 : x->at > y->at;
}

void gf_inv_set_finish(struct gf_sweep *sw, struct gf_inv_set *s)
{
	struct key_groups g = {0};
	struct keyed *k;
	size_t *queue = NULL, nqueue = 0, capqueue = 0;
	struct {
		size_t at;       /* the component renamed */
		const char *key; /* its new key */
	} *ren = NULL;
	size_t capren = 0;

	if (s->n < 2)
		return;
	/*
	 * Renaming "bmc" to "bmc#2" can meet a key that already is "bmc#2",
	 * which then is renamed in turn, and so on: in rounds, each renaming,
	 * in every group of equal keys as the round found them, all but the
	 * first added ("#2", "#3" ... in the order of addition). Only the
	 * groups that a round made to repeat are looked at in the next one, so
	 * a chain of renames costs its length, not a sort of the set per link.
	 */
	for (size_t i = 0; i < s->n; i++)
		group_add(group_of(&g, s->v[i].key), i);
	for (size_t i = 0; i < g.n; i++) {
		if (g.v[i].n < 2)
			continue;
		if (nqueue == capqueue)
			queue = gf_xrealloc(queue, (capqueue = capqueue * 2 + 16) * sizeof(*queue));
		queue[nqueue++] = i;
		g.v[i].queued = true;
	}
	while (nqueue) {
		size_t nren = 0;

		for (size_t q = 0; q < nqueue; q++) {
			struct key_group *grp = &g.v[queue[q]];

			for (size_t j = 1; j < grp->n; j++) {
				struct gf_buf b = GF_BUF_INIT;

				if (nren == capren)
					ren = gf_xrealloc(ren, (capren = capren * 2 + 16) *
								       sizeof(*ren));
				gf_buf_addf(&b, "%s#%zu", grp->key, j + 1);
				ren[nren].at = grp->at[j];
				ren[nren++].key = gf_sweep_str(sw, gf_buf_str(&b));
				gf_buf_release(&b);
			}
			grp->n = 1;
			grp->queued = false;
		}
		/* The names a round gives are new to one another (key and count differ). */
		nqueue = 0;
		for (size_t r = 0; r < nren; r++) {
			struct key_group *grp = group_of(&g, ren[r].key);

			s->v[ren[r].at].key = ren[r].key;
			group_add(grp, ren[r].at);
			if (grp->n >= 2 && !grp->queued) {
				if (nqueue == capqueue)
					queue = gf_xrealloc(queue, (capqueue = capqueue * 2 + 16) *
									   sizeof(*queue));
				queue[nqueue++] = (size_t)(grp - g.v);
				grp->queued = true;
			}
		}
	}
	k = gf_xcalloc(s->n, sizeof(*k));
	for (size_t i = 0; i < s->n; i++) {
		k[i].c = s->v[i];
		k[i].at = i;
	}
	gf_sort(k, s->n, sizeof(*k), keyed_cmp);
	for (size_t i = 0; i < s->n; i++)
		s->v[i] = k[i].c;
	free(k);
	for (size_t i = 0; i < g.n; i++)
		free(g.v[i].at);
	free(g.v);
	free(g.slot);
	free(queue);
	free(ren);
}

const struct gf_inv_comp *gf_inv_set_find(const struct gf_inv_set *s, const char *key)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->v[mid].key, key);

		if (c == 0)
			return &s->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void body_field(struct gf_buf *b, const char *s)
{
	char num[24];
	size_t len, k = sizeof(num);

	if (!s) {
		gf_buf_addc(b, '-');
		return;
	}
	/* The length in decimal, then ':' and the bytes (no printf: this runs 600,000 times a sweep). */
	len = strlen(s);
	num[--k] = ':';
	do {
		num[--k] = (char)('0' + len % 10);
		len /= 10;
	} while (len);
	gf_buf_add(b, num + k, sizeof(num) - k);
	gf_buf_adds(b, s);
}

void gf_inv_set_body(const struct gf_inv_set *s, struct gf_buf *out)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct gf_inv_comp *c = &s->v[i];

		body_field(out, c->key);
		body_field(out, c->version);
		body_field(out, c->source);
		body_field(out, c->raw_id);
		body_field(out, c->name);
		body_field(out, c->kind);
		gf_buf_addc(out, ';');
	}
}

/* Step over one field of a body at *p; false when the body is malformed. */
static bool body_skip(const char **p, const char *end, const char **ret_s, size_t *ret_len)
{
	size_t len = 0;
	const char *q = *p;

	if (q < end && *q == '-') {
		*ret_s = NULL;
		*ret_len = 0;
		*p = q + 1;
		return true;
	}
	while (q < end && *q >= '0' && *q <= '9' && len < ((size_t)1 << 40))
		len = len * 10 + (size_t)(*q++ - '0');
	if (q >= end || *q != ':' || q == *p || (size_t)(end - q - 1) < len)
		return false;
	*ret_s = q + 1;
	*ret_len = len;
	*p = q + 1 + len;
	return true;
}

static void comps_grow(struct gf_strpool *p)
{
	size_t cap = p->ccap ? p->ccap * 2 : 1024;
	struct comp_slot *slot = gf_xcalloc(cap, sizeof(*slot));

	for (size_t i = 0; i < p->ccap; i++) {
		size_t at;

		if (!p->comps[i].rec)
			continue;
		at = (size_t)p->comps[i].hash & (cap - 1);
		while (slot[at].rec)
			at = (at + 1) & (cap - 1);
		slot[at] = p->comps[i];
	}
	free(p->comps);
	p->comps = slot;
	p->ccap = cap;
}

int gf_inv_set_from_body(struct gf_sweep *sw, const char *body, size_t len, struct gf_inv_set *out)
{
	struct gf_strpool *pool = sw->pool;
	const char *p = body, *end = body + len;

	while (p < end) {
		const char *rec = p, *f[6];
		size_t flen[6], rlen, at;
		uint64_t hash;

		for (int k = 0; k < 6; k++)
			if (!body_skip(&p, end, &f[k], &flen[k]))
				return GF_E_DB;
		if (p >= end || *p++ != ';' || !f[0])
			return GF_E_DB;
		/* The same record (key, version, source, id, name, kind) is read once per sweep. */
		rlen = (size_t)(p - rec);
		hash = gf_hash64(rec, rlen);
		if ((pool->cn + 1) * 4 > pool->ccap * 3)
			comps_grow(pool);
		at = (size_t)hash & (pool->ccap - 1);
		while (pool->comps[at].rec &&
		       !(pool->comps[at].hash == hash && pool->comps[at].len == rlen &&
			 memcmp(pool->comps[at].rec, rec, rlen) == 0))
			at = (at + 1) & (pool->ccap - 1);
		if (!pool->comps[at].rec) {
			struct gf_inv_comp *c = &pool->comps[at].comp;
			const char *source = gf_sweep_strn(sw, f[2] ? f[2] : "", flen[2]);

			/* Any name: a newer gpufleet may have stored sources this one lacks. */
			if (!f[2] || !*source)
				return GF_E_DB;
			c->key = gf_sweep_strn(sw, f[0], flen[0]);
			c->version = f[1] ? gf_sweep_strn(sw, f[1], flen[1]) : NULL;
			c->source = source;
			c->raw_id = f[3] ? gf_sweep_strn(sw, f[3], flen[3]) : NULL;
			c->name = f[4] ? gf_sweep_strn(sw, f[4], flen[4]) : NULL;
			c->kind = f[5] ? gf_sweep_strn(sw, f[5], flen[5]) : NULL;
			gf_norm_comp_show(sw, c);
			pool->comps[at].rec = pool_copy(pool, rec, rlen);
			pool->comps[at].len = rlen;
			pool->comps[at].hash = hash;
			pool->cn++;
		}
		*gf_inv_set_add(out) = pool->comps[at].comp;
	}
	return 0;
}

int gf_sweep_make_uid(struct gf_sweep *sw, struct gf_err *err)
{
	unsigned char r[16];
	char hex[33];
	size_t got = 0;

	while (got < sizeof(r)) {
		ssize_t k = getrandom(r + got, sizeof(r) - got, 0);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return gf_err_set(err, GF_E_IO, GF_EK_NONE,
					  "random numbers for a sweep id are not available (%s)",
					  strerror(errno));
		}
		got += (size_t)k;
	}
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(hex + 2 * i, 3, "%02x", r[i]);
	sw->uid = gf_sweep_str(sw, hex);
	return 0;
}

enum gf_node_status gf_sweep_node_judge(const struct gf_sweep_node *n)
{
	bool any = n->fw_read || n->host_read || n->bios_read || n->hardware || n->sel.read ||
		   n->sensors.read;

	if (n->nerrors == 0)
		return GF_NODE_OK;
	return any ? GF_NODE_PARTIAL : GF_NODE_FAILED;
}
