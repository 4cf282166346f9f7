/*
 * The rollout engine on the fan-out frame (fleet/fanout.c) with a backend
 * of stubs: plans, batches (canary, --batch), --max-failures, resume, and
 * what the store keeps. No BMC, no emulator.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet/rollout.h"
#include "lib/buf.h"
#include "lib/exec.h"

#define MAXN 8

/* One stub BMC: the version of its "bmc" component, and how it behaves. */
struct stub_bmc {
	char version[16];
	bool refuse;    /* fw_push fails (refused) */
	bool dead;      /* its session cannot be opened */
	bool no_update; /* it cannot update its firmware */
	int pushes;
};

struct lab {
	struct gf_node nodes[MAXN];
	struct stub_bmc bmc[MAXN];
	size_t n;
	size_t fanouts;   /* fan-outs run */
	size_t sizes[16]; /* nodes of each */
	int stop_at;      /* the fan-out (1-based) that reports a stop, 0: none */
	size_t stopped;   /* the stopping hook: failed count */
	size_t done;      /* node_done calls */
	unsigned workers; /* the stub fan-out's, 0: 2 */
	char dir[64], path[128];
	struct gf_db *db;
	struct gf_catalog cat;
};

static size_t find(const struct lab *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->nodes[i].name, name) == 0)
			return i;
	fail_msg("no node '%s'", name);
	return 0;
}

/* The lab the stub backend's sessions are in (a backend has no context of its own). */
static struct lab *the_lab;

static int stub_open(const struct gf_bmc_target *t, void **ret, struct gf_err *err)
{
	struct stub_bmc *b = &the_lab->bmc[find(the_lab, t->node)];

	if (b->dead)
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT, "bmc of node '%s' is down",
				  t->node);
	*ret = b;
	return 0;
}

static int stub_caps(void *sess, struct gf_fw_caps *ret, struct gf_err *err)
{
	struct stub_bmc *b = sess;

	if (b->no_update)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "the stub cannot update");
	*ret = (struct gf_fw_caps){.pull = true, .model = gf_xstrdup("Stub 1")};
	return 0;
}

static int stub_firmware(void *sess, struct gf_component_list *ret, struct gf_err *err)
{
	struct stub_bmc *b = sess;
	struct gf_component *c = gf_component_list_add(ret);

	(void)err;
	c->key = gf_xstrdup("bmc");
	c->id = gf_xstrdup("BMC");
	c->kind = gf_xstrdup("bmc");
	c->version = gf_xstrdup(b->version);
	return 0;
}

static int stub_push(void *sess, const struct gf_fw_push *p, struct gf_fw_task *ret,
		     struct gf_err *err)
{
	struct stub_bmc *b = sess;

	(void)ret;
	assert_int_equal(p->method, GF_FW_PULL);
	assert_string_equal(p->image_uri, "http://images/bmc-2.0.bin");
	if (b->refuse)
		return gf_err_set(err, GF_E_NODE, GF_EK_REFUSED, "the stub refused the image");
	b->pushes++;
	snprintf(b->version, sizeof(b->version), "2.0");
	return 0;
}

static void stub_close(void *sess)
{
	(void)sess;
}

static const struct gf_backend stub = {
	.name = "stub",
	.title = "Stub",
	.open = stub_open,
	.close = stub_close,
	.firmware = stub_firmware,
	.fw_caps = stub_caps,
	.fw_push = stub_push,
};

/*
 * The fan-out a caller hands the engine: the frame, with the stub backend; or, at
 * fan-out number stop_at, a stop before any node started (as Ctrl-C).
 */
static int stub_fan(void *ud, const struct gf_rollout_fanout *rf)
{
	struct lab *l = ud;
	struct gf_fanout f = {
		.nodes = rf->nodes,
		.n = rf->n,
		.op = rf->op,
		.ctx = rf->ctx,
		.may_be_restarting = rf->may_be_restarting,
		.backend = &stub,
		.exec = {.fanout = l->workers ? l->workers : 2,
			 .timeout = rf->timeout > 0 ? rf->timeout : 30,
			 .batch = rf->batch}, /* no pause between the stubs */
		.hooks = {.done = rf->on_done, .ud = rf->done_ud},
	};
	struct gf_err err = {0};
	int rc;

	l->sizes[l->fanouts++] = rf->n;
	if (l->stop_at && (size_t)l->stop_at == l->fanouts) {
		for (size_t i = 0; i < rf->n; i++) {
			struct gf_result slot = {0};

			gf_err_set(&slot.err, GF_E_NODE, GF_EK_INTERNAL, "interrupted");
			rf->on_done(rf->done_ud, i, &slot); /* attempts 0: never started */
		}
		return 130;
	}
	rc = gf_fanout_run(&f, &err);
	gf_fanout_release(&f);
	assert_int_equal(rc, 0);
	return 0;
}

