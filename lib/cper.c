/*
 * CPER records into JSON. The layouts are those of the UEFI specification
 * (appendix N: record header N.2.1, section descriptor N.2.2, processor
 * generic N.2.4.1, platform memory N.2.5, PCIe N.2.7, firmware error record
 * reference N.2.10) and of NVIDIA's two vendor sections as OpenBMC's libcper
 * documents them (read, not copied): every integer little-endian, every
 * offset checked against the bytes we hold before it is read.
 */
#include "lib/cper.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "lib/buf.h"

#define HDR_LEN 128u
#define DESC_LEN 72u

/* A window on the input: every read is checked against it. */
struct span {
	const unsigned char *p;
	size_t n;
};

static bool has(struct span s, size_t off, size_t len)
{
	return off <= s.n && len <= s.n - off;
}

static uint64_t le(struct span s, size_t off, unsigned bytes)
{
	uint64_t v = 0;

	if (!has(s, off, bytes))
		return 0;
	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)s.p[off + i] << (8 * i);
	return v;
}

/* A GUID as the UEFI specification writes it: the first three fields little-endian. */
static void guid_text(struct span s, size_t off, char out[37])
{
	if (!has(s, off, 16)) {
		out[0] = '\0';
		return;
	}
	snprintf(out, 37, "%08llx-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 (unsigned long long)le(s, off, 4), (unsigned)le(s, off + 4, 2),
		 (unsigned)le(s, off + 6, 2), s.p[off + 8], s.p[off + 9], s.p[off + 10],
		 s.p[off + 11], s.p[off + 12], s.p[off + 13], s.p[off + 14], s.p[off + 15]);
}

