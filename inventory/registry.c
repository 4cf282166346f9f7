/* The node registry: nodes and their groups. */
#include "inventory/registry.h"

#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "inventory/db.h"
#include "lib/buf.h"
#include "lib/util.h"

static const char sql_node_insert[] =
	"INSERT INTO nodes (name, bmc, bmc_port, protocol, ssh, profile, added)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id";
static const char sql_node_upsert[] =
	"INSERT INTO nodes (name, bmc, bmc_port, protocol, ssh, profile, added)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
	" ON CONFLICT (name) DO UPDATE SET bmc = excluded.bmc, bmc_port = excluded.bmc_port,"
	" protocol = excluded.protocol, ssh = excluded.ssh, profile = excluded.profile"
	" RETURNING id";

/* Insert or update one node; *ret_id is its row id. */
static int node_put(struct gf_db *db, sqlite3_stmt *st, const struct gf_node *n, double now,
		    const char *what, sqlite3_int64 *ret_id, struct gf_err *err)
{
	sqlite3_int64 id;
	int rc;

	if ((rc = gf_db_bind_text(db, st, 1, n->name, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 2, n->bmc, what, err)) < 0 ||
	    (rc = gf_db_bind_int64(db, st, 3, n->bmc_port, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 4, gf_proto_name(n->protocol), what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 5, n->ssh, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st, 6, n->profile, what, err)) < 0 ||
	    (rc = gf_db_bind_double(db, st, 7, now, what, err)) < 0)
		return rc;

	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_UNIQUE) {
		sqlite3_reset(st);
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "node '%s' already exists", n->name);
	}
	if (rc != SQLITE_ROW) {
		rc = gf_db_fail(db, rc == SQLITE_DONE ? SQLITE_ERROR : rc, what, err);
		sqlite3_reset(st);
		return rc;
	}
	id = sqlite3_column_int64(st, 0);
	rc = gf_db_step_done(db, st, what, err);
	if (rc < 0)
		return rc;
	*ret_id = id;
	return 0;
}

/* Bind @id and each of @names in turn to parameters 1 and 2 of @st, stepping each. */
static int step_groups(struct gf_db *db, sqlite3_stmt *st, sqlite3_int64 id,
		       const char *const *names, size_t n, const char *what, struct gf_err *err)
{
	int rc = 0;

	for (size_t g = 0; g < n && rc == 0; g++)
		if ((rc = gf_db_bind_int64(db, st, 1, id, what, err)) == 0 &&
		    (rc = gf_db_bind_text(db, st, 2, names[g], what, err)) == 0)
			rc = gf_db_step_done(db, st, what, err);
	return rc;
}

struct nodes_add {
	const struct gf_node *nodes;
	bool replace;
	double now;
};

enum { ADD_PUT, ADD_CLEAR, ADD_GROUP };

static int node_add_row(struct gf_db *db, sqlite3_stmt *const *st, const char *what, const void *ud,
			size_t i, struct gf_err *err)
{
	const struct nodes_add *a = ud;
	const struct gf_node *nd = &a->nodes[i];
	sqlite3_int64 id = 0;
	int rc = node_put(db, st[ADD_PUT], nd, a->now, what, &id, err);

	if (rc == 0 && a->replace) {
		rc = gf_db_bind_int64(db, st[ADD_CLEAR], 1, id, what, err);
		if (rc == 0)
			rc = gf_db_step_done(db, st[ADD_CLEAR], what, err);
	}
	if (rc == 0)
		rc = step_groups(db, st[ADD_GROUP], id, (const char *const *)nd->groups,
				 nd->ngroups, what, err);
	return rc;
}

