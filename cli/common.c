#include "cli/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/nodeset.h"
#include "lib/util.h"

/* Global options: accepted before and after the verb. Sorted by long name. */
enum {
	OPT_COLOR = 1000, OPT_CREDENTIALS, OPT_DB, OPT_FANOUT, OPT_FORMAT, OPT_NO_PROGRESS,
	OPT_PROFILE, OPT_PROTOCOL, OPT_RETRIES, OPT_TIMEOUT, OPT_CACERT, OPT_INSECURE, OPT_TLS_PIN,
};

const struct cli_opt cli_global_opts[] = {
	{{"cacert", required_argument, NULL, OPT_CACERT}, "FILE", "CA bundle that signs the BMC certificates (Redfish)"},
	{{"collapse", no_argument, NULL, 'C'}, NULL, "fold identical results into node[1-4,7] ranges"},
	{{"color", required_argument, NULL, OPT_COLOR}, "WHEN", "auto, always or never"},
	{{"credentials", required_argument, NULL, OPT_CREDENTIALS}, "FILE", "credentials file (mode 0600)"},
	{{"db", required_argument, NULL, OPT_DB}, "PATH", "inventory database"},
	{{"fanout", required_argument, NULL, OPT_FANOUT}, "N", "nodes worked on at once (1-1024, default 64)"},
	{{"format", required_argument, NULL, OPT_FORMAT}, "FMT", "table, json, ndjson or csv"},
	{{"help", no_argument, NULL, 'h'}, NULL, "show help"},
	{{"hosts", required_argument, NULL, 'H'}, "HOSTS", "ad-hoc BMC hosts instead of registered nodes"},
	{{"insecure", no_argument, NULL, OPT_INSECURE}, NULL, "do not check BMC certificates (Redfish; warns)"},
	{{"no-progress", no_argument, NULL, OPT_NO_PROGRESS}, NULL, "no progress bar on stderr"},
	{{"profile", required_argument, NULL, OPT_PROFILE}, "NAME", "credentials profile for -H hosts"},
	{{"protocol", required_argument, NULL, OPT_PROTOCOL}, "PROTO", "ipmi, redfish or auto, for -H hosts"},
	{{"quiet", no_argument, NULL, 'q'}, NULL, "print only results and errors"},
	{{"retries", required_argument, NULL, OPT_RETRIES}, "N", "extra attempts after a timeout (default 1)"},
	{{"timeout", required_argument, NULL, OPT_TIMEOUT}, "SECONDS", "deadline per node and attempt (default 10)"},
	{{"tls-pin", required_argument, NULL, OPT_TLS_PIN}, "new", "pin BMC certificates on first use (Redfish)"},
	{{"verbose", no_argument, NULL, 'v'}, NULL, "say more on stderr"},
	{{"version", no_argument, NULL, 'V'}, NULL, "show the version"},
};
const size_t cli_nglobal_opts = sizeof(cli_global_opts) / sizeof(cli_global_opts[0]);

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("gpufleet: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_warn(const struct gf_cli *cli, const char *fmt, ...)
{
	va_list ap;

	if (cli && cli->quiet)
		return;
	fputs("gpufleet: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_fail(const struct gf_err *err)
{
	cli_error("%s", err->msg[0] ? err->msg : "unknown error");
	switch (err->code) {
	case GF_E_USAGE:
	case GF_E_CONFIG:
		return GF_EXIT_USAGE;
	default:
		return GF_EXIT_FAILED;
	}
}

static void print_opt(FILE *f, const struct cli_opt *o)
{
	char left[64];
	int n;

	if (o->lo.val < 256 && o->lo.val > ' ')
		n = snprintf(left, sizeof(left), "-%c, --%s", o->lo.val, o->lo.name);
	else
		n = snprintf(left, sizeof(left), "    --%s", o->lo.name);
	if (o->arg && n > 0 && (size_t)n < sizeof(left))
		snprintf(left + n, sizeof(left) - (size_t)n, " %s", o->arg);
	fprintf(f, "  %-28s %s\n", left, o->help);
}

void cli_print_global_opts(FILE *f);
void cli_print_global_opts(FILE *f)
{
	fputs("\nGlobal options:\n", f);
	for (size_t i = 0; i < cli_nglobal_opts; i++)
		print_opt(f, &cli_global_opts[i]);
}

/* Verb help text: set by the verb table in main.c. */
const char *cli_verb_usage(const char *verb);

static void verb_help(const struct gf_cli *cli, const struct cli_opt *opts, size_t nopts)
{
	printf("%s", cli_verb_usage(cli->verb));
	if (nopts) {
		printf("\nOptions:\n");
		for (size_t i = 0; i < nopts; i++)
			print_opt(stdout, &opts[i]);
	}
	cli_print_global_opts(stdout);
}

static int global_opt(struct gf_cli *cli, int c, const char *arg)
{
	struct gf_err err = {0};
	unsigned long v;

	switch (c) {
	case 'C': cli->collapse = true; return 0;
	case 'q': cli->quiet = true; return 0;
	case 'v': cli->verbose++; return 0;
	case 'H': cli->hosts = arg; return 0;
	case OPT_NO_PROGRESS: cli->progress = false; return 0;
	case OPT_DB: cli->db_path = arg; return 0;
	case OPT_CACERT: cli->cacert = arg; return 0;
	case OPT_INSECURE: cli->insecure = true; return 0;
	case OPT_TLS_PIN:
		if (strcmp(arg, "new") != 0) {
			cli_error("unknown --tls-pin '%s' (new: pin certificates on first use)", arg);
			return GF_EXIT_USAGE;
		}
		cli->tls_pin_new = true;
		return 0;
	case OPT_PROFILE: cli->profile = arg; return 0;
	case OPT_CREDENTIALS:
		cli->creds_path = arg;
		cli->creds_explicit = true;
		return 0;
	case OPT_PROTOCOL: {
		enum gf_proto p;

		if (gf_proto_parse(arg, &p, &err) < 0)
			return cli_fail(&err);
		cli->protocol = arg;
		return 0;
	}
	case OPT_FORMAT:
		if (gf_format_parse(arg, &cli->format, &err) < 0)
			return cli_fail(&err);
		return 0;
	case OPT_COLOR:
		if (strcmp(arg, "always") == 0)
			cli->color = true;
		else if (strcmp(arg, "never") == 0)
			cli->color = false;
		else if (strcmp(arg, "auto") == 0)
			cli->color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
		else {
			cli_error("unknown --color '%s' (auto, always, never)", arg);
			return GF_EXIT_USAGE;
		}
		return 0;
	case OPT_FANOUT:
		if (gf_parse_uint(arg, 1, 1024, &v, &err, "--fanout") < 0)
			return cli_fail(&err);
		cli->fanout = (unsigned)v;
		return 0;
	case OPT_RETRIES:
		if (gf_parse_uint(arg, 0, 10, &v, &err, "--retries") < 0)
			return cli_fail(&err);
		cli->retries = (unsigned)v;
		return 0;
	case OPT_TIMEOUT:
		if (gf_parse_seconds(arg, 0.1, 3600, &cli->timeout, &err, "--timeout") < 0)
			return cli_fail(&err);
		return 0;
	default:
		return GF_EXIT_USAGE;
	}
}

int cli_global_opt(struct gf_cli *cli, int c, const char *arg);
int cli_global_opt(struct gf_cli *cli, int c, const char *arg)
{
	return global_opt(cli, c, arg);
}

int cli_parse(struct gf_cli *cli, int argc, char **argv, const struct cli_opt *opts, size_t nopts,
	      int (*on_opt)(void *ud, size_t idx, const char *arg), void *ud, char ***ret_args,
	      int *ret_nargs)
{
	size_t nall = cli_nglobal_opts + nopts;
	struct option *lo = gf_xcalloc(nall + 1, sizeof(*lo));
	struct gf_buf shorts = GF_BUF_INIT;
	int rc = 0, c, idx;

	gf_buf_adds(&shorts, "+:");
	for (size_t i = 0; i < nall; i++) {
		const struct cli_opt *o = i < cli_nglobal_opts ? &cli_global_opts[i]
							       : &opts[i - cli_nglobal_opts];

		lo[i] = o->lo;
		/* Verb options are told apart by their index, not their value. */
		if (i >= cli_nglobal_opts)
			lo[i].val = 2000 + (int)(i - cli_nglobal_opts);
		if (o->lo.val > ' ' && o->lo.val < 256) {
			gf_buf_addc(&shorts, (char)o->lo.val);
			if (o->lo.has_arg == required_argument)
				gf_buf_addc(&shorts, ':');
		}
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, gf_buf_str(&shorts) + 1, lo, &idx)) != -1) {
		if (c == '?' || c == ':') {
			const char *bad = argv[optind - 1];

			if (c == ':')
				cli_error("option '%s' needs a value; see 'gpufleet %s --help'", bad, cli->verb);
			else
				cli_error("unknown option '%s'; see 'gpufleet %s --help'", bad, cli->verb);
			rc = GF_EXIT_USAGE;
			goto out;
		}
		if (c == 'h') {
			verb_help(cli, opts, nopts);
			rc = -1;
			goto out;
		}
		if (c == 'V') {
			printf("gpufleet %s\n", GF_VERSION);
			rc = -1;
			goto out;
		}
		/* A short option of a verb maps back to its index. */
		for (size_t i = 0; i < nopts && c < 256; i++)
			if (opts[i].lo.val == c)
				c = 2000 + (int)i;
		if (c >= 2000) {
			rc = on_opt ? on_opt(ud, (size_t)(c - 2000), optarg) : 0;
			if (rc)
				goto out;
			continue;
		}
		rc = global_opt(cli, c, optarg);
		if (rc)
			goto out;
	}
	if (cli->format == GF_FMT_PROMETHEUS && !cli->allow_prometheus) {
		cli_error("'%s' cannot print --format prometheus (table, json, ndjson, csv)", cli->verb);
		rc = GF_EXIT_USAGE;
		goto out;
	}
	*ret_args = argv + optind;
	*ret_nargs = argc - optind;
out:
	free(lo);
	gf_buf_release(&shorts);
	return rc;
}

int cli_db(struct gf_cli *cli, struct gf_db **ret)
{
	struct gf_err err = {0};

	if (!cli->db) {
		if (gf_db_open(cli->db_path, &cli->db, &err) < 0) {
			cli_fail(&err);
			return GF_EXIT_USAGE; /* a DB that cannot be opened is a configuration error */
		}
	}
	*ret = cli->db;
	return 0;
}

int cli_registry(struct gf_cli *cli)
{
	struct gf_err err = {0};
	struct gf_db *db;
	int rc;

	if (cli->reg_loaded)
		return 0;
	rc = cli_db(cli, &db);
	if (rc)
		return rc;
	if (gf_db_nodes_load(db, &cli->reg, &cli->nreg, &err) < 0)
		return cli_fail(&err);
	cli->reg_loaded = true;
	return 0;
}

int cli_creds(struct gf_cli *cli)
{
	struct gf_err err = {0};

	if (cli->creds_loaded)
		return 0;
	if (gf_creds_load(cli->creds_path, cli->creds_explicit, &cli->creds, &err) < 0)
		return cli_fail(&err);
	cli->creds_loaded = true;
	return 0;
}

static int group_members(void *ud, const char *group, struct gf_nodeset *out, struct gf_err *err)
{
	const struct gf_cli *cli = ud;
	bool any = false;

	for (size_t i = 0; i < cli->nreg; i++) {
		for (size_t g = 0; g < cli->reg[i].ngroups; g++) {
			if (strcmp(cli->reg[i].groups[g], group) == 0) {
				gf_nodeset_add(out, cli->reg[i].name);
				any = true;
			}
		}
	}
	if (!any)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "unknown group '@%s'", group);
	return 0;
}

