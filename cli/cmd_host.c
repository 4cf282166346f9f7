/* gpufleet host: NVIDIA driver, CUDA, GPUs and their health, over SSH or here. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/verbs.h"
#include "host/facts.h"
#include "host/hostcollect.h"
#include "lib/buf.h"
#include "lib/util.h"

enum { H_LOCAL, H_ACCEPT_NEW, H_COMMANDS };

static const struct cli_opt host_opts[] = {
	[H_LOCAL] = {{"local", no_argument, NULL, 0}, NULL,
		     "collect on this machine, without SSH"},
	[H_ACCEPT_NEW] = {{"ssh-accept-new", no_argument, NULL, 0}, NULL,
			  "trust and record unknown host keys (never a changed one)"},
	[H_COMMANDS] = {{"commands", no_argument, NULL, 0}, NULL,
			"print the commands that run on each host, and exit"},
};

struct host_args {
	bool local, accept_new, commands;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct host_args *a = ud;

	switch (idx) {
	case H_LOCAL: a->local = true; break;
	case H_ACCEPT_NEW: a->accept_new = true; break;
	case H_COMMANDS: a->commands = true; break;
	default: break;
	}
	return 0;
}

struct host_task {
	const struct gf_node *nodes;
	const struct gf_profile **profs;   /* per node, found in the main thread */
	bool local;
	bool accept_new;
};

static void host_task(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	const struct host_task *t = vctx;
	const struct gf_node *n = &t->nodes[i];
	struct gf_hostfacts facts = {0};
	struct gf_err err = {0};
	int rc;

	if (t->local) {
		struct gf_host_runner runner = {.run = gf_host_run_local,
						.cancel = gf_exec_cancel_flag()};

		rc = gf_host_collect(&runner, deadline, &facts, &err);
	} else if (!n->ssh) {
		rc = gf_err_set(&err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"node '%s' has no ssh address (nodes add --ssh)", n->name);
	} else {
		struct gf_ssh_target target = {
			.node = n->name, .spec = n->ssh, .prof = t->profs[i],
			.accept_new = t->accept_new, .deadline = deadline,
			.cancel = gf_exec_cancel_flag(),
		};

		rc = gf_host_facts_ssh(&target, &facts, &err);
	}
	slot->data = json_object();
	if (rc < 0) {
		json_object_set_new(slot->data, "status", json_string("failed"));
		gf_result_fail(slot, &err);
		return;
	}
	/* A host that answered in part: what it answered is kept, the node fails as partial. */
	rc = gf_hostfacts_partial_err(&facts, &err);
	json_object_set_new(slot->data, "status", json_string(rc < 0 ? "partial" : "ok"));
	json_object_set_new(slot->data, "host", gf_hostfacts_to_json(&facts));
	gf_hostfacts_release(&facts);
	if (rc < 0)
		gf_result_fail(slot, &err);
	else
		slot->ok = true;
}

/* The summary columns of the table: "8x NVIDIA H100 80GB HBM3", "ok, xid 79x2". */
static void add_summaries(json_t *data)
{
	json_t *host = json_object_get(data, "host");
	json_t *gpus = json_object_get(host, "gpus"), *health = json_object_get(host, "health");
	json_t *xid = json_object_get(health, "xid"), *g, *v;
	struct gf_buf b = GF_BUF_INIT;
	const char *key;
	size_t i, same = 0;

	json_array_foreach(gpus, i, g) {
		const char *name = json_string_value(json_object_get(g, "name"));
		const char *first = json_string_value(json_object_get(json_array_get(gpus, 0), "name"));

		if (name && first && strcmp(name, first) == 0)
			same++;
	}
	if (json_array_size(gpus) == 0)
		gf_buf_adds(&b, "none");
	else if (same == json_array_size(gpus))
		gf_buf_addf(&b, "%zux %s", same,
			    json_string_value(json_object_get(json_array_get(gpus, 0), "name")));
	else
		gf_buf_addf(&b, "%zu (mixed)", json_array_size(gpus));
	json_object_set_new(data, "gpus", json_string(gf_buf_str(&b)));
	gf_buf_reset(&b);
	gf_buf_adds(&b, json_string_value(json_object_get(health, "state")));
	if (json_string_value(json_object_get(host, "driver_library"))) {
		const char *module = json_string_value(json_object_get(host, "driver"));

		gf_buf_addf(&b, " (module %s, library %s)", module ? module : "?",
			    json_string_value(json_object_get(host, "driver_library")));
	}
	json_object_foreach(xid, key, v)
		gf_buf_addf(&b, "%s xid %s x%lld", b.len ? "," : "", key,
			    (long long)json_integer_value(v));
	json_object_set_new(data, "health", json_string(gf_buf_str(&b)));
	gf_buf_release(&b);
}

