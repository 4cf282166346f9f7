/* Node sets: expansion, operators, groups, errors and collapse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/nodeset.h"

/* ---- helpers ---- */

/* The names of @s joined with ','. Caller frees. */
static char *joined(const struct gf_nodeset *s)
{
	struct gf_buf b = GF_BUF_INIT;
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (i)
			gf_buf_addc(&b, ',');
		gf_buf_adds(&b, s->names[i]);
	}
	if (!b.s)
		return gf_xstrdup("");
	return gf_buf_detach(&b);
}

static void check_expand_r(const char *expr, gf_group_resolver r, void *ud, const char *want)
{
	struct gf_nodeset s;
	struct gf_err err = {0};
	char *got;
	int rc;

	rc = gf_nodeset_parse(expr, r, ud, &s, &err);
	if (rc)
		fail_msg("'%s' failed: %s", expr, err.msg);
	got = joined(&s);
	if (strcmp(got, want))
		fail_msg("'%s' gave '%s', want '%s'", expr, got, want);
	free(got);
	gf_nodeset_release(&s);
}

static void check_expand(const char *expr, const char *want)
{
	check_expand_r(expr, NULL, NULL, want);
}

/* Parsing @expr fails with GF_E_USAGE and a message holding every one of the NULL-ended list. */
static void check_error_r(const char *expr, gf_group_resolver r, void *ud, int code, ...)
{
	struct gf_nodeset s = {(char **)0x1, 42, 43}; /* must stay untouched */
	struct gf_err err = {0};
	const char *want;
	va_list ap;
	int rc;

	rc = gf_nodeset_parse(expr, r, ud, &s, &err);
	if (rc != code)
		fail_msg("'%s': rc %d, want %d (%s)", expr, rc, code, err.msg);
	assert_int_equal(err.code, code);
	assert_ptr_equal(s.names, (char **)0x1);
	assert_int_equal(s.n, 42);
	assert_int_equal(s.cap, 43);
	va_start(ap, code);
	while ((want = va_arg(ap, const char *)))
		if (!strstr(err.msg, want))
			fail_msg("'%s': message '%s' lacks '%s'", expr, err.msg, want);
	va_end(ap);
}

#define check_error(expr, ...) \
	check_error_r(expr, NULL, NULL, GF_E_USAGE, __VA_ARGS__, (char *)NULL)

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **sorted_copy(const struct gf_nodeset *s)
{
	char **v = gf_xcalloc(s->n, sizeof(*v));

	memcpy(v, s->names, s->n * sizeof(*v));
	qsort(v, s->n, sizeof(*v), cmp_str);
	return v;
}

/* Both hold the same names, in any order. */
static bool same_set(const struct gf_nodeset *a, const struct gf_nodeset *b)
{
	char **x, **y;
	bool same = a->n == b->n;
	size_t i;

	if (!same)
		return false;
	x = sorted_copy(a);
	y = sorted_copy(b);
	for (i = 0; same && i < a->n; i++)
		same = !strcmp(x[i], y[i]);
	free(x);
	free(y);
	return same;
}

/* ---- a fake group source ---- */

struct fake {
	int calls;
	char last[64];
	int fail_code; /* when set, every lookup fails with it */
};

static int fake_resolve(void *ud, const char *group, struct gf_nodeset *out, struct gf_err *err)
{
	struct fake *f = ud;
	static const struct {
		const char *name;
		const char *members[6];
	} table[] = {
		{"gpus", {"gpu1", "gpu2", "gpu3", "gpu4"}},
		{"login", {"login1"}},
		{"rack1", {"gpu1", "gpu2", "gpu1"}},
		{"rack2", {"gpu3", "gpu4", "sw2"}},
		{"empty", {NULL}},
	};
	size_t i, j;

	f->calls++;
	snprintf(f->last, sizeof(f->last), "%s", group);
	assert_non_null(out);
	assert_int_equal(out->n, 0);
	if (f->fail_code)
		return gf_err_set(err, f->fail_code, GF_EK_NONE, "group source is broken");
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].name, group))
			continue;
		/* Pushed raw, duplicates included: the parser must cope. */
		for (j = 0; table[i].members[j]; j++) {
			out->names = gf_xrealloc(out->names, (out->n + 1) * sizeof(*out->names));
			out->names[out->n++] = gf_xstrdup(table[i].members[j]);
			out->cap = out->n;
		}
		return 0;
	}
	return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "unknown group '%s'", group);
}

