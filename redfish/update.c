/*
 * Firmware updates over Redfish, as BMCs behave: a push answered 409 or 503
 * is tried again later; a task is New before it runs, and its monitor may be
 * purged (404) once it ended, which is not a failure (reading the inventory
 * back decides); a BMC that restarts refuses connections, then answers 503,
 * and forgets every session.
 */
#include "redfish/update.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "lib/buf.h"
#include "lib/compkey.h"
#include "lib/digest.h"
#include "lib/util.h"

#define POLL_S 0.5       /* between looks at a task */
#define BACK_POLL_S 1.0  /* between looks at a restarting BMC */
#define BUSY_FIRST_S 2.0 /* first wait after a 409/503 to a push, doubled up to BUSY_MAX_S */
#define BUSY_MAX_S 15.0
#define IMAGE_MAX (1024u * 1024 * 1024)

static double min2(double a, double b)
{
	return a < b ? a : b;
}

static bool cancelled(const struct rf_upd *u)
{
	return u->cancel && *u->cancel;
}

void rf_upd_memo_release(struct rf_upd_memo *m)
{
	free(m->reset_target);
	free(m->reset_type);
	free(m->component);
	json_decref(m->svc);
	*m = (struct rf_upd_memo){0};
}

/*
 * A certificate refused or changed: no wait cures it. A handshake cut
 * short (a BMC restarting resets connections) is not one.
 */
static bool cert_refused(const struct gf_err *e)
{
	return e->kind == GF_EK_TLS && e->detail != CURLE_SSL_CONNECT_ERROR;
}

/* An error that no wait cures: a link to another host, a refused or changed certificate. */
static bool hopeless(const struct gf_err *e)
{
	return e->kind == GF_EK_PROTOCOL || cert_refused(e);
}

/* A request that logs in again once when the token was dropped meanwhile. */
static int req(struct rf_upd *u, const char *method, const char *path, const char *body,
	       const struct rf_body *image, double until, struct rf_resp *r, struct gf_err *err)
{
	int rc = u->request(u->ud, method, path, body, image, until, r, err);

	if (rc == 0 && r->status == 401) {
		rf_resp_release(r);
		rc = u->login(u->ud, until, err);
		if (rc == 0)
			rc = u->request(u->ud, method, path, body, image, until, r, err);
	}
	return rc;
}

static double short_until(const struct rf_upd *u, double deadline)
{
	double t = gf_monotime() + (u->request_timeout > 0 ? u->request_timeout : 10);

	return min2(t, deadline);
}

static json_t *body_json(const struct rf_resp *r)
{
	json_t *doc = r->body.len ? rf_json_parse(r->body.s, r->body.len, 0, NULL) : NULL;

	if (doc && !json_is_object(doc)) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* The error of a non-2xx answer, with the BMC's own message. */
static int status_err(struct rf_upd *u, const char *what, const struct rf_resp *r,
		      struct gf_err *err)
{
	json_t *doc = body_json(r);
	json_t *e = rf_obj(doc, "error");
	const char *msg = rf_str(json_array_get(rf_arr(e, "@Message.ExtendedInfo"), 0), "Message");
	int rc;

	if (!msg)
		msg = rf_str(e, "message");
	rc = gf_err_set(err, GF_E_NODE,
			r->status == 404 || r->status == 405 || r->status == 501
				? GF_EK_UNSUPPORTED
				: (r->status == 401 ? GF_EK_AUTH : GF_EK_REFUSED),
			"bmc '%s' answered %s with HTTP %ld%s%.200s", u->c->node, what, r->status,
			msg ? ": " : "", msg ? msg : "");
	if (err)
		err->detail = r->status;
	json_decref(doc);
	return rc;
}

static int update_service(struct rf_upd *u, json_t **ret, struct gf_err *err)
{
	const char *us = rf_link(u->c->root, "UpdateService");

	if (!us)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "bmc '%s' has no UpdateService", u->c->node);
	return rf_fetch(u->c, us, ret, err);
}

static const char *simple_update_target(const json_t *svc)
{
	/* Not rf_get_str(): the action's name has dots in it. */
	return rf_str(rf_obj(rf_obj(svc, "Actions"), "#UpdateService.SimpleUpdate"), "target");
}

static bool supports_immediate(const json_t *o)
{
	size_t i;
	json_t *v;

	json_array_foreach(rf_arr(o, "SupportedValues"), i, v)
		if (rf_eq(json_string_value(v), "Immediate"))
			return true;
	return false;
}

/*
 * The allowable values of parameter @name of @action: inline
 * (NAME@Redfish.AllowableValues), else from the action's ActionInfo; a new
 * reference, NULL when neither lists values. *named (may be NULL): the
 * action names the parameter at all (values or not).
 */
static json_t *action_allowed(struct rf_upd *u, const json_t *action, const char *name, bool *named)
{
	struct gf_buf key = GF_BUF_INIT;
	const char *info_uri = rf_str(action, "@Redfish.ActionInfo");
	json_t *allowed, *info = NULL, *p;
	size_t i;

	gf_buf_addf(&key, "%s@Redfish.AllowableValues", name);
	allowed = json_incref(rf_arr(action, gf_buf_str(&key)));
	gf_buf_release(&key);
	if (named)
		*named = allowed != NULL;
	if (allowed || !info_uri || rf_fetch_opt(u->c, info_uri, &info, NULL) < 0)
		return allowed;
	json_array_foreach(rf_arr(info, "Parameters"), i, p) {
		if (!rf_eq(rf_str(p, "Name"), name))
			continue;
		if (named)
			*named = true;
		allowed = json_incref(rf_arr(p, "AllowableValues"));
	}
	json_decref(info);
	return allowed;
}

