/*
 * Server-Sent Events of a fleet's BMCs in one libcurl multi loop.
 *
 * The parser follows the WHATWG "event stream interpretation": lines end
 * with CRLF, LF or CR; a blank line dispatches; "data" lines join with LF;
 * "id" with a NUL is ignored; ":" starts a comment. What it holds is
 * bounded by its caps whatever the peer sends, and it never waits for more
 * than a line.
 *
 * Each stream is a session of the backend (redfish/redfish.c: login,
 * token or Basic, pins) whose easy handle, set up by rf_http_stream_begin(),
 * is driven by the multi handle. Opening a session (login, EventService)
 * blocks, bounded by open_s: it is done by a small pool of opener threads
 * (opts.openers), so that a fleet's streams open at once rather than one
 * login after another, while the loop's thread keeps reading the streams
 * already open. A stream being opened belongs to its opener until it is
 * handed back (the `opened` list, under the mutex); only the loop's thread
 * starts its GET and runs the hooks. Time the loop spent away from its
 * sockets (a hook that blocked) is not counted against a stream's stall.
 */
#include "redfish/sse.h"
#include "redfish/curl_dl.h" /* first: <curl/curl.h>, its calls through a table */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/util.h"
#include "redfish/events.h"
#include "redfish/http.h"
#include "redfish/redfish.h"
#include "redfish/rf.h"

/* ---- parser ------------------------------------------------------------- */

void gf_sse_parser_init(struct gf_sse_parser *p, size_t max_line, size_t max_event)
{
	memset(p, 0, sizeof(*p));
	p->max_line = max_line ? max_line : GF_SSE_MAX_LINE_DEFAULT;
	p->max_event = max_event ? max_event : GF_SSE_MAX_EVENT_DEFAULT;
	gf_buf_init(&p->line);
	gf_buf_init(&p->data);
	gf_buf_init(&p->event);
	p->retry_ms = -1;
}

void gf_sse_parser_release(struct gf_sse_parser *p)
{
	gf_buf_release(&p->line);
	gf_buf_release(&p->data);
	gf_buf_release(&p->event);
}

void gf_sse_parser_reset(struct gf_sse_parser *p)
{
	gf_buf_reset(&p->line);
	gf_buf_reset(&p->data);
	gf_buf_reset(&p->event);
	p->id_set = false;
	p->skip_lf = false;
	p->started = false;
}

static bool field_is(const char *f, size_t n, const char *name)
{
	return strlen(name) == n && memcmp(f, name, n) == 0;
}

static int dispatch(struct gf_sse_parser *p,
		    int (*on_event)(void *ud, const struct gf_sse_msg *m, struct gf_err *err),
		    void *ud, struct gf_err *err)
{
	struct gf_sse_msg m;
	int rc = 0;

	if (p->data.len > 0) {
		p->data.len--; /* the LF after the last data line */
		m = (struct gf_sse_msg){
			.id = p->has_id ? p->id : NULL,
			.id_set = p->id_set,
			.event = gf_buf_str(&p->event),
			.data = (gf_buf_add(&p->data, "", 0), gf_buf_str(&p->data)),
			.data_len = p->data.len,
		};
		rc = on_event(ud, &m, err);
	}
	gf_buf_reset(&p->data);
	gf_buf_reset(&p->event);
	p->id_set = false;
	return rc;
}

