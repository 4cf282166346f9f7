/*
 * The IPMI backend: libfreeipmi, out of band, one ipmi_ctx per session.
 *
 * RMCP+ (IPMI 2.0) with cipher suite 17 by default. When the BMC refuses 17
 * at the open-session step it is tried again with 3; a timeout or a rejected
 * login never triggers that. IPMI 1.5 only when the profile asks for it.
 *
 * Threads: FreeIPMI contexts share no state, so each worker thread owns its
 * session and context; the one process-wide step (libgcrypt's set-up inside
 * ipmi_rmcpplus_init()) is done once under pthread_once().
 *
 * Deadlines: the session's open fits FreeIPMI's timeouts to what is left of
 * the node's deadline, and a host name is resolved first, bounded
 * (lib/bounded.h), so FreeIPMI only ever sees a numeric address. Once open,
 * a FreeIPMI call cannot be interrupted (a command waits for its session
 * timeout, ipmi_sdr_cache_create() for every record of a slow BMC), so each
 * operation runs on a thread of its own that the worker stops waiting for
 * shortly after the deadline: the session then belongs to that thread,
 * which closes it when FreeIPMI returns, and the node fails with a timeout.
 */
#include "ipmi/ipmi.h"
#include "ipmi/internal.h"
#include "ipmi/ping.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <freeipmi/freeipmi.h>

#include "lib/bounded.h"
#include "lib/buf.h"
#include "lib/util.h"

#define CIPHER_DEFAULT 17
#define CIPHER_FALLBACK 3
/* FreeIPMI refuses longer host names (MAXHOSTNAMELEN in its parser). */
#define HOST_MAX 64
/* Session timeouts beyond this are capped: FreeIPMI computes poll() ms in an int. */
#define SESSION_MS_MAX 3600000u
#define RETRANSMIT_MS_MIN 250u
#define RETRANSMIT_MS_MAX 1000u
/* IPMI_LAN_BACKOFF_COUNT in FreeIPMI's ipmi-lan-session-common.c (not exported). */
#define FREEIPMI_BACKOFF_COUNT 2u
/* How long past the node's deadline an operation is waited for before it is left behind. */
#define GRACE_S 0.5

static const uint8_t chassis_controls[] = {
	[GF_POWER_OP_ON] = IPMI_CHASSIS_CONTROL_POWER_UP,
	[GF_POWER_OP_OFF] = IPMI_CHASSIS_CONTROL_POWER_DOWN,
	[GF_POWER_OP_CYCLE] = IPMI_CHASSIS_CONTROL_POWER_CYCLE,
	[GF_POWER_OP_RESET] = IPMI_CHASSIS_CONTROL_HARD_RESET,
	[GF_POWER_OP_SOFT] = IPMI_CHASSIS_CONTROL_INITIATE_SOFT_SHUTDOWN,
	[GF_POWER_OP_NMI] = IPMI_CHASSIS_CONTROL_PULSE_DIAGNOSTIC_INTERRUPT,
};

/* FreeIPMI's message @in, lower case and without a full stop, into @buf. */
const char *gf_ipmi_lower(const char *in, char *buf, size_t size)
{
	size_t n = 0;

	for (; in && *in && n + 1 < size; in++)
		buf[n++] = (*in >= 'A' && *in <= 'Z') ? (char)(*in - 'A' + 'a') : *in;
	while (n && (buf[n - 1] == '.' || buf[n - 1] == '\n'))
		n--;
	buf[n] = '\0';
	return buf;
}

/*
 * What the backend hands out: the session, until an operation that outran
 * the deadline took it with it.
 */
struct ipmi_handle {
	struct ipmi_session *s; /* NULL once left to an operation's thread */
	char *node;
	double deadline;              /* the node's */
	double op_s;                  /* the bound of an operation started past the deadline */
	const gf_cancel_flag *cancel; /* Ctrl-C: an operation in flight is left behind */
};

static void session_free(void *vs);

static pthread_once_t crypt_once = PTHREAD_ONCE_INIT;
static int crypt_rc;

/* libgcrypt's one-time set-up is not safe to race (see FreeIPMI's ipmi-crypt.c). */
static void crypt_init(void)
{
	crypt_rc = ipmi_rmcpplus_init();
}

bool gf_ipmi_crypt_ready(void)
{
	pthread_once(&crypt_once, crypt_init);
	return crypt_rc >= 0;
}

/*
 * "host", "host:port" or "[v6]:port", the forms FreeIPMI's parser takes, of
 * @t's host resolved to a numeric address by the deadline.
 */
