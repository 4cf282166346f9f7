/* Unit tests for inventory/db.c: open, migrations, node registry, audit, locking. */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "inventory/db.h"
#include "inventory/rollout.h"
#include "lib/buf.h"
#include "tests/unit/stub_backends.h"

/* struct gf_node holds char *; these literals are never written through. */
#define S(lit) ((char *)(lit))

struct fixture {
	char dir[64]; /* mkdtemp directory, removed afterwards */
	char *path;   /* dir + "/inv.db" */
};

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct gf_buf b = GF_BUF_INIT;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", "/tmp/gf-test-db-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	gf_buf_addf(&b, "%s/inv.db", f->dir);
	f->path = gf_buf_detach(&b);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f->path);
	free(f);
	return 0;
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct gf_db *open_ok(const char *path)
{
	struct gf_err err = {0};
	struct gf_db *db = NULL;
	int rc = gf_db_open(path, &db, &err);

	if (rc != 0)
		fail_msg("gf_db_open('%s') = %d: %s", path, rc, err.msg);
	assert_non_null(db);
	return db;
}

/* A second, raw connection for looking behind the API. */
static sqlite3 *raw_open(const char *path)
{
	sqlite3 *h = NULL;

	assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
					 NULL),
			 SQLITE_OK);
	return h;
}

static void raw_exec(sqlite3 *h, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fail_msg("%s: %s", sql, msg ? msg : "?");
	}
}

static long long raw_int(sqlite3 *h, const char *sql)
{
	sqlite3_stmt *st = NULL;
	long long v;

	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Text of the first column of the first row, copied; NULL for SQL NULL. */
static char *raw_text(sqlite3 *h, const char *sql)
{
	sqlite3_stmt *st = NULL;
	const unsigned char *s;
	char *v;

	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	s = sqlite3_column_text(st, 0);
	v = s ? gf_xstrdup((const char *)s) : NULL;
	sqlite3_finalize(st);
	return v;
}

static struct gf_node mknode(const char *name, const char *bmc, const struct gf_backend *proto,
			     char **groups, size_t ngroups)
{
	struct gf_node n = {
		.name = S(name),
		.bmc = S(bmc),
		.protocol = proto,
		.groups = groups,
		.ngroups = ngroups,
	};
	return n;
}

static void load(struct gf_db *db, struct gf_node **ret, size_t *ret_n)
{
	struct gf_err err = {0};
	int rc = gf_db_nodes_load(db, ret, ret_n, &err);

	if (rc != 0)
		fail_msg("gf_db_nodes_load = %d: %s", rc, err.msg);
}

/* The node names loaded, joined with ','; groups of each in [..]. */
static char *describe(struct gf_db *db)
{
	struct gf_node *nodes = NULL;
	struct gf_buf b = GF_BUF_INIT;
	size_t n = 0;

	load(db, &nodes, &n);
	for (size_t i = 0; i < n; i++) {
		gf_buf_addf(&b, "%s%s[", i ? "," : "", nodes[i].name);
		for (size_t g = 0; g < nodes[i].ngroups; g++)
			gf_buf_addf(&b, "%s%s", g ? " " : "", nodes[i].groups[g]);
		gf_buf_addc(&b, ']');
	}
	gf_nodes_free(nodes, n);
	return gf_buf_detach(&b);
}

static void assert_describe(struct gf_db *db, const char *want)
{
	char *got = describe(db);

	assert_string_equal(got, want);
	free(got);
}

static void test_fresh(void **state)
{
	struct fixture *f = *state;
	struct gf_buf deep = GF_BUF_INIT;
	struct gf_db *db;
	struct stat st;
	sqlite3 *h;
	char *mode;

	/* Parent directories are made, 0700. */
	gf_buf_addf(&deep, "%s/a/b/inv.db", f->dir);
	db = open_ok(gf_buf_str(&deep));
	gf_db_close(db);
	gf_buf_reset(&deep);
	gf_buf_addf(&deep, "%s/a/b", f->dir);
	assert_int_equal(stat(gf_buf_str(&deep), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	gf_buf_release(&deep);

	assert_true(gf_db_schema_version() >= 1);
	db = open_ok(f->path);
	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "PRAGMA user_version"), gf_db_schema_version());
	mode = raw_text(h, "PRAGMA journal_mode");
	assert_string_equal(mode, "wal");
	free(mode);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
				    " AND name IN ('nodes', 'node_groups', 'audit')"),
			 3);
	sqlite3_close(h);
	gf_db_close(db);

	/* Reopening an up-to-date database changes nothing. */
	db = open_ok(f->path);
	gf_db_close(db);
	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "PRAGMA user_version"), gf_db_schema_version());
	sqlite3_close(h);
}