/*
 * SimpleUpdate's TransferProtocol for @uri, where the action names the
 * parameter (some BMCs require it): the URI's scheme as the BMC spells it
 * in its allowable values. *ret NULL: not named, send none.
 */
static int transfer_protocol(struct rf_upd *u, const json_t *action, const char *uri, char **ret,
			     struct gf_err *err)
{
	const char *colon = strstr(uri, "://");
	bool named = false;
	json_t *allowed = action_allowed(u, action, "TransferProtocol", &named), *v;
	char *scheme, *pick = NULL;
	size_t i;
	int rc = 0;

	*ret = NULL;
	if (!named)
		return 0;
	scheme = gf_xstrndup(uri, colon ? (size_t)(colon - uri) : 0);
	for (char *c = scheme; *c; c++)
		*c = (char)toupper((unsigned char)*c);
	json_array_foreach(allowed, i, v)
		if (!pick && rf_eq(json_string_value(v), scheme))
			pick = gf_xstrdup(json_string_value(v));
	if (!allowed && *scheme)
		pick = gf_xstrdup(scheme);
	if (!pick)
		rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"bmc '%s' does not pull images over '%s' (its SimpleUpdate "
				"TransferProtocol does not list it)",
				u->c->node, *scheme ? scheme : uri);
	free(scheme);
	json_decref(allowed);
	*ret = pick;
	return rc;
}

int rf_update_caps(struct rf_upd *u, struct gf_fw_caps *ret, struct gf_err *err)
{
	struct gf_fw_caps c = {0};
	json_t *svc = NULL, *sys = NULL, *su;
	int rc;

	/* The main System first: its maker settles the dialect the inventory is read with. */
	rc = rf_main_system(u->c, &sys, err);
	if (rc < 0 && (!err || err->kind != GF_EK_UNSUPPORTED))
		return rc;
	gf_err_clear(err);
	rc = update_service(u, &svc, err);
	if (rc < 0) {
		json_decref(sys);
		return rc;
	}
	c.dialect = u->c->dialect ? gf_xstrdup(u->c->dialect->name) : NULL;
	c.model = rf_dup(rf_str(sys, "Model"));
	c.multipart = rf_str(svc, "MultipartHttpPushUri") != NULL;
	c.push = rf_str(svc, "HttpPushUri") != NULL;
	c.pull = simple_update_target(svc) != NULL;
	su = rf_obj(rf_obj(svc, "Actions"), "#UpdateService.SimpleUpdate");
	c.apply_time =
		supports_immediate(rf_obj(svc,
					  "MultipartHttpPushUri@Redfish.OperationApplyTimeSupport")) ||
		supports_immediate(rf_obj(svc, "@Redfish.OperationApplyTimeSupport")) ||
		supports_immediate(rf_obj(su, "@Redfish.OperationApplyTimeSupport"));
	if (u->memo) {
		json_decref(u->memo->svc);
		u->memo->svc = json_incref(svc);
	}
	json_decref(svc);
	json_decref(sys);
	*ret = c;
	return 0;
}

void rf_update_multipart(const char *boundary, const char *params, const char *filename,
			 struct gf_buf *head, struct gf_buf *tail)
{
	gf_buf_addf(head,
		    "--%s\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\n"
		    "Content-Type: application/json\r\n\r\n%s\r\n",
		    boundary, params);
	gf_buf_addf(head,
		    "--%s\r\nContent-Disposition: form-data; name=\"UpdateFile\"; filename=\"",
		    boundary);
	/*
	 * A quoted string: a quote, backslash or line break in the file's name
	 * would end it, or the header, early. Percent-encoded, as browsers do
	 * (RFC 7578 4.2), '%' too so that it reads back the same.
	 */
	for (const unsigned char *c = (const unsigned char *)filename; *c; c++) {
		if (*c < 0x20 || *c == 0x7f || *c == '"' || *c == '\\' || *c == '%')
			gf_buf_addf(head, "%%%02X", *c);
		else
			gf_buf_addc(head, (char)*c);
	}
	gf_buf_adds(head, "\"\r\nContent-Type: application/octet-stream\r\n\r\n");
	gf_buf_addf(tail, "\r\n--%s--\r\n", boundary);
}

/*
 * An image read from its file as it is sent, with the multipart framing
 * around it where it has one: memory stays flat whatever the image's size.
 */
struct img_src {
	FILE *f;
	unsigned long long size;    /* of the file, when opened */
	struct gf_buf head, tail;   /* before and after the file (multipart), else empty */
	unsigned long long pos;     /* in the whole body */
	atomic_ullong *sent;        /* progress, NULL: none */
	unsigned long long counted; /* what this body added to *sent */
	struct rf_body body;
	const char *want;       /* NULL, or the SHA-256 its bytes must have */
	struct gf_sha256 *hash; /* of the file's bytes sent so far, with @want */
	bool changed;           /* they differ from @want: the body was cut short */
};

static size_t piece(const struct gf_buf *b, unsigned long long off, char *buf, size_t n)
{
	size_t left = b->len - (size_t)off;

	memcpy(buf, b->s + off, left < n ? left : n);
	return left < n ? left : n;
}

