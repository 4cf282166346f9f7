/*
 * The system event log over Redfish: found among the LogServices of every
 * System and Manager whatever its name (SEL, Sel, IML, Log1, ...; the
 * dialect says which first), or the one the user names; entries normalized
 * into the same model as IPMI's SEL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "redfish/rf.h"

/* Before this (2001-09-09) a BMC clock was not set yet: IPMI says "pre-init". */
#define SANE_TIME 1000000000.0

static enum gf_severity severity_of(const json_t *e)
{
	const char *s = rf_str(e, "Severity");

	if (!s)
		s = rf_oem_str(e, RF_OEM_SEL_SEVERITY);
	if (rf_eq(s, "Critical"))
		return GF_SEV_CRITICAL;
	if (rf_eq(s, "Warning") || rf_eq(s, "Caution"))
		return GF_SEV_WARNING;
	return GF_SEV_INFO;
}

/* The sensor an entry is about: its origin's last path segment, or its number. */
static char *sensor_of(const json_t *e)
{
	const char *name = rf_oem_str(e, RF_OEM_SEL_SENSOR);
	const char *origin;
	double num;
	char buf[32];

	if (name && *name)
		return rf_dup(name);
	/* rf_get() splits on dots, and "@odata.id" holds one: read it directly. */
	origin = rf_odata_id(rf_obj(rf_obj(e, "Links"), "OriginOfCondition"));
	/* A sensor resource names the sensor; a Manager or System names only the source. */
	if (origin &&
	    (strstr(origin, "/Sensors/") || strstr(origin, "/Thermal") || strstr(origin, "/Power")))
		return rf_dup(strrchr(origin, '/') + 1);
	if (rf_num(e, "SensorNumber", &num)) {
		snprintf(buf, sizeof(buf), "#%.0f", num);
		return gf_xstrdup(buf);
	}
	if (origin && *origin) {
		const char *slash = strrchr(origin, '/');

		return rf_dup(slash ? slash + 1 : origin);
	}
	return NULL;
}

bool rf_sel_entry(const json_t *e, struct gf_sel_list *ret)
{
	struct gf_sel_entry *s;
	const char *id = rf_str(e, "Id"), *type, *code;
	double t;

	if (!json_is_object(e))
		return false;
	s = gf_sel_list_add(ret);
	if (!id) {
		const char *odata = rf_odata_id(e);
		const char *slash = odata ? strrchr(odata, '/') : NULL;

		id = slash ? slash + 1 : odata;
	}
	s->id = id ? gf_xstrdup(id) : NULL;
	if (rf_time_parse(rf_str(e, "Created"), &t) ||
	    rf_time_parse(rf_str(e, "EventTimestamp"), &t)) {
		if (t >= SANE_TIME) {
			s->has_time = true;
			s->time = t;
		} else {
			s->time_note = gf_xstrdup("pre-init");
		}
	}
	s->sensor = sensor_of(e);
	type = rf_str(e, "SensorType");
	if (!type)
		type = rf_str(e, "OemSensorType");
	s->sensor_type = rf_dup(type);
	s->event = rf_dup(rf_str(e, "Message"));
	code = rf_str(e, "EntryCode");
	s->deassertion = rf_eq(code, "Deassert");
	s->severity = severity_of(e);
	return true;
}

static long find_named(const json_t *services, const char *name, bool need_entries)
{
	size_t i;
	json_t *s;

	json_array_foreach(services, i, s) {
		if (need_entries && !rf_link(s, "Entries"))
			continue;
		if (rf_eq(rf_str(s, "Id"), name) || rf_eq(rf_odata_id(s), name))
			return (long)i;
	}
	return -1;
}

long rf_sel_pick(const struct rf_dialect *d, const json_t *services, const char *want)
{
	const struct rf_dialect *generic = rf_dialect_by_name("generic");
	size_t i;
	json_t *s;
	long at;

	if (want)
		return find_named(services, want, false);
	for (size_t k = 0; d && d->logs && d->logs[k]; k++)
		if ((at = find_named(services, d->logs[k], true)) >= 0)
			return at;
	for (size_t k = 0; generic && generic->logs[k]; k++)
		if ((at = find_named(services, generic->logs[k], true)) >= 0)
			return at;
	json_array_foreach(services, i, s)
		if (rf_eq(rf_str(s, "LogEntryType"), "SEL") && rf_link(s, "Entries"))
			return (long)i;
	return -1;
}

