/*
 * Unit tests for inventory/codec.c: node records both ways, the reader of
 * arrays and ndjson (and its messages on bad input), baseline files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/facts.h"
#include "inventory/codec.h"
#include "inventory/drift.h"
#include "inventory/sweep.h"
#include "lib/buf.h"
#include "tests/unit/stub_backends.h"

static struct gf_inv_comp *comp(struct gf_sweep *sw, struct gf_sweep_node *n, const char *key,
				const char *version, const char *src, const char *id,
				const char *name, const char *kind)
{
	struct gf_inv_comp *c = gf_inv_set_add(n->set);

	c->key = gf_sweep_str(sw, key);
	c->version = gf_sweep_str(sw, version);
	c->source = gf_sweep_str(sw, src);
	c->raw_id = gf_sweep_str(sw, id);
	c->name = gf_sweep_str(sw, name);
	c->kind = gf_sweep_str(sw, kind);
	return c;
}

static void assert_str_or_null(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

/* Every typed member of two nodes is the same. */
static void assert_same_node(const struct gf_sweep_node *a, const struct gf_sweep_node *b)
{
	assert_string_equal(a->node, b->node);
	assert_int_equal(a->status, b->status);
	assert_str_or_null(a->protocol, b->protocol);
	assert_str_or_null(a->model, b->model);
	assert_int_equal(a->fw_read, b->fw_read);
	assert_int_equal(a->host_read, b->host_read);
	assert_int_equal(a->bios_read, b->bios_read);
	assert_int_equal(a->nerrors, b->nerrors);
	for (size_t i = 0; i < a->nerrors; i++) {
		assert_string_equal(a->errors[i].op, b->errors[i].op);
		assert_int_equal(a->errors[i].kind, b->errors[i].kind);
		assert_string_equal(a->errors[i].message, b->errors[i].message);
	}
	assert_int_equal(a->set->n, b->set->n);
	for (size_t i = 0; i < a->set->n; i++) {
		const struct gf_inv_comp *x = &a->set->v[i], *y = &b->set->v[i];

		assert_string_equal(x->key, y->key);
		assert_str_or_null(x->version, y->version);
		assert_string_equal(x->source, y->source);
		assert_str_or_null(x->raw_id, y->raw_id);
		assert_str_or_null(x->name, y->name);
		assert_str_or_null(x->kind, y->kind);
	}
	assert_int_equal(a->sel.read, b->sel.read);
	assert_int_equal(a->sel.total, b->sel.total);
	assert_int_equal(a->sel.new_info, b->sel.new_info);
	assert_int_equal(a->sel.new_warning, b->sel.new_warning);
	assert_int_equal(a->sel.new_critical, b->sel.new_critical);
	assert_int_equal(a->sel.has_mark, b->sel.has_mark);
	assert_true(a->sel.mark == b->sel.mark);
	assert_int_equal(a->sensors.read, b->sensors.read);
	assert_int_equal(a->sensors.nominal, b->sensors.nominal);
	assert_int_equal(a->sensors.warning, b->sensors.warning);
	assert_int_equal(a->sensors.critical, b->sensors.critical);
	assert_int_equal(a->sensors.unknown, b->sensors.unknown);
	{
		char *x = gf_hardware_text(a->hardware), *y = gf_hardware_text(b->hardware);

		assert_str_or_null(x, y);
		free(x);
		free(y);
		x = gf_hostfacts_text(a->host);
		y = gf_hostfacts_text(b->host);
		assert_str_or_null(x, y);
		free(x);
		free(y);
	}
}

/* Every member of both facts documents, set (the shapes of lib/model.c, host/hostfacts.c). */
static const char hw_doc[] =
	"{\"system\":{\"manufacturer\":\"NVIDIA\",\"model\":\"DGXH100\",\"serial\":\"S1\","
	"\"uuid\":\"u-1\",\"bios_version\":\"1.2\"},\"chassis\":{\"serial\":\"C1\","
	"\"part_number\":\"P1\"},\"board\":{\"manufacturer\":\"B\",\"product\":\"BP\","
	"\"serial\":\"BS\",\"part_number\":null},\"product\":{\"manufacturer\":\"PM\","
	"\"name\":\"PN\",\"serial\":\"PS\",\"part_number\":\"PP\",\"asset_tag\":\"A7\"},"
	"\"cpus\":[\"Xeon 8480\",\"Xeon 8480\"],\"memory_gib\":2048.5,"
	"\"gpus\":[{\"index\":0,\"model\":\"H100\",\"serial\":\"G0\",\"firmware\":\"96.00\"},"
	"{\"index\":3,\"model\":null,\"serial\":null,\"firmware\":null}]}";
