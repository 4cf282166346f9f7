/*
 * gpufleet sweep: everything read-only about every node, stored as one sweep.
 *
 * Parse, collect, store, render: fleet/collect.c reads every node's BMC
 * (one session: firmware inventory, hardware, event log, sensors) and its
 * host facts over SSH, as two parts of one fan-out, into a typed sweep;
 * inventory/store.c writes it in one transaction.
 */
#include <stdlib.h>

#include "cli/bmc.h"
#include "cli/inv.h"
#include "cli/problems.h"
#include "cli/verbs.h"
#include "inventory/codec.h"
#include "inventory/events.h"
#include "fleet/collect.h"
#include "inventory/store.h"
#include "lib/buf.h"
#include "lib/util.h"

enum { S_WAIT_LOCK, S_NO_SSH, S_ACCEPT_NEW, S_METRICS };

static const struct cli_opt sweep_opts[] = {
	[S_WAIT_LOCK] = {{"wait-lock", required_argument, NULL, 0},
			 "SECONDS",
			 "wait this long for another sweep to end (default 0: exit at once)"},
	[S_NO_SSH] = {{"no-ssh", no_argument, NULL, 0}, NULL, "do not collect host facts over SSH"},
	[S_ACCEPT_NEW] = {{"ssh-accept-new", no_argument, NULL, 0},
			  NULL,
			  "trust and record unknown SSH host keys (never a changed one)"},
	[S_METRICS] = {{"metrics", required_argument, NULL, 0},
		       "FILE",
		       "once stored, write gpufleet metrics to FILE (atomically)"},
};

struct sweep_args {
	double wait_lock;
	bool no_ssh, accept_new;
	const char *metrics; /* --metrics FILE */
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct sweep_args *a = ud;
	struct gf_err err = {0};

	switch (idx) {
	case S_WAIT_LOCK:
		if (gf_parse_seconds(arg, 0, 86400, &a->wait_lock, &err, "--wait-lock") < 0)
			return cli_fail(&err);
		return 0;
	case S_NO_SSH: a->no_ssh = true; return 0;
	case S_ACCEPT_NEW: a->accept_new = true; return 0;
	case S_METRICS: a->metrics = arg; return 0;
	default: return 0;
	}
}

/* ---- output ---------------------------------------------------------------- */

static const struct gf_col sweep_cols[] = {
	{"status", "STATUS"},   {"model", "MODEL"},           {"ncomponents", "COMPONENTS"},
	{"sel_new", "SEL NEW"}, {"sensor_health", "SENSORS"},
};

static json_t *node_output(const struct gf_cli *cli, const struct gf_node *n,
			   const struct gf_sweep *sw, const struct gf_sweep_node *sn)
{
	json_t *o = json_object();
	char *bmc = n->bmc ? gf_hostport_format(n->bmc, n->bmc_port) : NULL;
	long long id = sw->id;
	bool table = cli->format == GF_FMT_TABLE || cli->format == GF_FMT_CSV;

	json_object_set_new(o, "node", json_string(n->name));
	if (bmc)
		json_object_set_new(o, "bmc", json_string(bmc));
	json_object_set_new(o, "ok", json_boolean(sn->status == GF_NODE_OK));
	json_object_set_new(o, "sweep", id ? json_integer(id) : json_null());
	json_object_set_new(o, "status", json_string(gf_node_status_name(sn->status)));
	json_object_set_new(o, "protocol", sn->protocol ? json_string(sn->protocol) : json_null());
	json_object_set_new(o, "model", sn->model ? json_string(sn->model) : json_null());
	json_object_set_new(o, "ncomponents", json_integer((json_int_t)sn->set->n));
	json_object_set_new(o, "sel", gf_codec_sel_to_json(&sn->sel));
	json_object_set_new(o, "sensors", gf_codec_sensors_to_json(&sn->sensors));
	json_object_set_new(o, "leaks",
			    sn->sensors.read ? gf_codec_leaks_to_json(&sn->sensors) : json_null());
	json_object_set_new(o, "errors", gf_codec_errors_to_json(sn));
	if (sn->status != GF_NODE_OK && sn->nerrors) {
		struct gf_buf msg = GF_BUF_INIT;

		/* Every failed operation, the first one's kind: "firmware: ...; sensors: ...". */
		for (size_t k = 0; k < sn->nerrors; k++)
			gf_buf_addf(&msg, "%s%s: %s", k ? "; " : "", sn->errors[k].op,
				    sn->errors[k].message);
		json_object_set_new(o, "error",
				    json_pack("{s:s,s:s}", "kind",
					      gf_errkind_name(sn->errors[0].kind), "message",
					      gf_buf_str(&msg)));
		gf_buf_release(&msg);
	}
	if (table) {
		struct gf_buf b = GF_BUF_INIT;

		if (sn->sel.read)
			gf_buf_addf(&b, "%u (%u warning, %u critical)",
				    sn->sel.new_info + sn->sel.new_warning + sn->sel.new_critical,
				    sn->sel.new_warning, sn->sel.new_critical);
		json_object_set_new(o, "sel_new", b.len ? json_string(b.s) : json_null());
		gf_buf_reset(&b);
		if (sn->sensors.read)
			gf_buf_addf(&b, "%u ok, %u warning, %u critical", sn->sensors.nominal,
				    sn->sensors.warning, sn->sensors.critical);
		json_object_set_new(o, "sensor_health", b.len ? json_string(b.s) : json_null());
		gf_buf_release(&b);
	}
	free(bmc);
	return o;
}

