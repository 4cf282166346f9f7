/*
 * Redfish EventService Server-Sent Events: every stream of a fleet in one
 * libcurl multi loop, on the thread that calls gf_rf_sse_step() or
 * gf_rf_sse_run(). Each stream is a session of the Redfish backend (the
 * same login, token or Basic, TLS verification and pins as every other
 * request: redfish/redfish.c, redfish/http.c) and one long GET of the
 * EventService's ServerSentEventUri with Accept: text/event-stream.
 *
 * What a stream costs is bounded (a line, an event, an id, a rate), and a
 * hostile or broken stream fails alone, with one message for its node.
 * Streams are opened (login, EventService) by up to opts.openers threads
 * at once, not one after another on the loop's thread.
 * A stream that drops or stalls (no byte for stall_s once open: no BMC promises
 * keep-alives) is reconnected with jittered backoff and resumed with
 * Last-Event-ID; then the `resumed` hook tells the caller to read the
 * node's LogService (gf_redfish_log_since(), redfish/events.h) for what
 * the replay may not cover. A BMC without SSE, or that refuses another
 * stream, is handed to the caller to poll (`poll` hook).
 *
 * Nothing here prints or stores: the hooks hand over parsed events and the
 * cursor to store with them; they run on the calling thread, inside the
 * step (some inside libcurl's callbacks: they may make requests of their
 * own, as gf_redfish_log_since() does, on other handles), and must not
 * call back into the multiplexer.
 */
#ifndef GF_RF_SSE_H
#define GF_RF_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/backend.h"
#include "lib/buf.h"
#include "lib/cancel.h"
#include "lib/err.h"
#include "lib/model.h"

/* ---- the text/event-stream parser (pure) ------------------------------- */

#define GF_SSE_MAX_LINE_DEFAULT (64u * 1024)    /* a line without its end, at most */
#define GF_SSE_MAX_EVENT_DEFAULT (1024u * 1024) /* the data of one event, at most */
#define GF_SSE_MAX_ID 256u                      /* an id, at most (it is sent back) */

/* One event as the stream delivered it; borrowed for the callback's time. */
struct gf_sse_msg {
	const char *id;    /* the last event id after this event (NULL: none yet) */
	bool id_set;       /* this event carried an id: field */
	const char *event; /* the event: field, "" when none */
	const char *data;  /* the data: lines joined by '\n' (NUL-terminated) */
	size_t data_len;
};

struct gf_sse_parser {
	size_t max_line, max_event;
	struct gf_buf line;  /* the line being read */
	struct gf_buf data;  /* the event being built */
	struct gf_buf event; /* its event: field */
	char id[GF_SSE_MAX_ID + 1];
	bool has_id, id_set;
	bool skip_lf;    /* the last chunk ended with CR: a LF first in the next is its pair */
	bool started;    /* past a leading byte-order mark */
	long retry_ms;   /* the last retry: field, -1: none */
	size_t comments; /* comment lines seen (keep-alives) */
};

/* @max_line, @max_event 0: the defaults. Release with gf_sse_parser_release(). */
void gf_sse_parser_init(struct gf_sse_parser *p, size_t max_line, size_t max_event);
void gf_sse_parser_release(struct gf_sse_parser *p);
/* A new connection: the partial line and event are dropped, the last id kept. */
void gf_sse_parser_reset(struct gf_sse_parser *p);

/*
 * Feed @n bytes (any split: CR, LF and CRLF ends, a CRLF cut between two
 * chunks included); @on_event is called for each complete event with data
 * (an event without data only moves the id). Returns 0, or a negative
 * GF_E_* with @err filled: a line over max_line ("line longer than ..."),
 * an event over max_event, an id over GF_SSE_MAX_ID or with a NUL, or the
 * first error @on_event returned. After an error the parser is unusable
 * until reset.
 */
int gf_sse_parser_feed(struct gf_sse_parser *p, const char *buf, size_t n,
		       int (*on_event)(void *ud, const struct gf_sse_msg *m, struct gf_err *err),
		       void *ud, struct gf_err *err);

