/*
 * The SQLite inventory: opening, schema migrations and the helpers the other
 * tables use (registry.c, audit.c, tls_pins.c, store.c, rollout.c).
 */
#include "inventory/db.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "lib/buf.h"
#include "lib/util.h"

#define GF_DB_BUSY_MS 10000

struct gf_db {
	sqlite3 *h; /* one connection, used by one thread */
	char *path; /* as given to gf_db_open(), for messages */
};

/*
 * Schema migrations: migrations[i] takes a database from version i to i + 1.
 * Append only; never edit a step that has shipped. A step of several
 * literals is in parentheses: clang (-Wstring-concatenation, an error under
 * -Werror in the fuzz build) takes literals concatenated in a list of strings
 * for a missing comma unless they are.
 */
/*
 * The rollouts' node and item tables, with the states their CHECKs allow:
 * made at 4 -> 5, made again with 'interrupted' at 9 -> 10 (SQLite changes
 * a CHECK only by building the table again).
 */
#define ROLLOUT_TABLES_SQL(node_states, item_states)                                              \
	"CREATE TABLE rollout_nodes ("                                                            \
	"  rollout INTEGER NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,"                   \
	"  node TEXT NOT NULL,"                                                                   \
	"  seq INTEGER NOT NULL," /* the order of the plan */                                     \
	"  batch INTEGER NOT NULL,"                                                               \
	"  state TEXT NOT NULL CHECK (state IN (" node_states ")),"                               \
	"  kind TEXT,"                                                                            \
	"  message TEXT,"                                                                         \
	"  updated REAL NOT NULL,"                                                                \
	"  PRIMARY KEY (rollout, node)"                                                           \
	") WITHOUT ROWID;"                                                                        \
	"CREATE TABLE rollout_items ("                                                            \
	"  rollout INTEGER NOT NULL,"                                                             \
	"  node TEXT NOT NULL,"                                                                   \
	"  component TEXT NOT NULL,"                                                              \
	"  from_version TEXT,"                                                                    \
	"  to_version TEXT NOT NULL,"                                                             \
	"  action TEXT NOT NULL,"                                                                 \
	"  activation TEXT NOT NULL,"                                                             \
	"  state TEXT NOT NULL CHECK (state IN (" item_states ")),"                               \
	"  kind TEXT,"                                                                            \
	"  message TEXT,"                                                                         \
	"  PRIMARY KEY (rollout, node, component),"                                               \
	"  FOREIGN KEY (rollout, node) REFERENCES rollout_nodes(rollout, node) ON DELETE CASCADE" \
	") WITHOUT ROWID;"
#define ROLLOUT_STATES "'not-started', 'running', 'done', 'skipped', 'failed', 'pending-activation'"

