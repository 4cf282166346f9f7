/* The sweep store: writing sweeps in one transaction, loading them, pruning, the sweep lock. */
#include "inventory/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "host/facts.h"
#include "inventory/codec.h"
#include "inventory/normalize.h"
#include "lib/buf.h"
#include "lib/util.h"

/*
 * ---- sqlite helpers (the shared ones are in inventory/db.h) ---------------
 *
 * Text and blobs are bound with a check (gf_db_bind_text(); a value can be
 * too big); numbers to a constant index cannot fail and are bound directly.
 */

static const char *col_str(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* ---- writing ------------------------------------------------------------- */

enum {
	S_SWEEP_BY_UID,
	S_SWEEP_ID_FREE,
	S_SWEEP_INSERT,
	S_NODE_EXISTS,
	S_NODE_INSERT,
	S_CSET_FIND,
	S_CSET_INSERT,
	S_COMP_INSERT,
	S_BLOB_FIND,
	S_BLOB_INSERT,
	S_LAST_PUT,
	S_COUNT,
};

static const char *const tx_sql[S_COUNT] = {
	[S_SWEEP_BY_UID] = "SELECT id FROM sweeps WHERE uid = ?1",
	[S_SWEEP_ID_FREE] = "SELECT 1 FROM sweeps WHERE id = ?1",
	[S_SWEEP_INSERT] = "INSERT INTO sweeps (id, uid, started, finished, imported)"
			   " VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
	[S_NODE_EXISTS] = "SELECT 1 FROM sweep_nodes WHERE sweep = ?1 AND node = ?2",
	[S_NODE_INSERT] =
		"INSERT INTO sweep_nodes (sweep, node, status, errors, protocol, model, fw_read,"
		" host_read, cset, hardware, host, sel_total, sel_info, sel_warning, sel_critical,"
		" sel_mark, sens_nominal, sens_warning, sens_critical, sens_unknown, bios_cset,"
		" bios_read, leaks)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
		" ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
	[S_CSET_FIND] = "SELECT id, body FROM csets WHERE hash = ?1",
	[S_CSET_INSERT] = "INSERT INTO csets (hash, body) VALUES (?1, ?2) RETURNING id",
	[S_COMP_INSERT] = "INSERT INTO components (cset, key, version, source, raw_id, name, kind)"
			  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[S_BLOB_FIND] = "SELECT id, body FROM blobs WHERE hash = ?1",
	[S_BLOB_INSERT] = "INSERT INTO blobs (hash, body) VALUES (?1, ?2) RETURNING id",
	[S_LAST_PUT] =
		"INSERT INTO node_last (node, sweep, started) VALUES (?1, ?2, ?3)"
		" ON CONFLICT (node) DO UPDATE SET sweep = excluded.sweep,"
		" started = excluded.started"
		" WHERE excluded.started > node_last.started"
		" OR (excluded.started = node_last.started AND excluded.sweep > node_last.sweep)",
};

/* The last content found or added, per table: consecutive nodes often repeat it. */
struct recent {
	uint64_t hash;
	long long id;
	char *body;
	size_t len;
};

struct gf_store_tx {
	struct gf_db *db;
	sqlite3_stmt *st[S_COUNT];
	long long *touched; /* sweeps whose counts need recomputing */
	size_t ntouched;
	double sweep_started; /* of the sweep being written */
	struct recent recent_set, recent_blob;
	struct gf_buf scratch;
};

static void tx_free(struct gf_store_tx *tx)
{
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(tx->st[i]);
	free(tx->touched);
	free(tx->recent_set.body);
	free(tx->recent_blob.body);
	gf_buf_release(&tx->scratch);
	free(tx);
}

int gf_store_begin(struct gf_db *db, struct gf_store_tx **ret, struct gf_err *err)
{
	static const char what[] = "writing a sweep";
	struct gf_store_tx *tx = gf_xcalloc(1, sizeof(*tx));
	int rc;

	tx->db = db;
	for (int i = 0; i < S_COUNT; i++) {
		rc = gf_db_prepare_kept(db, tx_sql[i], &tx->st[i], what, err);
		if (rc < 0) {
			tx_free(tx);
			return rc;
		}
	}
	rc = gf_db_begin(db, what, err);
	if (rc < 0) {
		tx_free(tx);
		return rc;
	}
	*ret = tx;
	return 0;
}

void gf_store_abort(struct gf_store_tx *tx)
{
	if (!tx)
		return;
	gf_db_rollback(tx->db);
	tx_free(tx);
}

static void touch(struct gf_store_tx *tx, long long id)
{
	for (size_t i = 0; i < tx->ntouched; i++)
		if (tx->touched[i] == id)
			return;
	tx->touched = gf_xrealloc(tx->touched, (tx->ntouched + 1) * sizeof(*tx->touched));
	tx->touched[tx->ntouched++] = id;
}

/* Step a statement that must give one integer row. */
static int step_id(struct gf_store_tx *tx, sqlite3_stmt *st, long long *ret, const char *what,
		   struct gf_err *err)
{
	int rc = sqlite3_step(st);

	if (rc != SQLITE_ROW) {
		rc = gf_db_fail(tx->db, rc == SQLITE_DONE ? SQLITE_ERROR : rc, what, err);
		sqlite3_reset(st);
		return rc;
	}
	*ret = sqlite3_column_int64(st, 0);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return gf_db_fail(tx->db, rc == SQLITE_ROW ? SQLITE_MISUSE : rc, what, err);
	return 0;
}

/* Does the query (bound already) give a row? Its first column in *ret_id. */
static int step_find(struct gf_store_tx *tx, sqlite3_stmt *st, bool *found, long long *ret_id,
		     const char *what, struct gf_err *err)
{
	int rc = sqlite3_step(st);

	*found = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW && ret_id)
		*ret_id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return gf_db_fail(tx->db, rc, what, err);
	return 0;
}