/* ---- the set ---- */

static void test_set_basics(void **state)
{
	struct gf_nodeset s = GF_NODESET_INIT;

	assert_false(gf_nodeset_contains(&s, "a"));
	assert_true(gf_nodeset_add(&s, "a"));
	assert_true(gf_nodeset_add(&s, "b"));
	assert_false(gf_nodeset_add(&s, "a"));
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "a");
	assert_string_equal(s.names[1], "b");
	assert_true(gf_nodeset_contains(&s, "b"));
	assert_false(gf_nodeset_contains(&s, "c"));
	gf_nodeset_release(&s);
	assert_null(s.names);
	assert_int_equal(s.n, 0);
	gf_nodeset_release(NULL);
	gf_nodeset_init(&s);
	assert_int_equal(s.cap, 0);
}

/* ---- expansion ---- */

static void test_plain_names(void **state)
{
	check_expand("gpu1", "gpu1");
	check_expand("gpu1,gpu2", "gpu1,gpu2");
	check_expand("b,a,c", "b,a,c");
	check_expand("a,a,b,a", "a,b");
	check_expand("node-1.example.com", "node-1.example.com");
	check_expand("under_score", "under_score");
	check_expand("7", "7");
}

static void test_ranges(void **state)
{
	check_expand("gpu[1-3]", "gpu1,gpu2,gpu3");
	check_expand("gpu[1-3,7]", "gpu1,gpu2,gpu3,gpu7");
	check_expand("gpu[7,1-2]", "gpu7,gpu1,gpu2");
	check_expand("gpu[5]", "gpu5");
	check_expand("gpu[5-5]", "gpu5");
	check_expand("gpu[001-003]", "gpu001,gpu002,gpu003");
	check_expand("gpu[08-11]", "gpu08,gpu09,gpu10,gpu11");
	check_expand("gpu[098-101]", "gpu098,gpu099,gpu100,gpu101");
	/* Width from the lower bound. */
	check_expand("n[1-010]", "n1,n2,n3,n4,n5,n6,n7,n8,n9,n10");
	check_expand("n[9-11]", "n9,n10,n11");
	check_expand("n[0-2]", "n0,n1,n2");
	check_expand("n[00-02]", "n00,n01,n02");
	check_expand("n[1,01,001]", "n1,n01,n001");
	/* Overlaps fold into one set. */
	check_expand("n[1-3,2-4]", "n1,n2,n3,n4");
	/* Steps. */
	check_expand("n[1-10/3]", "n1,n4,n7,n10");
	check_expand("n[1-10/4]", "n1,n5,n9");
	check_expand("n[01-05/2]", "n01,n03,n05");
	/* Text around and no prefix. */
	check_expand("gpu[1-2]-bmc", "gpu1-bmc,gpu2-bmc");
	check_expand("[1-3]", "1,2,3");
	check_expand("[1-2]x", "1x,2x");
	/* IP-like names. */
	check_expand("127.31.0.[1-3]", "127.31.0.1,127.31.0.2,127.31.0.3");
	check_expand("10.0.[0-1].[1-2]", "10.0.0.1,10.0.0.2,10.0.1.1,10.0.1.2");
	/* Large numbers near the limit. */
	check_expand("n[999999999999999998-999999999999999999]",
		     "n999999999999999998,n999999999999999999");
}

static void test_ip_range_size(void **state)
{
	struct gf_nodeset s;

	assert_int_equal(gf_nodeset_parse("127.31.0.[1-20]", NULL, NULL, &s, NULL), 0);
	assert_int_equal(s.n, 20);
	assert_string_equal(s.names[0], "127.31.0.1");
	assert_string_equal(s.names[19], "127.31.0.20");
	gf_nodeset_release(&s);

	assert_int_equal(gf_nodeset_parse("gpu[001-128]", NULL, NULL, &s, NULL), 0);
	assert_int_equal(s.n, 128);
	assert_string_equal(s.names[0], "gpu001");
	assert_string_equal(s.names[99], "gpu100");
	assert_string_equal(s.names[127], "gpu128");
	gf_nodeset_release(&s);
}