static size_t img_read(void *ud, char *buf, size_t n)
{
	struct img_src *s = ud;
	unsigned long long end = s->head.len + s->size;
	size_t got;

	if (s->pos < s->head.len) {
		got = piece(&s->head, s->pos, buf, n);
	} else if (s->pos < end) {
		got = fread(buf, 1, end - s->pos < n ? (size_t)(end - s->pos) : n, s->f);
		if (got == 0) {
			s->changed = s->want != NULL;
			return (size_t)-1; /* shorter than it was, or unreadable */
		}
		if (s->hash) {
			gf_sha256_update(s->hash, buf, got);
			/* The last bytes of the file go only once they hash to what was planned. */
			if (s->pos + got == end) {
				char hex[GF_SHA256_HEX];

				gf_sha256_final(s->hash, hex);
				if (strcmp(hex, s->want) != 0) {
					s->changed = true;
					return (size_t)-1;
				}
			}
		}
		if (s->sent)
			atomic_fetch_add(s->sent, got);
		s->counted += got;
	} else if (s->pos < end + s->tail.len) {
		got = piece(&s->tail, s->pos - end, buf, n);
	} else {
		return 0;
	}
	s->pos += got;
	return got;
}

static int img_rewind(void *ud)
{
	struct img_src *s = ud;

	if (s->sent)
		atomic_fetch_sub(s->sent, s->counted);
	s->counted = 0;
	s->pos = 0;
	if (s->hash) {
		char hex[GF_SHA256_HEX];

		gf_sha256_final(s->hash, hex); /* starts it again */
	}
	return fseek(s->f, 0, SEEK_SET) == 0 ? 0 : -1;
}

static void img_close(struct img_src *s)
{
	if (s->f)
		fclose(s->f);
	gf_sha256_free(s->hash);
	gf_buf_release(&s->head);
	gf_buf_release(&s->tail);
	*s = (struct img_src){0};
}

static int img_changed(const struct rf_upd *u, const char *path, const char *why,
		       struct gf_err *err)
{
	return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
			  "image '%s' changed since the rollout was planned (%s): not pushed to "
			  "bmc '%s'",
			  path, why, u->c->node);
}

/*
 * Before anything reaches the BMC: is the file still the size and SHA-256
 * planned? (The bytes sent are hashed again as they go: this spares a BMC
 * the upload, and the HttpPushUriTargets it would set, of a file replaced
 * meanwhile.)
 */
static int img_unchanged(const struct rf_upd *u, const struct gf_fw_push *p, struct gf_err *err)
{
	char hex[GF_SHA256_HEX], why[200];
	unsigned long long size;

	if (!p->sha256 || !p->file || (p->method != GF_FW_MULTIPART && p->method != GF_FW_PUSH))
		return 0;
	if (gf_sha256_file(p->file, &size, hex, NULL) < 0)
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				  "image '%s' for bmc '%s' cannot be read", p->file, u->c->node);
	if (size != p->size)
		snprintf(why, sizeof(why), "%llu bytes, %llu planned", size, p->size);
	else if (strcmp(hex, p->sha256) != 0)
		snprintf(why, sizeof(why), "sha256 %s, %s planned", hex, p->sha256);
	else
		return 0;
	return img_changed(u, p->file, why, err);
}

/* Open the image of @p to be streamed; IMAGE_MAX is a sanity limit, not a buffer. */
static int img_open(const struct rf_upd *u, const struct gf_fw_push *p, struct img_src *ret,
		    struct gf_err *err)
{
	const char *path = p->file;
	struct img_src s = {0};
	struct stat st;

	/* O_NONBLOCK: a FIFO put in its place must not block the worker in open(). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	s.f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (fd >= 0 && !s.f)
		close(fd);
	if (!s.f) {
		img_close(&s);
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				  "image '%s' for bmc '%s' cannot be read", path, u->c->node);
	}
	if ((unsigned long long)st.st_size > IMAGE_MAX) {
		img_close(&s);
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "image '%s' is larger than 1 GiB",
				  path);
	}
	s.size = (unsigned long long)st.st_size;
	if (p->sha256) {
		s.want = p->sha256;
		s.hash = gf_sha256_new();
	}
	*ret = s;
	return 0;
}

/* The body of @s once its framing is set, of Content-Type @type (kept by the caller). */
static void img_body(struct img_src *s, const char *type, atomic_ullong *sent)
{
	s->sent = sent;
	s->body = (struct rf_body){.type = type,
				   .len = s->head.len + s->size + s->tail.len,
				   .read = img_read,
				   .rewind = img_rewind,
				   .ud = s};
}

/* A multipart boundary: random, so no image holds it but by a 2^-128 chance. */
static void make_boundary(char *buf, size_t size)
{
	unsigned char r[16];
	uint64_t fallback[2] = {(uint64_t)(gf_walltime() * 1e6), (uint64_t)getpid()};
	size_t at;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		memcpy(r, fallback, sizeof(r));
	at = (size_t)snprintf(buf, size, "gpufleet-");
	for (size_t i = 0; i < sizeof(r) && at + 3 <= size; i++)
		at += (size_t)snprintf(buf + at, size - at, "%02x", r[i]);
}

/* The @odata.id of each target: the FirmwareInventory member of that id. */
static json_t *target_uris(const json_t *svc, const struct gf_fw_push *p)
{
	const char *inv = rf_link(svc, "FirmwareInventory");
	json_t *a = json_array();

	for (size_t i = 0; inv && i < p->ntargets; i++) {
		struct gf_buf b = GF_BUF_INIT;

		gf_buf_adds(&b, inv);
		if (b.len && b.s[b.len - 1] != '/')
			gf_buf_addc(&b, '/');
		gf_buf_adds(&b, p->targets[i]);
		json_array_append_new(a, json_string(gf_buf_str(&b)));
		gf_buf_release(&b);
	}
	return a;
}

/* The request that hands the image over: what, where, the body. */
struct push_req {
	const char *uri;
	struct gf_buf json; /* SimpleUpdate's parameters */
	struct img_src img; /* a push: the image, read as it is sent */
	bool has_img;
	char type[96];    /* the image's Content-Type */
	const char *what; /* for messages */
};

static int build_push(struct rf_upd *u, const json_t *svc, const struct gf_fw_push *p,
		      struct push_req *ret, struct gf_err *err)
{
	json_t *targets = target_uris(svc, p), *params;
	char *text;
	int rc = 0;