static const char host_doc[] =
	"{\"driver\":\"550.54\",\"driver_module\":\"open\",\"cuda_driver\":\"12.4\","
	"\"cuda_toolkit\":\"12.4.1\",\"kernel\":\"6.1\",\"os\":\"Debian\","
	"\"fabricmanager\":\"550.54\",\"ofed\":\"MLNX_OFED_LINUX-23.10\","
	"\"driver_library\":\"570.124\","
	"\"gpus\":[{\"index\":0,\"name\":\"H100\",\"serial\":\"G0\",\"uuid\":\"GPU-1\","
	"\"pci\":\"00000000:19:00.0\",\"vbios\":\"96.00.61\",\"memory_total_mib\":81559,"
	"\"mig_mode\":\"enabled\",\"persistence_mode\":\"disabled\",\"ecc\":{\"volatile\":"
	"{\"corrected\":1,\"uncorrected\":0},\"aggregate\":{\"corrected\":12,\"uncorrected\":null}},"
	"\"retired_pages_pending\":false,\"remapped_rows_pending\":true,\"inforom\":\"G520\"}],"
	"\"health\":{\"state\":\"gpu-lost\",\"detail\":\"Unable to determine the device handle\","
	"\"xid\":{\"79\":2,\"119\":5},\"xid_source\":\"journal\"},"
	"\"notes\":[\"cuda toolkit is newer\"],"
	"\"failed\":[{\"command\":\"nvidia-smi --query-gpu\",\"message\":\"exit 4\"}]}";

static void test_facts_documents_both_ways(void **state)
{
	json_t *hj = json_loads(hw_doc, 0, NULL), *fj = json_loads(host_doc, 0, NULL), *back;
	struct gf_hardware h;
	struct gf_hostfacts f;
	struct gf_err err = {0};

	assert_non_null(hj);
	assert_non_null(fj);
	assert_int_equal(gf_hardware_from_json(hj, "n1", &h, &err), 0);
	assert_int_equal(h.ngpus, 2);
	assert_int_equal(h.gpus[1].index, 3);
	back = gf_hardware_to_json(&h);
	assert_true(json_equal(hj, back));
	json_decref(back);
	gf_hardware_release(&h);

	assert_int_equal(gf_hostfacts_from_json(fj, "n1", &f, &err), 0);
	assert_int_equal(f.health, GF_HEALTH_GPU_LOST);
	assert_int_equal(f.nxids, 2);
	assert_int_equal(f.xids[0].code, 79); /* by code, not as text */
	assert_string_equal(f.driver_library, "570.124");
	assert_int_equal(f.nfailed, 1);
	assert_string_equal(f.failed[0].command, "nvidia-smi --query-gpu");
	assert_true(f.gpus[0].ecc_aggregate_corrected.set &&
		    !f.gpus[0].ecc_aggregate_uncorrected.set);
	back = gf_hostfacts_to_json(&f);
	assert_true(json_equal(fj, back));
	json_decref(back);
	gf_hostfacts_release(&f);

	/* Not known: absent or null members; a kernel log not read has "xid": null. */
	json_decref(fj);
	fj = json_pack("{s:n,s:{s:s,s:n,s:s}}", "driver", "health", "state", "ok", "xid",
		       "xid_note", "no permission");
	assert_int_equal(gf_hostfacts_from_json(fj, "n1", &f, &err), 0);
	assert_null(f.driver);
	assert_false(f.xid_read);
	assert_string_equal(f.xid_note, "no permission");
	gf_hostfacts_release(&f);
	json_decref(fj);
	json_decref(hj);
}