/* Fixed-size text from the record: up to the first NUL, anything unprintable as '?'. */
static json_t *text(struct span s, size_t off, size_t len)
{
	char buf[256];
	size_t n = 0;

	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	for (size_t i = 0; i < len && has(s, off + i, 1); i++) {
		unsigned char c = s.p[off + i];

		if (c == '\0')
			break;
		buf[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	return json_stringn(buf, n);
}

static json_t *hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	return json_string(buf);
}

static const char *name_of(const char *const *names, size_t n, uint64_t v)
{
	return v < n && names[v] ? names[v] : "unknown";
}

#define NAME(tab, v) name_of(tab, sizeof(tab) / sizeof(tab[0]), v)

static const char *const severities[] = {"recoverable", "fatal", "corrected", "informational"};

static unsigned bcd(unsigned char b)
{
	return (b >> 4) * 10u + (b & 15u);
}

/* Header bytes 24..31: seconds, minutes, hours, precise flag, day, month, year, century (BCD). */
static json_t *timestamp(struct span s, size_t off)
{
	char buf[32];
	unsigned sec = bcd(s.p[off]), min = bcd(s.p[off + 1]), hour = bcd(s.p[off + 2]);
	unsigned day = bcd(s.p[off + 4]), mon = bcd(s.p[off + 5]);
	unsigned year = bcd(s.p[off + 7]) * 100u + bcd(s.p[off + 6]);

	if (sec > 60 || min > 59 || hour > 23 || day < 1 || day > 31 || mon < 1 || mon > 12)
		return json_null();
	snprintf(buf, sizeof(buf), "%04u-%02u-%02uT%02u:%02u:%02uZ", year, mon, day, hour, min,
		 sec);
	return json_string(buf);
}

/* ---- section bodies ------------------------------------------------------ */

static void set_if(json_t *o, uint64_t valid, unsigned bit, const char *key, json_t *v)
{
	if (valid & (1ull << bit))
		json_object_set_new(o, key, v);
	else
		json_decref(v);
}

static void processor_generic(struct span b, json_t *o)
{
	static const char *const types[] = {"ia32/x64", "ia64", "arm"};
	static const char *const isas[] = {"ia32", "ia64", "x64", "arm-a32/t32", "arm-a64"};
	static const char *const ops[] = {"generic", "data-read", "data-write",
					  "instruction-execution"};
	uint64_t valid = le(b, 0, 8);
	unsigned et = (unsigned)le(b, 10, 1);
	json_t *errs = json_array();

	if (!has(b, 0, 192)) {
		json_object_set_new(o, "truncated", json_true());
		json_decref(errs);
		return;
	}
	if (et & 1)
		json_array_append_new(errs, json_string("cache"));
	if (et & 2)
		json_array_append_new(errs, json_string("tlb"));
	if (et & 4)
		json_array_append_new(errs, json_string("bus"));
	if (et & 8)
		json_array_append_new(errs, json_string("micro-architectural"));
	set_if(o, valid, 0, "processor_type", json_string(NAME(types, le(b, 8, 1))));
	set_if(o, valid, 1, "isa", json_string(NAME(isas, le(b, 9, 1))));
	set_if(o, valid, 2, "error_types", json_incref(errs));
	set_if(o, valid, 3, "operation", json_string(NAME(ops, le(b, 11, 1))));
	set_if(o, valid, 5, "level", json_integer((json_int_t)le(b, 13, 1)));
	set_if(o, valid, 7, "brand", text(b, 24, 128));
	set_if(o, valid, 8, "processor_id", hex(le(b, 152, 8)));
	set_if(o, valid, 9, "target_address", hex(le(b, 160, 8)));
	set_if(o, valid, 12, "instruction_ip", hex(le(b, 184, 8)));
	json_decref(errs);
}

static void memory(struct span b, json_t *o)
{
	static const char *const types[] = {"unknown",
					    "no-error",
					    "single-bit-ecc",
					    "multi-bit-ecc",
					    "single-symbol-chipkill",
					    "multi-symbol-chipkill",
					    "master-abort",
					    "target-abort",
					    "parity",
					    "watchdog-timeout",
					    "invalid-address",
					    "mirror-broken",
					    "memory-sparing",
					    "scrub-corrected",
					    "scrub-uncorrected",
					    "physical-memory-map-out"};
	uint64_t valid = le(b, 0, 8);

	if (!has(b, 0, 80)) {
		json_object_set_new(o, "truncated", json_true());
		return;
	}
	set_if(o, valid, 0, "error_status", hex(le(b, 8, 8)));
	set_if(o, valid, 1, "physical_address", hex(le(b, 16, 8)));
	set_if(o, valid, 3, "node", json_integer((json_int_t)le(b, 32, 2)));
	set_if(o, valid, 4, "card", json_integer((json_int_t)le(b, 34, 2)));
	set_if(o, valid, 5, "module", json_integer((json_int_t)le(b, 36, 2)));
	set_if(o, valid, 6, "bank", json_integer((json_int_t)le(b, 38, 2)));
	set_if(o, valid, 7, "device", json_integer((json_int_t)le(b, 40, 2)));
	set_if(o, valid, 8, "row", json_integer((json_int_t)le(b, 42, 2)));
	set_if(o, valid, 9, "column", json_integer((json_int_t)le(b, 44, 2)));
	set_if(o, valid, 10, "bit_position", json_integer((json_int_t)le(b, 46, 2)));
	set_if(o, valid, 14, "error_type", json_string(NAME(types, le(b, 72, 1))));
	set_if(o, valid, 15, "rank", json_integer((json_int_t)le(b, 74, 2)));
}

static void pcie(struct span b, json_t *o)
{
	static const char *const ports[] = {"endpoint",
					    "legacy-endpoint",
					    NULL,
					    NULL,
					    "root-port",
					    "upstream-switch-port",
					    "downstream-switch-port",
					    "pcie-to-pci-bridge",
					    "pci-to-pcie-bridge",
					    "root-complex-integrated-endpoint",
					    "root-complex-event-collector"};
	uint64_t valid = le(b, 0, 8);
	char bdf[32];

	if (!has(b, 0, 208)) {
		json_object_set_new(o, "truncated", json_true());
		return;
	}
	set_if(o, valid, 0, "port_type", json_string(NAME(ports, le(b, 8, 4))));
	if (valid & (1u << 3)) {
		/* Device id @24: vendor, device, class[3], function, device, segment, buses, slot. */
		snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%u", (unsigned)le(b, 33, 2),
			 (unsigned)le(b, 35, 1), (unsigned)le(b, 32, 1) & 0x1f,
			 (unsigned)le(b, 31, 1) & 7);
		json_object_set_new(o, "device", json_string(bdf));
		json_object_set_new(o, "vendor_id", hex(le(b, 24, 2)));
		json_object_set_new(o, "device_id", hex(le(b, 26, 2)));
	}
	set_if(o, valid, 4, "serial", hex(le(b, 40, 8)));
	/* The AER capability @112: uncorrectable status +4, correctable status +16. */
	set_if(o, valid, 7, "aer_uncorrectable_status", hex(le(b, 116, 4)));
	set_if(o, valid, 7, "aer_correctable_status", hex(le(b, 128, 4)));
}