	switch (p->method) {
	case GF_FW_MULTIPART: {
		char boundary[48];
		const char *base = strrchr(p->file, '/');

		ret->uri = rf_str(svc, "MultipartHttpPushUri");
		ret->what = "the multipart push";
		rc = img_open(u, p, &ret->img, err);
		if (rc < 0)
			break;
		ret->has_img = true;
		params = json_pack("{s:O}", "Targets", targets);
		if (p->apply_now)
			json_object_set_new(params, "@Redfish.OperationApplyTime",
					    json_string("Immediate"));
		text = json_dumps(params, JSON_COMPACT);
		json_decref(params);
		make_boundary(boundary, sizeof(boundary));
		rf_update_multipart(boundary, text, base ? base + 1 : p->file, &ret->img.head,
				    &ret->img.tail);
		free(text);
		snprintf(ret->type, sizeof(ret->type), "multipart/form-data; boundary=%s",
			 boundary);
		img_body(&ret->img, ret->type, p->sent);
		break;
	}
	case GF_FW_PUSH:
		ret->uri = rf_str(svc, "HttpPushUri");
		ret->what = "the image push";
		rc = img_open(u, p, &ret->img, err);
		if (rc < 0)
			break;
		ret->has_img = true;
		snprintf(ret->type, sizeof(ret->type), "application/octet-stream");
		img_body(&ret->img, ret->type, p->sent);
		break;
	case GF_FW_PULL: {
		char *proto = NULL;

		ret->uri = simple_update_target(svc);
		ret->what = "SimpleUpdate";
		rc = transfer_protocol(u,
				       rf_obj(rf_obj(svc, "Actions"),
					      "#UpdateService.SimpleUpdate"),
				       p->image_uri, &proto, err);
		if (rc < 0)
			break;
		params = json_pack("{s:s, s:s?}", "ImageURI", p->image_uri, "TransferProtocol",
				   proto);
		if (json_array_size(targets))
			json_object_set(params, "Targets", targets);
		text = json_dumps(params, JSON_COMPACT);
		gf_buf_adds(&ret->json, text);
		free(text);
		free(proto);
		json_decref(params);
		break;
	}
	default:
		rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"bmc '%s' offers no way to take this image", u->c->node);
		break;
	}
	if (rc == 0 && !ret->uri)
		rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "bmc '%s' has no %s", u->c->node,
				gf_fw_method_name(p->method));
	json_decref(targets);
	return rc;
}

static bool task_final(const char *state)
{
	return rf_eq(state, "Completed") || rf_eq(state, "Exception") || rf_eq(state, "Killed") ||
	       rf_eq(state, "Cancelled");
}

/* The last message of a Task (its Messages), NULL when none. */
static const char *task_message(const json_t *task)
{
	json_t *msgs = rf_arr(task, "Messages");
	size_t n = json_array_size(msgs);

	for (size_t i = n; i > 0; i--) {
		const char *m = rf_str(json_array_get(msgs, i - 1), "Message");

		if (m && *m)
			return m;
	}
	return NULL;
}

/* Note what a task document says into @t. */
static void task_note(struct gf_fw_task *t, const json_t *doc)
{
	const char *state = rf_str(doc, "TaskState"), *msg = task_message(doc);

	if (state) {
		free(t->state);
		t->state = gf_xstrdup(state);
	}
	if (msg) {
		free(t->message);
		t->message = gf_xstrdup(msg);
	}
}

/*
 * A Completed task that names the reset it needs (Base ResetRequired:
 * MessageArgs the Reset action's URI and its ResetType): kept for the reset.
 */
static void note_reset(struct rf_upd *u, const json_t *task)
{
	size_t i;
	json_t *m;

	if (!u->memo)
		return;
	json_array_foreach(rf_arr(task, "Messages"), i, m) {
		const char *id = rf_str(m, "MessageId"), *dot = id ? strrchr(id, '.') : NULL;
		json_t *args = rf_arr(m, "MessageArgs");
		const char *target = json_string_value(json_array_get(args, 0));
		const char *type = json_string_value(json_array_get(args, 1));

		if (!dot || strcmp(dot, ".ResetRequired") != 0 || !target || target[0] != '/')
			continue;
		free(u->memo->reset_target);
		free(u->memo->reset_type);
		u->memo->reset_target = gf_xstrdup(target);
		u->memo->reset_type = type ? gf_xstrdup(type) : NULL;
	}
}

