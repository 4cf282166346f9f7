/* lib/util: time parsing and formatting, number and duration parsing, the hash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/bounded.h"
#include "lib/cancel.h"
#include "lib/file.h"
#include "lib/util.h"

static double parsed(const char *s)
{
	double t = -1;

	assert_int_equal(gf_time_parse_iso8601(s, &t), 0);
	return t;
}

static void iso8601_forms(void **state)
{
	(void)state;
	assert_true(parsed("1970-01-01") == 0);
	assert_true(parsed("2026-11-29") == 1795910400);
	assert_true(parsed("2026-11-29T12:00") == 1795910400 + 43200);
	assert_true(parsed("2026-11-29 12:00:05") == 1795910400 + 43205);
	assert_true(parsed("2026-11-29t12:00:05Z") == 1795910400 + 43205);
	assert_true(fabs(parsed("2026-11-29T12:00:05.250Z") - (1795910400 + 43205.25)) < 1e-6);
	/* Offsets: local 14:00 at +02:00 is 12:00 UTC; -0130 adds 90 minutes. */
	assert_true(parsed("2026-11-29T14:00:00+02:00") == 1795910400 + 43200);
	assert_true(parsed("2026-11-29T10:30:00-0130") == 1795910400 + 43200);
	assert_true(parsed("2024-02-29") == 1709164800); /* a leap day */
}

static void iso8601_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"2026",
		"2026-11",
		"2026-1-29",
		"2026-11-29T",
		"2026-11-29T12",
		"2026-13-01",
		"2026-00-10",
		"2026-02-29",
		"2026-02-31",
		"2026-04-31",
		"2026-11-29T24:00",
		"2026-11-29T12:60",
		"2026-11-29T12:00:00.",
		"2026-11-29T12:00:00+24:00",
		"2026-11-29T12:00:00 junk",
		"29/11/2026",
	};
	double t = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(gf_time_parse_iso8601(bad[i], &t), -1);
		assert_true(t == 42); /* untouched on failure */
	}
	assert_int_equal(gf_time_parse_iso8601(NULL, &t), -1);
}

static void numbers(void **state)
{
	unsigned long v = 7;
	double d = 0;
	struct gf_err err = {0};

	(void)state;
	assert_int_equal(gf_parse_uint("64", 1, 1024, &v, &err, "--fanout"), 0);
	assert_int_equal(v, 64);
	assert_int_equal(gf_parse_uint("0", 1, 1024, &v, &err, "--fanout"), GF_E_USAGE);
	assert_int_equal(gf_parse_uint("-1", 0, 10, &v, &err, "--retries"), GF_E_USAGE);
	assert_int_equal(gf_parse_uint("12x", 0, 100, &v, &err, "--batch"), GF_E_USAGE);
	assert_int_equal(v, 64);
	assert_int_equal(gf_parse_seconds("2.5", 0.1, 10, &d, &err, "--timeout"), 0);
	assert_true(d == 2.5);
	assert_int_equal(gf_parse_seconds("nan", 0.1, 10, &d, &err, "--timeout"), GF_E_USAGE);
	assert_int_equal(gf_parse_seconds("soon", 0.1, 10, &d, &err, "--timeout"), GF_E_USAGE);
}