static void test_mode_0600(void **state)
{
	struct fixture *f = *state;
	struct gf_buf wal = GF_BUF_INIT;
	struct gf_db *db;
	struct stat st;
	mode_t old = umask(0);

	db = open_ok(f->path);
	umask(old);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	/* The WAL holds the same data: sqlite gives it the database's mode. */
	gf_buf_addf(&wal, "%s-wal", f->path);
	assert_int_equal(stat(gf_buf_str(&wal), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	gf_db_close(db);

	/* A strict umask does not make it unreadable to its owner either. */
	gf_buf_reset(&wal);
	gf_buf_addf(&wal, "%s/strict.db", f->dir);
	old = umask(0277);
	db = open_ok(gf_buf_str(&wal));
	umask(old);
	assert_int_equal(stat(gf_buf_str(&wal), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	gf_buf_release(&wal);
	gf_db_close(db);
}

static void test_round_trip(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	char *g1[] = {S("rack2"), S("a100"), S("rack2"), S("all")};
	char *g2[] = {S("all")};
	struct gf_node in[3];
	struct gf_node *out = NULL;
	size_t n = 0;
	struct gf_db *db = open_ok(f->path);

	/* Registration order is not name order. */
	in[0] = mknode("gpu002", "10.0.0.2", &stub_ipmi, g1, 4);
	in[0].bmc_port = 6230;
	in[0].ssh = S("root@gpu002:2222");
	in[0].profile = S("lab");
	in[1] = mknode("gpu001", NULL, NULL, NULL, 0);
	in[1].ssh = S("gpu001");
	in[2] = mknode("gpu010", "bmc10.example", &stub_redfish, g2, 1);
	assert_int_equal(gf_db_nodes_add(db, in, 3, false, &err), 0);
	gf_db_close(db);

	db = open_ok(f->path);
	load(db, &out, &n);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "gpu002");
	assert_string_equal(out[0].bmc, "10.0.0.2");
	assert_int_equal(out[0].bmc_port, 6230);
	assert_ptr_equal(out[0].protocol, &stub_ipmi);
	assert_string_equal(out[0].ssh, "root@gpu002:2222");
	assert_string_equal(out[0].profile, "lab");
	assert_int_equal(out[0].ngroups, 3); /* sorted, the duplicate folded */
	assert_string_equal(out[0].groups[0], "a100");
	assert_string_equal(out[0].groups[1], "all");
	assert_string_equal(out[0].groups[2], "rack2");

	assert_string_equal(out[1].name, "gpu001");
	assert_null(out[1].bmc);
	assert_int_equal(out[1].bmc_port, 0);
	assert_ptr_equal(out[1].protocol, NULL);
	assert_string_equal(out[1].ssh, "gpu001");
	assert_null(out[1].profile);
	assert_int_equal(out[1].ngroups, 0);

	assert_string_equal(out[2].name, "gpu010");
	assert_ptr_equal(out[2].protocol, &stub_redfish);
	assert_null(out[2].ssh);
	assert_int_equal(out[2].ngroups, 1);
	assert_string_equal(out[2].groups[0], "all");
	gf_nodes_free(out, n);
	gf_db_close(db);
}

static void test_empty_load(void **state)
{
	struct fixture *f = *state;
	struct gf_node *out = (struct gf_node *)&out; /* must be overwritten */
	size_t n = 99;
	struct gf_db *db = open_ok(f->path);

	load(db, &out, &n);
	assert_int_equal(n, 0);
	gf_nodes_free(out, n);
	gf_db_close(db);
}

static void test_duplicate(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	char *g[] = {S("x")};
	struct gf_node one = mknode("n1", "b1", &stub_ipmi, NULL, 0);
	struct gf_node batch[3];
	struct gf_db *db = open_ok(f->path);
	sqlite3 *h;

	assert_int_equal(gf_db_nodes_add(db, &one, 1, false, NULL), 0);

	/* The third is a duplicate: the first two, and their groups, are not added either. */
	batch[0] = mknode("n2", "b2", &stub_ipmi, g, 1);
	batch[1] = mknode("n3", "b3", &stub_ipmi, g, 1);
	batch[2] = mknode("n1", "other", &stub_redfish, g, 1);
	assert_int_equal(gf_db_nodes_add(db, batch, 3, false, &err), GF_E_USAGE);
	assert_int_equal(err.code, GF_E_USAGE);
	assert_string_equal(err.msg, "node 'n1' already exists");
	assert_describe(db, "n1[]");

	/* A name twice in one batch is a duplicate too. */
	batch[2] = mknode("n2", "b2", &stub_ipmi, NULL, 0);
	assert_int_equal(gf_db_nodes_add(db, batch, 3, false, &err), GF_E_USAGE);
	assert_string_equal(err.msg, "node 'n2' already exists");
	assert_describe(db, "n1[]");

	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM node_groups"), 0);
	sqlite3_close(h);

	/* The handle is still usable: the failed transaction was rolled back. */
	assert_int_equal(gf_db_nodes_add(db, batch, 2, false, &err), 0);
	assert_describe(db, "n1[],n2[x],n3[x]");
	gf_db_close(db);
}

static void test_replace(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	char *g_old[] = {S("g1"), S("g2")};
	char *g_new[] = {S("g3")};
	struct gf_node first[2], again[2];
	struct gf_node *out = NULL;
	size_t n = 0;
	struct gf_db *db = open_ok(f->path);

	first[0] = mknode("a", "bmc-a", &stub_ipmi, g_old, 2);
	first[0].ssh = S("a-host");
	first[0].profile = S("p1");
	first[1] = mknode("b", "bmc-b", &stub_ipmi, NULL, 0);
	assert_int_equal(gf_db_nodes_add(db, first, 2, false, &err), 0);

	again[0] = mknode("c", "bmc-c", NULL, NULL, 0);
	again[1] = mknode("a", "bmc-a2", &stub_redfish, g_new, 1);
	again[1].bmc_port = 8443;
	assert_int_equal(gf_db_nodes_add(db, again, 2, true, &err), 0);

	load(db, &out, &n);
	assert_int_equal(n, 3);
	/* "a" keeps its place in registration order. */
	assert_string_equal(out[0].name, "a");
	assert_string_equal(out[0].bmc, "bmc-a2");
	assert_int_equal(out[0].bmc_port, 8443);
	assert_ptr_equal(out[0].protocol, &stub_redfish);
	assert_null(out[0].ssh);
	assert_null(out[0].profile);
	assert_int_equal(out[0].ngroups, 1);
	assert_string_equal(out[0].groups[0], "g3");
	assert_string_equal(out[1].name, "b");
	assert_string_equal(out[2].name, "c");
	gf_nodes_free(out, n);
	gf_db_close(db);
}

static void test_remove(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	char *g[] = {S("grp")};
	struct gf_node in[3];
	const char *bad[] = {"a", "zz"};
	const char *good[] = {"a", "c"};
	struct gf_db *db = open_ok(f->path);
	sqlite3 *h;

	in[0] = mknode("a", NULL, NULL, g, 1);
	in[1] = mknode("b", NULL, NULL, g, 1);
	in[2] = mknode("c", NULL, NULL, g, 1);
	assert_int_equal(gf_db_nodes_add(db, in, 3, false, &err), 0);

	assert_int_equal(gf_db_nodes_remove(db, bad, 2, &err), GF_E_USAGE);
	assert_string_equal(err.msg, "node 'zz' is not registered");
	assert_describe(db, "a[grp],b[grp],c[grp]");

	assert_int_equal(gf_db_nodes_remove(db, good, 2, &err), 0);
	assert_describe(db, "b[grp]");
	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM node_groups"), 1);
	sqlite3_close(h);

	/* A removed name can be registered again, without its old groups. */
	in[0].groups = NULL;
	in[0].ngroups = 0;
	assert_int_equal(gf_db_nodes_add(db, in, 1, false, &err), 0);
	assert_describe(db, "b[grp],a[]");
	gf_db_close(db);
}

static void test_tag(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct gf_node in[2];
	const char *both[] = {"a", "b"};
	const char *only_a[] = {"a"};
	const char *with_bad[] = {"b", "nope"};
	const char *xy[] = {"y", "x"};
	const char *x[] = {"x"};
	const char *z[] = {"z"};
	struct gf_db *db = open_ok(f->path);

	in[0] = mknode("a", NULL, NULL, NULL, 0);
	in[1] = mknode("b", NULL, NULL, NULL, 0);
	assert_int_equal(gf_db_nodes_add(db, in, 2, false, &err), 0);

	assert_int_equal(gf_db_nodes_tag(db, both, 2, xy, 2, NULL, 0, &err), 0);
	assert_describe(db, "a[x y],b[x y]");
	/* Adding a group twice is harmless. */
	assert_int_equal(gf_db_nodes_tag(db, only_a, 1, x, 1, NULL, 0, &err), 0);
	assert_describe(db, "a[x y],b[x y]");

	assert_int_equal(gf_db_nodes_tag(db, only_a, 1, z, 1, x, 1, &err), 0);
	assert_describe(db, "a[y z],b[x y]");

	/* An unknown node: nothing changes, not even for the known one before it. */
	assert_int_equal(gf_db_nodes_tag(db, with_bad, 2, z, 1, x, 1, &err), GF_E_USAGE);
	assert_string_equal(err.msg, "node 'nope' is not registered");
	assert_describe(db, "a[y z],b[x y]");
	gf_db_close(db);
}

static void test_audit(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct gf_audit rows[2] = {
		{.time = 1764417600.25,
		 .user = "alice",
		 .verb = "power off",
		 .node = "gpu001",
		 .result = "ok",
		 .detail = NULL},
		{.time = 1764417601.5,
		 .user = "alice",
		 .verb = "power off",
		 .node = "gpu002",
		 .result = "timeout",
		 .detail = "bmc 'gpu002' did not answer within 5 s"},
	};
	struct gf_db *db = open_ok(f->path);
	sqlite3 *h;
	char *s;

	assert_int_equal(gf_db_audit_add(db, rows, 2, &err), 0);
	gf_db_close(db);

	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM audit"), 2);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM audit WHERE node = 'gpu001'"
				    " AND user = 'alice' AND verb = 'power off' AND result = 'ok'"
				    " AND detail IS NULL AND time = 1764417600.25"),
			 1);
	s = raw_text(h, "SELECT detail FROM audit WHERE node = 'gpu002'");
	assert_string_equal(s, "bmc 'gpu002' did not answer within 5 s");
	free(s);
	s = raw_text(h, "SELECT result FROM audit ORDER BY id DESC LIMIT 1");
	assert_string_equal(s, "timeout");
	free(s);
	sqlite3_close(h);
}

static void test_audit_intent(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct gf_audit intents[3] = {
		{.time = 100, .user = "bob", .verb = "power cycle", .node = "a"},
		{.time = 100, .user = "bob", .verb = "power cycle", .node = "b"},
		{.time = 100, .user = "bob", .verb = "power cycle", .node = "c"},
	};
	struct gf_audit done[2] = {
		{.time = 101.5, .verb = "power cycle", .node = "a", .result = "ok"},
		{.verb = "power cycle", .node = "c", .result = NULL}, /* never sent */
	};
	struct gf_audit late = {.time = 102,
				.verb = "power cycle",
				.node = "a",
				.result = "timeout"};
	long long ids[3] = {0}, fin[2];
	struct gf_audit_entry *e = NULL;
	size_t n = 0;
	struct gf_db *db = open_ok(f->path);
	sqlite3 *h;

	assert_int_equal(gf_db_audit_intent(db, intents, 3, ids, &err), 0);
	assert_true(ids[0] > 0 && ids[1] > ids[0] && ids[2] > ids[1]);
	/* Committed before anything else happens: another connection sees them. */
	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM audit WHERE result = 'pending'"
				    " AND finished IS NULL AND user = 'bob'"),
			 3);
	sqlite3_close(h);

	fin[0] = ids[0];
	fin[1] = ids[2];
	assert_int_equal(gf_db_audit_finish(db, fin, done, 2, &err), 0);
	/* A row already finished is not rewritten. */
	assert_int_equal(gf_db_audit_finish(db, &ids[0], &late, 1, &err), 0);

	assert_int_equal(gf_db_audit_list(db, false, &e, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(e[0].node, "a");
	assert_string_equal(e[0].result, "ok");
	assert_false(e[0].pending);
	assert_true(e[0].time == 101.5 && e[0].finished > 0);
	assert_string_equal(e[1].node, "b");
	assert_string_equal(e[1].result, GF_AUDIT_PENDING);
	assert_true(e[1].pending);
	assert_true(e[1].time == 100 && e[1].finished == 0);
	gf_db_audit_entries_free(e, n);

	assert_int_equal(gf_db_audit_list(db, true, &e, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(e[0].node, "b");
	gf_db_audit_entries_free(e, n);

	/* Rows written whole (gf_db_audit_add) are finished, never pending. */
	assert_int_equal(gf_db_audit_add(db, &late, 1, &err), 0);
	assert_int_equal(gf_db_audit_list(db, true, &e, &n, &err), 0);
	assert_int_equal(n, 1);
	gf_db_audit_entries_free(e, n);
	gf_db_close(db);
}

/* A version 3 file (audit rows without "finished") keeps its rows as finished ones. */
static void test_audit_migrated(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct gf_audit_entry *e = NULL;
	size_t n = 0;
	struct gf_db *db = open_ok(f->path);
	sqlite3 *h;

	gf_db_close(db);
	h = raw_open(f->path);
	/* What later versions added goes too: a real version 3 file has none of it. */
	raw_exec(h,
		 "DROP TABLE rollout_images;"
		 "DROP TABLE rollout_items; DROP TABLE rollout_nodes; DROP TABLE rollouts;"
		 "ALTER TABLE sweep_nodes DROP COLUMN bios_cset;"
		 "ALTER TABLE sweep_nodes DROP COLUMN bios_read;"
		 "ALTER TABLE sweep_nodes DROP COLUMN leaks;"
		 "DROP INDEX audit_pending; ALTER TABLE audit DROP COLUMN finished;"
		 "INSERT INTO audit (time, verb, node, result) VALUES (5, 'power on', 'x', 'ok');"
		 "PRAGMA user_version = 3");
	sqlite3_close(h);
	db = open_ok(f->path);
	assert_int_equal(gf_db_audit_list(db, true, &e, &n, &err), 0);
	assert_int_equal(n, 0);
	gf_db_audit_entries_free(e, n);
	assert_int_equal(gf_db_audit_list(db, false, &e, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_true(e[0].finished == 5);
	gf_db_audit_entries_free(e, n);
	gf_db_close(db);
}

/*
 * A version 6 file, whose components table lists the sources in a CHECK,
 * keeps its rows at version 7, where a source is any name (a new backend's).
 */
static void test_sources_are_data(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_ok(f->path);
	sqlite3 *h;
	char *sql;

	gf_db_close(db);
	h = raw_open(f->path);
	raw_exec(h,
		 "DROP TABLE rollout_images;"
		 "ALTER TABLE sweep_nodes DROP COLUMN leaks;"
		 "ALTER TABLE rollouts DROP COLUMN holder_pid;"
		 "ALTER TABLE rollouts DROP COLUMN holder_start;"
		 "ALTER TABLE rollouts DROP COLUMN holder_boot;"
		 "DROP TABLE components;"
		 "CREATE TABLE components ("
		 "  cset INTEGER NOT NULL REFERENCES csets(id) ON DELETE CASCADE,"
		 "  key TEXT NOT NULL, version TEXT,"
		 "  source TEXT NOT NULL CHECK (source IN ('ipmi', 'redfish', 'ssh')),"
		 "  raw_id TEXT, name TEXT, kind TEXT, PRIMARY KEY (cset, key)) WITHOUT ROWID;"
		 "INSERT INTO csets (id, hash, body) VALUES (1, 7, x'00'), (2, 8, x'01');"
		 "INSERT INTO components VALUES (1, 'bmc', '1.2', 'redfish', 'BMC', 'BMC', 'bmc'),"
		 "  (1, 'driver', '550', 'ssh', NULL, NULL, 'driver'), (2, 'bios', '3', 'ipmi',"
		 "  NULL, NULL, 'bios');"
		 "PRAGMA user_version = 6");
	assert_int_not_equal(sqlite3_exec(h,
					  "INSERT INTO components (cset, key, source)"
					  " VALUES (2, 'x', 'events')",
					  NULL, NULL, NULL),
			     SQLITE_OK);
	sqlite3_close(h);

	db = open_ok(f->path);
	gf_db_close(db);
	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "PRAGMA user_version"), gf_db_schema_version());
	assert_true(gf_db_schema_version() >= 7);
	sql = raw_text(h, "SELECT sql FROM sqlite_master WHERE name = 'components'");
	assert_null(strstr(sql, "CHECK"));
	free(sql);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%new'"),
			 0);
	/* Every row as it was. */
	assert_int_equal(raw_int(h, "SELECT count(*) FROM components"), 3);
	sql = raw_text(h, "SELECT group_concat(cset || key || version || source || kind, ' ')"
			  " FROM (SELECT * FROM components ORDER BY cset, key)");
	assert_string_equal(sql, "1bmc1.2redfishbmc 1driver550sshdriver 2bios3ipmibios");
	free(sql);
	/* Any source now; the foreign key still holds. */
	raw_exec(h, "PRAGMA foreign_keys = ON;"
		    "INSERT INTO components (cset, key, source) VALUES (2, 'x', 'events')");
	assert_int_not_equal(sqlite3_exec(h,
					  "INSERT INTO components (cset, key, source)"
					  " VALUES (9, 'y', 'ssh')",
					  NULL, NULL, NULL),
			     SQLITE_OK);
	raw_exec(h, "DELETE FROM csets WHERE id = 2");
	assert_int_equal(raw_int(h, "SELECT count(*) FROM components"), 2);
	sql = raw_text(h, "PRAGMA integrity_check");
	assert_string_equal(sql, "ok");
	free(sql);
	sqlite3_close(h);
}

/*
 * One rollout per node at a time: a rollout stored by this process holds
 * its nodes against none but others; a live holder (the parent process,
 * whose start time /proc tells) refuses them, naming each; a holder whose
 * start time or boot differs is dead.
 */
static void test_rollout_held(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_ok(f->path);
	char name[] = "n1", other[] = "n2", user[] = "u", cpath[] = "c.json", text[] = "{}";
	char opts[] = "{}";
	struct gf_rollout_node node = {.node = name};
	struct gf_rollout r = {.user = user,
			       .catalog_path = cpath,
			       .catalog_text = text,
			       .options = opts,
			       .nodes = &node,
			       .n = 1};
	const char *names[] = {other, name};
	struct gf_rollout_holder self, parent = {.pid = (long)getppid()};
	struct gf_err err = {0};
	char sql[256];
	long id = 0;
	sqlite3 *h;
	FILE *st;

	assert_int_equal(gf_rollout_holder_self(&self, &err), 0);
	assert_true(gf_rollout_holder_alive(&self));
	assert_int_equal(gf_rollout_create(db, &r, &id, &err), 0);
	assert_int_equal(gf_rollout_check_held(db, names, 2, &err), 0);
	/* The parent as the holder: alive, so n1 is refused (n2 is no rollout's). */
	snprintf(sql, sizeof(sql), "/proc/%ld/stat", parent.pid);
	st = fopen(sql, "r");
	assert_non_null(st);
	assert_int_equal(fscanf(st,
				"%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
				"%*u %*d %*d %*d %*d %*d %*d %lld",
				&parent.start),
			 1);
	fclose(st);
	memcpy(parent.boot, self.boot, sizeof(parent.boot));
	assert_true(gf_rollout_holder_alive(&parent));
	snprintf(sql, sizeof(sql), "UPDATE rollouts SET holder_pid = %ld, holder_start = %lld",
		 parent.pid, parent.start);
	h = raw_open(f->path);
	raw_exec(h, sql);
	assert_int_equal(gf_rollout_check_held(db, names, 2, &err), GF_E_BUSY);
	snprintf(sql, sizeof(sql), "node 'n1' is held by rollout %ld (run by pid %ld)", id,
		 parent.pid);
	assert_non_null(strstr(err.msg, sql));
	assert_null(strstr(err.msg, "n2"));
	assert_int_equal(gf_rollout_claim(db, id, names, 2, &err), GF_E_BUSY);
	/* A reused pid (another start time), or another boot: dead. */
	raw_exec(h, "UPDATE rollouts SET holder_start = holder_start + 1");
	assert_int_equal(gf_rollout_check_held(db, names, 2, &err), 0);
	raw_exec(h, "UPDATE rollouts SET holder_start = holder_start - 1, holder_boot = 'x'");
	assert_int_equal(gf_rollout_check_held(db, names, 2, &err), 0);
	/* Taken over, then let go of once stopped. */
	assert_int_equal(gf_rollout_claim(db, id, names, 2, &err), 0);
	assert_int_equal(raw_int(h, "SELECT holder_pid FROM rollouts"), self.pid);
	assert_int_equal(gf_rollout_set_state(db, id, GF_RS_STOPPED, &err), 0);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM rollouts WHERE holder_pid IS NULL"), 1);
	sqlite3_close(h);
	gf_db_close(db);
}

/* A rollout's image files as planned: stored with it, read back; none for a version 7 rollout. */
static void test_rollout_images(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_ok(f->path);
	char comp[] = "bmc", to[] = "2", action[] = "multipart-push", act[] = "bmc-reset";
	char name[] = "n1", user[] = "u", cpath[] = "c.json", text[] = "{}", opts[] = "{}";
	char f0[] = "/srv/fw/bmc.fwpkg", f2[] = "/srv/fw/gpu.fwpkg";
	struct gf_rollout_item it = {.component = comp,
				     .to = to,
				     .action = action,
				     .activation = act};
	struct gf_rollout_node node = {.node = name, .items = &it, .nitems = 1};
	struct gf_catalog_record im[2] = {
		{.image = 0, .file = f0, .size = 5},
		{.image = 2, .file = f2, .size = (1ull << 33)},
	};
	struct gf_rollout r = {.user = user,
			       .catalog_path = cpath,
			       .catalog_text = text,
			       .options = opts,
			       .nodes = &node,
			       .n = 1,
			       .images = im,
			       .nimages = 2};
	struct gf_rollout got = {0};
	struct gf_err err = {0};
	sqlite3 *h;
	long id = 0, old = 0;

	memset(im[0].sha256, 'a', 64);
	memset(im[1].sha256, 'b', 64);
	assert_int_equal(gf_rollout_create(db, &r, &id, &err), 0);
	assert_int_equal(gf_rollout_load(db, id, &got, &err), 0);
	assert_int_equal(got.nimages, 2);
	assert_int_equal(got.images[1].image, 2);
	assert_string_equal(got.images[0].file, "/srv/fw/bmc.fwpkg");
	assert_true(got.images[1].size == (1ull << 33));
	assert_string_equal(got.images[1].sha256, im[1].sha256);
	gf_rollout_release(&got);
	r.nimages = 0;
	assert_int_equal(gf_rollout_create(db, &r, &old, &err), 0);
	gf_db_close(db);

	/* Back to version 7: the rollouts stay, the table goes; version 8 brings it back empty. */
	h = raw_open(f->path);
	raw_exec(h, "DROP TABLE rollout_images; ALTER TABLE rollouts DROP COLUMN holder_pid;"
		    "ALTER TABLE sweep_nodes DROP COLUMN leaks;"
		    "ALTER TABLE rollouts DROP COLUMN holder_start;"
		    "ALTER TABLE rollouts DROP COLUMN holder_boot; PRAGMA user_version = 7");
	sqlite3_close(h);
	db = open_ok(f->path);
	assert_int_equal(gf_rollout_load(db, id, &got, &err), 0);
	assert_int_equal(got.nimages, 0);
	assert_int_equal(got.n, 1);
	gf_rollout_release(&got);
	gf_db_close(db);
	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "PRAGMA user_version"), gf_db_schema_version());
	assert_true(gf_db_schema_version() >= 8);
	sqlite3_close(h);
}

