#include "cli/bmc.h"

#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/util.h"

struct bmc_task {
	const struct cli_bmc_run *run;
	struct gf_bmc_run bmc;            /* profiles, pins, TLS options of the nodes */
	struct gf_bmc_gate *gate;         /* the fleet ping, NULL: none */
};

#define RESTART_POLL_S 1.0

/*
 * Is a failed open worth another after a pause (the pause taken)? Only for a
 * node the verb says may be restarting, while its BMC does not take
 * connections and time is left.
 */
static bool restarting(const struct cli_bmc_run *run, const struct gf_node *n, double deadline,
		       const struct gf_err *err)
{
	double until = gf_monotime() + RESTART_POLL_S;

	if (!run->may_be_restarting || !run->may_be_restarting(run->ctx, n) ||
	    (err->kind != GF_EK_CONNECT && err->kind != GF_EK_TIMEOUT) ||
	    until + RESTART_POLL_S >= deadline)
		return false;
	return !gf_cancel_sleep_until(gf_exec_cancel_flag(), until);
}

static void bmc_task(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	const struct bmc_task *t = vctx;
	const struct cli_bmc_run *run = t->run;
	const struct gf_node *n = &run->nodes[i];
	const struct gf_backend *be = NULL;
	struct gf_err err = {0};
	void *sess = NULL;

	slot->data = json_object();
	if (run->action)
		json_object_set_new(slot->data, "action", json_string(run->action));
	if (gf_exec_cancelled()) {
		gf_err_set(&err, GF_E_NODE, GF_EK_INTERNAL, "interrupted before node '%s' was started",
			   n->name);
		goto fail;
	}
	be = gf_bmc_choose(&t->bmc, i, deadline, &err);
	if (!be)
		goto fail;
	if (!n->protocol)
		json_object_set_new(slot->data, "protocol", json_string(be->name));
	while (gf_bmc_open(&t->bmc, i, be, deadline, &sess, &err) < 0) {
		if (!restarting(run, n, deadline, &err))
			goto fail;
		gf_err_clear(&err);
	}
	if (run->op(be, sess, n, run->ctx, slot, &err) < 0)
		goto fail;
	be->close(sess);
	slot->ok = true;
	return;
fail:
	if (sess)
		be->close(sess);
	gf_result_fail(slot, &err);
}

int cli_bmc_prepare(struct gf_cli *cli, const struct gf_node *nodes, size_t n,
		    struct gf_bmc_run *ret)
{
	const struct gf_profile **profs = NULL;
	struct gf_pins *pins = gf_xcalloc(1, sizeof(*pins));
	struct gf_err err = {0};
	struct gf_db *db = NULL;
	int rc;

	rc = cli_profiles(cli, CLI_PROFILE_BMC, nodes, n, &profs);
	if (!rc && gf_pins_needed(nodes, n))
		rc = cli_db(cli, &db);
	if (!rc && gf_pins_load(db, nodes, profs, n, cli->tls_pin_new, false, pins, &err) < 0)
		rc = cli_fail(&err);
	if (rc) {
		free(profs);
		free(pins);
		return rc;
	}
	if (cli->insecure && gf_pins_needed(nodes, n))
		cli_warn(cli, "--insecure: BMC certificates are not checked, so anyone on the path "
			 "can pose as a BMC and read its credentials");
	*ret = (struct gf_bmc_run){
		.nodes = nodes, .profs = profs, .pins = pins, .cache_dir = cli->cache_dir,
		.cacert = cli->cacert, .insecure = cli->insecure, .cancel = gf_exec_cancel_flag(),
	};
	return 0;
}

int cli_bmc_store_pins(struct gf_cli *cli, const struct gf_bmc_run *b)
{
	struct gf_pins *p = b->pins;
	struct gf_err err = {0};
	struct gf_db *db = NULL;
	bool any = false;
	int rc;

	for (size_t i = 0; p && i < p->n; i++)
		any = any || gf_pins_first_use(p, i);
	if (!any)
		return 0;
	rc = cli_db(cli, &db);
	if (rc)
		return rc;
	if (gf_pins_store_first_use(db, b->nodes, p, &err) < 0) {
		cli_error("the certificate pins could not be stored: %s", err.msg);
		return GF_EXIT_FAILED;
	}
	for (size_t i = 0; i < p->n; i++) {
		if (!gf_pins_first_use(p, i))
			continue;
		if (!p->other[i]) {
			cli_warn(cli, "pinned the certificate of '%s' (sha256 %s)", b->nodes[i].name,
				 p->seen[i]);
			continue;
		}
		/* Another run pinned it first: its pin stays, and this run's certificate is suspect. */
		cli_error("the certificate of '%s' was pinned by another run meanwhile (sha256 %s); "
			  "this run saw sha256 %s and kept the other pin (if this one is right, run "
			  "'gpufleet nodes repin %s --expect %s')", b->nodes[i].name, p->other[i],
			  p->seen[i], b->nodes[i].name, p->seen[i]);
		rc = GF_EXIT_FAILED;
	}
	return rc;
}

void cli_bmc_prepared_release(struct gf_bmc_run *b)
{
	if (b->pins)
		gf_pins_release(b->pins);
	free(b->pins);
	free((void *)b->profs);
	*b = (struct gf_bmc_run){0};
}