int gf_ipmi_host_arg(const struct gf_bmc_target *t, char *buf, size_t size, struct gf_err *err)
{
	const char *node = t->node ? t->node : t->host;
	char addr[INET6_ADDRSTRLEN + 1];
	struct gf_err rerr = {0};
	int n;

	if (!t->host || !*t->host)
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT, "node '%s' has no bmc address",
				  node);
	if (strlen(t->host) > HOST_MAX)
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
				  "bmc address '%s' of node '%s' is longer than %d characters",
				  t->host, node, HOST_MAX);
	if (t->port < 0 || t->port > 65535)
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
				  "bmc port %d of node '%s' is not a port", t->port, node);
	char bare[HOST_MAX + 1];
	size_t hl = strlen(t->host);

	/* "[v6]" as some write it: the address inside. */
	if (t->host[0] == '[' && hl > 2 && t->host[hl - 1] == ']')
		snprintf(bare, sizeof(bare), "%.*s", (int)(hl - 2), t->host + 1);
	else
		snprintf(bare, sizeof(bare), "%s", t->host);
	if (gf_resolve_numeric(bare, SOCK_DGRAM, t->deadline, t->cancel, addr, sizeof(addr),
			       &rerr) < 0)
		return gf_err_set(err, GF_E_NODE, rerr.kind, "bmc address of node '%s': %s", node,
				  rerr.msg);
	if (!t->port)
		n = snprintf(buf, size, "%s", addr);
	else if (strchr(addr, ':'))
		n = snprintf(buf, size, "[%s]:%d", addr, t->port);
	else
		n = snprintf(buf, size, "%s:%d", addr, t->port);
	if (n < 0 || (size_t)n >= size)
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
				  "bmc address '%s' of node '%s' is too long", t->host, node);
	return 0;
}

/*
 * FreeIPMI's timeouts for an open that must end by @deadline; false when no
 * time is left. FreeIPMI checks its session timeout only when a wait for an
 * answer ends, and the n-th wait (from 0) lasts (n / 2 + 1) retransmission
 * timeouts. So the retransmission timeout is chosen to make the waits add
 * up to the time left, near RETRANSMIT_MS_MIN..MAX each, and the session
 * timeout just below their sum: a BMC that never answers then fails at the
 * deadline, not up to a growing wait after it.
 */
static bool timeouts(double deadline, unsigned *session_ms, unsigned *retransmit_ms)
{
	double left = (deadline - gf_monotime()) * 1000.0;
	unsigned total, want, sum = 2, waits = 2, r;

	if (!(left >= 20.0)) /* also a NaN deadline */
		return false;
	total = left > (double)SESSION_MS_MAX ? SESSION_MS_MAX : (unsigned)left;
	want = total / 10;
	if (want < RETRANSMIT_MS_MIN)
		want = RETRANSMIT_MS_MIN;
	if (want > RETRANSMIT_MS_MAX)
		want = RETRANSMIT_MS_MAX;
	for (;;) {
		unsigned next = sum + waits / FREEIPMI_BACKOFF_COUNT + 1;

		if ((unsigned long long)next * want > total)
			break;
		sum = next;
		waits++;
	}
	r = total / sum;
	/* Each wait may end up to 1 ms early (poll() takes whole ms). */
	*session_ms = r * sum - (5 + waits);
	*retransmit_ms = r;
	return r > 0 && r < *session_ms;
}

/*
 * The answer of a BMC that lacks the proposed cipher suite. A proper refusal
 * is "no cipher suite match" (CIPHER_SUITE_ID_UNAVAILABLE) or another RMCP+
 * status (BAD_RMCPPLUS_STATUS_CODE). OpenIPMI's ipmi_sim answers "invalid
 * authentication algorithm" in a 2-byte Open Session Response without the
 * session id, which FreeIPMI reports as IPMI_ERR_IPMI_ERROR (a field it
 * needs is missing). These are worth trying suite 3; whether 3 then stands
 * is decided once its session is open (gf_ipmi_fallback_verdict): the last
 * proves nothing by itself. Timeouts and login failures have other codes.
 */
static bool cipher_refused(int errnum)
{
	return errnum == IPMI_ERR_CIPHER_SUITE_ID_UNAVAILABLE ||
	       errnum == IPMI_ERR_BAD_RMCPPLUS_STATUS_CODE || errnum == IPMI_ERR_IPMI_ERROR;
}

/*
 * A BMC that refused suite 17 once is remembered for a week in the cache
 * directory, so that later runs open with 3 at once instead of paying a
 * refused round trip per node per run; after a week 17 is tried again (a
 * firmware update may have brought it). Workers write only these files.
 */
#define CIPHER_MEMO_SECONDS (7 * 24 * 3600)

static bool memo_path(const struct gf_bmc_target *t, char *buf, size_t size)
{
	int n;

	if (!t->cache_dir || !*t->cache_dir || strchr(t->host, '/'))
		return false;
	n = snprintf(buf, size, "%s/ipmi-cipher/%s_%d", t->cache_dir, t->host, t->port);
	return n > 0 && (size_t)n < size;
}

bool gf_ipmi_memo_fallback(const struct gf_bmc_target *t)
{
	char path[4096];
	struct stat st;

	if (!memo_path(t, path, sizeof(path)) || stat(path, &st) < 0)
		return false;
	return time(NULL) - st.st_mtime < CIPHER_MEMO_SECONDS;
}

