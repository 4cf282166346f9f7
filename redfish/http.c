/*
 * HTTPS to one BMC: one libcurl easy handle, so one TCP+TLS connection kept
 * alive for the whole run of a node.
 *
 * Certificates. Every handshake goes through our OpenSSL verify hook
 * (CURLOPT_SSL_CTX_FUNCTION + SSL_CTX_set_cert_verify_callback), which
 * records the SHA-256 of the leaf certificate (DER) and then:
 *  - by default lets OpenSSL verify the chain as usual (curl checks the
 *    result and the host name);
 *  - when pinning, accepts the certificate only if its fingerprint is the
 *    pinned one (or, with no pin yet, accepts it so it can be recorded, and
 *    from then on it is the pin: a reconnection later in the run, after the
 *    BMC closed a keep-alive connection, must show the same certificate),
 *    and fails the handshake otherwise, before a byte of HTTP, credentials
 *    included, is sent. The TLS session cache is off, so every new
 *    connection is a full handshake that the hook sees.
 * The hook was preferred over CURLOPT_PINNEDPUBLICKEY (which pins the key,
 * not the certificate, and cannot report what it saw on first use) and over
 * CURLOPT_CERTINFO (only readable after the request went out).
 */
#include "redfish/http.h"
#include "redfish/curl_dl.h" /* first: <curl/curl.h>, its calls through a table */
#include "lib/crypto_dl.h"   /* <openssl/evp.h>, <openssl/x509.h>, likewise */

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/util.h"
#include "redfish/rf.h"

#define EXPECT_WAIT_MS 2000 /* for a 100 Continue before an image is sent anyway */
#define MAX_BODY_DEFAULT (32u * 1024 * 1024)
/*
 * What all the answers of one session (one node, one run of a verb) may
 * bring together: what a walk holds is made of them, so this bounds it too
 * (1,000 pages of expanded members could otherwise take gigabytes).
 */
#define BUDGET_DEFAULT ((size_t)GF_RF_BUDGET_MIB << 20)
#define MAX_REDIRECTS 5
#define CONNECT_MAX_S 10.0
#define HEADER_MAX 4096

struct rf_http {
	CURL *curl;
	CURLM *multi; /* runs curl's transfers in slices that look at the Ctrl-C flag */
	char *base;   /* "https://host:port" */
	char *node;
	double deadline;
	bool auth;   /* send credentials */
	char *token; /* secret */
	char *user;
	char *password; /* secret */
	/* TLS */
	bool pinning;
	char *pin;
	bool pin_taken; /* pin is the first certificate of this handle (first use) */
	bool pin_mismatch;
	char seen[RF_FP_HEX + 1]; /* fingerprint at the latest handshake, "" before */
	bool hook;                /* the verify hook is installed */
	const gf_cancel_flag *cancel;
	size_t max_body;
	bool too_big;
	size_t budget;                /* bytes all answers may bring */
	size_t received;              /* bytes the answers brought so far */
	bool spent;                   /* an answer went past the budget: no more requests */
	bool cleanup;                 /* rf_http_cleanup_mode(): the budget no longer stops us */
	struct rf_resp *cur;          /* the response being filled */
	const struct rf_body *stream; /* rf_http_request_body(): the body, read as it is sent */
	bool stream_failed;           /* and its source failed */
	char errbuf[CURL_ERROR_SIZE];
	struct curl_slist *stream_hdrs; /* rf_http_stream_begin(): the stream's headers */
	struct rf_resp sresp;           /* and its response headers */
};

static void free_secret(char **s)
{
	gf_free_secret(*s);
	*s = NULL;
}

void rf_resp_release(struct rf_resp *r)
{
	gf_buf_release(&r->body);
	free(r->etag);
	gf_free_secret(r->token);
	free(r->location);
	free(r->retry_after);
	memset(r, 0, sizeof(*r));
}

