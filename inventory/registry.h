/* The node registry of the inventory (inventory/db.h opens it). */
#ifndef GF_INV_REGISTRY_H
#define GF_INV_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"
#include "lib/node.h"

struct gf_db;

/*
 * Add @n nodes in one transaction. A name already registered is GF_E_USAGE
 * ("node 'x' already exists") and nothing is added, unless @replace.
 */
int gf_db_nodes_add(struct gf_db *db, const struct gf_node *nodes, size_t n, bool replace,
		    struct gf_err *err);
/* Every registered node, in registration order. Free with gf_nodes_free(). */
int gf_db_nodes_load(struct gf_db *db, struct gf_node **ret, size_t *ret_n, struct gf_err *err);
/* Remove nodes (and their group memberships) in one transaction. */
int gf_db_nodes_remove(struct gf_db *db, const char *const *names, size_t n, struct gf_err *err);
/* Add and remove groups of nodes in one transaction. */
int gf_db_nodes_tag(struct gf_db *db, const char *const *names, size_t n, const char *const *add,
		    size_t nadd, const char *const *del, size_t ndel, struct gf_err *err);

#endif
