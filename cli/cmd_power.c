/* gpufleet power: status and control through each node's BMC. */
#include <stdlib.h>
#include <string.h>

#include "cli/verbs.h"
#include "ipmi/ipmi.h"
#include "lib/buf.h"
#include "lib/nodeset.h"
#include "lib/util.h"

enum { P_YES, P_DRY_RUN, P_WAIT, P_WAIT_TIMEOUT, P_BATCH, P_INTERVAL };

static const struct cli_opt power_opts[] = {
	[P_YES] = {{"yes", no_argument, NULL, 'y'}, NULL, "do it on more than one node without asking"},
	[P_DRY_RUN] = {{"dry-run", no_argument, NULL, 'n'}, NULL, "show what would be done, send nothing"},
	[P_WAIT] = {{"wait", no_argument, NULL, 'w'}, NULL, "poll until the power state is reached"},
	[P_WAIT_TIMEOUT] = {{"wait-timeout", required_argument, NULL, 0}, "SECONDS", "how long --wait polls (default 300)"},
	[P_BATCH] = {{"batch", required_argument, NULL, 0}, "N", "start at most N nodes per --interval"},
	[P_INTERVAL] = {{"interval", required_argument, NULL, 0}, "SECONDS", "time between batches (default 5)"},
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
	default:
		return 0;
	}
}

/* The subverbs: what each does and what state --wait waits for. */
struct power_sub {
	const char *name;
	bool status;             /* read only */
	enum gf_power_op op;
	enum gf_power reach;     /* for --wait */
	bool destructive;        /* needs --yes on more than one node */
};

static const struct power_sub subs[] = {
	{"cycle", false, GF_POWER_OP_CYCLE, GF_POWER_ON, true},
	{"nmi", false, GF_POWER_OP_NMI, GF_POWER_UNKNOWN, true},
	{"off", false, GF_POWER_OP_OFF, GF_POWER_OFF, true},
	{"on", false, GF_POWER_OP_ON, GF_POWER_ON, false},
	{"reset", false, GF_POWER_OP_RESET, GF_POWER_ON, true},
	{"soft", false, GF_POWER_OP_SOFT, GF_POWER_OFF, true},
	{"status", true, GF_POWER_OP_ON, GF_POWER_UNKNOWN, false},
};

struct power_ctx {
	const struct gf_node *nodes;
	const struct gf_profile **profs;  /* per node, resolved in the main thread */
	const struct power_sub *sub;
	const struct power_args *args;
};

/* The backend for a node's protocol; NULL with @err set when there is none. */
static const struct gf_backend *backend_for(const struct gf_node *n, struct gf_err *err)
{
	switch (n->protocol) {
	case GF_PROTO_IPMI:
	case GF_PROTO_AUTO: /* until Redfish lands, auto means IPMI */
		return &gf_ipmi_backend;
	case GF_PROTO_REDFISH:
	default:
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "node '%s' uses redfish, which this build does not speak yet", n->name);
		return NULL;
	}
}

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
		if (gf_monotime() + 1.0 > until)
			return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					  "node '%s' did not reach power %s in time (still %s)",
					  n->name, gf_power_name(want), gf_power_name(now));
		/* A BMC is polled, not pushed: once a second is what ipmipower does too. */
		gf_sleep_until(gf_monotime() + 1.0);
	}
	*ret = now;
	return 0;
}