static void fingerprint(X509 *cert, char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	static const char hex[] = "0123456789abcdef";

	out[0] = '\0';
	if (!cert || !X509_digest(cert, EVP_sha256(), md, &len) || len * 2 > RF_FP_HEX)
		return;
	for (unsigned int i = 0; i < len; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[2 * len] = '\0';
}

static int verify_hook(X509_STORE_CTX *xs, void *arg)
{
	struct rf_http *h = arg;

	fingerprint(X509_STORE_CTX_get0_cert(xs), h->seen);
	if (!h->pinning)
		return X509_verify_cert(xs);
	if (!h->seen[0]) {
		X509_STORE_CTX_set_error(xs, X509_V_ERR_UNSPECIFIED);
		return 0;
	}
	if (!h->pin) {
		/* First use: this certificate is the pin for every later connection. */
		h->pin = gf_xstrdup(h->seen);
		h->pin_taken = true;
		return 1;
	}
	if (strcmp(h->pin, h->seen) != 0) {
		h->pin_mismatch = true;
		X509_STORE_CTX_set_error(xs, X509_V_ERR_CERT_REJECTED);
		return 0;
	}
	return 1;
}

static CURLcode ssl_ctx_hook(CURL *curl, void *sslctx, void *arg)
{
	struct rf_http *h = arg;

	/*
	 * With CURLOPT_SSL_VERIFYPEER off, curl asks OpenSSL not to fail the
	 * handshake on a bad chain; when pinning, the pin decides, so the
	 * handshake must fail on a mismatch.
	 */
	if (h->pinning)
		SSL_CTX_set_verify(sslctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_cert_verify_callback(sslctx, verify_hook, h);
	return CURLE_OK;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct rf_http *h = ud;
	size_t n = size * nmemb;

	if (h->cur->body.len + n > h->max_body) {
		h->too_big = true;
		return 0; /* curl stops with CURLE_WRITE_ERROR */
	}
	if (!h->cleanup && n > h->budget - h->received) {
		h->spent = true;
		return 0;
	}
	h->received += n;
	gf_buf_add(&h->cur->body, data, n);
	return n;
}

/* "Name: value\r\n": the value when the name is @name, trimmed, else NULL. */
static char *header_value(const char *line, size_t len, const char *name)
{
	size_t nl = strlen(name);
	const char *v, *e;

	if (len <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0)
		return NULL;
	v = line + nl + 1;
	e = line + len;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
		e--;
	return gf_xstrndup(v, (size_t)(e - v));
}

/* Does a WWW-Authenticate value offer the Basic scheme (one of its challenges)? */
static bool offers_basic(const char *v)
{
	const char *p = v;

	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (strncasecmp(p, "Basic", 5) == 0 && (p[5] == '\0' || p[5] == ' ' || p[5] == ','))
			return true;
		p += strcspn(p, ",");
	}
	return false;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct rf_http *h = ud;
	size_t n = size * nmemb;
	char *v;

	if (n > HEADER_MAX)
		return n; /* nothing we read is that long: ignore it */
	/* A new status line (after a 100 Continue) starts a new set of headers. */
	if (n > 5 && strncmp(data, "HTTP/", 5) == 0) {
		free(h->cur->etag);
		gf_free_secret(h->cur->token);
		free(h->cur->location);
		free(h->cur->retry_after);
		h->cur->etag = h->cur->token = h->cur->location = h->cur->retry_after = NULL;
		h->cur->basic_offered = false;
		return n;
	}
	if ((v = header_value(data, n, "ETag"))) {
		free(h->cur->etag);
		h->cur->etag = v;
	} else if ((v = header_value(data, n, "X-Auth-Token"))) {
		gf_free_secret(h->cur->token);
		h->cur->token = v;
	} else if ((v = header_value(data, n, "Location"))) {
		free(h->cur->location);
		h->cur->location = v;
	} else if ((v = header_value(data, n, "Retry-After"))) {
		free(h->cur->retry_after);
		h->cur->retry_after = v;
	} else if ((v = header_value(data, n, "WWW-Authenticate"))) {
		h->cur->basic_offered = h->cur->basic_offered || offers_basic(v);
		free(v);
	}
	return n;
}

/* The body of rf_http_request_body(), as libcurl sends it. */
static size_t on_read(char *buf, size_t size, size_t nitems, void *ud)
{
	struct rf_http *h = ud;
	size_t got = h->stream->read(h->stream->ud, buf, size * nitems);

	if (got == (size_t)-1) {
		h->stream_failed = true;
		return CURL_READFUNC_ABORT;
	}
	return got;
}

/* libcurl rewinds a body only to its start (a resend). */
static int on_seek(void *ud, curl_off_t offset, int origin)
{
	struct rf_http *h = ud;

	if (offset != 0 || origin != SEEK_SET)
		return CURL_SEEKFUNC_CANTSEEK;
	return h->stream->rewind(h->stream->ud) == 0 ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const struct rf_http *h = ud;

	return h->cancel && *h->cancel ? 1 : 0;
}

int rf_http_new(const struct rf_http_opts *o, struct rf_http **ret, struct gf_err *err)
{
	struct rf_http *h;
	struct gf_buf b = GF_BUF_INIT;
	CURLcode cc;

	if (rf_curl_load(err) < 0)
		return GF_E_NODE;
	if (!o->host || !*o->host)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "node '%s' has no BMC address",
				  o->node ? o->node : "?");
	h = gf_xcalloc(1, sizeof(*h));
	h->curl = curl_easy_init();
	h->multi = h->curl ? curl_multi_init() : NULL;
	if (!h->multi) {
		if (h->curl)
			curl_easy_cleanup(h->curl);
		free(h);
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "libcurl could not start");
	}
	h->node = gf_xstrdup(o->node ? o->node : o->host);
	h->deadline = o->deadline;
	h->auth = true;
	h->cancel = o->cancel;
	h->max_body = o->max_body ? o->max_body : MAX_BODY_DEFAULT;
	h->budget = o->budget ? o->budget : BUDGET_DEFAULT;
	h->pinning = !o->insecure && !o->verify_none && (o->pin || o->pin_new);
	h->pin = o->pin ? gf_xstrdup(o->pin) : NULL;
	/* An IPv6 literal needs brackets in a URL. */
	if (strchr(o->host, ':'))
		gf_buf_addf(&b, "https://[%s]:%d", o->host, o->port ? o->port : 443);
	else
		gf_buf_addf(&b, "https://%s:%d", o->host, o->port ? o->port : 443);
	h->base = gf_buf_detach(&b);

	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(h->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, h);
	curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->max_body);
	curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "gpufleet/" GF_VERSION);
	/* Every new connection does a full handshake, so the hook sees every certificate. */
	curl_easy_setopt(h->curl, CURLOPT_SSL_SESSIONID_CACHE, 0L);
	if (o->insecure || o->verify_none || h->pinning) {
		curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYHOST, 2L);
		if (o->cacert)
			curl_easy_setopt(h->curl, CURLOPT_CAINFO, o->cacert);
	}
	curl_easy_setopt(h->curl, CURLOPT_SSL_CTX_DATA, h);
	cc = curl_easy_setopt(h->curl, CURLOPT_SSL_CTX_FUNCTION, ssl_ctx_hook);
	h->hook = cc == CURLE_OK;
	if (!h->hook && h->pinning) {
		rf_http_free(h);
		return gf_err_set(err, GF_E_NODE, GF_EK_TLS,
				  "certificate pinning for '%s' needs libcurl built with OpenSSL",
				  o->node ? o->node : o->host);
	}
	*ret = h;
	return 0;
}

