/* The stored TLS certificate pins: read, set, added on first use. */
#include "inventory/tls_pins.h"

#include <sqlite3.h>

#include "inventory/db.h"
#include "lib/util.h"

int gf_db_tls_pin_get(struct gf_db *db, const char *node, char **ret, struct gf_err *err)
{
	static const char what[] = "reading a TLS pin";
	sqlite3_stmt *st = NULL;
	char *fp = NULL;
	int rc;

	if ((rc = gf_db_check_name("node", node, err)) < 0)
		return rc;
	rc = gf_db_prepare(db, "SELECT fingerprint FROM tls_pins WHERE node = ?1", &st, what, err);
	if (rc < 0)
		return rc;
	if ((rc = gf_db_bind_text(db, st, 1, node, what, err)) < 0)
		goto out;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		fp = gf_db_col_text(st, 0);
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = 0;
	} else {
		rc = gf_db_fail(db, rc, what, err);
		goto out;
	}
	*ret = fp;
out:
	sqlite3_finalize(st);
	return rc;
}

struct pins_set {
	const char *const *nodes, *const *fps;
	double now;
};

enum { PIN_PUT, PIN_DEL };

static int pin_row(struct gf_db *db, sqlite3_stmt *const *st, const char *what, const void *ud,
		   size_t i, struct gf_err *err)
{
	const struct pins_set *p = ud;
	int rc;

	if (!p->fps[i]) {
		if ((rc = gf_db_bind_text(db, st[PIN_DEL], 1, p->nodes[i], what, err)) < 0)
			return rc;
		return gf_db_step_done(db, st[PIN_DEL], what, err);
	}
	if ((rc = gf_db_bind_text(db, st[PIN_PUT], 1, p->nodes[i], what, err)) < 0 ||
	    (rc = gf_db_bind_text(db, st[PIN_PUT], 2, p->fps[i], what, err)) < 0 ||
	    (rc = gf_db_bind_double(db, st[PIN_PUT], 3, p->now, what, err)) < 0)
		return rc;
	return gf_db_step_done(db, st[PIN_PUT], what, err);
}

/* The pins of @nodes in one transaction; @put is the INSERT for a node that has a fingerprint. */
static int pins_write(struct gf_db *db, const char *const *nodes, const char *const *fps, size_t n,
		      const char *put, struct gf_err *err)
{
	const struct pins_set p = {nodes, fps, gf_walltime()};
	const struct gf_db_write w = {
		.what = "writing TLS pins",
		.sql = {[PIN_PUT] = put, [PIN_DEL] = "DELETE FROM tls_pins WHERE node = ?1"},
		.row = pin_row,
		.ud = &p,
	};
	int rc;

	for (size_t i = 0; i < n; i++)
		if ((rc = gf_db_check_name("node", nodes[i], err)) < 0)
			return rc;
	return gf_db_write(db, &w, n, err);
}

int gf_db_tls_pin_set(struct gf_db *db, const char *const *nodes, const char *const *fps, size_t n,
		      struct gf_err *err)
{
	return pins_write(db, nodes, fps, n,
			  "INSERT INTO tls_pins (node, fingerprint, first_seen)"
			  " VALUES (?1, ?2, ?3) ON CONFLICT (node) DO UPDATE SET"
			  " fingerprint = excluded.fingerprint, first_seen = excluded.first_seen",
			  err);
}

int gf_db_tls_pin_add(struct gf_db *db, const char *const *nodes, const char *const *fps, size_t n,
		      struct gf_err *err)
{
	/* Another run may have pinned the node since this one read its pins: that pin stays. */
	return pins_write(db, nodes, fps, n,
			  "INSERT INTO tls_pins (node, fingerprint, first_seen)"
			  " VALUES (?1, ?2, ?3) ON CONFLICT (node) DO NOTHING",
			  err);
}
