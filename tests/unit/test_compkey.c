/*
 * lib/compkey: the one component-key vocabulary, and the Redfish path
 * (rf_firmware_normalize) and the inventory path (gf_norm_bmc_components)
 * reading it alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/normalize.h"
#include "lib/bios.h"
#include "lib/compkey.h"
#include "redfish/rf.h"
#include "tests/unit/stub_backends.h"

static void rows_are_well_formed(void **state)
{
	(void)state;
	for (size_t r = 0; r < GF_COMPKEY_NROWS; r++) {
		const struct gf_compkey_rule *row = &gf_compkey_rules[r];

		assert_non_null(row->kind);
		if (row->key)
			assert_true(gf_norm_key_ok(row->key));
		/* Each key is spelled once. */
		for (size_t o = 0; o < r; o++)
			if (row->key && gf_compkey_rules[o].key)
				assert_string_not_equal(row->key, gf_compkey_rules[o].key);
		if (row->from == GF_COMPKEY_FROM_HOST) {
			assert_null(row->words[0]);
			continue;
		}
		assert_non_null(row->words[0]);
		assert_ptr_equal(gf_compkey_of_kind(row->kind), row);
		for (size_t w = 0; w < GF_COMPKEY_MAX_WORDS && row->words[w]; w++)
			for (const char *p = row->words[w]; *p; p++)
				assert_false(*p >= 'A' && *p <= 'Z');
	}
	assert_null(gf_compkey_of_kind("other"));
	assert_null(gf_compkey_of_kind(NULL));
	/* Host facts are told from BMC components by their key. */
	assert_true(gf_compkey_is_host("driver"));
	assert_true(gf_compkey_is_host("gpu12.vbios"));
	assert_false(gf_compkey_is_host("gpu12.firmware"));
	assert_false(gf_compkey_is_host("nic0"));
	assert_false(gf_compkey_is_host(NULL));
}

/* The vendor rows speak the same kinds as the vocabulary. */
static void dialect_kinds_are_the_vocabulary(void **state)
{
	(void)state;
	for (size_t d = 0; rf_dialects[d]; d++)
		for (size_t r = 0; rf_dialects[d]->fw[r].match; r++) {
			const char *kind = rf_dialects[d]->fw[r].kind;

			if (kind && strcmp(kind, "other") != 0 && !gf_compkey_of_kind(kind))
				fail_msg("%s: '%s' has kind '%s'", rf_dialects[d]->name,
					 rf_dialects[d]->fw[r].match, kind);
		}
	for (size_t r = 0; rf_fw_hgx[r].match; r++)
		assert_non_null(gf_compkey_of_kind(rf_fw_hgx[r].kind));
}

static void words_of_both_old_lists(void **state)
{
	(void)state;
	/* Once known only to the Redfish list. */
	assert_string_equal(gf_compkey_kind("InfiniBand HCA", NULL), "nic");
	assert_string_equal(gf_compkey_kind("BlueField-2 SmartNIC Main Card", NULL), "nic");
	assert_string_equal(gf_compkey_kind(NULL, "Mellanox_Adapter_1"), "nic");
	assert_string_equal(gf_compkey_kind("HGX baseboard", NULL), "baseboard");
	assert_string_equal(gf_compkey_kind("System Programmable Logic Device", "4"), "cpld");
	/* Known to both. */
	assert_string_equal(gf_compkey_kind("Integrated Dell Remote Access Controller", NULL),
			    "bmc");
	assert_string_equal(gf_compkey_kind("System ROM", "2"), "bios");
	assert_string_equal(gf_compkey_kind("Widget", "w1"), "other");
}

static void numbers_and_slugs(void **state)
{
	struct gf_buf b = GF_BUF_INIT;
	const char *s = "1234567890x";

	(void)state;
	assert_int_equal(gf_compkey_first_number("Bay 12"), 12);
	assert_int_equal(gf_compkey_first_number("none"), -1);
	assert_int_equal(gf_compkey_first_number(NULL), -1);
	/* Past the cap the first digits stand; every digit is consumed. */
	assert_int_equal(gf_compkey_first_number("Bay 1234567890"), 123456789);
	assert_int_equal(gf_compkey_digits(&s), 123456789);
	assert_string_equal(s, "x");
	assert_true(gf_compkey_add_fallback(&b, "nic", "--NIC.Slot 3--"));
	assert_string_equal(gf_buf_str(&b), "nic.nic-slot-3");
	gf_buf_reset(&b);
	assert_false(gf_compkey_add_slug(&b, "::"));
	assert_string_equal(gf_buf_str(&b), "x");
	gf_buf_release(&b);
}