/* Follow the task at @monitor until it ends. */
static int follow_task(struct rf_upd *u, const char *monitor, double deadline, struct gf_fw_task *t,
		       struct gf_err *err)
{
	for (;;) {
		struct rf_resp r = {0};
		struct gf_err e = {0};
		json_t *doc;
		int rc;

		if (cancelled(u))
			return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
					  "interrupted while bmc '%s' ran task '%s'", u->c->node,
					  monitor);
		if (gf_monotime() >= deadline)
			return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					  "the task '%s' of bmc '%s' did not end within the update "
					  "deadline (last %s)",
					  monitor, u->c->node, t->state ? t->state : "no state");
		rc = req(u, "GET", monitor, NULL, NULL, short_until(u, deadline), &r, &e);
		if (rc < 0 && hopeless(&e)) {
			if (err)
				*err = e;
			return rc;
		}
		if (rc < 0) {
			/* Some BMCs restart while they apply: keep looking until the deadline. */
			gf_cancel_sleep_until(u->cancel,
					      min2(gf_monotime() + 2 * POLL_S, deadline));
			continue;
		}
		if (r.status == 404 || r.status == 410) {
			/* Purged once it ended (or never kept): the inventory decides. */
			rf_resp_release(&r);
			t->vanished = true;
			return 0;
		}
		if (r.status >= 200 && r.status <= 299) {
			doc = body_json(&r);
			if (doc && rf_str(doc, "TaskState")) {
				task_note(t, doc);
				if (rf_eq(t->state, "Completed"))
					note_reset(u, doc);
			} else if (r.status != 202) {
				/* A monitor that now answers with the operation's result: it ended. */
				free(t->state);
				t->state = gf_xstrdup("Completed");
			}
			json_decref(doc);
		} else if (r.status != 503) {
			rc = status_err(u, "the task monitor", &r, err);
			rf_resp_release(&r);
			return rc;
		}
		rf_resp_release(&r);
		if (task_final(t->state)) {
			if (rf_eq(t->state, "Completed"))
				return 0;
			return gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
					  "the update task of bmc '%s' ended %s%s%.200s",
					  u->c->node, t->state, t->message ? ": " : "",
					  t->message ? t->message : "");
		}
		gf_cancel_sleep_until(u->cancel, min2(gf_monotime() + POLL_S, deadline));
	}
}

/* Wait @*busy s before trying again (doubled up to BUSY_MAX_S); false: no time left, or Ctrl-C. */
static bool busy_nap(struct rf_upd *u, double *busy, double deadline)
{
	if (gf_monotime() + *busy >= deadline)
		return false;
	gf_cancel_sleep_until(u->cancel, gf_monotime() + *busy);
	*busy = min2(*busy * 2, BUSY_MAX_S);
	return !cancelled(u);
}

struct push_targets {
	json_t *targets;
	bool busy;
};

/* The PATCH body: HttpPushUriTargets, and HttpPushUriTargetsBusy where the service has it. */
static json_t *push_targets_body(struct rf_client *c, const json_t *svc, void *ud,
				 struct gf_err *err)
{
	const struct push_targets *pt = ud;
	json_t *body = json_pack("{s:O}", "HttpPushUriTargets", pt->targets);

	(void)c;
	(void)err;
	if (json_object_get(svc, "HttpPushUriTargetsBusy"))
		json_object_set_new(body, "HttpPushUriTargetsBusy", json_boolean(pt->busy));
	return body;
}

/*
 * Set the service's HttpPushUriTargets to @targets: read fresh and PATCHed
 * with its ETag in If-Match (an XCC may require one; read again once if it
 * changed between).
 */
static int patch_push_targets(struct rf_upd *u, json_t *targets, bool busy, struct gf_err *err)
{
	struct push_targets pt = {targets, busy};

	return rf_patch_fresh(u->c, rf_link(u->c->root, "UpdateService"), push_targets_body, &pt,
			      err);
}

/*
 * Before a raw push where the service has HttpPushUriTargets (what such a
 * push updates): wait while another client holds it
 * (HttpPushUriTargetsBusy), then set it to the component's members. *svc
 * may be read again meanwhile. *ret_was: the value before (a new
 * reference), to put back after the push; NULL when nothing was set.
 */
static int push_targets_take(struct rf_upd *u, json_t **svc, const struct gf_fw_push *p,
			     json_t **ret_was, struct gf_err *err)
{
	double busy = BUSY_FIRST_S;
	json_t *targets;
	int rc = 0;

	*ret_was = NULL;
	if (p->method != GF_FW_PUSH || !json_is_array(json_object_get(*svc, "HttpPushUriTargets")))
		return 0;
	targets = target_uris(*svc, p);
	while (json_array_size(targets) &&
	       json_is_true(json_object_get(*svc, "HttpPushUriTargetsBusy"))) {
		if (!busy_nap(u, &busy, p->deadline)) {
			rc = gf_err_set(err, GF_E_NODE,
					cancelled(u) ? GF_EK_INTERNAL : GF_EK_TIMEOUT,
					"bmc '%s' kept HttpPushUriTargets busy (another client's "
					"update) past the update deadline",
					u->c->node);
			break;
		}
		json_decref(*svc);
		*svc = NULL;
		if ((rc = update_service(u, svc, err)) < 0)
			break;
	}
	if (rc == 0 && json_array_size(targets) &&
	    (rc = patch_push_targets(u, targets, true, err)) == 0)
		*ret_was = json_deep_copy(json_object_get(*svc, "HttpPushUriTargets"));
	json_decref(targets);
	return rc;
}

int rf_update_push_release(struct rf_upd *u, const char *const *targets, size_t ntargets,
			   bool *ret_cleared, struct gf_err *err)
{
	const struct gf_fw_push p = {.targets = targets, .ntargets = ntargets};
	json_t *svc = NULL, *ours = NULL, *none = NULL;
	int rc;

	*ret_cleared = false;
	if ((rc = update_service(u, &svc, err)) < 0)
		return rc;
	ours = target_uris(svc, &p);
	/* Ours: busy, and for exactly the members this client's push sets (push_targets_take). */
	if (json_array_size(ours) && json_is_true(json_object_get(svc, "HttpPushUriTargetsBusy")) &&
	    json_equal(json_object_get(svc, "HttpPushUriTargets"), ours)) {
		none = json_array();
		rc = patch_push_targets(u, none, false, err);
		*ret_cleared = rc == 0;
	}
	json_decref(none);
	json_decref(ours);
	json_decref(svc);
	return rc;
}

