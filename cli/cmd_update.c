/*
 * gpufleet update plan|run|status|resume: firmware rollouts from a catalog,
 * planned from a fresh read of each node's firmware inventory, pushed in
 * batches, and `done` only once the new version is read back.
 */
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/bmc.h"
#include "cli/inv.h"
#include "cli/verbs.h"
#include "inventory/catalog.h"
#include "inventory/rollout.h"
#include "lib/buf.h"
#include "lib/util.h"

enum {
	U_CATALOG, U_COMPONENT, U_CANARY, U_BATCH, U_MAX_FAILURES, U_DRY_RUN, U_YES, U_REBOOT,
	U_UPDATE_TIMEOUT, U_READBACK_WAIT,
};

static const struct cli_opt update_opts[] = {
	[U_CATALOG] = {{"catalog", required_argument, NULL, 0}, "FILE", "the firmware catalog (JSON, see gpufleet-update(1))"},
	[U_COMPONENT] = {{"component", required_argument, NULL, 0}, "PATTERN", "only components whose key matches"},
	[U_CANARY] = {{"canary", required_argument, NULL, 0}, "N", "update N nodes first and alone"},
	[U_BATCH] = {{"batch", required_argument, NULL, 0}, "N", "nodes updated at once (default: the fan-out)"},
	[U_MAX_FAILURES] = {{"max-failures", required_argument, NULL, 0}, "K", "stop starting nodes once more than K failed (default 0)"},
	[U_DRY_RUN] = {{"dry-run", no_argument, NULL, 'n'}, NULL, "show the plan, send nothing"},
	[U_YES] = {{"yes", no_argument, NULL, 'y'}, NULL, "update more than one node without asking"},
	[U_REBOOT] = {{"reboot", no_argument, NULL, 0}, NULL, "restart hosts whose firmware needs it"},
	[U_UPDATE_TIMEOUT] = {{"update-timeout", required_argument, NULL, 0}, "SECONDS", "a node's whole update (default 1800)"},
	[U_READBACK_WAIT] = {{"readback-wait", required_argument, NULL, 0}, "SECONDS", "how long a new version may take to show (default 60)"},
};

struct update_args {
	const char *catalog;
	const char *component;
	unsigned long canary, batch, max_failures;
	bool dry_run, yes, reboot;
	double update_timeout, readback_wait;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct update_args *a = ud;
	struct gf_err err = {0};

	switch (idx) {
	case U_CATALOG: a->catalog = arg; return 0;
	case U_COMPONENT: a->component = arg; return 0;
	case U_CANARY:
		return gf_parse_uint(arg, 1, 100000, &a->canary, &err, "--canary") < 0 ? cli_fail(&err) : 0;
	case U_BATCH:
		return gf_parse_uint(arg, 1, 100000, &a->batch, &err, "--batch") < 0 ? cli_fail(&err) : 0;
	case U_MAX_FAILURES:
		return gf_parse_uint(arg, 0, 1000000, &a->max_failures, &err, "--max-failures") < 0
			? cli_fail(&err) : 0;
	case U_DRY_RUN: a->dry_run = true; return 0;
	case U_YES: a->yes = true; return 0;
	case U_REBOOT: a->reboot = true; return 0;
	case U_UPDATE_TIMEOUT:
		return gf_parse_seconds(arg, 1, 7 * 86400, &a->update_timeout, &err, "--update-timeout") < 0
			? cli_fail(&err) : 0;
	case U_READBACK_WAIT:
		return gf_parse_seconds(arg, 0, 86400, &a->readback_wait, &err, "--readback-wait") < 0
			? cli_fail(&err) : 0;
	default:
		return 0;
	}
}

struct upload_meter;

/* What the workers read: the catalog and the options. Read-only while they run. */
struct upd_ctx {
	const struct gf_catalog *cat;
	const struct update_args *a;
	bool resume;                /* a node left unknown: wait for its BMC's tasks first */
	bool dry_run;               /* plan objects say "dry_run": true */
	const char *const *unknown; /* resume: nodes a run left running (outcome unknown) */
	size_t nunknown;
	const struct gf_rollout *stored; /* resume: the rollout as stored before it */
	struct upload_meter *meter; /* the batch's upload bar (its counters are the workers'), or NULL */
};

/* resume: did an earlier run leave @pi of node @node staged, pending its activation? */
static bool was_staged(const struct upd_ctx *ctx, const char *node, const struct gf_plan_item *pi)
{
	for (size_t i = 0; ctx->stored && i < ctx->stored->n; i++) {
		const struct gf_rollout_node *rn = &ctx->stored->nodes[i];

		if (strcmp(rn->node, node) != 0)
			continue;
		for (size_t k = 0; k < rn->nitems; k++) {
			const struct gf_rollout_item *it = &rn->items[k];

			if (strcmp(it->component, pi->component) == 0 && it->to &&
			    strcmp(it->to, pi->to) == 0 && strcmp(it->state, "pending-activation") == 0)
				return true;
		}
	}
	return false;
}

static bool is_unknown(const struct upd_ctx *ctx, const char *node)
{
	for (size_t i = 0; i < ctx->nunknown; i++)
		if (strcmp(ctx->unknown[i], node) == 0)
			return true;
	return false;
}

/* cli_bmc_run's may_be_restarting: a node a killed run left running may be mid-reset. */
static bool left_running(const void *vctx, const struct gf_node *n)
{
	const struct upd_ctx *ctx = vctx;

	return ctx->resume && is_unknown(ctx, n->name);
}

/* One node's fresh read: what its BMC offers, its firmware, the plan. */
struct node_plan {
	struct gf_fw_caps caps;
	struct gf_component_list comps;
	struct gf_plan plan;
};

static void node_plan_release(struct node_plan *p)
{
	gf_fw_caps_release(&p->caps);
	gf_component_list_release(&p->comps);
	gf_plan_release(&p->plan);
}

static int read_plan(const struct gf_backend *be, void *sess, const struct gf_node *n,
		     const struct upd_ctx *ctx, struct node_plan *ret, struct gf_err *err)
{
	struct node_plan p = {0};

	if (!be->fw_caps || !be->fw_push || !be->firmware)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s cannot update the firmware of node '%s'", be->title, n->name);
	if (be->fw_caps(sess, &p.caps, err) < 0)
		return GF_E_NODE;
	if (be->firmware(sess, &p.comps, err) < 0) {
		node_plan_release(&p);
		return GF_E_NODE;
	}
	gf_catalog_plan(ctx->cat, p.caps.model, p.caps.dialect, &p.comps, ctx->a->component, &p.plan);
	*ret = p;
	return 0;
}

