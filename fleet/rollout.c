/* The rollout engine: plan, batches, each node's update and read-back, resume. */
#include "fleet/rollout.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/buf.h"
#include "lib/compkey.h"
#include "lib/exec.h"
#include "lib/util.h"

void gf_rollout_plan_release(struct gf_rollout_plan *p)
{
	if (!p)
		return;
	free(p->model);
	free(p->dialect);
	gf_rollout_node_release(&p->node);
	*p = (struct gf_rollout_plan){0};
}

static char *dup_or_null(const char *s)
{
	return s ? gf_xstrdup(s) : NULL;
}

/* ---- on a worker: reading a node, planning it --------------------------- */

/* What the workers read: read-only while they run, but for each node's own result. */
struct ctx {
	const struct gf_rollout_run *run;
	const struct gf_node *nodes; /* as handed to the fan-out: a worker's index is n - nodes */
	bool resume;
	const struct gf_rollout *stored;  /* resume: the rollout as stored before it */
	const size_t *idx;                /* the batch: indices into stored->nodes */
	struct gf_rollout_plan *plans;    /* plan: per node */
	struct gf_rollout_node *out;      /* run: per node of the batch, its items as they ended */
	unsigned *reported;               /* run: the attempt that filled out[j], 0: none */
	struct gf_rollout_progress *prog; /* run: the batch's */
	atomic_bool *stop;                /* run: more than --max-failures failed: start no node */
	atomic_size_t *failed;            /* run: nodes failed so far */
	bool *held;                       /* run: per node of the batch, not started for that */
	bool *counted;                    /* run: per node of the batch, its failure in *failed */
};

static size_t index_of(const struct ctx *c, const struct gf_node *n)
{
	return (size_t)(n - c->nodes);
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
		     const struct ctx *c, struct node_plan *ret, struct gf_err *err)
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
	gf_catalog_plan(c->run->cat, p.caps.model, p.caps.dialect, &p.comps, c->run->o->component,
			&p.plan);
	*ret = p;
	return 0;
}

static enum gf_fw_method method_of(const struct ctx *c, const struct node_plan *p,
				   const struct gf_plan_item *it)
{
	const struct gf_catalog_image *im = &c->run->cat->v[it->image];

	return gf_fw_method_for(&p->caps, im->file != NULL, im->image_uri != NULL);
}

/*
 * An item of the plan as stored: to update (in @state), or already at its
 * version (a plan stores no action for it; a run keeps the one planned).
 */
static void plan_item(const struct ctx *c, const struct node_plan *p, const struct gf_plan_item *pi,
		      enum gf_rollout_state state, bool ran, struct gf_rollout_item *ret)
{
	if (pi->skip && !ran) {
		*ret = (struct gf_rollout_item){
			.component = gf_xstrdup(pi->component),
			.from = gf_xstrdup(pi->to),
			.to = gf_xstrdup(pi->to),
			.action = gf_xstrdup("none"),
			.activation = gf_xstrdup("none"),
			.state = GF_RS_SKIPPED,
		};
		return;
	}
	*ret = (struct gf_rollout_item){
		.component = gf_xstrdup(pi->component),
		.from = dup_or_null(pi->from),
		.to = gf_xstrdup(pi->to),
		.action = gf_xstrdup(gf_fw_method_name(method_of(c, p, pi))),
		.activation = gf_xstrdup(gf_activation_name(pi->activation)),
		.state = state,
		.sha256 = c->run->cat->v[pi->image].digest[0]
				  ? gf_xstrdup(c->run->cat->v[pi->image].digest)
				  : NULL,
	};
}

static int plan_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		   const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct ctx *c = vctx;
	struct gf_rollout_plan *ret = &c->plans[index_of(c, n)];
	struct gf_rollout_node *rn = &ret->node;
	struct node_plan p;
	size_t k = 0;

	(void)slot;
	gf_rollout_plan_release(ret);
	if (read_plan(be, sess, n, c, &p, err) < 0)
		return GF_E_NODE;
	ret->model = dup_or_null(p.caps.model);
	ret->dialect = dup_or_null(p.caps.dialect);
	rn->items = gf_xcalloc(p.plan.n ? p.plan.n : 1, sizeof(*rn->items));
	/* The updates first, in plan order, then what is at its version already. */
	for (size_t pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < p.plan.n; i++)
			if (p.plan.v[i].skip == (pass == 1))
				plan_item(c, &p, &p.plan.v[i], GF_RS_NOT_STARTED, false,
					  &rn->items[k++]);
	rn->nitems = k;
	rn->state = GF_RS_SKIPPED;
	for (size_t i = 0; i < k; i++)
		if (rn->items[i].state != GF_RS_SKIPPED)
			rn->state = GF_RS_NOT_STARTED;
	node_plan_release(&p);
	return 0;
}

/* A node's plan once its worker is done (calling thread): a failed read is a failed node. */
static void plan_done(void *ud, size_t i, const struct gf_result *slot)
{
	const struct ctx *c = ud;
	struct gf_rollout_plan *p = &c->plans[i];

	if (!slot->ok) {
		gf_rollout_plan_release(p);
		p->node.state = slot->err.kind == GF_EK_UNSUPPORTED ? GF_RS_UNSUPPORTED
								    : GF_RS_FAILED;
		/*
		 * A BMC that does not answer at plan is left out, not failed: the
		 * rollout goes on without it, and resume plans it again.
		 */
		if (slot->err.kind == GF_EK_CONNECT || slot->err.kind == GF_EK_TIMEOUT)
			p->node.state = GF_RS_SKIPPED;
		p->node.kind = gf_xstrdup(gf_errkind_name(slot->err.kind));
		p->node.message = gf_xstrdup(slot->err.msg);
	}
	p->node.node = gf_xstrdup(c->nodes[i].name);
	if (c->run->hooks.planned)
		c->run->hooks.planned(c->run->hooks.ud, i, p, slot);
}

