/*
 * UpdateService/FirmwareInventory, every member, normalized: the rules live
 * in dialect.c (vendor member ids) and lib/compkey.c (the words that tell a
 * kind); this file only applies them and keeps the keys unique.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/compkey.h"
#include "redfish/rf.h"

#define MAX_CAPS 4

static bool all_digits(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* One member on its way to a component. */
struct fw_item {
	const json_t *m;
	char *id;           /* raw Id (or the last segment of @odata.id) */
	char *cut;          /* what the rules match: the Id, or Dell's FQDD */
	const char *suffix; /* Dell state suffix */
	char *state_suffix; /* an unknown Dell state, made up */
	const struct rf_fw_rule *rule;
	unsigned prio; /* lower: earlier rule, keeps the plain key */
	long caps[MAX_CAPS];
	size_t ncaps;
	char *key, *alt;
	const char *kind;
};

static const char *member_id(const json_t *m, struct gf_buf *tmp)
{
	const char *id = rf_str(m, "Id"), *odata, *slash;

	if (id && *id)
		return id;
	odata = rf_odata_id(m);
	if (!odata)
		return NULL;
	slash = strrchr(odata, '/');
	gf_buf_reset(tmp);
	gf_buf_adds(tmp, slash ? slash + 1 : odata);
	return gf_buf_str(tmp);
}

static void cut_dell(const struct rf_dialect *d, struct fw_item *it)
{
	const char *fqdd = strstr(it->id, "__");
	size_t slen = strcspn(it->id, "-");

	if (!fqdd) {
		it->cut = gf_xstrdup(it->id);
		it->suffix = "";
		return;
	}
	it->cut = gf_xstrdup(fqdd + 2);
	it->suffix = NULL;
	for (size_t i = 0; d->states && d->states[i].state; i++) {
		if (strlen(d->states[i].state) == slen &&
		    strncasecmp(d->states[i].state, it->id, slen) == 0) {
			it->suffix = d->states[i].suffix;
			break;
		}
	}
	if (!it->suffix) {
		struct gf_buf b = GF_BUF_INIT;
		char *state = gf_xstrndup(it->id, slen);

		gf_buf_addc(&b, '.');
		gf_compkey_add_slug(&b, state);
		free(state);
		it->state_suffix = gf_buf_detach(&b);
		it->suffix = it->state_suffix;
	}
}

static bool try_rules(const struct rf_fw_rule *rules, unsigned base, struct fw_item *it,
		      const char *name)
{
	for (unsigned i = 0; rules && rules[i].match; i++) {
		const char *subject = rules[i].on == RF_ON_NAME ? name : it->cut;

		if (rf_pattern_match(rules[i].match, subject, it->caps, MAX_CAPS, &it->ncaps)) {
			it->rule = &rules[i];
			it->prio = base + i;
			return true;
		}
	}
	return false;
}

static char *expand_key(const char *tmpl, const struct fw_item *it, const char *context,
			unsigned ordinal)
{
	struct gf_buf b = GF_BUF_INIT;
	size_t cap = 0;

	for (const char *p = tmpl; *p; p++) {
		switch (*p) {
		case '#':
			gf_buf_addf(&b, "%ld", cap < it->ncaps ? it->caps[cap] : 0L);
			cap++;
			break;
		case '@': {
			long v = gf_compkey_first_number(context);

			gf_buf_addf(&b, "%ld", v >= 0 ? v : (long)ordinal);
			break;
		}
		case '$': gf_compkey_add_slug(&b, context ? context : rf_str(it->m, "Name")); break;
		default: gf_buf_addc(&b, *p); break;
		}
	}
	gf_buf_adds(&b, it->suffix ? it->suffix : "");
	return gf_buf_detach(&b);
}

static char *fallback_key(const struct fw_item *it, const char *name, const char *context)
{
	struct gf_buf b = GF_BUF_INIT;

	if (all_digits(it->cut) && name) {
		gf_compkey_add_fallback(&b, it->kind, name);
		if (context) {
			gf_buf_addc(&b, '.');
			gf_compkey_add_slug(&b, context);
		}
	} else {
		gf_compkey_add_fallback(&b, it->kind, it->cut);
	}
	gf_buf_adds(&b, it->suffix ? it->suffix : "");
	return gf_buf_detach(&b);
}

static char *version_of(const json_t *m)
{
	json_t *v = json_object_get(m, "Version");
	char num[64];

	if (json_is_string(v))
		return gf_xstrdup(json_string_value(v));
	if (json_is_integer(v)) {
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return gf_xstrdup(num);
	}
	if (json_is_real(v)) {
		snprintf(num, sizeof(num), "%g", json_real_value(v));
		return gf_xstrdup(num);
	}
	return NULL;
}

/* What else a member says that scripts may want: its status, its software id. */
static json_t *details_of(const json_t *m)
{
	static const struct {
		const char *path, *key;
	} picks[] = {
		{"Status.State", "state"},
		{"Status.Health", "health"},
		{"SoftwareId", "software_id"},
		{"ReleaseDate", "release_date"},
	};
	json_t *d = json_object();

	for (size_t i = 0; i < sizeof(picks) / sizeof(picks[0]); i++) {
		const char *v = rf_get_str(m, picks[i].path);

		if (v && *v)
			json_object_set_new(d, picks[i].key, json_string(v));
	}
	if (json_object_size(d) == 0) {
		json_decref(d);
		return NULL;
	}
	return d;
}