static void render(struct gf_cli *cli, const struct gf_node *nodes, const struct gf_sweep *sw)
{
	struct gf_render_spec spec = {sweep_cols, sizeof(sweep_cols) / sizeof(sweep_cols[0]), NULL,
				      false, false};
	json_t **objs = gf_xcalloc(sw->n ? sw->n : 1, sizeof(*objs));

	for (size_t i = 0; i < sw->n; i++)
		objs[i] = node_output(cli, &nodes[i], sw, &sw->nodes[i]);
	inv_print(cli, objs, sw->n, &spec);
	for (size_t i = 0; i < sw->n; i++)
		json_decref(objs[i]);
	free(objs);
}

/* --quiet: only what is wrong, on stderr, one line per node. */
static void report_problems(const struct gf_sweep *sw)
{
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_sweep_node *sn = &sw->nodes[i];

		for (size_t k = 0; sn->status != GF_NODE_OK && k < sn->nerrors; k++)
			cli_error("%s: %s: %s %s: %s", sn->node, gf_node_status_name(sn->status),
				  sn->errors[k].op, gf_errkind_name(sn->errors[k].kind),
				  sn->errors[k].message);
	}
}

/* ---- the verb ------------------------------------------------------------------ */

/* Before anything is sent (@ud: the progress's render). */
static int sweep_start(void *ud, const struct gf_fanout *f)
{
	cli_bmc_warn_insecure(((const struct cli_render *)ud)->cli, f);
	return 0;
}

/* The hosts' GPU Xid lines into the events table (events list), each once. */
static int store_xids(struct gf_cli *cli, struct gf_db *db, const struct gf_sweep *sw)
{
	struct gf_event_list l = {0};
	struct gf_err err = {0};
	double now = gf_walltime();
	int rc = 0;

	for (size_t i = 0; i < sw->n; i++)
		gf_events_from_xids(sw->nodes[i].node, sw->nodes[i].host, now, &l);
	if (gf_events_store_list(db, &l, NULL, &err) < 0) {
		cli_fail(&err);
		cli_error("the hosts' Xid events were not stored");
		rc = GF_EXIT_FAILED;
	}
	gf_event_list_release(&l);
	return rc;
}

