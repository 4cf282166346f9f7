#include "lib/model.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/util.h"

static const char *const state_names[] = {
	[GF_SENSOR_UNKNOWN] = "unknown",
	[GF_SENSOR_NOMINAL] = "nominal",
	[GF_SENSOR_WARNING] = "warning",
	[GF_SENSOR_CRITICAL] = "critical",
};
static const char *const sev_names[] = {
	[GF_SEV_INFO] = "info",
	[GF_SEV_WARNING] = "warning",
	[GF_SEV_CRITICAL] = "critical",
};
static const char *const boot_names[] = {
	[GF_BOOT_NONE] = "none", [GF_BOOT_PXE] = "pxe", [GF_BOOT_DISK] = "disk",
	[GF_BOOT_BIOS] = "bios", [GF_BOOT_CD] = "cd",   [GF_BOOT_OTHER] = "other",
};

static const char *name_of(const char *const *names, size_t n, unsigned v)
{
	return v < n ? names[v] : names[0];
}

static int parse_name(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

const char *gf_sensor_state_name(enum gf_sensor_state s)
{
	return name_of(state_names, NELEM(state_names), s);
}

const char *gf_severity_name(enum gf_severity s)
{
	return name_of(sev_names, NELEM(sev_names), s);
}

const char *gf_boot_dev_name(enum gf_boot_dev d)
{
	return name_of(boot_names, NELEM(boot_names), d);
}

const char *gf_boot_mode_name(enum gf_boot_mode m)
{
	switch (m) {
	case GF_BOOT_MODE_UEFI: return "uefi";
	case GF_BOOT_MODE_LEGACY: return "legacy";
	default: return NULL;
	}
}

int gf_sensor_state_parse(const char *s)
{
	return parse_name(state_names, NELEM(state_names), s);
}

int gf_severity_parse(const char *s)
{
	return parse_name(sev_names, NELEM(sev_names), s);
}

int gf_boot_dev_parse(const char *s)
{
	return parse_name(boot_names, NELEM(boot_names), s);
}

/* Grow a list of @size-byte elements and return the new, zeroed one. */
static void *list_add(void **v, size_t *n, size_t *cap, size_t size)
{
	char *p;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*v = gf_xrealloc(*v, *cap * size);
	}
	p = (char *)*v + *n * size;
	memset(p, 0, size);
	(*n)++;
	return p;
}

struct gf_sensor *gf_sensor_list_add(struct gf_sensor_list *l)
{
	return list_add((void **)&l->v, &l->n, &l->cap, sizeof(*l->v));
}

struct gf_sel_entry *gf_sel_list_add(struct gf_sel_list *l)
{
	return list_add((void **)&l->v, &l->n, &l->cap, sizeof(*l->v));
}

struct gf_component *gf_component_list_add(struct gf_component_list *l)
{
	return list_add((void **)&l->v, &l->n, &l->cap, sizeof(*l->v));
}

void gf_sensor_list_release(struct gf_sensor_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].chassis);
		free(l->v[i].id);
		free(l->v[i].type);
		free(l->v[i].unit);
		free(l->v[i].state_text);
		free(l->v[i].note);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void gf_sel_list_release(struct gf_sel_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].id);
		free(l->v[i].time_note);
		free(l->v[i].sensor);
		free(l->v[i].sensor_type);
		free(l->v[i].event);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void gf_component_list_release(struct gf_component_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].id);
		free(l->v[i].name);
		free(l->v[i].kind);
		free(l->v[i].version);
		json_decref(l->v[i].details);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void gf_gpu_health_release(struct gf_gpu_health *g)
{
	free(g->health);
	for (size_t i = 0; i < g->nnvlinks; i++) {
		free(g->nvlinks[i].id);
		free(g->nvlinks[i].link_status);
		free(g->nvlinks[i].health);
	}
	free(g->nvlinks);
	memset(g, 0, sizeof(*g));
}