static void test_newer_refused(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct gf_db *db = (struct gf_db *)&db; /* must stay untouched */
	sqlite3 *h = raw_open(f->path);

	raw_exec(h, "CREATE TABLE future (x); PRAGMA user_version = 99");
	sqlite3_close(h);

	assert_int_equal(gf_db_open(f->path, &db, &err), GF_E_CONFIG);
	assert_ptr_equal(db, (struct gf_db *)&db);
	assert_int_equal(err.code, GF_E_CONFIG);
	assert_non_null(strstr(err.msg, f->path));
	assert_non_null(strstr(err.msg, "99"));
	assert_non_null(strstr(err.msg, "newer"));

	/* Left as it was: still version 99, not switched to WAL. */
	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "PRAGMA user_version"), 99);
	{
		char *mode = raw_text(h, "PRAGMA journal_mode");

		assert_string_equal(mode, "delete");
		free(mode);
	}
	sqlite3_close(h);
}

static void test_not_a_db(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct gf_db *db = (struct gf_db *)&db;
	static const char junk[] = "name,bmc\ngpu001,10.0.0.1\nthis is a CSV file, not SQLite\n"
				   "padding padding padding padding padding padding padding\n";
	char back[sizeof(junk)] = {0};
	FILE *fp = fopen(f->path, "w");

	assert_non_null(fp);
	assert_int_equal(fwrite(junk, 1, sizeof(junk) - 1, fp), sizeof(junk) - 1);
	fclose(fp);

	assert_int_equal(gf_db_open(f->path, &db, &err), GF_E_CONFIG);
	assert_ptr_equal(db, (struct gf_db *)&db);
	assert_non_null(strstr(err.msg, f->path));
	assert_non_null(strstr(err.msg, "not a"));

	/* Not clobbered. */
	fp = fopen(f->path, "r");
	assert_non_null(fp);
	assert_int_equal(fread(back, 1, sizeof(back), fp), sizeof(junk) - 1);
	fclose(fp);
	assert_string_equal(back, junk);
}

