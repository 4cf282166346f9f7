/*
 * What a BMC says of itself over IPMI: its firmware (Get Device ID), the
 * system firmware version the BIOS left with it (Get System Info Parameters),
 * the FRU inventory of device 0 (chassis, board and product areas) and the
 * system GUID.
 *
 * Firmware fails a node only when Get Device ID fails; the optional facts
 * (BIOS version, GUID, FRU areas) are left out when the BMC answers them with
 * a completion code, as many do, but a timeout or lost session fails the
 * node like any other command.
 */
#include "ipmi/internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <freeipmi/freeipmi.h>

#include "lib/buf.h"
#include "lib/compkey.h"
#include "lib/util.h"

/* Get System Info Parameters: a string is at most 255 bytes in 16-byte sets. */
#define SYSINFO_FIRST_LEN 14
#define SYSINFO_SET_LEN 16
#define SYSINFO_MAX 255

static int nomem(struct gf_err *err)
{
	return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
}

/* The BMC answered @rs with a completion code: it does not do this. */
static bool refused(fiid_obj_t rs)
{
	uint64_t cc = 0;

	return rs && FIID_OBJ_GET(rs, "comp_code", &cc) == 1 && cc != 0;
}

/*
 * An optional command failed: true when that only means "not reported" (a
 * completion code, an answer FreeIPMI cannot parse), false when the session
 * itself is in trouble and the node must fail.
 */
static bool optional_failure(struct ipmi_session *s, fiid_obj_t rs)
{
	if (refused(rs))
		return true;
	switch (ipmi_ctx_errnum(s->ctx)) {
	case IPMI_ERR_SESSION_TIMEOUT:
	case IPMI_ERR_CONNECTION_TIMEOUT:
	case IPMI_ERR_MESSAGE_TIMEOUT:
	case IPMI_ERR_SYSTEM_ERROR:
	case IPMI_ERR_OUT_OF_MEMORY: return false;
	default: return true;
	}
}

static bool get_u64(fiid_obj_t rs, const char *field, uint64_t *ret)
{
	return FIID_OBJ_GET(rs, field, ret) == 1;
}

/* A heap copy of @s without trailing blanks and NULs; NULL when that is empty. */
static char *trimmed(const char *s, size_t len)
{
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\0' || s[len - 1] == '\t'))
		len--;
	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	return len ? gf_xstrndup(s, len) : NULL;
}

/* ---- firmware ------------------------------------------------------------ */

