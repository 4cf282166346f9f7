/*
 * Unit tests for the Redfish backend's walkers and dialect tables, run on the
 * real captured trees in tests/data/redfish/<vendor>/tree.json through an
 * in-memory rf_io (paging, $skip, state changes of Reset and PATCH), and on
 * hostile documents; plus the TLS pin accessors of inventory/db.c.
 */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "inventory/db.h"
#include "lib/buf.h"
#include "lib/exec.h"
#include "lib/util.h"
#include "lib/digest.h"
#include "redfish/rf.h"
#include "redfish/update.h"

/* ---- an in-memory BMC over a captured tree ------------------------------ */

struct tree {
	json_t *doc;    /* the whole fixture file */
	json_t *res;    /* uri -> resource (borrowed from doc) */
	size_t page;    /* members per page, 0: no paging */
	size_t overlap; /* a next page repeats this many members of the one before */
	unsigned gets;
	json_t *sent;   /* [{"method","path","body","if_match"}] */
	int fail_patch; /* answer the next PATCHes with this status */
};

static const char *data_dir(void)
{
	const char *d = getenv("GF_TEST_DATA");

	return d && *d ? d : "tests/data";
}

static struct tree *tree_load(const char *vendor)
{
	struct tree *t = calloc(1, sizeof(*t));
	struct gf_buf path = GF_BUF_INIT;
	json_error_t je;

	assert_non_null(t);
	gf_buf_addf(&path, "%s/redfish/%s/tree.json", data_dir(), vendor);
	t->doc = json_load_file(gf_buf_str(&path), 0, &je);
	if (!t->doc)
		fail_msg("cannot read %s: %s", gf_buf_str(&path), je.text);
	t->res = json_object_get(t->doc, "resources");
	assert_true(json_is_object(t->res));
	t->sent = json_array();
	gf_buf_release(&path);
	return t;
}

static void tree_free(struct tree *t)
{
	json_decref(t->doc);
	json_decref(t->sent);
	free(t);
}

static int not_found(const char *path, struct gf_err *err)
{
	gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "no '%s' here", path);
	if (err)
		err->detail = 404;
	return GF_E_NODE;
}

/* The resource at @path without its query; NULL when absent. Borrowed. */
static json_t *tree_at(struct tree *t, const char *path, long *skip)
{
	char *p = gf_xstrdup(path), *q = strchr(p, '?');
	size_t n;
	json_t *r;

	*skip = 0;
	if (q) {
		char *s = strstr(q, "$skip=");

		if (s)
			*skip = strtol(s + 6, NULL, 10);
		*q = '\0';
	}
	n = strlen(p);
	if (n > 1 && p[n - 1] == '/')
		p[n - 1] = '\0';
	r = json_object_get(t->res, p);
	free(p);
	return r;
}

static int tree_get(void *ud, const char *path, json_t **ret, char **etag, struct gf_err *err)
{
	struct tree *t = ud;
	json_t *r, *m;
	long skip;

	t->gets++;
	r = tree_at(t, path, &skip);
	if (!r)
		return not_found(path, err);
	r = json_deep_copy(r);
	m = json_object_get(r, "Members");
	if (t->page && json_is_array(m) && json_array_size(m) > t->page) {
		json_t *slice = json_array();
		size_t start = (size_t)skip;
		char link[512];

		for (size_t i = start; i < start + t->page && i < json_array_size(m); i++)
			json_array_append(slice, json_array_get(m, i));
		if (start + t->page < json_array_size(m)) {
			char *base = gf_xstrdup(path), *q = strchr(base, '?');

			if (q)
				*q = '\0';
			snprintf(link, sizeof(link), "%s?$skip=%zu", base,
				 start + t->page - t->overlap);
			json_object_set_new(r, "Members@odata.nextLink", json_string(link));
			free(base);
		}
		json_object_set_new(r, "Members", slice);
	}
	if (etag)
		*etag = NULL;
	*ret = r;
	return 0;
}

/* Reset actions change PowerState; PATCH merges Boot; both are recorded. */
static int tree_send(void *ud, const char *method, const char *path, const json_t *body,
		     const char *if_match, struct gf_err *err)
{
	struct tree *t = ud;
	const char *type = rf_str(body, "ResetType");
	long skip;

	json_array_append_new(t->sent, json_pack("{s:s,s:s,s:O?,s:s?}", "method", method, "path",
						 path, "body", body, "if_match", if_match));
	if (strcmp(method, "PATCH") == 0) {
		json_t *sys = tree_at(t, path, &skip);

		if (t->fail_patch) {
			gf_err_set(err, GF_E_NODE, GF_EK_REFUSED, "HTTP %d", t->fail_patch);
			if (err)
				err->detail = t->fail_patch;
			t->fail_patch = 0;
			return GF_E_NODE;
		}
		if (!sys)
			return not_found(path, err);
		json_object_update_recursive(sys, (json_t *)body);
		json_object_set_new(sys, "@odata.etag", json_string("\"changed\""));
		return 0;
	}
	if (type && strstr(path, "ComputerSystem.Reset")) {
		char *sys_path = gf_xstrdup(path);
		json_t *sys;

		*strstr(sys_path, "/Actions/") = '\0';
		sys = tree_at(t, sys_path, &skip);
		free(sys_path);
		if (!sys)
			return not_found(path, err);
		if (!strcmp(type, "ForceOff") || !strcmp(type, "GracefulShutdown"))
			json_object_set_new(sys, "PowerState", json_string("Off"));
		else if (strcmp(type, "Nmi") != 0)
			json_object_set_new(sys, "PowerState", json_string("On"));
	}
	return 0;
}

static const struct rf_io tree_io = {tree_get, tree_send, NULL};

static void client(struct rf_client *c, struct tree *t)
{
	struct gf_err err = {0};

	if (rf_client_init(c, &tree_io, t, "node1", &err) < 0)
		fail_msg("client: %s", err.msg);
}

static const char *const vendors[] = {
	"supermicro-sys-821ge-tnhr", "nvidia-dgx-h100", "lenovo-sr670-v2", "dell-r750",
	"hpe-dl385-gen10plus-v2",
};

static const char *const dialect_of[] = {"supermicro", "nvidia", "lenovo", "dell", "hpe"};

static size_t vendor_index(void **state)
{
	return (size_t)(uintptr_t)*state;
}

/* ---- patterns and times ------------------------------------------------- */

static void test_pattern(void **state)
{
	long caps[4];
	size_t n = 0;

	assert_true(rf_pattern_match("HGX_FW_GPU_SXM_#", "HGX_FW_GPU_SXM_7", caps, 4, &n));
	assert_int_equal(n, 1);
	assert_int_equal(caps[0], 7);
	assert_true(rf_pattern_match("Switchboard_#_CPLD_#", "switchboard_12_cpld_3", caps, 4, &n));
	assert_int_equal(n, 2);
	assert_int_equal(caps[0], 12);
	assert_int_equal(caps[1], 3);
	assert_false(rf_pattern_match("GPU#", "GPU", caps, 4, &n));
	assert_false(rf_pattern_match("GPU#", "GPUx1", caps, 4, &n));
	assert_false(rf_pattern_match("BMC-Primary", "BMC-Primary-Pending", caps, 4, &n));
	assert_false(rf_pattern_match("NIC.Slot.#-#-#", "NIC.Slot.5-1", caps, 4, &n));
	assert_true(rf_pattern_match("NIC.Slot.#-#", "NIC.Slot.5-1", caps, 4, &n));
	assert_true(rf_pattern_match("*SSD", "480GB 6G SATA SSD", caps, 4, &n));
	assert_true(rf_pattern_match("HPE Smart Array *", "HPE Smart Array P408i-p SR Gen10", caps,
				     4, &n));
	assert_true(rf_pattern_match("*NIC*", "BlueField-2 SmartNIC Main Card", caps, 4, &n));
	assert_false(rf_pattern_match("*NIC*", "ConnectX-6", caps, 4, &n));
	assert_false(rf_pattern_match(NULL, "x", caps, 4, &n));
	assert_false(rf_pattern_match("x", NULL, caps, 4, &n));
	/* More captures than room: matched, the extra ones dropped. */
	assert_true(rf_pattern_match("#.#.#.#.#", "1.2.3.4.5", caps, 2, &n));
	assert_int_equal(n, 2);
}

static void test_time_parse(void **state)
{
	double t;

	assert_true(rf_time_parse("2024-06-11T00:13:00-05:00", &t));
	assert_float_equal(t, 1718082780.0, 0.001);
	assert_true(rf_time_parse("2024-07-18T22:00:55.851+00:00", &t));
	assert_float_equal(t, 1721340055.851, 0.001);
	assert_true(rf_time_parse("2023-07-21T15:35:03Z", &t));
	assert_float_equal(t, 1689953703.0, 0.001);
	assert_true(rf_time_parse("1970-01-01T00:00:00Z", &t));
	assert_float_equal(t, 0.0, 0.001);
	assert_false(rf_time_parse("2024-13-01T00:00:00Z", &t));
	assert_false(rf_time_parse("2024-06-11", &t));
	assert_false(rf_time_parse("2024-06-11T00:13:00+05", &t));
	assert_false(rf_time_parse("2024-06-11T00:13:00Zjunk", &t));
	assert_false(rf_time_parse("", &t));
	assert_false(rf_time_parse(NULL, &t));
}

/* ---- firmware ----------------------------------------------------------- */

