/*
 * The IPMI words of a credentials profile: cipher suites, workarounds and
 * the privilege level. lib/creds.c keeps them as written; they are checked
 * here as the file is read (gf_ipmi_backend.profile_check) and parsed here
 * again when a session opens.
 */
#include "ipmi/internal.h"
#include "lib/util.h"

#include <errno.h>
#include <ipmiconsole.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Cipher suite IDs FreeIPMI can use (ipmipower -I). */
static const int cipher_suites[] = {0, 1, 2, 3, 6, 7, 8, 11, 12, 15, 16, 17};

/*
 * ipmipower -W names, from ipmipower(8), and ipmiconsole -W's for Serial over
 * LAN (ipmiconsole(8)); the flags of the other IPMI version are ignored, and
 * the SOL ones matter to the console only.
 */
static const struct {
	const char *name;
	unsigned v15; /* IPMI_WORKAROUND_FLAGS_OUTOFBAND_* */
	unsigned v20; /* IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_* */
	unsigned sol; /* IPMICONSOLE_WORKAROUND_* */
} workarounds[] = {
	{"authcap", IPMI_WORKAROUND_FLAGS_OUTOFBAND_AUTHENTICATION_CAPABILITIES,
	 IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_AUTHENTICATION_CAPABILITIES,
	 IPMICONSOLE_WORKAROUND_AUTHENTICATION_CAPABILITIES},
	{"nochecksumcheck", IPMI_WORKAROUND_FLAGS_OUTOFBAND_NO_CHECKSUM_CHECK,
	 IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NO_CHECKSUM_CHECK,
	 IPMICONSOLE_WORKAROUND_NO_CHECKSUM_CHECK},
	{"idzero", IPMI_WORKAROUND_FLAGS_OUTOFBAND_ACCEPT_SESSION_ID_ZERO, 0, 0},
	{"unexpectedauth", IPMI_WORKAROUND_FLAGS_OUTOFBAND_CHECK_UNEXPECTED_AUTHCODE, 0, 0},
	{"forcepermsg", IPMI_WORKAROUND_FLAGS_OUTOFBAND_FORCE_PERMSG_AUTHENTICATION, 0, 0},
	{"endianseq", IPMI_WORKAROUND_FLAGS_OUTOFBAND_BIG_ENDIAN_SEQUENCE_NUMBER, 0, 0},
	{"noauthcodecheck", IPMI_WORKAROUND_FLAGS_OUTOFBAND_NO_AUTH_CODE_CHECK, 0, 0},
	{"intel20", 0, IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_INTEL_2_0_SESSION,
	 IPMICONSOLE_WORKAROUND_INTEL_2_0_SESSION},
	{"supermicro20", 0, IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUPERMICRO_2_0_SESSION,
	 IPMICONSOLE_WORKAROUND_SUPERMICRO_2_0_SESSION},
	{"sun20", 0, IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUN_2_0_SESSION,
	 IPMICONSOLE_WORKAROUND_SUN_2_0_SESSION},
	{"opensesspriv", 0, IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE,
	 IPMICONSOLE_WORKAROUND_OPEN_SESSION_PRIVILEGE},
	{"integritycheckvalue", 0,
	 IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NON_EMPTY_INTEGRITY_CHECK_VALUE,
	 IPMICONSOLE_WORKAROUND_NON_EMPTY_INTEGRITY_CHECK_VALUE},
	{"ipmiping", 0, 0, 0}, /* ipmipower's own discovery; nothing for a session */
	/* ipmiconsole -W: Serial over LAN only */
	{"solpayloadsize", 0, 0, IPMICONSOLE_WORKAROUND_IGNORE_SOL_PAYLOAD_SIZE},
	{"solport", 0, 0, IPMICONSOLE_WORKAROUND_IGNORE_SOL_PORT},
	{"solstatus", 0, 0, IPMICONSOLE_WORKAROUND_SKIP_SOL_ACTIVATION_STATUS},
	{"solchannelsupport", 0, 0, IPMICONSOLE_WORKAROUND_SKIP_CHANNEL_PAYLOAD_SUPPORT},
	{"serialalertsdeferred", 0, 0, IPMICONSOLE_WORKAROUND_SERIAL_ALERTS_DEFERRED},
	{"solpacketseq", 0, 0, IPMICONSOLE_WORKAROUND_INCREMENT_SOL_PACKET_SEQUENCE},
};

static const struct {
	const char *name;
	uint8_t level;
} privileges[] = {
	{"user", IPMI_PRIVILEGE_LEVEL_USER},
	{"operator", IPMI_PRIVILEGE_LEVEL_OPERATOR},
	{"admin", IPMI_PRIVILEGE_LEVEL_ADMIN},
};

/*
 * One value each, named @key in the message: a cipher suite (-1: default),
 * workarounds ("none", or names separated by commas, blanks around them
 * allowed; the flags of both IPMI versions), a privilege level (any case).
 * GF_E_CONFIG with the reason otherwise.
 */
