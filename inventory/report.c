/* The report's model: nodes folded into rows, versions counted, failures and GPU health. */
#include "inventory/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/normalize.h"
#include "lib/buf.h"
#include "lib/nodeset.h"

/* ---- folding: equal signatures, in the order of their first node ------------ */

struct keyed {
	const char *sig; /* what makes nodes alike */
	size_t idx;      /* the node, in sweep order (natural name order) */
	size_t count;    /* a number that goes with it (Xid count ...) */
	const char *detail;
};

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = x->sig == y->sig ? 0 : strcmp(x->sig, y->sig);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The folded names of the nodes of v[from..to). */
static char *fold_names(const struct gf_sweep *sw, const struct keyed *v, size_t from, size_t to)
{
	const char **names = gf_xcalloc(to - from, sizeof(*names));
	char *s;

	for (size_t k = from; k < to; k++)
		names[k - from] = sw->nodes[v[k].idx].node;
	s = gf_nodeset_collapse(names, to - from);
	free(names);
	return s;
}

/* ---- the heat map ------------------------------------------------------------ */

static enum gf_report_cell cell_of(const struct gf_drift_item *it)
{
	if (it->flags & GF_DRIFT_TIE)
		return GF_RCELL_TIE;
	if (it->flags & GF_DRIFT_MISSING)
		return GF_RCELL_MISSING;
	if (it->flags & GF_DRIFT_EXTRA)
		return GF_RCELL_EXTRA;
	return GF_RCELL_OFF;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t col_of(const struct gf_report *r, const char *key)
{
	const char **at = bsearch(&key, r->cols, r->ncols, sizeof(*r->cols), str_cmp);

	return at ? (size_t)(at - r->cols) : r->ncols;
}

static void heat_columns(struct gf_report *r)
{
	const struct gf_drift *d = r->drift;
	size_t n = 0;

	for (size_t i = 0; i < d->n; i++)
		n += d->nodes[i].n;
	r->cols = gf_xcalloc(n ? n : 1, sizeof(*r->cols));
	for (size_t i = 0; i < d->n; i++)
		for (size_t k = 0; k < d->nodes[i].n; k++)
			r->cols[r->ncols++] = d->nodes[i].items[k].component;
	gf_sort(r->cols, r->ncols, sizeof(*r->cols), str_cmp);
	n = 0;
	for (size_t k = 0; k < r->ncols; k++)
		if (n == 0 || strcmp(r->cols[n - 1], r->cols[k]) != 0)
			r->cols[n++] = r->cols[k];
	r->ncols = n;
}

static int row_cmp(const void *a, const void *b)
{
	const struct gf_report_row *x = a, *y = b;
	int c = strcmp(x->class, y->class);

	if (c)
		return c;
	if (x->compared != y->compared)
		return x->compared ? -1 : 1;
	if ((x->items == NULL) != (y->items == NULL))
		return x->items == NULL ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1; /* the biggest groups on top */
	return x->first < y->first ? -1 : x->first > y->first;
}

static void heat_rows(struct gf_report *r)
{
	const struct gf_drift *d = r->drift;
	struct keyed *v = gf_xcalloc(d->n ? d->n : 1, sizeof(*v));
	char **sigs = gf_xcalloc(d->n ? d->n : 1, sizeof(*sigs));

	for (size_t i = 0; i < d->n; i++) {
		const struct gf_drift_node *dn = &d->nodes[i];
		struct gf_buf b = GF_BUF_INIT;

		gf_buf_addf(&b, "%s\x1f%d\x1f%d", dn->class ? dn->class : "", (int)dn->node->status,
			    dn->compared);
		for (size_t k = 0; k < dn->n; k++)
			gf_buf_addf(&b, "\x1f%s\x1e%d", dn->items[k].component,
				    (int)cell_of(&dn->items[k]));
		sigs[i] = gf_buf_detach(&b);
		v[i].sig = sigs[i];
		v[i].idx = i;
	}
	gf_sort(v, d->n, sizeof(*v), keyed_cmp);
	r->rows = gf_xcalloc(d->n ? d->n : 1, sizeof(*r->rows));
	for (size_t a = 0, b; a < d->n; a = b) {
		const struct gf_drift_node *dn = &d->nodes[v[a].idx];
		struct gf_report_row *row = &r->rows[r->nrows];

		for (b = a + 1; b < d->n && strcmp(v[b].sig, v[a].sig) == 0; b++)
			;
		r->nrows++;
		row->first = v[a].idx;
		row->class = dn->class ? dn->class : "";
		row->status = dn->node->status;
		row->compared = dn->compared;
		row->nodes = fold_names(r->sw, v, a, b);
		row->count = b - a;
		row->cells = gf_xcalloc(r->ncols ? r->ncols : 1, 1);
		if (!dn->compared)
			memset(row->cells, GF_RCELL_NONE, r->ncols);
		if (dn->n)
			row->items = gf_xcalloc(r->ncols, sizeof(*row->items));
		for (size_t k = 0; k < dn->n; k++) {
			size_t c = col_of(r, dn->items[k].component);

			row->cells[c] = (unsigned char)cell_of(&dn->items[k]);
			row->items[c] = &dn->items[k];
		}
	}
	/* Rows by model, agreeing nodes first, then the biggest groups. */
	gf_sort(r->rows, r->nrows, sizeof(*r->rows), row_cmp);
	for (size_t i = 0; i < d->n; i++)
		free(sigs[i]);
	free(sigs);
	free(v);
}

/* ---- versions of every component ---------------------------------------------- */

struct held {
	const char *key, *version; /* pooled in the sweep: equal strings are one pointer */
	const char *source;
	const char *shown; /* the key as shown (a BIOS setting in its BMC's case) */
	size_t idx;
};

static int nullstr_cmp(const char *a, const char *b)
{
	if (a == b)
		return 0;
	if (!a || !b)
		return a ? 1 : -1;
	return strcmp(a, b);
}

static int held_cmp(const void *a, const void *b)
{
	const struct held *x = a, *y = b;
	int c = x->key == y->key ? 0 : strcmp(x->key, y->key);

	if (c == 0)
		c = nullstr_cmp(x->version, y->version);
	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int version_cmp(const void *a, const void *b)
{
	const struct gf_report_version *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return nullstr_cmp(x->version, y->version);
}

static void versions(struct gf_report *r)
{
	const struct gf_sweep *sw = r->sw;
	struct held *v;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < sw->n; i++)
		cap += sw->nodes[i].set->n;
	v = gf_xcalloc(cap ? cap : 1, sizeof(*v));
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_inv_set *s = sw->nodes[i].set;

		for (size_t k = 0; k < s->n; k++)
			v[n++] = (struct held){s->v[k].key, s->v[k].version, s->v[k].source,
					       gf_norm_comp_shown(&s->v[k]), i};
	}
	gf_sort(v, n, sizeof(*v), held_cmp);
	r->comps = gf_xcalloc(n ? n : 1, sizeof(*r->comps));
	for (size_t a = 0, b; a < n; a = b) {
		struct gf_report_comp *c = &r->comps[r->ncomps++];
		size_t nv = 0;

		for (b = a + 1; b < n && strcmp(v[b].key, v[a].key) == 0; b++)
			;
		c->key = v[a].shown;
		c->source = v[a].source;
		c->drifted = col_of(r, c->key) < r->ncols;
		for (size_t k = a; k < b; k++)
			nv += k == a || nullstr_cmp(v[k].version, v[k - 1].version) != 0;
		c->v = gf_xcalloc(nv, sizeof(*c->v));
		for (size_t k = a, e; k < b; k = e) {
			struct gf_report_version *ver = &c->v[c->n++];
			struct keyed *names;

			for (e = k + 1; e < b && nullstr_cmp(v[e].version, v[k].version) == 0; e++)
				;
			ver->version = v[k].version;
			ver->count = e - k;
			names = gf_xcalloc(e - k, sizeof(*names));
			for (size_t j = k; j < e; j++)
				names[j - k].idx = v[j].idx;
			ver->nodes = fold_names(sw, names, 0, e - k);
			free(names);
		}
		gf_sort(c->v, c->n, sizeof(*c->v), version_cmp);
		free(c->v[0].nodes); /* everyone else: the list says nothing */
		c->v[0].nodes = NULL;
	}
	free(v);
}

