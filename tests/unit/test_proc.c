/* lib/proc: a shell command started with clean signals, its streams as asked. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/proc.h"

/* All of @fd into @buf (NUL-terminated); closes it. */
static void read_all(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t r;

	while ((r = read(fd, buf + len, size - 1 - len)) > 0 || (r < 0 && errno == EINTR))
		if (r > 0)
			len += (size_t)r;
	buf[len] = '\0';
	close(fd);
}

static int wait_exit(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void streams(void **state)
{
	const struct gf_proc_opts how = {.in = GF_PROC_NULL,
					 .out = GF_PROC_PIPE,
					 .err = GF_PROC_PIPE,
					 .own_group = true};
	struct gf_proc p;
	struct gf_err err = {0};
	char out[256], errs[256], want[64];

	(void)state;
	/* stdin is /dev/null (read gives nothing), the group is its own. */
	assert_int_equal(gf_proc_spawn("cat; echo out; echo err >&2; cut -d' ' -f5 /proc/$$/stat",
				       &how, &p, &err),
			 0);
	assert_true(p.out >= 0 && p.err >= 0);
	/* Close-on-exec: a later child does not hold the pipes open. */
	assert_true(fcntl(p.out, F_GETFD) & FD_CLOEXEC);
	read_all(p.err, errs, sizeof(errs));
	read_all(p.out, out, sizeof(out));
	assert_int_equal(wait_exit(p.pid), 0);
	snprintf(want, sizeof(want), "out\n%d\n", (int)p.pid);
	assert_string_equal(out, want);
	assert_string_equal(errs, "err\n");
}

static void inherited(void **state)
{
	const struct gf_proc_opts how = {.out = GF_PROC_NULL};
	struct gf_proc p;

	(void)state;
	assert_int_equal(gf_proc_spawn("echo to-null; exit 3", &how, &p, NULL), 0);
	assert_int_equal(p.out, -1);
	assert_int_equal(p.err, -1);
	assert_int_equal(wait_exit(p.pid), 3);
}

/* Whatever this process ignores or blocks, the command starts with defaults. */
static void clean_signals(void **state)
{
	const struct gf_proc_opts how = {.out = GF_PROC_PIPE};
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe, old_hup;
	sigset_t set, old_mask;
	unsigned long long blk = 1, ignored = 1;
	struct gf_proc p;
	char out[128];

	(void)state;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	assert_int_equal(sigaction(SIGPIPE, &ign, &old_pipe), 0);
	assert_int_equal(sigaction(SIGHUP, &ign, &old_hup), 0);
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &set, &old_mask), 0);
	assert_int_equal(
		gf_proc_spawn("sed -n 's/^Sig\\(Blk\\|Ign\\):[[:space:]]*//p' /proc/self/status",
			      &how, &p, NULL),
		0);
	read_all(p.out, out, sizeof(out));
	assert_int_equal(wait_exit(p.pid), 0);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &old_mask, NULL), 0);
	assert_int_equal(sigaction(SIGHUP, &old_hup, NULL), 0);
	assert_int_equal(sigaction(SIGPIPE, &old_pipe, NULL), 0);
	assert_int_equal(sscanf(out, "%llx %llx", &blk, &ignored), 2);
	assert_true(blk == 0);
	/* Signals 1-31; glibc leaves its two internal ones (32, 33) ignored in any child. */
	assert_true((ignored & ((1ULL << 31) - 1)) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(streams),
		cmocka_unit_test(inherited),
		cmocka_unit_test(clean_signals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
