/* gpufleet events: follow the BMCs' events as they happen; list what was stored. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bmc.h"
#include "cli/inv.h"
#include "cli/verbs.h"
#include "fleet/events.h"
#include "fleet/events_redfish.h"
#include "inventory/events.h"
#include "lib/buf.h"
#include "lib/nodeset.h"
#include "lib/util.h"

enum { E_INTERVAL, E_DURATION, E_SESSIONS, E_SINCE, E_SEVERITY, E_SOURCE, E_FAIL_ON };

static const struct cli_opt events_opts[] = {
	[E_INTERVAL] = {{"interval", required_argument, NULL, 0},
			"DURATION",
			"follow: seconds between two polls of the event logs (default 5s)"},
	[E_DURATION] = {{"duration", required_argument, NULL, 0},
			"DURATION",
			"follow: stop after this long (default: until Ctrl-C or SIGTERM)"},
	[E_SESSIONS] = {{"sessions", required_argument, NULL, 0},
			"N",
			"follow: IPMI sessions kept open between polls, at most (default 700)"},
	[E_SINCE] = {{"since", required_argument, NULL, 0},
		     "DATE|DURATION",
		     "list: only events from then on (2026-11-29, 2026-11-29T12:00Z, 90m, 7d)"},
	[E_SEVERITY] = {{"severity", required_argument, NULL, 0},
			"LEVELS",
			"list: only these severities: info, warning, critical"},
	[E_SOURCE] = {{"source", required_argument, NULL, 0},
		      "SOURCES",
		      "list: only these sources: sel, redfish-sse, redfish-log, host-xid"},
	[E_FAIL_ON] = {{"fail-on", required_argument, NULL, 0},
		       "LEVEL",
		       "list: exit 3 when an event of this severity or worse is listed"},
};

#define FOLLOW_OPTS (CLI_OPT(E_INTERVAL) | CLI_OPT(E_DURATION) | CLI_OPT(E_SESSIONS))
#define LIST_OPTS (CLI_OPT(E_SINCE) | CLI_OPT(E_SEVERITY) | CLI_OPT(E_SOURCE) | CLI_OPT(E_FAIL_ON))

/* Events' sources a --source may name: every one some path of gpufleet stores. */
static const char *const known_sources[] = {"sel", "redfish-sse", "redfish-log", "host-xid"};

struct events_args {
	double interval, duration;
	unsigned long sessions; /* follow: sessions kept between rounds, at most */
	bool has_since;
	double since;
	unsigned severities;
	const char **sources;
	size_t nsources;
	bool has_fail_on;
	enum gf_severity fail_on;
};

static int add_sources(struct events_args *a, const char *arg)
{
	for (const char *p = arg; *p;) {
		size_t len = strcspn(p, ","), k;

		for (k = 0; len && k < sizeof(known_sources) / sizeof(known_sources[0]); k++)
			if (strlen(known_sources[k]) == len && !strncmp(known_sources[k], p, len))
				break;
		if (len && k == sizeof(known_sources) / sizeof(known_sources[0])) {
			cli_error("--source '%.*s' is not sel, redfish-sse, redfish-log or host-xid",
				  (int)len, p);
			return GF_EXIT_USAGE;
		}
		if (len) {
			a->sources = gf_xrealloc(a->sources,
						 (a->nsources + 1) * sizeof(*a->sources));
			a->sources[a->nsources++] = known_sources[k];
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (!a->nsources) {
		cli_error("--source needs at least one of sel, redfish-sse, redfish-log, host-xid");
		return GF_EXIT_USAGE;
	}
	return 0;
}

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct events_args *a = ud;
	struct gf_err err = {0};
	int sev;

	switch (idx) {
	case E_INTERVAL:
	case E_DURATION: {
		double v;
		const char *name = idx == E_INTERVAL ? "--interval" : "--duration";

		if (gf_parse_duration(arg, &v, &err) < 0 || v <= 0 || v > 10 * 365 * 86400.0) {
			cli_error("%s '%s' is not a duration above 0 (5, 500ms, 30s, 10m, 2h)",
				  name, arg);
			return GF_EXIT_USAGE;
		}
		if (idx == E_INTERVAL)
			a->interval = v;
		else
			a->duration = v;
		return 0;
	}
	case E_SESSIONS:
		if (gf_parse_uint(arg, 0, 1000000, &a->sessions, &err, "--sessions") < 0)
			return cli_fail(&err);
		return 0;
	case E_SINCE:
		if (cli_parse_since("--since", arg, &a->since))
			return GF_EXIT_USAGE;
		a->has_since = true;
		return 0;
	case E_SEVERITY: return cli_parse_severities("--severity", arg, &a->severities);
	case E_SOURCE: return add_sources(a, arg);
	case E_FAIL_ON:
		sev = gf_severity_parse(arg);
		if (sev < 0 || sev == GF_SEV_INFO) {
			cli_error("--fail-on '%s' is not warning or critical", arg);
			return GF_EXIT_USAGE;
		}
		a->has_fail_on = true;
		a->fail_on = (enum gf_severity)sev;
		return 0;
	default: return 0;
	}
}

/* ---- follow ------------------------------------------------------------------- */

/* Ctrl-C between two rounds, or SIGTERM at any time: the follow ends after this round. */
static gf_cancel_flag stop_flag;
static volatile sig_atomic_t terminated;

static void on_stop(int sig)
{
	stop_flag = 1;
	if (sig == SIGTERM) {
		terminated = 1;
		/* A round in progress ends soon: the executor's Ctrl-C, or ours. */
		raise(SIGINT);
	}
}

struct follow {
	struct gf_cli *cli;
	const struct gf_node *nodes;
	bool *failing; /* per node: its last round failed */
	unsigned long printed;
};

static void print_event(const struct follow *fw, const struct gf_event *e)
{
	json_t *o = gf_event_to_json(e);

	if (fw->cli->format == GF_FMT_NDJSON) {
		struct gf_buf b = GF_BUF_INIT;

		gf_render_ndjson_one(o, &b);
		fwrite(gf_buf_str(&b), 1, b.len, stdout);
		gf_buf_release(&b);
	} else {
		static const char *const keys[] = {"time",     "node",   "source", "id",
						   "severity", "sensor", "message"};

		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			json_t *v = json_object_get(o, keys[k]);
			char *cell;

			if (!strcmp(keys[k], "time") && json_is_null(v))
				v = json_object_get(o, "received");
			cell = gf_render_cell(v);
			printf("%s%s", k ? "  " : "", cell);
			free(cell);
		}
		putchar('\n');
	}
	json_decref(o);
}

