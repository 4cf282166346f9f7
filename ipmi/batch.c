/*
 * The power state of many IPMI BMCs on one thread (gf_ipmi_backend's
 * power_get_many): one event loop drives every session, as ipmipower does,
 * where the backend's open/power_get/close take a worker and a runner
 * thread per BMC, woken once per datagram.
 *
 * Per BMC, at most @fanout sessions at once: RMCP+ Open Session, RAKP 1-4,
 * Get Chassis Status, Close Session. The first @fanout BMCs' Open Session
 * is their ping (one round trip less); the others get the fleet ping's Get
 * Channel Authentication Capabilities (the same datagram, to every BMC at
 * once and again while it is silent) and their session once they answered
 * and a slot is free. A first-window BMC that leaves its Open Session
 * unanswered until it is due again is pinged as the others are
 * (probe_unanswered()). The state is reported as soon as it is
 * read; the close follows. Set Session Privilege Level is not sent: a
 * session starts at the User level (IPMI 2.0 13.17), which Get Chassis
 * Status needs, and the login already proved the requested privilege
 * (RAKP). A BMC that answers "insufficient privilege" gets the request and
 * the command once more.
 *
 * Only what this loop fully checks is its own: IPMI 2.0, cipher suite 3 or
 * 17 (the default's fallback from 17 to 3 and its memo by the backend's
 * rules), no workaround but opensesspriv, a numeric address. A run with
 * one target else reads none (target_init()). Targets that share an
 * address, and a BMC whose login still goes wrong after RESTARTS, are
 * handed back (GF_POWER_AGAIN) to the backend's own session.
 *
 * The packets are FreeIPMI's (its templates, assembly and key derivation);
 * every answer is checked as FreeIPMI checks it: payload type, message tag
 * and session ids, RAKP 2's key exchange code and RAKP 4's integrity check
 * value, and in the session the integrity code, the pads, the requester
 * sequence number, the command and the checksums. Anything else is dropped.
 */
#include "ipmi/internal.h"
#include "ipmi/ping.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <freeipmi/freeipmi.h>

#include "lib/buf.h"
#include "lib/util.h"

#define PKT_MAX 512
#define KEY_MAX 64
#define POLL_S 0.05     /* Ctrl-C is seen within this */
#define RECV_BURST 1024 /* datagrams read per socket per wake-up */
#define CLOSE_SENDS 2   /* Close Session sent at most this often, unanswered */
#define RESTARTS 2      /* logins begun again after a lost RAKP answer */
#define RETRANSMIT_MIN_S 0.25
#define RETRANSMIT_MAX_S 1.0

enum stage {
	ST_PING = 0, /* the ping sent, no answer yet */
	ST_QUEUED,   /* answered, waiting for a session slot */
	ST_OPEN,     /* Open Session Request sent */
	ST_RAKP1,
	ST_RAKP3,
	ST_SUITES, /* Get Channel Cipher Suites (suite 17 refused with a malformed answer) */
	ST_PRIV,   /* Set Session Privilege Level (after "insufficient privilege") */
	ST_STATUS, /* Get Chassis Status */
	ST_CLOSE,  /* Close Session (the state already reported) */
	ST_DONE,
};

struct bs {
	const struct gf_bmc_target *t;
	struct sockaddr_storage sa;
	socklen_t salen;
	int fam;
	enum stage st;
	bool reported, active;
	bool probing;     /* in ST_OPEN: the run's first request, nothing answered yet */
	double next_send; /* monotonic: when the stage's request goes (again) */
	unsigned sends;   /* of this stage */
	uint8_t auth, integ, conf, priv, open_priv;
	uint8_t tag, rq_seq;
	uint32_t rc_id, ms_id, seq;
	bool priv_tried;
	unsigned restarts;
	/* The default suite: 17, falling back to 3 as the backend's session does (ipmi.c). */
	bool may_fall_back, fell_back, definite;
	uint8_t suite_index;
	size_t suites_len;
	uint8_t suites[64 * 16];
	uint8_t rc_rand[IPMI_REMOTE_CONSOLE_RANDOM_NUMBER_LENGTH];
	uint8_t ms_rand[IPMI_MANAGED_SYSTEM_RANDOM_NUMBER_LENGTH];
	uint8_t ms_guid[IPMI_MANAGED_SYSTEM_GUID_LENGTH];
	uint8_t sik[KEY_MAX], ik[KEY_MAX], ck[KEY_MAX];
	void *sikp, *ikp, *ckp;
	unsigned sikl, ikl, ckl;
};

/* Scratch FreeIPMI objects: one thread, so one set for every session. */
struct objs {
	fiid_obj_t rmcp, hdr, trlr, lan_rq, lan_rs, lan_trlr, payload;
	fiid_obj_t open_rq, open_rs, rakp1, rakp2, rakp3, rakp4;
	fiid_obj_t status_rq, status_rs, priv_rq, priv_rs, close_rq, close_rs, suites_rq, suites_rs;
};

struct eng {
	struct bs *s;
	size_t n;
	struct gf_ipmi_addr_entry *order;
	size_t norder;
	int fd[2];
	unsigned fanout, active;
	size_t queued_from;     /* sessions before it are past ST_QUEUED */
	double start, interval; /* the ping's */
	double retransmit;      /* in a login or session: FreeIPMI's, a tenth of the time */
	const gf_cancel_flag *cancel;
	gf_power_done done;
	void *ud;
	struct objs o;
	size_t left; /* not ST_DONE */
};

static const char *node_of(const struct bs *b)
{
	return b->t->node ? b->t->node : b->t->host;
}

static const char *password(const struct bs *b, unsigned *len)
{
	const char *p = b->t->prof->bmc_password ? b->t->prof->bmc_password : "";

	*len = (unsigned)strlen(p);
	return p;
}

static const char *user(const struct bs *b, unsigned *len)
{
	const char *u = b->t->prof->bmc_user ? b->t->prof->bmc_user : "";

	*len = (unsigned)strlen(u);
	return u;
}

