/*
 * Unit tests for the pure inventory code: the sweep model, baselines,
 * canonical keys (normalize.c), drift (majority, baseline, since) and diff.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "inventory/codec.h"
#include "inventory/drift.h"
#include "inventory/normalize.h"
#include "inventory/sweep.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "tests/unit/stub_backends.h"

/*
 * A node from a compact spec: "bmc=1.0,bios=2.0,driver=550@ssh,gpu0.firmware=-"
 * ('-' is no version; the source is redfish unless "@ssh" or "@ipmi").
 */
static struct gf_sweep_node *add(struct gf_sweep *sw, const char *name, const char *model, bool fw,
				 bool host, const char *spec)
{
	struct gf_sweep_node *n = gf_sweep_add_node(sw, name);
	char *copy = strdup(spec), *tok = copy;

	n->model = gf_sweep_str(sw, model);
	n->fw_read = fw;
	n->bios_read = fw; /* by default, the BIOS settings were read when the firmware was */
	n->host_read = host;
	while (tok && *tok) {
		char *next = strchr(tok, ','), *eq, *at;
		struct gf_inv_comp *c = gf_inv_set_add(n->set);

		if (next)
			*next++ = '\0';
		eq = strchr(tok, '=');
		at = strchr(tok, '@');
		assert_non_null(eq);
		*eq = '\0';
		c->source = "redfish";
		if (at) {
			*at = '\0';
			c->source = gf_sweep_str(sw, at + 1);
		}
		c->key = gf_sweep_str(sw, tok);
		c->version = strcmp(eq + 1, "-") == 0 ? NULL : gf_sweep_str(sw, eq + 1);
		c->kind = gf_sweep_str(sw, strncmp(tok, "bios.", 5) == 0 ? "setting" : "other");
		tok = next;
	}
	free(copy);
	gf_inv_set_finish(sw, n->set);
	return n;
}

static struct gf_drift *run(const struct gf_sweep *sw, const struct gf_drift_opts *o)
{
	struct gf_err err = {0};
	struct gf_drift *d = NULL;

	assert_int_equal(gf_drift_compute(sw, o, &d, &err), 0);
	assert_non_null(d);
	return d;
}

static const struct gf_drift_node *dnode(const struct gf_drift *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->nodes[i].node->node, name) == 0)
			return &d->nodes[i];
	fail_msg("node '%s' is not in the drift result", name);
	return NULL;
}

/* ---- majority -------------------------------------------------------------- */

static void test_majority_finds_the_odd_node(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_drift_opts o = {0};
	struct gf_drift *d;
	const struct gf_drift_node *dn;

	for (int i = 1; i <= 5; i++) {
		char name[16];

		snprintf(name, sizeof(name), "gpu%d", i);
		add(sw, name, "DGX H100", true, true,
		    i == 4 ? "bmc=1.1,bios=2.0,driver=550@ssh" : "bmc=1.2,bios=2.0,driver=550@ssh");
	}
	d = run(sw, &o);
	assert_int_equal(d->drifting, 1);
	assert_int_equal(d->items, 1);
	assert_int_equal(d->components, 1);
	assert_int_equal(d->ties, 0);
	dn = dnode(d, "gpu4");
	assert_int_equal(dn->n, 1);
	assert_int_equal(dn->peers, 5);
	assert_string_equal(dn->items[0].component, "bmc");
	assert_string_equal(dn->items[0].expected, "1.2");
	assert_string_equal(dn->items[0].actual, "1.1");
	assert_string_equal(dn->items[0].source, "redfish");
	assert_int_equal(dn->items[0].flags, 0);
	assert_int_equal(dnode(d, "gpu1")->n, 0);
	gf_drift_free(d);
	gf_sweep_free(sw);
}

static void test_majority_groups_by_class(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	const char *classes[5];
	struct gf_drift_opts o = {0};
	struct gf_drift *d;

	/* Two models, each agreeing within itself: no drift by model, drift across the fleet. */
	for (int i = 0; i < 5; i++) {
		char name[16];
		struct gf_sweep_node *n;

		snprintf(name, sizeof(name), "n%d", i);
		n = add(sw, name, i < 3 ? "A" : "B", true, false, i < 3 ? "bios=1" : "bios=2");
		classes[i] = n->model;
	}
	o.classes = classes;
	d = run(sw, &o);
	assert_int_equal(d->items, 0);
	assert_int_equal(dnode(d, "n0")->peers, 3);
	assert_int_equal(dnode(d, "n4")->peers, 2);
	gf_drift_free(d);

	o.classes = NULL; /* one class: the fleet */
	d = run(sw, &o);
	assert_int_equal(d->drifting, 2);
	assert_string_equal(dnode(d, "n3")->items[0].expected, "1");
	assert_string_equal(dnode(d, "n3")->items[0].actual, "2");
	gf_drift_free(d);
	gf_sweep_free(sw);
}