static void firmware_ref(struct span b, json_t *o)
{
	static const char *const types[] = {"ipf-sal", "soc-type1", "soc-type2"};
	char g[37];

	if (!has(b, 0, 16)) {
		json_object_set_new(o, "truncated", json_true());
		return;
	}
	json_object_set_new(o, "record_type", json_string(NAME(types, le(b, 0, 1))));
	json_object_set_new(o, "record_revision", json_integer((json_int_t)le(b, 1, 1)));
	json_object_set_new(o, "record_identifier", hex(le(b, 8, 8)));
	if (le(b, 1, 1) >= 2 && has(b, 16, 16)) {
		guid_text(b, 16, g);
		json_object_set_new(o, "record_guid", json_string(g));
	}
}

/* NVIDIA's register dump: signature[16], type, instance, severity, socket, count, base, regs. */
static void nvidia(struct span b, json_t *o)
{
	unsigned nregs;
	json_t *regs;

	if (!has(b, 0, 32)) {
		json_object_set_new(o, "truncated", json_true());
		return;
	}
	nregs = (unsigned)le(b, 22, 1);
	json_object_set_new(o, "signature", text(b, 0, 16));
	json_object_set_new(o, "error_type", json_integer((json_int_t)le(b, 16, 2)));
	json_object_set_new(o, "error_instance", json_integer((json_int_t)le(b, 18, 2)));
	json_object_set_new(o, "nvidia_severity", json_integer((json_int_t)le(b, 20, 1)));
	json_object_set_new(o, "socket", json_integer((json_int_t)le(b, 21, 1)));
	json_object_set_new(o, "instance_base", hex(le(b, 24, 8)));
	json_object_set_new(o, "register_count", json_integer(nregs));
	regs = json_array();
	for (unsigned i = 0; i < nregs && i < GF_CPER_MAX_REGS && has(b, 32 + 16u * i, 16); i++)
		json_array_append_new(regs,
				      json_pack("{s:o,s:o}", "address", hex(le(b, 32 + 16u * i, 8)),
						"value", hex(le(b, 40 + 16u * i, 8))));
	json_object_set_new(o, "registers", regs);
}

enum {
	NV_CTX_XID = 0x8001,     /* GPU legacy Xid: XidCode u32, Message[236] */
	NV_CTX_ACTIONS = 0x8002, /* GPU recommended actions: flags, recovery action, diag flow */
};

static const char *const nv_devices[] = {"cpu", "gpu", "dpu", "nic", "switch", "bmc"};

/*
 * NVIDIA's event section: a 32-byte header (version, context count, source
 * device, reserved, event type, subtype, link id, signature[16]), an info
 * block of InfoSize bytes (u16 version, u8 size, then per-device data),
 * then the contexts, each a 16-byte header (size, version, reserved,
 * data format, format version, data size) and its data. @top receives the
 * Xid and the recommended action for the whole record.
 */
