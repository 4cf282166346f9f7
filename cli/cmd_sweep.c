/*
 * gpufleet sweep: everything read-only about every node, stored as one sweep.
 *
 * One fan-out: each worker opens the node's BMC session once and reads the
 * firmware inventory, the hardware, the event log (counting what is new since
 * the node's last sweep) and the sensors, then the host facts over SSH. Nodes
 * without a BMC, or whose BMC could not be reached, get their host facts in
 * a second, SSH-only round. Workers only fill their result slots; the main
 * thread turns them into one sweep and writes it in one transaction.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bmc.h"
#include "cli/inv.h"
#include "cli/verbs.h"
#include "host/hostcollect.h"
#include "inventory/codec.h"
#include "inventory/normalize.h"
#include "inventory/store.h"
#include "lib/buf.h"
#include "lib/util.h"

enum { S_WAIT_LOCK, S_NO_SSH, S_ACCEPT_NEW };

static const struct cli_opt sweep_opts[] = {
	[S_WAIT_LOCK] = {{"wait-lock", required_argument, NULL, 0}, "SECONDS",
			 "wait this long for another sweep to end (default 0: exit at once)"},
	[S_NO_SSH] = {{"no-ssh", no_argument, NULL, 0}, NULL, "do not collect host facts over SSH"},
	[S_ACCEPT_NEW] = {{"ssh-accept-new", no_argument, NULL, 0}, NULL,
			  "trust and record unknown SSH host keys (never a changed one)"},
};

struct sweep_args {
	double wait_lock;
	bool no_ssh, accept_new;
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
	default: return 0;
	}
}

/* Read-only for the workers; indexed like the node array of the run. */
struct sweep_ctx {
	const struct gf_node *nodes;
	const struct gf_sel_prev *prev;
	const struct gf_profile **ssh_profs;  /* NULL entries: no SSH for that node */
	double timeout;
	bool accept_new;
};

static void add_error(json_t *errs, const char *op, const struct gf_err *e)
{
	enum gf_errkind kind = e->kind == GF_EK_NONE ? GF_EK_INTERNAL : e->kind;

	json_array_append_new(errs, json_pack("{s:s,s:s,s:s}", "op", op, "kind",
					      gf_errkind_name(kind), "message",
					      e->msg[0] ? e->msg : "failed"));
}

static void add_unsupported(json_t *errs, const char *op, const struct gf_backend *be,
			    const struct gf_node *n)
{
	struct gf_err e = {0};

	gf_err_set(&e, GF_E_NODE, GF_EK_UNSUPPORTED,
		   "the %s backend cannot read '%s' of node '%s' yet", be->name, op, n->name);
	add_error(errs, op, &e);
}

/* Count entries newer than the previous read's mark, by severity; move the mark on. */
static json_t *sel_summary(const struct gf_sel_list *l, const struct gf_sel_prev *prev)
{
	unsigned by[3] = {0};
	bool has_mark = prev->has_mark;
	double mark = prev->mark;

	for (size_t i = 0; i < l->n; i++) {
		const struct gf_sel_entry *e = &l->v[i];
		bool fresh = e->has_time ? !prev->has_mark || e->time > prev->mark : !prev->read;

		if (fresh && (unsigned)e->severity < 3)
			by[e->severity]++;
		if (e->has_time && (!has_mark || e->time > mark)) {
			mark = e->time;
			has_mark = true;
		}
	}
	return json_pack("{s:i,s:{s:i,s:i,s:i},s:o}", "total", (json_int_t)l->n, "new", "info",
			 (json_int_t)by[GF_SEV_INFO], "warning", (json_int_t)by[GF_SEV_WARNING],
			 "critical", (json_int_t)by[GF_SEV_CRITICAL], "mark",
			 has_mark ? json_real(mark) : json_null());
}

static json_t *sensor_summary(const struct gf_sensor_list *l)
{
	unsigned nom = 0, warn = 0, crit = 0, unk = 0;

	for (size_t i = 0; i < l->n; i++) {
		switch (l->v[i].state) {
		case GF_SENSOR_NOMINAL: nom++; break;
		case GF_SENSOR_WARNING: warn++; break;
		case GF_SENSOR_CRITICAL: crit++; break;
		default: unk++; break;
		}
	}
	return json_pack("{s:i,s:i,s:i,s:i}", "nominal", (json_int_t)nom, "warning",
			 (json_int_t)warn, "critical", (json_int_t)crit, "unknown", (json_int_t)unk);
}