static void test_majority_reports_ties(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_drift_opts o = {0};
	struct gf_drift *d;

	add(sw, "a", "M", true, false, "bmc=1.0,bios=9");
	add(sw, "b", "M", true, false, "bmc=1.0,bios=9");
	add(sw, "c", "M", true, false, "bmc=2.0,bios=9");
	add(sw, "d", "M", true, false, "bmc=2.0,bios=9");
	add(sw, "e", "M", true, false, "bmc=3.0,bios=9");
	d = run(sw, &o);
	assert_int_equal(d->ties, 1);
	/* Every node is reported: none has the majority, because there is none. */
	assert_int_equal(d->drifting, 5);
	for (size_t i = 0; i < d->n; i++) {
		const struct gf_drift_item *it = &d->nodes[i].items[0];

		assert_int_equal(d->nodes[i].n, 1);
		assert_true(it->flags & GF_DRIFT_TIE);
		assert_null(it->expected);
		assert_int_equal(it->ntie, 2);
		assert_string_equal(it->tie[0], "1.0");
		assert_string_equal(it->tie[1], "2.0");
	}
	assert_string_equal(dnode(d, "e")->items[0].actual, "3.0");
	gf_drift_free(d);
	gf_sweep_free(sw);
}

static void test_majority_missing_extra_and_unread(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_drift_opts o = {0};
	struct gf_drift *d;
	const struct gf_drift_node *dn;

	add(sw, "a", "M", true, true, "bmc=1,gpu0.firmware=9,gpu1.firmware=9,driver=550@ssh");
	add(sw, "b", "M", true, true, "bmc=1,gpu0.firmware=9,gpu1.firmware=9,driver=550@ssh");
	add(sw, "c", "M", true, true, "bmc=1,gpu0.firmware=9,driver=550@ssh");   /* lost a GPU */
	add(sw, "d", "M", true, false, "bmc=1,gpu0.firmware=9,gpu1.firmware=9"); /* no SSH read */
	add(sw, "e", "M", true, true,
	    "bmc=1,gpu0.firmware=9,gpu1.firmware=9,driver=550@ssh,ofed=5@ssh");
	add(sw, "f", "M", false, false, ""); /* failed */
	d = run(sw, &o);
	dn = dnode(d, "c");
	assert_int_equal(dn->n, 1);
	assert_string_equal(dn->items[0].component, "gpu1.firmware");
	assert_null(dn->items[0].actual);
	assert_string_equal(dn->items[0].expected, "9");
	assert_true(dn->items[0].flags & GF_DRIFT_MISSING);
	assert_string_equal(dn->items[0].source, "redfish");
	/* Its host facts were not read: no "driver missing" on d. */
	assert_int_equal(dnode(d, "d")->n, 0);
	dn = dnode(d, "e");
	assert_int_equal(dn->n, 1);
	assert_string_equal(dn->items[0].component, "ofed");
	assert_null(dn->items[0].expected);
	assert_true(dn->items[0].flags & GF_DRIFT_EXTRA);
	assert_string_equal(dn->items[0].source, "ssh");
	/* The failed node is not compared and counts for nothing. */
	assert_false(dnode(d, "f")->compared);
	assert_int_equal(d->not_compared, 1);
	assert_int_equal(dnode(d, "a")->peers, 5);
	assert_int_equal(d->drifting, 2);
	gf_drift_free(d);
	gf_sweep_free(sw);
}

/*
 * The BIOS settings are a read of their own: a node whose Bios resource
 * failed is not short of every setting, and one whose firmware walk failed
 * is still compared on the settings it read.
 */
