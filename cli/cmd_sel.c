/* gpufleet sel: the BMCs' system event logs, listed and cleared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/bmc.h"
#include "cli/verbs.h"
#include "lib/buf.h"
#include "lib/util.h"

enum { L_SINCE, L_SEVERITY, L_LAST, L_LOG, L_YES, L_DRY_RUN };

static const struct cli_opt sel_opts[] = {
	[L_SINCE] =
		{{"since", required_argument, NULL, 0},
		 "DATE|DURATION",
		 "list: only entries from then on (2026-11-29, 2026-11-29T12:00Z, 90m, 12h, 7d)"},
	[L_SEVERITY] = {{"severity", required_argument, NULL, 0},
			"LEVELS",
			"list: only these severities: info, warning, critical"},
	[L_LAST] = {{"last", required_argument, NULL, 0},
		    "N",
		    "list: only the N most recent entries of each node"},
	[L_LOG] = {{"log", required_argument, NULL, 0},
		   "NAME",
		   "list: the Redfish log service to read (default: the system event log)"},
	[L_YES] = {{"yes", no_argument, NULL, 'y'},
		   NULL,
		   "clear: do it on more than one node without asking"},
	[L_DRY_RUN] = {{"dry-run", no_argument, NULL, 'n'},
		       NULL,
		       "clear: show what would be done, send nothing"},
};

struct sel_args {
	bool has_since;
	double since;        /* epoch seconds */
	unsigned severities; /* bit (1 << enum gf_severity); 0: all */
	bool has_last;
	unsigned long last;
	const char *log; /* Redfish LogService Id, NULL: the backend finds the SEL */
	bool yes, dry_run;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct sel_args *a = ud;
	struct gf_err err = {0};

	switch (idx) {
	case L_SINCE:
		if (cli_parse_since("--since", arg, &a->since))
			return GF_EXIT_USAGE;
		a->has_since = true;
		return 0;
	case L_SEVERITY:
		return cli_parse_severities("--severity", arg, &a->severities) ? GF_EXIT_USAGE : 0;
	case L_LAST:
		if (gf_parse_uint(arg, 1, 1000000, &a->last, &err, "--last") < 0)
			return cli_fail(&err);
		a->has_last = true;
		return 0;
	case L_LOG: a->log = arg; return 0;
	case L_YES: a->yes = true; return 0;
	case L_DRY_RUN: a->dry_run = true; return 0;
	default: return 0;
	}
}

static bool wanted(const struct sel_args *a, const struct gf_sel_entry *e)
{
	/* An entry without a date cannot be shown to be recent enough. */
	if (a->has_since && (!e->has_time || e->time < a->since))
		return false;
	return !a->severities || (a->severities & (1u << e->severity));
}

static int list_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		   const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct sel_args *a = vctx;
	struct gf_sel_list l = {0};
	size_t *keep, nkeep = 0, first = 0;
	json_t *arr;

	if (!be->sel_list)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "%s cannot read the event log",
				  be->name);
	if (be->sel_list(sess, &l, err) < 0)
		return GF_E_NODE;
	keep = gf_xcalloc(l.n ? l.n : 1, sizeof(*keep));
	for (size_t i = 0; i < l.n; i++)
		if (wanted(a, &l.v[i]))
			keep[nkeep++] = i;
	/* The log is in the order the BMC wrote it: the last N are the most recent. */
	if (a->has_last && nkeep > a->last)
		first = nkeep - a->last;
	arr = json_array();
	for (size_t k = first; k < nkeep; k++)
		json_array_append_new(arr, gf_sel_entry_to_json(&l.v[keep[k]]));
	json_object_set_new(slot->data, "entries", arr);
	free(keep);
	gf_sel_list_release(&l);
	return 0;
}

static int clear_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		    const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	if (!be->sel_clear)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s cannot clear the event log", be->name);
	slot->no_retry = true; /* from here on the BMC may have erased its log */
	if (be->sel_clear(sess, err) < 0)
		return GF_E_NODE;
	return 0;
}

static const struct gf_col list_cols[] = {
	{"id", "ID"},
	{"time|time_note", "TIME"},
	{"sensor", "SENSOR"},
	{"sensor_type", "TYPE"},
	{"severity", "SEVERITY"},
	{"direction", "DIRECTION"},
	{"event", "EVENT"},
};
static const struct gf_col clear_cols[] = {{"action", "ACTION"}};

/*
 * What sel clear checks before anything is sent: no list filters, then
 * --dry-run (rendered here: *@done) or the guard. Returns an exit code.
 */
static int clear_check(struct gf_cli *cli, const char *sub, struct sel_args *a,
		       const struct gf_node *nodes, size_t n, const char *what,
		       const struct gf_render_spec *spec, bool *done)
{
	if (a->has_since || a->severities || a->has_last || a->log) {
		cli_error("%s %s takes no --since, --severity, --last or --log (it clears the "
			  "system event log)",
			  cli->verb, sub);
		return GF_EXIT_USAGE;
	}
	if (a->dry_run) {
		*done = true;
		return cli_dry_run(cli, sub, nodes, n, spec);
	}
	return cli_guard(cli, what, nodes, n, a->yes);
}

/* sel list [FILTERS] TARGETS, sel clear TARGETS */
static int sel_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		   int nargs)
{
	struct sel_args *a = ud;
	const bool clear = strcmp(sv->name, "clear") == 0;
	struct gf_render_spec spec = {.cols = clear_cols, .ncols = 1};
	const struct gf_bmc_opts opts = {.log_name = a->log};
	struct cli_bmc_run run = {0};
	struct gf_node *nodes = NULL;
	bool done = false;
	size_t n = 0;
	char what[64];
	int rc;

	if (!clear) {
		spec = (struct gf_render_spec){.cols = list_cols,
					       .ncols = sizeof(list_cols) / sizeof(list_cols[0]),
					       .rows_key = "entries"};
		if (a->yes || a->dry_run) {
			cli_error("%s %s takes no --yes or --dry-run", cli->verb, sv->name);
			return GF_EXIT_USAGE;
		}
	}
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "%s %s", cli->verb, sv->name);
	if (clear)
		rc = clear_check(cli, sv->name, a, nodes, n, what, &spec, &done);
	if (!rc && !done) {
		run = (struct cli_bmc_run){.cli = cli,
					   .nodes = nodes,
					   .n = n,
					   .op = clear ? clear_op : list_op,
					   .ctx = a,
					   .spec = &spec,
					   .opts = &opts,
					   .action = clear ? sv->name : NULL,
					   .audit = clear ? what : NULL,
					   .filtered = !clear && (a->has_since || a->severities)};
		rc = cli_bmc_fanout(&run);
		cli_bmc_release(&run);
	}
	gf_nodes_free(nodes, n);
	return rc;
}

static const struct cli_subverb subs[] = {
	{"list", sel_run, NULL, 0},
	{"clear", sel_run, NULL, 0},
};

int cmd_sel(struct gf_cli *cli, int argc, char **argv)
{
	struct sel_args a = {0};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, sel_opts, sizeof(sel_opts) / sizeof(sel_opts[0]), on_opt,
		       &a, &args, &nargs);
	if (rc)
		return rc;
	return cli_subverb_run(cli, subs, sizeof(subs) / sizeof(subs[0]), &a, args, nargs);
}
