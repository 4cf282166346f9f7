/*
 * libFuzzer target for node sets: whatever parses must collapse into a string
 * that expands back to the very same set; whatever fails must say so properly.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/nodeset.h"
#include "tests/fuzz/worker.h"

/* "@x" is x itself and grp1..grp3; "@none" is unknown, "@fail" breaks. */
static int resolve(void *ud, const char *group, struct gf_nodeset *out, struct gf_err *err)
{
	if (!strcmp(group, "none"))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "unknown group '%s'", group);
	if (!strcmp(group, "fail"))
		return gf_err_set(err, GF_E_DB, GF_EK_NONE, "group source failed");
	gf_nodeset_add(out, group);
	gf_nodeset_add(out, "grp1");
	gf_nodeset_add(out, "grp2");
	gf_nodeset_add(out, "grp3");
	return 0;
}

/*
 * A crude upper bound on how many names @s expands to: every number in a
 * bracket counts as a range up to it, and brackets multiply. Inputs above the
 * bound are skipped: expanding hundreds of thousands of names under
 * instrumentation takes seconds and finds nothing that small sets do not (the
 * cap itself is in the unit tests).
 */
static double estimate(const char *s)
{
	double total = 1, sum = 0, v = 0;
	bool in = false, digits = false;

	for (; *s; s++) {
		if (in && *s >= '0' && *s <= '9') {
			v = v * 10 + (*s - '0');
			digits = true;
			continue;
		}
		if (digits)
			sum += v + 1;
		v = 0;
		digits = false;
		if (*s == '[') {
			in = true;
			sum = 0;
		} else if (*s == ']' && in) {
			in = false;
			total *= sum > 1 ? sum : 1;
		}
	}
	return total;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **sorted_copy(const struct gf_nodeset *s)
{
	char **v = gf_xcalloc(s->n, sizeof(*v));

	if (s->n) {
		memcpy(v, s->names, s->n * sizeof(*v));
		qsort(v, s->n, sizeof(*v), cmp_str);
	}
	return v;
}

static void check_same(const struct gf_nodeset *a, const struct gf_nodeset *b)
{
	char **x, **y;
	size_t i;

	if (a->n != b->n)
		abort();
	x = sorted_copy(a);
	y = sorted_copy(b);
	for (i = 0; i < a->n; i++) {
		/* Sorted and unique: a duplicate would show up as equal neighbours. */
		if (strcmp(x[i], y[i]) || (i > 0 && !strcmp(x[i - 1], x[i])))
			abort();
	}
	free(x);
	free(y);
}

static void fuzz_input(const uint8_t *data, size_t size)
{
	struct gf_nodeset s = {NULL, 7, 7}, back;
	struct gf_err err = {0};
	char *expr, *c, *c2;
	int rc;

	expr = gf_xstrndup((const char *)data, size);
	if (estimate(expr) > 20000) {
		free(expr);
		return;
	}
	rc = gf_nodeset_parse(expr, resolve, NULL, &s, &err);
	free(expr);
	if (rc) {
		/* Fails cleanly: a known code, a message, and the output untouched. */
		if ((rc != GF_E_USAGE && rc != GF_E_DB) || err.code != rc || !err.msg[0] ||
		    s.names || s.n != 7 || s.cap != 7)
			abort();
		return;
	}
	if (s.n > GF_NODESET_MAX)
		abort();

	c = gf_nodeset_collapse((const char *const *)s.names, s.n);
	if (s.n == 0) {
		if (c[0])
			abort();
		free(c);
		gf_nodeset_release(&s);
		return;
	}
	memset(&err, 0, sizeof(err));
	if (gf_nodeset_parse(c, NULL, NULL, &back, &err))
		abort();
	check_same(&s, &back);

	/* Collapsing the expansion of a collapse gives the same set again. */
	c2 = gf_nodeset_collapse((const char *const *)back.names, back.n);
	gf_nodeset_release(&back);
	if (gf_nodeset_parse(c2, NULL, NULL, &back, &err))
		abort();
	check_same(&s, &back);

	free(c);
	free(c2);
	gf_nodeset_release(&back);
	gf_nodeset_release(&s);
}
