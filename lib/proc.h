/* Starting a command line with /bin/sh, as the child of a process that ignores SIGPIPE. */
#ifndef GF_PROC_H
#define GF_PROC_H

#include <stdbool.h>
#include <sys/types.h>

#include "lib/err.h"

/* What one of the child's standard descriptors is. */
enum gf_proc_fd {
	GF_PROC_INHERIT = 0, /* the caller's own (a command may prompt on the terminal) */
	GF_PROC_NULL,        /* /dev/null */
	GF_PROC_PIPE,        /* a pipe whose other end the caller gets */
};

struct gf_proc_opts {
	enum gf_proc_fd in, out, err; /* the child's 0, 1 and 2; GF_PROC_PIPE: out and err only */
	bool own_group; /* in a process group of its own, to be killed with its children */
	bool script;    /* the line is `/bin/sh -s`'s standard input (written whole,
				       * then closed), not its argv: no other user reads it in
				       * /proc; @in is ignored */
};

struct gf_proc {
	pid_t pid;
	int out, err; /* read ends (close-on-exec) of the GF_PROC_PIPE streams, else -1 */
};

/*
 * Run `/bin/sh -c @line` (with @o->script: `/bin/sh -s`, @line on its stdin,
 * at most GF_PROC_SCRIPT_MAX bytes). The child starts with every signal at its default
 * disposition and none blocked, whatever this process ignores (SIGPIPE) or
 * the calling thread blocks. On success *ret holds the pid, for the caller
 * to wait for, and the pipes, for the caller to close. On failure GF_E_IO
 * with the errno in err->detail ("cannot make a pipe (...)", "cannot run
 * /bin/sh (...)") and nothing left open. Thread-safe.
 */
#define GF_PROC_SCRIPT_MAX 16384
int gf_proc_spawn(const char *line, const struct gf_proc_opts *o, struct gf_proc *ret,
		  struct gf_err *err);

#endif