/* ---- the multiplexer --------------------------------------------------- */

struct gf_rf_sse;

struct gf_rf_sse_opts {
	double stall_s;     /* no byte for this long: reconnect (0: 90 s) */
	double open_s;      /* login and EventService read, per attempt (0: 10 s) */
	double backoff_min; /* reconnect waits, jittered in [w/2, w] (0: 1 s) */
	double backoff_max; /* doubled up to this (0: 30 s) */
	size_t max_line;    /* parser caps (0: the defaults above) */
	size_t max_event;
	unsigned max_rate; /* events per second per stream, more is a flood (0: 2000) */
	unsigned refusals; /* refused reconnects before it is handed over to poll (0: 3) */
	unsigned openers;  /* logins at once, each on an opener thread (0: 16) */
	double deadline;   /* monotonic; 0: none */
	const gf_cancel_flag *cancel; /* Ctrl-C; NULL: none */
};

struct gf_rf_sse_hooks {
	void *ud;
	/*
	 * Events parsed from one message of stream @i, and the id to store
	 * with them as the stream's cursor (NULL when the message had none).
	 * @evs is the caller's to take or leave: an entry is taken by copying
	 * the struct and zeroing it in @evs; what remains is released after
	 * the call.
	 */
	void (*events)(void *ud, size_t i, struct gf_event_list *evs, const char *cursor);
	/* Stream @i is streaming (first time, or again after a reconnect). NULL: not told. */
	void (*connected)(void *ud, size_t i, bool again);
	/*
	 * Stream @i reconnected after a drop or a stall and resumed after
	 * @last_id (NULL: it had none): read its LogService for what the
	 * replay may not cover. NULL: not told.
	 */
	void (*resumed)(void *ud, size_t i, const char *last_id);
	/* Stream @i will not stream (no SSE, service disabled, refused): poll its LogService. */
	void (*poll)(void *ud, size_t i, const struct gf_err *why);
	/* Stream @i failed for good (a hostile stream, the login refused, TLS): it is closed. */
	void (*failed)(void *ud, size_t i, const struct gf_err *err);
	/* Stream @i was dropped and will be reconnected (@why); NULL: not told. */
	void (*dropped)(void *ud, size_t i, const struct gf_err *why);
};

/* A multiplexer (nothing connects yet). @o and @h are copied. Free with gf_rf_sse_free(). */
int gf_rf_sse_new(const struct gf_rf_sse_opts *o, const struct gf_rf_sse_hooks *h,
		  struct gf_rf_sse **ret, struct gf_err *err);
/* Closes every stream and deletes its session (bounded, as rf_close). NULL is accepted. */
void gf_rf_sse_free(struct gf_rf_sse *m);

/*
 * Follow the BMC of @t (as for gf_redfish_backend.open: node, host, port,
 * profile with the password, TLS settings; its strings and profile are
 * borrowed and must outlive the multiplexer; its deadline and cancel are
 * the multiplexer's), resuming after @last_id (the stored cursor, NULL:
 * from now on). *ret_index (nullable) is the index the hooks name it by.
 */
int gf_rf_sse_add(struct gf_rf_sse *m, const struct gf_bmc_target *t, const char *last_id,
		  size_t *ret_index, struct gf_err *err);

/*
 * One turn of the loop: connect the streams that are due, move bytes,
 * run the hooks, then wait at most @max_wait seconds for more. Returns the
 * number of streams still followed (0: all ended), or a negative GF_E_* on
 * a failure of the loop itself (not of a stream).
 */
int gf_rf_sse_step(struct gf_rf_sse *m, double max_wait, struct gf_err *err);
/* gf_rf_sse_step() until the deadline, Ctrl-C, or no stream is left. */
int gf_rf_sse_run(struct gf_rf_sse *m, struct gf_err *err);

/* The SHA-256 of the certificate stream @i's BMC showed (pinning), NULL before. */
const char *gf_rf_sse_fingerprint(const struct gf_rf_sse *m, size_t i);

#endif
