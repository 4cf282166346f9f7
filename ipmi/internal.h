/* What the files of the IPMI backend share; not for use outside ipmi/. */
#ifndef GF_IPMI_INTERNAL_H
#define GF_IPMI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <freeipmi/freeipmi.h>

#include "lib/backend.h"

struct ipmi_session {
	ipmi_ctx_t ctx;
	char *node;              /* for messages */
	int cipher;              /* the suite in use, -1 for IPMI 1.5 */
	const char *host;        /* as given in the target, for cache keys */
	const char *cache_dir;   /* the target's cache directory, may be NULL */
};

/*
 * Fill @err for a failed command @what (e.g. "get chassis status"); @rs holds
 * the completion code when the BMC sent one, @netfn is the command's network
 * function for the completion code text. Returns GF_E_NODE (or GF_E_NOMEM).
 */
int gf_ipmi_cmd_error(struct ipmi_session *s, const char *what, fiid_obj_t rs, uint8_t netfn,
		      struct gf_err *err);

/* Lower-case copy of @in into @buf; returns @buf. */
const char *gf_ipmi_lower(const char *in, char *buf, size_t size);

#endif
