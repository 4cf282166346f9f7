/*
 * The HTML report's model and page (inventory/report.c, report_html.c):
 * nodes alike folded into one row with their names in range form, cells
 * where the drift is, versions counted, failures and GPU health grouped, and
 * every string from a BMC escaped on the page; and the BMC's GPUs reconciled
 * with the host's (inventory/reconcile.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/sweep_facts.h"

#include "inventory/codec.h"
#include "inventory/drift.h"
#include "inventory/reconcile.h"
#include "inventory/report.h"
#include "inventory/sweep.h"
#include "lib/buf.h"

static struct gf_sweep_node *add(struct gf_sweep *sw, const char *name, const char *bmc,
				 const char *driver)
{
	struct gf_sweep_node *n = gf_sweep_add_node(sw, name);
	struct gf_inv_comp *c;

	n->model = gf_sweep_str(sw, "DGX H100");
	n->time = 1796004000;
	n->fw_read = n->host_read = true;
	c = gf_inv_set_add(n->set);
	c->key = gf_sweep_str(sw, "bmc");
	c->version = gf_sweep_str(sw, bmc);
	c->source = "redfish";
	c = gf_inv_set_add(n->set);
	c->key = gf_sweep_str(sw, "driver");
	c->version = gf_sweep_str(sw, driver);
	c->source = "ssh";
	gf_inv_set_finish(sw, n->set);
	return n;
}

static struct gf_report *build(struct gf_sweep *sw)
{
	const char **classes = gf_drift_model_classes(sw);
	struct gf_drift_opts o = {.mode = GF_DRIFT_MAJORITY, .classes = classes};
	struct gf_drift *d = NULL;

	assert_int_equal(gf_drift_compute(sw, &o, &d, NULL), 0);
	free(classes);
	return gf_report_build(sw, NULL, d, "majority by model");
}

static const struct gf_report_row *row_of(const struct gf_report *r, const char *nodes)
{
	for (size_t k = 0; k < r->nrows; k++)
		if (strcmp(r->rows[k].nodes, nodes) == 0)
			return &r->rows[k];
	fail_msg("no row '%s'", nodes);
	return NULL;
}

static void folds_and_counts(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_sweep_node *n;
	struct gf_report *r;
	const struct gf_report_row *row;
	char name[16];

	for (int i = 1; i <= 12; i++) {
		snprintf(name, sizeof(name), "gpu%02d", i);
		n = add(sw, name, i == 3 ? "<b>&old" : "24.12", i == 5 || i == 6 ? "580" : "590");
		if (i == 7) {
			json_t *j = json_pack("{s:[{s:{s:{s:i},s:{s:i}},s:b}],s:{s:s,s:{s:i}}}",
					      "gpus", "ecc", "volatile", "uncorrected", 2,
					      "aggregate", "uncorrected", 0,
					      "remapped_rows_pending", 1, "health", "state", "ok",
					      "xid", "79", 3);
			struct gf_hostfacts f;

			assert_int_equal(gf_hostfacts_from_json(j, name, &f, NULL), 0);
			gf_sweep_node_take_host(n, &f);
			json_decref(j);
		}
	}
	n = gf_sweep_add_node(sw, "gpu13");
	n->model = gf_sweep_str(sw, "DGX H100");
	n->status = GF_NODE_FAILED;
	gf_sweep_node_error(sw, n, GF_OP_BMC, GF_EK_CONNECT, "no route to <host>");
	gf_inv_set_finish(sw, n->set);

	r = build(sw);
	assert_int_equal(r->nodes, 13);
	assert_int_equal(r->failed, 1);
	assert_int_equal(r->ncols, 2); /* bmc, driver */
	assert_string_equal(r->cols[0], "bmc");
	assert_string_equal(r->cols[1], "driver");
	assert_int_equal(r->nrows, 4);
	row = &r->rows[0]; /* the agreeing nodes first, folded */
	assert_string_equal(row->nodes, "gpu[01-02,04,07-12]");
	assert_int_equal(row->count, 9);
	assert_int_equal(row->cells[0], GF_RCELL_SAME);
	row = row_of(r, "gpu[05-06]");
	assert_int_equal(row->cells[1], GF_RCELL_OFF);
	assert_string_equal(row->items[1]->actual, "580");
	row = row_of(r, "gpu03");
	assert_int_equal(row->cells[0], GF_RCELL_OFF);
	row = row_of(r, "gpu13");
	assert_false(row->compared);
	assert_int_equal(row->cells[0], GF_RCELL_NONE);

	/* versions: most common first, the others with their nodes */
	assert_int_equal(r->ncomps, 2);
	assert_string_equal(r->comps[1].key, "driver");
	assert_int_equal(r->comps[1].n, 2);
	assert_string_equal(r->comps[1].v[0].version, "590");
	assert_null(r->comps[1].v[0].nodes);
	assert_string_equal(r->comps[1].v[1].nodes, "gpu[05-06]");

	assert_int_equal(r->nfailures, 1);
	assert_string_equal(r->failures[0].what, "failed: bmc connect");
	assert_string_equal(r->failures[0].nodes, "gpu13");

	assert_int_equal(r->nhealth,
			 3); /* GPUs with remapped rows, uncorrected (volatile), Xid 79 */
	for (size_t k = 0; k < r->nhealth; k++)
		assert_string_equal(r->health[k].nodes, "gpu07");
	assert_string_equal(r->health[2].what, "uncorrected ECC errors (volatile)");
	assert_string_equal(r->health[2].detail, "2");
	assert_true(r->health[2].severe);
	assert_string_equal(r->health[1].what, "Xid 79");
	assert_string_equal(r->health[1].detail, "3");

	{
		struct gf_buf b = GF_BUF_INIT;
		const char *page;

		gf_report_html(r, &b);
		page = gf_buf_str(&b);
		assert_non_null(strstr(page, "<!DOCTYPE html>"));
		assert_null(strstr(page, "<b>&old"));
		assert_non_null(strstr(page, "&lt;b&gt;&amp;old"));
		assert_non_null(strstr(page, "no route to &lt;host&gt;"));
		assert_non_null(strstr(page, "<tr class=\"ok\" data-nodes=\"gpu[05-06]\">"));
		assert_non_null(strstr(page,
				       "data-c=\"driver\" title=\"driver: 580, expected 590"));
		assert_null(strstr(page, "<script"));
		gf_buf_release(&b);
	}
	gf_report_free(r);
}

