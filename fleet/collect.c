/* One fan-out of two parts per node, then typed sweep nodes: no JSON in between. */
#include "fleet/collect.h"

#include <stdlib.h>
#include <string.h>

#include "host/hostcollect.h"
#include "inventory/normalize.h"
#include "lib/buf.h"
#include "lib/util.h"

enum { PART_BMC, PART_SSH, NPARTS };

/* An operation of the BMC part that failed, or that the backend cannot do. */
struct op_error {
	const char *op; /* GF_OP_* */
	struct gf_err err;
};

/* What a node's BMC part read; written by its worker only. */
struct bmc_part {
	const struct gf_backend *be; /* the backend of the session, once one was opened */
	bool hw_read, fw_read, bios_read;
	struct gf_hardware hw;
	struct gf_component_list fw;
	struct gf_bios bios;
	struct gf_sel_summary sel;
	struct gf_sensor_summary sensors; /* its leaks stay NULL: they are in leaks */
	struct gf_sensor_list leaks;      /* the leak detectors read (type "leak") */
	struct op_error errs[5];          /* hardware, firmware, sel, sensors, bios */
	size_t nerrs;
};

/* What a node's SSH part read; written by its worker only. */
struct ssh_part {
	bool read;
	struct gf_hostfacts facts;
};

struct run {
	const struct gf_collect *c;
	struct bmc_part *bmc;         /* per node */
	struct ssh_part *ssh;         /* per node */
	struct gf_fanout_hooks hooks; /* the caller's */
};

static void bmc_part_release(struct bmc_part *p)
{
	gf_hardware_release(&p->hw);
	gf_component_list_release(&p->fw);
	gf_bios_release(&p->bios);
	gf_sensor_list_release(&p->leaks);
	memset(p, 0, sizeof(*p));
}

static void op_failed(struct bmc_part *p, const char *op, const struct gf_err *e)
{
	p->errs[p->nerrs].op = op;
	p->errs[p->nerrs++].err = *e;
}

static void op_unsupported(struct bmc_part *p, const char *op, const struct gf_backend *be,
			   const struct gf_node *n)
{
	struct gf_err e = {0};

	gf_err_set(&e, GF_E_NODE, GF_EK_UNSUPPORTED,
		   "the %s backend cannot read '%s' of node '%s' yet", be->name, op, n->name);
	op_failed(p, op, &e);
}

/* Count entries newer than the previous read's mark, by severity; move the mark on. */
static void sel_summary(const struct gf_sel_list *l, const struct gf_sel_prev *prev,
			struct gf_sel_summary *ret)
{
	unsigned by[3] = {0};
	struct gf_sel_summary s = {.read = true,
				   .total = (unsigned)l->n,
				   .has_mark = prev->has_mark,
				   .mark = prev->mark};

	for (size_t i = 0; i < l->n; i++) {
		const struct gf_sel_entry *e = &l->v[i];
		bool fresh = e->has_time ? !prev->has_mark || e->time > prev->mark : !prev->read;

		if (fresh && (unsigned)e->severity < 3)
			by[e->severity]++;
		if (e->has_time && (!s.has_mark || e->time > s.mark)) {
			s.mark = e->time;
			s.has_mark = true;
		}
	}
	s.new_info = by[GF_SEV_INFO];
	s.new_warning = by[GF_SEV_WARNING];
	s.new_critical = by[GF_SEV_CRITICAL];
	*ret = s;
}

/* The counts by state into @ret; the leak detectors of @l moved into @leaks. */
static void sensor_summary(struct gf_sensor_list *l, struct gf_sensor_summary *ret,
			   struct gf_sensor_list *leaks)
{
	struct gf_sensor_summary s = {.read = true};

	for (size_t i = 0; i < l->n; i++) {
		switch (l->v[i].state) {
		case GF_SENSOR_NOMINAL: s.nominal++; break;
		case GF_SENSOR_WARNING: s.warning++; break;
		case GF_SENSOR_CRITICAL: s.critical++; break;
		default: s.unknown++; break;
		}
		if (l->v[i].type && strcmp(l->v[i].type, "leak") == 0) {
			*gf_sensor_list_add(leaks) = l->v[i];
			memset(&l->v[i], 0, sizeof(l->v[i]));
		}
	}
	*ret = s;
}

