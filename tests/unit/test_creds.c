/*
 * Unit tests for lib/creds.c: the credentials file, profiles, overrides, password
 * commands. The IPMI words of a profile are ipmi/'s: tests/unit/test_ipmi_profile.c.
 */
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/buf.h"
#include "lib/creds.h"
#include "lib/bios.h"
#include "tests/unit/creds_cases.h"

/* A private directory per run (`dir`, dir.h); every test writes its files there. */
#define TMPDIR_PREFIX "/tmp/gf-test-creds-"
#include "tests/unit/tmpdir.h"

static char *path_in_tmp(const char *name)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_addf(&b, "%s/%s", dir, name);
	return gf_buf_detach(&b);
}

/* Write @text to a file named @name in the test directory with @mode; returns its path. */
static char *write_file(const char *name, const char *text, mode_t mode)
{
	char *path = path_in_tmp(name);
	size_t len = strlen(text);
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

static int setup(void **state)
{
	(void)state;
	unsetenv("GPUFLEET_BMC_USER");
	unsetenv("GPUFLEET_BMC_PASSWORD");
	gf_creds_forget_env();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unsetenv("GPUFLEET_BMC_USER");
	unsetenv("GPUFLEET_BMC_PASSWORD");
	gf_creds_forget_env();
	return 0;
}

/* Load @text written with mode 0600; asserts success. */
static void load_ok(const char *text, struct gf_creds *c)
{
	char *path = write_file("creds.ini", text, 0600);
	struct gf_err err = {0};

	if (gf_creds_load(path, true, NULL, c, &err) != 0)
		fail_msg("load failed: %s", err.msg);
	assert_string_equal(c->path, path);
	free(path);
}

static const struct gf_profile *resolve_ok(struct gf_creds *c, const char *name)
{
	const struct gf_profile *p = NULL;
	struct gf_err err = {0};

	if (gf_creds_resolve(c, name, &p, &err) != 0)
		fail_msg("resolve '%s' failed: %s", name ? name : "(null)", err.msg);
	assert_non_null(p);
	return p;
}

static void test_mode_refused(void **state)
{
	static const mode_t bad[] = {0644, 0640, 0604, 0610, 0601, 0660, 0777};
	static const mode_t good[] = {0600, 0400, 0700};
	struct gf_creds c = {.n = 42};
	struct gf_err err = {0};
	char *path, *want;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		path = write_file("loose.ini", "[default]\nbmc_user = admin\n", bad[i]);
		assert_int_equal(gf_creds_load(path, true, NULL, &c, &err), GF_E_CONFIG);
		assert_int_equal(c.n, 42); /* untouched */
		assert_non_null(strstr(err.msg, "is readable by group or others"));
		free(path);
	}
	path = write_file("loose.ini", "[default]\nbmc_user = admin\n", 0644);
	assert_int_equal(gf_creds_load(path, true, NULL, &c, &err), GF_E_CONFIG);
	{
		struct gf_buf b = GF_BUF_INIT;

		gf_buf_addf(&b,
			    "credentials file '%s' is readable by group or others (mode 0644); "
			    "chmod 600 it",
			    path);
		want = gf_buf_detach(&b);
	}
	assert_string_equal(err.msg, want);
	free(want);
	free(path);

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		path = write_file("tight.ini", "[default]\nbmc_user = admin\n", good[i]);
		assert_int_equal(gf_creds_load(path, true, NULL, &c, &err), 0);
		assert_string_equal(resolve_ok(&c, NULL)->bmc_user, "admin");
		gf_creds_release(&c);
		free(path);
	}
}

