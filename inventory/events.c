#include "inventory/events.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/util.h"

static const char insert_sql[] =
	"INSERT INTO events (node, source, bmc_id, key, time, received, severity,"
	" message, message_id, sensor, type, origin, payload)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
	" ON CONFLICT (node, key) DO NOTHING"; /* stored once; other constraints still fail */
static const char cursor_sql[] =
	"INSERT INTO event_cursors (node, source, cursor, updated) VALUES (?1, ?2, ?3, ?4)"
	" ON CONFLICT (node, source) DO UPDATE SET cursor = excluded.cursor,"
	" updated = excluded.updated";

static int bind_opt(struct gf_db *db, sqlite3_stmt *st, int i, const char *s, const char *what,
		    struct gf_err *err)
{
	if (!s)
		return sqlite3_bind_null(st, i) == SQLITE_OK
			       ? 0
			       : gf_db_fail(db, SQLITE_ERROR, what, err);
	return gf_db_bind_text(db, st, i, s, what, err);
}

static int store_event(struct gf_db *db, sqlite3_stmt *st, const struct gf_events_batch *b,
		       const struct gf_event *e, bool *fresh, const char *what, struct gf_err *err)
{
	char *key = NULL, *payload = NULL;
	int rc;

	if (e->payload)
		payload = json_dumps(e->payload, JSON_COMPACT | JSON_SORT_KEYS);
	if (!e->key) {
		struct gf_buf k;

		gf_buf_init(&k);
		gf_buf_addf(&k, "%s:%s", e->source ? e->source : b->source,
			    e->bmc_id ? e->bmc_id : "");
		key = gf_buf_detach(&k);
	}

	if ((rc = gf_db_bind_text(db, st, 1, e->node ? e->node : b->node, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 2, e->source ? e->source : b->source, what, err)) < 0 ||
	    (rc = bind_opt(db, st, 3, e->bmc_id, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 4, e->key ? e->key : key, what, err)) < 0 ||
	    (rc = e->has_time ? gf_db_bind_double(db, st, 5, e->time, what, err)
			      : bind_opt(db, st, 5, NULL, what, err)) < 0 ||
	    (rc = gf_db_bind_double(db, st, 6, e->received, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 7, gf_severity_name(e->severity), what, err)) < 0 ||
	    (rc = bind_opt(db, st, 8, e->message, what, err)) < 0 ||
	    (rc = bind_opt(db, st, 9, e->message_id, what, err)) < 0 ||
	    (rc = bind_opt(db, st, 10, e->sensor, what, err)) < 0 ||
	    (rc = bind_opt(db, st, 11, e->type, what, err)) < 0 ||
	    (rc = bind_opt(db, st, 12, e->origin, what, err)) < 0 ||
	    (rc = bind_opt(db, st, 13, payload, what, err)) < 0)
		goto out;
	rc = gf_db_step_done(db, st, what, err);
	if (rc == 0 && fresh)
		*fresh = sqlite3_changes(gf_db_sqlite(db)) > 0;
out:
	free(key);
	free(payload);
	return rc;
}

struct store_ctx {
	const struct gf_events_batch *b;
	size_t added;
	double now;
};

static int store_row(struct gf_db *db, sqlite3_stmt *const *st, const char *what, const void *ud,
		     size_t i, struct gf_err *err)
{
	struct store_ctx *c = (struct store_ctx *)ud;
	const struct gf_events_batch *b = &c->b[i];
	int rc;

	for (size_t k = 0; k < b->n; k++) {
		bool fresh = false;

		rc = store_event(db, st[0], b, &b->v[k], &fresh, what, err);
		if (rc < 0)
			return rc;
		if (b->fresh)
			b->fresh[k] = fresh;
		c->added += fresh;
	}
	if (!b->cursor)
		return 0;
	if ((rc = gf_db_bind_text(db, st[1], 1, b->node, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[1], 2, b->source, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[1], 3, b->cursor, what, err)) < 0 ||
	    (rc = gf_db_bind_double(db, st[1], 4, c->now, what, err)) < 0)
		return rc;
	return gf_db_step_done(db, st[1], what, err);
}

int gf_events_store(struct gf_db *db, const struct gf_events_batch *b, size_t nb, size_t *ret_added,
		    struct gf_err *err)
{
	struct store_ctx c = {.b = b, .now = gf_walltime()};
	const struct gf_db_write w = {
		.what = "storing events",
		.sql = {insert_sql, cursor_sql, NULL},
		.row = store_row,
		.ud = &c,
	};
	int rc;

	if (nb == 0) {
		if (ret_added)
			*ret_added = 0;
		return 0;
	}
	rc = gf_db_write(db, &w, nb, err);
	if (rc == 0 && ret_added)
		*ret_added = c.added;
	return rc;
}

