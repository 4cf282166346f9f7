/* The one BMC fan-out frame: pins, the fleet ping, the per-node task, the executor, hooks. */
#include "fleet/fanout.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/util.h"

/* The pause between two opens of a BMC that may be restarting. */
#define RESTART_POLL_S 1.0
/* A stream's waits between sessions, unless the run says. */
#define BACKOFF_MIN_S 1.0
#define BACKOFF_MAX_S 30.0

enum { PART_BMC, PART_SIDE, NPARTS };

static size_t nparts(const struct gf_fanout *f)
{
	return f->side.task ? NPARTS : 1;
}

/*
 * Sleep until @until, in short steps, unless Ctrl-C comes first. Returns
 * false when it did (then the caller stops).
 */
static bool pause_until(double until)
{
	return !gf_cancel_sleep_until(gf_exec_cancel_flag(), until);
}

/* May the BMC come back: a refused, dropped or timed out connection? */
static bool transient(const struct gf_err *err)
{
	return err->kind == GF_EK_CONNECT || err->kind == GF_EK_TIMEOUT;
}

/*
 * Is a failed open worth another after a pause (the pause taken)? Only for a
 * node the verb says may be restarting, while its BMC does not take
 * connections and time is left.
 */
static bool restarting(const struct gf_fanout *f, const struct gf_node *n, double deadline,
		       const struct gf_err *err)
{
	double until = gf_monotime() + RESTART_POLL_S;

	if (!f->may_be_restarting || !f->may_be_restarting(f->ctx, n) || !transient(err) ||
	    until + RESTART_POLL_S >= deadline)
		return false;
	return pause_until(until);
}

/* A node's slot data: an object, with the run's action. */
static void slot_start(const struct gf_fanout *f, struct gf_result *slot)
{
	slot->data = json_object();
	if (f->action)
		json_object_set_new(slot->data, "action", json_string(f->action));
}

/* A wait in [w/2, w], from a per-node xorshift state (no shared state between workers). */
static double jitter(uint64_t *x, double w)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return w / 2 + w / 2 * (double)(*x >> 11) / (double)(UINT64_C(1) << 53);
}

/*
 * A stream: sessions opened one after the other until the op is done, a
 * failure that is not transient, the deadline or Ctrl-C (fanout.h).
 */
static void stream(const struct gf_fanout *f, const struct gf_backend *be, size_t i,
		   double deadline, struct gf_result *slot)
{
	double bmin = f->backoff_min > 0 ? f->backoff_min : BACKOFF_MIN_S;
	double bmax = f->backoff_max > 0 ? f->backoff_max : BACKOFF_MAX_S;
	struct gf_fanout_session s = {
		.be = be,
		.node = &f->nodes[i],
		.i = i,
		.opts = f->opts,
		.deadline = deadline,
	};
	uint64_t seed = (uint64_t)(gf_monotime() * 1e9) ^
			((uint64_t)i + 1) * UINT64_C(0x9e3779b97f4a7c15);
	double wait = bmin, next;
	struct gf_err err = {0};
	bool up = false; /* the last session opened */
	int rc;

	slot->no_retry = true; /* the loop below is the node's retries */
	for (;;) {
		gf_err_clear(&err);
		rc = gf_bmc_open(&f->bmc, i, be, deadline, &s.sess, &err);
		up = rc == 0;
		if (up) {
			s.opened++;
			rc = f->stream(&s, f->ctx, slot, &err);
			be->close(s.sess);
			s.sess = NULL;
			if (rc == GF_FANOUT_DONE)
				break;
			if (gf_exec_cancelled() || gf_monotime() >= deadline)
				break;
			if (rc < 0 && !transient(&err))
				goto fail;
			wait = bmin; /* it was up: start again from the shortest wait */
		} else if (!transient(&err) || gf_exec_cancelled()) {
			goto fail;
		}
		if (gf_monotime() + bmin / 2 >= deadline) /* no time left for another session */
			break;
		next = gf_monotime() + jitter(&seed, wait);
		if (!pause_until(next < deadline ? next : deadline) || gf_monotime() >= deadline)
			break;
		if (!up)
			wait = wait * 2 < bmax ? wait * 2 : bmax;
	}
	if (!up)
		goto fail;
	slot->ok = true;
	return;
fail:
	gf_result_fail(slot, &err);
}