/* ---- issues: failures and GPU health ------------------------------------------- */

struct issues {
	struct keyed *v;
	char **owned; /* the signatures made here */
	size_t n, cap;
};

static void issue_add(struct issues *is, char *what, size_t idx, size_t count, const char *detail)
{
	if (is->n == is->cap) {
		is->cap = is->cap ? 2 * is->cap : 64;
		is->v = gf_xrealloc(is->v, is->cap * sizeof(*is->v));
		is->owned = gf_xrealloc(is->owned, is->cap * sizeof(*is->owned));
	}
	is->owned[is->n] = what;
	is->v[is->n++] = (struct keyed){what, idx, count, detail};
}

/*
 * Fold the issues into one per signature (@severe decides which stand out),
 * with the total of their counts as detail when @counted, else the first
 * node's detail.
 */
static struct gf_report_issue *issues_fold(const struct gf_sweep *sw, struct issues *is,
					   bool counted, bool (*severe)(const char *what),
					   size_t *ret_n)
{
	struct gf_report_issue *out = gf_xcalloc(is->n ? is->n : 1, sizeof(*out));
	size_t n = 0;

	if (is->n)
		gf_sort(is->v, is->n, sizeof(*is->v), keyed_cmp);
	for (size_t a = 0, b; a < is->n; a = b) {
		struct gf_report_issue *o = &out[n++];
		size_t total = 0;

		for (b = a; b < is->n && strcmp(is->v[b].sig, is->v[a].sig) == 0; b++)
			total += is->v[b].count;
		o->what = gf_xstrdup(is->v[a].sig);
		o->nodes = fold_names(sw, is->v, a, b);
		o->count = b - a;
		o->severe = severe(o->what);
		if (counted) {
			struct gf_buf t = GF_BUF_INIT;

			gf_buf_addf(&t, "%zu", total);
			o->detail = gf_buf_detach(&t);
		} else if (is->v[a].detail) {
			o->detail = gf_xstrdup(is->v[a].detail);
		}
	}
	for (size_t k = 0; k < is->n; k++)
		free(is->owned[k]);
	free(is->owned);
	free(is->v);
	*ret_n = n;
	return out;
}