/* Host facts over SSH into @data ("host", "host_components") or an error into @errs. */
static void collect_host(const struct sweep_ctx *c, size_t i, json_t *data, json_t *errs)
{
	const struct gf_node *n = &c->nodes[i];
	struct gf_ssh_target target = {
		.node = n->name, .spec = n->ssh, .prof = c->ssh_profs[i],
		.accept_new = c->accept_new, .deadline = gf_monotime() + c->timeout,
		.cancel = gf_exec_cancel_flag(),
	};
	struct gf_hostfacts facts = {0};
	struct gf_err err = {0};

	if (gf_host_facts_ssh(&target, &facts, &err) < 0) {
		add_error(errs, GF_OP_SSH, &err);
		return;
	}
	json_object_set_new(data, "host", gf_hostfacts_to_json(&facts));
	json_object_set_new(data, "host_components", gf_norm_host_components(&facts));
	gf_hostfacts_release(&facts);
}

/* The BMC part of a sweep, on a worker, over the one session of the node. */
static int sweep_bmc_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
			const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct sweep_ctx *c = vctx;
	size_t i = (size_t)(n - c->nodes);
	json_t *d = slot->data, *errs = json_array();
	struct gf_component_list fw = {0};
	struct gf_hardware hw = {0};
	struct gf_sel_list sel = {0};
	struct gf_sensor_list sens = {0};
	struct gf_err e = {0};
	bool have_hw = false, have_fw = false;

	(void)err; /* a failing operation is recorded, the node goes on */
	json_object_set_new(d, "protocol", json_string(be->name));
	if (!be->hardware) {
		add_unsupported(errs, GF_OP_HARDWARE, be, n);
	} else if (be->hardware(sess, &hw, &e) < 0) {
		add_error(errs, GF_OP_HARDWARE, &e);
	} else {
		const char *model = gf_norm_model(&hw);

		have_hw = true;
		json_object_set_new(d, "hardware", gf_hardware_to_json(&hw));
		if (model)
			json_object_set_new(d, "model", json_string(model));
	}
	gf_err_clear(&e);
	if (!be->firmware) {
		add_unsupported(errs, GF_OP_FIRMWARE, be, n);
	} else if (be->firmware(sess, &fw, &e) < 0) {
		add_error(errs, GF_OP_FIRMWARE, &e);
	} else {
		have_fw = true;
		json_object_set_new(d, "components",
				    gf_norm_bmc_components(&fw, have_hw ? &hw : NULL, be->name));
	}
	json_object_set_new(d, "fw_read", json_boolean(have_fw));
	gf_err_clear(&e);
	if (!be->sel_list)
		add_unsupported(errs, GF_OP_SEL, be, n);
	else if (be->sel_list(sess, &sel, &e) < 0)
		add_error(errs, GF_OP_SEL, &e);
	else
		json_object_set_new(d, "sel", sel_summary(&sel, &c->prev[i]));
	gf_err_clear(&e);
	if (!be->sensors)
		add_unsupported(errs, GF_OP_SENSORS, be, n);
	else if (be->sensors(sess, &sens, &e) < 0)
		add_error(errs, GF_OP_SENSORS, &e);
	else
		json_object_set_new(d, "sensors", sensor_summary(&sens));
	gf_component_list_release(&fw);
	gf_hardware_release(&hw);
	gf_sel_list_release(&sel);
	gf_sensor_list_release(&sens);

	if (c->ssh_profs[i])
		collect_host(c, i, d, errs);
	json_object_set_new(d, "errors", errs);
	return 0;
}

/* The SSH-only round: nodes without a BMC, or whose BMC did not answer. */
struct ssh_round {
	const struct sweep_ctx *c;
	const size_t *which;  /* indices into c->nodes */
};

static void ssh_task(void *vctx, size_t k, double deadline, struct gf_result *slot)
{
	const struct ssh_round *r = vctx;
	json_t *errs = json_array();

	(void)deadline; /* collect_host takes a whole --timeout of its own */
	slot->data = json_object();
	collect_host(r->c, r->which[k], slot->data, errs);
	json_object_set_new(slot->data, "errors", errs);
	slot->ok = true;
}

static void append_all(json_t *dst, json_t *src)
{
	size_t k;
	json_t *v;

	json_array_foreach(src, k, v)
		json_array_append(dst, v);
}

/*
 * One node's record in the export shape, from its BMC slot (NULL when it
 * has no BMC) and its SSH-only slot (NULL when not in that round).
 */