static void print_commands(void)
{
	char *q = gf_hostfacts_query_cmd(gf_hostfacts_query_fields, gf_hostfacts_nquery_fields);

	printf("%s\n", q);
	free(q);
	for (int c = GF_HC_SMI_QUERY + 1; c < GF_HC_COUNT; c++)
		printf("%s\n", gf_hostcmd_line(c));
}

static const struct gf_col host_cols[] = {
	{"host.driver", "DRIVER"}, {"host.cuda_driver", "CUDA"}, {"host.cuda_toolkit", "TOOLKIT"},
	{"gpus", "GPUS"}, {"health", "HEALTH"},
};

int cmd_host(struct gf_cli *cli, int argc, char **argv)
{
	struct host_args a = {0};
	struct gf_node *nodes = NULL;
	struct gf_render_spec spec = {host_cols, sizeof(host_cols) / sizeof(host_cols[0]), NULL, false, false};
	struct cli_render r = {.cli = cli, .spec = &spec};
	struct host_task t = {0};
	struct gf_result *slots = NULL;
	struct gf_exec_opts eo;
	struct gf_err err = {0};
	char **args;
	int nargs, rc;
	size_t n = 0;

	rc = cli_parse(cli, argc, argv, host_opts, sizeof(host_opts) / sizeof(host_opts[0]), on_opt,
		       &a, &args, &nargs);
	if (rc)
		return rc;
	if (a.commands) {
		print_commands();
		return GF_EXIT_OK;
	}
	if (a.local) {
		char name[256] = "localhost";

		if (nargs > 0 || cli->hosts) {
			cli_error("host --local takes no targets");
			return GF_EXIT_USAGE;
		}
		if (gethostname(name, sizeof(name) - 1) < 0)
			snprintf(name, sizeof(name), "localhost");
		nodes = gf_xcalloc(1, sizeof(*nodes));
		nodes[0].name = gf_xstrdup(name);
		n = 1;
	} else {
		rc = cli_targets(cli, args, nargs, false, &nodes, &n);
		if (rc)
			return rc;
		/* -H names SSH hosts here: "host[:port]", the user from the profile. */
		for (size_t i = 0; cli->hosts && i < n; i++)
			if (!nodes[i].ssh)
				nodes[i].ssh = gf_xstrdup(nodes[i].name);
		rc = cli_profiles(cli, CLI_PROFILE_SSH, nodes, n, &t.profs);
		if (rc)
			goto out;
		if (gf_ssh_global_init(&err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
	}
	t.nodes = nodes;
	t.local = a.local;
	t.accept_new = a.accept_new;
	r.nodes = nodes;
	r.n = n;
	slots = gf_xcalloc(n ? n : 1, sizeof(*slots));
	cli_exec_opts(cli, &eo);
	if (gf_exec_run(&eo, n, host_task, &t, slots, cli_render_done, &r, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		if (cli->format == GF_FMT_TABLE || cli->format == GF_FMT_CSV)
			for (size_t i = 0; i < n; i++)
				if (json_object_get(slots[i].data, "host"))
					add_summaries(slots[i].data);
		rc = cli_interrupted(cli_render_finish(&r, slots));
	}
	for (size_t i = 0; i < n; i++)
		gf_result_release(&slots[i]);
	free(slots);
	if (!a.local)
		gf_ssh_global_cleanup();
out:
	free(t.profs);
	gf_nodes_free(nodes, n);
	return rc;
}
