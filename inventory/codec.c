/* The inventory's JSON: node records, files of records, error lists, baseline files. */
#include "inventory/codec.h"

#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "host/facts.h"
#include "inventory/drift.h"
#include "inventory/normalize.h"
#include "lib/buf.h"
#include "lib/util.h"

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

/*
 * Hardware and host facts are typed in a sweep; their JSON is host/facts.c's.
 * What a record shows is that JSON with its keys sorted, as it always was.
 */
static json_t *sorted(json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_t *back = text ? json_loads(text, 0, NULL) : NULL;

	free(text);
	json_decref(doc);
	return back ? back : json_null();
}

/* ---- node records: out ---------------------------------------------------- */

json_t *gf_codec_comp_to_json(const struct gf_inv_comp *c)
{
	return json_pack("{s:s,s:o,s:s,s:o,s:o,s:o}", "key", c->key, "version", jstr(c->version),
			 "source", c->source, "id", jstr(c->raw_id), "name", jstr(c->name), "kind",
			 jstr(c->kind));
}

json_t *gf_codec_errors_to_json(const struct gf_sweep_node *n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n->nerrors; i++)
		json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "op", n->errors[i].op, "kind",
						   gf_errkind_name(n->errors[i].kind), "message",
						   n->errors[i].message));
	return a;
}

json_t *gf_codec_sel_to_json(const struct gf_sel_summary *s)
{
	if (!s->read)
		return json_null();
	return json_pack("{s:I,s:{s:I,s:I,s:I},s:o}", "total", (json_int_t)s->total, "new", "info",
			 (json_int_t)s->new_info, "warning", (json_int_t)s->new_warning, "critical",
			 (json_int_t)s->new_critical, "mark",
			 s->has_mark ? json_real(s->mark) : json_null());
}

json_t *gf_codec_leaks_to_json(const struct gf_sensor_summary *s)
{
	json_t *a = json_array();

	for (size_t i = 0; i < s->nleaks; i++) {
		const struct gf_leak *l = &s->leaks[i];

		json_array_append_new(a, json_pack("{s:o,s:o,s:o,s:s}", "chassis",
						   gf_model_json_str(l->chassis), "id",
						   gf_model_json_str(l->id), "name",
						   gf_model_json_str(l->name), "state",
						   gf_sensor_state_name(l->state)));
	}
	return a;
}

int gf_codec_leaks_from_json(struct gf_sweep *sw, struct gf_sweep_node *n, const json_t *a,
			     struct gf_err *err)
{
	const json_t *v;
	size_t i;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		goto bad;
	json_array_foreach(a, i, v) {
		int st = gf_sensor_state_parse(json_string_value(json_object_get(v, "state")));
		const json_t *ch = json_object_get(v, "chassis"), *id = json_object_get(v, "id"),
			     *name = json_object_get(v, "name");

		if (st < 0 || !json_is_string(id) ||
		    (ch && !json_is_null(ch) && !json_is_string(ch)) ||
		    (name && !json_is_null(name) && !json_is_string(name)))
			goto bad;
		gf_sweep_node_add_leak(sw, n, json_string_value(ch), json_string_value(id),
				       json_string_value(name), (enum gf_sensor_state)st);
	}
	return 0;
bad:
	gf_sweep_node_clear_leaks(n);
	return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
			  "node '%s': 'leaks' must be an array of {chassis, id, name, state}",
			  n->node);
}

json_t *gf_codec_sensors_to_json(const struct gf_sensor_summary *s)
{
	if (!s->read)
		return json_null();
	return json_pack("{s:I,s:I,s:I,s:I}", "nominal", (json_int_t)s->nominal, "warning",
			 (json_int_t)s->warning, "critical", (json_int_t)s->critical, "unknown",
			 (json_int_t)s->unknown);
}

