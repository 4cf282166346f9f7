/* Renderers: table alignment, collapse, csv quoting, json/ndjson shape. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "lib/output.h"
#include "lib/result.h"

static json_t *node(const char *name, const char *power)
{
	struct gf_result r;
	json_t *o;

	gf_result_init(&r);
	r.ok = true;
	r.data = json_pack("{s:s}", "power", power);
	o = gf_result_to_json(name, "127.0.0.1", "ipmi", &r);
	gf_result_release(&r);
	return o;
}

static json_t *failed(const char *name, enum gf_errkind kind, const char *msg)
{
	struct gf_result r;
	struct gf_err e = {0};
	json_t *o;

	gf_result_init(&r);
	gf_err_set(&e, GF_E_NODE, kind, "%s", msg);
	gf_result_fail(&r, &e);
	o = gf_result_to_json(name, NULL, NULL, &r);
	gf_result_release(&r);
	return o;
}

static const struct gf_col cols[] = {{"power", "POWER"}};

static void free_objs(json_t **o, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(o[i]);
}

static void table_aligned(void **state)
{
	json_t *o[] = {node("gpu1", "on"), node("gpu10", "off")};
	struct gf_render_spec spec = {cols, 1, NULL, false, false};
	struct gf_buf b = GF_BUF_INIT;

	gf_render_table(o, 2, &spec, &b);
	assert_string_equal(gf_buf_str(&b), "NODE   POWER\ngpu1   on\ngpu10  off\n");
	gf_buf_release(&b);
	free_objs(o, 2);
}

static void table_collapse_and_error(void **state)
{
	json_t *o[] = {node("gpu1", "on"), node("gpu2", "on"), node("gpu3", "off"),
		       node("gpu4", "on"), failed("gpu5", GF_EK_AUTH, "bad password")};
	struct gf_render_spec spec = {cols, 1, NULL, true, false};
	struct gf_buf b = GF_BUF_INIT;

	gf_render_table(o, 5, &spec, &b);
	assert_string_equal(gf_buf_str(&b), "NODE        POWER  ERROR\n"
					    "gpu[1-2,4]  on\n"
					    "gpu3        off\n"
					    "gpu5        -      auth: bad password\n");
	gf_buf_release(&b);
	free_objs(o, 5);
}

/* On a terminal 36 columns wide: the wide fold above its row, the long error wrapped. */
static void table_fit_to_width(void **state)
{
	json_t *o[] = {node("gpu01", "on"),
		       node("gpu03", "on"),
		       node("gpu05", "on"),
		       node("gpu07", "on"),
		       node("gpu09", "on"),
		       node("gpu02", "off"),
		       failed("gpu11", GF_EK_TIMEOUT, "no answer from the bmc in 3 s")};
	struct gf_render_spec spec = {cols, 1, NULL, true, false};
	struct gf_buf b = GF_BUF_INIT;

	gf_render_table_fit(o, 7, &spec, 36, &b);
	assert_string_equal(gf_buf_str(&b), "NODE       POWER  ERROR\n"
					    "gpu[01,03,05,07,09]\n"
					    "(5 nodes)  on\n"
					    "gpu02      off\n"
					    "gpu11      -      timeout: no answer\n"
					    "                  from the bmc in 3\n"
					    "                  s\n");
	gf_buf_reset(&b);
	gf_render_table_fit(o, 7, &spec, 12, &b); /* the fold broken after a comma */
	assert_true(strstr(gf_buf_str(&b), "gpu[01,03,\n05,07,09]\n(5 nodes)  on\n") != NULL);
	gf_buf_reset(&b);
	gf_render_table_fit(o, 7, &spec, 0, &b); /* no terminal: as it was */
	assert_true(strstr(gf_buf_str(&b), "gpu[01,03,05,07,09]  on\n") != NULL);
	gf_buf_release(&b);
	free_objs(o, 7);
}

static void csv_quoting(void **state)
{
	json_t *o[] = {node("gpu1", "on, \"really\""), failed("gpu2", GF_EK_TIMEOUT, "no answer")};
	struct gf_render_spec spec = {cols, 1, NULL, false, false};
	struct gf_buf b = GF_BUF_INIT;

	gf_render_csv(o, 2, &spec, &b);
	assert_string_equal(gf_buf_str(&b), "node,power,error\n"
					    "gpu1,\"on, \"\"really\"\"\",\n"
					    "gpu2,-,timeout: no answer\n");
	gf_buf_release(&b);
	free_objs(o, 2);
}

