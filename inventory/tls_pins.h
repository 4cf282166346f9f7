/* The TLS pins the inventory stores (inventory/db.h opens it). */
#ifndef GF_INV_TLS_PINS_H
#define GF_INV_TLS_PINS_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"

struct gf_db;

/*
 * TLS certificate pins of Redfish BMCs, by node name (the host for -H): the
 * SHA-256 of the DER certificate, lower-case hex. *ret is the pin (caller
 * frees) or NULL when the node has none.
 */
int gf_db_tls_pin_get(struct gf_db *db, const char *node, char **ret, struct gf_err *err);
/*
 * Record pins in one transaction: @fps[i] for @nodes[i], replacing what was
 * there (first_seen is then now); a NULL @fps[i] removes the pin.
 */
int gf_db_tls_pin_set(struct gf_db *db, const char *const *nodes, const char *const *fps, size_t n,
		      struct gf_err *err);
/*
 * Pin on first use, in one transaction: @fps[i] (not NULL) for each of
 * @nodes that has no pin; a node pinned meanwhile (by another run) keeps
 * the pin it has.
 */
int gf_db_tls_pin_add(struct gf_db *db, const char *const *nodes, const char *const *fps, size_t n,
		      struct gf_err *err);

#endif
