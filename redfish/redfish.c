/*
 * The Redfish backend table: a session is one HTTPS connection, one
 * X-Auth-Token (Basic where the BMC has no SessionService, or where the verb
 * reads once or twice: struct gf_bmc_opts' few_reads), deleted on close
 * whatever happened before; the walkers in the other files do the rest.
 */
#include "redfish/redfish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/util.h"
#include "redfish/http.h"
#include "redfish/rf.h"
#include "redfish/update.h"

/*
 * Time granted to delete the session, even after the node's deadline: under
 * a second, so that no worker outlives its node's deadline by more.
 */
#define CLEANUP_S 0.8
#define PROBE_S 3.0

struct rf_session {
	struct rf_http *http;
	struct rf_client client;
	char *node;
	char *sessions;   /* the Sessions collection, to log in again */
	char *session;    /* our session's URI, to delete */
	const char *user; /* borrowed from the profile */
	const char *password;
	bool relogged;
	bool basic_by_choice; /* few reads: Basic though a session could be made */
	double deadline;      /* the node's, monotonic */
	double req_timeout;   /* > 0: each request bounded by this too */
	const gf_cancel_flag *cancel;
	struct rf_upd_memo memo; /* from a push to the reset after it */
};

static int login(struct rf_session *s, struct gf_err *err);
static void rf_close(void *vs);

/* The deadline of the next request: the node's, or sooner with a request timeout. */
static void arm(struct rf_session *s)
{
	double t = gf_monotime() + s->req_timeout;

	if (s->req_timeout > 0)
		rf_http_set_deadline(s->http, t < s->deadline ? t : s->deadline);
}

/*
 * A request with credentials; a token that expired meanwhile is renewed
 * once, and Basic chosen for a few reads that the BMC refuses without
 * offering it (it takes sessions only) becomes a login. A 401 that offers
 * Basic refused these credentials: one failed login, as with a session.
 */
static int request(struct rf_session *s, const char *method, const char *path, const char *body,
		   const char *if_match, struct rf_resp *r, struct gf_err *err)
{
	int rc;

	arm(s);
	rc = rf_http_request(s->http, method, path, body, if_match, r, err);

	if (rc < 0 || r->status != 401)
		return rc;
	if (s->session && !s->relogged) {
		s->relogged = true;
		free(s->session); /* the BMC dropped it already */
		s->session = NULL;
	} else if (s->basic_by_choice && !r->basic_offered) {
		s->basic_by_choice = false;
	} else {
		return rc;
	}
	rf_resp_release(r);
	rc = login(s, err);
	if (rc == 0)
		rc = rf_http_request(s->http, method, path, body, if_match, r, err);
	return rc;
}

static int parse_object(struct rf_session *s, const char *path, const struct rf_resp *r,
			json_t **ret, struct gf_err *err)
{
	json_error_t je;
	json_t *doc = rf_json_parse(r->body.s, r->body.len, 0, &je);

	if (!doc)
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' sent JSON that does not parse for '%s' (%s, at byte %d)",
				  s->node, path, je.text, je.position);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' sent something that is not a JSON object for '%s'",
				  s->node, path);
	}
	*ret = doc;
	return 0;
}

static int io_get(void *ud, const char *path, json_t **ret, char **ret_etag, struct gf_err *err)
{
	struct rf_session *s = ud;
	struct rf_resp r = {0};
	int rc = request(s, "GET", path, NULL, NULL, &r, err);

	if (rc < 0)
		return rc;
	if (r.status < 200 || r.status > 299)
		rc = rf_http_status_err(s->http, "GET", path, &r, err);
	else
		rc = parse_object(s, path, &r, ret, err);
	if (rc == 0 && ret_etag) {
		*ret_etag = r.etag;
		r.etag = NULL;
	}
	rf_resp_release(&r);
	return rc;
}

static int io_send(void *ud, const char *method, const char *path, const json_t *body,
		   const char *if_match, struct gf_err *err)
{
	struct rf_session *s = ud;
	struct rf_resp r = {0};
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int rc = request(s, method, path, text, if_match, &r, err);

	free(text);
	if (rc == 0 && (r.status < 200 || r.status > 299))
		rc = rf_http_status_err(s->http, method, path, &r, err);
	rf_resp_release(&r);
	return rc;
}

static int io_get_bytes(void *ud, const char *path, size_t max, struct gf_buf *ret,
			struct gf_err *err)
{
	struct rf_session *s = ud;
	struct rf_resp r = {0};
	size_t old = rf_http_set_max_body(s->http, max);
	int rc = request(s, "GET", path, NULL, NULL, &r, err);