int gf_rollout_plan(const struct gf_rollout_run *run, struct gf_rollout_plan **ret)
{
	struct gf_rollout_plan *plans = gf_xcalloc(run->n ? run->n : 1, sizeof(*plans));
	struct ctx c = {.run = run, .nodes = run->nodes, .plans = plans};
	struct gf_rollout_fanout f = {
		.nodes = run->nodes,
		.n = run->n,
		.op = plan_op,
		.ctx = &c,
		.on_done = plan_done,
		.done_ud = &c,
	};
	int rc = run->fan.run(run->fan.ud, &f);

	*ret = plans;
	return rc;
}

int gf_rollout_start(const struct gf_rollout_run *run, const struct gf_rollout_plan *plans,
		     const char *user, struct gf_rollout *ret, size_t *ret_work, struct gf_err *err)
{
	const struct gf_rollout_opts *o = run->o;
	unsigned long per = o->batch ? o->batch : run->fanout;
	struct gf_rollout r = {
		.user = gf_xstrdup(user),
		.catalog_path = gf_xstrdup(run->cat->path),
		.catalog_text = gf_xstrdup(run->cat->text),
		.options = gf_rollout_opts_format(o),
		.state = GF_RS_RUNNING,
		.nodes = gf_xcalloc(run->n ? run->n : 1, sizeof(*r.nodes)),
		.n = run->n,
	};
	size_t work = 0;
	int rc;

	/* Each image file as read at plan: every push is checked against it. */
	r.images = gf_xcalloc(run->cat->n ? run->cat->n : 1, sizeof(*r.images));
	for (size_t i = 0; i < run->cat->n; i++) {
		const struct gf_catalog_image *im = &run->cat->v[i];

		if (!im->file || !im->digest[0])
			continue;
		r.images[r.nimages] = (struct gf_catalog_record){.image = i,
								 .file = gf_xstrdup(im->file),
								 .size = im->size};
		memcpy(r.images[r.nimages++].sha256, im->digest, sizeof(im->digest));
	}
	for (size_t i = 0; i < run->n; i++) {
		const struct gf_rollout_node *p = &plans[i].node;
		struct gf_rollout_node *rn = &r.nodes[i];

		*rn = (struct gf_rollout_node){
			.node = gf_xstrdup(run->nodes[i].name),
			.state = p->state,
			.kind = dup_or_null(p->kind),
			.message = dup_or_null(p->message),
			.updated = gf_walltime(),
			.items = gf_xcalloc(p->nitems ? p->nitems : 1, sizeof(*rn->items)),
		};
		for (size_t k = 0; k < p->nitems; k++) {
			const struct gf_rollout_item *it = &p->items[k];

			rn->items[rn->nitems++] = (struct gf_rollout_item){
				.component = gf_xstrdup(it->component),
				.from = dup_or_null(it->from),
				.to = dup_or_null(it->to),
				.action = dup_or_null(it->action),
				.activation = dup_or_null(it->activation),
				.state = it->state,
			};
		}
		if (rn->state != GF_RS_NOT_STARTED)
			continue;
		/* The canary alone, then batches of --batch. */
		if (work < o->canary)
			rn->batch = 1;
		else
			rn->batch = (unsigned)((o->canary ? 2 : 1) + (work - o->canary) / per);
		work++;
	}
	rc = gf_rollout_create(run->db, &r, &r.id, err);
	if (rc < 0) {
		gf_rollout_release(&r);
		return rc;
	}
	*ret = r;
	*ret_work = work;
	return 0;
}

/* ---- on a worker: one node's update ------------------------------------- */

struct run_item {
	const struct gf_plan_item *pi;
	enum gf_rollout_state state; /* not-started, skipped, done, failed, pending-activation */
	bool staged;                 /* the BMC took the image and its task did not fail */
	bool wait;                   /* activated: wait for the new version to show */
	bool host_off;               /* pending: its host is off, and stays off */
	struct gf_err err;           /* failed or interrupted: why */
};

static void item_fail(struct run_item *it, const struct gf_err *e)
{
	it->state = GF_RS_FAILED;
	it->err = *e;
}

/* Ctrl-C once the image was handed to the BMC: it may hold it staged, resume asks it. */
static void item_interrupted(struct run_item *it, const struct gf_node *n)
{
	it->state = GF_RS_INTERRUPTED;
	gf_err_set(&it->err, GF_E_NODE, GF_EK_INTERNAL,
		   "node '%s': interrupted after the image of '%s' was sent to its bmc (it may "
		   "hold it staged; resume asks the bmc before it activates or sends again)",
		   n->name, it->pi->component);
}

/* resume: node @node as the rollout stored it before this run, or NULL. */
static const struct gf_rollout_node *stored_node(const struct ctx *c, const char *node)
{
	for (size_t i = 0; c->resume && i < c->stored->n; i++)
		if (strcmp(c->stored->nodes[i].node, node) == 0)
			return &c->stored->nodes[i];
	return NULL;
}

/* resume: item @pi of @sn as stored, NULL when it has none. */
static const struct gf_rollout_item *stored_rec(const struct gf_rollout_node *sn,
						const struct gf_plan_item *pi)
{
	for (size_t k = 0; sn && k < sn->nitems; k++) {
		const struct gf_rollout_item *it = &sn->items[k];

		if (strcmp(it->component, pi->component) == 0 && it->to &&
		    strcmp(it->to, pi->to) == 0)
			return it;
	}
	return NULL;
}

/* resume: the state item @pi of @sn was stored in, not-started when it has none. */
static enum gf_rollout_state stored_item(const struct gf_rollout_node *sn,
					 const struct gf_plan_item *pi)
{
	const struct gf_rollout_item *it = stored_rec(sn, pi);

	return it ? it->state : GF_RS_NOT_STARTED;
}

/* resume: did the stopped run leave @pi in flight, sent by a raw push (http-push)? */
static bool left_raw_push(const struct gf_rollout_node *sn, const struct gf_plan_item *pi)
{
	const struct gf_rollout_item *it = stored_rec(sn, pi);

	return it && (it->state == GF_RS_RUNNING || it->state == GF_RS_INTERRUPTED) && it->action &&
	       strcmp(it->action, gf_fw_method_name(GF_FW_PUSH)) == 0;
}