static bool objs_make(struct objs *o)
{
	fiid_field_t *tmpl[] = {
		tmpl_rmcp_hdr,
		tmpl_rmcpplus_session_hdr,
		tmpl_rmcpplus_session_trlr,
		tmpl_lan_msg_hdr_rq,
		tmpl_lan_msg_hdr_rs,
		tmpl_lan_msg_trlr,
		tmpl_rmcpplus_payload,
		tmpl_rmcpplus_open_session_request,
		tmpl_rmcpplus_open_session_response,
		tmpl_rmcpplus_rakp_message_1,
		tmpl_rmcpplus_rakp_message_2,
		tmpl_rmcpplus_rakp_message_3,
		tmpl_rmcpplus_rakp_message_4,
		tmpl_cmd_get_chassis_status_rq,
		tmpl_cmd_get_chassis_status_rs,
		tmpl_cmd_set_session_privilege_level_rq,
		tmpl_cmd_set_session_privilege_level_rs,
		tmpl_cmd_close_session_rq,
		tmpl_cmd_close_session_rs,
		tmpl_cmd_get_channel_cipher_suites_rq,
		tmpl_cmd_get_channel_cipher_suites_rs,
	};
	fiid_obj_t *v = &o->rmcp;

	for (size_t k = 0; k < NELEM(tmpl); k++)
		if (!(v[k] = fiid_obj_create(tmpl[k])))
			return false;
	return true;
}

static void objs_free(struct objs *o)
{
	fiid_obj_t *v = &o->rmcp;

	for (size_t k = 0; k < sizeof(*o) / sizeof(fiid_obj_t); k++)
		if (v[k])
			fiid_obj_destroy(v[k]);
}

/* ---- what a session reports -------------------------------------------------- */

static void release_slot(struct eng *e, struct bs *b)
{
	if (b->active) {
		b->active = false;
		e->active--;
	}
}

static void finish(struct eng *e, struct bs *b)
{
	if (b->st == ST_DONE)
		return;
	release_slot(e, b);
	b->st = ST_DONE;
	e->left--;
}

static void report(struct eng *e, struct bs *b, int rc, enum gf_power p, const struct gf_err *err)
{
	if (b->reported)
		return;
	b->reported = true;
	e->done(e->ud, (size_t)(b - e->s), rc, p, err);
}

static void fail(struct eng *e, struct bs *b, const struct gf_err *err)
{
	report(e, b, err->code ? err->code : GF_E_NODE, GF_POWER_UNKNOWN, err);
}

/* Nothing authenticated was sent: the backend's own session takes the node. */
static void hand_back(struct eng *e, struct bs *b)
{
	report(e, b, GF_POWER_AGAIN, GF_POWER_UNKNOWN, NULL);
	finish(e, b);
}

static void login_failed(struct eng *e, struct bs *b, int ipmi_errnum, enum gf_errkind kind)
{
	struct gf_err err = {0};
	char why[128];

	gf_err_set(&err, GF_E_NODE, kind, "bmc '%s' rejected the login (%s)", node_of(b),
		   gf_ipmi_lower(ipmi_ctx_strerror(ipmi_errnum), why, sizeof(why)));
	fail(e, b, &err);
	finish(e, b); /* no session to close */
}

/* ---- sending ------------------------------------------------------------------- */

static void send_pkt(struct eng *e, struct bs *b, const uint8_t *pkt, int len)
{
	if (len <= 0 || e->fd[b->fam] < 0)
		return;
	/* A full socket or an unreachable peer: the retransmission tries again. */
	(void)sendto(e->fd[b->fam], pkt, (size_t)len, MSG_DONTWAIT, (const struct sockaddr *)&b->sa,
		     b->salen);
}

/* A session setup message (Open Session, RAKP 1 and 3): no keys, no session. */
static int setup_pkt(struct eng *e, uint8_t payload_type, fiid_obj_t cmd, uint8_t *pkt)
{
	struct objs *o = &e->o;

	if (fill_rmcp_hdr_ipmi(o->rmcp) < 0 ||
	    fill_rmcpplus_session_hdr(payload_type, IPMI_PAYLOAD_FLAG_UNAUTHENTICATED,
				      IPMI_PAYLOAD_FLAG_UNENCRYPTED, 0, 0, 0, 0, o->hdr) < 0 ||
	    fill_lan_msg_hdr(IPMI_SLAVE_ADDRESS_BMC, IPMI_NET_FN_APP_RQ, IPMI_BMC_IPMB_LUN_BMC, 0,
			     o->lan_rq) < 0 ||
	    fill_rmcpplus_session_trlr(o->trlr) < 0)
		return -1;
	return assemble_ipmi_rmcpplus_pkt(IPMI_AUTHENTICATION_ALGORITHM_RAKP_NONE,
					  IPMI_INTEGRITY_ALGORITHM_NONE,
					  IPMI_CONFIDENTIALITY_ALGORITHM_NONE, NULL, 0, NULL, 0,
					  NULL, 0, o->rmcp, o->hdr, o->lan_rq, cmd, o->trlr, pkt,
					  PKT_MAX, IPMI_INTERFACE_FLAGS_DEFAULT);
}

/* A command in the open session, with the next session sequence number. */
static int session_pkt(struct eng *e, struct bs *b, uint8_t netfn, fiid_obj_t cmd, uint8_t *pkt)
{
	struct objs *o = &e->o;
	unsigned pwl;
	const char *pw = password(b, &pwl);

	b->seq++;
	if (fill_rmcp_hdr_ipmi(o->rmcp) < 0 ||
	    fill_rmcpplus_session_hdr(IPMI_PAYLOAD_TYPE_IPMI,
				      b->integ != IPMI_INTEGRITY_ALGORITHM_NONE
					      ? IPMI_PAYLOAD_FLAG_AUTHENTICATED
					      : IPMI_PAYLOAD_FLAG_UNAUTHENTICATED,
				      b->conf != IPMI_CONFIDENTIALITY_ALGORITHM_NONE
					      ? IPMI_PAYLOAD_FLAG_ENCRYPTED
					      : IPMI_PAYLOAD_FLAG_UNENCRYPTED,
				      0, 0, b->ms_id, b->seq, o->hdr) < 0 ||
	    fill_lan_msg_hdr(IPMI_SLAVE_ADDRESS_BMC, netfn, IPMI_BMC_IPMB_LUN_BMC, b->rq_seq,
			     o->lan_rq) < 0 ||
	    fill_rmcpplus_session_trlr(o->trlr) < 0)
		return -1;
	return assemble_ipmi_rmcpplus_pkt(b->auth, b->integ, b->conf, b->ikp, b->ikl, b->ckp,
					  b->ckl, pw, pwl, o->rmcp, o->hdr, o->lan_rq, cmd, o->trlr,
					  pkt, PKT_MAX, IPMI_INTERFACE_FLAGS_DEFAULT);
}