static json_t *node_record(const struct gf_node *n, const struct gf_result *bmc,
			   const struct gf_result *ssh, bool ssh_wanted)
{
	json_t *o = json_object(), *errs = json_array(), *comps = json_array();
	json_t *bd = bmc ? bmc->data : NULL, *sd = ssh ? ssh->data : NULL;
	json_t *host = NULL, *hostc = NULL;
	bool fw = false;

	json_object_set_new(o, "node", json_string(n->name));
	json_object_set_new(o, "status", json_string("ok")); /* judged again from what follows */
	if (!n->bmc && !ssh_wanted) {
		struct gf_err e = {0};

		gf_err_set(&e, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "node '%s' has neither a BMC nor an ssh address to sweep", n->name);
		add_error(errs, GF_OP_BMC, &e);
	}
	if (bmc && !bmc->ok)
		add_error(errs, GF_OP_BMC, &bmc->err);
	if (bmc && bmc->ok && bd) {
		static const char *const keep[] = {"protocol", "model", "hardware", "sel", "sensors"};

		for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++)
			if (json_object_get(bd, keep[k]))
				json_object_set(o, keep[k], json_object_get(bd, keep[k]));
		append_all(comps, json_object_get(bd, "components"));
		append_all(errs, json_object_get(bd, "errors"));
		fw = json_is_true(json_object_get(bd, "fw_read"));
		host = json_object_get(bd, "host");
		hostc = json_object_get(bd, "host_components");
	}
	if (sd) {
		append_all(errs, json_object_get(sd, "errors"));
		host = json_object_get(sd, "host");
		hostc = json_object_get(sd, "host_components");
	}
	append_all(comps, hostc);
	if (host)
		json_object_set(o, "host", host);
	json_object_set_new(o, "components", comps);
	json_object_set_new(o, "errors", errs);
	json_object_set_new(o, "collected", json_pack("{s:b,s:b}", "firmware", fw, "host",
						      host != NULL));
	return o;
}

/* ---- output ---------------------------------------------------------------- */