/*
 * resume: a raw push the stopped run left in flight may have left the BMC
 * busy for its members (HttpPushUriTargetsBusy, set before such a push and
 * put back after it). The rollout recorded the item in flight by that
 * action: a flag set for exactly the members of its image is its own, taken
 * back before anything else, so that nothing waits for it blaming another
 * client. A flag set for other members is another client's: it stays, and
 * a push waits for it as ever.
 */
static int release_own_push(const struct gf_backend *be, void *sess, const struct gf_node *n,
			    const struct ctx *c, const struct node_plan *p, struct gf_err *err)
{
	const struct gf_rollout_node *sn = stored_node(c, n->name);
	const char **targets;
	int rc = 0;

	if (!sn || !be->fw_push_release)
		return 0;
	targets = gf_xcalloc(p->plan.n ? p->plan.n : 1, sizeof(*targets));
	for (size_t i = 0; rc == 0 && i < p->plan.n; i++) {
		const struct gf_plan_item *pi = &p->plan.v[i];
		size_t nt = 0;
		bool first = true, cleared = false;

		/* One push per image: its members together, as run_items sends them. */
		for (size_t k = 0; k < i; k++)
			first = first && !(p->plan.v[k].image == pi->image &&
					   left_raw_push(sn, &p->plan.v[k]));
		if (!first || !left_raw_push(sn, pi))
			continue;
		for (size_t k = i; k < p->plan.n; k++)
			if (p->plan.v[k].image == pi->image && p->plan.v[k].raw_id &&
			    left_raw_push(sn, &p->plan.v[k]))
				targets[nt++] = p->plan.v[k].raw_id;
		if (nt && be->fw_push_release(sess, targets, nt, &cleared, err) < 0)
			rc = GF_E_NODE;
	}
	free(targets);
	return rc;
}

/* A node a killed run left in flight may be mid-reset: its session is opened again. */
static bool left_running(const void *vctx, const struct gf_node *n)
{
	const struct gf_rollout_node *sn = stored_node(vctx, n->name);

	return sn && (sn->state == GF_RS_RUNNING || sn->state == GF_RS_INTERRUPTED ||
		      sn->state == GF_RS_PENDING);
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

				if (!it->staged || it->state == GF_RS_DONE)
					continue;
				for (size_t k = 0; k < l.n; k++)
					if (l.v[k].key &&
					    strcmp(l.v[k].key, it->pi->component) == 0 &&
					    gf_version_matches(l.v[k].version, it->pi->to,
							       it->pi->exact))
						it->state = GF_RS_DONE;
				if (it->state != GF_RS_DONE && it->wait)
					missing = true;
			}
			gf_err_clear(last);
		} else {
			*last = e;
			/* A certificate refused or changed stays so: asking again cannot help. */
			missing = e.kind != GF_EK_TLS;
		}
		gf_component_list_release(&l);
		if (!missing || gf_monotime() + 2 > until || gf_exec_cancelled())
			return;
		gf_cancel_sleep_until(gf_exec_cancel_flag(), gf_monotime() + 2);
	}
}

/* The bytes a node will push, once per image, for the upload progress. */
static void count_uploads(const struct ctx *c, const struct run_item *items, size_t ni)
{
	for (size_t k = 0; k < ni; k++) {
		const struct gf_catalog_image *im = &c->run->cat->v[items[k].pi->image];
		bool first = items[k].state == GF_RS_NOT_STARTED;
		struct stat st;

		for (size_t i = 0; first && i < k; i++)
			first = !(items[i].state == GF_RS_NOT_STARTED &&
				  items[i].pi->image == items[k].pi->image);
		if (first && im->file && stat(im->file, &st) == 0)
			atomic_fetch_add(&c->prog->total, (unsigned long long)st.st_size);
	}
}

/* Is the host on (its BMC says so)? Unknown or off: it is not restarted. */
static bool host_is_on(const struct gf_backend *be, void *sess)
{
	enum gf_power pw = GF_POWER_UNKNOWN;

	return be->power_get && be->power_get(sess, &pw, NULL) == 0 && pw == GF_POWER_ON;
}