int gf_events_store_list(struct gf_db *db, const struct gf_event_list *l, size_t *ret_added,
			 struct gf_err *err)
{
	const struct gf_events_batch b = {.v = l->v, .n = l->n};

	return gf_events_store(db, &b, l->n ? 1 : 0, ret_added, err);
}

int gf_events_cursor(struct gf_db *db, const char *node, const char *source, char **ret,
		     struct gf_err *err)
{
	static const char what[] = "reading an event cursor";
	sqlite3_stmt *st = NULL;
	char *cur = NULL;
	int rc = gf_db_prepare(db,
			       "SELECT cursor FROM event_cursors WHERE node = ?1 AND source = ?2",
			       &st, what, err);

	if (rc < 0)
		return rc;
	if ((rc = gf_db_bind_text(db, st, 1, node, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 2, source, what, err)) < 0)
		goto out;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		cur = gf_db_col_text(st, 0);
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = 0;
	} else {
		rc = gf_db_fail(db, rc, what, err);
	}
	if (rc == 0)
		*ret = cur;
	else
		free(cur);
out:
	sqlite3_finalize(st);
	return rc;
}

/* A JSON array of @v (for json_each), caller frees; NULL when @n is 0. */
static char *json_names(const char *const *v, size_t n)
{
	json_t *a;
	char *s;

	if (!n)
		return NULL;
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

static void row_event(sqlite3_stmt *st, struct gf_event *e)
{
	char *sev = gf_db_col_text(st, 6), *payload = gf_db_col_text(st, 12);
	int s = sev ? gf_severity_parse(sev) : -1;

	e->node = gf_db_col_text(st, 0);
	e->source = gf_db_col_text(st, 1);
	e->bmc_id = gf_db_col_text(st, 2);
	e->key = gf_db_col_text(st, 3);
	e->has_time = sqlite3_column_type(st, 4) != SQLITE_NULL;
	e->time = sqlite3_column_double(st, 4);
	e->received = sqlite3_column_double(st, 5);
	e->severity = s < 0 ? GF_SEV_INFO : (enum gf_severity)s;
	e->message = gf_db_col_text(st, 7);
	e->message_id = gf_db_col_text(st, 8);
	e->sensor = gf_db_col_text(st, 9);
	e->type = gf_db_col_text(st, 10);
	e->origin = gf_db_col_text(st, 11);
	e->payload = payload ? json_loads(payload, 0, NULL) : NULL;
	free(sev);
	free(payload);
}

int gf_events_list(struct gf_db *db, const struct gf_events_query *q, struct gf_event_list *ret,
		   struct gf_err *err)
{
	static const char what[] = "reading events";
	struct gf_event_list l = {0};
	const char *sevs[GF_SEV_CRITICAL + 1];
	size_t nsev = 0;
	char *nodes = json_names(q->nodes, q->nnodes),
	     *sources = json_names(q->sources, q->nsources);
	char *sevj;
	sqlite3_stmt *st = NULL;
	int rc;

	for (int s = GF_SEV_INFO; s <= GF_SEV_CRITICAL; s++)
		if (q->severities & (1u << s))
			sevs[nsev++] = gf_severity_name((enum gf_severity)s);
	sevj = json_names(sevs, nsev);
	rc = gf_db_prepare(db,
			   "SELECT node, source, bmc_id, key, time, received, severity, message,"
			   " message_id, sensor, type, origin, payload FROM events"
			   " WHERE (?1 IS NULL OR node IN (SELECT value FROM json_each(?1)))"
			   " AND (?2 IS NULL OR source IN (SELECT value FROM json_each(?2)))"
			   " AND (?3 IS NULL OR severity IN (SELECT value FROM json_each(?3)))"
			   " AND (?4 IS NULL OR coalesce(time, received) >= ?4)"
			   " ORDER BY coalesce(time, received), node, id",
			   &st, what, err);
	if (rc < 0)
		goto out;
	if ((rc = bind_opt(db, st, 1, nodes, what, err)) < 0 ||
	    (rc = bind_opt(db, st, 2, sources, what, err)) < 0 ||
	    (rc = bind_opt(db, st, 3, sevj, what, err)) < 0)
		goto out;
	if (q->has_since && (rc = gf_db_bind_double(db, st, 4, q->since, what, err)) < 0)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		row_event(st, gf_event_list_add(&l));
	if (rc != SQLITE_DONE) {
		rc = gf_db_fail(db, rc, what, err);
		goto out;
	}
	*ret = l;
	memset(&l, 0, sizeof(l));
	rc = 0;
out:
	sqlite3_finalize(st);
	gf_event_list_release(&l);
	free(nodes);
	free(sources);
	free(sevj);
	return rc;
}

int gf_events_prune(struct gf_db *db, double before, size_t *ret_pruned, struct gf_err *err)
{
	static const char what[] = "pruning events";
	sqlite3_stmt *st = NULL;
	int rc = gf_db_prepare(db, "DELETE FROM events WHERE received < ?1", &st, what, err);

	if (rc < 0)
		return rc;
	if ((rc = gf_db_bind_double(db, st, 1, before, what, err)) == 0 &&
	    (rc = gf_db_step_done(db, st, what, err)) == 0 && ret_pruned)
		*ret_pruned = (size_t)sqlite3_changes(gf_db_sqlite(db));
	sqlite3_finalize(st);
	return rc;
}

int gf_events_counts(struct gf_db *db, const char *const *nodes, size_t nnodes,
		     struct gf_events_count **ret, size_t *ret_n, struct gf_err *err)
{
	static const char what[] = "counting events";
	struct gf_events_count *v = NULL;
	size_t n = 0, cap = 0;
	char *nj = json_names(nodes, nnodes);
	sqlite3_stmt *st = NULL;
	int rc = gf_db_prepare(db,
			       "SELECT node, source, severity, count(*), max(received)"
			       " FROM events WHERE (?1 IS NULL OR node IN"
			       " (SELECT value FROM json_each(?1)))"
			       " GROUP BY node, source, severity ORDER BY node, source, severity",
			       &st, what, err);

	if (rc < 0)
		goto out;
	if ((rc = bind_opt(db, st, 1, nj, what, err)) < 0)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char *sev = gf_db_col_text(st, 2);
		int s = sev ? gf_severity_parse(sev) : -1;

		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			v = gf_xrealloc(v, cap * sizeof(*v));
		}
		v[n++] = (struct gf_events_count){
			.node = gf_db_col_text(st, 0),
			.source = gf_db_col_text(st, 1),
			.severity = s < 0 ? GF_SEV_INFO : (enum gf_severity)s,
			.n = (unsigned long)sqlite3_column_int64(st, 3),
			.last = sqlite3_column_double(st, 4),
		};
		free(sev);
	}
	if (rc != SQLITE_DONE) {
		rc = gf_db_fail(db, rc, what, err);
		goto out;
	}
	*ret = v;
	*ret_n = n;
	v = NULL;
	n = 0;
	rc = 0;