/* The BMC component from Get Device ID. */
static int bmc_component(struct ipmi_session *s, struct gf_component *c, struct gf_err *err)
{
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_get_device_id_rs);
	uint64_t major, minor, avail, ipmi_major, ipmi_minor, mfg, prod, dev_id, dev_rev, aux;
	char version[32], mfg_name[128];
	int rc, n;

	if (!rs)
		return nomem(err);
	if (ipmi_cmd_get_device_id(s->ctx, rs) < 0) {
		rc = gf_ipmi_cmd_error(s, "get device id", rs, IPMI_NET_FN_APP_RQ, err);
		goto out;
	}
	if (!get_u64(rs, "firmware_revision1.major_revision", &major) ||
	    !get_u64(rs, "firmware_revision2.minor_revision", &minor) ||
	    !get_u64(rs, "firmware_revision1.device_available", &avail) ||
	    !get_u64(rs, "ipmi_version_major", &ipmi_major) ||
	    !get_u64(rs, "ipmi_version_minor", &ipmi_minor) ||
	    !get_u64(rs, "manufacturer_id.id", &mfg) || !get_u64(rs, "product_id", &prod) ||
	    !get_u64(rs, "device_id", &dev_id) ||
	    !get_u64(rs, "device_revision.revision", &dev_rev)) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				"bmc '%s' sent a short get device id answer", s->node);
		goto out;
	}
	/* The minor revision is BCD: 0x74 is "74". */
	snprintf(version, sizeof(version), "%u.%02x", (unsigned)major, (unsigned)minor);
	c->key = gf_xstrdup(gf_compkey_rules[GF_COMPKEY_BMC].key);
	c->id = gf_xstrdup("bmc");
	c->name = gf_xstrdup("BMC");
	c->kind = gf_xstrdup(gf_compkey_rules[GF_COMPKEY_BMC].kind);
	c->version = gf_xstrdup(version);
	c->updateable = false; /* not over IPMI */
	snprintf(version, sizeof(version), "%u.%u", (unsigned)ipmi_major, (unsigned)ipmi_minor);
	c->details = json_pack("{s:s,s:I,s:I,s:i,s:i,s:b}", "ipmi_version", version,
			       "manufacturer_id", (json_int_t)mfg, "product_id", (json_int_t)prod,
			       "device_id", (int)dev_id, "device_revision", (int)dev_rev,
			       "available", avail == 0);
	if (!c->details) {
		rc = nomem(err);
		goto out;
	}
	n = ipmi_iana_enterprise_numbers_string((uint32_t)mfg, mfg_name, sizeof(mfg_name));
	if (n > 0 && (size_t)n < sizeof(mfg_name)) {
		mfg_name[n] = '\0';
		json_object_set_new(c->details, "manufacturer", json_string(mfg_name));
	}
	/* Optional, vendor-defined: the four bytes as sent, in hex. */
	if (FIID_OBJ_GET(rs, "auxiliary_firmware_revision_information", &aux) == 1) {
		snprintf(version, sizeof(version), "%02x%02x%02x%02x", (unsigned)(aux & 0xff),
			 (unsigned)((aux >> 8) & 0xff), (unsigned)((aux >> 16) & 0xff),
			 (unsigned)((aux >> 24) & 0xff));
		json_object_set_new(c->details, "aux_revision", json_string(version));
	}
	rc = 0;
out:
	fiid_obj_destroy(rs);
	return rc;
}

/*
 * The system firmware (BIOS) version from Get System Info Parameters
 * parameter 1, set there by the BIOS at boot. *@ret stays NULL when the BMC
 * does not keep it.
 */
