/*
 * The inventory's Prometheus metrics (inventory/metrics.c): values from a
 * sweep and its drift, label escaping, HELP and TYPE before every sample,
 * what a node's sweep did not read left out; and lib/file.c's atomic replace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/sweep_facts.h"

#include "inventory/codec.h"
#include "inventory/drift.h"
#include "inventory/metrics.h"
#include "inventory/sweep.h"
#include "lib/buf.h"
#include "lib/file.h"
#include "tests/unit/stub_backends.h"

/* A component of a test node. */
struct tcomp {
	const char *key, *version;
	const char *source;
};

static struct gf_sweep_node *add(struct gf_sweep *sw, const char *name, const char *model,
				 const struct tcomp *c, size_t n)
{
	struct gf_sweep_node *node = gf_sweep_add_node(sw, name);

	node->model = gf_sweep_str(sw, model);
	node->protocol = gf_sweep_str(sw, "redfish");
	node->time = 1796004000.5;
	node->sweep = 7;
	node->fw_read = true;
	node->host_read = true;
	for (size_t i = 0; i < n; i++) {
		struct gf_inv_comp *ic = gf_inv_set_add(node->set);

		ic->key = gf_sweep_str(sw, c[i].key);
		ic->version = gf_sweep_str(sw, c[i].version);
		ic->source = gf_sweep_str(sw, c[i].source);
		ic->kind = gf_sweep_str(sw, "other");
	}
	gf_inv_set_finish(sw, node->set);
	return node;
}

/* The metrics of @sw with its drift by model, as gpufleet metrics renders them. */
static char *render(const struct gf_sweep *sw)
{
	const char **classes = calloc(sw->n + 1, sizeof(*classes));
	struct gf_drift_opts o = {.mode = GF_DRIFT_MAJORITY, .classes = classes};
	struct gf_drift *d = NULL;
	struct gf_buf b = GF_BUF_INIT;

	for (size_t i = 0; i < sw->n; i++)
		classes[i] = gf_drift_model_class(&sw->nodes[i]);
	assert_int_equal(gf_drift_compute(sw, &o, &d, NULL), 0);
	gf_metrics_render(sw, d, &b);
	gf_drift_free(d);
	free(classes);
	return gf_buf_detach(&b);
}

static void has_line(const char *text, const char *line)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_addf(&b, "\n%s\n", line);
	if (!strstr(text, gf_buf_str(&b)))
		fail_msg("line not found: %s\nin:\n%s", line, text);
	gf_buf_release(&b);
}

static void lacks(const char *text, const char *what)
{
	assert_non_null(text);
	if (strstr(text, what))
		fail_msg("unexpected '%s' in:\n%s", what, text);
}

/* Three DGX nodes, gpu2 off the majority's BMC firmware; gpu1 with GPUs, Xids, SEL, sensors. */
static struct gf_sweep *fleet(void)
{
	const struct tcomp base[] = {{"bmc", "1.0", "redfish"}, {"driver", "590.48.01", "ssh"}};
	const struct tcomp odd[] = {{"bmc", "1.1", "redfish"}, {"driver", "590.48.01", "ssh"}};
	struct gf_sweep *sw = gf_sweep_new();
	struct gf_sweep_node *n;

	n = add(sw, "gpu1", "DGX H100", base, 2);
	facts(n, "{\"gpus\":[{\"index\":0},{\"index\":1}]}",
	      "{\"gpus\":[{\"index\":0}],\"health\":{\"state\":\"ok\",\"xid\":{\"79\":3,\"13\":1}}}");
	n->sel = (struct gf_sel_summary){.read = true, .total = 9, .new_info = 1, .new_critical = 2};
	n->sensors = (struct gf_sensor_summary){.read = true,
						.nominal = 20,
						.warning = 1,
						.critical = 2,
						.unknown = 3};
	n = add(sw, "gpu2", "DGX H100", odd, 2);
	n->status = GF_NODE_PARTIAL;
	gf_sweep_node_error(sw, n, GF_OP_SEL, GF_EK_TIMEOUT, "no answer");
	add(sw, "gpu10", "DGX H100", base, 2);
	n = add(sw, "gpu11", "DGX H100", NULL, 0);
	n->status = GF_NODE_FAILED;
	n->fw_read = n->host_read = false;
	n->protocol = NULL;
	gf_sweep_node_error(sw, n, GF_OP_BMC, GF_EK_CONNECT, "refused");
	return sw;
}

