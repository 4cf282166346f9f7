/* gpufleet drift: which nodes differ from their peers, a baseline, or what they were. */
#include <stdlib.h>
#include <string.h>

#include "cli/inv.h"
#include "cli/verbs.h"
#include "inventory/reconcile.h"
#include "lib/buf.h"
#include "lib/util.h"

enum {
	D_MAJORITY,
	D_BY,
	D_BASELINE,
	D_BASELINE_NODE,
	D_SINCE,
	D_SWEEP,
	D_COMPONENT,
	D_IGNORE,
	D_FAIL,
	D_RECONCILE
};

static const struct cli_opt drift_opts[] = {
	[D_MAJORITY] = {{"majority", no_argument, NULL, 0},
			NULL,
			"compare with the most common version among peers (the default)"},
	[D_BY] = {{"by", required_argument, NULL, 0},
		  "WHAT",
		  "peers: same hardware model (model, default), same groups (group), all (fleet)"},
	[D_BASELINE] = {{"baseline", required_argument, NULL, 0},
			"FILE",
			"compare with the versions a baseline file expects"},
	[D_BASELINE_NODE] = {{"baseline-node", required_argument, NULL, 0},
			     "NODE",
			     "compare with the versions of NODE's last sweep"},
	[D_SINCE] = {{"since", required_argument, NULL, 0},
		     "WHEN",
		     "what changed on each node since sweep N, a date or a duration ago (7d)"},
	[D_SWEEP] = {{"sweep", required_argument, NULL, 0},
		     "ID",
		     "compare the rows of this sweep instead of each node's last"},
	[D_COMPONENT] = {{"component", required_argument, NULL, 0},
			 "PATTERN",
			 "only components matching these globs (gpu*.firmware,bmc)"},
	[D_IGNORE] = {{"ignore", required_argument, NULL, 0},
		      "PATTERN",
		      "leave out components matching these globs"},
	[D_FAIL] = {{"fail-on-drift", no_argument, NULL, 0}, NULL, "exit 3 when anything drifts"},
	[D_RECONCILE] = {{"reconcile", no_argument, NULL, 0},
			 NULL,
			 "also compare the BMC's GPUs with the host's: count, serials, firmware"},
};

enum by { BY_MODEL, BY_GROUP, BY_FLEET };

struct drift_args {
	int modes; /* how many of --majority, --baseline*, --since were given */
	enum gf_drift_mode mode;
	enum by by;
	const char *baseline, *baseline_node, *since, *sweep;
	struct inv_globs include, ignore;
	bool fail;
	bool reconcile;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct drift_args *a = ud;

	switch (idx) {
	case D_MAJORITY:
		a->modes++;
		a->mode = GF_DRIFT_MAJORITY;
		return 0;
	case D_BASELINE:
		a->modes++;
		a->mode = GF_DRIFT_BASELINE;
		a->baseline = arg;
		return 0;
	case D_BASELINE_NODE:
		a->modes++;
		a->mode = GF_DRIFT_BASELINE;
		a->baseline_node = arg;
		return 0;
	case D_SINCE:
		a->modes++;
		a->mode = GF_DRIFT_SINCE;
		a->since = arg;
		return 0;
	case D_SWEEP: a->sweep = arg; return 0;
	case D_COMPONENT: inv_globs_add(&a->include, arg); return 0;
	case D_IGNORE: inv_globs_add(&a->ignore, arg); return 0;
	case D_FAIL: a->fail = true; return 0;
	case D_RECONCILE: a->reconcile = true; return 0;
	case D_BY:
		if (strcmp(arg, "model") == 0)
			a->by = BY_MODEL;
		else if (strcmp(arg, "group") == 0)
			a->by = BY_GROUP;
		else if (strcmp(arg, "fleet") == 0)
			a->by = BY_FLEET;
		else {
			cli_error("unknown --by '%s' (model, group, fleet)", arg);
			return GF_EXIT_USAGE;
		}
		return 0;
	default: return 0;
	}
}