static void test_migrate_from_empty(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct gf_node nd = mknode("n", NULL, NULL, NULL, 0);
	int fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	struct gf_db *db;
	sqlite3 *h;

	assert_true(fd >= 0);
	close(fd);
	db = open_ok(f->path);
	assert_int_equal(gf_db_nodes_add(db, &nd, 1, false, &err), 0);
	gf_db_close(db);

	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "PRAGMA user_version"), gf_db_schema_version());
	assert_int_equal(raw_int(h, "SELECT count(*) FROM nodes"), 1);
	sqlite3_close(h);

	/* An existing SQLite file at version 0 (someone else's tables) is migrated too. */
	free(f->path);
	{
		struct gf_buf b = GF_BUF_INIT;

		gf_buf_addf(&b, "%s/v0.db", f->dir);
		f->path = gf_buf_detach(&b);
	}
	h = raw_open(f->path);
	raw_exec(h, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('kept')");
	sqlite3_close(h);
	db = open_ok(f->path);
	gf_db_close(db);
	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "PRAGMA user_version"), gf_db_schema_version());
	assert_int_equal(raw_int(h, "SELECT count(*) FROM notes"), 1);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM audit"), 0);
	sqlite3_close(h);
}

static void test_busy_waits(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct gf_node nd = mknode("n", NULL, NULL, NULL, 0);
	struct gf_db *db = open_ok(f->path);
	sqlite3 *a = raw_open(f->path);
	double t0, waited;
	int rc;

	/* Handle A holds the write lock; B must wait its busy timeout, then give up. */
	raw_exec(a, "BEGIN IMMEDIATE");
	assert_int_equal(gf_db_set_busy_timeout(db, 300, &err), 0);
	t0 = now_mono();
	rc = gf_db_nodes_add(db, &nd, 1, false, &err);
	waited = now_mono() - t0;
	assert_int_equal(rc, GF_E_BUSY);
	assert_int_equal(err.detail & 0xff, SQLITE_BUSY);
	assert_non_null(strstr(err.msg, f->path));
	assert_true(waited >= 0.25);
	assert_true(waited < 5.0);

	/* Readers are not blocked by the writer (WAL). */
	assert_describe(db, "");

	/* Once A is done, B writes. */
	raw_exec(a, "COMMIT");
	assert_int_equal(gf_db_nodes_add(db, &nd, 1, false, &err), 0);
	assert_describe(db, "n[]");
	sqlite3_close(a);
	gf_db_close(db);
}