/* The key the Redfish path gives one member of a generic BMC; *ret_kind: its kind. */
static char *redfish_key(const char *dialect, const char *id, const char *name, const char *context,
			 char **ret_kind)
{
	json_t *members = json_pack("[{s:s,s:s,s:s}]", "Id", id, "Name", name, "Version", "1");
	struct gf_component_list l = {0};
	char *key;

	if (context)
		json_object_set_new(json_array_get(members, 0), "Oem",
				    json_pack("{s:{s:s}}", "Hpe", "DeviceContext", context));
	rf_firmware_normalize(rf_dialect_by_name(dialect), members, &l);
	assert_int_equal(l.n, 1);
	key = l.v[0].key;
	l.v[0].key = NULL;
	if (ret_kind) {
		*ret_kind = l.v[0].kind;
		l.v[0].kind = NULL;
	}
	gf_component_list_release(&l);
	json_decref(members);
	return key;
}

/* The key the inventory path derives for a component that came without one. */
static char *inventory_key(const char *id, const char *name)
{
	struct gf_component c = {.id = (char *)id, .name = (char *)name, .version = (char *)"1"};
	struct gf_component_list l = {&c, 1, 0};
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_inv_set *set = gf_sweep_new_set(sw);
	char *key;

	assert_int_equal(gf_norm_bmc_components(sw, "n1", &l, NULL, "redfish", set, NULL), 0);
	assert_int_equal(set->n, 1);
	key = strdup(set->v[0].key);
	gf_sweep_free(sw);
	return key;
}