void rf_http_free(struct rf_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	curl_multi_cleanup(h->multi);
	curl_slist_free_all(h->stream_hdrs);
	rf_resp_release(&h->sresp);
	free(h->base);
	free(h->node);
	free_secret(&h->token);
	free(h->user);
	free_secret(&h->password);
	free(h->pin);
	free(h);
}

void rf_http_set_token(struct rf_http *h, const char *token)
{
	free_secret(&h->token);
	h->token = token ? gf_xstrdup(token) : NULL;
}

void rf_http_set_basic(struct rf_http *h, const char *user, const char *password)
{
	free(h->user);
	free_secret(&h->password);
	h->user = user ? gf_xstrdup(user) : NULL;
	h->password = password ? gf_xstrdup(password) : NULL;
}

void rf_http_auth(struct rf_http *h, bool on)
{
	h->auth = on;
}

size_t rf_http_set_max_body(struct rf_http *h, size_t max)
{
	size_t old = h->max_body;

	h->max_body = max ? max : MAX_BODY_DEFAULT;
	curl_easy_setopt(h->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->max_body);
	return old;
}

void rf_http_set_deadline(struct rf_http *h, double deadline)
{
	h->deadline = deadline;
}

const gf_cancel_flag *rf_http_set_cancel(struct rf_http *h, const gf_cancel_flag *cancel)
{
	const gf_cancel_flag *old = h->cancel;

	h->cancel = cancel;
	return old;
}