static enum gf_fw_method method_of(const struct upd_ctx *ctx, const struct node_plan *p,
				   const struct gf_plan_item *it)
{
	const struct gf_catalog_image *im = &ctx->cat->v[it->image];

	return gf_fw_method_for(&p->caps, im->file != NULL, im->image_uri != NULL);
}

/* {"component","from","to","action","activation"} of one item. */
static json_t *item_json(const struct upd_ctx *ctx, const struct node_plan *p,
			 const struct gf_plan_item *it)
{
	return json_pack("{s:s, s:s?, s:s, s:s, s:s, s:b}", "component", it->component, "from",
			 it->from, "to", it->to, "action", gf_fw_method_name(method_of(ctx, p, it)),
			 "activation", gf_activation_name(it->activation), "host_reboot",
			 gf_activation_is_host(it->activation));
}

static void plan_to_json(const struct upd_ctx *ctx, const struct node_plan *p, json_t *data)
{
	json_t *ups = json_array(), *skipped = json_array();

	for (size_t i = 0; i < p->plan.n; i++) {
		const struct gf_plan_item *it = &p->plan.v[i];

		if (it->skip)
			json_array_append_new(skipped, json_pack("{s:s, s:s}", "component",
								 it->component, "version", it->to));
		else
			json_array_append_new(ups, item_json(ctx, p, it));
	}
	if (p->caps.model)
		json_object_set_new(data, "model", json_string(p->caps.model));
	if (p->caps.dialect)
		json_object_set_new(data, "dialect", json_string(p->caps.dialect));
	json_object_set_new(data, "updates", ups);
	json_object_set_new(data, "up_to_date", skipped);
}

static int plan_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		   const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct upd_ctx *ctx = vctx;
	struct node_plan p;

	if (read_plan(be, sess, n, ctx, &p, err) < 0)
		return GF_E_NODE;
	plan_to_json(ctx, &p, slot->data);
	if (ctx->dry_run)
		json_object_set_new(slot->data, "dry_run", json_true());
	node_plan_release(&p);
	return 0;
}


/*
 * The upload bar of a batch, on a terminal: bytes of the images handed to
 * the BMCs so far against the bytes the batch's nodes push, redrawn on
 * stderr by a thread of its own. The workers add to their node's counters
 * (atomics), the main thread counts finished nodes; nothing else is shared.
 */
struct upload_meter {
	const struct gf_node *nodes;  /* the batch, as handed to the fan-out */
	size_t k;
	unsigned batch, batches;
	atomic_ullong *sent, *total;  /* per node of the batch */
	atomic_size_t finished;
	atomic_bool stop;
	pthread_t thread;
};

#define METER_WIDTH 30
#define METER_EVERY_S 0.25

static void meter_draw(struct upload_meter *m)
{
	unsigned long long sent = 0, total = 0;
	char bar[METER_WIDTH + 1];
	size_t fill;

	for (size_t j = 0; j < m->k; j++) {
		sent += atomic_load(&m->sent[j]);
		total += atomic_load(&m->total[j]);
	}
	fill = total ? (size_t)(METER_WIDTH * (sent < total ? sent : total) / total) : 0;
	memset(bar, '#', fill);
	memset(bar + fill, '.', METER_WIDTH - fill);
	bar[METER_WIDTH] = '\0';
	fprintf(stderr, "\r\033[Kbatch %u/%u: uploads [%s] %3u%% %.1f/%.1f MiB, %zu/%zu nodes done",
		m->batch, m->batches, bar, total ? (unsigned)(100 * (sent < total ? sent : total) / total)
		: 0, (double)sent / 1048576, (double)total / 1048576, atomic_load(&m->finished), m->k);
	fflush(stderr);
}

static void *meter_main(void *ud)
{
	struct upload_meter *m = ud;

	while (!atomic_load(&m->stop)) {
		double next = gf_monotime() + METER_EVERY_S;

		meter_draw(m);
		while (!atomic_load(&m->stop) && gf_monotime() < next)
			gf_sleep_until(gf_monotime() + 0.05 < next ? gf_monotime() + 0.05 : next);
	}
	return NULL;
}

/* A meter drawing for the @k nodes of batch @b of @nb, or NULL (not a terminal, -q, no thread). */
static struct upload_meter *meter_start(const struct gf_cli *cli, const struct gf_node *nodes,
					size_t k, unsigned b, unsigned nb)
{
	struct upload_meter *m;

	if (!cli->progress || cli->quiet)
		return NULL;
	m = gf_xcalloc(1, sizeof(*m));
	*m = (struct upload_meter){.nodes = nodes, .k = k, .batch = b, .batches = nb};
	m->sent = gf_xcalloc(k ? k : 1, sizeof(*m->sent));
	m->total = gf_xcalloc(k ? k : 1, sizeof(*m->total));
	for (size_t j = 0; j < k; j++) {
		atomic_init(&m->sent[j], 0);
		atomic_init(&m->total[j], 0);
	}
	atomic_init(&m->finished, 0);
	atomic_init(&m->stop, false);
	if (pthread_create(&m->thread, NULL, meter_main, m) != 0) {
		free(m->sent);
		free(m->total);
		free(m);
		return NULL;
	}
	return m;
}

/* The last state drawn, the line cleared, the meter freed (NULL: nothing). */
static void meter_stop(struct upload_meter *m)
{
	if (!m)
		return;
	atomic_store(&m->stop, true);
	pthread_join(m->thread, NULL);
	meter_draw(m);
	fputs("\r\033[K", stderr);
	fflush(stderr);
	free(m->sent);
	free(m->total);
	free(m);
}

/* Node @n's slot in @m (a worker's own), or -1 when there is no meter. */
static ptrdiff_t meter_slot(const struct upload_meter *m, const struct gf_node *n)
{
	if (!m || n < m->nodes || n >= m->nodes + m->k)
		return -1;
	return n - m->nodes;
}


/* ---- update run: one node, on its worker ------------------------------- */

enum item_state { IS_NOT_STARTED = 0, IS_SKIPPED, IS_DONE, IS_FAILED, IS_PENDING };

static const char *const item_state_names[] = {
	[IS_NOT_STARTED] = "not-started", [IS_SKIPPED] = "skipped", [IS_DONE] = "done",
	[IS_FAILED] = "failed", [IS_PENDING] = "pending-activation",
};

