/* gpufleet report: the inventory as one self-contained HTML page. */
#include <stdlib.h>
#include <string.h>

#include "cli/inv.h"
#include "cli/verbs.h"
#include "inventory/report.h"
#include "lib/file.h"

enum { R_HTML, R_BASELINE, R_SINCE };

static const struct cli_opt report_opts[] = {
	[R_HTML] = {{"html", required_argument, NULL, 0},
		    "FILE",
		    "write the report to FILE (replaced atomically); required"},
	[R_BASELINE] =
		{{"baseline", required_argument, NULL, 0},
		 "FILE",
		 "colour what differs from a baseline file, not from the majority of the model"},
	[R_SINCE] = {{"since", required_argument, NULL, 0},
		     "WHEN",
		     "colour what changed since sweep N, a date or a duration ago (7d)"},
};

struct report_args {
	const char *html, *baseline, *since;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct report_args *a = ud;

	if (idx == R_HTML)
		a->html = arg;
	else if (idx == R_BASELINE)
		a->baseline = arg;
	else if (idx == R_SINCE)
		a->since = arg;
	return 0;
}

int cmd_report(struct gf_cli *cli, int argc, char **argv)
{
	struct report_args a = {0};
	struct gf_nodeset targets = GF_NODESET_INIT;
	struct gf_report_query q = {0};
	struct gf_store_query since = {0};
	struct gf_baseline *bl = NULL;
	struct gf_sweep_info *all = NULL;
	struct gf_report *r = NULL;
	struct gf_buf page = GF_BUF_INIT;
	struct gf_err err = {0};
	json_t *since_desc = NULL;
	struct gf_db *db;
	size_t nall = 0, missing = 0;
	bool every = true;
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, report_opts, sizeof(report_opts) / sizeof(report_opts[0]),
		       on_opt, &a, &args, &nargs);
	if (rc)
		goto out;
	if (!a.html) {
		cli_error("report needs --html FILE");
		rc = GF_EXIT_USAGE;
		goto out;
	}
	if (a.baseline && a.since) {
		cli_error("give one of --baseline, --since");
		rc = GF_EXIT_USAGE;
		goto out;
	}
	rc = inv_open(cli, args, nargs, false, &targets, &every, &db);
	if (rc)
		goto out;
	if (!every) {
		q.nodes = (const char *const *)targets.names;
		q.nnodes = targets.n;
	}
	if (a.baseline) {
		if (inv_load_baseline(db, a.baseline, NULL, &bl, &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
		q.mode = GF_DRIFT_BASELINE;
		q.baseline = bl;
	} else if (a.since) {
		if (gf_store_sweeps(db, &all, &nall, &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
		rc = inv_since_bound(a.since, all, nall, &since, &since_desc);
		if (rc)
			goto out;
		q.mode = GF_DRIFT_SINCE;
		q.since = &since;
		q.since_text = a.since;
	}
	if (gf_report_load(db, &q, &r, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	gf_report_html(r, &page);
	if (gf_file_replace(a.html, gf_buf_str(&page), page.len, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	missing = every ? 0 : targets.n - r->nodes;
	if (!cli->quiet)
		printf("report of %zu node%s written to %s (%zu bytes): %zu with drift, %zu partial,"
		       " %zu failed\n",
		       r->nodes, r->nodes == 1 ? "" : "s", a.html, page.len, r->drifting,
		       r->partial, r->failed);
	if (missing) {
		cli_warn(cli, "%zu of the %zu TARGETS have not been swept (see 'gpufleet sweep')",
			 missing, targets.n);
		rc = GF_EXIT_FAILED;
	} else if (r->nodes == 0) {
		cli_warn(cli, "the inventory holds no sweep yet (see 'gpufleet sweep')");
	}
out:
	gf_buf_release(&page);
	gf_report_free(r);
	json_decref(since_desc);
	gf_baseline_free(bl);
	free(all);
	gf_nodeset_release(&targets);
	return rc;
}