static void test_cartesian(void **state)
{
	check_expand("r[1-2]n[01-02]", "r1n01,r1n02,r2n01,r2n02");
	check_expand("r[1-2]n[01-02,7]", "r1n01,r1n02,r1n7,r2n01,r2n02,r2n7");
	check_expand("a[1-2]b[1-2]c[1-2]",
		     "a1b1c1,a1b1c2,a1b2c1,a1b2c2,a2b1c1,a2b1c2,a2b2c1,a2b2c2");
	check_expand("[1-2][1-2]", "11,12,21,22");
	/* Cartesian products may repeat a name: it appears once. */
	check_expand("[1-2][1,11]", "11,111,21,211");
	check_expand("[1,11][1,11]", "11,111,1111");
}

static void test_operators(void **state)
{
	check_expand("gpu[1-5]!gpu[2-3]", "gpu1,gpu4,gpu5");
	check_expand("gpu[1-5]&gpu[3-8]", "gpu3,gpu4,gpu5");
	check_expand("gpu[1-5]!gpu9", "gpu1,gpu2,gpu3,gpu4,gpu5");
	check_expand("gpu[1-2]&gpu9", "");
	check_expand("gpu[1-3]!gpu[1-3]", "");
	/* Order: the left side's, even when the right lists names differently. */
	check_expand("n2,n3,n1&n[1-2]", "n2,n1");
	check_expand("b,a,c&c,b", "c,b");
	check_expand("c,b,a!b", "c,a");
	/* Strictly left to right, no precedence. */
	check_expand("a[1-2],a3&a3", "a3");
	check_expand("a1!a1,a1", "a1");
	check_expand("gpu[1-3],gpu[5-6]!gpu[1-5]", "gpu6");
	check_expand("a[1-4]!a2&a[2-3]", "a3");
	check_expand("a[1-4]&a[2-3]!a2", "a3");
	/* Brackets hold commas that are not operators. */
	check_expand("n[1,3],m[2,4]", "n1,n3,m2,m4");
	/* Symmetric difference: the left side's names not in the right, then the right's. */
	check_expand("gpu[1-4]^gpu[3-6]", "gpu1,gpu2,gpu5,gpu6");
	check_expand("a,b^b,a", "a"); /* ((a,b)^b),a */
	check_expand("a[1-3]^a[1-3]", "");
	check_expand("a^b", "a,b");
	check_expand("a[1-3] ^ a2 , a9", "a1,a3,a9");
	check_expand("^a", "a");
	check_expand("a[1-5]^a[4-8]&a[1-6]", "a1,a2,a3,a6");
}

static void test_leading_operator(void **state)
{
	check_expand(",a", "a");
	check_expand("!a", "");
	check_expand("&a", "");
	check_expand("!a,b", "b");
	check_expand(" , a", "a");
}

static void test_whitespace(void **state)
{
	check_expand("  gpu1 ,\tgpu2 ! gpu1  ", "gpu2");
	check_expand("gpu[1-2]\n,\r\ngpu3", "gpu1,gpu2,gpu3");
	check_expand("\tgpu1\t", "gpu1");
	check_error("gpu1 gpu2", "unexpected 'g'", "expected ','", "column 6");
	check_error("gpu[1 -2]", "unexpected space", "column 6");
	check_error("gpu[1-\t2]", "byte 0x09", "column 7");
}

/* ---- errors ---- */

static void test_errors_brackets(void **state)
{
	check_error("gpu[1-", "unbalanced '['", "at column 4", "in 'gpu[1-'");
	check_error("gpu[1-3,gpu4", "unbalanced '['", "column 4");
	check_error("a,gpu[", "unbalanced '['", "column 6");
	check_error("gpu1]", "unbalanced ']'", "column 5");
	check_error("gpu[1]]", "unbalanced ']'", "column 7");
	check_error("]", "unbalanced ']'", "column 1");
	check_error("gpu[1[2]]", "nested '['", "column 6");
	check_error("gpu[]", "empty brackets", "column 4");
	check_error("gpu[1-]", "missing number before ']'", "column 7");
	check_error("gpu[1,]", "missing number before ']'", "column 7");
	check_error("gpu[,1]", "unexpected ','", "column 5");
	check_error("gpu[1,,2]", "unexpected ','", "column 7");
	check_error("gpu[a]", "unexpected 'a'", "column 5");
	check_error("gpu[1a]", "unexpected 'a'", "in brackets", "column 6");
	check_error("gpu[-3]", "unexpected '-'", "column 5");
	check_error("gpu[1-2-3]", "unexpected '-'", "column 8");
	check_error("gpu[1!2]", "unexpected '!'");
	check_error("gpu[1/2]", "unexpected '/'");
}

