/*
 * gpufleet update plan|run|status|resume: firmware rollouts from a catalog,
 * planned from a fresh read of each node's firmware inventory, pushed in
 * batches, and `done` only once the new version is read back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/update.h"
#include "cli/verbs.h"
#include "lib/util.h"

enum {
	U_CATALOG,
	U_COMPONENT,
	U_CANARY,
	U_BATCH,
	U_MAX_FAILURES,
	U_DRY_RUN,
	U_YES,
	U_REBOOT,
	U_UPDATE_TIMEOUT,
	U_READBACK_WAIT,
};

static const struct cli_opt update_opts[] = {
	[U_CATALOG] = {{"catalog", required_argument, NULL, 0},
		       "FILE",
		       "the firmware catalog (JSON, see gpufleet-update(1))"},
	[U_COMPONENT] = {{"component", required_argument, NULL, 0},
			 "PATTERN",
			 "only components whose key matches"},
	[U_CANARY] = {{"canary", required_argument, NULL, 0},
		      "N",
		      "update N nodes first and alone (default 1)"},
	[U_BATCH] = {{"batch", required_argument, NULL, 0},
		     "N",
		     "nodes updated at once (default: the fan-out)"},
	[U_MAX_FAILURES] = {{"max-failures", required_argument, NULL, 0},
			    "K",
			    "stop starting nodes once more than K failed (default 0)"},
	[U_DRY_RUN] = {{"dry-run", no_argument, NULL, 'n'}, NULL, "show the plan, send nothing"},
	[U_YES] = {{"yes", no_argument, NULL, 'y'},
		   NULL,
		   "update more than one node without asking"},
	[U_REBOOT] = {{"reboot", no_argument, NULL, 0},
		      NULL,
		      "restart hosts whose firmware needs it"},
	[U_UPDATE_TIMEOUT] = {{"update-timeout", required_argument, NULL, 0},
			      "SECONDS",
			      "a node's whole update (default 1800)"},
	[U_READBACK_WAIT] = {{"readback-wait", required_argument, NULL, 0},
			     "SECONDS",
			     "how long a new version may take to show (default 60)"},
};

struct update_args {
	const char *catalog;
	bool dry_run, yes;
	struct gf_rollout_opts o; /* what the rollout runs with */
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct update_args *a = ud;
	struct gf_rollout_opts *o = &a->o;
	struct gf_err err = {0};
	int rc = 0;

	switch (idx) {
	case U_CATALOG: a->catalog = arg; break;
	case U_COMPONENT: o->component = arg; break;
	case U_CANARY: rc = gf_parse_uint(arg, 0, 100000, &o->canary, &err, "--canary"); break;
	case U_BATCH: rc = gf_parse_uint(arg, 1, 100000, &o->batch, &err, "--batch"); break;
	case U_MAX_FAILURES:
		rc = gf_parse_uint(arg, 0, 1000000, &o->max_failures, &err, "--max-failures");
		break;
	case U_DRY_RUN: a->dry_run = true; break;
	case U_YES: a->yes = true; break;
	case U_REBOOT: o->reboot = true; break;
	case U_UPDATE_TIMEOUT:
		rc = gf_parse_seconds(arg, 1, 7 * 86400, &o->update_timeout, &err,
				      "--update-timeout");
		break;
	case U_READBACK_WAIT:
		rc = gf_parse_seconds(arg, 0, 86400, &o->readback_wait, &err, "--readback-wait");
		break;
	}
	return rc < 0 ? cli_fail(&err) : 0;
}

/* What plan and run share: the catalog, the targets, the plan of each. */
struct plan_run {
	struct gf_catalog cat;
	struct gf_node *nodes;
	size_t n;
	struct gf_rollout_plan *plans;
};

static int plan_load(struct gf_cli *cli, const struct update_args *a, char **args, int nargs,
		     struct plan_run *p)
{
	struct gf_err err = {0};

	if (!a->catalog) {
		cli_error("%s needs --catalog FILE", cli->verb);
		return GF_EXIT_USAGE;
	}
	if (gf_catalog_load(a->catalog, &p->cat, &err) < 0)
		return cli_fail(&err);
	return cli_targets(cli, args, nargs, false, &p->nodes, &p->n);
}

/* A fresh read of every node and its plan, rendered when @render; the exit code. */
static int plan_read(struct upd *u, struct plan_run *p, const struct gf_rollout_run *run,
		     bool render)
{
	u->render = (struct cli_render){.cli = u->cli,
					.nodes = p->nodes,
					.n = p->n,
					.spec = &upd_plan_spec,
					.show_bmc = true};
	u->shown = render ? gf_xcalloc(p->n ? p->n : 1, sizeof(*u->shown)) : NULL;
	gf_rollout_plan(run, &p->plans);
	if (render && u->fan.ran)
		cli_render_finish(&u->render, u->shown);
	return u->fan.code;
}

static void plan_release(struct upd *u, struct plan_run *p)
{
	for (size_t i = 0; u->shown && i < p->n; i++)
		gf_result_release(&u->shown[i]);
	free(u->shown);
	u->shown = NULL;
	for (size_t i = 0; p->plans && i < p->n; i++)
		gf_rollout_plan_release(&p->plans[i]);
	free(p->plans);
	gf_nodes_free(p->nodes, p->n);
	gf_catalog_release(&p->cat);
}

