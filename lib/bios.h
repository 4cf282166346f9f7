/*
 * BIOS settings as every backend reports them: the attributes the firmware
 * runs with, the values staged for the next reset, and what the BMC's
 * attribute registry allows. Protocol-free: the checks of a requested value
 * against the registry live here, so a backend only reads and writes.
 */
#ifndef GF_BIOS_H
#define GF_BIOS_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/err.h"

/* When staged values take effect. */
enum gf_bios_apply {
	GF_BIOS_APPLY_DEFAULT = 0, /* what the BMC does when not told (usually at the next reset) */
	GF_BIOS_APPLY_ON_RESET,
	GF_BIOS_APPLY_IMMEDIATE,
};

struct gf_bios {
	json_t *attributes; /* {name: value} in their JSON types (string, number, boolean, null); owned */
	json_t *pending; /* {name: value} staged and different from the attributes; owned */
	char *registry;  /* the attribute registry id the BMC names, NULL: none */
	char *dialect;   /* the backend's dialect ("dell", ...: gf_bios_ignored()), NULL: unknown */
	/*
	 * What the registry says, NULL when the BMC publishes none (or it was not
	 * asked for): {name: {"type": "string"|"enumeration"|"integer"|"boolean"|
	 * "password", "read_only": bool, "values": [..] (enumerations),
	 * "lower"/"upper": integers (bounds)}}. Owned.
	 */
	json_t *entries;
};

void gf_bios_release(struct gf_bios *b);

/* "on-reset", "immediate" (the option's words); false for anything else. */
bool gf_bios_apply_parse(const char *s, enum gf_bios_apply *ret);

/*
 * The JSON value for NAME=@text on a node holding @b: typed by the registry
 * entry where there is one, else by the current value's type (integer,
 * boolean, else string), and checked: an attribute the node does not have,
 * a read-only one, a value of the wrong type, one not among the allowed
 * values or outside the bounds is an error (GF_E_NODE, kind unsupported,
 * message naming the node and the attribute). New reference on success.
 */
int gf_bios_value(const struct gf_bios *b, const char *node, const char *name, const char *text,
		  json_t **ret, struct gf_err *err);

/* Does @b hold @want for @name, staged (or, with @immediate, current)? */
bool gf_bios_holds(const struct gf_bios *b, const char *name, const json_t *want, bool immediate);

/* ---- in the inventory: one component per attribute ---------------------- */

/* The component key of attribute @name: "bios." and the name in lower case, odd bytes as '_'. Caller frees. */
char *gf_bios_component_key(const char *name);
/* An attribute value as the inventory keeps it (its "version"): strings as they are,
 * numbers in decimal, true/false; NULL for null (not kept). Caller frees. */
char *gf_bios_value_text(const json_t *v);

/*
 * The attributes that differ from node to node by nature (serial numbers,
 * asset tags, MAC addresses, per-node addresses, password hashes), per
 * dialect, as component-key globs ("bios.systemservicetag"): the data of
 * data/bios-ignore.conf, compiled in (lib/bios_ignore_gen.py). A sweep does
 * not keep them, nor those of the node's profile (bios_ignore); a baseline
 * file's "ignore" and drift's --ignore leave out more when comparing.
 */
struct gf_bios_ignore {
	const char *dialect; /* whose attributes these are ("dell", "hpe", ...), "*": every dialect */
	const char *glob;
};
extern const struct gf_bios_ignore gf_bios_ignore_default[];
extern const size_t gf_bios_ignore_ndefault;

#define GF_BIOS_GLOB_MAX 200 /* bytes of one pattern of a profile's bios_ignore */

/*
 * Is component key @key left out on a node of @dialect (NULL: one unknown,
 * the rules for every dialect only): by the default list, or by one of the
 * globs of @extra (a profile's bios_ignore: comma separated, nullable)?
 * Case is ignored. Thread-safe.
 */
bool gf_bios_ignored(const char *dialect, const char *extra, const char *key);
/* Is @list a valid bios_ignore value (bios.NAME globs, comma separated)? GF_E_CONFIG if not. */
int gf_bios_ignore_check(const char *list, struct gf_err *err);

#endif