void rf_http_cleanup_mode(struct rf_http *h, double seconds)
{
	double t = gf_monotime() + seconds;

	if (t > h->deadline)
		h->deadline = t;
	h->cancel = NULL;
	h->cleanup = true;
}

const char *rf_http_fingerprint(const struct rf_http *h)
{
	/* Pinned on first use: the certificate accepted, not one refused later. */
	if (h->pin_taken)
		return h->pin;
	return h->seen[0] ? h->seen : NULL;
}

/*
 * Is @url on our scheme, host and port? Then the path part, else NULL. The
 * host is compared without case, and a URL without a port means 443, as
 * BMCs write their task monitors ("https://10.0.0.5/redfish/v1/...").
 */
static const char *same_origin(const struct rf_http *h, const char *url)
{
	const char *host = h->base + 8, *ours_port = strrchr(host, ':');
	const char *auth = url + 8, *end, *port;
	size_t hlen = (size_t)(ours_port - host);

	if (strncasecmp(url, "https://", 8) != 0)
		return NULL;
	end = auth + strcspn(auth, "/?#");
	/* The port follows the last ':' outside an IPv6 literal's brackets. */
	port = end;
	for (const char *q = end; q > auth && q[-1] != ']'; q--)
		if (q[-1] == ':') {
			port = q - 1;
			break;
		}
	if ((size_t)(port - auth) != hlen || strncasecmp(auth, host, hlen) != 0)
		return NULL;
	if (port == end ? strcmp(ours_port + 1, "443") != 0
			: ((size_t)(end - port - 1) != strlen(ours_port + 1) ||
			   strncmp(port + 1, ours_port + 1, (size_t)(end - port - 1)) != 0))
		return NULL;
	return *end == '/' ? end : (*end == '\0' ? end : NULL);
}

static int build_url(struct rf_http *h, const char *path, struct gf_buf *url, struct gf_err *err)
{
	const char *p = path;

	gf_buf_reset(url);
	if (strncasecmp(path, "https://", 8) == 0 || strncasecmp(path, "http://", 7) == 0) {
		p = same_origin(h, path);
		if (!p)
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "bmc '%s' points to '%s', another host; not followed",
					  h->node, path);
	}
	if (*p != '/')
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' gave a link that is not a path ('%.80s')", h->node,
				  path);
	/* Links are sent as given; a space or control byte would be an invalid request line. */
	for (const char *q = p; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "bmc '%s' gave a link with blanks in it ('%.80s')",
					  h->node, path);
	gf_buf_adds(url, h->base);
	gf_buf_adds(url, p);
	return 0;
}

/* Seconds from a Retry-After value (delta seconds or an HTTP date); -1 when unreadable. */
static double retry_after(const char *v)
{
	char *end;
	long s;
	time_t t;

	if (!v || !*v)
		return -1;
	if (isdigit((unsigned char)*v)) {
		s = strtol(v, &end, 10);
		if (*end == '\0' && s >= 0)
			return (double)s;
		return -1;
	}
	t = curl_getdate(v, NULL);
	if (t < 0)
		return -1;
	return difftime(t, time(NULL)) > 0 ? difftime(t, time(NULL)) : 0;
}

static int over_budget(const struct rf_http *h, const char *url, struct gf_err *err)
{
	return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
			  "bmc '%s' sent more than %zu MiB in this run, the budget of one node "
			  "(stopped at '%s')",
			  h->node, h->budget >> 20, url);
}

