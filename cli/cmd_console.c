/*
 * gpufleet console: a node's serial console on the terminal (the escapes of
 * lib/escape.h), and `console log`, every console of the targets logged by
 * one process. The transport is the backend's (fleet/console.h: IPMI Serial
 * over LAN through libipmiconsole); this file keeps the terminal.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli/verbs.h"
#include "fleet/console.h"
#include "lib/escape.h"
#include "lib/util.h"

enum { O_ESCAPE, O_STEAL };

static const struct cli_opt console_opts[] = {
	[O_ESCAPE] = {{"escape", required_argument, NULL, 'e'},
		      "CHAR",
		      "the escape character at the start of a line (default ~; ^X, none)"},
	[O_STEAL] = {{"steal", no_argument, NULL, 0},
		     NULL,
		     "take over a console another session holds (it is ended)"},
};

struct console_args {
	unsigned char escape;
	bool steal;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct console_args *a = ud;

	switch (idx) {
	case O_ESCAPE:
		if (gf_escape_parse(arg, &a->escape) < 0) {
			cli_error("--escape '%s' is not one character, ^X or none", arg);
			return GF_EXIT_USAGE;
		}
		return 0;
	case O_STEAL: a->steal = true; return 0;
	default: return 0;
	}
}

/* ---- the terminal, restored on every way out ---------------------------- */

static struct termios saved_tio;
static volatile sig_atomic_t tio_saved;
static volatile sig_atomic_t got_signal;

static void tty_restore(void)
{
	if (tio_saved) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
		tio_saved = 0;
	}
}

static void on_stop_signal(int sig)
{
	got_signal = sig;
}

/* A crash: the terminal back as it was, then the signal's own end. */
static void on_fatal_signal(int sig)
{
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
	signal(sig, SIG_DFL);
	raise(sig);
}

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
static struct sigaction old_stop[NELEM(stop_signals)], old_fatal[NELEM(fatal_signals)];

static void signals_catch(void)
{
	struct sigaction sa = {0};

	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop_signal; /* no SA_RESTART: poll() wakes */
	for (size_t i = 0; i < NELEM(stop_signals); i++)
		sigaction(stop_signals[i], &sa, &old_stop[i]);
	sa.sa_handler = on_fatal_signal;
	for (size_t i = 0; i < NELEM(fatal_signals); i++)
		sigaction(fatal_signals[i], &sa, &old_fatal[i]);
}

static void signals_restore(void)
{
	for (size_t i = 0; i < NELEM(stop_signals); i++)
		sigaction(stop_signals[i], &old_stop[i], NULL);
	for (size_t i = 0; i < NELEM(fatal_signals); i++)
		sigaction(fatal_signals[i], &old_fatal[i], NULL);
}

/* Raw mode on the terminal of stdin, when it is one: every byte goes to the node. */
static int tty_raw(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO))
		return 0;
	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return -1;
	t = saved_tio;
	cfmakeraw(&t);
	tio_saved = 1;
	atexit(tty_restore);
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) < 0) {
		tty_restore();
		return -1;
	}
	return 0;
}

/* All of @buf to @fd; -1 when it cannot take it (its end closed). */
static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};

			poll(&pfd, 1, 100);
			continue;
		}
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Lines for the user while the terminal is raw: CR LF. */
static void say(const char *s)
{
	(void)!write(STDERR_FILENO, s, strlen(s));
}

static void help(unsigned char esc)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "\r\nSupported escapes (at the start of a line):\r\n"
		 "  %c.  end the session\r\n"
		 "  %cB  send a break\r\n"
		 "  %c%c  send the escape character itself\r\n"
		 "  %c?  this list\r\n",
		 esc, esc, esc, esc, esc);
	say(buf);
}

/* ---- the session ---------------------------------------------------------- */

enum end { END_ESCAPE, END_EOF_INPUT, END_REMOTE, END_SIGNAL, END_ERROR };

/*
 * Copy between the terminal and the console until ~., the input's end, the
 * session's end or a signal. @err: why the session ended (END_REMOTE,
 * END_ERROR).
 */
static enum end pump(const struct gf_console_conn *c, unsigned char escape, struct gf_err *err)
{
	int cfd = c->ops->fd(c->con);
	struct gf_escape esc;
	sigset_t block, orig;
	bool in_open = true;

