#include "lib/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"

double gf_monotime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double gf_deadline_left(double deadline)
{
	double left = deadline - gf_monotime();

	return left > 0 ? left : 0; /* a NaN compares false: 0 */
}

int gf_deadline_ms(double deadline)
{
	double ms = ceil(gf_deadline_left(deadline) * 1000.0);

	return ms < (double)INT_MAX ? (int)ms : INT_MAX;
}

void gf_cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

struct timespec gf_monotime_ts(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

double gf_walltime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void gf_sleep_until(double t)
{
	for (;;) {
		double left = t - gf_monotime();
		struct timespec ts;

		if (left <= 0)
			return;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		if (nanosleep(&ts, NULL) == 0)
			return;
	}
}

double gf_time_ms(double t)
{
	return (double)llround(t * 1000.0) / 1000.0;
}

/*
 * Both forms round to whole milliseconds first, so that the seconds form is
 * the milliseconds form without its fraction: 12:00:00.9996 is 12:00:01.000,
 * and 12:00:01 without milliseconds, never 12:00:00.
 */
static void time_format(double t, bool ms, char *buf, size_t size)
{
	long long whole = llround(t * 1000.0);
	long long secs = whole / 1000, frac = whole % 1000;
	time_t tt;
	struct tm tm;
	char base[40];

	if (frac < 0) {
		frac += 1000;
		secs--;
	}
	tt = (time_t)secs;
	if (!gmtime_r(&tt, &tm)) {
		snprintf(buf, size, "invalid");
		return;
	}
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (ms)
		snprintf(buf, size, "%s.%03lldZ", base, frac);
	else
		snprintf(buf, size, "%sZ", base);
}

void gf_time_format(double t, char *buf, size_t size)
{
	time_format(t, true, buf, size);
}

void gf_time_format_secs(double t, char *buf, size_t size)
{
	time_format(t, false, buf, size);
}

/* @n decimal digits at *p into *ret; advances *p. */
static bool digits(const char **p, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*ret = v;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (timegm() is not C17). */
static long days_from_civil(long y, int m, int d)
{
	long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

int gf_time_parse_iso8601(const char *s, double *ret)
{
	int y, mo, d, h = 0, mi = 0, sec = 0, oh = 0, om = 0, sign = 1;
	double frac = 0;
	const char *p = s;

	if (!s || !digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
	    !digits(&p, 2, &d))
		return -1;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
			return -1;
		if (*p == ':') {
			p++;
			if (!digits(&p, 2, &sec))
				return -1;
			if (*p == '.') {
				double scale = 0.1;

				p++;
				if (*p < '0' || *p > '9')
					return -1;
				for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
					frac += (*p - '0') * scale;
			}
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (!digits(&p, 2, &oh))
			return -1;
		if (*p == ':')
			p++;
		if (!digits(&p, 2, &om))
			return -1;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
	    sec > 60 || oh > 23 || om > 59)
		return -1;
	*ret = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600 + mi * 60 + sec + frac -
	       sign * (oh * 3600 + om * 60);
	return 0;
}

int gf_time_parse(const char *s, double *ret, struct gf_err *err)
{
	if (gf_time_parse_iso8601(s, ret) == 0)
		return 0;
	return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
			  "time '%s' is not in the form 2026-11-29 or 2026-11-29T12:00:00Z",
			  s ? s : "");
}

int gf_time_parse_since(const char *s, double now, double *ret, struct gf_err *err)
{
	double d;

	if (gf_time_parse_iso8601(s, ret) == 0)
		return 0;
	if (gf_parse_duration(s, &d, NULL) == 0) {
		*ret = now - d;
		return 0;
	}
	return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
			  "'%s' is neither a date (2026-11-29, 2026-11-29T12:00Z) nor a duration "
			  "(90m, 12h, 7d)",
			  s ? s : "");
}

int gf_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret,
		  struct gf_err *err, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		goto bad;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		goto bad;
	*ret = v;
	return 0;
bad:
	return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
			  "%s '%s' is not a whole number from %lu to %lu", what, s ? s : "", min,
			  max);
}

