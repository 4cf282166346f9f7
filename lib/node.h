/* A node as registered: its BMC, its host, its profile, its groups. */
#ifndef GF_NODE_H
#define GF_NODE_H

#include <stddef.h>

#include "lib/err.h"

struct gf_backend;

struct gf_node {
	char *name;                        /* registry name */
	char *bmc;                         /* BMC host or address, NULL when the node has none */
	int bmc_port;                      /* 0: protocol default */
	const struct gf_backend *protocol; /* its BMC's backend (lib/backend.h), NULL: auto */
	char *ssh;                         /* "[user@]host[:port]" as given, NULL when none */
	char *profile;                     /* credentials profile, NULL: "default" */
	char **groups;                     /* owned */
	size_t ngroups;
};

void gf_node_release(struct gf_node *n);
void gf_nodes_free(struct gf_node *nodes, size_t n);
/* The names of @nodes, borrowed from them: free() the array only, before @nodes. */
const char **gf_nodes_names(const struct gf_node *nodes, size_t n);
/* Deep copy of @src into @dst. */
void gf_node_copy(struct gf_node *dst, const struct gf_node *src);

/* The backend's name, "auto" for NULL. */
const char *gf_proto_name(const struct gf_backend *p);
/*
 * A backend's name (gf_backend_find()) or "auto" (NULL): returns 0 and sets
 * @ret, or GF_E_USAGE listing the protocols.
 */
int gf_proto_parse(const char *s, const struct gf_backend **ret, struct gf_err *err);

/*
 * Split "host", "host:port", "[v6]:port" into a new host string and a port
 * (0 when absent). GF_E_USAGE on a bad port.
 */
int gf_hostport_parse(const char *s, char **ret_host, int *ret_port, struct gf_err *err);

/* The inverse of gf_hostport_parse(): "host", "host:port", "[v6]:port". Caller frees. */
char *gf_hostport_format(const char *host, int port);

/* A node name: [A-Za-z0-9._-]+, starting with a letter or digit. */
int gf_node_name_check(const char *name, struct gf_err *err);

/*
 * Natural order of node names: runs of digits compare as numbers ("gpu2"
 * before "gpu10"); names equal that way ("gpu01", "gpu1") by strcmp(), so
 * that the order is total.
 */
int gf_node_name_cmp(const char *a, const char *b);

/*
 * Named items in an array the caller owns, for ordering and finding them by
 * name: @n items of @size bytes from @base, each holding its name as a
 * (const) char pointer @name_off bytes in (offsetof). A plain array of names
 * is {names, n, sizeof(char *), 0}.
 */
struct gf_names {
	const void *base;
	size_t n;
	size_t size;
	size_t name_off;
};

#define GF_NAME_NONE ((size_t)-1)

/*
 * The indices 0..n-1 of the items in gf_node_name_cmp() order of their names
 * (the items do not move). Caller frees. Thread-safe.
 */
size_t *gf_node_name_order(const struct gf_names *v);
/*
 * The index of the item named @name, GF_NAME_NONE when none: a binary search
 * over the items in the order @order gives (from gf_node_name_order()), or,
 * with @order NULL, over items that are in that order already.
 */
size_t gf_node_name_find(const struct gf_names *v, const size_t *order, const char *name);

/*
 * Parse a node CSV (header line with columns name,bmc,protocol,ssh,profile,groups
 * in any order, only "name" required; groups separated by ';'; '#' lines and
 * blank lines skipped; fields may be double-quoted). All or nothing: on the
 * first bad line returns GF_E_USAGE with "line N: ..." and sets nothing.
 * On success *ret_nodes (free with gf_nodes_free) and *ret_n. Thread-safe.
 */
int gf_nodes_parse_csv(const char *text, struct gf_node **ret_nodes, size_t *ret_n,
		       struct gf_err *err);

#endif