static void on_done(void *ud, long id, const struct gf_rollout_node *rn,
		    const struct gf_err *store_err)
{
	struct lab *l = ud;

	(void)id;
	(void)rn;
	assert_null(store_err);
	l->done++;
}

static void on_stopping(void *ud, size_t failed, unsigned long max)
{
	struct lab *l = ud;

	(void)max;
	l->stopped = failed;
}

static const char catalog[] = "{\"images\": [{\"component\": \"bmc\", \"version\": \"2.0\", "
			      "\"image_uri\": \"http://images/bmc-2.0.bin\", "
			      "\"activation\": \"none\"}]}";

static int setup(void **state)
{
	struct lab *l = gf_xcalloc(1, sizeof(*l));
	struct gf_err err = {0};

	snprintf(l->dir, sizeof(l->dir), "%s", "/tmp/gf-test-rollout-XXXXXX");
	if (!mkdtemp(l->dir))
		return -1;
	snprintf(l->path, sizeof(l->path), "%s/inv.db", l->dir);
	if (gf_db_open(l->path, &l->db, &err) < 0 ||
	    gf_catalog_parse("/tmp/catalog.json", catalog, strlen(catalog), &l->cat, &err) < 0) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return -1;
	}
	the_lab = l;
	*state = l;
	return 0;
}

static int teardown(void **state)
{
	struct lab *l = *state;

	gf_db_close(l->db);
	gf_catalog_release(&l->cat);
	for (size_t i = 0; i < l->n; i++) {
		free(l->nodes[i].name);
		free(l->nodes[i].bmc);
	}
	unlink(l->path);
	rmdir(l->dir);
	free(l);
	return 0;
}

/* @n nodes n1.., each at version @versions[i]. */
static void add_nodes(struct lab *l, size_t n, const char *const *versions)
{
	for (size_t i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "n%zu", i + 1);
		l->nodes[i] = (struct gf_node){
			.name = gf_xstrdup(name),
			.bmc = gf_xstrdup("192.0.2.1"),
			.protocol = &stub,
		};
		snprintf(l->bmc[i].version, sizeof(l->bmc[i].version), "%s", versions[i]);
	}
	l->n = n;
}

static void run_init(struct lab *l, const struct gf_rollout_opts *o, struct gf_rollout_run *ret)
{
	*ret = (struct gf_rollout_run){
		.cat = &l->cat,
		.o = o,
		.nodes = l->nodes,
		.n = l->n,
		.fanout = 64,
		.db = l->db,
		.fan = {.run = stub_fan, .ud = l},
		.hooks = {.ud = l, .node_done = on_done, .stopping = on_stopping},
	};
}

static void free_plans(struct gf_rollout_plan *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gf_rollout_plan_release(&p[i]);
	free(p);
}

/* Plan, store and run; the rollout as stored afterwards in @ret. */
static int plan_and_run(struct lab *l, const struct gf_rollout_opts *o, struct gf_rollout *ret)
{
	struct gf_rollout_run run;
	struct gf_rollout_plan *plans = NULL;
	struct gf_rollout r = {0};
	struct gf_err err = {0};
	size_t work = 0;
	bool store_failed = true;
	int rc;

	run_init(l, o, &run);
	assert_int_equal(gf_rollout_plan(&run, &plans), 0);
	assert_int_equal(gf_rollout_start(&run, plans, "tester", &r, &work, &err), 0);
	free_plans(plans, l->n);
	rc = gf_rollout_execute(&run, &r, false, &store_failed, &err);
	assert_false(store_failed);
	assert_int_equal(gf_rollout_finish(l->db, r.id, &err), 0);
	assert_int_equal(gf_rollout_load(l->db, r.id, ret, &err), 0);
	gf_rollout_release(&r);
	return rc;
}