/* The FirmwareInventory members of a tree, each once, in order. */
static json_t *inventory_members(struct tree *t)
{
	json_t *coll = json_object_get(t->res, "/redfish/v1/UpdateService/FirmwareInventory");
	json_t *out = json_array(), *seen = json_object();
	size_t i;
	json_t *m;

	json_array_foreach(json_object_get(coll, "Members"), i, m) {
		const char *id = rf_odata_id(m);
		json_t *r = id ? json_object_get(t->res, id) : NULL;

		if (!r || json_object_get(seen, id))
			continue;
		json_object_set_new(seen, id, json_true());
		json_array_append(out, r);
	}
	json_decref(seen);
	return out;
}

static const struct gf_component *by_key(const struct gf_component_list *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].key && strcmp(l->v[i].key, key) == 0)
			return &l->v[i];
	return NULL;
}

/* Keys that must hold across BMC releases: key -> raw member Id, per dialect. */
static const struct {
	const char *dialect, *key, *id, *kind;
} expected_keys[] = {
	{"supermicro", "bmc", "BMC", "bmc"},
	{"supermicro", "bios", "BIOS", "bios"},
	{"supermicro", "bmc.golden", "Golden_BMC", "bmc"},
	{"supermicro", "gpu3.firmware", "GPU3", "gpu"},
	{"supermicro", "hgx.gpu3.firmware", "HGX_FW_GPU_SXM_3", "gpu"},
	{"supermicro", "nvswitch0.firmware", "HGX_FW_NVSwitch_0", "baseboard"},
	{"supermicro", "cpld.motherboard", "CPLD_Motherboard", "cpld"},
	{"supermicro", "nic10", "NIC10", "nic"},
	{"supermicro", "psu8", "PowerSupply8", "psu"},
	{"nvidia", "bmc", "HostBMC_0", "bmc"},
	{"nvidia", "bios", "HostBIOS_0", "bios"},
	{"nvidia", "gpu3.firmware", "HGX_FW_GPU_SXM_3", "gpu"},
	{"nvidia", "gpu8.inforom", "HGX_InfoROM_GPU_SXM_8", "gpu"},
	{"nvidia", "hgx.bmc", "HGX_FW_BMC_0", "baseboard"},
	{"nvidia", "psu0", "PSU_0", "psu"},
	{"nvidia", "cpld.motherboard", "CPLDMB_0", "cpld"},
	{"lenovo", "bmc", "BMC-Primary", "bmc"},
	{"lenovo", "bmc.backup", "BMC-Backup", "bmc"},
	{"lenovo", "bios", "UEFI", "bios"},
	{"lenovo", "gpu3.firmware", "GPU3", "gpu"},
	{"lenovo", "psu4", "PSU4", "psu"},
	{"dell", "bmc", "Installed-25227-6.00.30.00__iDRAC.Embedded.1-1", "bmc"},
	{"dell", "bmc.previous", "Previous-25227-4.40.29.00__iDRAC.Embedded.1-1", "bmc"},
	{"dell", "bios", "Installed-159-1.8.2__BIOS.Setup.1-1", "bios"},
	{"dell", "bios.current", "Current-159-1.8.2__BIOS.Setup.1-1", "bios"},
	{"dell", "cpld", "Installed-27763-1.0.5__CPLD.Embedded.1", "cpld"},
	{"dell", "psu2", "Installed-108076-00.2A.2B__PSU.Slot.2", "psu"},
	{"dell", "nic.slot5.1", "Installed-0-24.40.10.00__NIC.Slot.5-1", "nic"},
	{"hpe", "bmc", "1", "bmc"},
	{"hpe", "bios", "2", "bios"},
	{"hpe", "bios.redundant", "8", "bios"},
	{"hpe", "cpld", "4", "cpld"},
	{"hpe", "psu1", "6", "psu"},
	{"hpe", "psu2", "7", "psu"},
	{"hpe", "nic.pci-e-slot-1", "16", "nic"},
};

static void check_firmware(size_t v, size_t page, size_t overlap)
{
	struct tree *t = tree_load(vendors[v]);
	struct gf_component_list l = {0};
	struct gf_err err = {0};
	struct rf_client c;
	json_t *members, *keys = json_object(), *m;
	size_t i, gpus = 0;

	t->page = page;
	t->overlap = overlap;
	client(&c, t);
	assert_string_equal(c.dialect->name, dialect_of[v]);
	if (rf_firmware(&c, &l, &err) < 0)
		fail_msg("%s: %s", vendors[v], err.msg);
	members = inventory_members(t);
	/* Every member once (paging and merged pages double nothing), in BMC order. */
	assert_int_equal(l.n, json_array_size(members));
	json_array_foreach(members, i, m) {
		const struct gf_component *cp = &l.v[i];
		const char *version = rf_str(m, "Version");

		assert_string_equal(cp->id, rf_str(m, "Id"));
		if (version)
			assert_string_equal(cp->version, version);
		else
			assert_null(cp->version);
		assert_int_equal(cp->updateable, rf_bool(m, "Updateable") == 1);
		if (rf_get_str(m, "Status.Health"))
			assert_string_equal(rf_str(cp->details, "health"),
					    rf_get_str(m, "Status.Health"));
		assert_non_null(cp->key);
		assert_non_null(cp->kind);
		/* Keys are unique, lower case, without blanks. */
		assert_null(json_object_get(keys, cp->key));
		json_object_set_new(keys, cp->key, json_true());
		for (const char *p = cp->key; *p; p++)
			assert_true((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
				    strchr(".-~_", *p));
		if (strncmp(cp->key, "gpu", 3) == 0 && strstr(cp->key, ".firmware") &&
		    !strcmp(cp->kind, "gpu"))
			gpus++;
	}
	for (i = 0; i < sizeof(expected_keys) / sizeof(expected_keys[0]); i++) {
		const struct gf_component *cp;

		if (strcmp(expected_keys[i].dialect, dialect_of[v]) != 0)
			continue;
		cp = by_key(&l, expected_keys[i].key);
		if (!cp)
			fail_msg("%s: no key '%s'", vendors[v], expected_keys[i].key);
		assert_string_equal(cp->id, expected_keys[i].id);
		assert_string_equal(cp->kind, expected_keys[i].kind);
	}
	/* GPU firmware on the three GPU servers: 8 GPUs each, keyed gpuN.firmware. */
	if (v <= 2) {
		for (int g = 1; g <= 8; g++) {
			char key[32];

			snprintf(key, sizeof(key), "gpu%d.firmware", g);
			assert_non_null(by_key(&l, key));
		}
		assert_true(gpus >= 8);
	}
	json_decref(members);
	json_decref(keys);
	gf_component_list_release(&l);
	rf_client_release(&c);
	tree_free(t);
}

/* How deep a JSON value nests (iteratively: the test must not recurse either). */
static size_t depth_of(const json_t *v)
{
	size_t d = 0;

	while (json_is_array(v) || json_is_object(v)) {
		d++;
		v = json_is_array(v) ? json_array_get(v, 0)
				     : json_object_iter_value(json_object_iter((json_t *)v));
	}
	return d;
}

/* BMC JSON nested 5,000 deep parses to RF_JSON_DEPTH levels; strings with brackets are kept. */
static void test_json_depth_bounded(void **state)
{
	struct gf_buf b = GF_BUF_INIT;
	json_t *doc;

	(void)state;
	gf_buf_adds(&b, "{\"a\":\"[[{\\\"\",\"v\":");
	for (int i = 0; i < 5000; i++)
		gf_buf_adds(&b, i % 2 ? "{\"k\":" : "[");
	gf_buf_adds(&b, "1");
	for (int i = 4999; i >= 0; i--)
		gf_buf_adds(&b, i % 2 ? "}" : "]");
	gf_buf_adds(&b, ",\"z\":[1,2]}");
	doc = rf_json_parse(b.s, b.len, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "a")), "[[{\"");
	assert_int_equal(json_array_size(json_object_get(doc, "z")), 2);
	assert_int_equal(depth_of(json_object_get(doc, "v")), RF_JSON_DEPTH - 1);
	json_decref(doc);
	/* Shallow documents parse as they are, and bad ones still fail. */
	doc = rf_json_parse("{\"x\":[[1]]}", 11, 0, NULL);
	assert_int_equal(depth_of(json_object_get(doc, "x")), 2);
	json_decref(doc);
	assert_null(rf_json_parse("{\"x\":", 5, 0, NULL));
	gf_buf_release(&b);
}

static void test_firmware(void **state)
{
	check_firmware(vendor_index(state), 0, 0);
}

static void test_firmware_paged(void **state)
{
	/* Pages of 7 that repeat 3 members of the page before: still each member once. */
	check_firmware(vendor_index(state), 7, 3);
}

static void test_firmware_dell_rename(void **state)
{
	const struct rf_dialect *dell = rf_dialect_by_name("dell");
	struct gf_component_list l = {0};
	json_t *members = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s}]",
				    "Id", "Installed-25227-7.10.30.00__iDRAC.Embedded.1-1", "Name",
				    "iDRAC", "Version", "7.10.30.00", "Id",
				    "Previous-25227-6.00.30.00__iDRAC.Embedded.1-1", "Name",
				    "iDRAC", "Version", "6.00.30.00", "Id",
				    "Staged-25227-7.20.00.00__iDRAC.Embedded.1-1", "Name", "iDRAC",
				    "Version", "7.20.00.00", "Id",
				    "Installed-1-1.0__Something.New.1", "Name", "A new part",
				    "Version", "1.0");

	rf_firmware_normalize(dell, members, &l);
	assert_int_equal(l.n, 4);
	/* An upgrade renames the member; the key stays. */
	assert_string_equal(l.v[0].key, "bmc");
	assert_string_equal(l.v[1].key, "bmc.previous");
	assert_string_equal(l.v[2].key, "bmc.staged");
	assert_string_equal(l.v[3].key, "other.something-new-1");
	gf_component_list_release(&l);
	json_decref(members);
}

