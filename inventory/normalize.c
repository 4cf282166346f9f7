/* Canonical component keys: the rules are the tables at the top. */
#include "inventory/normalize.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"

/* ---- host facts ---------------------------------------------------------- */

/* A fact of the host as a whole: the member of gf_hostfacts that holds it. */
struct host_rule {
	const char *key;
	size_t off;          /* offsetof(struct gf_hostfacts, member): a char * */
	const char *id;      /* where it was read, as the raw id */
	const char *name;
	const char *kind;
};

static const struct host_rule host_rules[] = {
	{"driver", offsetof(struct gf_hostfacts, driver), "nvidia-smi:driver_version",
	 "NVIDIA driver", "driver"},
	{"cuda.driver", offsetof(struct gf_hostfacts, cuda_driver), "nvidia-smi:cuda_version",
	 "CUDA version of the driver", "cuda"},
	{"cuda.toolkit", offsetof(struct gf_hostfacts, cuda_toolkit), "cuda:toolkit",
	 "CUDA toolkit", "cuda"},
	{"kernel", offsetof(struct gf_hostfacts, kernel), "uname -r", "Linux kernel", "os"},
	{"os", offsetof(struct gf_hostfacts, os), "os-release:PRETTY_NAME", "Operating system",
	 "os"},
	{"fabricmanager", offsetof(struct gf_hostfacts, fabricmanager), "nv-fabricmanager",
	 "NVIDIA Fabric Manager", "driver"},
	{"ofed", offsetof(struct gf_hostfacts, ofed), "ofed_info", "MLNX OFED", "driver"},
};

/*
 * A fact per GPU: the key is KEY_HEAD, the GPU's nvidia-smi index, KEY_TAIL;
 * the raw id "nvidia-smi:", its PCI bus id, ":" and the query field.
 */
struct gpu_rule {
	const char *key_head, *key_tail;
	size_t off;          /* offsetof(struct gf_host_gpu, member): a char * */
	const char *field;   /* the nvidia-smi --query-gpu field */
	const char *name;    /* "GPU <index> " and this */
	const char *kind;
};

static const struct gpu_rule gpu_rules[] = {
	{"gpu", ".vbios", offsetof(struct gf_host_gpu, vbios), "vbios_version", "VBIOS", "gpu"},
};

/* Keys that host facts give: the comparisons need to know which source a key needs. */
static const char *const host_key_globs[] = {
	"driver", "cuda.driver", "cuda.toolkit", "kernel", "os", "fabricmanager", "ofed",
	"gpu*.vbios",
};

/* ---- BMC inventories: rules for keys a backend left missing or odd ------- */

/*
 * Tried in order; the first rule whose kind (when set) equals the
 * component's kind and whose pattern (when set, case-insensitive) matches its
 * name or id gives the key. '#' in the key is the first number in the field
 * that matched (else the id, else the name), or the running count of that
 * rule when there is none.
 */
struct bmc_rule {
	const char *kind;
	const char *pattern;
	const char *key;
};

static const struct bmc_rule bmc_rules[] = {
	{"bmc", NULL, "bmc"},
	{"bios", NULL, "bios"},
	{"cpld", NULL, "cpld"},
	{"gpu", NULL, "gpu#.firmware"},
	{"nic", NULL, "nic#"},
	{"psu", NULL, "psu#"},
	{NULL, "*cpld*", "cpld"},
	{NULL, "*bios*", "bios"},
	{NULL, "*uefi*", "bios"},
	{NULL, "*system rom*", "bios"},
	{NULL, "*bmc*", "bmc"},
	{NULL, "*idrac*", "bmc"},
	{NULL, "*ilo*", "bmc"},
	{NULL, "*xcc*", "bmc"},
	{NULL, "*gpu*", "gpu#.firmware"},
	{NULL, "*power supply*", "psu#"},
	{NULL, "*psu*", "psu#"},
	{NULL, "*connectx*", "nic#"},
	{NULL, "*nic*", "nic#"},
	{NULL, "*network*", "nic#"},
	{NULL, "*ethernet*", "nic#"},
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* jansson refuses invalid UTF-8: keep what a peer sent readable, never drop it. */
static json_t *jtext(const char *s)
{
	json_t *v;
	char *c;

	if (!s)
		return json_null();
	v = json_string(s);
	if (v)
		return v;
	c = gf_xstrdup(s);
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	v = json_string(c);
	free(c);
	return v;
}

static json_t *comp(const char *key, const char *version, const char *source, const char *id,
		    const char *name, const char *kind)
{
	json_t *o = json_object();

	json_object_set_new(o, "key", json_string(key));
	json_object_set_new(o, "version", jtext(version));
	json_object_set_new(o, "source", json_string(source));
	json_object_set_new(o, "id", jtext(id));
	json_object_set_new(o, "name", jtext(name));
	json_object_set_new(o, "kind", jstr(kind));
	return o;
}

json_t *gf_norm_host_components(const struct gf_hostfacts *f)
{
	json_t *a = json_array();

	for (size_t r = 0; r < NELEM(host_rules); r++) {
		const char *v = *(char *const *)((const char *)f + host_rules[r].off);

		if (v && *v)
			json_array_append_new(a, comp(host_rules[r].key, v, "ssh", host_rules[r].id,
						      host_rules[r].name, host_rules[r].kind));
	}
	for (size_t g = 0; g < f->ngpus; g++) {
		const struct gf_host_gpu *gpu = &f->gpus[g];

		for (size_t r = 0; r < NELEM(gpu_rules); r++) {
			const char *v = *(char *const *)((const char *)gpu + gpu_rules[r].off);
			char key[64], id[160], name[96];

			if (!v || !*v || gpu->index < 0)
				continue;
			snprintf(key, sizeof(key), "%s%d%s", gpu_rules[r].key_head, gpu->index,
				 gpu_rules[r].key_tail);
			snprintf(id, sizeof(id), "nvidia-smi:%s:%s", gpu->pci ? gpu->pci : "?",
				 gpu_rules[r].field);
			snprintf(name, sizeof(name), "GPU %d %s", gpu->index, gpu_rules[r].name);
			json_array_append_new(a, comp(key, v, "ssh", id, name, gpu_rules[r].kind));
		}
	}
	return a;
}

bool gf_norm_key_ok(const char *key)
{
	if (!key || !*key)
		return false;
	for (const char *p = key; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '.' ||
		      *p == '_' || *p == '-' || *p == '#'))
			return false;
	return true;
}

