/*
 * The System Event Log over IPMI: read every entry and decode it with
 * FreeIPMI's SEL parser (sensor names come from the SDR, see sensors.c), and
 * clear it.
 *
 * Timestamps: IPMI stamps events in seconds since 1970 once the BMC's clock
 * is set; before that (values up to 0x20000000) they count from the BMC's
 * initialisation and are no date at all, so such entries get a null time
 * and time_note "pre-init", and 0xffffffff ("unspecified") gets "unspecified".
 * Severity is FreeIPMI's interpretation of the event
 * (freeipmi_interpret_sel.conf): nominal is info.
 */
#include "ipmi/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <freeipmi/freeipmi.h>

#include "lib/buf.h"
#include "lib/util.h"

/* IPMI 2.0 section 31.2: timestamps up to here are relative to initialisation. */
#define SEL_TIME_PRE_INIT_MAX 0x20000000u
#define SEL_TIME_UNSPECIFIED 0xffffffffu
/* How often a running erase is polled. */
#define ERASE_POLL_S 0.1

struct sel_walk {
	struct ipmi_session *s;
	struct gf_sel_list *out;
	struct gf_err *err;
	int rc;
	uint16_t skip; /* sel_since: the record the walk starts at, not returned */
	bool first;    /* no record seen yet */
	bool found;    /* the first record seen was @skip */
};

/* A FreeIPMI record string (see ipmi_sel_parse_read_record_string), or NULL when empty. */
static char *record_string(ipmi_sel_ctx_t ctx, const char *fmt, const uint8_t *rec, int len)
{
	char buf[512] = "";
	int n = ipmi_sel_parse_read_record_string(ctx, fmt, rec, (unsigned)len, buf, sizeof(buf),
						  IPMI_SEL_STRING_FLAGS_IGNORE_UNAVAILABLE_FIELD);

	if (n <= 0)
		return NULL;
	if ((size_t)n >= sizeof(buf))
		buf[sizeof(buf) - 1] = '\0';
	return buf[0] ? gf_xstrdup(buf) : NULL;
}

static enum gf_severity severity(const uint8_t *rec, int len)
{
	switch (gf_ipmi_interpret_sel(rec, (unsigned)len)) {
	case IPMI_INTERPRET_STATE_WARNING: return GF_SEV_WARNING;
	case IPMI_INTERPRET_STATE_CRITICAL: return GF_SEV_CRITICAL;
	default: return GF_SEV_INFO;
	}
}

static int on_entry(ipmi_sel_ctx_t ctx, void *data)
{
	struct sel_walk *w = data;
	uint8_t rec[IPMI_SEL_RECORD_MAX_RECORD_LENGTH];
	uint16_t id = 0;
	uint8_t rtype = 0, stype = 0, dir = 0;
	uint32_t ts = 0;
	struct gf_sel_entry *e;
	char num[8];
	int len, cls;

	if ((w->rc = gf_ipmi_check_deadline(w->s, "the event log", w->err)) < 0)
		return -1;
	len = ipmi_sel_parse_read_record(ctx, rec, sizeof(rec));
	if (len <= 0 || ipmi_sel_parse_read_record_id(ctx, rec, (unsigned)len, &id) < 0 ||
	    ipmi_sel_parse_read_record_type(ctx, rec, (unsigned)len, &rtype) < 0)
		return 0; /* a record FreeIPMI cannot parse: skip it, as ipmi-sel does */
	if (w->first) {
		w->first = false;
		if (w->skip && id == w->skip) {
			w->found = true;
			return 0;
		}
	}
	cls = ipmi_sel_record_type_class(rtype);

	e = gf_sel_list_add(w->out);
	snprintf(num, sizeof(num), "%u", (unsigned)id);
	e->id = gf_xstrdup(num);
	if (cls == IPMI_SEL_RECORD_TYPE_CLASS_SYSTEM_EVENT_RECORD ||
	    cls == IPMI_SEL_RECORD_TYPE_CLASS_TIMESTAMPED_OEM_RECORD) {
		bool read = ipmi_sel_parse_read_timestamp(ctx, rec, (unsigned)len, &ts) == 0;

		e->stamp = read ? ts : SEL_TIME_UNSPECIFIED;
		if (!read || ts == SEL_TIME_UNSPECIFIED) {
			e->time_note = gf_xstrdup("unspecified");
		} else if (ts <= SEL_TIME_PRE_INIT_MAX) {
			e->time_note = gf_xstrdup("pre-init");
		} else {
			e->has_time = true;
			e->time = (double)ts;
		}
	}
	if (cls == IPMI_SEL_RECORD_TYPE_CLASS_SYSTEM_EVENT_RECORD) {
		e->sensor = record_string(ctx, "%s", rec, len);
		if (ipmi_sel_parse_read_sensor_type(ctx, rec, (unsigned)len, &stype) == 0)
			e->sensor_type = gf_xstrdup(gf_ipmi_sensor_type_name(stype));
		e->event = record_string(ctx, "%E", rec, len);
		if (ipmi_sel_parse_read_event_direction(ctx, rec, (unsigned)len, &dir) == 0)
			e->deassertion = dir == IPMI_SEL_RECORD_DEASSERTION_EVENT;
	} else {
		/* OEM records: the manufacturer's bytes, as ipmi-sel shows them. */
		e->sensor_type = gf_xstrdup("oem");
		e->event = record_string(ctx, "%o", rec, len);
	}
	e->severity = severity(rec, len);
	return 0;
}