static void test_missing_file(void **state)
{
	char *path = path_in_tmp("does-not-exist.ini");
	struct gf_creds c = {0};
	struct gf_err err = {0};
	const struct gf_profile *p;

	(void)state;
	assert_int_equal(gf_creds_load(path, true, NULL, &c, &err), GF_E_CONFIG);
	assert_non_null(strstr(err.msg, "cannot be opened"));

	assert_int_equal(gf_creds_load(path, false, NULL, &c, &err), 0);
	assert_null(c.path);
	p = resolve_ok(&c, NULL);
	assert_string_equal(p->name, "default");
	assert_null(p->bmc_user);
	assert_null(p->bmc_password);
	assert_null(p->ipmi_cipher_suite);
	assert_false(p->ipmi_v15);
	assert_int_equal(gf_creds_resolve(&c, "lab", &p, &err), GF_E_CONFIG);
	assert_string_equal(err.msg, "profile 'lab' is unknown (no credentials file)");
	gf_creds_release(&c);
	free(path);

	/* A directory is not a credentials file. */
	assert_int_equal(gf_creds_load(dir, false, NULL, &c, &err), GF_E_CONFIG);
	assert_non_null(strstr(err.msg, "is not a regular file"));
}

static void test_all_keys(void **state)
{
	const char *text = "; credentials for the lab\n"
			   "# two comment styles\n"
			   "[lab]\n"
			   "bmc_user = root\n"
			   "bmc_password = pa ;ss # not a comment\n"
			   "ipmi_cipher_suite = 3\n"
			   "ipmi_workarounds = opensesspriv, authcap\n"
			   "ipmi_version = 1.5\n"
			   "ipmi_privilege = OPERATOR\n"
			   "ssh_user = ops\n"
			   "ssh_key = /home/ops/.ssh/id_ed25519\n"
			   "ssh_key_passphrase_env = GF_KEY_PASS\n"
			   "ssh_known_hosts = /etc/gpufleet/known_hosts\n"
			   "redfish_cacert = /etc/gpufleet/ca.pem\n"
			   "redfish_tls_pin = new\n"
			   "redfish_auth = session\n"
			   "bios_ignore = bios.httpdev?ip, BIOS.IscsiDev*TargetName\n"
			   "\n"
			   "[vault]\n"
			   "bmc_user=\n"
			   "bmc_password_command = echo hunter2\n"
			   "ipmi_version = 2.0\n"
			   "ipmi_workarounds = none\n"
			   "ipmi_cipher_suite = -1\n";
	const struct gf_profile *p;
	struct gf_creds c = {0};

	(void)state;
	load_ok(text, &c);
	assert_int_equal(c.n, 3); /* lab, vault, and default */

	p = resolve_ok(&c, "lab");
	assert_string_equal(p->name, "lab");
	assert_string_equal(p->bmc_user, "root");
	assert_string_equal(p->bmc_password, "pa ;ss # not a comment");
	assert_null(p->bmc_password_command);
	/* The IPMI words as written: ipmi/ reads them (tests/unit/test_ipmi_profile.c). */
	assert_string_equal(p->ipmi_cipher_suite, "3");
	assert_string_equal(p->ipmi_workarounds, "opensesspriv, authcap");
	assert_true(p->ipmi_v15);
	assert_string_equal(p->ipmi_privilege, "OPERATOR");
	assert_string_equal(p->ssh_user, "ops");
	assert_string_equal(p->ssh_key, "/home/ops/.ssh/id_ed25519");
	assert_string_equal(p->ssh_key_passphrase_env, "GF_KEY_PASS");
	assert_string_equal(p->ssh_known_hosts, "/etc/gpufleet/known_hosts");
	assert_string_equal(p->redfish_cacert, "/etc/gpufleet/ca.pem");
	assert_true(p->redfish_tls_pin_new);
	assert_true(p->redfish_sessions);
	assert_string_equal(p->bios_ignore, "bios.httpdev?ip, BIOS.IscsiDev*TargetName");
	assert_true(gf_bios_ignored("dell", p->bios_ignore, "bios.httpdev1ip"));
	assert_true(gf_bios_ignored(NULL, p->bios_ignore, "bios.iscsidev1con2targetname"));
	assert_false(gf_bios_ignored("dell", p->bios_ignore, "bios.httpdev1vlanid"));

	p = resolve_ok(&c, "vault");
	assert_null(p->bios_ignore);
	assert_false(p->redfish_tls_pin_new);
	assert_false(p->redfish_sessions);
	assert_string_equal(p->bmc_user, "");
	assert_string_equal(p->bmc_password_command, "echo hunter2");
	assert_string_equal(p->bmc_password, "hunter2");
	assert_false(p->ipmi_v15);
	assert_string_equal(p->ipmi_workarounds, "none");
	assert_string_equal(p->ipmi_cipher_suite, "-1");
	assert_null(p->ipmi_privilege);
	assert_null(p->ssh_user);

	p = resolve_ok(&c, NULL);
	assert_string_equal(p->name, "default");
	assert_null(p->bmc_user);

	gf_creds_release(&c);
	assert_int_equal(c.n, 0);
	assert_null(c.profiles);
}