static bool failed_severe(const char *what)
{
	return strncmp(what, "failed", 6) == 0;
}

static void failures(struct gf_report *r)
{
	struct issues is = {0};

	for (size_t i = 0; i < r->sw->n; i++) {
		const struct gf_sweep_node *n = &r->sw->nodes[i];
		struct gf_buf b = GF_BUF_INIT;

		if (n->status == GF_NODE_OK)
			continue;
		gf_buf_adds(&b, gf_node_status_name(n->status));
		for (size_t k = 0; k < n->nerrors; k++) {
			size_t j;

			for (j = 0; j < k; j++)
				if (strcmp(n->errors[j].op, n->errors[k].op) == 0 &&
				    n->errors[j].kind == n->errors[k].kind)
					break;
			if (j == k)
				gf_buf_addf(&b, "%s %s %s", k ? "," : ":", n->errors[k].op,
					    gf_errkind_name(n->errors[k].kind));
		}
		issue_add(&is, gf_buf_detach(&b), i, 1, n->nerrors ? n->errors[0].message : NULL);
	}
	r->failures = issues_fold(r->sw, &is, false, failed_severe, &r->nfailures);
}

/* Xid codes that mean a GPU needs attention now (the contrib/ alert rules). */
static bool health_severe(const char *what)
{
	return strcmp(what, "Xid 79") == 0 || strcmp(what, "Xid 48") == 0 ||
	       strcmp(what, "Xid 94") == 0 || strcmp(what, "Xid 95") == 0 ||
	       strncmp(what, "uncorrected", 11) == 0 || strncmp(what, "nvidia-smi", 10) == 0;
}

static char *join(const char *a, const char *b)
{
	struct gf_buf t = GF_BUF_INIT;

	gf_buf_adds(&t, a);
	gf_buf_adds(&t, b);
	return gf_buf_detach(&t);
}

static size_t count_of(struct gf_count c)
{
	return c.set ? (size_t)c.v : 0;
}

/* The findings of one node's host facts. */
static void host_health(struct issues *is, const struct gf_hostfacts *h, size_t idx)
{
	size_t vol = 0, agg = 0, remap = 0, retired = 0;

	if (h->health != GF_HEALTH_OK)
		issue_add(is, join("nvidia-smi: ", gf_host_health_name(h->health)), idx, 1, NULL);
	for (size_t k = 0; h->xid_read && k < h->nxids; k++) {
		char code[16];

		if (h->xids[k].count == 0)
			continue;
		snprintf(code, sizeof(code), "%u", h->xids[k].code);
		issue_add(is, join("Xid ", code), idx, h->xids[k].count, NULL);
	}
	for (size_t k = 0; k < h->ngpus; k++) {
		const struct gf_host_gpu *g = &h->gpus[k];

		vol += count_of(g->ecc_volatile_uncorrected);
		agg += count_of(g->ecc_aggregate_uncorrected);
		remap += g->remapped_rows_pending == GF_TRI_YES;
		retired += g->retired_pages_pending == GF_TRI_YES;
	}
	if (vol)
		issue_add(is, gf_xstrdup("uncorrected ECC errors (volatile)"), idx, vol, NULL);
	if (agg)
		issue_add(is, gf_xstrdup("uncorrected ECC errors (aggregate)"), idx, agg, NULL);
	if (remap)
		issue_add(is, gf_xstrdup("GPUs with remapped rows pending"), idx, remap, NULL);
	if (retired)
		issue_add(is, gf_xstrdup("GPUs with retired pages pending"), idx, retired, NULL);
}

