/*
 * Redfish Event records and LogEntries into struct gf_event. The dialects
 * differ in where they put things (the captures of tests/data/redfish/ and
 * /work/shared/redfish-mockups): OriginOfCondition is an object in an
 * EventRecord and under Links in a LogEntry; Severity is deprecated for
 * MessageSeverity in newer services, and some send only one; the sensor
 * and the severity may sit under Oem (the dialect table, via rf_sel_entry).
 */
#include "redfish/events.h"

#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/cper.h"
#include "redfish/rf.h"

/* The most bytes one CPER record fetched from an AdditionalDataURI may have. */
#define CPER_URI_MAX (1024u * 1024)
/* Before this (2001-09-09) a BMC clock was not set: no time rather than 1970. */
#define SANE_TIME 1000000000.0

static const char *origin_of(const json_t *o)
{
	json_t *v = json_object_get(o, "OriginOfCondition");

	if (json_is_string(v))
		return json_string_value(v);
	if (v)
		return rf_odata_id(v);
	return rf_odata_id(rf_obj(rf_obj(o, "Links"), "OriginOfCondition"));
}

static const char *severity_text(const json_t *o)
{
	const char *s = rf_str(o, "MessageSeverity");

	if (!s)
		s = rf_str(o, "Severity");
	if (!s)
		s = rf_oem_str(o, RF_OEM_SEL_SEVERITY);
	return s;
}

/* CPER diagnostic data and a Resolution into a payload (new reference), or NULL. */
static json_t *payload_of(const json_t *o)
{
	const char *type = rf_str(o, "DiagnosticDataType");
	const char *data = rf_str(o, "DiagnosticData");
	const char *res = rf_str(o, "Resolution");
	json_t *p = NULL, *cper = NULL;
	struct gf_err e = {0};

	if (data && (rf_eq(type, "CPER") || rf_eq(type, "CPERSection"))) {
		p = json_object();
		if (gf_cper_decode_base64(data, &cper, &e) == 0)
			json_object_set_new(p, "cper", cper);
		else
			json_object_set_new(p, "cper_error", json_string(e.msg));
	}
	if (res && *res) {
		if (!p)
			p = json_object();
		json_object_set_new(p, "resolution", json_string(res));
	}
	return p;
}

static void fill_common(struct gf_event *ev, const json_t *o, const char *node, double received)
{
	ev->node = gf_xstrdup(node ? node : "");
	ev->received = received;
	ev->severity = gf_event_severity_redfish(severity_text(o));
	ev->message = rf_dup(rf_str(o, "Message"));
	ev->message_id = rf_dup(rf_str(o, "MessageId"));
	ev->origin = rf_dup(origin_of(o));
	ev->payload = payload_of(o);
}

static void set_time(struct gf_event *ev, const char *a, const char *b)
{
	double t;

	if ((rf_time_parse(a, &t) || rf_time_parse(b, &t)) && t >= SANE_TIME) {
		ev->has_time = true;
		ev->time = t;
	}
}

int gf_redfish_event_parse(const json_t *doc, const char *node, double received,
			   struct gf_event_list *ret, struct gf_err *err)
{
	json_t *records = rf_arr(doc, "Events");
	size_t i, n;
	json_t *r;

	if (!json_is_object(doc) || !records)
		return gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL,
				  "bmc '%s' sent an event that is not a Redfish Event (no Events array)",
				  node ? node : "?");
	n = json_array_size(records);
	if (n > GF_RF_EVENT_MAX_RECORDS)
		return gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL,
				  "bmc '%s' sent an event of %zu records (at most %u taken)",
				  node ? node : "?", n, GF_RF_EVENT_MAX_RECORDS);
	json_array_foreach(records, i, r) {
		struct gf_event *ev;
		char idx[48];
		const char *id;

		if (!json_is_object(r))
			continue;
		ev = gf_event_list_add(ret);
		fill_common(ev, r, node, received);
		ev->source = gf_xstrdup(GF_RF_SOURCE_SSE);
		id = rf_str(r, "EventId");
		if (!id) {
			/* Some services leave EventId out: the payload's Id and the index. */
			snprintf(idx, sizeof(idx), "%.16s.%zu",
				 rf_str(doc, "Id") ? rf_str(doc, "Id") : "", i);
			id = idx;
		}
		ev->bmc_id = gf_xstrdup(id);
		ev->type = rf_dup(rf_str(r, "EventType"));
		set_time(ev, rf_str(r, "EventTimestamp"), NULL);
	}
	return 0;
}

int gf_redfish_logentry_parse(const json_t *entry, const char *node, double received,
			      struct gf_event *ret, struct gf_err *err)
{
	struct gf_sel_list sel = {0};
	struct gf_event ev = {0};
	const char *type;