void gf_ipmi_memo_set(const struct gf_bmc_target *t, bool fallback)
{
	char path[4096];
	int fd;

	if (!memo_path(t, path, sizeof(path)))
		return;
	if (!fallback) {
		unlink(path);
		return;
	}
	if (gf_mkdir_parents(path, NULL) < 0)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	if (write(fd, "3\n", 2) != 2) {
		/* Only a hint: without it the next run tries 17 first again. */
	}
	close(fd);
}

/*
 * 1 when the BMC's cipher suite list (Get Channel Cipher Suites of this
 * channel, IPMI payload, by cipher suite) has suite @id, 0 when it has not,
 * -1 when it could not be read by @deadline. In an open session, so the
 * answer is authenticated as the session is.
 */
static int lists_suite(ipmi_ctx_t ctx, uint8_t id, double deadline)
{
	uint8_t data[64 * 16], ids[256];
	size_t len = 0;
	int n;

	for (uint8_t index = 0; index < 64; index++) {
		uint8_t rq[4] = {IPMI_CMD_GET_CHANNEL_CIPHER_SUITES,
				 IPMI_CHANNEL_NUMBER_CURRENT_CHANNEL, IPMI_PAYLOAD_TYPE_IPMI,
				 (uint8_t)(0x80 | index)};
		uint8_t rs[3 + 16];

		if (gf_monotime() >= deadline)
			return -1;
		n = ipmi_cmd_raw(ctx, IPMI_BMC_IPMB_LUN_BMC, IPMI_NET_FN_APP_RQ, rq, sizeof(rq), rs,
				 sizeof(rs));
		if (n < 3 || rs[0] != IPMI_CMD_GET_CHANNEL_CIPHER_SUITES || rs[1] != 0)
			return -1;
		memcpy(data + len, rs + 3, (size_t)n - 3);
		len += (size_t)n - 3;
		if (n - 3 < 16)
			break; /* the last piece is short */
	}
	n = gf_ipmi_cipher_records(data, len, ids, sizeof(ids));
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

struct list_call {
	ipmi_ctx_t ctx;
	double deadline;
	int listed;
};

static void list_call_run(void *vc)
{
	struct list_call *c = vc;

	c->listed = lists_suite(c->ctx, CIPHER_DEFAULT, c->deadline);
}

static void list_call_free(void *vc)
{
	struct list_call *c = vc;

	if (c->ctx)
		ipmi_ctx_destroy(c->ctx);
	free(c);
}

/*
 * lists_suite() of @s's open session, left behind GRACE_S after @t's
 * deadline as the opening is (FreeIPMI's timeout counts from the BMC's last
 * answer, so a BMC that answers slowly, then not at all, held it seconds
 * past the deadline): -1 then (the list could not be read), and @s->ctx is
 * the call's thread's (NULL).
 */
static int lists_suite_bounded(struct ipmi_session *s, const struct gf_bmc_target *t)
{
	struct list_call *c = gf_xcalloc(1, sizeof(*c));
	int listed;

	*c = (struct list_call){.ctx = s->ctx, .deadline = t->deadline, .listed = -1};
	if (gf_bounded_run(list_call_run, list_call_free, c, t->deadline + GRACE_S, t->cancel, 0,
			   "reading the cipher suite list", NULL) < 0) {
		s->ctx = NULL; /* the call's thread destroys it */
		return -1;
	}
	listed = c->listed;
	c->ctx = NULL;
	list_call_free(c);
	return listed;
}

/* @err from a failed open, in the words of ipmipower where they fit. */
static int open_error(const struct gf_bmc_target *t, ipmi_ctx_t ctx, int cipher, bool tried_default,
		      unsigned wflags, double t0, struct gf_err *err)
{
	const char *node = t->node ? t->node : t->host;
	int e = ipmi_ctx_errnum(ctx);
	char why_buf[128];
	const char *why = gf_ipmi_lower(ipmi_ctx_strerror(e), why_buf, sizeof(why_buf));
	const char *refusal;
	int rc;

	switch (e) {
	case IPMI_ERR_USERNAME_INVALID:
	case IPMI_ERR_PASSWORD_INVALID:
	case IPMI_ERR_K_G_INVALID:
	case IPMI_ERR_PASSWORD_VERIFICATION_TIMEOUT:
	case IPMI_ERR_AUTHENTICATION_TYPE_UNAVAILABLE:
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH, "bmc '%s' rejected the login (%s)",
				  node, why);
	case IPMI_ERR_PRIVILEGE_LEVEL_INSUFFICIENT:
	case IPMI_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED:
		/* ipmi_sim and some Intel BMCs echo the wrong maximum privilege. */
		if (cipher >= 0 &&
		    !(wflags & IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE))
			return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
					  "bmc '%s' rejected the login (%s; some bmcs need "
					  "ipmi_workarounds = opensesspriv)",
					  node, why);
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH, "bmc '%s' rejected the login (%s)",
				  node, why);
	case IPMI_ERR_SESSION_TIMEOUT:
	case IPMI_ERR_CONNECTION_TIMEOUT:
		return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
				  "bmc '%s' (%s) did not answer in %.1f s (%s)", node, t->host,
				  gf_monotime() - t0, why);
	case IPMI_ERR_HOSTNAME_INVALID:
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
				  "bmc address '%s' of node '%s' does not resolve", t->host, node);
	case IPMI_ERR_SYSTEM_ERROR:
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
				  "bmc '%s' (%s) is unreachable (%s)", node, t->host, why);
	case IPMI_ERR_IPMI_2_0_UNAVAILABLE:
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' does not speak ipmi 2.0 (rmcp+); ipmi_version = 1.5 "
				  "in its profile allows ipmi 1.5",
				  node);
	case IPMI_ERR_BMC_BUSY:
		return gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
				  "bmc '%s' has no room for another session (%s)", node, why);
	case IPMI_ERR_CIPHER_SUITE_ID_UNAVAILABLE:
	case IPMI_ERR_BAD_RMCPPLUS_STATUS_CODE:
	case IPMI_ERR_IPMI_ERROR:
		if (cipher < 0)
			break;
		refusal = e == IPMI_ERR_CIPHER_SUITE_ID_UNAVAILABLE ? "no matching cipher suite"
			  : e == IPMI_ERR_BAD_RMCPPLUS_STATUS_CODE
				  ? "rmcp+ open session status"
				  : "malformed open session answer";
		if (tried_default)
			rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					"bmc '%s' refused cipher suites %d and %d (%s)", node,
					CIPHER_DEFAULT, cipher, refusal);
		else
			rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					"bmc '%s' refused cipher suite %d (%s)", node, cipher,
					refusal);
		if (err)
			err->detail = cipher;
		return rc;
	case IPMI_ERR_OUT_OF_MEMORY:
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	default: break;
	}
	return gf_err_set(err, GF_E_NODE,
			  e == IPMI_ERR_IPMI_ERROR ? GF_EK_PROTOCOL : GF_EK_INTERNAL,
			  "bmc '%s' session failed (freeipmi: %s)", node,
			  gf_ipmi_lower(ipmi_ctx_errormsg(ctx), why_buf, sizeof(why_buf)));
}

