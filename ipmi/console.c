/*
 * The IPMI console: Serial over LAN through FreeIPMI's libipmiconsole. Its
 * engine keeps every session on threads of its own (up to 32, many sessions
 * each); a console is handed to the caller as the engine's file descriptor.
 * No SOL is written here: this file only configures and watches contexts.
 */
#include "ipmi/internal.h"
#include "lib/util.h"

#include <errno.h>
#include <ipmiconsole.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gf_console {
	ipmiconsole_ctx_t ctx;
	int fd;
	char *node;
};

static bool engine_up;

static int con_start(size_t n, struct gf_err *err)
{
	/* One engine thread keeps many sessions: one per 32 consoles, 32 at most. */
	size_t threads = n / 32 + 1;

	if (engine_up)
		return 0;
	if (threads > IPMICONSOLE_THREAD_COUNT_MAX)
		threads = IPMICONSOLE_THREAD_COUNT_MAX;
	if (ipmiconsole_engine_init((unsigned)threads, 0) < 0)
		return gf_err_set(err, GF_E_IO, GF_EK_NONE,
				  "cannot start FreeIPMI's console engine: %s", strerror(errno));
	engine_up = true;
	return 0;
}

static void con_stop(void)
{
	if (engine_up)
		ipmiconsole_engine_teardown(1); /* SOL deactivated, sessions closed */
	engine_up = false;
}

static int privilege_of(uint8_t level)
{
	switch (level) {
	case IPMI_PRIVILEGE_LEVEL_USER: return IPMICONSOLE_PRIVILEGE_USER;
	case IPMI_PRIVILEGE_LEVEL_OPERATOR: return IPMICONSOLE_PRIVILEGE_OPERATOR;
	default: return IPMICONSOLE_PRIVILEGE_ADMIN;
	}
}

/* The kind of an engine error. */
static enum gf_errkind kind_of(int errnum)
{
	switch (errnum) {
	case IPMICONSOLE_ERR_SOL_INUSE:
	case IPMICONSOLE_ERR_SOL_STOLEN: return GF_EK_BUSY;
	case IPMICONSOLE_ERR_USERNAME_INVALID:
	case IPMICONSOLE_ERR_PASSWORD_INVALID:
	case IPMICONSOLE_ERR_K_G_INVALID:
	case IPMICONSOLE_ERR_PRIVILEGE_LEVEL_INSUFFICIENT:
	case IPMICONSOLE_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED: return GF_EK_AUTH;
	case IPMICONSOLE_ERR_HOSTNAME_INVALID: return GF_EK_CONNECT;
	case IPMICONSOLE_ERR_CONNECTION_TIMEOUT:
	case IPMICONSOLE_ERR_SESSION_TIMEOUT:
	case IPMICONSOLE_ERR_EXCESS_RETRANSMISSIONS_SENT: return GF_EK_TIMEOUT;
	case IPMICONSOLE_ERR_IPMI_2_0_UNAVAILABLE:
	case IPMICONSOLE_ERR_CIPHER_SUITE_ID_UNAVAILABLE:
	case IPMICONSOLE_ERR_SOL_UNAVAILABLE:
	case IPMICONSOLE_ERR_SOL_REQUIRES_ENCRYPTION:
	case IPMICONSOLE_ERR_SOL_REQUIRES_NO_ENCRYPTION: return GF_EK_UNSUPPORTED;
	case IPMICONSOLE_ERR_BMC_BUSY: return GF_EK_REFUSED;
	case IPMICONSOLE_ERR_BMC_ERROR:
	case IPMICONSOLE_ERR_BMC_IMPLEMENTATION:
	case IPMICONSOLE_ERR_EXCESS_ERRORS_RECEIVED: return GF_EK_PROTOCOL;
	default: return GF_EK_INTERNAL;
	}
}

static int engine_error(const char *node, int errnum, struct gf_err *err)
{
	if (errnum == IPMICONSOLE_ERR_SOL_INUSE)
		return gf_err_set(err, GF_E_NODE, GF_EK_BUSY,
				  "the serial console of node '%s' is in use by another session "
				  "(SOL payload already active)",
				  node);
	if (errnum == IPMICONSOLE_ERR_SOL_STOLEN)
		return gf_err_set(err, GF_E_NODE, GF_EK_BUSY,
				  "the serial console of node '%s' was taken over by another session",
				  node);
	return gf_err_set(err, GF_E_NODE, kind_of(errnum), "serial console of node '%s': %s", node,
			  ipmiconsole_ctx_strerror(errnum));
}

static void con_close(struct gf_console *c)
{
	if (!c)
		return;
	/* The engine sees its descriptor closed and ends the session, deactivating SOL. */
	if (c->fd >= 0)
		close(c->fd);
	if (c->ctx)
		ipmiconsole_ctx_destroy(c->ctx);
	free(c->node);
	free(c);
}