static void test_majority_settings_read_apart(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_drift_opts o = {0};
	struct gf_drift *d;
	const struct gf_drift_node *dn;

	add(sw, "a", "M", true, false, "bmc=1,bios.sriov=on,bios.numa=2");
	add(sw, "b", "M", true, false, "bmc=1,bios.sriov=on,bios.numa=2");
	add(sw, "c", "M", true, false, "bmc=1")->bios_read = false; /* the Bios read failed */
	add(sw, "d", "M", false, false, "bios.sriov=off,bios.numa=2")
		->bios_read = true; /* the walk */
	d = run(sw, &o);
	assert_int_equal(dnode(d, "c")->n, 0);
	dn = dnode(d, "d");
	assert_true(dn->compared);
	assert_int_equal(dn->n, 1);
	assert_string_equal(dn->items[0].component, "bios.sriov");
	assert_string_equal(dn->items[0].actual, "off");
	assert_string_equal(dn->items[0].expected, "on");
	assert_int_equal(d->drifting, 1);
	gf_drift_free(d);
	gf_sweep_free(sw);
}

static void test_filters(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	const char *inc[] = {"gpu*"}, *ign[] = {"gpu1.*"};
	struct gf_drift_opts o = {0};
	struct gf_drift *d;

	add(sw, "a", "M", true, false, "bmc=1,gpu0.firmware=9,gpu1.firmware=9");
	add(sw, "b", "M", true, false, "bmc=1,gpu0.firmware=9,gpu1.firmware=9");
	add(sw, "c", "M", true, false, "bmc=2,gpu0.firmware=8,gpu1.firmware=8");
	d = run(sw, &o);
	assert_int_equal(dnode(d, "c")->n, 3);
	gf_drift_free(d);
	o.filter.include = inc;
	o.filter.ninclude = 1;
	d = run(sw, &o);
	assert_int_equal(dnode(d, "c")->n, 2);
	gf_drift_free(d);
	o.filter.ignore = ign;
	o.filter.nignore = 1;
	d = run(sw, &o);
	assert_int_equal(dnode(d, "c")->n, 1);
	assert_string_equal(dnode(d, "c")->items[0].component, "gpu0.firmware");
	gf_drift_free(d);
	gf_sweep_free(sw);
}

/* ---- baseline ------------------------------------------------------------------ */

static struct gf_baseline *baseline(const char *text)
{
	struct gf_baseline *b = NULL;
	struct gf_err err = {0};

	if (gf_codec_baseline_parse(text, "test", &b, &err) < 0)
		fail_msg("baseline did not parse: %s", err.msg);
	return b;
}

static void test_baseline_rules(void **state)
{
	struct gf_baseline *b =
		baseline("{\"components\": {\"gpu*.firmware\": \"9\", \"gpu0.firmware\": \"7\","
			 " \"driver\": [\"550\", \"555\"], \"BMC\": \"1.2\", \"ofed\": \"5\"},"
			 " \"models\": {\"B\": {\"bmc\": \"3.0\"}}, \"comment\": \"x\"}");
	const char *const *vers;
	size_t nv;
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_drift_opts o = {.mode = GF_DRIFT_BASELINE, .baseline = b};
	struct gf_drift *d;
	const struct gf_drift_node *dn;

	/* An exact key before a pattern; a model's rule before the general one. */
	assert_string_equal(gf_baseline_expect(b, "A", "gpu0.firmware", NULL, NULL), "7");
	assert_string_equal(gf_baseline_expect(b, "A", "gpu5.firmware", NULL, NULL), "9");
	assert_string_equal(gf_baseline_expect(b, "A", "bmc", NULL, NULL), "1.2");
	assert_string_equal(gf_baseline_expect(b, "B", "bmc", NULL, NULL), "3.0");
	assert_string_equal(gf_baseline_expect(b, NULL, "driver", &vers, &nv), "550|555");
	assert_int_equal(nv, 2);
	assert_string_equal(vers[1], "555");
	assert_null(gf_baseline_expect(b, "A", "bios", NULL, NULL));

	add(sw, "a", "A", true, true,
	    "bmc=1.2,gpu0.firmware=7,gpu1.firmware=9,driver=555@ssh,ofed=5@ssh,bios=x");
	add(sw, "b", "A", true, true, "bmc=1.1,gpu0.firmware=9,gpu1.firmware=9,driver=535@ssh");
	add(sw, "c", "B", true, false, "bmc=3.0,gpu0.firmware=7,gpu1.firmware=8");
	d = run(sw, &o);
	assert_int_equal(dnode(d, "a")->n, 0);
	dn = dnode(d, "b");
	assert_int_equal(dn->n, 4); /* sorted by component */
	assert_string_equal(dn->items[0].component, "bmc");
	assert_string_equal(dn->items[0].expected, "1.2");
	assert_string_equal(dn->items[1].component, "driver");
	assert_string_equal(dn->items[1].expected, "550|555");
	assert_string_equal(dn->items[2].component, "gpu0.firmware");
	assert_string_equal(dn->items[2].actual, "9");
	assert_string_equal(dn->items[3].component, "ofed");
	assert_true(dn->items[3].flags & GF_DRIFT_MISSING);
	assert_string_equal(dn->items[3].source, "ssh");
	/* c: its own model's bmc rule; no host read, so no missing driver or ofed. */
	dn = dnode(d, "c");
	assert_int_equal(dn->n, 1);
	assert_string_equal(dn->items[0].component, "gpu1.firmware");
	gf_drift_free(d);
	gf_sweep_free(sw);
	gf_baseline_free(b);
}