int gf_parse_seconds(const char *s, double min, double max, double *ret, struct gf_err *err,
		     const char *what)
{
	char *end = NULL;
	double v = 0;

	errno = 0;
	if (s && *s && *s != ' ')
		v = strtod(s, &end);
	if (!end || errno || *end || !isfinite(v) || v < min || v > max)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "%s '%s' is not a number of seconds from %g to %g", what,
				  s ? s : "", min, max);
	*ret = v;
	return 0;
}

int gf_parse_duration(const char *s, double *ret, struct gf_err *err)
{
	static const struct {
		char unit;
		double secs;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
	char *end;
	double v, mul = 1;

	errno = 0;
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		goto bad;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v))
		goto bad;
	if (*end) {
		bool found = false;

		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (end[0] == units[i].unit && end[1] == '\0') {
				mul = units[i].secs;
				found = true;
			}
		if (!found)
			goto bad;
	}
	*ret = v * mul;
	return 0;
bad:
	return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
			  "duration '%s' is not a number with s, m, h, d or w (e.g. 90d)",
			  s ? s : "");
}

uint64_t gf_hash64(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	/*
	 * FNV-1a alone leaves strings that differ in their last bytes in
	 * neighbouring slots of a table; murmur3's finaliser spreads the bits.
	 */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/*
 * Does this process really run under sudo for @user? Anyone can set
 * SUDO_USER: it is believed only when the parent process is a set-user-ID
 * root program called sudo in a system folder, and SUDO_UID is @user's uid.
 */
static bool under_sudo(const char *user)
{
	static const char *const paths[] = {"/usr/bin/sudo", "/bin/sudo", "/usr/local/bin/sudo",
					    "/usr/sbin/sudo"};
	const char *uid_text = getenv("SUDO_UID");
	struct passwd pw, *res = NULL;
	char pwbuf[4096], link[64], exe[4096];
	struct stat st;
	unsigned long uid;
	char *end;
	ssize_t n;
	bool known = false;

	if (!uid_text || !*uid_text)
		return false;
	errno = 0;
	uid = strtoul(uid_text, &end, 10);
	if (errno || *end || getpwnam_r(user, &pw, pwbuf, sizeof(pwbuf), &res) != 0 || !res ||
	    res->pw_uid != (uid_t)uid)
		return false;
	snprintf(link, sizeof(link), "/proc/%ld/exe", (long)getppid());
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	for (size_t i = 0; i < NELEM(paths); i++)
		known = known || strcmp(exe, paths[i]) == 0;
	return known && stat(exe, &st) == 0 && st.st_uid == 0 && (st.st_mode & S_ISUID);
}

const char *gf_invoking_user(void)
{
	static char name[256];
	const char *s = getenv("SUDO_USER");
	struct passwd pw, *res = NULL;
	char pwbuf[4096];

	if (s && *s && under_sudo(s)) {
		snprintf(name, sizeof(name), "%s", s);
		return name;
	}
	if (getpwuid_r(geteuid(), &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res) {
		snprintf(name, sizeof(name), "%s", res->pw_name);
		return name;
	}
	snprintf(name, sizeof(name), "uid %u", (unsigned)geteuid());
	return name;
}

void gf_harden_process(void)
{
	struct rlimit rl = {0, 0};

	setrlimit(RLIMIT_CORE, &rl);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int gf_mkdir_parents(const char *path, struct gf_err *err)
{
	char *dir = gf_xstrdup(path);
	char *slash = strrchr(dir, '/');
	int rc = 0;

	if (!slash || slash == dir)
		goto out;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;

		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			rc = gf_err_set(err, GF_E_IO, GF_EK_NONE,
					"cannot create directory '%s' (%s)", dir, strerror(errno));
			goto out;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
out:
	free(dir);
	return rc;
}