/* The request of @b's stage, (re)built and sent now. */
static void send_stage(struct eng *e, struct bs *b, double now)
{
	struct objs *o = &e->o;
	uint8_t pkt[PKT_MAX];
	int len = -1;
	unsigned ul;
	const char *u = user(b, &ul);

	switch (b->st) {
	case ST_PING: len = (int)gf_ipmi_ping_encode((uint8_t)b->sends, pkt); break;
	case ST_OPEN:
		if (fill_rmcpplus_open_session(b->tag, b->open_priv, b->rc_id, b->auth, b->integ,
					       b->conf, o->open_rq) == 0)
			len = setup_pkt(e, IPMI_PAYLOAD_TYPE_RMCPPLUS_OPEN_SESSION_REQUEST,
					o->open_rq, pkt);
		break;
	case ST_RAKP1:
		if (fill_rmcpplus_rakp_message_1(b->tag, b->ms_id, b->rc_rand, sizeof(b->rc_rand),
						 b->priv, IPMI_NAME_ONLY_LOOKUP, u, ul,
						 o->rakp1) == 0)
			len = setup_pkt(e, IPMI_PAYLOAD_TYPE_RAKP_MESSAGE_1, o->rakp1, pkt);
		break;
	case ST_RAKP3: {
		uint8_t code[KEY_MAX];
		unsigned pwl;
		const char *pw = password(b, &pwl);
		int cl = ipmi_calculate_rakp_3_key_exchange_authentication_code(b->auth, pw, pwl,
										b->ms_rand,
										sizeof(b->ms_rand),
										b->rc_id,
										IPMI_NAME_ONLY_LOOKUP,
										b->priv, u, ul,
										code, sizeof(code));

		if (cl >= 0 &&
		    fill_rmcpplus_rakp_message_3(b->tag, RMCPPLUS_STATUS_NO_ERRORS, b->ms_id, code,
						 (unsigned)cl, o->rakp3) == 0)
			len = setup_pkt(e, IPMI_PAYLOAD_TYPE_RAKP_MESSAGE_3, o->rakp3, pkt);
		break;
	}
	case ST_SUITES:
		if (fill_cmd_get_channel_cipher_suites(IPMI_CHANNEL_NUMBER_CURRENT_CHANNEL,
						       IPMI_PAYLOAD_TYPE_IPMI, b->suite_index,
						       IPMI_LIST_ALGORITHMS_BY_CIPHER_SUITE,
						       o->suites_rq) == 0)
			len = session_pkt(e, b, IPMI_NET_FN_APP_RQ, o->suites_rq, pkt);
		break;
	case ST_PRIV:
		if (fill_cmd_set_session_privilege_level(b->priv, o->priv_rq) == 0)
			len = session_pkt(e, b, IPMI_NET_FN_APP_RQ, o->priv_rq, pkt);
		break;
	case ST_STATUS:
		if (fill_cmd_get_chassis_status(o->status_rq) == 0)
			len = session_pkt(e, b, IPMI_NET_FN_CHASSIS_RQ, o->status_rq, pkt);
		break;
	case ST_CLOSE:
		if (fill_cmd_close_session(b->ms_id, NULL, o->close_rq) == 0)
			len = session_pkt(e, b, IPMI_NET_FN_APP_RQ, o->close_rq, pkt);
		break;
	default: return;
	}
	send_pkt(e, b, pkt, len);
	b->sends++;
	b->next_send = now + (b->st == ST_PING ? e->interval : e->retransmit);
}

static void enter(struct eng *e, struct bs *b, enum stage st, double now)
{
	b->st = st;
	b->sends = 0;
	if (st >= ST_SUITES && st <= ST_CLOSE)
		b->rq_seq = (uint8_t)((b->rq_seq + 1) & IPMI_LAN_REQUESTER_SEQUENCE_NUMBER_MAX);
	send_stage(e, b, now);
}

/* @b takes a session slot and sends its Open Session. */
static void take_slot(struct eng *e, struct bs *b, double now)
{
	b->active = true;
	e->active++;
	enter(e, b, ST_OPEN, now);
}

/* Sessions waiting for a slot start, in order, while there is room. */
static void start_queued(struct eng *e, double now)
{
	for (size_t j = e->queued_from; j < e->n && e->active < e->fanout; j++)
		if (e->s[j].st == ST_QUEUED)
			take_slot(e, &e->s[j], now);
	while (e->queued_from < e->n && e->s[e->queued_from].st > ST_QUEUED)
		e->queued_from++;
}

/* Fresh ids, random number and tag for a login; false: no randomness. */
static bool login_ids(struct bs *b)
{
	if (getrandom(&b->rc_id, sizeof(b->rc_id), 0) != sizeof(b->rc_id) ||
	    getrandom(b->rc_rand, sizeof(b->rc_rand), 0) != sizeof(b->rc_rand) ||
	    getrandom(&b->tag, sizeof(b->tag), 0) != sizeof(b->tag))
		return false;
	b->rc_id |= 1; /* never 0 */
	b->ms_id = 0;
	b->seq = 0;
	return true;
}

/*
 * A session of the first window whose Open Session (sent in the ping's
 * place) is unanswered when it is due again: it gives up its slot and is
 * pinged, as every BMC past the first window is, and begins its login in
 * turn once it answers (a BMC that wants Get Channel Authentication
 * Capabilities first has had it then).
 */
static void probe_unanswered(struct eng *e, struct bs *b, double now)
{
	size_t j = (size_t)(b - e->s);

	b->probing = false;
	release_slot(e, b);
	/* Fresh ids: a late answer to this request is not taken for the next one's. */
	if (!login_ids(b)) {
		hand_back(e, b);
		return;
	}
	b->st = ST_PING;
	b->sends = 0;
	if (j < e->queued_from)
		e->queued_from = j;
	send_stage(e, b, now);
}