static void test_bad_path(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct gf_db *db = (struct gf_db *)&db;
	struct gf_buf b = GF_BUF_INIT;

	/* The path is a directory. */
	assert_int_not_equal(gf_db_open(f->dir, &db, &err), 0);
	assert_ptr_equal(db, (struct gf_db *)&db);
	assert_non_null(strstr(err.msg, f->dir));

	/* A parent is a regular file. */
	assert_int_equal(close(open(f->path, O_WRONLY | O_CREAT, 0600)), 0);
	gf_buf_addf(&b, "%s/sub/inv.db", f->path);
	assert_int_not_equal(gf_db_open(gf_buf_str(&b), &db, &err), 0);
	assert_ptr_equal(db, (struct gf_db *)&db);
	gf_buf_release(&b);
}

/* A row of the gf_db_write() test: insert item i into t, failing at *ud. */
static int write_row(struct gf_db *db, sqlite3_stmt *const *st, const char *what, const void *ud,
		     size_t i, struct gf_err *err)
{
	if (i == *(const size_t *)ud)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "item %zu is refused", i);
	sqlite3_bind_int64(st[1], 1, (sqlite3_int64)i);
	if (gf_db_bind_text(db, st[0], 1, i % 2 ? "odd" : NULL, what, err) < 0 ||
	    gf_db_step_done(db, st[0], what, err) < 0)
		return GF_E_DB;
	return gf_db_step_done(db, st[1], what, err);
}

