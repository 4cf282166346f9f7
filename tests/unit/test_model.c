/* The result model's JSON shapes: components (with protocol details), hardware, boot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "host/facts.h"
#include "lib/buf.h"
#include "lib/model.h"

static char *dump(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);

	json_decref(v);
	return s;
}

static void test_component_without_details(void **state)
{
	struct gf_component_list l = {0};
	struct gf_component *c = gf_component_list_add(&l);
	char *s;

	c->key = gf_xstrdup("bmc");
	c->id = gf_xstrdup("bmc");
	c->name = gf_xstrdup("BMC");
	c->version = gf_xstrdup("1.74");
	s = dump(gf_components_to_json(&l));
	/* No kind means "other"; no details member at all. */
	assert_string_equal(s,
			    "[{\"key\":\"bmc\",\"id\":\"bmc\",\"name\":\"BMC\",\"kind\":\"other\","
			    "\"version\":\"1.74\",\"updateable\":false}]");
	free(s);
	gf_component_list_release(&l);
	assert_int_equal(l.n, 0);
	assert_null(l.v);
}

static void test_component_details_survive_the_list(void **state)
{
	struct gf_component_list l = {0};
	struct gf_component *c = gf_component_list_add(&l);
	json_t *o;
	char *s;

	c->key = gf_xstrdup("bmc");
	c->kind = gf_xstrdup("bmc");
	c->details = json_pack("{s:s,s:i}", "ipmi_version", "2.0", "manufacturer_id", 5703);
	o = gf_component_to_json(c);
	/* The object keeps its own reference: releasing the list must not free it. */
	gf_component_list_release(&l);
	s = dump(o);
	assert_non_null(strstr(s,
			       "\"details\":{\"ipmi_version\":\"2.0\",\"manufacturer_id\":5703}"));
	assert_non_null(strstr(s, "\"kind\":\"bmc\""));
	assert_non_null(strstr(s, "\"version\":null"));
	free(s);
}

static void test_hardware_all_members_present(void **state)
{
	struct gf_hardware h = {0};
	json_t *o;
	char *s;

	h.system.model = gf_xstrdup("HGX H100 8-GPU");
	h.product.asset_tag = gf_xstrdup("RACK1-U03");
	o = gf_hardware_to_json(&h);
	gf_hardware_release(&h);
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "system"),
							      "model")),
			    "HGX H100 8-GPU");
	assert_true(json_is_null(json_object_get(json_object_get(o, "system"), "uuid")));
	assert_true(json_is_null(json_object_get(json_object_get(o, "chassis"), "serial")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "product"),
							      "asset_tag")),
			    "RACK1-U03");
	assert_int_equal(json_array_size(json_object_get(o, "gpus")), 0);
	assert_true(json_is_null(json_object_get(o, "memory_gib")));
	s = dump(o);
	free(s);
}

static void test_boot_shapes(void **state)
{
	struct gf_boot none = {0};
	struct gf_boot pxe = {.dev = GF_BOOT_PXE, .persistent = true, .mode = GF_BOOT_MODE_UEFI};
	char *s;

	s = dump(gf_boot_to_json(&none));
	assert_non_null(strstr(s, "\"device\":\"none\""));
	assert_non_null(strstr(s, "\"persistent\":false"));
	assert_non_null(strstr(s, "\"mode\":null"));
	free(s);
	s = dump(gf_boot_to_json(&pxe));
	assert_non_null(strstr(s, "\"device\":\"pxe\""));
	assert_non_null(strstr(s, "\"persistent\":true"));
	assert_non_null(strstr(s, "\"mode\":\"uefi\""));
	free(s);
	assert_int_equal(gf_boot_dev_parse("cd"), GF_BOOT_CD);
	assert_int_equal(gf_boot_dev_parse("floppy"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_component_without_details),
		cmocka_unit_test(test_component_details_survive_the_list),
		cmocka_unit_test(test_hardware_all_members_present),
		cmocka_unit_test(test_boot_shapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