struct run_item {
	const struct gf_plan_item *pi;
	enum item_state state;
	bool staged;               /* the BMC took the image and its task did not fail */
	bool wait;                 /* activated: wait for the new version to show */
	struct gf_err err;         /* failed: why */
};

static void item_fail(struct run_item *it, const struct gf_err *e)
{
	it->state = IS_FAILED;
	it->err = *e;
}

/* Sleep until @t, waking early on Ctrl-C. */
static void nap_until(double t)
{
	while (!gf_exec_cancelled() && gf_monotime() < t)
		gf_sleep_until(gf_monotime() + 0.1 < t ? gf_monotime() + 0.1 : t);
}

/*
 * Read the inventory back until every item waited for shows its new
 * version, or @until. Items that show it are done.
 */
static void read_back(const struct gf_backend *be, void *sess, struct run_item *items, size_t n,
		      double until, struct gf_err *last)
{
	for (;;) {
		struct gf_component_list l = {0};
		struct gf_err e = {0};
		bool missing = false;

		if (be->firmware(sess, &l, &e) == 0) {
			for (size_t i = 0; i < n; i++) {
				struct run_item *it = &items[i];

				if (!it->staged || it->state == IS_DONE)
					continue;
				for (size_t k = 0; k < l.n; k++)
					if (l.v[k].key && strcmp(l.v[k].key, it->pi->component) == 0 &&
					    l.v[k].version && strcmp(l.v[k].version, it->pi->to) == 0)
						it->state = IS_DONE;
				if (it->state != IS_DONE && it->wait)
					missing = true;
			}
			gf_err_clear(last);
		} else {
			*last = e;
			missing = true;
		}
		gf_component_list_release(&l);
		if (!missing || gf_monotime() + 2 > until || gf_exec_cancelled())
			return;
		nap_until(gf_monotime() + 2);
	}
}

static json_t *run_items_json(const struct upd_ctx *ctx, const struct node_plan *p,
			      const struct run_item *items, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = item_json(ctx, p, items[i].pi);

		json_object_set_new(o, "state", json_string(item_state_names[items[i].state]));
		if (items[i].state == IS_FAILED)
			json_object_set_new(o, "error", json_pack("{s:s, s:s}", "kind",
				gf_errkind_name(items[i].err.kind), "message", items[i].err.msg));
		json_array_append_new(a, o);
	}
	return a;
}

/* Push the images of the plan one at a time, activate, read back. */
static void run_items(const struct gf_backend *be, void *sess, const struct gf_node *n,
		      const struct upd_ctx *ctx, const struct node_plan *p, struct run_item *items,
		      size_t ni, double deadline, struct gf_result *slot)
{
	const struct update_args *a = ctx->a;
	enum gf_activation host = GF_ACT_NONE;
	ptrdiff_t ms = meter_slot(ctx->meter, n);
	struct gf_err e = {0};
	size_t i = 0;

	/* The bytes this node will push, once per image, for the upload bar. */
	for (size_t k = 0; ms >= 0 && k < ni; k++) {
		const struct gf_catalog_image *im = &ctx->cat->v[items[k].pi->image];
		bool first = items[k].state == IS_NOT_STARTED;
		struct stat st;

		for (size_t j = 0; first && j < k; j++)
			first = !(items[j].state == IS_NOT_STARTED &&
				  items[j].pi->image == items[k].pi->image);
		if (first && im->file && stat(im->file, &st) == 0)
			atomic_fetch_add(&ctx->meter->total[ms], (unsigned long long)st.st_size);
	}
	for (i = 0; i < ni; i++) {
		const struct gf_plan_item *pi = items[i].pi;
		const struct gf_catalog_image *im = &ctx->cat->v[pi->image];
		const char **targets;
		struct gf_fw_push push;
		struct gf_fw_task task = {0};
		size_t nt = 0;

		if (items[i].state != IS_NOT_STARTED)
			continue;
		if (gf_exec_cancelled() || gf_monotime() >= deadline)
			break;
		/* Every component this image covers goes in one push. */
		targets = gf_xcalloc(ni, sizeof(*targets));
		for (size_t k = i; k < ni; k++)
			if (items[k].state == IS_NOT_STARTED && items[k].pi->image == pi->image &&
			    items[k].pi->raw_id)
				targets[nt++] = items[k].pi->raw_id;
		push = (struct gf_fw_push){
			.method = method_of(ctx, p, pi), .file = im->file, .image_uri = im->image_uri,
			.targets = targets, .ntargets = nt, .apply_now = p->caps.apply_time,
			.deadline = deadline, .sent = ms >= 0 ? &ctx->meter->sent[ms] : NULL,
		};
		if (push.method == GF_FW_NONE) {
			gf_err_set(&e, GF_E_NODE, GF_EK_UNSUPPORTED,
				   "bmc of node '%s' cannot take the image of '%s' (%s)", n->name,
				   pi->component, im->file ? "no push URI" : "no SimpleUpdate");
		} else {
			slot->no_retry = true; /* from here on the BMC may have acted */
			if (be->fw_push(sess, &push, &task, &e) == 0 &&
			    pi->activation == GF_ACT_BMC_RESET && be->bmc_reset)
				be->bmc_reset(sess, deadline, &e);
			else if (e.code == 0 && pi->activation == GF_ACT_BMC_RESET)
				gf_err_set(&e, GF_E_NODE, GF_EK_UNSUPPORTED,
					   "bmc of node '%s' cannot be reset", n->name);
		}
		free(targets);
		gf_fw_task_release(&task);
		for (size_t k = i; k < ni; k++) {
			struct run_item *it = &items[k];

			if (it->state != IS_NOT_STARTED || it->pi->image != pi->image)
				continue;
			if (e.code) {
				item_fail(it, &e);
				continue;
			}
			it->staged = true;
			it->state = IS_PENDING; /* until read back */
			if (gf_activation_is_host(it->pi->activation)) {
				if (it->pi->activation == GF_ACT_HOST_POWER_CYCLE ||
				    host == GF_ACT_NONE)
					host = it->pi->activation;
				it->wait = a->reboot;
			} else {
				it->wait = true;
			}
		}
		if (e.code)
			break; /* a node that failed one image gets no more */
	}
	/* Host firmware: one restart for all of it, and only when allowed. */
	if (!e.code && host != GF_ACT_NONE && a->reboot && be->power_set) {
		if (be->power_set(sess, host == GF_ACT_HOST_POWER_CYCLE ? GF_POWER_OP_CYCLE
				  : GF_POWER_OP_RESET, &e) == 0 && be->bmc_wait)
			be->bmc_wait(sess, deadline, &e);
		if (e.code)
			for (size_t k = 0; k < ni; k++)
				if (items[k].staged && gf_activation_is_host(items[k].pi->activation))
					item_fail(&items[k], &e);
	}
	{
		struct gf_err rb = {0};
		double until = gf_monotime() + a->readback_wait;

		read_back(be, sess, items, ni, until < deadline ? until : deadline, &rb);
		for (size_t k = 0; k < ni; k++) {
			struct run_item *it = &items[k];

			if (it->state != IS_PENDING || !it->wait)
				continue;
			struct gf_err fe = {0};

			if (rb.code)
				fe = rb;
			else if (gf_monotime() >= deadline)
				gf_err_set(&fe, GF_E_NODE, GF_EK_TIMEOUT,
					   "node '%s': '%s' not read back at %s within --update-timeout",
					   n->name, it->pi->component, it->pi->to);
			else
				gf_err_set(&fe, GF_E_NODE, GF_EK_REFUSED,
					   "bmc of node '%s' does not report '%s' at %s after its "
					   "update task ended without error", n->name,
					   it->pi->component, it->pi->to);
			item_fail(it, &fe);
		}
	}
}

