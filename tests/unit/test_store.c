/*
 * Unit tests for inventory/store.c on real SQLite files: writing and loading
 * sweeps, sharing of component lists, imports, pruning, the sweep lock and
 * the migration of every earlier schema version.
 */
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

#include "inventory/codec.h"
#include "inventory/db.h"
#include "inventory/store.h"
#include "lib/buf.h"
#include "tests/unit/stub_backends.h"

struct fixture {
	char dir[64];
	char *path;
	struct gf_db *db;
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
	snprintf(f->dir, sizeof(f->dir), "%s", "/tmp/gf-test-store-XXXXXX");
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

	gf_db_close(f->db);
	nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f->path);
	free(f);
	return 0;
}

static struct gf_db *open_db(struct fixture *f)
{
	struct gf_err err = {0};

	if (gf_db_open(f->path, &f->db, &err) < 0)
		fail_msg("gf_db_open: %s", err.msg);
	return f->db;
}

static long long count(struct fixture *f, const char *sql)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	long long v = -1;

	assert_int_equal(sqlite3_open(f->path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

static void integrity_ok(struct fixture *f)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;

	assert_int_equal(sqlite3_open(f->path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	sqlite3_close(h);
}

static void raw_exec(struct fixture *f, const char *sql)
{
	sqlite3 *h = NULL;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(f->path, &h), SQLITE_OK);
	if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("sql failed: %s", msg);
	sqlite3_close(h);
}

/* Typed facts for a node: a host with only a driver, hardware with only a model. */
static void set_host(struct gf_sweep_node *n, const char *driver)
{
	struct gf_hostfacts f = {.driver = gf_xstrdup(driver)};

	gf_sweep_node_take_host(n, &f);
}

static void set_model(struct gf_sweep_node *n, const char *model)
{
	struct gf_hardware h = {0};

	h.system.model = gf_xstrdup(model);
	gf_sweep_node_take_hardware(n, &h);
}

/* A node with the components of @spec: "key=version,..."; source redfish, "@ssh" for host. */
static struct gf_sweep_node *add(struct gf_sweep *sw, const char *name, const char *spec)
{
	struct gf_sweep_node *n = gf_sweep_add_node(sw, name);
	char *copy = strdup(spec), *tok = copy;

	n->model = gf_sweep_str(sw, "M");
	n->protocol = gf_sweep_str(sw, "redfish");
	n->fw_read = true;
	n->host_read = true;
	while (tok && *tok) {
		char *next = strchr(tok, ','), *eq, *at;
		struct gf_inv_comp *c = gf_inv_set_add(n->set);

		if (next)
			*next++ = '\0';
		eq = strchr(tok, '=');
		at = strchr(tok, '@');
		*eq = '\0';
		c->source = "redfish";
		if (at) {
			*at = '\0';
			c->source = "ssh";
		}
		c->key = gf_sweep_str(sw, tok);
		c->version = gf_sweep_str(sw, eq + 1);
		c->raw_id = gf_sweep_str(sw, tok);
		tok = next;
	}
	free(copy);
	gf_inv_set_finish(sw, n->set);
	return n;
}

static long long store(struct gf_db *db, struct gf_sweep *sw, double started)
{
	struct gf_err err = {0};

	sw->started = started;
	sw->finished = started + 1;
	if (gf_store_sweep_add(db, sw, &err) < 0)
		fail_msg("gf_store_sweep_add: %s", err.msg);
	assert_true(sw->id > 0);
	return sw->id;
}

static struct gf_sweep *load(struct gf_db *db, const struct gf_store_query *q)
{
	struct gf_err err = {0};
	struct gf_sweep *sw = NULL;

	if (gf_store_load(db, q, &sw, &err) < 0)
		fail_msg("gf_store_load: %s", err.msg);
	return sw;
}

static const struct gf_sweep_node *node(const struct gf_sweep *sw, const char *name)
{
	for (size_t i = 0; i < sw->n; i++)
		if (strcmp(sw->nodes[i].node, name) == 0)
			return &sw->nodes[i];
	return NULL;
}

static const char *version(const struct gf_sweep *sw, const char *name, const char *key)
{
	const struct gf_sweep_node *n = node(sw, name);
	const struct gf_inv_comp *c = n ? gf_inv_set_find(n->set, key) : NULL;

	return c ? c->version : NULL;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_store_and_load(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_db(f);
	struct gf_sweep *sw = gf_sweep_new(), *back;
	struct gf_store_query q = {0};
	struct gf_sweep_node *n;
	long long id;

	add(sw, "gpu10", "bmc=1.2,bios=2,driver=550@ssh");
	n = add(sw, "gpu2", "bmc=1.1,bios=2,driver=550@ssh");
	n->status = GF_NODE_PARTIAL;
	gf_sweep_node_error(sw, n, GF_OP_SENSORS, GF_EK_TIMEOUT, "bmc 'gpu2' took too long");
	n->sel.read = true;
	n->sel.total = 3;
	n->sel.new_critical = 1;
	n->sel.has_mark = true;
	n->sel.mark = 1700000000.5;
	n->sensors.read = true;
	n->sensors.warning = 2;
	set_model(n, "M");
	set_host(n, "550");
	id = store(db, sw, 1000.25);
	assert_string_equal(sw->nodes[0].node, "gpu10");
	assert_int_equal(sw->nodes[0].sweep, id);
	assert_int_equal(count(f, "SELECT nodes FROM sweeps"), 2);
	assert_int_equal(count(f, "SELECT partial FROM sweeps"), 1);

	q.sweep = id;
	back = load(db, &q);
	assert_int_equal(back->id, id);
	assert_string_equal(back->uid, sw->uid);
	assert_true(back->started == 1000.25);
	assert_true(back->finished == 1001.25);
	assert_int_equal(back->n, 2);
	/* Natural order: gpu2 before gpu10. */
	assert_string_equal(back->nodes[0].node, "gpu2");
	assert_string_equal(back->nodes[1].node, "gpu10");
	n = &back->nodes[0];
	assert_int_equal(n->status, GF_NODE_PARTIAL);
	assert_int_equal(n->nerrors, 1);
	assert_string_equal(n->errors[0].op, "sensors");
	assert_int_equal(n->errors[0].kind, GF_EK_TIMEOUT);
	assert_true(n->sel.read && n->sel.total == 3 && n->sel.new_critical == 1);
	assert_true(n->sel.has_mark && n->sel.mark == 1700000000.5);
	assert_true(n->sensors.read && n->sensors.warning == 2);
	assert_false(back->nodes[1].sel.read);
	assert_string_equal(version(back, "gpu2", "bmc"), "1.1");
	assert_string_equal(version(back, "gpu10", "driver"), "550");
	assert_string_equal(gf_inv_set_find(n->set, "driver")->source, "ssh");
	assert_null(n->hardware); /* documents only on request */
	gf_sweep_free(back);

	q.details = true;
	back = load(db, &q);
	assert_string_equal(node(back, "gpu2")->host->driver, "550");
	assert_string_equal(node(back, "gpu2")->hardware->system.model, "M");
	assert_non_null(node(back, "gpu2")->hardware);
	assert_null(node(back, "gpu10")->host);
	{
		/* The whole record survives: the export of what was stored equals what went in. */
		json_t *a = gf_codec_node_to_json(sw, &sw->nodes[1]);
		json_t *b = gf_codec_node_to_json(back, node(back, "gpu2"));

		assert_true(json_equal(a, b));
		json_decref(a);
		json_decref(b);
	}
	gf_sweep_free(back);
	gf_sweep_free(sw);
}

static void test_sets_are_shared(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_db(f);

	for (int s = 0; s < 3; s++) {
		struct gf_sweep *sw = gf_sweep_new();

		for (int i = 0; i < 50; i++) {
			char name[16];

			snprintf(name, sizeof(name), "n%02d", i);
			/* Two kinds of node; in the last sweep one node changes. */
			add(sw, name,
			    s == 2 && i == 7 ? "bmc=9,bios=2"
			    : i % 2          ? "bmc=1,bios=2"
					     : "bmc=1,bios=3");
			set_host(&sw->nodes[i], i % 3 ? (i % 3 == 1 ? "d1" : "d2") : "d0");
		}
		store(db, sw, 100.0 * (s + 1));
		gf_sweep_free(sw);
	}
	assert_int_equal(count(f, "SELECT count(*) FROM sweep_nodes"), 150);
	assert_int_equal(count(f, "SELECT count(*) FROM csets"), 3);
	assert_int_equal(count(f, "SELECT count(*) FROM components"), 6);
	assert_int_equal(count(f, "SELECT count(*) FROM blobs"), 3);
	{
		struct gf_store_query q = {0};
		struct gf_sweep *sw = load(db, &q);

		/* Loaded nodes with equal lists point at one set. */
		assert_int_equal(sw->n, 50);
		assert_ptr_equal(node(sw, "n01")->set, node(sw, "n03")->set);
		assert_ptr_not_equal(node(sw, "n01")->set, node(sw, "n00")->set);
		assert_string_equal(version(sw, "n07", "bmc"), "9");
		assert_int_equal(sw->nsets, 3);
		gf_sweep_free(sw);
	}
}

/*
 * BIOS settings (bios.* of kind "setting") are a list of their own: nodes
 * that differ in firmware share one stored list of settings, and a load
 * gives each node all of its components again.
 */
static void test_bios_settings_shared_apart(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_db(f);
	struct gf_store_query q = {0};
	struct gf_sweep *sw = gf_sweep_new(), *back;

	for (int i = 0; i < 6; i++) {
		char name[16];
		struct gf_sweep_node *n;

		snprintf(name, sizeof(name), "n%d", i);
		n = add(sw, name,
			i % 3 == 0   ? "bmc=1,bios=2,bios.sriov=on,bios.numa=2"
			: i % 3 == 1 ? "bmc=2,bios=2,bios.sriov=on,bios.numa=2"
				     : "bmc=3,bios=2,bios.sriov=off,bios.numa=2");
		for (size_t k = 0; k < n->set->n; k++)
			if (strncmp(n->set->v[k].key, "bios.", 5) == 0)
				n->set->v[k].kind = gf_sweep_str(sw, "setting");
	}
	store(db, sw, 100.0);
	gf_sweep_free(sw);
	/* 3 firmware lists, 2 settings lists */
	assert_int_equal(count(f, "SELECT count(*) FROM csets"), 5);
	assert_int_equal(count(f, "SELECT count(DISTINCT bios_cset) FROM sweep_nodes"), 2);
	assert_int_equal(count(f, "SELECT count(*) FROM components"), 3 * 2 + 2 * 2);
	back = load(db, &q);
	assert_int_equal(back->n, 6);
	assert_string_equal(version(back, "n4", "bmc"), "2");
	assert_string_equal(version(back, "n4", "bios.sriov"), "on");
	assert_string_equal(version(back, "n5", "bios.sriov"), "off");
	assert_string_equal(version(back, "n5", "bmc"), "3");
	assert_string_equal(version(back, "n3", "bios.numa"), "2");
	assert_int_equal(node(back, "n0")->set->n, 4);
	gf_sweep_free(back);
}

static void test_latest_bounded_history(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_db(f);
	struct gf_sweep *a = gf_sweep_new(), *b = gf_sweep_new(), *c = gf_sweep_new(), *sw;
	struct gf_store_query q = {0};
	const char *only[] = {"y"};
	long long ida, idb;

	add(a, "x", "bmc=1");
	add(a, "y", "bmc=1");
	add(b, "x", "bmc=2");
	add(c, "y", "bmc=3");
	ida = store(db, a, 100);
	idb = store(db, b, 200);
	/* An imported sweep from another site: a higher id but an older time. */
	{
		struct gf_store_tx *tx = NULL;
		struct gf_err err = {0};

		c->uid = gf_sweep_str(c, "other-site-sweep");
		c->started = c->finished = 150;
		assert_int_equal(gf_store_begin(db, &tx, &err), 0);
		assert_int_equal(gf_store_put_sweep(tx, c, true, NULL, &err), 0);
		assert_int_equal(gf_store_put_node(tx, c, &c->nodes[0], true, NULL, &err), 0);
		assert_int_equal(gf_store_commit(tx, &err), 0);
		assert_true(c->id > idb);
	}

	/* Newest by time: x from b (200), y from c (150), not a's (100). */
	sw = load(db, &q);
	assert_int_equal(sw->id, 0);
	assert_int_equal(sw->n, 2);
	assert_int_equal(node(sw, "x")->sweep, idb);
	assert_true(node(sw, "x")->time == 200);
	assert_string_equal(version(sw, "y", "bmc"), "3");
	gf_sweep_free(sw);

	/* As of sweep a. */
	q.bounded = true;
	q.before = 100;
	q.before_id = ida;
	sw = load(db, &q);
	assert_string_equal(version(sw, "x", "bmc"), "1");
	assert_string_equal(version(sw, "y", "bmc"), "1");
	gf_sweep_free(sw);

	/* As of time 160, only y. */
	q.before = 160;
	q.before_id = INT64_MAX;
	q.nodes = only;
	q.nnodes = 1;
	sw = load(db, &q);
	assert_int_equal(sw->n, 1);
	assert_string_equal(version(sw, "y", "bmc"), "3");
	gf_sweep_free(sw);

	memset(&q, 0, sizeof(q));
	q.history = "x";
	sw = load(db, &q);
	assert_int_equal(sw->n, 2);
	assert_int_equal(sw->nodes[0].sweep, ida);
	assert_int_equal(sw->nodes[1].sweep, idb);
	gf_sweep_free(sw);

	{
		struct gf_sweep_info *all = NULL;
		struct gf_err err = {0};
		size_t n = 0;

		assert_int_equal(gf_store_sweeps(db, &all, &n, &err), 0);
		assert_int_equal(n, 3);
		assert_int_equal(all[1].id, c->id); /* by time */
		assert_true(all[1].imported);
		assert_false(all[0].imported);
		assert_int_equal(all[2].nodes, 1);
		free(all);
	}
	gf_sweep_free(a);
	gf_sweep_free(b);
	gf_sweep_free(c);
}

static void test_import_is_idempotent(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_db(f);
	struct gf_sweep *local = gf_sweep_new();
	struct gf_err err = {0};
	long long lid;

	add(local, "a", "bmc=1");
	lid = store(db, local, 50);
	for (int round = 0; round < 2; round++) {
		struct gf_sweep *sw = gf_sweep_new();
		struct gf_store_tx *tx = NULL;
		bool existed = true, added = false;
		size_t added_n = 0;

		/* The other site's sweep 1 clashes with ours; its sweep 7 does not. */
		sw->uid = gf_sweep_str(sw, "remote-1");
		sw->id = lid;
		sw->started = sw->finished = 10;
		add(sw, "r1", "bmc=5");
		add(sw, "r2", "bmc=5");
		assert_int_equal(gf_store_begin(db, &tx, &err), 0);
		assert_int_equal(gf_store_put_sweep(tx, sw, true, &existed, &err), 0);
		assert_int_equal(existed, round == 1);
		assert_true(sw->id != lid);
		for (size_t i = 0; i < sw->n; i++) {
			assert_int_equal(gf_store_put_node(tx, sw, &sw->nodes[i], true, &added,
							   &err),
					 0);
			added_n += added;
		}
		assert_int_equal(added_n, round == 0 ? 2 : 0);
		assert_int_equal(gf_store_commit(tx, &err), 0);
		gf_sweep_free(sw);

		sw = gf_sweep_new();
		sw->uid = gf_sweep_str(sw, "remote-7");
		sw->id = 7;
		sw->started = sw->finished = 20;
		add(sw, "r1", "bmc=6");
		assert_int_equal(gf_store_begin(db, &tx, &err), 0);
		assert_int_equal(gf_store_put_sweep(tx, sw, true, &existed, &err), 0);
		assert_int_equal(sw->id, 7); /* kept: free here */
		assert_int_equal(gf_store_put_node(tx, sw, &sw->nodes[0], true, NULL, &err), 0);
		assert_int_equal(gf_store_commit(tx, &err), 0);
		gf_sweep_free(sw);
		assert_int_equal(count(f, "SELECT count(*) FROM sweeps"), 3);
		assert_int_equal(count(f, "SELECT count(*) FROM sweep_nodes"), 4);
		assert_int_equal(count(f, "SELECT nodes FROM sweeps WHERE uid = 'remote-1'"), 2);
	}
	/* A new local sweep numbers after the highest, imported or not. */
	{
		struct gf_sweep *sw = gf_sweep_new();

		add(sw, "a", "bmc=1");
		assert_int_equal(store(db, sw, 60), 8);
		gf_sweep_free(sw);
	}
	gf_sweep_free(local);
}

static void test_failed_store_leaves_nothing(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_db(f);
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_err err = {0};

	add(sw, "a", "bmc=1");
	add(sw, "b", "bmc=2");
	add(sw, "a", "bmc=3"); /* twice in one sweep: refused at the third row */
	sw->started = sw->finished = 5;
	assert_int_equal(gf_store_sweep_add(db, sw, &err), GF_E_USAGE);
	assert_non_null(strstr(err.msg, "'a'"));
	assert_int_equal(sw->id, 0);
	assert_null(sw->uid);
	assert_int_equal(count(f, "SELECT count(*) FROM sweeps"), 0);
	assert_int_equal(count(f, "SELECT count(*) FROM sweep_nodes"), 0);
	assert_int_equal(count(f, "SELECT count(*) FROM csets"), 0);
	assert_int_equal(count(f, "SELECT count(*) FROM node_last"), 0);
	gf_sweep_free(sw);
}

static void test_prune(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_db(f);
	struct gf_err err = {0};
	size_t pruned = 99, left = 99;

	for (int s = 0; s < 5; s++) {
		struct gf_sweep *sw = gf_sweep_new();
		char spec[32];

		snprintf(spec, sizeof(spec), "bmc=%d", s);
		add(sw, "a", spec);
		if (s < 2)
			add(sw, "old", "bmc=0"); /* only in the first two */
		{
			char drv[16];

			snprintf(drv, sizeof(drv), "s%d", s);
			set_host(&sw->nodes[0], drv);
		}
		store(db, sw, 1000.0 * (s + 1));
		gf_sweep_free(sw);
	}
	assert_int_equal(count(f, "SELECT count(*) FROM csets"), 5);
	assert_int_equal(gf_store_prune(db, 3, 0, &pruned, &left, &err), 0);
	assert_int_equal(pruned, 2);
	assert_int_equal(left, 3);
	assert_int_equal(count(f, "SELECT min(started) FROM sweeps"), 3000);
	/* What only the pruned sweeps used is gone; node_last forgets "old". */
	assert_int_equal(count(f, "SELECT count(*) FROM csets"), 3);
	assert_int_equal(count(f, "SELECT count(*) FROM components"), 3);
	assert_int_equal(count(f, "SELECT count(*) FROM blobs"), 3);
	assert_int_equal(count(f, "SELECT count(*) FROM node_last"), 1);
	assert_int_equal(gf_store_prune(db, -1, 4500, &pruned, &left, &err), 0);
	assert_int_equal(pruned, 2); /* started 3000 and 4000 */
	assert_int_equal(left, 1);
	assert_int_equal(gf_store_prune(db, 10, 0, &pruned, &left, &err), 0);
	assert_int_equal(pruned, 0);
	assert_int_equal(count(f, "PRAGMA foreign_key_check"), -1); /* no rows: no violations */
	{
		struct gf_store_query q = {0};
		struct gf_sweep *sw = load(db, &q);

		assert_int_equal(sw->n, 1);
		assert_string_equal(version(sw, "a", "bmc"), "4");
		gf_sweep_free(sw);
	}
}

static void test_sel_prev(void **state)
{
	struct fixture *f = *state;
	struct gf_db *db = open_db(f);
	const char *names[] = {"a", "b", "c"};
	struct gf_sel_prev prev[3];
	struct gf_err err = {0};

	for (int s = 0; s < 2; s++) {
		struct gf_sweep *sw = gf_sweep_new();
		struct gf_sweep_node *n;

		n = add(sw, "a", "bmc=1");
		n->sel.read = s == 0; /* the second sweep could not read a's log */
		n->sel.has_mark = true;
		n->sel.mark = 500;
		n = add(sw, "b", "bmc=1");
		n->sel.read = true; /* an empty log: read, without a mark */
		store(db, sw, 100.0 + s);
		gf_sweep_free(sw);
	}
	assert_int_equal(gf_store_sel_prev(db, names, 3, prev, &err), 0);
	assert_true(prev[0].read && prev[0].has_mark && prev[0].mark == 500);
	assert_true(prev[1].read && !prev[1].has_mark);
	assert_false(prev[2].read);
}

static void test_lock(void **state)
{
	struct fixture *f = *state;
	struct gf_err err = {0};
	struct timespec t0, t1;
	int a = -1, b = -1;
	double waited;

	assert_int_equal(gf_store_lock(f->path, 0, &a, &err), 0);
	assert_true(a >= 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(gf_store_lock(f->path, 0.3, &b, &err), GF_E_BUSY);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(waited >= 0.29 && waited < 3);
	{
		char pid[32];

		snprintf(pid, sizeof(pid), "pid %ld", (long)getpid());
		assert_non_null(strstr(err.msg, pid));
	}
	gf_store_unlock(a);
	assert_int_equal(gf_store_lock(f->path, 0, &b, &err), 0);
	gf_store_unlock(b);
}

/* The schema as each earlier version shipped it, and a row in each table. */
static const char v1_sql[] =
	"CREATE TABLE nodes (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE NOT NULL,"
	" bmc TEXT, bmc_port INTEGER NOT NULL DEFAULT 0, protocol TEXT NOT NULL, ssh TEXT,"
	" profile TEXT, added REAL);"
	"CREATE TABLE node_groups (node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,"
	" grp TEXT NOT NULL, PRIMARY KEY (node_id, grp)) WITHOUT ROWID;"
	"CREATE INDEX node_groups_grp ON node_groups(grp);"
	"CREATE TABLE audit (id INTEGER PRIMARY KEY, time REAL NOT NULL, user TEXT,"
	" verb TEXT NOT NULL, node TEXT, result TEXT, detail TEXT);"
	"CREATE INDEX audit_time ON audit(time);"
	"INSERT INTO nodes (name, bmc, protocol) VALUES ('gpu01', '10.0.0.1', 'ipmi');"
	"INSERT INTO node_groups VALUES (1, 'rack1');"
	"INSERT INTO audit (time, verb, node, result) VALUES (1, 'power on', 'gpu01', 'ok');"
	"PRAGMA user_version = 1;";
static const char v2_sql[] =
	"CREATE TABLE tls_pins (node TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,"
	" first_seen REAL NOT NULL);"
	"INSERT INTO tls_pins VALUES ('gpu01', 'abcd', 1);"
	"PRAGMA user_version = 2;";

static void migrate_from(struct fixture *f, int version)
{
	struct gf_db *db;
	struct gf_sweep *sw = gf_sweep_new();

	if (version == 0)
		raw_exec(f, "CREATE TABLE unrelated (x); INSERT INTO unrelated VALUES (1);");
	if (version >= 1)
		raw_exec(f, v1_sql);
	if (version >= 2)
		raw_exec(f, v2_sql);
	db = open_db(f);
	assert_int_equal(count(f, "PRAGMA user_version"), gf_db_schema_version());
	assert_true(gf_db_schema_version() >= 3);
	if (version >= 1) {
		struct gf_node *nodes = NULL;
		size_t n = 0;
		struct gf_err err = {0};

		assert_int_equal(gf_db_nodes_load(db, &nodes, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_string_equal(nodes[0].groups[0], "rack1");
		gf_nodes_free(nodes, n);
		assert_int_equal(count(f, "SELECT count(*) FROM audit"), 1);
	}
	if (version >= 2)
		assert_int_equal(count(f, "SELECT count(*) FROM tls_pins"), 1);
	if (version == 0)
		assert_int_equal(count(f, "SELECT x FROM unrelated"), 1);
	add(sw, "gpu01", "bmc=1");
	store(db, sw, 10);
	assert_int_equal(count(f, "SELECT count(*) FROM sweep_nodes"), 1);
	integrity_ok(f);
	gf_sweep_free(sw);
}

static void test_migrate_v0(void **state)
{
	migrate_from(*state, 0);
}
static void test_migrate_v1(void **state)
{
	migrate_from(*state, 1);
}
static void test_migrate_v2(void **state)
{
	migrate_from(*state, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_store_and_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sets_are_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bios_settings_shared_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_latest_bounded_history, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_is_idempotent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_store_leaves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sel_prev, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v0, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v2, setup, teardown),
	};

	stub_backends_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
