/*
 * Host-fact parsers on real captured outputs (tests/data/gpu-node-outputs,
 * drivers 384 to 610), and the assembly of facts and their JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/facts.h"
#include "host/hostfacts.h"
#include "lib/buf.h"
#include "lib/util.h"

static char *slurp(const char *name)
{
	const char *dir = getenv("GF_TEST_DATA");
	struct gf_buf path = GF_BUF_INIT, b = GF_BUF_INIT;
	char chunk[4096];
	size_t n;
	FILE *f;

	gf_buf_addf(&path, "%s/gpu-node-outputs/%s", dir ? dir : "tests/data", name);
	f = fopen(gf_buf_str(&path), "rb");
	if (!f)
		fail_msg("cannot open %s", gf_buf_str(&path));
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		gf_buf_add(&b, chunk, n);
	fclose(f);
	gf_buf_release(&path);
	return gf_buf_detach(&b);
}

/* ---- nvidia-smi versions ---------------------------------------------- */

static void check_versions(const char *file, const char *driver, const char *cuda)
{
	char *text = slurp(file), *d = NULL, *c = NULL;

	assert_int_equal(gf_hostfacts_parse_smi_versions(text, &d, &c), 0);
	if (!d || strcmp(d, driver) != 0)
		fail_msg("%s: driver '%s', expected '%s'", file, d ? d : "(null)", driver);
	if (!c || strcmp(c, cuda) != 0)
		fail_msg("%s: cuda '%s', expected '%s'", file, c ? c : "(null)", cuda);
	free(d);
	free(c);
	free(text);
}

static void smi_versions_every_layout(void **state)
{
	/* the default table: 79 columns (525), 89 columns (550 .. 595), 610's renamed fields */
	check_versions("rtx-4090_525.125.06_nvidia-smi_old-layout.txt", "525.125.06", "12.0");
	check_versions("h100x8_550.90.07_nvidia-smi.txt", "550.90.07", "12.4");
	check_versions("h100-80gb-hbm3_590.48.01_nvidia-smi.txt", "590.48.01", "13.1");
	check_versions("h200-mig_590.48.01_nvidia-smi.txt", "590.48.01", "13.1");
	check_versions("l40s_595.80_nvidia-smi.txt", "595.80", "13.2");
	check_versions("rtx-2080-super_610.57.04_nvidia-smi.txt", "610.57.04", "13.3");
	check_versions("h100-80gb-hbm3_590.48.01_nvidia-smi_under-load.txt", "590.48.01", "13.1");
	/* -q: the value column moves; 610 marks the old keys deprecated and adds new ones */
	check_versions("a10_535.129.03_nvidia-smi-q.txt", "535.129.03", "12.2");
	check_versions("h100x8_535.161.08_nvidia-smi-q.txt", "535.161.08", "12.2");
	check_versions("h100x8_535.183.01_nvidia-smi-q.txt", "535.183.01", "12.2");
	check_versions("titan-v_560.35.03_nvidia-smi-q.txt", "560.35.03", "12.6");
	check_versions("h100-mig_590.48.01_nvidia-smi-q.txt", "590.48.01", "13.1");
	check_versions("l40s_595.80_nvidia-smi-q.txt", "595.80", "13.2");
	check_versions("rtx-2080-super_610.57.04_nvidia-smi-q.txt", "610.57.04", "13.3");
	/* --version: 610 says "Deprecated, see ..." where the old values were */
	check_versions("h200_590.48.01_nvidia-smi--version.txt", "590.48.01", "13.1");
	check_versions("l40s_595.80_nvidia-smi--version.txt", "595.80", "13.2");
	check_versions("rtx-2080-super_610.57.04_nvidia-smi--version.txt", "610.57.04", "13.3");
}

static void smi_versions_absent(void **state)
{
	char *d = (char *)"x", *c = (char *)"y";
	char *err = slurp("nvidia-smi_error_no-driver.txt");

	assert_int_equal(gf_hostfacts_parse_smi_versions(err, &d, &c), GF_E_NOTFOUND);
	assert_null(d);
	assert_null(c);
	/* a 610 line alone: the deprecated key has no version, the new one has */
	assert_int_equal(gf_hostfacts_parse_smi_versions(
				 "DRIVER version      : Deprecated, see \"KMD version\" instead\n",
				 &d, &c),
			 GF_E_NOTFOUND);
	assert_int_equal(gf_hostfacts_parse_smi_versions("Driver Version: 1.2\nKMD Version : 3.4\n",
							 &d, &c),
			 0);
	assert_string_equal(d, "3.4");
	assert_null(c);
	free(d);
	free(err);
}

/* ---- --query-gpu ------------------------------------------------------ */

/*
 * Split a capture's "a, b, c" line into fields; in a header, " [unit]" is
 * dropped from the names and @unit tells which had one.
 */
static size_t split_csv(char *line, char **out, size_t max, bool *unit)
{
	size_t n = 0;

	for (char *p = line; p && n < max;) {
		char *c = strstr(p, ", ");

		if (c)
			*c = '\0';
		if (unit) {
			char *u = strstr(p, " [");

			unit[n] = u != NULL;
			if (u)
				*u = '\0';
		}
		out[n++] = p;
		p = c ? c + 2 : NULL;
	}
	return n;
}

/*
 * What `nvidia-smi --query-gpu=<fields> --format=csv,noheader[,nounits]`
 * printed on the captured machine: the captured all-fields CSV (with a
 * header) narrowed to @fields. With @units the values keep their unit.
 */