out:
	sqlite3_finalize(st);
	gf_events_counts_free(v, n);
	free(nj);
	return rc;
}

void gf_events_counts_free(struct gf_events_count *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].node);
		free(v[i].source);
	}
	free(v);
}

static enum gf_severity xid_severity(unsigned code)
{
	static const unsigned critical[] = {48, 63, 64, 74, 79, 92, 94, 95, 119, 120};

	for (size_t k = 0; k < sizeof(critical) / sizeof(critical[0]); k++)
		if (critical[k] == code)
			return GF_SEV_CRITICAL;
	return GF_SEV_WARNING;
}

void gf_events_from_xids(const char *node, const struct gf_hostfacts *h, double now,
			 struct gf_event_list *ret)
{
	for (size_t k = 0; h && k < h->nxid_lines; k++) {
		const struct gf_xid_line *x = &h->xid_lines[k];
		const char *msg = strstr(x->line, "NVRM: "), *pci = strchr(x->line, '(');
		size_t repeat = 0, pcilen = pci ? strcspn(pci + 1, ")") : 0;
		struct gf_event *e = gf_event_list_add(ret);
		struct gf_buf key = GF_BUF_INIT, id = GF_BUF_INIT;

		/* The same line twice in one read (a log without timestamps): two events. */
		for (size_t j = 0; j < k; j++)
			repeat += !strcmp(h->xid_lines[j].line, x->line);
		gf_buf_addf(&key, "host-xid:%s", x->line);
		if (repeat)
			gf_buf_addf(&key, "#%zu", repeat + 1);
		gf_buf_addf(&id, "xid-%u", x->code);
		e->node = gf_xstrdup(node);
		e->source = gf_xstrdup("host-xid");
		e->bmc_id = gf_buf_detach(&id);
		e->received = now;
		e->severity = xid_severity(x->code);
		e->message = gf_xstrdup(msg ? msg + 6 : x->line);
		e->sensor = pci ? gf_xstrndup(pci + 1, pcilen) : NULL;
		e->type = gf_xstrdup("xid");
		e->payload = json_pack("{s:i,s:s}", "xid", (int)x->code, "line", x->line);
		e->key = gf_buf_detach(&key);
	}
}
