/*
 * fleet/console: the console log loop against a stub console (a socketpair
 * per session): data handed over per node, a dropped session reopened after
 * the backoff, busy tried again, an auth failure final, the deadline, the
 * cancel flag, and every session closed at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fleet/console.h"
#include "lib/util.h"

#define N 4

struct gf_console {
	int ours, theirs, node;
};

static int opens[N], closes, starts, stops;
static struct gf_console *live[N];

static int stub_start(size_t n, struct gf_err *err)
{
	(void)n;
	(void)err;
	starts++;
	return 0;
}

static void stub_stop(void)
{
	stops++;
}

static int stub_open(const struct gf_bmc_target *t, bool steal, bool keepalive,
		     struct gf_console **ret, struct gf_err *err)
{
	int node = t->node[1] - '0', sv[2];
	struct gf_console *c;
	char hello[32];

	(void)steal;
	assert_true(keepalive);
	opens[node]++;
	if (node == 2)
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH, "refused");
	if (node == 1 && opens[node] == 1)
		return gf_err_set(err, GF_E_NODE, GF_EK_BUSY, "in use");
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	c = calloc(1, sizeof(*c));
	c->ours = sv[0];
	c->theirs = sv[1];
	c->node = node;
	snprintf(hello, sizeof(hello), "hello %d.%d\n", node, opens[node]);
	assert_int_equal(write(c->theirs, hello, strlen(hello)), (ssize_t)strlen(hello));
	live[node] = c;
	*ret = c;
	return 0;
}

static int stub_fd(struct gf_console *c)
{
	return c->ours;
}

static enum gf_console_state stub_state(struct gf_console *c, struct gf_err *err)
{
	if (c->theirs < 0) {
		gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT, "session timeout");
		return GF_CONSOLE_FAILED;
	}
	return GF_CONSOLE_CONNECTED;
}

static void stub_close(struct gf_console *c)
{
	closes++;
	close(c->ours);
	if (c->theirs >= 0)
		close(c->theirs);
	live[c->node] = NULL;
	free(c);
}

static const struct gf_console_ops stub_ops = {
	.start = stub_start,
	.stop = stub_stop,
	.open = stub_open,
	.fd = stub_fd,
	.state = stub_state,
	.close = stub_close,
};
static const struct gf_backend stub = {.name = "stub", .title = "Stub", .console = &stub_ops};

struct seen {
	char data[N][256];
	char states[N][256];
};

static void on_data(void *ud, size_t i, const void *buf, size_t len)
{
	struct seen *s = ud;

	strncat(s->data[i], buf, len);
	/* The first session of node 0 drops after its hello: the BMC restarted. */
	if (i == 0 && strstr(s->data[0], "hello 0.1") && live[0] && opens[0] == 1) {
		close(live[0]->theirs);
		live[0]->theirs = -1;
	}
}

static void on_state(void *ud, size_t i, enum gf_console_log_state st, const struct gf_err *err)
{
	struct seen *s = ud;

	(void)err;
	strcat(s->states[i], gf_console_log_state_name(st));
	strcat(s->states[i], " ");
}

static void reconnects_busy_failed(void **state)
{
	struct gf_node nodes[N] = {0};
	struct gf_profile prof = {0};
	const struct gf_profile *profs[N] = {&prof, &prof, &prof, &prof};
	char names[N][4];
	struct seen s = {0};
	gf_cancel_flag cancel = 0;
	struct gf_err err = {0};

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "s%d", i);
		nodes[i].name = names[i];
		nodes[i].bmc = names[i];
		nodes[i].protocol = &stub;
	}
	struct gf_console_log r = {
		.nodes = nodes,
		.n = N,
		.profs = profs,
		.until = gf_monotime() + 1.5,
		.connect_timeout = 1,
		.backoff_min = 0.1,
		.backoff_max = 0.2,
		.cancel = &cancel,
		.on_state = on_state,
		.on_data = on_data,
		.ud = &s,
	};
	assert_int_equal(gf_console_start(N, &err), 0);
	assert_int_equal(gf_console_log_run(&r, &err), 0);
	/* node 0: dropped, reopened after the backoff, read again */
	assert_string_equal(s.data[0], "hello 0.1\nhello 0.2\n");
	assert_string_equal(s.states[0], "connecting connected reconnecting connecting connected ");
	/* node 1: busy first, then taken when free */
	assert_string_equal(s.data[1], "hello 1.2\n");
	assert_string_equal(s.states[1], "busy connecting connected ");
	/* node 2: credentials refused: failed, never tried again */
	assert_int_equal(opens[2], 1);
	assert_string_equal(s.states[2], "failed ");
	assert_string_equal(s.data[3], "hello 3.1\n");
	assert_int_equal(opens[3], 1);
	/* every session closed, the engine stopped */
	for (int i = 0; i < N; i++)
		assert_null(live[i]);
	assert_int_equal(starts, 1);
	assert_int_equal(stops, 1);
}

static void cancel_ends_it(void **state)
{
	struct gf_node node = {.name = (char *)"s3", .bmc = (char *)"s3", .protocol = &stub};
	struct gf_profile prof = {0};
	const struct gf_profile *profs[1] = {&prof};
	struct seen s = {0};
	gf_cancel_flag cancel = 1;
	struct gf_err err = {0};
	double t0 = gf_monotime();

	(void)state;
	struct gf_console_log r = {
		.nodes = &node,
		.n = 1,
		.profs = profs,
		.connect_timeout = 1,
		.backoff_min = 0.1,
		.backoff_max = 0.2,
		.cancel = &cancel,
		.on_state = on_state,
		.on_data = on_data,
		.ud = &s,
	};
	assert_int_equal(gf_console_log_run(&r, &err), 0);
	assert_true(gf_monotime() - t0 < 1);
	assert_null(live[3]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reconnects_busy_failed),
		cmocka_unit_test(cancel_ends_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
