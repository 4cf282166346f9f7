/* gpufleet host: NVIDIA driver, CUDA, GPUs and their health, over SSH or here. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/verbs.h"
#include "fleet/hosts.h"
#include "host/facts.h"
#include "host/hostcollect.h"
#include "inventory/events.h"
#include "lib/buf.h"
#include "lib/util.h"

enum { H_LOCAL, H_ACCEPT_NEW, H_COMMANDS };

static const struct cli_opt host_opts[] = {
	[H_LOCAL] = {{"local", no_argument, NULL, 0}, NULL, "collect on this machine, without SSH"},
	[H_ACCEPT_NEW] = {{"ssh-accept-new", no_argument, NULL, 0},
			  NULL,
			  "trust and record unknown host keys (never a changed one)"},
	[H_COMMANDS] = {{"commands", no_argument, NULL, 0},
			NULL,
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

/*
 * A node's object, built as it finishes: {"status", "host"} (status failed: no "host"), then
 * streamed (ndjson) and counted. Nothing when it never started.
 */
/* The render state, and the Xid lines of the hosts as events (stored at the end). */
struct host_run {
	struct cli_render r; /* first: cli_render_done() takes the run as one */
	struct gf_event_list xids;
};

static void host_done(void *ud, size_t i, struct gf_result *slot, enum gf_hosts_status status,
		      const struct gf_hostfacts *facts)
{
	struct host_run *run = ud;

	static const char *const names[] = {
		[GF_HOSTS_FAILED] = "failed",
		[GF_HOSTS_PARTIAL] = "partial",
		[GF_HOSTS_OK] = "ok",
	};

	if (status != GF_HOSTS_NOT_RUN) {
		slot->data = json_object();
		json_object_set_new(slot->data, "status", json_string(names[status]));
		if (facts)
			json_object_set_new(slot->data, "host", gf_hostfacts_to_json(facts));
		gf_events_from_xids(run->r.nodes[i].name, facts, gf_walltime(), &run->xids);
	}
	cli_render_done(&run->r, i, slot);
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
		const char *first = json_string_value(json_object_get(json_array_get(gpus, 0),
								      "name"));

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

/* The hosts' GPU Xid lines into the inventory's events (events list), each once. */
static int store_xids(struct gf_cli *cli, const struct gf_event_list *l)
{
	struct gf_err err = {0};
	struct gf_db *db;
	int rc = cli_db(cli, &db);

	if (rc)
		return rc;
	if (gf_events_store_list(db, l, NULL, &err) < 0) {
		cli_fail(&err);
		return GF_EXIT_FAILED;
	}
	return 0;
}

static const struct gf_col host_cols[] = {
	{"host.driver", "DRIVER"}, {"host.cuda_driver", "CUDA"}, {"host.cuda_toolkit", "TOOLKIT"},
	{"gpus", "GPUS"},          {"health", "HEALTH"},
};

int cmd_host(struct gf_cli *cli, int argc, char **argv)
{
	struct host_args a = {0};
	struct gf_node *nodes = NULL;
	struct gf_render_spec spec = {host_cols, sizeof(host_cols) / sizeof(host_cols[0]), NULL,
				      false, false};
	struct host_run run = {.r = {.cli = cli, .spec = &spec}};
	struct cli_render *r = &run.r;
	struct gf_hosts h = {.done = host_done, .ud = &run};
	const struct gf_profile **profs = NULL;
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
		rc = cli_profiles(cli, CLI_PROFILE_SSH, nodes, n, &profs);
		if (rc)
			goto out;
	}
	h.nodes = nodes;
	h.n = n;
	h.profs = profs;
	h.local = a.local;
	h.accept_new = a.accept_new;
	r->nodes = nodes;
	r->n = n;
	cli_exec_opts(cli, &h.exec);
	if (gf_hosts_run(&h, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		if (cli->format == GF_FMT_TABLE || cli->format == GF_FMT_CSV)
			for (size_t i = 0; i < n; i++)
				if (json_object_get(h.slots[i].data, "host"))
					add_summaries(h.slots[i].data);
		rc = cli_interrupted(cli_render_finish(r, h.slots));
		if (run.xids.n && store_xids(cli, &run.xids) && rc == GF_EXIT_OK)
			rc = GF_EXIT_FAILED;
	}
	gf_hosts_release(&h);
out:
	gf_event_list_release(&run.xids);
	free(profs);
	gf_nodes_free(nodes, n);
	return rc;
}