static int sel_error(struct ipmi_session *s, ipmi_sel_ctx_t sel, struct gf_err *err)
{
	int e = ipmi_sel_ctx_errnum(sel);
	char why[128];

	switch (e) {
	case IPMI_SEL_ERR_IPMI_ERROR:
	case IPMI_SEL_ERR_SYSTEM_ERROR:
		return gf_ipmi_cmd_error(s, "read the event log", NULL, 0, err);
	case IPMI_SEL_ERR_OUT_OF_MEMORY:
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	case IPMI_SEL_ERR_RESERVATION_CANCELED:
		return gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
				  "bmc '%s' cancelled the event log reservation while it was read "
				  "(the log changed); try again",
				  s->node);
	default:
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s': reading the event log failed (freeipmi: %s)", s->node,
				  gf_ipmi_lower(ipmi_sel_ctx_errormsg(sel), why, sizeof(why)));
	}
}

/*
 * The entries from record @start (IPMI_SEL_RECORD_ID_FIRST: all) into *@ret;
 * with @start, *@ret_found says whether the log still holds it (it is not
 * returned). A record that is gone makes FreeIPMI fail the walk (the BMC
 * answers "not present"): then *@ret_found is false and nothing is read.
 */
static int sel_read(struct ipmi_session *s, uint16_t start, struct gf_sel_list *ret,
		    bool *ret_found, struct gf_err *err)
{
	struct gf_sel_list l = {0};
	struct sel_walk w = {.s = s, .out = &l, .err = err, .first = true};
	ipmi_sdr_ctx_t sdr = NULL;
	ipmi_sel_ctx_t sel = NULL;
	struct gf_err sdr_err = {0};
	int rc;

	/* Sensor names come from the SDR; without it entries are still worth listing. */
	rc = gf_ipmi_sdr_open(s, &sdr, &sdr_err);
	if (rc < 0) {
		if (sdr_err.kind == GF_EK_TIMEOUT || sdr_err.kind == GF_EK_CONNECT ||
		    rc == GF_E_NOMEM) {
			if (err)
				*err = sdr_err;
			return rc;
		}
		sdr = NULL;
	}
	sel = ipmi_sel_ctx_create(s->ctx, sdr);
	if (!sel) {
		rc = gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
		goto out;
	}
	/* Event data parts joined as ipmi-sel joins them. */
	ipmi_sel_ctx_set_separator(sel, " ; ");
	if (start != IPMI_SEL_RECORD_ID_FIRST)
		w.skip = start;
	if (ipmi_sel_parse(sel, start, IPMI_SEL_RECORD_ID_LAST, on_entry, &w) < 0) {
		int e = ipmi_sel_ctx_errnum(sel);

		if (w.rc == 0 && start != IPMI_SEL_RECORD_ID_FIRST && w.first &&
		    (e == IPMI_SEL_ERR_NOT_FOUND || e == IPMI_SEL_ERR_IPMI_ERROR ||
		     e == IPMI_SEL_ERR_NO_SEL_ENTRIES)) {
			*ret_found = false; /* the record is gone: the caller reads it all */
			rc = 0;
			goto out;
		}
		rc = w.rc < 0 ? w.rc : sel_error(s, sel, err);
		goto out;
	}
	if (w.rc < 0) {
		rc = w.rc;
		goto out;
	}
	if (ret_found)
		*ret_found = w.found;
	*ret = l;
	memset(&l, 0, sizeof(l));
	rc = 0;
out:
	gf_sel_list_release(&l);
	if (sel)
		ipmi_sel_ctx_destroy(sel);
	return rc;
}

int gf_ipmi_sel_list(void *session, struct gf_sel_list *ret, struct gf_err *err)
{
	return sel_read(session, IPMI_SEL_RECORD_ID_FIRST, ret, NULL, err);
}

int gf_ipmi_sel_since(void *session, const char *after, struct gf_sel_since *ret,
		      struct gf_err *err)
{
	struct ipmi_session *s = session;
	struct gf_sel_since out = {0};
	unsigned long id = 0;
	bool found = false;
	int rc;

	if (after && gf_parse_uint(after, 1, 0xfffe, &id, NULL, "record id") < 0)
		id = 0; /* not one of ours: read it all */
	if (id) {
		rc = sel_read(s, (uint16_t)id, &out.entries, &found, err);
		if (rc < 0)
			return rc;
		if (found) {
			*ret = out;
			return 0;
		}
		gf_sel_list_release(&out.entries);
	}
	rc = sel_read(s, IPMI_SEL_RECORD_ID_FIRST, &out.entries, NULL, err);
	if (rc < 0)
		return rc;
	out.from_start = true;
	*ret = out;
	return 0;
}