static const struct gf_node *find_node(const struct gf_cli *cli, const char *name)
{
	for (size_t i = 0; i < cli->nreg; i++)
		if (strcmp(cli->reg[i].name, name) == 0)
			return &cli->reg[i];
	return NULL;
}

static char *join_args(char **args, int nargs)
{
	struct gf_buf b = GF_BUF_INIT;

	for (int i = 0; i < nargs; i++) {
		if (i)
			gf_buf_addc(&b, ',');
		gf_buf_adds(&b, args[i]);
	}
	return gf_buf_detach(&b);
}

static int adhoc_targets(struct gf_cli *cli, struct gf_node **ret, size_t *ret_n)
{
	struct gf_nodeset set;
	struct gf_err err = {0};
	enum gf_proto proto = GF_PROTO_AUTO;
	struct gf_node *nodes;

	if (cli->protocol && gf_proto_parse(cli->protocol, &proto, &err) < 0)
		return cli_fail(&err);
	if (gf_nodeset_parse(cli->hosts, NULL, NULL, &set, &err) < 0)
		return cli_fail(&err);
	nodes = gf_xcalloc(set.n, sizeof(*nodes));
	for (size_t i = 0; i < set.n; i++) {
		if (gf_hostport_parse(set.names[i], &nodes[i].bmc, &nodes[i].bmc_port, &err) < 0) {
			gf_nodes_free(nodes, i);
			gf_nodeset_release(&set);
			return cli_fail(&err);
		}
		nodes[i].name = gf_xstrdup(set.names[i]);
		nodes[i].protocol = proto;
		nodes[i].profile = cli->profile ? gf_xstrdup(cli->profile) : NULL;
	}
	*ret = nodes;
	*ret_n = set.n;
	gf_nodeset_release(&set);
	return 0;
}

