/* Firmware rollouts in the inventory: the plan and each node's state as it changes. */
#include "inventory/rollout.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/catalog.h"
#include "lib/buf.h"
#include "lib/util.h"

static const char *const state_names[] = {
	[GF_RS_NOT_STARTED] = "not-started",
	[GF_RS_RUNNING] = "running",
	[GF_RS_DONE] = "done",
	[GF_RS_SKIPPED] = "skipped",
	[GF_RS_FAILED] = "failed",
	[GF_RS_PENDING] = "pending-activation",
	[GF_RS_UNSUPPORTED] = "unsupported",
	[GF_RS_STOPPED] = "stopped",
	[GF_RS_FINISHED] = "finished",
	[GF_RS_INTERRUPTED] = "interrupted",
};

const char *gf_rollout_state_name(enum gf_rollout_state s)
{
	return (size_t)s < sizeof(state_names) / sizeof(state_names[0]) && state_names[s]
		       ? state_names[s]
		       : "failed";
}

int gf_rollout_state_parse(const char *s)
{
	for (size_t i = 0; s && i < sizeof(state_names) / sizeof(state_names[0]); i++)
		if (state_names[i] && strcmp(state_names[i], s) == 0)
			return (int)i;
	return -1;
}

bool gf_rollout_state_ok(enum gf_rollout_state s)
{
	return s == GF_RS_DONE || s == GF_RS_SKIPPED;
}

char *gf_rollout_opts_format(const struct gf_rollout_opts *o)
{
	json_t *j = json_pack("{s:s?, s:I, s:I, s:I, s:b, s:f, s:f}", "component", o->component,
			      "canary", (json_int_t)o->canary, "batch", (json_int_t)o->batch,
			      "max_failures", (json_int_t)o->max_failures, "reboot", o->reboot,
			      "update_timeout", o->update_timeout, "readback_wait",
			      o->readback_wait);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref(j);
	return s;
}

void gf_rollout_opts_stored(const struct gf_rollout *r, const struct gf_rollout_opts *given,
			    struct gf_rollout_opts *ret, char **own)
{
	json_t *j = json_loads(r->options ? r->options : "{}", 0, NULL);
	const char *comp = json_string_value(json_object_get(j, "component"));
	json_t *v;

	*ret = *given;
	*own = comp ? gf_xstrdup(comp) : NULL;
	ret->component = *own;
	ret->reboot = json_is_true(json_object_get(j, "reboot")) || given->reboot;
	ret->max_failures = (unsigned long)json_integer_value(json_object_get(j, "max_failures"));
	if (json_is_number(v = json_object_get(j, "update_timeout")))
		ret->update_timeout = json_number_value(v);
	if (json_is_number(v = json_object_get(j, "readback_wait")))
		ret->readback_wait = json_number_value(v);
	json_decref(j);
}

void gf_rollout_node_release(struct gf_rollout_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nitems; i++) {
		struct gf_rollout_item *it = &n->items[i];

		free(it->component);
		free(it->from);
		free(it->to);
		free(it->action);
		free(it->activation);
		free(it->kind);
		free(it->message);
		free(it->sha256);
	}
	free(n->items);
	free(n->node);
	free(n->kind);
	free(n->message);
	*n = (struct gf_rollout_node){0};
}

void gf_rollout_release(struct gf_rollout *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		gf_rollout_node_release(&r->nodes[i]);
	free(r->nodes);
	for (size_t i = 0; i < r->nimages; i++)
		free(r->images[i].file);
	free(r->images);
	free(r->user);
	free(r->catalog_path);
	free(r->catalog_text);
	free(r->options);
	*r = (struct gf_rollout){0};
}

static int bind_node(struct gf_db *db, sqlite3_stmt *st, long id, size_t seq,
		     const struct gf_rollout_node *n, const char *what, struct gf_err *err)
{
	int rc;

	sqlite3_bind_int64(st, 1, id);
	if ((rc = gf_db_bind_text(db, st, 2, n->node, what, err)) < 0)
		return rc;
	sqlite3_bind_int64(st, 3, (sqlite3_int64)seq);
	sqlite3_bind_int64(st, 4, n->batch);
	if ((rc = gf_db_bind_text(db, st, 5, gf_rollout_state_name(n->state), what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 6, n->kind, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 7, n->message, what, err)) < 0)
		return rc;
	sqlite3_bind_double(st, 8, n->updated > 0 ? n->updated : gf_time_ms(gf_walltime()));
	return gf_db_step_done(db, st, what, err);
}