static void test_firmware_collisions(void **state)
{
	const struct rf_dialect *sm = rf_dialect_by_name("supermicro");
	struct gf_component_list l = {0};
	/* The HGX row comes first in the list but loses to the vendor's own GPU1. */
	json_t *members = json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "Id",
				    "HGX_FW_GPU_SXM_1", "Version", "b", "Id", "GPU1", "Version",
				    "a", "Id", "GPU01", "Version", "c", "Id", "HGX_FW_GPU_1",
				    "Version", "d");

	rf_firmware_normalize(sm, members, &l);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.v[1].key, "gpu1.firmware");
	assert_string_equal(l.v[0].key, "hgx.gpu1.firmware");
	/* Taken twice over: the member's own id tells it apart. */
	assert_string_equal(l.v[2].key, "gpu1.firmware.gpu01");
	assert_string_equal(l.v[3].key, "gpu1.firmware.hgx-fw-gpu-1");
	gf_component_list_release(&l);
	json_decref(members);
}

static void test_firmware_hostile(void **state)
{
	const struct rf_dialect *hpe = rf_dialect_by_name("hpe");
	struct gf_component_list l = {0};
	json_error_t je;
	json_t *members = json_loads(
		"[1, \"x\", null, [], {},"
		" {\"Id\": 5, \"Name\": 7, \"Version\": {\"a\": 1}, \"Updateable\": \"yes\"},"
		" {\"@odata.id\": \"/redfish/v1/UpdateService/FirmwareInventory/9\","
		"  \"Version\": 3.5, \"Name\": \"Power Supply Firmware\","
		"  \"Oem\": {\"Hpe\": {\"DeviceContext\": 42}}},"
		" {\"Id\": \"\", \"Name\": \"\", \"Version\": 12},"
		" {\"Id\": \"10\", \"Name\": \"Power Supply Firmware\","
		"  \"Oem\": {\"Hpe\": {\"DeviceContext\": \"Bay 3\"}}, \"Version\": \"1\","
		"  \"Updateable\": true},"
		" {\"Id\": \"10\", \"Name\": \"Power Supply Firmware\","
		"  \"Oem\": {\"Hpe\": {\"DeviceContext\": \"Bay 3\"}}, \"Version\": \"2\"}]",
		0, &je);

	assert_non_null(members);
	rf_firmware_normalize(hpe, members, &l);
	/* Only objects with an Id (or an @odata.id to take one from) make components. */
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[0].id, "9");
	assert_string_equal(l.v[0].version, "3.5");
	/* No number in the DeviceContext: the rule's ordinal stands in. */
	assert_string_equal(l.v[0].key, "psu1");
	assert_string_equal(l.v[1].key, "psu3");
	assert_true(l.v[1].updateable);
	assert_false(l.v[0].updateable);
	assert_string_equal(l.v[2].key, "psu3.10");
	gf_component_list_release(&l);
	json_decref(members);

	/* Not an array at all, and an empty one. */
	rf_firmware_normalize(hpe, NULL, &l);
	assert_int_equal(l.n, 0);
	members = json_object();
	rf_firmware_normalize(hpe, members, &l);
	assert_int_equal(l.n, 0);
	json_decref(members);
}

/*
 * Many members sharing keys: rule keys, alternates, ids and counts in the
 * same order as the quadratic search of before (its output's digest, taken
 * before the change, is the reference), and in linear time.
 */
static void test_firmware_shared_keys(void **state)
{
	static const char *const ids[] = {"GPU1", "HGX_FW_GPU_SXM_1", "Firmware",         "GPU1",
					  "BMC",  "Firmware",         "HGX_FW_GPU_SXM_1", "CPLD_2"};
	static const char *const names[] = {"Firmware", "GPU", "Firmware", "CPLD", "BMC"};
	const struct rf_dialect *sm = rf_dialect_by_name("supermicro");
	struct gf_component_list l = {0};
	struct gf_buf all = GF_BUF_INIT;
	json_t *members = json_array();
	char num[32];

	for (size_t k = 0; k < 3000; k++) {
		snprintf(num, sizeof(num), "%zu", k);
		json_array_append_new(members, json_pack("{s:s,s:s,s:s}", "Id", ids[k % 8], "Name",
							 names[k % 5], "Version", num));
	}
	rf_firmware_normalize(sm, members, &l);
	assert_int_equal(l.n, 3000);
	for (size_t i = 0; i < l.n; i++) {
		gf_buf_adds(&all, l.v[i].key);
		gf_buf_addc(&all, '\n');
	}
	assert_string_equal(l.v[0].key, "gpu1.firmware");
	assert_string_equal(l.v[1].key, "hgx.gpu1.firmware");
	assert_string_equal(l.v[2].key, "other.firmware");
	assert_string_equal(l.v[3].key, "gpu1.firmware.gpu1");
	assert_string_equal(l.v[6].key, "gpu1.firmware.hgx-fw-gpu-sxm-1");
	assert_string_equal(l.v[8].key, "gpu1.firmware.gpu1~2");
	assert_string_equal(l.v[15].key, "cpld.cpld-2.cpld-2");
	assert_string_equal(l.v[19].key, "gpu1.firmware.gpu1~5");
	assert_string_equal(l.v[2999].key, "cpld.cpld-2.cpld-2~374");
	/* Every key, in order, as the search of before gave them. */
	assert_int_equal(all.len, 75898);
	assert_true(gf_hash64(all.s, all.len) == 0xa7c9447aef8cfe05ULL);
	gf_buf_release(&all);
	gf_component_list_release(&l);
	json_decref(members);
}

/* ---- walking collections ------------------------------------------------ */

/* An rf_io whose documents are given as a map, for loops and runaway paging. */
static int map_get(void *ud, const char *path, json_t **ret, char **etag, struct gf_err *err)
{
	json_t *r = json_object_get((json_t *)ud, path);

	if (!r)
		return not_found(path, err);
	*ret = json_incref(r);
	if (etag)
		*etag = NULL;
	return 0;
}

static const struct rf_io map_io = {map_get, tree_send, NULL};

static void test_collection_loops(void **state)
{
	json_t *map = json_pack("{s:{}, s:{s:[{s:s},{s:s}], s:s},"
				" s:{s:[{s:s},{s:s},{s:s}], s:s},"
				" s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:[]}",
				"/redfish/v1", "/a", "Members", "@odata.id", "/m/1", "@odata.id",
				"/m/2", "Members@odata.nextLink", "/a?$skip=2", "/a?$skip=2",
				"Members", "@odata.id", "/m/2", "@odata.id", "/m/3", "@odata.id",
				"/m/gone", "Members@odata.nextLink", "/a", "/m/1", "Id", "1",
				"/m/2", "Id", "2", "/m/3", "Id", "3", "/bad", "Members",
				"not an array", "/notobj");
	struct gf_err err = {0};
	struct rf_client c;
	json_t *got = NULL;

	assert_int_equal(rf_client_init(&c, &map_io, map, "n", &err), 0);
	/* a -> a?$skip=2 -> a again: stops; /m/2 listed twice comes once; /m/gone (404) is skipped. */
	assert_int_equal(rf_collection(&c, "/a", RF_WALK_FETCH, &got, &err), 0);
	assert_int_equal(json_array_size(got), 3);
	assert_string_equal(rf_str(json_array_get(got, 2), "Id"), "3");
	json_decref(got);
	assert_int_equal(rf_collection(&c, "/a", RF_WALK_REFS, &got, &err), 0);
	assert_int_equal(json_array_size(got), 4);
	json_decref(got);
	assert_int_equal(rf_collection(&c, "/bad", RF_WALK_FETCH, &got, &err), 0);
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
	assert_int_equal(rf_collection(&c, "/notobj", RF_WALK_FETCH, &got, &err), GF_E_NODE);
	assert_int_equal(err.kind, GF_EK_PROTOCOL);
	/* A link to nothing is an empty collection; a missing collection otherwise fails. */
	assert_int_equal(rf_collection(&c, "/nowhere", RF_WALK_FETCH, &got, &err), GF_E_NODE);
	{
		json_t *o = json_pack("{s:{s:s}}", "L", "@odata.id", "/nowhere");

		assert_int_equal(rf_collection_of(&c, o, "L", RF_WALK_FETCH, &got, &err), 0);
		assert_int_equal(json_array_size(got), 0);
		json_decref(got);
		json_decref(o);
	}
	/* Limits on what one collection may bring. */
	c.max_members = 2;
	assert_int_equal(rf_collection(&c, "/a", RF_WALK_REFS, &got, &err), GF_E_NODE);
	assert_non_null(strstr(err.msg, "more than 2 members"));
	c.max_members = 100;
	c.max_pages = 1;
	assert_int_equal(rf_collection(&c, "/a", RF_WALK_REFS, &got, &err), GF_E_NODE);
	assert_non_null(strstr(err.msg, "pages"));
	rf_client_release(&c);
	json_decref(map);
}