	rf_http_set_max_body(s->http, old);
	if (rc == 0 && (r.status < 200 || r.status > 299))
		rc = rf_http_status_err(s->http, "GET", path, &r, err);
	if (rc == 0) {
		*ret = r.body;
		gf_buf_init(&r.body);
	}
	rf_resp_release(&r);
	return rc;
}

static const struct rf_io http_io = {io_get, io_send, io_get_bytes};

/*
 * POST the credentials to SessionService/Sessions; the token comes back in
 * X-Auth-Token. No session service (404, 405, 501), or one that cannot take
 * us now (503 SessionLimitExceeded): Basic on every request instead.
 */
static int login(struct rf_session *s, struct gf_err *err)
{
	struct rf_resp r = {0};
	json_t *creds, *doc = NULL;
	const gf_cancel_flag *cancel;
	char *text;
	int rc;

	rf_http_set_token(s->http, NULL);
	if (!s->sessions) {
		rf_http_set_basic(s->http, s->user, s->password);
		return 0;
	}
	creds = json_pack("{s:s,s:s}", "UserName", s->user, "Password",
			  s->password ? s->password : "");
	text = creds ? json_dumps(creds, JSON_COMPACT) : NULL;
	json_decref(creds); /* jansson keeps no copy we could zero; the dump is ours */
	if (!text)
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				  "the user or password for bmc '%s' is not valid UTF-8", s->node);
	/*
	 * Not cut short by Ctrl-C: a session the BMC made but whose token we
	 * never read could not be deleted. The deadline still bounds it.
	 */
	cancel = rf_http_set_cancel(s->http, NULL);
	rf_http_auth(s->http, false);
	arm(s);
	rc = rf_http_request(s->http, "POST", s->sessions, text, NULL, &r, err);
	rf_http_auth(s->http, true);
	rf_http_set_cancel(s->http, cancel);
	gf_free_secret(text);
	if (rc < 0)
		return rc;
	if (r.status >= 200 && r.status <= 299 && r.token && *r.token) {
		rf_http_set_token(s->http, r.token);
		free(s->session);
		s->session = NULL;
		if (r.location && *r.location)
			s->session = gf_xstrdup(r.location);
		else if (parse_object(s, s->sessions, &r, &doc, NULL) == 0 && rf_odata_id(doc))
			s->session = gf_xstrdup(rf_odata_id(doc));
		json_decref(doc);
		rf_resp_release(&r);
		return 0;
	}
	if (r.status == 401 || r.status == 403) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				"bmc '%s' rejected the login of user '%s' (HTTP %ld%s)", s->node,
				s->user, r.status,
				rf_http_password_change_required(&r) ? " PasswordChangeRequired: "
								       "change the password first"
								     : "");
		if (err)
			err->detail = r.status;
		rf_resp_release(&r);
		return rc;
	}
	/* Anything else: the sessions are not for us; Basic still may be. */
	free(s->sessions);
	s->sessions = NULL;
	rf_http_set_basic(s->http, s->user, s->password);
	/* A session made without a token we could read is still deleted at the end (with Basic). */
	if (r.status >= 200 && r.status <= 299 && r.location && *r.location) {
		free(s->session);
		s->session = gf_xstrdup(r.location);
	}
	rf_resp_release(&r);
	return 0;
}

static void session_free(struct rf_session *s)
{
	if (!s)
		return;
	rf_client_release(&s->client);
	rf_upd_memo_release(&s->memo);
	rf_http_free(s->http);
	free(s->node);
	free(s->sessions);
	free(s->session);
	free(s);
}

/*
 * Will the verb's reads be one or two requests (and the profile does not
 * ask for a session: redfish_auth = session)? Only where the root offers
 * $expand: without it a collection is read member by member, and a BMC
 * that checks a password per request (PAM on OpenBMC) is faster with a
 * session.
 */
static bool few_reads(const struct gf_bmc_target *t, const struct rf_client *c)
{
	if (!t->opts || !t->opts->few_reads || (t->prof && t->prof->redfish_sessions))
		return false;
	return c->expand[0] != '\0';
}

