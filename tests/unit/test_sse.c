/*
 * The pure parts of issue 19's Redfish side: the text/event-stream parser
 * (redfish/sse.c), Redfish Events and LogEntries into struct gf_event
 * (redfish/events.c), and the CPER decoder (lib/cper.c) on records built
 * here byte by byte, each byte's place written next to it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/cper.h"
#include "redfish/events.h"
#include "redfish/sse.h"

/* ---- the parser ---------------------------------------------------------- */

struct got {
	char ids[16][64];
	char data[16][256];
	char event[16][32];
	size_t n;
	int fail_at; /* the callback fails on this event (1-based), 0: never */
};

static int collect(void *ud, const struct gf_sse_msg *m, struct gf_err *err)
{
	struct got *g = ud;

	if (g->n >= 16)
		return 0;
	snprintf(g->ids[g->n], sizeof(g->ids[0]), "%s", m->id ? m->id : "(none)");
	snprintf(g->data[g->n], sizeof(g->data[0]), "%.*s", (int)m->data_len, m->data);
	snprintf(g->event[g->n], sizeof(g->event[0]), "%s", m->event);
	g->n++;
	if (g->fail_at && (int)g->n == g->fail_at)
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL, "callback says no");
	return 0;
}

/* Feed @s in pieces of @step bytes. */
static int feed(struct gf_sse_parser *p, const char *s, size_t step, struct got *g,
		struct gf_err *err)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i += step) {
		int rc = gf_sse_parser_feed(p, s + i, n - i < step ? n - i : step, collect, g, err);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static const char STREAM[] = "\xEF\xBB\xBF"     /* a byte-order mark, skipped */
			     ": keep-alive\r\n" /* a comment */
			     "retry: 2500\r\n"  /* the reconnection time */
			     "id: 7\n"          /* LF ends */
			     "data: {\"a\":\n"  /* two data lines, joined by LF */
			     "data:1}\n"        /* no space after the colon */
			     "\n"               /* dispatch */
			     "event: Alert\r"   /* CR ends */
			     "data\r"           /* a field without a colon: empty data */
			     "\r"               /* dispatch: data is "" plus LF: one empty line */
			     "id: 8\r\n\r\n"    /* an id alone: no event, the id moves */
			     "data: x\r\n\r\n"  /* CRLF; the id is still 8 */
			     "id\n"             /* id with no value: the empty id */
			     "data: y\n\n"
			     "data: no end yet\n"; /* never dispatched */

static void parser_every_split(void **state)
{
	(void)state;
	/* The same stream cut at every size, CRLF pairs split included, parses alike. */
	for (size_t step = 1; step <= sizeof(STREAM); step++) {
		struct gf_sse_parser p;
		struct got g = {0};
		struct gf_err err = {0};

		gf_sse_parser_init(&p, 0, 0);
		assert_int_equal(feed(&p, STREAM, step, &g, &err), 0);
		assert_int_equal(g.n, 4);
		assert_string_equal(g.ids[0], "7");
		assert_string_equal(g.data[0], "{\"a\":\n1}");
		assert_string_equal(g.event[0], "");
		assert_string_equal(g.data[1], "");
		assert_string_equal(g.event[1], "Alert");
		assert_string_equal(g.ids[2], "8");
		assert_string_equal(g.data[2], "x");
		assert_string_equal(g.ids[3], "");
		assert_string_equal(g.data[3], "y");
		assert_int_equal(p.retry_ms, 2500);
		assert_int_equal(p.comments, 1);
		gf_sse_parser_release(&p);
	}
}

static void parser_bounds(void **state)
{
	struct gf_sse_parser p;
	struct got g = {0};
	struct gf_err err = {0};
	char big[300];

	(void)state;
	/* A line without an end past max_line fails, whatever the chunks. */
	gf_sse_parser_init(&p, 100, 1000);
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(feed(&p, big, 7, &g, &err), GF_E_NODE);
	assert_non_null(strstr(err.msg, "line longer than 100 bytes"));
	assert_true(p.line.len <= 100);
	gf_sse_parser_release(&p);

	/* An event past max_event fails though each line is short. */
	gf_sse_parser_init(&p, 100, 1000);
	for (int k = 0; k < 50; k++) {
		int rc = feed(&p, "data: 0123456789012345678901234567890123456789\n", 5, &g, &err);

		/* 41 bytes a line: 24 lines make 984, the 25th would pass 1000. */
		if (rc < 0) {
			assert_int_equal(k, 24);
			break;
		}
		assert_true(k < 24);
	}
	assert_non_null(strstr(err.msg, "event larger than 1000 bytes"));
	assert_true(p.data.len <= 1000);
	gf_sse_parser_release(&p);

	/* An id past GF_SSE_MAX_ID fails; one with a NUL is ignored. */
	gf_sse_parser_init(&p, 0, 0);
	memset(big, '9', sizeof(big) - 1);
	memcpy(big, "id: ", 4);
	big[sizeof(big) - 2] = '\n';
	assert_int_equal(feed(&p, big, 64, &g, &err), GF_E_NODE);
	assert_non_null(strstr(err.msg, "event id longer"));
	gf_sse_parser_release(&p);
	gf_sse_parser_init(&p, 0, 0);
	memset(&g, 0, sizeof(g));
	assert_int_equal(gf_sse_parser_feed(&p, "id: 1\0x\ndata: z\n\n", 17, collect, &g, &err), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.ids[0], "(none)");

	/* The callback's error stops the feed; reset keeps the id. */
	memset(&g, 0, sizeof(g));
	g.fail_at = 1;
	assert_int_equal(feed(&p, "id: 4\ndata: a\n\ndata: b\n\n", 100, &g, &err), GF_E_NODE);
	assert_int_equal(g.n, 1);
	gf_sse_parser_reset(&p);
	g.fail_at = 0;
	assert_int_equal(feed(&p, "data: c\n\n", 100, &g, &err), 0);
	assert_string_equal(g.ids[1], "4");
	gf_sse_parser_release(&p);
}

/* ---- Redfish events ------------------------------------------------------ */

static void event_records(void **state)
{
	/* As bmcweb sends one (MessageSeverity) and as older services do (Severity only). */
	json_t *doc = json_loads(
		"{\"@odata.type\":\"#Event.v1_7_0.Event\",\"Id\":\"12\",\"Events\":["
		"{\"EventId\":\"12\",\"EventTimestamp\":\"2026-12-02T03:30:00+00:00\","
		"\"MessageSeverity\":\"Critical\",\"Severity\":\"OK\",\"Message\":\"GPU lost\","
		"\"MessageId\":\"ResourceEvent.1.0.ResourceErrorsDetected\",\"EventType\":\"Alert\","
		"\"OriginOfCondition\":{\"@odata.id\":\"/redfish/v1/Chassis/HGX_GPU_SXM_1\"}},"
		"{\"Severity\":\"Warning\",\"Message\":\"old\",\"OriginOfCondition\":\"/x\"},"
		"7]}",
		0, NULL);
	struct gf_event_list l = {0};
	struct gf_err err = {0};

	(void)state;
	assert_int_equal(gf_redfish_event_parse(doc, "gpu1", 1000.0, &l, &err), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.v[0].source, "redfish-sse");
	assert_string_equal(l.v[0].bmc_id, "12");
	assert_int_equal(l.v[0].severity, GF_SEV_CRITICAL);
	assert_true(l.v[0].has_time && l.v[0].time == 1796182200.0);
	assert_string_equal(l.v[0].origin, "/redfish/v1/Chassis/HGX_GPU_SXM_1");
	assert_string_equal(l.v[0].type, "Alert");
	assert_true(l.v[0].received == 1000.0);
	assert_string_equal(l.v[1].bmc_id, "12.1"); /* no EventId: the payload's Id and the index */
	assert_int_equal(l.v[1].severity, GF_SEV_WARNING);
	assert_string_equal(l.v[1].origin, "/x");
	assert_false(l.v[1].has_time);
	gf_event_list_release(&l);
	json_decref(doc);

	doc = json_loads("{\"Id\":\"1\"}", 0, NULL);
	assert_int_equal(gf_redfish_event_parse(doc, "gpu1", 0, &l, &err), GF_E_USAGE);
	assert_int_equal(l.n, 0);
	json_decref(doc);
}

static void log_entry_dgx(void **state)
{
	/* The DGX capture's EventLog entry 1001 (trimmed), Links.OriginOfCondition and Resolution. */
	json_t *e = json_loads(
		"{\"@odata.id\":\"/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog/Entries/"
		"1001\",\"Created\":\"2020-11-01T08:47:24+00:00\",\"EntryType\":\"Event\","
		"\"Id\":\"1001\",\"Links\":{\"OriginOfCondition\":{\"@odata.id\":"
		"\"/redfish/v1/Chassis/HGX_GPU_SXM_1\"}},\"Message\":\"The resource property "
		"GPU_SXM_1 ThrottleReason has detected errors\",\"MessageId\":"
		"\"ResourceEvent.1.0.ResourceErrorsDetected\",\"Resolution\":\"No recovery "
		"required.\",\"Severity\":\"Warning\"}",
		0, NULL);
	struct gf_event ev;
	struct gf_err err = {0};

	(void)state;
	assert_int_equal(gf_redfish_logentry_parse(e, "dgx1", 5.0, &ev, &err), 0);
	assert_string_equal(ev.source, "redfish-log");
	assert_string_equal(ev.bmc_id, "1001");
	assert_int_equal(ev.severity, GF_SEV_WARNING);
	assert_string_equal(ev.origin, "/redfish/v1/Chassis/HGX_GPU_SXM_1");
	assert_string_equal(ev.type, "Event");
	assert_string_equal(json_string_value(json_object_get(ev.payload, "resolution")),
			    "No recovery required.");
	assert_true(ev.has_time);
	gf_event_release(&ev);
	json_decref(e);
	assert_true(gf_redfish_log_newer("10", "9"));
	assert_false(gf_redfish_log_newer("9", "10"));
	assert_true(gf_redfish_log_newer("a", NULL));
	assert_true(gf_redfish_log_newer("ab", "b"));
}

/* ---- CPER ---------------------------------------------------------------- */

static void put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, v & 0xffff);
	put16(p + 2, v >> 16);
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* A GUID in UEFI byte order: data1 (LE32), data2 (LE16), data3 (LE16), then 8 bytes as written. */
static void putguid(unsigned char *p, uint32_t a, unsigned b, unsigned c, const char d[8])
{
	put32(p, a);
	put16(p + 4, b);
	put16(p + 6, c);
	memcpy(p + 8, d, 8);
}