static int line_done(struct gf_sse_parser *p, const char *s, size_t n,
		     int (*on_event)(void *ud, const struct gf_sse_msg *m, struct gf_err *err),
		     void *ud, struct gf_err *err)
{
	const char *colon, *v;
	size_t fn, vn;

	if (!p->started) {
		p->started = true;
		if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
			s += 3;
			n -= 3;
		}
	}
	if (n == 0)
		return dispatch(p, on_event, ud, err);
	if (s[0] == ':') {
		p->comments++;
		return 0;
	}
	colon = memchr(s, ':', n);
	fn = colon ? (size_t)(colon - s) : n;
	v = colon ? colon + 1 : s + n;
	vn = (size_t)(s + n - v);
	if (vn > 0 && *v == ' ') {
		v++;
		vn--;
	}
	if (field_is(s, fn, "data")) {
		if (p->data.len + vn + 1 > p->max_event)
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "event larger than %zu bytes", p->max_event);
		gf_buf_add(&p->data, v, vn);
		gf_buf_addc(&p->data, '\n');
	} else if (field_is(s, fn, "event")) {
		gf_buf_reset(&p->event);
		gf_buf_add(&p->event, v, vn);
	} else if (field_is(s, fn, "id")) {
		if (memchr(v, '\0', vn))
			return 0; /* the specification: ignored */
		if (vn > GF_SSE_MAX_ID)
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "event id longer than %u bytes", GF_SSE_MAX_ID);
		memcpy(p->id, v, vn);
		p->id[vn] = '\0';
		p->has_id = true;
		p->id_set = true;
	} else if (field_is(s, fn, "retry")) {
		long ms = 0;
		size_t k;

		for (k = 0; k < vn && v[k] >= '0' && v[k] <= '9' && ms < 86400000L; k++)
			ms = ms * 10 + (v[k] - '0');
		if (vn > 0 && k == vn)
			p->retry_ms = ms;
	}
	return 0;
}

int gf_sse_parser_feed(struct gf_sse_parser *p, const char *buf, size_t n,
		       int (*on_event)(void *ud, const struct gf_sse_msg *m, struct gf_err *err),
		       void *ud, struct gf_err *err)
{
	size_t i = 0;
	int rc;

	if (n > 0 && p->skip_lf && buf[0] == '\n')
		i = 1;
	if (n > 0)
		p->skip_lf = false;
	while (i < n) {
		size_t j = i;

		while (j < n && buf[j] != '\n' && buf[j] != '\r')
			j++;
		if (p->line.len + (j - i) > p->max_line)
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "line longer than %zu bytes without an end", p->max_line);
		if (j == n) {
			gf_buf_add(&p->line, buf + i, j - i);
			break;
		}
		if (p->line.len > 0) {
			gf_buf_add(&p->line, buf + i, j - i);
			rc = line_done(p, p->line.s, p->line.len, on_event, ud, err);
			gf_buf_reset(&p->line);
		} else {
			rc = line_done(p, buf + i, j - i, on_event, ud, err);
		}
		if (rc < 0)
			return rc;
		if (buf[j] == '\r') {
			if (j + 1 < n && buf[j + 1] == '\n')
				j++;
			else if (j + 1 == n)
				p->skip_lf = true;
		}
		i = j + 1;
	}
	return 0;
}

/* ---- the multiplexer ---------------------------------------------------- */

#define STALL_S 90.0
#define OPEN_S 10.0
#define BACKOFF_MIN_S 1.0
#define BACKOFF_MAX_S 30.0
#define MAX_RATE 2000u
#define REFUSALS 3u
#define ERRBODY_MAX 1024u
#define TICK_S 0.2 /* the longest wait between two looks at the cancel flag */
#define OPENERS 16u
#define AWAY_S 1.0 /* a turn later than this: the loop was away, not the streams silent */

enum st {
	ST_WAIT,      /* not connected; next try at next_try */
	ST_OPENING,   /* an opener thread logs in (the stream is its own until handed back) */
	ST_STREAMING, /* the GET is on the multi handle */
	ST_DONE,      /* handed to poll, failed, or ended */
};