/*
 * Node @i's session @sess, its op over: into f->later when its backend's
 * close can wait until the results are out and there is room, else closed.
 */
static void bmc_done_with(const struct gf_fanout *f, const struct gf_backend *be, size_t i,
			  void *sess)
{
	struct gf_fanout_keep *l = f->later;

	if (l && be->close_later && i < l->n) {
		if (atomic_fetch_add(&l->held, 1) < l->cap) {
			l->be[i] = be;
			l->sess[i] = sess;
			return;
		}
		atomic_fetch_sub(&l->held, 1);
	}
	be->close(sess);
}

/* Whether node @i's session is kept from one run to the next (f->keep: its first nodes'). */
static bool kept(const struct gf_fanout *f, size_t i)
{
	return f->keep && i < f->keep->n;
}

/* Node @i's BMC part, on a worker thread. */
static void bmc_task(const struct gf_fanout *f, size_t i, double deadline, struct gf_result *slot)
{
	const struct gf_node *n = &f->nodes[i];
	const struct gf_backend *be = NULL;
	struct gf_err err = {0};
	void *sess = NULL;

	slot_start(f, slot);
	if (!n->bmc && f->side.task) {
		slot->ok = true; /* nothing to read: the side part is the node's */
		return;
	}
	if (gf_exec_cancelled()) {
		gf_err_set(&err, GF_E_NODE, GF_EK_INTERNAL,
			   "interrupted before node '%s' was started", n->name);
		goto fail;
	}
	/* A kept session's backend was chosen before: auto is not probed again. */
	be = kept(f, i) && f->keep->sess[i] ? f->keep->be[i]
					    : gf_bmc_choose(&f->bmc, i, deadline, &err);
	if (!be)
		goto fail;
	if (!n->protocol)
		json_object_set_new(slot->data, "protocol", json_string(be->name));
	if (f->mode == GF_FANOUT_STREAM) {
		stream(f, be, i, deadline, slot);
		return;
	}
	if (kept(f, i) && f->keep->sess[i] && f->keep->be[i] == be) {
		/* Last run's session: one more try on a fresh one if it went stale. */
		sess = f->keep->sess[i];
		f->keep->sess[i] = NULL;
		be->rearm(sess, deadline);
		if (f->op(be, sess, n, f->ctx, slot, &err) == 0)
			goto ok;
		be->close(sess);
		sess = NULL;
		gf_err_clear(&err);
	}
	while (gf_bmc_open(&f->bmc, i, be, deadline, &sess, &err) < 0) {
		if (!restarting(f, n, deadline, &err))
			goto fail;
		gf_err_clear(&err);
	}
	if (f->op(be, sess, n, f->ctx, slot, &err) < 0)
		goto fail;
ok:
	if (kept(f, i) && be->rearm) {
		f->keep->sess[i] = sess;
		f->keep->be[i] = be;
	} else {
		bmc_done_with(f, be, i, sess);
	}
	slot->ok = true;
	return;
fail:
	if (sess)
		bmc_done_with(f, be, i, sess);
	gf_result_fail(slot, &err);
}

static void task(void *vctx, size_t k, double deadline, struct gf_result *slot)
{
	const struct gf_fanout *f = vctx;

	if (k % nparts(f) == PART_BMC)
		bmc_task(f, k / nparts(f), deadline, slot);
	else
		f->side.task(f->side.ctx, k / nparts(f), deadline, slot);
}

/* ---- the gate: the fleet ping -------------------------------------------------- */