/*
 * One record, 128 + 3 * 72 + 80 + 32 + 352 bytes:
 *   header @0: "CPER" 0..3, revision 4..5 (1.1), 0xFFFFFFFF 6..9, section
 *     count 10..11 (3), severity 12..15 (1 fatal), validation bits 16..19
 *     (bit 1: timestamp valid), record length 20..23, timestamp 24..31
 *     (BCD: sec 00, min 30, hour 03, flags, day 02, month 12, year 26,
 *     century 20), platform 32, partition 48, creator 64, notification 80,
 *     record id 96..103 (0x42), flags 104, persistence 108, reserved 116.
 *   descriptors @128, 72 bytes each: offset 0..3, length 4..7, revision
 *     8..9, validation 10 (bit 1: FRU text valid), flags 12..15, type GUID
 *     16..31, FRU id 32..47, severity 48..51, FRU text 52..71.
 *   memory section @344 (80 bytes): validation 0..7 (bits 1 and 14:
 *     physical address, error type), physical address 16..23, error type 72 (3).
 *   firmware error record reference @424 (32 bytes): type 0 (1), revision 1
 *     (2), record id 8..15, record GUID 16..31.
 *   NVIDIA event section @456 (352 bytes, 339 used): header 0..31 (version 1, two
 *     contexts, source device 1 = GPU, event type 4..5, signature 16..31),
 *     info 32..50 (version, size 19 = 3 + 16), then contexts from 51: Xid
 *     (16-byte header: size 256, format 0x8001, data size 240; XidCode 79,
 *     message) and recommended actions (size 32, format 0x8002, data 16:
 *     flags 1, recovery action 2 at +4).
 */
