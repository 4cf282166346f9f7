/*
 * libFuzzer target for the Redfish walkers: the input is one JSON document
 * that stands for every resource a BMC serves. Whatever it holds, the
 * normalizers must not crash, walks must end, and firmware keys must come
 * out unique and non-empty.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "redfish/rf.h"
#include "tests/fuzz/worker.h"

struct bmc {
	json_t *doc;
	unsigned gets;
};

/* Every path answers the fuzzed document; the service root links everything to it. */
static int fz_get(void *ud, const char *path, json_t **ret, char **etag, struct gf_err *err)
{
	struct bmc *b = ud;

	if (++b->gets > 2000 || !json_is_object(b->doc)) {
		gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL, "enough");
		return GF_E_NODE;
	}
	*ret = json_incref(b->doc);
	if (etag)
		*etag = NULL;
	return 0;
}

static int fz_send(void *ud, const char *method, const char *path, const json_t *body,
		   const char *if_match, struct gf_err *err)
{
	return 0;
}

static const struct rf_io fz_io = {.get = fz_get, .send = fz_send};

static void check_keys(const struct gf_component_list *l)
{
	json_t *seen = json_object();

	for (size_t i = 0; i < l->n; i++) {
		if (!l->v[i].key || !*l->v[i].key || !l->v[i].id || !l->v[i].kind)
			abort();
		if (json_object_get(seen, l->v[i].key))
			abort();
		json_object_set_new(seen, l->v[i].key, json_true());
	}
	json_decref(seen);
}

static void pure(json_t *doc)
{
	json_t *arr = json_is_array(doc) ? doc : rf_arr(doc, "Members");
	json_t *seen = json_object();
	struct gf_sensor_list sl = {0};
	struct gf_sel_list el = {0};
	struct gf_boot boot;
	size_t i;
	json_t *o;
	double t;

	for (size_t d = 0; rf_dialects[d]; d++) {
		struct gf_component_list fw = {0};

		rf_firmware_normalize(rf_dialects[d], arr, &fw);
		check_keys(&fw);
		gf_component_list_release(&fw);
		rf_sel_pick(rf_dialects[d], arr, NULL);
		rf_sel_pick(rf_dialects[d], arr, "SEL");
	}
	rf_sensors_thermal(doc, seen, &sl);
	rf_sensors_power(doc, seen, &sl);
	rf_sensor_one(doc, seen, &sl);
	rf_sensor_fan(doc, seen, &sl);
	rf_sensor_psu(doc, seen, &sl);
	rf_sel_entry(doc, &el);
	json_array_foreach(arr, i, o) {
		rf_sensor_one(o, seen, &sl);
		rf_sel_entry(o, &el);
		if (json_is_string(o))
			rf_time_parse(json_string_value(o), &t);
	}
	rf_boot_parse(doc, &boot);
	{
		const char *steps[2];

		for (int op = 0; op <= GF_POWER_OP_NMI; op++)
			rf_reset_plan((enum gf_power_op)op, arr, steps);
	}
	gf_sensor_list_release(&sl);
	gf_sel_list_release(&el);
	json_decref(seen);
}

static void walk(json_t *doc)
{
	struct bmc b = {doc, 0};
	struct rf_client c;
	struct gf_component_list fw = {0};
	struct gf_sensor_list sl = {0};
	struct gf_sel_list el = {0};
	struct gf_hardware hw = {0};
	struct gf_boot boot, want = {GF_BOOT_PXE, true, GF_BOOT_MODE_UEFI};
	struct gf_err err = {0};
	enum gf_power p;

	if (rf_client_init(&c, &fz_io, &b, "fuzz", &err) < 0)
		return;
	c.max_members = 8;
	c.max_pages = 8;
	if (rf_firmware(&c, &fw, &err) == 0)
		check_keys(&fw);
	rf_sensors(&c, &sl, &err);
	rf_sel_list(&c, &el, &err);
	rf_sel_clear(&c, &err);
	rf_hardware(&c, &hw, &err);
	rf_power_get(&c, &p, &err);
	rf_power_set(&c, GF_POWER_OP_NMI, &err);
	rf_boot_get(&c, &boot, &err);
	rf_boot_set(&c, &want, &err);
	gf_component_list_release(&fw);
	gf_sensor_list_release(&sl);
	gf_sel_list_release(&el);
	gf_hardware_release(&hw);
	rf_client_release(&c);
}

static void fuzz_input(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);

	if (!doc)
		return;
	pure(doc);
	walk(doc);
	json_decref(doc);
}