/*
 * One FreeIPMI session opening (it waits for the BMC up to its session
 * timeout, Ctrl-C unseen), on a thread that Ctrl-C leaves behind: the thread
 * then destroys the context and zeroes the password copy itself.
 */
struct open_call {
	ipmi_ctx_t ctx;
	char *host, *user, *password; /* copies: the caller may be gone */
	uint8_t privilege;
	int cipher; /* -1: IPMI 1.5 */
	unsigned session_ms, retransmit_ms, wflags;
	int rc;
};

static void open_call_free(void *vc)
{
	struct open_call *c = vc;

	if (c->ctx)
		ipmi_ctx_destroy(c->ctx);
	free(c->host);
	free(c->user);
	gf_free_secret(c->password);
	free(c);
}

static void open_call_run(void *vc)
{
	struct open_call *c = vc;

	if (c->cipher < 0)
		c->rc = ipmi_ctx_open_outofband(c->ctx, c->host, c->user, c->password,
						IPMI_AUTHENTICATION_TYPE_MD5, c->privilege,
						c->session_ms, c->retransmit_ms, c->wflags,
						IPMI_FLAGS_DEFAULT);
	else
		c->rc = ipmi_ctx_open_outofband_2_0(c->ctx, c->host, c->user, c->password, NULL, 0,
						    c->privilege, (uint8_t)c->cipher, c->session_ms,
						    c->retransmit_ms, c->wflags,
						    IPMI_FLAGS_DEFAULT);
}

/*
 * Open @s->ctx's session as open_call_run() does: 0 with FreeIPMI's return
 * code in *@ret_rc; on Ctrl-C the call is left behind with the context
 * (@s->ctx NULL then) and GF_E_NODE is returned.
 */
static int open_bounded(struct ipmi_session *s, const struct gf_bmc_target *t, const char *host,
			const struct gf_profile *p, uint8_t privilege, int cipher,
			unsigned session_ms, unsigned retransmit_ms, unsigned wflags, int *ret_rc,
			struct gf_err *err)
{
	struct open_call *c = gf_xcalloc(1, sizeof(*c));
	struct gf_err e = {0};
	int rc;

	*c = (struct open_call){
		.ctx = s->ctx,
		.host = gf_xstrdup(host),
		.user = p->bmc_user ? gf_xstrdup(p->bmc_user) : NULL,
		.password = p->bmc_password ? gf_xstrdup(p->bmc_password) : NULL,
		.privilege = privilege,
		.cipher = cipher,
		.session_ms = session_ms,
		.retransmit_ms = retransmit_ms,
		.wflags = wflags,
	};
	/*
	 * FreeIPMI's session timeout (session_ms) counts from the BMC's last
	 * answer, not from the start: on a lossy link, where some answers get
	 * through, an opening ran seconds past the node's deadline. So it is
	 * left behind there, as every operation is (GRACE_S after it).
	 */
	rc = gf_bounded_run(open_call_run, open_call_free, c, t->deadline + GRACE_S, t->cancel, 0,
			    "opening the session", &e);
	if (rc < 0) {
		s->ctx = NULL; /* the call's thread destroys it */
		if (e.kind == GF_EK_TIMEOUT)
			return gf_err_set(err, rc, e.kind,
					  "bmc '%s' (%s) did not answer in time (the session was "
					  "still opening at the deadline)",
					  s->node, t->host);
		return gf_err_set(err, rc, e.kind, "bmc '%s': %s", s->node, e.msg);
	}
	*ret_rc = c->rc;
	c->ctx = NULL;
	open_call_free(c);
	return 0;
}