static void test_errors_ranges(void **state)
{
	check_error("gpu[5-1]", "reversed range '5-1'", "column 5", "in 'gpu[5-1]'");
	check_error("gpu[1,10-09]", "reversed range '10-09'", "column 7");
	check_error("gpu[1-5/0]", "zero step in range '1-5/0'", "column 9");
	check_error("gpu[1-5/]", "missing number");
	check_error("gpu[1234567890123456789]", "number too long", "column 5");
	check_error("gpu[1-1234567890123456789]", "number too long", "column 7");
}

static void test_errors_terms(void **state)
{
	check_error("", "empty node set");
	check_error(" \t ", "empty node set");
	check_error("gpu1,,gpu2", "empty term after ','", "column 6");
	check_error("gpu1,", "empty term after ','", "column 6");
	check_error("gpu1 ! ", "empty term after '!'", "column 8");
	check_error(",", "empty term after ','");
	check_error("a&", "empty term after '&'");
	check_error("a,!b", "empty term after ','", "column 3");
	check_error("gpu#1", "unexpected '#'", "in a name", "column 4");
	check_error("gpu\x01", "byte 0x01", "column 4");
	check_error("gpu\xc3\xa9", "byte 0xc3");
	check_error("a@b", "unexpected '@'", "column 2");
	check_error("@grp", "no group source for '@grp'", "column 1");
	check_error("a,@grp", "no group source", "column 3");
}

static void test_errors_misc(void **state)
{
	char name[300];
	struct gf_nodeset s;
	struct gf_buf b = GF_BUF_INIT;
	struct gf_err err = {0};
	size_t i;

	/* err may be NULL. */
	assert_int_equal(gf_nodeset_parse("gpu[", NULL, NULL, &s, NULL), GF_E_USAGE);
	assert_int_equal(gf_nodeset_parse(NULL, NULL, NULL, &s, &err), GF_E_USAGE);

	/* Names longer than any host name. */
	memset(name, 'a', 256);
	name[256] = '\0';
	check_error(name, "name longer than 255");
	memset(name, 'a', 251);
	memcpy(name + 251, "[1-99999]", 10);
	check_error(name, "name longer than 255", "column 1");
	name[255] = '\0';
	memset(name, 'a', 255);
	check_expand(name, name);

	/* A long expression is quoted in part. */
	for (i = 0; i < 100; i++)
		gf_buf_addf(&b, "node%zu,", i);
	gf_buf_adds(&b, "bad[");
	assert_int_equal(gf_nodeset_parse(gf_buf_str(&b), NULL, NULL, &s, &err), GF_E_USAGE);
	assert_non_null(strstr(err.msg, "unbalanced '['"));
	assert_non_null(strstr(err.msg, "...'"));
	assert_true(strlen(err.msg) < sizeof(err.msg) - 1);
	gf_buf_release(&b);
}