int gf_store_put_sweep(struct gf_store_tx *tx, struct gf_sweep *sw, bool import, bool *ret_existed,
		       struct gf_err *err)
{
	static const char what[] = "writing a sweep";
	sqlite3_stmt *st;
	bool found = false;
	long long id = 0;
	int rc;

	if (!sw->uid) {
		if (import)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "an imported sweep has no uid");
		rc = gf_sweep_make_uid(sw, err);
		if (rc < 0)
			return rc;
	}
	if (import) {
		st = tx->st[S_SWEEP_BY_UID];
		rc = gf_db_bind_text(tx->db, st, 1, sw->uid, what, err);
		if (rc == 0)
			rc = step_find(tx, st, &found, &id, what, err);
		if (rc < 0)
			return rc;
		if (found) {
			sw->id = id;
			tx->sweep_started = sw->started;
			if (ret_existed)
				*ret_existed = true;
			return 0;
		}
		/* Keep the other site's number when it is free here. */
		if (sw->id > 0) {
			st = tx->st[S_SWEEP_ID_FREE];
			sqlite3_bind_int64(st, 1, sw->id);
			rc = step_find(tx, st, &found, NULL, what, err);
			if (rc < 0)
				return rc;
		}
	}
	st = tx->st[S_SWEEP_INSERT];
	if (import && sw->id > 0 && !found)
		sqlite3_bind_int64(st, 1, sw->id);
	else
		sqlite3_bind_null(st, 1);
	rc = gf_db_bind_text(tx->db, st, 2, sw->uid, what, err);
	if (rc < 0)
		return rc;
	sqlite3_bind_double(st, 3, sw->started);
	sqlite3_bind_double(st, 4, sw->finished);
	if (import)
		sqlite3_bind_double(st, 5, gf_time_ms(gf_walltime()));
	else
		sqlite3_bind_null(st, 5);
	rc = step_id(tx, st, &id, what, err);
	if (rc < 0)
		return rc;
	sw->id = id;
	tx->sweep_started = sw->started;
	touch(tx, id);
	if (ret_existed)
		*ret_existed = false;
	return 0;
}

/*
 * The id of the row of @table (csets or blobs) holding @body, added when
 * none does. Rows are found by hash and then compared, so that a hash
 * collision costs a comparison and never mixes two contents up.
 */
static int put_content(struct gf_store_tx *tx, bool set, const char *body, size_t len,
		       long long *ret_id, bool *ret_new, struct gf_err *err)
{
	static const char what[] = "writing a sweep";
	struct recent *rec = set ? &tx->recent_set : &tx->recent_blob;
	sqlite3_stmt *find = tx->st[set ? S_CSET_FIND : S_BLOB_FIND];
	sqlite3_stmt *ins = tx->st[set ? S_CSET_INSERT : S_BLOB_INSERT];
	uint64_t hash = gf_hash64(body, len);
	long long id = 0;
	bool found = false;
	int rc;

	if (rec->body && rec->hash == hash && rec->len == len &&
	    memcmp(rec->body, body, len) == 0) {
		*ret_id = rec->id;
		*ret_new = false;
		return 0;
	}
	sqlite3_bind_int64(find, 1, (sqlite3_int64)hash);
	while ((rc = sqlite3_step(find)) == SQLITE_ROW) {
		const void *b = set ? sqlite3_column_blob(find, 1) : sqlite3_column_text(find, 1);
		size_t blen = (size_t)sqlite3_column_bytes(find, 1);

		if (blen == len && (len == 0 || memcmp(b, body, len) == 0)) {
			id = sqlite3_column_int64(find, 0);
			found = true;
			break;
		}
	}
	sqlite3_reset(find);
	sqlite3_clear_bindings(find);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return gf_db_fail(tx->db, rc, what, err);
	if (!found) {
		sqlite3_bind_int64(ins, 1, (sqlite3_int64)hash);
		if (len > INT_MAX)
			return gf_db_fail(tx->db, SQLITE_TOOBIG, what, err);
		rc = set ? sqlite3_bind_blob(ins, 2, body, (int)len, SQLITE_STATIC)
			 : sqlite3_bind_text(ins, 2, body, (int)len, SQLITE_STATIC);
		if (rc != SQLITE_OK)
			return gf_db_fail(tx->db, rc, what, err);
		rc = step_id(tx, ins, &id, what, err);
		if (rc < 0)
			return rc;
	}
	free(rec->body);
	rec->body = gf_xmalloc(len + 1);
	memcpy(rec->body, body, len);
	rec->len = len;
	rec->hash = hash;
	rec->id = id;
	*ret_id = id;
	*ret_new = !found;
	return 0;
}

static int put_set(struct gf_store_tx *tx, const struct gf_inv_set *s, long long *ret_id,
		   struct gf_err *err)
{
	static const char what[] = "writing a sweep";
	sqlite3_stmt *st = tx->st[S_COMP_INSERT];
	bool fresh = false;
	long long id;
	int rc;

	gf_buf_reset(&tx->scratch);
	gf_inv_set_body(s, &tx->scratch);
	rc = put_content(tx, true, gf_buf_str(&tx->scratch), tx->scratch.len, &id, &fresh, err);
	if (rc < 0 || !fresh)
		goto out;
	for (size_t i = 0; i < s->n; i++) {
		const struct gf_inv_comp *c = &s->v[i];

		sqlite3_bind_int64(st, 1, id);
		if ((rc = gf_db_bind_text(tx->db, st, 2, c->key, what, err)) < 0 ||
		    (rc = gf_db_bind_text(tx->db, st, 3, c->version, what, err)) < 0 ||
		    (rc = gf_db_bind_text(tx->db, st, 4, c->source, what, err)) < 0 ||
		    (rc = gf_db_bind_text(tx->db, st, 5, c->raw_id, what, err)) < 0 ||
		    (rc = gf_db_bind_text(tx->db, st, 6, c->name, what, err)) < 0 ||
		    (rc = gf_db_bind_text(tx->db, st, 7, c->kind, what, err)) < 0 ||
		    (rc = gf_db_step_done(tx->db, st, what, err)) < 0)
			return rc;
	}
out:
	if (rc == 0)
		*ret_id = id;
	return rc;
}