/* A module's check of its keys: called with the key and value, its reason after "file line N: ". */
static int refuse_root(const char *key, const char *value, struct gf_err *err)
{
	if (strcmp(key, "ipmi_privilege") == 0 && strcmp(value, "root") == 0)
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE, "%s '%s' is refused", key, value);
	return 0;
}

static void test_checked_keys(void **state)
{
	struct gf_err err = {0};
	struct gf_creds c = {0};
	struct gf_buf want = GF_BUF_INIT;
	char *path = write_file("checked.ini",
				"[a]\nbmc_user = root\nipmi_workarounds = root\n"
				"ipmi_privilege = root\n",
				0600);

	(void)state;
	gf_buf_addf(&want, "'%s' line 4: ipmi_privilege 'root' is refused", path);
	assert_int_equal(gf_creds_load(path, true, refuse_root, &c, &err), GF_E_CONFIG);
	assert_string_equal(err.msg, gf_buf_str(&want));
	/* Without the check the value is kept as written, for whoever reads it. */
	assert_int_equal(gf_creds_load(path, true, NULL, &c, &err), 0);
	assert_string_equal(resolve_ok(&c, "a")->ipmi_privilege, "root");
	assert_string_equal(resolve_ok(&c, "a")->ipmi_workarounds, "root");
	gf_creds_release(&c);
	gf_buf_release(&want);
	free(path);
}

static const struct bad_case bad_cases[] = {
	{"[a]\nbios_ignore = bios.x, serial*\n", 2,
	 "bios_ignore 'bios.x, serial*': each pattern is a glob of bios.NAME keys (at most 200"
	 " bytes), comma separated"},
	{"[a]\nbios_ignore = ,\n", 2,
	 "bios_ignore names no pattern (bios.NAME globs, comma separated)"},
	{"bmc_user = x\n", 1, "key 'bmc_user' is outside any [profile] section"},
	{"[a]\nbmc_user = x\nbmc_pass = y\n", 3, "unknown key 'bmc_pass' in profile 'a'"},
	{"[a]\n\n# c\nBMC_USER = y\n", 4, "unknown key 'BMC_USER' in profile 'a'"},
	{"[a]\nbmc_user = x\nbmc_user = y\n", 3, "key 'bmc_user' given twice in profile 'a'"},
	{"[a]\nbmc_user = x\n[b]\nssh_user=s\n[a]\nbmc_user = y\n", 6,
	 "key 'bmc_user' given twice in profile 'a'"},
	{"[a]\nbmc_password = x\nbmc_password_command = cat /x\n", 3,
	 "profile 'a' has both bmc_password and bmc_password_command"},
	{"[a]\nbmc_password_command =\n", 2, "bmc_password_command is empty"},
	{"[a]\nipmi_version = 2\n", 2, "ipmi_version '2' is not 2.0 or 1.5"},
	{"[a]\nssh_key_passphrase_env = 1PASS\n", 2,
	 "ssh_key_passphrase_env '1PASS' is not an environment variable name"},
	{"[a]\nssh_user =\n", 2, "ssh_user is empty"},
	{"[a]\nssh_key =\n", 2, "ssh_key is empty"},
	{"[a]\nssh_known_hosts =\n", 2, "ssh_known_hosts is empty"},
	{"[a]\nredfish_cacert =\n", 2, "redfish_cacert is empty"},
	{"[a]\nredfish_tls_pin = yes\n", 2, "redfish_tls_pin 'yes' is not new or off"},
	{"[a]\nredfish_auth = basic\n", 2, "redfish_auth 'basic' is not session or auto"},
	{"[my lab]\nbmc_user = x\n", 2,
	 "profile name 'my lab' is not valid (letters, digits, '.', '_', '-', starting with a "
	 "letter or digit)"},
	{"[_lab]\nbmc_user = x\n", 2,
	 "profile name '_lab' is not valid (letters, digits, '.', '_', '-', starting with a "
	 "letter or digit)"},
	/* inih cuts section names at 49 characters: a name that long may have been cut. */
	{"[p23456789012345678901234567890123456789012345678901234567890]\nbmc_user = x\n", 2,
	 "profile name 'p234567890123456789012345678901234567890123456789' is longer than 48 "
	 "characters"},
	{"[a]\nbmc_user = x\nthis is not a key\n", 3,
	 "not a [profile] header nor a key = value line"},
	{"[a]\nbmc_user = x\n  continued\n", 3, "not a [profile] header nor a key = value line"},
	{"[a\nbmc_user = x\n", 1, "not a [profile] header nor a key = value line"},
};

