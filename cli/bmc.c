#include "cli/bmc.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "ipmi/ipmi.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "redfish/redfish.h"

/* How long --protocol auto waits for /redfish/v1 before it settles for IPMI. */
#define PROBE_S 3.0
#define EXIT_INTERRUPTED 130

/* Set by SIGINT while a fan-out runs; workers stop soon and close their sessions. */
static volatile sig_atomic_t interrupted;

struct bmc_task {
	const struct cli_bmc_run *run;
	const struct gf_profile **profs;  /* per node, resolved in the main thread */
	const char *cache_dir;
	char **pins;                      /* per node: the pinned certificate, NULL: none */
	char (*seen)[GF_REDFISH_FP_SIZE]; /* per node: the certificate seen (written by its worker) */
};

const struct gf_backend *cli_backend_for(const struct gf_node *n, struct gf_err *err)
{
	switch (n->protocol) {
	case GF_PROTO_REDFISH:
		return &gf_redfish_backend;
	case GF_PROTO_IPMI:
	case GF_PROTO_AUTO:
		return &gf_ipmi_backend;
	default:
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has an unknown protocol",
			   n->name);
		return NULL;
	}
}

/* The first Ctrl-C asks the workers to stop; a second one ends the process at once. */
static void on_sigint(int sig)
{
	if (interrupted) {
		signal(SIGINT, SIG_DFL);
		raise(SIGINT);
		return;
	}
	interrupted = 1;
}

bool cli_bmc_interrupted(void)
{
	return interrupted != 0;
}

/* Pinning on first use: --tls-pin new, or redfish_tls_pin = new in the node's profile. */
static bool pin_new(const struct gf_cli *cli, const struct gf_profile *prof)
{
	return cli->tls_pin_new || (prof && prof->redfish_tls_pin_new);
}

static void bmc_task(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	const struct bmc_task *t = vctx;
	const struct cli_bmc_run *run = t->run;
	const struct gf_node *n = &run->nodes[i];
	struct gf_bmc_target target = {
		.node = n->name, .host = n->bmc, .port = n->bmc_port, .prof = t->profs[i],
		.deadline = deadline, .cache_dir = t->cache_dir,
		.cacert = run->cli->cacert, .insecure = run->cli->insecure,
		.tls_pin = t->pins[i], .tls_pin_new = pin_new(run->cli, t->profs[i]),
		.log_name = run->log_name, .cancel = &interrupted,
		.no_thresholds = run->no_thresholds,
	};
	const struct gf_backend *be = NULL;
	struct gf_err err = {0};
	void *sess = NULL;

	slot->data = json_object();
	if (run->action)
		json_object_set_new(slot->data, "action", json_string(run->action));
	if (interrupted) {
		gf_err_set(&err, GF_E_NODE, GF_EK_INTERNAL, "interrupted before node '%s' was started",
			   n->name);
		goto fail;
	}
	if (!n->bmc) {
		gf_err_set(&err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has no BMC", n->name);
		goto fail;
	}
	be = cli_backend_for(n, &err);
	if (!be)
		goto fail;
	if (n->protocol == GF_PROTO_AUTO) {
		if (gf_redfish_probe(&target, PROBE_S))
			be = &gf_redfish_backend;
		json_object_set_new(slot->data, "protocol", json_string(be->name));
	}
	if (be->open(&target, &sess, &err) < 0)
		goto fail;
	if (be == &gf_redfish_backend && gf_redfish_fingerprint(sess))
		snprintf(t->seen[i], GF_REDFISH_FP_SIZE, "%s", gf_redfish_fingerprint(sess));
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

static bool may_speak_redfish(const struct gf_node *n)
{
	return n->bmc && (n->protocol == GF_PROTO_REDFISH || n->protocol == GF_PROTO_AUTO);
}

/* The pins of the nodes that may speak Redfish, read before the workers start. */
static int load_pins(struct gf_cli *cli, const struct gf_node *nodes, size_t n, char ***ret)
{
	char **pins = gf_xcalloc(n ? n : 1, sizeof(*pins));
	struct gf_err err = {0};
	struct gf_db *db = NULL;
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (!may_speak_redfish(&nodes[i]))
			continue;
		if (!db && (rc = cli_db(cli, &db)) != 0) {
			free(pins);
			return rc;
		}
		if (gf_db_tls_pin_get(db, nodes[i].name, &pins[i], &err) < 0) {
			for (size_t k = 0; k < i; k++)
				free(pins[k]);
			free(pins);
			return cli_fail(&err);
		}
	}
	*ret = pins;
	return 0;
}

/* With --tls-pin new or a profile's redfish_tls_pin, record the certificates first seen. */
static int store_pins(struct gf_cli *cli, const struct gf_node *nodes, size_t n,
		      const struct gf_profile **profs, char *const *pins,
		      char (*seen)[GF_REDFISH_FP_SIZE])
{
	const char **names = gf_xcalloc(n ? n : 1, sizeof(*names));
	const char **fps = gf_xcalloc(n ? n : 1, sizeof(*fps));
	struct gf_err err = {0};
	struct gf_db *db;
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		if (!pin_new(cli, profs[i]) || pins[i] || !seen[i][0])
			continue;
		names[k] = nodes[i].name;
		fps[k++] = seen[i];
		cli_warn(cli, "pinned the certificate of '%s' (sha256 %s)", nodes[i].name, seen[i]);
	}
	if (k) {
		rc = cli_db(cli, &db);
		if (!rc && gf_db_tls_pin_set(db, names, fps, k, &err) < 0) {
			cli_error("the certificate pins could not be stored: %s", err.msg);
			rc = GF_EXIT_FAILED;
		}
	}
	free(names);
	free(fps);
	return rc;
}