static char *narrow(const char *file, const char *const *fields, size_t nfields, bool units)
{
	char *text = slurp(file), *nl, *names[400], *vals[400];
	bool unit[400];
	struct gf_buf b = GF_BUF_INIT;
	size_t nn, nv;
	char *row;

	nl = strchr(text, '\n');
	assert_non_null(nl);
	*nl = '\0';
	row = nl + 1;
	nn = split_csv(text, names, NELEM(names), unit);
	for (char *r = row; r && *r;) {
		char *e = strchr(r, '\n');

		if (e)
			*e = '\0';
		nv = split_csv(r, vals, NELEM(vals), NULL);
		assert_int_equal(nv, nn);
		for (size_t f = 0; f < nfields; f++) {
			size_t k;

			for (k = 0; k < nn && strcmp(names[k], fields[f]) != 0; k++)
				;
			if (k == nn)
				fail_msg("%s has no field %s", file, fields[f]);
			if (f)
				gf_buf_adds(&b, ", ");
			if (!units && unit[k] && strchr(vals[k], ' ') && vals[k][0] != '[')
				gf_buf_add(&b, vals[k], (size_t)(strchr(vals[k], ' ') - vals[k]));
			else
				gf_buf_adds(&b, vals[k]);
		}
		gf_buf_addc(&b, '\n');
		r = e ? e + 1 : NULL;
	}
	free(text);
	return gf_buf_detach(&b);
}

static struct gf_host_gpu *parse_capture(const char *file, bool units, size_t *n)
{
	char *csv = narrow(file, gf_hostfacts_query_fields, gf_hostfacts_nquery_fields, units);
	struct gf_host_gpu *g = NULL;
	struct gf_err err = {0};

	if (gf_hostfacts_parse_query_csv(csv, gf_hostfacts_query_fields, gf_hostfacts_nquery_fields,
					 &g, n, &err) < 0)
		fail_msg("%s: %s", file, err.msg);
	free(csv);
	return g;
}