int gf_ipmi_fallback_refused(const char *node, int listed, struct gf_err *err)
{
	return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
			  "bmc '%s' answered cipher suite 17 with a malformed reply, and %s: "
			  "not falling back to suite 3 (ipmi_cipher_suite = 3 in the profile "
			  "chooses it)",
			  node,
			  listed > 0 ? "lists suite 17"
				     : "its cipher suite list could not be read");
}

static int ipmi_open(const struct gf_bmc_target *t, void **ret_session, struct gf_err *err)
{
	const struct gf_profile *p = t->prof;
	const char *node = t->node ? t->node : t->host;
	char host[HOST_MAX + 16];
	unsigned wflags, session_ms, retransmit_ms;
	struct gf_ipmi_profile ip;
	int cipher;
	bool fallback, memo, tried_default = false;
	int refusal = 0; /* what suite 17 got (ipmi_ctx_errnum) */
	size_t pw_max = p->ipmi_v15 ? IPMI_1_5_MAX_PASSWORD_LENGTH : IPMI_2_0_MAX_PASSWORD_LENGTH;
	struct ipmi_session *s;
	struct ipmi_handle *h;
	double t0 = gf_monotime();
	int rc, frc;

	if (gf_ipmi_host_arg(t, host, sizeof(host), err) < 0)
		return GF_E_NODE;
	if ((rc = gf_ipmi_profile_parse(p, &ip, err)) < 0)
		return rc;
	wflags = ip.workaround_flags;
	cipher = p->ipmi_v15 ? -1 : ip.cipher_suite < 0 ? CIPHER_DEFAULT : ip.cipher_suite;
	fallback = !p->ipmi_v15 && ip.cipher_suite < 0;
	memo = fallback && gf_ipmi_memo_fallback(t);
	if (p->bmc_user && strlen(p->bmc_user) > IPMI_MAX_USER_NAME_LENGTH)
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				  "user name of profile '%s' is longer than ipmi allows (%d bytes)",
				  p->name ? p->name : "default", IPMI_MAX_USER_NAME_LENGTH);
	if (p->bmc_password && strlen(p->bmc_password) > pw_max)
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				  "password of profile '%s' is longer than ipmi %s allows (%zu bytes)",
				  p->name ? p->name : "default", p->ipmi_v15 ? "1.5" : "2.0",
				  pw_max);
	if (!gf_ipmi_crypt_ready())
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				  "the rmcp+ crypto library could not be set up");

	s = gf_xcalloc(1, sizeof(*s));
	s->node = gf_xstrdup(node);
	s->ctx = ipmi_ctx_create();
	if (!s->ctx) {
		rc = gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
		goto fail;
	}
	if (memo)
		cipher = CIPHER_FALLBACK;
	for (;;) {
		if (!timeouts(t->deadline, &session_ms, &retransmit_ms)) {
			rc = gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					"bmc '%s' (%s): no time left to open a session", node,
					t->host);
			goto fail;
		}
		if ((rc = open_bounded(s, t, host, p, ip.privilege, cipher, session_ms,
				       retransmit_ms, wflags, &frc, err)) < 0)
			goto fail; /* Ctrl-C: left behind */
		if (frc == 0)
			break;
		if (fallback && cipher == CIPHER_DEFAULT &&
		    cipher_refused(ipmi_ctx_errnum(s->ctx))) {
			tried_default = true;
			refusal = ipmi_ctx_errnum(s->ctx);
			cipher = CIPHER_FALLBACK;
			continue;
		}
		if (memo && cipher == CIPHER_FALLBACK && cipher_refused(ipmi_ctx_errnum(s->ctx))) {
			/* The memo is stale: this BMC now wants something else. */
			memo = false;
			gf_ipmi_memo_set(t, false);
			cipher = CIPHER_DEFAULT;
			continue;
		}
		rc = open_error(t, s->ctx, cipher, tried_default, wflags, t0, err);
		goto fail;
	}
	if (tried_default && !memo) {
		/*
		 * Suite 17's refusal came before any authentication: only an RMCP+
		 * status that refuses it, or the BMC's own list read now, in the
		 * suite-3 session, lets 3 stand. A malformed answer (ipmi_sim's)
		 * or a spoofed one never downgrades a BMC that has 17.
		 */
		bool definite = refusal == IPMI_ERR_CIPHER_SUITE_ID_UNAVAILABLE ||
				refusal == IPMI_ERR_BAD_RMCPPLUS_STATUS_CODE;
		int listed = lists_suite_bounded(s, t);

		switch (gf_ipmi_fallback_verdict(definite, listed)) {
		case GF_IPMI_FALLBACK_MEMO: gf_ipmi_memo_set(t, true); break;
		case GF_IPMI_FALLBACK_USE: break;
		case GF_IPMI_FALLBACK_REFUSE:
			rc = gf_ipmi_fallback_refused(node, listed, err);
			goto fail;
		}
		if (!s->ctx) { /* left behind at the deadline */
			rc = gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					"bmc '%s' (%s) did not answer in time (its cipher suite "
					"list was still being read at the deadline)",
					node, t->host);
			goto fail;
		}
	}
	s->cipher = cipher;
	s->host = gf_xstrdup(t->host);
	s->cache_dir = t->cache_dir ? gf_xstrdup(t->cache_dir) : NULL;
	s->deadline = t->deadline;
	s->no_thresholds = t->opts && t->opts->no_thresholds;
	h = gf_xcalloc(1, sizeof(*h));
	h->s = s;
	h->node = gf_xstrdup(node);
	h->deadline = t->deadline;
	h->op_s = session_ms / 1000.0 + 1.0;
	h->cancel = t->cancel;
	*ret_session = h;
	return 0;