static void on_events(void *ud, size_t i, const char *source, const struct gf_event *v,
		      const bool *fresh, size_t n, bool baseline)
{
	struct follow *fw = ud;
	size_t nfresh = 0;

	for (size_t k = 0; k < n; k++) {
		if (!fresh[k])
			continue;
		nfresh++;
		if (!baseline) {
			print_event(fw, &v[k]);
			fw->printed++;
		}
	}
	fflush(stdout);
	if (baseline && nfresh)
		cli_verbose(fw->cli,
			    "node '%s': %zu %s event%s already logged, stored as the baseline "
			    "(see events list)",
			    fw->nodes[i].name, nfresh, source, nfresh == 1 ? "" : "s");
}

static void on_cleared(void *ud, size_t i, const char *source)
{
	struct follow *fw = ud;

	cli_warn(fw->cli,
		 "node '%s': its %s was cleared or wrapped since it was last read; only what is "
		 "new in it is reported",
		 fw->nodes[i].name, source);
}

static void on_node_state(void *ud, size_t i, const struct gf_err *err)
{
	struct follow *fw = ud;
	char *safe;

	fw->failing[i] = err != NULL;
	if (!err) {
		cli_note(fw->cli, "gpufleet: node '%s' answers again", fw->nodes[i].name);
		return;
	}
	safe = gf_term_safe(err->msg);
	cli_error("%s", safe);
	free(safe);
}

/* The certificates the event streams pinned on first use, reported as every verb does. */
static int pins_report(struct gf_cli *cli, const struct gf_node *nodes,
		       const struct gf_events_redfish *x)
{
	struct gf_fanout f = {
		.nodes = nodes,
		.pinned = x->pinned,
		.npinned = x->npinned,
		.pins_rc = x->pins_rc,
		.pins_err = x->pins_err,
	};

	return cli_bmc_pins_report(cli, &f);
}

