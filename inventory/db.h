/*
 * The SQLite inventory: opening it, schema versions migrated forward, and the
 * helpers of the modules that keep tables (registry, audit, tls_pins, store, rollout).
 */
#ifndef GF_DB_H
#define GF_DB_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"

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
/* Bind a number, checking the result. */
int gf_db_bind_int64(struct gf_db *db, struct sqlite3_stmt *st, int i, long long v,
		     const char *what, struct gf_err *err);
int gf_db_bind_double(struct gf_db *db, struct sqlite3_stmt *st, int i, double v, const char *what,
		      struct gf_err *err);
/* A copy of text column @i (caller frees), NULL for SQL NULL: the column dies with a step. */
char *gf_db_col_text(struct sqlite3_stmt *st, int i);
/* GF_E_USAGE "@what name is empty" when @name is NULL or empty. */
int gf_db_check_name(const char *what, const char *name, struct gf_err *err);
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
	const char *what; /* the operation, for messages */
	const char *sql[GF_DB_WRITE_MAX];
	int (*row)(struct gf_db *db, struct sqlite3_stmt *const *st, const char *what,
		   const void *ud, size_t i, struct gf_err *err);
	const void *ud; /* for @row */
};
int gf_db_write(struct gf_db *db, const struct gf_db_write *w, size_t n, struct gf_err *err);

/* The tables, one header each, included here so that callers need only this one. */
#include "inventory/audit.h"
#include "inventory/registry.h"
#include "inventory/tls_pins.h"

#endif
