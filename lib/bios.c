/* BIOS settings: the model, and a requested value checked against the registry. */
#include "lib/bios.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/util.h"

void gf_bios_release(struct gf_bios *b)
{
	if (!b)
		return;
	json_decref(b->attributes);
	json_decref(b->pending);
	json_decref(b->entries);
	free(b->registry);
	memset(b, 0, sizeof(*b));
}

bool gf_bios_apply_parse(const char *s, enum gf_bios_apply *ret)
{
	if (strcmp(s, "on-reset") == 0)
		*ret = GF_BIOS_APPLY_ON_RESET;
	else if (strcmp(s, "immediate") == 0)
		*ret = GF_BIOS_APPLY_IMMEDIATE;
	else
		return false;
	return true;
}

static bool parse_int(const char *s, json_int_t *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*ret = v;
	return true;
}

/* "true"/"false" (also enabled/disabled, yes/no, 1/0), case-insensitive. */
static int parse_bool(const char *s)
{
	static const char *const yes[] = {"true", "yes", "1", "on", "enabled"};
	static const char *const no[] = {"false", "no", "0", "off", "disabled"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return 1;
		if (strcasecmp(s, no[i]) == 0)
			return 0;
	}
	return -1;
}

static int typed(const char *type, const json_t *cur, const char *node, const char *name,
		 const char *text, json_t **ret, struct gf_err *err)
{
	json_int_t i;
	int b;

	if (type ? strcmp(type, "integer") == 0 : json_is_integer(cur)) {
		if (!parse_int(text, &i))
			return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
					  "attribute '%s' of node '%s' takes an integer, not '%s'",
					  name, node, text);
		*ret = json_integer(i);
		return 0;
	}
	if (type ? strcmp(type, "boolean") == 0 : json_is_boolean(cur)) {
		b = parse_bool(text);
		if (b < 0)
			return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
					  "attribute '%s' of node '%s' takes true or false, not '%s'",
					  name, node, text);
		*ret = json_boolean(b);
		return 0;
	}
	*ret = json_string(text);
	if (!*ret)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "the value for attribute '%s' of node '%s' is not UTF-8", name,
				  node);
	return 0;
}

int gf_bios_value(const struct gf_bios *b, const char *node, const char *name, const char *text,
		  json_t **ret, struct gf_err *err)
{
	json_t *entry = b->entries ? json_object_get(b->entries, name) : NULL;
	json_t *cur = json_object_get(b->attributes, name);
	const char *type = json_string_value(json_object_get(entry, "type"));
	json_t *v = NULL, *allowed, *x;
	json_int_t lo, hi;
	size_t k;
	bool listed = false;
	int rc;

	if (!cur && !entry)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "node '%s' has no BIOS attribute '%s'%s", node, name,
				  b->entries ? " (not in its registry)" : "");
	if (json_is_true(json_object_get(entry, "read_only")))
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "BIOS attribute '%s' of node '%s' is read-only", name, node);
	rc = typed(type, cur, node, name, text, &v, err);
	if (rc < 0)
		return rc;
	allowed = json_object_get(entry, "values");
	if (type && strcmp(type, "enumeration") == 0 && json_is_array(allowed)) {
		json_array_foreach(allowed, k, x)
			if (json_equal(x, v))
				listed = true;
		if (!listed) {
			json_decref(v);
			return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
					  "'%s' is not an allowed value of BIOS attribute '%s' of "
					  "node '%s'", text, name, node);
		}
	}
	if (json_is_integer(v)) {
		json_t *l = json_object_get(entry, "lower"), *u = json_object_get(entry, "upper");

		lo = json_is_integer(l) ? json_integer_value(l) : json_integer_value(v);
		hi = json_is_integer(u) ? json_integer_value(u) : json_integer_value(v);
		if (json_integer_value(v) < lo || json_integer_value(v) > hi) {
			json_decref(v);
			return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
					  "%s is out of range for BIOS attribute '%s' of node '%s' "
					  "(%lld to %lld)", text, name, node, (long long)lo,
					  (long long)hi);
		}
	}
	*ret = v;
	return 0;
}

bool gf_bios_holds(const struct gf_bios *b, const char *name, const json_t *want, bool immediate)
{
	json_t *p = json_object_get(b->pending, name);
	json_t *cur = json_object_get(b->attributes, name);

	if (immediate)
		return !p && cur && json_equal(cur, want);
	if (p)
		return json_equal(p, want);
	return cur && json_equal(cur, want); /* already so: nothing to stage */
}

char *gf_bios_component_key(const char *name)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_adds(&b, "bios.");
	for (const char *p = name; *p; p++) {
		unsigned char c = (unsigned char)*p;

		gf_buf_addc(&b, isalnum(c) && c < 0x80 ? (char)tolower(c)
			    : (c == '.' || c == '-' || c == '_') ? (char)c : '_');
	}
	return gf_buf_detach(&b);
}

char *gf_bios_value_text(const json_t *v)
{
	if (json_is_string(v))
		return gf_xstrdup(json_string_value(v));
	if (json_is_boolean(v))
		return gf_xstrdup(json_is_true(v) ? "true" : "false");
	if (json_is_number(v))
		return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	return NULL;
}

/* Seen in the five captured dialects; globs on component keys (lower case). */
const struct gf_bios_ignore gf_bios_ignore_default[] = {
	{"dell", "bios.systemservicetag"},
	{"dell", "bios.assettag"},
	{"dell", "bios.systembiosversion"},
	{"dell", "bios.systemcpldversion"},
	{"dell", "bios.systemmeversion"},
	{"dell", "bios.sha256*password*"},
	{"dell", "bios.sataport?model"},
	{"hpe", "bios.serialnumber"},
	{"hpe", "bios.serverassettag"},
	{"hpe", "bios.servername"},
	{"hpe", "bios.productid"},
	{"lenovo", "bios.*macaddress"},
	{"lenovo", "bios.*familyfirmwareversion"},
	{"lenovo", "bios.*efiversion"},
	{"lenovo", "bios.*_mba"},
	{"lenovo", "bios.*pciaddress"},
	{"nvidia", "bios.routermac?"},
	{"nvidia", "bios.rfserviceipaddress"},
	{"supermicro", "bios.*password_*"},
};
const size_t gf_bios_ignore_ndefault = sizeof(gf_bios_ignore_default) /
				       sizeof(gf_bios_ignore_default[0]);

bool gf_bios_ignored(const char *key)
{
	for (size_t i = 0; i < gf_bios_ignore_ndefault; i++)
		if (fnmatch(gf_bios_ignore_default[i].glob, key, 0) == 0)
			return true;
	return false;
}