static int rf_open(const struct gf_bmc_target *t, void **ret, struct gf_err *err)
{
	struct rf_http_opts o = {
		.node = t->node,
		.host = t->host,
		.port = t->port,
		.deadline = t->deadline,
		.cacert = t->cacert ? t->cacert : (t->prof ? t->prof->redfish_cacert : NULL),
		.insecure = t->insecure,
		.pin = t->tls_pin,
		.pin_new = t->tls_pin_new,
		.cancel = t->cancel,
	};
	struct rf_session *s;
	struct rf_resp r = {0};
	json_t *root = NULL;
	const char *sessions;
	int rc;

	if (!t->prof || !t->prof->bmc_user || !*t->prof->bmc_user)
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				  "no BMC user for node '%s' (set bmc_user in profile '%s')",
				  t->node, t->prof && t->prof->name ? t->prof->name : "default");
	s = gf_xcalloc(1, sizeof(*s));
	s->node = gf_xstrdup(t->node ? t->node : t->host);
	s->user = t->prof->bmc_user;
	s->password = t->prof->bmc_password;
	s->deadline = t->deadline;
	s->req_timeout = t->opts ? t->opts->request_timeout : 0;
	s->cancel = t->cancel;
	rc = rf_http_new(&o, &s->http, err);
	if (rc < 0)
		goto fail;
	arm(s);

	/* The service root needs no credentials: the certificate is checked before any are sent. */
	rf_http_auth(s->http, false);
	rc = rf_http_request(s->http, "GET", "/redfish/v1", NULL, NULL, &r, err);
	rf_http_auth(s->http, true);
	if (rc < 0)
		goto fail;
	if (r.status == 401 || r.status == 403) {
		/* A BMC that hides even its root: log in the old way, then read it. */
		rf_resp_release(&r);
		s->sessions = gf_xstrdup("/redfish/v1/SessionService/Sessions");
		if ((rc = login(s, err)) < 0 ||
		    (rc = request(s, "GET", "/redfish/v1", NULL, NULL, &r, err)) < 0)
			goto fail;
	}
	if (r.status < 200 || r.status > 299) {
		rc = rf_http_status_err(s->http, "GET", "/redfish/v1", &r, err);
		if (err && r.status == 404)
			err->kind = GF_EK_PROTOCOL;
		goto fail;
	}
	rc = parse_object(s, "/redfish/v1", &r, &root, err);
	if (rc < 0)
		goto fail;
	rf_resp_release(&r);
	rf_client_setup(&s->client, &http_io, s, s->node, root);
	s->client.log_name = t->opts ? t->opts->log_name : NULL;
	if (!s->sessions) {
		sessions = rf_odata_id(rf_obj(rf_obj(root, "Links"), "Sessions"));
		if (!sessions && rf_link(root, "SessionService"))
			sessions = "/redfish/v1/SessionService/Sessions";
		s->sessions = sessions ? gf_xstrdup(sessions) : NULL;
		if (s->sessions && few_reads(t, &s->client)) {
			/* The login and the logout would cost more round trips than the reads. */
			s->basic_by_choice = true;
			rf_http_set_basic(s->http, s->user, s->password);
		} else if ((rc = login(s, err)) < 0) {
			goto fail;
		}
	}
	json_decref(root);
	*ret = s;
	return 0;
fail:
	json_decref(root);
	rf_resp_release(&r);
	/* A login may have succeeded before the failure: its session is deleted too. */
	rf_close(s);
	return rc;
}

static void rf_close(void *vs)
{
	struct rf_session *s = vs;
	struct rf_resp r = {0};

	if (!s)
		return;
	if (s->session) {
		/* Even after Ctrl-C or a missed deadline: a leaked session holds a BMC slot. */
		rf_http_cleanup_mode(s->http, CLEANUP_S);
		if (rf_http_request(s->http, "DELETE", s->session, NULL, NULL, &r, NULL) == 0)
			rf_resp_release(&r);
	}
	session_free(s);
}

struct rf_client *rf_session_client(void *session)
{
	return &((struct rf_session *)session)->client;
}

struct rf_http *rf_session_http(void *session)
{
	return ((struct rf_session *)session)->http;
}

static const char *rf_fingerprint_op(void *vs)
{
	struct rf_session *s = vs;

	return s && s->http ? rf_http_fingerprint(s->http) : NULL;
}

static int rf_console_ssh_op(void *vs, int *ret, struct gf_err *err)
{
	return rf_console_ssh(&((struct rf_session *)vs)->client, ret, err);
}

static int rf_power_get_op(void *vs, enum gf_power *ret, struct gf_err *err)
{
	return rf_power_get(&((struct rf_session *)vs)->client, ret, err);
}

static int rf_power_set_op(void *vs, enum gf_power_op op, struct gf_err *err)
{
	return rf_power_set(&((struct rf_session *)vs)->client, op, err);
}

