/*
 * The TLS pins of one run's nodes, the certificate fingerprints the
 * inventory keeps: read in the main thread before the workers start, the
 * certificate each BMC showed noted by its worker, the new pins written
 * after the run in one transaction. Knows no backend (fleet/bmc.c says
 * which nodes may show a certificate). Nothing here prints.
 */
#ifndef GF_FLEET_PINS_H
#define GF_FLEET_PINS_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory/db.h"
#include "lib/backend.h"
#include "lib/creds.h"
#include "lib/node.h"

struct gf_pins {
	size_t n;
	char **pin;                   /* per node: the pinned fingerprint (hex), NULL: none */
	bool *pin_new;                /* per node: pin the certificate seen when none is pinned */
	char (*seen)[GF_BMC_FP_SIZE]; /* per node: what its BMC showed, "": nothing (its worker's) */
	char **other;                 /* per node, after gf_pins_store_first_use(): the pin another
	                                  run stored first, which was kept; NULL: this run's */
};

/*
 * The pins of @nodes: of those @want says (a run: gf_bmc_may_pin(), whose
 * BMC may show a certificate), or of every node when @want is NULL (repin).
 * pin_new[i] is @pin_new or the node's profile's
 * redfish_tls_pin = new (@profs per node, nullable). @db may be NULL when
 * no pin is to be read. On success fills @ret; release with
 * gf_pins_release().
 */
int gf_pins_load(struct gf_db *db, const struct gf_node *nodes,
		 const struct gf_profile *const *profs, size_t n, bool pin_new,
		 bool (*want)(const struct gf_node *n), struct gf_pins *ret, struct gf_err *err);

/* Is node @i pinned on first use: pin_new, nothing pinned, a certificate seen? */
bool gf_pins_first_use(const struct gf_pins *p, size_t i);

/*
 * The pin node @i's next session must show: its stored pin, or on first use
 * the certificate it showed earlier in this run (every connection of a run
 * is checked against the first); NULL: none. Node @i's worker only.
 */
const char *gf_pins_expected(const struct gf_pins *p, size_t i);

/*
 * Write, in one transaction, the pins of the nodes gf_pins_first_use() says
 * (@db may be NULL when there are none). A node that another run pinned
 * meanwhile keeps that pin: p->other[i] is set to it.
 */
int gf_pins_store_first_use(struct gf_db *db, const struct gf_node *nodes, struct gf_pins *p,
			    struct gf_err *err);

/*
 * Re-pinning: the pin of each node with @which[i] becomes what it showed
 * (none when it showed nothing), in one transaction.
 */
int gf_pins_replace(struct gf_db *db, const struct gf_node *nodes, const struct gf_pins *p,
		    const bool *which, struct gf_err *err);

void gf_pins_release(struct gf_pins *p);

#endif
