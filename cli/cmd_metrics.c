/* gpufleet metrics: the Prometheus text of each node's last sweep and its drift. */
#include <stdlib.h>
#include <string.h>

#include "cli/inv.h"
#include "cli/verbs.h"
#include "inventory/metrics.h"
#include "lib/constate.h"
#include "lib/file.h"
#include "lib/util.h"

enum { M_OUTPUT, M_CONSOLE_DIR };

static const struct cli_opt metrics_opts[] = {
	[M_OUTPUT] = {{"output", required_argument, NULL, 0},
		      "FILE",
		      "write FILE atomically (for node_exporter's textfile collector), not stdout"},
	[M_CONSOLE_DIR] = {{"console-dir", required_argument, NULL, 0},
			   "DIR",
			   "add the consoles 'console log --dir DIR' logs (default "
			   "$GPUFLEET_CONSOLE_DIR)"},
};

struct metrics_args {
	const char *output;
	const char *console_dir;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct metrics_args *a = ud;

	if (idx == M_OUTPUT)
		a->output = arg;
	else if (idx == M_CONSOLE_DIR)
		a->console_dir = arg;
	return 0;
}

/*
 * The console families of what `console log` keeps in @dir (lib/constate.h):
 * none logged there yet is a logger that is down, not an error; a state
 * file that cannot be read is a warning and GF_EXIT_FAILED (the other
 * metrics still go out).
 */
static int console_metrics(struct gf_cli *cli, const char *dir, const char *const *nodes,
			   size_t nnodes, struct gf_buf *out)
{
	struct gf_constate st = {0};
	struct gf_err err = {0};
	int rc = gf_constate_read(dir, &st, &err);

	gf_constate_prom(rc == 0 ? &st : NULL, gf_walltime(), nodes, nnodes, out);
	gf_constate_release(&st);
	if (rc < 0 && rc != GF_E_NOTFOUND) {
		cli_warn(cli, "%s", err.msg);
		return GF_EXIT_FAILED;
	}
	return 0;
}

int inv_metrics_write(struct gf_cli *cli, const char *const *nodes, size_t nnodes, const char *path,
		      size_t *ret_n)
{
	return inv_metrics_write_with(cli, nodes, nnodes, path, getenv("GPUFLEET_CONSOLE_DIR"),
				      ret_n);
}

int inv_metrics_write_with(struct gf_cli *cli, const char *const *nodes, size_t nnodes,
			   const char *path, const char *console_dir, size_t *ret_n)
{
	struct gf_buf b = GF_BUF_INIT;
	struct gf_err err = {0};
	struct gf_db *db;
	size_t n = 0;
	int crc = 0, rc = cli_db(cli, &db);

	if (rc)
		return rc;
	if (gf_metrics_build(db, nodes, nnodes, &b, &n, &err) == 0 && console_dir && *console_dir)
		crc = console_metrics(cli, console_dir, nodes, nnodes, &b);
	if (err.code || (path && gf_file_replace(path, gf_buf_str(&b), b.len, &err) < 0)) {
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
	return crc;
}

int cmd_metrics(struct gf_cli *cli, int argc, char **argv)
{
	struct gf_nodeset targets = GF_NODESET_INIT;
	struct metrics_args a = {.output = NULL, .console_dir = getenv("GPUFLEET_CONSOLE_DIR")};
	bool every = true;
	size_t n = 0;
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, metrics_opts,
		       sizeof(metrics_opts) / sizeof(metrics_opts[0]), on_opt, &a, &args, &nargs);
	if (rc)
		return rc;
	if (cli->format != GF_FMT_TABLE && cli->format != GF_FMT_PROMETHEUS) {
		cli_error("metrics prints the Prometheus text format only");
		return GF_EXIT_USAGE;
	}
	rc = inv_targets(cli, args, nargs, &targets, &every);
	if (rc)
		goto out;
	rc = inv_metrics_write_with(cli, (const char *const *)targets.names, targets.n, a.output,
				    a.console_dir, &n);
	if (rc && rc != GF_EXIT_FAILED)
		goto out;
	if (!every && n < targets.n) {
		cli_warn(cli, "%zu of the %zu TARGETS have not been swept (see 'gpufleet sweep')",
			 targets.n - n, targets.n);
		rc = GF_EXIT_FAILED;
	} else if (every && n == 0 && !(a.console_dir && *a.console_dir)) {
		cli_warn(cli, "the inventory holds no sweep yet (see 'gpufleet sweep')");
	}
out:
	gf_nodeset_release(&targets);
	return rc;
}
