/*
 * HTTPS to one BMC for the Redfish backend: one libcurl easy handle per
 * session (so one kept-alive connection), TLS verification or pinning,
 * deadlines, 503 Retry-After, a cap on bodies, same-host redirects only.
 * Internal to redfish/.
 */
#ifndef GF_RF_HTTP_H
#define GF_RF_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/cancel.h"
#include "lib/backend.h"
#include "lib/buf.h"
#include "lib/err.h"

struct rf_http;

/* A SHA-256 fingerprint in lower-case hex. */
#define RF_FP_HEX 64

struct rf_http_opts {
	const char *node; /* for messages */
	const char *host;
	int port;           /* 0: 443 */
	double deadline;    /* monotonic */
	const char *cacert; /* NULL: system CAs */
	bool insecure;      /* no verification at all */
	const char *pin;    /* expected fingerprint, NULL: none */
	bool pin_new;       /* pinning: accept what is seen when there is no pin */
	bool verify_none;   /* probe: nothing secret is sent, so the peer is not checked */
	const gf_cancel_flag *cancel;
	size_t max_body; /* 0: the default (32 MiB) */
	size_t budget;   /* bytes all answers of the session may bring, 0: GF_RF_BUDGET_MIB */
};

/* The default budget of one session, in MiB (README, gpufleet(1)). */
#define GF_RF_BUDGET_MIB 256u

/* A new connection context (nothing is sent yet). Free with rf_http_free(). */
int rf_http_new(const struct rf_http_opts *o, struct rf_http **ret, struct gf_err *err);
void rf_http_free(struct rf_http *h);

/* Credentials: X-Auth-Token (preferred) or Basic. Copied; zeroed when freed. */
void rf_http_set_token(struct rf_http *h, const char *token);
void rf_http_set_basic(struct rf_http *h, const char *user, const char *password);
/* Stop sending credentials (for requests that must go out without). */
void rf_http_auth(struct rf_http *h, bool on);
/* The most one answer may bring from now on (0: the default); returns the one before. */
size_t rf_http_set_max_body(struct rf_http *h, size_t max);
/* Move the deadline. */
void rf_http_set_deadline(struct rf_http *h, double deadline);
/* Swap the cancel flag (NULL: not cancellable); returns the one before. */
const gf_cancel_flag *rf_http_set_cancel(struct rf_http *h, const gf_cancel_flag *cancel);
/* For cleaning up (deleting the session): @seconds more if the deadline is near, and no cancel. */
void rf_http_cleanup_mode(struct rf_http *h, double seconds);

struct rf_resp {
	long status;
	struct gf_buf body;
	char *etag;         /* ETag header */
	char *token;        /* X-Auth-Token header (secret) */
	char *location;     /* Location header */
	char *retry_after;  /* Retry-After header */
	bool basic_offered; /* a WWW-Authenticate header offers Basic */
};

void rf_resp_release(struct rf_resp *r);

/*
 * One request. @path is "/redfish/..." or an absolute URL on the same
 * scheme, host and port. @body NULL: none. 503 with Retry-After is waited
 * out inside the deadline; same-host redirects are followed (5 at most), any
 * other is refused. Returns 0 with the response whatever its status, or
 * GF_E_NODE when no answer came (timeout, connect, tls, ...).
 */
int rf_http_request(struct rf_http *h, const char *method, const char *path, const char *body,
		    const char *if_match, struct rf_resp *ret, struct gf_err *err);

/*
 * A request body of @len bytes of Content-Type @type read as it is sent (a
 * firmware image: memory stays flat whatever its size). @read fills up to
 * @n bytes and returns how many (0: the end), or (size_t)-1 when the source
 * failed; @rewind starts it again from its first byte (0, or -1), before
 * every exchange and when libcurl resends.
 */
struct rf_body {
	const char *type;
	unsigned long long len;
	size_t (*read)(void *ud, char *buf, size_t n);
	int (*rewind)(void *ud);
	void *ud;
};

/* rf_http_request() with the body @b (Content-Type its type, no Expect: 100-continue). */
int rf_http_request_body(struct rf_http *h, const char *method, const char *path,
			 const struct rf_body *b, struct rf_resp *ret, struct gf_err *err);

/*
 * The fingerprint seen at the latest handshake, NULL before one; when it
 * pinned on first use, the certificate it accepted and pinned (a later one
 * that was refused is only in the error).
 */
const char *rf_http_fingerprint(const struct rf_http *h);

/* A 403 whose error body names PasswordChangeRequired (a BMC in factory state). */
bool rf_http_password_change_required(const struct rf_resp *r);

/*
 * An error for a non-2xx answer, with the Redfish error message when the body
 * has one; PasswordChangeRequired is an auth error.
 */
int rf_http_status_err(const struct rf_http *h, const char *method, const char *path,
		       const struct rf_resp *r, struct gf_err *err);

/*
 * A long GET of @path for the caller to drive on its own curl multi handle
 * (redfish/sse.c): the session's credentials, pin and connection, with
 * Accept: text/event-stream and, when given, Last-Event-ID; no overall
 * timeout (the caller watches for stalls and its deadline). The body goes
 * to @write (curl's write callback, @ud its data). *ret_easy is the CURL
 * easy handle (borrowed: add it to the multi handle, remove it before
 * rf_http_stream_end()). No other request may run until then.
 */
int rf_http_stream_begin(struct rf_http *h, const char *path, const char *last_event_id,
			 size_t (*write)(char *data, size_t size, size_t nmemb, void *ud), void *ud,
			 void **ret_easy, struct gf_err *err);
/*
 * The stream ended with CURLcode @cc (CURLE_WRITE_ERROR: the write
 * callback stopped it, no error here): *ret_status the HTTP status (0
 * when none came), the error mapped as for requests; the connection is
 * ready for requests again (to delete the session).
 */
int rf_http_stream_end(struct rf_http *h, int cc, long *ret_status, struct gf_err *err);

#endif
