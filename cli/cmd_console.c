/*
 * gpufleet console: a node's serial console on the terminal (the escapes of
 * lib/escape.h), and `console log`, every console of the targets logged by
 * one process. The transport is the backend's (fleet/console.h: IPMI Serial
 * over LAN through libipmiconsole); this file keeps the terminal.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/verbs.h"
#include "fleet/console.h"
#include "lib/conlog.h"
#include "lib/constate.h"
#include "lib/escape.h"
#include "lib/nodeset.h"
#include "lib/file.h"
#include "lib/buf.h"
#include "lib/util.h"

enum {
	O_ESCAPE,
	O_STEAL,
	O_DIR,
	O_DURATION,
	O_MAX_SIZE,
	O_KEEP,
	O_TOTAL_SIZE,
	O_SINCE,
	O_LINES,
	O_METRICS,
	O_SSH_ACCEPT_NEW
};

static const struct cli_opt console_opts[] = {
	[O_ESCAPE] = {{"escape", required_argument, NULL, 'e'},
		      "CHAR",
		      "the escape character at the start of a line (default ~; ^X, none)"},
	[O_STEAL] = {{"steal", no_argument, NULL, 0},
		     NULL,
		     "take over a console another session holds (it is ended)"},
	[O_DIR] = {{"dir", required_argument, NULL, 0},
		   "DIR",
		   "log: where NODE.log files go (made if missing; default $GPUFLEET_CONSOLE_DIR)"},
	[O_DURATION] = {{"duration", required_argument, NULL, 0},
			"SECONDS",
			"log: stop after this long (default: until a signal)"},
	[O_MAX_SIZE] = {{"max-size", required_argument, NULL, 0},
			"SIZE",
			"log: rotate NODE.log at this size (default 10M; K, M, G)"},
	[O_KEEP] = {{"keep", required_argument, NULL, 0},
		    "N",
		    "log: rotated files kept per node (default 4)"},
	[O_TOTAL_SIZE] = {{"total-size", required_argument, NULL, 0},
			  "SIZE",
			  "log: cap on all the logs of the run together (default 1G)"},
	[O_SINCE] = {{"since", required_argument, NULL, 0},
		     "WHEN",
		     "grep: only lines from then on (a date, or a duration ago: 90m, 7d)"},
	[O_LINES] = {{"lines", required_argument, NULL, 'n'},
		     "N",
		     "tail: the last N lines (default 20)"},
	[O_METRICS] = {{"metrics", required_argument, NULL, 0},
		       "FILE",
		       "log: each console's state and bytes for Prometheus, FILE replaced"},
	[O_SSH_ACCEPT_NEW] =
		{{"ssh-accept-new", no_argument, NULL, 0},
		 NULL,
		 "SSH serial consoles: record an unknown host key (never a changed one)"},
};

struct console_args {
	unsigned char escape;
	bool steal;
	const char *dir;
	double duration;
	unsigned long long max_size, total_size;
	unsigned long keep;
	double since; /* epoch seconds; -1: none */
	const char *metrics;
	unsigned long lines;
	bool ssh_accept_new;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct console_args *a = ud;
	struct gf_err err = {0};

	switch (idx) {
	case O_ESCAPE:
		if (gf_escape_parse(arg, &a->escape) < 0) {
			cli_error("--escape '%s' is not one character, ^X or none", arg);
			return GF_EXIT_USAGE;
		}
		return 0;
	case O_STEAL: a->steal = true; return 0;
	case O_SSH_ACCEPT_NEW: a->ssh_accept_new = true; return 0;
	case O_DIR: a->dir = arg; return 0;
	case O_METRICS: a->metrics = arg; return 0;
	case O_DURATION:
		if (gf_parse_seconds(arg, 0.1, 1e9, &a->duration, &err, "--duration") < 0)
			return cli_fail(&err);
		return 0;
	case O_MAX_SIZE:
	case O_TOTAL_SIZE:
		if (gf_conlog_parse_size(arg, 4096, 1ULL << 50,
					 idx == O_MAX_SIZE ? &a->max_size : &a->total_size) < 0) {
			cli_error("--%s '%s' is not a size from 4K (bytes, or K, M, G)",
				  console_opts[idx].lo.name, arg);
			return GF_EXIT_USAGE;
		}
		return 0;
	case O_SINCE: return cli_parse_since("--since", arg, &a->since);
	case O_LINES:
		if (gf_parse_uint(arg, 1, 1000000, &a->lines, &err, "--lines") < 0)
			return cli_fail(&err);
		return 0;
	case O_KEEP:
		if (gf_parse_uint(arg, 0, 99, &a->keep, &err, "--keep") < 0)
			return cli_fail(&err);
		return 0;
	default: return 0;
	}
}