/* The exec "done" callback of a run: its audit row completed, then rendered. */
struct bmc_done {
	struct cli_render r;
	struct cli_audit *audit;
	bool render;                      /* spec given: stream, else only count */
	const struct cli_bmc_run *run;
};

static void bmc_done(void *ud, size_t i, const struct gf_result *slot)
{
	struct bmc_done *d = ud;

	cli_audit_done(d->audit, i, slot);
	if (d->render)
		cli_render_done(&d->r, i, slot);
	else
		cli_progress_done(&d->r, i, slot);
	if (d->run->on_done)
		d->run->on_done(d->run->done_ud, i, slot);
}

/* A node whose BMC may be restarting is not pinged: its session is retried instead. */
static bool no_ping(const void *ud, size_t i)
{
	const struct cli_bmc_run *run = ud;

	return run->may_be_restarting && run->may_be_restarting(run->ctx, &run->nodes[i]);
}

/* A node whose BMC never answered the ping: failed as bmc_task fails it, with its action. */
static void gate_expire(void *ud, size_t i, struct gf_result *slot)
{
	const struct bmc_task *t = ud;
	struct gf_err err = {0};

	slot->data = json_object();
	if (t->run->action)
		json_object_set_new(slot->data, "action", json_string(t->run->action));
	gf_bmc_gate_expired(t->gate, i, &err);
	gf_result_fail(slot, &err);
}

static enum gf_gate gate_state(void *ud, size_t i)
{
	return gf_bmc_gate_state(((const struct bmc_task *)ud)->gate, i);
}

static void gate_wait(void *ud, double until)
{
	gf_bmc_gate_wait(((struct bmc_task *)ud)->gate, until);
}

int cli_bmc_fanout(struct cli_bmc_run *run)
{
	struct gf_exec_gate gate = {.state = gate_state, .wait = gate_wait, .expire = gate_expire};
	struct gf_cli *cli = run->cli;
	struct bmc_task t = {.run = run};
	struct bmc_done d = {
		.r = {.cli = cli, .nodes = run->nodes, .n = run->n, .spec = run->spec,
		      .show_bmc = true},
		.render = run->spec != NULL, .run = run,
	};
	struct cli_render *r = &d.r;
	struct gf_exec_opts eo;
	struct gf_err err = {0};
	int rc, prc, arc;

	rc = cli_bmc_prepare(cli, run->nodes, run->n, &t.bmc);
	if (rc)
		return rc;
	if (run->audit) {
		d.audit = cli_audit_open(cli, run->audit, run->nodes, run->n);
		rc = cli_audit_intent(d.audit, NULL, 0);
		if (rc) {
			cli_audit_close(d.audit, NULL);
			cli_bmc_prepared_release(&t.bmc);
			return rc;
		}
	}
	t.bmc.log_name = run->log_name;
	t.bmc.no_thresholds = run->no_thresholds;
	t.bmc.request_timeout = run->request_timeout;
	run->slots = gf_xcalloc(run->n ? run->n : 1, sizeof(*run->slots));
	cli_exec_opts(cli, &eo);
	eo.batch = run->batch;
	eo.interval = run->interval;
	if (run->timeout > 0)
		eo.timeout = run->timeout;
	/* Staggered runs (power on --batch) start nodes late on purpose: no ping. */
	if (!eo.batch)
		t.gate = gf_bmc_gate_start(&t.bmc, run->n, eo.timeout, no_ping, run);
	gate.ud = &t;
	eo.gate = t.gate ? &gate : NULL;
	rc = gf_exec_run(&eo, run->n, bmc_task, &t, run->slots, bmc_done, &d, &err);
	gf_bmc_gate_stop(t.gate);
	arc = cli_audit_close(d.audit, run->slots);
	if (rc < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	prc = cli_bmc_store_pins(cli, &t.bmc);
	if (!run->spec) {
		rc = GF_EXIT_OK;
		for (size_t i = 0; i < run->n; i++)
			if (!run->slots[i].ok)
				rc = GF_EXIT_FAILED;
	} else {
		rc = cli_render_finish(r, run->slots);
	}
	if (prc && !rc)
		rc = prc;
	if (arc && !rc)
		rc = arc;
	rc = cli_interrupted(rc);
out:
	cli_bmc_prepared_release(&t.bmc);
	return rc;
}

void cli_bmc_release(struct cli_bmc_run *run)
{
	if (!run->slots)
		return;
	for (size_t i = 0; i < run->n; i++)
		gf_result_release(&run->slots[i]);
	free(run->slots);
	run->slots = NULL;
}

int cli_bmc_verb(struct gf_cli *cli, int argc, char **argv, cli_bmc_op op,
		 const struct gf_render_spec *spec)
{
	struct cli_bmc_run run = {0};
	struct gf_node *nodes = NULL;
	char **args;
	int nargs, rc;
	size_t n = 0;

	rc = cli_parse(cli, argc, argv, NULL, 0, NULL, NULL, &args, &nargs);
	if (rc)
		return rc;
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	run = (struct cli_bmc_run){.cli = cli, .nodes = nodes, .n = n, .op = op, .spec = spec};
	rc = cli_bmc_fanout(&run);
	cli_bmc_release(&run);
	gf_nodes_free(nodes, n);
	return rc;
}