static json_t *item_json(const struct gf_drift_item *it, bool table)
{
	json_t *o = json_object();

	json_object_set_new(o, "component", json_string(it->component));
	json_object_set_new(o, "expected", it->expected ? json_string(it->expected) : json_null());
	json_object_set_new(o, "actual", it->actual ? json_string(it->actual) : json_null());
	json_object_set_new(o, "source", json_string(it->source));
	if (it->flags & GF_DRIFT_TIE) {
		json_t *t = json_array();

		for (size_t k = 0; k < it->ntie; k++)
			json_array_append_new(t,
					      it->tie[k] ? json_string(it->tie[k]) : json_null());
		json_object_set_new(o, "tie", t);
	}
	if (it->flags & GF_DRIFT_MISSING)
		json_object_set_new(o, "missing", json_true());
	if (it->flags & GF_DRIFT_EXTRA)
		json_object_set_new(o, "extra", json_true());
	if (table) {
		struct gf_buf b = GF_BUF_INIT;

		if (it->flags & GF_DRIFT_TIE) {
			gf_buf_adds(&b, "tie:");
			for (size_t k = 0; k < it->ntie; k++)
				gf_buf_addf(&b, "%s%s", k ? "|" : " ",
					    it->tie[k] ? it->tie[k] : "(absent)");
		} else {
			gf_buf_adds(&b, it->expected ? it->expected : "(absent)");
		}
		json_object_set_new(o, "expected_t", json_string(gf_buf_str(&b)));
		json_object_set_new(o, "actual_t",
				    json_string(it->actual                       ? it->actual
						: (it->flags & GF_DRIFT_MISSING) ? "(absent)"
										 : "(no version)"));
		gf_buf_release(&b);
	}
	return o;
}

/*
 * A finding of --reconcile, in the shape of a drift item with "reconcile":true;
 * its source is both sides: the BMC's protocol (@protocol) and the host's.
 */
static json_t *reconcile_json(const struct gf_reconcile_item *it, const char *protocol, bool table)
{
	struct gf_buf src = GF_BUF_INIT;
	json_t *o;

	gf_buf_addf(&src, "%s/%s", protocol ? protocol : "bmc", GF_SOURCE_HOST);
	o = json_pack("{s:s,s:o,s:o,s:s,s:b,s:s,s:s}", "component", it->component, "expected",
		      it->expected ? json_string(it->expected) : json_null(), "actual",
		      it->actual ? json_string(it->actual) : json_null(), "source",
		      gf_buf_str(&src), "reconcile", 1, "check", it->check, "detail", it->detail);
	gf_buf_release(&src);

	if (table) {
		json_object_set_new(o, "expected_t",
				    json_string(it->expected ? it->expected
							     : "(not listed by the BMC)"));
		json_object_set_new(o, "actual_t",
				    json_string(it->actual ? it->actual
							   : "(not seen by the host)"));
	}
	return o;
}

static json_t *node_json(const struct gf_drift *d, size_t i, enum gf_drift_mode mode, bool table,
			 json_t *since_desc, const struct gf_reconcile *rec)
{
	const struct gf_drift_node *dn = &d->nodes[i];
	const struct gf_sweep_node *n = dn->node;
	json_t *o = json_object(), *items = json_array();

	json_object_set_new(o, "node", json_string(n->node));
	json_object_set_new(o, "ok", json_boolean(dn->compared));
	json_object_set_new(o, "sweep", json_integer(n->sweep));
	json_object_set_new(o, "time", inv_time_json(n->time));
	json_object_set_new(o, "status", json_string(gf_node_status_name(n->status)));
	json_object_set_new(o, "model", n->model ? json_string(n->model) : json_null());
	if (mode == GF_DRIFT_MAJORITY) {
		json_object_set_new(o, "class", json_string(dn->class));
		json_object_set_new(o, "peers", json_integer((json_int_t)dn->peers));
	}
	if (mode == GF_DRIFT_SINCE) {
		json_t *s = json_deep_copy(since_desc);

		if (dn->before)
			json_object_set_new(s, "before",
					    json_pack("{s:I,s:o}", "sweep",
						      (json_int_t)dn->before->sweep, "time",
						      inv_time_json(dn->before->time)));
		else
			json_object_set_new(s, "before", json_null());
		json_object_set_new(o, "since", s);
	}
	for (size_t k = 0; k < dn->n; k++)
		json_array_append_new(items, item_json(&dn->items[k], table));
	if (rec) {
		const struct gf_reconcile_node *rn = &rec->nodes[i];

		for (size_t k = 0; k < rn->n; k++)
			json_array_append_new(items, reconcile_json(&rn->items[k],
								    rn->node->protocol, table));
		json_object_set_new(o, "reconciled", json_boolean(rn->compared));
	}
	json_object_set_new(o, "drift", items);
	if (!dn->compared) {
		char msg[640];

		if (n->nerrors)
			snprintf(msg, sizeof(msg), "sweep %lld read nothing to compare (%s: %s)",
				 n->sweep, n->errors[0].op, n->errors[0].message);
		else
			snprintf(msg, sizeof(msg), "sweep %lld read nothing to compare", n->sweep);
		json_object_set_new(o, "error",
				    json_pack("{s:s,s:s}", "kind",
					      gf_errkind_name(n->nerrors ? n->errors[0].kind
									 : GF_EK_UNSUPPORTED),
					      "message", msg));
	}
	return o;
}