struct stream {
	struct gf_rf_sse *m;
	size_t i;
	struct gf_bmc_target t; /* borrowed strings */
	enum st st;
	void *sess; /* a backend session while connected */
	void *easy; /* its easy handle, on the multi handle */
	char *uri;  /* ServerSentEventUri, once read */
	char *fp;   /* the certificate first seen (pinned for the reconnects) */
	struct gf_sse_parser p;
	double next_try, wait;
	double last_byte;
	bool was_up;     /* streamed before: the next connection is a resume */
	bool up;         /* this connection got its 2xx and bytes */
	bool stalled;    /* this connection was ended for want of bytes */
	bool hostile;    /* this connection was ended by a bad stream */
	bool msg_failed; /* by on_msg(), whose message names the node */
	struct gf_err fail;
	unsigned refused;
	unsigned seed;
	double rate_t0;
	unsigned rate_n;
	char last[GF_SSE_MAX_ID + 1];
	bool has_last;
	struct gf_buf errbody;
	/* What an opener did (read by the loop once handed back). */
	struct stream *qnext; /* in the to-open or the opened list */
	int open_rc;
	bool open_no_sse; /* logged in, but nothing to stream: poll */
	struct gf_err open_err;
};

struct gf_rf_sse {
	struct gf_rf_sse_opts o;
	struct gf_rf_sse_hooks h;
	CURLM *multi;
	struct stream **s;
	size_t n, cap;
	double last_turn; /* monotonic, the end of the last step */
	/* The openers: streams to open and opened, under mu; stop ends their logins. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct stream *todo, *todo_tail, *opened;
	pthread_t *th;
	size_t nth;
	bool halt;
	gf_cancel_flag stop;
};

static double jittered(struct stream *s, double w)
{
	return w / 2 + w / 2 * (double)rand_r(&s->seed) / (double)RAND_MAX;
}

int gf_rf_sse_new(const struct gf_rf_sse_opts *o, const struct gf_rf_sse_hooks *h,
		  struct gf_rf_sse **ret, struct gf_err *err)
{
	struct gf_rf_sse *m = gf_xcalloc(1, sizeof(*m));

	m->o = *o;
	m->h = *h;
	if (m->o.stall_s <= 0)
		m->o.stall_s = STALL_S;
	if (m->o.open_s <= 0)
		m->o.open_s = OPEN_S;
	if (m->o.backoff_min <= 0)
		m->o.backoff_min = BACKOFF_MIN_S;
	if (m->o.backoff_max < m->o.backoff_min)
		m->o.backoff_max = m->o.backoff_min > BACKOFF_MAX_S ? m->o.backoff_min
								    : BACKOFF_MAX_S;
	if (!m->o.max_rate)
		m->o.max_rate = MAX_RATE;
	if (!m->o.refusals)
		m->o.refusals = REFUSALS;
	if (!m->o.openers)
		m->o.openers = OPENERS;
	/* libcurl loaded and set up once for the process; the multi handle needs it. */
	if (rf_curl_load(err) < 0) {
		free(m);
		return GF_E_NODE;
	}
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	m->multi = curl_multi_init();
	if (!m->multi) {
		pthread_mutex_destroy(&m->mu);
		pthread_cond_destroy(&m->cv);
		free(m);
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "libcurl could not start");
	}
	*ret = m;
	return 0;
}

int gf_rf_sse_add(struct gf_rf_sse *m, const struct gf_bmc_target *t, const char *last_id,
		  size_t *ret_index, struct gf_err *err)
{
	struct stream *s;

	if (last_id && strlen(last_id) > GF_SSE_MAX_ID)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "stored event id of node '%s' is longer than %u bytes",
				  t->node ? t->node : "?", GF_SSE_MAX_ID);
	s = gf_xcalloc(1, sizeof(*s));
	s->m = m;
	s->i = m->n;
	s->t = *t;
	s->st = ST_WAIT;
	s->wait = m->o.backoff_min;
	s->seed = (unsigned)(gf_monotime() * 1e6) ^ (unsigned)(m->n * 2654435761u);
	gf_sse_parser_init(&s->p, m->o.max_line, m->o.max_event);
	gf_buf_init(&s->errbody);
	if (last_id) {
		snprintf(s->last, sizeof(s->last), "%s", last_id);
		s->has_last = true;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 8;
		m->s = gf_xrealloc(m->s, m->cap * sizeof(*m->s));
	}
	m->s[m->n++] = s;
	if (ret_index)
		*ret_index = s->i;
	return 0;
}