/*
 * The node's components as two lists: everything else (*ret_cset) and its
 * BIOS settings (*ret_bios, 0 when it has none). Both stay sorted.
 */
static int put_sets(struct gf_store_tx *tx, const struct gf_inv_set *s, long long *ret_cset,
		    long long *ret_bios, struct gf_err *err)
{
	struct gf_inv_set rest = {0}, bios = {0};
	int rc;

	for (size_t i = 0; i < s->n; i++)
		*gf_inv_set_add(gf_norm_comp_is_setting(&s->v[i]) ? &bios : &rest) = s->v[i];
	*ret_bios = 0;
	rc = put_set(tx, &rest, ret_cset, err);
	if (rc == 0 && bios.n)
		rc = put_set(tx, &bios, ret_bios, err);
	free(rest.v);
	free(bios.v);
	return rc;
}

/* A JSON document as a shared blob; *ret_id 0 for NULL. */
/* A facts document (codec text, NULL: none) into the blobs; *ret_id 0 for none. */
static int put_doc(struct gf_store_tx *tx, char *text, long long *ret_id, struct gf_err *err)
{
	bool fresh;
	int rc;

	if (!text) {
		*ret_id = 0;
		return 0;
	}
	rc = put_content(tx, false, text, strlen(text), ret_id, &fresh, err);
	free(text);
	return rc;
}

/* The errors column: the export's "errors" array, NULL when there are none. */
static char *errors_text(const struct gf_sweep_node *n)
{
	json_t *a;
	char *s;

	if (!n->nerrors)
		return NULL;
	a = gf_codec_errors_to_json(n);
	s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

/* The leak detectors' column: NULL when none (gf_codec_leaks_to_json()). */
static char *leaks_text(const struct gf_sweep_node *n)
{
	json_t *a;
	char *s;

	if (!n->sensors.read || !n->sensors.nleaks)
		return NULL;
	a = gf_codec_leaks_to_json(&n->sensors);
	s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

/* @v at @i when @set, else NULL. */
static void bind_opt(sqlite3_stmt *st, int i, bool set, sqlite3_int64 v)
{
	if (set)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

int gf_store_put_node(struct gf_store_tx *tx, const struct gf_sweep *sw,
		      const struct gf_sweep_node *n, bool import, bool *ret_added,
		      struct gf_err *err)
{
	static const char what[] = "writing a sweep";
	sqlite3_stmt *st;
	long long cset = 0, bios = 0, hw = 0, host = 0;
	char *errs = NULL, *leaks = NULL;
	int rc;

	if (sw->id <= 0)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "a node row needs its sweep first");
	if (import) {
		bool found = false;

		st = tx->st[S_NODE_EXISTS];
		sqlite3_bind_int64(st, 1, sw->id);
		rc = gf_db_bind_text(tx->db, st, 2, n->node, what, err);
		if (rc == 0)
			rc = step_find(tx, st, &found, NULL, what, err);
		if (rc < 0)
			return rc;
		if (found) {
			if (ret_added)
				*ret_added = false;
			return 0;
		}
	}
	if ((rc = put_sets(tx, n->set, &cset, &bios, err)) < 0 ||
	    (rc = put_doc(tx, gf_hardware_text(n->hardware), &hw, err)) < 0 ||
	    (rc = put_doc(tx, gf_hostfacts_text(n->host), &host, err)) < 0)
		return rc;

	errs = errors_text(n);
	leaks = leaks_text(n);
	st = tx->st[S_NODE_INSERT];
	sqlite3_bind_int64(st, 1, sw->id);
	if ((rc = gf_db_bind_text(tx->db, st, 2, n->node, what, err)) < 0 ||
	    (rc = gf_db_bind_text(tx->db, st, 3, gf_node_status_name(n->status), what, err)) < 0 ||
	    (rc = gf_db_bind_text(tx->db, st, 4, errs, what, err)) < 0 ||
	    (rc = gf_db_bind_text(tx->db, st, 5, n->protocol, what, err)) < 0 ||
	    (rc = gf_db_bind_text(tx->db, st, 6, n->model, what, err)) < 0 ||
	    (rc = gf_db_bind_text(tx->db, st, 23, leaks, what, err)) < 0) {
		sqlite3_clear_bindings(st);
		free(errs);
		free(leaks);
		return rc;
	}
	sqlite3_bind_int(st, 7, n->fw_read);
	sqlite3_bind_int(st, 8, n->host_read);
	sqlite3_bind_int64(st, 9, cset);
	bind_opt(st, 10, hw != 0, hw);
	bind_opt(st, 11, host != 0, host);
	bind_opt(st, 12, n->sel.read, n->sel.total);
	bind_opt(st, 13, n->sel.read, n->sel.new_info);
	bind_opt(st, 14, n->sel.read, n->sel.new_warning);
	bind_opt(st, 15, n->sel.read, n->sel.new_critical);
	if (n->sel.read && n->sel.has_mark)
		sqlite3_bind_double(st, 16, n->sel.mark);
	else
		sqlite3_bind_null(st, 16);
	bind_opt(st, 17, n->sensors.read, n->sensors.nominal);
	bind_opt(st, 18, n->sensors.read, n->sensors.warning);
	bind_opt(st, 19, n->sensors.read, n->sensors.critical);
	bind_opt(st, 20, n->sensors.read, n->sensors.unknown);
	bind_opt(st, 21, bios != 0, bios);
	sqlite3_bind_int(st, 22, n->bios_read);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	free(errs);
	free(leaks);
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "node '%s' is twice in sweep %lld",
				  n->node, sw->id);
	if (rc != SQLITE_DONE)
		return gf_db_fail(tx->db, rc, what, err);

	st = tx->st[S_LAST_PUT];
	sqlite3_bind_int64(st, 2, sw->id);
	sqlite3_bind_double(st, 3, tx->sweep_started);
	if ((rc = gf_db_bind_text(tx->db, st, 1, n->node, what, err)) < 0 ||
	    (rc = gf_db_step_done(tx->db, st, what, err)) < 0)
		return rc;
	touch(tx, sw->id);
	if (ret_added)
		*ret_added = true;
	return 0;
}

static int update_counts(struct gf_store_tx *tx, struct gf_err *err)
{
	static const char what[] = "counting a sweep";
	sqlite3_stmt *st = NULL;
	int rc;

	if (!tx->ntouched)
		return 0;
	rc = gf_db_prepare_kept(tx->db,
				"UPDATE sweeps SET (nodes, ok, partial, failed) = (SELECT count(*),"
				" count(*) FILTER (WHERE status = 'ok'),"
				" count(*) FILTER (WHERE status = 'partial'),"
				" count(*) FILTER (WHERE status = 'failed')"
				" FROM sweep_nodes WHERE sweep = ?1) WHERE id = ?1",
				&st, what, err);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < tx->ntouched && rc == 0; i++) {
		sqlite3_bind_int64(st, 1, tx->touched[i]);
		rc = gf_db_step_done(tx->db, st, what, err);
	}
	sqlite3_finalize(st);
	return rc;
}

