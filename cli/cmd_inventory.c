/* gpufleet inventory: show, history, export, import, prune, sweeps, audit. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inv.h"
#include "inventory/events.h"
#include "cli/verbs.h"
#include "inventory/codec.h"
#include "lib/util.h"

enum { I_SWEEP, I_BASELINE, I_COMPONENT, I_KEEP, I_OLDER_THAN, I_PENDING };

static const struct cli_opt inv_opts[] = {
	[I_SWEEP] = {{"sweep", required_argument, NULL, 0},
		     "ID",
		     "show, export: that sweep instead of the last (show) or all (export)"},
	[I_BASELINE] = {{"baseline", required_argument, NULL, 0},
			"NODE",
			"export: a baseline file of NODE's last sweep, for drift --baseline"},
	[I_COMPONENT] = {{"component", required_argument, NULL, 0},
			 "PATTERN",
			 "history: only components matching these globs"},
	[I_KEEP] = {{"keep", required_argument, NULL, 0}, "N", "prune: keep the newest N sweeps"},
	[I_OLDER_THAN] = {{"older-than", required_argument, NULL, 0},
			  "DURATION",
			  "prune: delete sweeps older than this (90d, 12h)"},
	[I_PENDING] = {{"pending", no_argument, NULL, 0},
		       NULL,
		       "audit: only actions whose result was never recorded"},
};

struct inv_args {
	const char *sweep, *baseline;
	struct inv_globs component;
	long keep;
	double older_than;
	bool older;   /* --older-than was given (0s is a valid duration) */
	bool pending; /* audit --pending */
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct inv_args *a = ud;
	struct gf_err err = {0};
	unsigned long v;

	switch (idx) {
	case I_SWEEP: a->sweep = arg; return 0;
	case I_BASELINE: a->baseline = arg; return 0;
	case I_PENDING: a->pending = true; return 0;
	case I_COMPONENT: inv_globs_add(&a->component, arg); return 0;
	case I_KEEP:
		if (gf_parse_uint(arg, 0, 1000000000UL, &v, &err, "--keep") < 0)
			return cli_fail(&err);
		a->keep = (long)v;
		return 0;
	case I_OLDER_THAN:
		if (gf_parse_duration(arg, &a->older_than, &err) < 0)
			return cli_fail(&err);
		a->older = true;
		return 0;
	default: return 0;
	}
}

struct inv_ctx {
	struct gf_cli *cli;
	struct gf_db *db;
	struct inv_args *a;
	const char *sub; /* the sub-verb */
	char **args;
	int nargs;
};

static int one_node_arg(struct inv_ctx *c)
{
	if (c->nargs != 1) {
		cli_error("inventory %s takes one NODE", c->sub);
		return GF_EXIT_USAGE;
	}
	return 0;
}

static const char *uid_of(const struct gf_sweep_info *all, size_t n, long long id)
{
	for (size_t i = 0; i < n; i++)
		if (all[i].id == id)
			return all[i].uid;
	return NULL;
}

/* ---- show ------------------------------------------------------------------ */

static const struct gf_col comp_cols[] = {
	{"key", "COMPONENT"}, {"version", "VERSION"}, {"source", "SOURCE"},
	{"id", "ID"},         {"name", "NAME"},
};

/* One line of what the BMC says of a GPU (hardware --gpus shows the same as a table). */
static void show_gpu_health(const struct gf_gpu_hw *g)
{
	const struct gf_gpu_health *h = &g->bmc;
	char *health, *serial;

	if (!h->read)
		return;
	health = gf_term_safe(h->health ? h->health : "-");
	serial = gf_term_safe(g->serial ? g->serial : "-");
	printf("  gpu%d (serial %s), as the BMC says: health %s", g->index, serial, health);
	if (h->ecc_uncorrected.set)
		printf(", %.0f uncorrected ECC", h->ecc_uncorrected.v);
	if (h->remap_pending == 1)
		printf(", row remapping pending");
	if (h->nvlinks_up >= 0)
		printf(", NVLinks %d up %d down", h->nvlinks_up, h->nvlinks_down);
	printf("\n");
	free(health);
	free(serial);
}