static void test_write(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	size_t fail_at = 2;
	struct gf_db_write w = {
		.what = "writing t",
		.sql = {"INSERT INTO t (x) VALUES (?1)", "INSERT INTO u (y) VALUES (?1)"},
		.row = write_row,
		.ud = &fail_at,
	};
	struct gf_db *db = open_ok(f->path);
	sqlite3 *h;

	assert_int_equal(gf_db_exec(db, "CREATE TABLE t (x TEXT); CREATE TABLE u (y INTEGER)",
				    "creating t", &err),
			 0);
	/* A failing row undoes the rows before it, in both tables. */
	assert_int_equal(gf_db_write(db, &w, 4, &err), GF_E_USAGE);
	assert_string_equal(err.msg, "item 2 is refused");
	fail_at = 99;
	assert_int_equal(gf_db_write(db, &w, 4, &err), 0);
	/* A statement that does not prepare: nothing begun, nothing left open. */
	w.sql[1] = "INSERT INTO nowhere (y) VALUES (?1)";
	assert_int_equal(gf_db_write(db, &w, 4, &err), GF_E_DB);
	assert_non_null(strstr(err.msg, "writing t in database"));
	assert_int_equal(gf_db_begin(db, "checking", &err), 0);
	assert_int_equal(gf_db_commit(db, "checking", &err), 0);
	gf_db_close(db);

	h = raw_open(f->path);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM t"), 4);
	assert_int_equal(raw_int(h, "SELECT count(*) FROM t WHERE x IS NULL"), 2);
	assert_int_equal(raw_int(h, "SELECT sum(y) FROM u"), 6);
	sqlite3_close(h);
}