int gf_db_nodes_add(struct gf_db *db, const struct gf_node *nodes, size_t n, bool replace,
		    struct gf_err *err)
{
	const struct nodes_add a = {nodes, replace, gf_walltime()};
	const struct gf_db_write w = {
		.what = "adding nodes",
		.sql = {[ADD_PUT] = replace ? sql_node_upsert : sql_node_insert,
			[ADD_CLEAR] = "DELETE FROM node_groups WHERE node_id = ?1",
			[ADD_GROUP] =
				"INSERT OR IGNORE INTO node_groups (node_id, grp) VALUES (?1, ?2)"},
		.row = node_add_row,
		.ud = &a,
	};
	int rc;

	for (size_t i = 0; i < n; i++) {
		if ((rc = gf_db_check_name("node", nodes[i].name, err)) < 0)
			return rc;
		for (size_t g = 0; g < nodes[i].ngroups; g++)
			if ((rc = gf_db_check_name("group", nodes[i].groups[g], err)) < 0)
				return rc;
	}
	return gf_db_write(db, &w, n, err);
}

static int node_from_row(struct gf_db *db, sqlite3_stmt *st, struct gf_node *n, struct gf_err *err)
{
	const unsigned char *proto = sqlite3_column_text(st, 4);
	const struct gf_backend *p;

	if (!proto || gf_proto_parse((const char *)proto, &p, NULL) < 0)
		return gf_err_set(err, GF_E_DB, GF_EK_NONE,
				  "node '%s' in database '%s' has an unknown protocol '%s'",
				  (const char *)sqlite3_column_text(st, 1), gf_db_path(db),
				  proto ? (const char *)proto : "");
	memset(n, 0, sizeof(*n));
	n->name = gf_db_col_text(st, 1);
	n->bmc = gf_db_col_text(st, 2);
	n->bmc_port = sqlite3_column_int(st, 3);
	n->protocol = p;
	n->ssh = gf_db_col_text(st, 5);
	n->profile = gf_db_col_text(st, 6);
	return 0;
}

int gf_db_nodes_load(struct gf_db *db, struct gf_node **ret, size_t *ret_n, struct gf_err *err)
{
	static const char what[] = "reading nodes";
	sqlite3_stmt *sn = NULL, *sg = NULL;
	struct gf_node *nodes = NULL;
	sqlite3_int64 *ids = NULL;
	size_t n = 0, cap = 0, at = 0;
	int rc;

	if ((rc = gf_db_prepare(db,
				"SELECT id, name, bmc, bmc_port, protocol, ssh, profile FROM nodes"
				" ORDER BY id",
				&sn, what, err)) < 0 ||
	    (rc = gf_db_prepare(db, "SELECT node_id, grp FROM node_groups ORDER BY node_id, grp",
				&sg, what, err)) < 0)
		goto out;
	/* One read transaction, so that nodes and groups come from the same snapshot. */
	rc = gf_db_exec(db, "BEGIN", what, err);
	if (rc < 0)
		goto out;

	while ((rc = sqlite3_step(sn)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			nodes = gf_xrealloc(nodes, cap * sizeof(*nodes));
			ids = gf_xrealloc(ids, cap * sizeof(*ids));
		}
		rc = node_from_row(db, sn, &nodes[n], err);
		if (rc < 0)
			goto fail;
		ids[n] = sqlite3_column_int64(sn, 0);
		n++;
	}
	if (rc != SQLITE_DONE) {
		rc = gf_db_fail(db, rc, what, err);
		goto fail;
	}

	/* Both lists are ordered by node id: walk them together. */
	while ((rc = sqlite3_step(sg)) == SQLITE_ROW) {
		sqlite3_int64 id = sqlite3_column_int64(sg, 0);
		struct gf_node *nd;

		while (at < n && ids[at] < id)
			at++;
		if (at == n || ids[at] != id)
			continue; /* cannot happen with foreign keys on */
		nd = &nodes[at];
		nd->groups = gf_xrealloc(nd->groups, (nd->ngroups + 1) * sizeof(*nd->groups));
		nd->groups[nd->ngroups++] = gf_db_col_text(sg, 1);
	}
	if (rc != SQLITE_DONE) {
		rc = gf_db_fail(db, rc, what, err);
		goto fail;
	}
	rc = gf_db_commit(db, what, err);
	if (rc < 0)
		goto fail_done;
	*ret = nodes;
	*ret_n = n;
	nodes = NULL;
	n = 0;
	goto out;

fail:
	gf_db_rollback(db);
fail_done:
	gf_nodes_free(nodes, n);
	nodes = NULL;
out:
	free(ids);
	sqlite3_finalize(sn);
	sqlite3_finalize(sg);
	return rc;
}

