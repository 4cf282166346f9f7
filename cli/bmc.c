#include "cli/bmc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/rollout.h"
#include "lib/buf.h"
#include "lib/util.h"

/* The hooks of a verb's run. The render first: cli_bmc_db() takes the hooks' ud as one. */
struct bmc_hooks {
	struct cli_render r;
	struct cli_audit *audit;
	int audit_rc; /* cli_audit_close()'s */
	bool render;  /* spec given: stream, else only count */
	const struct cli_bmc_run *run;
};

void cli_bmc_frame(struct gf_cli *cli, struct gf_fanout *f, const struct gf_node *nodes, size_t n,
		   const struct gf_profile *const *profs)
{
	*f = (struct gf_fanout){
		.nodes = nodes,
		.n = n,
		.profs = profs,
		.cache_dir = cli->cache_dir,
		.cacert = cli->cacert,
		.insecure = cli->insecure,
		.tls_pin_new = cli->tls_pin_new,
	};
	cli_exec_opts(cli, &f->exec);
}

int cli_bmc_db(void *ud, struct gf_db **ret)
{
	return cli_db(((struct cli_render *)ud)->cli, ret);
}

void cli_bmc_warn_insecure(const struct gf_cli *cli, const struct gf_fanout *f)
{
	if (cli->insecure && f->tls)
		cli_warn(cli, "--insecure: BMC certificates are not checked, so anyone on the path "
			      "can pose as a BMC and read its credentials");
}

int cli_bmc_pins_report(struct gf_cli *cli, const struct gf_fanout *f)
{
	int rc = 0;

	if (f->pins_rc > 0)
		return f->pins_rc;
	if (f->pins_rc < 0) {
		cli_error("the certificate pins could not be stored: %s", f->pins_err.msg);
		return GF_EXIT_FAILED;
	}
	for (size_t k = 0; k < f->npinned; k++) {
		const struct gf_fanout_pinned *p = &f->pinned[k];
		const char *name = f->nodes[p->i].name;

		if (!p->other) {
			cli_warn(cli, "pinned the certificate of '%s' (sha256 %s)", name, p->seen);
			continue;
		}
		/* Another run pinned it first: its pin stays, and this run's certificate is suspect. */
		cli_error("the certificate of '%s' was pinned by another run meanwhile (sha256 %s); "
			  "this run saw sha256 %s and kept the other pin (if this one is right, run "
			  "'gpufleet nodes repin %s --expect %s')",
			  name, p->other, p->seen, name, p->seen);
		rc = GF_EXIT_FAILED;
	}
	return rc;
}

/* Before anything is sent: the warning, the audit intents (nothing is sent unless committed). */
static int bmc_start(void *ud, const struct gf_fanout *f)
{
	struct bmc_hooks *h = ud;
	const struct cli_bmc_run *run = h->run;
	int rc;

	cli_bmc_warn_insecure(h->r.cli, f);
	if (!run->audit)
		return 0;
	h->audit = cli_audit_open(h->r.cli, run->audit, run->nodes, run->n);
	cli_audit_details(h->audit, run->audit_detail);
	rc = cli_audit_intent(h->audit, NULL, 0);
	if (rc) {
		cli_audit_close(h->audit, NULL);
		h->audit = NULL;
	}
	return rc;
}

/* As each node finishes: its audit row completed, then rendered. */
static void bmc_done(void *ud, size_t i, const struct gf_result *slot)
{
	struct bmc_hooks *h = ud;

	cli_audit_done(h->audit, i, slot);
	if (h->render)
		cli_render_done(&h->r, i, slot);
	else
		cli_progress_done(&h->r, i, slot);
	if (h->run->on_done)
		h->run->on_done(h->run->done_ud, i, slot);
}

static void bmc_finish(void *ud, const struct gf_result *slots)
{
	struct bmc_hooks *h = ud;

	h->audit_rc = cli_audit_close(h->audit, slots);
	h->audit = NULL;
}

