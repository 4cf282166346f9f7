/*
 * A test driver of redfish/sse.c and redfish/events.c until `gpufleet
 * events follow` wires them (built for the tests only, never installed):
 * follows the event streams of the BMCs given, one multiplexer, and prints
 * one JSON object per line for each thing the hooks hand over. With --log,
 * a stream that resumed has its event log read since the newest entry
 * seen when it first connected (gf_redfish_log_since), as the follow loop
 * would.
 *
 *   sse_follow --user U --password-file F [--cacert F] [--stall S]
 *              [--duration S] [--backoff S] [--max-event N] [--log]
 *              NODE=ADDR:PORT[@LAST_ID] ...
 *
 * Lines: {"kind": "connected"|"event"|"resumed"|"poll"|"failed"|"dropped"|
 * "log"|"end", "node": ..., ...}. Exit 0, or 2 on bad arguments.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/creds.h"
#include "lib/file.h"
#include "lib/util.h"
#include "redfish/events.h"
#include "redfish/redfish.h"
#include "redfish/sse.h"

#define MAX_NODES 64

static gf_cancel_flag stop;

struct node {
	char *name, *host;
	int port;
	char *log_cursor; /* the newest log entry seen */
	bool log_known;
};

struct driver {
	struct node nodes[MAX_NODES];
	struct gf_bmc_target t[MAX_NODES];
	size_t n;
	bool log;
	struct gf_profile *prof;
	const char *cacert;
};

static void on_signal(int sig)
{
	stop = 1;
}

static void emit(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	printf("%s\n", s);
	fflush(stdout);
	free(s);
	json_decref(o);
}

static json_t *line(const struct driver *d, const char *kind, size_t i)
{
	return json_pack("{s:s,s:s}", "kind", kind, "node", d->nodes[i].name);
}

static void hook_events(void *ud, size_t i, struct gf_event_list *evs, const char *cursor)
{
	struct driver *d = ud;

	for (size_t k = 0; k < evs->n; k++) {
		json_t *o = line(d, "event", i);

		json_object_set_new(o, "cursor", cursor ? json_string(cursor) : json_null());
		json_object_set_new(o, "event", gf_event_to_json(&evs->v[k]));
		emit(o);
	}
}

/* The event log since the node's log cursor; @print: as events, else only the cursor moves. */
static void read_log(struct driver *d, size_t i, bool print)
{
	struct gf_bmc_target t = d->t[i];
	struct gf_event_list evs = {0};
	struct gf_err err = {0};
	char *cursor = NULL;
	void *s = NULL;
	int rc;

	t.deadline = gf_monotime() + 20;
	rc = gf_redfish_backend.open(&t, &s, &err);
	if (rc == 0)
		rc = gf_redfish_log_since(s, d->nodes[i].log_cursor, gf_walltime(), &evs, &cursor,
					  &err);
	if (s)
		gf_redfish_backend.close(s);
	if (rc < 0) {
		json_t *o = line(d, "log", i);

		json_object_set_new(o, "error", json_string(err.msg));
		emit(o);
		return;
	}
	for (size_t k = 0; print && k < evs.n; k++) {
		json_t *o = line(d, "event", i);

		json_object_set_new(o, "cursor", json_string(evs.v[k].bmc_id));
		json_object_set_new(o, "event", gf_event_to_json(&evs.v[k]));
		emit(o);
	}
	{
		json_t *o = line(d, "log", i);

		json_object_set_new(o, "read", json_integer((json_int_t)evs.n));
		json_object_set_new(o, "cursor", cursor ? json_string(cursor) : json_null());
		emit(o);
	}
	gf_event_list_release(&evs);
	free(d->nodes[i].log_cursor);
	d->nodes[i].log_cursor = cursor;
	d->nodes[i].log_known = true;
}

static void hook_connected(void *ud, size_t i, bool again)
{
	struct driver *d = ud;
	json_t *o = line(d, "connected", i);

	json_object_set_new(o, "again", json_boolean(again));
	emit(o);
	if (d->log && !d->nodes[i].log_known)
		read_log(d, i, false);
}

static void hook_resumed(void *ud, size_t i, const char *last_id)
{
	struct driver *d = ud;
	json_t *o = line(d, "resumed", i);

	json_object_set_new(o, "last_id", last_id ? json_string(last_id) : json_null());
	emit(o);
	if (d->log)
		read_log(d, i, true);
}

static void hook_err(struct driver *d, const char *kind, size_t i, const struct gf_err *e)
{
	json_t *o = line(d, kind, i);

	json_object_set_new(o, "error", json_string(e ? e->msg : ""));
	json_object_set_new(o, "error_kind", json_string(e ? gf_errkind_name(e->kind) : ""));
	emit(o);
}

