/*
 * One remote shell per round (host/script.c): the script is run here by
 * the real /bin/sh, as the host's sshd would, and what it printed is read
 * back into each command's output, exit status, time-out and cut.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/hostcollect.h"
#include "host/script.h"
#include "lib/util.h"

/* Run @n commands as one script through the local runner, then parse. */
static void run_script(struct gf_remote_cmd *cmds, size_t n, double seconds)
{
	char tag[GF_SCRIPT_TAG_SIZE];
	struct gf_remote_cmd sc = {.max = gf_script_max_output(n)};
	struct gf_err err = {0};
	char *line;

	gf_script_tag(tag);
	line = gf_script_build(cmds, n, seconds, tag);
	sc.line = line;
	assert_int_equal(gf_host_run_local(NULL, &sc, 1, gf_monotime() + seconds + 5, NULL, &err),
			 0);
	assert_int_equal(sc.status, 0);
	assert_int_equal(gf_script_parse(gf_buf_str(&sc.out), sc.out.len, tag, cmds, n, &err), 0);
	gf_remote_cmd_release(&sc);
	free(line);
}

static void outputs_and_status(void **state)
{
	struct gf_remote_cmd c[7] = {
		{.line = "echo out; echo err >&2; exit 3"},
		{.line = "printf 'it'\"'\"'s \\001\\n'"}, /* quotes and a control byte */
		{.line = "cat; echo read-nothing"},       /* stdin is /dev/null */
		{.line = "kill -9 $$"},                   /* a signal */
		{.line = "echo plain words"},             /* run without a shell */
		{.line = "gf-no-such-command --version"}, /* not there: 127, as a shell says */
		{.line = "exit 255"},                     /* an exit, not a signal */
	};

	(void)state;
	run_script(c, 7, 5);
	assert_true(c[0].ran && !c[0].timed_out && !c[0].cut);
	assert_int_equal(c[0].status, 3);
	assert_string_equal(gf_buf_str(&c[0].out), "out\n");
	assert_string_equal(gf_buf_str(&c[0].err), "err\n");
	assert_string_equal(gf_buf_str(&c[1].out), "it's \001\n");
	assert_int_equal(c[1].status, 0);
	assert_string_equal(gf_buf_str(&c[2].out), "read-nothing\n");
	assert_int_equal(c[3].status, -1);
	assert_false(c[3].timed_out);
	assert_string_equal(gf_buf_str(&c[4].out), "plain words\n");
	assert_int_equal(c[5].status, 127);
	assert_int_equal(c[6].status, 255);
	for (int i = 0; i < 7; i++)
		gf_remote_cmd_release(&c[i]);
}

static void env_lines_run_without_env(void **state)
{
	struct gf_remote_cmd c[4] = {
		{.line = "env GF_A=1 GF_B=two printenv GF_B"},
		{.line = "env LC_ALL=C gf-no-such-command --version"},
		{.line = "env GF_A=1 read x"}, /* a builtin: env(1) runs its program */
		{.line = "env -i printenv"},   /* an option: env(1) itself */
	};
	char tag[GF_SCRIPT_TAG_SIZE];
	char *script;

	(void)state;
	gf_script_tag(tag);
	script = gf_script_build(c, 4, 5, tag);
	/* The shell sets the variables itself: no env process for the first two. */
	assert_non_null(strstr(script, "(trap : TERM; GF_A=1 GF_B=two printenv GF_B;"));
	assert_non_null(strstr(script, "(trap : TERM; LC_ALL=C gf-no-such-command --version;"));
	assert_non_null(strstr(script, "(trap : TERM; env GF_A=1 read x;"));
	assert_non_null(strstr(script, "(trap : TERM; env -i printenv;"));
	free(script);
	run_script(c, 4, 5);
	assert_int_equal(c[0].status, 0);
	assert_string_equal(gf_buf_str(&c[0].out), "two\n");
	assert_int_equal(c[1].status, 127);
	assert_int_equal(c[2].status, 127); /* env finds no program "read" */
	assert_int_equal(c[3].status, 0);
	assert_string_equal(gf_buf_str(&c[3].out), "");
	for (int i = 0; i < 4; i++)
		gf_remote_cmd_release(&c[i]);
}

