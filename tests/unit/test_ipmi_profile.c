/*
 * ipmi/profile.c: the IPMI words of a credentials profile, checked as the
 * file is read (the messages a user sees, after "'FILE' line N: ") and
 * parsed when a session opens.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ipmiconsole.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ipmi/internal.h"
#include "ipmi/ipmi.h"
#include "lib/buf.h"
#include "lib/creds.h"
#include "tests/unit/creds_cases.h"

static char tmpdir[] = "/tmp/gf-test-ipmi-profile-XXXXXX";

/* @text as a 0600 credentials file; returns its path. */
static char *write_creds(const char *text)
{
	struct gf_buf b = GF_BUF_INIT;
	size_t len = strlen(text);
	char *path;
	int fd;

	gf_buf_addf(&b, "%s/creds.ini", tmpdir);
	path = gf_buf_detach(&b);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

/* Load @text the way the CLI does, with the IPMI backend's checks. */
static int load(const char *text, struct gf_creds *c, struct gf_err *err, char **ret_path)
{
	char *path = write_creds(text);
	int rc = gf_creds_load(path, true, gf_ipmi_backend.profile_check, c, err);

	if (ret_path)
		*ret_path = path;
	else
		free(path);
	return rc;
}

/* The parsed settings of profile @name of @text, which must load. */
static struct gf_ipmi_profile parsed(const char *text, const char *name)
{
	struct gf_creds c = {0};
	struct gf_err err = {0};
	const struct gf_profile *p = NULL;
	struct gf_ipmi_profile ip;

	if (load(text, &c, &err, NULL) != 0)
		fail_msg("load failed: %s", err.msg);
	assert_int_equal(gf_creds_resolve(&c, name, &p, &err), 0);
	if (gf_ipmi_profile_parse(p, &ip, &err) != 0)
		fail_msg("parse failed: %s", err.msg);
	gf_creds_release(&c);
	return ip;
}

static void test_defaults(void **state)
{
	struct gf_ipmi_profile ip = parsed("[a]\nbmc_user = x\n", "a");

	(void)state;
	assert_int_equal(ip.cipher_suite, -1);
	assert_int_equal(ip.workaround_flags, 0);
	assert_int_equal(ip.privilege, IPMI_PRIVILEGE_LEVEL_ADMIN);
	ip = parsed("[a]\nipmi_cipher_suite = -1\nipmi_workarounds = none\n", "a");
	assert_int_equal(ip.cipher_suite, -1);
	assert_int_equal(ip.workaround_flags, 0);
}

static void test_cipher_suites(void **state)
{
	static const int valid[] = {0, 1, 2, 3, 6, 7, 8, 11, 12, 15, 16, 17};
	struct gf_err err = {0};

	(void)state;
	for (int cs = -2; cs <= 20; cs++) {
		struct gf_buf b = GF_BUF_INIT;
		struct gf_creds c = {0};
		bool want = cs == -1;
		int rc;

		for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
			want = want || valid[i] == cs;
		gf_buf_addf(&b, "[default]\nipmi_cipher_suite = %d\n", cs);
		rc = load(gf_buf_str(&b), &c, &err, NULL);
		if ((rc == 0) != want)
			fail_msg("cipher suite %d: rc %d (%s)", cs, rc, err.msg);
		if (rc == 0) {
			gf_creds_release(&c);
			assert_int_equal(parsed(gf_buf_str(&b), "default").cipher_suite, cs);
		}
		gf_buf_release(&b);
	}
}

static void test_workarounds(void **state)
{
	struct gf_ipmi_profile ip;

	(void)state;
	/* Every name ipmipower -W knows loads. */
	parsed("[w]\nipmi_workarounds = authcap,nochecksumcheck,idzero,unexpectedauth,"
	       "forcepermsg,endianseq,noauthcodecheck,intel20,supermicro20,sun20,"
	       "opensesspriv,integritycheckvalue,ipmiping\n",
	       "w");
	/* Blanks around names; the flags are those of the profile's IPMI version. */
	ip = parsed("[w]\nipmi_workarounds = opensesspriv, authcap\n", "w");
	assert_int_equal(ip.workaround_flags,
			 IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE |
				 IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_AUTHENTICATION_CAPABILITIES);
	ip = parsed("[w]\nipmi_workarounds = opensesspriv, authcap\nipmi_version = 1.5\n", "w");
	assert_int_equal(ip.workaround_flags,
			 IPMI_WORKAROUND_FLAGS_OUTOFBAND_AUTHENTICATION_CAPABILITIES);
	ip = parsed("[w]\nipmi_workarounds = idzero\n", "w");
	assert_int_equal(ip.workaround_flags, 0); /* IPMI 1.5 only */
}

/* ipmiconsole -W's names for Serial over LAN load too; they change no other session. */
static void test_sol_workarounds(void **state)
{
	struct gf_ipmi_profile ip;

	(void)state;
	ip = parsed("[w]\nipmi_workarounds = solchannelsupport, solpayloadsize, opensesspriv\n",
		    "w");
	assert_int_equal(ip.workaround_flags,
			 IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE);
	assert_int_equal(ip.sol_workarounds,
			 IPMICONSOLE_WORKAROUND_SKIP_CHANNEL_PAYLOAD_SUPPORT |
				 IPMICONSOLE_WORKAROUND_IGNORE_SOL_PAYLOAD_SIZE |
				 IPMICONSOLE_WORKAROUND_OPEN_SESSION_PRIVILEGE);
	ip = parsed("[w]\nipmi_workarounds = solport,solstatus,serialalertsdeferred,solpacketseq\n",
		    "w");
	assert_int_equal(ip.workaround_flags, 0);
	assert_int_equal(ip.sol_workarounds,
			 IPMICONSOLE_WORKAROUND_IGNORE_SOL_PORT |
				 IPMICONSOLE_WORKAROUND_SKIP_SOL_ACTIVATION_STATUS |
				 IPMICONSOLE_WORKAROUND_SERIAL_ALERTS_DEFERRED |
				 IPMICONSOLE_WORKAROUND_INCREMENT_SOL_PACKET_SEQUENCE);
	ip = parsed("[w]\nipmi_workarounds = idzero\n", "w");
	assert_int_equal(ip.sol_workarounds, 0);
}

static void test_privilege(void **state)
{
	(void)state;
	assert_int_equal(parsed("[p]\nipmi_privilege = OPERATOR\n", "p").privilege,
			 IPMI_PRIVILEGE_LEVEL_OPERATOR);
	assert_int_equal(parsed("[p]\nipmi_privilege = user\n", "p").privilege,
			 IPMI_PRIVILEGE_LEVEL_USER);
	assert_int_equal(parsed("[p]\nipmi_privilege = Admin\n", "p").privilege,
			 IPMI_PRIVILEGE_LEVEL_ADMIN);
}

/* The messages of a bad value, unchanged since lib/creds.c checked them itself. */
static const struct bad_case bad_cases[] = {
	{"[a]\nipmi_cipher_suite = 4\n", 2,
	 "ipmi_cipher_suite '4' is not a cipher suite FreeIPMI supports (0, 1, 2, 3, 6, 7, 8, "
	 "11, 12, 15, 16, 17, or -1 for the default)"},
	{"[a]\nipmi_cipher_suite = 3x\n", 2, "ipmi_cipher_suite '3x' is not a number"},
	{"[a]\nipmi_cipher_suite = +3\n", 2, "ipmi_cipher_suite '+3' is not a number"},
	{"[a]\nipmi_cipher_suite =\n", 2, "ipmi_cipher_suite '' is not a number"},
	{"[a]\nipmi_workarounds = authcap,bogus\n", 2,
	 "ipmi_workarounds 'bogus' is not a FreeIPMI workaround (see ipmipower(8) -W)"},
	{"[a]\nipmi_workarounds = authcap,,idzero\n", 2,
	 "ipmi_workarounds 'authcap,,idzero' has an empty name"},
	{"[a]\nipmi_workarounds = authcap,\n", 2, "ipmi_workarounds 'authcap,' has an empty name"},
	{"[a]\nipmi_workarounds =\n", 2, "ipmi_workarounds '' has an empty name"},
	{"[a]\nipmi_workarounds = none,authcap\n", 2,
	 "ipmi_workarounds 'none' is not a FreeIPMI workaround (see ipmipower(8) -W)"},
	{"[a]\nipmi_privilege = root\n", 2,
	 "ipmi_privilege 'root' is not one of user, operator, admin"},
	/* The first bad line counts, whoever checks it. */
	{"[a]\nipmi_privilege = root\nbmc_pass = x\n", 2,
	 "ipmi_privilege 'root' is not one of user, operator, admin"},
	{"[a]\nbmc_pass = x\nipmi_privilege = root\n", 2, "unknown key 'bmc_pass' in profile 'a'"},
	{"[a]\nipmi_privilege = user\nipmi_privilege = root\n", 3,
	 "key 'ipmi_privilege' given twice in profile 'a'"},
};

static void test_bad_values(void **state)
{
	(void)state;
	assert_bad_cases(bad_cases, sizeof(bad_cases) / sizeof(bad_cases[0]),
			 gf_ipmi_backend.profile_check, write_creds);
}

/* A profile that skipped the checks (not loaded by the CLI) fails when a session opens. */
static void test_unchecked_profile(void **state)
{
	struct gf_profile p = {.name = (char *)"lab", .ipmi_privilege = (char *)"root"};
	struct gf_ipmi_profile ip = {.cipher_suite = 99};
	struct gf_err err = {0};

	(void)state;
	assert_int_equal(gf_ipmi_profile_parse(&p, &ip, &err), GF_E_CONFIG);
	assert_string_equal(err.msg,
			    "profile 'lab': ipmi_privilege 'root' is not one of user, operator, admin");
	assert_int_equal(ip.cipher_suite, 99); /* untouched */
	p.ipmi_privilege = NULL;
	p.ipmi_cipher_suite = (char *)"5";
	assert_int_equal(gf_ipmi_profile_parse(&p, &ip, &err), GF_E_CONFIG);
	assert_non_null(strstr(err.msg,
			       "profile 'lab': ipmi_cipher_suite '5' is not a cipher suite"));
}

static int setup(void **state)
{
	(void)state;
	unsetenv("GPUFLEET_BMC_USER");
	unsetenv("GPUFLEET_BMC_PASSWORD");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	struct gf_buf b = GF_BUF_INIT;

	(void)state;
	gf_buf_addf(&b, "%s/creds.ini", tmpdir);
	unlink(gf_buf_str(&b));
	gf_buf_release(&b);
	return rmdir(tmpdir);
}

/* Get Channel Cipher Suites record data, as BMCs send it (IPMI 2.0 22.15). */
static void test_cipher_records(void **state)
{
	/* ipmi_sim's first suites, then an OEM record (IANA 0x000157, Intel) with suite 17. */
	static const uint8_t sim[] = {0xC0, 0x00, 0x00, 0x40, 0x80, 0xC0, 0x01, 0x01,
				      0x40, 0x80, 0xC0, 0x03, 0x01, 0x41, 0x81};
	static const uint8_t oem[] = {0xC0, 0x03, 0x01, 0x41, 0x81, 0xC1, 0x11,
				      0x57, 0x01, 0x00, 0x03, 0x44, 0x81};
	static const uint8_t junk[] = {0x01, 0xC0, 0x11};
	static const uint8_t cut[] = {0xC0, 0x03, 0x01, 0xC0};
	static const uint8_t cut_oem[] = {0xC1, 0x11, 0x57};
	uint8_t ids[8];

	assert_int_equal(gf_ipmi_cipher_records(sim, sizeof(sim), ids, 8), 3);
	assert_int_equal(ids[0], 0);
	assert_int_equal(ids[1], 1);
	assert_int_equal(ids[2], 3);
	assert_int_equal(gf_ipmi_cipher_records(oem, sizeof(oem), ids, 8), 2);
	assert_int_equal(ids[1], 17);
	assert_int_equal(gf_ipmi_cipher_records(junk, sizeof(junk), ids, 8), -1);
	assert_int_equal(gf_ipmi_cipher_records(cut, sizeof(cut), ids, 8), -1);
	assert_int_equal(gf_ipmi_cipher_records(cut_oem, sizeof(cut_oem), ids, 8), -1);
	assert_int_equal(gf_ipmi_cipher_records(sim, 0, ids, 8), 0);
	assert_int_equal(gf_ipmi_cipher_records(sim, sizeof(sim), ids, 2), 2); /* only what fits */
}

/* Suite 3 stands only on a definite refusal or on the BMC's own list. */
static void test_fallback_verdict(void **state)
{
	assert_int_equal(gf_ipmi_fallback_verdict(false, 0), GF_IPMI_FALLBACK_MEMO);
	assert_int_equal(gf_ipmi_fallback_verdict(true, 0), GF_IPMI_FALLBACK_MEMO);
	assert_int_equal(gf_ipmi_fallback_verdict(true, -1), GF_IPMI_FALLBACK_MEMO);
	assert_int_equal(gf_ipmi_fallback_verdict(true, 1), GF_IPMI_FALLBACK_USE);
	/* A malformed answer (or a forged one) and a BMC that lists 17, or says nothing. */
	assert_int_equal(gf_ipmi_fallback_verdict(false, 1), GF_IPMI_FALLBACK_REFUSE);
	assert_int_equal(gf_ipmi_fallback_verdict(false, -1), GF_IPMI_FALLBACK_REFUSE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),          cmocka_unit_test(test_cipher_suites),
		cmocka_unit_test(test_workarounds),       cmocka_unit_test(test_sol_workarounds),
		cmocka_unit_test(test_privilege),         cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_unchecked_profile), cmocka_unit_test(test_cipher_records),
		cmocka_unit_test(test_fallback_verdict),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