json_t *gf_codec_node_to_json(const struct gf_sweep *sw, const struct gf_sweep_node *n)
{
	json_t *o = json_object(), *comps = json_array();
	char when[40];

	json_object_set_new(o, "sweep", json_integer(n->sweep ? n->sweep : sw->id));
	json_object_set_new(o, "sweep_uid", jstr(sw->uid));
	gf_time_format(n->sweep ? n->time : sw->started, when, sizeof(when));
	json_object_set_new(o, "time", json_string(when));
	if (sw->finished > 0 && (!n->sweep || n->sweep == sw->id)) {
		gf_time_format(sw->finished, when, sizeof(when));
		json_object_set_new(o, "finished", json_string(when));
	}
	json_object_set_new(o, "node", json_string(n->node));
	json_object_set_new(o, "status", json_string(gf_node_status_name(n->status)));
	json_object_set_new(o, "errors", gf_codec_errors_to_json(n));
	json_object_set_new(o, "protocol", jstr(n->protocol));
	json_object_set_new(o, "model", jstr(n->model));
	json_object_set_new(o, "collected",
			    json_pack("{s:b,s:b,s:b}", "firmware", n->fw_read, "bios", n->bios_read,
				      "host", n->host_read));
	for (size_t i = 0; i < n->set->n; i++)
		json_array_append_new(comps, gf_codec_comp_to_json(&n->set->v[i]));
	json_object_set_new(o, GF_CODEC_COMPONENTS, comps);
	json_object_set_new(o, "sel", gf_codec_sel_to_json(&n->sel));
	json_object_set_new(o, "sensors", gf_codec_sensors_to_json(&n->sensors));
	json_object_set_new(o, "leaks",
			    n->sensors.read ? gf_codec_leaks_to_json(&n->sensors) : json_null());
	if (n->hardware)
		json_object_set_new(o, "hardware", sorted(gf_hardware_to_json(n->hardware)));
	if (n->host)
		json_object_set_new(o, "host", sorted(gf_hostfacts_to_json(n->host)));
	return o;
}

/* ---- node records: in ----------------------------------------------------- */

/* A member that is absent or null gives NULL; a wrong type is an error. */
static int get_str(json_t *o, const char *key, const char **ret, const char *where,
		   struct gf_err *err)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v)) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "%s member '%s' is not a string",
				  where, key);
	*ret = json_string_value(v);
	return 0;
}

static int get_count(json_t *o, const char *key, unsigned *ret, const char *where,
		     struct gf_err *err)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v)) {
		*ret = 0;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0x7fffffff)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "%s member '%s' is not a count",
				  where, key);
	*ret = (unsigned)json_integer_value(v);
	return 0;
}

static bool key_char_ok(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-' || c == '#' ||
	       c == ':' || c == '/';
}

/* Lower-case copy of a component key; GF_E_USAGE when empty or with odd bytes. */
static int norm_key(struct gf_sweep *sw, const char *key, const char **ret, const char *node,
		    struct gf_err *err)
{
	struct gf_buf b = GF_BUF_INIT;

	if (!key || !*key)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node '%s' has a component without a key", node);
	for (const char *p = key; *p; p++) {
		if (!key_char_ok(*p)) {
			gf_buf_release(&b);
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "node '%s' has a component key '%s' with a character that"
					  " is not allowed",
					  node, key);
		}
		gf_buf_addc(&b, (char)tolower((unsigned char)*p));
	}
	*ret = gf_sweep_str(sw, gf_buf_str(&b));
	gf_buf_release(&b);
	return 0;
}

