#include "lib/creds.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/bios.h"
#include "lib/buf.h"
#include "lib/proc.h"
#include "lib/util.h"

#define DEFAULT_PROFILE "default"
/* A credentials file is a few profiles; anything bigger is a mistake. */
#define MAX_FILE_SIZE (1024 * 1024)
/* The password is the first line of the command's output. */
#define MAX_PASSWORD_LINE 4096
/* How long a password or passphrase command may take by default, in seconds. */
#define SECRET_COMMAND_TIMEOUT 30.0
/*
 * inih keeps section names in a 50-byte buffer and cuts longer ones; a name
 * that fills it may have been cut, so such names are refused.
 */
#define MAX_PROFILE_NAME 48

static void profile_release(struct gf_profile *p)
{
	free(p->name);
	free(p->bmc_user);
	gf_free_secret(p->bmc_password);
	/* The command line may embed a secret too (a vault token, say). */
	gf_free_secret(p->bmc_password_command);
	free(p->ipmi_cipher_suite);
	free(p->ipmi_workarounds);
	free(p->ipmi_privilege);
	free(p->ssh_user);
	free(p->ssh_key);
	free(p->ssh_key_passphrase_env);
	gf_free_secret(p->ssh_key_passphrase_command);
	gf_free_secret(p->ssh_key_passphrase);
	free(p->ssh_known_hosts);
	free(p->redfish_cacert);
	free(p->bios_ignore);
	memset(p, 0, sizeof(*p));
}

static void profile_init(struct gf_profile *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	p->name = gf_xstrdup(name);
}

void gf_creds_release(struct gf_creds *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		profile_release(&c->profiles[i]);
	free(c->profiles);
	free(c->path);
	memset(c, 0, sizeof(*c));
}

static struct gf_profile *find_profile(struct gf_creds *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->profiles[i].name, name) == 0)
			return &c->profiles[i];
	return NULL;
}

static struct gf_profile *add_profile(struct gf_creds *c, const char *name)
{
	c->profiles = gf_xrealloc(c->profiles, (c->n + 1) * sizeof(*c->profiles));
	profile_init(&c->profiles[c->n], name);
	return &c->profiles[c->n++];
}

/* The parse state, shared by the line reader and the key handler. */
struct parse_state {
	const char *pos;         /* next unread byte of the file text */
	int line;                /* number of the line inih is working on */
	struct gf_creds *c;      /* profiles built so far */
	gf_creds_check_fn check; /* of the K_CHECKED keys, NULL: none */
	char msg[400];           /* the first error, without its "file line" prefix */
	int err_line;            /* its line, 0: none yet */
	unsigned *seen;          /* per profile, a bit per keys[] entry already given */
};

static int fail(struct parse_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct parse_state *st, const char *fmt, ...)
{
	va_list ap;

	if (st->err_line)
		return 0;
	va_start(ap, fmt);
	vsnprintf(st->msg, sizeof(st->msg), fmt, ap);
	va_end(ap);
	st->err_line = st->line;
	return 0;
}

/*
 * fgets() over the in-memory text, counting lines so that the handler knows
 * where it is (this libinih calls handlers without a line number). A line
 * longer than inih's buffer would be split silently, so it is an error here.
 */
static char *read_line(char *str, int num, void *stream)
{
	struct parse_state *st = stream;
	const char *nl;
	size_t len;

	if (st->err_line || !*st->pos)
		return NULL;
	nl = strchr(st->pos, '\n');
	len = nl ? (size_t)(nl - st->pos) + 1 : strlen(st->pos);
	st->line++;
	/* inih needs room for "\r\n" and the NUL. */
	if (num < 3 || len + 2 > (size_t)num) {
		fail(st, "line longer than %d characters", num - 3);
		return NULL;
	}
	memcpy(str, st->pos, len);
	str[len] = '\0';
	st->pos += len;
	return str;
}