void gf_hardware_release(struct gf_hardware *h)
{
	char **strs[] = {
		&h->system.manufacturer, &h->system.model,        &h->system.serial,
		&h->system.uuid,         &h->system.bios_version, &h->chassis.serial,
		&h->chassis.part_number, &h->board.manufacturer,  &h->board.product,
		&h->board.serial,        &h->board.part_number,   &h->product.manufacturer,
		&h->product.name,        &h->product.serial,      &h->product.part_number,
		&h->product.asset_tag,
	};

	for (size_t i = 0; i < NELEM(strs); i++)
		free(*strs[i]);
	for (size_t i = 0; i < h->ncpus; i++)
		free(h->cpus[i]);
	free(h->cpus);
	for (size_t i = 0; i < h->ngpus; i++) {
		free(h->gpus[i].model);
		free(h->gpus[i].serial);
		free(h->gpus[i].firmware);
		gf_gpu_health_release(&h->gpus[i].bmc);
	}
	free(h->gpus);
	memset(h, 0, sizeof(*h));
}

/* A string member, or null: BMCs send text that is not always UTF-8. */
static json_t *str(const char *s)
{
	json_t *v;

	if (!s)
		return json_null();
	v = json_string(s);
	if (!v) {
		/* Keep the printable ASCII, so a broken field still says something. */
		char *c = gf_xstrdup(s);

		for (char *p = c; *p; p++)
			if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
				*p = '?';
		v = json_string(c);
		free(c);
	}
	return v;
}

static json_t *num(struct gf_num n)
{
	return n.set ? json_real(n.v) : json_null();
}

json_t *gf_model_json_str(const char *s)
{
	return str(s);
}

json_t *gf_model_json_num(struct gf_num n)
{
	return num(n);
}

json_t *gf_sensor_to_json(const struct gf_sensor *s)
{
	json_t *o = json_object(), *t = json_object();

	json_object_set_new(o, "name", str(s->name));
	json_object_set_new(o, "chassis", str(s->chassis));
	json_object_set_new(o, "id", str(s->id));
	json_object_set_new(o, "type", str(s->type ? s->type : "other"));
	json_object_set_new(o, "reading", num(s->reading));
	json_object_set_new(o, "unit", str(s->unit));
	json_object_set_new(o, "state", json_string(gf_sensor_state_name(s->state)));
	if (s->state_text)
		json_object_set_new(o, "state_text", str(s->state_text));
	if (s->note)
		json_object_set_new(o, "note", str(s->note));
	if (s->lnr.set)
		json_object_set_new(t, "lower_non_recoverable", num(s->lnr));
	if (s->lc.set)
		json_object_set_new(t, "lower_critical", num(s->lc));
	if (s->lnc.set)
		json_object_set_new(t, "lower_non_critical", num(s->lnc));
	if (s->unc.set)
		json_object_set_new(t, "upper_non_critical", num(s->unc));
	if (s->uc.set)
		json_object_set_new(t, "upper_critical", num(s->uc));
	if (s->unr.set)
		json_object_set_new(t, "upper_non_recoverable", num(s->unr));
	json_object_set_new(o, "thresholds", t);
	return o;
}

json_t *gf_sensors_to_json(const struct gf_sensor_list *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(a, gf_sensor_to_json(&l->v[i]));
	return a;
}