int cli_target_names(struct gf_cli *cli, char **args, int nargs, struct gf_nodeset *ret)
{
	struct gf_err err = {0};
	char *expr;
	int rc = cli_registry(cli);

	if (rc)
		return rc;
	expr = join_args(args, nargs);
	rc = gf_nodeset_parse(expr, group_members, cli, ret, &err);
	free(expr);
	return rc < 0 ? cli_fail(&err) : 0;
}

int cli_targets(struct gf_cli *cli, char **args, int nargs, bool all_if_empty,
		struct gf_node **ret, size_t *ret_n)
{
	struct gf_nodeset set;
	struct gf_buf unknown = GF_BUF_INIT;
	size_t nunknown = 0;
	struct gf_node *nodes;
	int rc;

	if (cli->hosts) {
		if (nargs > 0) {
			cli_error("give either -H HOSTS or registered TARGETS, not both");
			return GF_EXIT_USAGE;
		}
		return adhoc_targets(cli, ret, ret_n);
	}
	rc = cli_registry(cli);
	if (rc)
		return rc;
	if (nargs == 0) {
		if (!all_if_empty) {
			cli_error("no targets given; name nodes (e.g. 'gpu[01-04]' or '@rack1') or use -H");
			return GF_EXIT_USAGE;
		}
		nodes = gf_xcalloc(cli->nreg, sizeof(*nodes));
		for (size_t i = 0; i < cli->nreg; i++)
			gf_node_copy(&nodes[i], &cli->reg[i]);
		*ret = nodes;
		*ret_n = cli->nreg;
		return 0;
	}
	rc = cli_target_names(cli, args, nargs, &set);
	if (rc)
		return rc;
	for (size_t i = 0; i < set.n; i++) {
		if (find_node(cli, set.names[i]))
			continue;
		if (nunknown < 10)
			gf_buf_addf(&unknown, "%s'%s'", nunknown ? ", " : "", set.names[i]);
		nunknown++;
	}
	if (nunknown) {
		char *folded;
		struct gf_nodeset miss = GF_NODESET_INIT;

		for (size_t i = 0; i < set.n; i++)
			if (!find_node(cli, set.names[i]))
				gf_nodeset_add(&miss, set.names[i]);
		folded = gf_nodeset_collapse((const char *const *)miss.names, miss.n);
		cli_error("unknown node%s '%s' (not in the registry; see 'gpufleet nodes list')",
			  nunknown > 1 ? "s" : "", folded);
		free(folded);
		gf_nodeset_release(&miss);
		gf_buf_release(&unknown);
		gf_nodeset_release(&set);
		return GF_EXIT_USAGE;
	}
	gf_buf_release(&unknown);
	nodes = gf_xcalloc(set.n ? set.n : 1, sizeof(*nodes));
	for (size_t i = 0; i < set.n; i++)
		gf_node_copy(&nodes[i], find_node(cli, set.names[i]));
	*ret = nodes;
	*ret_n = set.n;
	gf_nodeset_release(&set);
	return 0;
}