static const char *node_state_of(const struct run_item *items, size_t n)
{
	bool any_done = false, pending = false, not_started = false;

	for (size_t i = 0; i < n; i++) {
		if (items[i].state == IS_FAILED)
			return "failed";
		pending = pending || items[i].state == IS_PENDING;
		not_started = not_started || items[i].state == IS_NOT_STARTED;
		any_done = any_done || items[i].state == IS_DONE;
	}
	if (not_started)
		return "failed";
	if (pending)
		return "pending-activation";
	return any_done ? "done" : "skipped";
}

static int run_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		  const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct upd_ctx *ctx = vctx;
	double deadline = gf_monotime() + ctx->a->update_timeout;
	struct run_item *items;
	struct node_plan p;
	const char *state;
	int rc = 0;

	/* A run that stopped may have left a task running: let it end before looking. */
	if (ctx->resume && be->fw_tasks_wait && be->fw_tasks_wait(sess, deadline, err) < 0)
		return GF_E_NODE;
	if (read_plan(be, sess, n, ctx, &p, err) < 0)
		return GF_E_NODE;
	/*
	 * A node a run left running (killed between a task and its activation)
	 * or pending activation may hold staged images: activate first, then
	 * the inventory tells what still needs a push. Never flash twice what an
	 * activation would have shown.
	 */
	if (ctx->resume && is_unknown(ctx, n->name)) {
		bool bmc = false;
		enum gf_activation host = GF_ACT_NONE;

		for (size_t i = 0; i < p.plan.n; i++) {
			const struct gf_plan_item *pi = &p.plan.v[i];

			if (pi->skip)
				continue;
			bmc = bmc || pi->activation == GF_ACT_BMC_RESET;
			if (gf_activation_is_host(pi->activation) && ctx->a->reboot &&
			    host != GF_ACT_HOST_POWER_CYCLE)
				host = pi->activation;
		}
		if (bmc || host != GF_ACT_NONE) {
			slot->no_retry = true;
			node_plan_release(&p);
			if (bmc && be->bmc_reset && be->bmc_reset(sess, deadline, err) < 0)
				return GF_E_NODE;
			if (host != GF_ACT_NONE && be->power_set &&
			    (be->power_set(sess, host == GF_ACT_HOST_POWER_CYCLE ? GF_POWER_OP_CYCLE
					   : GF_POWER_OP_RESET, err) < 0 ||
			     (be->bmc_wait && be->bmc_wait(sess, deadline, err) < 0)))
				return GF_E_NODE;
			if (read_plan(be, sess, n, ctx, &p, err) < 0)
				return GF_E_NODE;
		}
	}
	items = gf_xcalloc(p.plan.n ? p.plan.n : 1, sizeof(*items));
	for (size_t i = 0; i < p.plan.n; i++) {
		items[i].pi = &p.plan.v[i];
		items[i].state = p.plan.v[i].skip ? IS_SKIPPED : IS_NOT_STARTED;
		/*
		 * Host firmware an earlier run staged, still not allowed to be
		 * activated: it stays staged, never pushed again.
		 */
		if (!p.plan.v[i].skip && ctx->resume && !ctx->a->reboot &&
		    gf_activation_is_host(p.plan.v[i].activation) &&
		    was_staged(ctx, n->name, &p.plan.v[i])) {
			items[i].state = IS_PENDING;
			items[i].staged = true;
		}
	}
	run_items(be, sess, n, ctx, &p, items, p.plan.n, deadline, slot);
	state = node_state_of(items, p.plan.n);
	json_object_set_new(slot->data, "state", json_string(state));
	json_object_set_new(slot->data, "updates", run_items_json(ctx, &p, items, p.plan.n));
	for (size_t i = 0; i < p.plan.n; i++) {
		if (items[i].state == IS_FAILED) {
			*err = items[i].err;
			rc = GF_E_NODE;
			break;
		}
		if (items[i].state == IS_NOT_STARTED) {
			rc = gf_err_set(err, GF_E_NODE, gf_exec_cancelled() ? GF_EK_INTERNAL : GF_EK_TIMEOUT,
					"node '%s': '%s' was not started (%s)", n->name,
					items[i].pi->component,
					gf_exec_cancelled() ? "interrupted" : "out of time");
			break;
		}
		if (items[i].state == IS_PENDING) {
			rc = gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
					"node '%s': '%s' is staged and needs %s (run with --reboot)",
					n->name, items[i].pi->component,
					gf_activation_name(items[i].pi->activation));
		}
	}
	free(items);
	node_plan_release(&p);
	return rc;
}

static const struct gf_col plan_cols[] = {
	{"component", "COMPONENT"}, {"from", "FROM"}, {"to", "TO"}, {"action", "ACTION"},
	{"activation", "ACTIVATION"},
};

static int load_catalog(struct gf_cli *cli, const struct update_args *a, struct gf_catalog *ret)
{
	struct gf_err err = {0};

	if (!a->catalog) {
		cli_error("%s needs --catalog FILE", cli->verb);
		return GF_EXIT_USAGE;
	}
	if (gf_catalog_load(a->catalog, ret, &err) < 0)
		return cli_fail(&err);
	return 0;
}

