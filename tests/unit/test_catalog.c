/* inventory/catalog: parsing firmware catalogs, activation defaults, a node's plan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inventory/catalog.h"
#include "lib/buf.h"

/* The SHA-256 of the test image ("image"), and one no file has. */
#define IMAGE_SHA "6105d6cc76af400325e94d588ce511be5bfdbb73b437dc51eca43917d7a43e3d"
#define ZERO64 "0000000000000000000000000000000000000000000000000000000000000000"

static char dir[] = "/tmp/gf-catalog-XXXXXX";
static char catpath[256];

static int setup(void **state)
{
	char img[300];
	FILE *f;

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(catpath, sizeof(catpath), "%s/catalog.json", dir);
	snprintf(img, sizeof(img), "%s/bmc-24.12.05.fwpkg", dir);
	f = fopen(img, "w");
	if (!f)
		return -1;
	fputs("image", f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char img[300];

	(void)state;
	snprintf(img, sizeof(img), "%s/bmc-24.12.05.fwpkg", dir);
	unlink(img);
	rmdir(dir);
	return 0;
}

static int parse(const char *text, struct gf_catalog *c, struct gf_err *err)
{
	return gf_catalog_parse(catpath, text, strlen(text), c, err);
}

static void good_catalog(void **state)
{
	struct gf_catalog c = {0};
	struct gf_err err = {0};
	char want[300];

	(void)state;
	assert_int_equal(parse("{\"images\": ["
			       "{\"model\": \"DGX*\", \"component\": \"bmc\", \"version\": \"24.12.05\","
			       " \"file\": \"bmc-24.12.05.fwpkg\", \"activation\": \"bmc-reset\"},"
			       "{\"component\": \"gpu*.firmware\", \"version\": \"96.00.A5\","
			       " \"image_uri\": \"https://repo.example/hgx.fwpkg\"}]}",
			       &c, &err),
			 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.v[0].model, "DGX*");
	snprintf(want, sizeof(want), "%s/bmc-24.12.05.fwpkg", dir);
	assert_string_equal(c.v[0].file, want); /* relative to the catalog */
	assert_int_equal(c.v[0].activation, GF_ACT_BMC_RESET);
	assert_null(c.v[1].model);
	assert_null(c.v[1].file);
	assert_string_equal(c.v[1].image_uri, "https://repo.example/hgx.fwpkg");
	assert_int_equal(c.v[1].activation, GF_ACT_DEFAULT);
	gf_catalog_release(&c);
}

/* Each bad catalog: one line that names the entry and the field. */
static void bad_catalogs(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"[1,2]", "has no \"images\" list"},
		{"{\"images\": [", "is not JSON"},
		{"{\"images\": [{\"component\": \"bmc\", \"file\": \"bmc-24.12.05.fwpkg\"}]}",
		 "images[0] (component 'bmc'): 'version' is missing"},
		{"{\"images\": [{\"version\": \"1\", \"file\": \"bmc-24.12.05.fwpkg\"}]}",
		 "images[0]: 'component' is missing"},
		{"{\"images\": [{\"component\": \"bios\", \"version\": \"1\", \"file\": \"bmc-24.12.05.fwpkg\"},"
		 " {\"component\": \"bmc\", \"version\": \"2\"}]}",
		 "images[1] (component 'bmc'): 'file' or 'image_uri' is missing"},
		{"{\"images\": [{\"component\": \"bmc\", \"version\": \"2\", \"file\": \"nope.bin\"}]}",
		 "images[0] (component 'bmc'): 'file'"},
		{"{\"images\": [{\"component\": \"bmc\", \"version\": 2, \"file\": \"bmc-24.12.05.fwpkg\"}]}",
		 "images[0] (component 'bmc'): 'version' must be a non-empty string"},
		{"{\"images\": [{\"component\": \"bmc\", \"version\": \"2\", \"file\": \"bmc-24.12.05.fwpkg\","
		 " \"activation\": \"reboot\"}]}",
		 "images[0] (component 'bmc'): 'activation' must be none, bmc-reset"},
		{"{\"images\": [{\"component\": \"bmc\", \"version\": \"2\", \"fiel\": \"x\"}]}",
		 "images[0] (component 'bmc'): unknown field 'fiel'"},
		{"{\"images\": [{\"component\": \"bmc\", \"version\": \"2\", \"image_uri\": \"ftp://x\"}]}",
		 "'image_uri' must be an http:// or https:// URI"},
		{"{\"images\": [7]}", "images[0]: not an object"},
		{"{\"images\": [{\"component\": \"bmc\", \"version\": \"2\", \"file\": \"bmc-24.12.05.fwpkg\","
		 " \"sha256\": \"6105d6cc\"}]}",
		 "images[0] (component 'bmc'): 'sha256' must be 64 hex digits"},
		{"{\"images\": [{\"component\": \"bmc\", \"version\": \"2\", \"file\": \"bmc-24.12.05.fwpkg\","
		 " \"sha256\": \"" ZERO64 "\"}]}",
		 "images[0] (component 'bmc'): image '"},
		{"{\"images\": [{\"component\": \"bmc\", \"version\": \"2\", \"image_uri\": \"https://x/i\","
		 " \"sha256\": \"" IMAGE_SHA "\"}]}",
		 "images[0] (component 'bmc'): 'sha256' needs a 'file'"},
		{"{\"images\": [{\"component\": \"bmc\", \"version\": \"2\", \"file\": \"bmc-24.12.05.fwpkg\","
		 " \"sha256\": 7}]}",
		 "images[0] (component 'bmc'): 'sha256' must be a non-empty string"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gf_catalog c = {.n = 99};
		struct gf_err err = {0};

		assert_int_equal(parse(cases[i].text, &c, &err), GF_E_USAGE);
		assert_int_equal(c.n, 99); /* untouched */
		if (!strstr(err.msg, cases[i].want) || !strstr(err.msg, catpath) ||
		    strchr(err.msg, '\n'))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].want);
	}
}

