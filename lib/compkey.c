/* The component-key vocabulary: the table is the rules, the functions only read it. */
#include "lib/compkey.h"

#include <ctype.h>
#include <fnmatch.h>
#include <string.h>
#include <strings.h>

const struct gf_compkey_rule gf_compkey_rules[GF_COMPKEY_NROWS] = {
	[GF_COMPKEY_PSU] = {"psu", "psu#", GF_COMPKEY_FROM_BMC, {"power supply", "psu"}},
	[GF_COMPKEY_CPLD] = {"cpld", "cpld", GF_COMPKEY_FROM_BMC, {"cpld", "programmable logic"}},
	[GF_COMPKEY_GPU] = {"gpu", "gpu#.firmware", GF_COMPKEY_FROM_BMC, {"gpu"}},
	[GF_COMPKEY_BASEBOARD] = {"baseboard",
				  NULL,
				  GF_COMPKEY_FROM_BMC,
				  {"hgx", "nvswitch", "baseboard"}},
	[GF_COMPKEY_BIOS] = {"bios", "bios", GF_COMPKEY_FROM_BMC, {"bios", "uefi", "system rom"}},
	[GF_COMPKEY_NIC] = {"nic",
			    "nic#",
			    GF_COMPKEY_FROM_BMC,
			    {"nic", "ethernet", "network", "connectx", "infiniband", "bluefield",
			     "mellanox"}},
	[GF_COMPKEY_BMC] = {"bmc",
			    "bmc",
			    GF_COMPKEY_FROM_BMC,
			    {"bmc", "idrac", "remote access controller", "ilo", "xcc"}},
	[GF_COMPKEY_DRIVER] = {"driver", "driver", GF_COMPKEY_FROM_HOST, {NULL}},
	[GF_COMPKEY_CUDA_DRIVER] = {"cuda", "cuda.driver", GF_COMPKEY_FROM_HOST, {NULL}},
	[GF_COMPKEY_CUDA_TOOLKIT] = {"cuda", "cuda.toolkit", GF_COMPKEY_FROM_HOST, {NULL}},
	[GF_COMPKEY_KERNEL] = {"os", "kernel", GF_COMPKEY_FROM_HOST, {NULL}},
	[GF_COMPKEY_OS] = {"os", "os", GF_COMPKEY_FROM_HOST, {NULL}},
	[GF_COMPKEY_FABRICMANAGER] = {"driver", "fabricmanager", GF_COMPKEY_FROM_HOST, {NULL}},
	[GF_COMPKEY_OFED] = {"driver", "ofed", GF_COMPKEY_FROM_HOST, {NULL}},
	[GF_COMPKEY_DRIVER_LIBRARY] = {"driver", "driver.library", GF_COMPKEY_FROM_HOST, {NULL}},
	[GF_COMPKEY_GPU_VBIOS] = {"gpu", "gpu#.vbios", GF_COMPKEY_FROM_HOST, {NULL}},
};

static bool contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; hay && *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	return false;
}

const struct gf_compkey_rule *gf_compkey_guess(const char *name, const char *id,
					       const char **ret_from)
{
	for (size_t r = 0; r < GF_COMPKEY_NROWS; r++) {
		const struct gf_compkey_rule *rule = &gf_compkey_rules[r];

		if (rule->from != GF_COMPKEY_FROM_BMC)
			continue;
		for (size_t w = 0; w < GF_COMPKEY_MAX_WORDS && rule->words[w]; w++) {
			const char *from = contains_ci(name, rule->words[w]) ? name
					   : contains_ci(id, rule->words[w]) ? id
									     : NULL;

			if (!from)
				continue;
			if (ret_from)
				*ret_from = from;
			return rule;
		}
	}
	return NULL;
}

const char *gf_compkey_kind(const char *name, const char *id)
{
	const struct gf_compkey_rule *r = gf_compkey_guess(name, id, NULL);

	return r ? r->kind : "other";
}

const struct gf_compkey_rule *gf_compkey_of_kind(const char *kind)
{
	for (size_t r = 0; kind && r < GF_COMPKEY_NROWS; r++)
		if (gf_compkey_rules[r].from == GF_COMPKEY_FROM_BMC &&
		    strcmp(gf_compkey_rules[r].kind, kind) == 0)
			return &gf_compkey_rules[r];
	return NULL;
}

long gf_compkey_digits(const char **s)
{
	long v = 0;

	for (; isdigit((unsigned char)**s); (*s)++)
		if (v < GF_COMPKEY_NUMBER_MAX)
			v = v * 10 + (**s - '0');
	return v;
}

long gf_compkey_first_number(const char *s)
{
	for (; s && *s; s++)
		if (isdigit((unsigned char)*s))
			return gf_compkey_digits(&s);
	return -1;
}

bool gf_compkey_add_slug(struct gf_buf *b, const char *s)
{
	bool dash = false;
	size_t start = b->len;

	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch)) {
			if (dash && b->len > start)
				gf_buf_addc(b, '-');
			dash = false;
			gf_buf_addc(b, (char)tolower(ch));
		} else {
			dash = true;
		}
	}
	if (b->len > start)
		return true;
	gf_buf_adds(b, "x");
	return false;
}

bool gf_compkey_add_fallback(struct gf_buf *b, const char *kind, const char *text)
{
	gf_buf_adds(b, kind);
	gf_buf_addc(b, '.');
	return gf_compkey_add_slug(b, text);
}

char *gf_compkey_expand(const char *tmpl, long num)
{
	struct gf_buf b = GF_BUF_INIT;

	for (const char *p = tmpl; *p; p++) {
		if (*p == '#')
			gf_buf_addf(&b, "%ld", num);
		else
			gf_buf_addc(&b, *p);
	}
	return gf_buf_detach(&b);
}

bool gf_compkey_is_host(const char *key)
{
	for (size_t r = 0; key && r < GF_COMPKEY_NROWS; r++) {
		const struct gf_compkey_rule *rule = &gf_compkey_rules[r];
		char glob[64];
		size_t n = 0;

		if (rule->from != GF_COMPKEY_FROM_HOST)
			continue;
		for (const char *p = rule->key; *p && n + 1 < sizeof(glob); p++)
			glob[n++] = *p == '#' ? '*' : *p;
		glob[n] = '\0';
		if (fnmatch(glob, key, 0) == 0)
			return true;
	}
	return false;
}

bool gf_version_matches(const char *reported, const char *want, bool exact)
{
	size_t n;

	if (!reported || !want || !*want)
		return false;
	if (exact)
		return strcmp(reported, want) == 0;
	while (*reported == ' ' || *reported == '\t')
		reported++;
	n = strlen(want);
	if (strncmp(reported, want, n) != 0)
		return false;
	reported += n;
	return *reported == '\0' || *reported == ' ' || *reported == '\t' || *reported == '(';
}

bool gf_compkey_is_staged_of(const char *cand, const char *key)
{
	static const char *const slots[] = {".staging", ".pending", ".available"};
	size_t n = key ? strlen(key) : 0;

	if (!cand || !key || strncmp(cand, key, n) != 0)
		return false;
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		if (strcmp(cand + n, slots[i]) == 0)
			return true;
	return false;
}