static const char *const migrations[] = {
	/* 0 -> 1: node registry and audit log */
	("CREATE TABLE nodes ("
	 "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	 "  name TEXT UNIQUE NOT NULL,"
	 "  bmc TEXT,"
	 "  bmc_port INTEGER NOT NULL DEFAULT 0,"
	 "  protocol TEXT NOT NULL,"
	 "  ssh TEXT,"
	 "  profile TEXT,"
	 "  added REAL"
	 ");"
	 "CREATE TABLE node_groups ("
	 "  node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,"
	 "  grp TEXT NOT NULL,"
	 "  PRIMARY KEY (node_id, grp)"
	 ") WITHOUT ROWID;"
	 "CREATE INDEX node_groups_grp ON node_groups(grp);"
	 "CREATE TABLE audit ("
	 "  id INTEGER PRIMARY KEY,"
	 "  time REAL NOT NULL,"
	 "  user TEXT,"
	 "  verb TEXT NOT NULL,"
	 "  node TEXT,"
	 "  result TEXT,"
	 "  detail TEXT"
	 ");"
	 "CREATE INDEX audit_time ON audit(time);"),
	/* 1 -> 2: TLS certificate pins of Redfish BMCs (trust on first use) */
	("CREATE TABLE tls_pins ("
	 "  node TEXT PRIMARY KEY,"     /* registry name, or the host for -H */
	 "  fingerprint TEXT NOT NULL," /* SHA-256 of the DER certificate, hex */
	 "  first_seen REAL NOT NULL"
	 ");"),
	/*
	 * 2 -> 3: sweeps (inventory/store.c). Component lists and documents are
	 * content-addressed (hash, then the body compared) and shared by rows.
	 */
	("CREATE TABLE sweeps ("
	 "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	 "  uid TEXT NOT NULL UNIQUE," /* random, the identity across sites */
	 "  started REAL NOT NULL,"
	 "  finished REAL NOT NULL,"
	 "  imported REAL," /* when inventory import added it */
	 "  nodes INTEGER NOT NULL DEFAULT 0,"
	 "  ok INTEGER NOT NULL DEFAULT 0,"
	 "  partial INTEGER NOT NULL DEFAULT 0,"
	 "  failed INTEGER NOT NULL DEFAULT 0"
	 ");"
	 "CREATE INDEX sweeps_started ON sweeps(started, id);"
	 "CREATE TABLE csets ("
	 "  id INTEGER PRIMARY KEY,"
	 "  hash INTEGER NOT NULL,"
	 "  body BLOB NOT NULL" /* canonical form of the list */
	 ");"
	 "CREATE INDEX csets_hash ON csets(hash);"
	 "CREATE TABLE components ("
	 "  cset INTEGER NOT NULL REFERENCES csets(id) ON DELETE CASCADE,"
	 "  key TEXT NOT NULL,"
	 "  version TEXT,"
	 "  source TEXT NOT NULL CHECK (source IN ('ipmi', 'redfish', 'ssh')),"
	 "  raw_id TEXT,"
	 "  name TEXT,"
	 "  kind TEXT,"
	 "  PRIMARY KEY (cset, key)"
	 ") WITHOUT ROWID;"
	 "CREATE TABLE blobs ("
	 "  id INTEGER PRIMARY KEY,"
	 "  hash INTEGER NOT NULL,"
	 "  body TEXT NOT NULL" /* compact JSON, keys sorted */
	 ");"
	 "CREATE INDEX blobs_hash ON blobs(hash);"
	 "CREATE TABLE sweep_nodes ("
	 "  sweep INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,"
	 "  node TEXT NOT NULL,"
	 "  status TEXT NOT NULL CHECK (status IN ('ok', 'partial', 'failed')),"
	 "  errors TEXT," /* JSON [{"op","kind","message"}], NULL: none */
	 "  protocol TEXT,"
	 "  model TEXT,"
	 "  fw_read INTEGER NOT NULL DEFAULT 0,"
	 "  host_read INTEGER NOT NULL DEFAULT 0,"
	 "  cset INTEGER NOT NULL REFERENCES csets(id),"
	 "  hardware INTEGER REFERENCES blobs(id),"
	 "  host INTEGER REFERENCES blobs(id),"
	 "  sel_total INTEGER," /* NULL: the SEL was not read */
	 "  sel_info INTEGER,"
	 "  sel_warning INTEGER,"
	 "  sel_critical INTEGER,"
	 "  sel_mark REAL,"
	 "  sens_nominal INTEGER," /* NULL: sensors were not read */
	 "  sens_warning INTEGER,"
	 "  sens_critical INTEGER,"
	 "  sens_unknown INTEGER,"
	 "  PRIMARY KEY (sweep, node)"
	 ") WITHOUT ROWID;"
	 "CREATE INDEX sweep_nodes_node ON sweep_nodes(node, sweep);"
	 "CREATE INDEX sweep_nodes_cset ON sweep_nodes(cset);"
	 "CREATE INDEX sweep_nodes_hardware ON sweep_nodes(hardware);"
	 "CREATE INDEX sweep_nodes_host ON sweep_nodes(host);"
	 "CREATE TABLE node_last (" /* each node's newest row */
	 "  node TEXT PRIMARY KEY,"
	 "  sweep INTEGER NOT NULL,"
	 "  started REAL NOT NULL"
	 ") WITHOUT ROWID;"),
	/*
	 * 3 -> 4: audit before acting. A row is written as an intent (result
	 * 'pending', finished NULL) and committed before the request leaves,
	 * then completed with the result; one still pending after the run is
	 * an action that may have happened.
	 */
	("ALTER TABLE audit ADD COLUMN finished REAL;"
	 "UPDATE audit SET finished = time;"
	 "CREATE INDEX audit_pending ON audit(node) WHERE finished IS NULL;"),
	/* 4 -> 5: firmware rollouts (inventory/rollout.c): the plan and each node's state */
	("CREATE TABLE rollouts ("
	 "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	 "  started REAL NOT NULL,"
	 "  finished REAL,"
	 "  user TEXT,"
	 "  state TEXT NOT NULL CHECK (state IN ('running', 'stopped', 'finished')),"
	 "  catalog_path TEXT NOT NULL,"
	 "  catalog TEXT NOT NULL," /* the catalog as read: resume plans with it */
	 "  options TEXT NOT NULL"  /* JSON */
	 ");"
	 /* clang-format off */
	 ROLLOUT_TABLES_SQL(ROLLOUT_STATES ", 'unsupported'", ROLLOUT_STATES)),
	/* clang-format on */
	/*
	 * 5 -> 6: a node's BIOS settings (components bios.* of kind "setting")
	 * in a list of their own, shared by every node whose settings agree
	 * whatever its firmware and host facts: 400 settings are not copied
	 * each time a driver changes. NULL: none.
	 */
	("ALTER TABLE sweep_nodes ADD COLUMN bios_cset INTEGER;" /* a csets id; no FOREIGN KEY: ALTER TABLE cannot add one */
	 /* were the settings read (what drift compares them on, as fw_read for firmware) */
	 "ALTER TABLE sweep_nodes ADD COLUMN bios_read INTEGER NOT NULL DEFAULT 0;"
	 /* rows of version 5 read none */),
	/*
	 * 6 -> 7: a component's source is data, not a list in the schema, so
	 * that a new backend or stream brings new sources without a migration.
	 * SQLite drops a CHECK only by building the table again; no table
	 * refers to this one.
	 */
	("CREATE TABLE components_new ("
	 "  cset INTEGER NOT NULL REFERENCES csets(id) ON DELETE CASCADE,"
	 "  key TEXT NOT NULL,"
	 "  version TEXT,"
	 "  source TEXT NOT NULL," /* where it was read: a protocol's name, or ssh */
	 "  raw_id TEXT,"
	 "  name TEXT,"
	 "  kind TEXT,"
	 "  PRIMARY KEY (cset, key)"
	 ") WITHOUT ROWID;"
	 "INSERT INTO components_new (cset, key, version, source, raw_id, name, kind)"
	 "  SELECT cset, key, version, source, raw_id, name, kind FROM components;"
	 "DROP TABLE components;"
	 "ALTER TABLE components_new RENAME TO components;"),
	/*
	 * 7 -> 8: each image file of a rollout as planned (absolute path, size,
	 * SHA-256): every push checks the bytes it sends against it, and resume
	 * pushes that file wherever it runs. Rollouts of version 7 have none.
	 */
	("CREATE TABLE rollout_images ("
	 "  rollout INTEGER NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,"
	 "  image INTEGER NOT NULL," /* the catalog entry's index */
	 "  file TEXT NOT NULL,"
	 "  size INTEGER NOT NULL,"
	 "  sha256 TEXT NOT NULL,"
	 "  PRIMARY KEY (rollout, image)"
	 ") WITHOUT ROWID;"),
	/*
	 * 8 -> 9 (IF NOT EXISTS: the tests of older steps lower user_version
	 * and migrate again): events of every source (events follow, host Xid), each
	 * stored once per node and dedupe key (inventory/events.h), and where
	 * each source of a node got to, written with the events it covers.
	 */
	("CREATE TABLE IF NOT EXISTS events ("
	 "  id INTEGER PRIMARY KEY,"
	 "  node TEXT NOT NULL,"
	 "  source TEXT NOT NULL," /* sel, redfish-sse, redfish-log, host-xid, ... */
	 "  bmc_id TEXT,"          /* the id the peer gives */
	 "  key TEXT NOT NULL,"    /* the dedupe key */
	 "  time REAL,"            /* epoch seconds UTC as the peer says, NULL: none */
	 "  received REAL NOT NULL,"
	 "  severity TEXT NOT NULL,"
	 "  message TEXT,"
	 "  message_id TEXT,"
	 "  sensor TEXT,"
	 "  type TEXT,"
	 "  origin TEXT,"
	 "  payload TEXT," /* JSON */
	 "  UNIQUE (node, key)"
	 ");"
	 "CREATE INDEX IF NOT EXISTS events_time ON events (coalesce(time, received));"
	 "CREATE INDEX IF NOT EXISTS events_received ON events (received);"
	 "CREATE TABLE IF NOT EXISTS event_cursors ("
	 "  node TEXT NOT NULL,"
	 "  source TEXT NOT NULL,"
	 "  cursor TEXT NOT NULL," /* the source's own */
	 "  updated REAL NOT NULL,"
	 "  PRIMARY KEY (node, source)"
	 ") WITHOUT ROWID;"),
	/*
	 * 9 -> 10: one rollout per node at a time, and a known state after any
	 * interruption. The process that runs a rollout (holder_pid, its start
	 * time in clock ticks since boot, the boot id) claims it: a node of a
	 * rollout whose holder is alive is refused to any other run or resume,
	 * and a holder that died (kill -9, a reboot) is recognised as dead.
	 * A node or item stopped by Ctrl-C while its image was with the BMC is
	 * 'interrupted': SQLite changes a CHECK only by building the table
	 * again (renamed first, so that the items' foreign key follows).
	 */
	/* The tables' SQL between the statements around it, as written: */
	/* clang-format off */
	("ALTER TABLE rollouts ADD COLUMN holder_pid INTEGER;"
	 "ALTER TABLE rollouts ADD COLUMN holder_start INTEGER;"
	 "ALTER TABLE rollouts ADD COLUMN holder_boot TEXT;"
	 "ALTER TABLE rollout_items RENAME TO rollout_items_8;"
	 "ALTER TABLE rollout_nodes RENAME TO rollout_nodes_8;"
	 ROLLOUT_TABLES_SQL(ROLLOUT_STATES ", 'unsupported', 'interrupted'",
			    ROLLOUT_STATES ", 'interrupted'")
	 "INSERT INTO rollout_nodes SELECT rollout, node, seq, batch, state, kind, message, updated"
	 "  FROM rollout_nodes_8;"
	 "INSERT INTO rollout_items SELECT rollout, node, component, from_version, to_version,"
	 "  action, activation, state, kind, message FROM rollout_items_8;"
	 "DROP TABLE rollout_items_8;"
	 "DROP TABLE rollout_nodes_8;"),
	/* clang-format on */
	/*
	 * 10 -> 11: each leak detector a sweep read (issue 21), where the BMC
	 * serves it and its state, so that metrics exports them per detector:
	 * a JSON array (inventory/codec.h gf_codec_leaks_to_json), NULL where
	 * sensors were not read or the node has none.
	 */
	("ALTER TABLE sweep_nodes ADD COLUMN leaks TEXT;"),
};