static int bind_items(struct gf_db *db, sqlite3_stmt *st, long id, const struct gf_rollout_node *n,
		      const char *what, struct gf_err *err)
{
	for (size_t i = 0; i < n->nitems; i++) {
		const struct gf_rollout_item *it = &n->items[i];
		int rc;

		sqlite3_bind_int64(st, 1, id);
		if ((rc = gf_db_bind_text(db, st, 2, n->node, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st, 3, it->component, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st, 4, it->from, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st, 5, it->to, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st, 6, it->action, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st, 7, it->activation, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st, 8, gf_rollout_state_name(it->state), what, err)) <
			    0 ||
		    (rc = gf_db_bind_text(db, st, 9, it->kind, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st, 10, it->message, what, err)) < 0 ||
		    (rc = gf_db_step_done(db, st, what, err)) < 0)
			return rc;
	}
	return 0;
}

#define NODE_SQL                                                                       \
	"INSERT INTO rollout_nodes (rollout, node, seq, batch, state, kind, message, " \
	"updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
#define ITEM_SQL                                                                         \
	"INSERT OR REPLACE INTO rollout_items (rollout, node, component, from_version, " \
	"to_version, action, activation, state, kind, message) "                         \
	"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"

struct create_ud {
	const struct gf_rollout *r;
	long *id;
	const char *const *work; /* the nodes it updates: none may be another live rollout's */
	size_t nwork;
	const struct gf_rollout_holder *self;
};

#define IMAGE_SQL                                                                              \
	"INSERT INTO rollout_images (rollout, image, file, size, sha256) VALUES (?1, ?2, ?3, " \
	"?4, ?5)"

/* The image files as planned, in the rollout's first row. */
static int bind_images(struct gf_db *db, const struct gf_rollout *r, long id, const char *what,
		       struct gf_err *err)
{
	sqlite3_stmt *st;
	int rc;

	if (r->nimages == 0)
		return 0;
	if ((rc = gf_db_prepare(db, IMAGE_SQL, &st, what, err)) < 0)
		return rc;
	for (size_t i = 0; rc == 0 && i < r->nimages; i++) {
		const struct gf_catalog_record *im = &r->images[i];

		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)im->image);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)im->size);
		if ((rc = gf_db_bind_text(db, st, 3, im->file, what, err)) == 0 &&
		    (rc = gf_db_bind_text(db, st, 5, im->sha256, what, err)) == 0)
			rc = gf_db_step_done(db, st, what, err);
	}
	sqlite3_finalize(st);
	return rc;
}

static int create_row(struct gf_db *db, struct sqlite3_stmt *const *st, const char *what,
		      const void *vud, size_t i, struct gf_err *err)
{
	const struct create_ud *ud = vud;
	const struct gf_rollout *r = ud->r;
	int rc;

	if (i == 0) {
		if ((rc = gf_rollout_check_held(db, ud->work, ud->nwork, err)) < 0)
			return rc;
		sqlite3_bind_int64(st[0], 6, ud->self->pid);
		sqlite3_bind_int64(st[0], 7, ud->self->start);
		if ((rc = gf_db_bind_text(db, st[0], 8, ud->self->boot, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st[0], 1, r->user, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st[0], 2, r->catalog_path, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st[0], 3, r->catalog_text, what, err)) < 0 ||
		    (rc = gf_db_bind_text(db, st[0], 4, r->options, what, err)) < 0)
			return rc;
		sqlite3_bind_double(st[0], 5,
				    gf_time_ms(r->started > 0 ? r->started : gf_walltime()));
		if ((rc = gf_db_step_done(db, st[0], what, err)) < 0)
			return rc;
		*ud->id = (long)sqlite3_last_insert_rowid(gf_db_sqlite(db));
		if ((rc = bind_images(db, r, *ud->id, what, err)) < 0)
			return rc;
	}
	if ((rc = bind_node(db, st[1], *ud->id, i, &r->nodes[i], what, err)) < 0)
		return rc;
	return bind_items(db, st[2], *ud->id, &r->nodes[i], what, err);
}

