/* What the tests of the credentials file share (test_creds.c, test_ipmi_profile.c). */
#ifndef GF_TEST_CREDS_CASES_H
#define GF_TEST_CREDS_CASES_H

#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/creds.h"

/* A file that must be refused, and how. */
struct bad_case {
	const char *text;
	int line;
	const char *msg; /* after "'PATH' line N: " */
};

/*
 * Each case, written by @write (which returns the new file's path) and loaded
 * with @check, fails with GF_E_CONFIG and exactly its message, and leaves
 * the profiles untouched.
 */
static inline void assert_bad_cases(const struct bad_case *cases, size_t n, gf_creds_check_fn check,
				    char *(*write)(const char *text))
{
	for (size_t i = 0; i < n; i++) {
		char *path = write(cases[i].text);
		struct gf_creds c = {.n = 42};
		struct gf_err err = {0};
		struct gf_buf want = GF_BUF_INIT;
		int rc;

		gf_buf_addf(&want, "'%s' line %d: %s", path, cases[i].line, cases[i].msg);
		rc = gf_creds_load(path, true, check, &c, &err);
		if (rc != GF_E_CONFIG || strcmp(err.msg, gf_buf_str(&want)) != 0)
			fail_msg("case %zu: rc %d, message '%s', want '%s'", i, rc, err.msg,
				 gf_buf_str(&want));
		assert_int_equal(c.n, 42);
		gf_buf_release(&want);
		free(path);
	}
}

#endif
