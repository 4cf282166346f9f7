/* Dry runs and the audit log of destructive verbs. */
#include "cli/common.h"

#include <stdlib.h>

#include "lib/buf.h"
#include "lib/util.h"

int cli_dry_run(struct gf_cli *cli, const char *action, const struct gf_node *nodes, size_t n,
		const struct gf_render_spec *spec)
{
	struct gf_result *slots = gf_xcalloc(n ? n : 1, sizeof(*slots));
	struct cli_render r = {.cli = cli, .nodes = nodes, .n = n, .spec = spec, .show_bmc = true};
	int rc;

	for (size_t i = 0; i < n; i++) {
		gf_result_init(&slots[i]);
		slots[i].ok = true;
		slots[i].data = json_pack("{s:s, s:b}", "action", action, "dry_run", 1);
		cli_render_done(&r, i, &slots[i]);
	}
	rc = cli_render_finish(&r, slots);
	for (size_t i = 0; i < n; i++)
		gf_result_release(&slots[i]);
	free(slots);
	return rc;
}

struct cli_audit {
	struct gf_cli *cli;
	char *what; /* "power cycle" */
	const struct gf_node *nodes;
	size_t n;
	long long *ids; /* the intent row of node i, 0: none (yet) */
	char **details; /* what node i's row names, NULL: nothing */
	bool failed;    /* a result could not be written (reported) */
};

struct cli_audit *cli_audit_open(struct gf_cli *cli, const char *what, const struct gf_node *nodes,
				 size_t n)
{
	struct cli_audit *a = gf_xcalloc(1, sizeof(*a));

	a->cli = cli;
	a->what = gf_xstrdup(what);
	a->nodes = nodes;
	a->n = n;
	a->ids = gf_xcalloc(n ? n : 1, sizeof(*a->ids));
	a->details = gf_xcalloc(n ? n : 1, sizeof(*a->details));
	return a;
}

void cli_audit_details(struct cli_audit *a, const char *const *details)
{
	for (size_t i = 0; details && i < a->n; i++) {
		free(a->details[i]);
		a->details[i] = details[i] ? gf_xstrdup(details[i]) : NULL;
	}
}

int cli_audit_intent(struct cli_audit *a, const size_t *idx, size_t k)
{
	size_t m = idx ? k : a->n;
	struct gf_audit *rows = gf_xcalloc(m ? m : 1, sizeof(*rows));
	long long *ids = gf_xcalloc(m ? m : 1, sizeof(*ids));
	const char *user = gf_invoking_user();
	double now = gf_walltime();
	struct gf_err err = {0};
	struct gf_db *db;
	int rc;

	for (size_t j = 0; j < m; j++)
		rows[j] = (struct gf_audit){.time = now,
					    .user = user,
					    .verb = a->what,
					    .node = a->nodes[idx ? idx[j] : j].name,
					    .detail = a->details[idx ? idx[j] : j]};
	rc = cli_db(a->cli, &db);
	if (!rc && gf_db_audit_intent(db, rows, m, ids, &err) < 0) {
		cli_error("the audit log could not be written, so nothing was sent: %s", err.msg);
		rc = GF_EXIT_FAILED;
	}
	if (!rc)
		for (size_t j = 0; j < m; j++)
			a->ids[idx ? idx[j] : j] = ids[j];
	free(ids);
	free(rows);
	return rc;
}

/* "@what: @why" (what a row names, then its error). Caller frees. */
static char *joined(const char *what, const char *why)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_addf(&b, "%s: %s", what, why);
	return gf_buf_detach(&b);
}

/*
 * The completed row of node @i from its slot; result NULL: nothing was sent.
 * A node that succeeded with what it sent in its slot ("requested": the
 * values a bios set computed per node, secrets already masked) has them as
 * detail, in *owned (the caller frees it).
 */
static struct gf_audit result_row(const struct cli_audit *a, size_t i, const struct gf_result *s,
				  char **owned)
{
	struct gf_audit r = {.verb = a->what, .node = a->nodes[i].name};
	json_t *sent = s->ok ? json_object_get(s->data, "requested") : NULL;

	*owned = NULL;
	if (s->attempts == 0)
		return r; /* interrupted before anything was sent to it */
	r.time = s->t_start;
	r.result = s->ok ? "ok" : gf_errkind_name(s->err.kind);
	r.detail = s->ok ? NULL : s->err.msg;
	if (sent && !json_is_true(json_object_get(s->data, "dry_run")))
		r.detail = *owned = json_dumps(sent, JSON_COMPACT | JSON_SORT_KEYS);
	else if (a->details[i] && r.detail)
		r.detail = *owned = joined(a->details[i], r.detail);
	else if (a->details[i])
		r.detail = a->details[i];
	return r;
}

static void finish_rows(struct cli_audit *a, const long long *ids, const struct gf_audit *rows,
			size_t m)
{
	struct gf_err err = {0};
	struct gf_db *db;

	if (!m || cli_db(a->cli, &db))
		return;
	if (gf_db_audit_finish(db, ids, rows, m, &err) < 0) {
		if (!a->failed)
			cli_error("the audit log could not be completed (its rows stay '%s'): %s",
				  GF_AUDIT_PENDING, err.msg);
		a->failed = true;
	}
}

void cli_audit_done(struct cli_audit *a, size_t i, const struct gf_result *slot)
{
	struct gf_audit r;
	char *owned;

	if (!a || i >= a->n || !a->ids[i])
		return;
	r = result_row(a, i, slot, &owned);
	finish_rows(a, &a->ids[i], &r, 1);
	free(owned);
	a->ids[i] = 0;
}

int cli_audit_close(struct cli_audit *a, const struct gf_result *slots)
{
	struct gf_audit *rows;
	long long *ids;
	char **owned;
	size_t m = 0;
	int rc;

	if (!a)
		return 0;
	rows = gf_xcalloc(a->n ? a->n : 1, sizeof(*rows));
	ids = gf_xcalloc(a->n ? a->n : 1, sizeof(*ids));
	owned = gf_xcalloc(a->n ? a->n : 1, sizeof(*owned));
	for (size_t i = 0; slots && i < a->n; i++) {
		if (!a->ids[i])
			continue;
		ids[m] = a->ids[i];
		rows[m] = result_row(a, i, &slots[i], &owned[m]);
		m++;
	}
	finish_rows(a, ids, rows, m);
	for (size_t k = 0; k < m; k++)
		free(owned[k]);
	free(owned);
	rc = a->failed ? GF_EXIT_FAILED : 0;
	free(ids);
	free(rows);
	for (size_t i = 0; i < a->n; i++)
		free(a->details[i]);
	free(a->details);
	free(a->ids);
	free(a->what);
	free(a);
	return rc;
}