static int bios_read(struct ipmi_session *s, char **ret, struct gf_err *err)
{
	fiid_obj_t rs = fiid_obj_create(
		tmpl_cmd_get_system_info_parameters_system_firmware_version_first_set_rs);
	fiid_obj_t rs2 = NULL;
	char text[SYSINFO_MAX + SYSINFO_SET_LEN + 1];
	uint64_t enc, total;
	size_t have = 0;
	int rc, n;

	if (!rs)
		return nomem(err);
	if (ipmi_cmd_get_system_info_parameters_system_firmware_version_first_set(
		    s->ctx, IPMI_GET_SYSTEM_INFO_PARAMETER, 0, 0, rs) < 0) {
		rc = optional_failure(s, rs) ? 0
					     : gf_ipmi_cmd_error(s, "get system firmware version",
								 rs, IPMI_NET_FN_APP_RQ, err);
		goto out;
	}
	if (!get_u64(rs, "encoding", &enc) || !get_u64(rs, "string_length", &total)) {
		rc = 0; /* malformed: not reported */
		goto out;
	}
	n = fiid_obj_get_data(rs, "string", text, SYSINFO_FIRST_LEN);
	if (n < 0) {
		rc = 0;
		goto out;
	}
	have = (size_t)n;
	rs2 = fiid_obj_create(tmpl_cmd_get_system_info_parameters_system_firmware_version_rs);
	if (!rs2) {
		rc = nomem(err);
		goto out;
	}
	for (uint8_t set = 1; have < total && have < SYSINFO_MAX; set++) {
		fiid_obj_clear(rs2);
		if (ipmi_cmd_get_system_info_parameters_system_firmware_version(
			    s->ctx, IPMI_GET_SYSTEM_INFO_PARAMETER, set, 0, rs2) < 0) {
			if (optional_failure(s, rs2))
				break; /* keep what came */
			rc = gf_ipmi_cmd_error(s, "get system firmware version", rs2,
					       IPMI_NET_FN_APP_RQ, err);
			goto out;
		}
		n = fiid_obj_get_data(rs2, "string", text + have, SYSINFO_SET_LEN);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	if (have > total)
		have = (size_t)total;
	if (enc == IPMI_SYSTEM_INFO_ENCODING_UNICODE) {
		/* UCS-2, little end first: keep the ASCII. */
		size_t w = 0;

		for (size_t i = 0; i + 1 < have; i += 2)
			text[w++] = text[i + 1] == 0 && text[i] > 0 ? text[i] : '?';
		have = w;
	}
	*ret = trimmed(text, strnlen(text, have));
	rc = 0;
out:
	fiid_obj_destroy(rs);
	fiid_obj_destroy(rs2);
	return rc;
}

/* The BIOS version read once per session (hardware and firmware both report it): a copy. */
static int bios_version(struct ipmi_session *s, char **ret, struct gf_err *err)
{
	if (!s->bios_read) {
		int rc = bios_read(s, &s->bios, err);

		if (rc < 0)
			return rc;
		s->bios_read = true;
	}
	*ret = s->bios ? gf_xstrdup(s->bios) : NULL;
	return 0;
}

int gf_ipmi_firmware(void *session, struct gf_component_list *ret, struct gf_err *err)
{
	struct ipmi_session *s = session;
	struct gf_component_list l = {0};
	char *bios = NULL;
	int rc;

	rc = bmc_component(s, gf_component_list_add(&l), err);
	if (rc < 0)
		goto fail;
	rc = bios_version(s, &bios, err);
	if (rc < 0)
		goto fail;
	if (bios) {
		struct gf_component *c = gf_component_list_add(&l);

		c->key = gf_xstrdup(gf_compkey_rules[GF_COMPKEY_BIOS].key);
		c->id = gf_xstrdup("system_firmware_version");
		c->name = gf_xstrdup("BIOS");
		c->kind = gf_xstrdup(gf_compkey_rules[GF_COMPKEY_BIOS].kind);
		c->version = bios;
	}
	*ret = l;
	return 0;
fail:
	gf_component_list_release(&l);
	return rc;
}

/* ---- hardware ------------------------------------------------------------ */

/* The system GUID as text (byte order as FreeIPMI prints it); NULL when none. */
static int system_guid(struct ipmi_session *s, char **ret, struct gf_err *err)
{
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_get_system_guid_rs);
	uint8_t g[16];
	char text[40];
	bool blank = true;
	int rc;

	if (!rs)
		return nomem(err);
	if (ipmi_cmd_get_system_guid(s->ctx, rs) < 0) {
		rc = optional_failure(s, rs)
			     ? 0
			     : gf_ipmi_cmd_error(s, "get system guid", rs, IPMI_NET_FN_APP_RQ, err);
		goto out;
	}
	rc = 0;
	if (fiid_obj_get_data(rs, "guid", g, sizeof(g)) != (int)sizeof(g))
		goto out;
	for (size_t i = 0; i < sizeof(g); i++)
		if (g[i] != 0 && g[i] != 0xff)
			blank = false;
	if (blank)
		goto out;
	/* IPMI sends the GUID least significant byte first. */
	snprintf(text, sizeof(text),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", g[15],
		 g[14], g[13], g[12], g[11], g[10], g[9], g[8], g[7], g[6], g[5], g[4], g[3], g[2],
		 g[1], g[0]);
	*ret = gf_xstrdup(text);
out:
	fiid_obj_destroy(rs);
	return rc;
}

/* One FRU type/length field as text into *@dst (replacing nothing: first wins). */
static void fru_text(ipmi_fru_ctx_t fc, const ipmi_fru_field_t *f, uint8_t lang, char **dst)
{
	char buf[IPMI_FRU_AREA_STRING_MAX + 1];
	unsigned int len = IPMI_FRU_AREA_STRING_MAX;

	if (*dst || !f->type_length_field_length)
		return;
	memset(buf, 0, sizeof(buf));
	if (ipmi_fru_type_length_field_to_string(fc, f->type_length_field,
						 f->type_length_field_length, lang, buf, &len) < 0)
		return;
	if (len > IPMI_FRU_AREA_STRING_MAX)
		len = IPMI_FRU_AREA_STRING_MAX;
	*dst = trimmed(buf, strnlen(buf, len));
}

