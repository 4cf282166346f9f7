/*
 * libFuzzer target for gf_nodes_parse_csv(): any text either parses into
 * nodes that hold to the documented rules, or fails with a "line N: "
 * message and leaves the out-params alone.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/node.h"
#include "tests/fuzz/worker.h"
#include "tests/unit/stub_backends.h"

static void fuzz_input(const uint8_t *data, size_t size)
{
	struct gf_node *nodes = (struct gf_node *)(uintptr_t)0x1;
	struct gf_err err = {0};
	size_t n = 12345;
	char *text;
	int rc;

	stub_backends_register();
	/* The parser takes a C string: stop at the first NUL, as a file reader would. */
	text = gf_xstrndup((const char *)data, size);
	rc = gf_nodes_parse_csv(text, &nodes, &n, &err);
	if (rc) {
		if (rc != GF_E_USAGE || strncmp(err.msg, "line ", 5) != 0)
			abort();
		if (nodes != (struct gf_node *)(uintptr_t)0x1 || n != 12345)
			abort();
		free(text);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct gf_node *nd = &nodes[i];
		struct gf_node copy;

		if (gf_node_name_check(nd->name, NULL) != 0)
			abort();
		for (size_t j = 0; j < i; j++)
			if (strcmp(nodes[j].name, nd->name) == 0)
				abort();
		if (nd->bmc_port < 0 || nd->bmc_port > 65535 || (nd->bmc && !*nd->bmc))
			abort();
		if (nd->protocol && gf_backend_find(nd->protocol->name) != nd->protocol)
			abort();
		for (size_t g = 0; g < nd->ngroups; g++)
			if (!nd->groups[g][0] || strchr(nd->groups[g], ';'))
				abort();
		gf_node_copy(&copy, nd);
		if (strcmp(copy.name, nd->name) != 0 || copy.ngroups != nd->ngroups)
			abort();
		gf_node_release(&copy);
	}
	gf_nodes_free(nodes, n);
	free(text);
}