/* The @odata.id of each task the TaskService lists now: a new array, empty when none. */
static json_t *task_refs(struct rf_upd *u)
{
	const char *ts = rf_link(u->c->root, "Tasks");
	json_t *svc = NULL, *tasks = NULL, *ids = json_array(), *t;
	size_t i;

	if (ts && rf_fetch_opt(u->c, ts, &svc, NULL) == 0 && svc &&
	    rf_collection_of(u->c, svc, "Tasks", RF_WALK_REFS, &tasks, NULL) == 0)
		json_array_foreach(tasks, i, t)
			if (rf_odata_id(t))
				json_array_append_new(ids, json_string(rf_odata_id(t)));
	json_decref(tasks);
	json_decref(svc);
	return ids;
}

static bool listed(const json_t *ids, const char *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(ids, i, v)
		if (rf_eq(json_string_value(v), id))
			return true;
	return false;
}

/* Does a FirmwareInventory member of @p's targets report @p->version (active or staged)? */
static bool version_shows(struct rf_upd *u, const json_t *targets, const struct gf_fw_push *p)
{
	size_t i;
	json_t *v;
	bool yes = false;

	json_array_foreach(targets, i, v) {
		json_t *m = NULL;

		if (!yes && rf_fetch_opt(u->c, json_string_value(v), &m, NULL) == 0)
			yes = gf_version_matches(rf_str(m, "Version"), p->version,
						 p->version_exact);
		json_decref(m);
	}
	return yes;
}

/*
 * A push answered 2xx without a task monitor: it is not done yet. Wait for
 * evidence: a task the TaskService did not list before (@before), then
 * followed, or a target reporting the new version; nothing else lets a
 * reset follow.
 */
static int await_evidence(struct rf_upd *u, const struct gf_fw_push *p, const json_t *before,
			  const json_t *targets, long status, struct gf_fw_task *t,
			  struct gf_err *err)
{
	for (;;) {
		json_t *now = task_refs(u), *v;
		char *fresh = NULL;
		size_t i;
		int rc;

		json_array_foreach(now, i, v)
			if (!fresh && !listed(before, json_string_value(v)))
				fresh = gf_xstrdup(json_string_value(v));
		json_decref(now);
		if (fresh) {
			rc = follow_task(u, fresh, p->deadline, t, err);
			free(fresh);
			return rc;
		}
		if (p->version && version_shows(u, targets, p))
			return 0;
		if (cancelled(u))
			return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
					  "interrupted while waiting for bmc '%s' to show its update "
					  "task",
					  u->c->node);
		if (gf_monotime() + 2 * POLL_S >= p->deadline)
			return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					  "bmc '%s' took the image (HTTP %ld) without a task monitor, "
					  "and showed neither a new task nor version '%s' by the "
					  "update deadline: not activated",
					  u->c->node, status, p->version ? p->version : "?");
		gf_cancel_sleep_until(u->cancel, gf_monotime() + 2 * POLL_S);
	}
}

int rf_update_push(struct rf_upd *u, const struct gf_fw_push *p, struct gf_fw_task *ret,
		   struct gf_err *err)
{
	struct push_req pr = {0};
	struct gf_fw_task t = {0};
	struct rf_resp r = {0};
	json_t *svc = NULL, *doc = NULL, *was = NULL, *before = NULL, *targets = NULL;
	double busy = BUSY_FIRST_S;
	const char *monitor;
	char *mon = NULL;
	int rc;

	/*
	 * The UpdateService as the plan's read of this session found it, a
	 * moment ago: its push URIs and inventory link. A raw push reads it
	 * fresh: HttpPushUriTargetsBusy says whether another client holds it.
	 */
	if (u->memo) {
		svc = u->memo->svc;
		u->memo->svc = NULL;
		if (svc && p->method == GF_FW_PUSH) {
			json_decref(svc);
			svc = NULL;
		}
	}
	rc = img_unchanged(u, p, err);
	if (rc == 0 && !svc)
		rc = update_service(u, &svc, err);
	if (rc == 0)
		rc = push_targets_take(u, &svc, p, &was, err);
	if (rc == 0)
		rc = build_push(u, svc, p, &pr, err);
	if (rc < 0)
		goto out;
	targets = target_uris(svc, p);
	if (u->memo) {
		/* What the reset after this push restarts: what its task names, else this. */
		rf_upd_memo_release(u->memo);
		if (json_array_size(targets))
			u->memo->component = gf_xstrdup(json_string_value(json_array_get(targets,
											 0)));
	}
	/* The tasks before, to tell ours should the BMC not name it. */
	before = task_refs(u);
	for (;;) {
		/* The image travels within the node's deadline, not one request's. */
		rc = req(u, "POST", pr.uri, gf_buf_str(&pr.json), pr.has_img ? &pr.img.body : NULL,
			 p->deadline, &r, err);
		if (pr.img.changed) {
			/* Cut short before its last bytes: the BMC has no whole image. */
			gf_err_clear(err);
			rc = img_changed(u, p->file,
					 "the bytes read differ from the sha256 planned", err);
			goto out;
		}
		if (rc < 0)
			goto out;
		if (r.status != 409 && r.status != 503)
			break;
		/* Busy with another update, or short of memory: later, within the deadline. */
		if (!busy_nap(u, &busy, p->deadline)) {
			if (cancelled(u)) {
				rc = gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
						"interrupted before bmc '%s' took the image",
						u->c->node);
				goto out;
			}
			rc = status_err(u, pr.what, &r, err);
			if (err)
				err->kind = GF_EK_TIMEOUT;
			goto out;
		}
		rf_resp_release(&r);
	}
	if (r.status < 200 || r.status > 299) {
		rc = status_err(u, pr.what, &r, err);
		goto out;
	}
	doc = body_json(&r);
	task_note(&t, doc);
	monitor = r.location && *r.location ? r.location : NULL;
	if (!monitor && doc && rf_str(doc, "TaskState"))
		monitor = rf_odata_id(doc);
	if (!monitor)
		monitor = rf_str(doc, "TaskMonitor");
	if (monitor) {
		mon = gf_xstrdup(monitor);
		rc = follow_task(u, mon, p->deadline, &t, err);
	} else {
		rc = await_evidence(u, p, before, targets, r.status, &t, err);
	}