/*
 * The login went wrong where a lost datagram leads (a RAKP message sent
 * again after the BMC had moved on): begin it again, a few times; then
 * the backend's own session takes the node.
 */
static void restart(struct eng *e, struct bs *b, double now)
{
	if (b->restarts++ >= RESTARTS || !login_ids(b)) {
		hand_back(e, b);
		return;
	}
	enter(e, b, ST_OPEN, now);
}

/* ---- answers ------------------------------------------------------------------- */

/*
 * A setup answer of @type for @b (its message tag checked): 1 whole, 2 cut
 * short (an error answer may stop after its status), 0 not this one.
 */
static int setup_answer(struct eng *e, struct bs *b, const uint8_t *d, size_t n, uint8_t type,
			fiid_obj_t cmd)
{
	struct objs *o = &e->o;
	uint8_t got_type;
	int whole;

	if (ipmi_rmcpplus_calculate_payload_type(d, (unsigned)n, &got_type) < 0 || got_type != type)
		return 0;
	whole = unassemble_ipmi_rmcpplus_pkt(IPMI_AUTHENTICATION_ALGORITHM_RAKP_NONE,
					     IPMI_INTEGRITY_ALGORITHM_NONE,
					     IPMI_CONFIDENTIALITY_ALGORITHM_NONE, NULL, 0, NULL, 0,
					     d, (unsigned)n, o->rmcp, o->hdr, o->payload, o->lan_rs,
					     cmd, o->lan_trlr, o->trlr,
					     IPMI_INTERFACE_FLAGS_DEFAULT);
	if (whole < 0 || ipmi_rmcpplus_check_message_tag(cmd, b->tag) != 1)
		return 0;
	/* Every field there, as FreeIPMI wants it (ipmi_sim refuses a suite in two bytes). */
	return whole == 1 && fiid_obj_packet_valid(cmd) == 1 ? 1 : 2;
}

static uint64_t field(fiid_obj_t obj, const char *name)
{
	uint64_t v = 0;

	if (FIID_OBJ_GET(obj, name, &v) != 1)
		return UINT64_MAX;
	return v;
}

/*
 * Open Session refused: with a status (@definite), or in a malformed answer
 * (ipmi_sim's two bytes for a suite it lacks). Suite 17 of the default
 * falls back to 3, as the backend's session does; anything else is the
 * backend's session's to word.
 */
static void suite_refused(struct eng *e, struct bs *b, bool definite, double now)
{
	if (!b->may_fall_back || b->fell_back || b->restarts ||
	    ipmi_cipher_suite_id_to_algorithms(3, &b->auth, &b->integ, &b->conf) < 0 ||
	    !login_ids(b)) {
		hand_back(e, b);
		return;
	}
	b->fell_back = true;
	b->definite = definite;
	enter(e, b, ST_OPEN, now);
}

static void on_open(struct eng *e, struct bs *b, const uint8_t *d, size_t n, double now)
{
	fiid_obj_t rs = e->o.open_rs;
	int r = setup_answer(e, b, d, n, IPMI_PAYLOAD_TYPE_RMCPPLUS_OPEN_SESSION_RESPONSE, rs);

	if (r == 0)
		return; /* a late answer to the ping, or someone else's */
	b->probing = false;
	/*
	 * Refused or malformed (ipmi_sim answers a suite it lacks with two
	 * bytes): the backend's session words it, or falls back to suite 3.
	 */
	/* As FreeIPMI has it: a refusal is definite only in a whole answer. */
	if (r != 1 || field(rs, "rmcpplus_status_code") != RMCPPLUS_STATUS_NO_ERRORS) {
		suite_refused(e, b, r == 1, now);
		return;
	}
	if (ipmi_rmcpplus_check_remote_console_session_id(rs, b->rc_id) != 1 ||
	    field(rs, "authentication_payload.authentication_algorithm") != b->auth ||
	    field(rs, "integrity_payload.integrity_algorithm") != b->integ ||
	    field(rs, "confidentiality_payload.confidentiality_algorithm") != b->conf ||
	    field(rs, "managed_system_session_id") == UINT64_MAX ||
	    field(rs, "managed_system_session_id") == 0) {
		hand_back(e, b);
		return;
	}
	b->ms_id = (uint32_t)field(rs, "managed_system_session_id");
	enter(e, b, ST_RAKP1, now);
}

static void on_rakp2(struct eng *e, struct bs *b, const uint8_t *d, size_t n, double now)
{
	fiid_obj_t rs = e->o.rakp2;
	unsigned pwl, ul;
	const char *pw = password(b, &pwl), *u = user(b, &ul);
	uint64_t status;
	int r = setup_answer(e, b, d, n, IPMI_PAYLOAD_TYPE_RAKP_MESSAGE_2, rs);

	if (r == 0 || ipmi_rmcpplus_check_remote_console_session_id(rs, b->rc_id) != 1)
		return;
	status = field(rs, "rmcpplus_status_code");
	switch (status) {
	case RMCPPLUS_STATUS_NO_ERRORS:
		if (r != 1)
			return; /* cut short: not an answer to trust */
		break;
	case RMCPPLUS_STATUS_UNAUTHORIZED_NAME:
		login_failed(e, b, IPMI_ERR_USERNAME_INVALID, GF_EK_AUTH);
		return;
	case RMCPPLUS_STATUS_INVALID_ROLE:
	case RMCPPLUS_STATUS_UNAUTHORIZED_ROLE_OR_PRIVILEGE_LEVEL_REQUESTED:
		login_failed(e, b, IPMI_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED, GF_EK_AUTH);
		return;
	default: restart(e, b, now); return;
	}
	if (fiid_obj_get_data(rs, "managed_system_random_number", b->ms_rand, sizeof(b->ms_rand)) !=
		    (int)sizeof(b->ms_rand) ||
	    fiid_obj_get_data(rs, "managed_system_guid", b->ms_guid, sizeof(b->ms_guid)) !=
		    (int)sizeof(b->ms_guid))
		return;
	if (ipmi_rmcpplus_check_rakp_2_key_exchange_authentication_code(b->auth, pw, pwl, b->rc_id,
									b->ms_id, b->rc_rand,
									sizeof(b->rc_rand),
									b->ms_rand,
									sizeof(b->ms_rand),
									b->ms_guid,
									sizeof(b->ms_guid),
									IPMI_NAME_ONLY_LOOKUP,
									b->priv, u, ul, rs) != 1) {
		login_failed(e, b, IPMI_ERR_PASSWORD_INVALID, GF_EK_AUTH);
		return;
	}
	b->sikp = b->sik, b->ikp = b->ik, b->ckp = b->ck;
	b->sikl = b->ikl = b->ckl = KEY_MAX;
	if (ipmi_calculate_rmcpplus_session_keys(b->auth, b->integ, b->conf, pw, pwl, NULL, 0,
						 b->rc_rand, sizeof(b->rc_rand), b->ms_rand,
						 sizeof(b->ms_rand), IPMI_NAME_ONLY_LOOKUP, b->priv,
						 u, ul, &b->sikp, &b->sikl, &b->ikp, &b->ikl,
						 &b->ckp, &b->ckl) < 0) {
		hand_back(e, b);
		return;
	}
	enter(e, b, ST_RAKP3, now);
}