static void test_baseline_flat_and_errors(void **state)
{
	static const char *const bad[] = {
		"not json",
		"[1]",
		"{\"components\": {\"bmc\": 1}}",
		("{\"components\": [],"
		 " \"x\": 1}"),
		"{\"models\": {\"A\": {\"bmc\": []}}}",
		"{\"components\": {\"\": \"1\"}}",
		"{\"bmc\": \"1\", \"bmc\": \"2\"}",
	};
	struct gf_baseline *b = baseline("{\"bmc\": \"1.0\", \"from\": {\"node\": \"x\"}}");
	struct gf_err err = {0};

	assert_string_equal(gf_baseline_expect(b, "any", "bmc", NULL, NULL), "1.0");
	assert_null(gf_baseline_expect(b, "any", "from", NULL, NULL));
	gf_baseline_free(b);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = NULL;
		assert_int_equal(gf_codec_baseline_parse(bad[i], "f.json", &b, &err), GF_E_USAGE);
		assert_null(b);
		assert_non_null(strstr(err.msg, "f.json"));
	}
}

static void test_baseline_from_node_matches_itself(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_sweep_node *n;
	struct gf_baseline *typed, *b;
	struct gf_drift_opts o = {.mode = GF_DRIFT_BASELINE};
	struct gf_drift *d;
	json_t *j;
	char *text;

	add(sw, "ref", "M", true, true, "bmc=1.2,bios=2,driver=550@ssh,gpu0.vbios=-@ssh");
	add(sw, "other", "M", true, true, "bmc=1.3,bios=2,driver=550@ssh");
	n = &sw->nodes[0];
	n->sweep = 7;
	/* drift --baseline-node uses the typed baseline; export --baseline writes it. */
	typed = gf_baseline_from_node(n);
	assert_int_equal(typed->n, 1);
	assert_int_equal(typed->scopes[0].n, 3); /* a component without a version gives no rule */
	j = gf_codec_baseline_to_json(typed, n);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "from"), "node")),
			    "ref");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "from"), "sweep")),
			 7);
	assert_int_equal(json_object_size(json_object_get(j, "components")), 3);
	text = json_dumps(j, 0);
	b = baseline(text);
	for (int k = 0; k < 2; k++) {
		o.baseline = k ? typed : b;
		d = run(sw, &o);
		assert_int_equal(dnode(d, "ref")->n, 0);
		assert_int_equal(dnode(d, "other")->n, 1);
		assert_string_equal(dnode(d, "other")->items[0].actual, "1.3");
		assert_string_equal(dnode(d, "other")->items[0].expected, "1.2");
		gf_drift_free(d);
	}
	gf_baseline_free(b);
	gf_baseline_free(typed);
	free(text);
	json_decref(j);
	gf_sweep_free(sw);
}

/* ---- since and diff -------------------------------------------------------------- */