int cli_profiles(struct gf_cli *cli, enum cli_profile_use use, const struct gf_node *nodes,
		 size_t n, const struct gf_profile ***ret)
{
	const struct gf_profile **profs;
	struct gf_err err = {0};
	int rc = cli_creds(cli);

	if (rc)
		return rc;
	profs = gf_xcalloc(n ? n : 1, sizeof(*profs));
	for (size_t i = 0; i < n; i++) {
		bool ssh = use == CLI_PROFILE_SSH;

		if (!(ssh ? nodes[i].ssh : nodes[i].bmc))
			continue;
		if ((ssh ? gf_creds_resolve_ssh : gf_creds_resolve)(&cli->creds, nodes[i].profile,
								    &profs[i], &err) < 0) {
			free(profs);
			return cli_fail(&err);
		}
	}
	*ret = profs;
	return 0;
}

void cli_exec_opts(const struct gf_cli *cli, struct gf_exec_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->fanout = cli->fanout;
	o->timeout = cli->timeout;
	o->retries = cli->retries;
}

static json_t *node_json(const struct cli_render *r, size_t i, const struct gf_result *slot)
{
	const struct gf_node *n = &r->nodes[i];
	char *bmc;
	json_t *o;

	if (!r->show_bmc)
		return gf_result_to_json(n->name, NULL, NULL, slot);
	bmc = n->bmc ? gf_hostport_format(n->bmc, n->bmc_port) : NULL;
	o = gf_result_to_json(n->name, bmc, gf_proto_name(n->protocol), slot);
	free(bmc);
	return o;
}