fail:
	session_free(s);
	return rc;
}

/* Sends Close Session and waits at most one retransmission timeout. */
static void session_free(void *vs)
{
	struct ipmi_session *s = vs;

	if (!s)
		return;
	if (s->sdr)
		ipmi_sdr_ctx_destroy(s->sdr);
	if (s->ctx)
		ipmi_ctx_destroy(s->ctx);
	free(s->bios);
	free(s->node);
	free(s->host);
	free(s->cache_dir);
	free(s);
}

/* Until when an operation starting now is waited for (see the top of the file). */
static double op_until(const struct ipmi_handle *h)
{
	double now = gf_monotime();

	/* Past the deadline only callers that poll on purpose (power --wait) call. */
	return now < h->deadline ? h->deadline + GRACE_S : now + h->op_s;
}

static void ipmi_close(void *session)
{
	struct ipmi_handle *h = session;

	if (!h)
		return;
	if (h->s)
		gf_bounded_run(session_free, session_free, h->s, op_until(h), NULL, 0,
			       "closing the session", NULL);
	free(h->node);
	free(h);
}

static void ipmi_rearm(void *session, double deadline)
{
	struct ipmi_handle *h = session;

	h->deadline = deadline;
	if (h->s) /* else an operation's thread holds it: the next call fails anyway */
		h->s->deadline = deadline;
}

int gf_ipmi_cmd_error(struct ipmi_session *s, const char *what, fiid_obj_t rs, uint8_t netfn,
		      struct gf_err *err)
{
	int e = ipmi_ctx_errnum(s->ctx);
	char why[128];
	uint64_t cc = 0;

	if (rs && FIID_OBJ_GET(rs, "comp_code", &cc) == 1 && cc != 0) {
		char text[IPMI_ERR_STR_MAX_LEN];

		if (ipmi_completion_code_strerror_cmd_r(rs, netfn, text, sizeof(text)) < 0)
			snprintf(text, sizeof(text), "unknown completion code");
		gf_ipmi_lower(text, text, sizeof(text));
		gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
			   "bmc '%s' refused %s (completion code 0x%02x: %s)", s->node, what,
			   (unsigned)cc, text);
		if (err)
			err->detail = (long)cc;
		return GF_E_NODE;
	}
	switch (e) {
	case IPMI_ERR_SESSION_TIMEOUT:
	case IPMI_ERR_CONNECTION_TIMEOUT:
	case IPMI_ERR_MESSAGE_TIMEOUT:
		return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT, "bmc '%s' did not answer %s (%s)",
				  s->node, what,
				  gf_ipmi_lower(ipmi_ctx_strerror(e), why, sizeof(why)));
	case IPMI_ERR_PRIVILEGE_LEVEL_INSUFFICIENT:
		return gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
				  "bmc '%s' refused %s (privilege level insufficient)", s->node,
				  what);
	case IPMI_ERR_SYSTEM_ERROR:
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT, "bmc '%s' is unreachable (%s)",
				  s->node,
				  gf_ipmi_lower(ipmi_ctx_errormsg(s->ctx), why, sizeof(why)));
	case IPMI_ERR_OUT_OF_MEMORY:
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	default:
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' failed %s (freeipmi: %s)", s->node, what,
				  gf_ipmi_lower(ipmi_ctx_errormsg(s->ctx), why, sizeof(why)));
	}
}

static int power_get(void *session, enum gf_power *ret, struct gf_err *err)
{
	struct ipmi_session *s = session;
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_get_chassis_status_rs);
	uint64_t on = 0;
	int rc;

	if (!rs)
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	if (ipmi_cmd_get_chassis_status(s->ctx, rs) < 0) {
		rc = gf_ipmi_cmd_error(s, "get chassis status", rs, IPMI_NET_FN_CHASSIS_RQ, err);
		goto out;
	}
	if (FIID_OBJ_GET(rs, "current_power_state.power_is_on", &on) != 1) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				"bmc '%s' sent a chassis status without the power state", s->node);
		goto out;
	}
	*ret = on ? GF_POWER_ON : GF_POWER_OFF;
	rc = 0;