static char *write_bad(const char *text)
{
	return write_file("bad.ini", text, 0600);
}

static void test_bad_values(void **state)
{
	(void)state;
	assert_bad_cases(bad_cases, sizeof(bad_cases) / sizeof(bad_cases[0]), NULL, write_bad);
}

static void test_long_line(void **state)
{
	struct gf_buf text = GF_BUF_INIT, want = GF_BUF_INIT;
	struct gf_creds c = {0};
	struct gf_err err = {0};
	char *path;

	(void)state;
	gf_buf_adds(&text, "[a]\nbmc_user = x\nbmc_password = ");
	for (int i = 0; i < 300; i++)
		gf_buf_addc(&text, 'p');
	gf_buf_adds(&text, "\n");
	path = write_file("long.ini", gf_buf_str(&text), 0600);
	assert_int_equal(gf_creds_load(path, true, NULL, &c, &err), GF_E_CONFIG);
	gf_buf_addf(&want, "'%s' line 3: line longer than", path);
	assert_memory_equal(err.msg, gf_buf_str(&want), want.len);
	gf_buf_release(&text);
	gf_buf_release(&want);
	free(path);
}

static void test_default_and_unknown(void **state)
{
	const struct gf_profile *p = NULL;
	struct gf_creds c = {0};
	struct gf_err err = {0};
	struct gf_buf want = GF_BUF_INIT;

	(void)state;
	/* No [default] in the file: it exists anyway, empty. */
	load_ok("[lab]\nbmc_user = root\n", &c);
	p = resolve_ok(&c, NULL);
	assert_string_equal(p->name, "default");
	assert_null(p->bmc_user);
	assert_ptr_equal(resolve_ok(&c, "default"), p);

	p = NULL;
	assert_int_equal(gf_creds_resolve(&c, "Lab", &p, &err), GF_E_CONFIG);
	assert_null(p);
	gf_buf_addf(&want, "profile 'Lab' is not in credentials file '%s'", c.path);
	assert_string_equal(err.msg, gf_buf_str(&want));
	gf_buf_release(&want);
	gf_creds_release(&c);

	/* A [default] in the file is the one used. */
	load_ok("[default]\nbmc_user = admin\n[lab]\nbmc_user = root\n", &c);
	assert_int_equal(c.n, 2);
	assert_string_equal(resolve_ok(&c, NULL)->bmc_user, "admin");
	gf_creds_release(&c);

	/* The longest profile name inih passes whole. */
	load_ok("[p23456789012345678901234567890123456789012345678]\nbmc_user = long\n", &c);
	assert_string_equal(resolve_ok(&c, "p23456789012345678901234567890123456789012345678")
				    ->bmc_user,
			    "long");
	gf_creds_release(&c);

	/* An empty file is fine too. */
	load_ok("", &c);
	assert_int_equal(c.n, 1);
	assert_string_equal(resolve_ok(&c, "default")->name, "default");
	gf_creds_release(&c);
}