static void show_header(const struct gf_sweep_node *n)
{
	char when[40];

	gf_time_format(n->time, when, sizeof(when));
	printf("node %s: sweep %lld at %s, %s", n->node, n->sweep, when,
	       gf_node_status_name(n->status));
	if (n->model) {
		char *model = gf_term_safe(n->model);

		printf(", model '%s'", model);
		free(model);
	}
	if (n->protocol)
		printf(", %s", n->protocol);
	printf("\n");
	for (size_t k = 0; k < n->nerrors; k++) {
		char *msg = gf_term_safe(n->errors[k].message);

		printf("  %s %s: %s\n", n->errors[k].op, gf_errkind_name(n->errors[k].kind), msg);
		free(msg);
	}
	if (n->sel.read)
		printf("  event log: %u entries, new: %u info, %u warning, %u critical\n",
		       n->sel.total, n->sel.new_info, n->sel.new_warning, n->sel.new_critical);
	if (n->sensors.read)
		printf("  sensors: %u nominal, %u warning, %u critical, %u unknown\n",
		       n->sensors.nominal, n->sensors.warning, n->sensors.critical,
		       n->sensors.unknown);
	for (size_t k = 0; k < n->sensors.nleaks; k++) {
		const struct gf_leak *l = &n->sensors.leaks[k];
		char *name = gf_term_safe(l->name ? l->name : l->id);
		char *ch = gf_term_safe(l->chassis ? l->chassis : "-");

		printf("  leak detector %s (chassis %s): %s\n", name, ch,
		       gf_sensor_state_name(l->state));
		free(name);
		free(ch);
	}
	for (size_t k = 0; n->hardware && k < n->hardware->ngpus; k++)
		show_gpu_health(&n->hardware->gpus[k]);
}