static void test_tls_pins(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	const char *nodes[] = {"a", "b", "a"};
	const char *fps[] = {"aa", "bb", "cc"};
	const char *drop[] = {NULL};
	const char *empty[] = {""};
	struct gf_db *db = open_ok(f->path);
	char *pin = NULL;

	assert_int_equal(gf_db_tls_pin_set(db, nodes, fps, 3, &err), 0);
	assert_int_equal(gf_db_tls_pin_get(db, "a", &pin, &err), 0);
	assert_string_equal(pin, "cc"); /* the later one replaces */
	free(pin);
	assert_int_equal(gf_db_tls_pin_set(db, nodes + 1, drop, 1, &err), 0);
	pin = (char *)"untouched";
	assert_int_equal(gf_db_tls_pin_get(db, "b", &pin, &err), 0);
	assert_null(pin);
	assert_int_equal(gf_db_tls_pin_set(db, empty, fps, 1, &err), GF_E_USAGE);
	assert_string_equal(err.msg, "node name is empty");
	/* first use: a node pinned meanwhile keeps its pin, one without gets it */
	{
		const char *both[] = {"a", "b"};
		const char *mine[] = {"dd", "ee"};

		assert_int_equal(gf_db_tls_pin_add(db, both, mine, 2, &err), 0);
		assert_int_equal(gf_db_tls_pin_get(db, "a", &pin, &err), 0);
		assert_string_equal(pin, "cc");
		free(pin);
		assert_int_equal(gf_db_tls_pin_get(db, "b", &pin, &err), 0);
		assert_string_equal(pin, "ee");
		free(pin);
	}
	gf_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_0600, setup, teardown),
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tag, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_intent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_audit_migrated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rollout_images, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sources_are_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tls_pins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_db, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_from_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rollout_held, setup, teardown),
	};

	stub_backends_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