static void query_h100(void **state)
{
	size_t n;
	struct gf_host_gpu *g = parse_capture("h100-80gb-hbm3_590.48.01_query-gpu-allfields.csv",
					      false, &n);

	assert_int_equal(n, 1);
	assert_int_equal(g[0].index, 0);
	assert_string_equal(g[0].name, "NVIDIA H100 80GB HBM3");
	assert_string_equal(g[0].serial, "0000000000000");
	assert_string_equal(g[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
	assert_string_equal(g[0].pci, "00000000:00:09.0");
	assert_string_equal(g[0].vbios, "96.00.A5.00.01");
	assert_true(g[0].memory_total_mib.set);
	assert_int_equal(g[0].memory_total_mib.v, 81559);
	assert_int_equal(g[0].mig_mode, GF_TRI_NO);
	assert_int_equal(g[0].persistence_mode, GF_TRI_YES);
	assert_true(g[0].ecc_volatile_corrected.set && g[0].ecc_volatile_corrected.v == 0);
	assert_true(g[0].ecc_aggregate_uncorrected.set && g[0].ecc_aggregate_uncorrected.v == 0);
	assert_int_equal(g[0].retired_pages_pending, GF_TRI_UNKNOWN); /* [N/A] on Hopper */
	assert_int_equal(g[0].remapped_rows_pending, GF_TRI_NO);
	assert_string_equal(g[0].inforom, "G520.0200.00.05");
	gf_host_gpus_free(g, n);

	/* without nounits the memory reads "81559 MiB": the same number */
	g = parse_capture("h100-80gb-hbm3_590.48.01_query-gpu-allfields.csv", true, &n);
	assert_int_equal(g[0].memory_total_mib.v, 81559);
	gf_host_gpus_free(g, n);
}

static void query_mig_consumer_610(void **state)
{
	size_t n;
	struct gf_host_gpu *g = parse_capture("h200-mig_590.48.01_query-gpu-allfields.csv", false,
					      &n);

	assert_int_equal(n, 1);
	assert_string_equal(g[0].name, "NVIDIA H200");
	assert_int_equal(g[0].mig_mode, GF_TRI_YES);
	assert_int_equal(g[0].memory_total_mib.v, 143771);
	assert_int_equal(g[0].remapped_rows_pending, GF_TRI_UNKNOWN); /* [N/A] in MIG mode */
	assert_string_equal(g[0].inforom, "G520.0280.02.02");
	gf_host_gpus_free(g, n);

	g = parse_capture("l40s_595.80_query-gpu-allfields.csv", false, &n);
	assert_int_equal(g[0].mig_mode, GF_TRI_UNKNOWN);
	assert_int_equal(g[0].persistence_mode, GF_TRI_NO);
	assert_int_equal(g[0].memory_total_mib.v, 46068);
	gf_host_gpus_free(g, n);

	g = parse_capture("rtx-2080-super_610.57.04_query-gpu-allfields.csv", false, &n);
	assert_string_equal(g[0].name, "NVIDIA GeForce RTX 2080 SUPER");
	assert_null(g[0].serial);                      /* [N/A] on GeForce */
	assert_false(g[0].ecc_volatile_corrected.set); /* no ECC */
	assert_false(g[0].ecc_aggregate_uncorrected.set);
	assert_string_equal(g[0].pci, "00000000:0C:00.0");
	assert_string_equal(g[0].vbios, "90.04.7A.40.73");
	gf_host_gpus_free(g, n);
}

static void query_fields_exist_in_610(void **state)
{
	char *help = slurp("rtx-2080-super_610.57.04_nvidia-smi--help-query-gpu.txt");

	for (size_t i = 0; i < gf_hostfacts_nquery_fields; i++) {
		char quoted[128];

		snprintf(quoted, sizeof(quoted), "\"%s\"", gf_hostfacts_query_fields[i]);
		if (!strstr(help, quoted))
			fail_msg("field %s is not in nvidia-smi 610's --help-query-gpu", quoted);
	}
	free(help);
}

static void query_bad_lines(void **state)
{
	static const char *const f[] = {"index", "name", "memory.total", "remapped_rows.pending"};
	struct gf_host_gpu *g = (struct gf_host_gpu *)1;
	size_t n = 7;
	struct gf_err err = {0};

	assert_int_equal(gf_hostfacts_parse_query_csv("0, A, 10\n", f, 4, &g, &n, &err), GF_E_NODE);
	assert_int_equal(err.kind, GF_EK_PROTOCOL);
	assert_non_null(strstr(err.msg, "3 columns"));
	assert_ptr_equal(g, (struct gf_host_gpu *)1); /* untouched on failure */
	assert_int_equal(n, 7);

	/* a lost GPU's error among the rows; blank lines; values out of range */
	assert_int_equal(gf_hostfacts_parse_query_csv(
				 "0, NVIDIA A, 81559, Yes\n"
				 "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.\n"
				 "\n"
				 "2, [GPU requires reset], 99999999999999999999999, [N/A]\r\n",
				 f, 4, &g, &n, &err),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(g[0].remapped_rows_pending, GF_TRI_YES);
	assert_int_equal(g[1].index, 2);
	assert_null(g[1].name);
	assert_false(g[1].memory_total_mib.set);
	gf_host_gpus_free(g, n);

	assert_int_equal(gf_hostfacts_parse_query_csv("", f, 4, &g, &n, &err), 0);
	assert_int_equal(n, 0);
	gf_host_gpus_free(g, n);
}

static void query_invalid_field(void **state)
{
	char *f = gf_hostfacts_invalid_field(
		"Field \"remapped_rows.pending\" is not a valid field to query.\n\n");

	assert_string_equal(f, "remapped_rows.pending");
	free(f);
	f = gf_hostfacts_invalid_field(
		"Field \xe2\x80\x9c"
		"encoder.stats.sessionCount\xe2\x80\x9d is not a valid field to query.");
	assert_string_equal(f, "encoder.stats.sessionCount");
	free(f);
	assert_null(gf_hostfacts_invalid_field("0, NVIDIA H100, 81559\n"));
	assert_null(gf_hostfacts_invalid_field("Field \"\" is not a valid field to query.\n"));
	assert_null(gf_hostfacts_invalid_field("Field \"x is not a valid field to query.\n"));
	assert_null(gf_hostfacts_invalid_field(""));
}

static void query_cmd_line(void **state)
{
	static const char *const f[] = {"index", "uuid"};
	char *c = gf_hostfacts_query_cmd(f, 2);

	assert_string_equal(
		c, "env LC_ALL=C nvidia-smi --query-gpu=index,uuid --format=csv,noheader,nounits");
	free(c);
}

/* ---- health from nvidia-smi's messages --------------------------------- */

static void smi_errors(void **state)
{
	char *t = slurp("nvidia-smi_error_no-driver.txt"), *line = NULL;

	assert_int_equal(gf_hostfacts_smi_error(t, &line), GF_HEALTH_NO_DRIVER);
	assert_non_null(strstr(line, "couldn't communicate with the NVIDIA driver"));
	free(line);
	free(t);
	t = slurp("nvidia-smi_error_gpu-fallen-off-bus.txt");
	assert_int_equal(gf_hostfacts_smi_error(t, &line), GF_HEALTH_GPU_LOST);
	assert_string_equal(line,
			    "Unable to determine the device handle for GPU0000:01:00.0: Unknown Error");
	free(line);
	free(t);
	t = slurp("h100x8_550.90.07_nvidia-smi.txt");
	line = NULL;
	assert_int_equal(gf_hostfacts_smi_error(t, &line), GF_HEALTH_OK);
	assert_null(line);
	free(t);
}

/* ---- the other tools -------------------------------------------------- */

static void check_proc(const char *file, const char *version, enum gf_driver_module m)
{
	char *t = slurp(file), *v = NULL;
	enum gf_driver_module got = GF_MODULE_UNKNOWN;

	assert_int_equal(gf_hostfacts_parse_proc_version(t, &v, &got), 0);
	assert_string_equal(v, version);
	assert_int_equal(got, m);
	free(v);
	free(t);
}

static void proc_versions(void **state)
{
	char *v = NULL;
	enum gf_driver_module m = GF_MODULE_UNKNOWN;

	check_proc("proc-driver-nvidia-version_384.98_proprietary-old.txt", "384.98",
		   GF_MODULE_PROPRIETARY);
	check_proc("proc-driver-nvidia-version_525.60.11_open-arch.txt", "525.60.11",
		   GF_MODULE_OPEN);
	check_proc("proc-driver-nvidia-version_535.113.01_empty-gcc.txt", "535.113.01",
		   GF_MODULE_PROPRIETARY);
	check_proc("proc-driver-nvidia-version_535.161.08_proprietary.txt", "535.161.08",
		   GF_MODULE_PROPRIETARY);
	check_proc("proc-driver-nvidia-version_565.57.01_open.txt", "565.57.01", GF_MODULE_OPEN);
	check_proc("proc-driver-nvidia-version_35.3.1_jetson-aarch64.txt", "35.3.1",
		   GF_MODULE_OPEN);
	assert_int_equal(gf_hostfacts_parse_proc_version("", &v, &m), GF_E_NOTFOUND);
	assert_int_equal(gf_hostfacts_parse_proc_version(
				 "NVRM version: NVIDIA UNIX Kernel Module  Thu\n", &v, &m),
			 GF_E_NOTFOUND);
	assert_null(v);
}

static void check_one(int (*fn)(const char *, char **), const char *file, const char *want)
{
	char *t = slurp(file), *v = NULL;

	if (fn(t, &v) != 0 || !v || strcmp(v, want) != 0)
		fail_msg("%s: got '%s', expected '%s'", file, v ? v : "(null)", want);
	free(v);
	free(t);
}

static void toolkit_versions(void **state)
{
	char *v = NULL;

	check_one(gf_hostfacts_parse_nvcc, "nvcc--version_10.1.243_no-build-line.txt", "10.1.243");
	check_one(gf_hostfacts_parse_nvcc, "nvcc--version_11.1.105.txt", "11.1.105");
	check_one(gf_hostfacts_parse_nvcc, "nvcc--version_12.5.82.txt", "12.5.82");
	check_one(gf_hostfacts_parse_nvcc, "nvcc--version_12.8.93.txt", "12.8.93");
	check_one(gf_hostfacts_parse_cuda_json, "cuda-version-json_13.3.1.json", "13.3.1");
	assert_int_equal(gf_hostfacts_parse_cuda_txt("CUDA Version 10.1.243\n", &v), 0);
	assert_string_equal(v, "10.1.243");
	free(v);
	assert_int_equal(gf_hostfacts_parse_nvcc("Cuda compilation tools, release 9.2\n", &v), 0);
	assert_string_equal(v, "9.2");
	free(v);
	v = NULL;
	assert_int_equal(gf_hostfacts_parse_cuda_json("{\"cuda\":{\"version\":7}}", &v),
			 GF_E_NOTFOUND);
	assert_int_equal(gf_hostfacts_parse_cuda_json("not json", &v), GF_E_NOTFOUND);
	assert_int_equal(gf_hostfacts_parse_nvcc("nvcc: NVIDIA (R) Cuda compiler driver\n", &v),
			 GF_E_NOTFOUND);
	assert_null(v);
}

static void fabric_ofed_kernel_os(void **state)
{
	char *v = NULL;

	check_one(gf_hostfacts_parse_fabricmanager, "nv-fabricmanager--version_535.161.08.txt",
		  "535.161.08");
	check_one(gf_hostfacts_parse_fabricmanager,
		  "nv-fabricmanager--version_610.57.04_no-trailing-newline.txt", "610.57.04");
	check_one(gf_hostfacts_parse_ofed, "ofed_info-s_23.10-3.2.2.0.txt",
		  "MLNX_OFED_LINUX-23.10-3.2.2.0");
	assert_int_equal(gf_hostfacts_parse_first_line("\n  6.8.0-45-generic \n", &v), 0);
	assert_string_equal(v, "6.8.0-45-generic");
	free(v);
	assert_int_equal(
		gf_hostfacts_parse_os_release(
			"NAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nPRETTY_NAME=\"Ubuntu 22.04.4 LTS \\\"jammy\\\"\"\n",
			&v),
		0);
	assert_string_equal(v, "Ubuntu 22.04.4 LTS \"jammy\"");
	free(v);
	assert_int_equal(gf_hostfacts_parse_os_release("# x\nNAME='Rocky Linux'\nVERSION_ID=9.4\n",
						       &v),
			 0);
	assert_string_equal(v, "Rocky Linux 9.4");
	free(v);
	v = NULL;
	assert_int_equal(gf_hostfacts_parse_os_release("PRETTY_NAME=\"\"\n", &v), GF_E_NOTFOUND);
	assert_int_equal(gf_hostfacts_parse_first_line(" \n\n", &v), GF_E_NOTFOUND);
	assert_null(v);
}

static void xid_counts(void **state)
{
	struct gf_xid_count *x;
	size_t n;
	char *t = slurp("dmesg-decode-iso_xid-13.txt");

	gf_hostfacts_count_xids(t, &x, &n);
	assert_int_equal(n, 2);
	assert_int_equal(x[0].code, 13);
	assert_int_equal(x[0].count, 16);
	assert_int_equal(x[1].code, 43);
	assert_int_equal(x[1].count, 1);
	free(x);
	free(t);

	t = slurp("dmesg_xid-119_gsp-timeout.txt");
	gf_hostfacts_count_xids(t, &x, &n);
	assert_int_equal(n, 1);
	assert_int_equal(x[0].code, 119);
	assert_int_equal(x[0].count, 5);
	free(x);
	free(t);

	t = slurp("dmesg_xid-79_fallen-off-bus.txt");
	gf_hostfacts_count_xids(t, &x, &n);
	assert_int_equal(n, 1);
	assert_int_equal(x[0].code, 79);
	free(x);
	free(t);

	/* newer drivers: fallen off the bus without an Xid number */
	t = slurp("dmesg_fallen-off-bus_no-xid_570.158.01-open.txt");
	gf_hostfacts_count_xids(t, &x, &n);
	assert_int_equal(n, 0);
	assert_null(x);
	free(t);

	gf_hostfacts_count_xids("Nov 29 12:00:01 gpu1 kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1\n"
				"NVRM: Xid (PCI:0000:01:00): 1234567, too long\n"
				"NVRM: Xid (PCI:0000:01:00) 31, no colon\n"
				"NVRM: Xid (PCI:0000:02:00): 79, again\n",
				&x, &n);
	assert_int_equal(n, 1);
	assert_int_equal(x[0].count, 2);
	free(x);
}

static void cuda_cmp(void **state)
{
	assert_true(gf_cuda_version_cmp("12.8.93", "12.2") > 0);
	assert_true(gf_cuda_version_cmp("12.2", "13.1") < 0);
	assert_int_equal(gf_cuda_version_cmp("13.3.1", "13.3"), 0);
	assert_true(gf_cuda_version_cmp("10.1", "9.2") > 0);
	assert_int_equal(gf_cuda_version_cmp("x", "9.2"), 0);
	assert_int_equal(gf_cuda_version_cmp(NULL, "9.2"), 0);
}

/* ---- assembling -------------------------------------------------------- */

struct node_out {
	struct gf_cmd_out o[GF_HC_COUNT];
	char *keep[GF_HC_COUNT];
};

static void set_out(struct node_out *no, enum gf_hostcmd c, int status, char *out, const char *err)
{
	free(no->keep[c]);
	no->o[c].ran = true;
	no->o[c].status = status;
	no->keep[c] = out;
	no->o[c].out = out ? out : "";
	no->o[c].err = err;
}

static void node_out_free(struct node_out *no)
{
	for (int i = 0; i < GF_HC_COUNT; i++)
		free(no->keep[i]);
}

/* An H100 node as captured, every tool answering. */
static void h100_node(struct node_out *no)
{
	memset(no, 0, sizeof(*no));
	for (int c = 0; c < GF_HC_COUNT; c++) {
		no->o[c].out = "";
		no->o[c].err = "";
	}
	set_out(no, GF_HC_SMI_QUERY, 0,
		narrow("h100-80gb-hbm3_590.48.01_query-gpu-allfields.csv",
		       gf_hostfacts_query_fields, gf_hostfacts_nquery_fields, false),
		"");
	set_out(no, GF_HC_SMI, 0, slurp("h100-80gb-hbm3_590.48.01_nvidia-smi.txt"), "");
	set_out(no, GF_HC_PROC_VERSION, 1, NULL,
		"cat: /proc/driver/nvidia/version: No such file or directory\n");
	set_out(no, GF_HC_NVCC, 0, slurp("nvcc--version_12.8.93.txt"), "");
	set_out(no, GF_HC_CUDA_JSON, 0, slurp("cuda-version-json_13.3.1.json"), "");
	set_out(no, GF_HC_UNAME, 0, gf_xstrdup("5.15.0-112-generic\n"), "");
	set_out(no, GF_HC_OS_RELEASE, 0, gf_xstrdup("PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\n"), "");
	set_out(no, GF_HC_FABRICMANAGER, 127, NULL,
		"env: 'nv-fabricmanager': No such file or directory\n");
	set_out(no, GF_HC_OFED, 0, slurp("ofed_info-s_23.10-3.2.2.0.txt"), "");
	set_out(no, GF_HC_JOURNAL, 0, slurp("dmesg_xid-79_fallen-off-bus.txt"), "");
}

static void build_ok(void **state)
{
	struct node_out no;
	struct gf_hostfacts f;
	struct gf_err err = {0};
	json_t *j;
	char *s;

	h100_node(&no);
	assert_int_equal(gf_hostfacts_build(no.o, gf_hostfacts_query_fields,
					    gf_hostfacts_nquery_fields, &f, &err),
			 0);
	assert_string_equal(f.driver, "590.48.01");
	assert_int_equal(f.driver_module, GF_MODULE_UNKNOWN);
	assert_string_equal(f.cuda_driver, "13.1");
	assert_string_equal(f.cuda_toolkit, "12.8.93"); /* nvcc first, version.json after */
	assert_string_equal(f.kernel, "5.15.0-112-generic");
	assert_string_equal(f.os, "Ubuntu 22.04.4 LTS");
	assert_null(f.fabricmanager);
	assert_string_equal(f.ofed, "MLNX_OFED_LINUX-23.10-3.2.2.0");
	assert_int_equal(f.ngpus, 1);
	assert_int_equal(f.health, GF_HEALTH_OK);
	assert_true(f.xid_read);
	assert_int_equal(f.nnotes, 0);

	j = gf_hostfacts_to_json(&f);
	s = json_dumps(j, JSON_COMPACT);
	assert_non_null(strstr(
		s, "{\"driver\":\"590.48.01\",\"driver_module\":null,\"cuda_driver\":\"13.1\","
		   "\"cuda_toolkit\":\"12.8.93\",\"kernel\":\"5.15.0-112-generic\","
		   "\"os\":\"Ubuntu 22.04.4 LTS\",\"fabricmanager\":null,"
		   "\"ofed\":\"MLNX_OFED_LINUX-23.10-3.2.2.0\",\"driver_library\":null,"
		   "\"gpus\":[{\"index\":0,"
		   "\"name\":\"NVIDIA H100 80GB HBM3\",\"serial\":\"0000000000000\","
		   "\"uuid\":\"GPU-00000000-0000-0000-0000-000000000000\","
		   "\"pci\":\"00000000:00:09.0\",\"vbios\":\"96.00.A5.00.01\","
		   "\"memory_total_mib\":81559,\"mig_mode\":\"disabled\","
		   "\"persistence_mode\":\"enabled\",\"ecc\":{\"volatile\":{\"corrected\":0,"
		   "\"uncorrected\":0},\"aggregate\":{\"corrected\":0,\"uncorrected\":0}},"
		   "\"retired_pages_pending\":null,\"remapped_rows_pending\":false,"
		   "\"inforom\":\"G520.0200.00.05\"}],"
		   "\"health\":{\"state\":\"ok\",\"xid\":{\"79\":1},\"xid_source\":\"journal\"},"
		   "\"notes\":[],\"failed\":[]}"));
	free(s);
	json_decref(j);
	gf_hostfacts_release(&f);
	node_out_free(&no);
}

static void build_toolkit_newer_and_fallbacks(void **state)
{
	struct node_out no;
	struct gf_hostfacts f;

	h100_node(&no);
	/* a 535 driver (CUDA 12.2) with toolkit 12.8 */
	set_out(&no, GF_HC_SMI, 0, slurp("h100x8_535.161.08_nvidia-smi-q.txt"), "");
	set_out(&no, GF_HC_PROC_VERSION, 0,
		slurp("proc-driver-nvidia-version_535.161.08_proprietary.txt"), "");
	/* no nvcc on PATH, no version.json: version.txt is the fallback */
	set_out(&no, GF_HC_NVCC, 127, NULL, "env: 'nvcc': No such file or directory\n");
	set_out(&no, GF_HC_CUDA_JSON, 1, NULL,
		"cat: /usr/local/cuda/version.json: No such file or directory\n");
	assert_true(gf_hostfacts_need_fallback(GF_HC_CUDA_TXT, no.o));
	assert_false(gf_hostfacts_need_fallback(GF_HC_DMESG, no.o));
	set_out(&no, GF_HC_CUDA_TXT, 0, gf_xstrdup("CUDA Version 12.8.61\n"), "");
	assert_int_equal(gf_hostfacts_build(no.o, gf_hostfacts_query_fields,
					    gf_hostfacts_nquery_fields, &f, NULL),
			 0);
	assert_string_equal(f.driver, "535.161.08");
	assert_int_equal(f.driver_module, GF_MODULE_PROPRIETARY);
	assert_string_equal(f.cuda_driver, "12.2");
	assert_string_equal(f.cuda_toolkit, "12.8.61");
	assert_int_equal(f.nnotes, 1);
	assert_string_equal(f.notes[0],
			    "cuda toolkit 12.8.61 is newer than the driver supports (12.2)");
	gf_hostfacts_release(&f);
	node_out_free(&no);
}

static void build_kernel_log(void **state)
{
	struct node_out no;
	struct gf_hostfacts f;

	h100_node(&no);
	/* journalctl as a user outside adm/systemd-journal: no kernel messages, a hint */
	set_out(&no, GF_HC_JOURNAL, 0, gf_xstrdup("-- No entries --\n"),
		"Hint: You are currently not seeing messages from other users and the system.\n");
	assert_true(gf_hostfacts_need_fallback(GF_HC_DMESG, no.o));
	set_out(&no, GF_HC_DMESG, 1, NULL,
		"dmesg: read kernel buffer failed: Operation not permitted\n");
	assert_int_equal(gf_hostfacts_build(no.o, gf_hostfacts_query_fields,
					    gf_hostfacts_nquery_fields, &f, NULL),
			 0);
	assert_false(f.xid_read);
	assert_string_equal(f.xid_note, "no permission to read the kernel log");
	assert_int_equal(f.health, GF_HEALTH_OK); /* a result, not a failure */
	gf_hostfacts_release(&f);

	/* a denied dmesg --since=-24h is not asked again without --since */
	assert_false(gf_hostfacts_need_fallback(GF_HC_DMESG_ALL, no.o));

	/* no journalctl: dmesg of the last 24 hours */
	set_out(&no, GF_HC_JOURNAL, 127, NULL, "env: 'journalctl': No such file or directory\n");
	assert_true(gf_hostfacts_need_fallback(GF_HC_DMESG, no.o));
	assert_string_equal(gf_hostcmd_line(GF_HC_DMESG), "env LC_ALL=C dmesg --since=-24h");
	set_out(&no, GF_HC_DMESG, 0, slurp("dmesg_xid-119_gsp-timeout.txt"), "");
	assert_false(gf_hostfacts_need_fallback(GF_HC_DMESG_ALL, no.o));
	assert_int_equal(gf_hostfacts_build(no.o, gf_hostfacts_query_fields,
					    gf_hostfacts_nquery_fields, &f, NULL),
			 0);
	assert_true(f.xid_read);
	assert_string_equal(f.xid_source, "dmesg");
	assert_int_equal(f.nxids, 1);
	assert_int_equal(f.xids[0].code, 119);
	gf_hostfacts_release(&f);

	/* a dmesg older than util-linux 2.37 refuses --since: all of it, since boot, and said so */
	set_out(&no, GF_HC_DMESG, 1, NULL,
		"dmesg: unrecognized option '--since=-24h'\nTry 'dmesg --help' for more information.\n");
	assert_true(gf_hostfacts_need_fallback(GF_HC_DMESG_ALL, no.o));
	assert_string_equal(gf_hostcmd_line(GF_HC_DMESG_ALL), "env LC_ALL=C dmesg");
	set_out(&no, GF_HC_DMESG_ALL, 0, slurp("dmesg_xid-79_fallen-off-bus.txt"), "");
	assert_int_equal(gf_hostfacts_build(no.o, gf_hostfacts_query_fields,
					    gf_hostfacts_nquery_fields, &f, NULL),
			 0);
	assert_true(f.xid_read);
	assert_string_equal(f.xid_source, "dmesg-boot");
	assert_int_equal(f.nxids, 1);
	assert_int_equal(f.xids[0].code, 79);
	gf_hostfacts_release(&f);
	node_out_free(&no);
}

static void build_health_states(void **state)
{
	struct node_out no;
	struct gf_hostfacts f;
	struct gf_err err = {0};

	/* nvidia-smi not installed */
	h100_node(&no);
	set_out(&no, GF_HC_SMI_QUERY, 127, NULL, "env: 'nvidia-smi': No such file or directory\n");
	set_out(&no, GF_HC_SMI, 127, NULL, "env: 'nvidia-smi': No such file or directory\n");
	assert_int_equal(gf_hostfacts_build(no.o, NULL, 0, &f, &err), 0);
	assert_int_equal(f.health, GF_HEALTH_NO_NVIDIA_SMI);
	assert_string_equal(f.health_detail, "env: 'nvidia-smi': No such file or directory");
	assert_int_equal(f.ngpus, 0);
	assert_null(f.driver);
	assert_string_equal(f.kernel, "5.15.0-112-generic"); /* the rest is still collected */
	gf_hostfacts_release(&f);

	/* driver not loaded (exit 9, message on stdout) */
	set_out(&no, GF_HC_SMI_QUERY, 9, slurp("nvidia-smi_error_no-driver.txt"), "");
	set_out(&no, GF_HC_SMI, 9, slurp("nvidia-smi_error_no-driver.txt"), "");
	assert_int_equal(gf_hostfacts_build(no.o, NULL, 0, &f, &err), 0);
	assert_int_equal(f.health, GF_HEALTH_NO_DRIVER);
	assert_string_equal(gf_host_health_name(f.health), "no-driver");
	gf_hostfacts_release(&f);

	/* a GPU fell off the bus */
	set_out(&no, GF_HC_SMI_QUERY, 15, slurp("nvidia-smi_error_gpu-fallen-off-bus.txt"), "");
	set_out(&no, GF_HC_SMI, 15, slurp("nvidia-smi_error_gpu-fallen-off-bus.txt"), "");
	assert_int_equal(gf_hostfacts_build(no.o, NULL, 0, &f, &err), 0);
	assert_int_equal(f.health, GF_HEALTH_GPU_LOST);
	assert_string_equal(gf_host_health_name(f.health), "gpu-lost");
	assert_string_equal(f.health_detail,
			    "Unable to determine the device handle for GPU0000:01:00.0: Unknown Error");
	gf_hostfacts_release(&f);
	/* ... while the other GPUs still answer: they are listed */
	{
		static const char *const two[] = {"index", "name"};

		set_out(&no, GF_HC_SMI_QUERY, 15,
			gf_xstrdup("0, NVIDIA H100 80GB HBM3\n"
				   "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n"
				   "2, NVIDIA H100 80GB HBM3\n"),
			"");
		assert_int_equal(gf_hostfacts_build(no.o, two, 2, &f, &err), 0);
		assert_int_equal(f.health, GF_HEALTH_GPU_LOST);
		assert_int_equal(f.ngpus, 2);
		assert_int_equal(f.gpus[1].index, 2);
		gf_hostfacts_release(&f);
	}

	/* nvidia-smi hung until the deadline */
	set_out(&no, GF_HC_SMI_QUERY, -1, NULL, "");
	no.o[GF_HC_SMI_QUERY].timed_out = true;
	set_out(&no, GF_HC_SMI, -1, NULL, "");
	no.o[GF_HC_SMI].timed_out = true;
	assert_int_equal(gf_hostfacts_build(no.o, NULL, 0, &f, &err), 0);
	assert_int_equal(f.health, GF_HEALTH_TIMEOUT);
	assert_string_equal(gf_host_health_name(f.health), "timeout");
	gf_hostfacts_release(&f);

	/* an error nvidia-smi does not explain: the GPUs are not known, every other fact is kept */
	no.o[GF_HC_SMI_QUERY].timed_out = false;
	no.o[GF_HC_SMI].timed_out = false;
	set_out(&no, GF_HC_SMI_QUERY, 4, gf_xstrdup("Insufficient Permissions\n"), "");
	set_out(&no, GF_HC_SMI, 0, slurp("h100-80gb-hbm3_590.48.01_nvidia-smi.txt"), "");
	set_out(&no, GF_HC_OFED, 0, slurp("ofed_info-s_23.10-3.2.2.0.txt"), "");
	assert_int_equal(gf_hostfacts_build(no.o, NULL, 0, &f, &err), 0);
	assert_int_equal(f.health, GF_HEALTH_UNKNOWN);
	assert_string_equal(gf_host_health_name(f.health), "unknown");
	assert_int_equal(f.ngpus, 0);
	assert_int_equal(f.nfailed, 1);
	assert_string_equal(f.failed[0].command, "nvidia-smi --query-gpu");
	assert_string_equal(f.failed[0].message,
			    "nvidia-smi --query-gpu failed (exit 4): Insufficient Permissions");
	assert_string_equal(f.driver, "590.48.01");
	assert_string_equal(f.cuda_driver, "13.1");
	assert_string_equal(f.cuda_toolkit, "12.8.93");
	assert_string_equal(f.kernel, "5.15.0-112-generic");
	assert_string_equal(f.ofed, "MLNX_OFED_LINUX-23.10-3.2.2.0");
	assert_null(f.driver_library);
	assert_int_equal(gf_hostfacts_partial_err(&f, &err), GF_E_NODE);
	assert_int_equal(err.kind, GF_EK_PROTOCOL);
	assert_string_equal(err.msg, "answered in part: nvidia-smi --query-gpu failed (exit 4): "
				     "Insufficient Permissions (the other facts are kept)");
	gf_hostfacts_release(&f);
	set_out(&no, GF_HC_SMI_QUERY, 2,
		gf_xstrdup("Field \"inforom.img\" is not a valid field to query.\n\n"), "");
	assert_int_equal(gf_hostfacts_build(no.o, NULL, 0, &f, &err), 0);
	assert_int_equal(f.nfailed, 1);
	assert_string_equal(f.failed[0].message,
			    "nvidia-smi refused the query field 'inforom.img'");
	gf_hostfacts_release(&f);
	/* output that cannot be read: the same */
	{
		static const char *const two[] = {"index", "name"};

		set_out(&no, GF_HC_SMI_QUERY, 0, gf_xstrdup("0, NVIDIA H100, 80GB\n"), "");
		assert_int_equal(gf_hostfacts_build(no.o, two, 2, &f, &err), 0);
		assert_int_equal(f.health, GF_HEALTH_UNKNOWN);
		assert_int_equal(f.nfailed, 1);
		assert_string_equal(f.failed[0].message,
				    "nvidia-smi --query-gpu line 1 has 3 columns, not 2");
		assert_string_equal(f.kernel, "5.15.0-112-generic");
		gf_hostfacts_release(&f);
	}
	/* a complete answer is not partial */
	node_out_free(&no);
	h100_node(&no);
	assert_int_equal(gf_hostfacts_build(no.o, gf_hostfacts_query_fields,
					    gf_hostfacts_nquery_fields, &f, &err),
			 0);
	assert_int_equal(f.nfailed, 0);
	assert_int_equal(gf_hostfacts_partial_err(&f, &err), 0);
	gf_hostfacts_release(&f);
	node_out_free(&no);
}

static void build_driver_mismatch(void **state)
{
	struct node_out no;
	struct gf_hostfacts f;
	json_t *j;

	(void)state;
	/* a driver installed without a reboot: the library is 570.124, the module 535.161.08 */
	h100_node(&no);
	set_out(&no, GF_HC_SMI_QUERY, 18, slurp("nvidia-smi_error_driver-library-mismatch.txt"),
		"");
	set_out(&no, GF_HC_SMI, 18, slurp("nvidia-smi_error_driver-library-mismatch.txt"), "");
	set_out(&no, GF_HC_PROC_VERSION, 0,
		slurp("proc-driver-nvidia-version_535.161.08_proprietary.txt"), "");
	assert_int_equal(gf_hostfacts_build(no.o, gf_hostfacts_query_fields,
					    gf_hostfacts_nquery_fields, &f, NULL),
			 0);
	assert_int_equal(f.health, GF_HEALTH_DRIVER_MISMATCH);
	assert_string_equal(gf_host_health_name(f.health), "driver-mismatch");
	assert_string_equal(f.health_detail,
			    "Failed to initialize NVML: Driver/library version mismatch");
	assert_string_equal(f.driver, "535.161.08");      /* the loaded kernel module */
	assert_string_equal(f.driver_library, "570.124"); /* what nvidia-smi loaded */
	assert_null(f.cuda_driver);
	assert_int_equal(f.ngpus, 0);
	assert_int_equal(f.nfailed, 0); /* a health state, not a failure */
	assert_string_equal(f.kernel, "5.15.0-112-generic");
	j = gf_hostfacts_to_json(&f);
	assert_string_equal(json_string_value(json_object_get(j, "driver_library")), "570.124");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "health"),
							      "state")),
			    "driver-mismatch");
	json_decref(j);
	gf_hostfacts_release(&f);
	/* older drivers do not name the library: its version is not known */
	set_out(&no, GF_HC_SMI_QUERY, 18,
		slurp("nvidia-smi_error_driver-library-mismatch_no-library-line.txt"), "");
	set_out(&no, GF_HC_SMI, 18,
		slurp("nvidia-smi_error_driver-library-mismatch_no-library-line.txt"), "");
	assert_int_equal(gf_hostfacts_build(no.o, gf_hostfacts_query_fields,
					    gf_hostfacts_nquery_fields, &f, NULL),
			 0);
	assert_int_equal(f.health, GF_HEALTH_DRIVER_MISMATCH);
	assert_string_equal(f.driver, "535.161.08");
	assert_null(f.driver_library);
	gf_hostfacts_release(&f);
	node_out_free(&no);
}