static void time_format_and_parse(void **state)
{
	struct gf_err err = {0};
	char buf[40];
	double t, d;

	(void)state;
	assert_int_equal(gf_time_parse("2026-11-29", &t, &err), 0);
	assert_true(t == 1795910400.0);
	assert_int_equal(gf_time_parse("2026-11-29T12:00:00Z", &t, &err), 0);
	assert_true(t == 1795910400.0 + 43200);
	assert_int_equal(gf_time_parse("2026-11-29T12:00:00.25Z", &t, &err), 0);
	gf_time_format(t, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T12:00:00.250Z");
	gf_time_format_secs(t, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T12:00:00Z");
	/* Milliseconds survive a round trip exactly. */
	for (long long ms = 1764417600000LL; ms < 1764417600000LL + 2000; ms += 7) {
		double x = (double)ms / 1000.0, y;

		gf_time_format(x, buf, sizeof(buf));
		assert_int_equal(gf_time_parse(buf, &y, &err), 0);
		assert_true(x == y);
		assert_true(gf_time_ms(x) == x);
	}
	assert_int_equal(gf_time_parse("2026-02-30", &t, &err), GF_E_USAGE);
	assert_string_equal(err.msg,
			    "time '2026-02-30' is not in the form 2026-11-29 or 2026-11-29T12:00:00Z");
	assert_int_equal(gf_time_parse("2026-11-29T25:00", &t, &err), GF_E_USAGE);
	assert_int_equal(gf_time_parse("yesterday", &t, &err), GF_E_USAGE);
	/* An offset is honoured: 14:00 at +02:00 is 12:00 UTC. */
	assert_int_equal(gf_time_parse("2026-11-29T14:00:00+02:00", &t, &err), 0);
	assert_int_equal(gf_time_parse("2026-11-29T12:00:00Z", &d, &err), 0);
	assert_true(t == d);
}

/* The formatter rounds to the store's whole milliseconds, in both forms alike. */
static void time_format_rounds(void **state)
{
	double noon = 1795910400.0 + 43200;
	char buf[40];

	(void)state;
	gf_time_format(noon + 0.9996, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T12:00:01.000Z");
	gf_time_format_secs(noon + 0.9996, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T12:00:01Z");
	gf_time_format(noon + 0.9994, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T12:00:00.999Z");
	gf_time_format_secs(noon + 0.9994, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T12:00:00Z");
	assert_true(gf_time_ms(noon + 0.9996) == noon + 1);
	/* Before 1970 the fraction still counts up from the earlier second. */
	gf_time_format(-0.25, buf, sizeof(buf));
	assert_string_equal(buf, "1969-12-31T23:59:59.750Z");
	gf_time_format_secs(-0.25, buf, sizeof(buf));
	assert_string_equal(buf, "1969-12-31T23:59:59Z");
}

static void durations(void **state)
{
	static const struct {
		const char *s;
		double secs;
	} good[] = {
		{"90d", 90 * 86400.0}, {"1.5h", 5400},   {"90m", 5400}, {"45s", 45},
		{"2w", 14 * 86400.0},  {"0.25d", 21600}, {"30", 30},    {"0s", 0},
	};
	static const char *const bad[] = {"",  "3y",  "-1d", "+1d", " 1h",   "1h ",
					  "h", "1hh", "inf", "nan", "1e999s"};
	struct gf_err err = {0};
	double d;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(gf_parse_duration(good[i].s, &d, &err), 0);
		assert_true(d == good[i].secs);
	}
	d = 42;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(gf_parse_duration(bad[i], &d, &err), GF_E_USAGE);
		assert_true(d == 42);
	}
	assert_int_equal(gf_parse_duration("1.5y", &d, &err), GF_E_USAGE);
	assert_string_equal(err.msg,
			    "duration '1.5y' is not a number with s, m, h, d or w (e.g. 90d)");
	assert_int_equal(gf_parse_duration(NULL, &d, NULL), GF_E_USAGE);
}

/* Every --since: a date, or a duration before now; the same words for both verbs. */
static void since_times(void **state)
{
	static const char *const bad[] = {"yesterday", "2026-13-01", "-1h", "1.5y", "1h ", ""};
	struct gf_err err = {0};
	double t = 0;

	(void)state;
	assert_int_equal(gf_time_parse_since("7d", 1000000.0, &t, &err), 0);
	assert_true(t == 1000000.0 - 7 * 86400);
	assert_int_equal(gf_time_parse_since("90", 1000.0, &t, &err), 0);
	assert_true(t == 910.0);
	assert_int_equal(gf_time_parse_since("2026-11-29", 0, &t, &err), 0);
	assert_true(t == 1795910400.0);
	assert_int_equal(gf_time_parse_since("2026-11-29T12:00Z", 0, &t, &err), 0);
	assert_true(t == 1795910400.0 + 43200);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = 42;
		assert_int_equal(gf_time_parse_since(bad[i], 1000.0, &t, &err), GF_E_USAGE);
		assert_true(t == 42);
	}
	assert_int_equal(gf_time_parse_since("soon", 0, &t, &err), GF_E_USAGE);
	assert_string_equal(err.msg, "'soon' is neither a date (2026-11-29, 2026-11-29T12:00Z) "
				     "nor a duration (90m, 12h, 7d)");
}

/* The hash of a string is the hash of its bytes; a change of one byte moves it. */
static void hash64(void **state)
{
	(void)state;
	assert_true(gf_hash64("", 0) == gf_hash64("x", 0));
	assert_true(gf_hash64("gpu01", 5) == gf_hash64("gpu01xyz", 5));
	assert_true(gf_hash64("gpu01", 5) != gf_hash64("gpu02", 5));
	assert_true((gf_hash64("gpu01", 5) & 0xff) != (gf_hash64("gpu02", 5) & 0xff));
}

/* ---- lib/file: the whole-file reader ---- */

static void file_read_cap(void **state)
{
	char path[] = "/tmp/gf-test-file-XXXXXX";
	int fd = mkstemp(path);
	struct gf_err err = {0};
	char *text = NULL;
	size_t len = 0;
	char *big = malloc((1u << 20) + 1);
	FILE *f;

	(void)state;
	assert_true(fd >= 0 && big);
	memset(big, 'x', (1u << 20) + 1);
	big[0] = '\0'; /* NULs are text like any other byte */
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(big, 1, 1u << 20, f), 1u << 20);
	fclose(f);
	/* Exactly the cap: read whole, NUL-terminated, its length told. */
	assert_int_equal(gf_file_read(path, 1u << 20, 0, &text, &len, &err), 0);
	assert_int_equal(len, 1u << 20);
	assert_memory_equal(text, big, len);
	assert_int_equal(text[len], '\0');
	free(text);
	/* One byte more than the cap: refused, nothing handed over. */
	f = fopen(path, "a");
	assert_non_null(f);
	fputc('x', f);
	fclose(f);
	text = NULL;
	len = 7;
	assert_int_equal(gf_file_read(path, 1u << 20, 0, &text, &len, &err), GF_E_USAGE);
	assert_null(text);
	assert_int_equal(len, 7);
	assert_int_equal(err.detail, 0);
	assert_non_null(strstr(err.msg, "is larger than 1 MiB"));
	assert_int_equal(gf_file_read(path, 2u << 20, 0, &text, &len, &err), 0);
	assert_int_equal(len, (1u << 20) + 1);
	free(text);
	unlink(path);
	/* A file that is not there: its cause, and errno as the detail. */
	assert_int_equal(gf_file_read(path, 1u << 20, 0, &text, &len, &err), GF_E_USAGE);
	assert_int_equal(err.detail, ENOENT);
	assert_non_null(strstr(err.msg, "cannot read '/tmp/gf-test-file-"));
	/* "-" is a file name unless the caller asks for standard input. */
	assert_int_equal(gf_file_read("-", 1u << 20, 0, &text, &len, &err), GF_E_USAGE);
	assert_string_equal(err.msg, "cannot read '-' (No such file or directory)");
	free(big);
}

/* ---- lib/cancel: the cancellable sleep ---- */

static gf_cancel_flag test_cancel;

static void *cancel_soon(void *ud)
{
	(void)ud;
	usleep(100 * 1000);
	test_cancel = 1;
	return NULL;
}

static void cancel_sleep(void **state)
{
	double t0 = gf_monotime();
	pthread_t th;

	(void)state;
	/* Nothing to cancel it: it sleeps until @t, and says it was not cancelled. */
	assert_false(gf_cancel_sleep_until(NULL, t0 + 0.06));
	assert_true(gf_monotime() >= t0 + 0.06);
	test_cancel = 0;
	assert_false(gf_cancel_sleep_until(&test_cancel, gf_monotime() + 0.06));
	/* Cancelled while it sleeps: back soon, long before @t. */
	t0 = gf_monotime();
	assert_int_equal(pthread_create(&th, NULL, cancel_soon, NULL), 0);
	assert_true(gf_cancel_sleep_until(&test_cancel, t0 + 30));
	assert_true(gf_monotime() - t0 < 5);
	pthread_join(th, NULL);
	/* Already cancelled: at once. */
	t0 = gf_monotime();
	assert_true(gf_cancel_sleep_until(&test_cancel, t0 + 30));
	assert_true(gf_monotime() - t0 < 1);
}

/* ---- lib/bounded ---- */

static atomic_int slow_done, slow_abandoned;

static void slow_fn(void *arg)
{
	usleep(300 * 1000);
	*(int *)arg = 42;
	atomic_store(&slow_done, 1);
}

static void slow_abandon(void *arg)
{
	free(arg);
	atomic_store(&slow_abandoned, 1);
}

static void bounded_run_and_abandon(void **state)
{
	int *v = calloc(1, sizeof(*v));
	struct gf_err err = {0};
	double t0 = gf_monotime();

	/* Finished in time: the result is the caller's. */
	assert_int_equal(gf_bounded_run(slow_fn, slow_abandon, v, t0 + 5, NULL, 0, "x", &err), 0);
	assert_int_equal(*v, 42);
	assert_int_equal(atomic_load(&slow_abandoned), 0);
	/* Not in time: back at the deadline; the thread frees @arg when it is done. */
	atomic_store(&slow_done, 0);
	t0 = gf_monotime();
	assert_int_equal(gf_bounded_run(slow_fn, slow_abandon, v, t0 + 0.05, NULL, 0, "waiting",
					&err),
			 GF_E_NODE);
	assert_true(gf_monotime() - t0 < 0.25);
	assert_int_equal(err.kind, GF_EK_TIMEOUT);
	assert_string_equal(err.msg, "waiting did not finish by the deadline");
	for (double until = gf_monotime() + 5;
	     !atomic_load(&slow_abandoned) && gf_monotime() < until;)
		usleep(5000);
	assert_int_equal(atomic_load(&slow_abandoned), 1);
}

/* The ids of this process's threads (/proc/self/task), at most @max in @ids: how many. */
static int thread_ids(long *ids, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) && n < max)
		if (e->d_name[0] != '.')
			ids[n++] = atol(e->d_name);
	closedir(d);
	return n;
}