#define N_MIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

int gf_db_schema_version(void)
{
	return N_MIGRATIONS;
}

sqlite3 *gf_db_sqlite(struct gf_db *db)
{
	return db->h;
}

const char *gf_db_path(const struct gf_db *db)
{
	return db->path;
}

/*
 * Report a failed sqlite call on @db. Call it before anything else touches
 * the connection, as sqlite3_errmsg() describes only the latest call.
 */
int gf_db_fail(struct gf_db *db, int rc, const char *what, struct gf_err *err)
{
	const char *msg = db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc);
	int code;

	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		code = gf_err_set(err, GF_E_BUSY, GF_EK_NONE,
				  "database '%s' is locked by another process, %s failed (%s)",
				  db->path, what, msg);
		break;
	case SQLITE_NOTADB:
		code = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "file '%s' is not a gpufleet database (%s)", db->path, msg);
		break;
	default:
		code = gf_err_set(err, GF_E_DB, GF_EK_NONE, "%s in database '%s' failed (%s)", what,
				  db->path, msg);
		break;
	}
	if (err)
		err->detail = rc;
	return code;
}

static int prepare(struct gf_db *db, const char *sql, unsigned flags, sqlite3_stmt **ret,
		   const char *what, struct gf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v3(db->h, sql, -1, flags, &st, NULL);

	if (rc != SQLITE_OK) {
		int code = gf_db_fail(db, rc, what, err);

		sqlite3_finalize(st);
		return code;
	}
	*ret = st;
	return 0;
}