static void test_expand_query(void **state)
{
	char q[32];
	json_t *root = json_pack("{s:{s:{s:b,s:b,s:b,s:i}}}", "ProtocolFeaturesSupported",
				 "ExpandQuery", "ExpandAll", 0, "Levels", 1, "NoLinks", 1,
				 "MaxLevels", 1);

	rf_expand_query(root, q, sizeof(q));
	assert_string_equal(q, "$expand=.($levels=1)");
	json_decref(root);
	root = json_pack("{s:{s:{s:b}}}", "ProtocolFeaturesSupported", "ExpandQuery", "ExpandAll",
			 1);
	rf_expand_query(root, q, sizeof(q));
	assert_string_equal(q, "$expand=*");
	json_decref(root);
	/* Not advertised, or advertised as something else than an object. */
	root = json_pack("{s:{s:b}}", "ProtocolFeaturesSupported", "ExpandQuery", 1);
	rf_expand_query(root, q, sizeof(q));
	assert_string_equal(q, "");
	json_decref(root);
	rf_expand_query(NULL, q, sizeof(q));
	assert_string_equal(q, "");
}

/* ---- sensors ------------------------------------------------------------ */

static const struct gf_sensor *sensor_named(const struct gf_sensor_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].name && strcmp(l->v[i].name, name) == 0)
			return &l->v[i];
	return NULL;
}

static size_t sensors_named(const struct gf_sensor_list *l, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		n += l->v[i].name && strcmp(l->v[i].name, name) == 0;
	return n;
}

static void test_sensors(void **state)
{
	size_t v = vendor_index(state);
	struct tree *t = tree_load(vendors[v]);
	struct gf_sensor_list l = {0};
	struct gf_err err = {0};
	struct rf_client c;
	size_t temps = 0;

	client(&c, t);
	if (rf_sensors(&c, &l, &err) < 0)
		fail_msg("%s: %s", vendors[v], err.msg);
	assert_true(l.n > 10);
	for (size_t i = 0; i < l.n; i++) {
		const struct gf_sensor *s = &l.v[i];

		assert_non_null(s->name);
		assert_non_null(s->type);
		if (!strcmp(s->type, "temperature") && s->reading.set) {
			assert_string_equal(s->unit, "C");
			temps++;
		}
		/* A crossing the state does not show is a note, never lost. */
		if (s->reading.set && s->uc.set && s->reading.v > s->uc.v &&
		    s->state != GF_SENSOR_CRITICAL)
			assert_non_null(s->note);
		/* Every capture is of a healthy machine: its BMC says so (issue 10 point 9). */
		assert_int_not_equal(s->state, GF_SENSOR_CRITICAL);
		if (s->state_text)
			assert_null(s->unit);
	}
	assert_true(temps > 3);
	/* Each sensor is where the BMC serves it: chassis and id, unique together (issue 21). */
	for (size_t i = 0; i < l.n; i++) {
		assert_non_null(l.v[i].chassis);
		assert_non_null(l.v[i].id);
		for (size_t j = i + 1; j < l.n; j++)
			assert_false(!strcmp(l.v[i].chassis, l.v[j].chassis) &&
				     !strcmp(l.v[i].id, l.v[j].id));
	}
	/* One sensor per vendor whose value the capture gives. */
	switch (v) {
	case 0: {
		const struct gf_sensor *s = sensor_named(&l, "CPU1 Temp");

		assert_non_null(s);
		assert_float_equal(s->reading.v, 29.0, 0.01);
		assert_float_equal(s->uc.v, 99.0, 0.01);
		assert_int_equal(s->state, GF_SENSOR_NOMINAL);
		break;
	}
	case 1: {
		/* Served as an altitude in Pa: the unit says what it is. */
		const struct gf_sensor *s = sensor_named(&l, "HGX Chassis 0 AltitudePressure 0");

		assert_non_null(sensor_named(&l, "TEMP_CPU0"));
		assert_non_null(s);
		assert_string_equal(s->type, "pressure");
		assert_string_equal(s->unit, "Pa");
		assert_float_equal(s->reading.v, 101900, 0.01);
		assert_string_equal(s->chassis, "HGX_Chassis_0");
		/* The legacy Power entry and the Sensor of the same name, linked by its Id: one. */
		assert_int_equal(sensors_named(&l, "VOLT_12V"), 1);
		break;
	}
	case 2: {
		/* Lenovo reports system power as "Current" in "Watts": the unit decides. */
		const struct gf_sensor *s = sensor_named(&l, "Sys Power");

		assert_non_null(s);
		assert_string_equal(s->type, "power");
		assert_string_equal(s->unit, "W");
		/* Airflow in CFM without a ReadingType keeps its reading and unit. */
		s = sensor_named(&l, "System Air Flow");
		assert_non_null(s);
		assert_true(s->reading.set);
		assert_float_equal(s->reading.v, 180, 0.01);
		assert_string_equal(s->unit, "CFM");
		assert_string_equal(s->type, "airflow");
		/* Thermal and the Sensors collection both show it, unlinked: one sensor. */
		assert_int_equal(sensors_named(&l, "Ambient Temp"), 1);
		break;
	}
	case 3:
		assert_non_null(sensor_named(&l, "System Board Inlet Temp"));
		/* Both supplies' input power sensors share a name: two sensors, not one. */
		assert_int_equal(sensors_named(&l, "InputPowerSensor"), 2);
		assert_int_equal(sensors_named(&l, "CPU1 Temp"), 1);
		break;
	default: {
		const struct gf_sensor *s = sensor_named(&l, "01-Inlet Ambient");

		assert_non_null(s);
		assert_float_equal(s->unr.v, 47.0, 0.01);
		break;
	}
	}
	gf_sensor_list_release(&l);
	rf_client_release(&c);
	tree_free(t);
}

static void test_sensor_states(void **state)
{
	struct gf_sensor_list l = {0};
	json_t *seen = json_object();
	json_error_t je;
	json_t *docs = json_loads(
		"[{\"Name\":\"hot\",\"ReadingType\":\"Temperature\",\"Reading\":95,"
		"  \"Thresholds\":{\"UpperCaution\":{\"Reading\":80},\"UpperCritical\":{\"Reading\":90}},"
		"  \"Status\":{\"Health\":\"OK\",\"State\":\"Enabled\"}},"
		" {\"Name\":\"warm\",\"ReadingType\":\"Temperature\",\"Reading\":85,"
		"  \"Thresholds\":{\"UpperCaution\":{\"Reading\":80},\"UpperCritical\":{\"Reading\":90}}},"
		" {\"Name\":\"ok\",\"ReadingType\":\"Rotational\",\"Reading\":5000,"
		"  \"Thresholds\":{\"LowerCritical\":{\"Reading\":500}}},"
		" {\"Name\":\"slow\",\"ReadingType\":\"Rotational\",\"Reading\":100,"
		"  \"Thresholds\":{\"LowerCritical\":{\"Reading\":500}}},"
		" {\"Name\":\"told\",\"ReadingType\":\"Voltage\",\"Reading\":12,"
		"  \"Status\":{\"Health\":\"Critical\"}},"
		" {\"Name\":\"gone\",\"ReadingType\":\"Power\",\"Reading\":7,"
		"  \"Status\":{\"State\":\"Absent\",\"Health\":\"Critical\"}},"
		" {\"Name\":\"psu fail\",\"ReadingType\":null,\"ReadingUnits\":\"\",\"Reading\":0,"
		"  \"Status\":{\"Health\":\"Critical\"}},"
		" {\"Name\":\"hot\",\"ReadingType\":\"Temperature\",\"Reading\":1},"
		" {\"Name\":7,\"Id\":\"byid\",\"ReadingType\":[],\"Reading\":\"x\","
		"  \"Thresholds\":[1],\"Status\":\"OK\"},"
		" {\"ReadingType\":\"Temperature\"}, 3, null,"
		" {\"Name\":\"energy\",\"ReadingType\":\"EnergyJoules\",\"Reading\":1928404.186,"
		"  \"Thresholds\":{\"UpperCritical\":{\"Reading\":272850}}},"
		" {\"Name\":\"energy told\",\"ReadingType\":\"EnergyJoules\",\"Reading\":1,"
		"  \"Status\":{\"Health\":\"Warning\"}}]",
		0, &je);
	size_t i;
	json_t *o;

	assert_non_null(docs);
	json_array_foreach(docs, i, o)
		rf_sensor_one(o, seen, &l);
	/* The nameless ones are not added; the second "hot" has no identity that makes it the first. */
	assert_int_equal(l.n, 11);
	/* The BMC says OK: its judgement rules, the crossing is a note. */
	assert_int_equal(sensor_named(&l, "hot")->state, GF_SENSOR_NOMINAL);
	assert_string_equal(sensor_named(&l, "hot")->note,
			    "reading beyond upper_critical (90); the bmc reports health OK");
	/* No Health: the thresholds decide; never for a counter. */
	assert_int_equal(sensor_named(&l, "warm")->state, GF_SENSOR_WARNING);
	assert_null(sensor_named(&l, "warm")->note);
	assert_int_equal(sensor_named(&l, "energy")->state, GF_SENSOR_NOMINAL);
	assert_string_equal(
		sensor_named(&l, "energy")->note,
		"reading beyond upper_critical (272850); a counter: thresholds do not judge it");
	assert_int_equal(sensor_named(&l, "energy told")->state, GF_SENSOR_WARNING);
	assert_null(sensor_named(&l, "energy told")->note);
	assert_int_equal(sensor_named(&l, "ok")->state, GF_SENSOR_NOMINAL);
	assert_string_equal(sensor_named(&l, "ok")->type, "fan");
	assert_int_equal(sensor_named(&l, "slow")->state, GF_SENSOR_CRITICAL);
	assert_int_equal(sensor_named(&l, "told")->state, GF_SENSOR_CRITICAL);
	assert_false(sensor_named(&l, "gone")->reading.set);
	assert_int_equal(sensor_named(&l, "gone")->state, GF_SENSOR_UNKNOWN);
	assert_int_equal(sensor_named(&l, "psu fail")->state, GF_SENSOR_CRITICAL);
	assert_null(sensor_named(&l, "psu fail")->unit);
	assert_string_equal(sensor_named(&l, "byid")->type, "other");
	assert_false(sensor_named(&l, "byid")->reading.set);
	gf_sensor_list_release(&l);
	json_decref(docs);

	/* Legacy documents of the wrong shapes. */
	docs = json_loads("{\"Temperatures\":{\"x\":1},\"Fans\":[1,{\"Name\":\"f\",\"Reading\":\"9\"}],"
			  "\"Voltages\":\"no\",\"PowerSupplies\":[{\"Status\":{\"State\":\"Absent\"}}],"
			  "\"PowerControl\":[{\"PowerConsumedWatts\":[]}]}",
			  0, &je);
	assert_non_null(docs);
	rf_sensors_thermal(docs, seen, &l);
	rf_sensors_power(docs, seen, &l);
	assert_int_equal(l.n, 3);
	assert_false(sensor_named(&l, "f")->reading.set);
	assert_string_equal(sensor_named(&l, "Power Supply ?")->state_text, "absent");
	assert_false(sensor_named(&l, "Power Control 0")->reading.set);
	gf_sensor_list_release(&l);
	json_decref(docs);
	json_decref(seen);
}