static void on_rakp4(struct eng *e, struct bs *b, const uint8_t *d, size_t n, double now)
{
	fiid_obj_t rs = e->o.rakp4;
	int r = setup_answer(e, b, d, n, IPMI_PAYLOAD_TYPE_RAKP_MESSAGE_4, rs);

	if (r == 0 || ipmi_rmcpplus_check_remote_console_session_id(rs, b->rc_id) != 1)
		return;
	if (r != 1 && field(rs, "rmcpplus_status_code") == RMCPPLUS_STATUS_NO_ERRORS)
		return; /* cut short: not an answer to trust */
	if (field(rs, "rmcpplus_status_code") == RMCPPLUS_STATUS_INVALID_INTEGRITY_CHECK_VALUE) {
		login_failed(e, b, IPMI_ERR_K_G_INVALID, GF_EK_AUTH);
		return;
	}
	if (field(rs, "rmcpplus_status_code") != RMCPPLUS_STATUS_NO_ERRORS) {
		restart(e, b, now);
		return;
	}
	if (ipmi_rmcpplus_check_rakp_4_integrity_check_value(b->auth, b->sikp, b->sikl, b->rc_rand,
							     sizeof(b->rc_rand), b->ms_id,
							     b->ms_guid, sizeof(b->ms_guid),
							     rs) != 1) {
		login_failed(e, b, IPMI_ERR_K_G_INVALID, GF_EK_AUTH);
		return;
	}
	if (b->fell_back && !b->definite) {
		b->suite_index = 0;
		b->suites_len = 0;
		enter(e, b, ST_SUITES, now); /* does the BMC's own list lack 17? */
		return;
	}
	if (b->fell_back)
		gf_ipmi_memo_set(b->t, true);
	enter(e, b, ST_STATUS, now);
}

/*
 * An answer in the session to the command of @b's stage (@netfn_rs, @cmd):
 * 1 with @rs filled and every check passed, 0 not this one.
 */
static int session_answer(struct eng *e, struct bs *b, const uint8_t *d, size_t n, uint8_t netfn_rs,
			  uint8_t cmd, fiid_obj_t rs)
{
	struct objs *o = &e->o;
	unsigned pwl;
	const char *pw = password(b, &pwl);
	uint8_t type;
	bool authed = b->integ != IPMI_INTEGRITY_ALGORITHM_NONE;
	bool sealed = b->conf != IPMI_CONFIDENTIALITY_ALGORITHM_NONE;

	if (ipmi_rmcpplus_calculate_payload_type(d, (unsigned)n, &type) < 0 ||
	    type != IPMI_PAYLOAD_TYPE_IPMI)
		return 0;
	if (unassemble_ipmi_rmcpplus_pkt(b->auth, b->integ, b->conf, b->ikp, b->ikl, b->ckp, b->ckl,
					 d, (unsigned)n, o->rmcp, o->hdr, o->payload, o->lan_rs, rs,
					 o->lan_trlr, o->trlr, IPMI_INTERFACE_FLAGS_DEFAULT) != 1)
		return 0;
	if (ipmi_rmcpplus_check_session_id(o->hdr, b->rc_id) != 1 ||
	    field(o->hdr, "payload_type.authenticated") != (authed ? 1 : 0) ||
	    field(o->hdr, "payload_type.encrypted") != (sealed ? 1 : 0))
		return 0;
	if (authed &&
	    (ipmi_rmcpplus_check_packet_session_authentication_code(b->integ, d, (unsigned)n,
								    b->ikp, b->ikl, pw, pwl,
								    o->trlr) != 1 ||
	     ipmi_rmcpplus_check_integrity_pad(o->trlr) != 1))
		return 0;
	if (sealed && ipmi_rmcpplus_check_payload_pad(b->conf, o->payload) != 1)
		return 0;
	if (ipmi_lan_check_rq_seq(o->lan_rs, b->rq_seq) != 1 ||
	    ipmi_lan_check_net_fn(o->lan_rs, netfn_rs) != 1 ||
	    ipmi_lan_check_checksum(o->lan_rs, rs, o->lan_trlr) != 1 || field(rs, "cmd") != cmd)
		return 0;
	return 1;
}

static void refused(struct eng *e, struct bs *b, const char *what, fiid_obj_t rs, uint8_t netfn,
		    uint64_t cc, double now)
{
	char text[IPMI_ERR_STR_MAX_LEN];
	struct gf_err err = {0};

	if (ipmi_completion_code_strerror_cmd_r(rs, netfn, text, sizeof(text)) < 0)
		snprintf(text, sizeof(text), "unknown completion code");
	gf_ipmi_lower(text, text, sizeof(text));
	gf_err_set(&err, GF_E_NODE, GF_EK_REFUSED,
		   "bmc '%s' refused %s (completion code 0x%02x: %s)", node_of(b), what,
		   (unsigned)cc, text);
	err.detail = (long)cc;
	fail(e, b, &err);
	enter(e, b, ST_CLOSE, now);
}

