/* The audit table: intents written before acting, completed after. */
#include "inventory/audit.h"

#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "inventory/db.h"
#include "lib/buf.h"
#include "lib/util.h"

static int audit_row(struct gf_db *db, sqlite3_stmt *const *st, const char *what, const void *ud,
		     size_t i, struct gf_err *err)
{
	const struct gf_audit *a = &((const struct gf_audit *)ud)[i];
	int rc;

	if ((rc = gf_db_bind_double(db, st[0], 1, a->time, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 2, a->user, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 3, a->verb, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 4, a->node, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 5, a->result, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 6, a->detail, what, err)) < 0)
		return rc;
	return gf_db_step_done(db, st[0], what, err);
}

int gf_db_audit_add(struct gf_db *db, const struct gf_audit *rows, size_t n, struct gf_err *err)
{
	const struct gf_db_write w = {
		.what = "writing the audit log",
		.sql = {"INSERT INTO audit (time, user, verb, node, result, detail, finished)"
			" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?1)"},
		.row = audit_row,
		.ud = rows,
	};

	for (size_t i = 0; i < n; i++)
		if (!rows[i].verb)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "audit row has no verb");
	return gf_db_write(db, &w, n, err);
}

struct audit_intent {
	const struct gf_audit *rows;
	long long *ids;
};

static int audit_intent_row(struct gf_db *db, sqlite3_stmt *const *st, const char *what,
			    const void *ud, size_t i, struct gf_err *err)
{
	const struct audit_intent *a = ud;
	const struct gf_audit *r = &a->rows[i];
	int rc;

	if ((rc = gf_db_bind_double(db, st[0], 1, r->time, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 2, r->user, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 3, r->verb, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 4, r->node, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[0], 5, r->detail, what, err)) < 0 ||
	    (rc = gf_db_step_done(db, st[0], what, err)) < 0)
		return rc;
	a->ids[i] = (long long)sqlite3_last_insert_rowid(gf_db_sqlite(db));
	return 0;
}

int gf_db_audit_intent(struct gf_db *db, const struct gf_audit *rows, size_t n, long long *ids,
		       struct gf_err *err)
{
	long long *got = gf_xcalloc(n ? n : 1, sizeof(*got));
	const struct audit_intent a = {rows, got};
	const struct gf_db_write w = {
		.what = "writing the audit log before the action",
		.sql = {"INSERT INTO audit (time, user, verb, node, result, detail, finished)"
			" VALUES (?1, ?2, ?3, ?4, '" GF_AUDIT_PENDING "', ?5, NULL)"},
		.row = audit_intent_row,
		.ud = &a,
	};
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++)
		if (!rows[i].verb)
			rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "audit row has no verb");
	/*
	 * The intent must outlive a crash of this process and of the machine:
	 * this commit is synced to disk (FULL), the other writes stay NORMAL.
	 */
	if (rc == 0)
		rc = gf_db_exec(db, "PRAGMA synchronous = FULL", w.what, err);
	if (rc == 0) {
		rc = gf_db_write(db, &w, n, err);
		sqlite3_exec(gf_db_sqlite(db), "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
	}
	if (rc == 0)
		memcpy(ids, got, n * sizeof(*ids));
	free(got);
	return rc;
}

struct audit_finish {
	const long long *ids;
	const struct gf_audit *rows;
	double now;
};

enum { FIN_SET, FIN_DEL };

static int audit_finish_row(struct gf_db *db, sqlite3_stmt *const *st, const char *what,
			    const void *ud, size_t i, struct gf_err *err)
{
	const struct audit_finish *f = ud;
	const struct gf_audit *r = &f->rows[i];
	int rc;

	if (!r->result) {
		if ((rc = gf_db_bind_int64(db, st[FIN_DEL], 1, f->ids[i], what, err)) < 0)
			return rc;
		return gf_db_step_done(db, st[FIN_DEL], what, err);
	}
	if ((rc = gf_db_bind_int64(db, st[FIN_SET], 1, f->ids[i], what, err)) < 0 ||
	    (rc = gf_db_bind_double(db, st[FIN_SET], 2, r->time, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[FIN_SET], 3, r->result, what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[FIN_SET], 4, r->detail, what, err)) < 0 ||
	    (rc = gf_db_bind_double(db, st[FIN_SET], 5, f->now, what, err)) < 0)
		return rc;
	return gf_db_step_done(db, st[FIN_SET], what, err);
}

int gf_db_audit_finish(struct gf_db *db, const long long *ids, const struct gf_audit *rows,
		       size_t n, struct gf_err *err)
{
	const struct audit_finish f = {ids, rows, gf_walltime()};
	const struct gf_db_write w = {
		.what = "completing the audit log",
		.sql = {[FIN_SET] = "UPDATE audit SET time = coalesce(nullif(?2, 0), time),"
				    " result = ?3, detail = ?4, finished = ?5"
				    " WHERE id = ?1 AND finished IS NULL",
			[FIN_DEL] = "DELETE FROM audit WHERE id = ?1 AND finished IS NULL"},
		.row = audit_finish_row,
		.ud = &f,
	};

	return gf_db_write(db, &w, n, err);
}

void gf_db_audit_entries_free(struct gf_audit_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++) {
		free(e[i].user);
		free(e[i].verb);
		free(e[i].node);
		free(e[i].result);
		free(e[i].detail);
	}
	free(e);
}

int gf_db_audit_list(struct gf_db *db, bool pending_only, struct gf_audit_entry **ret,
		     size_t *ret_n, struct gf_err *err)
{
	static const char what[] = "reading the audit log";
	sqlite3_stmt *st = NULL;
	struct gf_audit_entry *e = NULL;
	size_t n = 0, cap = 0;
	int rc = gf_db_prepare(db,
			       pending_only
				       ? "SELECT id, time, user, verb, node, result, detail, finished"
					 " FROM audit WHERE finished IS NULL ORDER BY id"
				       : "SELECT id, time, user, verb, node, result, detail, finished"
					 " FROM audit ORDER BY id",
			       &st, what, err);

	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			e = gf_xrealloc(e, cap * sizeof(*e));
		}
		e[n] = (struct gf_audit_entry){
			.id = sqlite3_column_int64(st, 0),
			.time = sqlite3_column_double(st, 1),
			.user = gf_db_col_text(st, 2),
			.verb = gf_db_col_text(st, 3),
			.node = gf_db_col_text(st, 4),
			.result = gf_db_col_text(st, 5),
			.detail = gf_db_col_text(st, 6),
			.pending = sqlite3_column_type(st, 7) == SQLITE_NULL,
			.finished = sqlite3_column_double(st, 7),
		};
		n++;
	}
	if (rc != SQLITE_DONE) {
		rc = gf_db_fail(db, rc, what, err);
		gf_db_audit_entries_free(e, n);
	} else {
		rc = 0;
		*ret = e;
		*ret_n = n;
	}
	sqlite3_finalize(st);
	return rc;
}