/* ---- event log ---------------------------------------------------------- */

static const char *const sel_logs[] = {"Log1", "SEL", NULL, "Sel", "IML"};

static void test_sel(void **state)
{
	size_t v = vendor_index(state);
	struct tree *t = tree_load(vendors[v]);
	struct gf_sel_list l = {0};
	struct gf_err err = {0};
	struct rf_client c;
	json_t *log = NULL, *entries;
	const char *key;
	json_t *r;

	client(&c, t);
	if (rf_sel_list(&c, &l, &err) < 0)
		fail_msg("%s: %s", vendors[v], err.msg);
	/* The log the dialect wants first; Lenovo's SEL has no Entries in some releases. */
	json_object_foreach(t->res, key, r) {
		const char *id = rf_str(r, "Id");
		const char *want = sel_logs[v];

		if (!rf_link(r, "Entries") || !strstr(key, "/LogServices/"))
			continue;
		if (v == 2 && !want)
			want = rf_link(json_object_get(t->res,
						       "/redfish/v1/Systems/1/LogServices/SEL"),
				       "Entries")
				       ? "SEL"
				       : "PlatformLog";
		if (id && !strcmp(id, want) && !log)
			log = r;
	}
	assert_non_null(log);
	entries = json_object_get(t->res, rf_link(log, "Entries"));
	assert_int_equal(l.n, json_array_size(json_object_get(entries, "Members")));
	for (size_t i = 0; i < l.n; i++) {
		assert_non_null(l.v[i].id);
		if (i && l.v[i].has_time && l.v[i - 1].has_time)
			assert_true(l.v[i - 1].time <= l.v[i].time);
	}
	gf_sel_list_release(&l);
	rf_client_release(&c);
	tree_free(t);
}

static void test_sel_pick(void **state)
{
	json_error_t je;
	json_t *svcs = json_loads(
		"[{\"Id\":\"Journal\",\"Entries\":{\"@odata.id\":\"/j\"}},"
		" {\"Id\":\"SEL\"},"
		" {\"Id\":\"IEL\",\"Entries\":{\"@odata.id\":\"/i\"}},"
		" {\"Id\":\"IML\",\"Entries\":{\"@odata.id\":\"/m\"}},"
		" {\"Id\":\"Odd\",\"LogEntryType\":\"SEL\",\"Entries\":{\"@odata.id\":\"/o\"}}, 5]",
		0, &je);
	json_t *only_odd = json_loads("[{\"Id\":\"Odd\",\"LogEntryType\":\"SEL\","
				      "\"Entries\":{\"@odata.id\":\"/o\"}}, {\"Id\":\"x\"}]",
				      0, &je);

	assert_non_null(svcs);
	/* HPE wants IML before IEL; an SEL without Entries is passed over. */
	assert_int_equal(rf_sel_pick(rf_dialect_by_name("hpe"), svcs, NULL), 3);
	assert_int_equal(rf_sel_pick(rf_dialect_by_name("nvidia"), svcs, NULL), 3);
	/* --log NAME wins, case-insensitive, even without Entries (the caller says so). */
	assert_int_equal(rf_sel_pick(rf_dialect_by_name("hpe"), svcs, "iel"), 2);
	assert_int_equal(rf_sel_pick(rf_dialect_by_name("hpe"), svcs, "SEL"), 1);
	assert_int_equal(rf_sel_pick(rf_dialect_by_name("hpe"), svcs, "nope"), -1);
	assert_int_equal(rf_sel_pick(rf_dialect_by_name("generic"), only_odd, NULL), 0);
	assert_int_equal(rf_sel_pick(NULL, svcs, NULL), 3);
	assert_int_equal(rf_sel_pick(NULL, NULL, NULL), -1);
	json_decref(svcs);
	json_decref(only_odd);
}

static void test_sel_entry(void **state)
{
	struct gf_sel_list l = {0};
	json_error_t je;
	json_t *e = json_loads(
		"[{\"Id\":\"7\",\"Created\":\"1970-01-01T00:05:00Z\",\"EntryCode\":\"Deassert\","
		"  \"Severity\":\"Warning\",\"SensorType\":\"Temperature\",\"Message\":\" hot \","
		"  \"Links\":{\"OriginOfCondition\":{\"@odata.id\":\"/redfish/v1/Chassis/1/Sensors/T1\"}}},"
		" {\"@odata.id\":\"/x/Entries/9\",\"EventTimestamp\":\"2024-01-01T00:00:00Z\","
		"  \"Oem\":{\"Hpe\":{\"Severity\":\"Caution\"}},\"SensorNumber\":12,"
		"  \"OemSensorType\":\"Fan\"},"
		" {\"Severity\":\"Critical\",\"Created\":42,\"Message\":[1]}, \"x\"]",
		0, &je);
	size_t i;
	json_t *o;

	assert_non_null(e);
	json_array_foreach(e, i, o)
		rf_sel_entry(o, &l);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[0].id, "7");
	assert_false(l.v[0].has_time);
	assert_string_equal(l.v[0].time_note, "pre-init");
	assert_true(l.v[0].deassertion);
	assert_int_equal(l.v[0].severity, GF_SEV_WARNING);
	assert_string_equal(l.v[0].sensor, "T1");
	assert_string_equal(l.v[0].event, "hot");
	assert_string_equal(l.v[1].id, "9");
	assert_true(l.v[1].has_time);
	assert_int_equal(l.v[1].severity, GF_SEV_WARNING);
	assert_string_equal(l.v[1].sensor, "#12");
	assert_string_equal(l.v[1].sensor_type, "Fan");
	assert_null(l.v[2].id);
	assert_false(l.v[2].has_time);
	assert_null(l.v[2].event);
	assert_int_equal(l.v[2].severity, GF_SEV_CRITICAL);
	gf_sel_list_release(&l);
	json_decref(e);
}

/* Vendor Oem places and shared names come from the dialect tables, not from the walkers. */
static void test_oem_quirks(void **state)
{
	struct gf_sel_list el = {0};
	struct gf_sensor_list sl = {0};
	json_t *seen = json_object();
	json_error_t je;
	json_t *docs = json_loads(
		"{\"entry\":{\"Id\":\"1\",\"Oem\":{\"Supermicro\":{\"RawEventData\":"
		"   {\"SensorName\":\"PSU2 Status\"}}},\"SensorNumber\":7},"
		" \"badentry\":{\"Id\":\"2\",\"Oem\":{\"Supermicro\":{\"RawEventData\":"
		"   {\"SensorName\":5}}, \"Hpe\":{\"Severity\":[\"Critical\"]}},\"SensorNumber\":7},"
		" \"discrete\":{\"Name\":\"Chassis Intru\",\"ReadingType\":\"Percent\","
		"   \"ReadingUnits\":\"\",\"Status\":{\"Health\":\"OK\",\"State\":\"Enabled\"},"
		"   \"Oem\":{\"Supermicro\":{\"SensorValue\":\"Chassis Intrusion\"}}},"
		" \"psus\":[{\"Name\":\"HpeServerPowerSupply\",\"MemberId\":\"0\"},"
		"          {\"Name\":\"HpeServerPowerSupply\",\"MemberId\":\"1\"}]}",
		0, &je);
	size_t i;
	json_t *o;

	assert_non_null(docs);
	/* Every dialect that names one has its path looked at; nothing else is. */
	assert_string_equal(rf_oem_str(json_object_get(docs, "entry"), RF_OEM_SEL_SENSOR),
			    "PSU2 Status");
	assert_null(rf_oem_str(json_object_get(docs, "entry"), RF_OEM_SENSOR_TEXT));
	assert_null(rf_oem_str(json_object_get(docs, "badentry"), RF_OEM_SEL_SENSOR));
	assert_null(rf_oem_str(json_object_get(docs, "badentry"), RF_OEM_SEL_SEVERITY));
	assert_null(rf_oem_str(json_object_get(docs, "entry"), RF_OEM_NFIELDS));
	assert_null(rf_oem_str(NULL, RF_OEM_SEL_SENSOR));
	for (size_t d = 0; rf_dialects[d]; d++)
		for (int f = 0; f < RF_OEM_NFIELDS; f++)
			if (rf_dialects[d]->oem[f])
				assert_true(strncmp(rf_dialects[d]->oem[f], "Oem.", 4) == 0);
	assert_true(rf_psu_name_shared("HpeServerPowerSupply"));
	assert_false(rf_psu_name_shared("PSU1"));
	assert_false(rf_psu_name_shared(NULL));

	rf_sel_entry(json_object_get(docs, "entry"), &el);
	rf_sel_entry(json_object_get(docs, "badentry"), &el);
	assert_int_equal(el.n, 2);
	assert_string_equal(el.v[0].sensor, "PSU2 Status");
	/* The Oem name of the wrong type: the sensor number stands in. */
	assert_string_equal(el.v[1].sensor, "#7");
	assert_int_equal(el.v[1].severity, GF_SEV_INFO);

	rf_sensor_one(json_object_get(docs, "discrete"), seen, &sl);
	json_array_foreach(json_object_get(docs, "psus"), i, o)
		rf_sensor_psu(o, seen, &sl);
	assert_int_equal(sl.n, 3);
	assert_string_equal(sl.v[0].state_text, "Chassis Intrusion");
	assert_null(sl.v[0].unit);
	/* Two supplies with one shared Name are two sensors, told apart by MemberId. */
	assert_string_equal(sl.v[1].name, "Power Supply 0");
	assert_string_equal(sl.v[2].name, "Power Supply 1");
	gf_sensor_list_release(&sl);
	gf_sel_list_release(&el);
	json_decref(seen);
	json_decref(docs);
}