static void test_facts_bad_members_are_named(void **state)
{
	static const struct {
		bool hw;
		const char *doc, *msg;
	} cases[] = {
		{true, "{\"system\":{\"model\":7}}",
		 "node 'n1': hardware.system.model must be a string or null"},
		{true, "{\"system\":[]}", "node 'n1': hardware.system must be an object or null"},
		{true, "{\"gpus\":[{\"serial\":false}]}",
		 "node 'n1': hardware.gpus[].serial must be a string or null"},
		{true, "{\"memory_gib\":\"lots\"}",
		 "node 'n1': hardware.memory_gib must be a number or null"},
		{false, "{\"gpus\":[{\"ecc\":{\"volatile\":{\"corrected\":-1}}}]}",
		 "node 'n1': host.gpus[].ecc.volatile.corrected must be a non-negative integer or null"},
		{false, "{\"gpus\":[{\"mig_mode\":true}]}",
		 "node 'n1': host.gpus[].mig_mode must be \"enabled\", \"disabled\" or null"},
		{false, "{\"health\":{\"state\":\"sleepy\"}}",
		 "node 'n1': host.health.state must be a known health state"},
		{false, "{\"health\":{\"xid\":{\"x9\":1}}}",
		 "node 'n1': host.health.xid must be an object of Xid codes and counts"},
		{false, "{\"notes\":[1]}", "node 'n1': host.notes must be an array of strings"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = json_loads(cases[i].doc, 0, NULL);
		struct gf_hardware h = {0};
		struct gf_hostfacts f = {0};
		struct gf_err err = {0};
		int rc = cases[i].hw ? gf_hardware_from_json(j, "n1", &h, &err)
				     : gf_hostfacts_from_json(j, "n1", &f, &err);

		assert_int_equal(rc, GF_E_USAGE);
		assert_string_equal(err.msg, cases[i].msg);
		assert_null(h.system.model); /* untouched */
		assert_null(f.gpus);
		json_decref(j);
		gf_err_clear(&err);
	}
}

/* ---- node records ------------------------------------------------------------ */

static void test_node_round_trip_every_member(void **state)
{
	struct gf_sweep *sw = gf_sweep_new(), *back = gf_sweep_new();
	struct gf_sweep_node *n = gf_sweep_add_node(sw, "gpu1");
	struct gf_err err = {0};
	json_t *j, *j2, *c;

	sw->id = 3;
	sw->started = 1764417600.123;
	sw->finished = 1764417601.5;
	assert_int_equal(gf_sweep_make_uid(sw, &err), 0);
	n->sweep = 3;
	n->time = sw->started;
	n->status = GF_NODE_PARTIAL;
	n->protocol = gf_sweep_str(sw, "redfish");
	n->model = gf_sweep_str(sw, "DGX H100");
	n->fw_read = true;
	n->host_read = true;
	gf_sweep_node_error(sw, n, GF_OP_SENSORS, GF_EK_TIMEOUT, "too slow");
	gf_sweep_node_error(sw, n, GF_OP_SEL, GF_EK_PROTOCOL, "bad \"entry\" 7");
	comp(sw, n, "bmc", "1.2", "redfish", "BMC", "Manager firmware", "bmc");
	comp(sw, n, "driver", "550.54", "ssh", NULL, NULL, "driver");
	comp(sw, n, "nic0", NULL, "ipmi", "fru3", "ConnectX-7", NULL);
	gf_inv_set_finish(sw, n->set);
	n->sel = (struct gf_sel_summary){.read = true,
					 .total = 4,
					 .new_info = 1,
					 .new_warning = 2,
					 .new_critical = 3,
					 .has_mark = true,
					 .mark = 1764417000.25};
	n->sensors = (struct gf_sensor_summary){.read = true,
						.nominal = 40,
						.warning = 2,
						.critical = 1,
						.unknown = 5};
	{
		json_t *hj = json_loads(hw_doc, 0, NULL), *fj = json_loads(host_doc, 0, NULL);
		struct gf_hardware h;
		struct gf_hostfacts f;

		assert_int_equal(gf_hardware_from_json(hj, "gpu1", &h, &err), 0);
		assert_int_equal(gf_hostfacts_from_json(fj, "gpu1", &f, &err), 0);
		gf_sweep_node_take_hardware(n, &h);
		gf_sweep_node_take_host(n, &f);
		json_decref(hj);
		json_decref(fj);
	}

	j = gf_codec_node_to_json(sw, n);
	assert_int_equal(json_integer_value(json_object_get(j, "sweep")), 3);
	assert_string_equal(json_string_value(json_object_get(j, "sweep_uid")), sw->uid);
	assert_string_equal(json_string_value(json_object_get(j, "time")),
			    "2025-11-29T12:00:00.123Z");
	assert_string_equal(json_string_value(json_object_get(j, "finished")),
			    "2025-11-29T12:00:01.500Z");
	assert_string_equal(json_string_value(json_object_get(j, "status")), "partial");
	assert_true(json_is_true(json_object_get(json_object_get(j, "collected"), "host")));
	c = json_array_get(json_object_get(j, GF_CODEC_COMPONENTS), 2);
	assert_string_equal(json_string_value(json_object_get(c, "id")), "fru3");
	assert_string_equal(json_string_value(json_object_get(c, "source")), "ipmi");
	assert_true(json_is_null(json_object_get(c, "version")));
	assert_true(json_is_null(json_object_get(c, "kind")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(j,
											    "sel"),
									    "new"),
							    "critical")),
			 3);
	assert_true(json_real_value(json_object_get(json_object_get(j, "sel"), "mark")) ==
		    1764417000.25);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "sensors"),
							    "unknown")),
			 5);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j,
											     "errors"),
									     1),
							      "kind")),
			    "protocol");

	assert_int_equal(gf_codec_node_from_json(back, j, &err), 0);
	assert_int_equal(back->n, 1);
	assert_same_node(n, &back->nodes[0]);
	back->id = sw->id;
	back->uid = gf_sweep_str(back, sw->uid);
	back->started = sw->started;
	back->finished = sw->finished;
	j2 = gf_codec_node_to_json(back, &back->nodes[0]);
	assert_true(json_equal(j, j2));
	json_decref(j);
	json_decref(j2);
	gf_sweep_free(sw);
	gf_sweep_free(back);
}

