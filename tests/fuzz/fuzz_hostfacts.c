/*
 * libFuzzer target for the host-fact parsers: every parser gets the input as
 * it is, then the input is cut at 0xff bytes into the outputs of the
 * commands (the first byte of each piece picks its exit status and whether
 * it timed out) and assembled into facts, whose JSON must be valid and
 * consistent with them. The input is also read as a remote shell's answer
 * to a round's script (host/script.c): its frames, however malformed, are
 * taken within their bounds or refused. Seeds: tests/data/gpu-node-outputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/facts.h"
#include "host/hostfacts.h"
#include "host/script.h"
#include "lib/buf.h"
#include "tests/fuzz/worker.h"

static void one(int (*fn)(const char *, char **), const char *text)
{
	char *v = NULL;

	if (fn(text, &v) == 0) {
		if (!v)
			abort();
		free(v);
	} else if (v) {
		abort(); /* set only on success */
	}
}

static void parsers(const char *text)
{
	char *d = NULL, *c = NULL, *line = NULL, *f;
	enum gf_driver_module m = GF_MODULE_UNKNOWN;
	struct gf_host_gpu *g = NULL;
	struct gf_xid_count *x = NULL;
	size_t n = 0, total = 0;
	struct gf_err err = {0};

	if (gf_hostfacts_parse_smi_versions(text, &d, &c) == 0 && !d && !c)
		abort();
	free(d);
	free(c);
	if (gf_hostfacts_smi_error(text, &line) != GF_HEALTH_OK && !line)
		abort();
	free(line);
	free(gf_hostfacts_invalid_field(text));
	if (gf_hostfacts_parse_proc_version(text, &d, &m) == 0) {
		if (!d || m == GF_MODULE_UNKNOWN)
			abort();
		free(d);
	}
	one(gf_hostfacts_parse_nvcc, text);
	one(gf_hostfacts_parse_cuda_json, text);
	one(gf_hostfacts_parse_cuda_txt, text);
	one(gf_hostfacts_parse_os_release, text);
	one(gf_hostfacts_parse_fabricmanager, text);
	one(gf_hostfacts_parse_ofed, text);
	one(gf_hostfacts_parse_first_line, text);
	if (gf_hostfacts_parse_query_csv(text, gf_hostfacts_query_fields,
					 gf_hostfacts_nquery_fields, &g, &n, &err) == 0)
		gf_host_gpus_free(g, n);
	else if (err.code != GF_E_NODE || err.kind != GF_EK_PROTOCOL || !err.msg[0])
		abort();
	gf_hostfacts_count_xids(text, &x, &n);
	for (size_t i = 0; i < n; i++) {
		if (!x[i].count || (i && x[i - 1].code >= x[i].code))
			abort(); /* counted, sorted, unique */
		total += x[i].count;
	}
	(void)total;
	free(x);
	f = gf_hostfacts_query_cmd(gf_hostfacts_query_fields, 2);
	free(f);
}

static void assemble(const uint8_t *data, size_t size)
{
	struct gf_cmd_out outs[GF_HC_COUNT];
	char *pieces[GF_HC_COUNT] = {0};
	struct gf_hostfacts f;
	struct gf_err err = {0};
	size_t at = 0;

	memset(outs, 0, sizeof(outs));
	for (int c = 0; c < GF_HC_COUNT; c++) {
		const uint8_t *end = at < size ? memchr(data + at, 0xff, size - at) : NULL;
		size_t len = at < size ? (end ? (size_t)(end - (data + at)) : size - at) : 0;
		uint8_t sel = len ? data[at] : 0;
		static const int statuses[] = {0, 0, 0, 1, 2, 9, 15, 127, 126, -1};

		outs[c].ran = at < size;
		outs[c].status = statuses[sel % 10];
		outs[c].timed_out = (sel & 0x80) != 0;
		pieces[c] = gf_xstrndup(len ? (const char *)data + at + 1 : "", len ? len - 1 : 0);
		outs[c].out = pieces[c];
		outs[c].err = (sel & 0x40) ? pieces[c] : "";
		at += len + 1;
	}
	if (gf_hostfacts_build(outs, gf_hostfacts_query_fields, gf_hostfacts_nquery_fields, &f,
			       &err) == 0) {
		json_t *j = gf_hostfacts_to_json(&f), *back;
		char *s = json_dumps(j, JSON_COMPACT);

		if (!s)
			abort();
		back = json_loads(s, 0, NULL);
		if (!back || json_array_size(json_object_get(back, "gpus")) != f.ngpus ||
		    strcmp(json_string_value(json_object_get(json_object_get(back, "health"),
							     "state")),
			   gf_host_health_name(f.health)) != 0)
			abort();
		if (f.health != GF_HEALTH_OK && !f.health_detail)
			abort();
		json_decref(back);
		free(s);
		json_decref(j);
		gf_hostfacts_release(&f);
	} else if (err.code != GF_E_NODE || !err.msg[0]) {
		abort();
	}
	for (int c = 0; c < GF_HC_COUNT; c++)
		free(pieces[c]);
}

/* The input as what a host printed for a round of 1 to GF_HC_COUNT commands (its first byte). */
static void frames(const uint8_t *data, size_t size)
{
	static const char tag[] = "@gf1-0123456789abcdef";
	struct gf_remote_cmd cmds[GF_HC_COUNT];
	size_t n = size ? 1 + data[0] % GF_HC_COUNT : 1;
	struct gf_err err = {0};
	int rc;

	memset(cmds, 0, sizeof(cmds));
	rc = gf_script_parse(size ? (const char *)data + 1 : "", size ? size - 1 : 0, tag, cmds, n,
			     &err);
	if (rc != 0 && (rc != GF_E_NODE || err.kind != GF_EK_PROTOCOL || !err.msg[0]))
		abort();
	for (size_t i = 0; i < n; i++) {
		const struct gf_remote_cmd *c = &cmds[i];

		if (c->out.len > GF_REMOTE_MAX_OUTPUT || c->err.len > GF_REMOTE_MAX_OUTPUT ||
		    c->out.len + c->err.len > size || (!c->ran && (c->timed_out || c->out.len)) ||
		    (c->timed_out && c->status != -1))
			abort();
	}
	for (size_t i = 0; i < n; i++)
		gf_remote_cmd_release(&cmds[i]);
}

static void fuzz_input(const uint8_t *data, size_t size)
{
	char *text = gf_xstrndup((const char *)data, size);

	parsers(text);
	free(text);
	assemble(data, size);
	frames(data, size);
}