static void test_sel_clear(void **state)
{
	struct tree *t = tree_load(vendors[3]);
	struct gf_err err = {0};
	struct rf_client c;

	client(&c, t);
	assert_int_equal(rf_sel_clear(&c, &err), 0);
	assert_int_equal(json_array_size(t->sent), 1);
	assert_string_equal(rf_str(json_array_get(t->sent, 0), "path"),
			    "/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Sel/Actions/"
			    "LogService.ClearLog");
	/* A log without a ClearLog action is unsupported, and says so. */
	c.log_name = "Lclog";
	assert_int_equal(rf_sel_clear(&c, &err), GF_E_NODE);
	assert_int_equal(err.kind, GF_EK_UNSUPPORTED);
	c.log_name = "NoSuchLog";
	assert_int_equal(rf_sel_clear(&c, &err), GF_E_NODE);
	assert_non_null(strstr(err.msg, "Sel"));
	rf_client_release(&c);
	tree_free(t);
}

/* ---- hardware ----------------------------------------------------------- */

/* RF_WALK_KEEP: a collection read once per client, kept apart by flags. */
static void test_kept_collections(void **state)
{
	struct tree *t = tree_load("nvidia-dgx-h100");
	struct gf_err err = {0};
	struct rf_client c;
	json_t *a = NULL, *b = NULL, *refs = NULL, *svc = NULL, *fw = NULL;
	unsigned gets;

	(void)state;
	client(&c, t);
	gets = t->gets;
	assert_int_equal(rf_collection(&c, "/redfish/v1/Systems", RF_WALK_KEEP, &a, &err), 0);
	assert_true(t->gets > gets);
	gets = t->gets;
	assert_int_equal(rf_collection(&c, "/redfish/v1/Systems", RF_WALK_KEEP, &b, &err), 0);
	assert_int_equal(t->gets, gets); /* nothing asked again */
	assert_ptr_equal(a, b);
	assert_int_equal(rf_collection(&c, "/redfish/v1/Systems", RF_WALK_REFS | RF_WALK_KEEP,
				       &refs, &err),
			 0);
	assert_int_equal(t->gets, gets + 1); /* references are kept apart */
	assert_ptr_not_equal(refs, a);
	/* Without KEEP, read again. */
	json_decref(b);
	assert_int_equal(rf_collection(&c, "/redfish/v1/Systems", RF_WALK_FETCH, &b, &err), 0);
	assert_true(t->gets > gets + 1);
	assert_true(json_equal(a, b));
	/* A service that ignores $select answers the whole UpdateService: the inventory is read after. */
	assert_true(c.deep);
	assert_int_equal(rf_fetch_with_members(&c, "/redfish/v1/UpdateService", "FirmwareInventory",
					       RF_WALK_EXPAND, &svc, &fw, &err),
			 0);
	assert_non_null(svc);
	assert_int_equal(json_array_size(fw),
			 json_array_size(json_object_get(
				 json_object_get(t->res,
						 "/redfish/v1/UpdateService/FirmwareInventory"),
				 "Members")));
	json_decref(svc);
	json_decref(fw);
	json_decref(a);
	json_decref(b);
	json_decref(refs);
	rf_client_release(&c);
	tree_free(t);
}

static void test_hardware(void **state)
{
	size_t v = vendor_index(state);
	struct tree *t = tree_load(vendors[v]);
	struct gf_hardware h = {0};
	struct gf_err err = {0};
	struct rf_client c;
	json_t *systems, *main_sys = NULL;
	size_t i;
	json_t *m;

	client(&c, t);
	if (rf_hardware(&c, &h, &err) < 0)
		fail_msg("%s: %s", vendors[v], err.msg);
	systems = json_object_get(json_object_get(t->res, "/redfish/v1/Systems"), "Members");
	/* The main System: the first that can be reset, else the first. */
	json_array_foreach(systems, i, m) {
		json_t *s = json_object_get(t->res, rf_odata_id(m));

		if (rf_obj(rf_obj(s, "Actions"), "#ComputerSystem.Reset")) {
			main_sys = s;
			break;
		}
		if (!main_sys)
			main_sys = s;
	}
	assert_non_null(main_sys);
	assert_string_equal(h.system.model, rf_str(main_sys, "Model"));
	assert_string_equal(h.system.serial, rf_str(main_sys, "SerialNumber"));
	assert_string_equal(h.system.uuid, rf_str(main_sys, "UUID"));
	assert_true(h.memory_gib.set);
	assert_true(h.ncpus >= 2);
	assert_non_null(h.chassis.serial);
	if (v <= 2) {
		assert_int_equal(h.ngpus, 8);
		for (size_t g = 0; g < h.ngpus; g++) {
			assert_non_null(h.gpus[g].serial);
			assert_non_null(h.gpus[g].firmware);
			assert_int_equal(h.gpus[g].index, (int)g + 1);
		}
	} else if (v == 3) {
		assert_int_equal(h.ngpus, 1); /* the R750's PCIe H100 */
	} else {
		assert_int_equal(h.ngpus, 0);
	}
	gf_hardware_release(&h);
	rf_client_release(&c);
	tree_free(t);
}

/* ---- power and boot ----------------------------------------------------- */

static void test_reset_plan(void **state)
{
	json_t *dgx = json_pack("[ssss]", "ForceOff", "ForceRestart", "GracefulShutdown", "On");
	json_t *weird = json_pack("{s:s}", "On", "yes");
	json_t *none = json_array();
	const char *steps[2];

	assert_int_equal(rf_reset_plan(GF_POWER_OP_CYCLE, dgx, steps), 2);
	assert_string_equal(steps[0], "ForceOff");
	assert_string_equal(steps[1], "On");
	assert_int_equal(rf_reset_plan(GF_POWER_OP_NMI, dgx, steps), 0);
	assert_int_equal(rf_reset_plan(GF_POWER_OP_SOFT, dgx, steps), 1);
	assert_string_equal(steps[0], "GracefulShutdown");
	assert_int_equal(rf_reset_plan(GF_POWER_OP_CYCLE, NULL, steps), 1);
	assert_string_equal(steps[0], "PowerCycle");
	/* Allowed values that are not an array say nothing: try the usual type. */
	assert_int_equal(rf_reset_plan(GF_POWER_OP_ON, weird, steps), 1);
	assert_string_equal(steps[0], "On");
	assert_int_equal(rf_reset_plan(GF_POWER_OP_ON, none, steps), 0);
	assert_int_equal(rf_reset_plan((enum gf_power_op)99, NULL, steps), 0);
	json_decref(dgx);
	json_decref(weird);
	json_decref(none);
}

static void test_power(void **state)
{
	size_t v = vendor_index(state);
	struct tree *t = tree_load(vendors[v]);
	struct gf_err err = {0};
	struct rf_client c;
	enum gf_power p;
	json_t *sys = NULL, *allowed = NULL;

	client(&c, t);
	assert_int_equal(rf_power_get(&c, &p, &err), 0);
	assert_int_equal(p, GF_POWER_ON);
	/* Supermicro and DGX list the types only in ActionInfo. */
	assert_int_equal(rf_main_system(&c, &sys, &err), 0);
	assert_int_equal(rf_reset_allowed(&c, sys, &allowed, &err), 0);
	assert_true(json_array_size(allowed) >= 4);
	assert_int_equal(rf_power_set(&c, GF_POWER_OP_OFF, &err), 0);
	assert_int_equal(rf_power_get(&c, &p, &err), 0);
	assert_int_equal(p, GF_POWER_OFF);
	json_array_clear(t->sent);
	assert_int_equal(rf_power_set(&c, GF_POWER_OP_CYCLE, &err), 0);
	assert_int_equal(rf_power_get(&c, &p, &err), 0);
	assert_int_equal(p, GF_POWER_ON);
	/* Where PowerCycle is not allowed (DGX, Lenovo, HPE): ForceOff, then On. */
	{
		bool cycle = false;
		size_t i;
		json_t *a;

		json_array_foreach(allowed, i, a)
			cycle = cycle || !strcmp(json_string_value(a), "PowerCycle");
		assert_int_equal(json_array_size(t->sent), cycle ? 1 : 2);
		assert_string_equal(rf_get_str(json_array_get(t->sent, 0), "body.ResetType"),
				    cycle ? "PowerCycle" : "ForceOff");
	}
	if (v == 1) {
		assert_int_equal(rf_power_set(&c, GF_POWER_OP_NMI, &err), GF_E_NODE);
		assert_int_equal(err.kind, GF_EK_UNSUPPORTED);
	}
	json_decref(allowed);
	json_decref(sys);
	rf_client_release(&c);
	tree_free(t);
}

