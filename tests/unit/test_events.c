/* Unit tests for inventory/events.c: stored once, cursors with their events, filters, prune. */
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
#include "events_fixture.h"

static int setup(void **state)
{
	struct ev_tmpdb *f = calloc(1, sizeof(*f));

	*state = f;
	return ev_tmpdb_open(f, "events");
}

static int teardown(void **state)
{
	ev_tmpdb_close(*state);
	free(*state);
	return 0;
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
	struct ev_tmpdb *f = *state;
	struct gf_event_list l = {0}, later = {0};
	bool fresh[3];
	struct gf_events_batch b = {"n1", "sel", NULL, 3, "{\"last\":\"2\"}", fresh};
	struct gf_events_query all = {0};
	size_t added = 0;
	char *cur = NULL;

	ev_add(&l, NULL, NULL, "1", "sel:1:100", 100, GF_SEV_INFO, "one");
	ev_add(&l, NULL, NULL, "2", "sel:2:200", 200, GF_SEV_CRITICAL, "two");
	ev_add(&l, NULL, NULL, "2", "sel:2:200", 200, GF_SEV_CRITICAL, "two again");
	b.v = l.v;
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
	ev_add(&later, NULL, NULL, "1", "sel:1:300", 300, GF_SEV_WARNING, "after a clear");
	b.v = later.v;
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
	gf_event_list_release(&l);
	gf_event_list_release(&later);
}

/* Without a key, source and id make one. */
static void test_default_key(void **state)
{
	struct ev_tmpdb *f = *state;
	struct gf_event_list l = {0};
	struct gf_events_batch b = {"n1", "redfish-sse", NULL, 2, NULL, NULL};
	struct gf_events_query all = {0};
	size_t added = 0;

	ev_add(&l, NULL, NULL, "7", NULL, 0, GF_SEV_INFO, "a");
	ev_add(&l, NULL, NULL, "7", NULL, 0, GF_SEV_INFO, "a");
	b.v = l.v;
	assert_int_equal(gf_events_store(f->db, &b, 1, &added, NULL), 0);
	assert_int_equal(added, 1);
	assert_int_equal(count(f->db, &all), 1);
	gf_event_list_release(&l);
}

/* A failing batch leaves neither its events nor its cursor, nor the other batches'. */
static void test_cursor_with_events(void **state)
{
	struct ev_tmpdb *f = *state;
	struct gf_event_list l = {0};
	struct gf_events_batch b[2] = {{"n1", "sel", NULL, 1, "c1", NULL},
				       {NULL, "sel", NULL, 1, "c2", NULL}}; /* no node: fails */
	struct gf_events_query all = {0};
	struct gf_err err = {0};
	char *cur = NULL;

	ev_add(&l, NULL, NULL, "1", "sel:1:1", 100, GF_SEV_INFO, "one");
	ev_add(&l, NULL, NULL, "1", "sel:1:1", 100, GF_SEV_INFO, "one");
	b[0].v = &l.v[0];
	b[1].v = &l.v[1];
	assert_true(gf_events_store(f->db, b, 2, NULL, &err) < 0);
	assert_int_equal(count(f->db, &all), 0);
	assert_int_equal(gf_events_cursor(f->db, "n1", "sel", &cur, NULL), 0);
	assert_null(cur);
	gf_event_list_release(&l);
}

static void test_filters_and_prune(void **state)
{
	struct ev_tmpdb *f = *state;
	struct gf_event_list v = {0};
	struct gf_events_batch b = {"n1", "sel", NULL, 3, NULL, NULL};
	struct gf_events_batch c = {"n2", "host-xid", NULL, 1, NULL, NULL};
	const char *n2[] = {"n2"}, *xid[] = {"host-xid"};
	struct gf_events_query q = {0};
	struct gf_event_list l = {0};
	struct gf_events_count *cv = NULL;
	size_t cn = 0, pruned = 0;

	ev_add(&v, NULL, NULL, "1", "k1", 100, GF_SEV_INFO, "one");
	ev_add(&v, NULL, NULL, "2", "k2", 200, GF_SEV_WARNING, "two");
	ev_add(&v, NULL, NULL, "3", "k3", 0, GF_SEV_CRITICAL, "three")->received = 5000;
	b.v = c.v = v.v;
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
	gf_event_list_release(&v);
}

/* A host's Xid lines: events of source host-xid, stored once across two reads. */
static void test_host_xids_stored_once(void **state)
{
	struct ev_tmpdb *f = *state;
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