static json_t *never_swept(const char *name)
{
	char msg[300];

	snprintf(msg, sizeof(msg), "node '%s' has not been swept (see 'gpufleet sweep')", name);
	return json_pack("{s:s,s:b,s:[],s:{s:s,s:s}}", "node", name, "ok", 0, "drift", "error",
			 "kind", "unsupported", "message", msg);
}

/* Rows are in natural name order (gf_store_load()): a binary search finds one. */
static bool has_row(const struct gf_sweep *sw, const char *name)
{
	struct gf_names rows = {sw->nodes, sw->n, sizeof(*sw->nodes),
				offsetof(struct gf_sweep_node, node)};

	return gf_node_name_find(&rows, NULL, name) != GF_NAME_NONE;
}

static const struct gf_col drift_cols[] = {
	{"component", "COMPONENT"},
	{"expected_t", "EXPECTED"},
	{"actual_t", "ACTUAL"},
	{"source", "SOURCE"},
};

static const char *mode_text(const struct drift_args *a)
{
	if (a->mode == GF_DRIFT_SINCE)
		return "since";
	if (a->mode == GF_DRIFT_BASELINE)
		return a->baseline_node ? "baseline node" : "baseline";
	return a->by == BY_GROUP   ? "majority by group"
	       : a->by == BY_FLEET ? "majority of the fleet"
				   : "majority by model";
}