static const struct gf_col sweep_cols[] = {
	{"status", "STATUS"}, {"model", "MODEL"}, {"ncomponents", "COMPONENTS"},
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
	json_object_set_new(o, "errors", gf_codec_errors_to_json(sn));
	if (sn->status != GF_NODE_OK && sn->nerrors) {
		struct gf_buf msg = GF_BUF_INIT;

		/* Every failed operation, the first one's kind: "firmware: ...; sensors: ...". */
		for (size_t k = 0; k < sn->nerrors; k++)
			gf_buf_addf(&msg, "%s%s: %s", k ? "; " : "", sn->errors[k].op,
				    sn->errors[k].message);
		json_object_set_new(o, "error",
				    json_pack("{s:s,s:s}", "kind", gf_errkind_name(sn->errors[0].kind),
					      "message", gf_buf_str(&msg)));
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

int cmd_sweep(struct gf_cli *cli, int argc, char **argv)
{
	struct sweep_args a = {0};
	struct gf_node *nodes = NULL, *bnodes = NULL, *snodes = NULL;
	const struct gf_profile **profs = NULL, **bprofs = NULL;
	struct gf_sel_prev *prev = NULL, *bprev = NULL;
	struct cli_bmc_run run = {0};
	struct gf_result *sslots = NULL;
	size_t n = 0, nb = 0, ns = 0, *bidx = NULL, *sidx = NULL, *in_ssh = NULL;
	const char **names = NULL;
	struct gf_sweep *sw = NULL;
	struct gf_err err = {0};
	struct gf_db *db;
	bool ssh_init = false, any_ssh = false;
	int lock = -1, rc, nargs;
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
		profs = gf_xcalloc(n ? n : 1, sizeof(*profs));
	} else {
		rc = cli_profiles(cli, CLI_PROFILE_SSH, nodes, n, &profs);
		if (rc)
			goto out;
	}
	names = gf_xcalloc(n, sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		names[i] = nodes[i].name;
		any_ssh |= profs[i] != NULL;
	}
	prev = gf_xcalloc(n, sizeof(*prev));
	if (gf_store_sel_prev(db, names, n, prev, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	if (any_ssh) {
		if (gf_ssh_global_init(&err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
		ssh_init = true;
	}

	sw = gf_sweep_new();
	sw->started = gf_time_ms(gf_walltime());

	/* Round one: every node with a BMC, its host facts on the same worker. */
	bidx = gf_xcalloc(n, sizeof(*bidx));
	for (size_t i = 0; i < n; i++)
		if (nodes[i].bmc)
			bidx[nb++] = i;
	bnodes = gf_xcalloc(nb ? nb : 1, sizeof(*bnodes));
	bprofs = gf_xcalloc(nb ? nb : 1, sizeof(*bprofs));
	bprev = gf_xcalloc(nb ? nb : 1, sizeof(*bprev));
	for (size_t k = 0; k < nb; k++) {
		bnodes[k] = nodes[bidx[k]]; /* a shallow copy: @nodes owns the strings */
		bprofs[k] = profs[bidx[k]];
		bprev[k] = prev[bidx[k]];
	}
	if (nb) {
		struct sweep_ctx bc = {.nodes = bnodes, .prev = bprev, .ssh_profs = bprofs,
				       .timeout = cli->timeout, .accept_new = a.accept_new};

		run.cli = cli;
		run.nodes = bnodes;
		run.n = nb;
		run.op = sweep_bmc_op;
		run.ctx = &bc;
		rc = cli_bmc_fanout(&run);
		if (rc != GF_EXIT_OK && rc != GF_EXIT_FAILED) {
			/* A configuration error, or Ctrl-C: no sweep rather than a sweep of failures. */
			if (rc != GF_EXIT_USAGE)
				cli_error("the sweep was not stored");
			goto out;
		}
	}

	/* Round two: SSH only, for nodes the first round gave no host facts a chance. */
	sidx = gf_xcalloc(n, sizeof(*sidx));
	in_ssh = gf_xcalloc(n, sizeof(*in_ssh));
	for (size_t i = 0, k = 0; i < n; i++) {
		bool bmc_failed;

		in_ssh[i] = SIZE_MAX;
		if (!profs[i])
			continue;
		while (k < nb && bidx[k] < i)
			k++;
		bmc_failed = k < nb && bidx[k] == i && !run.slots[k].ok;
		if (!nodes[i].bmc || bmc_failed) {
			in_ssh[i] = ns;
			sidx[ns++] = i;
		}
	}
	if (ns) {
		struct sweep_ctx sc = {.nodes = nodes, .prev = prev, .ssh_profs = profs,
				       .timeout = cli->timeout, .accept_new = a.accept_new};
		struct ssh_round r = {.c = &sc, .which = sidx};
		struct cli_render pr = {.cli = cli, .n = ns};
		struct gf_exec_opts eo;

		snodes = gf_xcalloc(ns, sizeof(*snodes));
		for (size_t k = 0; k < ns; k++)
			snodes[k] = nodes[sidx[k]]; /* shallow, for -v lines */
		pr.nodes = snodes;
		sslots = gf_xcalloc(ns, sizeof(*sslots));
		cli_exec_opts(cli, &eo);
		eo.retries = 0; /* collect_host has its own deadline; no second try */
		if (gf_exec_run(&eo, ns, ssh_task, &r, sslots, cli_progress_done, &pr, &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
		rc = cli_interrupted(GF_EXIT_OK);
		if (rc) {
			cli_error("the sweep was not stored");
			goto out;
		}
	}

	/* The main thread builds the sweep; then one transaction writes it. */
	for (size_t i = 0, k = 0; i < n; i++) {
		const struct gf_result *bs = NULL, *ss = NULL;
		json_t *rec;

		while (k < nb && bidx[k] < i)
			k++;
		if (k < nb && bidx[k] == i)
			bs = &run.slots[k];
		if (in_ssh[i] != SIZE_MAX)
			ss = &sslots[in_ssh[i]];
		rec = node_record(&nodes[i], bs, ss, profs[i] != NULL);
		if (gf_codec_node_from_json(sw, rec, &err) < 0) {
			/* A peer sent something we cannot keep: record that, not a crash. */
			struct gf_sweep_node *sn = gf_sweep_add_node(sw, nodes[i].name);

			gf_sweep_node_error(sw, sn, GF_OP_BMC, GF_EK_PROTOCOL, err.msg);
			gf_err_clear(&err);
		}
		json_decref(rec);
		sw->nodes[sw->n - 1].status = gf_sweep_node_judge(&sw->nodes[sw->n - 1]);
		counts[sw->nodes[sw->n - 1].status]++;
	}
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
	if (cli->quiet) {
		report_problems(sw);
	} else {
		render(cli, nodes, sw);
		cli_note(cli, "sweep %lld stored: %zu node%s, %u ok, %u partial, %u failed", sw->id,
			 sw->n, sw->n == 1 ? "" : "s", counts[GF_NODE_OK], counts[GF_NODE_PARTIAL],
			 counts[GF_NODE_FAILED]);
	}
	rc = counts[GF_NODE_OK] == sw->n ? GF_EXIT_OK : GF_EXIT_FAILED;
out:
	gf_sweep_free(sw);
	cli_bmc_release(&run);
	for (size_t k = 0; sslots && k < ns; k++)
		gf_result_release(&sslots[k]);
	free(sslots);
	free(sidx);
	free(in_ssh);
	free(bidx);
	free(bnodes);
	free(snodes);
	free(bprofs);
	free(bprev);
	free(prev);
	free(names);
	free(profs);
	if (ssh_init)
		gf_ssh_global_cleanup();
	gf_store_unlock(lock);
	gf_nodes_free(nodes, n);
	return rc;
}