static void on_status(struct eng *e, struct bs *b, const uint8_t *d, size_t n, double now)
{
	fiid_obj_t rs = e->o.status_rs;
	uint64_t cc, on;
	struct gf_err err = {0};

	if (session_answer(e, b, d, n, IPMI_NET_FN_CHASSIS_RS, IPMI_CMD_GET_CHASSIS_STATUS, rs) !=
	    1)
		return;
	cc = field(rs, "comp_code");
	if (cc == IPMI_COMP_CODE_INSUFFICIENT_PRIVILEGE_LEVEL && !b->priv_tried) {
		b->priv_tried = true;
		enter(e, b, ST_PRIV, now);
		return;
	}
	if (cc != 0) {
		refused(e, b, "get chassis status", rs, IPMI_NET_FN_CHASSIS_RQ, cc, now);
		return;
	}
	on = field(rs, "current_power_state.power_is_on");
	if (on == UINT64_MAX) {
		gf_err_set(&err, GF_E_NODE, GF_EK_PROTOCOL,
			   "bmc '%s' sent a chassis status without the power state", node_of(b));
		fail(e, b, &err);
	} else {
		report(e, b, 0, on ? GF_POWER_ON : GF_POWER_OFF, NULL);
	}
	enter(e, b, ST_CLOSE, now);
}

/* Suite 3 stands only as gf_ipmi_fallback_verdict() says, @listed as lists_suite() has it. */
static void suites_read(struct eng *e, struct bs *b, int listed, double now)
{
	struct gf_err err = {0};

	switch (gf_ipmi_fallback_verdict(b->definite, listed)) {
	case GF_IPMI_FALLBACK_MEMO: gf_ipmi_memo_set(b->t, true); break;
	case GF_IPMI_FALLBACK_USE: break;
	case GF_IPMI_FALLBACK_REFUSE:
		gf_ipmi_fallback_refused(node_of(b), listed, &err);
		fail(e, b, &err);
		enter(e, b, ST_CLOSE, now);
		return;
	}
	enter(e, b, ST_STATUS, now);
}

static void on_suites(struct eng *e, struct bs *b, const uint8_t *d, size_t n, double now)
{
	fiid_obj_t rs = e->o.suites_rs;
	uint8_t ids[256];
	int got, k;

	if (session_answer(e, b, d, n, IPMI_NET_FN_APP_RS, IPMI_CMD_GET_CHANNEL_CIPHER_SUITES,
			   rs) != 1)
		return;
	if (field(rs, "comp_code") != 0) {
		suites_read(e, b, -1, now);
		return;
	}
	got = fiid_obj_get_data(rs, "cipher_suite_record_data", b->suites + b->suites_len, 16);
	if (got < 0) {
		suites_read(e, b, -1, now);
		return;
	}
	b->suites_len += (size_t)got;
	if (got == 16 && b->suite_index < 63) {
		b->suite_index++;
		enter(e, b, ST_SUITES, now);
		return;
	}
	k = gf_ipmi_cipher_records(b->suites, b->suites_len, ids, sizeof(ids));
	got = k < 0 ? -1 : 0;
	for (int i = 0; i < k; i++)
		if (ids[i] == 17)
			got = 1;
	suites_read(e, b, got, now);
}

static void on_priv(struct eng *e, struct bs *b, const uint8_t *d, size_t n, double now)
{
	fiid_obj_t rs = e->o.priv_rs;
	uint64_t cc;

	if (session_answer(e, b, d, n, IPMI_NET_FN_APP_RS, IPMI_CMD_SET_SESSION_PRIVILEGE_LEVEL,
			   rs) != 1)
		return;
	cc = field(rs, "comp_code");
	if (cc != 0) {
		refused(e, b, "set session privilege level", rs, IPMI_NET_FN_APP_RQ, cc, now);
		return;
	}
	enter(e, b, ST_STATUS, now);
}

static void on_close(struct eng *e, struct bs *b, const uint8_t *d, size_t n)
{
	if (session_answer(e, b, d, n, IPMI_NET_FN_APP_RS, IPMI_CMD_CLOSE_SESSION, e->o.close_rs) ==
	    1)
		finish(e, b);
}

static void on_datagram(struct eng *e, struct bs *b, const uint8_t *d, size_t n, double now)
{
	switch (b->st) {
	case ST_PING:
		/* Whatever came from its address and port: the session decides. */
		b->st = ST_QUEUED;
		start_queued(e, now);
		break;
	case ST_OPEN: on_open(e, b, d, n, now); break;
	case ST_RAKP1: on_rakp2(e, b, d, n, now); break;
	case ST_RAKP3: on_rakp4(e, b, d, n, now); break;
	case ST_SUITES: on_suites(e, b, d, n, now); break;
	case ST_PRIV: on_priv(e, b, d, n, now); break;
	case ST_STATUS: on_status(e, b, d, n, now); break;
	case ST_CLOSE: on_close(e, b, d, n); break;
	default: break;
	}
	if (b->st == ST_DONE)
		start_queued(e, now);
}

static struct bs *lookup(struct eng *e, const struct sockaddr_storage *sa)
{
	size_t lo = gf_ipmi_addr_lower(e->order, e->norder, sa);

	return lo < e->norder && gf_ipmi_addr_cmp(&e->order[lo].sa, sa) == 0 ? &e->s[e->order[lo].j]
									     : NULL;
}

static void receive(struct eng *e, int fd)
{
	for (int k = 0; k < RECV_BURST; k++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		uint8_t d[PKT_MAX];
		ssize_t got;
		struct bs *b;

		memset(&sa, 0, sizeof(sa));
		got = recvfrom(fd, d, sizeof(d), 0, (struct sockaddr *)&sa, &len);
		if (got < 0)
			break;
		gf_ipmi_addr_norm(&sa);
		b = lookup(e, &sa);
		if (b && b->st != ST_DONE)
			on_datagram(e, b, d, (size_t)got, gf_monotime());
	}
}

/* ---- timers -------------------------------------------------------------------- */