int gf_db_prepare(struct gf_db *db, const char *sql, sqlite3_stmt **ret, const char *what,
		  struct gf_err *err)
{
	return prepare(db, sql, 0, ret, what, err);
}

int gf_db_prepare_kept(struct gf_db *db, const char *sql, sqlite3_stmt **ret, const char *what,
		       struct gf_err *err)
{
	return prepare(db, sql, SQLITE_PREPARE_PERSISTENT, ret, what, err);
}

/* Run constant SQL, possibly several statements, that takes no parameters. */
int gf_db_exec(struct gf_db *db, const char *sql, const char *what, struct gf_err *err)
{
	const char *tail = sql;

	while (*tail) {
		sqlite3_stmt *st = NULL;
		const char *next = NULL;
		int rc = sqlite3_prepare_v2(db->h, tail, -1, &st, &next);

		if (rc != SQLITE_OK)
			return gf_db_fail(db, rc, what, err);
		if (!st) /* only whitespace or comments left */
			break;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			;
		if (rc != SQLITE_DONE) {
			int code = gf_db_fail(db, rc, what, err);

			sqlite3_finalize(st);
			return code;
		}
		sqlite3_finalize(st);
		tail = next;
	}
	return 0;
}

/* Run a statement that yields one integer row (a PRAGMA read). */
static int db_int(struct gf_db *db, const char *sql, const char *what, int *ret, struct gf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = gf_db_prepare(db, sql, &st, what, err);

	if (rc < 0)
		return rc;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		if (rc == SQLITE_DONE)
			rc = SQLITE_ERROR;
		rc = gf_db_fail(db, rc, what, err);
		sqlite3_finalize(st);
		return rc;
	}
	*ret = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return 0;
}