static int con_open(const struct gf_bmc_target *t, bool steal, bool keepalive,
		    struct gf_console **ret, struct gf_err *err)
{
	const char *node = t->node ? t->node : t->host;
	struct ipmiconsole_ipmi_config ic = {0};
	struct ipmiconsole_protocol_config pc = {0};
	struct ipmiconsole_engine_config ec = {0};
	struct gf_ipmi_profile ip;
	struct gf_console *c;
	char host[128], user[IPMI_MAX_USER_NAME_LENGTH + 1], pass[IPMI_2_0_MAX_PASSWORD_LENGTH + 1];
	int rc;

	if (!engine_up)
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				  "console of node '%s' opened before the engine started", node);
	rc = gf_ipmi_profile_parse(t->prof, &ip, err);
	if (rc < 0)
		return rc;
	if (t->prof->ipmi_v15)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "node '%s': Serial over LAN needs IPMI 2.0 (its profile says 1.5)",
				  node);
	if (gf_ipmi_host_arg(t, host, sizeof(host), err) < 0)
		return GF_E_NODE;
	if (snprintf(user, sizeof(user), "%s", t->prof->bmc_user ? t->prof->bmc_user : "") >=
		    (int)sizeof(user) ||
	    snprintf(pass, sizeof(pass), "%s",
		     t->prof->bmc_password ? t->prof->bmc_password : "") >= (int)sizeof(pass)) {
		explicit_bzero(pass, sizeof(pass));
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				  "node '%s': the user name or password is too long for IPMI 2.0",
				  node);
	}
	ic.username = user;
	ic.password = pass;
	ic.privilege_level = privilege_of(ip.privilege);
	ic.cipher_suite_id = ip.cipher_suite; /* -1: libipmiconsole's default, 3 */
	ic.workaround_flags = ip.sol_workarounds;
	/*
	 * A console is idle for long: keep-alives every 5 s hold the session, and a
	 * BMC that stops answering them ends it after 20 s (libipmiconsole's
	 * defaults, 20 s and 60 s, would let a session time out between two).
	 */
	pc.session_timeout_len = 20000;
	pc.keepalive_timeout_len = 5000;
	pc.retransmission_keepalive_timeout_len = 2000;
	ec.engine_flags = keepalive ? IPMICONSOLE_ENGINE_SERIAL_KEEPALIVE_EMPTY : 0;
	ec.behavior_flags = steal ? 0 : IPMICONSOLE_BEHAVIOR_ERROR_ON_SOL_INUSE;
	ec.debug_flags = 0;

	c = calloc(1, sizeof(*c));
	if (!c || !(c->node = strdup(node))) {
		free(c);
		explicit_bzero(pass, sizeof(pass));
		return gf_err_set(err, GF_E_NOMEM, GF_EK_NONE, "out of memory");
	}
	c->fd = -1;
	c->ctx = ipmiconsole_ctx_create(host, &ic, &pc, &ec);
	explicit_bzero(pass, sizeof(pass));
	if (!c->ctx) {
		int e = errno;

		con_close(c);
		return gf_err_set(err, GF_E_NODE, e == EINVAL ? GF_EK_CONNECT : GF_EK_INTERNAL,
				  "serial console of node '%s': %s", node, strerror(e));
	}
	if (ipmiconsole_engine_submit(c->ctx, NULL, NULL) < 0) {
		rc = engine_error(node, ipmiconsole_ctx_errnum(c->ctx), err);
		con_close(c);
		return rc;
	}
	c->fd = ipmiconsole_ctx_fd(c->ctx);
	if (c->fd < 0) {
		rc = engine_error(node, ipmiconsole_ctx_errnum(c->ctx), err);
		con_close(c);
		return rc;
	}
	*ret = c;
	return 0;
}

static int con_fd(struct gf_console *c)
{
	return c->fd;
}

static enum gf_console_state con_state(struct gf_console *c, struct gf_err *err)
{
	int errnum;

	switch (ipmiconsole_ctx_status(c->ctx)) {
	case IPMICONSOLE_CTX_STATUS_SUBMITTED: return GF_CONSOLE_CONNECTING;
	case IPMICONSOLE_CTX_STATUS_SOL_ESTABLISHED:
		errnum = ipmiconsole_ctx_errnum(c->ctx);
		if (errnum == IPMICONSOLE_ERR_SUCCESS)
			return GF_CONSOLE_CONNECTED;
		engine_error(c->node, errnum, err); /* established, then ended */
		return GF_CONSOLE_FAILED;
	default:
		engine_error(c->node, ipmiconsole_ctx_errnum(c->ctx), err);
		return GF_CONSOLE_FAILED;
	}
}

static int con_brk(struct gf_console *c, struct gf_err *err)
{
	if (ipmiconsole_ctx_generate_break(c->ctx) < 0)
		return engine_error(c->node, ipmiconsole_ctx_errnum(c->ctx), err);
	return 0;
}

const struct gf_console_ops gf_ipmi_console_ops = {
	.start = con_start,
	.stop = con_stop,
	.open = con_open,
	.fd = con_fd,
	.state = con_state,
	.brk = con_brk,
	.close = con_close,
};