/* Push the images of the plan one at a time, activate, read back. */
static void run_items(const struct gf_backend *be, void *sess, const struct gf_node *n,
		      const struct ctx *c, const struct node_plan *p, struct run_item *items,
		      size_t ni, double deadline, struct gf_result *slot)
{
	const struct gf_rollout_opts *o = c->run->o;
	enum gf_activation host = GF_ACT_NONE;
	struct gf_err e = {0};

	count_uploads(c, items, ni);
	for (size_t i = 0; i < ni; i++) {
		const struct gf_plan_item *pi = items[i].pi;
		const struct gf_catalog_image *im = &c->run->cat->v[pi->image];
		const char **targets;
		struct gf_fw_push push;
		struct gf_fw_task task = {0};
		size_t nt = 0;

		if (items[i].state != GF_RS_NOT_STARTED)
			continue;
		if (gf_exec_cancelled() || gf_monotime() >= deadline)
			break;
		/* Every component this image covers goes in one push. */
		targets = gf_xcalloc(ni, sizeof(*targets));
		for (size_t k = i; k < ni; k++)
			if (items[k].state == GF_RS_NOT_STARTED &&
			    items[k].pi->image == pi->image && items[k].pi->raw_id)
				targets[nt++] = items[k].pi->raw_id;
		push = (struct gf_fw_push){
			.method = method_of(c, p, pi),
			.file = im->file,
			.size = im->size,
			.sha256 = im->digest[0] ? im->digest : NULL,
			.image_uri = im->image_uri,
			.version = pi->to,
			.version_exact = pi->exact,
			.targets = targets,
			.ntargets = nt,
			.apply_now = p->caps.apply_time,
			.deadline = deadline,
			.sent = &c->prog->sent,
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

			if (it->state != GF_RS_NOT_STARTED || it->pi->image != pi->image)
				continue;
			if (e.code && push.method != GF_FW_NONE && gf_exec_cancelled()) {
				item_interrupted(it, n);
				continue;
			}
			if (e.code) {
				item_fail(it, &e);
				continue;
			}
			it->staged = true;
			it->state = GF_RS_PENDING; /* until read back */
			if (gf_activation_is_host(it->pi->activation)) {
				if (it->pi->activation == GF_ACT_HOST_POWER_CYCLE ||
				    host == GF_ACT_NONE)
					host = it->pi->activation;
				it->wait = o->reboot;
			} else {
				it->wait = true;
			}
		}
		if (e.code)
			break; /* a node that failed one image gets no more */
	}
	/* A host that is off stays off: its firmware waits for its next power on. */
	if (!e.code && host != GF_ACT_NONE && o->reboot && !host_is_on(be, sess)) {
		for (size_t k = 0; k < ni; k++)
			if (items[k].staged && gf_activation_is_host(items[k].pi->activation)) {
				items[k].wait = false;
				items[k].host_off = true;
			}
		host = GF_ACT_NONE;
	}
	/* Host firmware: one restart for all of it, and only when allowed. */
	if (!e.code && host != GF_ACT_NONE && o->reboot && be->power_set) {
		if (be->power_set(sess,
				  host == GF_ACT_HOST_POWER_CYCLE ? GF_POWER_OP_CYCLE
								  : GF_POWER_OP_RESET,
				  &e) == 0 &&
		    be->bmc_wait)
			be->bmc_wait(sess, deadline, &e);
		if (e.code)
			for (size_t k = 0; k < ni; k++)
				if (items[k].staged &&
				    gf_activation_is_host(items[k].pi->activation))
					item_fail(&items[k], &e);
	}
	{
		struct gf_err rb = {0};
		double until = gf_monotime() + o->readback_wait;

		read_back(be, sess, items, ni, until < deadline ? until : deadline, &rb);
		for (size_t k = 0; k < ni; k++) {
			struct run_item *it = &items[k];
			struct gf_err fe = {0};

			if (it->state != GF_RS_PENDING || !it->wait)
				continue;
			if (rb.code)
				fe = rb;
			else if (gf_monotime() >= deadline)
				gf_err_set(&fe, GF_E_NODE, GF_EK_TIMEOUT,
					   "node '%s': '%s' not read back at %s within --update-timeout",
					   n->name, it->pi->component, it->pi->to);
			else
				gf_err_set(&fe, GF_E_NODE, GF_EK_REFUSED,
					   "bmc of node '%s' does not report '%s' at %s after its "
					   "update task ended without error",
					   n->name, it->pi->component, it->pi->to);
			item_fail(it, &fe);
		}
	}
}

static enum gf_rollout_state node_state_of(const struct run_item *items, size_t n)
{
	bool any_done = false, pending = false, not_started = false, interrupted = false;

	for (size_t i = 0; i < n; i++) {
		if (items[i].state == GF_RS_FAILED)
			return GF_RS_FAILED;
		interrupted = interrupted || items[i].state == GF_RS_INTERRUPTED;
		pending = pending || items[i].state == GF_RS_PENDING;
		not_started = not_started || items[i].state == GF_RS_NOT_STARTED;
		any_done = any_done || items[i].state == GF_RS_DONE;
	}
	if (interrupted)
		return GF_RS_INTERRUPTED;
	/* Ctrl-C before an image: nothing of it was sent. */
	if (not_started && gf_exec_cancelled())
		return any_done || pending ? GF_RS_INTERRUPTED : GF_RS_NOT_STARTED;
	if (not_started)
		return GF_RS_FAILED;
	if (pending)
		return GF_RS_PENDING;
	return any_done ? GF_RS_DONE : GF_RS_SKIPPED;
}

/* The items as they ended, into the node's result (its own slot of c->out). */
static void report_items(const struct ctx *c, size_t j, unsigned attempt, const struct node_plan *p,
			 const struct run_item *items, size_t n)
{
	struct gf_rollout_node *rn = &c->out[j];

	rn->state = node_state_of(items, n);
	rn->items = gf_xcalloc(n ? n : 1, sizeof(*rn->items));
	for (size_t i = 0; i < n; i++) {
		struct gf_rollout_item *it = &rn->items[rn->nitems++];

		plan_item(c, p, items[i].pi, items[i].state, true, it);
		if (items[i].state == GF_RS_FAILED || items[i].state == GF_RS_INTERRUPTED) {
			it->kind = gf_xstrdup(gf_errkind_name(items[i].err.kind));
			it->message = gf_xstrdup(items[i].err.msg);
		}
	}
	c->reported[j] = attempt;
}

/* resume: what the stopped run left with a node's BMC. */
struct left {
	const struct gf_rollout_node *sn; /* the node as stored, NULL: none */
	bool evidence;  /* its BMC completed an update task since the rollout started */
	bool host_done; /* its host was restarted for what was staged */
	bool host_off;  /* its host is off: what was staged for it stays so */
};

/*
 * Does the BMC show @pi's version staged, not active (@p: its inventory as
 * read)? Its staging slot, a member of its own (gf_compkey_is_staged_of()),
 * reports the catalog's version.
 */
static bool shows_staged(const struct node_plan *p, const struct gf_plan_item *pi)
{
	for (size_t k = 0; k < p->comps.n; k++) {
		const struct gf_component *cp = &p->comps.v[k];

		if (gf_compkey_is_staged_of(cp->key, pi->component) &&
		    gf_version_matches(cp->version, pi->to, pi->exact))
			return true;
	}
	return false;
}

/*
 * Is @pi staged on the BMC, to activate and never push again? Recorded so
 * (pending-activation); left in flight (running, interrupted) when the BMC
 * completed an update task since the rollout started; or, whatever was
 * recorded, the BMC shows its version staged (a task purged or lost with a
 * restart leaves no other trace).
 */