/*
 * Whether the latest read was refused for its credentials: the next ones
 * would be too (a BMC that wants its password changed refuses every read),
 * so the node has one auth error, not one per read.
 */
static bool refused_login(const struct bmc_part *p)
{
	return p->nerrs && p->errs[p->nerrs - 1].err.kind == GF_EK_AUTH;
}

/* The read-only operations over the one session, each failing on its own. */
static void read_bmc(const struct gf_backend *be, void *sess, const struct gf_node *n,
		     const struct gf_sel_prev *prev, struct bmc_part *p)
{
	struct gf_sel_list sel = {0};
	struct gf_sensor_list sens = {0};
	struct gf_err e = {0};

	if (!be->hardware)
		op_unsupported(p, GF_OP_HARDWARE, be, n);
	else if (be->hardware(sess, &p->hw, &e) < 0)
		op_failed(p, GF_OP_HARDWARE, &e);
	else
		p->hw_read = true;
	gf_err_clear(&e);
	if (refused_login(p))
		return;
	if (!be->firmware)
		op_unsupported(p, GF_OP_FIRMWARE, be, n);
	else if (be->firmware(sess, &p->fw, &e) < 0)
		op_failed(p, GF_OP_FIRMWARE, &e);
	else
		p->fw_read = true;
	gf_err_clear(&e);
	if (refused_login(p))
		return;
	if (!be->sel_list)
		op_unsupported(p, GF_OP_SEL, be, n);
	else if (be->sel_list(sess, &sel, &e) < 0)
		op_failed(p, GF_OP_SEL, &e);
	else
		sel_summary(&sel, prev, &p->sel);
	gf_err_clear(&e);
	gf_sel_list_release(&sel);
	if (refused_login(p))
		return;
	if (!be->sensors)
		op_unsupported(p, GF_OP_SENSORS, be, n);
	else if (be->sensors(sess, &sens, &e) < 0)
		op_failed(p, GF_OP_SENSORS, &e);
	else
		sensor_summary(&sens, &p->sensors, &p->leaks);
	gf_err_clear(&e);
	gf_sensor_list_release(&sens);
	if (refused_login(p))
		return;
	/* BIOS settings where the backend reads them; a BMC without them is no error. */
	if (be->bios_get && be->bios_get(sess, false, &p->bios, &e) < 0) {
		if (e.kind != GF_EK_UNSUPPORTED)
			op_failed(p, GF_OP_BIOS, &e);
	} else if (be->bios_get) {
		p->bios_read = true;
	}
}

/* A node's BMC part, on the frame's open session: each read fails on its own. */
static int bmc_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		  const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct run *r = vctx;
	size_t i = (size_t)(n - r->c->bmc.nodes);
	struct bmc_part *p = &r->bmc[i];

	bmc_part_release(p);
	read_bmc(be, sess, n, &r->c->prev[i], p);
	p->be = be;
	return 0;
}

/* A node's SSH part: inside the node's one deadline, shared with its BMC part; tried once. */
static void ssh_task(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	const struct run *r = vctx;
	const struct gf_collect *c = r->c;
	const struct gf_node *n = &c->bmc.nodes[i];
	struct gf_ssh_target target = {
		.node = n->name,
		.spec = n->ssh,
		.prof = c->ssh_profs[i],
		.accept_new = c->accept_new,
		.deadline = deadline,
		.cancel = gf_exec_cancel_flag(),
	};
	struct ssh_part *p = &r->ssh[i];
	struct gf_err err = {0};

	slot->no_retry = true;
	if (!c->ssh_profs[i]) {
		slot->ok = true;
		return;
	}
	if (gf_host_facts_ssh(&target, &p->facts, &err) < 0) {
		gf_result_fail(slot, &err);
		return;
	}
	p->read = true;
	slot->ok = true;
}

static bool has_ssh(void *vctx, size_t i)
{
	const struct run *r = vctx;

	return r->c->ssh_profs[i] != NULL;
}

