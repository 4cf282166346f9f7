/* Unit tests for inventory/events.c: stored once, cursors with their events, filters, prune. */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "inventory/db.h"
#include "inventory/events.h"
#include "lib/buf.h"

struct fixture {
	char dir[64];
	struct gf_db *db;
};

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[96];

	snprintf(f->dir, sizeof(f->dir), "%s", "/tmp/gf-test-events-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(path, sizeof(path), "%s/inv.db", f->dir);
	if (gf_db_open(path, &f->db, NULL) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	gf_db_close(f->db);
	nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void ev(struct gf_event *e, const char *id, const char *key, double t, enum gf_severity sev,
	       const char *msg)
{
	memset(e, 0, sizeof(*e));
	e->bmc_id = (char *)id;
	e->key = (char *)key;
	e->has_time = t > 0;
	e->time = t;
	e->received = 1000;
	e->severity = sev;
	e->message = (char *)msg;
}

static size_t count(struct gf_db *db, const struct gf_events_query *q)
{
	struct gf_event_list l = {0};
	size_t n;

	assert_int_equal(gf_events_list(db, q, &l, NULL), 0);
	n = l.n;
	gf_event_list_release(&l);
	return n;
}

/* The same event twice (a re-read, another path with the same key) is stored once. */
static void test_stored_once(void **state)
{
	struct fixture *f = *state;
	struct gf_event v[3];
	bool fresh[3];
	struct gf_events_batch b = {"n1", "sel", v, 3, "{\"last\":\"2\"}", fresh};
	struct gf_events_query all = {0};
	size_t added = 0;
	char *cur = NULL;

	ev(&v[0], "1", "sel:1:100", 100, GF_SEV_INFO, "one");
	ev(&v[1], "2", "sel:2:200", 200, GF_SEV_CRITICAL, "two");
	ev(&v[2], "2", "sel:2:200", 200, GF_SEV_CRITICAL, "two again");
	assert_int_equal(gf_events_store(f->db, &b, 1, &added, NULL), 0);
	assert_int_equal(added, 2);
	assert_true(fresh[0] && fresh[1]);
	assert_false(fresh[2]);
	assert_int_equal(count(f->db, &all), 2);
	/* Again, from another source with the same keys: nothing new. */
	b.source = "redfish-log";
	b.n = 2;
	assert_int_equal(gf_events_store(f->db, &b, 1, &added, NULL), 0);
	assert_int_equal(added, 0);
	assert_false(fresh[0] || fresh[1]);
	assert_int_equal(count(f->db, &all), 2);
	/* A reused record id with another stamp is another event. */
	ev(&v[0], "1", "sel:1:300", 300, GF_SEV_WARNING, "after a clear");
	b.source = "sel";
	b.n = 1;
	assert_int_equal(gf_events_store(f->db, &b, 1, &added, NULL), 0);
	assert_int_equal(added, 1);
	assert_int_equal(count(f->db, &all), 3);
	/* Another node's event with the same key is its own. */
	b.node = "n2";
	assert_int_equal(gf_events_store(f->db, &b, 1, &added, NULL), 0);
	assert_int_equal(added, 1);
	assert_int_equal(gf_events_cursor(f->db, "n1", "sel", &cur, NULL), 0);
	assert_string_equal(cur, "{\"last\":\"2\"}");
	free(cur);
	cur = (char *)"x";
	assert_int_equal(gf_events_cursor(f->db, "n1", "host-xid", &cur, NULL), 0);
	assert_null(cur);
}

/* Without a key, source and id make one. */
static void test_default_key(void **state)
{
	struct fixture *f = *state;
	struct gf_event v[2];
	struct gf_events_batch b = {"n1", "redfish-sse", v, 2, NULL, NULL};
	struct gf_events_query all = {0};
	size_t added = 0;

	ev(&v[0], "7", NULL, 0, GF_SEV_INFO, "a");
	ev(&v[1], "7", NULL, 0, GF_SEV_INFO, "a");
	assert_int_equal(gf_events_store(f->db, &b, 1, &added, NULL), 0);
	assert_int_equal(added, 1);
	assert_int_equal(count(f->db, &all), 1);
}

/* A failing batch leaves neither its events nor its cursor, nor the other batches'. */
static void test_cursor_with_events(void **state)
{
	struct fixture *f = *state;
	struct gf_event v[1], w[1];
	struct gf_events_batch b[2] = {{"n1", "sel", v, 1, "c1", NULL},
				       {NULL, "sel", w, 1, "c2", NULL}}; /* no node: fails */
	struct gf_events_query all = {0};
	struct gf_err err = {0};
	char *cur = NULL;

	ev(&v[0], "1", "sel:1:1", 100, GF_SEV_INFO, "one");
	ev(&w[0], "1", "sel:1:1", 100, GF_SEV_INFO, "one");
	assert_true(gf_events_store(f->db, b, 2, NULL, &err) < 0);
	assert_int_equal(count(f->db, &all), 0);
	assert_int_equal(gf_events_cursor(f->db, "n1", "sel", &cur, NULL), 0);
	assert_null(cur);
}

static void test_filters_and_prune(void **state)
{
	struct fixture *f = *state;
	struct gf_event v[3];
	struct gf_events_batch b = {"n1", "sel", v, 3, NULL, NULL};
	struct gf_events_batch c = {"n2", "host-xid", v, 1, NULL, NULL};
	const char *n2[] = {"n2"}, *xid[] = {"host-xid"};
	struct gf_events_query q = {0};
	struct gf_event_list l = {0};
	struct gf_events_count *cv = NULL;
	size_t cn = 0, pruned = 0;

	ev(&v[0], "1", "k1", 100, GF_SEV_INFO, "one");
	ev(&v[1], "2", "k2", 200, GF_SEV_WARNING, "two");
	ev(&v[2], "3", "k3", 0, GF_SEV_CRITICAL, "three");
	v[2].received = 5000;
	assert_int_equal(gf_events_store(f->db, &b, 1, NULL, NULL), 0);
	assert_int_equal(gf_events_store(f->db, &c, 1, NULL, NULL), 0);
	q.severities = 1u << GF_SEV_CRITICAL | 1u << GF_SEV_WARNING;
	assert_int_equal(count(f->db, &q), 2);
	q = (struct gf_events_query){.has_since = true, .since = 150};
	assert_int_equal(gf_events_list(f->db, &q, &l, NULL), 0);
	assert_int_equal(l.n, 2); /* "two" at 200, "three" received at 5000 */
	assert_string_equal(l.v[0].message, "two");
	assert_string_equal(l.v[1].message, "three");
	assert_false(l.v[1].has_time);
	gf_event_list_release(&l);
	q = (struct gf_events_query){.nodes = n2, .nnodes = 1};
	assert_int_equal(count(f->db, &q), 1);
	q = (struct gf_events_query){.sources = xid, .nsources = 1};
	assert_int_equal(count(f->db, &q), 1);
	assert_int_equal(gf_events_counts(f->db, NULL, 0, &cv, &cn, NULL), 0);
	assert_int_equal(cn, 4); /* n1 sel x3 severities, n2 host-xid info */
	assert_string_equal(cv[3].node, "n2");
	assert_int_equal(cv[3].n, 1);
	gf_events_counts_free(cv, cn);
	assert_int_equal(gf_events_prune(f->db, 2000, &pruned, NULL), 0);
	assert_int_equal(pruned, 3);
	q = (struct gf_events_query){0};
	assert_int_equal(count(f->db, &q), 1);
}

/* A host's Xid lines: events of source host-xid, stored once across two reads. */
static void test_host_xids_stored_once(void **state)
{
	struct fixture *f = *state;
	static const char log[] =
		"[  100.5] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics Exception\n"
		"[  101.0] nvidia: unrelated\n"
		"[  102.5] NVRM: Xid (PCI:0000:86:00): 79, pid=2, GPU has fallen off the bus.\n"
		"NVRM: Xid (PCI:0000:86:00): 79, pid=2, GPU has fallen off the bus.\n"
		"NVRM: Xid (PCI:0000:86:00): 79, pid=2, GPU has fallen off the bus.\n";
	struct gf_hostfacts h = {0};
	struct gf_event_list l = {0};
	struct gf_events_query q = {0};
	size_t added = 0;

	gf_hostfacts_xid_lines(log, &h.xid_lines, &h.nxid_lines);
	assert_int_equal(h.nxid_lines, 4);
	gf_events_from_xids("n1", &h, 1000, &l);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.v[0].source, "host-xid");
	assert_int_equal(l.v[0].severity, GF_SEV_WARNING);
	assert_int_equal(l.v[1].severity, GF_SEV_CRITICAL);
	assert_string_equal(l.v[1].sensor, "PCI:0000:86:00");
	assert_string_equal(l.v[1].message,
			    "Xid (PCI:0000:86:00): 79, pid=2, GPU has fallen off the bus.");
	assert_int_equal(gf_events_store_list(f->db, &l, &added, NULL), 0);
	assert_int_equal(added, 4); /* the repeated line without a timestamp: twice */
	assert_int_equal(gf_events_store_list(f->db, &l, &added, NULL), 0);
	assert_int_equal(added, 0);
	assert_int_equal(count(f->db, &q), 4);
	gf_event_list_release(&l);
	gf_xid_lines_free(h.xid_lines, h.nxid_lines);
}

/* A log that floods: the last GF_XID_LINES_MAX lines, in order. */
static void test_host_xids_bounded(void **state)
{
	struct gf_buf b = GF_BUF_INIT;
	struct gf_xid_line *v = NULL;
	size_t n = 0;

	(void)state;
	for (int k = 0; k < GF_XID_LINES_MAX + 10; k++)
		gf_buf_addf(&b, "[%d.0] NVRM: Xid (PCI:0000:01:00): 31, %d\n", k, k);
	gf_hostfacts_xid_lines(gf_buf_str(&b), &v, &n);
	assert_int_equal(n, GF_XID_LINES_MAX);
	assert_string_equal(v[0].line, "[10.0] NVRM: Xid (PCI:0000:01:00): 31, 10");
	assert_int_equal(v[n - 1].code, 31);
	gf_xid_lines_free(v, n);
	gf_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stored_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_with_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_filters_and_prune, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_xids_stored_once, setup, teardown),
		cmocka_unit_test(test_host_xids_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