static int node_remove_row(struct gf_db *db, sqlite3_stmt *const *st, const char *what,
			   const void *ud, size_t i, struct gf_err *err)
{
	const char *name = ((const char *const *)ud)[i];
	int rc;

	if ((rc = gf_db_check_name("node", name, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 1, name, what, err)) < 0 ||
	    (rc = gf_db_step_done(db, st[0], what, err)) < 0)
		return rc;
	if (sqlite3_changes(gf_db_sqlite(db)) == 0)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "node '%s' is not registered", name);
	return 0;
}

int gf_db_nodes_remove(struct gf_db *db, const char *const *names, size_t n, struct gf_err *err)
{
	const struct gf_db_write w = {
		.what = "removing nodes",
		.sql = {"DELETE FROM nodes WHERE name = ?1"},
		.row = node_remove_row,
		.ud = names,
	};

	return gf_db_write(db, &w, n, err);
}

struct nodes_tag {
	const char *const *names;
	const char *const *add, *const *del;
	size_t nadd, ndel;
};

enum { TAG_FIND, TAG_ADD, TAG_DEL };

static int node_tag_row(struct gf_db *db, sqlite3_stmt *const *st, const char *what, const void *ud,
			size_t i, struct gf_err *err)
{
	const struct nodes_tag *t = ud;
	sqlite3_stmt *find = st[TAG_FIND];
	sqlite3_int64 id;
	int rc;

	if ((rc = gf_db_check_name("node", t->names[i], err)) < 0 ||
	    (rc = gf_db_bind_text(db, find, 1, t->names[i], what, err)) < 0)
		return rc;
	rc = sqlite3_step(find);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(find);
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "node '%s' is not registered",
				  t->names[i]);
	}
	if (rc != SQLITE_ROW) {
		rc = gf_db_fail(db, rc, what, err);
		sqlite3_reset(find);
		return rc;
	}
	id = sqlite3_column_int64(find, 0);
	sqlite3_reset(find);
	/* Additions first, so a group both added and removed ends up removed. */
	rc = step_groups(db, st[TAG_ADD], id, t->add, t->nadd, what, err);
	if (rc == 0)
		rc = step_groups(db, st[TAG_DEL], id, t->del, t->ndel, what, err);
	return rc;
}

int gf_db_nodes_tag(struct gf_db *db, const char *const *names, size_t n, const char *const *add,
		    size_t nadd, const char *const *del, size_t ndel, struct gf_err *err)
{
	const struct nodes_tag t = {names, add, del, nadd, ndel};
	const struct gf_db_write w = {
		.what = "tagging nodes",
		.sql = {[TAG_FIND] = "SELECT id FROM nodes WHERE name = ?1",
			[TAG_ADD] =
				"INSERT OR IGNORE INTO node_groups (node_id, grp) VALUES (?1, ?2)",
			[TAG_DEL] = "DELETE FROM node_groups WHERE node_id = ?1 AND grp = ?2"},
		.row = node_tag_row,
		.ud = &t,
	};
	int rc;

	for (size_t g = 0; g < nadd; g++)
		if ((rc = gf_db_check_name("group", add[g], err)) < 0)
			return rc;
	for (size_t g = 0; g < ndel; g++)
		if ((rc = gf_db_check_name("group", del[g], err)) < 0)
			return rc;
	return gf_db_write(db, &w, n, err);
}