int cmd_sweep(struct gf_cli *cli, int argc, char **argv)
{
	struct sweep_args a = {0};
	struct gf_node *nodes = NULL;
	const struct gf_profile **ssh_profs = NULL, **bmc_profs = NULL;
	struct gf_sel_prev *prev = NULL;
	struct gf_collect c = {0};
	struct gf_fanout_keep later = {0}; /* the logouts, once the results are out */
	struct cli_render pr = {.cli = cli};
	size_t n = 0;
	const char **names = NULL;
	struct gf_sweep *sw = NULL;
	struct gf_err err = {0};
	struct gf_db *db;
	bool any_bmc = false;
	int lock = -1, rc, prc, nargs;
	unsigned counts[3] = {0};
	char **args;

	rc = cli_parse(cli, argc, argv, sweep_opts, sizeof(sweep_opts) / sizeof(sweep_opts[0]),
		       on_opt, &a, &args, &nargs);
	if (rc)
		return rc;
	if (cli->quiet)
		cli->progress = false; /* a healthy fleet's quiet sweep prints nothing at all */
	rc = cli_targets(cli, args, nargs, true, &nodes, &n);
	if (rc)
		return rc;
	if (n == 0) {
		cli_error("no nodes to sweep; register some with 'gpufleet nodes add' or import");
		rc = GF_EXIT_USAGE;
		goto out;
	}
	rc = cli_db(cli, &db);
	if (rc)
		goto out;
	if (gf_store_lock(cli->db_path, a.wait_lock, &lock, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (a.no_ssh) {
		ssh_profs = gf_xcalloc(n, sizeof(*ssh_profs));
	} else {
		rc = cli_profiles(cli, CLI_PROFILE_SSH, nodes, n, &ssh_profs);
		if (rc)
			goto out;
	}
	names = gf_xcalloc(n, sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		names[i] = nodes[i].name;
		any_bmc |= nodes[i].bmc != NULL;
	}
	prev = gf_xcalloc(n, sizeof(*prev));
	if (gf_store_sel_prev(db, names, n, prev, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (any_bmc) {
		rc = cli_profiles(cli, CLI_PROFILE_BMC, nodes, n, &bmc_profs);
		if (rc) {
			if (rc != GF_EXIT_USAGE)
				cli_error("the sweep was not stored");
			goto out;
		}
	}
	cli_bmc_frame(cli, &c.bmc, nodes, n, bmc_profs);
	pr.nodes = nodes;
	pr.n = n;
	c.bmc.hooks = (struct gf_fanout_hooks){
		.db = cli_bmc_db,
		.start = sweep_start,
		.done = cli_progress_done,
		.ud = &pr,
	};
	gf_fanout_later(&c.bmc, &later);
	c.ssh_profs = ssh_profs;
	c.prev = prev;
	c.accept_new = a.accept_new;

	sw = gf_sweep_new();
	sw->started = gf_time_ms(gf_walltime());
	rc = gf_collect_sweep(&c, sw, &err);
	if (rc) {
		if (rc < 0)
			rc = cli_fail(&err);
		if (rc != GF_EXIT_USAGE)
			cli_error("the sweep was not stored");
		goto out;
	}
	/* A pin that could not be stored, or lost to another run's, fails the run (below). */
	prc = cli_bmc_pins_report(cli, &c.bmc);
	rc = cli_interrupted(GF_EXIT_OK);
	if (rc) {
		/* No sweep rather than a sweep of failures. */
		cli_error("the sweep was not stored");
		goto out;
	}
	for (size_t i = 0; i < sw->n; i++)
		counts[sw->nodes[i].status]++;
	sw->finished = gf_time_ms(gf_walltime());
	if (sw->finished < sw->started)
		sw->finished = sw->started;
	if (gf_store_sweep_add(db, sw, &err) < 0) {
		cli_fail(&err);
		cli_error("the sweep was not stored");
		rc = GF_EXIT_FAILED;
		if (!cli->quiet)
			render(cli, nodes, sw);
		goto out;
	}
	if (cli_problems_shown(cli, sw->n)) {
		/* On a terminal: the table (not with -q), then what needs attention. */
		struct cli_problems *p = cli_problems_new(true);

		if (!cli->quiet)
			render(cli, nodes, sw);
		for (size_t i = 0; i < sw->n; i++)
			cli_problems_add_sweep(p, &sw->nodes[i]);
		cli_problems_print(cli, p);
		cli_note(cli, "sweep %lld stored", sw->id);
	} else if (cli->quiet) {
		report_problems(sw);
	} else {
		render(cli, nodes, sw);
		cli_note(cli, "sweep %lld stored: %zu node%s, %u ok, %u partial, %u failed", sw->id,
			 sw->n, sw->n == 1 ? "" : "s", counts[GF_NODE_OK], counts[GF_NODE_PARTIAL],
			 counts[GF_NODE_FAILED]);
	}
	rc = counts[GF_NODE_OK] == sw->n && !prc ? GF_EXIT_OK : GF_EXIT_FAILED;
	if (store_xids(cli, db, sw))
		rc = GF_EXIT_FAILED;
	/* The whole inventory, as gpufleet metrics writes it, while the sweep lock is held. */
	if (a.metrics && inv_metrics_write(cli, NULL, 0, a.metrics, NULL))
		rc = GF_EXIT_FAILED;
out:
	fflush(stdout);
	gf_fanout_keep_release(&later);
	gf_sweep_free(sw);
	gf_fanout_release(&c.bmc);
	free(bmc_profs);
	free(prev);
	free(names);
	free(ssh_profs);
	gf_store_unlock(lock);
	gf_nodes_free(nodes, n);
	return rc;
}