static const struct gf_render_spec plan_spec = {
	.cols = plan_cols, .ncols = sizeof(plan_cols) / sizeof(plan_cols[0]), .rows_key = "updates",
};

/* What plan and run share: the catalog, the targets, the fan-out of the plan. */
struct plan_run {
	struct gf_catalog cat;
	struct gf_node *nodes;
	size_t n;
	struct cli_bmc_run run;
};

static int plan_load(struct gf_cli *cli, const struct update_args *a, char **args, int nargs,
		     struct plan_run *p)
{
	int rc = load_catalog(cli, a, &p->cat);

	return rc ? rc : cli_targets(cli, args, nargs, false, &p->nodes, &p->n);
}

/* A fresh read of every node and its plan, rendered when @render; the exit code. */
static int plan_fanout(struct gf_cli *cli, struct plan_run *p, const struct upd_ctx *ctx,
		       bool render)
{
	const struct gf_bmc_opts opts = {.request_timeout = cli->timeout};

	p->run = (struct cli_bmc_run){.cli = cli, .nodes = p->nodes, .n = p->n, .op = plan_op,
				      .ctx = ctx, .spec = render ? &plan_spec : NULL,
				      .opts = &opts};
	return cli_bmc_fanout(&p->run);
}

static void plan_release(struct plan_run *p)
{
	cli_bmc_release(&p->run);
	gf_nodes_free(p->nodes, p->n);
	gf_catalog_release(&p->cat);
}

static int update_plan(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		       int nargs)
{
	const struct update_args *a = ud;
	struct plan_run p = {0};
	struct upd_ctx ctx;
	int rc;

	(void)sv;
	rc = plan_load(cli, a, args, nargs, &p);
	if (rc == 0) {
		ctx = (struct upd_ctx){.cat = &p.cat, .a = a};
		rc = plan_fanout(cli, &p, &ctx, true);
	}
	plan_release(&p);
	return rc;
}


/* ---- the rollout: the main thread, batches, the store ------------------ */

static const struct gf_col status_cols[] = {
	{"component", "COMPONENT"}, {"from", "FROM"}, {"to", "TO"}, {"state", "STATE"},
};

/* A stored node as the documented object: {"node","ok","rollout","batch","state","updates"}. */
static json_t *stored_node_json(long id, const struct gf_rollout_node *n)
{
	bool ok = strcmp(n->state, "done") == 0 || strcmp(n->state, "skipped") == 0;
	json_t *ups = json_array();
	json_t *o = json_pack("{s:s, s:b, s:I, s:i, s:s}", "node", n->node, "ok", ok,
			      "rollout", (json_int_t)id, "batch", (int)n->batch, "state", n->state);

	for (size_t i = 0; i < n->nitems; i++) {
		const struct gf_rollout_item *it = &n->items[i];
		json_t *u = json_pack("{s:s, s:s?, s:s, s:s, s:s, s:s}", "component", it->component,
				      "from", it->from, "to", it->to, "action", it->action,
				      "activation", it->activation, "state", it->state);

		if (it->kind)
			json_object_set_new(u, "error", json_pack("{s:s, s:s?}", "kind", it->kind,
								  "message", it->message));
		json_array_append_new(ups, u);
	}
	json_object_set_new(o, "updates", ups);
	if (!ok)
		json_object_set_new(o, "error", json_pack("{s:s, s:s}", "kind",
			n->kind ? n->kind : (strcmp(n->state, "not-started") == 0 ? "internal" : "refused"),
			"message", n->message ? n->message : n->state));
	return o;
}

static const char *json_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static char *dup_or_null(const char *s)
{
	return s ? gf_xstrdup(s) : NULL;
}

/* A node's stored state from its object (plan or run), @state overriding it when not NULL. */
static void node_from_json(struct gf_rollout_node *ret, const char *name, unsigned batch,
			   const json_t *obj, const char *state, const char *item_state,
			   const struct gf_err *err)
{
	json_t *ups = json_object_get(obj, "updates"), *skipped = json_object_get(obj, "up_to_date");
	size_t i;
	json_t *u;

	*ret = (struct gf_rollout_node){.node = gf_xstrdup(name), .batch = batch,
					.updated = gf_walltime()};
	ret->state = gf_xstrdup(state ? state : (json_str(obj, "state") ? json_str(obj, "state")
						 : "failed"));
	if (err && err->code && strcmp(ret->state, "done") != 0 &&
	    strcmp(ret->state, "skipped") != 0) {
		ret->kind = gf_xstrdup(gf_errkind_name(err->kind));
		ret->message = gf_xstrdup(err->msg);
	}
	ret->items = gf_xcalloc(json_array_size(ups) + json_array_size(skipped) + 1,
				sizeof(*ret->items));
	json_array_foreach(ups, i, u) {
		struct gf_rollout_item *it = &ret->items[ret->nitems++];
		json_t *e = json_object_get(u, "error");

		*it = (struct gf_rollout_item){
			.component = dup_or_null(json_str(u, "component")),
			.from = dup_or_null(json_str(u, "from")), .to = dup_or_null(json_str(u, "to")),
			.action = dup_or_null(json_str(u, "action")),
			.activation = dup_or_null(json_str(u, "activation")),
			.kind = dup_or_null(json_str(e, "kind")),
			.message = dup_or_null(json_str(e, "message")),
		};
		it->state = gf_xstrdup(item_state ? item_state
				       : (json_str(u, "state") ? json_str(u, "state") : "not-started"));
		if (strcmp(it->state, "skipped") == 0 || strcmp(it->state, "done") == 0) {
			free(it->kind);
			free(it->message);
			it->kind = it->message = NULL;
		}
	}
	json_array_foreach(skipped, i, u) {
		struct gf_rollout_item *it = &ret->items[ret->nitems++];

		*it = (struct gf_rollout_item){
			.component = dup_or_null(json_str(u, "component")),
			.from = dup_or_null(json_str(u, "version")),
			.to = dup_or_null(json_str(u, "version")), .action = gf_xstrdup("none"),
			.activation = gf_xstrdup("none"), .state = gf_xstrdup("skipped"),
		};
	}
}

struct rollout_exec {
	struct gf_cli *cli;
	const struct update_args *a;
	struct upd_ctx ctx;
	struct gf_db *db;
	long id;
	const size_t *idx;          /* the batch: indices into nodes */
	const struct gf_node *nodes;
	unsigned *batch;            /* per node */
	size_t failed;              /* nodes failed so far */
	size_t finished;
	int store_rc;               /* a state that could not be stored */
	const struct gf_rollout *stored;  /* the rollout as it was before this run of it */
};