int gf_store_commit(struct gf_store_tx *tx, struct gf_err *err)
{
	int rc = update_counts(tx, err);

	if (rc < 0) {
		gf_store_abort(tx);
		return rc;
	}
	/* Statements hold no locks once reset, but finalize before COMMIT all the same. */
	for (int i = 0; i < S_COUNT; i++) {
		sqlite3_finalize(tx->st[i]);
		tx->st[i] = NULL;
	}
	rc = gf_db_commit(tx->db, "writing a sweep", err);
	tx_free(tx);
	return rc;
}

int gf_store_sweep_add(struct gf_db *db, struct gf_sweep *sw, struct gf_err *err)
{
	struct gf_store_tx *tx = NULL;
	long long id_before = sw->id;
	const char *uid_before = sw->uid;
	int rc = gf_store_begin(db, &tx, err);

	if (rc < 0)
		return rc;
	rc = gf_store_put_sweep(tx, sw, false, NULL, err);
	for (size_t i = 0; rc == 0 && i < sw->n; i++)
		rc = gf_store_put_node(tx, sw, &sw->nodes[i], false, NULL, err);
	if (rc < 0) {
		gf_store_abort(tx);
		goto fail;
	}
	rc = gf_store_commit(tx, err);
	if (rc == 0) {
		for (size_t i = 0; i < sw->n; i++) {
			sw->nodes[i].sweep = sw->id;
			sw->nodes[i].time = sw->started;
		}
		return 0;
	}
fail:
	sw->id = id_before; /* nothing was stored */
	sw->uid = uid_before;
	return rc;
}

/* ---- reading ------------------------------------------------------------- */

int gf_store_sweeps(struct gf_db *db, struct gf_sweep_info **ret, size_t *ret_n, struct gf_err *err)
{
	static const char what[] = "listing sweeps";
	sqlite3_stmt *st = NULL;
	struct gf_sweep_info *v = NULL;
	size_t n = 0, cap = 0;
	int rc;

	rc = gf_db_prepare_kept(db,
				"SELECT id, uid, started, finished, imported IS NOT NULL, nodes,"
				" ok, partial, failed FROM sweeps ORDER BY started, id",
				&st, what, err);
	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct gf_sweep_info *s;

		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			v = gf_xrealloc(v, cap * sizeof(*v));
		}
		s = &v[n++];
		memset(s, 0, sizeof(*s));
		s->id = sqlite3_column_int64(st, 0);
		snprintf(s->uid, sizeof(s->uid), "%s", col_str(st, 1) ? col_str(st, 1) : "");
		s->started = sqlite3_column_double(st, 2);
		s->finished = sqlite3_column_double(st, 3);
		s->imported = sqlite3_column_int(st, 4);
		s->nodes = (unsigned)sqlite3_column_int64(st, 5);
		s->ok = (unsigned)sqlite3_column_int64(st, 6);
		s->partial = (unsigned)sqlite3_column_int64(st, 7);
		s->failed = (unsigned)sqlite3_column_int64(st, 8);
	}
	if (rc != SQLITE_DONE) {
		rc = gf_db_fail(db, rc, what, err);
		sqlite3_finalize(st);
		free(v);
		return rc;
	}
	sqlite3_finalize(st);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Columns of the row queries, in this order. */
#define ROW_COLS                                                                                   \
	"sn.node, sn.status, sn.errors, sn.protocol, sn.model, sn.fw_read, sn.host_read, sn.cset," \
	" sn.hardware, sn.host, sn.sel_total, sn.sel_info, sn.sel_warning, sn.sel_critical,"       \
	" sn.sel_mark, sn.sens_nominal, sn.sens_warning, sn.sens_critical, sn.sens_unknown,"       \
	" sn.bios_cset, sn.bios_read, sn.leaks, sn.sweep"