static int curl_fail(struct rf_http *h, CURLcode cc, const char *url, struct gf_err *err)
{
	const char *why = h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc);
	enum gf_errkind kind;

	if (h->pin_mismatch && h->pin_taken)
		return gf_err_set(err, GF_E_NODE, GF_EK_TLS,
				  "certificate of bmc '%s' changed during the run: first sha256 %s, "
				  "now %s on a new connection (nothing was sent on it)",
				  h->node, h->pin, h->seen[0] ? h->seen : "?");
	if (h->pin_mismatch)
		return gf_err_set(err, GF_E_NODE, GF_EK_TLS,
				  "certificate of bmc '%s' changed: pinned sha256 %s, now %s "
				  "(if expected, run 'gpufleet nodes repin %s')",
				  h->node, h->pin ? h->pin : "?", h->seen[0] ? h->seen : "?",
				  h->node);
	if (h->too_big)
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' sent more than %zu MiB for '%s'", h->node,
				  h->max_body >> 20, url);
	if (h->spent && !h->cleanup)
		return over_budget(h, url, err);
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT: kind = GF_EK_TIMEOUT; break;
	case CURLE_ABORTED_BY_CALLBACK:
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				  "interrupted while talking to bmc '%s'", h->node);
	case CURLE_SSL_CONNECT_ERROR:
		/* A handshake the peer cut short (a BMC restarting) says nothing of its certificate. */
		if (strstr(why, "Connection reset") || strstr(why, "Recv failure") ||
		    strstr(why, "SSL_ERROR_SYSCALL") || strstr(why, "unexpected eof")) {
			kind = GF_EK_CONNECT;
			break;
		}
		kind = GF_EK_TLS;
		break;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_USE_SSL_FAILED: kind = GF_EK_TLS; break;
	case CURLE_FILESIZE_EXCEEDED:
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' announced more than %zu MiB for '%s'", h->node,
				  h->max_body >> 20, url);
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING: kind = GF_EK_CONNECT; break;
	default: kind = GF_EK_PROTOCOL; break;
	}
	if (kind == GF_EK_TLS) {
		int rc = gf_err_set(err, GF_E_NODE, kind,
				    "certificate of bmc '%s' is not trusted (%s); see --cacert, "
				    "--tls-pin new or --insecure",
				    h->node, why);

		if (err)
			err->detail = (long)cc; /* a handshake cut short is no verdict on it */
		return rc;
	}
	return gf_err_set(err, GF_E_NODE, kind, "%s '%s' of bmc '%s' failed (%s)",
			  kind == GF_EK_TIMEOUT ? "request" : "connection to", url, h->node, why);
}

/*
 * The credentials of the next request: the token as a header (added to
 * @hdrs, returned), else Basic, else none.
 */
static struct curl_slist *with_auth(struct rf_http *h, struct curl_slist *hdrs)
{
	struct gf_buf line = GF_BUF_INIT;

	if (h->auth && h->token) {
		gf_buf_addf(&line, "X-Auth-Token: %s", h->token);
		hdrs = curl_slist_append(hdrs, gf_buf_str(&line));
		gf_buf_release_secret(&line);
	}
	if (h->auth && !h->token && h->user) {
		curl_easy_setopt(h->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h->curl, CURLOPT_USERNAME, h->user);
		curl_easy_setopt(h->curl, CURLOPT_PASSWORD, h->password ? h->password : "");
	} else {
		curl_easy_setopt(h->curl, CURLOPT_USERNAME, NULL);
		curl_easy_setopt(h->curl, CURLOPT_PASSWORD, NULL);
		curl_easy_setopt(h->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_NONE);
	}
	return hdrs;
}

/*
 * One transfer, as curl_easy_perform() would run it, but in slices of at
 * most CANCEL_SLICE_MS that look at the Ctrl-C flag: libcurl calls its
 * progress function about once a second while a peer is silent, too late
 * for a Ctrl-C that must end the run within a second. The connections stay
 * in h->multi's cache, so the next request of the handle reuses them.
 */
#define CANCEL_SLICE_MS 50