#define REC_LEN (128 + 3 * 72 + 80 + 32 + 352)

static void build_record(unsigned char *r)
{
	static const unsigned char ts[8] = {0x00, 0x30, 0x03, 0x00, 0x02, 0x12, 0x26, 0x20};
	unsigned char *d, *s;

	memset(r, 0, REC_LEN);
	memcpy(r, "CPER", 4);
	put16(r + 4, 0x0101);
	put32(r + 6, 0xffffffffu);
	put16(r + 10, 3);
	put32(r + 12, 1);
	put32(r + 16, 0x2);
	put32(r + 20, REC_LEN);
	memcpy(r + 24, ts, 8);
	put64(r + 96, 0x42);

	d = r + 128; /* memory */
	put32(d, 344);
	put32(d + 4, 80);
	d[10] = 2;
	putguid(d + 16, 0xa5bc1114, 0x6f64, 0x4ede, "\xb8\x63\x3e\x83\xed\x7c\x83\xb1");
	put32(d + 48, 2);
	memcpy(d + 52, "DIMM A1", 7);
	s = r + 344;
	put64(s, (1u << 1) | (1u << 14));
	put64(s + 16, 0x1234000);
	s[72] = 3;

	d = r + 200; /* firmware error record reference */
	put32(d, 424);
	put32(d + 4, 32);
	putguid(d + 16, 0x81212a96, 0x09ed, 0x4996, "\x94\x71\x8d\x72\x9c\x8e\x69\xed");
	s = r + 424;
	s[0] = 1;
	s[1] = 2;
	put64(s + 8, 0x99);

	d = r + 272; /* NVIDIA event */
	put32(d, 456);
	put32(d + 4, 352);
	putguid(d + 16, 0x9068e568, 0x6ca0, 0x11f0, "\xae\xaf\x15\x93\x43\x59\x1e\xac");
	put32(d + 48, 1);
	s = r + 456;
	s[0] = 1;
	s[1] = 2;
	s[2] = 1;
	put16(s + 4, 7);
	memcpy(s + 16, "GPU-EVENT", 9);
	put16(s + 32, 0x0100);
	s[34] = 19;
	s += 51; /* the first context */
	put32(s, 256);
	put16(s + 8, 0x8001);
	put32(s + 12, 240);
	put32(s + 16, 79);
	memcpy(s + 20, "GPU has fallen off the bus\x1b[2J", 30);
	s += 256;
	put32(s, 32);
	put16(s + 8, 0x8002);
	put32(s + 12, 16);
	s[16] = 1;
	put16(s + 20, 2);
}