static void test_node_without_the_optional_parts(void **state)
{
	struct gf_sweep *sw = gf_sweep_new(), *back = gf_sweep_new();
	struct gf_sweep_node *n = gf_sweep_add_node(sw, "bare");
	struct gf_err err = {0};
	json_t *j;

	n->status = GF_NODE_FAILED;
	gf_sweep_node_error(sw, n, GF_OP_BMC, GF_EK_CONNECT, "refused");
	j = gf_codec_node_to_json(sw, n);
	/* Not stored, no uid, no end: the sweep members say so. */
	assert_int_equal(json_integer_value(json_object_get(j, "sweep")), 0);
	assert_true(json_is_null(json_object_get(j, "sweep_uid")));
	assert_null(json_object_get(j, "finished"));
	assert_true(json_is_null(json_object_get(j, "protocol")));
	assert_true(json_is_null(json_object_get(j, "sel")));
	assert_true(json_is_null(json_object_get(j, "sensors")));
	assert_null(json_object_get(j, "hardware"));
	assert_null(json_object_get(j, "host"));
	assert_int_equal(json_array_size(json_object_get(j, GF_CODEC_COMPONENTS)), 0);
	assert_int_equal(gf_codec_node_from_json(back, j, &err), 0);
	assert_same_node(n, &back->nodes[0]);
	json_decref(j);
	gf_sweep_free(sw);
	gf_sweep_free(back);
}

static void test_node_collected_is_derived_when_missing(void **state)
{
	static const struct {
		const char *rec;
		bool fw, host;
	} cases[] = {
		{"{\"node\": \"a\", \"status\": \"ok\", \"protocol\": \"ipmi\"}", true, false},
		{"{\"node\": \"a\", \"status\": \"partial\", \"protocol\": \"ipmi\", \"errors\":"
		 " [{\"op\": \"firmware\", \"kind\": \"timeout\"}], \"host\": {}}",
		 false, true},
		{"{\"node\": \"a\", \"status\": \"failed\", \"errors\": [{\"op\": \"bmc\"}]}",
		 false, false},
		{"{\"node\": \"a\", \"status\": \"ok\", \"collected\": {\"host\": true}}", false,
		 true},
	};
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_err err = {0};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *o = json_loads(cases[i].rec, 0, NULL);

		assert_non_null(o);
		assert_int_equal(gf_codec_node_from_json(sw, o, &err), 0);
		assert_int_equal(sw->nodes[sw->n - 1].fw_read, cases[i].fw);
		assert_int_equal(sw->nodes[sw->n - 1].host_read, cases[i].host);
		json_decref(o);
	}
	/* An error without a kind is an internal one. */
	assert_int_equal(sw->nodes[2].errors[0].kind, GF_EK_INTERNAL);
	gf_sweep_free(sw);
}