static CURLcode perform(struct rf_http *h)
{
	CURLcode cc = CURLE_OK;
	int running = 1;

	if (curl_multi_add_handle(h->multi, h->curl) != CURLM_OK)
		return CURLE_FAILED_INIT;
	for (;;) {
		CURLMsg *msg;
		int left;

		if (curl_multi_perform(h->multi, &running) != CURLM_OK) {
			cc = CURLE_FAILED_INIT;
			break;
		}
		msg = curl_multi_info_read(h->multi, &left);
		if (msg && msg->msg == CURLMSG_DONE) {
			cc = msg->data.result;
			break;
		}
		if (h->cancel && *h->cancel) {
			cc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		if (curl_multi_poll(h->multi, NULL, 0, CANCEL_SLICE_MS, NULL) != CURLM_OK) {
			cc = CURLE_FAILED_INIT;
			break;
		}
	}
	curl_multi_remove_handle(h->multi, h->curl);
	return cc;
}

/* One exchange, no redirect or retry logic. */
static int exchange(struct rf_http *h, const char *method, const char *url, const char *body,
		    const char *if_match, struct rf_resp *r, struct gf_err *err)
{
	struct curl_slist *hdrs = NULL;
	struct gf_buf line = GF_BUF_INIT;
	double left = h->deadline - gf_monotime();
	CURLcode cc;
	long ms, cms;

	if (h->cancel && *h->cancel)
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				  "interrupted before bmc '%s' answered", h->node);
	if (left <= 0.001)
		return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
				  "bmc '%s' ran out of time before '%s'", h->node, url);
	if (h->spent && !h->cleanup)
		return over_budget(h, url, err);
	/* A body read as it is sent starts again on every exchange (retries, redirects). */
	h->stream_failed = false;
	if (body && h->stream && h->stream->rewind(h->stream->ud) < 0)
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				  "the body for '%s' of bmc '%s' could not be read again", url,
				  h->node);
	ms = (long)ceil(left * 1000);
	cms = (long)ceil((left < CONNECT_MAX_S ? left : CONNECT_MAX_S) * 1000);
	rf_resp_release(r);
	h->cur = r;
	h->errbuf[0] = '\0';
	h->too_big = false;
	h->pin_mismatch = false;

	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	hdrs = curl_slist_append(hdrs, "OData-Version: 4.0");
	if (body && h->stream) {
		gf_buf_addf(&line, "Content-Type: %s", h->stream->type);
		hdrs = curl_slist_append(hdrs, gf_buf_str(&line));
		/*
		 * An image is offered before it is sent: a BMC busy (409, 503) or
		 * that wants a new login (401) says so without costing its upload.
		 * One that ignores Expect gets the body after EXPECT_WAIT_MS.
		 */
		hdrs = curl_slist_append(hdrs, "Expect: 100-continue");
		curl_easy_setopt(h->curl, CURLOPT_EXPECT_100_TIMEOUT_MS, (long)EXPECT_WAIT_MS);
		gf_buf_reset(&line);
	} else if (body)
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	else
		hdrs = curl_slist_append(hdrs, "Content-Type:");
	if (if_match) {
		gf_buf_addf(&line, "If-Match: %s", if_match);
		hdrs = curl_slist_append(hdrs, gf_buf_str(&line));
	}
	gf_buf_release_secret(&line);
	hdrs = with_auth(h, hdrs);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h->curl, CURLOPT_URL, url);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, ms);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, cms);
	if (strcmp(method, "GET") == 0) {
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
		if (body && h->stream) {
			/* Read as it goes (from its start: see above). */
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, NULL);
			curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
			curl_easy_setopt(h->curl, CURLOPT_READFUNCTION, on_read);
			curl_easy_setopt(h->curl, CURLOPT_READDATA, h);
			curl_easy_setopt(h->curl, CURLOPT_SEEKFUNCTION, on_seek);
			curl_easy_setopt(h->curl, CURLOPT_SEEKDATA, h);
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
					 (curl_off_t)h->stream->len);
			curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
		} else if (body) {
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
					 (curl_off_t)strlen(body));
		} else if (strcmp(method, "DELETE") == 0) {
			curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
			curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
		} else {
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, "");
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
		}
	}
	cc = perform(h);
	/* Nothing of the request may outlive it: not the body (a password), not the headers. */
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, NULL);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h->curl, CURLOPT_READFUNCTION, NULL);
	curl_easy_setopt(h->curl, CURLOPT_SEEKFUNCTION, NULL);
	curl_slist_free_all(hdrs);
	h->cur = NULL;
	if (cc == CURLE_ABORTED_BY_CALLBACK && h->stream_failed)
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				  "the body for '%s' of bmc '%s' could not be read while it was sent",
				  url, h->node);
	if (cc != CURLE_OK)
		return curl_fail(h, cc, url, err);
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &r->status);
	return 0;
}