static void timed_out(struct eng *e, struct bs *b, double now)
{
	struct gf_err err = {0};
	double took = now - e->start;

	if (b->st == ST_PING || b->probing)
		gf_err_set(&err, GF_E_NODE, GF_EK_TIMEOUT,
			   "bmc '%s' at %s did not answer in %g s (no answer to the %s "
			   "sent at the start of the run; no session was opened)",
			   node_of(b), b->t->host,
			   (double)(long)((b->t->deadline - e->start) * 10 + 0.5) / 10,
			   b->probing ? "Open Session request" : "IPMI ping");
	else
		gf_err_set(&err, GF_E_NODE, GF_EK_TIMEOUT,
			   "bmc '%s' (%s) did not answer in %.1f s (session timeout)", node_of(b),
			   b->t->host, took);
	fail(e, b, &err);
	finish(e, b);
}

/* Resend what is due, time out what is late; the next time something is due. */
static double tick(struct eng *e, double now)
{
	double next = now + POLL_S;

	for (size_t j = 0; j < e->n; j++) {
		struct bs *b = &e->s[j];

		if (b->st == ST_DONE)
			continue;
		if (now >= b->t->deadline) {
			if (b->st == ST_SUITES) /* the list could not be read: no downgrade */
				suites_read(e, b, -1, now);
			if (b->st == ST_CLOSE)
				finish(e, b); /* already reported: the BMC drops it in time */
			else
				timed_out(e, b, now);
			continue;
		}
		if (b->st == ST_QUEUED)
			continue;
		if (now >= b->next_send) {
			if (b->probing) {
				probe_unanswered(e, b, now);
			} else if (b->st == ST_CLOSE && b->sends >= CLOSE_SENDS) {
				finish(e, b);
				continue;
			} else {
				send_stage(e, b, now);
			}
		}
		if (b->next_send < next)
			next = b->next_send;
		if (b->t->deadline < next)
			next = b->t->deadline;
	}
	start_queued(e, now);
	return next;
}

static void interrupted(struct eng *e, double now)
{
	struct gf_err err = {0};

	for (size_t j = 0; j < e->n; j++) {
		struct bs *b = &e->s[j];

		if (b->st == ST_DONE)
			continue;
		gf_err_clear(&err);
		gf_err_set(&err, GF_E_NODE, GF_EK_INTERNAL, "interrupted while node '%s' was read",
			   node_of(b));
		fail(e, b, &err);
		/* An open session is closed (one datagram, not waited for). */
		if (b->st >= ST_SUITES && b->st <= ST_CLOSE)
			enter(e, b, ST_CLOSE, now);
		finish(e, b);
	}
}

/* ---- the backend's entry points --------------------------------------------------- */

static bool suite_algorithms(int cipher, struct bs *b)
{
	return ipmi_cipher_suite_id_to_algorithms((uint8_t)cipher, &b->auth, &b->integ, &b->conf) ==
	       0;
}

/*
 * Set up @b for @t: false when it is not one this loop reads (IPMI 1.5, a
 * suite but 3 or 17, a workaround but opensesspriv, a name too long (the
 * session words that error), a host name) or it cannot be set up.
 */
static bool target_init(struct eng *e, struct bs *b, const struct gf_bmc_target *t)
{
	const struct gf_profile *p = t->prof;
	struct gf_ipmi_profile ip;
	bool memo;

	b->t = t;
	if (!p || p->ipmi_v15 || gf_ipmi_profile_parse(p, &ip, NULL) < 0 ||
	    (ip.workaround_flags &
	     ~(unsigned)IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE) ||
	    (p->bmc_user && strlen(p->bmc_user) > IPMI_MAX_USER_NAME_LENGTH) ||
	    (p->bmc_password && strlen(p->bmc_password) > IPMI_2_0_MAX_PASSWORD_LENGTH))
		return false;
	memo = ip.cipher_suite < 0 && gf_ipmi_memo_fallback(t);
	if (ip.cipher_suite != 3 && ip.cipher_suite != 17 && ip.cipher_suite >= 0)
		return false;
	if (!suite_algorithms(ip.cipher_suite >= 0 ? ip.cipher_suite
			      : memo               ? 3
						   : 17,
			      b) ||
	    !gf_ipmi_numeric_addr(t, &b->sa, &b->salen))
		return false;
	b->fam = b->sa.ss_family == AF_INET ? 0 : 1;
	if (e->fd[b->fam] < 0)
		e->fd[b->fam] = gf_ipmi_udp_socket(b->sa.ss_family);
	if (e->fd[b->fam] < 0 || !login_ids(b))
		return false;
	b->priv = ip.privilege;
	b->may_fall_back = ip.cipher_suite < 0 && !memo;
	b->open_priv = ip.workaround_flags &
				       IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE
			       ? ip.privilege
			       : IPMI_PRIVILEGE_LEVEL_HIGHEST_LEVEL;
	b->st = ST_PING;
	return true;
}

/*
 * Set up @e for @t[0..n-1]: false when one of them is not for this loop
 * (then it reads none). Targets that share an address are handed back.
 */
static bool eng_init(struct eng *e, const struct gf_bmc_target *t, size_t n)
{
	size_t k = 0;

	e->s = gf_xcalloc(n ? n : 1, sizeof(*e->s));
	e->order = gf_xcalloc(n ? n : 1, sizeof(*e->order));
	e->fd[0] = e->fd[1] = -1;
	if (!objs_make(&e->o))
		return false;
	for (size_t j = 0; j < n; j++) {
		if (!target_init(e, &e->s[j], &t[j]))
			return false;
		e->order[k++] = (struct gf_ipmi_addr_entry){.sa = e->s[j].sa, .j = j};
	}
	gf_sort(e->order, k, sizeof(*e->order), gf_ipmi_addr_entry_cmp);
	/* Two targets at one address could not tell their answers apart. */
	for (size_t a = 0; a < k;) {
		size_t z = a + 1;

		while (z < k && gf_ipmi_addr_cmp(&e->order[a].sa, &e->order[z].sa) == 0)
			z++;
		if (z - a > 1)
			for (size_t m = a; m < z; m++)
				e->s[e->order[m].j].st = ST_DONE;
		a = z;
	}
	e->norder = 0;
	for (size_t a = 0; a < k; a++)
		if (e->s[e->order[a].j].st == ST_PING)
			e->order[e->norder++] = e->order[a];
	return true;
}