int cmd_drift(struct gf_cli *cli, int argc, char **argv)
{
	struct drift_args a = {.mode = GF_DRIFT_MAJORITY};
	struct gf_nodeset targets = GF_NODESET_INIT;
	struct gf_store_query q = {0}, qb = {0};
	struct gf_sweep *cur = NULL, *before = NULL;
	struct gf_baseline *bl = NULL;
	struct gf_sweep_info *all = NULL;
	struct gf_drift *d = NULL;
	struct gf_reconcile *rec = NULL;
	struct gf_drift_opts o = {0};
	struct gf_err err = {0};
	const char **classes = NULL;
	char **owned_classes = NULL;
	json_t *since_desc = NULL;
	size_t nall = 0, missing = 0;
	struct gf_db *db;
	bool every = false, table;
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, drift_opts, sizeof(drift_opts) / sizeof(drift_opts[0]),
		       on_opt, &a, &args, &nargs);
	if (rc)
		goto out;
	if (a.modes > 1) {
		cli_error("give one of --majority, --baseline, --baseline-node, --since");
		rc = GF_EXIT_USAGE;
		goto out;
	}
	table = cli->format == GF_FMT_TABLE || cli->format == GF_FMT_CSV;
	rc = inv_open(cli, args, nargs, a.by == BY_GROUP, &targets, &every, &db);
	if (rc)
		goto out;
	if (gf_store_sweeps(db, &all, &nall, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (a.sweep) {
		const struct gf_sweep_info *si;

		rc = inv_find_sweep(all, nall, a.sweep, &si);
		if (rc)
			goto out;
		q.sweep = si->id;
	}
	if (!every) {
		q.nodes = (const char *const *)targets.names;
		q.nnodes = targets.n;
	}
	q.details = a.reconcile; /* the hardware and host facts */
	if (gf_store_load(db, &q, &cur, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}

	o.mode = a.mode;
	o.filter.include = (const char *const *)a.include.v;
	o.filter.ninclude = a.include.n;
	o.filter.ignore = (const char *const *)a.ignore.v;
	o.filter.nignore = a.ignore.n;
	if (a.mode == GF_DRIFT_BASELINE) {
		if (inv_load_baseline(db, a.baseline, a.baseline_node, &bl, &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
		o.baseline = bl;
	}
	if (a.mode == GF_DRIFT_SINCE) {
		rc = inv_since_bound(a.since, all, nall, &qb, &since_desc);
		if (rc)
			goto out;
		qb.nodes = q.nodes;
		qb.nnodes = q.nnodes;
		if (gf_store_load(db, &qb, &before, &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
		o.before = before;
	}
	if (a.mode == GF_DRIFT_MAJORITY) {
		classes = gf_xcalloc(cur->n ? cur->n : 1, sizeof(*classes));
		owned_classes = gf_xcalloc(cur->n ? cur->n : 1, sizeof(*owned_classes));
		for (size_t i = 0; i < cur->n; i++) {
			if (a.by == BY_FLEET)
				classes[i] = "fleet";
			else if (a.by == BY_GROUP)
				classes[i] = owned_classes[i] = inv_groups_of(cli,
									      cur->nodes[i].node);
			else
				classes[i] = gf_drift_model_class(&cur->nodes[i]);
		}
		o.classes = classes;
	}
	if (gf_drift_compute(cur, &o, &d, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (a.reconcile)
		rec = gf_reconcile_compute(cur);

	/* Output: every node compared (JSON), or only what differs (table). */
	{
		struct gf_render_spec spec = {drift_cols,
					      sizeof(drift_cols) / sizeof(drift_cols[0]), "drift",
					      false, false};
		struct inv_out out;

		inv_out_begin(&out, cli, &spec);
		for (size_t i = 0; i < d->n; i++) {
			if (table && d->nodes[i].compared && d->nodes[i].n == 0 &&
			    (!rec || rec->nodes[i].n == 0))
				continue;
			inv_out_add(&out, node_json(d, i, a.mode, table, since_desc, rec));
		}
		for (size_t t = 0; t < targets.n; t++) {
			if (!has_row(cur, targets.names[t])) {
				inv_out_add(&out, never_swept(targets.names[t]));
				missing++;
			}
		}
		inv_out_end(&out);
	}
	if (cli->format == GF_FMT_TABLE && !cli->quiet) {
		size_t compared = d->n - d->not_compared;

		if (d->items == 0)
			printf("no drift: %zu node%s compared (%s)", compared,
			       compared == 1 ? "" : "s", mode_text(&a));
		else
			printf("drift (%s): %zu of %zu node%s differ on %zu component%s",
			       mode_text(&a), d->drifting, compared, compared == 1 ? "" : "s",
			       d->components, d->components == 1 ? "" : "s");
		if (d->ties)
			printf(", %zu tie%s", d->ties, d->ties == 1 ? "" : "s");
		if (d->not_compared + missing)
			printf("; %zu node%s not compared", d->not_compared + missing,
			       d->not_compared + missing == 1 ? "" : "s");
		if (rec)
			printf("; reconcile: %zu finding%s on %zu of %zu node%s with GPUs on both sides",
			       rec->findings, rec->findings == 1 ? "" : "s",
			       rec->nodes_with_findings, rec->compared,
			       rec->compared == 1 ? "" : "s");
		printf("\n");
	}
	if (a.fail && (d->items || (rec && rec->findings)))
		rc = GF_EXIT_DRIFT;
	else
		rc = d->not_compared + missing ? GF_EXIT_FAILED : GF_EXIT_OK;
out:
	json_decref(since_desc);
	gf_reconcile_free(rec);
	gf_drift_free(d);
	if (owned_classes)
		for (size_t i = 0; cur && i < cur->n; i++)
			free(owned_classes[i]);
	free(owned_classes);
	free(classes);
	gf_baseline_free(bl);
	gf_sweep_free(before);
	gf_sweep_free(cur);
	free(all);
	gf_nodeset_release(&targets);
	inv_globs_release(&a.include);
	inv_globs_release(&a.ignore);
	return rc;
}