static void test_cap(void **state)
{
	struct gf_nodeset s;

	/* Rejected before anything is allocated: these could never fit in memory. */
	check_error("gpu[0-999999999999999999]",
		    "'gpu[0-999999999999999999]' expands to more than 1000000", "column 1");
	check_error("a,gpu[1-1000001]", "expands to more than 1000000", "column 3");
	check_error("a[1-1000]b[1-1001]", "expands to more than 1000000");
	check_error("a[1-100000]b[1-100000]c[1-100000]d[1-100000]", "expands to more than");
	check_error("a[1-600000,1-600000]", "expands to more than");
	check_error("a[0-999999999999999999/1000000000]", "expands to more than");

	/* Exactly the cap is fine. */
	assert_int_equal(gf_nodeset_parse("n[1-1000]m[1-1000]", NULL, NULL, &s, NULL), 0);
	assert_int_equal(s.n, GF_NODESET_MAX);
	assert_string_equal(s.names[0], "n1m1");
	assert_string_equal(s.names[GF_NODESET_MAX - 1], "n1000m1000");
	gf_nodeset_release(&s);

	/* A step brings a range that is huge on its face within the cap. */
	assert_int_equal(gf_nodeset_parse("a[0-999999999999999999/1000000000000000]", NULL, NULL,
					  &s, NULL),
			 0);
	assert_int_equal(s.n, 1000);
	assert_string_equal(s.names[1], "a1000000000000000");
	assert_string_equal(s.names[999], "a999000000000000000");
	gf_nodeset_release(&s);
}

static void test_cap_union(void **state)
{
	struct gf_nodeset s;

	/* Each term fits; their union does not, by one. */
	check_error("a[1-600000],b[1-400001]", "node set expands to more than 1000000",
		    "column 13");
	/* Names already there do not count twice. */
	assert_int_equal(gf_nodeset_parse("a[1-600],a[1-600],a[601-1000]!a[1-10]&a[5-20]", NULL,
					  NULL, &s, NULL),
			 0);
	assert_int_equal(s.n, 10);
	assert_string_equal(s.names[0], "a11");
	assert_string_equal(s.names[9], "a20");
	gf_nodeset_release(&s);
}

/* ---- groups ---- */

static void test_groups(void **state)
{
	struct fake f = {0};

	check_expand_r("@gpus", fake_resolve, &f, "gpu1,gpu2,gpu3,gpu4");
	assert_int_equal(f.calls, 1);
	assert_string_equal(f.last, "gpus"); /* without the '@' */
	check_expand_r("@gpus!gpu2", fake_resolve, &f, "gpu1,gpu3,gpu4");
	check_expand_r("@gpus&@rack2", fake_resolve, &f, "gpu3,gpu4");
	check_expand_r("@rack1", fake_resolve, &f, "gpu1,gpu2");
	check_expand_r("@rack[1-2]", fake_resolve, &f, "gpu1,gpu2,gpu3,gpu4,sw2");
	check_expand_r("login1,@gpus , @login", fake_resolve, &f, "login1,gpu1,gpu2,gpu3,gpu4");
	check_expand_r("@empty", fake_resolve, &f, "");
	check_expand_r("gpu[1-6]!@gpus", fake_resolve, &f, "gpu5,gpu6");
	check_expand_r("!@gpus,x", fake_resolve, &f, "x");
}

static void test_group_errors(void **state)
{
	struct fake f = {0};

	check_error_r("@nope", fake_resolve, &f, GF_E_USAGE, "unknown group 'nope'", (char *)NULL);
	check_error_r("gpu1,@nope", fake_resolve, &f, GF_E_USAGE, "unknown group", (char *)NULL);
	check_error_r("@", fake_resolve, &f, GF_E_USAGE, "missing group name", "column 1",
		      (char *)NULL);
	check_error_r("a,@,b", fake_resolve, &f, GF_E_USAGE, "missing group name", "column 3",
		      (char *)NULL);
	check_error_r("@rack[2-1]", fake_resolve, &f, GF_E_USAGE, "reversed range", "column 7",
		      (char *)NULL);
	check_error_r("@@gpus", fake_resolve, &f, GF_E_USAGE, "unexpected '@'", "column 2",
		      (char *)NULL);
	f.calls = 0;
	check_error_r("@rack[1-2", fake_resolve, &f, GF_E_USAGE, "unbalanced '['", (char *)NULL);
	assert_int_equal(f.calls, 0);

	/* The source's own code and message come through. */
	f.fail_code = GF_E_DB;
	check_error_r("@gpus", fake_resolve, &f, GF_E_DB, "group source is broken", (char *)NULL);
}

/* ---- collapse ---- */

static void check_collapse(const char *const *names, size_t n, const char *want)
{
	char *got = gf_nodeset_collapse(names, n);

	assert_non_null(got);
	if (strcmp(got, want))
		fail_msg("collapse gave '%s', want '%s'", got, want);
	free(got);
}