/* Both paths put a member in the same row: one kind, one family of keys. */
static void both_paths_agree(void **state)
{
	static const struct {
		const char *id, *name;
		const char *kind;    /* both paths */
		const char *rf_key;  /* Redfish: the member id stays in the key */
		const char *inv_key; /* inventory: the row's key, numbered */
	} cases[] = {
		/* The inventory once called these other.*: its words lacked them. */
		{"InfiniBand_Slot_7", "InfiniBand HCA", "nic", "nic.infiniband-slot-7", "nic7"},
		{"BlueField_3", "BlueField-3 DPU", "nic", "nic.bluefield-3", "nic3"},
		{"Mellanox_FW", "Mellanox adapter", "nic", "nic.mellanox-fw", "nic0"},
		{"CPLD_Riser", "Riser Programmable Logic", "cpld", "cpld.cpld-riser", "cpld"},
		/* A row without a numbered key: the very same key on both paths. */
		{"HGX_FW_Widget_0", "HGX widget", "baseboard", "baseboard.hgx-fw-widget-0",
		 "baseboard.hgx-fw-widget-0"},
		{"NVSwitch_Tray", "Switch tray", "baseboard", "baseboard.nvswitch-tray",
		 "baseboard.nvswitch-tray"},
		{"Widget_1", "Widget", "other", "other.widget-1", "other.widget-1"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *kind, *rk = redfish_key("generic", cases[i].id, cases[i].name, NULL, &kind);
		char *ik = inventory_key(cases[i].id, cases[i].name);
		const struct gf_compkey_rule *row = gf_compkey_of_kind(kind);

		assert_string_equal(kind, cases[i].kind);
		assert_string_equal(rk, cases[i].rf_key);
		assert_string_equal(ik, cases[i].inv_key);
		if (!row || !row->key)
			assert_string_equal(ik, rk);
		free(kind);
		free(rk);
		free(ik);
	}
}

/* One cap for numbers: the inventory once stopped at 10^6, Redfish at 10^8. */
static void big_numbers_agree(void **state)
{
	char *hpe = redfish_key("hpe", "10", "Power Supply Firmware", "Bay 1234567890", NULL);
	char *sm = redfish_key("supermicro", "PowerSupply1234567890", "Power supply", NULL, NULL);
	char *inv = inventory_key("17", "Power Supply 1234567890");

	(void)state;
	assert_string_equal(hpe, "psu123456789");
	assert_string_equal(sm, "psu123456789");
	assert_string_equal(inv, "psu123456789");
	free(hpe);
	free(sm);
	free(inv);
}

/* The default BIOS ignore list (data/bios-ignore.conf) is per dialect. */
static void bios_ignore_per_dialect(void **state)
{
	(void)state;
	assert_true(gf_bios_ignore_ndefault > 20);
	assert_true(gf_bios_ignored("dell", NULL, "bios.systemservicetag"));
	assert_false(gf_bios_ignored("hpe", NULL, "bios.systemservicetag"));
	assert_false(gf_bios_ignored(NULL, NULL, "bios.systemservicetag"));
	assert_true(gf_bios_ignored("hpe", NULL, "bios.servername"));
	assert_true(gf_bios_ignored("nvidia", NULL, "bios.bootoption742"));
	assert_false(gf_bios_ignored("supermicro", NULL, "bios.bootoption742"));
	/* every dialect's rules, and those of an unknown one */
	assert_true(gf_bios_ignored("supermicro", NULL, "bios.serialnumber"));
	assert_true(gf_bios_ignored(NULL, NULL, "bios.serverassettag"));
	/* Lenovo adapters named after their MAC address */
	assert_true(gf_bios_ignored("lenovo", NULL,
				    "bios.mellanoxnetworkadapter_a088c2c36f6e__slot15_chiptype"));
	assert_false(gf_bios_ignored("lenovo", NULL, "bios.processors_upiprefetcher"));
	assert_false(gf_bios_ignored("dell", NULL, "bios.sriovglobalenable"));
}

/* A version with a build suffix runs the catalog's; one that only starts alike does not. */
static void versions_match_by_leading_token(void **state)
{
	(void)state;
	assert_true(gf_version_matches("23.11.24", "23.11.24", false));
	assert_true(gf_version_matches("23.11.24 (build 7)", "23.11.24", false));
	assert_true(gf_version_matches("  23.11.24 build7", "23.11.24", false));
	assert_true(gf_version_matches("23.11.24(7)", "23.11.24", false));
	assert_false(gf_version_matches("23.11.241", "23.11.24", false));
	assert_false(gf_version_matches("23.11.24-1", "23.11.24", false));
	assert_false(gf_version_matches("23.11.2", "23.11.24", false));
	assert_false(gf_version_matches(NULL, "23.11.24", false));
	assert_false(gf_version_matches("x", "", false));
	assert_true(gf_version_matches("23.11.24", "23.11.24", true));
	assert_false(gf_version_matches("23.11.24 (build 7)", "23.11.24", true));
}

/* The staging slot of a component: its key and .staging, .pending or .available, nothing else. */
static void staged_slot_of_a_key(void **state)
{
	(void)state;
	assert_true(gf_compkey_is_staged_of("bmc.staging", "bmc"));
	assert_true(gf_compkey_is_staged_of("bmc.pending", "bmc"));
	assert_true(gf_compkey_is_staged_of("bios.available", "bios"));
	assert_false(gf_compkey_is_staged_of("bmc.backup", "bmc"));
	assert_false(gf_compkey_is_staged_of("bmc", "bmc"));
	assert_false(gf_compkey_is_staged_of("bmc.staging", "bios"));
	assert_false(gf_compkey_is_staged_of("bmcx.staging", "bmc"));
	assert_false(gf_compkey_is_staged_of("bmc.staging.x", "bmc"));
	assert_false(gf_compkey_is_staged_of(NULL, "bmc"));
	assert_false(gf_compkey_is_staged_of("bmc.staging", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rows_are_well_formed),
		cmocka_unit_test(dialect_kinds_are_the_vocabulary),
		cmocka_unit_test(words_of_both_old_lists),
		cmocka_unit_test(numbers_and_slugs),
		cmocka_unit_test(both_paths_agree),
		cmocka_unit_test(big_numbers_agree),
		cmocka_unit_test(bios_ignore_per_dialect),
		cmocka_unit_test(versions_match_by_leading_token),
		cmocka_unit_test(staged_slot_of_a_key),
	};

	stub_backends_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
