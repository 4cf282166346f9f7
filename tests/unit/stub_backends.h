/*
 * Two backends that only have names, for tests of what knows the protocols
 * through lib/backend.h's table (nodes, the registry, drift, metrics): the
 * table gpufleet registers holds the real ones (inventory/bmc.c).
 */
#ifndef GF_TEST_STUB_BACKENDS_H
#define GF_TEST_STUB_BACKENDS_H

#include "lib/backend.h"

static const struct gf_backend stub_ipmi = {.name = "ipmi", .title = "IPMI"};
static const struct gf_backend stub_redfish = {.name = "redfish",
					       .title = "Redfish",
					       .lists_gpus = true};
/* In gpufleet's order: --protocol auto tries Redfish first. */
static const struct gf_backend *const stub_backends[] = {&stub_redfish, &stub_ipmi};

static inline void stub_backends_register(void)
{
	gf_backends_set(stub_backends, sizeof(stub_backends) / sizeof(stub_backends[0]));
}

#endif