#define COLLAPSE(want, ...)                                           \
	do {                                                          \
		const char *const v_[] = {__VA_ARGS__};               \
		check_collapse(v_, sizeof(v_) / sizeof(v_[0]), want); \
	} while (0)

static void test_collapse(void **state)
{
	check_collapse(NULL, 0, "");
	COLLAPSE("gpu1", "gpu1");
	COLLAPSE("login", "login");
	COLLAPSE("gpu[001-004,007]", "gpu001", "gpu002", "gpu003", "gpu004", "gpu007");
	COLLAPSE("gpu[001-004,007]", "gpu007", "gpu003", "gpu001", "gpu004", "gpu002");
	COLLAPSE("gpu[1-2]", "gpu1", "gpu2");
	COLLAPSE("n[1,3,5]", "n1", "n3", "n5");
	COLLAPSE("n[1-3,5-6,9]", "n9", "n1", "n2", "n3", "n5", "n6");
	COLLAPSE("a[0-1]", "a0", "a1");
	/* Unpadded numbers fold across widths; padded ones only with their width. */
	COLLAPSE("gpu[9-10]", "gpu9", "gpu10");
	COLLAPSE("gpu[9-10,100]", "gpu100", "gpu9", "gpu10");
	COLLAPSE("gpu[09-10]", "gpu09", "gpu10");
	COLLAPSE("gpu[098-100]", "gpu098", "gpu099", "gpu100");
	/* Wider unpadded numbers too, in the widest class they fit (ClusterShell 1.9). */
	COLLAPSE("gpu[01-02,100]", "gpu01", "gpu02", "gpu100");
	COLLAPSE("r[98-120]", "r98", "r99", "r100", "r101", "r102", "r103", "r104", "r105", "r106",
		 "r107", "r108", "r109", "r110", "r111", "r112", "r113", "r114", "r115", "r116",
		 "r117", "r118", "r119", "r120");
	COLLAPSE("gpu[098-100,1000],gpu01", "gpu098", "gpu01", "gpu099", "gpu100", "gpu1000");
	COLLAPSE("gpu01,gpu001", "gpu01", "gpu001");
	COLLAPSE("gpu1,gpu01", "gpu1", "gpu01");
	COLLAPSE("gpu[1-2],gpu[01-02]", "gpu1", "gpu01", "gpu2", "gpu02");
	COLLAPSE("gpu[001-002],gpu[01-02]", "gpu001", "gpu01", "gpu002", "gpu02");
	COLLAPSE("n0,n[00-01]", "n0", "n00", "n01");
	/* Order: by the first member of each fold. */
	COLLAPSE("login[1-2],gpu[1-2]", "login1", "gpu2", "gpu1", "login2");
	COLLAPSE("head,gpu1", "head", "gpu1", "head");
	/* Prefix and suffix must both match; the last digit run folds. */
	COLLAPSE("gpu[1-2]-bmc,gpu3", "gpu1-bmc", "gpu2-bmc", "gpu3");
	COLLAPSE("r1n[01-02],r2n01", "r1n01", "r1n02", "r2n01");
	/* Every numeric dimension folds, the last first (ClusterShell 1.9's nodeset -f). */
	COLLAPSE("r[1-2]n[01-03]", "r1n01", "r1n02", "r1n03", "r2n01", "r2n02", "r2n03");
	COLLAPSE("r[1-2]n[01-03]", "r2n03", "r1n01", "r2n01", "r1n02", "r2n02", "r1n03");
	COLLAPSE("r[1-2]n1", "r1n1", "r2n1");
	COLLAPSE("r1n[1-2],r2n1", "r1n1", "r1n2", "r2n1");
	COLLAPSE("a1b1,a2b2", "a1b1", "a2b2");
	COLLAPSE("r1-n[1-2],r2-n1", "r1-n1", "r2-n1", "r1-n2");
	COLLAPSE("10.0.[1-2].[1-3]", "10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.2.1", "10.0.2.2",
		 "10.0.2.3");
	COLLAPSE("r[1-3]n[1-2]-bmc", "r1n1-bmc", "r1n2-bmc", "r2n1-bmc", "r2n2-bmc", "r3n1-bmc",
		 "r3n2-bmc");
	COLLAPSE("r[09-10]n[8-9]", "r09n8", "r09n9", "r10n8", "r10n9");
	COLLAPSE("n1x[2-3]", "n1x2", "n1x3");
	COLLAPSE("a1b,a[1-2]", "a1b", "a1", "a2");
	COLLAPSE("127.31.0.[1-3]", "127.31.0.1", "127.31.0.2", "127.31.0.3");
	/* Duplicates collapse into one. */
	COLLAPSE("a1", "a1", "a1");
	COLLAPSE("a[1-2]", "a1", "a2", "a1");
	/* Digit runs too long to be numbers stay as they are. */
	COLLAPSE("n1234567890123456789,n1234567890123456788", "n1234567890123456789",
		 "n1234567890123456788");
	COLLAPSE("n[123456789012345678-123456789012345679]", "n123456789012345678",
		 "n123456789012345679");
	COLLAPSE("", "");
}