static bool left_staged(const struct left *l, const struct node_plan *p,
			const struct gf_plan_item *pi)
{
	enum gf_rollout_state st = stored_item(l->sn, pi);

	return st == GF_RS_PENDING ||
	       ((st == GF_RS_RUNNING || st == GF_RS_INTERRUPTED) && l->evidence) ||
	       shows_staged(p, pi);
}

/*
 * resume: activate what the stopped run left staged, and only that (a BMC
 * reset; a host restart with --reboot, for a host that is on), then read
 * the inventory again: what shows its version is done, never pushed again.
 * Items left in flight ask the BMC first (its update tasks since the
 * rollout started, and the version its staging slot shows); an image the
 * BMC shows staged is activated whatever was recorded. Without either
 * evidence nothing is activated and they are pushed as new.
 */
static int resume_staged(const struct gf_backend *be, void *sess, const struct gf_node *n,
			 const struct ctx *c, struct node_plan *p, double deadline,
			 struct gf_result *slot, struct left *l, struct gf_err *err)
{
	enum gf_activation host = GF_ACT_NONE;
	bool bmc = false, in_flight = false;

	*l = (struct left){.sn = stored_node(c, n->name)};
	for (size_t i = 0; l->sn && i < p->plan.n; i++) {
		enum gf_rollout_state st = stored_item(l->sn, &p->plan.v[i]);

		in_flight = in_flight || (!p->plan.v[i].skip &&
					  (st == GF_RS_RUNNING || st == GF_RS_INTERRUPTED));
	}
	if (in_flight) {
		struct gf_fw_tasks_seen seen = {0};

		/* A BMC that cannot tell: activate, as the safer side of flashing twice. */
		if (!be->fw_tasks_since)
			seen.completed = 1;
		else if (be->fw_tasks_since(sess, (double)(long long)c->stored->started, &seen,
					    err) < 0)
			return GF_E_NODE;
		l->evidence = seen.completed > 0;
	}
	for (size_t i = 0; i < p->plan.n; i++) {
		const struct gf_plan_item *pi = &p->plan.v[i];

		if (pi->skip || !left_staged(l, p, pi))
			continue;
		bmc = bmc || pi->activation == GF_ACT_BMC_RESET;
		if (gf_activation_is_host(pi->activation) && c->run->o->reboot &&
		    host != GF_ACT_HOST_POWER_CYCLE)
			host = pi->activation;
	}
	if (host != GF_ACT_NONE && !host_is_on(be, sess)) {
		host = GF_ACT_NONE;
		l->host_off = true;
	}
	if (!bmc && host == GF_ACT_NONE)
		return 0;
	slot->no_retry = true;
	node_plan_release(p);
	if (bmc && be->bmc_reset && be->bmc_reset(sess, deadline, err) < 0)
		return GF_E_NODE;
	if (host != GF_ACT_NONE && be->power_set &&
	    (be->power_set(sess,
			   host == GF_ACT_HOST_POWER_CYCLE ? GF_POWER_OP_CYCLE : GF_POWER_OP_RESET,
			   err) < 0 ||
	     (be->bmc_wait && be->bmc_wait(sess, deadline, err) < 0)))
		return GF_E_NODE;
	l->host_done = host != GF_ACT_NONE;
	return read_plan(be, sess, n, c, p, err);
}

/* A budget spent before this node started: it is left not started. */
static int held_back(const struct ctx *c, size_t j, const struct gf_node *n, struct gf_result *slot,
		     struct gf_err *err)
{
	c->held[j] = true;
	slot->no_retry = true;
	return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
			  "node '%s' was not started: more than --max-failures %lu nodes failed",
			  n->name, c->run->o->max_failures);
}

static int run_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		  const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct ctx *c = vctx;
	const struct gf_rollout_opts *o = c->run->o;
	double deadline = gf_monotime() + o->update_timeout;
	size_t j = index_of(c, n);
	struct run_item *items;
	struct node_plan p;
	struct left l = {0};
	int rc = 0;

	gf_rollout_node_release(&c->out[j]);
	c->reported[j] = 0;
	if (atomic_load(c->stop))
		return held_back(c, j, n, slot, err);
	/* A run that stopped may have left a task running: let it end before looking. */
	if (c->resume && be->fw_tasks_wait && be->fw_tasks_wait(sess, deadline, err) < 0)
		return GF_E_NODE;
	if (read_plan(be, sess, n, c, &p, err) < 0)
		return GF_E_NODE;
	if (c->resume && release_own_push(be, sess, n, c, &p, err) < 0) {
		node_plan_release(&p);
		return GF_E_NODE;
	}
	if (c->resume && resume_staged(be, sess, n, c, &p, deadline, slot, &l, err) < 0)
		return GF_E_NODE;
	items = gf_xcalloc(p.plan.n ? p.plan.n : 1, sizeof(*items));
	for (size_t i = 0; i < p.plan.n; i++) {
		items[i].pi = &p.plan.v[i];
		items[i].state = p.plan.v[i].skip ? GF_RS_SKIPPED : GF_RS_NOT_STARTED;
		/*
		 * Host firmware an earlier run staged, still not activated (no
		 * --reboot, or its host is off): it stays staged, never pushed again.
		 */
		if (!p.plan.v[i].skip && c->resume && !l.host_done &&
		    gf_activation_is_host(p.plan.v[i].activation) &&
		    left_staged(&l, &p, &p.plan.v[i])) {
			items[i].state = GF_RS_PENDING;
			items[i].staged = true;
			items[i].host_off = l.host_off;
		}
	}
	run_items(be, sess, n, c, &p, items, p.plan.n, deadline, slot);
	report_items(c, j, slot->attempts, &p, items, p.plan.n);
	/*
	 * Failed: counted here, before this worker takes another node, so that
	 * none starts once the budget is spent (the calling thread counts the
	 * failures of nodes that never got here).
	 */
	if (c->out[j].state == GF_RS_FAILED) {
		c->counted[j] = true;
		if (atomic_fetch_add(c->failed, 1) + 1 > o->max_failures)
			atomic_store(c->stop, true);
	}
	for (size_t i = 0; i < p.plan.n; i++) {
		if (items[i].state == GF_RS_FAILED || items[i].state == GF_RS_INTERRUPTED) {
			*err = items[i].err;
			rc = GF_E_NODE;
			break;
		}
		if (items[i].state == GF_RS_NOT_STARTED) {
			rc = gf_err_set(err, GF_E_NODE,
					gf_exec_cancelled() ? GF_EK_INTERNAL : GF_EK_TIMEOUT,
					"node '%s': '%s' was not started (%s)", n->name,
					items[i].pi->component,
					gf_exec_cancelled() ? "interrupted" : "out of time");
			break;
		}
		if (items[i].state == GF_RS_PENDING && items[i].host_off)
			rc = gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
					"node '%s': '%s' is staged and its host is off: it stays "
					"off, and the firmware waits for its next power on",
					n->name, items[i].pi->component);
		else if (items[i].state == GF_RS_PENDING)
			rc = gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
					"node '%s': '%s' is staged and needs %s (run with --reboot)",
					n->name, items[i].pi->component,
					gf_activation_name(items[i].pi->activation));
	}
	free(items);
	node_plan_release(&p);
	return rc;
}

