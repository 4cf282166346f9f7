/* lib/constate: the state file of console log and its Prometheus text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/constate.h"

#define TMPDIR_PREFIX "/tmp/gf-constate-"
#include "tmpdir.h"

static struct gf_constate_node nodes[] = {
	{.node = (char *)"gpu01", .state = (char *)"connected", .bytes = 1234, .since = 1e9},
	{.node = (char *)"gpu\"02", .state = (char *)"busy", .bytes = 0, .since = 1e9 + 5},
};

static void test_round_trip(void **state)
{
	struct gf_constate w = {.started = 1e9,
				.updated = 1e9 + 10,
				.running = true,
				.pid = 42,
				.v = nodes,
				.n = 2};
	struct gf_constate r = {0};
	struct gf_err err = {0};

	(void)state;
	assert_int_equal(gf_constate_read(dir, &r, &err), GF_E_NOTFOUND);
	assert_int_equal(gf_constate_write(dir, &w, &err), 0);
	assert_int_equal(gf_constate_read(dir, &r, &err), 0);
	assert_int_equal(r.n, 2);
	assert_true(r.running);
	assert_int_equal(r.pid, 42);
	assert_string_equal(r.v[1].node, "gpu\"02");
	assert_string_equal(r.v[1].state, "busy");
	assert_int_equal(r.v[0].bytes, 1234);
	gf_constate_release(&r);
}

static void test_not_a_state_file(void **state)
{
	char path[128];
	struct gf_constate r = {0};
	struct gf_err err = {0};
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", dir, GF_CONSTATE_FILE);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"version\":1,\"nodes\":[{\"node\":\"a\"}]}", f);
	fclose(f);
	assert_int_equal(gf_constate_read(dir, &r, &err), GF_E_CONFIG);
	assert_non_null(strstr(err.msg, "not the state of a console log"));
	assert_int_equal(r.n, 0);
}

static void test_prometheus(void **state)
{
	struct gf_constate s = {.updated = 1000, .running = true, .v = nodes, .n = 2};
	const char *only[] = {"gpu01"};
	struct gf_buf b = GF_BUF_INIT;

	(void)state;
	gf_constate_prom(&s, 1010, NULL, 0, &b);
	assert_non_null(strstr(b.s, "gpufleet_console_log_up 1\n"));
	assert_non_null(strstr(b.s, "gpufleet_console_up{node=\"gpu01\"} 1\n"));
	assert_non_null(strstr(b.s,
			       "gpufleet_console_state{node=\"gpu\\\"02\",state=\"busy\"} 1\n"));
	assert_non_null(strstr(b.s, "gpufleet_console_bytes{node=\"gpu01\"} 1234\n"));
	gf_buf_release(&b);
	/* Stale: the logger is down, its consoles stopped, the bytes kept. */
	gf_constate_prom(&s, 1000 + GF_CONSTATE_STALE_S + 1, only, 1, &b);
	assert_non_null(strstr(b.s, "gpufleet_console_log_up 0\n"));
	assert_non_null(strstr(b.s, "gpufleet_console_up{node=\"gpu01\"} 0\n"));
	assert_non_null(strstr(b.s,
			       "gpufleet_console_state{node=\"gpu01\",state=\"stopped\"} 1\n"));
	assert_non_null(strstr(b.s, "gpufleet_console_bytes{node=\"gpu01\"} 1234\n"));
	assert_null(strstr(b.s, "gpu\\\"02"));
	gf_buf_release(&b);
	gf_constate_prom(NULL, 1000, NULL, 0, &b);
	assert_non_null(strstr(b.s, "gpufleet_console_log_up 0\n"));
	assert_null(strstr(b.s, "gpufleet_console_up{"));
	gf_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_not_a_state_file, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test(test_prometheus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