static void power_task(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	const struct power_ctx *ctx = vctx;
	const struct gf_node *n = &ctx->nodes[i];
	const struct power_sub *sub = ctx->sub;
	struct gf_bmc_target t = {n->name, n->bmc, n->bmc_port, ctx->profs[i], deadline};
	const struct gf_backend *be = NULL;
	struct gf_err err = {0};
	enum gf_power st;
	void *sess = NULL;

	slot->data = json_object();
	if (!sub->status)
		json_object_set_new(slot->data, "action", json_string(sub->name));
	if (!n->bmc) {
		gf_err_set(&err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has no BMC", n->name);
		goto fail;
	}
	be = backend_for(n, &err);
	if (!be)
		goto fail;
	if (sub->status ? !be->power_get : !be->power_set) {
		gf_err_set(&err, GF_E_NODE, GF_EK_UNSUPPORTED, "%s cannot do power %s", be->name,
			   sub->name);
		goto fail;
	}
	if (be->open(&t, &sess, &err) < 0)
		goto fail;
	if (sub->status) {
		if (be->power_get(sess, &st, &err) < 0)
			goto fail;
		json_object_set_new(slot->data, "power", json_string(gf_power_name(st)));
	} else {
		slot->no_retry = true; /* from here on the BMC may have acted */
		if (be->power_set(sess, sub->op, &err) < 0)
			goto fail;
		if (ctx->args->wait && sub->reach != GF_POWER_UNKNOWN) {
			double t0 = gf_monotime();

			if (wait_for(be, sess, n, sub->reach, t0 + ctx->args->wait_timeout, &st, &err) < 0)
				goto fail;
			json_object_set_new(slot->data, "power", json_string(gf_power_name(st)));
			json_object_set_new(slot->data, "waited",
					    json_real((double)(long)((gf_monotime() - t0) * 10) / 10));
		}
	}
	be->close(sess);
	slot->ok = true;
	return;
fail:
	if (sess)
		be->close(sess);
	gf_result_fail(slot, &err);
}

/* One profile resolution per distinct name, in the main thread. */
static int resolve_profiles(struct gf_cli *cli, const struct gf_node *nodes, size_t n,
			    const struct gf_profile ***ret)
{
	const struct gf_profile **profs = gf_xcalloc(n ? n : 1, sizeof(*profs));
	struct gf_err err = {0};
	int rc = cli_creds(cli);

	if (rc) {
		free(profs);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (!nodes[i].bmc)
			continue;
		if (gf_creds_resolve(&cli->creds, nodes[i].profile, &profs[i], &err) < 0) {
			free(profs);
			return cli_fail(&err);
		}
	}
	*ret = profs;
	return 0;
}

static int audit(struct gf_cli *cli, const struct power_sub *sub, const struct gf_node *nodes,
		 size_t n, const struct gf_result *slots)
{
	struct gf_audit *rows = gf_xcalloc(n ? n : 1, sizeof(*rows));
	const char *user = gf_invoking_user();
	struct gf_err err = {0};
	struct gf_db *db;
	char verb[64];
	int rc;

	snprintf(verb, sizeof(verb), "power %s", sub->name);
	for (size_t i = 0; i < n; i++) {
		rows[i].time = slots[i].t_start;
		rows[i].user = user;
		rows[i].verb = verb;
		rows[i].node = nodes[i].name;
		rows[i].result = slots[i].ok ? "ok" : gf_errkind_name(slots[i].err.kind);
		rows[i].detail = slots[i].ok ? NULL : slots[i].err.msg;
	}
	rc = cli_db(cli, &db);
	if (!rc && gf_db_audit_add(db, rows, n, &err) < 0) {
		cli_error("the audit log could not be written: %s", err.msg);
		rc = GF_EXIT_FAILED;
	}
	free(rows);
	return rc;
}

static const struct gf_col status_cols[] = {{"power", "POWER"}};
static const struct gf_col action_cols[] = {{"action", "ACTION"}, {"power", "POWER"}};

int cmd_power(struct gf_cli *cli, int argc, char **argv)
{
	struct power_args a = {.wait_timeout = 300, .interval = 5};
	const struct power_sub *sub = NULL;
	const struct gf_profile **profs = NULL;
	struct gf_node *nodes = NULL;
	struct gf_result *slots = NULL;
	struct gf_exec_opts eo;
	struct gf_render_spec spec = {0};
	struct cli_render r = {0};
	struct gf_err err = {0};
	char **args;
	int nargs, rc;
	size_t n = 0;

	rc = cli_parse(cli, argc, argv, power_opts, sizeof(power_opts) / sizeof(power_opts[0]),
		       on_opt, &a, &args, &nargs);
	if (rc)
		return rc;
	if (nargs < 1) {
		cli_error("power needs a subverb: status, on, off, cycle, reset, soft, nmi");
		return GF_EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (strcmp(subs[i].name, args[0]) == 0)
			sub = &subs[i];
	if (!sub) {
		cli_error("unknown subverb 'power %s' (status, on, off, cycle, reset, soft, nmi)", args[0]);
		return GF_EXIT_USAGE;
	}
	if (sub->status && (a.wait || a.batch || a.dry_run)) {
		cli_error("power status takes no --wait, --batch or --dry-run");
		return GF_EXIT_USAGE;
	}
	rc = cli_targets(cli, args + 1, nargs - 1, false, &nodes, &n);
	if (rc)
		return rc;
	if (n == 0) {
		cli_error("the targets name no node");
		rc = GF_EXIT_USAGE;
		goto out;
	}
	if (sub->destructive && n > 1 && !a.yes && !a.dry_run) {
		char q[256];
		char *set;
		const char **names = gf_xcalloc(n, sizeof(*names));

		for (size_t i = 0; i < n; i++)
			names[i] = nodes[i].name;
		set = gf_nodeset_collapse(names, n);
		free(names);
		snprintf(q, sizeof(q), "power %s %zu nodes (%s)?", sub->name, n, set);
		if (!cli_confirm(q)) {
			cli_error("refusing to power %s %zu nodes (%s) without --yes", sub->name, n, set);
			free(set);
			rc = GF_EXIT_REFUSED;
			goto out;
		}
		free(set);
	}
	rc = resolve_profiles(cli, nodes, n, &profs);
	if (rc)
		goto out;

	spec.cols = sub->status ? status_cols : action_cols;
	spec.ncols = sub->status ? 1 : (a.wait ? 2 : 1);
	r = (struct cli_render){.cli = cli, .nodes = nodes, .n = n, .spec = &spec, .show_bmc = true};
	slots = gf_xcalloc(n, sizeof(*slots));
	if (a.dry_run) {
		for (size_t i = 0; i < n; i++) {
			gf_result_init(&slots[i]);
			slots[i].ok = true;
			slots[i].data = json_pack("{s:s, s:b}", "action", sub->name, "dry_run", 1);
			cli_render_done(&r, i, &slots[i]);
		}
		rc = cli_render_finish(&r, slots);
		goto out;
	}

	struct power_ctx ctx = {nodes, profs, sub, &a};

	cli_exec_opts(cli, &eo);
	if (a.batch) {
		eo.batch = (unsigned)a.batch;
		eo.interval = a.interval;
	}
	if (gf_exec_run(&eo, n, power_task, &ctx, slots, cli_render_done, &r, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	rc = cli_render_finish(&r, slots);
	if (!sub->status) {
		int arc = audit(cli, sub, nodes, n, slots);

		if (arc && !rc)
			rc = arc;
	}
out:
	if (slots)
		for (size_t i = 0; i < n; i++)
			gf_result_release(&slots[i]);
	free(slots);
	free(profs);
	gf_nodes_free(nodes, n);
	return rc;
}
