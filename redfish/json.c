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

/* Read exactly @n digits at *p into *ret. */
static bool digits(const char **p, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*ret = v;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (no timegm(): not C17). */
static long days_from_civil(long y, int m, int d)
{
	long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

bool rf_time_parse(const char *s, double *ret)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0;
	double frac = 0, t;
	const char *p = s;

	if (!s)
		return false;
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
	    !digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
		return false;
	p++;
	if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
	    !digits(&p, 2, &sec))
		return false;
	if (*p == '.') {
		double scale = 0.1;

		p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p)) {
			frac += (*p - '0') * scale;
			scale /= 10;
			p++;
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1;

		p++;
		if (!digits(&p, 2, &oh))
			return false;
		if (*p == ':')
			p++;
		if (!digits(&p, 2, &om))
			return false;
		oh *= sign;
		om *= sign;
	} else if (*p) {
		return false;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return false;
	t = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600 + mi * 60 + sec + frac;
	t -= oh * 3600 + om * 60;
	*ret = t;
	return true;
}