/* ---- the terminal, restored on every way out ---------------------------- */

static struct termios saved_tio;
static volatile sig_atomic_t tio_saved;
static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t winched = 1; /* the first size is sent too */

static void on_winch(int sig)
{
	(void)sig;
	winched = 1;
}

/* The terminal's size to the console, where its transport has one (SSH). */
static void pass_size(const struct gf_console_conn *c)
{
	struct winsize ws;

	winched = 0;
	if (c->ops->resize && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row)
		c->ops->resize(c->con, ws.ws_col, ws.ws_row);
}

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
static struct sigaction old_stop[NELEM(stop_signals)], old_fatal[NELEM(fatal_signals)], old_winch;

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
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, &old_winch);
}

static void signals_restore(void)
{
	for (size_t i = 0; i < NELEM(stop_signals); i++)
		sigaction(stop_signals[i], &old_stop[i], NULL);
	for (size_t i = 0; i < NELEM(fatal_signals); i++)
		sigaction(fatal_signals[i], &old_fatal[i], NULL);
	sigaction(SIGWINCH, &old_winch, NULL);
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

	gf_escape_init(&esc, escape);
	sigemptyset(&block);
	for (size_t i = 0; i < NELEM(stop_signals); i++)
		sigaddset(&block, stop_signals[i]);
	sigaddset(&block, SIGWINCH);
	sigprocmask(SIG_BLOCK, &block, &orig);
	for (;;) {
		struct pollfd pfd[2] = {{.fd = cfd, .events = POLLIN},
					{.fd = STDIN_FILENO, .events = POLLIN}};
		unsigned char buf[4096], out[2 * sizeof(buf)];
		ssize_t k;
		int rc;

		if (got_signal)
			break;
		if (winched)
			pass_size(c);
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
				/* The end of the input ends the session, as ~. does. */
				sigprocmask(SIG_SETMASK, &orig, NULL);
				return END_EOF_INPUT;
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

/* The stored TLS pins (Redfish BMCs asked for their SSH console), CA and host key rules. */
static int console_env(struct gf_cli *cli, const struct console_args *a, struct gf_console_env *ret)
{
	int rc = cli_db(cli, &ret->db);

	if (rc)
		return rc;
	ret->cacert = cli->cacert;
	ret->insecure = cli->insecure;
	ret->ssh_accept_new = a->ssh_accept_new;
	return 0;
}

static int interactive(struct gf_cli *cli, const struct console_args *a, char **args, int nargs)
{
	const struct gf_profile **profs = NULL;
	struct gf_console_conn conn = {0};
	struct gf_console_env env = {0};
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
	rc = console_env(cli, a, &env);
	if (rc)
		goto out;
	got_signal = 0;
	winched = 1;
	signals_catch();
	if (gf_console_start(1, &err) < 0 ||
	    gf_console_connect(&nodes[0], profs[0], &env, a->steal, false,
			       gf_monotime() + cli->timeout, (const gf_cancel_flag *)NULL, &conn,
			       &err) < 0) {
		gf_console_stop();
		signals_restore();
		rc = got_signal ? GF_EXIT_INTERRUPTED : connect_failed(&nodes[0], &err);
		goto out;
	}
	/* Raw before the banner: what is typed once it shows goes to the node as typed. */
	if (tty_raw() < 0) {
		cli_error("cannot put the terminal in raw mode: %s", strerror(errno));
		rc = GF_EXIT_FAILED;
		how = END_ERROR;
	} else {
		if (!cli->quiet) {
			char buf[256];

			if (a->escape)
				snprintf(buf, sizeof(buf),
					 "[connected to the serial console of %s; %c. ends, %c? lists the "
					 "escapes]\r\n",
					 nodes[0].name, a->escape, a->escape);
			else
				snprintf(buf, sizeof(buf),
					 "[connected to the serial console of %s]\r\n",
					 nodes[0].name);
			say(buf);
		}
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

/* ---- console log ---------------------------------------------------------- */

static gf_cancel_flag log_stop;
static volatile sig_atomic_t log_signal;

static void on_log_signal(int sig)
{
	log_signal = sig;
	atomic_store(&log_stop, 1);
}

struct log_run {
	struct gf_cli *cli;
	const struct gf_node *nodes;
	size_t n;
	struct gf_conlog **logs;
	enum gf_console_log_state *last;
	double *since; /* epoch seconds: each node in its state since */
	unsigned long long total_size;
	bool io_failed;
	const char *dir;
	const char *metrics; /* the Prometheus file, NULL: none */
	double started;      /* epoch seconds */
	double state_at;     /* monotonic: the state last written */
	bool state_failed;
};

/*
 * Every node's console state and bytes: DIR/.console-state.json for
 * `gpufleet metrics` (lib/constate.h), and the --metrics file, replaced.
 * @running false: the logger is ending.
 */
static void log_metrics(struct log_run *r, bool running)
{
	struct gf_constate st = {
		.started = r->started,
		.updated = gf_walltime(),
		.running = running,
		.pid = (long)getpid(),
		.v = gf_xcalloc(r->n + 1, sizeof(*st.v)),
		.n = r->n,
	};
	struct gf_buf b = GF_BUF_INIT;
	struct gf_err err = {0};
	int rc;

	r->state_at = gf_monotime();
	for (size_t i = 0; i < r->n; i++)
		st.v[i] = (struct gf_constate_node){
			.node = (char *)r->nodes[i].name,
			.state = (char *)gf_console_log_state_name(r->last[i]),
			.bytes = gf_conlog_fed(r->logs[i]),
			.since = r->since[i],
		};
	rc = gf_constate_write(r->dir, &st, &err);
	if (rc == 0 && r->metrics) {
		gf_constate_prom(&st, st.updated, NULL, 0, &b);
		rc = gf_file_replace(r->metrics, b.s, b.len, &err);
	}
	if (rc < 0 && !r->state_failed) {
		cli_error("%s", err.msg);
		r->state_failed = true;
	}
	free(st.v); /* the names are borrowed */
	gf_buf_release(&b);
}

/* The loop's tick: the state refreshed, so that readers can tell the logger is alive. */
static void log_tick(void *ud)
{
	struct log_run *r = ud;

	if (gf_monotime() - r->state_at >= GF_CONSTATE_REFRESH_S)
		log_metrics(r, true);
}

static void log_data(void *ud, size_t i, const void *buf, size_t len)
{
	struct log_run *r = ud;
	struct gf_err err = {0};

	if (gf_conlog_data(r->logs[i], buf, len, gf_walltime(), &err) < 0 && !r->io_failed) {
		cli_error("%s", err.msg);
		r->io_failed = true;
	}
	gf_conlog_total_cap(r->logs, r->n, r->total_size);
}

static void log_state(void *ud, size_t i, enum gf_console_log_state st, const struct gf_err *err)
{
	struct log_run *r = ud;
	const char *name = gf_console_log_state_name(st);
	const char *node = r->nodes[i].name;
	struct gf_err e = {0};
	bool changed = r->last[i] != st;

	r->last[i] = st;
	if (changed) {
		r->since[i] = gf_walltime();
		log_metrics(r, true);
	}
	if (changed && st != GF_CLOG_CONNECTING) {
		char text[700];

		if (err)
			snprintf(text, sizeof(text), "gpufleet: console %s: %s", name, err->msg);
		else
			snprintf(text, sizeof(text), "gpufleet: console %s", name);
		if (gf_conlog_marker(r->logs[i], gf_walltime(), text, &e) < 0 && !r->io_failed) {
			cli_error("%s", e.msg);
			r->io_failed = true;
		}
		gf_conlog_total_cap(r->logs, r->n, r->total_size); /* a marker counts too */
	}
	if (r->cli->format == GF_FMT_NDJSON) {
		json_t *o = json_object();
		char ts[40];
		char *line;

		gf_time_format(gf_walltime(), ts, sizeof(ts));
		json_object_set_new(o, "node", json_string(node));
		json_object_set_new(o, "state", json_string(name));
		json_object_set_new(o, "time", json_string(ts));
		json_object_set_new(o, "bytes",
				    json_integer((json_int_t)gf_conlog_fed(r->logs[i])));
		if (err) {
			json_t *eo = json_object();

			json_object_set_new(eo, "kind", json_string(gf_errkind_name(err->kind)));
			json_object_set_new(eo, "message", json_string(err->msg));
			json_object_set_new(o, "error", eo);
		}
		line = json_dumps(o, JSON_COMPACT);
		if (line) {
			printf("%s\n", line);
			fflush(stdout);
		}
		free(line);
		json_decref(o);
	} else if (changed && st != GF_CLOG_CONNECTING) {
		if (err)
			cli_warn(r->cli, "%s: console %s: %s", node, name, err->msg);
		else
			cli_verbose(r->cli, "%s: console %s", node, name);
	}
}

static int log_consoles(struct gf_cli *cli, const struct console_args *a, char **args, int nargs)
{
	struct gf_conlog_opts lo = {.max_size = a->max_size, .keep = (unsigned)a->keep};
	const struct gf_profile **profs = NULL;
	struct gf_node *nodes = NULL;
	struct log_run lr = {.cli = cli,
			     .total_size = a->total_size,
			     .dir = a->dir,
			     .metrics = a->metrics,
			     .started = gf_walltime()};
	struct gf_err err = {0};
	struct gf_console_env env = {0};
	struct sigaction sa = {0}, old[3];
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	size_t n = 0, failed = 0;
	int rc;

	if (!a->dir || !*a->dir) {
		cli_error("console log needs --dir DIR (or GPUFLEET_CONSOLE_DIR)");
		return GF_EXIT_USAGE;
	}
	if (nargs < 1 && !cli->hosts) {
		cli_error("console log needs TARGETS (@all for every node)");
		return GF_EXIT_USAGE;
	}
	if (mkdir(a->dir, 0750) < 0 && errno != EEXIST) {
		cli_error("cannot make '%s': %s", a->dir, strerror(errno));
		return GF_EXIT_USAGE;
	}
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	rc = cli_profiles(cli, CLI_PROFILE_BMC, nodes, n, &profs);
	if (!rc)
		rc = console_env(cli, a, &env);
	if (rc)
		goto out;
	lr.nodes = nodes;
	lr.n = n;
	lr.logs = calloc(n, sizeof(*lr.logs));
	lr.last = calloc(n, sizeof(*lr.last));
	lr.since = calloc(n, sizeof(*lr.since));
	if (!lr.logs || !lr.last || !lr.since) {
		rc = GF_EXIT_FAILED;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		lr.last[i] = GF_CLOG_CONNECTING;
		lr.since[i] = lr.started;
		if (gf_conlog_open(a->dir, nodes[i].name, &lo, &lr.logs[i], &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
	}
	struct gf_console_log run = {
		.nodes = nodes,
		.n = n,
		.profs = profs,
		.env = &env,
		.steal = a->steal,
		.until = a->duration ? gf_monotime() + a->duration : 0,
		.connect_timeout = cli->timeout,
		.backoff_min = 1,
		.backoff_max = 30,
		.cancel = &log_stop,
		.on_state = log_state,
		.on_data = log_data,
		.on_tick = log_tick,
		.ud = &lr,
	};
	atomic_store(&log_stop, 0);
	log_signal = 0;
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_log_signal;
	for (size_t i = 0; i < NELEM(sigs); i++)
		sigaction(sigs[i], &sa, &old[i]);
	if (gf_console_start(n, &err) < 0 || gf_console_log_run(&run, &err) < 0)
		rc = cli_fail(&err);
	for (size_t i = 0; i < NELEM(sigs); i++)
		sigaction(sigs[i], &old[i], NULL);
	log_metrics(&lr, false); /* ended: none is connected now */
	for (size_t i = 0; i < n; i++) {
		failed += lr.last[i] == GF_CLOG_FAILED;
		if (lr.last[i] != GF_CLOG_FAILED)
			gf_conlog_marker(lr.logs[i], gf_walltime(), "gpufleet: console log ended",
					 NULL);
	}
	gf_conlog_total_cap(lr.logs, n, lr.total_size); /* the cap holds after the last line */
	if (!rc)
		rc = log_signal == SIGINT     ? GF_EXIT_INTERRUPTED
		     : log_signal             ? 128 + log_signal
		     : failed || lr.io_failed ? GF_EXIT_FAILED
					      : GF_EXIT_OK;
out:
	for (size_t i = 0; lr.logs && i < n; i++)
		gf_conlog_close(lr.logs[i]);
	free(lr.logs);
	free(lr.last);
	free(lr.since);
	free(profs);
	gf_nodes_free(nodes, n);
	return rc;
}

/* ---- console grep, console tail ------------------------------------------------- */

struct hit {
	size_t node;
	double t;
	char *text;
	size_t seq;
};

struct read_ctx {
	size_t node;
	regex_t *re;  /* grep: the pattern; NULL: every line */
	double since; /* -1: every time */
	struct hit *v;
	size_t n, cap;
	size_t ring; /* tail: keep the last @ring (0: all) */
	size_t seq;
	double last_t;
};

static int take_line(void *ud, double t, const char *text)
{
	struct read_ctx *c = ud;
	struct hit h = {.node = c->node, .seq = c->seq++};

	/* A line without a time (not written by console log) has its previous line's. */
	if (isnan(t))
		t = c->last_t;
	c->last_t = t;
	h.t = t;

	if (c->re && regexec(c->re, text, 0, NULL, 0) != 0)
		return 0;
	if (c->since >= 0 && !(t >= c->since))
		return 0;
	h.text = strdup(text);
	if (!h.text)
		return GF_E_NOMEM;
	if (c->ring && c->n == c->ring) {
		free(c->v[0].text);
		memmove(c->v, c->v + 1, (c->n - 1) * sizeof(*c->v));
		c->n--;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct hit *v = realloc(c->v, cap * sizeof(*v));

		if (!v) {
			free(h.text);
			return GF_E_NOMEM;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = h;
	return 0;
}

static int by_time(const void *pa, const void *pb)
{
	const struct hit *a = pa, *b = pb;
	double ta = isnan(a->t) ? -1 : a->t, tb = isnan(b->t) ? -1 : b->t;

	if (ta != tb)
		return ta < tb ? -1 : 1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/*
 * -C: identical lines of several nodes as one, "NODESET  FIRST-TIME  LINE",
 * in the order their first one came.
 */
static void print_folded(const struct gf_node *nodes, const struct hit *v, size_t n)
{
	bool *done = calloc(n ? n : 1, sizeof(*done));
	const char **names = calloc(n ? n : 1, sizeof(*names));

	for (size_t i = 0; done && names && i < n; i++) {
		size_t k = 0;
		char ts[40] = "-", *set, *safe;

		if (done[i])
			continue;
		for (size_t j = i; j < n; j++) {
			if (done[j] || strcmp(v[j].text, v[i].text) != 0)
				continue;
			done[j] = true;
			/* a node once, however often it printed the line */
			bool seen = false;

			for (size_t m = 0; m < k; m++)
				seen = seen || names[m] == nodes[v[j].node].name;
			if (!seen)
				names[k++] = nodes[v[j].node].name;
		}
		if (!isnan(v[i].t))
			gf_time_format(v[i].t, ts, sizeof(ts));
		set = gf_nodeset_collapse(names, k);
		safe = gf_term_safe(v[i].text);
		printf("%s  %s  %s\n", set ? set : "?", ts, safe ? safe : "");
		free(set);
		free(safe);
	}
	free(done);
	free(names);
}

/* The lines, oldest first: node, time, text (escaped again: a log is not trusted). */
static void print_hits(struct gf_cli *cli, const struct gf_node *nodes, const struct hit *v,
		       size_t n)
{
	json_t *arr = cli->format == GF_FMT_JSON ? json_array() : NULL;

	for (size_t i = 0; i < n; i++) {
		char ts[40] = "-";

		if (!isnan(v[i].t))
			gf_time_format(v[i].t, ts, sizeof(ts));
		if (cli->format == GF_FMT_JSON || cli->format == GF_FMT_NDJSON) {
			json_t *o = json_object();

			json_object_set_new(o, "node", json_string(nodes[v[i].node].name));
			json_object_set_new(o, "time",
					    isnan(v[i].t) ? json_null() : json_string(ts));
			json_object_set_new(o, "line", json_string(v[i].text));
			if (arr) {
				json_array_append_new(arr, o);
			} else {
				char *line = json_dumps(o, JSON_COMPACT);

				if (line)
					printf("%s\n", line);
				free(line);
				json_decref(o);
			}
		} else {
			char *safe = gf_term_safe(v[i].text);

			printf("%s  %s  %s\n", nodes[v[i].node].name, ts, safe ? safe : "");
			free(safe);
		}
	}
	if (arr) {
		char *all = json_dumps(arr, JSON_INDENT(2));

		if (all)
			printf("%s\n", all);
		free(all);
		json_decref(arr);
	}
}

static int read_logs(struct gf_cli *cli, const struct console_args *a, const char *pattern,
		     char **args, int nargs, size_t ring)
{
	struct read_ctx c = {.since = a->since, .ring = ring};
	struct gf_node *nodes = NULL;
	struct gf_err err = {0};
	regex_t re;
	bool have_re = false;
	size_t n = 0;
	int rc;

	if (!a->dir || !*a->dir) {
		cli_error("console %s needs --dir DIR (where console log wrote)",
			  pattern ? "grep" : "tail");
		return GF_EXIT_USAGE;
	}
	if (pattern) {
		int e = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);

		if (e) {
			char msg[200];

			regerror(e, &re, msg, sizeof(msg));
			cli_error("pattern '%s' is not an extended regular expression: %s", pattern,
				  msg);
			return GF_EXIT_USAGE;
		}
		have_re = true;
		c.re = &re;
	}
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		goto out;
	for (size_t i = 0; i < n; i++) {
		c.node = i;
		c.last_t = NAN;
		if (gf_conlog_read(a->dir, nodes[i].name, take_line, &c, &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
	}
	if (c.n)
		gf_sort(c.v, c.n, sizeof(*c.v), by_time);
	if (cli->collapse && cli->format == GF_FMT_TABLE)
		print_folded(nodes, c.v, c.n);
	else
		print_hits(cli, nodes, c.v, c.n);
	rc = c.n || !pattern ? GF_EXIT_OK : GF_EXIT_FAILED;
out:
	for (size_t i = 0; i < c.n; i++)
		free(c.v[i].text);
	free(c.v);
	if (have_re)
		regfree(&re);
	gf_nodes_free(nodes, n);
	return rc;
}

int cmd_console(struct gf_cli *cli, int argc, char **argv)
{
	struct console_args a = {.escape = '~',
				 .keep = 4,
				 .total_size = 1ULL << 30,
				 .since = -1,
				 .lines = 20,
				 .dir = getenv("GPUFLEET_CONSOLE_DIR")};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, console_opts, NELEM(console_opts), on_opt, &a, &args,
		       &nargs);
	if (rc)
		return rc < 0 ? GF_EXIT_OK : rc;
	if (nargs >= 1 && strcmp(args[0], "grep") == 0) {
		if (nargs < 3 && !(nargs == 2 && cli->hosts)) {
			cli_error("usage: console grep PATTERN TARGETS --dir DIR");
			return GF_EXIT_USAGE;
		}
		return read_logs(cli, &a, args[1], args + 2, nargs - 2, 0);
	}
	if (nargs >= 1 && strcmp(args[0], "tail") == 0) {
		if (nargs != 2) {
			cli_error("usage: console tail NODE --dir DIR [-n N]");
			return GF_EXIT_USAGE;
		}
		return read_logs(cli, &a, NULL, args + 1, 1, a.lines);
	}
	if (nargs >= 1 && strcmp(args[0], "log") == 0) {
		if (cli->verb_opts_given & CLI_OPT(O_ESCAPE)) {
			cli_error("--escape is for the interactive console, not console log");
			return GF_EXIT_USAGE;
		}
		return log_consoles(cli, &a, args + 1, nargs - 1);
	}
	if (cli->verb_opts_given &
	    (CLI_OPT(O_DIR) | CLI_OPT(O_DURATION) | CLI_OPT(O_MAX_SIZE) | CLI_OPT(O_KEEP) |
	     CLI_OPT(O_TOTAL_SIZE) | CLI_OPT(O_SINCE) | CLI_OPT(O_LINES) | CLI_OPT(O_METRICS))) {
		cli_error("--dir, --duration, --max-size, --keep, --total-size, --metrics, --since and "
			  "--lines are for console log, grep and tail");
		return GF_EXIT_USAGE;
	}
	return interactive(cli, &a, args, nargs);
}