	gf_escape_init(&esc, escape);
	sigemptyset(&block);
	for (size_t i = 0; i < NELEM(stop_signals); i++)
		sigaddset(&block, stop_signals[i]);
	sigprocmask(SIG_BLOCK, &block, &orig);
	for (;;) {
		struct pollfd pfd[2] = {{.fd = cfd, .events = POLLIN},
					{.fd = in_open ? STDIN_FILENO : -1, .events = POLLIN}};
		unsigned char buf[4096], out[2 * sizeof(buf)];
		ssize_t k;
		int rc;

		if (got_signal)
			break;
		/* Signals only while waiting: none is missed between the check and the wait. */
		rc = ppoll(pfd, 2, NULL, &orig);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			gf_err_set(err, GF_E_IO, GF_EK_NONE, "poll: %s", strerror(errno));
			sigprocmask(SIG_SETMASK, &orig, NULL);
			return END_ERROR;
		}
		if (pfd[0].revents) {
			k = read(cfd, buf, sizeof(buf));
			if (k < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (k <= 0) {
				if (c->ops->state(c->con, err) != GF_CONSOLE_FAILED)
					gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
						   "the serial console session ended");
				sigprocmask(SIG_SETMASK, &orig, NULL);
				return END_REMOTE;
			}
			/* As the node sent it: the interactive session is the one place. */
			if (write_all(STDOUT_FILENO, buf, (size_t)k) < 0) {
				gf_err_set(err, GF_E_IO, GF_EK_NONE,
					   "cannot write to the terminal");
				sigprocmask(SIG_SETMASK, &orig, NULL);
				return END_ERROR;
			}
		}
		if (pfd[1].revents) {
			size_t nout = 0;

			k = read(STDIN_FILENO, buf, sizeof(buf));
			if (k < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (k <= 0) {
				/* Piped input ran out: what the node answers still shows until ~. or a signal. */
				in_open = false;
				if (isatty(STDIN_FILENO)) {
					sigprocmask(SIG_SETMASK, &orig, NULL);
					return END_EOF_INPUT;
				}
				continue;
			}
			for (ssize_t i = 0; i < k; i++) {
				size_t n;
				enum gf_escape_action a = gf_escape_byte(&esc, buf[i], out + nout,
									 &n);

				nout += n;
				if (a == GF_ESC_NONE)
					continue;
				if (nout && write_all(cfd, out, nout) < 0)
					break;
				nout = 0;
				if (a == GF_ESC_END) {
					sigprocmask(SIG_SETMASK, &orig, NULL);
					return END_ESCAPE;
				}
				if (a == GF_ESC_HELP)
					help(escape);
				if (a == GF_ESC_BREAK && c->ops->brk(c->con, err) < 0)
					say("\r\n[the break was not sent]\r\n");
			}
			if (nout && write_all(cfd, out, nout) < 0) {
				if (c->ops->state(c->con, err) != GF_CONSOLE_FAILED)
					gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
						   "the serial console session ended");
				sigprocmask(SIG_SETMASK, &orig, NULL);
				return END_REMOTE;
			}
		}
	}
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return END_SIGNAL;
}

/* A failure to connect: the message, with the way to take a busy console over. */
static int connect_failed(const struct gf_node *n, const struct gf_err *err)
{
	if (err->code == GF_E_NODE && err->kind == GF_EK_BUSY) {
		cli_error("%s; 'gpufleet console --steal %s' takes it over [busy]", err->msg,
			  n->name);
		return GF_EXIT_FAILED;
	}
	if (err->code == GF_E_NODE && err->kind != GF_EK_NONE) {
		cli_error("%s [%s]", err->msg, gf_errkind_name(err->kind));
		return GF_EXIT_FAILED;
	}
	return cli_fail(err);
}

static int interactive(struct gf_cli *cli, const struct console_args *a, char **args, int nargs)
{
	const struct gf_profile **profs = NULL;
	struct gf_console_conn conn = {0};
	struct gf_node *nodes = NULL;
	struct gf_err err = {0};
	size_t n = 0;
	enum end how;
	int rc;

	if (nargs != 1 && !cli->hosts) {
		cli_error("console takes one node (see 'console log' for many)");
		return GF_EXIT_USAGE;
	}
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	if (n != 1) {
		cli_error("console takes one node, '%s' names %zu", nargs ? args[0] : cli->hosts,
			  n);
		gf_nodes_free(nodes, n);
		return GF_EXIT_USAGE;
	}
	rc = cli_profiles(cli, CLI_PROFILE_BMC, nodes, n, &profs);
	if (rc)
		goto out;
	if (!profs[0]) {
		cli_error("node '%s' has no BMC", nodes[0].name);
		rc = GF_EXIT_USAGE;
		goto out;
	}
	got_signal = 0;
	signals_catch();
	if (gf_console_start(1, &err) < 0 ||
	    gf_console_connect(&nodes[0], profs[0], a->steal, false, gf_monotime() + cli->timeout,
			       (const gf_cancel_flag *)NULL, &conn, &err) < 0) {
		gf_console_stop();
		signals_restore();
		rc = got_signal ? GF_EXIT_INTERRUPTED : connect_failed(&nodes[0], &err);
		goto out;
	}
	if (!cli->quiet) {
		char buf[256];

		if (a->escape)
			snprintf(buf, sizeof(buf),
				 "[connected to the serial console of %s; %c. ends, %c? lists the "
				 "escapes]\r\n",
				 nodes[0].name, a->escape, a->escape);
		else
			snprintf(buf, sizeof(buf), "[connected to the serial console of %s]\r\n",
				 nodes[0].name);
		say(buf);
	}
	if (tty_raw() < 0) {
		cli_error("cannot put the terminal in raw mode: %s", strerror(errno));
		rc = GF_EXIT_FAILED;
		how = END_ERROR;
	} else {
		how = pump(&conn, a->escape, &err);
	}
	tty_restore();
	/* Ends the session: the engine deactivates the payload before it stops. */
	gf_console_close(&conn);
	gf_console_stop();
	signals_restore();
	switch (how) {
	case END_ESCAPE:
	case END_EOF_INPUT:
		if (!cli->quiet)
			say("\n[console closed]\n");
		rc = GF_EXIT_OK;
		break;
	case END_SIGNAL:
		say("\n[console closed]\n");
		rc = got_signal == SIGINT ? GF_EXIT_INTERRUPTED : 128 + got_signal;
		break;
	case END_REMOTE: rc = connect_failed(&nodes[0], &err); break;
	case END_ERROR: rc = err.code ? cli_fail(&err) : rc; break;
	}
out:
	free(profs);
	gf_nodes_free(nodes, n);
	return rc;
}

int cmd_console(struct gf_cli *cli, int argc, char **argv)
{
	struct console_args a = {.escape = '~'};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, console_opts, NELEM(console_opts), on_opt, &a, &args,
		       &nargs);
	if (rc)
		return rc < 0 ? GF_EXIT_OK : rc;
	return interactive(cli, &a, args, nargs);
}