enum {
	C_NODE,
	C_STATUS,
	C_ERRORS,
	C_PROTOCOL,
	C_MODEL,
	C_FW,
	C_HOST_READ,
	C_CSET,
	C_HW,
	C_HOST,
	C_SEL_TOTAL,
	C_SEL_INFO,
	C_SEL_WARN,
	C_SEL_CRIT,
	C_SEL_MARK,
	C_S_NOM,
	C_S_WARN,
	C_S_CRIT,
	C_S_UNK,
	C_BIOS_CSET,
	C_BIOS_READ,
	C_LEAKS,
	C_SWEEP,
	C_TIME
};

/* Per loaded node: where its set and documents are, until they are read. */
struct pending {
	long long cset, bios, hw, host; /* bios: the BIOS settings' list, 0: none */
	size_t at;                      /* join_sets(): the node's index */
};

struct loader {
	struct gf_db *db;
	struct gf_sweep *sw;
	struct pending *pend;
	size_t npend;
};

static unsigned col_count(sqlite3_stmt *st, int i)
{
	sqlite3_int64 v = sqlite3_column_int64(st, i);

	return v < 0 ? 0 : v > 0x7fffffff ? 0x7fffffff : (unsigned)v;
}

static int row_to_node(struct loader *ld, sqlite3_stmt *st, struct gf_err *err)
{
	struct gf_sweep *sw = ld->sw;
	struct gf_sweep_node *n;
	const char *errs = col_str(st, C_ERRORS);
	int status = gf_node_status_parse(col_str(st, C_STATUS));

	n = gf_sweep_add_node(sw, col_str(st, C_NODE));
	sw->nsets--; /* the set comes from the store: drop the one made for it */
	free(sw->sets[sw->nsets]);
	n->set = NULL;
	n->sweep = sqlite3_column_int64(st, C_SWEEP);
	n->time = sqlite3_column_double(st, C_TIME);
	n->status = status < 0 ? GF_NODE_FAILED : (enum gf_node_status)status;
	n->protocol = gf_sweep_str(sw, col_str(st, C_PROTOCOL));
	n->model = gf_sweep_str(sw, col_str(st, C_MODEL));
	n->fw_read = sqlite3_column_int(st, C_FW);
	n->host_read = sqlite3_column_int(st, C_HOST_READ);
	n->bios_read = sqlite3_column_int(st, C_BIOS_READ);
	if (errs) {
		json_t *a = json_loads(errs, 0, NULL);
		int erc = a ? gf_codec_errors_from_json(sw, n, a, NULL) : GF_E_DB;

		json_decref(a);
		if (erc < 0)
			return gf_err_set(
				err, GF_E_DB, GF_EK_NONE,
				"the errors stored for node '%s' in sweep %lld are not readable",
				n->node, n->sweep);
	}
	if (sqlite3_column_type(st, C_SEL_TOTAL) != SQLITE_NULL) {
		n->sel.read = true;
		n->sel.total = col_count(st, C_SEL_TOTAL);
		n->sel.new_info = col_count(st, C_SEL_INFO);
		n->sel.new_warning = col_count(st, C_SEL_WARN);
		n->sel.new_critical = col_count(st, C_SEL_CRIT);
		if (sqlite3_column_type(st, C_SEL_MARK) != SQLITE_NULL) {
			n->sel.has_mark = true;
			n->sel.mark = sqlite3_column_double(st, C_SEL_MARK);
		}
	}
	if (sqlite3_column_type(st, C_S_NOM) != SQLITE_NULL) {
		n->sensors.read = true;
		n->sensors.nominal = col_count(st, C_S_NOM);
		n->sensors.warning = col_count(st, C_S_WARN);
		n->sensors.critical = col_count(st, C_S_CRIT);
		n->sensors.unknown = col_count(st, C_S_UNK);
		if (col_str(st, C_LEAKS)) {
			json_t *a = json_loads(col_str(st, C_LEAKS), 0, NULL);
			int lrc = a ? gf_codec_leaks_from_json(sw, n, a, NULL) : GF_E_DB;

			json_decref(a);
			if (lrc < 0)
				return gf_err_set(err, GF_E_DB, GF_EK_NONE,
						  "the leak detectors stored for node '%s' in sweep "
						  "%lld are not readable",
						  n->node, n->sweep);
		}
	}
	ld->pend = gf_xrealloc(ld->pend, (ld->npend + 1) * sizeof(*ld->pend));
	ld->pend[ld->npend].cset = sqlite3_column_int64(st, C_CSET);
	ld->pend[ld->npend].bios = sqlite3_column_int64(st, C_BIOS_CSET);
	ld->pend[ld->npend].hw = sqlite3_column_int64(st, C_HW);
	ld->pend[ld->npend].host = sqlite3_column_int64(st, C_HOST);
	ld->npend++;
	return 0;
}

static int ll_cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static int pair_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->cset != y->cset)
		return x->cset < y->cset ? -1 : 1;
	return x->bios < y->bios ? -1 : x->bios > y->bios;
}

static struct gf_inv_set *set_of(long long id, const long long *ids, size_t nids,
				 struct gf_inv_set **sets)
{
	const long long *at = id ? bsearch(&id, ids, nids, sizeof(*ids), ll_cmp) : NULL;

	return at ? sets[at - ids] : NULL;
}

/*
 * Point each node at its set: the stored list itself, or, with BIOS
 * settings, one set made of both lists per distinct pair (shared by the
 * nodes that have that pair).
 */
static void join_sets(struct loader *ld, const long long *ids, size_t nids,
		      struct gf_inv_set **sets)
{
	struct gf_sweep *sw = ld->sw;
	struct pending *by;
	struct gf_inv_set *cur = NULL;