/* A node whose BMC may be restarting is not pinged: its session is retried instead. */
static bool no_ping(const void *ud, size_t i)
{
	const struct gf_fanout *f = ud;

	if (f->served && f->served[i])
		return true; /* the power loop read it: nothing left to wait for */
	if (kept(f, i) && f->keep->sess[i])
		return true; /* its session is open: the op tells whether the BMC answers */
	return f->may_be_restarting && f->may_be_restarting(f->ctx, &f->nodes[i]);
}

/* The BMC part waits for its ping; a side part starts its node at once when it has one. */
static enum gf_gate gate_state(void *ud, size_t k)
{
	const struct gf_fanout *f = ud;
	size_t i = k / nparts(f);

	if (k % nparts(f) == PART_BMC)
		return gf_bmc_gate_state(f->gate, i);
	return !f->side.wanted || f->side.wanted(f->side.ctx, i) ? GF_GATE_OPEN : GF_GATE_FOLLOW;
}

/* The fleet ping, sent once the run catches Ctrl-C (gf_exec_run()). */
static bool gate_begin(void *ud)
{
	struct gf_fanout *f = ud;

	f->gate = gf_bmc_gate_start(&f->bmc, f->n, f->exec.timeout, no_ping, f);
	return f->gate != NULL;
}

static void gate_wait(void *ud, double until)
{
	gf_bmc_gate_wait(((const struct gf_fanout *)ud)->gate, until);
}

/* A node whose BMC never answered the ping: failed as bmc_task fails it. */
static void gate_expire(void *ud, size_t k, struct gf_result *slot)
{
	const struct gf_fanout *f = ud;
	struct gf_err err = {0};

	slot_start(f, slot);
	gf_bmc_gate_expired(f->gate, k / nparts(f), &err);
	gf_result_fail(slot, &err);
}

static void done(void *ud, size_t i, const struct gf_result *slot)
{
	const struct gf_fanout *f = ud;

	if (f->hooks.done)
		f->hooks.done(f->hooks.ud, i, slot);
}

/* ---- the power loop (reads_power) ------------------------------------------------- */

struct power_loop {
	struct gf_fanout *f;
	struct gf_exec_ctl *c;
};

static void power_done(void *ud, size_t i, int rc, enum gf_power p, const struct gf_err *err)
{
	struct power_loop *l = ud;
	struct gf_fanout *f = l->f;
	struct gf_result *slot = &f->slots[i];

	if (rc == GF_POWER_AGAIN)
		return; /* a worker runs the op */
	slot_start(f, slot);
	if (rc == 0) {
		json_object_set_new(slot->data, "power", json_string(gf_power_name(p)));
		slot->ok = true;
	} else {
		gf_result_fail(slot, err);
	}
	f->served[i] = true;
	gf_exec_inline_done(l->c, i);
}

/* The backend that reads every node's power state on this thread, NULL: none does. */
static const struct gf_backend *power_loop_backend(const struct gf_fanout *f)
{
	const struct gf_backend *be = f->n ? f->nodes[0].protocol : NULL;

	if (!f->reads_power || f->mode != GF_FANOUT_ONCE || f->side.task || f->keep ||
	    f->may_be_restarting || f->backend || f->exec.batch || !be || !be->power_get_many)
		return NULL;
	for (size_t i = 0; i < f->n; i++)
		if (f->nodes[i].protocol != be || !f->nodes[i].bmc)
			return NULL; /* a mixed run: every node on the workers, at once */
	return be;
}

/* On the calling thread, before any worker (gf_exec_inline). */
static void power_loop_run(void *ud, struct gf_exec_ctl *c)
{
	struct gf_fanout *f = ud;
	const struct gf_backend *be = power_loop_backend(f);
	struct power_loop l = {.f = f, .c = c};
	struct gf_bmc_target *t;
	double deadline = gf_monotime() + f->exec.timeout;

	t = gf_xcalloc(f->n, sizeof(*t));
	for (size_t i = 0; i < f->n; i++)
		gf_bmc_target_of(&f->bmc, i, deadline, &t[i]);
	/* All or none, as above: what it does not read, the workers do. */
	be->power_get_many(t, f->n, f->exec.fanout, power_done, &l);
	free(t);
}