void cli_progress_done(void *ud, size_t i, const struct gf_result *slot)
{
	struct cli_render *r = ud;

	if (r->cli->verbose && r->nodes)
		fprintf(stderr, "gpufleet: %s: %s in %.3f s (%u attempt%s)%s%s\n", r->nodes[i].name,
			slot->ok ? "ok" : gf_errkind_name(slot->err.kind), slot->t_end - slot->t_start,
			slot->attempts, slot->attempts == 1 ? "" : "s", slot->ok ? "" : ": ",
			slot->ok ? "" : slot->err.msg);
	r->finished++;
	if (!slot->ok)
		r->failed++;
	if (r->cli->progress && r->n > 4) {
		fprintf(stderr, "\r%zu/%zu done, %zu failed", r->finished, r->n, r->failed);
		if (r->finished == r->n)
			fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}

void cli_render_done(void *ud, size_t i, const struct gf_result *slot)
{
	struct cli_render *r = ud;

	if (r->cli->format == GF_FMT_NDJSON) {
		struct gf_buf b = GF_BUF_INIT;
		json_t *o = node_json(r, i, slot);

		gf_render_ndjson_one(o, &b);
		fputs(gf_buf_str(&b), stdout);
		fflush(stdout);
		json_decref(o);
		gf_buf_release(&b);
	}
	cli_progress_done(ud, i, slot);
}

int cli_render_finish(struct cli_render *r, const struct gf_result *slots)
{
	struct gf_buf b = GF_BUF_INIT;
	json_t **objs;
	size_t failed = 0;
	struct gf_render_spec spec = *r->spec;

	for (size_t i = 0; i < r->n; i++)
		if (!slots[i].ok)
			failed++;
	if (r->cli->format == GF_FMT_NDJSON)
		return failed ? GF_EXIT_FAILED : GF_EXIT_OK;
	objs = gf_xcalloc(r->n ? r->n : 1, sizeof(*objs));
	for (size_t i = 0; i < r->n; i++)
		objs[i] = node_json(r, i, &slots[i]);
	spec.collapse = r->cli->collapse;
	spec.color = r->cli->color;
	switch (r->cli->format) {
	case GF_FMT_JSON:
		gf_render_json(objs, r->n, &b);
		break;
	case GF_FMT_CSV:
		gf_render_csv(objs, r->n, &spec, &b);
		break;
	default:
		gf_render_table(objs, r->n, &spec, &b);
		break;
	}
	fputs(gf_buf_str(&b), stdout);
	fflush(stdout);
	for (size_t i = 0; i < r->n; i++)
		json_decref(objs[i]);
	free(objs);
	gf_buf_release(&b);
	if (!r->cli->quiet && failed && r->cli->format == GF_FMT_TABLE && r->n > 1)
		fprintf(stderr, "%zu of %zu nodes failed\n", failed, r->n);
	return failed ? GF_EXIT_FAILED : GF_EXIT_OK;
}

bool cli_confirm(const char *question)
{
	char line[16];

	if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
		return false;
	fprintf(stderr, "%s [y/N] ", question);
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

int cli_guard(struct gf_cli *cli, const char *what, const struct gf_node *nodes, size_t n, bool yes)
{
	const char **names;
	char q[512];
	char *set;
	bool ok;

	if (n <= 1 || yes)
		return 0;
	names = gf_xcalloc(n, sizeof(*names));
	for (size_t i = 0; i < n; i++)
		names[i] = nodes[i].name;
	set = gf_nodeset_collapse(names, n);
	free(names);
	snprintf(q, sizeof(q), "%s on %zu nodes (%s)?", what, n, set);
	ok = cli_confirm(q);
	if (!ok)
		cli_error("refusing to %s on %zu nodes (%s) without --yes", what, n, set);
	free(set);
	return ok ? 0 : GF_EXIT_REFUSED;
}

int cli_dry_run(struct gf_cli *cli, const char *action, const struct gf_node *nodes, size_t n,
		const struct gf_render_spec *spec)
{
	struct gf_result *slots = gf_xcalloc(n ? n : 1, sizeof(*slots));
	struct cli_render r = {.cli = cli, .nodes = nodes, .n = n, .spec = spec, .show_bmc = true};
	int rc;

	for (size_t i = 0; i < n; i++) {
		gf_result_init(&slots[i]);
		slots[i].ok = true;
		slots[i].data = json_pack("{s:s, s:b}", "action", action, "dry_run", 1);
		cli_render_done(&r, i, &slots[i]);
	}
	rc = cli_render_finish(&r, slots);
	for (size_t i = 0; i < n; i++)
		gf_result_release(&slots[i]);
	free(slots);
	return rc;
}

int cli_audit(struct gf_cli *cli, const char *verb, const char *sub, const struct gf_node *nodes,
	      size_t n, const struct gf_result *slots)
{
	struct gf_audit *rows = gf_xcalloc(n ? n : 1, sizeof(*rows));
	const char *user = gf_invoking_user();
	size_t k = 0;
	struct gf_err err = {0};
	struct gf_db *db;
	char what[96];
	int rc;

	snprintf(what, sizeof(what), "%s %s", verb, sub);
	for (size_t i = 0; i < n; i++) {
		if (slots[i].attempts == 0)
			continue; /* interrupted before anything was sent to it */
		rows[k].time = slots[i].t_start;
		rows[k].user = user;
		rows[k].verb = what;
		rows[k].node = nodes[i].name;
		rows[k].result = slots[i].ok ? "ok" : gf_errkind_name(slots[i].err.kind);
		rows[k].detail = slots[i].ok ? NULL : slots[i].err.msg;
		k++;
	}
	rc = cli_db(cli, &db);
	if (!rc && gf_db_audit_add(db, rows, k, &err) < 0) {
		cli_error("the audit log could not be written: %s", err.msg);
		rc = GF_EXIT_FAILED;
	}
	free(rows);
	return rc;
}

void cli_release(struct gf_cli *cli)
{
	if (cli->reg)
		gf_nodes_free(cli->reg, cli->nreg);
	if (cli->creds_loaded)
		gf_creds_release(&cli->creds);
	gf_db_close(cli->db);
}