static void test_since(void **state)
{
	struct gf_sweep *before = gf_sweep_new(), *now = gf_sweep_new();
	struct gf_drift_opts o = {.mode = GF_DRIFT_SINCE, .before = before};
	struct gf_drift *d;
	const struct gf_drift_node *dn;

	add(before, "a", "M", true, true, "bmc=1,driver=535@ssh,cpld=1");
	add(before, "b", "M", true, true, "bmc=1,driver=535@ssh");
	add(before, "c", "M", true, true, "bmc=1,driver=535@ssh");
	add(now, "a", "M", true, true, "bmc=1,driver=550@ssh,nic0=22");
	add(now, "b", "M", true, false, "bmc=1"); /* SSH failed tonight */
	add(now, "c", "M", true, true, "bmc=1,driver=535@ssh");
	add(now, "new", "M", true, true, "bmc=9");
	d = run(now, &o);
	dn = dnode(d, "a");
	assert_int_equal(dn->n, 3);
	assert_string_equal(dn->items[0].component, "cpld");
	assert_true(dn->items[0].flags & GF_DRIFT_MISSING);
	assert_string_equal(dn->items[1].component, "driver");
	assert_string_equal(dn->items[1].expected, "535");
	assert_string_equal(dn->items[1].actual, "550");
	assert_string_equal(dn->items[2].component, "nic0");
	assert_true(dn->items[2].flags & GF_DRIFT_EXTRA);
	assert_int_equal(dnode(d, "b")->n, 0);
	assert_int_equal(dnode(d, "c")->n, 0);
	assert_null(dnode(d, "new")->before);
	assert_int_equal(dnode(d, "new")->n, 0);
	assert_int_equal(d->drifting, 1);
	gf_drift_free(d);
	gf_sweep_free(before);
	gf_sweep_free(now);
}

static void test_diff(void **state)
{
	struct gf_sweep *a = gf_sweep_new(), *b = gf_sweep_new();
	const char *inc[] = {"bmc"};
	struct gf_keyfilter f = {inc, 1, NULL, 0};
	struct gf_err err = {0};
	struct gf_diff *d = NULL;

	add(a, "gpu2", "M", true, true, "bmc=1,driver=535@ssh");
	add(a, "gpu10", "M", true, true, "bmc=1");
	add(a, "gone", "M", true, true, "bmc=1");
	add(b, "gpu10", "M", true, true, "bmc=2");
	add(b, "gpu2", "M", true, true, "bmc=1,driver=535@ssh");
	add(b, "fresh", "M", true, true, "bmc=1");
	b->nodes[1].status = GF_NODE_PARTIAL;
	assert_int_equal(gf_diff_compute(a, b, NULL, &d, &err), 0);
	assert_int_equal(d->added, 1);
	assert_int_equal(d->removed, 1);
	assert_int_equal(d->changed, 2);
	assert_int_equal(d->comps, 1);
	assert_int_equal(d->n, 4);
	/* Natural name order: fresh, gone, gpu2, gpu10. */
	assert_string_equal(d->nodes[0].node, "fresh");
	assert_int_equal(d->nodes[0].change, GF_CHANGE_ADDED);
	assert_string_equal(d->nodes[1].node, "gone");
	assert_int_equal(d->nodes[1].change, GF_CHANGE_REMOVED);
	assert_string_equal(d->nodes[2].node, "gpu2");
	assert_int_equal(d->nodes[2].n, 0); /* status only */
	assert_string_equal(d->nodes[3].node, "gpu10");
	assert_int_equal(d->nodes[3].n, 1);
	assert_string_equal(d->nodes[3].v[0].before, "1");
	assert_string_equal(d->nodes[3].v[0].after, "2");
	assert_string_equal(gf_change_name(d->nodes[3].v[0].change), "changed");
	gf_diff_free(d);

	/* A filter that leaves nothing changed: only the node changes remain. */
	b->nodes[1].status = GF_NODE_OK;
	f.include = (const char *[]){"driver"};
	assert_int_equal(gf_diff_compute(a, b, &f, &d, &err), 0);
	assert_int_equal(d->changed, 0);
	assert_int_equal(d->n, 2);
	gf_diff_free(d);
	gf_sweep_free(a);
	gf_sweep_free(b);
}

/* ---- the model -------------------------------------------------------------------- */