static void fru_area(ipmi_fru_ctx_t fc, unsigned type, const uint8_t *buf, unsigned len,
		     struct gf_hardware *h)
{
	ipmi_fru_field_t a, b, c, d, e, f, g;
	uint8_t lang = IPMI_FRU_LANGUAGE_CODE_ENGLISH_LEGACY, ctype;
	uint32_t when;

	memset(&a, 0, sizeof(a));
	b = c = d = e = f = g = a;
	switch (type) {
	case IPMI_FRU_AREA_TYPE_CHASSIS_INFO_AREA:
		if (ipmi_fru_chassis_info_area(fc, buf, len, &ctype, &a, &b, NULL, 0) < 0)
			return;
		fru_text(fc, &a, lang, &h->chassis.part_number);
		fru_text(fc, &b, lang, &h->chassis.serial);
		break;
	case IPMI_FRU_AREA_TYPE_BOARD_INFO_AREA:
		if (ipmi_fru_board_info_area(fc, buf, len, &lang, &when, &a, &b, &c, &d, &e, NULL,
					     0) < 0)
			return;
		fru_text(fc, &a, lang, &h->board.manufacturer);
		fru_text(fc, &b, lang, &h->board.product);
		fru_text(fc, &c, lang, &h->board.serial);
		fru_text(fc, &d, lang, &h->board.part_number);
		break;
	case IPMI_FRU_AREA_TYPE_PRODUCT_INFO_AREA:
		if (ipmi_fru_product_info_area(fc, buf, len, &lang, &a, &b, &c, &d, &e, &f, &g,
					       NULL, 0) < 0)
			return;
		fru_text(fc, &a, lang, &h->product.manufacturer);
		fru_text(fc, &b, lang, &h->product.name);
		fru_text(fc, &c, lang, &h->product.part_number);
		fru_text(fc, &e, lang, &h->product.serial);
		fru_text(fc, &f, lang, &h->product.asset_tag);
		break;
	default: break; /* multirecord areas: power supplies and such, not in the model */
	}
}

/* The failure of FRU context @fc as @err; the ipmi context has the detail. */
static int fru_error(struct ipmi_session *s, ipmi_fru_ctx_t fc, struct gf_err *err)
{
	int e = ipmi_fru_ctx_errnum(fc);
	char why[128];

	switch (e) {
	case IPMI_FRU_ERR_IPMI_ERROR:
		return gf_ipmi_cmd_error(s, "read fru", NULL, IPMI_NET_FN_STORAGE_RQ, err);
	case IPMI_FRU_ERR_OUT_OF_MEMORY: return nomem(err);
	case IPMI_FRU_ERR_DEVICE_BUSY:
		return gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
				  "bmc '%s' refused read fru (fru device busy)", s->node);
	default:
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' sent a fru that cannot be read (%s)", s->node,
				  gf_ipmi_lower(ipmi_fru_ctx_errormsg(fc), why, sizeof(why)));
	}
}

/*
 * Does the failure of @fc fail the node? A lost session, no memory and a busy
 * FRU device do; a completion code, no FRU and a broken area only leave
 * fields out.
 */
static bool fru_fatal(struct ipmi_session *s, ipmi_fru_ctx_t fc)
{
	switch (ipmi_fru_ctx_errnum(fc)) {
	case IPMI_FRU_ERR_OUT_OF_MEMORY:
	case IPMI_FRU_ERR_DEVICE_BUSY: return true;
	case IPMI_FRU_ERR_IPMI_ERROR: return !optional_failure(s, NULL);
	default: return false;
	}
}

/*
 * Read FRU Data asks for this many bytes (FreeIPMI's reader asks 16); a BMC
 * that refuses it for its size gets FRU_CHUNK_MIN.
 */