/*
 * sha256: checked against the file when given (any case), and every file's
 * size and SHA-256 recorded whether given or not; a mismatch names the image
 * and both hashes.
 */
static void catalog_sha256(void **state)
{
	struct gf_catalog c = {0};
	struct gf_err err = {0};
	char upper[] = IMAGE_SHA;

	(void)state;
	for (char *p = upper; *p; p++)
		*p = (char)(*p >= 'a' && *p <= 'f' ? *p - 'a' + 'A' : *p);
	{
		char text[512];

		snprintf(text, sizeof(text),
			 "{\"images\": [{\"component\": \"bmc\", \"version\": \"2\","
			 " \"file\": \"bmc-24.12.05.fwpkg\", \"sha256\": \"%s\"},"
			 " {\"component\": \"bios\", \"version\": \"3\","
			 " \"file\": \"bmc-24.12.05.fwpkg\"},"
			 " {\"component\": \"gpu\", \"version\": \"4\","
			 " \"image_uri\": \"https://x/i\"}]}",
			 upper);
		assert_int_equal(parse(text, &c, &err), 0);
	}
	assert_string_equal(c.v[0].sha256, IMAGE_SHA); /* lower case */
	assert_string_equal(c.v[0].digest, IMAGE_SHA);
	assert_true(c.v[0].size == 5);
	assert_null(c.v[1].sha256);
	assert_string_equal(c.v[1].digest, IMAGE_SHA); /* recorded all the same */
	assert_string_equal(c.v[2].digest, "");
	gf_catalog_release(&c);

	assert_int_equal(parse("{\"images\": [{\"component\": \"bmc\", \"version\": \"2\","
			       " \"file\": \"bmc-24.12.05.fwpkg\", \"sha256\": \"" ZERO64 "\"}]}",
			       &c, &err),
			 GF_E_USAGE);
	assert_non_null(strstr(err.msg, "bmc-24.12.05.fwpkg' has sha256 " IMAGE_SHA
					", the catalog gives " ZERO64));
}

/*
 * A stored rollout's catalog: no file is read (it may be gone, or the
 * catalog's folder relative to another directory); each recorded image
 * takes the file, size and hash recorded.
 */
static void catalog_recorded(void **state)
{
	static const char text[] =
		"{\"images\": [{\"component\": \"bmc\", \"version\": \"2\", \"file\": \"gone.bin\"},"
		" {\"component\": \"bios\", \"version\": \"3\", \"file\": \"gone2.bin\"}]}";
	char f[] = "/srv/fw/bmc.bin";
	struct gf_catalog_record rec = {.image = 1, .file = f, .size = 77, .sha256 = IMAGE_SHA};
	struct gf_catalog c = {0};
	struct gf_err err = {0};

	(void)state;
	assert_int_equal(gf_catalog_parse_recorded("rel/c.json", text, strlen(text), &rec, 1, &c,
						   &err),
			 0);
	assert_string_equal(c.v[1].file, "/srv/fw/bmc.bin");
	assert_true(c.v[1].size == 77);
	assert_string_equal(c.v[1].digest, IMAGE_SHA);
	assert_string_equal(c.v[0].digest, "");
	assert_true(c.v[0].file[0] == '/'); /* absolute all the same */
	gf_catalog_release(&c);
	rec.image = 2;
	assert_int_equal(gf_catalog_parse_recorded("rel/c.json", text, strlen(text), &rec, 1, &c,
						   &err),
			 GF_E_USAGE);
}