static void test_node_bad_records_are_refused_whole(void **state)
{
	static const struct {
		const char *rec, *msg;
	} bad[] = {
		{"[]", "a node record is not an object"},
		{"{\"status\": \"ok\"}", "a node record has no 'node'"},
		{"{\"node\": 7}", "node record member 'node' is not a string"},
		{"{\"node\": \"a\", \"status\": \"fine\"}",
		 "node 'a' has an unknown status 'fine' (ok, partial, failed)"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"host\": []}",
		 "node 'a': 'hardware', 'host' and 'collected' must be objects"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"components\": [{\"key\": \"b\","
		 " \"source\": \"telnet\"}]}",
		 "node 'a': component 'b' has an unknown source 'telnet' (ipmi, redfish, ssh)"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"components\": [{\"key\": \"b c\","
		 " \"source\": \"ssh\"}]}",
		 "node 'a' has a component key 'b c' with a character that is not allowed"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"components\": [{\"source\": \"ssh\"}]}",
		 "node 'a' has a component without a key"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"components\": {}}",
		 "node 'a': member 'components' is not an array"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"components\": [1]}",
		 "node 'a': component 0 is not an object"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"errors\": [{\"op\": \"x\", \"kind\":"
		 " \"bogus\"}]}",
		 "node 'a': error 0 needs an 'op' and a known 'kind'"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"errors\": [{\"op\": 1}]}",
		 "error member 'op' is not a string"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"sel\": {\"total\": -1}}",
		 "sel member 'total' is not a count"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"sel\": {\"new\": {\"info\": 1.5}}}",
		 "sel.new member 'info' is not a count"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"sel\": {\"mark\": \"x\"}}",
		 "node 'a': member 'sel.mark' is not a number"},
		{"{\"node\": \"a\", \"status\": \"ok\", \"sensors\": 3}",
		 "node 'a': member 'sensors' is not an object"},
	};
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_err err = {0};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *o = json_loads(bad[i].rec, 0, NULL);

		assert_non_null(o);
		gf_err_clear(&err);
		assert_int_equal(gf_codec_node_from_json(sw, o, &err), GF_E_USAGE);
		assert_string_equal(err.msg, bad[i].msg);
		assert_int_equal(sw->n, 0);
		json_decref(o);
	}
	gf_sweep_free(sw);
}

/* ---- files of records ---------------------------------------------------------- */

/* A sink that writes down what it is handed, and fails its Nth node when told. */
struct recorder {
	struct gf_buf log;
	size_t nodes;
	size_t fail_at; /* 1-based; 0: never */
};

static int rec_sweep(void *ud, struct gf_sweep *sw, struct gf_err *err)
{
	struct recorder *r = ud;
	bool made = strncmp(sw->uid, "imported-", 9) == 0;

	assert_int_equal(sw->n, 0);
	if (made)
		assert_int_equal(strlen(sw->uid), 9 + 16);
	gf_buf_addf(&r->log, "sweep %s %lld %.3f %.3f\n", made ? "(made)" : sw->uid, sw->id,
		    sw->started, sw->finished);
	return 0;
}

static int rec_node(void *ud, struct gf_sweep *sw, struct gf_sweep_node *n, struct gf_err *err)
{
	struct recorder *r = ud;

	if (++r->nodes == r->fail_at)
		return gf_err_set(err, GF_E_DB, GF_EK_NONE, "the disk is full");
	assert_int_equal(sw->n, 1); /* the reader drops each node after the call */
	assert_ptr_equal(n, &sw->nodes[0]);
	gf_buf_addf(&r->log, "node %s %s %zu %zu\n", n->node, gf_node_status_name(n->status),
		    n->set->n, n->nerrors);
	return 0;
}

static int read_text(const char *text, struct recorder *r, struct gf_err *err)
{
	struct gf_codec_sink sink = {rec_sweep, rec_node, r};
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rc;

	assert_non_null(f);
	rc = gf_codec_read(f, "f.json", &sink, err);
	fclose(f);
	return rc;
}

#define R1                                                                                  \
	"{\"sweep\": 3, \"sweep_uid\": \"u1\", \"time\": \"2026-11-29T12:00:00.000Z\","     \
	" \"finished\": \"2026-11-29T12:00:05.500Z\", \"node\": \"a\", \"status\": \"ok\"," \
	" \"components\": [{\"key\": \"BMC\", \"version\": \"1.2\", \"source\": \"redfish\"}]}"
#define R2                                                                                   \
	"{\"sweep\": 3, \"sweep_uid\": \"u1\", \"time\": \"2026-11-29T12:00:00.000Z\","      \
	" \"node\": \"b\", \"status\": \"failed\", \"errors\": [{\"op\": \"bmc\", \"kind\":" \
	" \"timeout\", \"message\": \"no answer\"}]}"
#define R3 "{\"sweep\": 4, \"time\": \"2026-11-30\", \"node\": \"a\", \"status\": \"ok\"}"
#define R4 "{\"sweep\": 4, \"time\": \"2026-11-30\", \"node\": \"b\", \"status\": \"ok\"}"

static const char want_log[] =
	"sweep u1 3 1795953600.000 1795953605.500\n"
	"node a ok 1 0\n"
	"node b failed 0 1\n"
	"sweep (made) 4 1795996800.000 1795996800.000\n" /* no uid: one made of sweep and time */
	"node a ok 0 0\n"
	"node b ok 0 0\n";