	if (!rf_sel_entry(entry, &sel))
		return gf_err_set(err, GF_E_USAGE, GF_EK_PROTOCOL,
				  "bmc '%s' sent a log entry that is not an object",
				  node ? node : "?");
	fill_common(&ev, entry, node, received);
	ev.source = gf_xstrdup(GF_RF_SOURCE_LOG);
	/* The SEL normalizer knows where each dialect keeps the id and the sensor. */
	ev.bmc_id = sel.v[0].id;
	sel.v[0].id = NULL;
	ev.sensor = sel.v[0].sensor;
	sel.v[0].sensor = NULL;
	type = rf_str(entry, "SensorType");
	ev.type = rf_dup(type ? type : rf_str(entry, "EntryType"));
	set_time(&ev, rf_str(entry, "Created"), rf_str(entry, "EventTimestamp"));
	gf_sel_list_release(&sel);
	*ret = ev;
	return 0;
}

static bool numeric(const char *s, unsigned long long *v)
{
	char *end;

	if (!s || !*s || *s < '0' || *s > '9')
		return false;
	*v = strtoull(s, &end, 10);
	return *end == '\0';
}

bool gf_redfish_log_newer(const char *a, const char *b)
{
	unsigned long long x, y;
	size_t la, lb;

	if (!b)
		return true;
	if (!a)
		return false;
	if (numeric(a, &x) && numeric(b, &y))
		return x > y;
	la = strlen(a);
	lb = strlen(b);
	return la != lb ? la > lb : strcmp(a, b) > 0;
}

/*
 * A LogEntry whose CPER record is not inline but behind its
 * AdditionalDataURI (on the same BMC: the request layer refuses another
 * host): fetched, at most CPER_URI_MAX bytes, and decoded into the event's
 * payload ("cper", or "cper_error" why not; "cper_uri" the link).
 */
static void cper_by_uri(struct rf_client *c, const json_t *entry, struct gf_event *ev)
{
	const char *type = rf_str(entry, "DiagnosticDataType");
	const char *uri = rf_str(entry, "AdditionalDataURI");
	struct gf_buf b = GF_BUF_INIT;
	struct gf_err e = {0};
	json_t *cper = NULL;

	if (!uri || !*uri || rf_str(entry, "DiagnosticData") || !c->io->get_bytes ||
	    !(rf_eq(type, "CPER") || rf_eq(type, "CPERSection")))
		return;
	if (!ev->payload)
		ev->payload = json_object();
	json_object_set_new(ev->payload, "cper_uri", json_string(uri));
	if (c->io->get_bytes(c->ud, uri, CPER_URI_MAX, &b, &e) == 0 &&
	    gf_cper_decode((const unsigned char *)b.s, b.len, &cper, &e) == 0)
		json_object_set_new(ev->payload, "cper", cper);
	else
		json_object_set_new(ev->payload, "cper_error", json_string(e.msg));
	gf_buf_release(&b);
}

static int by_id(const void *x, const void *y)
{
	const struct gf_event *a = x, *b = y;

	if (gf_redfish_log_newer(a->bmc_id, b->bmc_id))
		return 1;
	return gf_redfish_log_newer(b->bmc_id, a->bmc_id) ? -1 : 0;
}

int gf_redfish_log_since(void *session, const char *cursor, double received,
			 struct gf_event_list *ret, char **ret_cursor, struct gf_err *err)
{
	struct rf_client *c = rf_session_client(session);
	struct gf_event_list got = {0};
	json_t *entries = NULL, *e;
	const char *newest = cursor;
	size_t i;
	int rc;

	rc = rf_sel_entries(c, &entries, err);
	if (rc < 0)
		return rc;
	json_array_foreach(entries, i, e) {
		struct gf_event ev;

		if (gf_redfish_logentry_parse(e, c->node, received, &ev, NULL) < 0)
			continue;
		if (!ev.bmc_id || !gf_redfish_log_newer(ev.bmc_id, cursor)) {
			gf_event_release(&ev);
			continue;
		}
		cper_by_uri(c, e, &ev); /* new entries only: each record fetched once */
		*gf_event_list_add(&got) = ev;
	}
	json_decref(entries);
	gf_sort(got.v, got.n, sizeof(*got.v), by_id);
	for (i = 0; i < got.n; i++) {
		if (gf_redfish_log_newer(got.v[i].bmc_id, newest))
			newest = got.v[i].bmc_id;
	}
	*ret_cursor = newest ? gf_xstrdup(newest) : NULL;
	for (i = 0; i < got.n; i++)
		*gf_event_list_add(ret) = got.v[i];
	free(got.v);
	return 0;
}
