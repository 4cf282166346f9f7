/*
 * The component-key vocabulary, one table for every source: the keys a BMC
 * (IPMI or Redfish) and a host (SSH) give ("bmc", "bios", "gpu3.firmware",
 * "nic0", "psu1", "driver", "cuda.driver", "gpu0.vbios" ...), the kind each
 * belongs to, and the words that tell a component's kind from its name or
 * id. Vendor-specific member ids stay in redfish/dialect.c; everything that
 * guesses, numbers or spells a key comes from here. Pure, thread-safe.
 */
#ifndef GF_COMPKEY_H
#define GF_COMPKEY_H

#include <stdbool.h>

#include "lib/buf.h"

/* Rows of gf_compkey_rules. The BMC rows come first, in guessing order: first hit wins. */
enum gf_compkey {
	GF_COMPKEY_PSU = 0,
	GF_COMPKEY_CPLD,
	GF_COMPKEY_GPU,
	GF_COMPKEY_BASEBOARD,
	GF_COMPKEY_NIC, /* before bios: "BlueField" holds "uefi" */
	GF_COMPKEY_BIOS,
	GF_COMPKEY_BMC,
	GF_COMPKEY_DRIVER, /* host facts from here on */
	GF_COMPKEY_CUDA_DRIVER,
	GF_COMPKEY_CUDA_TOOLKIT,
	GF_COMPKEY_KERNEL,
	GF_COMPKEY_OS,
	GF_COMPKEY_FABRICMANAGER,
	GF_COMPKEY_OFED,
	GF_COMPKEY_DRIVER_LIBRARY, /* the NVML library, when it is not the loaded module's */
	GF_COMPKEY_GPU_VBIOS,
	GF_COMPKEY_NROWS
};

enum gf_compkey_from {
	GF_COMPKEY_FROM_BMC = 0, /* a BMC's firmware inventory (IPMI, Redfish) */
	GF_COMPKEY_FROM_HOST,    /* the host's own facts (SSH) */
};

#define GF_COMPKEY_MAX_WORDS 8

struct gf_compkey_rule {
	const char *kind; /* bmc, bios, cpld, gpu, nic, psu, baseboard; driver, cuda, os */
	const char *key;  /* '#': the component's number; NULL: kind, '.', the slug of its id */
	enum gf_compkey_from from;
	const char *const
		words[GF_COMPKEY_MAX_WORDS]; /* lower case, NULL-terminated; host rows: none */
};

/* Indexed by enum gf_compkey. */
extern const struct gf_compkey_rule gf_compkey_rules[GF_COMPKEY_NROWS];

/* Numbers in keys are capped: longer runs of digits keep their first digits. */
#define GF_COMPKEY_NUMBER_MAX 100000000L

/*
 * The BMC row whose word @name, else @id, contains (case-insensitive),
 * trying the rows in order and each row's words in order; NULL when none.
 * *ret_from (nullable): the field that matched.
 */
const struct gf_compkey_rule *gf_compkey_guess(const char *name, const char *id,
					       const char **ret_from);

/* The kind gf_compkey_guess() finds, "other" when none. */
const char *gf_compkey_kind(const char *name, const char *id);

/* The BMC row for @kind, NULL when the vocabulary has none ("other"). */
const struct gf_compkey_rule *gf_compkey_of_kind(const char *kind);

/* The run of digits at *@s as a number (capped), *@s moved past all of them. */
long gf_compkey_digits(const char **s);

/* The first run of digits in @s as a number (capped), -1 when none. */
long gf_compkey_first_number(const char *s);

/*
 * Append @s lower case, letters and digits kept, other runs as one '-'
 * between them. False when @s has no letter or digit: "x" stands in.
 */
bool gf_compkey_add_slug(struct gf_buf *b, const char *s);

/*
 * The key of a component no row gives one: @kind, '.', the slug of @text.
 * False when @text has no letter or digit ("x" stands in).
 */
bool gf_compkey_add_fallback(struct gf_buf *b, const char *kind, const char *text);

/* @tmpl with each '#' replaced by @num. Caller frees. */
char *gf_compkey_expand(const char *tmpl, long num);

/* Does @key name something host facts give (a host row, '#' any text)? */
bool gf_compkey_is_host(const char *key);

/*
 * Does a component that reports @reported run version @want (a catalog's)?
 * Leading blanks aside, @reported starts with @want and what follows it is
 * nothing, a blank or '(': "23.11.24 (build 7)" and "23.11.24 build7" run
 * 23.11.24, "23.11.241" and "23.11.24-1" do not. @exact: byte for byte.
 * NULLs never match. Pure, thread-safe.
 */
bool gf_version_matches(const char *reported, const char *want, bool exact);

/*
 * Is @cand the key of the image a BMC holds staged for component @key, not
 * yet active? The dialects name that slot as a member of its own, keyed
 * "<key>.staging" (Supermicro's Staging_BMC), "<key>.pending" (Lenovo's
 * BMC-Primary-Pending) or "<key>.available" (Dell's Available- entries).
 */
bool gf_compkey_is_staged_of(const char *cand, const char *key);

#endif