int cli_bmc_fanout(struct cli_bmc_run *run)
{
	struct gf_cli *cli = run->cli;
	struct bmc_task t = {.run = run, .cache_dir = cli->cache_dir};
	struct cli_render r = {.cli = cli, .nodes = run->nodes, .n = run->n, .spec = run->spec,
			       .show_bmc = true};
	struct sigaction sa, old;
	struct gf_exec_opts eo;
	struct gf_err err = {0};
	bool redfish = false;
	int rc, prc;

	rc = cli_profiles(cli, CLI_PROFILE_BMC, run->nodes, run->n, &t.profs);
	if (rc)
		return rc;
	rc = load_pins(cli, run->nodes, run->n, &t.pins);
	if (rc) {
		free(t.profs);
		return rc;
	}
	for (size_t i = 0; i < run->n; i++)
		redfish = redfish || may_speak_redfish(&run->nodes[i]);
	if (redfish && cli->insecure)
		cli_warn(cli, "--insecure: BMC certificates are not checked, so anyone on the path "
			 "can pose as a BMC and read its credentials");
	t.seen = gf_xcalloc(run->n ? run->n : 1, sizeof(*t.seen));
	run->slots = gf_xcalloc(run->n ? run->n : 1, sizeof(*run->slots));
	cli_exec_opts(cli, &eo);
	eo.batch = run->batch;
	eo.interval = run->interval;
	eo.cancel = &interrupted;

	/* Ctrl-C: let the workers close their sessions (a Redfish BMC has few) and stop. */
	interrupted = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	rc = gf_exec_run(&eo, run->n, bmc_task, &t, run->slots,
			 run->spec ? cli_render_done : cli_progress_done, &r, &err);
	sigaction(SIGINT, &old, NULL);
	if (rc < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	prc = store_pins(cli, run->nodes, run->n, t.profs, t.pins, t.seen);
	if (!run->spec) {
		rc = GF_EXIT_OK;
		for (size_t i = 0; i < run->n; i++)
			if (!run->slots[i].ok)
				rc = GF_EXIT_FAILED;
	} else {
		rc = cli_render_finish(&r, run->slots);
	}
	if (prc && !rc)
		rc = prc;
	if (interrupted) {
		cli_error("interrupted");
		rc = EXIT_INTERRUPTED;
	}
out:
	for (size_t i = 0; i < run->n; i++)
		free(t.pins[i]);
	free(t.pins);
	free(t.seen);
	free(t.profs);
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
