/*
 * Reading Redfish JSON defensively: a member of the wrong type reads as
 * absent, never as a crash. Only iteration, no recursion over documents.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/buf.h"
#include "redfish/rf.h"
#include "lib/util.h"

const char *rf_str(const json_t *o, const char *key)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

json_t *rf_obj(const json_t *o, const char *key)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;

	return json_is_object(v) ? v : NULL;
}

json_t *rf_arr(const json_t *o, const char *key)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;

	return json_is_array(v) ? v : NULL;
}

bool rf_num(const json_t *o, const char *key, double *ret)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;

	if (!json_is_number(v))
		return false;
	*ret = json_number_value(v);
	return true;
}

int rf_bool(const json_t *o, const char *key)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;

	if (!json_is_boolean(v))
		return -1;
	return json_is_true(v) ? 1 : 0;
}

json_t *rf_get(const json_t *o, const char *dotted)
{
	const json_t *cur = o;
	const char *p = dotted;

	while (cur && *p) {
		size_t len = strcspn(p, ".");
		char key[128];

		if (!json_is_object(cur) || len >= sizeof(key))
			return NULL;
		memcpy(key, p, len);
		key[len] = '\0';
		cur = json_object_get(cur, key);
		p += len;
		if (*p == '.')
			p++;
	}
	return (json_t *)cur;
}

const char *rf_get_str(const json_t *o, const char *dotted)
{
	json_t *v = rf_get(o, dotted);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *rf_odata_id(const json_t *o)
{
	return rf_str(o, "@odata.id");
}

const char *rf_link(const json_t *o, const char *key)
{
	return rf_odata_id(rf_obj(o, key));
}

char *rf_dup(const char *s)
{
	const char *e;

	if (!s)
		return NULL;
	while (*s && isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	if (e == s)
		return NULL;
	return gf_xstrndup(s, (size_t)(e - s));
}

bool rf_eq(const char *a, const char *b)
{
	return a && b && strcasecmp(a, b) == 0;
}

bool rf_time_parse(const char *s, double *ret)
{
	/* A Redfish DateTime always has its time of day; a bare date is no entry time. */
	if (!s || strlen(s) <= 10 || (s[10] != 'T' && s[10] != 't' && s[10] != ' '))
		return false;
	return gf_time_parse_iso8601(s, ret) == 0;
}

/* The end of the JSON string starting at @s[i] (its opening quote): the index past its close. */
static size_t skip_string(const char *s, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return len;
}

/* Past the value opened at @s[i] ('{' or '['), nested brackets and strings included. */
static size_t skip_nested(const char *s, size_t len, size_t i)
{
	size_t depth = 0;

	while (i < len) {
		char ch = s[i];

		if (ch == '"') {
			i = skip_string(s, len, i);
			continue;
		}
		if (ch == '{' || ch == '[')
			depth++;
		else if ((ch == '}' || ch == ']') && --depth == 0)
			return i + 1;
		i++;
	}
	return len;
}

json_t *rf_json_parse(const char *text, size_t len, size_t flags, json_error_t *je)
{
	struct gf_buf b = GF_BUF_INIT;
	size_t depth = 0, i = 0, from = 0;
	bool cut = false;
	json_t *doc;

	if (!text)
		text = "";
	/* Only iteration here: the point is to never recurse over what a BMC sends. */
	while (i < len) {
		char ch = text[i];

		if (ch == '"') {
			i = skip_string(text, len, i);
		} else if (ch == '{' || ch == '[') {
			if (++depth > RF_JSON_DEPTH) {
				gf_buf_add(&b, text + from, i - from);
				gf_buf_adds(&b, "null");
				i = from = skip_nested(text, len, i);
				depth--;
				cut = true;
				continue;
			}
			i++;
		} else {
			if ((ch == '}' || ch == ']') && depth)
				depth--;
			i++;
		}
	}
	if (!cut)
		return json_loadb(text, len, flags, je);
	gf_buf_add(&b, text + from, len - from);
	doc = json_loadb(b.s, b.len, flags, je);
	gf_buf_release(&b);
	return doc;
}