static const char *sec_str(json_t *o, size_t i, const char *key)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(o, "sections"), i),
						 key));
}

static void cper_record(void **state)
{
	unsigned char r[REC_LEN];
	json_t *o = NULL, *xid;
	struct gf_err err = {0};

	(void)state;
	build_record(r);
	assert_int_equal(gf_cper_decode(r, sizeof(r), &o, &err), 0);
	assert_string_equal(json_string_value(json_object_get(o, "severity")), "fatal");
	assert_string_equal(json_string_value(json_object_get(o, "timestamp")),
			    "2026-12-02T03:30:00Z");
	assert_string_equal(json_string_value(json_object_get(o, "record_id")), "0x42");
	assert_string_equal(sec_str(o, 0, "type"), "memory");
	assert_string_equal(sec_str(o, 0, "severity"), "corrected");
	assert_string_equal(sec_str(o, 0, "fru_text"), "DIMM A1");
	assert_string_equal(sec_str(o, 0, "physical_address"), "0x1234000");
	assert_string_equal(sec_str(o, 0, "error_type"), "multi-bit-ecc");
	assert_null(sec_str(o, 0, "node")); /* its validation bit is clear */
	assert_string_equal(sec_str(o, 1, "type"), "firmware-error-record");
	assert_string_equal(sec_str(o, 1, "record_type"), "soc-type1");
	assert_string_equal(sec_str(o, 1, "record_identifier"), "0x99");
	assert_string_equal(sec_str(o, 2, "type"), "nvidia-event");
	assert_string_equal(sec_str(o, 2, "source_device"), "gpu");
	xid = json_object_get(o, "xid");
	assert_int_equal(json_integer_value(json_object_get(xid, "code")), 79);
	/* The escape sequence in the message is not passed on raw. */
	assert_string_equal(json_string_value(json_object_get(xid, "message")),
			    "GPU has fallen off the bus?[2J");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "recommended_action"),
							    "recovery_action")),
			 2);
	json_decref(o);
}