/* At its version now, but planned for an update before: flashed by an earlier run of it. */
static void skipped_to_done(const struct gf_rollout_node *before, struct gf_rollout_node *now)
{
	for (size_t i = 0; before && i < now->nitems; i++) {
		struct gf_rollout_item *it = &now->items[i];

		if (strcmp(it->state, "skipped") != 0)
			continue;
		for (size_t k = 0; k < before->nitems; k++) {
			const struct gf_rollout_item *b = &before->items[k];

			if (strcmp(b->component, it->component) == 0 &&
			    strcmp(b->state, "skipped") != 0) {
				free(it->state);
				it->state = gf_xstrdup("done");
				free(it->from);
				free(it->action);
				free(it->activation);
				it->from = dup_or_null(b->from);
				it->action = dup_or_null(b->action);
				it->activation = dup_or_null(b->activation);
			}
		}
	}
	if (before && strcmp(now->state, "skipped") == 0)
		for (size_t i = 0; i < now->nitems; i++)
			if (strcmp(now->items[i].state, "done") == 0) {
				free(now->state);
				now->state = gf_xstrdup("done");
				break;
			}
}

/* As a node of the batch finishes (main thread): its state stored, streamed. */
static void rollout_done(void *ud, size_t i, const struct gf_result *slot)
{
	struct rollout_exec *x = ud;
	size_t gi = x->idx[i];
	struct gf_rollout_node rn;
	struct gf_err err = {0};
	const char *state = json_str(slot->data, "state");

	if (!state && !slot->ok)
		state = slot->attempts == 0 ? "not-started" : "failed";
	node_from_json(&rn, x->nodes[gi].name, x->batch[gi], slot->data, state,
		       json_str(slot->data, "state") ? NULL : (slot->attempts == 0 ? "not-started" : NULL),
		       &slot->err);
	if (x->stored)
		skipped_to_done(&x->stored->nodes[gi], &rn);
	if (!slot->ok && strcmp(rn.state, "failed") == 0)
		x->failed++;
	x->finished++;
	if (x->ctx.meter)
		atomic_fetch_add(&x->ctx.meter->finished, 1);
	if (gf_rollout_nodes_set(x->db, x->id, &rn, 1, &err) < 0 && !x->store_rc) {
		cli_error("the state of node '%s' could not be stored: %s", rn.node, err.msg);
		x->store_rc = GF_EXIT_FAILED;
	}
	if (x->cli->format == GF_FMT_NDJSON) {
		json_t *o = stored_node_json(x->id, &rn);
		char *line = json_dumps(o, JSON_COMPACT);

		printf("%s\n", line ? line : "null");
		fflush(stdout);
		free(line);
		json_decref(o);
	}
	gf_rollout_node_release(&rn);
}

/* Mark the nodes of a batch running before anything is sent to them. */
static int mark_running(struct rollout_exec *x, const struct gf_rollout *r, const size_t *ri,
			size_t k)
{
	struct gf_rollout_node *rn = gf_xcalloc(k ? k : 1, sizeof(*rn));
	struct gf_err err = {0};
	int rc;

	for (size_t j = 0; j < k; j++) {
		const struct gf_rollout_node *src = &r->nodes[ri[j]];

		rn[j] = (struct gf_rollout_node){.node = src->node, .batch = src->batch,
						 .state = (char *)"running", .items = src->items,
						 .nitems = 0, .updated = gf_walltime()};
	}
	rc = gf_rollout_nodes_set(x->db, x->id, rn, k, &err);
	free(rn);
	if (rc < 0) {
		cli_error("the rollout could not be stored: %s", err.msg);
		return GF_EXIT_FAILED;
	}
	return 0;
}

static bool state_is(const char *s, const char *want)
{
	return s && strcmp(s, want) == 0;
}

/*
 * Run the nodes of stored rollout @r whose state is not done, skipped or
 * unsupported (resume), or not-started (run), batch by batch in order.
 */
static int run_batches(struct rollout_exec *x, const struct gf_rollout *r, struct gf_node *nodes,
		       bool resume)
{
	const struct update_args *a = x->a;
	size_t n = r->n, *idx = gf_xcalloc(n ? n : 1, sizeof(*idx));
	unsigned maxb = 0, nb = 0;
	int rc = 0;

	x->nodes = nodes;
	for (size_t i = 0; i < n; i++) {
		x->batch[i] = r->nodes[i].batch;
		if (x->batch[i] > maxb)
			maxb = x->batch[i];
		if (state_is(r->nodes[i].state, "failed") && !resume)
			x->failed++;
	}
	for (unsigned b = 1; b <= maxb && rc == 0; b++) {
		struct gf_node *sub;
		const struct gf_bmc_opts opts = {.request_timeout = x->cli->timeout};
		struct cli_bmc_run run;
		size_t k = 0;
		bool progress;
		int brc;

		for (size_t i = 0; i < n; i++) {
			const char *st = r->nodes[i].state;

			if (x->batch[i] != b)
				continue;
			if (resume ? !(state_is(st, "done") || state_is(st, "skipped") ||
				       state_is(st, "unsupported"))
				   : state_is(st, "not-started"))
				idx[k++] = i;
		}
		if (k == 0)
			continue;
		nb++;
		if (x->failed > a->max_failures) {
			cli_warn(x->cli, "%zu nodes failed (--max-failures %lu): no more nodes are "
				 "started", x->failed, a->max_failures);
			break;
		}
		rc = mark_running(x, r, idx, k);
		if (rc)
			break;
		sub = gf_xcalloc(k, sizeof(*sub));
		for (size_t j = 0; j < k; j++)
			sub[j] = nodes[idx[j]]; /* shallow: nodes owns the strings */
		x->idx = idx;
		x->finished = 0;
		run = (struct cli_bmc_run){
			.cli = x->cli, .nodes = sub, .n = k, .op = run_op, .ctx = &x->ctx,
			.audit = resume ? "update resume" : "update run",
			.opts = &opts, .timeout = a->update_timeout + 60,
			/* Uploads spaced: a batch does not push every image in the same second. */
			.batch = 1, .interval = k > 1 ? 0.2 : 0,
			.on_done = rollout_done, .done_ud = x, .may_be_restarting = left_running,
		};
		/* The upload bar instead of the fan-out's count of nodes done. */
		x->ctx.meter = meter_start(x->cli, sub, k, b, maxb);
		progress = x->cli->progress;
		x->cli->progress = progress && !x->ctx.meter;
		brc = cli_bmc_fanout(&run);
		x->cli->progress = progress;
		meter_stop(x->ctx.meter);
		x->ctx.meter = NULL;
		if (x->cli->progress && !x->cli->quiet) {
			size_t bf = 0;

			for (size_t j = 0; j < k; j++)
				bf += !run.slots || !run.slots[j].ok;
			fprintf(stderr, "gpufleet: batch %u/%u: %zu nodes, %zu ok, %zu not ok\n", b,
				maxb, k, k - bf, bf);
		}
		cli_bmc_release(&run);
		free(sub);
		if (brc == GF_EXIT_INTERRUPTED || (brc != GF_EXIT_OK && brc != GF_EXIT_FAILED))
			rc = brc;
		if (x->store_rc && !rc)
			rc = x->store_rc;
	}
	(void)nb;
	free(idx);
	return rc;
}