/* Profile names follow the rule for node names: [A-Za-z0-9._-]+, starting alphanumeric. */
static bool name_ok(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

static bool env_name_ok(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

enum key_kind {
	K_TEXT,      /* any text, may be empty */
	K_NONEMPTY,  /* any text, not empty */
	K_SECRET,    /* any text, zeroed when freed */
	K_ENVNAME,   /* an environment variable name */
	K_CHECKED,   /* any text, checked by the module that reads it (gf_creds_check_fn) */
	K_CHOICE,    /* one of two words: the first sets the bool at @off to @first_value */
	K_DURATION,  /* a duration above 0 ("30s", "2m"): the double at @off, in seconds */
	K_BIOSGLOBS, /* bios.NAME globs, comma separated (gf_bios_ignore_check()) */
};

struct key_def {
	const char *name;
	enum key_kind kind;
	size_t off; /* offset of the field: char * for the string kinds, bool for K_CHOICE */
	const char *words[2]; /* K_CHOICE: the two words, in the order messages name them */
	bool first_value;     /* K_CHOICE: what the first word sets */
};

#define STR_KEY(n, k)                                                       \
	{                                                                   \
#n, k, offsetof(struct gf_profile, n), {NULL, NULL }, false \
	}
#define CHOICE_KEY(n, field, w1, v1, w2)                                        \
	{                                                                       \
#n, K_CHOICE, offsetof(struct gf_profile, field), {w1, w2 }, v1 \
	}

static const struct key_def keys[] = {
	STR_KEY(bmc_user, K_TEXT),
	STR_KEY(bmc_password, K_SECRET),
	STR_KEY(bmc_password_command, K_NONEMPTY),
	STR_KEY(ipmi_cipher_suite, K_CHECKED),
	STR_KEY(ipmi_workarounds, K_CHECKED),
	CHOICE_KEY(ipmi_version, ipmi_v15, "2.0", false, "1.5"),
	STR_KEY(ipmi_privilege, K_CHECKED),
	STR_KEY(ssh_user, K_NONEMPTY),
	STR_KEY(ssh_key, K_NONEMPTY),
	STR_KEY(ssh_key_passphrase_env, K_ENVNAME),
	STR_KEY(ssh_key_passphrase_command, K_NONEMPTY),
	STR_KEY(ssh_known_hosts, K_NONEMPTY),
	STR_KEY(redfish_cacert, K_NONEMPTY),
	STR_KEY(bios_ignore, K_BIOSGLOBS),
	CHOICE_KEY(redfish_tls_pin, redfish_tls_pin_new, "new", true, "off"),
	CHOICE_KEY(redfish_auth, redfish_sessions, "session", true, "auto"),
	{"secret_command_timeout",
	 K_DURATION,
	 offsetof(struct gf_profile, secret_command_timeout),
	 {NULL, NULL},
	 false},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

_Static_assert(NKEYS <= sizeof(unsigned) * 8, "one bit per key in parse_state.seen");

static struct gf_profile *section_profile(struct parse_state *st, const char *section,
					  size_t *ret_idx)
{
	struct gf_creds *c = st->c;
	struct gf_profile *p;

	p = find_profile(c, section);
	if (!p) {
		p = add_profile(c, section);
		st->seen = gf_xrealloc(st->seen, c->n * sizeof(*st->seen));
		st->seen[c->n - 1] = 0;
	}
	*ret_idx = (size_t)(p - c->profiles);
	return p;
}

static int set_choice(struct parse_state *st, struct gf_profile *p, const struct key_def *k,
		      const char *v)
{
	bool *field = (bool *)((char *)p + k->off);

	for (size_t w = 0; w < 2; w++) {
		if (strcmp(v, k->words[w]) == 0) {
			*field = w == 0 ? k->first_value : !k->first_value;
			return 1;
		}
	}
	return fail(st, "%s '%s' is not %s or %s", k->name, v, k->words[0], k->words[1]);
}

static int set_string(struct parse_state *st, struct gf_profile *p, const struct key_def *k,
		      const char *v)
{
	char **field = (char **)((char *)p + k->off);

	if (k->kind != K_TEXT && k->kind != K_SECRET && k->kind != K_CHECKED && !*v)
		return fail(st, "%s is empty", k->name);
	if (k->kind == K_ENVNAME && !env_name_ok(v))
		return fail(st, "%s '%s' is not an environment variable name", k->name, v);
	if (k->kind == K_BIOSGLOBS) {
		struct gf_err e = {0};

		if (gf_bios_ignore_check(v, &e) < 0)
			return fail(st, "%s", e.msg);
	}
	if (k->kind == K_CHECKED && st->check) {
		struct gf_err e = {0};

		if (st->check(k->name, v, &e) < 0)
			return fail(st, "%s", e.msg);
	}
	if (k->kind == K_SECRET)
		gf_free_secret(*field);
	else
		free(*field);
	*field = gf_xstrdup(v);
	return 1;
}

/* inih calls this for each "key = value"; returning 0 stops the parse. */
static int handle_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *st = user;
	const struct key_def *k = NULL;
	struct gf_profile *p;
	size_t idx, ki;

	if (!*section)
		return fail(st, "key '%s' is outside any [profile] section", name);
	if (!name_ok(section))
		return fail(st,
			    "profile name '%s' is not valid (letters, digits, '.', '_', '-', "
			    "starting with a letter or digit)",
			    section);
	if (strlen(section) > MAX_PROFILE_NAME)
		return fail(st, "profile name '%s' is longer than %d characters", section,
			    MAX_PROFILE_NAME);
	for (ki = 0; ki < NKEYS; ki++) {
		if (strcmp(keys[ki].name, name) == 0) {
			k = &keys[ki];
			break;
		}
	}
	if (!k)
		return fail(st, "unknown key '%s' in profile '%s'", name, section);
	p = section_profile(st, section, &idx);
	if (st->seen[idx] & (1u << ki))
		return fail(st, "key '%s' given twice in profile '%s'", name, section);
	st->seen[idx] |= 1u << ki;
	if ((strcmp(name, "bmc_password") == 0 && p->bmc_password_command) ||
	    (strcmp(name, "bmc_password_command") == 0 && p->bmc_password))
		return fail(st, "profile '%s' has both bmc_password and bmc_password_command",
			    section);
	if (k->kind == K_CHOICE)
		return set_choice(st, p, k, value);
	if (k->kind == K_DURATION) {
		double *field = (double *)((char *)p + k->off);
		double v;

		if (gf_parse_duration(value, &v, NULL) < 0 || !(v > 0))
			return fail(st, "%s '%s' is not a duration above 0 (30s, 2m)", name, value);
		*field = v;
		return 1;
	}
	return set_string(st, p, k, value);
}

/* Read all of @fd (a regular file of @size bytes as fstat saw it) into a new string. */
static int read_all(int fd, const char *path, off_t size, char **ret, struct gf_err *err)
{
	size_t cap = (size_t)size + 1, len = 0;
	char *text;

	if (size > MAX_FILE_SIZE)
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "credentials file '%s' is larger than %d bytes", path,
				  MAX_FILE_SIZE);
	text = gf_xmalloc(cap);
	for (;;) {
		ssize_t r;

		if (len + 1 == cap) {
			/*
			 * The file grew since fstat. Do not realloc: that would leave a
			 * copy of secrets behind in freed memory.
			 */
			char probe;

			r = read(fd, &probe, 1);
			if (r == 0)
				break;
			if (r < 0 && errno == EINTR)
				continue;
			explicit_bzero(text, cap);
			free(text);
			if (r > 0)
				return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
						  "credentials file '%s' changed while being read",
						  path);
			return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					  "credentials file '%s' cannot be read (%s)", path,
					  strerror(errno));
		}
		r = read(fd, text + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			explicit_bzero(text, cap);
			free(text);
			return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					  "credentials file '%s' cannot be read (%s)", path,
					  strerror(e));
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	text[len] = '\0';
	if (strlen(text) != len) {
		explicit_bzero(text, cap);
		free(text);
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "credentials file '%s' contains a NUL byte", path);
	}
	*ret = text;
	return 0;
}