static void *no_work(void *arg)
{
	return arg;
}

#define MAX_THREADS 64

/*
 * Until every thread not in @before (@n ids) has ended. A lookup runs on a
 * detached thread that signals its result before it exits; one still exiting
 * when the test ends leaves its resolver state behind, a leak for Valgrind
 * that a busy machine made likely.
 */
static void await_new_threads_gone(const long *before, int n)
{
	for (double until = gf_monotime() + 10;; usleep(5000)) {
		long now[MAX_THREADS];
		int k = thread_ids(now, MAX_THREADS), fresh = 0;

		for (int i = 0; i < k; i++) {
			bool known = false;

			for (int j = 0; j < n && !known; j++)
				known = now[i] == before[j];
			fresh += !known;
		}
		if (!fresh)
			return;
		assert_true(gf_monotime() < until);
	}
}

static void *lookup_invalid(void *verr)
{
	char buf[64];

	gf_resolve_numeric("no-such-host.invalid", 0, gf_monotime() + 5, NULL, buf, sizeof(buf),
			   verr);
	return NULL;
}

static int count_calls;

static void count_call(void *arg)
{
	(void)arg;
	count_calls++;
}

/* Calls one after the other from one thread: one runner thread, started once, ended with it. */
static void *three_calls(void *arg)
{
	long *after = arg;

	for (int k = 0; k < 3; k++) {
		long ids[MAX_THREADS];

		assert_int_equal(gf_bounded_run(count_call, NULL, NULL, gf_monotime() + 5, NULL, 0,
						"x", NULL),
				 0);
		after[k] = thread_ids(ids, MAX_THREADS);
	}
	return NULL;
}

