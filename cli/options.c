/* Global and verb options: the option table, parsing, help, executor options. */
#include "cli/common.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/backend.h"
#include "lib/buf.h"
#include "lib/model.h"
#include "lib/util.h"

/* Global options: accepted before and after the verb. Sorted by long name. */
enum {
	OPT_COLOR = 1000,
	OPT_CREDENTIALS,
	OPT_DB,
	OPT_FANOUT,
	OPT_FORMAT,
	OPT_NO_PROGRESS,
	OPT_PROFILE,
	OPT_PROTOCOL,
	OPT_RETRIES,
	OPT_TIMEOUT,
	OPT_CACERT,
	OPT_INSECURE,
	OPT_TLS_PIN,
};

/* --protocol: the backends' names, from their table. */
static char *protocol_help(void)
{
	char *names = gf_backend_names("auto", " or ");
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_addf(&b, "%s, for -H hosts", names);
	free(names);
	return gf_buf_detach(&b);
}

const struct cli_opt cli_global_opts[] = {
	{{"cacert", required_argument, NULL, OPT_CACERT},
	 "FILE",
	 "CA bundle that signs the BMC certificates (Redfish)"},
	{{"collapse", no_argument, NULL, 'C'},
	 NULL,
	 "fold identical results into node[1-4,7] ranges"},
	{{"color", required_argument, NULL, OPT_COLOR}, "WHEN", "auto, always or never"},
	{{"credentials", required_argument, NULL, OPT_CREDENTIALS},
	 "FILE",
	 "credentials file (mode 0600)"},
	{{"db", required_argument, NULL, OPT_DB}, "PATH", "inventory database"},
	{{"fanout", required_argument, NULL, OPT_FANOUT},
	 "N",
	 "nodes worked on at once (1-1024, default 64)"},
	{{"format", required_argument, NULL, OPT_FORMAT}, "FMT", "table, json, ndjson or csv"},
	{{"help", no_argument, NULL, 'h'}, NULL, "show help"},
	{{"hosts", required_argument, NULL, 'H'},
	 "HOSTS",
	 "ad-hoc BMC hosts instead of registered nodes"},
	{{"insecure", no_argument, NULL, OPT_INSECURE},
	 NULL,
	 "do not check BMC certificates (Redfish; warns)"},
	{{"no-progress", no_argument, NULL, OPT_NO_PROGRESS}, NULL, "no progress bar on stderr"},
	{{"profile", required_argument, NULL, OPT_PROFILE},
	 "NAME",
	 "credentials profile for -H hosts"},
	{{"protocol", required_argument, NULL, OPT_PROTOCOL}, "PROTO", NULL /* protocol_help() */},
	{{"quiet", no_argument, NULL, 'q'}, NULL, "print only results and errors"},
	{{"retries", required_argument, NULL, OPT_RETRIES},
	 "N",
	 "extra attempts after a timeout, within the deadline (default 1)"},
	{{"timeout", required_argument, NULL, OPT_TIMEOUT},
	 "SECONDS",
	 "deadline of each node, all attempts included (default 10)"},
	{{"tls-pin", required_argument, NULL, OPT_TLS_PIN},
	 "new",
	 "pin BMC certificates on first use (Redfish)"},
	{{"verbose", no_argument, NULL, 'v'}, NULL, "say more on stderr"},
	{{"version", no_argument, NULL, 'V'}, NULL, "show the version"},
};
const size_t cli_nglobal_opts = sizeof(cli_global_opts) / sizeof(cli_global_opts[0]);

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
	if (!o->help) {
		char *help = o->lo.val == OPT_PROTOCOL ? protocol_help() : gf_xstrdup("");

		fprintf(f, "  %-28s %s\n", left, help);
		free(help);
	} else {
		fprintf(f, "  %-28s %s\n", left, o->help);
	}
}

void cli_print_global_opts(FILE *f)
{
	fputs("\nGlobal options:\n", f);
	for (size_t i = 0; i < cli_nglobal_opts; i++)
		print_opt(f, &cli_global_opts[i]);
}

static void verb_help(const struct gf_cli *cli, const struct cli_opt *opts, size_t nopts)
{
	printf("%s", cli->usage ? cli->usage : "");
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
			cli_error("unknown --tls-pin '%s' (new: pin certificates on first use)",
				  arg);
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
		const struct gf_backend *p;

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
	default: return GF_EXIT_USAGE;
	}
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
	cli->verb_opts = opts;
	cli->nverb_opts = nopts;
	while ((c = getopt_long(argc, argv, gf_buf_str(&shorts) + 1, lo, &idx)) != -1) {
		if (c == '?' || c == ':') {
			const char *bad = argv[optind - 1];

			if (c == ':')
				cli_error("option '%s' needs a value; see 'gpufleet %s --help'",
					  bad, cli->verb);
			else
				cli_error("unknown option '%s'; see 'gpufleet %s --help'", bad,
					  cli->verb);
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
			if (c - 2000 < 63)
				cli->verb_opts_given |= CLI_OPT(c - 2000);
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
		cli_error("'%s' cannot print --format prometheus (table, json, ndjson, csv)",
			  cli->verb);
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

void cli_exec_opts(const struct gf_cli *cli, struct gf_exec_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->fanout = cli->fanout;
	o->timeout = cli->timeout;
	o->retries = cli->retries;
}

int cli_parse_since(const char *opt, const char *arg, double *ret)
{
	struct gf_err err = {0};

	if (gf_time_parse_since(arg, gf_walltime(), ret, &err) == 0)
		return 0;
	cli_error("%s %s", opt, err.msg);
	return GF_EXIT_USAGE;
}

int cli_parse_severities(const char *opt, const char *arg, unsigned *ret)
{
	unsigned sevs = 0;

	for (const char *p = arg; *p;) {
		size_t len = strcspn(p, ",");
		char *w = gf_xstrndup(p, len);
		int sev = gf_severity_parse(w);

		free(w);
		if (len && sev < 0) {
			cli_error("%s '%.*s' is not info, warning or critical", opt, (int)len, p);
			return GF_EXIT_USAGE;
		}
		if (len)
			sevs |= 1u << sev;
		p += len;
		if (*p == ',')
			p++;
	}
	if (!sevs) {
		cli_error("%s needs at least one of info, warning, critical", opt);
		return GF_EXIT_USAGE;
	}
	*ret |= sevs;
	return 0;
}