#define BMC3                                                               \
	"{\"gpus\":[{\"index\":1,\"serial\":\"S1\",\"firmware\":\"9.1\"}," \
	"{\"index\":2,\"serial\":\"S2\",\"firmware\":\"9.1\"},"            \
	"{\"index\":3,\"serial\":\"S3\",\"firmware\":\"9.1\"}]}"

static void reconcile_checks(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_reconcile *r;

	/* agree (serials in another case, GPUs in another order) */
	facts(add(sw, "n1", "1", "590"), BMC3,
	      "{\"gpus\":[{\"index\":0,\"serial\":\"s3\",\"vbios\":\"9.1\"},"
	      "{\"index\":1,\"serial\":\"S1\",\"vbios\":\"9.1\"},"
	      "{\"index\":2,\"serial\":\"S2\",\"vbios\":\"9.1\"}],\"health\":{\"state\":\"ok\"}}");
	/* one GPU hidden from the host, one serial the BMC does not list, one VBIOS behind */
	facts(add(sw, "n2", "1", "590"), BMC3,
	      "{\"gpus\":[{\"index\":0,\"serial\":\"S1\",\"vbios\":\"9.0\"},"
	      "{\"index\":1,\"serial\":\"X9\",\"vbios\":\"9.1\"}],\"health\":{\"state\":\"ok\"}}");
	/* no GPUs from the host: not reconciled */
	facts(add(sw, "n3", "1", "590"), BMC3, "{\"gpus\":[],\"health\":{\"state\":\"gpu-lost\"}}");
	add(sw, "n4", "1", "590"); /* no facts at all */

	/* The BMC calls GPU S2 critical, the host sees it and reports nothing wrong (issue 21). */
	facts(add(sw, "n5", "1", "590"),
	      "{\"gpus\":[{\"index\":1,\"serial\":\"S1\",\"firmware\":\"9.1\","
	      "\"bmc_health\":{\"health\":\"OK\"}},"
	      "{\"index\":2,\"serial\":\"S2\",\"firmware\":\"9.1\","
	      "\"bmc_health\":{\"health\":\"Critical\",\"row_remapping\":{\"pending\":true}}}]}",
	      "{\"gpus\":[{\"index\":0,\"serial\":\"S1\",\"vbios\":\"9.1\"},"
	      "{\"index\":1,\"serial\":\"S2\",\"vbios\":\"9.1\"}],\"health\":{\"state\":\"ok\"}}");

	r = gf_reconcile_compute(sw);
	assert_int_equal(r->n, 5);
	{
		const struct gf_reconcile_node *rn = &r->nodes[4];

		assert_true(rn->compared);
		assert_int_equal(rn->n, 1);
		assert_string_equal(rn->items[0].component, "gpu2");
		assert_string_equal(rn->items[0].check, "health");
		assert_string_equal(rn->items[0].expected, "Critical");
		assert_string_equal(rn->items[0].actual, "ok");
		assert_non_null(strstr(rn->items[0].detail, "the BMC calls it Critical"));
	}
	assert_true(r->nodes[0].compared);
	assert_int_equal(r->nodes[0].n, 0);
	assert_false(r->nodes[2].compared);
	assert_false(r->nodes[3].compared);
	assert_int_equal(r->compared, 3);
	assert_int_equal(r->findings, 6);
	assert_int_equal(r->nodes_with_findings, 2);
	{
		const struct gf_reconcile_item *it = r->nodes[1].items;

		assert_string_equal(it[0].component, "gpus");
		assert_string_equal(it[0].check, "count");
		assert_string_equal(it[0].expected, "3");
		assert_string_equal(it[0].actual, "2");
		assert_string_equal(it[1].component, "gpu1.firmware");
		assert_string_equal(it[1].expected, "9.1");
		assert_string_equal(it[1].actual, "9.0");
		for (int k = 2; k <= 3; k++) {
			assert_string_equal(it[k].check, "serial");
			assert_null(it[k].actual);
		}
		assert_string_equal(it[2].expected, "S2");
		assert_string_equal(it[3].expected, "S3");
		assert_null(it[4].expected);
		assert_string_equal(it[4].actual, "X9");
		assert_non_null(strstr(it[4].detail, "the BMC does not list it"));
	}
	gf_reconcile_free(r);
	gf_reconcile_free(NULL);
	gf_sweep_free(sw);
}

static void empty(void **state)
{
	struct gf_report *r = build(gf_sweep_new());
	struct gf_buf b = GF_BUF_INIT;

	assert_int_equal(r->nrows, 0);
	gf_report_html(r, &b);
	assert_non_null(strstr(gf_buf_str(&b), "No drift"));
	gf_buf_release(&b);
	gf_report_free(r);
	gf_report_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(folds_and_counts),
		cmocka_unit_test(reconcile_checks),
		cmocka_unit_test(empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