out:
	fiid_obj_destroy(rs);
	return rc;
}

static int power_set(void *session, enum gf_power_op op, struct gf_err *err)
{
	struct ipmi_session *s = session;
	fiid_obj_t rs;
	char what[32];
	int rc;

	if ((unsigned)op >= sizeof(chassis_controls) / sizeof(chassis_controls[0]))
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "power operation %d is unknown",
				  (int)op);
	rs = fiid_obj_create(tmpl_cmd_chassis_control_rs);
	if (!rs)
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	snprintf(what, sizeof(what), "power %s", gf_power_op_name(op));
	if (ipmi_cmd_chassis_control(s->ctx, chassis_controls[op], rs) < 0)
		rc = gf_ipmi_cmd_error(s, what, rs, IPMI_NET_FN_CHASSIS_RQ, err);
	else
		rc = 0;
	fiid_obj_destroy(rs);
	return rc;
}

/* ---- operations, each bounded by the deadline -------------------------- */

enum op_kind {
	OP_POWER_GET,
	OP_POWER_SET,
	OP_SENSORS,
	OP_SEL_LIST,
	OP_SEL_CLEAR,
	OP_SEL_INFO,
	OP_SEL_SINCE,
	OP_FIRMWARE,
	OP_HARDWARE,
	OP_BOOT_GET,
	OP_BOOT_SET,
};

/* One operation on its thread: the arguments and results are its own until it is done. */
struct op {
	enum op_kind kind;
	struct ipmi_session *s;
	enum gf_power_op power_op; /* power_set */
	struct gf_boot want;       /* boot_set */
	char after[8];             /* sel_since: a record id, "": from the first */
	union {                    /* the answer, at its start */
		enum gf_power power;
		struct gf_boot boot;
		struct gf_sensor_list sensors;
		struct gf_sel_list sel;
		struct gf_sel_info sel_info;
		struct gf_sel_since since;
		struct gf_component_list comps;
		struct gf_hardware hw;
	} out;
	struct gf_err err;
	int rc;
};

static void op_call(void *vo)
{
	struct op *o = vo;

	switch (o->kind) {
	case OP_POWER_GET: o->rc = power_get(o->s, &o->out.power, &o->err); break;
	case OP_POWER_SET: o->rc = power_set(o->s, o->power_op, &o->err); break;
	case OP_SENSORS: o->rc = gf_ipmi_sensors(o->s, &o->out.sensors, &o->err); break;
	case OP_SEL_LIST: o->rc = gf_ipmi_sel_list(o->s, &o->out.sel, &o->err); break;
	case OP_SEL_CLEAR: o->rc = gf_ipmi_sel_clear(o->s, &o->err); break;
	case OP_SEL_INFO: o->rc = gf_ipmi_sel_info(o->s, &o->out.sel_info, &o->err); break;
	case OP_SEL_SINCE:
		o->rc = gf_ipmi_sel_since(o->s, o->after[0] ? o->after : NULL, &o->out.since,
					  &o->err);
		break;
	case OP_FIRMWARE: o->rc = gf_ipmi_firmware(o->s, &o->out.comps, &o->err); break;
	case OP_HARDWARE: o->rc = gf_ipmi_hardware(o->s, &o->out.hw, &o->err); break;
	case OP_BOOT_GET: o->rc = gf_ipmi_boot_get(o->s, &o->out.boot, &o->err); break;
	case OP_BOOT_SET: o->rc = gf_ipmi_boot_set(o->s, &o->want, &o->err); break;
	}
}

/* Release what a finished operation returned. */
static void op_release(struct op *o)
{
	if (o->rc < 0)
		return;
	switch (o->kind) {
	case OP_SENSORS: gf_sensor_list_release(&o->out.sensors); break;
	case OP_SEL_LIST: gf_sel_list_release(&o->out.sel); break;
	case OP_SEL_SINCE: gf_sel_list_release(&o->out.since.entries); break;
	case OP_FIRMWARE: gf_component_list_release(&o->out.comps); break;
	case OP_HARDWARE: gf_hardware_release(&o->out.hw); break;
	default: break;
	}
}

/* The thread of an operation nobody waits for any more: it owns the session. */
static void op_abandoned(void *vo)
{
	struct op *o = vo;

	op_release(o);
	session_free(o->s);
	free(o);
}

static const char *const op_what[] = {
	[OP_POWER_GET] = "reading the power state",
	[OP_POWER_SET] = "the power request",
	[OP_SENSORS] = "reading sensors",
	[OP_SEL_LIST] = "reading the event log",
	[OP_SEL_CLEAR] = "clearing the event log",
	[OP_FIRMWARE] = "reading firmware",
	[OP_SEL_INFO] = "reading the event log's counters",
	[OP_SEL_SINCE] = "reading the event log",
	[OP_HARDWARE] = "reading the hardware",
	[OP_BOOT_GET] = "reading the boot device",
	[OP_BOOT_SET] = "setting the boot device",
};

