/*
 * One rollout per node at a time: the process that runs a rollout claims
 * it (its pid, its start time, the boot id), and a node of a rollout whose
 * claimer still lives is refused to any other run or resume. A claimer
 * killed (kill -9) or gone with a reboot is told apart from a live one, or
 * from a later process that got its pid, through /proc: nothing to unlock
 * by hand.
 */
#include "inventory/rollout.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/file.h"
#include "lib/util.h"

/* Field 22 of /proc/PID/stat: the process's start time in clock ticks after boot. */
static int start_time(long pid, long long *ret)
{
	char path[64], *text = NULL, *p;
	size_t len;
	int field = 2;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (gf_file_read(path, 1u << 20, 0, &text, &len, NULL) < 0)
		return -1;
	p = strrchr(text, ')'); /* the command name may hold spaces and parentheses */
	while (p && field < 22) {
		p = strchr(p + 1, ' ');
		field++;
	}
	if (!p || sscanf(p + 1, "%lld", ret) != 1) {
		free(text);
		return -1;
	}
	free(text);
	return 0;
}

static int boot_id(char *buf, size_t size)
{
	char *text = NULL;
	size_t len;

	if (gf_file_read("/proc/sys/kernel/random/boot_id", 1u << 20, 0, &text, &len, NULL) < 0)
		return -1;
	text[strcspn(text, "\n")] = '\0';
	snprintf(buf, size, "%s", text);
	free(text);
	return 0;
}

int gf_rollout_holder_self(struct gf_rollout_holder *ret, struct gf_err *err)
{
	struct gf_rollout_holder h = {.pid = (long)getpid()};

	if (start_time(h.pid, &h.start) < 0 || boot_id(h.boot, sizeof(h.boot)) < 0)
		return gf_err_set(err, GF_E_IO, GF_EK_NONE,
				  "cannot read this process's start time or the boot id in /proc");
	*ret = h;
	return 0;
}

bool gf_rollout_holder_alive(const struct gf_rollout_holder *h)
{
	char boot[sizeof(h->boot)];
	long long start;

	if (h->pid <= 0 || boot_id(boot, sizeof(boot)) < 0 || strcmp(boot, h->boot) != 0)
		return false; /* another boot: whatever ran it is gone */
	return start_time(h->pid, &start) == 0 && start == h->start;
}

/* Is @name among @names? */
static bool among(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 0; name && i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

int gf_rollout_check_held(struct gf_db *db, const char *const *names, size_t n, struct gf_err *err)
{
	static const char what[] = "reading the rollouts that run";
	sqlite3_stmt *st = NULL;
	struct gf_rollout_holder self;
	struct gf_buf msg;
	long seen = 0;
	bool alive = false;
	size_t held = 0;
	int rc = gf_db_prepare(db,
			       "SELECT r.id, r.holder_pid, r.holder_start, r.holder_boot, n.node "
			       "FROM rollouts r JOIN rollout_nodes n ON n.rollout = r.id "
			       "WHERE r.holder_pid IS NOT NULL ORDER BY r.id, n.seq",
			       &st, what, err);

	if (rc < 0)
		return rc;
	gf_buf_init(&msg);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		long id = (long)sqlite3_column_int64(st, 0);
		const char *node = (const char *)sqlite3_column_text(st, 4);

		if (id != seen) {
			struct gf_rollout_holder h = {
				.pid = (long)sqlite3_column_int64(st, 1),
				.start = sqlite3_column_int64(st, 2),
			};
			const unsigned char *b = sqlite3_column_text(st, 3);

			snprintf(h.boot, sizeof(h.boot), "%s", b ? (const char *)b : "");
			seen = id;
			/* This very process (a test's second rollout) holds nothing against itself. */
			alive = gf_rollout_holder_alive(&h) &&
				!(gf_rollout_holder_self(&self, NULL) == 0 && self.pid == h.pid &&
				  self.start == h.start);
		}
		if (!alive || !among(node, names, n))
			continue;
		gf_buf_addf(&msg, "%snode '%s' is held by rollout %ld (run by pid %lld)",
			    held++ ? "; " : "", node, id, sqlite3_column_int64(st, 1));
	}
	rc = rc == SQLITE_DONE ? 0 : gf_db_fail(db, rc, what, err);
	sqlite3_finalize(st);
	if (rc == 0 && held)
		rc = gf_err_set(err, GF_E_BUSY, GF_EK_NONE, "%s: nothing was sent",
				gf_buf_str(&msg));
	gf_buf_release(&msg);
	return rc;
}

struct claim_ud {
	long id;
	const char *const *names;
	size_t n;
	const struct gf_rollout_holder *self;
};

static int claim_row(struct gf_db *db, struct sqlite3_stmt *const *st, const char *what,
		     const void *vud, size_t i, struct gf_err *err)
{
	const struct claim_ud *ud = vud;
	int rc;

	(void)i;
	if ((rc = gf_rollout_check_held(db, ud->names, ud->n, err)) < 0)
		return rc;
	sqlite3_bind_int64(st[0], 1, ud->id);
	sqlite3_bind_int64(st[0], 2, ud->self->pid);
	sqlite3_bind_int64(st[0], 3, ud->self->start);
	if ((rc = gf_db_bind_text(db, st[0], 4, ud->self->boot, what, err)) < 0)
		return rc;
	return gf_db_step_done(db, st[0], what, err);
}

int gf_rollout_claim(struct gf_db *db, long id, const char *const *names, size_t n,
		     struct gf_err *err)
{
	struct gf_rollout_holder self;
	struct claim_ud ud = {id, names, n, &self};
	const struct gf_db_write w = {
		.what = "claiming a rollout",
		.sql = {"UPDATE rollouts SET state = 'running', finished = NULL, holder_pid = ?2, "
			"holder_start = ?3, holder_boot = ?4 WHERE id = ?1"},
		.row = claim_row,
		.ud = &ud,
	};
	int rc;

	if ((rc = gf_rollout_holder_self(&self, err)) < 0)
		return rc;
	return gf_db_write(db, &w, 1, err);
}