static void hung_command_stopped_others_answer(void **state)
{
	struct gf_remote_cmd c[2] = {
		{.line = "echo before; sleep 30"},
		{.line = "echo quick"},
	};
	double t0 = gf_monotime();

	(void)state;
	run_script(c, 2, 0.5);
	assert_true(gf_monotime() - t0 < 3);
	assert_true(c[0].ran && c[0].timed_out);
	assert_int_equal(c[0].status, -1);
	assert_string_equal(gf_buf_str(&c[0].out), "before\n"); /* what it printed is kept */
	assert_false(c[1].timed_out);
	assert_string_equal(gf_buf_str(&c[1].out), "quick\n");
	for (int i = 0; i < 2; i++)
		gf_remote_cmd_release(&c[i]);
}

/* Is @pid gone, or a zombie no one has reaped yet? Waits for it up to @seconds. */
static bool gone(pid_t pid, double seconds)
{
	double until = gf_monotime() + seconds;
	char path[64], buf[512];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (;;) {
		FILE *f = fopen(path, "r");
		size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		char *p;

		if (f)
			fclose(f);
		buf[len] = '\0';
		p = strrchr(buf, ')');
		if (!f || (p && p[1] == ' ' && p[2] == 'Z'))
			return true;
		if (gf_monotime() > until)
			return false;
		poll(NULL, 0, 10);
	}
}

static void command_ignoring_term_killed_others_answer(void **state)
{
	char pidfile[] = "/tmp/gf-test-script-XXXXXX", line[128], tag[GF_SCRIPT_TAG_SIZE];
	int fd = mkstemp(pidfile);
	struct gf_remote_cmd c[3] = {
		{.line = line},
		{.line = "echo quick"},
		{.line = "echo before; exec sleep 30"},
	};
	struct gf_remote_cmd sc = {.max = gf_script_max_output(3)};
	struct gf_err err = {0};
	double t0 = gf_monotime(), took;
	char *script;
	FILE *f;
	int pid = 0;
	bool killed;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	snprintf(line, sizeof(line), "trap '' TERM; echo $$ >%s; exec sleep 30", pidfile);
	/* A variable of the script's, set in the environment, is not taken for a status. */
	setenv("s0", "0", 1);
	gf_script_tag(tag);
	script = gf_script_build(c, 3, 1, tag);
	sc.line = script;
	assert_int_equal(gf_host_run_local(NULL, &sc, 1, gf_monotime() + 10, NULL, &err), 0);
	unsetenv("s0");
	took = gf_monotime() - t0;
	/* The command that ignored TERM was killed, not left running (else killed here). */
	f = fopen(pidfile, "r");
	if (f && fscanf(f, "%d", &pid) != 1)
		pid = 0;
	if (f)
		fclose(f);
	unlink(pidfile);
	killed = pid > 0 && gone((pid_t)pid, 5);
	if (pid > 0 && !killed)
		kill((pid_t)pid, SIGKILL);
	assert_true(killed);
	/* The script ends before its time limit is past by much, not when the command would. */
	assert_true(took < 2);
	assert_false(sc.timed_out);
	assert_int_equal(gf_script_parse(gf_buf_str(&sc.out), sc.out.len, tag, c, 3, &err), 0);
	assert_true(c[0].ran && c[0].timed_out);
	assert_int_equal(c[0].status, -1);
	assert_true(c[1].ran && !c[1].timed_out);
	assert_int_equal(c[1].status, 0);
	assert_string_equal(gf_buf_str(&c[1].out), "quick\n");
	assert_true(c[2].ran && c[2].timed_out); /* stopped by the TERM */
	assert_string_equal(gf_buf_str(&c[2].out), "before\n");
	gf_remote_cmd_release(&sc);
	free(script);
	for (int i = 0; i < 3; i++)
		gf_remote_cmd_release(&c[i]);
}