static void nvidia_event(struct span b, json_t *o, json_t *top)
{
	unsigned count, dev;
	size_t off;
	json_t *ctxs;

	if (!has(b, 0, 35)) {
		json_object_set_new(o, "truncated", json_true());
		return;
	}
	count = (unsigned)le(b, 1, 1);
	dev = (unsigned)le(b, 2, 1);
	json_object_set_new(o, "event_version", json_integer((json_int_t)le(b, 0, 1)));
	json_object_set_new(o, "source_device", json_string(NAME(nv_devices, dev)));
	json_object_set_new(o, "event_type", json_integer((json_int_t)le(b, 4, 2)));
	json_object_set_new(o, "event_subtype", json_integer((json_int_t)le(b, 6, 2)));
	json_object_set_new(o, "signature", text(b, 16, 16));
	json_object_set_new(o, "context_count", json_integer(count));
	off = 32 + (size_t)le(b, 34, 1);
	ctxs = json_array();
	for (unsigned i = 0; i < count && i < GF_CPER_MAX_CONTEXTS; i++) {
		size_t size = (size_t)le(b, off, 4), dsize = (size_t)le(b, off + 12, 4);
		unsigned fmt = (unsigned)le(b, off + 8, 2);
		struct span d = {b.p + off + 16, 0};
		json_t *c;

		if (!has(b, off, 16) || size < 16 || !has(b, off, size) || dsize > size - 16) {
			json_object_set_new(o, "truncated", json_true());
			break;
		}
		d.n = dsize;
		c = json_pack("{s:o}", "format", hex(fmt));
		if (dev == 1 && fmt == NV_CTX_XID && dsize >= 4) {
			json_t *x = json_pack("{s:I,s:o}", "code", (json_int_t)le(d, 0, 4),
					      "message",
					      text(d, 4, dsize - 4 < 236 ? dsize - 4 : 236));

			json_object_set(c, "legacy_xid", x);
			if (!json_object_get(top, "xid"))
				json_object_set(top, "xid", x);
			json_decref(x);
		} else if (dev == 1 && fmt == NV_CTX_ACTIONS && dsize >= 8) {
			json_t *a = json_pack("{s:o,s:I,s:I}", "flags", hex(le(d, 0, 1)),
					      "recovery_action", (json_int_t)le(d, 4, 2),
					      "diagnostic_flow", (json_int_t)le(d, 6, 2));

			json_object_set(c, "recommended_actions", a);
			if (!json_object_get(top, "recommended_action"))
				json_object_set(top, "recommended_action", a);
			json_decref(a);
		} else {
			json_object_set_new(c, "data_size", json_integer((json_int_t)dsize));
		}
		json_array_append_new(ctxs, c);
		off += size;
	}
	json_object_set_new(o, "contexts", ctxs);
}

/* The section types decoded, by GUID (as guid_text() writes it). */
static const struct {
	const char *guid;
	const char *name;
	void (*body)(struct span b, json_t *o);
} kinds[] = {
	{"9876ccad-47b4-4bdb-b65e-16f193c4f3db", "processor-generic", processor_generic},
	{"a5bc1114-6f64-4ede-b863-3e83ed7c83b1", "memory", memory},
	{"d995e954-bbc1-430f-ad91-b44dcb3c6f35", "pcie", pcie},
	{"81212a96-09ed-4996-9471-8d729c8e69ed", "firmware-error-record", firmware_ref},
	{"6d5244f2-2712-11ec-bea7-cb3fdb95c786", "nvidia", nvidia},
	{"9068e568-6ca0-11f0-aeaf-159343591eac", "nvidia-event", NULL},
};

static json_t *section(struct span rec, size_t d, json_t *top)
{
	char g[37];
	size_t off = (size_t)le(rec, d, 4), len = (size_t)le(rec, d + 4, 4);
	struct span body = {rec.p + off, len};
	json_t *o = json_object();
	size_t k;

	guid_text(rec, d + 16, g);
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (strcmp(kinds[k].guid, g) == 0)
			break;
	json_object_set_new(o, "type",
			    json_string(k < sizeof(kinds) / sizeof(kinds[0]) ? kinds[k].name
									     : "unknown"));
	json_object_set_new(o, "type_guid", json_string(g));
	json_object_set_new(o, "severity", json_string(NAME(severities, le(rec, d + 48, 4))));
	/* Validation bit 1 of the descriptor: the FRU text is valid. */
	if (le(rec, d + 10, 1) & 2)
		json_object_set_new(o, "fru_text", text(rec, d + 52, 20));
	json_object_set_new(o, "length", json_integer((json_int_t)len));
	if (k == sizeof(kinds) / sizeof(kinds[0]))
		return o;
	if (k == 5)
		nvidia_event(body, o, top);
	else
		kinds[k].body(body, o);
	return o;
}