static void test_read_array_and_ndjson(void **state)
{
	static const char *const files[] = {
		"[" R1 ", " R2 ",\n " R3 ", " R4 "]\n", "\n  [" R1 ", " R2 ", " R3 ", " R4 "]",
		R1 "\n" R2 "\n" R3 "\n" R4 "\n",
		R1 "\r\n\n   \n" R2 "  \n" R3
		   "\n" R4, /* blank lines, trailing space, no last newline */
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct recorder r = {GF_BUF_INIT, 0, 0};
		struct gf_err err = {0};

		assert_int_equal(read_text(files[i], &r, &err), 0);
		assert_string_equal(gf_buf_str(&r.log), want_log);
		gf_buf_release(&r.log);
	}
	{
		/* Nothing at all is no record, not an error. */
		struct recorder r = {GF_BUF_INIT, 0, 0};

		assert_int_equal(read_text(" \n\n", &r, NULL), 0);
		assert_int_equal(r.nodes, 0);
		assert_int_equal(read_text("[]", &r, NULL), 0);
		assert_int_equal(r.nodes, 0);
	}
}

static void test_read_bad_input(void **state)
{
	static const struct {
		const char *text;
		int code;
		const char *msg; /* the whole message, or its start when @prefix */
		bool prefix;
		size_t nodes; /* node records handed over before it stopped */
		size_t fail_at;
	} bad[] = {
		{"[" R1 ", ", GF_E_USAGE, "'f.json' is not a JSON array (line 1: ", true, 0, 0},
		{"[" R1 ", 1]", GF_E_USAGE, "'f.json' record 2: a record is not a JSON object",
		 false, 1, 0},
		{"[" R1 ", " R2 "]", GF_E_USAGE, "'f.json' record 2: the disk is full", false, 2,
		 2},
		{R1 "\n\n{oops\n" R2, GF_E_USAGE, "'f.json' line 3 is not JSON (", true, 1, 0},
		{R1 "\n[1]\n", GF_E_USAGE, "'f.json' line 2: a record is not a JSON object", false,
		 1, 0},
		{"{\"node\": \"a\", \"status\": \"ok\"}", GF_E_USAGE,
		 "'f.json' line 1: a record has no 'time'", false, 0, 0},
		{R1 "\n{\"time\": \"soon\", \"node\": \"a\", \"status\": \"ok\"}", GF_E_USAGE,
		 "'f.json' line 2: time 'soon' is not in the form 2026-11-29 or 2026-11-29T12:00:00Z",
		 false, 1, 0},
		{R1
		 "\n{\"sweep_uid\": \"u1\", \"time\": \"2026-11-29\", \"node\": \"x\", \"status\":"
		 " \"maybe\"}",
		 GF_E_USAGE,
		 "'f.json' line 2: node 'x' has an unknown status 'maybe' (ok, partial, failed)",
		 false, 1, 0},
		{R3 "\n" R4 "\n", GF_E_DB, "'f.json' line 2: the disk is full", false, 2, 2},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct recorder r = {GF_BUF_INIT, 0, bad[i].fail_at};
		struct gf_err err = {0};

		assert_int_equal(read_text(bad[i].text, &r, &err), bad[i].code);
		assert_int_equal(err.code, bad[i].code);
		if (bad[i].prefix)
			assert_memory_equal(err.msg, bad[i].msg, strlen(bad[i].msg));
		else
			assert_string_equal(err.msg, bad[i].msg);
		assert_int_equal(r.nodes, bad[i].nodes);
		gf_buf_release(&r.log);
		/* A NULL error record is fine too. */
		r = (struct recorder){GF_BUF_INIT, 0, bad[i].fail_at};
		assert_int_equal(read_text(bad[i].text, &r, NULL), bad[i].code);
		gf_buf_release(&r.log);
	}
}

/* ---- baseline files ---------------------------------------------------------------- */