/* A catalog named relative to the current folder: its files are recorded absolute. */
static void catalog_relative(void **state)
{
	struct gf_catalog c = {0};
	struct gf_err err = {0};
	char *cwd = getcwd(NULL, 0), want[300];
	static const char text[] = "{\"images\": [{\"component\": \"bmc\", \"version\": \"2\","
				   " \"file\": \"bmc-24.12.05.fwpkg\"}]}";

	(void)state;
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(gf_catalog_parse("catalog.json", text, strlen(text), &c, &err), 0);
	snprintf(want, sizeof(want), "%s/bmc-24.12.05.fwpkg", dir);
	assert_string_equal(c.v[0].file, want);
	assert_string_equal(c.v[0].digest, IMAGE_SHA);
	gf_catalog_release(&c);
	assert_int_equal(chdir(cwd), 0);
	free(cwd);
}

static void activation_defaults(void **state)
{
	(void)state;
	assert_int_equal(gf_activation_default("supermicro", "bmc"), GF_ACT_BMC_RESET);
	assert_int_equal(gf_activation_default("dell", "bmc"), GF_ACT_BMC_RESET);
	assert_int_equal(gf_activation_default("nvidia", "gpu"), GF_ACT_HOST_POWER_CYCLE);
	assert_int_equal(gf_activation_default(NULL, "bios"), GF_ACT_HOST_REBOOT);
	assert_int_equal(gf_activation_default("hpe", "psu"), GF_ACT_NONE);
	assert_int_equal(gf_activation_default(NULL, NULL), GF_ACT_HOST_REBOOT);
	assert_string_equal(gf_activation_name(GF_ACT_HOST_POWER_CYCLE), "host-power-cycle");
	assert_int_equal(gf_activation_parse("bmc-reset"), GF_ACT_BMC_RESET);
	assert_int_equal(gf_activation_parse("default"), -1);
	assert_true(gf_activation_is_host(GF_ACT_HOST_REBOOT));
	assert_false(gf_activation_is_host(GF_ACT_BMC_RESET));
}

static void add_comp(struct gf_component_list *l, const char *key, const char *kind,
		     const char *version)
{
	struct gf_component *c = gf_component_list_add(l);

	c->key = gf_xstrdup(key);
	c->id = gf_xstrdup(key);
	c->kind = gf_xstrdup(kind);
	c->version = version ? gf_xstrdup(version) : NULL;
}

static void plan(void **state)
{
	struct gf_catalog c = {0};
	struct gf_component_list l = {0};
	struct gf_plan p = {0};
	struct gf_err err = {0};

	(void)state;
	assert_int_equal(
		parse("{\"images\": ["
		      "{\"model\": \"DGXH100\", \"component\": \"bmc\", \"version\": \"24.12.05\","
		      " \"file\": \"bmc-24.12.05.fwpkg\"},"
		      "{\"component\": \"bmc\", \"version\": \"9.9\", \"file\": \"bmc-24.12.05.fwpkg\"},"
		      "{\"component\": \"gpu*.firmware\", \"version\": \"96.00.A5\","
		      " \"image_uri\": \"https://repo.example/hgx.fwpkg\", \"activation\": \"none\"}]}",
		      &c, &err),
		0);
	add_comp(&l, "bmc", "bmc", "24.01.01");
	add_comp(&l, "bios", "bios", "1.0");
	add_comp(&l, "gpu0.firmware", "gpu", "96.00.A5");
	add_comp(&l, "gpu1.firmware", "gpu", "96.00.A1");

	gf_catalog_plan(&c, "DGXH100", "nvidia", &l, NULL, &p);
	assert_int_equal(p.n, 3); /* bios: no image */
	assert_string_equal(p.v[0].component, "bmc");
	assert_string_equal(p.v[0].from, "24.01.01");
	assert_string_equal(p.v[0].to, "24.12.05");
	assert_int_equal(p.v[0].image, 0);
	assert_false(p.v[0].skip);
	assert_int_equal(p.v[0].activation, GF_ACT_BMC_RESET); /* the default */
	assert_true(p.v[1].skip);
	assert_false(p.v[2].skip);
	assert_int_equal(p.v[2].image, 2);
	assert_int_equal(p.v[2].activation, GF_ACT_NONE);
	gf_plan_release(&p);

	/* Another model: the model-less image; --component narrows. */
	gf_catalog_plan(&c, "SYS-821GE", "supermicro", &l, "bmc", &p);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.v[0].image, 1);
	assert_string_equal(p.v[0].to, "9.9");
	gf_plan_release(&p);
	gf_component_list_release(&l);
	gf_catalog_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_catalog),
		cmocka_unit_test(bad_catalogs),
		cmocka_unit_test(catalog_sha256),
		cmocka_unit_test(catalog_recorded),
		cmocka_unit_test(catalog_relative),
		cmocka_unit_test(activation_defaults),
		cmocka_unit_test(plan),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