/* Write transactions take the lock up front, so they wait (busy timeout) rather than deadlock. */
int gf_db_begin(struct gf_db *db, const char *what, struct gf_err *err)
{
	return gf_db_exec(db, "BEGIN IMMEDIATE", what, err);
}

/* Undo after a failure: the error is already reported, a failed rollback adds nothing. */
void gf_db_rollback(struct gf_db *db)
{
	if (!sqlite3_get_autocommit(db->h))
		sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

int gf_db_commit(struct gf_db *db, const char *what, struct gf_err *err)
{
	int rc = gf_db_exec(db, "COMMIT", what, err);

	if (rc < 0)
		gf_db_rollback(db);
	return rc;
}

int gf_db_bind_text(struct gf_db *db, sqlite3_stmt *st, int i, const char *s, const char *what,
		    struct gf_err *err)
{
	int rc = s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);

	return rc == SQLITE_OK ? 0 : gf_db_fail(db, rc, what, err);
}

int gf_db_bind_int64(struct gf_db *db, sqlite3_stmt *st, int i, sqlite3_int64 v, const char *what,
		     struct gf_err *err)
{
	int rc = sqlite3_bind_int64(st, i, v);

	return rc == SQLITE_OK ? 0 : gf_db_fail(db, rc, what, err);
}

int gf_db_bind_double(struct gf_db *db, sqlite3_stmt *st, int i, double v, const char *what,
		      struct gf_err *err)
{
	int rc = sqlite3_bind_double(st, i, v);

	return rc == SQLITE_OK ? 0 : gf_db_fail(db, rc, what, err);
}

/* Step a statement that returns no rows, and reset it for the next use. */
int gf_db_step_done(struct gf_db *db, sqlite3_stmt *st, const char *what, struct gf_err *err)
{
	int rc = sqlite3_step(st);

	if (rc != SQLITE_DONE) {
		if (rc == SQLITE_ROW)
			rc = SQLITE_MISUSE;
		rc = gf_db_fail(db, rc, what, err);
		sqlite3_reset(st);
		return rc;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return 0;
}

int gf_db_write(struct gf_db *db, const struct gf_db_write *w, size_t n, struct gf_err *err)
{
	sqlite3_stmt *st[GF_DB_WRITE_MAX] = {NULL};
	int rc = 0;

	for (size_t k = 0; k < GF_DB_WRITE_MAX && w->sql[k] && rc == 0; k++)
		rc = gf_db_prepare(db, w->sql[k], &st[k], w->what, err);
	if (rc == 0)
		rc = gf_db_begin(db, w->what, err);
	if (rc == 0) {
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = w->row(db, st, w->what, w->ud, i, err);
		if (rc == 0)
			rc = gf_db_commit(db, w->what, err);
		else
			gf_db_rollback(db);
	}
	for (size_t k = 0; k < GF_DB_WRITE_MAX; k++)
		sqlite3_finalize(st[k]);
	return rc;
}

/* A copy of a text column, NULL for SQL NULL; the column's memory dies with the next step. */
char *gf_db_col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);

	return s ? gf_xstrdup((const char *)s) : NULL;
}

int gf_db_check_name(const char *what, const char *name, struct gf_err *err)
{
	if (!name || !*name)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "%s name is empty", what);
	return 0;
}

/* Create the file ourselves so that its mode is 0600 whatever the umask. */
static int create_file(const char *path, struct gf_err *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0) {
		if (errno == EEXIST)
			return 0;
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE, "cannot create database '%s' (%s)",
				  path, strerror(errno));
	}
	if (fchmod(fd, 0600) < 0) {
		int e = errno;

		close(fd);
		unlink(path);
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "cannot set the mode of database '%s' (%s)", path, strerror(e));
	}
	close(fd);
	return 0;
}