static int sub_show(struct inv_ctx *c)
{
	struct gf_store_query q = {.details = true};
	struct gf_sweep_info *all = NULL;
	struct gf_sweep *sw = NULL;
	struct gf_err err = {0};
	size_t nall = 0;
	int rc = one_node_arg(c);

	if (rc)
		return rc;
	if (gf_store_sweeps(c->db, &all, &nall, &err) < 0)
		return cli_fail(&err);
	if (c->a->sweep) {
		const struct gf_sweep_info *si;

		rc = inv_find_sweep(all, nall, c->a->sweep, &si);
		if (rc)
			goto out;
		q.sweep = si->id;
	}
	q.nodes = (const char *const *)c->args;
	q.nnodes = 1;
	if (gf_store_load(c->db, &q, &sw, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (sw->n == 0) {
		if (c->a->sweep)
			cli_error("node '%s' is not in sweep %s", c->args[0], c->a->sweep);
		else
			cli_error("node '%s' has not been swept (see 'gpufleet sweep')",
				  c->args[0]);
		rc = GF_EXIT_USAGE;
		goto out;
	}
	{
		const struct gf_sweep_node *n = &sw->nodes[0];
		json_t *o;

		sw->uid = gf_sweep_str(sw, uid_of(all, nall, n->sweep)); /* the one node's sweep */
		o = gf_codec_node_to_json(sw, n);
		json_object_set_new(o, "ok", json_true());
		if (inv_is_table(c->cli)) {
			show_header(n);
			if (n->set->n) {
				/* One row per component, the key in the first column. */
				json_t **rows = gf_xcalloc(n->set->n, sizeof(*rows));
				size_t k;
				json_t *e;

				json_array_foreach(json_object_get(o, GF_CODEC_COMPONENTS), k, e)
					rows[k] = e;
				inv_table(comp_cols, sizeof(comp_cols) / sizeof(comp_cols[0]), rows,
					  n->set->n);
				free(rows);
			}
		} else {
			struct gf_render_spec spec = {comp_cols,
						      sizeof(comp_cols) / sizeof(comp_cols[0]),
						      GF_CODEC_COMPONENTS, false, false};

			inv_print(c->cli, &o, 1, &spec);
		}
		json_decref(o);
	}
	rc = 0;
out:
	gf_sweep_free(sw);
	free(all);
	return rc;
}

/* ---- history ------------------------------------------------------------------ */

static const struct gf_col hist_cols[] = {
	{"sweep", "SWEEP"},   {"time", "TIME"},   {"status", "STATUS"}, {"component", "COMPONENT"},
	{"before", "BEFORE"}, {"after", "AFTER"}, {"source", "SOURCE"},
};

static json_t *jver(const char *s)
{
	return s ? json_string(s) : json_null();
}

static int sub_history(struct inv_ctx *c)
{
	struct gf_store_query q = {.history = NULL};
	struct gf_keyfilter f = {(const char *const *)c->a->component.v, c->a->component.n, NULL,
				 0};
	struct gf_sweep *sw = NULL;
	struct gf_err err = {0};
	json_t **objs = NULL, **rows = NULL;
	size_t nrows = 0;
	int rc = one_node_arg(c);

	if (rc)
		return rc;
	q.history = c->args[0];
	if (gf_store_load(c->db, &q, &sw, &err) < 0)
		return cli_fail(&err);
	if (sw->n == 0) {
		cli_error("node '%s' has not been swept (see 'gpufleet sweep')", c->args[0]);
		gf_sweep_free(sw);
		return GF_EXIT_USAGE;
	}
	objs = gf_xcalloc(sw->n, sizeof(*objs));
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_sweep_node *n = &sw->nodes[i];
		struct gf_diff_node dn = {0};
		json_t *ch = json_array();

		/* Against the last row that read anything, so a failed night adds no noise. */
		const struct gf_sweep_node *prev = NULL;

		for (size_t k = i; k-- > 0 && !prev;)
			if (sw->nodes[k].fw_read || sw->nodes[k].host_read ||
			    sw->nodes[k].bios_read)
				prev = &sw->nodes[k];
		gf_diff_rows(prev, n, &f, &dn);
		for (size_t k = 0; k < dn.n; k++)
			json_array_append_new(ch, json_pack("{s:s,s:o,s:o,s:s,s:s}", "component",
							    dn.v[k].component, "before",
							    jver(dn.v[k].before), "after",
							    jver(dn.v[k].after), "source",
							    dn.v[k].source, "change",
							    gf_change_name(dn.v[k].change)));
		free(dn.v);
		objs[i] = json_pack("{s:s,s:b,s:I,s:o,s:s,s:o,s:o}", "node", n->node, "ok", 1,
				    "sweep", (json_int_t)n->sweep, "time", inv_time_json(n->time),
				    "status", gf_node_status_name(n->status), "model",
				    jver(n->model), "changes", ch);
	}
	if (inv_is_table(c->cli)) {
		/* One line per change; a sweep that changed nothing gets one line too. */
		for (size_t i = 0; i < sw->n; i++) {
			json_t *ch = json_object_get(objs[i], "changes");
			size_t k, m = json_array_size(ch);
			json_t *e;

			rows = gf_xrealloc(rows, (nrows + (m ? m : 1)) * sizeof(*rows));
			if (!m) {
				rows[nrows++] = json_deep_copy(objs[i]);
				continue;
			}
			json_array_foreach(ch, k, e) {
				json_t *r = json_deep_copy(objs[i]);

				json_object_update(r, e);
				rows[nrows++] = r;
			}
		}
		printf("node %s\n", sw->nodes[0].node);
		inv_table(hist_cols, sizeof(hist_cols) / sizeof(hist_cols[0]), rows, nrows);
		for (size_t i = 0; i < nrows; i++)
			json_decref(rows[i]);
		free(rows);
	} else {
		struct gf_render_spec spec = {hist_cols, sizeof(hist_cols) / sizeof(hist_cols[0]),
					      "changes", false, false};

		inv_print(c->cli, objs, sw->n, &spec);
	}
	for (size_t i = 0; i < sw->n; i++)
		json_decref(objs[i]);
	free(objs);
	gf_sweep_free(sw);
	return 0;
}

/* ---- export ------------------------------------------------------------------- */

static int export_baseline(struct inv_ctx *c)
{
	struct gf_store_query q = {.nodes = &c->a->baseline, .nnodes = 1};
	struct gf_sweep *sw = NULL;
	struct gf_baseline *b;
	struct gf_err err = {0};
	json_t *j;
	char *text;

	if (gf_store_load(c->db, &q, &sw, &err) < 0)
		return cli_fail(&err);
	if (sw->n == 0) {
		cli_error("node '%s' has not been swept (see 'gpufleet sweep')", c->a->baseline);
		gf_sweep_free(sw);
		return GF_EXIT_USAGE;
	}
	b = gf_baseline_from_node(&sw->nodes[0]);
	j = gf_codec_baseline_to_json(b, &sw->nodes[0]);
	text = json_dumps(j, JSON_INDENT(2));
	printf("%s\n", text ? text : "{}");
	free(text);
	json_decref(j);
	gf_baseline_free(b);
	gf_sweep_free(sw);
	return 0;
}

static int sub_export(struct inv_ctx *c)
{
	struct gf_nodeset targets = GF_NODESET_INIT;
	struct gf_sweep_info *all = NULL;
	struct gf_err err = {0};
	bool every = true, json = c->cli->format == GF_FMT_JSON, first = true;
	size_t nall = 0;
	int rc;

	if (c->cli->format == GF_FMT_CSV || c->cli->format == GF_FMT_PROMETHEUS) {
		cli_error("inventory export writes ndjson (the default) or json");
		return GF_EXIT_USAGE;
	}
	if (c->a->baseline) {
		if (c->nargs || c->a->sweep) {
			cli_error("export --baseline NODE takes no TARGETS or --sweep");
			return GF_EXIT_USAGE;
		}
		return export_baseline(c);
	}
	rc = inv_targets(c->cli, c->args, c->nargs, &targets, &every);
	if (rc)
		return rc;
	if (gf_store_sweeps(c->db, &all, &nall, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (c->a->sweep) {
		const struct gf_sweep_info *si;

		rc = inv_find_sweep(all, nall, c->a->sweep, &si);
		if (rc)
			goto out;
		all[0] = *si;
		nall = 1;
	}
	if (json)
		fputs("[", stdout);
	/* One sweep at a time: memory stays that of one sweep however long the history. */
	for (size_t s = 0; s < nall; s++) {
		struct gf_store_query q = {.sweep = all[s].id, .details = true};
		struct gf_sweep *sw = NULL;

		if (!every) {
			q.nodes = (const char *const *)targets.names;
			q.nnodes = targets.n;
		}
		if (gf_store_load(c->db, &q, &sw, &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
		for (size_t i = 0; i < sw->n; i++) {
			json_t *o = gf_codec_node_to_json(sw, &sw->nodes[i]);
			char *line = json_dumps(o, JSON_COMPACT);

			if (json)
				printf("%s\n%s", first ? "" : ",", line ? line : "null");
			else
				printf("%s\n", line ? line : "null");
			first = false;
			free(line);
			json_decref(o);
		}
		gf_sweep_free(sw);
	}
	if (json)
		fputs(first ? "]\n" : "\n]\n", stdout);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("writing the export failed (%s)", strerror(errno));
		rc = GF_EXIT_FAILED;
		goto out;
	}
	rc = 0;
out:
	free(all);
	gf_nodeset_release(&targets);
	return rc;
}

/* ---- import ------------------------------------------------------------------- */

struct import_state {
	struct gf_store_tx *tx;
	size_t sweeps_new, sweeps_seen, rows_new, rows_present;
	char **uids_seen; /* each uid counted once */
	size_t nuids;
	double store_s; /* time spent in the store (for -v) */
};

static bool uid_seen(struct import_state *st, const char *uid)
{
	for (size_t i = 0; i < st->nuids; i++)
		if (strcmp(st->uids_seen[i], uid) == 0)
			return true;
	st->uids_seen = gf_xrealloc(st->uids_seen, (st->nuids + 1) * sizeof(*st->uids_seen));
	st->uids_seen[st->nuids++] = gf_xstrdup(uid);
	return false;
}

static int import_sweep(void *ud, struct gf_sweep *sw, struct gf_err *err)
{
	struct import_state *st = ud;
	double t0 = gf_monotime();
	bool existed = false;
	int rc = gf_store_put_sweep(st->tx, sw, true, &existed, err);

	st->store_s += gf_monotime() - t0;
	if (rc < 0)
		return rc;
	if (!uid_seen(st, sw->uid)) {
		st->sweeps_seen++;
		if (!existed)
			st->sweeps_new++;
	}
	return 0;
}

static int import_node(void *ud, struct gf_sweep *sw, struct gf_sweep_node *n, struct gf_err *err)
{
	struct import_state *st = ud;
	double t0 = gf_monotime();
	bool added = false;
	int rc = gf_store_put_node(st->tx, sw, n, true, &added, err);

	st->store_s += gf_monotime() - t0;
	if (rc < 0)
		return rc;
	if (added)
		st->rows_new++;
	else
		st->rows_present++;
	return 0;
}

static int sub_import(struct inv_ctx *c)
{
	struct import_state st = {0};
	struct gf_codec_sink sink = {import_sweep, import_node, &st};
	struct gf_err err = {0};
	double t_start = gf_monotime(), t_commit;
	const char *path;
	FILE *f;
	int rc;

	if (c->nargs != 1) {
		cli_error("inventory import takes one FILE (or - for stdin)");
		return GF_EXIT_USAGE;
	}
	path = c->args[0];
	f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!f) {
		cli_error("cannot read '%s' (%s)", path, strerror(errno));
		return GF_EXIT_USAGE;
	}
	if (gf_store_begin(c->db, &st.tx, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (gf_codec_read(f, path, &sink, &err) < 0)
		goto fail;
	t_commit = gf_monotime();
	rc = gf_store_commit(st.tx, &err);
	st.tx = NULL;
	t_commit = gf_monotime() - t_commit;
	cli_verbose(c->cli,
		    "import: %.3f s in all, %.3f s storing (%.3f s of it committing), the "
		    "rest reading and checking the file",
		    gf_monotime() - t_start, st.store_s + t_commit, t_commit);
	if (rc < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (inv_is_table(c->cli)) {
		if (!c->cli->quiet)
			printf("imported %zu sweep%s (%zu new), %zu node rows (%zu new, %zu already"
			       " here)\n",
			       st.sweeps_seen, st.sweeps_seen == 1 ? "" : "s", st.sweeps_new,
			       st.rows_new + st.rows_present, st.rows_new, st.rows_present);
	} else {
		json_t *o = json_pack("{s:I,s:I,s:I,s:I}", "sweeps", (json_int_t)st.sweeps_seen,
				      "sweeps_new", (json_int_t)st.sweeps_new, "rows_new",
				      (json_int_t)st.rows_new, "rows_present",
				      (json_int_t)st.rows_present);
		char *s = json_dumps(o, JSON_COMPACT);

		printf("%s\n", s);
		free(s);
		json_decref(o);
	}
	rc = 0;
	goto out;
fail:
	gf_store_abort(st.tx);
	st.tx = NULL;
	{
		/* One line: what is wrong, and that the inventory is as it was. */
		char msg[sizeof(err.msg)];

		snprintf(msg, sizeof(msg), "%s", err.msg);
		gf_err_set(&err, err.code ? err.code : GF_E_USAGE, GF_EK_NONE,
			   "%s; nothing was imported", msg);
	}
	rc = cli_fail(&err);
out:
	if (f != stdin)
		fclose(f);
	for (size_t i = 0; i < st.nuids; i++)
		free(st.uids_seen[i]);
	free(st.uids_seen);
	return rc;
}

/* ---- prune, sweeps --------------------------------------------------------------- */

static int sub_prune(struct inv_ctx *c)
{
	struct gf_err err = {0};
	size_t pruned = 0, left = 0, events = 0;

	if (c->a->keep < 0 && !c->a->older) {
		cli_error("inventory prune needs --keep N or --older-than DURATION");
		return GF_EXIT_USAGE;
	}
	if (c->nargs) {
		cli_error("inventory prune takes no arguments");
		return GF_EXIT_USAGE;
	}
	if (gf_store_prune(c->db, c->a->keep, c->a->older ? gf_walltime() - c->a->older_than : 0,
			   &pruned, &left, &err) < 0)
		return cli_fail(&err);
	/* Events have no sweep: --older-than is their retention. */
	if (c->a->older &&
	    gf_events_prune(c->db, gf_walltime() - c->a->older_than, &events, &err) < 0)
		return cli_fail(&err);
	if (inv_is_table(c->cli)) {
		if (!c->cli->quiet)
			printf("pruned %zu sweep%s, %zu left\n", pruned, pruned == 1 ? "" : "s",
			       left);
		if (!c->cli->quiet && c->a->older)
			printf("pruned %zu event%s\n", events, events == 1 ? "" : "s");
	} else {
		printf("{\"pruned\":%zu,\"left\":%zu,\"events_pruned\":%zu}\n", pruned, left,
		       events);
	}
	return 0;
}

static const struct gf_col sweep_cols[] = {
	{"sweep", "SWEEP"},     {"time", "TIME"},     {"nodes", "NODES"},       {"ok", "OK"},
	{"partial", "PARTIAL"}, {"failed", "FAILED"}, {"imported", "IMPORTED"}, {"uid", "UID"},
};

static int sub_sweeps(struct inv_ctx *c)
{
	struct gf_sweep_info *all = NULL;
	struct gf_err err = {0};
	json_t **objs;
	size_t n = 0;

	if (c->nargs) {
		cli_error("inventory sweeps takes no arguments");
		return GF_EXIT_USAGE;
	}
	if (gf_store_sweeps(c->db, &all, &n, &err) < 0)
		return cli_fail(&err);
	objs = gf_xcalloc(n ? n : 1, sizeof(*objs));
	for (size_t i = 0; i < n; i++)
		objs[i] = json_pack("{s:I,s:s,s:o,s:o,s:I,s:I,s:I,s:I,s:b}", "sweep",
				    (json_int_t)all[i].id, "uid", all[i].uid, "time",
				    inv_time_json(all[i].started), "finished",
				    inv_time_json(all[i].finished), "nodes",
				    (json_int_t)all[i].nodes, "ok", (json_int_t)all[i].ok,
				    "partial", (json_int_t)all[i].partial, "failed",
				    (json_int_t)all[i].failed, "imported", all[i].imported);
	if (inv_is_table(c->cli))
		inv_table(sweep_cols, sizeof(sweep_cols) / sizeof(sweep_cols[0]), objs, n);
	else
		inv_print(c->cli, objs, n,
			  &(struct gf_render_spec){sweep_cols,
						   sizeof(sweep_cols) / sizeof(sweep_cols[0]), NULL,
						   false, false});
	for (size_t i = 0; i < n; i++)
		json_decref(objs[i]);
	free(objs);
	free(all);
	return 0;
}

static const struct gf_col audit_cols[] = {
	{"id", "ID"},     {"time", "TIME"},     {"user", "USER"},     {"action", "ACTION"},
	{"node", "NODE"}, {"result", "RESULT"}, {"detail", "DETAIL"},
};

/* The audit log: an intent never completed (kill -9, a crash) shows as pending. */
static int sub_audit(struct inv_ctx *c)
{
	struct gf_audit_entry *e = NULL;
	struct gf_nodeset targets = {0};
	struct gf_err err = {0};
	struct inv_out o;
	const struct gf_render_spec spec = {audit_cols, sizeof(audit_cols) / sizeof(audit_cols[0]),
					    NULL, false, false};
	size_t n = 0, pending = 0;
	bool every;
	int rc = inv_targets(c->cli, c->args, c->nargs, &targets, &every);

	if (rc)
		return rc;
	if (gf_db_audit_list(c->db, c->a->pending, &e, &n, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	inv_out_begin(&o, c->cli, &spec);
	for (size_t i = 0; i < n; i++) {
		json_t *obj;

		if (!every && (!e[i].node || !gf_nodeset_contains(&targets, e[i].node)))
			continue;
		obj = json_pack("{s:I,s:o,s:s?,s:s?,s:s?,s:s?,s:b}", "id", (json_int_t)e[i].id,
				"time", inv_time_json(e[i].time), "user", e[i].user, "action",
				e[i].verb, "node", e[i].node, "result", e[i].result, "pending",
				e[i].pending);
		if (e[i].detail)
			json_object_set_new(obj, "detail", json_string(e[i].detail));
		json_object_set_new(obj, "finished",
				    e[i].pending ? json_null() : inv_time_json(e[i].finished));
		pending += e[i].pending;
		inv_out_add(&o, obj);
	}
	inv_out_end(&o);
	if (pending && inv_is_table(c->cli))
		cli_warn(c->cli,
			 "%zu action%s pending: the request may have been sent, its result "
			 "was never recorded",
			 pending, pending == 1 ? " is" : "s are");
out:
	gf_db_audit_entries_free(e, n);
	gf_nodeset_release(&targets);
	return rc;
}

/* ---- the verb --------------------------------------------------------------------- */

/* What a sub-verb runs, with the inventory open. */
struct inv_sub {
	int (*fn)(struct inv_ctx *c);
};

static int inv_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		   int nargs)
{
	struct inv_ctx *c = ud;
	int rc = cli_db(cli, &c->db);

	if (rc)
		return rc;
	c->sub = sv->name;
	c->args = args;
	c->nargs = nargs;
	return ((const struct inv_sub *)sv->data)->fn(c);
}

static const struct cli_subverb subs[] = {
	{"show", inv_run, &(const struct inv_sub){sub_show}, 0},
	{"history", inv_run, &(const struct inv_sub){sub_history}, 0},
	{"export", inv_run, &(const struct inv_sub){sub_export}, 0},
	{"import", inv_run, &(const struct inv_sub){sub_import}, 0},
	{"prune", inv_run, &(const struct inv_sub){sub_prune}, 0},
	{"sweeps", inv_run, &(const struct inv_sub){sub_sweeps}, 0},
	{"audit", inv_run, &(const struct inv_sub){sub_audit}, 0},
};

int cmd_inventory(struct gf_cli *cli, int argc, char **argv)
{
	struct inv_args a = {.keep = -1};
	struct inv_ctx c = {.cli = cli, .a = &a};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, inv_opts, sizeof(inv_opts) / sizeof(inv_opts[0]), on_opt,
		       &a, &args, &nargs);
	if (!rc)
		rc = cli_subverb_run(cli, subs, sizeof(subs) / sizeof(subs[0]), &c, args, nargs);
	inv_globs_release(&a.component);
	return rc;
}