#define FRU_CHUNK 32
#define FRU_CHUNK_MIN 16
/* The farthest an info area can end: offset and length are both 8 * 255 at most. */
#define FRU_IMAGE_MAX 4096
/* The header's offsets of the chassis, board and product areas, and their types. */
static const unsigned fru_info_areas[][2] = {
	{2, IPMI_FRU_AREA_TYPE_CHASSIS_INFO_AREA},
	{3, IPMI_FRU_AREA_TYPE_BOARD_INFO_AREA},
	{4, IPMI_FRU_AREA_TYPE_PRODUCT_INFO_AREA},
};

static bool fru_sum_ok(const uint8_t *p, unsigned len)
{
	uint8_t sum = 0;

	while (len--)
		sum = (uint8_t)(sum + *p++);
	return sum == 0;
}

/*
 * Up to @want bytes of FRU device 0 from @off into @dst, *@got of them: 0;
 * 1 when only FreeIPMI's reader can go on (a refusal, an odd answer); or
 * an error when the session failed.
 */
static int fru_chunk(struct ipmi_session *s, fiid_obj_t rs, unsigned off, unsigned want,
		     unsigned *chunk, uint8_t *dst, unsigned *got, struct gf_err *err)
{
	for (;;) {
		unsigned n = want < *chunk ? want : *chunk;
		uint64_t cc = 0, cnt = 0;

		fiid_obj_clear(rs);
		if (ipmi_cmd_read_fru_data(s->ctx, 0, (uint16_t)off, (uint8_t)n, rs) < 0) {
			if (!optional_failure(s, rs))
				return gf_ipmi_cmd_error(s, "read fru data", rs,
							 IPMI_NET_FN_STORAGE_RQ, err);
			/* "Request data length invalid", "... limit exceeded", "cannot return". */
			if (FIID_OBJ_GET(rs, "comp_code", &cc) == 1 &&
			    (cc == 0xC7 || cc == 0xC8 || cc == 0xCA) && *chunk > FRU_CHUNK_MIN) {
				*chunk = FRU_CHUNK_MIN;
				continue;
			}
			return 1;
		}
		if (FIID_OBJ_GET(rs, "count_returned", &cnt) != 1 || cnt == 0 || cnt > n ||
		    fiid_obj_get_data(rs, "requested_data", dst, n) < (int)cnt)
			return 1;
		*got = (unsigned)cnt;
		return 0;
	}
}

/*
 * FRU device 0 read whole in FRU_CHUNK pieces, as far as its chassis, board
 * and product areas go, then parsed as FreeIPMI's reader hands areas out
 * (without their version and length bytes): a third of the round trips of
 * 16-byte reads. 1 when FreeIPMI's reader must do it (word access, no FRU,
 * a header it does not take, a refusal).
 */
static int read_fru_whole(struct ipmi_session *s, struct gf_hardware *h, struct gf_err *err)
{
	fiid_obj_t info = fiid_obj_create(tmpl_cmd_get_fru_inventory_area_info_rs);
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_read_fru_data_rs);
	uint64_t size = 0, words = 1;
	unsigned chunk = FRU_CHUNK, have = 0, need = 8;
	uint8_t *img = NULL;
	ipmi_fru_ctx_t fc = NULL;
	int rc = 1;

	if (!info || !rs) {
		rc = nomem(err);
		goto out;
	}
	if (ipmi_cmd_get_fru_inventory_area_info(s->ctx, 0, info) < 0) {
		if (!optional_failure(s, info))
			rc = gf_ipmi_cmd_error(s, "get fru inventory area info", info,
					       IPMI_NET_FN_STORAGE_RQ, err);
		goto out;
	}
	if (FIID_OBJ_GET(info, "fru_inventory_area_size", &size) != 1 ||
	    FIID_OBJ_GET(info, "device_is_accessed", &words) != 1 || words != 0 || size < 8)
		goto out;
	if (size > FRU_IMAGE_MAX)
		size = FRU_IMAGE_MAX;
	img = gf_xcalloc(1, (size_t)size);
	while (have < need) {
		unsigned got = 0, want = (unsigned)size - have;

		rc = fru_chunk(s, rs, have, want, &chunk, img + have, &got, err);
		if (rc)
			goto out;
		have += got;
		if (have < 8)
			continue;
		rc = 1;
		if (img[0] != 1 || !fru_sum_ok(img, 8))
			goto out;
		/* As far as the areas go: each one's length is in its second byte. */
		for (size_t k = 0; k < sizeof(fru_info_areas) / sizeof(fru_info_areas[0]); k++) {
			unsigned off = img[fru_info_areas[k][0]] * 8u, end;

			if (!off || off + 2 > size)
				continue;
			end = have >= off + 2 ? off + img[off + 1] * 8u : off + 2;
			if (end <= size && end > need)
				need = end;
		}
		rc = 0;
	}
	fc = ipmi_fru_ctx_create(s->ctx);
	if (!fc) {
		rc = nomem(err);
		goto out;
	}
	/* A bad area is left out, as FreeIPMI's reader leaves it out. */
	for (size_t k = 0; k < sizeof(fru_info_areas) / sizeof(fru_info_areas[0]); k++) {
		unsigned off = img[fru_info_areas[k][0]] * 8u, len;

		if (!off || off + 2 > size)
			continue;
		len = img[off + 1] * 8u;
		if (img[off] != 1 || len < 2 || off + len > size || !fru_sum_ok(img + off, len))
			continue;
		fru_area(fc, fru_info_areas[k][1], img + off + 2, len - 2, h);
	}
	rc = 0;