int gf_rollout_create(struct gf_db *db, const struct gf_rollout *r, long *ret_id,
		      struct gf_err *err)
{
	long id = 0;
	struct gf_rollout_holder self;
	const char **work = gf_xcalloc(r->n ? r->n : 1, sizeof(*work));
	struct create_ud ud = {r, &id, work, 0, &self};
	const struct gf_db_write w = {
		.what = "storing a rollout",
		.sql = {"INSERT INTO rollouts (user, catalog_path, catalog, options, started, state, "
			"holder_pid, holder_start, holder_boot) "
			"VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7, ?8)",
			NODE_SQL, ITEM_SQL},
		.row = create_row,
		.ud = &ud,
	};
	int rc;

	if (r->n == 0)
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "a rollout needs at least one node");
	else
		rc = gf_rollout_holder_self(&self, err);
	for (size_t i = 0; i < r->n; i++)
		if (r->nodes[i].state == GF_RS_NOT_STARTED)
			work[ud.nwork++] = r->nodes[i].node;
	if (rc == 0)
		rc = gf_db_write(db, &w, r->n, err);
	free(work);
	if (rc == 0)
		*ret_id = id;
	return rc;
}

struct set_ud {
	long id;
	const struct gf_rollout_node *nodes;
};

static int set_row(struct gf_db *db, struct sqlite3_stmt *const *st, const char *what,
		   const void *vud, size_t i, struct gf_err *err)
{
	const struct set_ud *ud = vud;
	const struct gf_rollout_node *n = &ud->nodes[i];
	int rc;

	sqlite3_bind_int64(st[0], 1, ud->id);
	if ((rc = gf_db_bind_text(db, st[0], 2, n->node, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 3, gf_rollout_state_name(n->state), what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 4, n->kind, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 5, n->message, what, err)) < 0)
		return rc;
	sqlite3_bind_double(st[0], 6, gf_time_ms(n->updated > 0 ? n->updated : gf_walltime()));
	if ((rc = gf_db_step_done(db, st[0], what, err)) < 0)
		return rc;
	if (sqlite3_changes(gf_db_sqlite(db)) != 1)
		return gf_err_set(err, GF_E_NOTFOUND, GF_EK_NONE, "rollout %ld has no node '%s'",
				  ud->id, n->node);
	return bind_items(db, st[1], ud->id, n, what, err);
}

int gf_rollout_nodes_set(struct gf_db *db, long id, const struct gf_rollout_node *nodes, size_t n,
			 struct gf_err *err)
{
	struct set_ud ud = {id, nodes};
	const struct gf_db_write w = {
		.what = "storing the state of a rollout",
		.sql = {"UPDATE rollout_nodes SET state = ?3, kind = ?4, message = ?5, updated = ?6 "
			"WHERE rollout = ?1 AND node = ?2",
			ITEM_SQL},
		.row = set_row,
		.ud = &ud,
	};

	return gf_db_write(db, &w, n, err);
}

struct state_ud {
	long id;
	enum gf_rollout_state state;
};

static int state_row(struct gf_db *db, struct sqlite3_stmt *const *st, const char *what,
		     const void *vud, size_t i, struct gf_err *err)
{
	const struct state_ud *ud = vud;
	int rc;

	(void)i;
	sqlite3_bind_int64(st[0], 1, ud->id);
	if ((rc = gf_db_bind_text(db, st[0], 2, gf_rollout_state_name(ud->state), what, err)) < 0)
		return rc;
	sqlite3_bind_double(st[0], 3, gf_time_ms(gf_walltime()));
	return gf_db_step_done(db, st[0], what, err);
}

int gf_rollout_set_state(struct gf_db *db, long id, enum gf_rollout_state state, struct gf_err *err)
{
	struct state_ud ud = {id, state};
	const struct gf_db_write w = {
		.what = "storing the state of a rollout",
		/* Stopped or finished: its holder lets go of it. */
		.sql = {"UPDATE rollouts SET state = ?2, finished = CASE WHEN ?2 = 'finished' "
			"THEN ?3 ELSE NULL END, holder_pid = CASE WHEN ?2 = 'running' THEN "
			"holder_pid END, holder_start = CASE WHEN ?2 = 'running' THEN holder_start "
			"END, holder_boot = CASE WHEN ?2 = 'running' THEN holder_boot END "
			"WHERE id = ?1"},
		.row = state_row,
		.ud = &ud,
	};

	return gf_db_write(db, &w, 1, err);
}