static void test_baseline_file_round_trip(void **state)
{
	static const char text[] =
		"{\"components\": {\"gpu*.firmware\": \"9\", \"BMC\": \"1.2\", \"driver\": [\"550\","
		" \"555\"]}, \"models\": {\"B\": {\"bmc\": \"3.0\"}, \"C\": {}}, \"comment\": \"x\"}";
	static const char *const models[] = {NULL, "A", "B", "C"};
	static const char *const keys[] = {"bmc", "gpu3.firmware", "driver", "bios"};
	struct gf_baseline *b = NULL, *back = NULL;
	struct gf_err err = {0};
	json_t *j, *j2;
	char *t, *t2;

	assert_int_equal(gf_codec_baseline_parse(text, "b.json", &b, &err), 0);
	j = gf_codec_baseline_to_json(b, NULL);
	assert_null(json_object_get(j, "from"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "components"),
							      "bmc")),
			    "1.2");
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "components"),
							 "driver")),
			 2);
	assert_int_equal(json_object_size(json_object_get(j, "models")), 2);
	t = json_dumps(j, 0);
	assert_int_equal(gf_codec_baseline_parse(t, "again", &back, &err), 0);
	for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			const char *x = gf_baseline_expect(b, models[m], keys[k], NULL, NULL);
			const char *y = gf_baseline_expect(back, models[m], keys[k], NULL, NULL);

			assert_str_or_null(x, y);
		}
	}
	assert_string_equal(gf_baseline_expect(back, "B", "bmc", NULL, NULL), "3.0");
	j2 = gf_codec_baseline_to_json(back, NULL);
	t2 = json_dumps(j2, 0);
	assert_string_equal(t, t2);
	free(t);
	free(t2);
	json_decref(j);
	json_decref(j2);
	gf_baseline_free(b);
	gf_baseline_free(back);
}

/* A baseline's "ignore": read in both forms, written back, and what drift leaves out. */
static void test_baseline_ignore(void **state)
{
	static const char *const texts[] = {
		"{\"bmc\": \"1\", \"ignore\": [\"bios.httpdev?ip\", \"BIOS.Serial*\"]}",
		"{\"components\": {\"bmc\": \"1\"}, \"ignore\": [\"bios.httpdev?ip\","
		" \"BIOS.Serial*\"]}",
	};
	struct gf_err err = {0};

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct gf_baseline *b = NULL, *back = NULL;
		json_t *j;
		char *text;

		assert_int_equal(gf_codec_baseline_parse(texts[i], "f.json", &b, &err), 0);
		assert_int_equal(b->nignore, 2);
		assert_int_equal(b->scopes[0].n, 1); /* "ignore" is no component */
		assert_true(gf_baseline_ignores(b, "bios.httpdev1ip"));
		assert_true(gf_baseline_ignores(b, "bios.serialnumber"));
		assert_false(gf_baseline_ignores(b, "bios.httpdev1vlanid"));
		j = gf_codec_baseline_to_json(b, NULL);
		text = json_dumps(j, 0);
		assert_int_equal(gf_codec_baseline_parse(text, "g.json", &back, &err), 0);
		assert_int_equal(back->nignore, 2);
		assert_string_equal(back->ignore[1], "BIOS.Serial*");
		free(text);
		json_decref(j);
		gf_baseline_free(b);
		gf_baseline_free(back);
	}
}

static void test_baseline_file_messages(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{"[1]", "baseline 'f.json' is not a JSON object"},
		{"{\"components\": {\"bmc\": 1}}",
		 "baseline 'f.json': the version of 'bmc' in"
		 " 'components' is not a string or a list of strings"},
		{"{\"components\": [], \"x\": 1}",
		 "baseline 'f.json' has an unknown member 'x' (components,"
		 " models, ignore)"},
		{"{\"components\": []}",
		 "baseline 'f.json': 'components' is not an object of component: version"},
		{"{\"models\": {\"A\": {\"bmc\": []}}}",
		 "baseline 'f.json': the list of versions of 'bmc' in model 'A' is empty"},
		{"{\"models\": {\"A\": {\"bmc\": [\"1\", 2]}}}",
		 "baseline 'f.json': a version of 'bmc' in model 'A' is not a string"},
		{"{\"models\": []}",
		 "baseline 'f.json': 'models' is not an object of model: rules"},
		{"{\"\": \"1\"}", "baseline 'f.json': the file has an empty component key"},
		{"{\"ignore\": \"bios.x\"}",
		 "baseline 'f.json': 'ignore' is not a list of component key patterns"},
		{"{\"components\": {}, \"ignore\": [\"bios.x\", 3]}",
		 "baseline 'f.json': 'ignore' item 2 is not a component key pattern"},
	};
	struct gf_err err = {0};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gf_baseline *b = NULL;

		assert_int_equal(gf_codec_baseline_parse(bad[i].text, "f.json", &b, &err),
				 GF_E_USAGE);
		assert_null(b);
		assert_string_equal(err.msg, bad[i].msg);
	}
	{
		static const char start[] = "baseline 'f.json' is not JSON (line 1: ";
		struct gf_baseline *b = NULL;

		assert_int_equal(gf_codec_baseline_parse("not json", "f.json", &b, &err),
				 GF_E_USAGE);
		assert_null(b);
		assert_memory_equal(err.msg, start, strlen(start));
	}
}