/* collapse(expand(x)) is @want, and expands back to the same set. */
static void check_roundtrip(const char *expr, const char *want)
{
	struct gf_nodeset a, b;
	char *c;

	assert_int_equal(gf_nodeset_parse(expr, NULL, NULL, &a, NULL), 0);
	c = gf_nodeset_collapse((const char *const *)a.names, a.n);
	if (want && strcmp(c, want))
		fail_msg("'%s' collapsed to '%s', want '%s'", expr, c, want);
	assert_int_equal(gf_nodeset_parse(c, NULL, NULL, &b, NULL), 0);
	if (!same_set(&a, &b))
		fail_msg("'%s' -> '%s' expands to another set", expr, c);
	free(c);
	gf_nodeset_release(&a);
	gf_nodeset_release(&b);
}

static void test_roundtrip_exprs(void **state)
{
	check_roundtrip("gpu[001-128]", "gpu[001-128]");
	check_roundtrip("gpu[1-3,7]", "gpu[1-3,7]");
	check_roundtrip("gpu[9-10]", "gpu[9-10]");
	check_roundtrip("gpu[098-101]", "gpu[098-101]");
	check_roundtrip("n[1-010]", "n[1-10]");
	check_roundtrip("r[1-2]n[01-04]", "r[1-2]n[01-04]");
	check_roundtrip("r[1-2]n[01-04]!r2n04", "r1n[01-04],r2n[01-03]");
	check_roundtrip("x[1-3]y[1-2]z[7-9]", "x[1-3]y[1-2]z[7-9]");
	check_roundtrip("127.31.0.[1-20]", "127.31.0.[1-20]");
	check_roundtrip("n[1-20/3]", "n[1,4,7,10,13,16,19]");
	check_roundtrip("a,b,c[1-2]x", "a,b,c[1-2]x");
	check_roundtrip("n[1,01,001,0001]", "n1,n01,n001,n0001");
	/* n10-n12 print the same in the two-digit class, which exists. */
	check_roundtrip("n[0-12],n[00-12],n[000-012]", "n[0-9],n[00-12],n[000-012]");
	check_roundtrip("[1-3]", "[1-3]");
	check_roundtrip("n[99-101]x[7-8]", NULL);
	check_roundtrip("n[1-100000]", "n[1-100000]");
}

/* A tiny generator, so the test is the same on every run. */
static uint32_t rnd(uint64_t *st)
{
	*st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(*st >> 33);
}