static void test_boot(void **state)
{
	size_t v = vendor_index(state);
	struct tree *t = tree_load(vendors[v]);
	struct gf_boot b, want = {GF_BOOT_PXE, false, GF_BOOT_MODE_UNSET};
	struct gf_err err = {0};
	struct rf_client c;
	json_t *sys = NULL, *patch;
	const char *etag;

	client(&c, t);
	assert_int_equal(rf_main_system(&c, &sys, &err), 0);
	etag = rf_str(sys, "@odata.etag");
	assert_int_equal(rf_boot_set(&c, &want, &err), 0);
	patch = json_array_get(t->sent, 0);
	assert_string_equal(rf_str(patch, "method"), "PATCH");
	assert_string_equal(rf_get_str(patch, "body.Boot.BootSourceOverrideTarget"), "Pxe");
	assert_string_equal(rf_get_str(patch, "body.Boot.BootSourceOverrideEnabled"), "Once");
	assert_null(rf_get(patch, "body.Boot.BootSourceOverrideMode"));
	/* If-Match carries the ETag where the resource has one. */
	if (etag)
		assert_string_equal(rf_str(patch, "if_match"), etag);
	else
		assert_null(rf_str(patch, "if_match"));
	assert_int_equal(rf_boot_get(&c, &b, &err), 0);
	assert_int_equal(b.dev, GF_BOOT_PXE);
	assert_false(b.persistent);

	/* Lenovo allows no Continuous override. */
	want = (struct gf_boot){GF_BOOT_BIOS, true, GF_BOOT_MODE_UEFI};
	if (v == 2) {
		assert_int_equal(rf_boot_set(&c, &want, &err), GF_E_NODE);
		assert_int_equal(err.kind, GF_EK_UNSUPPORTED);
	} else {
		assert_int_equal(rf_boot_set(&c, &want, &err), 0);
		assert_int_equal(rf_boot_get(&c, &b, &err), 0);
		assert_int_equal(b.dev, GF_BOOT_BIOS);
		assert_true(b.persistent);
		assert_int_equal(b.mode, GF_BOOT_MODE_UEFI);
	}
	/* A 412 (changed meanwhile) is read again and retried once. */
	json_array_clear(t->sent);
	t->fail_patch = 412;
	want = (struct gf_boot){GF_BOOT_NONE, false, GF_BOOT_MODE_UNSET};
	assert_int_equal(rf_boot_set(&c, &want, &err), 0);
	assert_int_equal(json_array_size(t->sent), 2);
	assert_string_equal(rf_get_str(json_array_get(t->sent, 1),
				       "body.Boot.BootSourceOverrideEnabled"),
			    "Disabled");
	json_decref(sys);
	rf_client_release(&c);
	tree_free(t);
}

static void test_boot_parse(void **state)
{
	struct gf_boot b;
	json_t *s = json_pack("{s:{s:s,s:s,s:s}}", "Boot", "BootSourceOverrideTarget", "Pxe",
			      "BootSourceOverrideEnabled", "Disabled", "BootSourceOverrideMode",
			      "Legacy");

	/* Supermicro's capture: a target while the override is disabled is no override. */
	rf_boot_parse(s, &b);
	assert_int_equal(b.dev, GF_BOOT_NONE);
	assert_int_equal(b.mode, GF_BOOT_MODE_LEGACY);
	json_decref(s);
	s = json_pack("{s:{s:s,s:s}}", "Boot", "BootSourceOverrideTarget", "UefiHttp",
		      "BootSourceOverrideEnabled", "Continuous");
	rf_boot_parse(s, &b);
	assert_int_equal(b.dev, GF_BOOT_OTHER);
	assert_true(b.persistent);
	assert_int_equal(b.mode, GF_BOOT_MODE_UNSET);
	json_decref(s);
	s = json_pack("{s:[]}", "Boot");
	rf_boot_parse(s, &b);
	assert_int_equal(b.dev, GF_BOOT_NONE);
	json_decref(s);
}

/* The HGX management controller as three generations name it: one key (issue 21). */
static void test_hmc_names(void **state)
{
	static const char *const names[] = {"HMC_Firmware", "HGX_FW_HMC_0", "HGX_FW_BMC_0"};
	static const char *const dialects[] = {"nvidia", "supermicro"};

	(void)state;
	for (size_t d = 0; d < 2; d++) {
		for (size_t i = 0; i < 3; i++) {
			struct gf_component_list fw = {0};
			json_t *members = json_pack("[{s:s,s:s,s:s}]", "Id", names[i], "Name",
						    "Software Inventory", "Version", "24.09");

			rf_firmware_normalize(rf_dialect_by_name(dialects[d]), members, &fw);
			assert_int_equal(fw.n, 1);
			assert_string_equal(fw.v[0].key, "hgx.bmc");
			assert_string_equal(fw.v[0].kind, "baseboard");
			assert_string_equal(fw.v[0].id, names[i]);
			gf_component_list_release(&fw);
			json_decref(members);
		}
	}
}

/* ---- hostile documents -------------------------------------------------- */

static void test_deep_documents(void **state)
{
	size_t depth = 100000;
	char *text = malloc(2 * depth + 1);
	json_t *deep, *cur, *sensor;
	struct gf_sensor_list l = {0};
	struct gf_component_list fw = {0};
	json_t *seen = json_object();

	assert_non_null(text);
	memset(text, '[', depth);
	memset(text + depth, ']', depth);
	text[2 * depth] = '\0';
	/* The parser refuses nesting past its limit instead of recursing away. */
	assert_null(json_loads(text, 0, NULL));
	free(text);

	/* Deep values where the walkers expect strings or numbers change nothing. */
	deep = json_object();
	cur = deep;
	for (int i = 0; i < 2000; i++) {
		json_t *next = json_object();

		json_object_set_new(cur, "Reading", next);
		cur = next;
	}
	sensor = json_pack("{s:s,s:s,s:O,s:O,s:O}", "Name", "deep", "ReadingType", "Temperature",
			   "Reading", deep, "Thresholds", deep, "Status", deep);
	rf_sensor_one(sensor, seen, &l);
	assert_int_equal(l.n, 1);
	assert_false(l.v[0].reading.set);
	{
		json_t *members = json_pack("[{s:s,s:O,s:O}]", "Id", "BMC", "Version", deep, "Name",
					    deep);

		rf_firmware_normalize(rf_dialect_by_name("supermicro"), members, &fw);
		assert_int_equal(fw.n, 1);
		assert_null(fw.v[0].version);
		assert_string_equal(fw.v[0].key, "bmc");
		json_decref(members);
	}
	gf_component_list_release(&fw);
	gf_sensor_list_release(&l);
	json_decref(sensor);
	json_decref(deep);
	json_decref(seen);
}

/*
 * Nesting as deep as the parser accepts, on a fan-out worker's stack (the
 * executor's default), through what a worker does with it: parse, copy,
 * plan a reset, read the System, free. A BMC's JSON is never dumped. The
 * worker only records (cmocka's asserts belong to the main thread).
 */
struct deep_run {
	struct tree *t;
	bool parsed;
	int set_rc, get_rc, hw_rc;
	enum gf_errkind set_kind;
};

static void deep_task(void *ctx, size_t i, double deadline, struct gf_result *slot)
{
	struct deep_run *d = ctx;
	size_t depth = 2040; /* jansson refuses more than 2048 */
	char *text = malloc(2 * depth + 5);
	json_t *deep, *sys;
	struct gf_hardware hw = {0};
	struct gf_err err = {0};
	struct rf_client c;
	enum gf_power p;

	if (!text)
		return;
	memset(text, '[', depth);
	memcpy(text + depth, "\"On\"", 4);
	memset(text + depth + 4, ']', depth);
	text[2 * depth + 4] = '\0';
	deep = json_loads(text, 0, NULL);
	free(text);
	d->parsed = deep != NULL;
	sys = json_object_get(d->t->res, "/redfish/v1/Systems/1");
	json_object_set_new(rf_obj(rf_obj(sys, "Actions"), "#ComputerSystem.Reset"),
			    "ResetType@Redfish.AllowableValues", deep);
	if (rf_client_init(&c, &tree_io, d->t, "node1", &err) < 0)
		return;
	d->set_rc = rf_power_set(&c, GF_POWER_OP_CYCLE, &err);
	d->set_kind = err.kind;
	d->get_rc = rf_power_get(&c, &p, &err);
	d->hw_rc = rf_hardware(&c, &hw, &err);
	gf_hardware_release(&hw);
	rf_client_release(&c);
	slot->ok = true;
}

static void test_deep_on_a_worker(void **state)
{
	struct deep_run d = {.t = tree_load("supermicro-sys-821ge-tnhr")};
	struct gf_exec_opts o = {.fanout = 1};
	struct gf_result slot;

	assert_int_equal(gf_exec_run(&o, 1, deep_task, &d, &slot, NULL, NULL, NULL), 0);
	assert_true(slot.ok);
	assert_true(d.parsed);
	/* Reset types that are not names: a broken answer, and nothing was sent. */
	assert_int_equal(d.set_rc, GF_E_NODE);
	assert_int_equal(d.set_kind, GF_EK_PROTOCOL);
	assert_int_equal(json_array_size(d.t->sent), 0);
	assert_int_equal(d.get_rc, 0);
	assert_int_equal(d.hw_rc, 0);
	gf_result_release(&slot);
	tree_free(d.t);
}

