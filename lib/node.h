/* A node as registered: its BMC, its host, its profile, its groups. */
#ifndef GF_NODE_H
#define GF_NODE_H

#include <stddef.h>

#include "lib/err.h"

enum gf_proto {
	GF_PROTO_AUTO = 0,
	GF_PROTO_IPMI,
	GF_PROTO_REDFISH,
};

struct gf_node {
	char *name;       /* registry name */
	char *bmc;        /* BMC host or address, NULL when the node has none */
	int bmc_port;     /* 0: protocol default */
	enum gf_proto protocol;
	char *ssh;        /* "[user@]host[:port]" as given, NULL when none */
	char *profile;    /* credentials profile, NULL: "default" */
	char **groups;    /* owned */
	size_t ngroups;
};

void gf_node_release(struct gf_node *n);
void gf_nodes_free(struct gf_node *nodes, size_t n);
/* Deep copy of @src into @dst. */
void gf_node_copy(struct gf_node *dst, const struct gf_node *src);

/* "ipmi", "redfish", "auto". */
const char *gf_proto_name(enum gf_proto p);
/* Returns 0 and sets @ret, or GF_E_USAGE. */
int gf_proto_parse(const char *s, enum gf_proto *ret, struct gf_err *err);

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
 * Parse a node CSV (header line with columns name,bmc,protocol,ssh,profile,groups
 * in any order, only "name" required; groups separated by ';'; '#' lines and
 * blank lines skipped; fields may be double-quoted). All or nothing: on the
 * first bad line returns GF_E_USAGE with "line N: ..." and sets nothing.
 * On success *ret_nodes (free with gf_nodes_free) and *ret_n. Thread-safe.
 */
int gf_nodes_parse_csv(const char *text, struct gf_node **ret_nodes, size_t *ret_n,
		       struct gf_err *err);

#endif