static int rf_boot_get_op(void *vs, struct gf_boot *ret, struct gf_err *err)
{
	return rf_boot_get(&((struct rf_session *)vs)->client, ret, err);
}

static int rf_boot_set_op(void *vs, const struct gf_boot *want, struct gf_err *err)
{
	return rf_boot_set(&((struct rf_session *)vs)->client, want, err);
}

static int rf_sensors_op(void *vs, struct gf_sensor_list *ret, struct gf_err *err)
{
	return rf_sensors(&((struct rf_session *)vs)->client, ret, err);
}

static int rf_sel_list_op(void *vs, struct gf_sel_list *ret, struct gf_err *err)
{
	return rf_sel_list(&((struct rf_session *)vs)->client, ret, err);
}

static int rf_sel_clear_op(void *vs, struct gf_err *err)
{
	return rf_sel_clear(&((struct rf_session *)vs)->client, err);
}

static int rf_firmware_op(void *vs, struct gf_component_list *ret, struct gf_err *err)
{
	return rf_firmware(&((struct rf_session *)vs)->client, ret, err);
}

static int rf_hardware_op(void *vs, struct gf_hardware *ret, struct gf_err *err)
{
	return rf_hardware(&((struct rf_session *)vs)->client, ret, err);
}

/* ---- firmware updates: update.c, over the session's raw requests ---- */

static int upd_request(void *ud, const char *method, const char *path, const char *body,
		       const struct rf_body *image, double until, struct rf_resp *ret,
		       struct gf_err *err)
{
	struct rf_session *s = ud;
	int rc;

	rf_http_set_deadline(s->http, until < s->deadline ? until : s->deadline);
	if (image)
		rc = rf_http_request_body(s->http, method, path, image, ret, err);
	else
		rc = rf_http_request(s->http, method, path, body, NULL, ret, err);
	rf_http_set_deadline(s->http, s->deadline);
	return rc;
}

static int upd_login(void *ud, double until, struct gf_err *err)
{
	struct rf_session *s = ud;
	double keep = s->req_timeout;
	int rc;

	/* The BMC forgot the old session: nothing to delete, and a new one to make. */
	free(s->session);
	s->session = NULL;
	s->relogged = false;
	s->req_timeout = until - gf_monotime();
	if (s->req_timeout <= 0.001)
		s->req_timeout = 0.001;
	rc = login(s, err);
	s->req_timeout = keep;
	return rc;
}

/* What gpufleet set on the BMC is put back even after Ctrl-C or the deadline: a few seconds. */
#define PUT_BACK_S 5.0

static void upd_cleanup(void *ud)
{
	struct rf_session *s = ud;

	if (s->deadline < gf_monotime() + PUT_BACK_S)
		s->deadline = gf_monotime() + PUT_BACK_S;
	rf_http_cleanup_mode(s->http, PUT_BACK_S);
	s->cancel = NULL;
}

static struct rf_upd upd_of(struct rf_session *s)
{
	return (struct rf_upd){
		.c = &s->client,
		.ud = s,
		.request = upd_request,
		.login = upd_login,
		.request_timeout = s->req_timeout,
		.cancel = s->cancel,
		.memo = &s->memo,
		.cleanup = upd_cleanup,
	};
}

static int rf_fw_caps_op(void *vs, struct gf_fw_caps *ret, struct gf_err *err)
{
	struct rf_upd u = upd_of(vs);

	return rf_update_caps(&u, ret, err);
}

static int rf_fw_push_op(void *vs, const struct gf_fw_push *p, struct gf_fw_task *ret,
			 struct gf_err *err)
{
	struct rf_upd u = upd_of(vs);

	return rf_update_push(&u, p, ret, err);
}

static int rf_fw_tasks_wait_op(void *vs, double deadline, struct gf_err *err)
{
	struct rf_upd u = upd_of(vs);

	return rf_update_tasks_wait(&u, deadline, err);
}

static int rf_fw_tasks_since_op(void *vs, double since, struct gf_fw_tasks_seen *ret,
				struct gf_err *err)
{
	struct rf_upd u = upd_of(vs);

	return rf_update_tasks_since(&u, since, ret, err);
}

static int rf_fw_push_release_op(void *vs, const char *const *targets, size_t ntargets,
				 bool *ret_cleared, struct gf_err *err)
{
	struct rf_upd u = upd_of(vs);

	return rf_update_push_release(&u, targets, ntargets, ret_cleared, err);
}

