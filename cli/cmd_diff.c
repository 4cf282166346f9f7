/* gpufleet diff: what changed between two sweeps. */
#include <stdlib.h>
#include <string.h>

#include "cli/inv.h"
#include "cli/verbs.h"
#include "lib/buf.h"

enum { F_COMPONENT, F_IGNORE };

static const struct cli_opt diff_opts[] = {
	[F_COMPONENT] = {{"component", required_argument, NULL, 0},
			 "PATTERN",
			 "only components matching these globs (gpu*.firmware,bmc)"},
	[F_IGNORE] = {{"ignore", required_argument, NULL, 0},
		      "PATTERN",
		      "leave out components matching these globs"},
};

struct diff_args {
	struct inv_globs include, ignore;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct diff_args *a = ud;

	if (idx == F_COMPONENT)
		inv_globs_add(&a->include, arg);
	else
		inv_globs_add(&a->ignore, arg);
	return 0;
}

static json_t *jver(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *node_json(const struct gf_diff_node *dn, const struct gf_sweep_info *sa,
			 const struct gf_sweep_info *sb, bool table)
{
	json_t *o = json_object(), *comps = json_array();

	json_object_set_new(o, "node", json_string(dn->node));
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "change", json_string(gf_change_name(dn->change)));
	json_object_set_new(o, "sweeps",
			    json_pack("[I,I]", (json_int_t)sa->id, (json_int_t)sb->id));
	if (dn->a && dn->b && dn->a->status != dn->b->status)
		json_object_set_new(o, "status",
				    json_pack("{s:s,s:s}", "before",
					      gf_node_status_name(dn->a->status), "after",
					      gf_node_status_name(dn->b->status)));
	for (size_t k = 0; k < dn->n; k++) {
		const struct gf_diff_comp *c = &dn->v[k];
		json_t *e = json_pack("{s:s,s:o,s:o,s:s,s:s}", "component", c->component, "before",
				      jver(c->before), "after", jver(c->after), "source", c->source,
				      "change", gf_change_name(c->change));

		json_array_append_new(comps, e);
	}
	if (table && dn->n == 0) {
		/* A row for the node itself: added, removed, or its status changed. */
		const char *what = dn->change == GF_CHANGE_CHANGED ? "(status)" : "(node)";
		const char *before = dn->a ? gf_node_status_name(dn->a->status) : NULL;
		const char *after = dn->b ? gf_node_status_name(dn->b->status) : NULL;

		json_array_append_new(comps, json_pack("{s:s,s:o,s:o,s:s,s:s}", "component", what,
						       "before", jver(before), "after", jver(after),
						       "source", "-", "change",
						       gf_change_name(dn->change)));
	}
	json_object_set_new(o, "components", comps);
	return o;
}

static const struct gf_col diff_cols[] = {
	{"change", "CHANGE"}, {"component", "COMPONENT"}, {"before", "BEFORE"},
	{"after", "AFTER"},   {"source", "SOURCE"},
};

int cmd_diff(struct gf_cli *cli, int argc, char **argv)
{
	struct diff_args a = {0};
	struct gf_sweep_info *all = NULL;
	const struct gf_sweep_info *sa = NULL, *sb = NULL;
	struct gf_sweep *wa = NULL, *wb = NULL;
	struct gf_diff *d = NULL;
	struct gf_keyfilter f;
	struct gf_err err = {0};
	size_t nall = 0;
	struct gf_db *db;
	bool table;
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, diff_opts, sizeof(diff_opts) / sizeof(diff_opts[0]), on_opt,
		       &a, &args, &nargs);
	if (rc)
		goto out;
	if (nargs > 2) {
		cli_error("diff takes at most two sweeps; see 'gpufleet diff --help'");
		rc = GF_EXIT_USAGE;
		goto out;
	}
	table = cli->format == GF_FMT_TABLE || cli->format == GF_FMT_CSV;
	rc = cli_db(cli, &db);
	if (rc)
		goto out;
	if (gf_store_sweeps(db, &all, &nall, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (nargs >= 1 && (rc = inv_find_sweep(all, nall, args[0], &sa)) != 0)
		goto out;
	if (nargs == 2 && (rc = inv_find_sweep(all, nall, args[1], &sb)) != 0)
		goto out;
	if (nargs == 0) {
		if (nall < 2) {
			cli_error("diff needs two sweeps and the inventory has %zu", nall);
			rc = GF_EXIT_USAGE;
			goto out;
		}
		sa = &all[nall - 2];
	}
	if (!sb) {
		if (nall == 0) {
			cli_error("the inventory has no sweeps");
			rc = GF_EXIT_USAGE;
			goto out;
		}
		sb = &all[nall - 1];
	}
	{
		struct gf_store_query qa = {.sweep = sa->id}, qb = {.sweep = sb->id};

		if (gf_store_load(db, &qa, &wa, &err) < 0 ||
		    gf_store_load(db, &qb, &wb, &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
	}
	f.include = (const char *const *)a.include.v;
	f.ninclude = a.include.n;
	f.ignore = (const char *const *)a.ignore.v;
	f.nignore = a.ignore.n;
	if (gf_diff_compute(wa, wb, &f, &d, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	{
		struct gf_render_spec spec = {diff_cols, sizeof(diff_cols) / sizeof(diff_cols[0]),
					      "components", false, false};
		struct inv_out out;

		inv_out_begin(&out, cli, &spec);
		for (size_t i = 0; i < d->n; i++)
			inv_out_add(&out, node_json(&d->nodes[i], sa, sb, table));
		inv_out_end(&out);
	}
	if (cli->format == GF_FMT_TABLE && !cli->quiet)
		printf("sweep %lld -> %lld: %zu node%s added, %zu removed, %zu changed"
		       " (%zu component change%s)\n",
		       sa->id, sb->id, d->added, d->added == 1 ? "" : "s", d->removed, d->changed,
		       d->comps, d->comps == 1 ? "" : "s");
	rc = GF_EXIT_OK;
out:
	gf_diff_free(d);
	gf_sweep_free(wa);
	gf_sweep_free(wb);
	free(all);
	inv_globs_release(&a.include);
	inv_globs_release(&a.ignore);
	return rc;
}
