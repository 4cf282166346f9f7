/*
 * BIOS settings through the main System's Bios resource: the current
 * Attributes, the settings object that @Redfish.Settings names (Bios/SD,
 * Bios/Pending, Bios/Settings, bios/settings/: some BMCs keep every
 * attribute there, some only the staged changes; either way what differs
 * from the current value is pending), the AttributeRegistry the Bios names
 * when /redfish/v1/Registries publishes it, and a PATCH of the settings
 * object with If-Match.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/bios.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "redfish/rf.h"

/* The Bios resource of the main System (new reference). */
static int bios_resource(struct rf_client *c, json_t **ret, struct gf_err *err)
{
	json_t *sys = NULL;
	const char *uri;
	int rc = rf_main_system(c, &sys, err);

	if (rc < 0)
		return rc;
	uri = rf_link(sys, "Bios");
	if (!uri) {
		json_decref(sys);
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "the main system of bmc '%s' has no Bios resource", c->node);
	}
	rc = rf_fetch(c, uri, ret, err);
	json_decref(sys);
	return rc;
}

static const char *settings_uri(const json_t *bios)
{
	/* not rf_get_str(): the member names hold dots */
	return rf_link(rf_obj(bios, "@Redfish.Settings"), "SettingsObject");
}

/* {name: value} of o.Attributes that differ from @cur (a new object). */
static json_t *diff(const json_t *staged, const json_t *cur)
{
	json_t *out = json_object();
	const char *k;
	json_t *v, *c;

	json_object_foreach((json_t *)staged, k, v) {
		c = json_object_get(cur, k);
		if (!c || !json_equal(c, v))
			json_object_set(out, k, v);
	}
	return out;
}

static const char *lower_type(const char *t)
{
	static const char *const names[][2] = {
		{"Enumeration", "enumeration"}, {"String", "string"},     {"Integer", "integer"},
		{"Boolean", "boolean"},         {"Password", "password"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (rf_eq(t, names[i][0]))
			return names[i][1];
	return NULL;
}

json_t *rf_bios_registry_parse(const json_t *reg)
{
	json_t *attrs = rf_arr(rf_obj(reg, "RegistryEntries"), "Attributes");
	json_t *out, *a, *vals, *x;
	size_t i, k;

	if (!attrs)
		return NULL;
	out = json_object();
	json_array_foreach(attrs, i, a) {
		const char *name = rf_str(a, "AttributeName");
		const char *type = lower_type(rf_str(a, "Type"));
		json_t *e;
		double lo, hi;

		if (!name)
			continue;
		e = json_pack("{s:b}", "read_only", rf_bool(a, "ReadOnly") == 1);
		if (type)
			json_object_set_new(e, "type", json_string(type));
		vals = rf_arr(a, "Value");
		if (type && strcmp(type, "enumeration") == 0 && vals) {
			json_t *list = json_array();

			json_array_foreach(vals, k, x)
				if (rf_str(x, "ValueName"))
					json_array_append_new(list,
							      json_string(rf_str(x, "ValueName")));
			json_object_set_new(e, "values", list);
		}
		if (rf_num(a, "LowerBound", &lo))
			json_object_set_new(e, "lower", json_integer((json_int_t)lo));
		if (rf_num(a, "UpperBound", &hi))
			json_object_set_new(e, "upper", json_integer((json_int_t)hi));
		json_object_set_new(out, name, e);
	}
	return out;
}

/*
 * The registry @id from /redfish/v1/Registries: the member whose Registry
 * (or Id) names it, then its Location (English first). *ret NULL when the
 * BMC publishes none; a registry that cannot be read is no error.
 */
static int registry(struct rf_client *c, const char *id, json_t **ret, struct gf_err *err)
{
	json_t *files = NULL, *f, *loc, *l, *doc = NULL;
	const char *uri = NULL;
	size_t i, k;
	int rc;

	*ret = NULL;
	if (!rf_link(c->root, "Registries"))
		return 0;
	rc = rf_fetch_opt(c, rf_link(c->root, "Registries"), &files, err);
	if (rc < 0 || !files)
		return rc;
	json_decref(files);
	files = NULL;
	rc = rf_collection_of(c, c->root, "Registries", RF_WALK_FETCH, &files, err);
	if (rc < 0)
		return rc;
	json_array_foreach(files, i, f) {
		const char *reg = rf_str(f, "Registry");
		const char *fid = rf_str(f, "Id");
		size_t n = fid ? strlen(fid) : 0;

		if (!rf_eq(reg, id) && !rf_eq(fid, id) &&
		    !(fid && strncmp(id, fid, n) == 0 && id[n] == '.' && (!reg || rf_eq(reg, id))))
			continue;
		loc = rf_arr(f, "Location");
		json_array_foreach(loc, k, l) {
			if (rf_str(l, "Uri") && (!uri || rf_eq(rf_str(l, "Language"), "en")))
				uri = rf_str(l, "Uri");
		}
		break;
	}
	if (uri)
		rc = rf_fetch_opt(c, uri, &doc, err);
	json_decref(files);
	if (rc < 0)
		return rc;
	*ret = doc;
	return 0;
}

int rf_bios_get(struct rf_client *c, bool with_registry, struct gf_bios *ret, struct gf_err *err)
{
	struct gf_bios b = {0};
	json_t *bios = NULL, *settings = NULL, *reg = NULL;
	const char *suri;
	int rc;

	rc = bios_resource(c, &bios, err);
	if (rc < 0)
		return rc;
	if (!rf_obj(bios, "Attributes")) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
				"the Bios resource of bmc '%s' has no Attributes", c->node);
		goto out;
	}
	b.attributes = json_incref(rf_obj(bios, "Attributes"));
	b.registry = rf_dup(rf_str(bios, "AttributeRegistry"));
	b.dialect = c->dialect ? gf_xstrdup(c->dialect->name) : NULL;
	suri = settings_uri(bios);
	if (suri) {
		rc = rf_fetch_opt(c, suri, &settings, err);
		if (rc < 0)
			goto out;
	}
	b.pending = diff(rf_obj(settings, "Attributes"), b.attributes);
	if (with_registry && b.registry) {
		rc = registry(c, b.registry, &reg, err);
		if (rc < 0)
			goto out;
		b.entries = rf_bios_registry_parse(reg);
	}
	*ret = b;
	memset(&b, 0, sizeof(b));
out:
	gf_bios_release(&b);
	json_decref(reg);
	json_decref(settings);
	json_decref(bios);
	return rc;
}

/* rf_patch_fresh(): the body is the same whatever the settings object holds. */
static json_t *bios_patch(struct rf_client *c, const json_t *settings, void *ud, struct gf_err *err)
{
	return json_incref(ud);
}

int rf_bios_set(struct rf_client *c, const json_t *values, enum gf_bios_apply when,
		struct gf_err *err)
{
	json_t *bios = NULL, *body;
	int rc;

	rc = bios_resource(c, &bios, err);
	if (rc < 0)
		return rc;
	if (!settings_uri(bios)) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"the Bios resource of bmc '%s' names no settings object", c->node);
		json_decref(bios);
		return rc;
	}
	body = json_pack("{s:O}", "Attributes", values);
	if (when != GF_BIOS_APPLY_DEFAULT)
		json_object_set_new(body, "@Redfish.SettingsApplyTime",
				    json_pack("{s:s}", "ApplyTime",
					      when == GF_BIOS_APPLY_IMMEDIATE ? "Immediate"
									      : "OnReset"));
	rc = rf_patch_fresh(c, settings_uri(bios), bios_patch, body, err);
	json_decref(body);
	json_decref(bios);
	return rc;
}