int rf_http_request(struct rf_http *h, const char *method, const char *path, const char *body,
		    const char *if_match, struct rf_resp *ret, struct gf_err *err)
{
	struct gf_buf url = GF_BUF_INIT;
	struct rf_resp r = {0};
	int hops = 0, rc;

	rc = build_url(h, path, &url, err);
	for (;;) {
		double wait;

		if (rc < 0)
			break;
		rc = exchange(h, method, gf_buf_str(&url), body, if_match, &r, err);
		if (rc < 0)
			break;
		if (r.status == 503) {
			wait = retry_after(r.retry_after);
			if (wait < 0)
				break; /* a 503 that says nothing about coming back: an answer */
			if (gf_monotime() + wait >= h->deadline) {
				rc = gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
						"bmc '%s' is unavailable (HTTP 503, retry after %.0f s) "
						"past the deadline",
						h->node, wait);
				break;
			}
			gf_cancel_sleep_until(h->cancel, gf_monotime() + (wait > 0 ? wait : 0.1));
			continue;
		}
		if ((r.status == 301 || r.status == 302 || r.status == 303 || r.status == 307 ||
		     r.status == 308) &&
		    r.location) {
			struct gf_buf next = GF_BUF_INIT;

			if (++hops > MAX_REDIRECTS) {
				rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
						"bmc '%s' redirects '%s' more than %d times",
						h->node, path, MAX_REDIRECTS);
				break;
			}
			rc = build_url(h, r.location, &next, err);
			if (rc == 0) {
				gf_buf_release(&url);
				url = next;
			}
			if (r.status == 303) {
				method = "GET";
				body = NULL;
			}
			continue;
		}
		break;
	}
	gf_buf_release(&url);
	if (rc < 0) {
		rf_resp_release(&r);
		return rc;
	}
	*ret = r;
	return 0;
}

int rf_http_request_body(struct rf_http *h, const char *method, const char *path,
			 const struct rf_body *b, struct rf_resp *ret, struct gf_err *err)
{
	int rc;

	h->stream = b;
	rc = rf_http_request(h, method, path, "", NULL, ret, err);
	h->stream = NULL;
	return rc;
}

static void redfish_message(const struct rf_resp *r, struct gf_buf *out)
{
	json_t *doc = rf_json_parse(gf_buf_str(&r->body), r->body.len, 0, NULL);
	json_t *e = rf_obj(doc, "error");
	const char *msg = NULL;
	size_t i;
	json_t *x;

	json_array_foreach(rf_arr(e, "@Message.ExtendedInfo"), i, x) {
		if ((msg = rf_str(x, "Message")))
			break;
	}
	if (!msg)
		msg = rf_str(e, "message");
	if (msg) {
		/* Keep one line, and not too much of it. */
		for (const char *p = msg; *p && out->len < 200; p++)
			gf_buf_addc(out, (*p == '\n' || *p == '\r') ? ' ' : *p);
	}
	json_decref(doc);
}

static bool is_message(const char *mid, const char *id)
{
	const char *last = mid ? strrchr(mid, '.') : NULL;

	return mid && strcmp(last ? last + 1 : mid, id) == 0;
}

/* Whether the error body of @r names @id (a MessageId "Registry.1.0.<id>", or its code). */
static bool names_message(const struct rf_resp *r, const char *id)
{
	json_t *doc = json_loadb(gf_buf_str(&r->body), r->body.len, 0, NULL);
	json_t *e = rf_obj(doc, "error");
	bool found = is_message(rf_str(e, "code"), id);
	size_t i;
	json_t *x;

	json_array_foreach(rf_arr(e, "@Message.ExtendedInfo"), i, x)
		found = found || is_message(rf_str(x, "MessageId"), id);
	json_decref(doc);
	return found;
}