static int rf_bmc_reset_op(void *vs, double deadline, struct gf_err *err)
{
	struct rf_upd u = upd_of(vs);

	return rf_update_bmc_reset(&u, deadline, err);
}

static int rf_bmc_wait_op(void *vs, double deadline, struct gf_err *err)
{
	struct rf_upd u = upd_of(vs);

	return rf_update_bmc_wait(&u, deadline, false, err);
}

static int rf_bios_get_op(void *vs, bool with_registry, struct gf_bios *ret, struct gf_err *err)
{
	return rf_bios_get(&((struct rf_session *)vs)->client, with_registry, ret, err);
}

static int rf_bios_set_op(void *vs, const json_t *values, enum gf_bios_apply when,
			  struct gf_err *err)
{
	return rf_bios_set(&((struct rf_session *)vs)->client, values, when, err);
}

static int rf_probe_op(const struct gf_bmc_target *t, double timeout)
{
	struct rf_http_opts o = {
		.node = t->node,
		.host = t->host,
		.port = t->port,
		.verify_none = true,
		.cancel = t->cancel,
		.max_body = 1u << 20,
	};
	struct rf_http *h = NULL;
	struct rf_resp r = {0};
	json_t *doc;
	int yes = 0;

	o.deadline = gf_monotime() + (timeout > 0 ? timeout : PROBE_S);
	if (t->deadline > 0 && t->deadline < o.deadline)
		o.deadline = t->deadline;
	if (rf_http_new(&o, &h, NULL) < 0)
		return 0;
	rf_http_auth(h, false);
	if (rf_http_request(h, "GET", "/redfish/v1", NULL, NULL, &r, NULL) == 0) {
		if (r.status == 401 || r.status == 403) {
			yes = 1; /* a service that guards even its root */
		} else if (r.status >= 200 && r.status <= 299) {
			doc = rf_json_parse(r.body.s, r.body.len, 0, NULL);
			yes = rf_str(doc, "RedfishVersion") || rf_odata_id(doc);
			json_decref(doc);
		}
	}
	rf_resp_release(&r);
	rf_http_free(h);
	return yes;
}

static int rf_peek_fingerprint_op(const struct gf_bmc_target *t, char *ret, struct gf_err *err)
{
	struct rf_http_opts o = {
		.node = t->node,
		.host = t->host,
		.port = t->port,
		.deadline = t->deadline,
		.insecure = true,
		.cancel = t->cancel,
		.max_body = 1u << 20,
	};
	struct rf_http *h = NULL;
	struct rf_resp r = {0};
	const char *fp;
	int rc = rf_http_new(&o, &h, err);

	if (rc < 0)
		return rc;
	rf_http_auth(h, false);
	rc = rf_http_request(h, "GET", "/redfish/v1", NULL, NULL, &r, err);
	rf_resp_release(&r);
	fp = rf_http_fingerprint(h);
	if (rc == 0 && !fp)
		rc = gf_err_set(err, GF_E_NODE, GF_EK_TLS,
				"bmc '%s' showed no certificate that could be read", t->node);
	if (rc == 0)
		snprintf(ret, GF_BMC_FP_SIZE, "%s", fp);
	rf_http_free(h);
	return rc;
}

const struct gf_backend gf_redfish_backend = {
	.name = "redfish",
	.title = "Redfish",
	.lists_gpus = true,
	.probe = rf_probe_op,
	.fingerprint = rf_fingerprint_op,
	.peek_fingerprint = rf_peek_fingerprint_op,
	.open = rf_open,
	.close = rf_close,
	.close_later = true,
	.power_get = rf_power_get_op,
	.power_set = rf_power_set_op,
	.boot_get = rf_boot_get_op,
	.boot_set = rf_boot_set_op,
	.sensors = rf_sensors_op,
	.sel_list = rf_sel_list_op,
	.sel_clear = rf_sel_clear_op,
	.firmware = rf_firmware_op,
	.hardware = rf_hardware_op,
	.fw_caps = rf_fw_caps_op,
	.fw_push = rf_fw_push_op,
	.fw_tasks_wait = rf_fw_tasks_wait_op,
	.fw_tasks_since = rf_fw_tasks_since_op,
	.fw_push_release = rf_fw_push_release_op,
	.bmc_reset = rf_bmc_reset_op,
	.bmc_wait = rf_bmc_wait_op,
	.bios_get = rf_bios_get_op,
	.bios_set = rf_bios_set_op,
	.console_ssh = rf_console_ssh_op,
};