	if (ld->npend == 0)
		return; /* an empty sweep: pend is NULL, and memcpy() must not see it */
	by = gf_xcalloc(ld->npend, sizeof(*by));
	memcpy(by, ld->pend, ld->npend * sizeof(*by));
	for (size_t i = 0; i < ld->npend; i++)
		by[i].at = i; /* pend[i] is the row of node i (both may have been reordered) */
	gf_sort(by, ld->npend, sizeof(*by), pair_cmp);
	for (size_t i = 0; i < ld->npend; i++) {
		struct gf_inv_set *a = set_of(by[i].cset, ids, nids, sets);
		struct gf_inv_set *b = set_of(by[i].bios, ids, nids, sets);

		if (i == 0 || pair_cmp(&by[i - 1], &by[i]) != 0) {
			if (!b) {
				cur = a ? a : gf_sweep_new_set(sw);
			} else {
				cur = gf_sweep_new_set(sw);
				for (size_t k = 0; a && k < a->n; k++)
					*gf_inv_set_add(cur) = a->v[k];
				for (size_t k = 0; k < b->n; k++)
					*gf_inv_set_add(cur) = b->v[k];
				gf_inv_set_finish(sw, cur);
			}
		}
		sw->nodes[by[i].at].set = cur;
	}
	free(by);
}

/* Read every distinct set once and point the nodes at them. */
static int load_sets(struct loader *ld, struct gf_err *err)
{
	static const char what[] = "reading components";
	struct gf_sweep *sw = ld->sw;
	long long *ids = gf_xcalloc(2 * ld->npend + 1, sizeof(*ids));
	struct gf_inv_set **sets;
	sqlite3_stmt *st = NULL;
	size_t nids = 0;
	int rc;

	for (size_t i = 0; i < ld->npend; i++) {
		ids[2 * i] = ld->pend[i].cset;
		ids[2 * i + 1] = ld->pend[i].bios;
	}
	gf_sort(ids, 2 * ld->npend, sizeof(*ids), ll_cmp);
	for (size_t i = 0; i < 2 * ld->npend; i++)
		if (ids[i] && (nids == 0 || ids[nids - 1] != ids[i]))
			ids[nids++] = ids[i];
	sets = gf_xcalloc(nids ? nids : 1, sizeof(*sets));
	/*
	 * From the canonical body, one row per list: the components table holds
	 * the same, for SQL, but 60 rows per list are slower to step through.
	 */
	rc = gf_db_prepare_kept(ld->db, "SELECT body FROM csets WHERE id = ?1", &st, what, err);
	if (rc < 0)
		goto out;
	for (size_t k = 0; k < nids; k++) {
		struct gf_inv_set *s = gf_sweep_new_set(sw);

		sets[k] = s;
		sqlite3_bind_int64(st, 1, ids[k]);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			const char *body = sqlite3_column_blob(st, 0);
			size_t len = (size_t)sqlite3_column_bytes(st, 0);

			rc = len ? gf_inv_set_from_body(sw, body, len, s) : 0;
			if (rc < 0)
				rc = gf_err_set(err, GF_E_DB, GF_EK_NONE,
						"component list %lld in database '%s' is damaged",
						ids[k], gf_db_path(ld->db));
		} else if (rc == SQLITE_DONE) {
			rc = 0; /* cannot happen with foreign keys on: an empty list */
		} else {
			rc = gf_db_fail(ld->db, rc, what, err);
		}
		sqlite3_reset(st);
		if (rc < 0)
			goto out;
	}
	join_sets(ld, ids, nids, sets);
out:
	sqlite3_finalize(st);
	free(sets);
	free(ids);
	return rc;
}

/* The stored hardware (@hw) or host facts of @n, from their codec text. */
static int load_doc(struct gf_sweep_node *n, bool hw, const char *text, struct gf_err *err)
{
	json_t *doc = json_loads(text, 0, NULL);
	struct gf_hardware h;
	struct gf_hostfacts f;
	struct gf_err e = {0};
	int rc;

	if (!doc)
		rc = gf_err_set(&e, GF_E_USAGE, GF_EK_NONE, "not JSON");
	else if (hw && (rc = gf_hardware_from_json(doc, n->node, &h, &e)) == 0)
		gf_sweep_node_take_hardware(n, &h);
	else if (!hw && (rc = gf_hostfacts_from_json(doc, n->node, &f, &e)) == 0)
		gf_sweep_node_take_host(n, &f);
	json_decref(doc);
	if (rc < 0)
		rc = gf_err_set(err, GF_E_DB, GF_EK_NONE,
				"the stored %s of node '%s' is damaged (%s)",
				hw ? "hardware" : "host facts", n->node, e.msg);
	gf_err_clear(&e);
	return rc;
}

static int load_docs(struct loader *ld, struct gf_err *err)
{
	static const char what[] = "reading documents";
	sqlite3_stmt *st = NULL;
	int rc = gf_db_prepare_kept(ld->db, "SELECT body FROM blobs WHERE id = ?1", &st, what, err);

	for (size_t i = 0; rc == 0 && i < ld->npend; i++) {
		long long ids[2] = {ld->pend[i].hw, ld->pend[i].host};

		for (int k = 0; k < 2; k++) {
			if (!ids[k])
				continue;
			sqlite3_bind_int64(st, 1, ids[k]);
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW) {
				rc = load_doc(&ld->sw->nodes[i], k == 0, col_str(st, 0), err);
			} else if (rc == SQLITE_DONE) {
				rc = 0;
			} else {
				rc = gf_db_fail(ld->db, rc, what, err);
			}
			sqlite3_reset(st);
			if (rc < 0)
				break;
		}
	}
	sqlite3_finalize(st);
	return rc;
}