int gf_ipmi_sel_info(void *session, struct gf_sel_info *ret, struct gf_err *err)
{
	struct ipmi_session *s = session;
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_get_sel_info_rs);
	uint64_t n = 0, add = 0, erase = 0;
	int rc = 0;

	if (!rs)
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	if (ipmi_cmd_get_sel_info(s->ctx, rs) < 0) {
		rc = gf_ipmi_cmd_error(s, "get sel info", rs, IPMI_NET_FN_STORAGE_RQ, err);
	} else if (FIID_OBJ_GET(rs, "entries", &n) != 1 ||
		   FIID_OBJ_GET(rs, "most_recent_addition_timestamp", &add) != 1 ||
		   FIID_OBJ_GET(rs, "most_recent_erase_timestamp", &erase) != 1) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				"bmc '%s' sent sel info without its counters", s->node);
	} else {
		*ret = (struct gf_sel_info){.entries = (unsigned long)n,
					    .added = (unsigned long)add,
					    .erased = (unsigned long)erase};
	}
	fiid_obj_destroy(rs);
	return rc;
}

static int reserve(struct ipmi_session *s, fiid_obj_t rs, uint16_t *ret, struct gf_err *err)
{
	uint64_t v = 0;

	fiid_obj_clear(rs);
	if (ipmi_cmd_reserve_sel(s->ctx, rs) < 0)
		return gf_ipmi_cmd_error(s, "reserve sel", rs, IPMI_NET_FN_STORAGE_RQ, err);
	if (FIID_OBJ_GET(rs, "reservation_id", &v) != 1)
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' sent a sel reservation without its id", s->node);
	*ret = (uint16_t)v;
	return 0;
}

/* One Clear SEL command; *@done is true once the erase has completed. */
static int clear_cmd(struct ipmi_session *s, fiid_obj_t rs, uint16_t rid, uint8_t op, bool *done,
		     bool *cancelled, struct gf_err *err)
{
	uint64_t v = 0, cc = 0;

	*cancelled = false;
	fiid_obj_clear(rs);
	if (ipmi_cmd_clear_sel(s->ctx, rid, op, rs) < 0) {
		if (FIID_OBJ_GET(rs, "comp_code", &cc) == 1 &&
		    cc == IPMI_COMP_CODE_RESERVATION_CANCELLED) {
			*cancelled = true;
			return 0;
		}
		return gf_ipmi_cmd_error(s, "clear sel", rs, IPMI_NET_FN_STORAGE_RQ, err);
	}
	if (FIID_OBJ_GET(rs, "erasure_progress", &v) != 1)
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				  "bmc '%s' answered clear sel without the erasure progress",
				  s->node);
	*done = v == IPMI_SEL_CLEAR_ERASE_COMPLETED;
	return 0;
}

/*
 * Reserve, initiate the erase, then poll its status until it has completed
 * or the deadline passes. An erase cancels reservations on some BMCs, so a
 * cancelled reservation while polling is renewed, not an error.
 */
int gf_ipmi_sel_clear(void *session, struct gf_err *err)
{
	struct ipmi_session *s = session;
	fiid_obj_t rs_res = fiid_obj_create(tmpl_cmd_reserve_sel_rs);
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_clear_sel_rs);
	bool done = false, cancelled = false;
	uint16_t rid = 0;
	int rc, tries = 0;

	if (!rs_res || !rs) {
		rc = gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
		goto out;
	}
	/* A reservation can be lost to another client between the two commands. */
	do {
		if ((rc = reserve(s, rs_res, &rid, err)) < 0 ||
		    (rc = clear_cmd(s, rs, rid, IPMI_SEL_CLEAR_OPERATION_INITIATE_ERASE, &done,
				    &cancelled, err)) < 0)
			goto out;
	} while (cancelled && ++tries < 3);
	if (cancelled) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
				"bmc '%s' cancelled every sel reservation (another client is "
				"using the event log)",
				s->node);
		goto out;
	}
	while (!done) {
		if (s->deadline > 0 && gf_monotime() + ERASE_POLL_S > s->deadline) {
			rc = gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					"bmc '%s' was still erasing its event log at the deadline",
					s->node);
			goto out;
		}
		gf_sleep_until(gf_monotime() + ERASE_POLL_S);
		if ((rc = clear_cmd(s, rs, rid, IPMI_SEL_CLEAR_OPERATION_GET_ERASURE_STATUS, &done,
				    &cancelled, err)) < 0)
			goto out;
		if (cancelled && (rc = reserve(s, rs_res, &rid, err)) < 0)
			goto out;
	}
	rc = 0;
out:
	if (rs)
		fiid_obj_destroy(rs);
	if (rs_res)
		fiid_obj_destroy(rs_res);
	return rc;
}
