#include "lib/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static int fail(struct gf_err *err, int e, const char *what)
{
	int code = gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "%s (%s)", what, strerror(e));

	if (err)
		err->detail = e;
	return code;
}

static void close_pair(int p[2])
{
	for (int k = 0; k < 2; k++)
		if (p[k] >= 0)
			close(p[k]);
}

int gf_proc_spawn(const char *line, const struct gf_proc_opts *o, struct gf_proc *ret,
		  struct gf_err *err)
{
	char *argv_c[] = {(char *)"sh", (char *)"-c", (char *)line, NULL};
	char *argv_s[] = {(char *)"sh", (char *)"-s", NULL};
	const enum gf_proc_fd how[3] = {o->script ? GF_PROC_PIPE : o->in, o->out, o->err};
	size_t len = strlen(line);
	int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t all, none;
	short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
	pid_t pid;
	int e;

	if (o->script && len > GF_PROC_SCRIPT_MAX)
		return fail(err, E2BIG, "the command is too long");
	for (int fd = 0; fd < 3; fd++) {
		if (how[fd] == GF_PROC_PIPE && pipe2(pipes[fd], O_CLOEXEC) < 0) {
			e = errno;
			close_pair(pipes[0]);
			close_pair(pipes[1]);
			return fail(err, e, "cannot make a pipe");
		}
	}
	/*
	 * The script fits the pipe (64 KiB on Linux, more than the limit), so it
	 * is written whole before the child runs and never blocks.
	 */
	if (o->script) {
		size_t done = 0;

		while (done < len) {
			ssize_t w = write(pipes[0][1], line + done, len - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				e = w < 0 ? errno : EIO;
				for (int fd = 0; fd < 3; fd++)
					close_pair(pipes[fd]);
				return fail(err, e, "cannot write the command to a pipe");
			}
			done += (size_t)w;
		}
		close(pipes[0][1]);
		pipes[0][1] = -1;
	}
	posix_spawn_file_actions_init(&fa);
	for (int fd = 0; fd < 3; fd++) {
		if (how[fd] == GF_PROC_NULL)
			posix_spawn_file_actions_addopen(&fa, fd, "/dev/null",
							 fd ? O_WRONLY : O_RDONLY, 0);
		else if (how[fd] == GF_PROC_PIPE)
			posix_spawn_file_actions_adddup2(&fa, pipes[fd][fd ? 1 : 0], fd);
	}
	posix_spawnattr_init(&at);
	/*
	 * An ignored signal stays ignored across exec: without this the command
	 * would run with SIGPIPE ignored, as gpufleet does, and a blocked one
	 * would stay blocked.
	 */
	sigfillset(&all);
	sigemptyset(&none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setsigmask(&at, &none);
	if (o->own_group) {
		posix_spawnattr_setpgroup(&at, 0);
		flags |= POSIX_SPAWN_SETPGROUP;
	}
	posix_spawnattr_setflags(&at, flags);
	e = posix_spawn(&pid, "/bin/sh", &fa, &at, o->script ? argv_s : argv_c, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (pipes[0][0] >= 0)
		close(pipes[0][0]);
	for (int fd = 1; fd < 3; fd++)
		if (pipes[fd][1] >= 0)
			close(pipes[fd][1]);
	if (e) {
		for (int fd = 1; fd < 3; fd++)
			if (pipes[fd][0] >= 0)
				close(pipes[fd][0]);
		return fail(err, e, "cannot run /bin/sh");
	}
	ret->pid = pid;
	ret->out = pipes[1][0];
	ret->err = pipes[2][0];
	return 0;
}