static int comps_from_json(struct gf_sweep *sw, struct gf_sweep_node *n, json_t *arr,
			   struct gf_err *err)
{
	size_t i;
	json_t *c;
	int rc;

	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node '%s': member 'components' is not an array", n->node);
	json_array_foreach(arr, i, c) {
		const char *key = NULL, *version = NULL, *source = NULL, *id = NULL, *name = NULL;
		const char *kind = NULL;
		struct gf_inv_comp *ic;

		if (!json_is_object(c))
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "node '%s': component %zu is not an object", n->node, i);
		if ((rc = get_str(c, "key", &key, "component", err)) < 0 ||
		    (rc = get_str(c, "version", &version, "component", err)) < 0 ||
		    (rc = get_str(c, "source", &source, "component", err)) < 0 ||
		    (rc = get_str(c, "id", &id, "component", err)) < 0 ||
		    (rc = get_str(c, "name", &name, "component", err)) < 0 ||
		    (rc = get_str(c, "kind", &kind, "component", err)) < 0)
			return rc;
		if (!gf_source_known(source)) {
			char *names = gf_source_names();

			rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					"node '%s': component '%s' has an unknown source '%s' (%s)",
					n->node, key ? key : "", source ? source : "", names);
			free(names);
			return rc;
		}
		ic = gf_inv_set_add(n->set);
		if ((rc = norm_key(sw, key, &ic->key, n->node, err)) < 0)
			return rc;
		ic->version = gf_sweep_str(sw, version);
		ic->source = gf_sweep_str(sw, source);
		ic->raw_id = gf_sweep_str(sw, id);
		ic->name = gf_sweep_str(sw, name);
		ic->kind = gf_sweep_str(sw, kind);
		gf_norm_comp_show(sw, ic);
	}
	gf_inv_set_finish(sw, n->set);
	return 0;
}

int gf_codec_errors_from_json(struct gf_sweep *sw, struct gf_sweep_node *n, json_t *arr,
			      struct gf_err *err)
{
	size_t i;
	json_t *e;
	int rc;

	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node '%s': member 'errors' is not an array", n->node);
	json_array_foreach(arr, i, e) {
		const char *op = NULL, *kind = NULL, *msg = NULL;
		enum gf_errkind k;

		if (!json_is_object(e))
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "node '%s': error %zu is not an object", n->node, i);
		if ((rc = get_str(e, "op", &op, "error", err)) < 0 ||
		    (rc = get_str(e, "kind", &kind, "error", err)) < 0 ||
		    (rc = get_str(e, "message", &msg, "error", err)) < 0)
			return rc;
		k = kind ? gf_errkind_from_name(kind) : GF_EK_INTERNAL;
		if (!op || k == GF_EK_NONE)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "node '%s': error %zu needs an 'op' and a known 'kind'",
					  n->node, i);
		gf_sweep_node_error(sw, n, op, k, msg);
	}
	return 0;
}

static bool has_error(const struct gf_sweep_node *n, const char *op)
{
	for (size_t i = 0; i < n->nerrors; i++)
		if (strcmp(n->errors[i].op, op) == 0)
			return true;
	return false;
}

/* Does the node hold BIOS settings? */
static bool has_setting(const struct gf_sweep_node *n)
{
	for (size_t i = 0; i < n->set->n; i++)
		if (gf_norm_comp_is_setting(&n->set->v[i]))
			return true;
	return false;
}

static int summaries_from_json(struct gf_sweep *sw, struct gf_sweep_node *n, json_t *o,
			       struct gf_err *err)
{
	json_t *sel = json_object_get(o, "sel"), *sens = json_object_get(o, "sensors");
	int rc;

	if (sel && !json_is_null(sel)) {
		json_t *nw = json_object_get(sel, "new"), *mark = json_object_get(sel, "mark");

		if (!json_is_object(sel) || (nw && !json_is_object(nw)))
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "node '%s': member 'sel' is not an object", n->node);
		if ((rc = get_count(sel, "total", &n->sel.total, "sel", err)) < 0 ||
		    (rc = get_count(nw, "info", &n->sel.new_info, "sel.new", err)) < 0 ||
		    (rc = get_count(nw, "warning", &n->sel.new_warning, "sel.new", err)) < 0 ||
		    (rc = get_count(nw, "critical", &n->sel.new_critical, "sel.new", err)) < 0)
			return rc;
		if (mark && !json_is_null(mark)) {
			if (!json_is_number(mark))
				return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
						  "node '%s': member 'sel.mark' is not a number",
						  n->node);
			n->sel.has_mark = true;
			n->sel.mark = json_number_value(mark);
		}
		n->sel.read = true;
	}
	if (sens && !json_is_null(sens)) {
		if (!json_is_object(sens))
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "node '%s': member 'sensors' is not an object", n->node);
		if ((rc = get_count(sens, "nominal", &n->sensors.nominal, "sensors", err)) < 0 ||
		    (rc = get_count(sens, "warning", &n->sensors.warning, "sensors", err)) < 0 ||
		    (rc = get_count(sens, "critical", &n->sensors.critical, "sensors", err)) < 0 ||
		    (rc = get_count(sens, "unknown", &n->sensors.unknown, "sensors", err)) < 0 ||
		    (rc = gf_codec_leaks_from_json(sw, n, json_object_get(o, "leaks"), err)) < 0)
			return rc;
		n->sensors.read = true;
	}
	return 0;
}