static void plan_states(void **state)
{
	static const char *const v[] = {"1.0", "2.0", "1.0", "1.0"};
	struct lab *l = *state;
	struct gf_rollout_opts o = {.update_timeout = 60};
	struct gf_rollout_run run;
	struct gf_rollout_plan *p = NULL;
	const struct gf_rollout_item *it;

	add_nodes(l, 4, v);
	l->bmc[2].no_update = true;
	l->bmc[3].dead = true;
	run_init(l, &o, &run);
	assert_int_equal(gf_rollout_plan(&run, &p), 0);
	assert_int_equal(l->fanouts, 1);
	assert_int_equal(p[0].node.state, GF_RS_NOT_STARTED);
	assert_string_equal(p[0].model, "Stub 1");
	assert_int_equal(p[0].node.nitems, 1);
	it = &p[0].node.items[0];
	assert_string_equal(it->component, "bmc");
	assert_string_equal(it->from, "1.0");
	assert_string_equal(it->to, "2.0");
	assert_string_equal(it->action, "simple-update");
	assert_string_equal(it->activation, "none");
	assert_int_equal(it->state, GF_RS_NOT_STARTED);
	/* At its version: skipped, the item too, with no action. */
	assert_int_equal(p[1].node.state, GF_RS_SKIPPED);
	assert_int_equal(p[1].node.items[0].state, GF_RS_SKIPPED);
	assert_string_equal(p[1].node.items[0].action, "none");
	assert_int_equal(p[2].node.state, GF_RS_UNSUPPORTED);
	assert_string_equal(p[2].node.kind, "unsupported");
	/* Unreachable at plan: left out (skipped, with why), not a failure. */
	assert_int_equal(p[3].node.state, GF_RS_SKIPPED);
	assert_string_equal(p[3].node.kind, "connect");
	assert_int_equal(p[3].node.nitems, 0);
	free_plans(p, l->n);
	/* Nothing was pushed by a plan. */
	assert_int_equal(l->bmc[0].pushes, 0);
}

static void canary_then_batches(void **state)
{
	static const char *const v[] = {"1.0", "1.0", "2.0", "1.0", "1.0", "1.0", "1.0"};
	struct lab *l = *state;
	struct gf_rollout_opts o = {.canary = 1, .batch = 2, .update_timeout = 60};
	static const unsigned want_batch[] = {1, 2, 0, 2, 3, 3, 4};
	struct gf_rollout r = {0};
	struct gf_err err = {0};
	struct gf_rollout_opts back;
	char *own = NULL;

	add_nodes(l, 7, v);
	assert_int_equal(plan_and_run(l, &o, &r), 0);
	/* The plan's fan-out, then the canary alone, then 2, 2, 1. */
	assert_int_equal(l->fanouts, 5);
	assert_int_equal(l->sizes[1], 1);
	assert_int_equal(l->sizes[2], 2);
	assert_int_equal(l->sizes[3], 2);
	assert_int_equal(l->sizes[4], 1);
	assert_int_equal(l->done, 6);
	assert_int_equal(r.state, GF_RS_FINISHED);
	assert_string_equal(r.user, "tester");
	/* The bytes parsed are the bytes stored. */
	assert_string_equal(r.catalog_text, catalog);
	for (size_t i = 0; i < r.n; i++) {
		assert_int_equal(r.nodes[i].batch, want_batch[i]);
		assert_int_equal(r.nodes[i].state, i == 2 ? GF_RS_SKIPPED : GF_RS_DONE);
		assert_int_equal(r.nodes[i].nitems, 1);
		assert_int_equal(r.nodes[i].items[0].state, i == 2 ? GF_RS_SKIPPED : GF_RS_DONE);
		assert_int_equal(l->bmc[i].pushes, i == 2 ? 0 : 1);
	}
	gf_rollout_opts_stored(&r, &(struct gf_rollout_opts){0}, &back, &own);
	assert_int_equal(back.max_failures, 0);
	assert_true(back.update_timeout == 60);
	assert_null(own);
	gf_rollout_release(&r);
	(void)err;
}

static void max_failures_then_resume(void **state)
{
	static const char *const v[] = {"1.0", "1.0", "1.0", "1.0"};
	struct lab *l = *state;
	struct gf_rollout_opts o = {.canary = 1,
				    .batch = 2,
				    .max_failures = 0,
				    .update_timeout = 60};
	struct gf_rollout r = {0}, again = {0};
	struct gf_rollout_run run;
	struct gf_err err = {0};
	bool store_failed = true;

	add_nodes(l, 4, v);
	l->bmc[0].refuse = true;
	assert_int_equal(plan_and_run(l, &o, &r), 0);
	/* The canary failed: no other batch was started. */
	assert_int_equal(l->fanouts, 2);
	assert_int_equal(l->stopped, 1);
	assert_int_equal(r.state, GF_RS_STOPPED);
	assert_int_equal(r.nodes[0].state, GF_RS_FAILED);
	assert_string_equal(r.nodes[0].kind, "refused");
	assert_string_equal(r.nodes[0].items[0].message, "the stub refused the image");
	for (size_t i = 1; i < 4; i++)
		assert_int_equal(r.nodes[i].state, GF_RS_NOT_STARTED);
	assert_int_equal(gf_rollout_left(&r), 4);

	/* Resumed once the BMC takes the image: every node, the failed one too. */
	l->bmc[0].refuse = false;
	run_init(l, &o, &run);
	assert_int_equal(gf_rollout_execute(&run, &r, true, &store_failed, &err), 0);
	assert_false(store_failed);
	assert_int_equal(gf_rollout_finish(l->db, r.id, &err), 0);
	assert_int_equal(gf_rollout_load(l->db, r.id, &again, &err), 0);
	assert_int_equal(again.state, GF_RS_FINISHED);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(again.nodes[i].state, GF_RS_DONE);
		assert_null(again.nodes[i].kind);
		assert_int_equal(l->bmc[i].pushes, 1);
	}
	assert_int_equal(gf_rollout_left(&again), 0);
	gf_rollout_release(&r);
	gf_rollout_release(&again);
}

