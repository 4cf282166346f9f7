/* The SQLite inventory: node registry, audit log; schema versions migrated forward. */
#ifndef GF_DB_H
#define GF_DB_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"
#include "lib/node.h"

struct gf_db;

/*
 * Open or create @path (parent directories made 0700, file 0600), WAL mode,
 * busy timeout, foreign keys, and migrate the schema to the current version
 * (PRAGMA user_version) in one transaction. A file from a newer gpufleet is
 * refused (GF_E_CONFIG). Caller frees with gf_db_close(). A handle is used by
 * one thread.
 */
int gf_db_open(const char *path, struct gf_db **ret, struct gf_err *err);
void gf_db_close(struct gf_db *db);
/*
 * How long a write waits for another process's lock before it fails with
 * GF_E_BUSY (gf_db_open() sets 10 s).
 */
int gf_db_set_busy_timeout(struct gf_db *db, int ms, struct gf_err *err);
/* The schema version this build writes. */
int gf_db_schema_version(void);

/*
 * The connection and the path, for the other modules of inventory/ that keep
 * their own tables (store.c); not for cli/.
 */
struct sqlite3;
struct sqlite3 *gf_db_sqlite(struct gf_db *db);
const char *gf_db_path(const struct gf_db *db);

/*
 * The SQLite helpers of inventory/ (db.c, store.c), on @db's connection; not
 * for cli/. @what names the operation in messages ("writing a sweep").
 */
struct sqlite3_stmt;
/*
 * A failed sqlite call (@rc) as GF_E_BUSY, GF_E_CONFIG (not a database) or
 * GF_E_DB; call it before the connection is used again.
 */
int gf_db_fail(struct gf_db *db, int rc, const char *what, struct gf_err *err);
/* Prepare one statement; _kept for statements reused many times (a write transaction). */
int gf_db_prepare(struct gf_db *db, const char *sql, struct sqlite3_stmt **ret, const char *what,
		  struct gf_err *err);
int gf_db_prepare_kept(struct gf_db *db, const char *sql, struct sqlite3_stmt **ret,
		       const char *what, struct gf_err *err);
/* Run constant SQL, possibly several statements, that takes no parameters. */
int gf_db_exec(struct gf_db *db, const char *sql, const char *what, struct gf_err *err);
/* Bind text, checking the result (a value may be too big); NULL binds SQL NULL. */
int gf_db_bind_text(struct gf_db *db, struct sqlite3_stmt *st, int i, const char *s,
		    const char *what, struct gf_err *err);
/* Step a statement that returns no rows, then reset it and clear its bindings. */
int gf_db_step_done(struct gf_db *db, struct sqlite3_stmt *st, const char *what,
		    struct gf_err *err);
/* BEGIN IMMEDIATE: a write transaction takes the lock up front (it waits, never deadlocks). */
int gf_db_begin(struct gf_db *db, const char *what, struct gf_err *err);
/* COMMIT; when that fails the transaction is rolled back. */
int gf_db_commit(struct gf_db *db, const char *what, struct gf_err *err);
/* Roll back an open transaction after a failure that is already reported. */
void gf_db_rollback(struct gf_db *db);

/*
 * One small write (nodes, groups, the audit, TLS pins): prepare @sql (up to
 * GF_DB_WRITE_MAX statements, NULL after the last), BEGIN IMMEDIATE, call
 * @row for items 0..@n-1, each binding and stepping the statements it needs
 * (gf_db_step_done()), and COMMIT; the first failure rolls all of it back and
 * is returned. The statements are finalized in every case.
 */
#define GF_DB_WRITE_MAX 3
struct gf_db_write {
	const char *what;                      /* the operation, for messages */
	const char *sql[GF_DB_WRITE_MAX];
	int (*row)(struct gf_db *db, struct sqlite3_stmt *const *st, const char *what,
		   const void *ud, size_t i, struct gf_err *err);
	const void *ud;                        /* for @row */
};
int gf_db_write(struct gf_db *db, const struct gf_db_write *w, size_t n, struct gf_err *err);

/*
 * Add @n nodes in one transaction. A name already registered is GF_E_USAGE
 * ("node 'x' already exists") and nothing is added, unless @replace.
 */
int gf_db_nodes_add(struct gf_db *db, const struct gf_node *nodes, size_t n, bool replace,
		    struct gf_err *err);
/* Every registered node, in registration order. Free with gf_nodes_free(). */
int gf_db_nodes_load(struct gf_db *db, struct gf_node **ret, size_t *ret_n, struct gf_err *err);
/* Remove nodes (and their group memberships) in one transaction. */
int gf_db_nodes_remove(struct gf_db *db, const char *const *names, size_t n, struct gf_err *err);
/* Add and remove groups of nodes in one transaction. */
int gf_db_nodes_tag(struct gf_db *db, const char *const *names, size_t n,
		    const char *const *add, size_t nadd, const char *const *del, size_t ndel,
		    struct gf_err *err);

/* One line of the audit table. */
struct gf_audit {
	double time;         /* epoch seconds the action was sent */
	const char *user;    /* login user */
	const char *verb;    /* "power on", "power off", ... */
	const char *node;
	const char *result;  /* "ok", or the error kind */
	const char *detail;  /* message, may be NULL */
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
	double time;         /* intent written, or when the action was sent */
	double finished;     /* when the result was recorded; 0 while pending */
	bool pending;        /* an intent never completed: the action may have happened */
	char *user, *verb, *node, *result, *detail;
};
/* Every audit row (or only the pending ones), oldest first. Free with _entries_free(). */
int gf_db_audit_list(struct gf_db *db, bool pending_only, struct gf_audit_entry **ret,
		     size_t *ret_n, struct gf_err *err);
void gf_db_audit_entries_free(struct gf_audit_entry *e, size_t n);

/*
 * TLS certificate pins of Redfish BMCs, by node name (the host for -H): the
 * SHA-256 of the DER certificate, lower-case hex. *ret is the pin (caller
 * frees) or NULL when the node has none.
 */
int gf_db_tls_pin_get(struct gf_db *db, const char *node, char **ret, struct gf_err *err);
/*
 * Record pins in one transaction: @fps[i] for @nodes[i], replacing what was
 * there (first_seen is then now); a NULL @fps[i] removes the pin.
 */
int gf_db_tls_pin_set(struct gf_db *db, const char *const *nodes, const char *const *fps,
		      size_t n, struct gf_err *err);
/*
 * Pin on first use, in one transaction: @fps[i] (not NULL) for each of
 * @nodes that has no pin; a node pinned meanwhile (by another run) keeps
 * the pin it has.
 */
int gf_db_tls_pin_add(struct gf_db *db, const char *const *nodes, const char *const *fps,
		      size_t n, struct gf_err *err);

#endif