static void test_set_keys_unique_and_sorted(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_sweep_node *n = add(sw, "a", "M", true, false,
				      "psu0=1,bmc=2,bmc=3,bmc#2=4,bmc=5");
	struct gf_buf b1 = GF_BUF_INIT, b2 = GF_BUF_INIT;
	const char *keys[] = {"bmc", "bmc#2", "bmc#2#2", "bmc#3", "psu0"};

	assert_int_equal(n->set->n, 5);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(n->set->v[i].key, keys[i]);
	/* The first "bmc" keeps its key; the later ones are numbered in order. */
	assert_string_equal(gf_inv_set_find(n->set, "bmc")->version, "2");
	assert_string_equal(gf_inv_set_find(n->set, "bmc#3")->version, "5");
	assert_null(gf_inv_set_find(n->set, "nic0"));
	/* Bodies tell NULL from "" and are equal for equal sets. */
	add(sw, "x", "M", true, false, "k=-");
	add(sw, "y", "M", true, false, "k=");
	gf_inv_set_body(sw->nodes[1].set, &b1);
	gf_inv_set_body(sw->nodes[2].set, &b2);
	assert_string_not_equal(b1.s, b2.s);
	gf_buf_reset(&b2);
	add(sw, "z", "M", true, false, "k=-");
	gf_inv_set_body(sw->nodes[3].set, &b2);
	assert_string_equal(b1.s, b2.s);
	assert_true(gf_hash64(b1.s, b1.len) == gf_hash64(b2.s, b2.len));
	gf_buf_release(&b1);
	gf_buf_release(&b2);
	gf_sweep_free(sw);
}

/* ---- normalization ------------------------------------------------------------------ */

static const struct gf_inv_comp *find_comp(const struct gf_inv_set *set, const char *key)
{
	for (size_t i = 0; i < set->n; i++)
		if (strcmp(set->v[i].key, key) == 0)
			return &set->v[i];
	return NULL;
}

static const char *ver(const struct gf_inv_set *set, const char *key)
{
	const struct gf_inv_comp *c = find_comp(set, key);

	if (!c)
		fail_msg("no component '%s'", key);
	return c->version;
}

static void test_norm_host(void **state)
{
	struct gf_host_gpu gpus[2] = {
		{.index = 0, .vbios = (char *)"96.00.89.00.01", .pci = (char *)"00000000:19:00.0"},
		{.index = 1, .vbios = NULL},
	};
	struct gf_hostfacts f = {
		.driver = (char *)"550.54.15",
		.cuda_driver = (char *)"12.4",
		.cuda_toolkit = (char *)"12.4.131",
		.kernel = (char *)"6.1.0-18-amd64",
		.os = (char *)"Debian GNU/Linux 12 (bookworm)",
		.ofed = NULL,
		.fabricmanager = (char *)"",
		.gpus = gpus,
		.ngpus = 2,
	};
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_inv_set *a = gf_sweep_new_set(sw);

	gf_norm_host_components(sw, &f, a);
	assert_int_equal(a->n, 6);
	assert_string_equal(ver(a, "driver"), "550.54.15");
	assert_string_equal(ver(a, "cuda.driver"), "12.4");
	assert_string_equal(ver(a, "cuda.toolkit"), "12.4.131");
	assert_string_equal(ver(a, "kernel"), "6.1.0-18-amd64");
	assert_string_equal(ver(a, "os"), "Debian GNU/Linux 12 (bookworm)");
	assert_string_equal(ver(a, "gpu0.vbios"), "96.00.89.00.01");
	assert_string_equal(find_comp(a, "gpu0.vbios")->raw_id,
			    "nvidia-smi:00000000:19:00.0:vbios_version");
	assert_string_equal(find_comp(a, "driver")->source, "ssh");
	assert_string_equal(find_comp(a, "driver")->kind, "driver");
	assert_null(find_comp(a, "ofed"));
	assert_null(find_comp(a, "fabricmanager"));
	assert_null(find_comp(a, "gpu1.vbios"));
	gf_sweep_free(sw);
	assert_true(gf_norm_key_is_host("gpu7.vbios"));
	assert_true(gf_norm_key_is_host("cuda.toolkit"));
	assert_false(gf_norm_key_is_host("gpu7.firmware"));
	assert_false(gf_norm_key_is_host("bmc"));
}