static bool same_chassis(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool leaking(const struct gf_sensor *s)
{
	return s->type && strcmp(s->type, "leak") == 0 &&
	       (s->state == GF_SENSOR_WARNING || s->state == GF_SENSOR_CRITICAL);
}

unsigned gf_sensor_leaks(const struct gf_sensor_list *l)
{
	unsigned n = 0;

	for (size_t i = 0; i < l->n; i++) {
		bool before = false;

		if (!leaking(&l->v[i]))
			continue;
		for (size_t j = 0; j < i && !before; j++)
			before = leaking(&l->v[j]) &&
				 same_chassis(l->v[j].chassis, l->v[i].chassis);
		n += !before;
	}
	return n;
}

json_t *gf_sel_entry_to_json(const struct gf_sel_entry *e)
{
	json_t *o = json_object();
	char when[40];

	json_object_set_new(o, "id", str(e->id));
	if (e->has_time) {
		gf_time_format_secs(e->time, when, sizeof(when));
		json_object_set_new(o, "time", json_string(when));
	} else {
		json_object_set_new(o, "time", json_null());
	}
	if (e->time_note)
		json_object_set_new(o, "time_note", str(e->time_note));
	json_object_set_new(o, "sensor", str(e->sensor));
	json_object_set_new(o, "sensor_type", str(e->sensor_type));
	json_object_set_new(o, "event", str(e->event));
	json_object_set_new(o, "direction",
			    json_string(e->deassertion ? "deassertion" : "assertion"));
	json_object_set_new(o, "severity", json_string(gf_severity_name(e->severity)));
	return o;
}

json_t *gf_sel_to_json(const struct gf_sel_list *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(a, gf_sel_entry_to_json(&l->v[i]));
	return a;
}

json_t *gf_component_to_json(const struct gf_component *c)
{
	json_t *o = json_object();

	json_object_set_new(o, "key", str(c->key));
	json_object_set_new(o, "id", str(c->id));
	json_object_set_new(o, "name", str(c->name));
	json_object_set_new(o, "kind", str(c->kind ? c->kind : "other"));
	json_object_set_new(o, "version", str(c->version));
	json_object_set_new(o, "updateable", json_boolean(c->updateable));
	if (c->details)
		json_object_set(o, "details", c->details);
	return o;
}

json_t *gf_components_to_json(const struct gf_component_list *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(a, gf_component_to_json(&l->v[i]));
	return a;
}

json_t *gf_boot_to_json(const struct gf_boot *b)
{
	const char *mode = gf_boot_mode_name(b->mode);

	return json_pack("{s:s,s:b,s:o}", "device", gf_boot_dev_name(b->dev), "persistent",
			 b->persistent, "mode", mode ? json_string(mode) : json_null());
}

/* ---- events ---- */

struct gf_event *gf_event_list_add(struct gf_event_list *l)
{
	/* Room for one first: an SSE message is one event, and thousands wait under a flood. */
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1;
		l->v = gf_xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	return list_add((void **)&l->v, &l->n, &l->cap, sizeof(*l->v));
}

void gf_event_release(struct gf_event *e)
{
	free(e->node);
	free(e->source);
	free(e->bmc_id);
	free(e->message);
	free(e->message_id);
	free(e->sensor);
	free(e->type);
	free(e->origin);
	free(e->key);
	json_decref(e->payload);
	memset(e, 0, sizeof(*e));
}

void gf_event_list_release(struct gf_event_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		gf_event_release(&l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

enum gf_severity gf_event_severity_redfish(const char *s)
{
	if (!s)
		return GF_SEV_INFO;
	if (!strcasecmp(s, "Critical"))
		return GF_SEV_CRITICAL;
	if (!strcasecmp(s, "Warning"))
		return GF_SEV_WARNING;
	return GF_SEV_INFO;
}

static json_t *time_or_null(bool has, double t)
{
	char when[40];

	if (!has)
		return json_null();
	gf_time_format_secs(t, when, sizeof(when));
	return json_string(when);
}

json_t *gf_event_to_json(const struct gf_event *e)
{
	json_t *o = json_object();

	json_object_set_new(o, "node", str(e->node));
	json_object_set_new(o, "source", str(e->source));
	json_object_set_new(o, "id", str(e->bmc_id));
	json_object_set_new(o, "time", time_or_null(e->has_time, e->time));
	json_object_set_new(o, "received", time_or_null(true, e->received));
	json_object_set_new(o, "severity", json_string(gf_severity_name(e->severity)));
	json_object_set_new(o, "message", str(e->message));
	json_object_set_new(o, "message_id", str(e->message_id));
	json_object_set_new(o, "sensor", str(e->sensor));
	json_object_set_new(o, "type", str(e->type));
	json_object_set_new(o, "origin", str(e->origin));
	json_object_set_new(o, "payload", e->payload ? json_incref(e->payload) : json_null());
	return o;
}