/* ---- progress ------------------------------------------------------------- */

static void node_done(void *ud, size_t i, const struct gf_result *parts)
{
	const struct run *r = ud;
	const struct gf_collect *c = r->c;
	const struct gf_node *n = &c->bmc.nodes[i];
	const struct gf_result *bs = &parts[PART_BMC], *ss = &parts[PART_SSH];
	struct gf_result sum = n->bmc || !c->ssh_profs[i] ? *bs : *ss;

	sum.data = NULL;
	if (!n->bmc && !c->ssh_profs[i]) {
		sum.ok = false;
		gf_err_set(&sum.err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "node '%s' has neither a BMC nor an ssh address to sweep", n->name);
	}
	if (ss->t_end > sum.t_end)
		sum.t_end = ss->t_end;
	if (r->hooks.done)
		r->hooks.done(r->hooks.ud, i, &sum);
}

/* The caller's other hooks, called with its ud. */
static int hook_db(void *ud, struct gf_db **ret)
{
	const struct run *r = ud;

	return r->hooks.db(r->hooks.ud, ret);
}

static int hook_start(void *ud, const struct gf_fanout *f)
{
	const struct run *r = ud;

	return r->hooks.start(r->hooks.ud, f);
}

static void hook_finish(void *ud, const struct gf_result *slots)
{
	const struct run *r = ud;

	r->hooks.finish(r->hooks.ud, slots);
}

/* ---- the sweep nodes, on the calling thread --------------------------------- */

static void node_error(struct gf_sweep *sw, struct gf_sweep_node *sn, const char *op,
		       const struct gf_err *e)
{
	gf_sweep_node_error(sw, sn, op, e->kind, gf_sweep_text(sw, e->msg[0] ? e->msg : "failed"));
}

/* Drop what was kept of a node: for data that cannot be kept at all. */
static void node_clear(struct gf_sweep_node *sn)
{
	free(sn->errors);
	sn->errors = NULL;
	sn->nerrors = 0;
	gf_sweep_node_take_hardware(sn, NULL);
	gf_sweep_node_take_host(sn, NULL);
	sn->set->n = 0;
	sn->protocol = sn->model = NULL;
	sn->fw_read = sn->host_read = sn->bios_read = false;
	memset(&sn->sel, 0, sizeof(sn->sel));
	gf_sweep_node_clear_leaks(sn);
	memset(&sn->sensors, 0, sizeof(sn->sensors));
}

/* The BMC part into @sn; GF_E_NODE when its components cannot be kept. */
static int add_bmc(struct gf_sweep *sw, struct gf_sweep_node *sn, const struct gf_node *n,
		   const struct gf_profile *prof, struct bmc_part *p, const struct gf_result *slot,
		   struct gf_err *err)
{
	int rc;

	if (!slot->ok) {
		node_error(sw, sn, GF_OP_BMC, &slot->err);
		return 0;
	}
	sn->protocol = gf_sweep_str(sw, p->be->name);
	if (p->hw_read)
		sn->model = gf_sweep_text(sw, gf_norm_model(&p->hw));
	if (p->fw_read) {
		rc = gf_norm_bmc_components(sw, n->name, &p->fw, p->hw_read ? &p->hw : NULL,
					    p->be->name, sn->set, err);
		if (rc < 0)
			return rc;
	}
	if (p->bios_read)
		gf_norm_bios_components(sw, &p->bios, p->be->name, prof ? prof->bios_ignore : NULL,
					sn->set);
	if (p->hw_read)
		gf_sweep_node_take_hardware(sn, &p->hw);
	sn->fw_read = p->fw_read;
	sn->bios_read = p->bios_read;
	for (size_t k = 0; k < p->nerrs; k++)
		node_error(sw, sn, p->errs[k].op, &p->errs[k].err);
	sn->sel = p->sel;
	sn->sensors = p->sensors;
	for (size_t k = 0; k < p->leaks.n; k++)
		gf_sweep_node_add_leak(sw, sn, p->leaks.v[k].chassis, p->leaks.v[k].id,
				       p->leaks.v[k].name, p->leaks.v[k].state);
	return 0;
}

