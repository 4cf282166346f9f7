/* The Redfish backend (libcurl + jansson): sessions, paging, vendor dialects. */
#ifndef GF_REDFISH_H
#define GF_REDFISH_H

#include <stdbool.h>

#include "lib/backend.h"

/*
 * Also probes for --protocol auto (GET /redfish/v1, no credentials, the
 * certificate not checked as nothing secret travels), and reports the
 * certificate fingerprints that TLS pinning keeps.
 */
extern const struct gf_backend gf_redfish_backend;

#endif