int gf_codec_node_from_json(struct gf_sweep *sw, json_t *o, struct gf_err *err)
{
	const char *name = NULL, *status = NULL, *protocol = NULL, *model = NULL;
	json_t *hw, *host, *coll;
	struct gf_sweep_node *n;
	int rc, st;

	if (!json_is_object(o))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "a node record is not an object");
	if ((rc = get_str(o, "node", &name, "node record", err)) < 0 ||
	    (rc = get_str(o, "status", &status, "node record", err)) < 0 ||
	    (rc = get_str(o, "protocol", &protocol, "node record", err)) < 0 ||
	    (rc = get_str(o, "model", &model, "node record", err)) < 0)
		return rc;
	if (!name || !*name)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "a node record has no 'node'");
	st = status ? gf_node_status_parse(status) : -1;
	if (st < 0)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node '%s' has an unknown status '%s' (ok, partial, failed)",
				  name, status ? status : "");
	hw = json_object_get(o, "hardware");
	host = json_object_get(o, "host");
	coll = json_object_get(o, "collected");
	if ((hw && !json_is_object(hw) && !json_is_null(hw)) ||
	    (host && !json_is_object(host) && !json_is_null(host)) ||
	    (coll && !json_is_object(coll)))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node '%s': 'hardware', 'host' and 'collected' must be objects",
				  name);

	n = gf_sweep_add_node(sw, name);
	n->status = (enum gf_node_status)st;
	n->protocol = gf_sweep_str(sw, protocol);
	n->model = gf_sweep_str(sw, model);
	if ((rc = gf_codec_errors_from_json(sw, n, json_object_get(o, "errors"), err)) < 0 ||
	    (rc = comps_from_json(sw, n, json_object_get(o, GF_CODEC_COMPONENTS), err)) < 0 ||
	    (rc = summaries_from_json(sw, n, o, err)) < 0)
		goto fail;
	if (hw && json_is_object(hw)) {
		struct gf_hardware h;

		if ((rc = gf_hardware_from_json(hw, name, &h, err)) < 0)
			goto fail;
		gf_sweep_node_take_hardware(n, &h);
	}
	if (host && json_is_object(host)) {
		struct gf_hostfacts f;

		if ((rc = gf_hostfacts_from_json(host, name, &f, err)) < 0)
			goto fail;
		gf_sweep_node_take_host(n, &f);
	}
	if (coll) {
		n->fw_read = json_is_true(json_object_get(coll, "firmware"));
		n->host_read = json_is_true(json_object_get(coll, "host"));
	} else {
		n->fw_read = n->protocol && !has_error(n, GF_OP_BMC) &&
			     !has_error(n, GF_OP_FIRMWARE);
		n->host_read = n->host != NULL;
	}
	/* Records written before the settings were collected say nothing: they were read if kept. */
	if (coll && json_object_get(coll, "bios"))
		n->bios_read = json_is_true(json_object_get(coll, "bios"));
	else
		n->bios_read = has_setting(n);
	return 0;
fail:
	/* Take the half-built node back out; its strings stay in the pool, harmlessly. */
	gf_sweep_node_clear_leaks(n);
	free(n->errors);
	gf_sweep_node_take_hardware(n, NULL);
	gf_sweep_node_take_host(n, NULL);
	n->set->n = 0;
	sw->n--;
	return rc;
}