static void under_a_wrapper_its_group_is_left_alone(void **state)
{
	struct gf_remote_cmd c[2] = {
		{.line = "sleep 3"},
		{.line = "echo quick"},
	};
	char tag[GF_SCRIPT_TAG_SIZE];
	struct gf_remote_cmd sc = {.max = gf_script_max_output(2) + 64};
	struct gf_err err = {0};
	struct gf_buf line = GF_BUF_INIT;
	double t0 = gf_monotime();
	char *script;

	(void)state;
	/*
	 * A login wrapper that runs the script without exec: the script is not
	 * its process group's leader, so it signals no group (the wrapper is in
	 * it); it still stops waiting at the limit, and the wrapper goes on.
	 */
	gf_script_tag(tag);
	script = gf_script_build(c, 2, 0.6, tag);
	gf_buf_addf(&line, "(%s); echo wrapper-after", script);
	sc.line = gf_buf_str(&line);
	assert_int_equal(gf_host_run_local(NULL, &sc, 1, gf_monotime() + 10, NULL, &err), 0);
	assert_true(gf_monotime() - t0 < 2.5);
	assert_int_equal(sc.status, 0);
	assert_int_equal(gf_script_parse(gf_buf_str(&sc.out), sc.out.len, tag, c, 2, &err), 0);
	assert_true(c[0].ran && c[0].timed_out);
	assert_string_equal(gf_buf_str(&c[1].out), "quick\n");
	assert_true(sc.out.len > 14);
	assert_string_equal(gf_buf_str(&sc.out) + sc.out.len - 14, "wrapper-after\n");
	gf_remote_cmd_release(&sc);
	gf_buf_release(&line);
	free(script);
	for (int i = 0; i < 2; i++)
		gf_remote_cmd_release(&c[i]);
}

static void flood_is_cut_at_the_bound(void **state)
{
	struct gf_remote_cmd c[1] = {{.line = "head -c 20000000 /dev/zero"}};

	(void)state;
	run_script(c, 1, 10);
	assert_true(c[0].cut);
	assert_int_equal(c[0].out.len, GF_REMOTE_MAX_OUTPUT);
	gf_remote_cmd_release(&c[0]);
}

static void login_noise_skipped_and_foreign_frames_refused(void **state)
{
	const char *tag = "@gf1-0123456789abcdef";
	struct gf_remote_cmd c[1] = {{.line = "x"}};
	struct gf_err err = {0};
	const char good[] = "Welcome!\n@gf1-0123456789abcdef 0 0 0 3 0\nhi\n";
	const char longer[] = "@gf1-0123456789abcdef 0 0 0 99 0\nhi\n";
	const char other[] = "@gf1-0123456789abcdef 5 0 0 0 0\n";

	(void)state;
	assert_int_equal(gf_script_parse(good, sizeof(good) - 1, tag, c, 1, &err), 0);
	assert_string_equal(gf_buf_str(&c[0].out), "hi\n");
	/* A frame that came in part: that command's answer is not there. */
	assert_int_equal(gf_script_parse(longer, sizeof(longer) - 1, tag, c, 1, &err), 0);
	assert_false(c[0].ran);
	assert_int_equal(gf_script_parse(other, sizeof(other) - 1, tag, c, 1, &err), GF_E_NODE);
	/* A header and then something else: refused, and the header is not taken. */
	{
		const char half[] = "@gf1-0123456789abcdef 0 143 1 0 0\ngarbage\n";
		struct gf_remote_cmd two[2] = {{.line = "x"}, {.line = "y"}};

		assert_int_equal(gf_script_parse(half, sizeof(half) - 1, tag, two, 2, &err),
				 GF_E_NODE);
		assert_false(two[0].ran || two[0].timed_out);
		for (int i = 0; i < 2; i++)
			gf_remote_cmd_release(&two[i]);
	}
	/* Nothing of ours at all: no command ran. */
	assert_int_equal(gf_script_parse("motd\n", 5, tag, c, 1, &err), 0);
	assert_false(c[0].ran);
	gf_remote_cmd_release(&c[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(outputs_and_status),
		cmocka_unit_test(env_lines_run_without_env),
		cmocka_unit_test(hung_command_stopped_others_answer),
		cmocka_unit_test(command_ignoring_term_killed_others_answer),
		cmocka_unit_test(under_a_wrapper_its_group_is_left_alone),
		cmocka_unit_test(flood_is_cut_at_the_bound),
		cmocka_unit_test(login_noise_skipped_and_foreign_frames_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