static void test_env_override(void **state)
{
	struct gf_creds c = {0};
	const struct gf_profile *p;

	(void)state;
	load_ok("[lab]\nbmc_user = root\nbmc_password = calvin\n"
		"[cmd]\nbmc_password_command = echo ran >> ran.txt; echo frompcmd\n",
		&c);
	setenv("GPUFLEET_BMC_USER", "envuser", 1);
	p = resolve_ok(&c, "lab");
	assert_string_equal(p->bmc_user, "envuser");
	assert_string_equal(p->bmc_password, "calvin");

	setenv("GPUFLEET_BMC_PASSWORD", "envpass", 1);
	p = resolve_ok(&c, "lab");
	assert_string_equal(p->bmc_password, "envpass");
	/* Taken out of the environment once read: no child inherits it. */
	assert_null(getenv("GPUFLEET_BMC_PASSWORD"));
	{
		/* Resolving again keeps the strings an earlier caller may hold. */
		const char *user = p->bmc_user, *pass = p->bmc_password;

		p = resolve_ok(&c, "lab");
		assert_ptr_equal(p->bmc_user, user);
		assert_ptr_equal(p->bmc_password, pass);
	}
	p = resolve_ok(&c, NULL);
	assert_string_equal(p->bmc_user, "envuser");
	assert_string_equal(p->bmc_password, "envpass");

	/* The environment wins over a password command, which then never runs. */
	assert_int_equal(chdir(dir), 0);
	unlink("ran.txt");
	p = resolve_ok(&c, "cmd");
	assert_string_equal(p->bmc_password, "envpass");
	assert_int_equal(access("ran.txt", F_OK), -1);
	gf_creds_release(&c);
}