/* ---- the calling thread: batches and the store -------------------------- */

struct exec {
	const struct gf_rollout_run *run;
	struct ctx ctx;
	long id;
	const struct gf_rollout *r;
	atomic_size_t failed; /* nodes failed so far (the workers add theirs: ctx.failed) */
	size_t ok;            /* nodes of the batch that ended ok */
	bool store_failed;
	atomic_bool stop; /* more than --max-failures failed: no node starts (ctx.stop) */
	bool told;        /* hooks.stopping was called */
	struct gf_rollout_progress prog; /* the batch's */
};

/* At its version now, but planned for an update before: flashed by an earlier run of it. */
static void skipped_to_done(const struct gf_rollout_node *before, struct gf_rollout_node *now)
{
	for (size_t i = 0; i < now->nitems; i++) {
		struct gf_rollout_item *it = &now->items[i];

		if (it->state != GF_RS_SKIPPED)
			continue;
		for (size_t k = 0; k < before->nitems; k++) {
			const struct gf_rollout_item *b = &before->items[k];

			if (strcmp(b->component, it->component) == 0 && b->state != GF_RS_SKIPPED) {
				it->state = GF_RS_DONE;
				free(it->from);
				free(it->action);
				free(it->activation);
				it->from = dup_or_null(b->from);
				it->action = dup_or_null(b->action);
				it->activation = dup_or_null(b->activation);
			}
		}
	}
	if (now->state == GF_RS_SKIPPED)
		for (size_t i = 0; i < now->nitems; i++)
			if (now->items[i].state == GF_RS_DONE) {
				now->state = GF_RS_DONE;
				break;
			}
}

/* As each node finishes: past the budget, no node starts any more, in this batch or later. */
static void budget_check(struct exec *x)
{
	const struct gf_rollout_hooks *h = &x->run->hooks;

	size_t failed = atomic_load(&x->failed);

	if (failed <= x->run->o->max_failures)
		return;
	atomic_store(&x->stop, true);
	if (!x->told && h->stopping)
		h->stopping(h->ud, failed, x->run->o->max_failures);
	x->told = true;
}

/* As a node of the batch finishes: its state from its items and its slot, stored. */
static void node_done(void *ud, size_t j, const struct gf_result *slot)
{
	struct exec *x = ud;
	const struct gf_rollout_hooks *h = &x->run->hooks;
	size_t gi = x->ctx.idx[j];
	struct gf_rollout_node rn = {0};
	struct gf_err err = {0};
	bool first;

	if (x->ctx.held[j]) {
		/* Not started: the budget was spent before its turn. */
		gf_rollout_node_release(&x->ctx.out[j]);
		rn.state = GF_RS_NOT_STARTED;
	} else if (x->ctx.reported[j] && x->ctx.reported[j] == slot->attempts) {
		rn = x->ctx.out[j]; /* moved */
		x->ctx.out[j] = (struct gf_rollout_node){0};
	} else {
		/* No items: the node failed before it got to them, or never started. */
		gf_rollout_node_release(&x->ctx.out[j]);
		rn.state = slot->ok              ? GF_RS_FAILED
			   : slot->attempts == 0 ? GF_RS_NOT_STARTED
			   : gf_exec_cancelled() ? GF_RS_INTERRUPTED /* before its items */
						 : GF_RS_FAILED;
		/* Unreachable at plan, and still: left out again, for a later resume. */
		if (x->r->nodes[gi].state == GF_RS_SKIPPED && x->r->nodes[gi].kind &&
		    (slot->err.kind == GF_EK_CONNECT || slot->err.kind == GF_EK_TIMEOUT))
			rn.state = GF_RS_SKIPPED;
	}
	rn.node = gf_xstrdup(x->r->nodes[gi].node);
	rn.batch = x->r->nodes[gi].batch;
	rn.updated = gf_walltime();
	if (slot->err.code && (!gf_rollout_state_ok(rn.state) || !slot->ok)) {
		rn.kind = gf_xstrdup(gf_errkind_name(slot->err.kind));
		rn.message = gf_xstrdup(slot->err.msg);
	}
	if (x->ctx.resume)
		skipped_to_done(&x->r->nodes[gi], &rn);
	if (!slot->ok && rn.state == GF_RS_FAILED && !x->ctx.counted[j])
		atomic_fetch_add(&x->failed, 1);
	budget_check(x);
	if (slot->ok)
		x->ok++;
	atomic_fetch_add(&x->prog.finished, 1);
	first = !x->store_failed;
	if (gf_rollout_nodes_set(x->run->db, x->id, &rn, 1, &err) < 0)
		x->store_failed = true;
	else
		first = false;
	if (h->node_done)
		h->node_done(h->ud, x->id, &rn, first ? &err : NULL);
	gf_rollout_node_release(&rn);
}