static void bounded_run_keeps_one_thread(void **state)
{
	long before[MAX_THREADS], after[3];
	pthread_t t;
	int n;

	assert_int_equal(pthread_create(&t, NULL, no_work, NULL), 0);
	pthread_join(t, NULL);
	n = thread_ids(before, MAX_THREADS);
	assert_int_equal(pthread_create(&t, NULL, three_calls, after), 0);
	pthread_join(t, NULL);
	assert_int_equal(count_calls, 3);
	/* The caller and its runner, for every call. */
	assert_int_equal(after[0], n + 2);
	assert_int_equal(after[1], n + 2);
	assert_int_equal(after[2], n + 2);
	await_new_threads_gone(before, n);
}

static void resolve_numeric_and_names(void **state)
{
	char buf[64];
	struct gf_err err = {0};

	assert_int_equal(gf_resolve_numeric("127.0.0.1", 0, gf_monotime() + 1, NULL, buf,
					    sizeof(buf), &err),
			 0);
	assert_string_equal(buf, "127.0.0.1");
	assert_int_equal(gf_resolve_numeric("::1", 0, gf_monotime() + 1, NULL, buf, sizeof(buf),
					    &err),
			 0);
	assert_string_equal(buf, "::1");
	/*
	 * A thread made and joined first: a runtime's own threads are then in
	 * the list (ThreadSanitizer starts one with the first pthread_create).
	 */
	pthread_t t;
	long before[MAX_THREADS];
	int n;

	assert_int_equal(pthread_create(&t, NULL, no_work, NULL), 0);
	pthread_join(t, NULL);
	n = thread_ids(before, MAX_THREADS);
	/* On a thread of its own: the lookup's runner ends with its caller. */
	assert_int_equal(pthread_create(&t, NULL, lookup_invalid, &err), 0);
	pthread_join(t, NULL);
	assert_int_equal(err.code, GF_E_NODE);
	assert_int_equal(err.kind, GF_EK_CONNECT);
	await_new_threads_gone(before, n);
	/* No time left: a name is not looked up at all. */
	assert_int_equal(gf_resolve_numeric("localhost", 0, gf_monotime() - 1, NULL, buf,
					    sizeof(buf), &err),
			 GF_E_NODE);
	assert_int_equal(err.kind, GF_EK_TIMEOUT);
}