/*
 * The rounds of renaming as gf_inv_set_finish() documents them, done the
 * slow and obvious way: in each round, a component gets "#N" when N-1
 * components added before it hold its key. @keys are replaced in place.
 */
static void renamed_by_rounds(char **keys, size_t n)
{
	char **next = calloc(n, sizeof(*next));
	bool again = true;

	assert_non_null(next);
	while (again) {
		again = false;
		for (size_t i = 0; i < n; i++) {
			size_t before = 0;
			struct gf_buf b = GF_BUF_INIT;

			for (size_t j = 0; j < i; j++)
				before += strcmp(keys[j], keys[i]) == 0;
			if (!before) {
				next[i] = strdup(keys[i]);
				continue;
			}
			gf_buf_addf(&b, "%s#%zu", keys[i], before + 1);
			next[i] = gf_buf_detach(&b);
			again = true;
		}
		for (size_t i = 0; i < n; i++) {
			free(keys[i]);
			keys[i] = next[i];
		}
	}
	free(next);
}

/* @keys through gf_inv_set_finish() and through the rounds: the same key for each component. */
static void check_finish_as_rounds(const char *const *keys, size_t n)
{
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_sweep_node *node = gf_sweep_add_node(sw, "gpu1");
	char **want = calloc(n, sizeof(*want));
	char num[32];

	assert_non_null(want);
	for (size_t i = 0; i < n; i++) {
		snprintf(num, sizeof(num), "%zu", i);
		comp(sw, node, keys[i], num, "redfish", NULL, NULL, "other");
		want[i] = strdup(keys[i]);
	}
	renamed_by_rounds(want, n);
	gf_inv_set_finish(sw, node->set);
	assert_int_equal(node->set->n, n);
	for (size_t i = 0; i < n; i++) {
		const struct gf_inv_comp *c = &node->set->v[i];
		size_t at = strtoul(c->version, NULL, 10);

		assert_string_equal(c->key, want[at]);
		if (i > 0)
			assert_true(strcmp(node->set->v[i - 1].key, c->key) < 0);
	}
	for (size_t i = 0; i < n; i++)
		free(want[i]);
	free(want);
	gf_sweep_free(sw);
}

static void test_finish_renames_as_the_rounds_do(void **state)
{
	static const char *const words[] = {"bmc",  "bmc#2",   "bmc#3",  "bmc#2#2",   "bmc#2#3",
					    "bios", "bmc#3#2", "bmc#10", "bmc#2#2#2", "nic0"};
	const char *mixed[600], *chain[160], *back[160];
	unsigned long x = 12345;

	/* Random mixtures of keys that meet each other's new names. */
	for (size_t i = 0; i < 600; i++) {
		x = x * 1103515245 + 12345;
		mixed[i] = words[(x >> 16) % 10];
	}
	check_finish_as_rounds(mixed, 600);
	/* A chain: "x", "x", "x#2", "x#2#2", ... each renaming meets the next key; and backwards. */
	for (size_t i = 0; i < 160; i++) {
		struct gf_buf b = GF_BUF_INIT;

		gf_buf_adds(&b, "x");
		for (size_t k = 1; k < i; k++)
			gf_buf_adds(&b, "#2");
		chain[i] = gf_buf_detach(&b);
		back[159 - i] = chain[i];
	}
	check_finish_as_rounds(chain, 160);
	check_finish_as_rounds(back, 160);
	for (size_t i = 0; i < 160; i++)
		free((char *)chain[i]);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_facts_documents_both_ways),
		cmocka_unit_test(test_facts_bad_members_are_named),
		cmocka_unit_test(test_node_round_trip_every_member),
		cmocka_unit_test(test_finish_renames_as_the_rounds_do),
		cmocka_unit_test(test_node_without_the_optional_parts),
		cmocka_unit_test(test_node_collected_is_derived_when_missing),
		cmocka_unit_test(test_node_bad_records_are_refused_whole),
		cmocka_unit_test(test_read_array_and_ndjson),
		cmocka_unit_test(test_read_bad_input),
		cmocka_unit_test(test_baseline_file_round_trip),
		cmocka_unit_test(test_baseline_ignore),
		cmocka_unit_test(test_baseline_file_messages),
	};

	stub_backends_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
