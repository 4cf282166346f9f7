/*
 * SSH to a node's operating system with libssh2: one connection per node,
 * several commands on their own channels at once, every call bounded by a
 * deadline (non-blocking sockets and poll). Host keys are checked against an
 * OpenSSH known_hosts file; unknown and changed keys are refused with their
 * SHA-256 fingerprint. A session is used by one thread.
 */
#ifndef GF_SSH_H
#define GF_SSH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/cancel.h"
#include "lib/buf.h"
#include "lib/creds.h"
#include "lib/err.h"

/* One command to run, and what came of it. */
struct gf_remote_cmd {
	const char *line;  /* in: the command line, run by the remote user's shell */
	bool ran;          /* out: it was started */
	bool timed_out;    /* out: it had not finished by the deadline */
	int status;        /* out: exit status; -1 when killed by a signal or unknown */
	struct gf_buf out; /* out: stdout (at most GF_REMOTE_MAX_OUTPUT bytes) */
	struct gf_buf err; /* out: stderr (the same) */
	bool cut;          /* out: it printed more than that on a stream: stopped there */
	size_t max;        /* in: what each stream may keep; 0: GF_REMOTE_MAX_OUTPUT */
};

/*
 * What a command may print on each stream. A command that prints more is
 * stopped there (its channel closed, or its process killed) and marked cut:
 * a host that floods costs neither memory nor the rest of its deadline.
 */
#define GF_REMOTE_MAX_OUTPUT (8u << 20)

/* Mark @n commands as not run yet (their outputs kept): before they are run. */
void gf_remote_cmds_reset(struct gf_remote_cmd *cmds, size_t n);

/* Keep @n bytes of @c's output in @b (its out or err); false when that went past the bound. */
bool gf_remote_keep(struct gf_remote_cmd *c, struct gf_buf *b, const char *data, size_t n);

void gf_remote_cmd_release(struct gf_remote_cmd *c);

struct gf_ssh_target {
	const char *node; /* for messages */
	const char *spec; /* "[user@]host[:port]" */
	const struct gf_profile
		*prof;        /* ssh_user, ssh_key, ssh_key_passphrase_env, ssh_known_hosts */
	bool accept_new;      /* record an unknown host key (never a changed one) */
	const char *password; /* log in with it (password, keyboard-interactive), not keys:
			       * a BMC's SSH console; NULL: keys */
	double deadline;      /* monotonic: every call returns by then */
	const gf_cancel_flag *cancel; /* set on Ctrl-C: every call returns soon; NULL: none */
};

struct gf_ssh;

/* libssh2_init(): once, on the main thread, before any session. */
int gf_ssh_global_init(struct gf_err *err);
void gf_ssh_global_cleanup(void);

/*
 * Connect, check the host key, authenticate (ssh-agent, then key files:
 * the profile's ssh_key, or ~/.ssh/id_ed25519, id_ecdsa, id_rsa). Errors are
 * GF_E_NODE with kind connect, timeout, hostkey or auth. Free with
 * gf_ssh_close().
 */
int gf_ssh_open(const struct gf_ssh_target *t, struct gf_ssh **ret, struct gf_err *err);

/*
 * Run @n commands, as many at once as the server allows, each until it ends
 * or @deadline passes (then it is marked timed_out; its output so far is
 * kept). Returns 0 when every command ended or timed out, or GF_E_NODE when
 * the connection failed or the target's cancel flag was set (kind internal:
 * the commands still running are left to the server, the session can still
 * be closed).
 */
int gf_ssh_run(struct gf_ssh *s, struct gf_remote_cmd *cmds, size_t n, double deadline,
	       struct gf_err *err);

/* Disconnect (within a short bound) and free; accepts NULL. */
void gf_ssh_close(struct gf_ssh *s);

/*
 * An interactive channel (a BMC's SSH serial console): the remote user's
 * shell, or the server's ForceCommand, with a terminal of @term (@cols x
 * @rows) or, @term NULL, none. Every call of the channel is non-blocking:
 * poll gf_ssh_socket() for gf_ssh_events() between them. One thread.
 */
struct gf_ssh_chan;

int gf_ssh_shell(struct gf_ssh *s, const char *term, int cols, int rows, double deadline,
		 struct gf_ssh_chan **ret, struct gf_err *err);
/* Up to @n bytes the remote printed (stdout, then stderr): >0, 0 for none now, GF_E_NODE at its
 * end (err says why; kind connect). */
long gf_ssh_chan_read(struct gf_ssh_chan *c, void *buf, size_t n, struct gf_err *err);
/* Send up to @n bytes: how many went (0: none now), or GF_E_NODE. */
long gf_ssh_chan_write(struct gf_ssh_chan *c, const void *buf, size_t n, struct gf_err *err);
/* The terminal's new size (window-change); 0, or GF_E_NODE. */
int gf_ssh_chan_resize(struct gf_ssh_chan *c, int cols, int rows, struct gf_err *err);
/* Free the channel (its session closes it: call gf_ssh_close() next); NULL: nothing. */
void gf_ssh_chan_free(struct gf_ssh_chan *c);

/* The session's socket, and the poll events libssh2 waits for on it (POLLIN always). */
int gf_ssh_socket(const struct gf_ssh *s);
short gf_ssh_events(const struct gf_ssh *s);
/* Bytes received on the session so far: a keep-alive's answer counts. */
unsigned long long gf_ssh_received(const struct gf_ssh *s);
/* Send a keep-alive that wants a reply (every @interval seconds from the first call). */
void gf_ssh_keepalive(struct gf_ssh *s, int interval);

/*
 * The known_hosts file in use for @prof: its ssh_known_hosts, else
 * $HOME/.ssh/known_hosts. Caller frees.
 */
char *gf_ssh_known_hosts_path(const struct gf_profile *prof);

/*
 * A host key's fingerprint as ssh-keygen -l prints it: "SHA256:" and the
 * @len bytes of its SHA-256 digest in base64 without padding. Caller frees.
 */
char *gf_ssh_fingerprint(const unsigned char *sha256, size_t len);

#endif