out:
	if (fc)
		ipmi_fru_ctx_destroy(fc);
	free(img);
	fiid_obj_destroy(info);
	fiid_obj_destroy(rs);
	return rc;
}

/*
 * FRU device 0, the one the BMC keeps for the system. No FRU is not an
 * error; an area with a bad checksum or format is skipped.
 */
static int read_fru(struct ipmi_session *s, struct gf_hardware *h, struct gf_err *err)
{
	ipmi_fru_ctx_t fc;
	uint8_t *buf = NULL;
	int rc = read_fru_whole(s, h, err), more;

	if (rc <= 0)
		return rc;
	rc = 0;
	fc = ipmi_fru_ctx_create(s->ctx);
	if (!fc)
		return nomem(err);
	if (ipmi_fru_open_device_id(fc, 0) < 0) {
		if (fru_fatal(s, fc))
			rc = fru_error(s, fc, err);
		goto out;
	}
	buf = gf_xmalloc(IPMI_FRU_AREA_SIZE_MAX + 1);
	do {
		unsigned int type = 0, len = 0;

		if (ipmi_fru_read_data_area(fc, &type, &len, buf, IPMI_FRU_AREA_SIZE_MAX) < 0) {
			if (fru_fatal(s, fc)) {
				rc = fru_error(s, fc, err);
				goto close;
			}
		} else {
			fru_area(fc, type, buf, len, h);
		}
		more = ipmi_fru_next(fc);
	} while (more == 1);
	if (more < 0 && fru_fatal(s, fc))
		rc = fru_error(s, fc, err);
close:
	ipmi_fru_close_device_id(fc);
out:
	free(buf);
	ipmi_fru_ctx_destroy(fc);
	return rc;
}

static char *first_of(const char *a, const char *b)
{
	return a ? gf_xstrdup(a) : b ? gf_xstrdup(b) : NULL;
}

int gf_ipmi_hardware(void *session, struct gf_hardware *ret, struct gf_err *err)
{
	struct ipmi_session *s = session;
	struct gf_hardware h = {0};
	int rc;

	if ((rc = read_fru(s, &h, err)) < 0 || (rc = system_guid(s, &h.system.uuid, err)) < 0 ||
	    (rc = bios_version(s, &h.system.bios_version, err)) < 0) {
		gf_hardware_release(&h);
		return rc;
	}
	/* The system is what the product area says; the board stands in for a missing one. */
	h.system.manufacturer = first_of(h.product.manufacturer, h.board.manufacturer);
	h.system.model = first_of(h.product.name, h.board.product);
	h.system.serial = first_of(h.product.serial, h.chassis.serial);
	*ret = h;
	return 0;
}