static const char *node_of(const struct stream *s)
{
	return s->t.node ? s->t.node : (s->t.host ? s->t.host : "?");
}

static bool cancelled(const struct gf_rf_sse *m)
{
	return m->o.cancel && *m->o.cancel;
}

/* ---- what a connection delivers ---- */

static bool numeric_id(const char *s, unsigned long long *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	*v = strtoull(s, &end, 10);
	return *end == '\0';
}

static int on_msg_checked(struct stream *s, const struct gf_sse_msg *msg, struct gf_err *err);

/*
 * The loop did not read for @took seconds (a hook waited: the caller's
 * backpressure, a LogService read): no stream was silent meanwhile, and
 * what piled up in the sockets comes at once, not as a flood.
 */
static void loop_away(struct gf_rf_sse *m, double took)
{
	for (size_t i = 0; i < m->n; i++) {
		struct stream *s = m->s[i];

		if (s->st == ST_STREAMING)
			s->last_byte += took;
		s->rate_t0 += took;
	}
}

/* Hooks that may wait are timed: their time is the loop's absence. */
#define HOOK_AWAY_S 0.01

static int on_msg(void *ud, const struct gf_sse_msg *msg, struct gf_err *err)
{
	struct stream *s = ud;
	int rc = on_msg_checked(s, msg, err);

	s->msg_failed = rc < 0;
	return rc;
}

static int on_msg_checked(struct stream *s, const struct gf_sse_msg *msg, struct gf_err *err)
{
	struct gf_rf_sse *m = s->m;
	struct gf_event_list evs = {0};
	unsigned long long a, b;
	json_error_t je;
	json_t *doc;
	double now = gf_monotime();
	int rc;

	/* JSON has no raw control characters: these are escape sequences meant for a terminal. */
	for (size_t k = 0; k < msg->data_len; k++) {
		unsigned char c = (unsigned char)msg->data[k];

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "bmc '%s' sent control characters in an event (byte 0x%02x)",
					  node_of(s), c);
	}
	if (msg->id_set && s->has_last && numeric_id(msg->id, &a) && numeric_id(s->last, &b) &&
	    a <= b)
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' sent event id %s after %s: ids went backwards",
				  node_of(s), msg->id, s->last);
	if (now - s->rate_t0 >= 1.0) {
		s->rate_t0 = now;
		s->rate_n = 0;
	}
	if (++s->rate_n > m->o.max_rate)
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' sent more than %u events in a second: a flood",
				  node_of(s), m->o.max_rate);
	doc = json_loadb(msg->data, msg->data_len, 0, &je);
	if (!doc)
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' sent an event that is not JSON (%s, at byte %d)",
				  node_of(s), je.text, je.position);
	/* A stream may carry metric reports too: they are not events. */
	if (!rf_arr(doc, "Events") && rf_str(doc, "@odata.type") &&
	    strstr(rf_str(doc, "@odata.type"), "MetricReport")) {
		json_decref(doc);
		rc = 0;
		goto cursor;
	}
	rc = gf_redfish_event_parse(doc, node_of(s), gf_walltime(), &evs, err);
	json_decref(doc);
	if (rc < 0) {
		if (err)
			err->code = GF_E_NODE;
		return GF_E_NODE;
	}
	if (m->h.events) {
		double t0 = gf_monotime(), took;

		m->h.events(m->h.ud, s->i, &evs, msg->id_set ? msg->id : NULL);
		if ((took = gf_monotime() - t0) > HOOK_AWAY_S)
			loop_away(m, took);
	}
	gf_event_list_release(&evs);
cursor:
	if (msg->id_set) {
		snprintf(s->last, sizeof(s->last), "%s", msg->id);
		s->has_last = true;
	}
	return rc;
}