static void test_norm_bmc(void **state)
{
	struct gf_component v[] = {
		{.key = (char *)"GPU3.Firmware",
		 .id = (char *)"HGX_FW_GPU_SXM_3",
		 .version = (char *)"1"},
		{.key = NULL,
		 .id = (char *)"17",
		 .name = (char *)"Power Supply 2",
		 .version = (char *)"2"},
		{.key = NULL, .id = (char *)"GPU5", .kind = (char *)"gpu", .version = (char *)"3"},
		{.key = (char *)"bad key!",
		 .id = (char *)"x",
		 .name = (char *)"iDRAC",
		 .version = (char *)"4"},
		{.key = NULL,
		 .id = (char *)"Widget.Slot.1",
		 .name = (char *)"Widget",
		 .version = (char *)"5"},
		{.key = NULL, .id = NULL, .name = (char *)"Secondary CPLD", .version = (char *)"6"},
		{.key = NULL,
		 .id = NULL,
		 .name = NULL,
		 .kind = (char *)"nic",
		 .version = (char *)"7"},
		{.key = NULL,
		 .id = NULL,
		 .name = NULL,
		 .kind = (char *)"nic",
		 .version = (char *)"8"},
	};
	struct gf_component_list l = {v, sizeof(v) / sizeof(v[0]), 0};
	struct gf_hardware hw = {0};
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_inv_set *a = gf_sweep_new_set(sw);
	struct gf_err err = {0};

	hw.system.bios_version = (char *)"2.1.0";
	assert_int_equal(gf_norm_bmc_components(sw, "n1", &l, &hw, "redfish", a, &err), 0);
	assert_string_equal(ver(a, "gpu3.firmware"), "1");
	assert_string_equal(ver(a, "psu2"), "2");          /* a number in the name */
	assert_string_equal(ver(a, "gpu5.firmware"), "3"); /* kind, number from the id */
	assert_string_equal(ver(a, "bmc"), "4");           /* an odd key is derived again */
	assert_string_equal(ver(a, "other.widget-slot-1"), "5");
	assert_string_equal(ver(a, "cpld"), "6");
	assert_string_equal(ver(a, "nic0"), "7"); /* no number: counted */
	assert_string_equal(ver(a, "nic1"), "8");
	assert_string_equal(ver(a, "bios"), "2.1.0"); /* from the hardware */
	assert_string_equal(find_comp(a, "bios")->source, "redfish");
	assert_string_equal(find_comp(a, "bmc")->kind, "other"); /* none reported */
	assert_string_equal(find_comp(a, "gpu5.firmware")->kind, "gpu");
	assert_int_equal(a->n, 9);

	/* With a bios in the inventory, the hardware adds none. */
	v[0].key = (char *)"bios";
	a = gf_sweep_new_set(sw);
	assert_int_equal(gf_norm_bmc_components(sw, "n1", &l, &hw, "ipmi", a, &err), 0);
	assert_string_equal(ver(a, "bios"), "1");
	assert_string_equal(find_comp(a, "bios")->source, "ipmi");
	assert_int_equal(a->n, 8);

	/* What a peer sends that is not UTF-8 is kept readable, as JSON and the store need. */
	v[1].version = (char *)"2\xff\xfe.1";
	v[1].name = (char *)"Power Supply 2 \xc3\xa9"; /* valid UTF-8 stays as it is */
	a = gf_sweep_new_set(sw);
	assert_int_equal(gf_norm_bmc_components(sw, "n1", &l, NULL, "ipmi", a, &err), 0);
	assert_string_equal(ver(a, "psu2"), "2??.1");
	assert_string_equal(find_comp(a, "psu2")->name, "Power Supply 2 \xc3\xa9");

	/* A source the inventory does not know is the node's error, not a crash. */
	a = gf_sweep_new_set(sw);
	assert_int_equal(gf_norm_bmc_components(sw, "n1", &l, NULL, "snmp", a, &err), GF_E_NODE);
	assert_int_equal(err.kind, GF_EK_PROTOCOL);
	assert_non_null(strstr(err.msg, "unknown source 'snmp'"));
	gf_sweep_free(sw);

	assert_null(gf_norm_model(&hw));
	hw.product.name = (char *)"ipmi_sim node";
	assert_string_equal(gf_norm_model(&hw), "ipmi_sim node");
	hw.system.model = (char *)"DGX H100";
	assert_string_equal(gf_norm_model(&hw), "DGX H100");
	assert_true(gf_norm_key_ok("gpu3.firmware"));
	assert_false(gf_norm_key_ok("GPU3"));
	assert_false(gf_norm_key_ok(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_majority_finds_the_odd_node),
		cmocka_unit_test(test_majority_groups_by_class),
		cmocka_unit_test(test_majority_reports_ties),
		cmocka_unit_test(test_majority_missing_extra_and_unread),
		cmocka_unit_test(test_majority_settings_read_apart),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_baseline_rules),
		cmocka_unit_test(test_baseline_flat_and_errors),
		cmocka_unit_test(test_baseline_from_node_matches_itself),
		cmocka_unit_test(test_since),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_set_keys_unique_and_sorted),
		cmocka_unit_test(test_norm_host),
		cmocka_unit_test(test_norm_bmc),
	};

	stub_backends_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
