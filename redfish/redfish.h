/* The Redfish backend (libcurl + jansson): sessions, paging, vendor dialects. */
#ifndef GF_REDFISH_H
#define GF_REDFISH_H

#include <stdbool.h>

#include "lib/backend.h"

extern const struct gf_backend gf_redfish_backend;

/* SHA-256 of a DER certificate as lower-case hex, plus the NUL. */
#define GF_REDFISH_FP_SIZE 65

/*
 * The SHA-256 fingerprint of the certificate the BMC of an open session
 * showed (lower-case hex), or NULL when none was seen (no TLS handshake, or
 * a libcurl without OpenSSL). Lives as long as the session.
 */
const char *gf_redfish_fingerprint(void *session);

/*
 * Does a Redfish service answer at @t (GET /redfish/v1, no credentials sent,
 * the certificate not checked as nothing secret travels)? Returns 1 yes,
 * 0 no (nothing listens, or it is not Redfish), within @timeout seconds and
 * the target's deadline. Thread-safe.
 */
int gf_redfish_probe(const struct gf_bmc_target *t, double timeout);

/*
 * Connect to @t without credentials and report the SHA-256 fingerprint of
 * the certificate it shows, into @ret (GF_REDFISH_FP_SIZE bytes), whatever
 * the pin says: for re-pinning. Thread-safe.
 */
int gf_redfish_peek_cert(const struct gf_bmc_target *t, char *ret, struct gf_err *err);

#endif