bool gf_norm_key_is_host(const char *key)
{
	for (size_t i = 0; i < NELEM(host_key_globs); i++)
		if (fnmatch(host_key_globs[i], key, 0) == 0)
			return true;
	return false;
}

/* The first run of digits in @s, or -1. */
static long first_number(const char *s)
{
	long v = 0;

	if (!s)
		return -1;
	while (*s && !isdigit((unsigned char)*s))
		s++;
	if (!*s)
		return -1;
	for (; isdigit((unsigned char)*s) && v < 1000000; s++)
		v = v * 10 + (*s - '0');
	return v;
}

/* Does rule @r match? *ret_from: the field it matched on (NULL: the kind alone). */
static bool rule_matches(const struct bmc_rule *r, const struct gf_component *c,
			 const char **ret_from)
{
	*ret_from = NULL;
	if (r->kind && (!c->kind || strcmp(r->kind, c->kind) != 0))
		return false;
	if (!r->pattern)
		return true;
	if (c->name && fnmatch(r->pattern, c->name, FNM_CASEFOLD) == 0)
		*ret_from = c->name;
	else if (c->id && fnmatch(r->pattern, c->id, FNM_CASEFOLD) == 0)
		*ret_from = c->id;
	return *ret_from != NULL;
}

/* "other." and the id (else the name) in key characters. */
static char *fallback_key(const struct gf_component *c, size_t index)
{
	const char *from = c->id && *c->id ? c->id : c->name;
	struct gf_buf b = GF_BUF_INIT;
	bool dash = false;

	gf_buf_adds(&b, "other.");
	for (const char *p = from ? from : ""; *p && b.len < 64; p++) {
		unsigned char ch = (unsigned char)*p;

		if (isalnum(ch)) {
			gf_buf_addc(&b, (char)tolower(ch));
			dash = false;
		} else if (!dash && b.len > 6) {
			gf_buf_addc(&b, '-');
			dash = true;
		}
	}
	while (b.len > 6 && b.s[b.len - 1] == '-')
		b.s[--b.len] = '\0';
	if (b.len == 6)
		gf_buf_addf(&b, "%zu", index);
	return gf_buf_detach(&b);
}

/*
 * Expand '#' in a rule's key: the first number in @from (the field the rule
 * matched), else in the id, else the name, else how often the rule was used.
 */
static char *rule_key(size_t r, const struct gf_component *c, const char *from, unsigned *counts)
{
	const char *tmpl = bmc_rules[r].key;
	const char *hash = strchr(tmpl, '#');
	struct gf_buf b = GF_BUF_INIT;
	long num = first_number(from);

	if (!hash)
		return gf_xstrdup(tmpl);
	if (num < 0)
		num = first_number(c->id);
	if (num < 0)
		num = first_number(c->name);
	if (num < 0)
		num = (long)counts[r];
	counts[r]++;
	gf_buf_add(&b, tmpl, (size_t)(hash - tmpl));
	gf_buf_addf(&b, "%ld", num);
	gf_buf_adds(&b, hash + 1);
	return gf_buf_detach(&b);
}

static char *lower(const char *s)
{
	char *c = gf_xstrdup(s);

	for (char *p = c; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return c;
}

json_t *gf_norm_bmc_components(const struct gf_component_list *l, const struct gf_hardware *hw,
			       const char *source)
{
	unsigned counts[NELEM(bmc_rules)] = {0};
	json_t *a = json_array();
	bool have_bios = false;

	for (size_t i = 0; i < l->n; i++) {
		const struct gf_component *c = &l->v[i];
		char *key = c->key && *c->key ? lower(c->key) : NULL;

		if (!gf_norm_key_ok(key)) {
			free(key);
			key = NULL;
			for (size_t r = 0; r < NELEM(bmc_rules) && !key; r++) {
				const char *from;

				if (rule_matches(&bmc_rules[r], c, &from))
					key = rule_key(r, c, from, counts);
			}
			if (!key)
				key = fallback_key(c, i);
		}
		if (strcmp(key, "bios") == 0)
			have_bios = true;
		json_array_append_new(a, comp(key, c->version, source, c->id, c->name,
					      c->kind ? c->kind : "other"));
		free(key);
	}
	if (!have_bios && hw && hw->system.bios_version && *hw->system.bios_version)
		json_array_append_new(a, comp("bios", hw->system.bios_version, source,
					      "system.bios_version", "System BIOS", "bios"));
	return a;
}

const char *gf_norm_model(const struct gf_hardware *hw)
{
	if (!hw)
		return NULL;
	if (hw->system.model && *hw->system.model)
		return hw->system.model;
	if (hw->product.name && *hw->product.name)
		return hw->product.name;
	return NULL;
}