static int too_new(struct gf_db *db, int version, struct gf_err *err)
{
	return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
			  "database '%s' has schema version %d, newer than this gpufleet knows (%d)",
			  db->path, version, N_MIGRATIONS);
}

/* Bring a database at schema @version up to N_MIGRATIONS, all steps in one transaction. */
static int migrate(struct gf_db *db, int version, struct gf_err *err)
{
	static const char what[] = "migrating the schema";
	int rc;

	if (version == N_MIGRATIONS)
		return 0;
	rc = gf_db_begin(db, what, err);
	if (rc < 0)
		return rc;
	/* Another process may have migrated while we waited for the lock. */
	rc = db_int(db, "PRAGMA user_version", what, &version, err);
	if (rc < 0)
		goto fail;
	if (version < 0 || version > N_MIGRATIONS) {
		rc = too_new(db, version, err);
		goto fail;
	}
	if (version == N_MIGRATIONS) {
		gf_db_rollback(db); /* nothing was written */
		return 0;
	}
	for (int v = version; v < N_MIGRATIONS; v++) {
		rc = gf_db_exec(db, migrations[v], what, err);
		if (rc < 0)
			goto fail;
	}
	{
		/* PRAGMA takes no parameters; the value is ours, not the user's. */
		char sql[64];

		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", N_MIGRATIONS);
		rc = gf_db_exec(db, sql, what, err);
		if (rc < 0)
			goto fail;
	}
	return gf_db_commit(db, what, err);

fail:
	gf_db_rollback(db);
	return rc;
}

int gf_db_set_busy_timeout(struct gf_db *db, int ms, struct gf_err *err)
{
	int rc = sqlite3_busy_timeout(db->h, ms);

	return rc == SQLITE_OK ? 0 : gf_db_fail(db, rc, "setting the busy timeout", err);
}

int gf_db_open(const char *path, struct gf_db **ret, struct gf_err *err)
{
	struct gf_db *db = NULL;
	int version = 0;
	int rc;

	if (!path || !*path)
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE, "database path is empty");
	rc = gf_mkdir_parents(path, err);
	if (rc < 0)
		return rc;
	rc = create_file(path, err);
	if (rc < 0)
		return rc;
	{
		struct stat sb;

		if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
			return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					  "database '%s' is a symbolic link; gpufleet does not follow "
					  "it (name the file itself)",
					  path);
	}

	db = gf_xcalloc(1, sizeof(*db));
	db->path = gf_xstrdup(path);
	/* NOFOLLOW: a link swapped in after the check is refused by SQLite itself. */
	rc = sqlite3_open_v2(path, &db->h,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
			     NULL);
	if (rc != SQLITE_OK) {
		const char *msg = db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc);

		gf_err_set(err, GF_E_CONFIG, GF_EK_NONE, "cannot open database '%s' (%s)", path,
			   msg);
		if (err)
			err->detail = rc;
		rc = GF_E_CONFIG;
		goto out;
	}
	sqlite3_extended_result_codes(db->h, 1);
	rc = gf_db_set_busy_timeout(db, GF_DB_BUSY_MS, err);
	if (rc < 0)
		goto out;

	/*
	 * Read the version before anything writes: a file that is not a
	 * database, or one from a newer gpufleet, is left untouched.
	 */
	rc = db_int(db, "PRAGMA user_version", "reading the schema version", &version, err);
	if (rc < 0)
		goto out;
	if (version < 0 || version > N_MIGRATIONS) {
		rc = too_new(db, version, err);
		goto out;
	}

	/*
	 * WAL lets a cron sweep and an operator share the file. A file system
	 * without shared memory keeps the old journal mode, which still works,
	 * only with less concurrency, so the answer is not checked.
	 */
	rc = gf_db_exec(db, "PRAGMA journal_mode = WAL", "setting WAL mode", err);
	if (rc < 0)
		goto out;
	rc = gf_db_exec(db, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL",
			"setting up the connection", err);
	if (rc < 0)
		goto out;
	rc = migrate(db, version, err);

out:
	if (rc < 0) {
		gf_db_close(db);
		return rc;
	}
	*ret = db;
	return 0;
}

void gf_db_close(struct gf_db *db)
{
	if (!db)
		return;
	sqlite3_close_v2(db->h);
	free(db->path);
	free(db);
}