/* Mark the nodes of a batch running before anything is sent to them. */
static int mark_running(struct exec *x, const size_t *idx, size_t k, struct gf_err *err)
{
	struct gf_rollout_node *rn = gf_xcalloc(k ? k : 1, sizeof(*rn));
	struct gf_err e = {0};
	int rc;

	for (size_t j = 0; j < k; j++) {
		const struct gf_rollout_node *src = &x->r->nodes[idx[j]];

		rn[j] = (struct gf_rollout_node){.node = src->node,
						 .batch = src->batch,
						 .state = GF_RS_RUNNING,
						 .updated = gf_walltime(),
						 .items = gf_xcalloc(src->nitems ? src->nitems : 1,
								     sizeof(*rn[j].items)),
						 .nitems = src->nitems};
		/*
		 * Its items in flight before anything is sent: a kill -9 leaves
		 * them running (outcome unknown), never not-started. What an
		 * earlier run left staged or in flight keeps its state: resume
		 * asks the BMC about it.
		 */
		for (size_t i = 0; i < src->nitems; i++) {
			rn[j].items[i] = src->items[i]; /* shallow: src owns the strings */
			if (src->items[i].state == GF_RS_NOT_STARTED ||
			    src->items[i].state == GF_RS_FAILED) {
				rn[j].items[i].state = GF_RS_RUNNING;
				rn[j].items[i].kind = rn[j].items[i].message = NULL;
			}
		}
	}
	rc = gf_rollout_nodes_set(x->run->db, x->id, rn, k, &e);
	for (size_t j = 0; j < k; j++)
		free(rn[j].items);
	free(rn);
	if (rc < 0)
		return gf_err_set(err, rc, GF_EK_NONE, "the rollout could not be stored: %s",
				  e.msg);
	return 0;
}

/* Is node @i of @r part of this run (not-started), or of this resume (anything left)? */
static bool to_run(const struct gf_rollout *r, size_t i, bool resume)
{
	enum gf_rollout_state s = r->nodes[i].state;

	if (!resume)
		return s == GF_RS_NOT_STARTED;
	if (s == GF_RS_SKIPPED && r->nodes[i].kind)
		return true; /* its BMC did not answer at plan */
	return !(gf_rollout_state_ok(s) || s == GF_RS_UNSUPPORTED);
}

size_t gf_rollout_left(const struct gf_rollout *r)
{
	size_t left = 0;

	for (size_t i = 0; i < r->n; i++)
		left += to_run(r, i, true);
	return left;
}

/*
 * What a node's audit row names: the rollout, and each component it is to
 * update with the version ("rollout 3: bmc 7.1, bios 2.0"). Caller frees.
 */
static char *audit_detail(long id, const struct gf_rollout_node *rn)
{
	struct gf_buf b = GF_BUF_INIT;
	const char *sep = ": ";

	gf_buf_addf(&b, "rollout %ld", id);
	for (size_t i = 0; i < rn->nitems; i++) {
		const struct gf_rollout_item *it = &rn->items[i];

		if (it->state == GF_RS_SKIPPED || it->state == GF_RS_DONE)
			continue;
		gf_buf_addf(&b, "%s%s %s", sep, it->component, it->to ? it->to : "?");
		sep = ", ";
	}
	return gf_buf_detach(&b);
}

/*
 * Seconds between the uploads of a batch of @k: spread over UPLOAD_SPREAD_S,
 * so that a batch does not push every image in the same second, and at
 * most UPLOAD_GAP_S apart. The spread is what a batch costs beyond its
 * slowest node: 0.2 s apart, a batch of 25 started its last upload 4.8 s
 * after its first and a rollout of 100 took 1.5x its ideal (bench/rollout.sh).
 */
#define UPLOAD_SPREAD_S 1.0
#define UPLOAD_GAP_S 0.2

static double upload_spacing(size_t k)
{
	double gap;

	if (k < 2)
		return 0;
	gap = UPLOAD_SPREAD_S / (double)(k - 1);
	return gap < UPLOAD_GAP_S ? gap : UPLOAD_GAP_S;
}

/* One batch: its nodes marked running, then one fan-out. */
static int run_batch(struct exec *x, const size_t *idx, size_t k, unsigned b, unsigned nb,
		     struct gf_err *err)
{
	const struct gf_rollout_run *run = x->run;
	const struct gf_rollout_hooks *h = &run->hooks;
	struct gf_node *sub;
	char **details;
	struct gf_rollout_fanout f;
	int rc;

	rc = mark_running(x, idx, k, err);
	if (rc < 0)
		return rc;
	sub = gf_xcalloc(k, sizeof(*sub));
	details = gf_xcalloc(k, sizeof(*details));
	for (size_t j = 0; j < k; j++) {
		sub[j] = run->nodes[idx[j]]; /* shallow: run->nodes owns the strings */
		details[j] = audit_detail(x->id, &x->r->nodes[idx[j]]);
	}
	x->ctx.nodes = sub;
	x->ctx.idx = idx;
	x->ctx.out = gf_xcalloc(k, sizeof(*x->ctx.out));
	x->ctx.reported = gf_xcalloc(k, sizeof(*x->ctx.reported));
	x->ctx.held = gf_xcalloc(k, sizeof(*x->ctx.held));
	x->ctx.counted = gf_xcalloc(k, sizeof(*x->ctx.counted));
	x->ctx.stop = &x->stop;
	x->ctx.failed = &x->failed;
	x->ok = 0;
	x->prog.batch = b;
	x->prog.batches = nb;
	x->prog.nodes = k;
	atomic_store(&x->prog.finished, 0);
	atomic_store(&x->prog.total, 0);
	atomic_store(&x->prog.sent, 0);
	x->ctx.prog = &x->prog;
	f = (struct gf_rollout_fanout){
		.nodes = sub,
		.n = k,
		.op = run_op,
		.ctx = &x->ctx,
		.audit = x->ctx.resume ? "update resume" : "update run",
		.audit_detail = (const char *const *)details,
		.timeout = run->o->update_timeout + 60,
		.batch = 1,
		.interval = upload_spacing(k),
		.may_be_restarting = x->ctx.resume ? left_running : NULL,
		.on_done = node_done,
		.done_ud = x,
	};
	if (h->batch_start)
		h->batch_start(h->ud, &x->prog);
	rc = run->fan.run(run->fan.ud, &f);
	if (h->batch_end)
		h->batch_end(h->ud, &x->prog, x->ok);
	for (size_t j = 0; j < k; j++)
		gf_rollout_node_release(&x->ctx.out[j]);
	free(x->ctx.out);
	free(x->ctx.reported);
	free(x->ctx.held);
	free(x->ctx.counted);
	for (size_t j = 0; j < k; j++)
		free(details[j]);
	free(details);
	free(sub);
	x->ctx.out = NULL;
	x->ctx.reported = NULL;
	return rc;
}