static void health_names(void **state)
{
	assert_string_equal(gf_host_health_name(GF_HEALTH_OK), "ok");
	assert_string_equal(gf_host_health_name(GF_HEALTH_NO_NVIDIA_SMI), "no-nvidia-smi");
	assert_string_equal(gf_hostcmd_line(GF_HC_UNAME), "uname -r");
	assert_null(gf_hostcmd_line(GF_HC_SMI_QUERY));
	assert_null(gf_hostcmd_line(GF_HC_COUNT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(smi_versions_every_layout),
		cmocka_unit_test(smi_versions_absent),
		cmocka_unit_test(query_h100),
		cmocka_unit_test(query_mig_consumer_610),
		cmocka_unit_test(query_fields_exist_in_610),
		cmocka_unit_test(query_bad_lines),
		cmocka_unit_test(query_invalid_field),
		cmocka_unit_test(query_cmd_line),
		cmocka_unit_test(smi_errors),
		cmocka_unit_test(proc_versions),
		cmocka_unit_test(toolkit_versions),
		cmocka_unit_test(fabric_ofed_kernel_os),
		cmocka_unit_test(xid_counts),
		cmocka_unit_test(cuda_cmp),
		cmocka_unit_test(build_ok),
		cmocka_unit_test(build_toolkit_newer_and_fallbacks),
		cmocka_unit_test(build_kernel_log),
		cmocka_unit_test(build_health_states),
		cmocka_unit_test(build_driver_mismatch),
		cmocka_unit_test(health_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