/* The stream answered 2xx: it is up (headers alone do it: no BMC sends keep-alives). */
static void mark_up(struct stream *s)
{
	struct gf_rf_sse *m = s->m;

	if (s->up)
		return;
	s->up = true;
	s->refused = 0;
	s->last_byte = gf_monotime(); /* the stall clock starts when the stream is open */
	if (m->h.connected)
		m->h.connected(m->h.ud, s->i, s->was_up);
	if (s->was_up && m->h.resumed) {
		double t0 = gf_monotime(), took;

		m->h.resumed(m->h.ud, s->i, s->has_last ? s->last : NULL);
		if ((took = gf_monotime() - t0) > HOOK_AWAY_S)
			loop_away(m, took);
	}
	s->was_up = true;
}

static size_t on_bytes(char *data, size_t size, size_t nmemb, void *ud)
{
	struct stream *s = ud;
	size_t n = size * nmemb;
	long status = 0;

	s->last_byte = gf_monotime();
	curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		/* An answer, not a stream: keep a little of it for the message. */
		size_t room = ERRBODY_MAX - s->errbody.len;

		gf_buf_add(&s->errbody, data, n < room ? n : room);
		return n;
	}
	mark_up(s);
	if (gf_sse_parser_feed(&s->p, data, n, on_msg, s, &s->fail) < 0) {
		s->hostile = true;
		if (!s->msg_failed) {
			/* The parser's words ("line longer than ..."): say whose stream. */
			char why[sizeof(s->fail.msg)];

			snprintf(why, sizeof(why), "%s", s->fail.msg);
			gf_err_set(&s->fail, GF_E_NODE, GF_EK_PROTOCOL, "bmc '%s' sent a%s %s",
				   node_of(s), strchr("aeiou", why[0]) ? "n" : "", why);
		}
		return 0; /* libcurl ends the transfer: CURLE_WRITE_ERROR */
	}
	return n;
}

/* ---- connecting and ending ---- */

static void done(struct stream *s)
{
	s->st = ST_DONE;
}

static void to_poll(struct stream *s, const struct gf_err *why)
{
	done(s);
	if (s->m->h.poll)
		s->m->h.poll(s->m->h.ud, s->i, why);
}

static void to_failed(struct stream *s, const struct gf_err *why)
{
	done(s);
	if (s->m->h.failed)
		s->m->h.failed(s->m->h.ud, s->i, why);
}

static void again(struct stream *s, const struct gf_err *why, bool was_up_now)
{
	struct gf_rf_sse *m = s->m;

	if (was_up_now)
		s->wait = m->o.backoff_min;
	/* The BMC's retry: field, within our bounds. */
	if (s->p.retry_ms >= 0 && s->p.retry_ms / 1000.0 > s->wait)
		s->wait = s->p.retry_ms / 1000.0 < m->o.backoff_max ? s->p.retry_ms / 1000.0
								    : m->o.backoff_max;
	s->st = ST_WAIT;
	s->next_try = gf_monotime() + jittered(s, s->wait);
	if (!was_up_now)
		s->wait = s->wait * 2 < m->o.backoff_max ? s->wait * 2 : m->o.backoff_max;
	if (m->h.dropped && why)
		m->h.dropped(m->h.ud, s->i, why);
}

static bool transient(const struct gf_err *e)
{
	return e->code == GF_E_NODE && (e->kind == GF_EK_CONNECT || e->kind == GF_EK_TIMEOUT);
}

static void close_session(struct stream *s)
{
	if (s->sess) {
		const char *fp = rf_http_fingerprint(rf_session_http(s->sess));

		if (fp && !s->fp)
			s->fp = gf_xstrdup(fp);
		gf_redfish_backend.close(s->sess);
		s->sess = NULL;
	}
}

/* The EventService's stream URI; 0 with *ret NULL when there is none to follow (why in @err). */
static int sse_uri(struct stream *s, char **ret, struct gf_err *err)
{
	struct rf_client *c = rf_session_client(s->sess);
	const char *es = rf_link(c->root, "EventService");
	json_t *doc = NULL;
	const char *uri;
	int rc;

	*ret = NULL;
	if (!es) {
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "bmc '%s' has no EventService",
			   node_of(s));
		return 0;
	}
	rc = rf_fetch_opt(c, es, &doc, err);
	if (rc < 0)
		return rc;
	uri = rf_str(doc, "ServerSentEventUri");
	if (!doc || !uri || !*uri)
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "bmc '%s' has no Server-Sent Events (no ServerSentEventUri)",
			   node_of(s));
	else if (rf_bool(doc, "ServiceEnabled") == 0)
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "bmc '%s' has its EventService disabled", node_of(s));
	else
		*ret = gf_xstrdup(uri);
	json_decref(doc);
	return 0;
}