static void json_shape(void **state)
{
	json_t *o[] = {node("gpu1", "on"), failed("gpu2", GF_EK_CONNECT, "refused")};
	struct gf_buf b = GF_BUF_INIT;
	json_error_t je;
	json_t *arr;

	gf_render_json(o, 2, &b);
	arr = json_loads(gf_buf_str(&b), 0, &je);
	assert_non_null(arr);
	assert_int_equal(json_array_size(arr), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "node")),
			    "gpu1");
	assert_true(json_is_true(json_object_get(json_array_get(arr, 0), "ok")));
	assert_null(json_object_get(json_array_get(arr, 0), "error"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(arr, 1),
									      "error"),
							      "kind")),
			    "connect");
	assert_true(json_is_false(json_object_get(json_array_get(arr, 1), "ok")));
	json_decref(arr);
	gf_buf_release(&b);

	gf_render_ndjson_one(o[0], &b);
	assert_non_null(strchr(gf_buf_str(&b), '\n'));
	assert_ptr_equal(strchr(gf_buf_str(&b), '\n'), gf_buf_str(&b) + b.len - 1);
	gf_buf_release(&b);
	free_objs(o, 2);
}

static void rows_key(void **state)
{
	static const struct gf_col c2[] = {{"name", "SENSOR"}, {"reading", "READING"}};
	struct gf_render_spec spec = {c2, 2, "sensors", false, false};
	struct gf_result r;
	struct gf_buf b = GF_BUF_INIT;
	json_t *o;

	gf_result_init(&r);
	r.ok = true;
	r.data = json_pack("{s:[{s:s,s:f},{s:s,s:i}]}", "sensors", "name", "Temp", "reading", 41.5,
			   "name", "Fan", "reading", 9000);
	o = gf_result_to_json("n1", NULL, NULL, &r);
	gf_render_table(&o, 1, &spec, &b);
	assert_string_equal(gf_buf_str(&b),
			    "NODE  SENSOR  READING\nn1    Temp    41.5\nn1    Fan     9000\n");
	gf_buf_release(&b);
	json_decref(o);
	gf_result_release(&r);
}

/* "a|b": the first alternative that is present and not null; CSV names the column a. */
static void column_alternatives(void **state)
{
	static const struct gf_col c2[] = {{"id", "ID"}, {"time|time_note", "TIME"}};
	struct gf_render_spec spec = {c2, 2, "entries", false, false};
	struct gf_result r;
	struct gf_buf b = GF_BUF_INIT;
	json_t *o;

	gf_result_init(&r);
	r.ok = true;
	r.data = json_pack("{s:[{s:s,s:n,s:s},{s:s,s:s},{s:s,s:n}]}", "entries", "id", "1", "time",
			   "time_note", "pre-init", "id", "2", "time", "2026-11-29T12:00:00Z", "id",
			   "3", "time");
	o = gf_result_to_json("n1", NULL, NULL, &r);
	gf_render_table(&o, 1, &spec, &b);
	assert_string_equal(gf_buf_str(&b), "NODE  ID  TIME\n"
					    "n1    1   pre-init\n"
					    "n1    2   2026-11-29T12:00:00Z\n"
					    "n1    3   -\n");
	gf_buf_release(&b);
	gf_render_csv(&o, 1, &spec, &b);
	assert_string_equal(gf_buf_str(&b), "node,id,time,error\nn1,1,pre-init,\n"
					    "n1,2,2026-11-29T12:00:00Z,\nn1,3,-,\n");
	gf_buf_release(&b);
	json_decref(o);
	gf_result_release(&r);
}

/* What a hostile BMC's string becomes on a terminal: no control byte survives. */
static void term_escape(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain BIOS 1.4 (caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80)",
		 "plain BIOS 1.4 (caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80)"},
		{"back\\slash", "back\\slash"},
		{"\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"},
		{"\x1b[2Jx", "\\x1b[2Jx"},
		{"a\tb\nc\rd", "a\\tb\\nc\\rd"},
		{"\x01\x1f\x7f", "\\x01\\x1f\\x7f"},
		{"csi \xc2\x9b"
		 "31m",
		 "csi \\u009b31m"}, /* C1 as UTF-8 */
		{"\xc2\x80\xc2\x9f\xc2\xa0", "\\u0080\\u009f\xc2\xa0"},
		{"raw \x9b"
		 "31m \x80",
		 "raw \\x9b31m \\x80"}, /* bytes that are no UTF-8 */
		{"cut \xe2\x82", "cut \\xe2\\x82"},
		{"overlong \xc0\x9b \xe0\x80\x9b", "overlong \\xc0\\x9b \\xe0\\x80\\x9b"},
		{"surrogate \xed\xa0\x80", "surrogate \\xed\\xa0\\x80"},
		{"", ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gf_buf b = GF_BUF_INIT;
		char *s = gf_term_safe(cases[i].in);

		gf_term_escape(&b, cases[i].in, "");
		assert_string_equal(gf_buf_str(&b), cases[i].out);
		assert_string_equal(s, cases[i].out);
		free(s);
		gf_buf_release(&b);
	}
	/* Messages keep their own line feeds; nothing else. */
	struct gf_buf b = GF_BUF_INIT;

	gf_term_escape(&b, "one\ntwo\x1b[2J\t", "\n");
	assert_string_equal(gf_buf_str(&b), "one\ntwo\\x1b[2J\\t");
	gf_buf_release(&b);
}

