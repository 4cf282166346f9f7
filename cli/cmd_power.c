/* gpufleet power: status and control through each node's BMC. */
#include <stdlib.h>
#include <string.h>

#include "cli/bmc.h"
#include "cli/verbs.h"
#include "lib/buf.h"
#include "lib/util.h"

enum { P_YES, P_DRY_RUN, P_WAIT, P_WAIT_TIMEOUT, P_BATCH, P_INTERVAL };

static const struct cli_opt power_opts[] = {
	[P_YES] = {{"yes", no_argument, NULL, 'y'},
		   NULL,
		   "do it on more than one node without asking"},
	[P_DRY_RUN] = {{"dry-run", no_argument, NULL, 'n'},
		       NULL,
		       "show what would be done, send nothing"},
	[P_WAIT] = {{"wait", no_argument, NULL, 'w'}, NULL, "poll until the power state is reached"},
	[P_WAIT_TIMEOUT] = {{"wait-timeout", required_argument, NULL, 0},
			    "SECONDS",
			    "how long --wait polls (default 300)"},
	[P_BATCH] = {{"batch", required_argument, NULL, 0},
		     "N",
		     "start at most N nodes per --interval"},
	[P_INTERVAL] = {{"interval", required_argument, NULL, 0},
			"SECONDS",
			"time between batches (default 5)"},
};

struct power_args {
	bool yes, dry_run, wait;
	double wait_timeout;
	unsigned long batch;
	double interval;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct power_args *a = ud;
	struct gf_err err = {0};

	switch (idx) {
	case P_YES: a->yes = true; return 0;
	case P_DRY_RUN: a->dry_run = true; return 0;
	case P_WAIT: a->wait = true; return 0;
	case P_WAIT_TIMEOUT:
		if (gf_parse_seconds(arg, 1, 86400, &a->wait_timeout, &err, "--wait-timeout") < 0)
			return cli_fail(&err);
		return 0;
	case P_BATCH:
		if (gf_parse_uint(arg, 1, 100000, &a->batch, &err, "--batch") < 0)
			return cli_fail(&err);
		return 0;
	case P_INTERVAL:
		if (gf_parse_seconds(arg, 0, 3600, &a->interval, &err, "--interval") < 0)
			return cli_fail(&err);
		return 0;
	default: return 0;
	}
}

/* What a sub-verb does and what state --wait waits for. */
struct power_sub {
	bool status; /* read only */
	enum gf_power_op op;
	enum gf_power reach; /* for --wait */
	bool destructive;    /* needs --yes on more than one node */
};

/* Poll until the power state is @want or @until (monotonic) passes. */
static int wait_for(const struct gf_backend *be, void *sess, const struct gf_node *n,
		    enum gf_power want, double until, enum gf_power *ret, struct gf_err *err)
{
	enum gf_power now = GF_POWER_UNKNOWN;

	for (;;) {
		int rc = be->power_get(sess, &now, err);

		if (rc < 0)
			return rc;
		if (now == want)
			break;
		if (gf_exec_cancelled())
			return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
					  "interrupted while node '%s' was still %s (waiting for %s)",
					  n->name, gf_power_name(now), gf_power_name(want));
		if (gf_monotime() + 1.0 > until)
			return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					  "node '%s' did not reach power %s in time (still %s)",
					  n->name, gf_power_name(want), gf_power_name(now));
		/* A BMC is polled, not pushed: once a second is what ipmipower does too. */
		gf_cancel_sleep_until(gf_exec_cancel_flag(), gf_monotime() + 1.0);
	}
	*ret = now;
	return 0;
}

struct power_ctx {
	const char *name;
	const struct power_sub *sub;
	const struct power_args *args;
};

