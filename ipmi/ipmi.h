/* The IPMI backend (FreeIPMI, RMCP+). */
#ifndef GF_IPMI_H
#define GF_IPMI_H

#include "lib/backend.h"

extern const struct gf_backend gf_ipmi_backend;

#endif