int gf_rollout_execute(const struct gf_rollout_run *run, const struct gf_rollout *r, bool resume,
		       bool *ret_store_failed, struct gf_err *err)
{
	struct exec x = {
		.run = run,
		.id = r->id,
		.r = r,
		.ctx = {.run = run, .resume = resume, .stored = resume ? r : NULL},
	};
	size_t n = r->n, *idx = gf_xcalloc(n ? n : 1, sizeof(*idx));
	unsigned maxb = 0;
	int rc = 0;

	*ret_store_failed = false;
	for (size_t i = 0; i < n; i++) {
		if (r->nodes[i].batch > maxb)
			maxb = r->nodes[i].batch;
		if (r->nodes[i].state == GF_RS_FAILED && !resume)
			atomic_fetch_add(&x.failed, 1);
	}
	/* Nodes of no batch left for resume (unreachable at plan) go after the last one. */
	for (size_t i = 0; i < n; i++)
		if (r->nodes[i].batch == 0 && to_run(r, i, resume)) {
			maxb++;
			break;
		}
	for (unsigned b = 1; b <= maxb && rc == 0 && !x.store_failed; b++) {
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if ((r->nodes[i].batch == b ||
			     (r->nodes[i].batch == 0 && b == maxb && resume)) &&
			    to_run(r, i, resume))
				idx[k++] = i;
		if (k == 0)
			continue;
		budget_check(&x);
		if (atomic_load(&x.stop))
			break;
		rc = run_batch(&x, idx, k, b, maxb, err);
	}
	*ret_store_failed = x.store_failed;
	free(idx);
	return rc;
}

int gf_rollout_finish(struct gf_db *db, long id, struct gf_err *err)
{
	struct gf_rollout r = {0};
	bool left = false;
	int rc;

	if ((rc = gf_rollout_load(db, id, &r, err)) < 0)
		return rc;
	for (size_t i = 0; i < r.n; i++)
		left = left || r.nodes[i].state == GF_RS_NOT_STARTED ||
		       r.nodes[i].state == GF_RS_RUNNING || r.nodes[i].state == GF_RS_INTERRUPTED ||
		       (r.nodes[i].state == GF_RS_SKIPPED && r.nodes[i].kind);
	gf_rollout_release(&r);
	return gf_rollout_set_state(db, id, left ? GF_RS_STOPPED : GF_RS_FINISHED, err);
}

int gf_rollout_resume_claim(struct gf_db *db, const struct gf_rollout *r, struct gf_err *err)
{
	const char **names = gf_xcalloc(r->n ? r->n : 1, sizeof(*names));
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < r->n; i++)
		if (to_run(r, i, true))
			names[k++] = r->nodes[i].node;
	rc = gf_rollout_claim(db, r->id, names, k, err);
	free(names);
	return rc;
}

int gf_rollout_resume_load(struct gf_db *db, long id, const struct gf_rollout_opts *given,
			   struct gf_rollout_resume *ret, struct gf_err *err)
{
	struct gf_rollout_resume rs = {0};
	int rc;

	if ((rc = gf_rollout_load(db, id, &rs.r, err)) < 0)
		return rc;
	gf_rollout_opts_stored(&rs.r, given, &rs.o, &rs.component);
	/* The image files as planned; a rollout stored before they were recorded reads them. */
	if (rs.r.nimages)
		rc = gf_catalog_parse_recorded(rs.r.catalog_path, rs.r.catalog_text,
					       strlen(rs.r.catalog_text), rs.r.images, rs.r.nimages,
					       &rs.cat, err);
	else
		rc = gf_catalog_parse(rs.r.catalog_path, rs.r.catalog_text,
				      strlen(rs.r.catalog_text), &rs.cat, err);
	if (rc < 0) {
		gf_rollout_resume_release(&rs);
		return rc;
	}
	rs.names = gf_xcalloc(rs.r.n ? rs.r.n : 1, sizeof(*rs.names));
	for (size_t i = 0; i < rs.r.n; i++)
		rs.names[i] = rs.r.nodes[i].node;
	*ret = rs;
	return 0;
}

void gf_rollout_resume_release(struct gf_rollout_resume *rs)
{
	if (!rs)
		return;
	free(rs->names);
	free(rs->component);
	gf_catalog_release(&rs->cat);
	gf_rollout_release(&rs->r);
	*rs = (struct gf_rollout_resume){0};
}

int gf_rollout_match(const struct gf_rollout *r, struct gf_node *nodes, size_t n,
		     struct gf_err *err)
{
	if (n != r->n)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "rollout %ld names %zu nodes, the registry has %zu of them",
				  r->id, r->n, n);
	for (size_t i = 0; i < r->n; i++)
		for (size_t k = i; k < n; k++)
			if (strcmp(nodes[k].name, r->nodes[i].node) == 0) {
				struct gf_node t = nodes[i];

				nodes[i] = nodes[k];
				nodes[k] = t;
				break;
			}
	return 0;
}