static char *col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);

	return s ? gf_xstrdup((const char *)s) : NULL;
}

/* Column @i as a state; the schema's CHECK keeps it one of the names. */
static int col_state(sqlite3_stmt *st, int i, enum gf_rollout_state *ret, struct gf_err *err)
{
	const char *s = (const char *)sqlite3_column_text(st, i);
	int v = gf_rollout_state_parse(s);

	if (v < 0)
		return gf_err_set(err, GF_E_DB, GF_EK_NONE, "reading a rollout: unknown state '%s'",
				  s ? s : "");
	*ret = (enum gf_rollout_state)v;
	return 0;
}

/* What reading a rollout's rows says when it fails. */
static const char load_what[] = "reading a rollout";

/* @sql (its ?1: the rollout) prepared with rollout @id bound. */
static int of_rollout(struct gf_db *db, long id, const char *sql, sqlite3_stmt **st,
		      struct gf_err *err)
{
	int rc = gf_db_prepare(db, sql, st, load_what, err);

	if (rc >= 0)
		sqlite3_bind_int64(*st, 1, id);
	return rc;
}

static int load_items(struct gf_db *db, struct gf_rollout *r, struct gf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = of_rollout(db, r->id,
			    "SELECT node, component, from_version, to_version, action, activation, "
			    "state, kind, message FROM rollout_items "
			    "WHERE rollout = ?1 ORDER BY node, component",
			    &st, err);

	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(st, 0);
		struct gf_rollout_node *n = NULL;
		struct gf_rollout_item *it;

		for (size_t k = 0; node && k < r->n && !n; k++)
			if (strcmp(r->nodes[k].node, node) == 0)
				n = &r->nodes[k];
		if (!n)
			continue;
		n->items = gf_xrealloc(n->items, (n->nitems + 1) * sizeof(*n->items));
		it = &n->items[n->nitems++];
		*it = (struct gf_rollout_item){
			.component = col_dup(st, 1),
			.from = col_dup(st, 2),
			.to = col_dup(st, 3),
			.action = col_dup(st, 4),
			.activation = col_dup(st, 5),
			.kind = col_dup(st, 7),
			.message = col_dup(st, 8),
		};
		if ((rc = col_state(st, 6, &it->state, err)) < 0)
			break;
	}
	if (rc >= 0)
		rc = rc == SQLITE_DONE ? 0 : gf_db_fail(db, rc, load_what, err);
	sqlite3_finalize(st);
	return rc;
}

static int load_images(struct gf_db *db, struct gf_rollout *r, struct gf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = of_rollout(db, r->id,
			    "SELECT image, file, size, sha256 FROM rollout_images "
			    "WHERE rollout = ?1 ORDER BY image",
			    &st, err);

	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct gf_catalog_record *im;

		r->images = gf_xrealloc(r->images, (r->nimages + 1) * sizeof(*r->images));
		im = &r->images[r->nimages++];
		*im = (struct gf_catalog_record){
			.image = (size_t)sqlite3_column_int64(st, 0),
			.file = col_dup(st, 1),
			.size = (unsigned long long)sqlite3_column_int64(st, 2),
		};
		snprintf(im->sha256, sizeof(im->sha256), "%s",
			 sqlite3_column_text(st, 3) ? (const char *)sqlite3_column_text(st, 3)
						    : "");
	}
	rc = rc == SQLITE_DONE ? 0 : gf_db_fail(db, rc, load_what, err);
	sqlite3_finalize(st);
	return rc;
}