/* ---- files of records ------------------------------------------------------ */

struct reader {
	const struct gf_codec_sink *sink;
	struct gf_sweep *sw; /* the sweep of the last record */
};

/* The identity of a record's sweep: its uid, else one made of its number and time. */
static char *record_uid(json_t *o)
{
	const char *uid = json_string_value(json_object_get(o, "sweep_uid"));
	const char *t = json_string_value(json_object_get(o, "time"));
	struct gf_buf b = GF_BUF_INIT;
	char hex[40];

	if (uid && *uid)
		return gf_xstrdup(uid);
	gf_buf_addf(&b, "%lld|%s", (long long)json_integer_value(json_object_get(o, "sweep")),
		    t ? t : "");
	snprintf(hex, sizeof(hex), "imported-%016llx",
		 (unsigned long long)gf_hash64(b.s ? b.s : "", b.len));
	gf_buf_release(&b);
	return gf_xstrdup(hex);
}

/* A new sweep from the sweep members of @o, the first record of it. */
static int record_sweep(struct reader *r, json_t *o, const char *uid, struct gf_err *err)
{
	const char *t = json_string_value(json_object_get(o, "time"));
	const char *fin = json_string_value(json_object_get(o, "finished"));
	json_t *id = json_object_get(o, "sweep");

	gf_sweep_free(r->sw);
	r->sw = gf_sweep_new();
	r->sw->uid = gf_sweep_str(r->sw, uid);
	if (!t)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "a record has no 'time'");
	if (gf_time_parse(t, &r->sw->started, err) < 0)
		return GF_E_USAGE;
	r->sw->finished = r->sw->started;
	if (fin && gf_time_parse(fin, &r->sw->finished, err) < 0)
		return GF_E_USAGE;
	if (json_is_integer(id) && json_integer_value(id) > 0)
		r->sw->id = json_integer_value(id);
	return r->sink->sweep(r->sink->ud, r->sw, err);
}

static int read_record(struct reader *r, json_t *o, struct gf_err *err)
{
	char *uid;
	int rc = 0;

	if (!json_is_object(o))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "a record is not a JSON object");
	uid = record_uid(o);
	if (!r->sw || strcmp(r->sw->uid, uid) != 0)
		rc = record_sweep(r, o, uid, err);
	free(uid);
	if (rc < 0)
		return rc;
	rc = gf_codec_node_from_json(r->sw, o, err);
	if (rc < 0)
		return rc;
	rc = r->sink->node(r->sink->ud, r->sw, &r->sw->nodes[r->sw->n - 1], err);
	if (rc < 0)
		return rc;
	gf_sweep_clear_nodes(r->sw);
	return 0;
}

/* Say where the error in @e was: "'PATH' line 6: ...". */
static int located(struct gf_err *e, int code, const char *path, const char *unit, size_t at)
{
	char msg[sizeof(e->msg)];

	snprintf(msg, sizeof(msg), "%s", e->msg);
	return gf_err_set(e, code, GF_EK_NONE, "'%s' %s %zu: %s", path, unit, at, msg);
}

/* A JSON array (export --format json), read whole; @skipped lines came before it. */
static int read_array(struct reader *r, FILE *f, const char *path, size_t skipped, struct gf_err *e)
{
	json_error_t je;
	json_t *arr = json_loadf(f, 0, &je), *o;
	size_t i;
	int rc = 0;

	if (!arr || !json_is_array(arr)) {
		json_decref(arr);
		return gf_err_set(e, GF_E_USAGE, GF_EK_NONE,
				  "'%s' is not a JSON array (line %zu: %s)", path,
				  je.line > 0 ? (size_t)je.line + skipped : skipped + 1, je.text);
	}
	json_array_foreach(arr, i, o) {
		if (read_record(r, o, e) < 0) {
			rc = located(e, GF_E_USAGE, path, "record", i + 1);
			break;
		}
	}
	json_decref(arr);
	return rc;
}