/* expand(collapse(names)) holds exactly the names, for many random lists. */
static void test_roundtrip_random(void **state)
{
	static const char *const pre[] = {"gpu", "n", "r1n", "10.0.0.", "", "a-b", "x9y"};
	static const char *const suf[] = {"", "", "-bmc", ".ib", "z"};
	uint64_t st = 12345;
	int iter;

	for (iter = 0; iter < 2000; iter++) {
		struct gf_nodeset names = GF_NODESET_INIT, back;
		struct gf_err err = {0};
		size_t n = 1 + rnd(&st) % 40, i;
		char *c;

		for (i = 0; i < n; i++) {
			char name[96];
			unsigned v = rnd(&st) % (rnd(&st) % 2 ? 20 : 2000);
			int width = (int)(rnd(&st) % 5);
			const char *p = pre[rnd(&st) % (sizeof(pre) / sizeof(pre[0]))];
			const char *s = suf[rnd(&st) % (sizeof(suf) / sizeof(suf[0]))];

			if (rnd(&st) % 10 == 0)
				snprintf(name, sizeof(name), "%s%s", p[0] ? p : "h", s);
			else
				snprintf(name, sizeof(name), "%s%0*u%s", p, width, v, s);
			gf_nodeset_add(&names, name);
		}
		c = gf_nodeset_collapse((const char *const *)names.names, names.n);
		if (gf_nodeset_parse(c, NULL, NULL, &back, &err))
			fail_msg("collapse gave '%s', which does not parse: %s", c, err.msg);
		if (!same_set(&names, &back))
			fail_msg("collapse gave '%s', which expands to another set", c);
		/* Collapsing is idempotent. */
		{
			char *c2 = gf_nodeset_collapse((const char *const *)back.names, back.n);

			if (strcmp(c, c2)) {
				/* Order may differ; the sets must not. */
				struct gf_nodeset b2;

				assert_int_equal(gf_nodeset_parse(c2, NULL, NULL, &b2, NULL), 0);
				assert_true(same_set(&back, &b2));
				gf_nodeset_release(&b2);
			}
			free(c2);
		}
		free(c);
		gf_nodeset_release(&names);
		gf_nodeset_release(&back);
	}
}

static void test_collapse_large(void **state)
{
	struct gf_nodeset s;
	char *c;

	assert_int_equal(gf_nodeset_parse("gpu[000001-400000]!gpu[000100-000199]", NULL, NULL, &s,
					  NULL),
			 0);
	assert_int_equal(s.n, 399900);
	c = gf_nodeset_collapse((const char *const *)s.names, s.n);
	assert_string_equal(c, "gpu[000001-000099,000200-400000]");
	free(c);
	gf_nodeset_release(&s);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Fold @s, check the fold is @want (unless NULL) and expands back; returns the seconds taken. */
static double fold_back(const struct gf_nodeset *s, const char *want)
{
	struct gf_nodeset back;
	double t0 = now_s(), t;
	char *c = gf_nodeset_collapse((const char *const *)s->names, s->n);

	t = now_s() - t0;
	if (want)
		assert_string_equal(c, want);
	assert_int_equal(gf_nodeset_parse(c, NULL, NULL, &back, NULL), 0);
	assert_true(same_set(s, &back));
	free(c);
	gf_nodeset_release(&back);
	return t;
}

/*
 * 2,048 names, 64 racks of 32, fold to one range and expand back; so does
 * half of them, picked at random, into many blocks. Both in well under a
 * second (milliseconds unoptimised; the bound leaves room for Valgrind).
 */
static void test_collapse_racks(void **state)
{
	struct gf_nodeset all = GF_NODESET_INIT, half = GF_NODESET_INIT;
	uint64_t st = 22;
	char name[32];
	int r, n;

	for (r = 64; r >= 1; r--)
		for (n = 1; n <= 32; n++) {
			snprintf(name, sizeof(name), "r%02dn%02d", r, n);
			gf_nodeset_add(&all, name);
			if (rnd(&st) % 2)
				gf_nodeset_add(&half, name);
		}
	assert_int_equal(all.n, 2048);
	assert_true(fold_back(&all, "r[01-64]n[01-32]") < 5.0);
	assert_true(fold_back(&half, NULL) < 5.0);
	gf_nodeset_release(&all);
	gf_nodeset_release(&half);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_basics),
		cmocka_unit_test(test_plain_names),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_ip_range_size),
		cmocka_unit_test(test_cartesian),
		cmocka_unit_test(test_operators),
		cmocka_unit_test(test_leading_operator),
		cmocka_unit_test(test_whitespace),
		cmocka_unit_test(test_errors_brackets),
		cmocka_unit_test(test_errors_ranges),
		cmocka_unit_test(test_errors_terms),
		cmocka_unit_test(test_errors_misc),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_cap_union),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_group_errors),
		cmocka_unit_test(test_collapse),
		cmocka_unit_test(test_roundtrip_exprs),
		cmocka_unit_test(test_roundtrip_random),
		cmocka_unit_test(test_collapse_large),
		cmocka_unit_test(test_collapse_racks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
