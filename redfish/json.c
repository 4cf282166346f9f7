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