/* Print rollout @id as stored, and the exit code: 0 when every node is done or skipped. */
static int print_rollout(struct gf_cli *cli, struct gf_db *db, long id, bool quiet_ndjson)
{
	static const struct gf_render_spec spec = {
		.cols = status_cols, .ncols = sizeof(status_cols) / sizeof(status_cols[0]),
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
		objs[i] = stored_node_json(r.id, &r.nodes[i]);
		if (!json_is_true(json_object_get(objs[i], "ok")))
			rc = GF_EXIT_FAILED;
	}
	if (!(quiet_ndjson && cli->format == GF_FMT_NDJSON)) {
		if (cli->format == GF_FMT_TABLE && !cli->quiet)
			fprintf(stderr, "rollout %ld (%s, started by %s, catalog %s)\n", r.id, r.state,
				r.user ? r.user : "?", r.catalog_path);
		inv_print(cli, objs, r.n, &spec);
	}
	for (size_t i = 0; i < r.n; i++)
		json_decref(objs[i]);
	free(objs);
	gf_rollout_release(&r);
	return rc;
}

static char *options_json(const struct update_args *a)
{
	json_t *o = json_pack("{s:s?, s:I, s:I, s:I, s:b, s:f, s:f}", "component", a->component,
			      "canary", (json_int_t)a->canary, "batch", (json_int_t)a->batch,
			      "max_failures", (json_int_t)a->max_failures, "reboot", a->reboot,
			      "update_timeout", a->update_timeout, "readback_wait",
			      a->readback_wait);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref(o);
	return s;
}

static char *read_text(const char *path)
{
	struct gf_buf b = GF_BUF_INIT;
	char chunk[8192];
	FILE *f = fopen(path, "r");
	size_t got;

	if (!f)
		return NULL;
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		gf_buf_add(&b, chunk, got);
	fclose(f);
	return gf_buf_detach(&b);
}

static int finish_state(struct gf_db *db, long id)
{
	struct gf_rollout r = {0};
	struct gf_err err = {0};
	bool left = false;

	if (gf_rollout_load(db, id, &r, &err) < 0)
		return cli_fail(&err);
	for (size_t i = 0; i < r.n; i++)
		left = left || state_is(r.nodes[i].state, "not-started") ||
		       state_is(r.nodes[i].state, "running");
	gf_rollout_release(&r);
	if (gf_rollout_set_state(db, id, left ? "stopped" : "finished", &err) < 0)
		return cli_fail(&err);
	return 0;
}

/* Run and resume alike: the batches, the rollout's final state, its nodes printed; an exit code. */
static int execute(struct rollout_exec *x, const struct gf_rollout *r, struct gf_node *nodes,
		   bool resume)
{
	int rc, prc;

	x->batch = gf_xcalloc(r->n ? r->n : 1, sizeof(*x->batch));
	rc = run_batches(x, r, nodes, resume);
	prc = finish_state(x->db, r->id);
	if (!rc)
		rc = prc;
	prc = print_rollout(x->cli, x->db, r->id, true);
	if (!rc)
		rc = prc;
	return cli_interrupted(rc);
}