/*
 * Run @o on @session's thread for it; 0 with @o's results the caller's (it
 * frees @o), or an error: then @o is gone when it was left behind.
 */
static int op_run(void *session, struct op *o, struct gf_err *err)
{
	struct ipmi_handle *h = session;
	struct gf_err e = {0};
	int rc;

	if (!h->s) {
		free(o);
		return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
				  "bmc '%s': the session was given up at the deadline", h->node);
	}
	o->s = h->s;
	rc = gf_bounded_run(op_call, op_abandoned, o, op_until(h), h->cancel, 0, op_what[o->kind],
			    &e);
	if (rc < 0) {
		h->s = NULL; /* the operation's thread closes it */
		return gf_err_set(err, rc, e.kind, "bmc '%s': %s", h->node, e.msg);
	}
	if (o->rc < 0) {
		if (err)
			*err = o->err;
		rc = o->rc;
		free(o);
		return rc;
	}
	return 0;
}

/* Operation @kind on @session; its result (@size bytes, nullable) into *@ret on success. */
static int op_do(void *session, enum op_kind kind, enum gf_power_op power_op,
		 const struct gf_boot *want, void *ret, size_t size, struct gf_err *err)
{
	struct op *o = gf_xcalloc(1, sizeof(*o));
	int rc;

	o->kind = kind;
	o->power_op = power_op;
	if (want)
		o->want = *want;
	rc = op_run(session, o, err);
	if (rc == 0) {
		if (ret)
			memcpy(ret, &o->out, size);
		free(o);
	}
	return rc;
}

static int ipmi_power_get(void *session, enum gf_power *ret, struct gf_err *err)
{
	return op_do(session, OP_POWER_GET, 0, NULL, ret, sizeof(*ret), err);
}

static int ipmi_power_set(void *session, enum gf_power_op op, struct gf_err *err)
{
	return op_do(session, OP_POWER_SET, op, NULL, NULL, 0, err);
}

static int ipmi_sensors(void *session, struct gf_sensor_list *ret, struct gf_err *err)
{
	return op_do(session, OP_SENSORS, 0, NULL, ret, sizeof(*ret), err);
}

static int ipmi_sel_list(void *session, struct gf_sel_list *ret, struct gf_err *err)
{
	return op_do(session, OP_SEL_LIST, 0, NULL, ret, sizeof(*ret), err);
}

static int ipmi_sel_clear(void *session, struct gf_err *err)
{
	return op_do(session, OP_SEL_CLEAR, 0, NULL, NULL, 0, err);
}

static int ipmi_sel_info(void *session, struct gf_sel_info *ret, struct gf_err *err)
{
	return op_do(session, OP_SEL_INFO, 0, NULL, ret, sizeof(*ret), err);
}

static int ipmi_sel_since(void *session, const char *after, struct gf_sel_since *ret,
			  struct gf_err *err)
{
	struct op *o = gf_xcalloc(1, sizeof(*o));
	int rc;

	o->kind = OP_SEL_SINCE;
	if (after)
		snprintf(o->after, sizeof(o->after), "%.7s", after);
	rc = op_run(session, o, err);
	if (rc == 0) {
		*ret = o->out.since;
		free(o);
	}
	return rc;
}

static int ipmi_firmware(void *session, struct gf_component_list *ret, struct gf_err *err)
{
	return op_do(session, OP_FIRMWARE, 0, NULL, ret, sizeof(*ret), err);
}

static int ipmi_hardware(void *session, struct gf_hardware *ret, struct gf_err *err)
{
	return op_do(session, OP_HARDWARE, 0, NULL, ret, sizeof(*ret), err);
}

static int ipmi_boot_get(void *session, struct gf_boot *ret, struct gf_err *err)
{
	return op_do(session, OP_BOOT_GET, 0, NULL, ret, sizeof(*ret), err);
}

static int ipmi_boot_set(void *session, const struct gf_boot *want, struct gf_err *err)
{
	return op_do(session, OP_BOOT_SET, 0, want, NULL, 0, err);
}

const struct gf_backend gf_ipmi_backend = {
	.name = "ipmi",
	.title = "IPMI",
	.ping = &gf_ipmi_ping_ops,
	.profile_check = gf_ipmi_profile_check,
	.open = ipmi_open,
	.rearm = ipmi_rearm,
	.close = ipmi_close,
	.power_get = ipmi_power_get,
	.power_get_many = gf_ipmi_power_get_many,
	.power_set = ipmi_power_set,
	.sensors = ipmi_sensors,
	.sel_list = ipmi_sel_list,
	.sel_clear = ipmi_sel_clear,
	.sel_info = ipmi_sel_info,
	.sel_since = ipmi_sel_since,
	.firmware = ipmi_firmware,
	.hardware = ipmi_hardware,
	.boot_get = ipmi_boot_get,
	.boot_set = ipmi_boot_set,
	.console = &gf_ipmi_console_ops,
};