void gf_ipmi_power_get_many(const struct gf_bmc_target *t, size_t n, unsigned fanout,
			    gf_power_done done, void *ud)
{
	struct eng e = {
		.n = n,
		.fanout = fanout ? fanout : 1,
		.cancel = n ? t[0].cancel : NULL,
		.done = done,
		.ud = ud,
	};
	double now, end = 0, due = 0;

	/* One target not for this loop, or no crypto: none is read, nothing sent. */
	if (!eng_init(&e, t, n) || !gf_ipmi_crypt_ready())
		goto out;
	e.start = gf_monotime();
	for (size_t j = 0; j < n; j++) {
		struct bs *b = &e.s[j];

		if (b->st != ST_PING) { /* it shares its address */
			report(&e, b, GF_POWER_AGAIN, GF_POWER_UNKNOWN, NULL);
			continue;
		}
		e.left++;
		if (t[j].deadline > end)
			end = t[j].deadline;
	}
	e.interval = gf_ipmi_ping_interval(end - e.start);
	e.retransmit = (end - e.start) / 10;
	if (e.retransmit < RETRANSMIT_MIN_S)
		e.retransmit = RETRANSMIT_MIN_S;
	if (e.retransmit > RETRANSMIT_MAX_S)
		e.retransmit = RETRANSMIT_MAX_S;
	now = e.start;
	/*
	 * The first window's Open Session is its ping: a live BMC answers it
	 * with its session, one round trip sooner. Past the first window, and
	 * for a BMC that leaves it unanswered, the ping finds who is there.
	 */
	for (size_t j = 0; j < n; j++) {
		struct bs *b = &e.s[j];

		if (b->st != ST_PING)
			continue;
		if (e.active < e.fanout) {
			b->probing = true;
			take_slot(&e, b, now);
		} else {
			send_stage(&e, b, now);
		}
	}
	while (e.left) {
		struct pollfd fds[2];
		nfds_t nfds = 0;
		double next;

		now = gf_monotime();
		if (e.cancel && *e.cancel) {
			interrupted(&e, now);
			break;
		}
		/*
		 * The scan of every session only when something is due: an answer
		 * moves its own session on at once, so at 2,000 BMCs the loop does
		 * not walk them all for every datagram.
		 */
		if (now >= due)
			due = tick(&e, now);
		next = due;
		if (!e.left)
			break;
		for (int f = 0; f < 2; f++)
			if (e.fd[f] >= 0)
				fds[nfds++] = (struct pollfd){.fd = e.fd[f], .events = POLLIN};
		if (poll(fds, nfds, gf_deadline_ms(next)) < 0 && errno != EINTR)
			break;
		for (nfds_t f = 0; f < nfds; f++)
			if (fds[f].revents & POLLIN)
				receive(&e, fds[f].fd);
	}
	for (size_t j = 0; j < n; j++)
		if (e.s[j].st != ST_DONE && !e.s[j].reported) {
			struct gf_err err = {0};

			gf_err_set(&err, GF_E_IO, GF_EK_INTERNAL, "bmc '%s': the event loop failed",
				   node_of(&e.s[j]));
			fail(&e, &e.s[j], &err);
		}
out:
	for (int f = 0; f < 2; f++)
		if (e.fd[f] >= 0)
			close(e.fd[f]);
	for (size_t j = 0; j < n; j++) {
		explicit_bzero(e.s[j].sik, sizeof(e.s[j].sik));
		explicit_bzero(e.s[j].ik, sizeof(e.s[j].ik));
		explicit_bzero(e.s[j].ck, sizeof(e.s[j].ck));
	}
	objs_free(&e.o);
	free(e.order);
	free(e.s);
}

/* ---- for the fuzzer ------------------------------------------------------------- */

static void feed_done(void *ud, size_t j, int rc, enum gf_power p, const struct gf_err *err)
{
	(void)ud, (void)j, (void)p;
	if (rc < 0 && (!err || !err->msg[0]))
		abort(); /* a failure always says why */
}

void gf_ipmi_batch_feed(const uint8_t *d, size_t n)
{
	char u[] = "admin", pw[] = "fuzz-password";
	struct gf_profile prof = {.bmc_user = u, .bmc_password = pw};
	struct gf_bmc_target t = {.node = "fuzz", .host = "127.0.0.1", .prof = &prof};
	struct eng e = {.n = 1, .fanout = 1, .done = feed_done, .fd = {-1, -1}};
	struct bs b;

	if (n == 0 || !gf_ipmi_crypt_ready() || !objs_make(&e.o)) {
		objs_free(&e.o);
		return;
	}
	e.s = &b;
	e.retransmit = e.interval = 1.0;
	t.deadline = gf_monotime() + 60;
	/* The answer in every stage; the first byte picks the suite, the tag and the fallback. */
	for (enum stage st = ST_PING; st < ST_DONE; st++) {
		memset(&b, 0, sizeof(b));
		b.t = &t;
		if (!suite_algorithms(d[0] & 1 ? 17 : 3, &b))
			break;
		b.st = st;
		b.active = true;
		e.active = 1;
		e.left = 1;
		e.queued_from = 0;
		b.tag = d[0];
		b.rc_id = 0x01020304;
		b.ms_id = 0x0a0b0c0d;
		b.priv = IPMI_PRIVILEGE_LEVEL_ADMIN;
		b.may_fall_back = d[0] & 2;
		b.fell_back = d[0] & 4;
		b.probing = st == ST_OPEN && (d[0] & 8);
		memset(b.rc_rand, 0x5a, sizeof(b.rc_rand));
		memset(b.ms_rand, 0xa5, sizeof(b.ms_rand));
		memset(b.ik, 0x11, sizeof(b.ik));
		memset(b.ck, 0x22, sizeof(b.ck));
		memset(b.sik, 0x33, sizeof(b.sik));
		b.sikp = b.sik, b.ikp = b.ik, b.ckp = b.ck;
		b.sikl = 20;
		b.ikl = b.integ == IPMI_INTEGRITY_ALGORITHM_HMAC_SHA256_128 ? 32 : 20;
		b.ckl = 16;
		on_datagram(&e, &b, d + 1, n - 1, gf_monotime());
		if (b.st == ST_SUITES)
			on_datagram(&e, &b, d + 1, n - 1, gf_monotime());
	}
	objs_free(&e.o);
}