static void test_dialect_detect(void **state)
{
	json_t *root = json_pack("{s:n,s:{s:{}}}", "Vendor", "Oem", "Supermicro");

	assert_string_equal(rf_dialect_detect(root, NULL)->name, "supermicro");
	/* The System's maker outweighs the BMC's vendor (a DGX runs an AMI BMC). */
	assert_string_equal(rf_dialect_detect(root, "NVIDIA")->name, "nvidia");
	json_decref(root);
	root = json_pack("{s:s}", "Vendor", "Dell");
	assert_string_equal(rf_dialect_detect(root, NULL)->name, "dell");
	json_decref(root);
	assert_string_equal(rf_dialect_detect(NULL, NULL)->name, "generic");
	assert_string_equal(rf_dialect_detect(NULL, "Hewlett Packard Enterprise")->name, "hpe");
	assert_null(rf_dialect_by_name("nosuch"));
}

/* ---- TLS pins in the inventory ------------------------------------------ */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void test_db_pins(void **state)
{
	char dir[] = "/tmp/gf-test-pins-XXXXXX";
	struct gf_buf path = GF_BUF_INIT;
	struct gf_err err = {0};
	struct gf_db *db = NULL;
	const char *nodes[] = {"a", "b", "a"};
	const char *fps[] = {"11", "22", "33"};
	const char *clear[] = {NULL};
	char *got = NULL;

	assert_non_null(mkdtemp(dir));
	gf_buf_addf(&path, "%s/inv.db", dir);
	assert_int_equal(gf_db_open(gf_buf_str(&path), &db, &err), 0);
	assert_int_equal(gf_db_tls_pin_get(db, "a", &got, &err), 0);
	assert_null(got);
	/* One transaction; a node given twice keeps the last. */
	assert_int_equal(gf_db_tls_pin_set(db, nodes, fps, 3, &err), 0);
	assert_int_equal(gf_db_tls_pin_get(db, "a", &got, &err), 0);
	assert_string_equal(got, "33");
	free(got);
	assert_int_equal(gf_db_tls_pin_get(db, "b", &got, &err), 0);
	assert_string_equal(got, "22");
	free(got);
	assert_int_equal(gf_db_tls_pin_set(db, nodes, clear, 1, &err), 0);
	assert_int_equal(gf_db_tls_pin_get(db, "a", &got, &err), 0);
	assert_null(got);
	assert_int_equal(gf_db_tls_pin_get(db, "", &got, &err), GF_E_USAGE);
	gf_db_close(db);
	gf_buf_release(&path);
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

#define PER_VENDOR(fn)                                                                      \
	cmocka_unit_test_prestate(fn, (void *)0), cmocka_unit_test_prestate(fn, (void *)1), \
		cmocka_unit_test_prestate(fn, (void *)2),                                   \
		cmocka_unit_test_prestate(fn, (void *)3), cmocka_unit_test_prestate(fn, (void *)4)

/*
 * A push checks the image against the SHA-256 planned: refused before any
 * request when the file changed, and cut short before its last bytes when
 * it changes while it is sent (the bytes read are what is hashed).
 */
struct push_fake {
	const char *path;
	int posts;
	bool replace; /* rewrite the file (same size) once the POST starts */
	struct gf_buf seen;
};

static int push_get(void *ud, const char *path, json_t **ret, char **ret_etag, struct gf_err *err)
{
	(void)ud;
	(void)ret_etag;
	if (strcmp(path, "/redfish/v1/UpdateService") != 0)
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "no %s", path);
	*ret = json_pack("{s:s}", "MultipartHttpPushUri", "/push");
	return 0;
}

static void push_write(const char *path, char fill)
{
	FILE *f = fopen(path, "wb");
	char buf[1000];

	assert_non_null(f);
	memset(buf, fill, sizeof(buf));
	for (int i = 0; i < 100; i++)
		assert_int_equal(fwrite(buf, 1, sizeof(buf), f), sizeof(buf));
	fclose(f);
}

static int push_request(void *ud, const char *method, const char *path, const char *body,
			const struct rf_body *image, double until, struct rf_resp *ret,
			struct gf_err *err)
{
	struct push_fake *f = ud;
	char buf[16384];
	size_t got;

	(void)body;
	(void)until;
	if (strcmp(method, "GET") == 0 && strcmp(path, "/task") == 0) {
		/* The monitor the push named: the task ended. */
		*ret = (struct rf_resp){.status = 200};
		gf_buf_adds(&ret->body, "{\"TaskState\":\"Completed\"}");
		return 0;
	}
	assert_string_equal(method, "POST");
	assert_string_equal(path, "/push");
	f->posts++;
	if (f->replace)
		push_write(f->path, 'y');
	while ((got = image->read(image->ud, buf, sizeof(buf))) != 0) {
		if (got == (size_t)-1)
			return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT, "upload aborted");
		gf_buf_add(&f->seen, buf, got);
	}
	*ret = (struct rf_resp){.status = 202, .location = gf_xstrdup("/task")};
	return 0;
}

/* The multipart filename is one quoted string whatever the file's name holds. */
static void test_multipart_filename_escaped(void **state)
{
	struct gf_buf head = GF_BUF_INIT, tail = GF_BUF_INIT;

	(void)state;
	rf_update_multipart("B", "{}", "a\"b\\c\r\nX-Evil: 1%.bin", &head, &tail);
	assert_non_null(strstr(gf_buf_str(&head),
			       "filename=\"a%22b%5Cc%0D%0AX-Evil: 1%25.bin\"\r\n"));
	assert_null(strstr(gf_buf_str(&head), "\nX-Evil"));
	assert_string_equal(gf_buf_str(&tail), "\r\n--B--\r\n");
	gf_buf_release(&head);
	gf_buf_release(&tail);
}

static void test_push_checks_the_image_planned(void **state)
{
	char path[] = "/tmp/gf-test-push-XXXXXX";
	int fd = mkstemp(path);
	struct push_fake f = {.path = path};
	struct rf_io io = {push_get, NULL, NULL};
	struct rf_client c = {.io = &io, .ud = &f, .node = "n1"};
	struct rf_upd u = {.c = &c, .ud = &f, .request = push_request, .request_timeout = 5};
	char hex[GF_SHA256_HEX];
	unsigned long long size;
	struct gf_fw_push p = {.method = GF_FW_MULTIPART, .file = path, .deadline = 1e12};
	struct gf_fw_task t = {0};
	struct gf_err err = {0};

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	c.root = json_pack("{s:{s:s}}", "UpdateService", "@odata.id", "/redfish/v1/UpdateService");
	push_write(path, 'x');
	assert_int_equal(gf_sha256_file(path, &size, hex, &err), 0);
	p.size = size;
	p.sha256 = hex;

	/* Unchanged: the whole file goes. */
	assert_int_equal(rf_update_push(&u, &p, &t, &err), 0);
	assert_int_equal(f.posts, 1);
	assert_true(f.seen.len > size);
	gf_fw_task_release(&t);

	/* Changed while sent: cut short before the file's last bytes, the node fails. */
	f.replace = true;
	f.seen.len = 0;
	assert_int_equal(rf_update_push(&u, &p, &t, &err), GF_E_NODE);
	assert_int_equal(f.posts, 2);
	assert_non_null(strstr(err.msg, "changed since the rollout was planned"));
	assert_non_null(strstr(err.msg, path));
	assert_true(f.seen.len < size);
	gf_err_clear(&err);

	/* Changed before: refused, nothing sent. */
	f.replace = false;
	assert_int_equal(rf_update_push(&u, &p, &t, &err), GF_E_NODE);
	assert_int_equal(f.posts, 2);
	assert_non_null(strstr(err.msg, "sha256 "));
	gf_err_clear(&err);
	push_write(path, 'x'); /* the bytes planned, but not the size recorded */
	p.size = size + 1;
	assert_int_equal(rf_update_push(&u, &p, &t, &err), GF_E_NODE);
	assert_non_null(strstr(err.msg, "bytes, "));
	assert_int_equal(f.posts, 2);

	unlink(path);
	gf_buf_release(&f.seen);
	json_decref(c.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_time_parse),
		PER_VENDOR(test_firmware),
		PER_VENDOR(test_firmware_paged),
		cmocka_unit_test(test_firmware_dell_rename),
		cmocka_unit_test(test_firmware_collisions),
		cmocka_unit_test(test_firmware_hostile),
		cmocka_unit_test(test_json_depth_bounded),
		cmocka_unit_test(test_firmware_shared_keys),
		cmocka_unit_test(test_hmc_names),
		cmocka_unit_test(test_collection_loops),
		cmocka_unit_test(test_expand_query),
		cmocka_unit_test(test_kept_collections),
		PER_VENDOR(test_sensors),
		cmocka_unit_test(test_sensor_states),
		PER_VENDOR(test_sel),
		cmocka_unit_test(test_sel_pick),
		cmocka_unit_test(test_sel_entry),
		cmocka_unit_test(test_oem_quirks),
		cmocka_unit_test(test_sel_clear),
		PER_VENDOR(test_hardware),
		cmocka_unit_test(test_reset_plan),
		PER_VENDOR(test_power),
		PER_VENDOR(test_boot),
		cmocka_unit_test(test_boot_parse),
		cmocka_unit_test(test_deep_documents),
		cmocka_unit_test(test_deep_on_a_worker),
		cmocka_unit_test(test_dialect_detect),
		cmocka_unit_test(test_db_pins),
		cmocka_unit_test(test_push_checks_the_image_planned),
		cmocka_unit_test(test_multipart_filename_escaped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