/* One record a line (ndjson); blank lines are skipped, @skipped of them read already. */
static int read_lines(struct reader *r, FILE *f, const char *path, size_t skipped, struct gf_err *e)
{
	char *line = NULL;
	size_t cap = 0, lineno = skipped;
	ssize_t len;
	int rc = 0;

	while ((len = getline(&line, &cap, f)) >= 0) {
		json_error_t je;
		json_t *o;

		lineno++;
		while (len > 0 && isspace((unsigned char)line[len - 1]))
			line[--len] = '\0';
		if (len == 0)
			continue;
		o = json_loadb(line, (size_t)len, 0, &je);
		if (!o) {
			rc = gf_err_set(e, GF_E_USAGE, GF_EK_NONE, "'%s' line %zu is not JSON (%s)",
					path, lineno, je.text);
			break;
		}
		rc = read_record(r, o, e);
		json_decref(o);
		if (rc < 0) {
			rc = located(e, e->code ? e->code : GF_E_USAGE, path, "line", lineno);
			break;
		}
	}
	if (rc == 0 && ferror(f))
		rc = gf_err_set(e, GF_E_IO, GF_EK_NONE, "reading '%s' failed", path);
	free(line);
	return rc;
}

int gf_codec_read(FILE *f, const char *path, const struct gf_codec_sink *sink, struct gf_err *err)
{
	struct reader r = {.sink = sink};
	struct gf_err e = {0};
	size_t skipped = 0; /* whole lines before the first record: error lines count them */
	int ch, rc;

	while ((ch = fgetc(f)) != EOF && isspace(ch))
		if (ch == '\n')
			skipped++;
	if (ch != EOF)
		ungetc(ch, f);
	rc = ch == '[' ? read_array(&r, f, path, skipped, &e)
		       : read_lines(&r, f, path, skipped, &e);
	gf_sweep_free(r.sw);
	if (rc < 0 && err)
		*err = e;
	return rc;
}

/* ---- baseline files ------------------------------------------------------------ */

/* The members of a baseline file besides its rules: notes, for people and for export. */
static bool baseline_note(const char *key)
{
	return strcmp(key, "from") == 0 || strcmp(key, "comment") == 0;
}

/* The rules of @obj into @scope; @flat: the file itself, its notes skipped. */
static int parse_rules(json_t *obj, struct gf_baseline_scope *scope, bool flat, const char *name,
		       const char *where, struct gf_err *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "baseline '%s': %s is not an object of component: version", name,
				  where);
	json_object_foreach(obj, key, v) {
		const char **versions;
		size_t n = 0, i;
		json_t *e;

		if (flat && (baseline_note(key) || strcmp(key, "ignore") == 0))
			continue;
		if (!*key)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "baseline '%s': %s has an empty component key", name,
					  where);
		if (json_is_string(v)) {
			const char *one = json_string_value(v);

			gf_baseline_add_rule(scope, key, &one, 1);
			continue;
		}
		if (!json_is_array(v))
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "baseline '%s': the version of '%s' in %s is not a string or"
					  " a list of strings",
					  name, key, where);
		if (json_array_size(v) == 0)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "baseline '%s': the list of versions of '%s' in %s is empty",
					  name, key, where);
		versions = gf_xcalloc(json_array_size(v), sizeof(*versions));
		json_array_foreach(v, i, e) {
			if (!json_is_string(e)) {
				free(versions);
				return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
						  "baseline '%s': a version of '%s' in %s is not a"
						  " string",
						  name, key, where);
			}
			versions[n++] = json_string_value(e);
		}
		gf_baseline_add_rule(scope, key, versions, n);
		free(versions);
	}
	return 0;
}

/* "ignore": [KEY-GLOB, ...], the keys the baseline does not judge. */
static int parse_ignore(json_t *a, const char *name, struct gf_baseline *b, struct gf_err *err)
{
	size_t i;
	json_t *e;

	if (!a)
		return 0;
	if (!json_is_array(a))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "baseline '%s': 'ignore' is not a list of component key patterns",
				  name);
	json_array_foreach(a, i, e) {
		if (!json_is_string(e) || !*json_string_value(e))
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "baseline '%s': 'ignore' item %zu is not a component key"
					  " pattern",
					  name, i + 1);
		gf_baseline_add_ignore(b, json_string_value(e));
	}
	return 0;
}

