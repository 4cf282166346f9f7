/*
 * SHA-256 of bytes as they stream by, and of a whole file: what a
 * firmware rollout records of an image at plan and checks at each push.
 * Thread-safe (each context its own).
 */
#ifndef GF_LIB_DIGEST_H
#define GF_LIB_DIGEST_H

#include <stddef.h>

#include "lib/err.h"

#define GF_SHA256_HEX 65 /* 64 lower-case hex digits and the NUL */

struct gf_sha256;

/* A new context; never NULL (aborts on memory exhaustion as gf_xmalloc does). */
struct gf_sha256 *gf_sha256_new(void);
void gf_sha256_update(struct gf_sha256 *h, const void *data, size_t len);
/* The digest of what was added, in @hex; the context starts again empty. */
void gf_sha256_final(struct gf_sha256 *h, char hex[GF_SHA256_HEX]);
void gf_sha256_free(struct gf_sha256 *h);

/*
 * The size and SHA-256 of the regular file @path, read once from one open
 * descriptor. GF_E_USAGE when it cannot be read or is not a regular file.
 */
int gf_sha256_file(const char *path, unsigned long long *ret_size, char hex[GF_SHA256_HEX],
		   struct gf_err *err);

/* Is @s 64 hex digits (either case)? */
int gf_sha256_valid(const char *s);

#endif