/* Run inih over @text with options fit for secrets, then put its globals back. */
static int parse_text(const char *path, const char *text, gf_creds_check_fn check,
		      struct gf_creds *c, struct gf_err *err)
{
	struct parse_state st = {.pos = text, .c = c, .check = check};
	bool save_inline = ini_allow_inline_comments;
	bool save_multi = ini_allow_multiline;
	bool save_stop = ini_stop_on_first_error;
	bool save_noval = ini_allow_no_value;
	int rc = 0, r;

	/*
	 * A password may contain " ;", which inih would take for a comment, and
	 * an indented line would silently extend the previous value: both off.
	 */
	ini_allow_inline_comments = false;
	ini_allow_multiline = false;
	ini_stop_on_first_error = true;
	ini_allow_no_value = false;
	r = ini_parse_stream(read_line, &st, handle_key, &st);
	ini_allow_inline_comments = save_inline;
	ini_allow_multiline = save_multi;
	ini_stop_on_first_error = save_stop;
	ini_allow_no_value = save_noval;

	if (st.err_line)
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE, "'%s' line %d: %s", path, st.err_line,
				st.msg);
	else if (r > 0)
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				"'%s' line %d: not a [profile] header nor a key = value line", path,
				r);
	else if (r < 0)
		rc = gf_err_set(err, GF_E_NOMEM, GF_EK_NONE,
				"credentials file '%s' cannot be parsed", path);
	free(st.seen);
	return rc;
}