/* Every LogService of every System, then every Manager. */
static int all_services(struct rf_client *c, json_t **ret, struct gf_err *err)
{
	static const char *const tops[] = {"Systems", "Managers"};
	json_t *out = json_array();
	int rc = 0;

	for (size_t t = 0; t < 2 && rc == 0; t++) {
		json_t *members = NULL;
		size_t i;
		json_t *m;

		rc = rf_collection_of(c, c->root, tops[t], RF_WALK_FETCH | RF_WALK_KEEP, &members,
				      err);
		if (rc < 0)
			break;
		json_array_foreach(members, i, m) {
			json_t *svcs = NULL;

			rc = rf_collection_of(c, m, "LogServices", RF_WALK_FETCH | RF_WALK_KEEP,
					      &svcs, err);
			if (rc < 0)
				break;
			json_array_extend(out, svcs);
			json_decref(svcs);
		}
		json_decref(members);
	}
	if (rc < 0) {
		json_decref(out);
		return rc;
	}
	*ret = out;
	return 0;
}

static void list_names(const json_t *services, struct gf_buf *b)
{
	size_t i;
	json_t *s;

	json_array_foreach(services, i, s) {
		const char *id = rf_str(s, "Id");

		if (id)
			gf_buf_addf(b, "%s%s", b->len ? ", " : "", id);
	}
}

/* The chosen LogService (new reference). */
static int pick_log(struct rf_client *c, json_t **ret, struct gf_err *err)
{
	json_t *services = NULL;
	long at;
	int rc = all_services(c, &services, err);

	if (rc < 0)
		return rc;
	at = rf_sel_pick(c->dialect, services, c->log_name);
	if (at < 0) {
		struct gf_buf names = GF_BUF_INIT;

		list_names(services, &names);
		if (c->log_name)
			rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
					"bmc '%s' has no log service '%s' (it has: %s)", c->node,
					c->log_name, names.len ? gf_buf_str(&names) : "none");
		else
			rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
					"bmc '%s' has no system event log (log services: %s)",
					c->node, names.len ? gf_buf_str(&names) : "none");
		gf_buf_release(&names);
		json_decref(services);
		return rc;
	}
	*ret = json_incref(json_array_get(services, (size_t)at));
	json_decref(services);
	return 0;
}

struct keyed {
	const struct gf_sel_entry *e;
	size_t at;
};

/* Oldest first, as an IPMI SEL reads; entries without a time keep their place at the front. */
static int by_time(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;

	if (x->e->has_time && y->e->has_time && x->e->time != y->e->time)
		return x->e->time < y->e->time ? -1 : 1;
	if (x->e->has_time != y->e->has_time)
		return x->e->has_time ? 1 : -1;
	/* Same second: the record ids tell the order, where they are numbers. */
	if (x->e->id && y->e->id) {
		char *ex, *ey;
		long ix = strtol(x->e->id, &ex, 10), iy = strtol(y->e->id, &ey, 10);

		if (!*ex && !*ey && ex != x->e->id && ey != y->e->id && ix != iy)
			return ix < iy ? -1 : 1;
	}
	return x->at < y->at ? -1 : (x->at > y->at ? 1 : 0);
}

int rf_sel_entries(struct rf_client *c, json_t **ret, struct gf_err *err)
{
	json_t *log = NULL;
	int rc;

	rc = pick_log(c, &log, err);
	if (rc < 0)
		return rc;
	if (!rf_link(log, "Entries")) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"log service '%s' of bmc '%s' has no entries to read",
				rf_str(log, "Id") ? rf_str(log, "Id") : "?", c->node);
		json_decref(log);
		return rc;
	}
	rc = rf_collection_of(c, log, "Entries", RF_WALK_EXPAND, ret, err);
	json_decref(log);
	return rc;
}

int rf_sel_list(struct rf_client *c, struct gf_sel_list *ret, struct gf_err *err)
{
	struct gf_sel_list got = {0};
	json_t *entries = NULL;
	struct keyed *order;
	size_t i;
	json_t *e;
	int rc;

	rc = rf_sel_entries(c, &entries, err);
	if (rc < 0)
		return rc;
	json_array_foreach(entries, i, e)
		rf_sel_entry(e, &got);
	json_decref(entries);
	order = gf_xcalloc(got.n ? got.n : 1, sizeof(*order));
	for (size_t k = 0; k < got.n; k++)
		order[k] = (struct keyed){&got.v[k], k};
	gf_sort(order, got.n, sizeof(*order), by_time);
	for (size_t k = 0; k < got.n; k++)
		*gf_sel_list_add(ret) = *order[k].e;
	free(order);
	free(got.v);
	return 0;
}

int rf_sel_clear(struct rf_client *c, struct gf_err *err)
{
	json_t *log = NULL, *body;
	const char *target;
	int rc = pick_log(c, &log, err);

	if (rc < 0)
		return rc;
	target = rf_str(rf_obj(rf_obj(log, "Actions"), "#LogService.ClearLog"), "target");
	if (!target) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"log service '%s' of bmc '%s' cannot be cleared (no ClearLog action)",
				rf_str(log, "Id") ? rf_str(log, "Id") : "?", c->node);
		json_decref(log);
		return rc;
	}
	body = json_object();
	rc = c->io->send(c->ud, "POST", target, body, NULL, err);
	json_decref(body);
	json_decref(log);
	return rc;
}