/* ---- pins ------------------------------------------------------------------------ */

/* May node @n's BMC show a certificate (with a given backend: that one has them)? */
static bool may_pin(const struct gf_fanout *f, const struct gf_node *n)
{
	if (f->backend)
		return n->bmc && f->backend->fingerprint;
	return gf_bmc_may_pin(n);
}

static bool has_bmc(const struct gf_node *n)
{
	return n->bmc != NULL;
}

static bool no_node(const struct gf_node *n)
{
	return false;
}

static int pins_load(struct gf_fanout *f, struct gf_err *err)
{
	struct gf_db *db = NULL;
	int rc;

	for (size_t i = 0; i < f->n && !f->tls; i++)
		f->tls = may_pin(f, &f->nodes[i]);
	if (f->tls && f->hooks.db) {
		rc = f->hooks.db(f->hooks.ud, &db);
		if (rc)
			return rc;
	}
	/* Without an inventory nothing is read: every node has no pin. */
	return gf_pins_load(db, f->nodes, f->profs, f->n, f->tls_pin_new,
			    !db          ? no_node
			    : f->backend ? has_bmc
					 : gf_bmc_may_pin,
			    &f->pins, err);
}

int gf_fanout_pins_store(struct gf_db *db, const struct gf_node *nodes, struct gf_pins *p,
			 struct gf_fanout_pinned **ret, size_t *ret_n, struct gf_err *err)
{
	struct gf_fanout_pinned *v;
	size_t k = 0;
	int rc;

	*ret = NULL;
	*ret_n = 0;
	for (size_t i = 0; i < p->n; i++)
		k += gf_pins_first_use(p, i);
	if (!k)
		return 0;
	rc = gf_pins_store_first_use(db, nodes, p, err);
	if (rc)
		return rc;
	v = gf_xcalloc(k, sizeof(*v));
	k = 0;
	for (size_t i = 0; i < p->n; i++)
		if (gf_pins_first_use(p, i))
			v[k++] = (struct gf_fanout_pinned){
				.i = i,
				.seen = p->seen[i],
				.other = p->other ? p->other[i] : NULL,
			};
	*ret = v;
	*ret_n = k;
	return 0;
}

/* After the run: the certificates seen on first use stored, into f->pinned. */
static void pins_store(struct gf_fanout *f)
{
	struct gf_db *db = NULL;
	size_t k = 0;

	for (size_t i = 0; i < f->pins.n; i++)
		k += gf_pins_first_use(&f->pins, i);
	if (!k || !f->hooks.db)
		return;
	f->pins_rc = f->hooks.db(f->hooks.ud, &db);
	if (f->pins_rc)
		return;
	f->pins_rc = gf_fanout_pins_store(db, f->nodes, &f->pins, &f->pinned, &f->npinned,
					  &f->pins_err);
}

/* ---- the run ---------------------------------------------------------------------- */

