/*
 * What the events tests share (tests/unit/test_events.c, the store;
 * test_events_follow.c, the follow loop): an inventory in a temporary
 * folder, removed after, and events built for it. Included by one test
 * file each: its functions are static.
 */
#ifndef GF_TEST_EVENTS_FIXTURE_H
#define GF_TEST_EVENTS_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/db.h"
#include "lib/model.h"
#include "lib/util.h"

/* An inventory of its own: @dir removed, files and all, by ev_tmpdb_close(). */
struct ev_tmpdb {
	char dir[64];
	struct gf_db *db;
};

static int ev_rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* A new inventory in /tmp/gf-test-@tag-XXXXXX; -1 when it cannot be made. */
static int ev_tmpdb_open(struct ev_tmpdb *t, const char *tag)
{
	char path[96];

	snprintf(t->dir, sizeof(t->dir), "/tmp/gf-test-%s-XXXXXX", tag);
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(path, sizeof(path), "%s/inv.db", t->dir);
	return gf_db_open(path, &t->db, NULL) < 0 ? -1 : 0;
}

static void ev_tmpdb_close(struct ev_tmpdb *t)
{
	gf_db_close(t->db);
	t->db = NULL;
	nftw(t->dir, ev_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Append to @l an event: @node and @source NULL (the batch's), @key NULL
 * (source and id make one), @t 0 (no time: received 1000 only). Strings
 * copied: gf_event_list_release() frees them.
 */
static struct gf_event *ev_add(struct gf_event_list *l, const char *node, const char *source,
			       const char *id, const char *key, double t, enum gf_severity sev,
			       const char *msg)
{
	struct gf_event *e = gf_event_list_add(l);

	e->node = node ? gf_xstrdup(node) : NULL;
	e->source = source ? gf_xstrdup(source) : NULL;
	e->bmc_id = id ? gf_xstrdup(id) : NULL;
	e->key = key ? gf_xstrdup(key) : NULL;
	e->has_time = t > 0;
	e->time = t;
	e->received = 1000;
	e->severity = sev;
	e->message = msg ? gf_xstrdup(msg) : NULL;
	return e;
}

#endif