/*
 * Every folder above @path, resolved, from its own up to /: owned by the
 * effective user or root, and not writable by group or others unless sticky
 * (then nobody else can rename what lies in it, and the next level is checked).
 */
static int check_folders(const char *path, struct gf_err *err)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? gf_xstrndup(path, slash == path ? 1 : (size_t)(slash - path))
			  : gf_xstrdup(".");
	char *real = realpath(dir, NULL);
	int rc = 0;

	free(dir);
	if (!real)
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "the folder of credentials file '%s' cannot be resolved (%s)",
				  path, strerror(errno));
	for (;;) {
		struct stat sb;
		char *cut;

		if (stat(real, &sb) < 0) {
			rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					"folder '%s' of credentials file '%s' cannot be examined (%s)",
					real, path, strerror(errno));
			break;
		}
		if (sb.st_uid != 0 && sb.st_uid != geteuid()) {
			rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					"credentials file '%s' lies in folder '%s', owned by uid %u, "
					"not by this user or root",
					path, real, (unsigned)sb.st_uid);
			break;
		}
		if ((sb.st_mode & 022) && !(sb.st_mode & S_ISVTX)) {
			rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					"credentials file '%s' lies in folder '%s', which group or "
					"others can write (mode %04o)",
					path, real, (unsigned)(sb.st_mode & 07777));
			break;
		}
		if (strcmp(real, "/") == 0)
			break;
		cut = strrchr(real, '/');
		if (cut == real)
			cut[1] = '\0';
		else
			*cut = '\0';
	}
	free(real);
	return rc;
}

int gf_creds_load(const char *path, bool must_exist, gf_creds_check_fn check, struct gf_creds *ret,
		  struct gf_err *err)
{
	struct gf_creds c = {0};
	struct stat sb;
	char *text = NULL;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT && !must_exist)
			goto out_default;
		if (errno == ELOOP)
			return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					  "credentials file '%s' is a symbolic link; name the file "
					  "itself",
					  path);
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "credentials file '%s' cannot be opened (%s)", path,
				  strerror(errno));
	}
	/* Check the file we opened, not the name: it may have been swapped since. */
	if (fstat(fd, &sb) < 0) {
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				"credentials file '%s' cannot be examined (%s)", path,
				strerror(errno));
		close(fd);
		return rc;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "credentials file '%s' is not a regular file", path);
	}
	if (sb.st_uid != 0 && sb.st_uid != geteuid()) {
		close(fd);
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "credentials file '%s' is owned by uid %u, not by this user (uid "
				  "%u) or root",
				  path, (unsigned)sb.st_uid, (unsigned)geteuid());
	}
	if ((rc = check_folders(path, err)) < 0) {
		close(fd);
		return rc;
	}
	if (sb.st_mode & 077) {
		close(fd);
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "credentials file '%s' is readable by group or others (mode %04o); "
				  "chmod 600 it",
				  path, (unsigned)(sb.st_mode & 07777));
	}
	rc = read_all(fd, path, sb.st_size, &text, err);
	close(fd);
	if (rc)
		return rc;
	rc = parse_text(path, text, check, &c, err);
	gf_free_secret(text);
	if (rc) {
		gf_creds_release(&c);
		return rc;
	}
	c.path = gf_xstrdup(path);