int gf_rollout_load(struct gf_db *db, long id, struct gf_rollout *ret, struct gf_err *err)
{
	static const char what[] = "reading a rollout";
	struct gf_rollout r = {0};
	sqlite3_stmt *st = NULL;
	int rc;

	rc = gf_db_prepare(
		db,
		id > 0 ? "SELECT id, started, finished, user, state, catalog_path, catalog, options "
			 "FROM rollouts WHERE id = ?1"
		       : "SELECT id, started, finished, user, state, catalog_path, catalog, options "
			 "FROM rollouts ORDER BY id DESC LIMIT 1",
		&st, what, err);
	if (rc < 0)
		return rc;
	if (id > 0)
		sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		sqlite3_finalize(st);
		if (id > 0)
			return gf_err_set(err, GF_E_NOTFOUND, GF_EK_NONE, "there is no rollout %ld",
					  id);
		return gf_err_set(err, GF_E_NOTFOUND, GF_EK_NONE, "there is no rollout yet");
	}
	if (rc != SQLITE_ROW) {
		rc = gf_db_fail(db, rc, what, err);
		sqlite3_finalize(st);
		return rc;
	}
	r.id = (long)sqlite3_column_int64(st, 0);
	r.started = sqlite3_column_double(st, 1);
	r.finished = sqlite3_column_double(st, 2);
	r.user = col_dup(st, 3);
	r.catalog_path = col_dup(st, 5);
	r.catalog_text = col_dup(st, 6);
	r.options = col_dup(st, 7);
	rc = col_state(st, 4, &r.state, err);
	sqlite3_finalize(st);
	if (rc < 0)
		goto out;

	rc = gf_db_prepare(db,
			   "SELECT node, batch, state, kind, message, updated FROM rollout_nodes "
			   "WHERE rollout = ?1 ORDER BY seq",
			   &st, what, err);
	if (rc < 0)
		goto out;
	sqlite3_bind_int64(st, 1, r.id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct gf_rollout_node *n;

		r.nodes = gf_xrealloc(r.nodes, (r.n + 1) * sizeof(*r.nodes));
		n = &r.nodes[r.n++];
		*n = (struct gf_rollout_node){
			.node = col_dup(st, 0),
			.batch = (unsigned)sqlite3_column_int64(st, 1),
			.kind = col_dup(st, 3),
			.message = col_dup(st, 4),
			.updated = sqlite3_column_double(st, 5),
		};
		if ((rc = col_state(st, 2, &n->state, err)) < 0)
			break;
	}
	if (rc >= 0)
		rc = rc == SQLITE_DONE ? 0 : gf_db_fail(db, rc, what, err);
	sqlite3_finalize(st);
	if (rc == 0)
		rc = load_items(db, &r, err);
	if (rc == 0)
		rc = load_images(db, &r, err);
out:
	if (rc < 0) {
		gf_rollout_release(&r);
		return rc;
	}
	*ret = r;
	return 0;
}

/* {"component","from","to","action","activation","host_reboot"} of one item. */
json_t *gf_rollout_item_json(const struct gf_rollout_item *it)
{
	int act = gf_activation_parse(it->activation);

	json_t *o = json_pack("{s:s, s:s?, s:s, s:s, s:s, s:b}", "component", it->component, "from",
			      it->from, "to", it->to, "action", it->action, "activation",
			      it->activation, "host_reboot",
			      act >= 0 && gf_activation_is_host((enum gf_activation)act));

	if (it->sha256)
		json_object_set_new(o, "sha256", json_string(it->sha256));
	return o;
}

/* A stored node as the documented object: {"node","ok","rollout","batch","state","updates"}. */
json_t *gf_rollout_node_json(long id, const struct gf_rollout_node *n)
{
	bool ok = gf_rollout_state_ok(n->state);
	const char *state = gf_rollout_state_name(n->state);
	json_t *ups = json_array();
	json_t *o = json_pack("{s:s, s:b, s:I, s:i, s:s}", "node", n->node, "ok", ok, "rollout",
			      (json_int_t)id, "batch", (int)n->batch, "state", state);

	for (size_t i = 0; i < n->nitems; i++) {
		const struct gf_rollout_item *it = &n->items[i];
		json_t *j = json_pack("{s:s, s:s?, s:s, s:s, s:s, s:s}", "component", it->component,
				      "from", it->from, "to", it->to, "action", it->action,
				      "activation", it->activation, "state",
				      gf_rollout_state_name(it->state));

		if (it->kind)
			json_object_set_new(j, "error",
					    json_pack("{s:s, s:s?}", "kind", it->kind, "message",
						      it->message));
		json_array_append_new(ups, j);
	}
	json_object_set_new(o, "updates", ups);
	if (!ok || n->kind) /* skipped with a kind: unreachable at plan */
		json_object_set_new(o, "error",
				    json_pack("{s:s, s:s}", "kind",
					      n->kind ? n->kind
						      : (n->state == GF_RS_NOT_STARTED ? "internal"
										       : "refused"),
					      "message", n->message ? n->message : state));
	return o;
}