static int follow_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		      int nargs)
{
	static const struct gf_event_source *const sources[] = {&gf_event_source_sel};
	struct events_args *a = ud;
	struct gf_node *nodes = NULL;
	struct cli_bmc_fan fan = {.cli = cli};
	struct follow fw = {.cli = cli};
	struct gf_events_follow f = {0};
	struct gf_events_redfish rfx = {0};
	const struct gf_profile **profs = NULL;
	struct sigaction sa, old_int, old_term;
	struct gf_err err = {0};
	struct gf_db *db;
	size_t n = 0;
	int rc, prc = 0;

	if (cli->format != GF_FMT_TABLE && cli->format != GF_FMT_NDJSON) {
		cli_error("%s %s prints a table or ndjson (one event a line)", cli->verb, sv->name);
		return GF_EXIT_USAGE;
	}
	if (nargs == 0 && !cli->hosts) {
		cli_error("%s %s needs TARGETS (@all for every node)", cli->verb, sv->name);
		return GF_EXIT_USAGE;
	}
	rc = cli_targets_db(cli, args, nargs, &nodes, &n, &db);
	if (rc)
		return rc;
	fw.nodes = nodes;
	fw.failing = gf_xcalloc(n ? n : 1, sizeof(*fw.failing));

	rc = cli_profiles(cli, CLI_PROFILE_BMC, nodes, n, &profs);
	if (rc)
		goto out;
	/* Redfish nodes: their event streams on one thread, pushed into the loop. */
	rfx = (struct gf_events_redfish){
		.profs = profs,
		.cacert = cli->cacert,
		.insecure = cli->insecure,
		.tls_pin_new = cli->tls_pin_new,
		.interval = a->interval > 0 ? a->interval : 5,
	};
	f = (struct gf_events_follow){
		.nodes = nodes,
		.n = n,
		.sources = sources,
		.nsources = sizeof(sources) / sizeof(sources[0]),
		.interval = a->interval > 0 ? a->interval : 5,
		.sessions = a->sessions,
		.duration = a->duration,
		.stop = &stop_flag,
		.db = db,
		.fan = {cli_bmc_rollout_fan, &fan},
		.hooks = {on_events, on_cleared, on_node_state, &fw},
		.pusher = {gf_events_redfish_start, gf_events_redfish_stop, &rfx},
	};
	cli->progress = false; /* a bar each round would bury the events */
	stop_flag = 0;
	terminated = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if (cli->format == GF_FMT_TABLE && !cli->quiet) {
		printf("TIME  NODE  SOURCE  ID  SEVERITY  SENSOR  MESSAGE\n");
		fflush(stdout);
	}
	rc = gf_events_follow_run(&f, &err);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	prc = pins_report(cli, nodes, &rfx);
	if (rc < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	cli_verbose(cli, "%u rounds, %lu new events", f.rounds, fw.printed);
	if (prc && !rc)
		rc = prc;
	if (terminated) {
		rc = GF_EXIT_OK; /* asked to stop: the service manager's normal end */
	} else if (f.code) {
		rc = f.code; /* interrupted during a round: already said */
	} else if (stop_flag) {
		cli_error("interrupted");
		rc = GF_EXIT_INTERRUPTED;
	} else {
		rc = GF_EXIT_OK;
		for (size_t i = 0; i < n; i++)
			if (fw.failing[i])
				rc = GF_EXIT_FAILED;
	}
out:
	gf_events_redfish_release(&rfx);
	free(fw.failing);
	free(profs);
	gf_nodes_free(nodes, n);
	return rc;
}

/* ---- list --------------------------------------------------------------------- */

static const struct gf_col list_cols[] = {
	{"time", "TIME"},         {"source", "SOURCE"}, {"id", "ID"},
	{"severity", "SEVERITY"}, {"sensor", "SENSOR"}, {"type", "TYPE"},
	{"message", "MESSAGE"},
};

static int list_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		    int nargs)
{
	struct events_args *a = ud;
	struct gf_nodeset targets = GF_NODESET_INIT;
	struct gf_render_spec spec = {
		.cols = list_cols,
		.ncols = sizeof(list_cols) / sizeof(list_cols[0]),
	};
	struct gf_events_query q = {0};
	struct gf_event_list l = {0};
	struct gf_err err = {0};
	struct inv_out out;
	struct gf_db *db;
	bool every = true, hit = false;
	int rc;

	if (cli->format == GF_FMT_PROMETHEUS) {
		cli_error("%s %s prints a table, json, ndjson or csv", cli->verb, sv->name);
		return GF_EXIT_USAGE;
	}
	rc = inv_targets(cli, args, nargs, &targets, &every);
	if (rc)
		return rc;
	rc = cli_db(cli, &db);
	if (rc)
		goto out;
	if (!every) {
		q.nodes = (const char *const *)targets.names;
		q.nnodes = targets.n;
	}
	q.has_since = a->has_since;
	q.since = a->since;
	q.severities = a->severities;
	q.sources = a->sources;
	q.nsources = a->nsources;
	if (gf_events_list(db, &q, &l, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	spec.color = cli->color;
	inv_out_begin(&out, cli, &spec);
	for (size_t i = 0; i < l.n; i++) {
		inv_out_add(&out, gf_event_to_json(&l.v[i]));
		if (a->has_fail_on && l.v[i].severity >= a->fail_on)
			hit = true;
	}
	inv_out_end(&out);
	rc = hit ? GF_EXIT_DRIFT : GF_EXIT_OK;
out:
	gf_event_list_release(&l);
	gf_nodeset_release(&targets);
	return rc;
}

static const struct cli_subverb subs[] = {
	{"follow", follow_run, NULL, FOLLOW_OPTS},
	{"list", list_run, NULL, LIST_OPTS},
};

int cmd_events(struct gf_cli *cli, int argc, char **argv)
{
	struct events_args a = {.sessions = GF_EVENTS_SESSIONS_DEFAULT};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, events_opts, sizeof(events_opts) / sizeof(events_opts[0]),
		       on_opt, &a, &args, &nargs);
	if (rc == 0)
		rc = cli_subverb_run(cli, subs, sizeof(subs) / sizeof(subs[0]), &a, args, nargs);
	free(a.sources);
	return rc;
}