/*
 * Log in and find the stream's URI: blocking, bounded by open_s; on an
 * opener thread (or the loop's, when no thread could be started). Touches
 * only @s, which the loop leaves alone while it is ST_OPENING.
 */
static void open_session(struct stream *s)
{
	struct gf_rf_sse *m = s->m;
	struct gf_bmc_target t = s->t;

	memset(&s->open_err, 0, sizeof(s->open_err));
	s->open_no_sse = false;
	t.deadline = gf_monotime() + m->o.open_s;
	if (m->o.deadline > 0 && m->o.deadline < t.deadline)
		t.deadline = m->o.deadline;
	t.cancel = &m->stop;
	/* Pinning on first use: a reconnection must show the certificate seen first. */
	if (t.tls_pin_new && !t.tls_pin && s->fp)
		t.tls_pin = s->fp;
	s->open_rc = gf_redfish_backend.open(&t, &s->sess, &s->open_err);
	if (s->open_rc == 0 && !s->uri) {
		s->open_rc = sse_uri(s, &s->uri, &s->open_err);
		s->open_no_sse = s->open_rc == 0 && !s->uri;
	}
}

static void *opener(void *ud)
{
	struct gf_rf_sse *m = ud;

	pthread_mutex_lock(&m->mu);
	for (;;) {
		struct stream *s;

		while (!m->halt && !m->todo)
			pthread_cond_wait(&m->cv, &m->mu);
		if (m->halt)
			break;
		s = m->todo;
		m->todo = s->qnext;
		if (!m->todo)
			m->todo_tail = NULL;
		pthread_mutex_unlock(&m->mu);
		open_session(s);
		pthread_mutex_lock(&m->mu);
		s->qnext = m->opened;
		m->opened = s;
		curl_multi_wakeup(m->multi); /* the loop's poll returns: it starts the GET */
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

/* One more opener, up to the bound and to one per stream; false: none could be started. */
static bool grow_openers(struct gf_rf_sse *m)
{
	pthread_attr_t attr;
	bool ok;

	if (m->nth >= m->o.openers || m->nth >= m->n)
		return m->nth > 0;
	m->th = gf_xrealloc(m->th, (m->nth + 1) * sizeof(*m->th));
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, GF_THREAD_STACK);
	ok = pthread_create(&m->th[m->nth], &attr, opener, m) == 0;
	pthread_attr_destroy(&attr);
	m->nth += ok;
	return m->nth > 0;
}

/* What the opener did with @s: its GET on the multi handle, or why not (on the loop's thread). */
static void opened(struct stream *s)
{
	struct gf_rf_sse *m = s->m;
	struct gf_err e = s->open_err;
	int rc = s->open_rc;

	if (s->sess && !s->fp) { /* known at once: the caller may pin it on first use */
		const char *fp = rf_http_fingerprint(rf_session_http(s->sess));

		s->fp = fp ? gf_xstrdup(fp) : NULL;
	}
	if (rc == 0 && s->open_no_sse) {
		close_session(s);
		to_poll(s, &e);
		return;
	}
	if (rc == 0) {
		gf_sse_parser_reset(&s->p);
		gf_buf_reset(&s->errbody);
		s->up = s->stalled = s->hostile = s->msg_failed = false;
		s->last_byte = gf_monotime();
		rc = rf_http_stream_begin(rf_session_http(s->sess), s->uri,
					  s->has_last ? s->last : NULL, on_bytes, s, &s->easy, &e);
	}
	if (rc == 0 && curl_multi_add_handle(m->multi, s->easy) != CURLM_OK) {
		long status;

		rf_http_stream_end(rf_session_http(s->sess), CURLE_OK, &status, NULL);
		rc = gf_err_set(&e, GF_E_NODE, GF_EK_INTERNAL,
				"the stream of bmc '%s' could not be started", node_of(s));
	}
	if (rc < 0) {
		s->easy = NULL;
		close_session(s);
		if (transient(&e) && !cancelled(m))
			again(s, &e, false);
		else
			to_failed(s, &e);
		return;
	}
	s->st = ST_STREAMING;
}

/* The streams due to connect go to the openers; those they are done with start streaming. */
static void connect_due(struct gf_rf_sse *m)
{
	double now = gf_monotime();
	struct stream *done_list;

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n && !cancelled(m); i++) {
		struct stream *s = m->s[i];

		if (s->st != ST_WAIT || s->next_try > now ||
		    (m->o.deadline > 0 && now >= m->o.deadline))
			continue;
		if (!grow_openers(m)) { /* no thread: here, one at a time */
			pthread_mutex_unlock(&m->mu);
			open_session(s);
			opened(s);
			pthread_mutex_lock(&m->mu);
			continue;
		}
		s->st = ST_OPENING;
		s->qnext = NULL;
		if (m->todo_tail)
			m->todo_tail->qnext = s;
		else
			m->todo = s;
		m->todo_tail = s;
		pthread_cond_signal(&m->cv);
	}
	done_list = m->opened;
	m->opened = NULL;
	pthread_mutex_unlock(&m->mu);
	while (done_list) {
		struct stream *s = done_list;

		done_list = s->qnext;
		s->qnext = NULL;
		opened(s);
	}
}

