/* lib/escape: the escapes of an interactive console at the start of a line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/escape.h"

/* Feed @in; what would be sent in @sent (NUL-terminated), the actions as letters in @acts. */
static void feed(struct gf_escape *e, const char *in, char *sent, char *acts)
{
	size_t ns = 0, na = 0;

	for (const char *p = in; *p; p++) {
		unsigned char out[2];
		size_t n;
		enum gf_escape_action a = gf_escape_byte(e, (unsigned char)*p, out, &n);

		memcpy(sent + ns, out, n);
		ns += n;
		if (a != GF_ESC_NONE)
			acts[na++] = a == GF_ESC_END ? 'E' : a == GF_ESC_BREAK ? 'B' : 'H';
	}
	sent[ns] = 0;
	acts[na] = 0;
}

static void check(unsigned char ch, const char *in, const char *want_sent, const char *want_acts)
{
	struct gf_escape e;
	char sent[256], acts[64];

	gf_escape_init(&e, ch);
	feed(&e, in, sent, acts);
	assert_string_equal(sent, want_sent);
	assert_string_equal(acts, want_acts);
}

static void only_at_line_start(void **state)
{
	(void)state;
	check('~', "~.", "", "E");
	check('~', "ls\r~.", "ls\r", "E");
	check('~', "ls\n~.", "ls\n", "E");
	check('~', "a~.b", "a~.b", ""); /* not at a line start: sent as typed */
	check('~', "hello", "hello", "");
}

static void the_escapes(void **state)
{
	(void)state;
	check('~', "~B", "", "B");
	check('~', "~B~.", "", "BE"); /* a break keeps the line start */
	check('~', "~?", "", "H");
	check('~', "~~", "~", "");   /* a literal tilde */
	check('~', "~~.", "~.", ""); /* and then no longer at a line start */
	check('~', "~x", "~x", "");  /* unknown: both sent */
	check('~', "~\r~.", "~\r", "E");
}

static void other_escape_character(void **state)
{
	(void)state;
	check('&', "~.", "~.", "");
	check('&', "&.", "", "E");
	check('&', "\r&&", "\r&", "");
	check(0, "~.", "~.", ""); /* none: no escapes at all */
}

static void parse(void **state)
{
	unsigned char c = 1;

	(void)state;
	assert_int_equal(gf_escape_parse("~", &c), 0);
	assert_int_equal(c, '~');
	assert_int_equal(gf_escape_parse("&", &c), 0);
	assert_int_equal(c, '&');
	assert_int_equal(gf_escape_parse("^]", &c), 0);
	assert_int_equal(c, 0x1d);
	assert_int_equal(gf_escape_parse("^a", &c), 0);
	assert_int_equal(c, 1);
	assert_int_equal(gf_escape_parse("none", &c), 0);
	assert_int_equal(c, 0);
	assert_int_equal(gf_escape_parse("", &c), -1);
	assert_int_equal(gf_escape_parse(" ", &c), -1);
	assert_int_equal(gf_escape_parse("ab", &c), -1);
	assert_int_equal(gf_escape_parse("^1", &c), -1);
	assert_int_equal(gf_escape_parse("\xc3\xa9", &c), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(only_at_line_start),
		cmocka_unit_test(the_escapes),
		cmocka_unit_test(other_escape_character),
		cmocka_unit_test(parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