static void test_password_command(void **state)
{
	struct gf_creds c = {0};
	const struct gf_profile *p;
	FILE *f;
	char line[64];
	int runs = 0;

	(void)state;
	assert_int_equal(chdir(dir), 0);
	unlink("count.txt");
	load_ok("[a]\nbmc_user = root\n"
		"bmc_password_command = echo run >> count.txt; printf 's3cret\\nsecond line\\n'\n"
		"[crlf]\nbmc_password_command = printf 'win\\r\\n'\n"
		"[nonl]\nbmc_password_command = printf 'bare'\n"
		"[big]\nbmc_password_command = echo first; head -c 200000 /dev/zero | tr '\\0' x\n",
		&c);
	p = resolve_ok(&c, "a");
	assert_string_equal(p->bmc_password, "s3cret");
	assert_string_equal(p->bmc_user, "root");
	/* Cached: the second resolve does not run the command again. */
	p = resolve_ok(&c, "a");
	assert_string_equal(p->bmc_password, "s3cret");
	f = fopen("count.txt", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		runs++;
	fclose(f);
	assert_int_equal(runs, 1);

	assert_string_equal(resolve_ok(&c, "crlf")->bmc_password, "win");
	assert_string_equal(resolve_ok(&c, "nonl")->bmc_password, "bare");
	/* Output beyond the first line is read and dropped without harm. */
	assert_string_equal(resolve_ok(&c, "big")->bmc_password, "first");
	gf_creds_release(&c);
}

static void test_ssh_passphrase_command(void **state)
{
	struct gf_creds c = {0};
	const struct gf_profile *p;
	struct gf_err err = {0};

	(void)state;
	assert_int_equal(chdir(dir), 0);
	unlink("bmc-ran.txt");
	load_ok("[a]\nbmc_password_command = echo x > bmc-ran.txt; echo pw\n"
		"ssh_key_passphrase_command = printf 'key phrase\\n'\n"
		"[bad]\nssh_key_passphrase_command = exit 5\n",
		&c);
	assert_int_equal(gf_creds_resolve_ssh(&c, "a", &p, &err), 0);
	assert_string_equal(p->ssh_key_passphrase, "key phrase");
	/* SSH never needs the BMC password: its command did not run. */
	assert_null(p->bmc_password);
	assert_int_equal(access("bmc-ran.txt", F_OK), -1);
	assert_int_equal(gf_creds_resolve_ssh(&c, "bad", &p, &err), GF_E_CONFIG);
	assert_string_equal(err.msg,
			    "ssh key passphrase command for profile 'bad' failed (exit 5)");
	assert_int_equal(gf_creds_resolve_ssh(&c, "nope", &p, &err), GF_E_CONFIG);
	gf_creds_release(&c);
}

/* ssh_key_passphrase_env: read once, then gone from the environment, for every profile naming it. */
static void test_ssh_passphrase_env_taken(void **state)
{
	struct gf_creds c = {0};
	const struct gf_profile *p;
	struct gf_err err = {0};

	(void)state;
	setenv("GF_TEST_KEY_PASS", "open sesame", 1);
	load_ok("[a]\nssh_key_passphrase_env = GF_TEST_KEY_PASS\n"
		"[b]\nssh_key_passphrase_env = GF_TEST_KEY_PASS\n"
		"[c]\nssh_key_passphrase_env = GF_TEST_NOT_SET\n",
		&c);
	assert_int_equal(gf_creds_resolve_ssh(&c, "a", &p, &err), 0);
	assert_string_equal(p->ssh_key_passphrase, "open sesame");
	assert_null(getenv("GF_TEST_KEY_PASS"));
	assert_int_equal(gf_creds_resolve_ssh(&c, "b", &p, &err), 0);
	assert_string_equal(p->ssh_key_passphrase, "open sesame");
	assert_int_equal(gf_creds_resolve_ssh(&c, "c", &p, &err), 0);
	assert_null(p->ssh_key_passphrase);
	gf_creds_release(&c);
	gf_creds_forget_env();
}

/* Point 13: the command is not in any argv, has a timeout, and never sees the env password. */
static void test_secret_command_hygiene(void **state)
{
	struct gf_creds c = {0};
	const struct gf_profile *p;
	struct gf_err err = {0};
	struct timespec t0, t1;

	(void)state;
	load_ok("[argv]\nbmc_password_command = tr '\\0' ' ' < /proc/$$/cmdline | sed 's/ *$//'\n"
		"[env]\nssh_key_passphrase_command = echo ${GPUFLEET_BMC_PASSWORD-absent}\n"
		"[slow]\nsecret_command_timeout = 1s\nbmc_password_command = exec sleep 30\n",
		&c);
	/* What /bin/sh's argv shows (and ps, and /proc to every user): not the command. */
	assert_string_equal(resolve_ok(&c, "argv")->bmc_password, "sh -s");

	setenv("GPUFLEET_BMC_PASSWORD", "from-env", 1);
	gf_creds_take_env();
	assert_null(getenv("GPUFLEET_BMC_PASSWORD"));
	assert_int_equal(gf_creds_resolve_ssh(&c, "env", &p, &err), 0);
	assert_string_equal(p->ssh_key_passphrase, "absent");
	gf_creds_forget_env();

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(gf_creds_resolve(&c, "slow", &p, &err), GF_E_CONFIG);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_string_equal(err.msg, "password command for profile 'slow' took longer than 1 s "
				     "(secret_command_timeout) and was killed");
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	gf_creds_release(&c);

	{
		char *bad = write_file("bad.ini", "[x]\nsecret_command_timeout = 0s\n", 0600);

		assert_int_equal(gf_creds_load(bad, true, NULL, &c, &err), GF_E_CONFIG);
		assert_non_null(strstr(err.msg, "is not a duration above 0"));
		free(bad);
	}
}

/* Point 13: a link, another owner, a folder others can write: refused, as OpenSSH does. */
static void test_file_trust(void **state)
{
	struct gf_creds c = {0};
	struct gf_err err = {0};
	char *path = write_file("tight.ini", "[default]\nbmc_user = admin\n", 0600);
	char *link = path_in_tmp("link.ini");
	char *sub = path_in_tmp("open");
	struct gf_buf b = GF_BUF_INIT;
	char *inner;

	(void)state;
	unlink(link);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(gf_creds_load(link, true, NULL, &c, &err), GF_E_CONFIG);
	assert_non_null(strstr(err.msg, "is a symbolic link"));
	unlink(link);

	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(gf_creds_load(path, true, NULL, &c, &err), GF_E_CONFIG);
		assert_non_null(strstr(err.msg, "is owned by uid 65534, not by this user"));
		assert_int_equal(chown(path, 0, 0), 0);
	}

	rmdir(sub);
	assert_int_equal(mkdir(sub, 0700), 0);
	gf_buf_addf(&b, "%s/c.ini", sub);
	inner = gf_buf_detach(&b);
	{
		int fd = open(inner, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "[default]\n", 10), 10);
		close(fd);
	}
	assert_int_equal(gf_creds_load(inner, true, NULL, &c, &err), 0);
	gf_creds_release(&c);
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(gf_creds_load(inner, true, NULL, &c, &err), GF_E_CONFIG);
	assert_non_null(strstr(err.msg, "which group or others can write (mode 0777)"));
	/* Sticky, as /tmp: nobody else can rename what is in it. */
	assert_int_equal(chmod(sub, 01777), 0);
	assert_int_equal(gf_creds_load(inner, true, NULL, &c, &err), 0);
	gf_creds_release(&c);
	unlink(inner);
	rmdir(sub);
	free(inner);
	free(sub);
	free(link);
	free(path);
}

