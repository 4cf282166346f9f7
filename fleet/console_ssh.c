/*
 * The SSH serial console of a BMC that advertises one (Redfish
 * Manager.SerialConsole.SSH; OpenBMC's obmc-console on port 2200): found
 * with a session of the node's backend, then reached with host/ssh.c, the
 * same known_hosts rules as `gpufleet host`, logged in with the BMC's user
 * and password. Each console is one thread that owns the SSH session and
 * pumps bytes between it and one end of a socket pair; the caller polls the
 * other end as it does the IPMI engine's descriptor (struct gf_console_ops).
 */
#include "fleet/console_ssh.h"

#include "host/ssh.h"
#include "lib/buf.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define KEEPALIVE_S 10 /* a keep-alive every 10 s; 3 unanswered: the session is dead */
#define PUMP_BYTES 16384

struct gf_console {
	struct gf_bmc_target t; /* its strings borrowed: they outlive the console */
	const struct gf_backend *be;
	bool accept_new, interactive;
	int fd[2];             /* [0] the caller's, [1] the thread's */
	gf_cancel_flag stop;   /* close(): the thread ends */
	atomic_int state;      /* enum gf_console_state */
	pthread_mutex_t lock;  /* err */
	struct gf_err err;     /* why it failed */
	atomic_int cols, rows; /* the terminal's size asked; 0: none */
	atomic_int resized;    /* a size not yet sent */
	pthread_t thread;
};

static void fail(struct gf_console *c, const struct gf_err *err)
{
	pthread_mutex_lock(&c->lock);
	c->err = *err;
	pthread_mutex_unlock(&c->lock);
	atomic_store(&c->state, GF_CONSOLE_FAILED);
}

/* Where the BMC's SSH console is: a session of its backend, SerialConsole.SSH read. */
static int find_port(struct gf_console *c, int *ret, struct gf_err *err)
{
	void *sess = NULL;
	int rc = c->be->open(&c->t, &sess, err);

	if (rc < 0)
		return rc;
	rc = c->be->console_ssh(sess, ret, err);
	c->be->close(sess);
	if (rc == 0 && *ret <= 0)
		rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"the BMC of node '%s' advertises no serial console (%s has no SOL "
				"in gpufleet, and SerialConsole.SSH is not enabled)",
				c->t.node, c->be->title);
	return rc;
}

static int login(struct gf_console *c, int port, struct gf_ssh **ret_s, struct gf_ssh_chan **ret_ch,
		 struct gf_err *err)
{
	const struct gf_profile *p = c->t.prof;
	struct gf_buf spec = GF_BUF_INIT;
	struct gf_ssh_target st = {
		.node = c->t.node,
		.prof = p,
		.accept_new = c->accept_new,
		.password = p && p->bmc_password ? p->bmc_password : "",
		.deadline = c->t.deadline,
		.cancel = &c->stop,
	};
	struct gf_ssh *s = NULL;
	int rc;

	gf_buf_addf(&spec, strchr(c->t.host, ':') ? "%s@[%s]:%d" : "%s@%s:%d",
		    p && p->bmc_user ? p->bmc_user : "root", c->t.host, port);
	st.spec = gf_buf_str(&spec);
	rc = gf_ssh_open(&st, &s, err);
	gf_buf_release(&spec);
	if (rc < 0)
		return rc;
	/* The logger wants the bytes as the UART sent them: no terminal, nothing echoed. */
	rc = gf_ssh_shell(s, c->interactive ? "xterm" : NULL, 80, 24, c->t.deadline, ret_ch, err);
	if (rc < 0) {
		gf_ssh_close(s);
		return rc;
	}
	*ret_s = s;
	return 0;
}

/* Write what is held in @b to @fd without blocking; false when the reader is gone. */
static bool flush_to(int fd, struct gf_buf *b)
{
	while (b->len) {
		ssize_t w = write(fd, b->s, b->len);

		if (w < 0)
			return errno == EAGAIN || errno == EINTR;
		memmove(b->s, b->s + w, b->len - (size_t)w);
		b->len -= (size_t)w;
	}
	return true;
}