out:
	/*
	 * Put HttpPushUriTargets back as it was, once the task ended, on every
	 * way out: after Ctrl-C or the deadline too, for a few seconds more.
	 */
	if (was && (cancelled(u) || gf_monotime() >= p->deadline) && u->cleanup)
		u->cleanup(u->ud);
	if (was)
		(void)patch_push_targets(u, was, false, NULL);
	json_decref(was);
	json_decref(before);
	json_decref(targets);
	if (rc == 0) {
		*ret = t;
		t = (struct gf_fw_task){0};
	}
	gf_fw_task_release(&t);
	free(mon);
	json_decref(doc);
	json_decref(svc);
	rf_resp_release(&r);
	gf_buf_release(&pr.json);
	img_close(&pr.img);
	return rc;
}

static bool task_running(const char *state)
{
	return rf_eq(state, "New") || rf_eq(state, "Starting") || rf_eq(state, "Running") ||
	       rf_eq(state, "Pending") || rf_eq(state, "Stopping") || rf_eq(state, "Suspended");
}

/* Does @s contain @word, ignoring case? */
static bool has_word(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (; s && *s; s++)
		if (strncasecmp(s, word, n) == 0)
			return true;
	return false;
}

/*
 * Is @t an update's task? Its payload targets the UpdateService (a push,
 * SimpleUpdate) or its name says so; a task that says nothing of itself
 * counts too. A diagnostic collection or a host's job does not.
 */
static bool update_task(const json_t *t, const char *us)
{
	const char *target = rf_get_str(t, "Payload.TargetUri");
	const char *name = rf_str(t, "Name"), *what = rf_str(t, "Description");

	if (target)
		return (us && strncmp(target, us, strlen(us)) == 0) ||
		       has_word(target, "UpdateService");
	if (!name && !what)
		return true;
	return has_word(name, "update") || has_word(name, "firmware") || has_word(what, "update") ||
	       has_word(what, "firmware");
}

int rf_update_tasks_wait(struct rf_upd *u, double deadline, struct gf_err *err)
{
	const char *ts = rf_link(u->c->root, "Tasks");

	if (!ts)
		return 0;
	for (;;) {
		json_t *svc = NULL, *tasks = NULL;
		struct gf_err e = {0};
		bool busy = false;
		size_t i;
		json_t *t;
		int rc = rf_fetch_opt(u->c, ts, &svc, &e);

		if (rc == 0 && svc)
			rc = rf_collection_of(u->c, svc, "Tasks", RF_WALK_FETCH, &tasks, &e);
		json_decref(svc);
		/* A BMC restarting as a killed run left it: busy until it answers. */
		if (rc < 0) {
			if (e.kind != GF_EK_CONNECT && e.kind != GF_EK_TIMEOUT &&
			    e.kind != GF_EK_AUTH) {
				if (err)
					*err = e;
				return rc;
			}
			if (e.kind == GF_EK_AUTH) /* its sessions went with a restart */
				(void)u->login(u->ud, short_until(u, deadline), NULL);
			busy = true;
		}
		json_array_foreach(tasks, i, t)
			busy = busy || (task_running(rf_str(t, "TaskState")) &&
					update_task(t, rf_link(u->c->root, "UpdateService")));
		json_decref(tasks);
		if (!busy)
			return 0;
		if (gf_monotime() + BACK_POLL_S >= deadline)
			return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					  "bmc '%s' still runs an update task at the update deadline",
					  u->c->node);
		gf_cancel_sleep_until(u->cancel, gf_monotime() + BACK_POLL_S);
		if (cancelled(u))
			return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
					  "interrupted while bmc '%s' ran a task", u->c->node);
	}
}

/* Does Manager @m run the firmware of inventory member @member (its Links say so)? */
static bool manager_runs(const json_t *m, const char *member)
{
	json_t *links = rf_obj(m, "Links"), *v;
	size_t i;

	if (!member)
		return false;
	if (rf_eq(rf_odata_id(rf_obj(links, "ActiveSoftwareImage")), member))
		return true;
	json_array_foreach(rf_arr(links, "SoftwareImages"), i, v)
		if (rf_eq(rf_odata_id(v), member))
			return true;
	return false;
}

/*
 * The Manager to restart (its object, a new reference): the one whose Reset
 * action the last task named (ResetRequired), else the one that runs the
 * component pushed (on a DGX `HGX_BMC_0` for the HGX BMC, `BMC` for the
 * host's), else the first Manager with a Reset action.
 */
