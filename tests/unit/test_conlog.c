/* lib/conlog: console log lines, escapes, rotation and the total cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/conlog.h"

#define TMPDIR_PREFIX "/tmp/gf-conlog-"
#include "tmpdir.h"

static char *slurp(const char *name)
{
	char path[128], *s;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	s = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

static long fsize(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void lines_stamped_and_escaped(void **state)
{
	struct gf_conlog_opts o = {0};
	struct gf_conlog *l;
	char *s;

	(void)state;
	assert_int_equal(gf_conlog_open(dir, "n1", &o, &l, NULL), 0);
	/* 2026-12-02T00:00:00Z = 1796169600 */
	static const char first[] = "boot\r\nEsc \x1b[31mred\x1b[0m\r\npart";

	assert_int_equal(gf_conlog_data(l, first, sizeof(first) - 1, 1796169600.0, NULL), 0);
	assert_int_equal(gf_conlog_data(l, "ial\ttab\0nul\n\r", 13, 1796169601.5, NULL), 0);
	assert_int_equal(gf_conlog_marker(l, 1796169602.0, "reconnecting", NULL), 0);
	assert_int_equal(gf_conlog_data(l, "a\rb\n", 4, 1796169603.0, NULL), 0);
	gf_conlog_close(l);
	s = slurp("n1.log");
	assert_string_equal(s, "2026-12-02T00:00:00.000Z boot\n"
			       "2026-12-02T00:00:00.000Z Esc \\x1b[31mred\\x1b[0m\n"
			       "2026-12-02T00:00:00.000Z partial\ttab\\x00nul\n"
			       "2026-12-02T00:00:02.000Z -- reconnecting\n"
			       "2026-12-02T00:00:03.000Z a\\rb\n");
	free(s);
	assert_int_equal(gf_conlog_open(dir, "../x", &o, &l, NULL), GF_E_USAGE);
}

static void rotation_keeps_n_files(void **state)
{
	struct gf_conlog_opts o = {.max_size = 1000, .keep = 2};
	struct gf_conlog *l;
	char line[100];

	(void)state;
	assert_int_equal(gf_conlog_open(dir, "n2", &o, &l, NULL), 0);
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < 100; i++)
		assert_int_equal(gf_conlog_data(l, line, sizeof(line), 1796169600.0, NULL), 0);
	assert_true(fsize("n2.log") <= 1000 && fsize("n2.log") > 0);
	assert_true(fsize("n2.log.1") <= 1000 && fsize("n2.log.1") > 800);
	assert_true(fsize("n2.log.2") <= 1000 && fsize("n2.log.2") > 800);
	assert_int_equal(fsize("n2.log.3"), -1);
	assert_int_equal(gf_conlog_disk(l),
			 (unsigned long long)(fsize("n2.log") + fsize("n2.log.1") +
					      fsize("n2.log.2")));
	assert_int_equal(gf_conlog_fed(l), 100 * sizeof(line));
	gf_conlog_close(l);
}

static void total_cap_over_logs(void **state)
{
	struct gf_conlog_opts o = {.max_size = 1000, .keep = 4};
	struct gf_conlog *v[2];
	char line[100];

	(void)state;
	assert_int_equal(gf_conlog_open(dir, "big", &o, &v[0], NULL), 0);
	assert_int_equal(gf_conlog_open(dir, "small", &o, &v[1], NULL), 0);
	memset(line, 'y', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	assert_int_equal(gf_conlog_data(v[1], line, sizeof(line), 1796169600.0, NULL), 0);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(gf_conlog_data(v[0], line, sizeof(line), 1796169600.0, NULL), 0);
		gf_conlog_total_cap(v, 2, 2500);
		assert_true(gf_conlog_disk(v[0]) + gf_conlog_disk(v[1]) <= 2500 + 200);
	}
	assert_true(fsize("small.log") > 0); /* the quiet node keeps its log */
	assert_true(gf_conlog_disk(v[0]) + gf_conlog_disk(v[1]) <= 2500);
	gf_conlog_close(v[0]);
	gf_conlog_close(v[1]);
}

struct got {
	char text[8][64];
	double t[8];
	int n;
};

static int collect(void *ud, double t, const char *text)
{
	struct got *g = ud;

	if (g->n == 8)
		return -100;
	snprintf(g->text[g->n], sizeof(g->text[0]), "%s", text);
	g->t[g->n++] = t;
	return 0;
}

static void read_back_oldest_first(void **state)
{
	struct gf_conlog_opts o = {.max_size = 4096, .keep = 2};
	struct gf_conlog *l;
	struct got g = {0};
	char path[128];
	FILE *f;

	(void)state;
	assert_int_equal(gf_conlog_open(dir, "r1", &o, &l, NULL), 0);
	assert_int_equal(gf_conlog_data(l, "one\ntwo\n", 8, 1796169600.0, NULL), 0);
	gf_conlog_close(l);
	snprintf(path, sizeof(path), "%s/r1.log.1", dir);
	f = fopen(path, "w");
	fputs("2026-12-01T00:00:00.000Z older\nno time here\n", f);
	fclose(f);
	assert_int_equal(gf_conlog_read(dir, "r1", collect, &g, NULL), 0);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.text[0], "older");
	assert_true(g.t[0] == 1796169600.0 - 86400);
	assert_string_equal(g.text[1], "no time here");
	assert_true(isnan(g.t[1]));
	assert_string_equal(g.text[2], "one");
	assert_string_equal(g.text[3], "two");
	assert_true(g.t[3] == 1796169600.0);
	g.n = 0;
	assert_int_equal(gf_conlog_read(dir, "none", collect, &g, NULL), 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(gf_conlog_read(dir, "../x", collect, &g, NULL), GF_E_USAGE);
}

static void sizes(void **state)
{
	unsigned long long v = 0;

	(void)state;
	assert_int_equal(gf_conlog_parse_size("10M", 1, ~0ULL, &v), 0);
	assert_int_equal(v, 10ULL << 20);
	assert_int_equal(gf_conlog_parse_size("4096", 1, ~0ULL, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(gf_conlog_parse_size("2k", 1, ~0ULL, &v), 0);
	assert_int_equal(v, 2048);
	assert_int_equal(gf_conlog_parse_size("1G", 1, ~0ULL, &v), 0);
	assert_int_equal(v, 1ULL << 30);
	assert_int_equal(gf_conlog_parse_size("", 1, ~0ULL, &v), -1);
	assert_int_equal(gf_conlog_parse_size("10X", 1, ~0ULL, &v), -1);
	assert_int_equal(gf_conlog_parse_size("-1", 1, ~0ULL, &v), -1);
	assert_int_equal(gf_conlog_parse_size("0", 1, ~0ULL, &v), -1);
	assert_int_equal(gf_conlog_parse_size("99999999999999999999", 1, ~0ULL, &v), -1);
	assert_int_equal(gf_conlog_parse_size("17179869184G", 1, ~0ULL, &v), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines_stamped_and_escaped),
		cmocka_unit_test(rotation_keeps_n_files),
		cmocka_unit_test(total_cap_over_logs),
		cmocka_unit_test(read_back_oldest_first),
		cmocka_unit_test(sizes),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