/* The session is up: bytes both ways until one side ends. */
static void pump(struct gf_console *c, struct gf_ssh *s, struct gf_ssh_chan *ch)
{
	struct gf_buf in = GF_BUF_INIT; /* from the node, not yet handed to the caller */
	unsigned char out[PUMP_BYTES];  /* typed, not yet sent */
	size_t nout = 0, off = 0;
	unsigned long long rx = gf_ssh_received(s);
	double heard = gf_monotime(), ping = heard;
	struct gf_err err = {0};

	for (;;) {
		struct pollfd pfd[2] = {
			{.fd = gf_ssh_socket(s), .events = gf_ssh_events(s)},
			{.fd = c->fd[1],
			 .events = (short)((nout ? 0 : POLLIN) | (in.len ? POLLOUT : 0))},
		};
		bool progress = true;

		if (poll(pfd, 2, 1000) < 0 && errno != EINTR) {
			gf_err_set(&err, GF_E_NODE, GF_EK_INTERNAL, "poll: %s", strerror(errno));
			break;
		}
		if (atomic_load(&c->stop))
			goto out;
		if (atomic_exchange(&c->resized, 0) &&
		    gf_ssh_chan_resize(ch, atomic_load(&c->cols), atomic_load(&c->rows), &err) < 0)
			break;
		while (progress) {
			long got = 0, sent = 0;

			progress = false;
			if (in.len < 4 * PUMP_BYTES) {
				char buf[PUMP_BYTES];

				got = gf_ssh_chan_read(ch, buf, sizeof(buf), &err);
				if (got < 0)
					goto end;
				gf_buf_add(&in, buf, (size_t)got);
			}
			if (!flush_to(c->fd[1], &in))
				goto out; /* the caller closed its end */
			if (!nout) {
				ssize_t r = read(c->fd[1], out, sizeof(out));

				if (r == 0)
					goto out;
				if (r > 0) {
					nout = (size_t)r;
					off = 0;
				}
			}
			if (nout) {
				sent = gf_ssh_chan_write(ch, out + off, nout - off, &err);
				if (sent < 0)
					goto end;
				off += (size_t)sent;
				if (off == nout)
					nout = 0;
			}
			progress = got > 0 || sent > 0;
		}
		if (gf_ssh_received(s) != rx) {
			rx = gf_ssh_received(s);
			heard = gf_monotime();
		}
		if (gf_monotime() - ping >= KEEPALIVE_S) {
			ping = gf_monotime();
			gf_ssh_keepalive(s, KEEPALIVE_S);
		}
		if (gf_monotime() - heard > 3 * KEEPALIVE_S + 1) {
			gf_err_set(&err, GF_E_NODE, GF_EK_TIMEOUT,
				   "the SSH console of node '%s' stopped answering", c->t.node);
			break;
		}
	}
end:
	if (!err.code)
		gf_err_set(&err, GF_E_NODE, GF_EK_CONNECT,
			   "the SSH console session of node '%s' ended", c->t.node);
	flush_to(c->fd[1], &in);
	fail(c, &err);
out:
	gf_buf_release(&in);
}

static void *console_thread(void *arg)
{
	struct gf_console *c = arg;
	struct gf_ssh *s = NULL;
	struct gf_ssh_chan *ch = NULL;
	struct gf_err err = {0};
	int port = 0;

	if (find_port(c, &port, &err) < 0 || login(c, port, &s, &ch, &err) < 0) {
		fail(c, &err);
	} else {
		atomic_store(&c->state, GF_CONSOLE_CONNECTED);
		pump(c, s, ch);
	}
	gf_ssh_chan_free(ch);
	gf_ssh_close(s);
	shutdown(c->fd[1], SHUT_RDWR); /* the caller reads the end */
	return NULL;
}

static int con_start(size_t n, struct gf_err *err)
{
	(void)n;
	return gf_ssh_global_init(err);
}

static void con_stop(void)
{
	gf_ssh_global_cleanup();
}

int gf_console_ssh_open(const struct gf_backend *be, const struct gf_bmc_target *t, bool accept_new,
			bool interactive, struct gf_console **ret, struct gf_err *err)
{
	struct gf_console *c = gf_xcalloc(1, sizeof(*c));
	int rc;

	c->t = *t;
	c->t.opts = NULL;
	c->t.cancel = &c->stop; /* close() ends the Redfish read and the login at once */
	c->be = be;
	c->accept_new = accept_new;
	c->interactive = interactive;
	pthread_mutex_init(&c->lock, NULL);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->fd) < 0) {
		rc = gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "socketpair: %s", strerror(errno));
		goto fail;
	}
	fcntl(c->fd[0], F_SETFL, O_NONBLOCK);
	fcntl(c->fd[1], F_SETFL, O_NONBLOCK);
	rc = pthread_create(&c->thread, NULL, console_thread, c);
	if (rc) {
		close(c->fd[0]);
		close(c->fd[1]);
		rc = gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "cannot start a thread: %s",
				strerror(rc));
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	pthread_mutex_destroy(&c->lock);
	free(c);
	return rc;
}

/* The generic open is not used: gf_console_ssh_open() needs the backend. */
static int con_open(const struct gf_bmc_target *t, bool steal, bool keepalive,
		    struct gf_console **ret, struct gf_err *err)
{
	(void)t;
	(void)steal;
	(void)keepalive;
	(void)ret;
	return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "the SSH console opens through its BMC");
}

static int con_fd(struct gf_console *c)
{
	return c->fd[0];
}

static enum gf_console_state con_state(struct gf_console *c, struct gf_err *err)
{
	enum gf_console_state st = (enum gf_console_state)atomic_load(&c->state);

	if (st == GF_CONSOLE_FAILED && err) {
		pthread_mutex_lock(&c->lock);
		*err = c->err;
		pthread_mutex_unlock(&c->lock);
	}
	return st;
}

static int con_brk(struct gf_console *c, struct gf_err *err)
{
	return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
			  "the SSH console of node '%s' takes no break", c->t.node);
}

static int con_resize(struct gf_console *c, int cols, int rows)
{
	atomic_store(&c->cols, cols);
	atomic_store(&c->rows, rows);
	atomic_store(&c->resized, 1);
	return 0;
}

static void con_close(struct gf_console *c)
{
	if (!c)
		return;
	atomic_store(&c->stop, 1);
	shutdown(c->fd[0], SHUT_RDWR); /* the thread's poll wakes on it */
	pthread_join(c->thread, NULL);
	close(c->fd[0]);
	close(c->fd[1]);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const struct gf_console_ops gf_console_ssh_ops = {
	.start = con_start,
	.stop = con_stop,
	.open = con_open,
	.fd = con_fd,
	.state = con_state,
	.brk = con_brk,
	.resize = con_resize,
	.close = con_close,
};