static int reset_manager(struct rf_upd *u, json_t **ret, struct gf_err *err)
{
	const struct rf_upd_memo *memo = u->memo;
	json_t *mgrs = NULL, *pick = NULL, *named = NULL, *runs = NULL;
	size_t i;
	json_t *m;
	int rc = rf_collection_of(u->c, u->c->root, "Managers", RF_WALK_FETCH, &mgrs, err);

	if (rc < 0)
		return rc;
	json_array_foreach(mgrs, i, m) {
		const char *target = rf_str(rf_obj(rf_obj(m, "Actions"), "#Manager.Reset"),
					    "target");

		if (!target)
			continue;
		if (!pick)
			pick = m;
		if (!named && memo && rf_eq(memo->reset_target, target))
			named = m;
		if (!runs && memo && manager_runs(m, memo->component))
			runs = m;
	}
	pick = json_incref(named ? named : (runs ? runs : pick));
	json_decref(mgrs);
	if (!pick)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "bmc '%s' has no Manager that can be reset", u->c->node);
	*ret = pick;
	return 0;
}

/* GracefulRestart where allowed (inline or in the ActionInfo), else ForceRestart. */
static const char *manager_reset_type(struct rf_upd *u, const json_t *action)
{
	static const char *const prefer[] = {"GracefulRestart", "ForceRestart"};
	json_t *allowed = action_allowed(u, action, "ResetType", NULL);
	const char *pick = NULL;
	size_t i;
	json_t *p;

	for (size_t k = 0; !pick && k < 2; k++) {
		if (!allowed)
			pick = prefer[0];
		json_array_foreach(allowed, i, p)
			if (!pick && rf_eq(json_string_value(p), prefer[k]))
				pick = prefer[k];
	}
	json_decref(allowed);
	return pick ? pick : prefer[0];
}

/*
 * Wait for the BMC to answer at @probe again, logged in again if its
 * sessions went. @restarted: a restart was asked for; only evidence of it
 * counts (refused connections or 503 before the answer, our session gone,
 * or the Manager's LastResetTime changed from @last_reset), never answers
 * alone: a BMC slow to go down is not back. A refused or changed
 * certificate ends the wait at once, with that error.
 */
static int wait_back(struct rf_upd *u, const char *probe, bool restarted, const char *last_reset,
		     double deadline, struct gf_err *err)
{
	bool down = false;

	for (;;) {
		struct rf_resp r = {0};
		struct gf_err e = {0};
		double until = min2(short_until(u, deadline), gf_monotime() + 5);
		int rc;

		if (cancelled(u))
			return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
					  "interrupted while waiting for bmc '%s' to come back",
					  u->c->node);
		if (gf_monotime() >= deadline)
			return gf_err_set(
				err, GF_E_NODE, GF_EK_TIMEOUT,
				restarted && !down
					? "bmc '%s' took Manager.Reset but showed no restart "
					  "(never down, its session kept) within the update "
					  "deadline"
					: "bmc '%s' did not come back within the update deadline",
				u->c->node);
		rc = u->request(u->ud, "GET", probe, NULL, NULL, until, &r, &e);
		if (rc < 0 && cert_refused(&e)) {
			if (err)
				*err = e;
			return rc;
		}
		if (rc < 0 || r.status == 503) {
			down = true;
		} else if (r.status == 401) {
			/* Its sessions are gone: it restarted. A new one, if it takes it already. */
			down = true;
			if (u->login(u->ud, until, &e) == 0) {
				rf_resp_release(&r);
				return 0;
			}
			if (cert_refused(&e)) {
				rf_resp_release(&r);
				if (err)
					*err = e;
				return -GF_E_NODE;
			}
		} else if (r.status >= 200 && r.status <= 299) {
			json_t *doc = body_json(&r);
			const char *at = rf_str(doc, "LastResetTime");
			bool again = last_reset && at && strcmp(at, last_reset) != 0;

			json_decref(doc);
			if (!restarted || down || again) {
				rf_resp_release(&r);
				return 0;
			}
		}
		rf_resp_release(&r);
		gf_cancel_sleep_until(u->cancel, min2(gf_monotime() + BACK_POLL_S, deadline));
	}
}

int rf_update_bmc_reset(struct rf_upd *u, double deadline, struct gf_err *err)
{
	json_t *mgr = NULL, *action, *body;
	struct rf_resp r = {0};
	struct gf_err e = {0};
	const char *target;
	char *text, *probe, *last_reset;
	int rc = reset_manager(u, &mgr, err);

	if (rc < 0)
		return rc;
	action = rf_obj(rf_obj(mgr, "Actions"), "#Manager.Reset");
	target = rf_str(action, "target");
	body = json_pack("{s:s}", "ResetType",
			 u->memo && u->memo->reset_type && rf_eq(u->memo->reset_target, target)
				 ? u->memo->reset_type
				 : manager_reset_type(u, action));
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	rc = req(u, "POST", target, text, NULL, short_until(u, deadline), &r, &e);
	free(text);
	/* The Manager restarting is the one to watch: on a DGX the host's BMC may not. */
	probe = gf_xstrdup(rf_odata_id(mgr));
	last_reset = rf_dup(rf_str(mgr, "LastResetTime"));
	json_decref(mgr);
	if (u->memo)
		rf_upd_memo_release(u->memo); /* spent */
	if (rc < 0 && hopeless(&e)) {
		if (err)
			*err = e;
	} else if (rc == 0 && (r.status < 200 || r.status > 299)) {
		rc = status_err(u, "Manager.Reset", &r, err);
	} else {
		/* No answer at all: it may have gone down at once; waiting for it tells. */
		rc = wait_back(u, probe, true, last_reset, deadline, err);
	}
	rf_resp_release(&r);
	free(probe);
	free(last_reset);
	return rc;
}

int rf_update_bmc_wait(struct rf_upd *u, double deadline, bool expect_down, struct gf_err *err)
{
	const char *probe = rf_link(u->c->root, "UpdateService");

	return wait_back(u, probe ? probe : "/redfish/v1/Managers", expect_down, NULL, deadline,
			 err);
}