static int cipher_parse(const char *key, const char *v, int *ret, struct gf_err *err)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (!*v || *end || errno || !((*v >= '0' && *v <= '9') || *v == '-'))
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE, "%s '%s' is not a number", key, v);
	if (n != -1) {
		size_t i = 0;

		while (i < NELEM(cipher_suites) && cipher_suites[i] != n)
			i++;
		if (i == NELEM(cipher_suites))
			return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					  "%s '%s' is not a cipher suite FreeIPMI supports "
					  "(0, 1, 2, 3, 6, 7, 8, 11, 12, 15, 16, 17, or -1 for the "
					  "default)",
					  key, v);
	}
	*ret = (int)n;
	return 0;
}

static int workarounds_parse(const char *key, const char *v, unsigned *ret_v15, unsigned *ret_v20,
			     unsigned *ret_sol, struct gf_err *err)
{
	unsigned v15 = 0, v20 = 0, sol = 0;
	const char *s = v;

	if (strcmp(v, "none") == 0)
		goto out;
	for (;;) {
		const char *end = strchr(s, ',');
		const char *b = s, *e = end ? end : s + strlen(s);
		size_t i;

		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (b == e)
			return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE, "%s '%s' has an empty name",
					  key, v);
		for (i = 0; i < NELEM(workarounds); i++)
			if (strlen(workarounds[i].name) == (size_t)(e - b) &&
			    memcmp(workarounds[i].name, b, (size_t)(e - b)) == 0)
				break;
		if (i == NELEM(workarounds))
			return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					  "%s '%.*s' is not a FreeIPMI workaround (see ipmipower(8) -W)",
					  key, (int)(e - b), b);
		v15 |= workarounds[i].v15;
		v20 |= workarounds[i].v20;
		sol |= workarounds[i].sol;
		if (!end)
			break;
		s = end + 1;
	}
out:
	*ret_v15 = v15;
	*ret_v20 = v20;
	*ret_sol = sol;
	return 0;
}

static int privilege_parse(const char *key, const char *v, uint8_t *ret, struct gf_err *err)
{
	for (size_t i = 0; i < NELEM(privileges); i++) {
		if (strcasecmp(v, privileges[i].name) == 0) {
			*ret = privileges[i].level;
			return 0;
		}
	}
	return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
			  "%s '%s' is not one of user, operator, admin", key, v);
}

int gf_ipmi_profile_check(const char *key, const char *value, struct gf_err *err)
{
	unsigned v15, v20, sol;
	uint8_t level;
	int cs;

	if (strcmp(key, "ipmi_cipher_suite") == 0)
		return cipher_parse(key, value, &cs, err);
	if (strcmp(key, "ipmi_workarounds") == 0)
		return workarounds_parse(key, value, &v15, &v20, &sol, err);
	if (strcmp(key, "ipmi_privilege") == 0)
		return privilege_parse(key, value, &level, err);
	return 0;
}

int gf_ipmi_profile_parse(const struct gf_profile *p, struct gf_ipmi_profile *ret,
			  struct gf_err *err)
{
	struct gf_ipmi_profile r = {.cipher_suite = -1, .privilege = IPMI_PRIVILEGE_LEVEL_ADMIN};
	unsigned v15 = 0, v20 = 0, sol = 0;
	struct gf_err e = {0};

	if ((p->ipmi_cipher_suite &&
	     cipher_parse("ipmi_cipher_suite", p->ipmi_cipher_suite, &r.cipher_suite, &e) < 0) ||
	    (p->ipmi_workarounds && workarounds_parse("ipmi_workarounds", p->ipmi_workarounds, &v15,
						      &v20, &sol, &e) < 0) ||
	    (p->ipmi_privilege &&
	     privilege_parse("ipmi_privilege", p->ipmi_privilege, &r.privilege, &e) < 0))
		return gf_err_set(err, GF_E_CONFIG, GF_EK_INTERNAL, "profile '%s': %s",
				  p->name ? p->name : "default", e.msg);
	r.workaround_flags = p->ipmi_v15 ? v15 : v20;
	r.sol_workarounds = sol;
	*ret = r;
	return 0;
}

int gf_ipmi_cipher_records(const uint8_t *data, size_t len, uint8_t *ids, size_t max)
{
	size_t i = 0, n = 0;

	while (i < len) {
		uint8_t tag = data[i];

		if (tag != 0xC0 && tag != 0xC1)
			return -1; /* a record must start here */
		if (i + 1 >= len)
			return -1;
		if (n < max)
			ids[n] = data[i + 1];
		n++;
		i += tag == 0xC1 ? 5 : 2; /* OEM records carry a 3-byte IANA number */
		if (i > len)
			return -1;
		/* Algorithm bytes: 00xxxxxx, 01xxxxxx, 10xxxxxx; the next record starts at 11xxxxxx. */
		while (i < len && (data[i] & 0xC0) != 0xC0)
			i++;
	}
	return n > max ? (int)max : (int)n;
}

enum gf_ipmi_fallback gf_ipmi_fallback_verdict(bool definite, int listed)
{
	if (listed == 0 || (definite && listed < 0))
		return GF_IPMI_FALLBACK_MEMO;
	if (definite)
		return GF_IPMI_FALLBACK_USE; /* e.g. 17 disabled for this privilege level */
	return GF_IPMI_FALLBACK_REFUSE;
}