static int update_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		      int nargs)
{
	const struct update_args *a = ud;
	struct plan_run p = {0};
	struct gf_rollout r = {0};
	struct rollout_exec x = {0};
	struct gf_err err = {0};
	struct gf_db *db = NULL;
	unsigned long per = a->batch ? a->batch : cli->fanout;
	size_t n, work = 0;
	int rc, prc;

	(void)sv;
	rc = plan_load(cli, a, args, nargs, &p);
	if (rc)
		goto out;
	n = p.n;
	if (!a->dry_run && (rc = cli_guard(cli, "update run", p.nodes, n, a->yes)))
		goto out;
	if (!a->dry_run && (rc = cli_db(cli, &db)))
		goto out;
	x = (struct rollout_exec){.cli = cli, .a = a, .db = db,
				  .ctx = {.cat = &p.cat, .a = a, .dry_run = a->dry_run}};
	/* The plan, from a fresh read of every node; --dry-run stops here. */
	prc = plan_fanout(cli, &p, &x.ctx, a->dry_run);
	if (a->dry_run || !p.run.slots) {
		rc = prc;
		goto out;
	}
	if (prc == GF_EXIT_INTERRUPTED) {
		rc = prc;
		goto out;
	}
	r = (struct gf_rollout){
		.user = gf_xstrdup(gf_invoking_user()), .catalog_path = gf_xstrdup(a->catalog),
		.catalog_text = read_text(a->catalog), .options = options_json(a),
		.nodes = gf_xcalloc(n ? n : 1, sizeof(*r.nodes)), .n = n,
	};
	for (size_t i = 0; i < n; i++) {
		const struct gf_result *s = &p.run.slots[i];
		json_t *ups = json_object_get(s->data, "updates");
		const char *state;
		unsigned batch = 0;

		if (!s->ok)
			state = s->err.kind == GF_EK_UNSUPPORTED ? "unsupported" : "failed";
		else if (json_array_size(ups) == 0)
			state = "skipped";
		else
			state = "not-started";
		if (state_is(state, "not-started")) {
			/* The canary alone, then batches of --batch. */
			if (work < a->canary)
				batch = 1;
			else
				batch = (unsigned)((a->canary ? 2 : 1) + (work - a->canary) / per);
			work++;
		}
		node_from_json(&r.nodes[i], p.nodes[i].name, batch, s->data, state,
			       state_is(state, "not-started") ? "not-started" : NULL, &s->err);
	}
	if (!r.catalog_text)
		r.catalog_text = gf_xstrdup("");
	if (gf_rollout_create(db, &r, &r.id, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	x.id = r.id;
	if (!cli->quiet && cli->format == GF_FMT_TABLE)
		fprintf(stderr, "gpufleet: rollout %ld: %zu of %zu nodes to update\n", r.id, work, n);
	rc = execute(&x, &r, p.nodes, false);
out:
	free(x.batch);
	gf_rollout_release(&r);
	plan_release(&p);
	return rc;
}

static int rollout_arg(struct gf_cli *cli, char **args, int nargs, long *ret)
{
	unsigned long v = 0;
	struct gf_err err = {0};

	*ret = 0;
	if (nargs > 1) {
		cli_error("%s takes one ROLLOUT at most", cli->verb);
		return GF_EXIT_USAGE;
	}
	if (nargs == 1) {
		if (gf_parse_uint(args[0], 1, 1ul << 40, &v, &err, "ROLLOUT") < 0)
			return cli_fail(&err);
		*ret = (long)v;
	}
	return 0;
}

static int update_status(struct gf_cli *cli, const struct cli_subverb *sv, void *ud,
			 char **args, int nargs)
{
	struct gf_db *db;
	long id;
	int rc;

	(void)sv;
	(void)ud;
	if ((rc = rollout_arg(cli, args, nargs, &id)) || (rc = cli_db(cli, &db)))
		return rc;
	return print_rollout(cli, db, id, false);
}

static int update_resume(struct gf_cli *cli, const struct cli_subverb *sv, void *ud,
			 char **args, int nargs)
{
	const struct update_args *given = ud;
	struct update_args a = *given;
	struct gf_catalog cat = {0};
	struct gf_rollout r = {0};
	struct rollout_exec x = {0};
	struct gf_node *nodes = NULL;
	struct gf_err err = {0};
	struct gf_db *db;
	json_t *opts;
	size_t nn = 0, nunknown = 0;
	char **names = NULL;
	const char **unknown = NULL;
	long id;
	int rc;

	(void)sv;
	if ((rc = rollout_arg(cli, args, nargs, &id)) || (rc = cli_db(cli, &db)))
		return rc;
	if (gf_rollout_load(db, id, &r, &err) < 0)
		return err.code == GF_E_NOTFOUND ? (cli_error("%s", err.msg), GF_EXIT_USAGE)
						 : cli_fail(&err);
	/* The options and the catalog of the rollout, as they were. */
	opts = json_loads(r.options ? r.options : "{}", 0, NULL);
	a.component = NULL;
	if (json_str(opts, "component"))
		a.component = json_str(opts, "component");
	a.reboot = json_is_true(json_object_get(opts, "reboot")) || given->reboot;
	a.max_failures = (unsigned long)json_integer_value(json_object_get(opts, "max_failures"));
	if (json_is_number(json_object_get(opts, "update_timeout")))
		a.update_timeout = json_number_value(json_object_get(opts, "update_timeout"));
	if (json_is_number(json_object_get(opts, "readback_wait")))
		a.readback_wait = json_number_value(json_object_get(opts, "readback_wait"));
	if (gf_catalog_parse(r.catalog_path, r.catalog_text, strlen(r.catalog_text), &cat, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	names = gf_xcalloc(r.n ? r.n : 1, sizeof(*names));
	for (size_t i = 0; i < r.n; i++)
		names[i] = r.nodes[i].node;
	rc = cli_targets(cli, names, (int)r.n, false, &nodes, &nn);
	if (rc)
		goto out;
	if (nn != r.n) {
		cli_error("rollout %ld names %zu nodes, the registry has %zu of them", r.id, r.n, nn);
		rc = GF_EXIT_USAGE;
		goto out;
	}
	/* In the rollout's order: node i is r.nodes[i]. */
	for (size_t i = 0; i < r.n; i++)
		for (size_t k = i; k < nn; k++)
			if (strcmp(nodes[k].name, r.nodes[i].node) == 0) {
				struct gf_node t = nodes[i];

				nodes[i] = nodes[k];
				nodes[k] = t;
				break;
			}
	{
		size_t left = 0;

		for (size_t i = 0; i < r.n; i++)
			left += !(state_is(r.nodes[i].state, "done") ||
				  state_is(r.nodes[i].state, "skipped") ||
				  state_is(r.nodes[i].state, "unsupported"));
		if (left > 1 && (rc = cli_guard(cli, "update resume", nodes, left, a.yes)))
			goto out;
	}
	if (gf_rollout_set_state(db, r.id, "running", &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	unknown = gf_xcalloc(r.n ? r.n : 1, sizeof(*unknown));
	for (size_t i = 0; i < r.n; i++)
		if (state_is(r.nodes[i].state, "running") ||
		    state_is(r.nodes[i].state, "pending-activation"))
			unknown[nunknown++] = r.nodes[i].node;
	x = (struct rollout_exec){.cli = cli, .a = &a, .db = db, .id = r.id, .stored = &r,
				  .ctx = {.cat = &cat, .a = &a, .resume = true, .unknown = unknown,
					  .nunknown = nunknown, .stored = &r}};
	rc = execute(&x, &r, nodes, true);
out:
	free(x.batch);
	free(names);
	free(unknown);
	json_decref(opts);
	gf_nodes_free(nodes, nn);
	gf_catalog_release(&cat);
	gf_rollout_release(&r);
	return rc;
}

static const struct cli_subverb subs[] = {
	/* A plan is what run would do: it takes run's command line as it is. */
	{"plan", update_plan, NULL, 0},
	{"run", update_run, NULL, 0},
	{"status", update_status, NULL, CLI_NO_OPTS},
	/* A rollout resumes with its own catalog and options; --reboot may be added. */
	{"resume", update_resume, NULL, CLI_OPT(U_YES) | CLI_OPT(U_REBOOT)},
};

int cmd_update(struct gf_cli *cli, int argc, char **argv)
{
	struct update_args a = {.update_timeout = 1800, .readback_wait = 60};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, update_opts, sizeof(update_opts) / sizeof(update_opts[0]),
		       on_opt, &a, &args, &nargs);
	if (rc)
		return rc;
	return cli_subverb_run(cli, subs, sizeof(subs) / sizeof(subs[0]), &a, args, nargs);
}