/* The transfer of @s ended with @cc (or was stopped by us: stall, deadline). */
static void finish(struct stream *s, CURLcode cc, bool ending)
{
	struct gf_rf_sse *m = s->m;
	struct gf_err e = {0};
	long status = 0;
	int rc;

	curl_multi_remove_handle(m->multi, s->easy);
	s->easy = NULL;
	rc = rf_http_stream_end(rf_session_http(s->sess), s->stalled ? CURLE_OK : (int)cc, &status,
				&e);
	close_session(s);
	if (ending || cancelled(m)) {
		done(s);
		return;
	}
	if (s->hostile) {
		to_failed(s, &s->fail);
		return;
	}
	if (s->stalled) {
		gf_err_set(&e, GF_E_NODE, GF_EK_TIMEOUT,
			   "stream of bmc '%s' sent nothing for %.0f s: reconnecting", node_of(s),
			   m->o.stall_s);
		again(s, &e, s->up);
		return;
	}
	if (status == 401 || status == 403) {
		gf_err_set(&e, GF_E_NODE, GF_EK_AUTH,
			   "bmc '%s' refused the event stream to this login (HTTP %ld)", node_of(s),
			   status);
		e.detail = status;
		to_failed(s, &e);
		return;
	}
	if (status == 404 || status == 405 || status == 501) {
		gf_err_set(&e, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "bmc '%s' has no event stream at '%s' (HTTP %ld)", node_of(s), s->uri,
			   status);
		e.detail = status;
		to_poll(s, &e);
		return;
	}
	if (status && (status < 200 || status > 299)) {
		/* bmcweb answers the 11th stream with an error: no stream to be had now. */
		gf_err_set(&e, GF_E_NODE, GF_EK_REFUSED,
			   "bmc '%s' refused another event stream (HTTP %ld)", node_of(s), status);
		e.detail = status;
		if (!s->was_up || ++s->refused >= m->o.refusals)
			to_poll(s, &e);
		else
			again(s, &e, false);
		return;
	}
	if (rc == 0)
		gf_err_set(&e, GF_E_NODE, GF_EK_CONNECT, "bmc '%s' closed its event stream",
			   node_of(s));
	if (!transient(&e) && e.kind != GF_EK_PROTOCOL && !s->up) {
		to_failed(s, &e); /* TLS, a changed certificate: not worth another try */
		return;
	}
	again(s, &e, s->up);
}