int gf_fanout_run(struct gf_fanout *f, struct gf_err *err)
{
	struct gf_exec_gate gate = {
		.state = gate_state,
		.wait = gate_wait,
		.expire = gate_expire,
		.start = gate_begin,
		.ud = f,
	};
	struct gf_exec_inline inl = {.run = power_loop_run, .ud = f};
	struct gf_exec_opts eo = f->exec;
	int rc;

	rc = pins_load(f, err);
	if (rc)
		return rc;
	f->bmc = (struct gf_bmc_run){
		.nodes = f->nodes,
		.profs = f->profs,
		.pins = &f->pins,
		.cache_dir = f->cache_dir,
		.cacert = f->cacert,
		.insecure = f->insecure,
		.opts = f->opts,
		.cancel = gf_exec_cancel_flag(),
		.backend = f->backend,
	};
	if (f->hooks.start) {
		rc = f->hooks.start(f->hooks.ud, f);
		if (rc)
			return rc;
	}
	f->slots = gf_xcalloc(f->n ? f->n * nparts(f) : 1, sizeof(*f->slots));
	eo.parts = (unsigned)nparts(f);
	if (f->mode == GF_FANOUT_STREAM && eo.fanout < f->n)
		eo.fanout = (unsigned)f->n;
	/* Staggered runs (power on --batch) start nodes late on purpose: no ping. */
	eo.gate = !eo.batch && f->mode != GF_FANOUT_STREAM ? &gate : NULL;
	if (power_loop_backend(f)) {
		f->served = gf_xcalloc(f->n, sizeof(*f->served));
		eo.inl = &inl;
	}
	rc = gf_exec_run(&eo, f->n, task, f, f->slots, done, f, err);
	free(f->served);
	f->served = NULL;
	gf_bmc_gate_stop(f->gate);
	f->gate = NULL;
	if (f->hooks.finish)
		f->hooks.finish(f->hooks.ud, f->slots);
	if (rc < 0)
		return rc;
	pins_store(f);
	return 0;
}

void gf_fanout_keep_init(struct gf_fanout_keep *k, size_t n)
{
	memset(k, 0, sizeof(*k));
	atomic_init(&k->held, 0);
	k->n = n;
	k->be = gf_xcalloc(n ? n : 1, sizeof(*k->be));
	k->sess = gf_xcalloc(n ? n : 1, sizeof(*k->sess));
}

void gf_fanout_later(struct gf_fanout *f, struct gf_fanout_keep *k)
{
	gf_fanout_keep_init(k, f->n);
	k->cap = f->exec.fanout;
	f->later = k;
}

/* The most sessions closed at once (each close is bounded by its backend). */
#define CLOSERS_MAX 64

struct closers {
	struct gf_fanout_keep *k;
	atomic_size_t next;
};

static void *closer_main(void *vc)
{
	struct closers *c = vc;
	size_t i;

	while ((i = atomic_fetch_add(&c->next, 1)) < c->k->n)
		if (c->k->sess[i]) {
			c->k->be[i]->close(c->k->sess[i]);
			c->k->sess[i] = NULL;
		}
	return NULL;
}

/* Close what @k holds: on threads when there is more than one (a logout is a round trip). */
static void keep_close_all(struct gf_fanout_keep *k)
{
	struct closers c = {.k = k};
	pthread_t tids[CLOSERS_MAX];
	pthread_attr_t attr;
	size_t open = 0, nt = 0;

	for (size_t i = 0; k->sess && i < k->n; i++)
		open += k->sess[i] != NULL;
	if (open > 1) {
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, GF_THREAD_STACK);
		while (nt + 1 < open && nt < CLOSERS_MAX &&
		       pthread_create(&tids[nt], &attr, closer_main, &c) == 0)
			nt++;
		pthread_attr_destroy(&attr);
	}
	if (k->sess)
		closer_main(&c); /* this thread closes too, and all of them when none started */
	while (nt)
		pthread_join(tids[--nt], NULL);
}

void gf_fanout_keep_release(struct gf_fanout_keep *k)
{
	keep_close_all(k);
	free(k->be);
	free(k->sess);
	memset(k, 0, sizeof(*k));
}

void gf_fanout_release(struct gf_fanout *f)
{
	for (size_t k = 0; f->slots && k < f->n * nparts(f); k++)
		gf_result_release(&f->slots[k]);
	free(f->slots);
	f->slots = NULL;
	free(f->pinned);
	f->pinned = NULL;
	f->npinned = 0;
	gf_pins_release(&f->pins);
	f->tls = false;
	f->pins_rc = 0;
	gf_err_clear(&f->pins_err);
}
