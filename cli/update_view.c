/*
 * How a rollout looks on the terminal and in its outputs: each node's plan
 * as rendered, the upload bar of a batch, the batch lines, each node as it
 * is stored (ndjson), a stored rollout printed. The engine calls these
 * through its hooks (fleet/rollout.h); the verb is cli/cmd_update.c.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/update.h"
#include "lib/util.h"

/*
 * The upload bar of a batch, on a terminal, redrawn on stderr by a ticker
 * thread from the batch's progress: the bytes of the images handed to the
 * BMCs so far against the bytes its nodes push, and the nodes done.
 */
#define METER_WIDTH 30

static void meter_draw(void *ud)
{
	const struct gf_rollout_progress *p = ud;
	unsigned long long total = atomic_load(&p->total), sent = atomic_load(&p->sent);
	unsigned long long shown = sent < total ? sent : total;
	size_t fill = total ? (size_t)(METER_WIDTH * shown / total) : 0;
	char bar[METER_WIDTH + 1];

	memset(bar, '#', fill);
	memset(bar + fill, '.', METER_WIDTH - fill);
	bar[METER_WIDTH] = '\0';
	cli_progress_line("batch %u/%u: uploads [%s] %3u%% %.1f/%.1f MiB, %zu/%zu nodes done",
			  p->batch, p->batches, bar, total ? (unsigned)(100 * shown / total) : 0,
			  (double)sent / 1048576, (double)total / 1048576,
			  atomic_load(&p->finished), p->nodes);
}

/* A node's plan as rendered: the frame's members (protocol), model, dialect, updates, ... */
static json_t *plan_json(const struct upd *u, const struct gf_rollout_plan *p,
			 const struct gf_result *slot)
{
	json_t *o = slot->data ? json_deep_copy(slot->data) : json_object();
	json_t *ups, *skipped;

	if (!slot->ok)
		return o;
	ups = json_array();
	skipped = json_array();
	for (size_t i = 0; i < p->node.nitems; i++) {
		const struct gf_rollout_item *it = &p->node.items[i];

		if (it->state == GF_RS_SKIPPED)
			json_array_append_new(skipped, json_pack("{s:s, s:s}", "component",
								 it->component, "version", it->to));
		else
			json_array_append_new(ups, gf_rollout_item_json(it));
	}
	if (p->model)
		json_object_set_new(o, "model", json_string(p->model));
	if (p->dialect)
		json_object_set_new(o, "dialect", json_string(p->dialect));
	json_object_set_new(o, "updates", ups);
	json_object_set_new(o, "up_to_date", skipped);
	if (u->dry_run)
		json_object_set_new(o, "dry_run", json_true());
	return o;
}

static void on_planned(void *ud, size_t i, const struct gf_rollout_plan *p,
		       const struct gf_result *slot)
{
	struct upd *u = ud;
	struct gf_result *r = &u->shown[i];

	if (!u->shown && p->node.state == GF_RS_SKIPPED && p->node.kind)
		cli_warn(u->cli,
			 "node '%s' is skipped, its bmc did not answer (%s): update resume "
			 "plans it again",
			 p->node.node, p->node.message);
	if (!u->shown)
		return;
	*r = *slot;
	r->data = plan_json(u, p, slot);
	cli_render_stream(&u->render, i, r);
}

static void on_batch_start(void *ud, const struct gf_rollout_progress *p)
{
	struct upd *u = ud;

	/* The upload bar instead of the fan-out's count of nodes done. */
	u->progress = u->cli->progress;
	if (u->progress && !u->cli->quiet)
		u->meter = cli_ticker_start(meter_draw, (void *)p, 0.25);
	u->cli->progress = u->progress && !u->meter;
}

static void on_batch_end(void *ud, const struct gf_rollout_progress *p, size_t ok)
{
	struct upd *u = ud;

	u->cli->progress = u->progress;
	cli_ticker_stop(u->meter);
	u->meter = NULL;
	if (u->cli->progress)
		cli_note(u->cli, "gpufleet: batch %u/%u: %zu nodes, %zu ok, %zu not ok", p->batch,
			 p->batches, p->nodes, ok, p->nodes - ok);
}