static void add_node(struct gf_sweep *sw, const struct gf_collect *c, const struct run *r, size_t i,
		     const struct gf_result *slots)
{
	const struct gf_node *n = &c->bmc.nodes[i];
	struct gf_sweep_node *sn = gf_sweep_add_node(sw, n->name);
	const struct gf_result *ss = &slots[NPARTS * i + PART_SSH];
	struct gf_err err = {0};

	if (!n->bmc && !c->ssh_profs[i]) {
		gf_err_set(&err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "node '%s' has neither a BMC nor an ssh address to sweep", n->name);
		node_error(sw, sn, GF_OP_BMC, &err);
		gf_err_clear(&err);
	}
	if (n->bmc && add_bmc(sw, sn, n, c->bmc.profs ? c->bmc.profs[i] : NULL, &r->bmc[i],
			      &slots[NPARTS * i + PART_BMC], &err) < 0) {
		/* A peer sent something the inventory cannot keep: that is the node's result. */
		node_clear(sn);
		gf_sweep_node_error(sw, sn, GF_OP_BMC, GF_EK_PROTOCOL, gf_sweep_text(sw, err.msg));
		sn->status = gf_sweep_node_judge(sn);
		return;
	}
	if (c->ssh_profs[i] && !ss->ok) {
		node_error(sw, sn, GF_OP_SSH, &ss->err);
	} else if (r->ssh[i].read) {
		/* A host that answered in part: its facts kept, the node partial. */
		if (gf_hostfacts_partial_err(&r->ssh[i].facts, &err) < 0) {
			node_error(sw, sn, GF_OP_SSH, &err);
			gf_err_clear(&err);
		}
		gf_norm_host_components(sw, &r->ssh[i].facts, sn->set);
		gf_sweep_node_take_host(sn, &r->ssh[i].facts);
		sn->host_read = true;
	}
	gf_inv_set_finish(sw, sn->set);
	sn->status = gf_sweep_node_judge(sn);
}

int gf_collect_sweep(struct gf_collect *c, struct gf_sweep *sw, struct gf_err *err)
{
	struct gf_fanout *f = &c->bmc;
	struct run r = {.c = c, .hooks = f->hooks};
	const struct gf_bmc_opts *given;
	struct gf_bmc_opts opts;
	size_t n = f->n;
	bool ssh = false;
	int rc;

	for (size_t i = 0; i < n; i++)
		ssh = ssh || c->ssh_profs[i];
	if (ssh && (rc = gf_ssh_global_init(err)) < 0)
		return rc;
	r.bmc = gf_xcalloc(n ? n : 1, sizeof(*r.bmc));
	r.ssh = gf_xcalloc(n ? n : 1, sizeof(*r.ssh));
	/* A sweep keeps sensor states, not thresholds: no Get Sensor Thresholds. */
	opts = f->opts ? *f->opts : (struct gf_bmc_opts){0};
	opts.no_thresholds = true;
	given = f->opts;
	f->opts = &opts;
	f->mode = GF_FANOUT_ONCE;
	f->op = bmc_op;
	f->ctx = &r;
	f->side = (struct gf_fanout_side){.task = ssh_task, .wanted = has_ssh, .ctx = &r};
	f->hooks = (struct gf_fanout_hooks){
		.db = r.hooks.db ? hook_db : NULL,
		.start = r.hooks.start ? hook_start : NULL,
		.done = node_done,
		.finish = r.hooks.finish ? hook_finish : NULL,
		.ud = &r,
	};
	rc = gf_fanout_run(f, err);
	f->hooks = r.hooks;
	f->opts = given;
	for (size_t i = 0; rc == 0 && i < n; i++)
		add_node(sw, c, &r, i, f->slots);
	for (size_t i = 0; i < n; i++) {
		bmc_part_release(&r.bmc[i]);
		gf_hostfacts_release(&r.ssh[i].facts);
	}
	free(r.bmc);
	free(r.ssh);
	if (ssh)
		gf_ssh_global_cleanup();
	return rc;
}