static void cper_refused(void **state)
{
	unsigned char r[REC_LEN];
	json_t *o = NULL;
	struct gf_err err = {0};

	(void)state;
	build_record(r);
	assert_int_equal(gf_cper_decode(r, 100, &o, &err), GF_E_USAGE);
	assert_non_null(strstr(err.msg, "shorter than its header"));
	/* A section that points past the end. */
	put32(r + 128 + 4, 100000);
	assert_int_equal(gf_cper_decode(r, sizeof(r), &o, &err), GF_E_USAGE);
	assert_non_null(strstr(err.msg, "section 1 points outside"));
	build_record(r);
	/* More sections announced than the bytes hold. */
	put16(r + 10, 60000);
	assert_int_equal(gf_cper_decode(r, sizeof(r), &o, &err), GF_E_USAGE);
	build_record(r);
	r[0] = 'X';
	assert_int_equal(gf_cper_decode(r, sizeof(r), &o, &err), GF_E_USAGE);
	assert_null(o);
	/* A context size that runs past the section is cut, not followed. */
	build_record(r);
	put32(r + 456 + 51, 5000);
	assert_int_equal(gf_cper_decode(r, sizeof(r), &o, &err), 0);
	assert_null(json_object_get(o, "xid"));
	assert_true(json_is_true(json_object_get(json_array_get(json_object_get(o, "sections"), 2),
						 "truncated")));
	json_decref(o);
}

static void cper_base64_in_a_log_entry(void **state)
{
	unsigned char r[REC_LEN], back[REC_LEN];
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct gf_buf b64 = GF_BUF_INIT, doc = GF_BUF_INIT;
	struct gf_event ev;
	struct gf_err err = {0};
	json_t *e;

	(void)state;
	build_record(r);
	for (size_t i = 0; i < sizeof(r); i += 3) {
		uint32_t v = (uint32_t)r[i] << 16 | (i + 1 < sizeof(r) ? r[i + 1] << 8 : 0) |
			     (i + 2 < sizeof(r) ? r[i + 2] : 0);

		gf_buf_addc(&b64, tab[v >> 18 & 63]);
		gf_buf_addc(&b64, tab[v >> 12 & 63]);
		gf_buf_addc(&b64, i + 1 < sizeof(r) ? tab[v >> 6 & 63] : '=');
		gf_buf_addc(&b64, i + 2 < sizeof(r) ? tab[v & 63] : '=');
	}
	assert_int_equal(gf_base64_decode(gf_buf_str(&b64), b64.len, back, sizeof(back)),
			 sizeof(r));
	assert_memory_equal(r, back, sizeof(r));
	assert_int_equal(gf_base64_decode("QUJD$", 5, back, sizeof(back)), -1);
	assert_int_equal(gf_base64_decode("QUJD", 4, back, 2), -1);
	gf_buf_addf(&doc,
		    "{\"Id\":\"5\",\"Severity\":\"Critical\",\"Message\":\"CPER\","
		    "\"DiagnosticDataType\":\"CPER\",\"DiagnosticData\":\"%s\"}",
		    gf_buf_str(&b64));
	e = json_loads(gf_buf_str(&doc), 0, NULL);
	assert_int_equal(gf_redfish_logentry_parse(e, "n", 0, &ev, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(ev.payload,
											    "cper"),
									    "xid"),
							    "code")),
			 79);
	gf_event_release(&ev);
	json_decref(e);
	e = json_loads("{\"Id\":\"6\",\"DiagnosticDataType\":\"CPER\",\"DiagnosticData\":\"@@\"}",
		       0, NULL);
	assert_int_equal(gf_redfish_logentry_parse(e, "n", 0, &ev, &err), 0);
	assert_string_equal(json_string_value(json_object_get(ev.payload, "cper_error")),
			    "cper data is not base64");
	gf_event_release(&ev);
	json_decref(e);
	gf_buf_release(&b64);
	gf_buf_release(&doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parser_every_split),
		cmocka_unit_test(parser_bounds),
		cmocka_unit_test(event_records),
		cmocka_unit_test(log_entry_dgx),
		cmocka_unit_test(cper_record),
		cmocka_unit_test(cper_refused),
		cmocka_unit_test(cper_base64_in_a_log_entry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