static void values(void **state)
{
	struct gf_sweep *sw = fleet();
	char *t = render(sw);

	(void)state;
	has_line(t, "gpufleet_sweep_timestamp_seconds 1796004000.5");
	has_line(t, "gpufleet_node_sweep_timestamp_seconds{node=\"gpu2\"} 1796004000.5");
	has_line(t, "gpufleet_node_info{node=\"gpu1\",model=\"DGX H100\",protocol=\"redfish\"} 1");
	has_line(t, "gpufleet_node_info{node=\"gpu11\",model=\"DGX H100\",protocol=\"\"} 1");
	has_line(t, "gpufleet_node_status{node=\"gpu1\",status=\"ok\"} 1");
	has_line(t, "gpufleet_node_status{node=\"gpu1\",status=\"partial\"} 0");
	has_line(t, "gpufleet_node_status{node=\"gpu2\",status=\"partial\"} 1");
	has_line(t, "gpufleet_node_status{node=\"gpu2\",status=\"ok\"} 0");
	has_line(t, "gpufleet_node_status{node=\"gpu11\",status=\"failed\"} 1");
	has_line(t, "gpufleet_node_errors{node=\"gpu2\",op=\"sel\",kind=\"timeout\"} 1");
	has_line(t, "gpufleet_node_errors{node=\"gpu11\",op=\"bmc\",kind=\"connect\"} 1");
	has_line(t, "gpufleet_component_info{node=\"gpu2\",component=\"bmc\",version=\"1.1\","
		    "source=\"redfish\"} 1");
	has_line(t, "gpufleet_component_info{node=\"gpu10\",component=\"driver\","
		    "version=\"590.48.01\",source=\"ssh\"} 1");
	has_line(t, "gpufleet_drift_components{node=\"gpu1\"} 0");
	has_line(t, "gpufleet_drift_components{node=\"gpu2\"} 1");
	has_line(t, "gpufleet_drift_components{node=\"gpu10\"} 0");
	has_line(t, "gpufleet_drift_info{node=\"gpu2\",component=\"bmc\",expected=\"1.0\","
		    "actual=\"1.1\",source=\"redfish\"} 1");
	has_line(t, "gpufleet_gpus{node=\"gpu1\",source=\"ssh\"} 1");
	has_line(t, "gpufleet_gpus{node=\"gpu1\",source=\"redfish\"} 2");
	has_line(t, "gpufleet_gpu_xid_errors{node=\"gpu1\",xid=\"79\"} 3");
	has_line(t, "gpufleet_gpu_xid_errors{node=\"gpu1\",xid=\"13\"} 1");
	has_line(t, "gpufleet_sel_entries{node=\"gpu1\"} 9");
	has_line(t, "gpufleet_sel_new_entries{node=\"gpu1\",severity=\"info\"} 1");
	has_line(t, "gpufleet_sel_new_entries{node=\"gpu1\",severity=\"warning\"} 0");
	has_line(t, "gpufleet_sel_new_entries{node=\"gpu1\",severity=\"critical\"} 2");
	has_line(t, "gpufleet_sensors{node=\"gpu1\",state=\"nominal\"} 20");
	has_line(t, "gpufleet_sensors{node=\"gpu1\",state=\"critical\"} 2");
	has_line(t, "gpufleet_sensors{node=\"gpu1\",state=\"unknown\"} 3");
	/* What a sweep did not read is absent, not 0. */
	lacks(t, "gpufleet_drift_components{node=\"gpu11\"}");
	lacks(t, "gpufleet_gpus{node=\"gpu11\"");
	lacks(t, "gpufleet_sel_entries{node=\"gpu2\"}");
	lacks(t, "gpufleet_sensors{node=\"gpu10\"");
	lacks(t, "gpufleet_gpu_xid_errors{node=\"gpu2\"");
	free(t);
	gf_sweep_free(sw);
}