out_default:
	if (!find_profile(&c, DEFAULT_PROFILE))
		add_profile(&c, DEFAULT_PROFILE);
	*ret = c;
	return 0;
}

static struct {
	char *password; /* GPUFLEET_BMC_PASSWORD as it was, NULL: not set */
} env_secret;

void gf_creds_take_env(void)
{
	char *v = getenv("GPUFLEET_BMC_PASSWORD");

	if (!v)
		return;
	gf_free_secret(env_secret.password);
	env_secret.password = gf_xstrdup(v);
	/* The memory /proc/PID/environ shows is this very string: blank it, then drop the name. */
	explicit_bzero(v, strlen(v));
	unsetenv("GPUFLEET_BMC_PASSWORD");
}

/*
 * The variables ssh_key_passphrase_env named, taken out of the environment
 * once read (as GPUFLEET_BMC_PASSWORD is): what later commands this process
 * runs, and /proc/PID/environ, no longer show. Main thread only.
 */
static struct {
	char *name[8];
	char *value[8];
	size_t n;
} env_taken;

static char *take_env_var(const char *name)
{
	char *v;

	for (size_t i = 0; i < env_taken.n; i++)
		if (strcmp(env_taken.name[i], name) == 0)
			return gf_xstrdup(env_taken.value[i]);
	v = getenv(name);
	if (!v)
		return NULL;
	if (env_taken.n < NELEM(env_taken.name)) {
		env_taken.name[env_taken.n] = gf_xstrdup(name);
		env_taken.value[env_taken.n++] = gf_xstrdup(v);
	}
	v = gf_xstrdup(v);
	explicit_bzero(getenv(name), strlen(v));
	unsetenv(name);
	return v;
}

void gf_creds_forget_env(void)
{
	gf_free_secret(env_secret.password);
	env_secret.password = NULL;
	for (size_t i = 0; i < env_taken.n; i++) {
		free(env_taken.name[i]);
		gf_free_secret(env_taken.value[i]);
	}
	env_taken.n = 0;
}

/*
 * Run @cmd with `/bin/sh -s`, the command on its standard input (not in
 * argv, which /proc shows everyone), and return the first line of its
 * standard output; killed when it takes longer than the profile allows.
 * Standard error stays the caller's; a command that prompts reads /dev/tty.
 */
static int run_secret_command(const struct gf_profile *p, const char *cmd, const char *what,
			      char **ret, struct gf_err *err)
{
	static const struct gf_proc_opts how = {.out = GF_PROC_PIPE, .script = true};
	double limit = p->secret_command_timeout > 0 ? p->secret_command_timeout
						     : SECRET_COMMAND_TIMEOUT;
	double deadline = gf_monotime() + limit;
	bool timed_out = false;
	struct gf_err serr = {0};
	struct gf_proc child;
	char *out;
	size_t len = 0;
	bool overflow = false;
	int status, rc = 0;
	char *nl;

	if (gf_proc_spawn(cmd, &how, &child, &serr) < 0)
		return gf_err_set(err, GF_E_IO, GF_EK_NONE,
				  "%s for profile '%s' cannot be started (%s)", what, p->name,
				  strerror((int)serr.detail));
	out = gf_xmalloc(MAX_PASSWORD_LINE);
	/* Read to the end, so the command never dies of SIGPIPE; keep the first line. */
	for (;;) {
		char scratch[512];
		struct pollfd pfd = {.fd = child.out, .events = POLLIN};
		double left = deadline - gf_monotime();
		ssize_t r;
		int pr;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		pr = poll(&pfd, 1, left > INT_MAX / 1000 ? INT_MAX : (int)(left * 1000) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			continue; /* the deadline is checked at the top */
		if (len < MAX_PASSWORD_LINE - 1)
			r = read(child.out, out + len, MAX_PASSWORD_LINE - 1 - len);
		else
			r = read(child.out, scratch, sizeof(scratch));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (len < MAX_PASSWORD_LINE - 1) {
			len += (size_t)r;
		} else {
			overflow = true;
			explicit_bzero(scratch, sizeof(scratch));
		}
	}
	close(child.out);
	if (timed_out)
		kill(child.pid, SIGKILL);
	while (waitpid(child.pid, &status, 0) < 0) {
		if (errno != EINTR) {
			rc = gf_err_set(err, GF_E_IO, GF_EK_NONE,
					"%s for profile '%s' cannot be waited for (%s)", what,
					p->name, strerror(errno));
			goto out;
		}
	}
	out[len] = '\0';
	if (timed_out) {
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				"%s for profile '%s' took longer than %g s (secret_command_timeout) "
				"and was killed",
				what, p->name, limit);
		goto out;
	}
	if (WIFSIGNALED(status)) {
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				"%s for profile '%s' failed (signal %d)", what, p->name,
				WTERMSIG(status));
		goto out;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				"%s for profile '%s' failed (exit %d)", what, p->name,
				WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		goto out;
	}
	nl = memchr(out, '\n', len);
	if (!nl && overflow) {
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				"%s for profile '%s' printed a line longer than %d bytes", what,
				p->name, MAX_PASSWORD_LINE - 1);
		goto out;
	}
	if (nl)
		*nl = '\0';
	len = strlen(out);
	if (len && out[len - 1] == '\r')
		out[--len] = '\0';
	if (!len) {
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				"%s for profile '%s' failed (no output)", what, p->name);
		goto out;
	}
	*ret = gf_xstrdup(out);