/*
 * gpufleet ignores SIGPIPE and its threads may block signals: a password
 * command must start with neither, or `vault read | head -1` would break.
 */
static void test_password_command_signals(void **state)
{
	struct gf_creds c = {0};
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
	sigset_t usr1, old_mask;
	unsigned long long blk = 1, ignored = 1;

	(void)state;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	assert_int_equal(sigaction(SIGPIPE, &ign, &old_pipe), 0);
	assert_int_equal(sigprocmask(SIG_BLOCK, &usr1, &old_mask), 0);
	load_ok("[sig]\nbmc_password_command = sed -n 's/^Sig\\(Blk\\|Ign\\):[[:space:]]*//p'"
		" /proc/self/status | tr '\\n' ' '\n",
		&c);
	assert_int_equal(sscanf(resolve_ok(&c, "sig")->bmc_password, "%llx %llx", &blk, &ignored),
			 2);
	assert_true(blk == 0);
	assert_false(ignored & (1ULL << (SIGPIPE - 1)));
	/* None of signals 1-31; glibc leaves its two internal ones (32, 33) ignored in any child. */
	assert_true((ignored & ((1ULL << 31) - 1)) == 0);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old_mask, NULL), 0);
	assert_int_equal(sigaction(SIGPIPE, &old_pipe, NULL), 0);
	gf_creds_release(&c);
}

static void test_password_command_fails(void **state)
{
	static const struct {
		const char *cmd;
		const char *msg;
	} cases[] = {
		{"echo partial; exit 3", "password command for profile 'x' failed (exit 3)"},
		{"true", "password command for profile 'x' failed (no output)"},
		{"echo", "password command for profile 'x' failed (no output)"},
		{"kill -TERM $$", "password command for profile 'x' failed (signal 15)"},
		{"/nonexistent/vault-cli get bmc 2>/dev/null",
		 "password command for profile 'x' failed (exit 127)"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gf_buf text = GF_BUF_INIT;
		const struct gf_profile *p = NULL;
		struct gf_creds c = {0};
		struct gf_err err = {0};

		gf_buf_addf(&text, "[x]\nbmc_password_command = %s\n", cases[i].cmd);
		load_ok(gf_buf_str(&text), &c);
		assert_int_equal(gf_creds_resolve(&c, "x", &p, &err), GF_E_CONFIG);
		assert_null(p);
		assert_string_equal(err.msg, cases[i].msg);
		/* A failure is not cached as a password. */
		assert_null(c.profiles[0].bmc_password);
		gf_creds_release(&c);
		gf_buf_release(&text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mode_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_all_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checked_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_and_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_override, setup, teardown),
		cmocka_unit_test_setup_teardown(test_password_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_password_command_signals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_password_command_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ssh_passphrase_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ssh_passphrase_env_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secret_command_hygiene, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_trust, setup, teardown),
	};
	int rc;

	rc = cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
	return rc;
}