/* Run and resume alike: the batches, the rollout's final state, its nodes printed; an exit code. */
static int execute(struct gf_cli *cli, const struct gf_rollout_run *run, const struct gf_rollout *r,
		   bool resume)
{
	struct gf_err err = {0};
	bool store_failed;
	size_t done = 0;
	int rc, prc;

	rc = gf_rollout_execute(run, r, resume, &store_failed, &err);
	if (rc < 0)
		rc = cli_fail(&err);
	if (!rc && store_failed)
		rc = GF_EXIT_FAILED;
	prc = gf_rollout_finish(run->db, r->id, &err) < 0 ? cli_fail(&err) : 0;
	if (!rc)
		rc = prc;
	/* What a killed run left pending in the audit, from what resume found. */
	if (resume && gf_rollout_audit_reconcile(run->db, r->id, "update resume", &done, &err) < 0)
		prc = cli_fail(&err);
	if (!rc)
		rc = prc;
	prc = upd_print_rollout(cli, run->db, r->id, true);
	if (!rc)
		rc = prc;
	return cli_interrupted(rc);
}

/* update plan (sv->data NULL) and run: the plan rendered (plan, --dry-run), or the rollout. */
static int update_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		      int nargs)
{
	const struct update_args *a = ud;
	bool plan = !sv->data, dry = a->dry_run && !plan;
	struct upd u = {.cli = cli, .dry_run = dry, .fan = {.cli = cli}};
	struct plan_run p = {0};
	struct gf_rollout r = {0};
	struct gf_rollout_run run;
	struct gf_err err = {0};
	struct gf_db *db = NULL;
	size_t work = 0;
	int rc;

	rc = plan_load(cli, a, args, nargs, &p);
	if (rc)
		goto out;
	if (!plan && !dry && (rc = cli_guard(cli, "update run", p.nodes, p.n, a->yes)))
		goto out;
	if (!plan && !dry && (rc = cli_db(cli, &db)))
		goto out;
	upd_run_init(&u, &p.cat, &a->o, p.nodes, p.n, db, &run);
	/* The plan, from a fresh read of every node; plan and --dry-run stop here. */
	rc = plan_read(&u, &p, &run, plan || dry);
	if (plan || dry || !u.fan.ran || rc == GF_EXIT_INTERRUPTED)
		goto out;
	if (gf_rollout_start(&run, p.plans, gf_invoking_user(), &r, &work, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (cli->format == GF_FMT_TABLE)
		cli_note(cli, "gpufleet: rollout %ld: %zu of %zu nodes to update", r.id, work, p.n);
	rc = execute(cli, &run, &r, false);
out:
	gf_rollout_release(&r);
	plan_release(&u, &p);
	return rc;
}

static int rollout_arg(struct gf_cli *cli, char **args, int nargs, long *ret)
{
	unsigned long v = 0;
	struct gf_err err = {0};

	*ret = 0;
	if (nargs > 1) {
		cli_error("%s takes one ROLLOUT at most", cli->verb);
		return GF_EXIT_USAGE;
	}
	if (nargs == 1) {
		if (gf_parse_uint(args[0], 1, 1ul << 40, &v, &err, "ROLLOUT") < 0)
			return cli_fail(&err);
		*ret = (long)v;
	}
	return 0;
}

static int update_status(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
			 int nargs)
{
	struct gf_db *db;
	long id;
	int rc;

	(void)sv;
	(void)ud;
	if ((rc = rollout_arg(cli, args, nargs, &id)) || (rc = cli_db(cli, &db)))
		return rc;
	return upd_print_rollout(cli, db, id, false);
}

static int update_resume(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
			 int nargs)
{
	const struct update_args *a = ud;
	struct upd u = {.cli = cli, .fan = {.cli = cli}};
	struct gf_rollout_resume rs = {0};
	struct gf_rollout_run run;
	struct gf_node *nodes = NULL;
	struct gf_err err = {0};
	struct gf_db *db;
	size_t nn = 0, left;
	long id;
	int rc;

	(void)sv;
	if ((rc = rollout_arg(cli, args, nargs, &id)) || (rc = cli_db(cli, &db)))
		return rc;
	/* The options and the catalog of the rollout, as they were. */
	if (gf_rollout_resume_load(db, id, &a->o, &rs, &err) < 0)
		return err.code == GF_E_NOTFOUND ? (cli_error("%s", err.msg), GF_EXIT_USAGE)
						 : cli_fail(&err);
	rc = cli_targets(cli, rs.names, (int)rs.r.n, false, &nodes, &nn);
	if (!rc && gf_rollout_match(&rs.r, nodes, nn, &err) < 0)
		rc = cli_fail(&err);
	left = gf_rollout_left(&rs.r);
	if (!rc && left > 1)
		rc = cli_guard(cli, "update resume", nodes, left, a->yes);
	if (!rc && gf_rollout_resume_claim(db, &rs.r, &err) < 0)
		rc = cli_fail(&err);
	if (!rc) {
		upd_run_init(&u, &rs.cat, &rs.o, nodes, nn, db, &run);
		rc = execute(cli, &run, &rs.r, true);
	}
	gf_nodes_free(nodes, nn);
	gf_rollout_resume_release(&rs);
	return rc;
}

static const struct cli_subverb subs[] = {
	/* A plan is what run would do: it takes run's command line as it is. */
	{"plan", update_run, NULL, 0},
	{"run", update_run, "run", 0},
	{"status", update_status, NULL, CLI_NO_OPTS},
	/* A rollout resumes with its own catalog and options; --reboot may be added. */
	{"resume", update_resume, NULL, CLI_OPT(U_YES) | CLI_OPT(U_REBOOT)},
};

int cmd_update(struct gf_cli *cli, int argc, char **argv)
{
	struct update_args a = {.o = {.canary = 1, .update_timeout = 1800, .readback_wait = 60}};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, update_opts, sizeof(update_opts) / sizeof(update_opts[0]),
		       on_opt, &a, &args, &nargs);
	if (rc)
		return rc;
	return cli_subverb_run(cli, subs, sizeof(subs) / sizeof(subs[0]), &a, args, nargs);
}
