/*
 * UEFI Common Platform Error Records (CPER, UEFI specification appendix N)
 * decoded into JSON: the record header, each section descriptor, and the
 * bodies of the section types a GPU fleet sees: processor generic, platform
 * memory, PCIe, firmware error record reference, and NVIDIA's sections (the
 * older register dump, and the event section whose GPU contexts carry a
 * legacy Xid and recommended actions).
 *
 * Pure and bounded: reads only inside the bytes given, decodes at most
 * GF_CPER_MAX_SECTIONS sections and GF_CPER_MAX_CONTEXTS contexts, and the
 * output grows with those caps, not with the input. Thread-safe.
 */
#ifndef GF_CPER_H
#define GF_CPER_H

#include <jansson.h>
#include <stddef.h>

#include "lib/err.h"

#define GF_CPER_MAX_BYTES (1u << 20) /* a record larger than this is refused */
#define GF_CPER_MAX_SECTIONS 16u     /* sections decoded; the count says how many there were */
#define GF_CPER_MAX_CONTEXTS 16u     /* NVIDIA event contexts decoded per section */
#define GF_CPER_MAX_REGS 32u         /* NVIDIA register pairs shown per section */

/*
 * Decode the record of @len bytes. *ret (new reference, set on success) is
 * {"severity", "sections": [...], "section_count", "record_id", "timestamp",
 * "xid": {"code", "message"} where an NVIDIA section carries one,
 * "recommended_action" likewise}. A record too short, without the "CPER"
 * signature or whose descriptors point outside it: GF_E_USAGE with a
 * message naming the first thing wrong (bad input, not a node failure).
 * A section body shorter than its type needs is kept as "truncated": true.
 */
int gf_cper_decode(const unsigned char *data, size_t len, json_t **ret, struct gf_err *err);

/*
 * Base64 (standard alphabet, '=' padding, blanks ignored) into at most
 * @cap bytes. Returns the number of bytes, or -1 when @s is not base64 or
 * decodes to more than @cap. Pure.
 */
long gf_base64_decode(const char *s, size_t slen, unsigned char *out, size_t cap);

/* gf_base64_decode() then gf_cper_decode(); @s is a LogEntry's DiagnosticData. */
int gf_cper_decode_base64(const char *s, json_t **ret, struct gf_err *err);

#endif