/* Every sample follows its family's HELP and TYPE; each family is declared once. */
static void help_and_type(void **state)
{
	static const char *const families[] = {
		"gpufleet_sweep_timestamp_seconds",
		"gpufleet_node_sweep_timestamp_seconds",
		"gpufleet_node_info",
		"gpufleet_node_status",
		"gpufleet_node_errors",
		"gpufleet_component_info",
		"gpufleet_drift_components",
		"gpufleet_drift_info",
		"gpufleet_gpus",
		"gpufleet_gpu_xid_errors",
		"gpufleet_sel_entries",
		"gpufleet_sel_new_entries",
		"gpufleet_sensors",
	};
	struct gf_sweep *sw = fleet();
	char *t = render(sw), *line, *next;
	char current[128] = "";
	size_t samples = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		struct gf_buf h = GF_BUF_INIT, ty = GF_BUF_INIT;
		const char *at;

		gf_buf_addf(&h, "# HELP %s ", families[i]);
		gf_buf_addf(&ty, "\n# TYPE %s gauge\n", families[i]);
		at = strstr(t, gf_buf_str(&h));
		assert_non_null(at);
		assert_null(strstr(at + 1, gf_buf_str(&h)));
		assert_non_null(strstr(t, gf_buf_str(&ty)));
		gf_buf_release(&h);
		gf_buf_release(&ty);
	}
	assert_int_equal(t[strlen(t) - 1], '\n');
	for (line = t; *line; line = next) {
		size_t len;

		next = strchr(line, '\n');
		assert_non_null(next);
		*next++ = '\0';
		if (strncmp(line, "# TYPE ", 7) == 0) {
			len = strcspn(line + 7, " ");
			assert_true(len < sizeof(current));
			memcpy(current, line + 7, len);
			current[len] = '\0';
			continue;
		}
		if (line[0] == '#')
			continue;
		len = strcspn(line, "{ ");
		assert_int_equal(len, strlen(current));
		assert_memory_equal(line, current, len);
		samples++;
	}
	assert_true(samples > 40);
	free(t);
	gf_sweep_free(sw);
}

static void label_escaping(void **state)
{
	const struct tcomp a[] = {{"gpu0.firmware", "96.00.\"A1\"\\b\nrc", "redfish"}};
	const struct tcomp b[] = {{"gpu0.firmware", "96.00.A1", "redfish"}};
	struct gf_sweep *sw = gf_sweep_new();
	char *t;

	(void)state;
	add(sw, "we\"ird\\node\nname", "HGX \"B200\"", a, 1);
	add(sw, "n2", "HGX \"B200\"", b, 1);
	add(sw, "n3", "HGX \"B200\"", b, 1);
	t = render(sw);
	has_line(t,
		 "gpufleet_node_info{node=\"we\\\"ird\\\\node\\nname\",model=\"HGX \\\"B200\\\"\","
		 "protocol=\"redfish\"} 1");
	has_line(t, "gpufleet_component_info{node=\"we\\\"ird\\\\node\\nname\","
		    "component=\"gpu0.firmware\",version=\"96.00.\\\"A1\\\"\\\\b\\nrc\","
		    "source=\"redfish\"} 1");
	has_line(t, "gpufleet_drift_info{node=\"we\\\"ird\\\\node\\nname\","
		    "component=\"gpu0.firmware\",expected=\"96.00.A1\","
		    "actual=\"96.00.\\\"A1\\\"\\\\b\\nrc\",source=\"redfish\"} 1");
	/* No raw line feed inside a sample: every line starts a sample or a comment. */
	for (const char *p = t; *p; p = strchr(p, '\n') + 1)
		assert_true(strncmp(p, "gpufleet_", 9) == 0 || *p == '#');
	free(t);
	gf_sweep_free(sw);
}

static void empty_inventory(void **state)
{
	struct gf_sweep *sw = gf_sweep_new();
	char *t = render(sw);

	(void)state;
	assert_non_null(strstr(t, "# TYPE gpufleet_node_status gauge\n"));
	for (const char *p = t; *p; p = strchr(p, '\n') + 1)
		assert_int_equal(*p, '#');
	free(t);
	gf_sweep_free(sw);
}

/* gf_file_replace(): the content whole, mode 0644, no temporary file left; a failure leaves all as it was. */
static void file_replace(void **state)
{
	char dir[] = "/tmp/gf-test-metrics-XXXXXX", path[256], bad[300], text[64];
	struct gf_err err = {0};
	struct stat st;
	struct dirent *e;
	size_t entries = 0;
	FILE *f;
	DIR *d;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/gpufleet.prom", dir);
	assert_int_equal(gf_file_replace(path, "old\n", 4, &err), 0);
	assert_int_equal(gf_file_replace(path, "new content\n", 12, &err), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fread(text, 1, sizeof(text), f), 12);
	fclose(f);
	assert_memory_equal(text, "new content\n", 12);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)))
		entries += e->d_name[0] != '.' ||
			   (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
	closedir(d);
	assert_int_equal(entries, 1);
	snprintf(bad, sizeof(bad), "%s/no-such-folder/x.prom", dir);
	assert_int_equal(gf_file_replace(bad, "x", 1, &err), GF_E_IO);
	assert_non_null(strstr(err.msg, "no-such-folder/x.prom"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(values),         cmocka_unit_test(help_and_type),
		cmocka_unit_test(label_escaping), cmocka_unit_test(empty_inventory),
		cmocka_unit_test(file_replace),
	};

	stub_backends_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