static void hook_poll(void *ud, size_t i, const struct gf_err *why)
{
	hook_err(ud, "poll", i, why);
}

static void hook_failed(void *ud, size_t i, const struct gf_err *why)
{
	hook_err(ud, "failed", i, why);
}

static void hook_dropped(void *ud, size_t i, const struct gf_err *why)
{
	hook_err(ud, "dropped", i, why);
}

static int usage(const char *why)
{
	fprintf(stderr, "sse_follow: %s\n", why);
	return 2;
}

int main(int argc, char **argv)
{
	struct driver d = {0};
	struct gf_profile prof = {0};
	struct gf_rf_sse_opts o = {0};
	struct gf_rf_sse_hooks h = {
		.ud = &d,
		.events = hook_events,
		.connected = hook_connected,
		.resumed = hook_resumed,
		.poll = hook_poll,
		.failed = hook_failed,
		.dropped = hook_dropped,
	};
	struct gf_rf_sse *m = NULL;
	struct gf_err err = {0};
	const char *pwfile = NULL;
	double duration = 30;
	char *pw = NULL;
	size_t pwlen;
	int rc;

	prof.name = (char *)"lab";
	for (int a = 1; a < argc; a++) {
		const char *arg = argv[a];
		const char *val = a + 1 < argc ? argv[a + 1] : NULL;

		if (strcmp(arg, "--log") == 0) {
			d.log = true;
			continue;
		}
		if (arg[0] == '-' && !val)
			return usage("an option without its value");
		if (strcmp(arg, "--user") == 0)
			prof.bmc_user = (char *)val;
		else if (strcmp(arg, "--password-file") == 0)
			pwfile = val;
		else if (strcmp(arg, "--cacert") == 0)
			d.cacert = val;
		else if (strcmp(arg, "--stall") == 0)
			o.stall_s = strtod(val, NULL);
		else if (strcmp(arg, "--duration") == 0)
			duration = strtod(val, NULL);
		else if (strcmp(arg, "--backoff") == 0)
			o.backoff_min = strtod(val, NULL);
		else if (strcmp(arg, "--max-event") == 0)
			o.max_event = (size_t)strtoul(val, NULL, 10);
		else if (arg[0] == '-')
			return usage("unknown option");
		else {
			const char *eq = strchr(arg, '='), *colon = eq ? strrchr(eq, ':') : NULL;
			const char *at = colon ? strchr(colon, '@') : NULL;
			struct node *nd = &d.nodes[d.n];

			if (!eq || !colon || d.n == MAX_NODES)
				return usage("a node is NAME=ADDR:PORT[@LAST_ID]");
			nd->name = gf_xstrndup(arg, (size_t)(eq - arg));
			nd->host = gf_xstrndup(eq + 1, (size_t)(colon - eq - 1));
			nd->port = atoi(colon + 1);
			d.t[d.n] = (struct gf_bmc_target){
				.node = nd->name,
				.host = nd->host,
				.port = nd->port,
				.prof = &prof,
				.cacert = NULL,
			};
			d.nodes[d.n].log_cursor = at ? gf_xstrdup(at + 1) : NULL;
			d.n++;
			continue;
		}
		a++;
	}
	if (!prof.bmc_user || !pwfile || d.n == 0)
		return usage("give --user, --password-file and at least one node");
	if (gf_file_read(pwfile, 1u << 20, 0, &pw, &pwlen, &err) < 0)
		return usage(err.msg);
	while (pwlen > 0 && (pw[pwlen - 1] == '\n' || pw[pwlen - 1] == '\r'))
		pw[--pwlen] = '\0';
	prof.bmc_password = pw;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	o.deadline = gf_monotime() + duration;
	o.cancel = &stop;
	rc = gf_rf_sse_new(&o, &h, &m, &err);
	for (size_t i = 0; rc == 0 && i < d.n; i++) {
		d.t[i].cacert = d.cacert;
		/* The stored SSE cursor and the log cursor are the same id on the lab's BMCs. */
		rc = gf_rf_sse_add(m, &d.t[i], d.nodes[i].log_cursor, NULL, &err);
		d.nodes[i].log_known = d.nodes[i].log_cursor != NULL;
	}
	if (rc == 0)
		rc = gf_rf_sse_run(m, &err);
	gf_rf_sse_free(m);
	if (rc < 0)
		fprintf(stderr, "sse_follow: %s\n", err.msg);
	emit(json_pack("{s:s}", "kind", "end"));
	for (size_t i = 0; i < d.n; i++) {
		free(d.nodes[i].name);
		free(d.nodes[i].host);
		free(d.nodes[i].log_cursor);
	}
	gf_free_secret(pw);
	return rc < 0 ? 1 : 0;
}
