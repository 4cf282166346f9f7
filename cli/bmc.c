#include "cli/bmc.h"

#include <stdlib.h>
#include <string.h>

#include "ipmi/ipmi.h"
#include "lib/buf.h"

struct bmc_task {
	const struct cli_bmc_run *run;
	const struct gf_profile **profs;  /* per node, resolved in the main thread */
	const char *cache_dir;
};

const struct gf_backend *cli_backend_for(const struct gf_node *n, struct gf_err *err)
{
	switch (n->protocol) {
	case GF_PROTO_IPMI:
	case GF_PROTO_AUTO: /* until Redfish lands, auto means IPMI */
		return &gf_ipmi_backend;
	case GF_PROTO_REDFISH:
	default:
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "node '%s' uses redfish, which this build does not speak yet", n->name);
		return NULL;
	}
}

static void bmc_task(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	const struct bmc_task *t = vctx;
	const struct gf_node *n = &t->run->nodes[i];
	struct gf_bmc_target target = {
		.node = n->name, .host = n->bmc, .port = n->bmc_port, .prof = t->profs[i],
		.deadline = deadline, .cache_dir = t->cache_dir,
	};
	const struct gf_backend *be = NULL;
	struct gf_err err = {0};
	void *sess = NULL;

	slot->data = json_object();
	if (t->run->action)
		json_object_set_new(slot->data, "action", json_string(t->run->action));
	if (!n->bmc) {
		gf_err_set(&err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has no BMC", n->name);
		goto fail;
	}
	be = cli_backend_for(n, &err);
	if (!be)
		goto fail;
	if (be->open(&target, &sess, &err) < 0)
		goto fail;
	if (t->run->op(be, sess, n, t->run->ctx, slot, &err) < 0)
		goto fail;
	be->close(sess);
	slot->ok = true;
	return;
fail:
	if (sess)
		be->close(sess);
	gf_result_fail(slot, &err);
}

static int resolve_profiles(struct gf_cli *cli, const struct gf_node *nodes, size_t n,
			    const struct gf_profile ***ret)
{
	const struct gf_profile **profs;
	struct gf_err err = {0};
	int rc = cli_creds(cli);

	if (rc)
		return rc;
	profs = gf_xcalloc(n ? n : 1, sizeof(*profs));
	for (size_t i = 0; i < n; i++) {
		if (!nodes[i].bmc)
			continue;
		if (gf_creds_resolve(&cli->creds, nodes[i].profile, &profs[i], &err) < 0) {
			free(profs);
			return cli_fail(&err);
		}
	}
	*ret = profs;
	return 0;
}

int cli_bmc_fanout(struct cli_bmc_run *run)
{
	struct gf_cli *cli = run->cli;
	struct bmc_task t = {.run = run, .cache_dir = cli->cache_dir};
	struct cli_render r = {.cli = cli, .nodes = run->nodes, .n = run->n, .spec = run->spec,
			       .show_bmc = true};
	struct gf_exec_opts eo;
	struct gf_err err = {0};
	int rc;

	rc = resolve_profiles(cli, run->nodes, run->n, &t.profs);
	if (rc)
		return rc;
	run->slots = gf_xcalloc(run->n ? run->n : 1, sizeof(*run->slots));
	cli_exec_opts(cli, &eo);
	eo.batch = run->batch;
	eo.interval = run->interval;
	if (gf_exec_run(&eo, run->n, bmc_task, &t, run->slots, run->spec ? cli_render_done : NULL,
			&r, &err) < 0) {
		free(t.profs);
		return cli_fail(&err);
	}
	free(t.profs);
	if (!run->spec) {
		for (size_t i = 0; i < run->n; i++)
			if (!run->slots[i].ok)
				return GF_EXIT_FAILED;
		return GF_EXIT_OK;
	}
	return cli_render_finish(&r, run->slots);
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
