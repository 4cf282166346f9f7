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
	free(b->dialect);
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
					  "node '%s'",
					  text, name, node);
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
					  "(%lld to %lld)",
					  text, name, node, (long long)lo, (long long)hi);
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

		gf_buf_addc(&b, isalnum(c) && c < 0x80               ? (char)tolower(c)
				: (c == '.' || c == '-' || c == '_') ? (char)c
								     : '_');
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

/* Does @glob match @key, case ignored? */
static bool glob_match(const char *glob, const char *key)
{
	return fnmatch(glob, key, FNM_CASEFOLD) == 0;
}

/*
 * Each glob of the list @list (commas or white space between them) to @fn,
 * each NUL-terminated in a local buffer; stops at the first @fn that returns nonzero and
 * returns that. An item longer than the buffer is given cut to GF_BIOS_GLOB_MAX + 1
 * bytes: gf_bios_ignore_check() refuses it.
 */
static int each_glob(const char *list, int (*fn)(const char *glob, const void *ud), const void *ud)
{
	char buf[GF_BIOS_GLOB_MAX + 2];

	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, ", \t");
		int rc;

		if (n) {
			size_t k = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;

			memcpy(buf, p, k);
			buf[k] = '\0';
			if ((rc = fn(buf, ud)) != 0)
				return rc;
		}
		p += n;
		p += strspn(p, ", \t");
	}
	return 0;
}

static int glob_hits(const char *glob, const void *key)
{
	return glob_match(glob, key);
}

bool gf_bios_ignored(const char *dialect, const char *extra, const char *key)
{
	for (size_t i = 0; i < gf_bios_ignore_ndefault; i++) {
		const struct gf_bios_ignore *r = &gf_bios_ignore_default[i];

		if ((strcmp(r->dialect, "*") == 0 ||
		     (dialect && strcmp(r->dialect, dialect) == 0)) &&
		    glob_match(r->glob, key))
			return true;
	}
	return extra && each_glob(extra, glob_hits, key) != 0;
}

static int glob_bad(const char *glob, const void *ud)
{
	(void)ud;
	return strlen(glob) > GF_BIOS_GLOB_MAX || strncasecmp(glob, "bios.", 5) != 0 || !glob[5];
}

int gf_bios_ignore_check(const char *list, struct gf_err *err)
{
	if (!list || !list[strspn(list, ", \t")])
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "bios_ignore names no pattern (bios.NAME globs, comma separated)");
	if (each_glob(list, glob_bad, NULL))
		return gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				  "bios_ignore '%s': each pattern is a glob of bios.NAME keys (at most %d"
				  " bytes), comma separated",
				  list, GF_BIOS_GLOB_MAX);
	return 0;
}
