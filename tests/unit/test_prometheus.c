/* The Prometheus renderer of sensors: families, labels, escaping, failed nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/model.h"
#include "lib/output.h"
#include "lib/result.h"

/* A sensor as the test writes it (string literals). */
struct tsensor {
	const char *name, *type, *unit, *state_text;
	struct gf_num reading;
	enum gf_sensor_state state;
};

static char *dup(const char *s)
{
	return s ? gf_xstrdup(s) : NULL;
}

static json_t *node_with(const char *name, const struct tsensor *s, size_t n)
{
	struct gf_sensor_list l = {0};
	struct gf_result r;
	json_t *o;

	for (size_t i = 0; i < n; i++) {
		struct gf_sensor *d = gf_sensor_list_add(&l);

		d->name = dup(s[i].name);
		d->type = dup(s[i].type);
		d->unit = dup(s[i].unit);
		d->state_text = dup(s[i].state_text);
		d->reading = s[i].reading;
		d->state = s[i].state;
	}
	gf_result_init(&r);
	r.ok = true;
	r.data = json_object();
	json_object_set_new(r.data, "sensors", gf_sensors_to_json(&l));
	o = gf_result_to_json(name, "10.0.0.1", "ipmi", &r);
	gf_result_release(&r);
	gf_sensor_list_release(&l);
	return o;
}

static json_t *failed_node(const char *name, const char *msg)
{
	struct gf_result r;
	struct gf_err e = {0};
	json_t *o;

	gf_result_init(&r);
	gf_err_set(&e, GF_E_NODE, GF_EK_TIMEOUT, "%s", msg);
	gf_result_fail(&r, &e);
	o = gf_result_to_json(name, NULL, NULL, &r);
	gf_result_release(&r);
	return o;
}

static char *render(json_t **objs, size_t n)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_render_prometheus_sensors(objs, n, &b);
	for (size_t i = 0; i < n; i++)
		json_decref(objs[i]);
	return gf_buf_detach(&b);
}

static void families_and_values(void **state)
{
	struct tsensor s[] = {
		{.name = "GPU3 Temp",
		 .type = "temperature",
		 .reading = {true, 87.0},
		 .unit = "C",
		 .state = GF_SENSOR_WARNING},
		{.name = "12V",
		 .type = "voltage",
		 .reading = {true, 12.04},
		 .unit = "V",
		 .state = GF_SENSOR_NOMINAL},
		{.name = "PSU2 Status",
		 .type = "power_supply",
		 .state = GF_SENSOR_CRITICAL,
		 .state_text = "Power Supply Failure detected"},
		{.name = "FAN9", .type = "fan", .unit = "RPM", .state = GF_SENSOR_UNKNOWN},
	};
	json_t *o[] = {node_with("gpu01", s, 4)};
	char *out = render(o, 1);

	assert_string_equal(
		out,
		"# HELP gpufleet_node_up Whether the node's BMC answered the sensor read (1) or not (0).\n"
		"# TYPE gpufleet_node_up gauge\n"
		"gpufleet_node_up{node=\"gpu01\"} 1\n"
		"# HELP gpufleet_sensor_value Sensor reading from the BMC, in the unit of the unit label.\n"
		"# TYPE gpufleet_sensor_value gauge\n"
		"gpufleet_sensor_value{node=\"gpu01\",sensor=\"GPU3 Temp\",type=\"temperature\",unit=\"C\"} 87\n"
		"gpufleet_sensor_value{node=\"gpu01\",sensor=\"12V\",type=\"voltage\",unit=\"V\"} 12.04\n"
		"# HELP gpufleet_sensor_state Sensor state: 0 nominal, 1 warning, 2 critical, 3 unknown.\n"
		"# TYPE gpufleet_sensor_state gauge\n"
		"gpufleet_sensor_state{node=\"gpu01\",sensor=\"GPU3 Temp\",type=\"temperature\",unit=\"C\"} 1\n"
		"gpufleet_sensor_state{node=\"gpu01\",sensor=\"12V\",type=\"voltage\",unit=\"V\"} 0\n"
		"gpufleet_sensor_state{node=\"gpu01\",sensor=\"PSU2 Status\",type=\"power_supply\",unit=\"\"} 2\n"
		"gpufleet_sensor_state{node=\"gpu01\",sensor=\"FAN9\",type=\"fan\",unit=\"RPM\"} 3\n");
	free(out);
}

