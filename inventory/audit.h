/* The audit table of the inventory (inventory/db.h opens it). */
#ifndef GF_INV_AUDIT_H
#define GF_INV_AUDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"

struct gf_db;

/* One line of the audit table. */
struct gf_audit {
	double time;      /* epoch seconds the action was sent */
	const char *user; /* login user */
	const char *verb; /* "power on", "power off", ... */
	const char *node;
	const char *result; /* "ok", or the error kind */
	const char *detail; /* message, may be NULL */
};

/* Append finished audit rows in one transaction. */
int gf_db_audit_add(struct gf_db *db, const struct gf_audit *rows, size_t n, struct gf_err *err);

/*
 * Audit before acting. gf_db_audit_intent() writes one row per @rows (time,
 * user, verb, node, detail; result is GF_AUDIT_PENDING, not finished) in one
 * transaction synced to disk, and sets ids[i] (caller's array of @n) to each
 * row's id; only when it returned 0 may the action be sent. Nothing is set
 * on failure.
 *
 * gf_db_audit_finish() completes rows @ids[i] with @rows[i].result and
 * .detail (.time, when not 0, replaces the intent's time: when it was sent);
 * a NULL result removes the intent (nothing was sent). Rows already finished
 * are left as they are.
 */
#define GF_AUDIT_PENDING "pending"
int gf_db_audit_intent(struct gf_db *db, const struct gf_audit *rows, size_t n, long long *ids,
		       struct gf_err *err);
int gf_db_audit_finish(struct gf_db *db, const long long *ids, const struct gf_audit *rows,
		       size_t n, struct gf_err *err);

/* One row of the audit table as read back. */
struct gf_audit_entry {
	long long id;
	double time;     /* intent written, or when the action was sent */
	double finished; /* when the result was recorded; 0 while pending */
	bool pending;    /* an intent never completed: the action may have happened */
	char *user, *verb, *node, *result, *detail;
};
/* Every audit row (or only the pending ones), oldest first. Free with _entries_free(). */
int gf_db_audit_list(struct gf_db *db, bool pending_only, struct gf_audit_entry **ret,
		     size_t *ret_n, struct gf_err *err);
void gf_db_audit_entries_free(struct gf_audit_entry *e, size_t n);

#endif
