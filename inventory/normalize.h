/*
 * Canonical component keys, whatever protocol or vendor reported them:
 * "bmc", "bios", "cpld", "gpu3.firmware", "nic0", "psu1" from a BMC;
 * "driver", "cuda.driver", "cuda.toolkit", "kernel", "os", "fabricmanager",
 * "ofed", "gpu0.vbios" from a host. The keys, kinds and words are the one
 * vocabulary of lib/compkey.c; the tables in normalize.c say where each
 * host fact is read.
 * Pure functions, thread-safe.
 */
#ifndef GF_NORMALIZE_H
#define GF_NORMALIZE_H

#include <stdbool.h>

#include "host/hostfacts.h"
#include "inventory/sweep.h"
#include "lib/bios.h"
#include "lib/err.h"
#include "lib/model.h"

/*
 * Append the components a host's facts give to @set (source ssh, strings
 * pooled in @sw). Facts that are unset give no component.
 */
void gf_norm_host_components(struct gf_sweep *sw, const struct gf_hostfacts *f,
			     struct gf_inv_set *set);

/*
 * Append the components of a BMC's firmware inventory, read with @source
 * (the backend's name), to @set (strings pooled in @sw, text that is not
 * UTF-8 made readable). A key the backend already made canonical is kept
 * (lower case); a missing or odd one is derived from the kind, id and name
 * by the rules table. @hw (nullable) adds "bios" from the system's BIOS
 * version when the inventory has none. GF_E_NODE (protocol) naming @node
 * when a component cannot be kept (an unknown source, a key that is not
 * canonical): then @set may hold some of them, and the caller drops them.
 */
int gf_norm_bmc_components(struct gf_sweep *sw, const char *node, const struct gf_component_list *l,
			   const struct gf_hardware *hw, const char *source, struct gf_inv_set *set,
			   struct gf_err *err);

/*
 * Append one component per BIOS attribute of @b: key bios.<name> (lower
 * case, gf_bios_component_key()), the value as its version
 * (gf_bios_value_text()), raw id and name the attribute's own name, kind
 * "setting", read with @source. Attributes with a null value, those the
 * default ignore list of @b's dialect names (serial-like, per node) and
 * those of @ignore (the node's profile's bios_ignore, nullable) are not
 * kept (gf_bios_ignored()): the store then shares one component set between
 * every node whose settings agree.
 */
void gf_norm_bios_components(struct gf_sweep *sw, const struct gf_bios *b, const char *source,
			     const char *ignore, struct gf_inv_set *set);

/*
 * Is @c one of those: a BIOS setting, not a BIOS firmware component (whose
 * keys may also start with "bios.": Dell's "bios.previous")?
 */
bool gf_norm_comp_is_setting(const struct gf_inv_comp *c);

/*
 * A BIOS setting's key as shown (drift, report, metrics): in the case its BMC
 * gives the name ("bios.DCUIPPrefetcherEnable", which `bios set` takes), set
 * in @c->shown (pooled in @sw) once its fields are; keys stay lower case, and
 * matching them ignores case.
 */
void gf_norm_comp_show(struct gf_sweep *sw, struct gf_inv_comp *c);
/* @c's key as shown: c->shown, else its key. */
const char *gf_norm_comp_shown(const struct gf_inv_comp *c);

/* The hardware model used to group nodes: the system model, else the FRU product name. */
const char *gf_norm_model(const struct gf_hardware *hw);

/* Is @key canonical: lower-case letters, digits, '.', '_', '-', '#', not empty? */
bool gf_norm_key_ok(const char *key);

/* The source class of a key for comparisons: true when host facts (SSH) give it. */
bool gf_norm_key_is_host(const char *key);

#endif