int cli_bmc_fanout(struct cli_bmc_run *run)
{
	struct gf_cli *cli = run->cli;
	struct bmc_hooks h = {
		.r = {.cli = cli,
		      .nodes = run->nodes,
		      .n = run->n,
		      .spec = run->spec,
		      .show_bmc = true,
		      .filtered = run->filtered},
		.render = run->spec != NULL,
		.run = run,
	};
	const struct gf_profile **profs = NULL;
	struct gf_fanout f;
	struct gf_err err = {0};
	int rc, prc;

	rc = cli_profiles(cli, CLI_PROFILE_BMC, run->nodes, run->n, &profs);
	if (rc)
		return rc;
	cli_bmc_frame(cli, &f, run->nodes, run->n, profs);
	f.opts = run->opts;
	f.op = run->op;
	f.ctx = run->ctx;
	f.action = run->action;
	f.may_be_restarting = run->may_be_restarting;
	f.keep = run->keep;
	if (!run->keep && !run->close_at_once)
		gf_fanout_later(&f, &run->later);
	f.reads_power = run->reads_power;
	f.exec.batch = run->batch;
	f.exec.interval = run->interval;
	if (run->timeout > 0)
		f.exec.timeout = run->timeout;
	f.hooks = (struct gf_fanout_hooks){
		.db = cli_bmc_db,
		.start = bmc_start,
		.done = bmc_done,
		.finish = bmc_finish,
		.ud = &h,
	};
	rc = gf_fanout_run(&f, &err);
	if (rc < 0)
		rc = cli_fail(&err);
	if (rc)
		goto out;
	run->slots = f.slots;
	f.slots = NULL;
	prc = cli_bmc_pins_report(cli, &f);
	if (!run->spec) {
		rc = GF_EXIT_OK;
		for (size_t i = 0; i < run->n; i++)
			if (!run->slots[i].ok)
				rc = GF_EXIT_FAILED;
	} else {
		rc = cli_render_finish(&h.r, run->slots);
	}
	if (prc && !rc)
		rc = prc;
	if (h.audit_rc && !rc)
		rc = h.audit_rc;
	rc = cli_interrupted(rc);
out:
	gf_fanout_release(&f);
	free(profs);
	return rc;
}

void cli_bmc_release(struct cli_bmc_run *run)
{
	/* What was printed is out before the logouts (stderr is not buffered). */
	fflush(stdout);
	gf_fanout_keep_release(&run->later);
	if (!run->slots)
		return;
	for (size_t i = 0; i < run->n; i++)
		gf_result_release(&run->slots[i]);
	free(run->slots);
	run->slots = NULL;
}

const struct gf_bmc_opts cli_bmc_one_read = {.few_reads = true};

static int bmc_verb(struct gf_cli *cli, int argc, char **argv, const struct cli_opt *opts,
		    size_t nopts, int (*on_opt)(void *ud, size_t idx, const char *arg),
		    gf_fanout_op op, const struct gf_render_spec **spec,
		    const struct gf_bmc_opts *bopts)
{
	struct cli_bmc_run run = {0};
	struct gf_node *nodes = NULL;
	char **args;
	int nargs, rc;
	size_t n = 0;

	rc = cli_parse(cli, argc, argv, opts, nopts, on_opt, (void *)spec, &args, &nargs);
	if (rc)
		return rc;
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	run = (struct cli_bmc_run){.cli = cli,
				   .nodes = nodes,
				   .n = n,
				   .op = op,
				   .spec = *spec,
				   .opts = bopts};
	rc = cli_bmc_fanout(&run);
	cli_bmc_release(&run);
	gf_nodes_free(nodes, n);
	return rc;
}

int cli_bmc_verb(struct gf_cli *cli, int argc, char **argv, gf_fanout_op op,
		 const struct gf_render_spec *spec, const struct gf_bmc_opts *bopts)
{
	return bmc_verb(cli, argc, argv, NULL, 0, NULL, op, &spec, bopts);
}

int cli_bmc_verb_opts(struct gf_cli *cli, int argc, char **argv, const struct cli_opt *opts,
		      size_t nopts, int (*on_opt)(void *ud, size_t idx, const char *arg),
		      gf_fanout_op op, const struct gf_render_spec **spec)
{
	return bmc_verb(cli, argc, argv, opts, nopts, on_opt, op, spec, NULL);
}

int cli_bmc_rollout_fan(void *ud, const struct gf_rollout_fanout *f)
{
	struct cli_bmc_fan *fan = ud;
	const struct gf_bmc_opts opts = {.request_timeout = fan->cli->timeout};
	struct cli_bmc_run run = {
		.cli = fan->cli,
		.nodes = f->nodes,
		.n = f->n,
		.op = f->op,
		.ctx = f->ctx,
		.audit = f->audit,
		.audit_detail = f->audit_detail,
		.opts = &opts,
		.timeout = f->timeout,
		.batch = f->batch,
		.interval = f->interval,
		.on_done = f->on_done,
		.done_ud = f->done_ud,
		.may_be_restarting = f->may_be_restarting,
		.keep = f->keep,
		.close_at_once = true,
	};
	int rc = cli_bmc_fanout(&run);

	fan->ran = run.slots != NULL;
	fan->code = rc;
	cli_bmc_release(&run);
	return rc == GF_EXIT_FAILED ? 0 : rc;
}