static int power_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		    const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct power_ctx *ctx = vctx;
	const struct power_sub *sub = ctx->sub;
	enum gf_power st;

	if (sub->status ? !be->power_get : !be->power_set)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "%s cannot do power %s",
				  be->name, ctx->name);
	if (sub->status) {
		if (be->power_get(sess, &st, err) < 0)
			return GF_E_NODE;
		json_object_set_new(slot->data, "power", json_string(gf_power_name(st)));
		return 0;
	}
	slot->no_retry = true; /* from here on the BMC may have acted */
	if (be->power_set(sess, sub->op, err) < 0)
		return GF_E_NODE;
	if (ctx->args->wait && sub->reach != GF_POWER_UNKNOWN) {
		double t0 = gf_monotime();

		if (wait_for(be, sess, n, sub->reach, t0 + ctx->args->wait_timeout, &st, err) < 0)
			return GF_E_NODE;
		json_object_set_new(slot->data, "power", json_string(gf_power_name(st)));
		json_object_set_new(slot->data, "waited",
				    json_real((double)(long)((gf_monotime() - t0) * 10) / 10));
	}
	return 0;
}

static const struct gf_col status_cols[] = {{"power", "POWER"}};
static const struct gf_col action_cols[] = {{"action", "ACTION"}, {"power", "POWER"}};

static int power_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		     int nargs)
{
	const struct power_args *a = ud;
	const struct power_sub *sub = sv->data;
	struct gf_node *nodes = NULL;
	struct gf_render_spec spec = {0};
	struct cli_bmc_run run = {0};
	struct power_ctx ctx;
	char what[64];
	int rc;
	size_t n = 0;

	if (sub->status && (a->wait || a->batch || a->dry_run)) {
		cli_error("%s %s takes no --wait, --batch or --dry-run", cli->verb, sv->name);
		return GF_EXIT_USAGE;
	}
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	if (sub->destructive && !a->dry_run) {
		snprintf(what, sizeof(what), "%s %s", cli->verb, sv->name);
		rc = cli_guard(cli, what, nodes, n, a->yes);
		if (rc)
			goto out;
	}
	spec.cols = sub->status ? status_cols : action_cols;
	spec.ncols = sub->status ? 1 : (a->wait ? 2 : 1);
	if (a->dry_run) {
		rc = cli_dry_run(cli, sv->name, nodes, n, &spec);
		goto out;
	}
	ctx = (struct power_ctx){sv->name, sub, a};
	snprintf(what, sizeof(what), "%s %s", cli->verb, sv->name);
	run = (struct cli_bmc_run){
		.cli = cli,
		.nodes = nodes,
		.n = n,
		.op = power_op,
		.ctx = &ctx,
		.spec = &spec,
		.batch = (unsigned)a->batch,
		.interval = a->interval,
		.action = sub->status ? NULL : sv->name,
		.audit = sub->status ? NULL : what,
		.opts = sub->status ? &cli_bmc_one_read : NULL, /* its Systems, expanded */
		.reads_power = sub->status,
	};
	rc = cli_bmc_fanout(&run);
out:
	cli_bmc_release(&run);
	gf_nodes_free(nodes, n);
	return rc;
}

static const struct cli_subverb subs[] = {
	{"status", power_run,
	 &(const struct power_sub){true, GF_POWER_OP_ON, GF_POWER_UNKNOWN, false}, 0},
	{"on", power_run, &(const struct power_sub){false, GF_POWER_OP_ON, GF_POWER_ON, false}, 0},
	{"off", power_run, &(const struct power_sub){false, GF_POWER_OP_OFF, GF_POWER_OFF, true},
	 0},
	{"cycle", power_run, &(const struct power_sub){false, GF_POWER_OP_CYCLE, GF_POWER_ON, true},
	 0},
	{"reset", power_run, &(const struct power_sub){false, GF_POWER_OP_RESET, GF_POWER_ON, true},
	 0},
	{"soft", power_run, &(const struct power_sub){false, GF_POWER_OP_SOFT, GF_POWER_OFF, true},
	 0},
	{"nmi", power_run,
	 &(const struct power_sub){false, GF_POWER_OP_NMI, GF_POWER_UNKNOWN, true}, 0},
};

int cmd_power(struct gf_cli *cli, int argc, char **argv)
{
	struct power_args a = {.wait_timeout = 300, .interval = 5};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, power_opts, sizeof(power_opts) / sizeof(power_opts[0]),
		       on_opt, &a, &args, &nargs);
	if (rc)
		return rc;
	return cli_subverb_run(cli, subs, sizeof(subs) / sizeof(subs[0]), &a, args, nargs);
}