int gf_cper_decode(const unsigned char *data, size_t len, json_t **ret, struct gf_err *err)
{
	struct span rec = {data, len};
	unsigned count;
	uint64_t valid;
	json_t *o, *secs;
	char rev[16], g[37];

	if (len > GF_CPER_MAX_BYTES)
		return gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL,
				  "cper record of %zu bytes is larger than %u", len,
				  GF_CPER_MAX_BYTES);
	if (!has(rec, 0, HDR_LEN))
		return gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL,
				  "cper record of %zu bytes is shorter than its header (128)", len);
	if (memcmp(data, "CPER", 4) != 0 || le(rec, 6, 4) != 0xffffffffu)
		return gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL,
				  "cper record has no 'CPER' signature");
	count = (unsigned)le(rec, 10, 2);
	if (count == 0 || !has(rec, HDR_LEN, (size_t)count * DESC_LEN))
		return gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL,
				  "cper record announces %u sections that its %zu bytes do not hold",
				  count, len);
	/* Every descriptor's body must lie inside the record. */
	for (unsigned i = 0; i < count; i++) {
		size_t d = HDR_LEN + (size_t)i * DESC_LEN;

		if (!has(rec, (size_t)le(rec, d, 4), (size_t)le(rec, d + 4, 4)))
			return gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL,
					  "cper section %u points outside the record", i + 1);
	}
	valid = le(rec, 16, 4);
	o = json_object();
	snprintf(rev, sizeof(rev), "%u.%u", (unsigned)le(rec, 5, 1), (unsigned)le(rec, 4, 1));
	json_object_set_new(o, "revision", json_string(rev));
	json_object_set_new(o, "severity", json_string(NAME(severities, le(rec, 12, 4))));
	json_object_set_new(o, "record_id", hex(le(rec, 96, 8)));
	json_object_set_new(o, "timestamp", (valid & 2) ? timestamp(rec, 24) : json_null());
	guid_text(rec, 64, g);
	json_object_set_new(o, "creator_id", json_string(g));
	json_object_set_new(o, "section_count", json_integer(count));
	secs = json_array();
	for (unsigned i = 0; i < count && i < GF_CPER_MAX_SECTIONS; i++)
		json_array_append_new(secs, section(rec, HDR_LEN + (size_t)i * DESC_LEN, o));
	json_object_set_new(o, "sections", secs);
	*ret = o;
	return 0;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long gf_base64_decode(const char *s, size_t slen, unsigned char *out, size_t cap)
{
	uint32_t acc = 0;
	unsigned bits = 0, pad = 0;
	size_t n = 0;

	for (size_t i = 0; i < slen; i++) {
		unsigned char c = (unsigned char)s[i];
		int v;

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			if (++pad > 2)
				return -1;
			continue;
		}
		if (pad || (v = b64_value(c)) < 0)
			return -1; /* data after padding, or not the alphabet */
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= cap)
				return -1;
			out[n++] = (unsigned char)(acc >> bits);
		}
	}
	return (long)n;
}

int gf_cper_decode_base64(const char *s, json_t **ret, struct gf_err *err)
{
	size_t slen = s ? strlen(s) : 0;
	size_t cap = slen / 4 * 3 + 3;
	unsigned char *bytes;
	long n;
	int rc;

	if (!s || slen / 4 * 3 > GF_CPER_MAX_BYTES + 3)
		return gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL,
				  "cper data missing or larger than %u bytes", GF_CPER_MAX_BYTES);
	bytes = gf_xmalloc(cap ? cap : 1);
	n = gf_base64_decode(s, slen, bytes, cap);
	if (n < 0)
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL, "cper data is not base64");
	else
		rc = gf_cper_decode(bytes, (size_t)n, ret, err);
	free(bytes);
	return rc;
}