static void label_escaping(void **state)
{
	struct tsensor s[] = {
		{.name = "Odd \"name\" \\ with\nnewline",
		 .type = "other",
		 .reading = {true, 1.5},
		 .unit = "%",
		 .state = GF_SENSOR_NOMINAL},
	};
	json_t *o[] = {node_with("gpu02", s, 1)};
	char *out = render(o, 1);

	assert_non_null(strstr(out, "gpufleet_sensor_value{node=\"gpu02\","
				    "sensor=\"Odd \\\"name\\\" \\\\ with\\nnewline\","
				    "type=\"other\",unit=\"%\"} 1.5\n"));
	/* Only the three families' HELP/TYPE pairs and the samples: no raw newline got out. */
	size_t lines = 0;

	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 6 + 1 + 1 + 1);
	free(out);
}

static void duplicate_names_made_unique(void **state)
{
	struct tsensor s[] = {
		{.name = "Temp",
		 .type = "temperature",
		 .reading = {true, 30},
		 .unit = "C",
		 .state = GF_SENSOR_NOMINAL},
		{.name = "Temp",
		 .type = "temperature",
		 .reading = {true, 31},
		 .unit = "C",
		 .state = GF_SENSOR_NOMINAL},
		{.name = "Temp",
		 .type = "temperature",
		 .reading = {true, 32},
		 .unit = "C",
		 .state = GF_SENSOR_NOMINAL},
	};
	json_t *o[] = {node_with("gpu03", s, 3)};
	char *out = render(o, 1);

	assert_non_null(strstr(out, "sensor=\"Temp\",type=\"temperature\",unit=\"C\"} 30\n"));
	assert_non_null(strstr(out, "sensor=\"Temp #2\",type=\"temperature\",unit=\"C\"} 31\n"));
	assert_non_null(strstr(out, "sensor=\"Temp #3\",type=\"temperature\",unit=\"C\"} 32\n"));
	free(out);
}

/* 20,000 sensors of one name (and one without a reading among them): numbered in one pass. */
static void many_duplicate_names(void **state)
{
	enum { N = 20000 };
	struct tsensor *s = calloc(N, sizeof(*s));
	json_t *o[1];
	char *out;

	assert_non_null(s);
	for (size_t i = 0; i < N; i++)
		s[i] = (struct tsensor){.name = "Fan",
					.type = "fan",
					.reading = {i != 1, 100},
					.unit = "RPM",
					.state = GF_SENSOR_NOMINAL};
	o[0] = node_with("gpu04", s, N);
	out = render(o, 1);
	assert_non_null(strstr(out, "gpufleet_sensor_value{node=\"gpu04\",sensor=\"Fan\",type"));
	assert_null(strstr(out, "gpufleet_sensor_value{node=\"gpu04\",sensor=\"Fan #2\","));
	assert_non_null(strstr(out, "gpufleet_sensor_state{node=\"gpu04\",sensor=\"Fan #2\","));
	assert_non_null(strstr(out, "gpufleet_sensor_value{node=\"gpu04\",sensor=\"Fan #3\","));
	assert_non_null(strstr(out, "sensor=\"Fan #20000\","));
	free(out);
	free(s);
	(void)state;
}

static void failed_node_is_down_with_a_comment(void **state)
{
	struct tsensor s[] = {
		{.name = "Inlet",
		 .type = "temperature",
		 .reading = {true, 21},
		 .unit = "C",
		 .state = GF_SENSOR_NOMINAL},
	};
	json_t *o[] = {node_with("gpu01", s, 1), failed_node("gpu02", "no answer\nat all")};
	char *out = render(o, 2);

	assert_non_null(strstr(out,
			       "gpufleet_node_up{node=\"gpu01\"} 1\n"
			       "gpufleet_node_up{node=\"gpu02\"} 0\n"
			       "# gpufleet: node gpu02 failed: timeout: no answer\\nat all\n"));
	assert_null(strstr(out, "node=\"gpu02\",sensor"));
	free(out);
}

static void no_nodes(void **state)
{
	char *out = render(NULL, 0);

	assert_non_null(strstr(out, "# TYPE gpufleet_node_up gauge\n"));
	assert_null(strstr(out, "{"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(families_and_values),
		cmocka_unit_test(label_escaping),
		cmocka_unit_test(duplicate_names_made_unique),
		cmocka_unit_test(many_duplicate_names),
		cmocka_unit_test(failed_node_is_down_with_a_comment),
		cmocka_unit_test(no_nodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
