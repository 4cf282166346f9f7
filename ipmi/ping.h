/*
 * The IPMI fleet ping: IPMI 1.5 Get Channel Authentication Capabilities
 * outside a session (what ipmiping sends, and the first request of every
 * RMCP+ handshake, so every IPMI BMC on a LAN answers it), to every BMC of a
 * run at once from one socket per address family. The codec is exported for
 * the unit tests.
 */
#ifndef GF_IPMI_PING_H
#define GF_IPMI_PING_H

#include <stddef.h>
#include <stdint.h>

#include "lib/backend.h"

/* A request: RMCP header, IPMI 1.5 session header (auth type none), the message. */
#define GF_IPMI_PING_SIZE 23

/*
 * The request with sequence number @seq (its low 6 bits) into @buf (at least
 * GF_IPMI_PING_SIZE bytes). Returns its length.
 */
size_t gf_ipmi_ping_encode(uint8_t seq, uint8_t *buf);

/*
 * Is @d (@n bytes) an answer to such a request: RMCP of the IPMI class,
 * auth type none, a response of NetFn App to Get Channel Authentication
 * Capabilities from the BMC to us, both checksums right? 0 with its
 * sequence number in *ret_seq and completion code in *ret_cc, -1 when not.
 * The ping itself does not ask: any datagram from a BMC's address and port
 * is its answer, and the session that follows judges it.
 */
int gf_ipmi_ping_decode(const uint8_t *d, size_t n, uint8_t *ret_seq, uint8_t *ret_cc);

extern const struct gf_ping_ops gf_ipmi_ping_ops;

#endif