out:
	explicit_bzero(out, MAX_PASSWORD_LINE);
	free(out);
	return rc;
}

int gf_creds_resolve(struct gf_creds *c, const char *name, const struct gf_profile **ret,
		     struct gf_err *err)
{
	const char *env_user = getenv("GPUFLEET_BMC_USER");
	const char *env_pass;
	struct gf_profile *p;

	gf_creds_take_env();
	env_pass = env_secret.password;

	if (!name)
		name = DEFAULT_PROFILE;
	p = find_profile(c, name);
	if (!p && strcmp(name, DEFAULT_PROFILE) == 0)
		p = add_profile(c, DEFAULT_PROFILE);
	if (!p) {
		if (c->path)
			return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					  "profile '%s' is not in credentials file '%s'", name,
					  c->path);
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "profile '%s' is unknown (no credentials file)", name);
	}
	/*
	 * Replace a value only when it differs, so that resolving a profile again
	 * never frees a string an earlier caller may still hold.
	 */
	if (env_user && (!p->bmc_user || strcmp(p->bmc_user, env_user) != 0)) {
		free(p->bmc_user);
		p->bmc_user = gf_xstrdup(env_user);
	}
	if (env_pass) {
		if (!p->bmc_password || strcmp(p->bmc_password, env_pass) != 0) {
			gf_free_secret(p->bmc_password);
			p->bmc_password = gf_xstrdup(env_pass);
		}
	} else if (!p->bmc_password && p->bmc_password_command) {
		/* Run once: later calls find the password in the profile. */
		char *pw;
		int rc = run_secret_command(p, p->bmc_password_command, "password command", &pw,
					    err);

		if (rc)
			return rc;
		p->bmc_password = pw;
	}
	*ret = p;
	return 0;
}

int gf_creds_resolve_ssh(struct gf_creds *c, const char *name, const struct gf_profile **ret,
			 struct gf_err *err)
{
	struct gf_profile *p;

	if (!name)
		name = DEFAULT_PROFILE;
	p = find_profile(c, name);
	if (!p && strcmp(name, DEFAULT_PROFILE) == 0)
		p = add_profile(c, DEFAULT_PROFILE);
	if (!p)
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "profile '%s' is not in credentials file '%s'", name,
				  c->path ? c->path : "(none)");
	/* The command wins over the variable (gpufleet-credentials(5)). */
	if (!p->ssh_key_passphrase && p->ssh_key_passphrase_env && !p->ssh_key_passphrase_command)
		p->ssh_key_passphrase = take_env_var(p->ssh_key_passphrase_env);
	if (!p->ssh_key_passphrase && p->ssh_key_passphrase_command) {
		/* Run once: later calls find the passphrase in the profile. */
		char *pp;
		int rc = run_secret_command(p, p->ssh_key_passphrase_command,
					    "ssh key passphrase command", &pp, err);

		if (rc)
			return rc;
		p->ssh_key_passphrase = pp;
	}
	*ret = p;
	return 0;
}