/* What a hostile BMC's string becomes in HTML: text, never markup. */
static void html_escape(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"},
		{"a&b \"q\" 'r'", "a&amp;b &quot;q&quot; &#39;r&#39;"},
		{"&amp;", "&amp;amp;"},
		{"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"},
		{"a\tb\nc\rd", "a\tb\nc\rd"},
		{"\x1b[2J\x01\x7f", "\\x1b[2J\\x01\\x7f"},
		{"", ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gf_buf b = GF_BUF_INIT;

		gf_html_escape(&b, cases[i].in);
		assert_string_equal(gf_buf_str(&b), cases[i].out);
		gf_buf_release(&b);
	}
	struct gf_buf b = GF_BUF_INIT;

	gf_html_escape(&b, NULL);
	assert_int_equal(b.len, 0);
	gf_buf_release(&b);
}

static void hostile_cells(void **state)
{
	static const struct gf_col fw[] = {{"name", "NAME"}, {"version", "VERSION"}};
	json_t *o[] = {node("n1", "on"), failed("n2", GF_EK_PROTOCOL, "bad \x1b[2J\nanswer")};
	struct gf_render_spec spec = {fw, 2, NULL, false, false};
	struct gf_buf b = GF_BUF_INIT;

	json_object_set_new(o[0], "name", json_string("BMC\x1b]0;pwned\x07"));
	json_object_set_new(o[0], "version",
			    json_string("1.0\n\xc2\x9b"
					"2J\x7f"));
	gf_render_table(o, 2, &spec, &b);
	assert_string_equal(gf_buf_str(&b), "NODE  NAME                 VERSION            ERROR\n"
					    "n1    BMC\\x1b]0;pwned\\x07  1.0\\n\\u009b2J\\x7f\n"
					    "n2    -                    -                  "
					    "protocol: bad \\x1b[2J\\nanswer\n");
	gf_buf_reset(&b);
	gf_render_csv(o, 2, &spec, &b);
	assert_string_equal(gf_buf_str(&b), "node,name,version,error\n"
					    "n1,BMC\\x1b]0;pwned\\x07,1.0\\n\\u009b2J\\x7f,\n"
					    "n2,-,-,protocol: bad \\x1b[2J\\nanswer\n");
	gf_buf_release(&b);
	/* JSON keeps the exact string. */
	char *j = gf_render_cell(json_object_get(o[0], "name"));

	assert_string_equal(j, "BMC\\x1b]0;pwned\\x07");
	free(j);
	free_objs(o, 2);
}

static void format_parse(void **state)
{
	enum gf_format f;
	struct gf_err e = {0};

	assert_int_equal(gf_format_parse("ndjson", &f, &e), 0);
	assert_int_equal(f, GF_FMT_NDJSON);
	assert_int_equal(gf_format_parse("xml", &f, &e), GF_E_USAGE);
	assert_non_null(strstr(e.msg, "'xml'"));
}

/* Prometheus sample values and label values, as the text format wants them. */
static void prom_values_and_labels(void **state)
{
	static const struct {
		double v;
		const char *want;
	} nums[] = {
		{1, "1"},        {0, "0"},           {-0.0, "-0"},
		{-3, "-3"},      {2.5, "2.5"},       {999999999999999.0, "999999999999999"},
		{1e15, "1e+15"}, {-1e15, "-1e+15"},  {1764417600.125, "1764417600.125"},
		{NAN, "NaN"},    {INFINITY, "+Inf"}, {-INFINITY, "-Inf"},
	};
	struct gf_buf b = GF_BUF_INIT;

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		b.len = 0;
		gf_prom_number(&b, nums[i].v);
		assert_string_equal(b.s, nums[i].want);
	}
	b.len = 0;
	gf_prom_label(&b, "node", "a\\b\"c\nd", true);
	gf_prom_label(&b, "x", "", false);
	gf_prom_label(&b, "y", "plain", false);
	assert_string_equal(b.s, "node=\"a\\\\b\\\"c\\nd\",x=\"\",y=\"plain\"");
	gf_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_aligned),
		cmocka_unit_test(table_collapse_and_error),
		cmocka_unit_test(csv_quoting),
		cmocka_unit_test(json_shape),
		cmocka_unit_test(rows_key),
		cmocka_unit_test(column_alternatives),
		cmocka_unit_test(table_fit_to_width), /* on a terminal */
		cmocka_unit_test(term_escape),
		cmocka_unit_test(html_escape),
		cmocka_unit_test(hostile_cells),
		cmocka_unit_test(format_parse),
		cmocka_unit_test(prom_values_and_labels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