static size_t active(const struct gf_rf_sse *m)
{
	size_t k = 0;

	for (size_t i = 0; i < m->n; i++)
		k += m->s[i]->st != ST_DONE;
	return k;
}

int gf_rf_sse_step(struct gf_rf_sse *m, double max_wait, struct gf_err *err)
{
	double now = gf_monotime(), wake;
	int running = 0, left;
	CURLMsg *msg;
	CURLMcode mc;

	if (cancelled(m))
		m->stop = 1; /* the openers' logins end too */
	/* The loop was away (a hook blocked): the streams' bytes waited in their sockets. */
	if (m->last_turn > 0 && now - m->last_turn > AWAY_S)
		loop_away(m, now - m->last_turn);
	connect_due(m);
	mc = curl_multi_perform(m->multi, &running);
	if (mc != CURLM_OK)
		return gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "the event loop failed (%s)",
				  curl_multi_strerror(mc));
	while ((msg = curl_multi_info_read(m->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		for (size_t i = 0; i < m->n; i++)
			if (m->s[i]->st == ST_STREAMING && m->s[i]->easy == msg->easy_handle) {
				finish(m->s[i], msg->data.result, false);
				break;
			}
	}
	for (size_t i = 0; i < m->n; i++) {
		struct stream *s = m->s[i];
		long status = 0;

		if (s->st == ST_STREAMING && !s->up &&
		    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
		    status >= 200 && status <= 299)
			mark_up(s);
	}
	now = gf_monotime();
	wake = now + max_wait;
	for (size_t i = 0; i < m->n; i++) {
		struct stream *s = m->s[i];

		if (s->st == ST_STREAMING && now - s->last_byte >= m->o.stall_s) {
			s->stalled = true;
			finish(s, CURLE_OK, false);
		}
		if (s->st == ST_STREAMING && s->last_byte + m->o.stall_s < wake)
			wake = s->last_byte + m->o.stall_s;
		if (s->st == ST_WAIT && s->next_try < wake)
			wake = s->next_try;
	}
	if (m->o.deadline > 0 && m->o.deadline < wake)
		wake = m->o.deadline;
	if (wake > now + TICK_S)
		wake = now + TICK_S;
	if (active(m) > 0 && wake > now) {
		mc = curl_multi_poll(m->multi, NULL, 0, (int)((wake - now) * 1000) + 1, NULL);
		if (mc != CURLM_OK)
			return gf_err_set(err, GF_E_IO, GF_EK_INTERNAL,
					  "the event loop failed (%s)", curl_multi_strerror(mc));
	}
	m->last_turn = gf_monotime(); /* from here to the next step: the caller's time */
	return (int)active(m);
}

int gf_rf_sse_run(struct gf_rf_sse *m, struct gf_err *err)
{
	int rc = 0;

	while (!cancelled(m) && (m->o.deadline <= 0 || gf_monotime() < m->o.deadline)) {
		rc = gf_rf_sse_step(m, TICK_S, err);
		if (rc <= 0)
			break;
	}
	return rc < 0 ? rc : 0;
}

const char *gf_rf_sse_fingerprint(const struct gf_rf_sse *m, size_t i)
{
	return i < m->n ? m->s[i]->fp : NULL;
}

void gf_rf_sse_free(struct gf_rf_sse *m)
{
	if (!m)
		return;
	m->stop = 1;
	pthread_mutex_lock(&m->mu);
	m->halt = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	for (size_t k = 0; k < m->nth; k++)
		pthread_join(m->th[k], NULL);
	free(m->th);
	for (size_t i = 0; i < m->n; i++) {
		struct stream *s = m->s[i];

		if (s->st == ST_STREAMING)
			finish(s, CURLE_OK, true);
		close_session(s);
		gf_sse_parser_release(&s->p);
		gf_buf_release(&s->errbody);
		free(s->uri);
		free(s->fp);
		free(s);
	}
	free(m->s);
	curl_multi_cleanup(m->multi);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	free(m);
}