/* Sort nodes (with their pending entries) by natural name order. */
static void sort_nodes(struct loader *ld)
{
	struct gf_names v = {ld->sw->nodes, ld->npend, sizeof(*ld->sw->nodes),
			     offsetof(struct gf_sweep_node, node)};
	struct gf_sweep_node *nodes;
	struct pending *pend;
	size_t *idx;

	if (ld->npend < 2)
		return;
	idx = gf_node_name_order(&v);
	nodes = gf_xcalloc(ld->npend, sizeof(*nodes));
	pend = gf_xcalloc(ld->npend, sizeof(*pend));
	for (size_t i = 0; i < ld->npend; i++) {
		nodes[i] = ld->sw->nodes[idx[i]];
		pend[i] = ld->pend[idx[i]];
	}
	memcpy(ld->sw->nodes, nodes, ld->npend * sizeof(*nodes));
	memcpy(ld->pend, pend, ld->npend * sizeof(*pend));
	free(nodes);
	free(pend);
	free(idx);
}

int gf_store_load(struct gf_db *db, const struct gf_store_query *q, struct gf_sweep **ret,
		  struct gf_err *err)
{
	static const char what[] = "reading sweeps";
	struct loader ld = {.db = db, .sw = gf_sweep_new()};
	struct gf_names filter = {q->nodes, q->nnodes, sizeof(*q->nodes), 0};
	size_t *filter_order = NULL;
	sqlite3_stmt *st = NULL;
	const char *sql;
	int rc;

	if (q->history)
		sql = "SELECT " ROW_COLS ", s.started FROM sweep_nodes sn JOIN sweeps s"
		      " ON s.id = sn.sweep WHERE sn.node = ?1 ORDER BY s.started, s.id";
	else if (q->sweep)
		sql = "SELECT " ROW_COLS ", s.started FROM sweep_nodes sn JOIN sweeps s"
		      " ON s.id = sn.sweep WHERE sn.sweep = ?1";
	else if (q->bounded)
		sql = "SELECT * FROM (SELECT " ROW_COLS ", s.started, row_number() OVER"
		      " (PARTITION BY sn.node ORDER BY s.started DESC, s.id DESC) AS rn"
		      " FROM sweep_nodes sn JOIN sweeps s ON s.id = sn.sweep"
		      " WHERE s.started < ?1 OR (s.started = ?1 AND s.id <= ?2)) WHERE rn = 1";
	else
		/* CROSS JOIN keeps node_last outside: a seek per node, never a scan of every row. */
		sql = "SELECT " ROW_COLS ", l.started FROM node_last l CROSS JOIN sweep_nodes sn"
		      " ON sn.sweep = l.sweep AND sn.node = l.node";

	if (q->nodes)
		filter_order = gf_node_name_order(&filter);
	/* One read transaction: the rows, sets and documents from one snapshot. */
	rc = gf_db_exec(db, "BEGIN", what, err);
	if (rc < 0)
		goto out;
	if (q->sweep && !q->history) {
		sqlite3_stmt *hs = NULL;

		rc = gf_db_prepare_kept(db,
					"SELECT uid, started, finished FROM sweeps WHERE id = ?1",
					&hs, what, err);
		if (rc < 0)
			goto out;
		sqlite3_bind_int64(hs, 1, q->sweep);
		rc = sqlite3_step(hs);
		if (rc == SQLITE_ROW) {
			ld.sw->id = q->sweep;
			ld.sw->uid = gf_sweep_str(ld.sw, col_str(hs, 0));
			ld.sw->started = sqlite3_column_double(hs, 1);
			ld.sw->finished = sqlite3_column_double(hs, 2);
			rc = 0;
		} else if (rc == SQLITE_DONE) {
			rc = gf_err_set(err, GF_E_NOTFOUND, GF_EK_NONE, "there is no sweep %lld",
					q->sweep);
		} else {
			rc = gf_db_fail(db, rc, what, err);
		}
		sqlite3_finalize(hs);
		if (rc < 0)
			goto out;
	}
	rc = gf_db_prepare_kept(db, sql, &st, what, err);
	if (rc < 0)
		goto out;
	if (q->history) {
		rc = gf_db_bind_text(db, st, 1, q->history, what, err);
		if (rc < 0)
			goto out;
	} else if (q->sweep) {
		sqlite3_bind_int64(st, 1, q->sweep);
	} else if (q->bounded) {
		sqlite3_bind_double(st, 1, q->before);
		sqlite3_bind_int64(st, 2, q->before_id);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = col_str(st, C_NODE);

		if (filter_order && gf_node_name_find(&filter, filter_order, name) == GF_NAME_NONE)
			continue;
		rc = row_to_node(&ld, st, err);
		if (rc < 0)
			goto out;
	}
	if (rc != SQLITE_DONE) {
		rc = gf_db_fail(db, rc, what, err);
		goto out;
	}
	if (!q->history)
		sort_nodes(&ld);
	rc = load_sets(&ld, err);
	if (rc == 0 && q->details)
		rc = load_docs(&ld, err);
out:
	sqlite3_finalize(st);
	if (!sqlite3_get_autocommit(gf_db_sqlite(db)))
		sqlite3_exec(gf_db_sqlite(db), rc < 0 ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
	free(filter_order);
	free(ld.pend);
	if (rc < 0) {
		gf_sweep_free(ld.sw);
		return rc;
	}
	*ret = ld.sw;
	return 0;
}

int gf_store_sel_prev(struct gf_db *db, const char *const *names, size_t n, struct gf_sel_prev *ret,
		      struct gf_err *err)
{
	static const char what[] = "reading the previous event log marks";
	sqlite3_stmt *st = NULL;
	struct gf_sel_prev *v = gf_xcalloc(n ? n : 1, sizeof(*v));
	int rc = gf_db_prepare_kept(db,
				    "SELECT sn.sel_mark FROM sweep_nodes sn"
				    " JOIN sweeps s ON s.id = sn.sweep"
				    " WHERE sn.node = ?1 AND sn.sel_total IS NOT NULL"
				    " ORDER BY s.started DESC, s.id DESC LIMIT 1",
				    &st, what, err);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = gf_db_bind_text(db, st, 1, names[i], what, err);
		if (rc < 0)
			break;
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			v[i].read = true;
			if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
				v[i].has_mark = true;
				v[i].mark = sqlite3_column_double(st, 0);
			}
			rc = 0;
		} else if (rc == SQLITE_DONE) {
			rc = 0;
		} else {
			rc = gf_db_fail(db, rc, what, err);
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (rc == 0)
		memcpy(ret, v, n * sizeof(*v));
	free(v);
	return rc;
}