static void health(struct gf_report *r)
{
	struct issues is = {0};

	for (size_t i = 0; i < r->sw->n; i++) {
		const struct gf_sweep_node *n = &r->sw->nodes[i];

		if (!n->host_read || !n->host)
			continue;
		r->health_nodes++;
		host_health(&is, n->host, i);
	}
	r->health = issues_fold(r->sw, &is, true, health_severe, &r->nhealth);
}

/* ---- the whole ------------------------------------------------------------------ */

struct gf_report *gf_report_build(struct gf_sweep *sw, struct gf_sweep *before, struct gf_drift *d,
				  const char *mode)
{
	struct gf_report *r = gf_xcalloc(1, sizeof(*r));

	r->sw = sw;
	r->before = before;
	r->drift = d;
	r->mode = mode;
	r->nodes = sw->n;
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_sweep_node *n = &sw->nodes[i];

		r->ok += n->status == GF_NODE_OK;
		r->partial += n->status == GF_NODE_PARTIAL;
		r->failed += n->status == GF_NODE_FAILED;
		if (i == 0 || n->time < r->oldest)
			r->oldest = n->time;
		if (i == 0 || n->time > r->newest)
			r->newest = n->time;
	}
	r->drifting = d->drifting;
	r->not_compared = d->not_compared;
	r->items = d->items;
	heat_columns(r);
	heat_rows(r);
	versions(r);
	failures(r);
	health(r);
	r->rec = gf_reconcile_compute(sw);
	return r;
}

static void issues_free(struct gf_report_issue *v, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		free(v[k].what);
		free(v[k].detail);
		free(v[k].nodes);
	}
	free(v);
}

void gf_report_free(struct gf_report *r)
{
	if (!r)
		return;
	for (size_t k = 0; k < r->nrows; k++) {
		free(r->rows[k].nodes);
		free(r->rows[k].cells);
		free(r->rows[k].items);
	}
	free(r->rows);
	for (size_t k = 0; k < r->ncomps; k++) {
		for (size_t j = 0; j < r->comps[k].n; j++)
			free(r->comps[k].v[j].nodes);
		free(r->comps[k].v);
	}
	free(r->comps);
	free(r->cols);
	issues_free(r->failures, r->nfailures);
	issues_free(r->health, r->nhealth);
	gf_reconcile_free(r->rec);
	gf_drift_free(r->drift);
	gf_sweep_free(r->before);
	gf_sweep_free(r->sw);
	free(r->mode_owned);
	free(r);
}

int gf_report_load(struct gf_db *db, const struct gf_report_query *q, struct gf_report **ret,
		   struct gf_err *err)
{
	struct gf_store_query sq = {.details = true, .nodes = q->nodes, .nnodes = q->nnodes};
	struct gf_drift_opts o = {.mode = q->mode, .baseline = q->baseline};
	struct gf_sweep *sw = NULL, *before = NULL;
	struct gf_drift *d = NULL;
	const char **classes = NULL;
	struct gf_report *r;
	int rc;

	rc = gf_store_load(db, &sq, &sw, err);
	if (rc < 0)
		goto out;
	if (q->mode == GF_DRIFT_SINCE) {
		struct gf_store_query bq = *q->since;

		bq.nodes = q->nodes;
		bq.nnodes = q->nnodes;
		rc = gf_store_load(db, &bq, &before, err);
		if (rc < 0)
			goto out;
		o.before = before;
	}
	if (q->mode == GF_DRIFT_MAJORITY) {
		classes = gf_drift_model_classes(sw);
		o.classes = classes;
	}
	rc = gf_drift_compute(sw, &o, &d, err);
	if (rc < 0)
		goto out;
	r = gf_report_build(sw, before, d, "majority by model");
	sw = before = NULL;
	d = NULL;
	if (q->mode == GF_DRIFT_BASELINE) {
		r->mode = "baseline";
	} else if (q->mode == GF_DRIFT_SINCE) {
		r->mode_owned = join("changes since ", q->since_text ? q->since_text : "then");
		r->mode = r->mode_owned;
	}
	*ret = r;
out:
	free(classes);
	gf_drift_free(d);
	gf_sweep_free(before);
	gf_sweep_free(sw);
	return rc;
}