static int by_prio(const void *a, const void *b)
{
	const struct fw_item *x = *(const struct fw_item *const *)a;
	const struct fw_item *y = *(const struct fw_item *const *)b;

	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * Give every item a key nobody else has: rule order decides who keeps the
 * plain one. A key still taken gets the member's id, then "~2", "~3" ...:
 * the first free count, looked for from where the last search for the same
 * name stopped (every count below it is taken, and taken keys stay taken),
 * so that members sharing one key cost linear time, not quadratic.
 */
static void unique_keys(struct fw_item *items, size_t n)
{
	struct fw_item **order = gf_xcalloc(n ? n : 1, sizeof(*order));
	json_t *taken = json_object(), *next = json_object();

	for (size_t i = 0; i < n; i++)
		order[i] = &items[i];
	gf_sort(order, n, sizeof(*order), by_prio);
	for (size_t i = 0; i < n; i++) {
		struct fw_item *it = order[i];
		struct gf_buf b = GF_BUF_INIT;
		json_int_t k;
		size_t len;

		if (!json_object_get(taken, it->key))
			goto take;
		if (it->alt && !json_object_get(taken, it->alt)) {
			free(it->key);
			it->key = it->alt;
			it->alt = NULL;
			goto take;
		}
		/* Still taken: say which member it is, then count. */
		gf_buf_adds(&b, it->key);
		gf_buf_addc(&b, '.');
		gf_compkey_add_slug(&b, it->id);
		if (json_object_get(taken, gf_buf_str(&b))) {
			len = b.len;
			k = json_integer_value(json_object_get(next, gf_buf_str(&b)));
			for (k = k > 2 ? k : 2;; k++) {
				b.len = len;
				gf_buf_addf(&b, "~%" JSON_INTEGER_FORMAT, k);
				if (!json_object_get(taken, gf_buf_str(&b)))
					break;
			}
			b.s[len] = '\0';
			json_object_set_new(next, b.s, json_integer(k + 1));
			b.s[len] = '~';
		}
		free(it->key);
		it->key = gf_buf_detach(&b);
take:
		json_object_set_new(taken, it->key, json_true());
	}
	json_decref(next);
	json_decref(taken);
	free(order);
}

void rf_firmware_normalize(const struct rf_dialect *d, const json_t *members,
			   struct gf_component_list *ret)
{
	size_t n = json_array_size(members), used = 0;
	struct fw_item *items = gf_xcalloc(n ? n : 1, sizeof(*items));
	struct gf_buf tmp = GF_BUF_INIT;
	json_t *ordinals = json_object();
	size_t i;
	json_t *m;

	json_array_foreach(members, i, m) {
		struct fw_item *it = &items[used];
		const char *id, *name, *context;
		unsigned ordinal = 1;

		if (!json_is_object(m) || !(id = member_id(m, &tmp)))
			continue;
		it->m = m;
		it->id = gf_xstrdup(id);
		used++;
		name = rf_str(m, "Name");
		context = d->context ? rf_get_str(m, d->context) : NULL;
		if (d->fwid == RF_FWID_DELL) {
			cut_dell(d, it);
		} else {
			it->cut = gf_xstrdup(it->id);
			it->suffix = "";
		}
		if (try_rules(d->fw, 0, it, name) || try_rules(rf_fw_hgx, 10000, it, name)) {
			char okey[32];
			json_t *cnt;

			snprintf(okey, sizeof(okey), "%u", it->prio);
			cnt = json_object_get(ordinals, okey);
			ordinal = cnt ? (unsigned)json_integer_value(cnt) + 1 : 1;
			json_object_set_new(ordinals, okey, json_integer(ordinal));
			it->kind = it->rule->kind ? it->rule->kind : gf_compkey_kind(name, it->cut);
			it->key = expand_key(it->rule->key, it, context, ordinal);
			it->alt = it->rule->alt ? expand_key(it->rule->alt, it, context, ordinal)
						: NULL;
		} else {
			it->prio = 20000;
			it->kind = gf_compkey_kind(name, it->cut);
			it->key = fallback_key(it, name, context);
		}
	}
	unique_keys(items, used);
	for (size_t k = 0; k < used; k++) {
		struct fw_item *it = &items[k];
		struct gf_component *c = gf_component_list_add(ret);

		c->key = it->key;
		it->key = NULL;
		c->id = it->id;
		it->id = NULL;
		c->name = rf_dup(rf_str(it->m, "Name"));
		c->kind = gf_xstrdup(it->kind);
		c->version = version_of(it->m);
		c->updateable = rf_bool(it->m, "Updateable") == 1;
		c->details = details_of(it->m);
	}
	for (size_t k = 0; k < n; k++) {
		free(items[k].id);
		free(items[k].cut);
		free(items[k].key);
		free(items[k].alt);
		free(items[k].state_suffix);
	}
	free(items);
	gf_buf_release(&tmp);
	json_decref(ordinals);
}

int rf_firmware(struct rf_client *c, struct gf_component_list *ret, struct gf_err *err)
{
	const char *us = rf_link(c->root, "UpdateService");
	json_t *svc = NULL, *members = NULL;
	struct gf_component_list out = {0};
	int rc;

	if (!us)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "bmc '%s' has no UpdateService", c->node);
	/* The UpdateService and its FirmwareInventory in one request where the service allows. */
	rc = rf_fetch_with_members(c, us, "FirmwareInventory", RF_WALK_EXPAND, &svc, &members, err);
	json_decref(svc);
	if (rc < 0)
		return rc;
	if (!members)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "bmc '%s' has no FirmwareInventory", c->node);
	rf_firmware_normalize(c->dialect, members, &out);
	json_decref(members);
	for (size_t i = 0; i < out.n; i++)
		*gf_component_list_add(ret) = out.v[i];
	free(out.v);
	return 0;
}