/* ---- upkeep -------------------------------------------------------------- */

/* One DELETE of sweeps with ?1 = @keep (when >= 0) or @before; adds what it removed. */
static int delete_sweeps(struct gf_db *db, const char *sql, long keep, double before,
			 size_t *pruned, struct gf_err *err)
{
	static const char what[] = "pruning sweeps";
	sqlite3_stmt *st = NULL;
	int rc = gf_db_prepare_kept(db, sql, &st, what, err);

	if (rc < 0)
		return rc;
	if (keep >= 0)
		sqlite3_bind_int64(st, 1, keep);
	else
		sqlite3_bind_double(st, 1, before);
	rc = gf_db_step_done(db, st, what, err);
	sqlite3_finalize(st);
	if (rc < 0)
		return rc;
	*pruned += (size_t)sqlite3_changes(gf_db_sqlite(db));
	return 0;
}

int gf_store_prune(struct gf_db *db, long keep, double older_than, size_t *ret_pruned,
		   size_t *ret_left, struct gf_err *err)
{
	static const char what[] = "pruning sweeps";
	sqlite3_stmt *st = NULL;
	size_t pruned = 0, left = 0;
	int rc = gf_db_begin(db, what, err);

	if (rc < 0)
		return rc;
	if (keep >= 0 &&
	    (rc = delete_sweeps(db,
				"DELETE FROM sweeps WHERE id NOT IN (SELECT id FROM sweeps"
				" ORDER BY started DESC, id DESC LIMIT ?1)",
				keep, 0, &pruned, err)) < 0)
		goto fail;
	if (older_than > 0 && (rc = delete_sweeps(db, "DELETE FROM sweeps WHERE started < ?1", -1,
						  older_than, &pruned, err)) < 0)
		goto fail;
	/* Rows went with their sweeps (ON DELETE CASCADE); now what nothing uses any more. */
	if (pruned) {
		rc = gf_db_exec(db,
				"DELETE FROM csets WHERE id NOT IN"
				" (SELECT cset FROM sweep_nodes UNION SELECT bios_cset FROM"
				" sweep_nodes WHERE bios_cset IS NOT NULL);"
				"DELETE FROM blobs WHERE id NOT IN"
				" (SELECT hardware FROM sweep_nodes"
				" WHERE hardware IS NOT NULL UNION SELECT host FROM sweep_nodes"
				" WHERE host IS NOT NULL);"
				"DELETE FROM node_last;"
				"INSERT INTO node_last (node, sweep, started)"
				" SELECT node, sweep, started FROM"
				" (SELECT sn.node, sn.sweep, s.started, row_number() OVER"
				" (PARTITION BY sn.node ORDER BY s.started DESC, s.id DESC) AS rn"
				" FROM sweep_nodes sn JOIN sweeps s ON s.id = sn.sweep)"
				" WHERE rn = 1;",
				what, err);
		if (rc < 0)
			goto fail;
	}
	rc = gf_db_prepare_kept(db, "SELECT count(*) FROM sweeps", &st, what, err);
	if (rc < 0)
		goto fail;
	if (sqlite3_step(st) == SQLITE_ROW)
		left = (size_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	rc = gf_db_commit(db, what, err);
	if (rc < 0)
		return rc;
	if (ret_pruned)
		*ret_pruned = pruned;
	if (ret_left)
		*ret_left = left;
	return 0;
fail:
	gf_db_rollback(db);
	return rc;
}

/* ---- the sweep lock ------------------------------------------------------- */

int gf_store_lock(const char *db_path, double wait, int *ret_fd, struct gf_err *err)
{
	struct gf_buf path = GF_BUF_INIT;
	double deadline = gf_monotime() + (wait > 0 ? wait : 0);
	char pid[32];
	int fd, rc = 0;

	gf_buf_addf(&path, "%s.sweep-lock", db_path);
	rc = gf_mkdir_parents(gf_buf_str(&path), err);
	if (rc < 0)
		goto out;
	fd = open(gf_buf_str(&path), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE, "cannot open lock file '%s' (%s)",
				gf_buf_str(&path), strerror(errno));
		goto out;
	}
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			rc = gf_err_set(err, GF_E_IO, GF_EK_NONE, "cannot lock '%s' (%s)",
					gf_buf_str(&path), strerror(errno));
			close(fd);
			goto out;
		}
		if (gf_monotime() >= deadline) {
			char holder[32] = "";
			ssize_t k = pread(fd, holder, sizeof(holder) - 1, 0);

			holder[k > 0 ? k : 0] = '\0';
			holder[strcspn(holder, "\n")] = '\0';
			rc = gf_err_set(err, GF_E_BUSY, GF_EK_NONE,
					"another sweep (pid %s) holds lock '%s'%s",
					*holder ? holder : "unknown", gf_buf_str(&path),
					wait > 0 ? ", and did not end in time" : "");
			close(fd);
			goto out;
		}
		gf_sleep_until(gf_monotime() + 0.1);
	}
	/* Who holds it, for the message of the next one; the lock is the flock, not this. */
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, strlen(pid), 0) < 0) {
		/* only a message is lost */
	}
	*ret_fd = fd;
out:
	gf_buf_release(&path);
	return rc;
}

void gf_store_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}
