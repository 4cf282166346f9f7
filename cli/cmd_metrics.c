/* gpufleet metrics: the Prometheus text of each node's last sweep and its drift. */
#include <stdlib.h>
#include <string.h>

#include "cli/inv.h"
#include "cli/verbs.h"
#include "inventory/metrics.h"
#include "lib/file.h"

enum { M_OUTPUT };

static const struct cli_opt metrics_opts[] = {
	[M_OUTPUT] = {{"output", required_argument, NULL, 0},
		      "FILE",
		      "write FILE atomically (for node_exporter's textfile collector), not stdout"},
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	const char **output = ud;

	if (idx == M_OUTPUT)
		*output = arg;
	return 0;
}

int inv_metrics_write(struct gf_cli *cli, const char *const *nodes, size_t nnodes, const char *path,
		      size_t *ret_n)
{
	struct gf_buf b = GF_BUF_INIT;
	struct gf_err err = {0};
	struct gf_db *db;
	size_t n = 0;
	int rc = cli_db(cli, &db);

	if (rc)
		return rc;
	if (gf_metrics_build(db, nodes, nnodes, &b, &n, &err) < 0 ||
	    (path && gf_file_replace(path, gf_buf_str(&b), b.len, &err) < 0)) {
		gf_buf_release(&b);
		return cli_fail(&err);
	}
	if (!path) {
		fwrite(gf_buf_str(&b), 1, b.len, stdout);
		fflush(stdout);
	}
	gf_buf_release(&b);
	if (ret_n)
		*ret_n = n;
	return 0;
}

int cmd_metrics(struct gf_cli *cli, int argc, char **argv)
{
	struct gf_nodeset targets = GF_NODESET_INIT;
	const char *output = NULL;
	bool every = true;
	size_t n = 0;
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, metrics_opts,
		       sizeof(metrics_opts) / sizeof(metrics_opts[0]), on_opt, &output, &args,
		       &nargs);
	if (rc)
		return rc;
	if (cli->format != GF_FMT_TABLE && cli->format != GF_FMT_PROMETHEUS) {
		cli_error("metrics prints the Prometheus text format only");
		return GF_EXIT_USAGE;
	}
	rc = inv_targets(cli, args, nargs, &targets, &every);
	if (rc)
		goto out;
	rc = inv_metrics_write(cli, (const char *const *)targets.names, targets.n, output, &n);
	if (rc)
		goto out;
	if (!every && n < targets.n) {
		cli_warn(cli, "%zu of the %zu TARGETS have not been swept (see 'gpufleet sweep')",
			 targets.n - n, targets.n);
		rc = GF_EXIT_FAILED;
	} else if (every && n == 0) {
		cli_warn(cli, "the inventory holds no sweep yet (see 'gpufleet sweep')");
	}
out:
	gf_nodeset_release(&targets);
	return rc;
}