static const struct gf_col status_cols[] = {
	{"component", "COMPONENT"},
	{"from", "FROM"},
	{"to", "TO"},
	{"state", "STATE"},
};

/* As a node of a batch is stored: ndjson streams it. */
static void on_node_done(void *ud, long id, const struct gf_rollout_node *rn,
			 const struct gf_err *store_err)
{
	struct upd *u = ud;

	if (store_err)
		cli_error("the state of node '%s' could not be stored: %s", rn->node,
			  store_err->msg);
	if (u->cli->format == GF_FMT_NDJSON) {
		json_t *o = gf_rollout_node_json(id, rn);
		char *line = json_dumps(o, JSON_COMPACT);

		printf("%s\n", line ? line : "null");
		fflush(stdout);
		free(line);
		json_decref(o);
	}
}

static void on_stopping(void *ud, size_t failed, unsigned long max_failures)
{
	struct upd *u = ud;

	cli_warn(u->cli, "%zu nodes failed (--max-failures %lu): no more nodes are started", failed,
		 max_failures);
}

void upd_run_init(struct upd *u, const struct gf_catalog *cat, const struct gf_rollout_opts *o,
		  const struct gf_node *nodes, size_t n, struct gf_db *db,
		  struct gf_rollout_run *ret)
{
	*ret = (struct gf_rollout_run){
		.cat = cat,
		.o = o,
		.nodes = nodes,
		.n = n,
		.fanout = u->cli->fanout,
		.db = db,
		.fan = {.run = cli_bmc_rollout_fan, .ud = &u->fan},
		.hooks =
			{
				.ud = u,
				.planned = on_planned,
				.batch_start = on_batch_start,
				.batch_end = on_batch_end,
				.node_done = on_node_done,
				.stopping = on_stopping,
			},
	};
}

static const struct gf_col plan_cols[] = {
	{"component", "COMPONENT"},   {"from", "FROM"},     {"to", "TO"}, {"action", "ACTION"},
	{"activation", "ACTIVATION"}, {"sha256", "SHA256"},
};

const struct gf_render_spec upd_plan_spec = {
	.cols = plan_cols,
	.ncols = sizeof(plan_cols) / sizeof(plan_cols[0]),
	.rows_key = "updates",
};

/* Print rollout @id as stored, and the exit code: 0 when every node is done or skipped. */
int upd_print_rollout(struct gf_cli *cli, struct gf_db *db, long id, bool quiet_ndjson)
{
	static const struct gf_render_spec spec = {
		.cols = status_cols,
		.ncols = sizeof(status_cols) / sizeof(status_cols[0]),
		.rows_key = "updates",
	};
	struct gf_rollout r = {0};
	struct gf_err err = {0};
	json_t **objs;
	int rc = GF_EXIT_OK;

	if (gf_rollout_load(db, id, &r, &err) < 0)
		return err.code == GF_E_NOTFOUND ? (cli_error("%s", err.msg), GF_EXIT_USAGE)
						 : cli_fail(&err);
	objs = gf_xcalloc(r.n ? r.n : 1, sizeof(*objs));
	for (size_t i = 0; i < r.n; i++) {
		objs[i] = gf_rollout_node_json(r.id, &r.nodes[i]);
		if (!gf_rollout_state_ok(r.nodes[i].state))
			rc = GF_EXIT_FAILED;
	}
	if (!(quiet_ndjson && cli->format == GF_FMT_NDJSON)) {
		if (cli->format == GF_FMT_TABLE)
			cli_note(cli, "rollout %ld (%s, started by %s, catalog %s)", r.id,
				 gf_rollout_state_name(r.state), r.user ? r.user : "?",
				 r.catalog_path);
		inv_print(cli, objs, r.n, &spec);
	}
	for (size_t i = 0; i < r.n; i++)
		json_decref(objs[i]);
	free(objs);
	gf_rollout_release(&r);
	return rc;
}
