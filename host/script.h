/*
 * One remote shell per round of commands (issue 23): instead of a channel,
 * a session and a shell on the host for each command, the commands of a
 * round run at once under one POSIX sh script, and what each printed comes
 * back framed, so that each command's output and exit status are read
 * exactly as if it had had its own channel.
 */
#ifndef GF_HOST_SCRIPT_H
#define GF_HOST_SCRIPT_H

#include <stddef.h>

#include "host/ssh.h"
#include "lib/err.h"

/* What a frame tag is: a fixed prefix and 16 hex digits, different per script. */
#define GF_SCRIPT_TAG_SIZE 24

/*
 * The script for @n commands: /bin/sh runs each command line (as the remote
 * user's shell would) at once in the background, stdin from /dev/null,
 * stdout and stderr to files of a private temporary directory capped past
 * GF_REMOTE_MAX_OUTPUT bytes (ulimit -f). Shortly before @seconds a
 * watchdog sends TERM to the script's process group (the host's sshd makes
 * the script a session leader; a local caller must give it a group of its
 * own; in a group it does not lead, nothing is signalled), and a fifth of a
 * second later stops the script's wait for a command that ignored it. Then,
 * with one wc and one cat for all, it prints a line "TAG INDEX STATUS LATE
 * OUTBYTES ERRBYTES" for each command, in order, and after them the bytes
 * of both outputs of each command, in the same order: status 137 and no
 * bytes for a command still running, which the script then kills with its
 * group. At the end it removes the directory.
 * @tag: GF_SCRIPT_TAG_SIZE - 1 characters from gf_script_tag(). The text is
 * a single command line for exec. Caller frees.
 */
char *gf_script_build(const struct gf_remote_cmd *cmds, size_t n, double seconds, const char *tag);

/* A new tag into @tag (GF_SCRIPT_TAG_SIZE bytes), from the kernel's random bytes. */
void gf_script_tag(char tag[GF_SCRIPT_TAG_SIZE]);

/*
 * Read what the script printed (@out, @len: its stdout; anything the
 * login's shell startup printed before the first frame is skipped) into
 * @cmds: ran, status (-1 for a signal: 129 to 192, as a shell
 * reports them), timed_out (stopped by the watchdog's TERM, 143, or
 * still running, 137, once the time was up: LATE),
 * out, err, cut (more than GF_REMOTE_MAX_OUTPUT on a stream: what is kept
 * is that much). A command without a frame (the script was cut short) is
 * left not run, as is one whose frame came only in part. 0, or GF_E_NODE
 * (kind protocol) when the frames are not the script's.
 */
int gf_script_parse(const char *out, size_t len, const char *tag, struct gf_remote_cmd *cmds,
		    size_t n, struct gf_err *err);

/* The output one script may print for @n commands: both streams of each, capped, and frames. */
size_t gf_script_max_output(size_t n);

#endif