static int parse_baseline(json_t *root, const char *name, struct gf_baseline *b, struct gf_err *err)
{
	json_t *comps = json_object_get(root, "components"),
	       *models = json_object_get(root, "models");
	const char *key;
	json_t *v;
	int rc;

	if ((rc = parse_ignore(json_object_get(root, "ignore"), name, b, err)) < 0)
		return rc;
	if (!comps && !models)
		return parse_rules(root, &b->scopes[0], true, name, "the file", err);
	json_object_foreach(root, key, v) {
		if (strcmp(key, "components") && strcmp(key, "models") && strcmp(key, "ignore") &&
		    !baseline_note(key))
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "baseline '%s' has an unknown member '%s' (components,"
					  " models, ignore)",
					  name, key);
	}
	if (comps && (rc = parse_rules(comps, &b->scopes[0], false, name, "'components'", err)) < 0)
		return rc;
	if (!models)
		return 0;
	if (!json_is_object(models))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "baseline '%s': 'models' is not an object of model: rules", name);
	json_object_foreach(models, key, v) {
		char where[160];

		snprintf(where, sizeof(where), "model '%s'", key);
		if ((rc = parse_rules(v, gf_baseline_add_model(b, key), false, name, where, err)) <
		    0)
			return rc;
	}
	return 0;
}

int gf_codec_baseline_parse(const char *text, const char *name, struct gf_baseline **ret,
			    struct gf_err *err)
{
	json_error_t je;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	struct gf_baseline *b;
	int rc;

	if (!root)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "baseline '%s' is not JSON (line %d: %s)", name, je.line,
				  je.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "baseline '%s' is not a JSON object",
				  name);
	}
	b = gf_baseline_new();
	rc = parse_baseline(root, name, b, err);
	json_decref(root);
	if (rc < 0) {
		gf_baseline_free(b);
		return rc;
	}
	*ret = b;
	return 0;
}

static json_t *rules_to_json(const struct gf_baseline_scope *s)
{
	json_t *o = json_object();

	for (size_t i = 0; i < s->n; i++) {
		const struct gf_baseline_rule *r = &s->rules[i];
		json_t *v;

		if (json_object_get(o, r->pattern))
			continue; /* a repeated pattern: the first one is the one that applies */
		if (r->nversions == 1) {
			v = json_string(r->versions[0]);
		} else {
			v = json_array();
			for (size_t k = 0; k < r->nversions; k++)
				json_array_append_new(v, json_string(r->versions[k]));
		}
		json_object_set_new(o, r->pattern, v);
	}
	return o;
}

json_t *gf_codec_baseline_to_json(const struct gf_baseline *b, const struct gf_sweep_node *from)
{
	json_t *o = json_object();

	if (from) {
		char when[40];

		gf_time_format(from->time, when, sizeof(when));
		json_object_set_new(o, "from",
				    json_pack("{s:s,s:I,s:s,s:o}", "node", from->node, "sweep",
					      (json_int_t)from->sweep, "time", when, "model",
					      jstr(from->model)));
	}
	json_object_set_new(o, "components", rules_to_json(&b->scopes[0]));
	if (b->nignore) {
		json_t *ign = json_array();

		for (size_t i = 0; i < b->nignore; i++)
			json_array_append_new(ign, json_string(b->ignore[i]));
		json_object_set_new(o, "ignore", ign);
	}
	if (b->n > 1) {
		json_t *models = json_object();

		for (size_t s = 1; s < b->n; s++)
			if (!json_object_get(models, b->scopes[s].model))
				json_object_set_new(models, b->scopes[s].model,
						    rules_to_json(&b->scopes[s]));
		json_object_set_new(o, "models", models);
	}
	return o;
}