static void more_failures_allowed(void **state)
{
	static const char *const v[] = {"1.0", "1.0", "1.0", "1.0"};
	struct lab *l = *state;
	struct gf_rollout_opts o = {.canary = 1,
				    .batch = 2,
				    .max_failures = 1,
				    .update_timeout = 60};
	struct gf_rollout r = {0};

	add_nodes(l, 4, v);
	l->bmc[0].refuse = true;
	l->bmc[1].refuse = true;
	l->workers = 1; /* one node of a batch after the other */
	assert_int_equal(plan_and_run(l, &o, &r), 0);
	/*
	 * One failure is allowed: batch 2 ran, and its first node's failure
	 * stopped the rest at once, its own second node included.
	 */
	assert_int_equal(l->fanouts, 3);
	assert_int_equal(l->stopped, 2);
	assert_int_equal(r.nodes[1].state, GF_RS_FAILED);
	assert_int_equal(r.nodes[2].state, GF_RS_NOT_STARTED);
	assert_int_equal(l->bmc[2].pushes, 0);
	assert_int_equal(r.nodes[3].state, GF_RS_NOT_STARTED);
	assert_int_equal(r.state, GF_RS_STOPPED);
	gf_rollout_release(&r);
}

static void stopped_fanout_then_resume(void **state)
{
	static const char *const v[] = {"1.0", "1.0", "1.0"};
	struct lab *l = *state;
	struct gf_rollout_opts o = {.batch = 2, .update_timeout = 60};
	struct gf_rollout r = {0}, again = {0};
	struct gf_rollout_run run;
	struct gf_err err = {0};
	bool store_failed;

	add_nodes(l, 3, v);
	l->stop_at = 3; /* the plan, batch 1, then batch 2 is interrupted */
	assert_int_equal(plan_and_run(l, &o, &r), 130);
	assert_int_equal(r.nodes[0].state, GF_RS_DONE);
	assert_int_equal(r.nodes[1].state, GF_RS_DONE);
	assert_int_equal(r.nodes[2].state, GF_RS_NOT_STARTED);
	assert_string_equal(r.nodes[2].kind, "internal");
	assert_int_equal(r.state, GF_RS_STOPPED);
	/*
	 * A node an earlier run flashed but left "running" (killed before its
	 * state was stored): resume finds it at its version, and says done.
	 */
	r.nodes[2].state = GF_RS_RUNNING;
	snprintf(l->bmc[2].version, sizeof(l->bmc[2].version), "2.0");
	l->stop_at = 0;
	run_init(l, &o, &run);
	assert_int_equal(gf_rollout_execute(&run, &r, true, &store_failed, &err), 0);
	assert_int_equal(gf_rollout_finish(l->db, r.id, &err), 0);
	assert_int_equal(gf_rollout_load(l->db, r.id, &again, &err), 0);
	assert_int_equal(again.nodes[2].state, GF_RS_DONE);
	assert_int_equal(again.nodes[2].items[0].state, GF_RS_DONE);
	assert_string_equal(again.nodes[2].items[0].action, "simple-update");
	assert_int_equal(l->bmc[2].pushes, 0);
	assert_int_equal(again.state, GF_RS_FINISHED);
	gf_rollout_release(&r);
	gf_rollout_release(&again);
}

static void state_names(void **state)
{
	(void)state;
	for (int s = GF_RS_NOT_STARTED; s <= GF_RS_FINISHED; s++)
		assert_int_equal(gf_rollout_state_parse(gf_rollout_state_name(s)), s);
	assert_string_equal(gf_rollout_state_name(GF_RS_PENDING), "pending-activation");
	assert_int_equal(gf_rollout_state_parse("bogus"), -1);
	assert_true(gf_rollout_state_ok(GF_RS_SKIPPED));
	assert_false(gf_rollout_state_ok(GF_RS_PENDING));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(state_names),
		cmocka_unit_test_setup_teardown(plan_states, setup, teardown),
		cmocka_unit_test_setup_teardown(canary_then_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(max_failures_then_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(more_failures_allowed, setup, teardown),
		cmocka_unit_test_setup_teardown(stopped_fanout_then_resume, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