bool rf_http_password_change_required(const struct rf_resp *r)
{
	return r->status == 403 && names_message(r, "PasswordChangeRequired");
}

int rf_http_status_err(const struct rf_http *h, const char *method, const char *path,
		       const struct rf_resp *r, struct gf_err *err)
{
	struct gf_buf msg = GF_BUF_INIT;
	enum gf_errkind kind;
	int rc;

	redfish_message(r, &msg);
	/*
	 * A factory-state BMC refuses every read until the account's password
	 * is changed: one auth error that says so, not a refusal per resource.
	 */
	if (rf_http_password_change_required(r)) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				"bmc '%s' wants the account's password changed before any read "
				"(HTTP 403 PasswordChangeRequired)",
				h->node);
		if (err)
			err->detail = r->status;
		gf_buf_release(&msg);
		return rc;
	}
	switch (r->status) {
	case 401: kind = GF_EK_AUTH; break;
	case 404:
	case 405:
	case 501: kind = GF_EK_UNSUPPORTED; break;
	default: kind = r->status >= 500 ? GF_EK_PROTOCOL : GF_EK_REFUSED; break;
	}
	if (kind == GF_EK_AUTH)
		rc = gf_err_set(err, GF_E_NODE, kind, "bmc '%s' rejected the login (HTTP 401)%s%s",
				h->node, msg.len ? ": " : "", gf_buf_str(&msg));
	else
		rc = gf_err_set(err, GF_E_NODE, kind, "bmc '%s' answered %s '%s' with HTTP %ld%s%s",
				h->node, method, path, r->status, msg.len ? ": " : "",
				gf_buf_str(&msg));
	if (err)
		err->detail = r->status;
	gf_buf_release(&msg);
	return rc;
}

int rf_http_stream_begin(struct rf_http *h, const char *path, const char *last_event_id,
			 size_t (*write)(char *data, size_t size, size_t nmemb, void *ud), void *ud,
			 void **ret_easy, struct gf_err *err)
{
	struct gf_buf url = GF_BUF_INIT, line = GF_BUF_INIT;
	struct curl_slist *hdrs = NULL;
	int rc = build_url(h, path, &url, err);

	if (rc < 0)
		return rc;
	if (h->stream_hdrs)
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				  "bmc '%s' has a stream open already", h->node);
	hdrs = curl_slist_append(hdrs, "Accept: text/event-stream");
	hdrs = curl_slist_append(hdrs, "Cache-Control: no-cache");
	hdrs = curl_slist_append(hdrs, "OData-Version: 4.0");
	hdrs = curl_slist_append(hdrs, "Content-Type:");
	if (last_event_id && *last_event_id) {
		gf_buf_addf(&line, "Last-Event-ID: %s", last_event_id);
		hdrs = curl_slist_append(hdrs, gf_buf_str(&line));
		gf_buf_release(&line);
	}
	hdrs = with_auth(h, hdrs);
	rf_resp_release(&h->sresp);
	h->cur = &h->sresp;
	h->errbuf[0] = '\0';
	h->pin_mismatch = false;
	h->stream_hdrs = hdrs;
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h->curl, CURLOPT_URL, gf_buf_str(&url));
	curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, NULL);
	curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
	/* A stream has no end: the caller watches for stalls and its deadline. */
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, 0L);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(CONNECT_MAX_S * 1000));
	curl_easy_setopt(h->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)0);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, write);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, ud);
	gf_buf_release(&url);
	*ret_easy = h->curl;
	return 0;
}

int rf_http_stream_end(struct rf_http *h, int cc, long *ret_status, struct gf_err *err)
{
	char url[256];
	char *u = NULL;
	int rc = 0;

	*ret_status = 0;
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, ret_status);
	curl_easy_getinfo(h->curl, CURLINFO_EFFECTIVE_URL, &u);
	snprintf(url, sizeof(url), "%s", u ? u : "?");
	if (cc != CURLE_OK && cc != CURLE_WRITE_ERROR)
		rc = curl_fail(h, (CURLcode)cc, url, err);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(h->stream_hdrs);
	h->stream_hdrs = NULL;
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)h->max_body);
	h->cur = NULL;
	return rc;
}