static void deadline_left(void **state)
{
	double now = gf_monotime(), after;
	int ms;

	(void)state;
	assert_true(gf_deadline_left(now - 1) == 0);
	assert_true(gf_deadline_left(NAN) == 0);
	assert_int_equal(gf_deadline_ms(now - 1), 0);
	/* What is left, rounded up: 2 s less the time gone since @now (Valgrind at nice 19 is slow). */
	ms = gf_deadline_ms(now + 2);
	after = gf_monotime();
	assert_true(ms <= 2000 && ms >= (int)floor((2 - (after - now)) * 1000));
	assert_int_equal(gf_deadline_ms(now + 1e12), 2147483647);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(iso8601_forms),
		cmocka_unit_test(iso8601_refused),
		cmocka_unit_test(numbers),
		cmocka_unit_test(time_format_and_parse),
		cmocka_unit_test(time_format_rounds),
		cmocka_unit_test(durations),
		cmocka_unit_test(hash64),
		cmocka_unit_test(file_read_cap),
		cmocka_unit_test(cancel_sleep),
		cmocka_unit_test(bounded_run_and_abandon),
		cmocka_unit_test(resolve_numeric_and_names),
		cmocka_unit_test(bounded_run_keeps_one_thread),
		cmocka_unit_test(deadline_left),
		cmocka_unit_test(since_times),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
