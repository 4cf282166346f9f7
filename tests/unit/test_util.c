/* lib/util: time parsing, number parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

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
		"", "2026", "2026-11", "2026-1-29", "2026-11-29T", "2026-11-29T12",
		"2026-13-01", "2026-00-10", "2026-02-29", "2026-02-31", "2026-04-31",
		"2026-11-29T24:00", "2026-11-29T12:60", "2026-11-29T12:00:00.",
		"2026-11-29T12:00:00+24:00", "2026-11-29T12:00:00 junk", "29/11/2026",
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(iso8601_forms),
		cmocka_unit_test(iso8601_refused),
		cmocka_unit_test(numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
