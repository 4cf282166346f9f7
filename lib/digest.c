/* SHA-256 of streams and files (OpenSSL's EVP). */
#include "lib/digest.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/crypto_dl.h" /* <openssl/evp.h>, its calls through a table */

struct gf_sha256 {
	EVP_MD_CTX *ctx;
};

struct gf_sha256 *gf_sha256_new(void)
{
	struct gf_sha256 *h;

	/* libcrypto missing is a broken installation, as memory exhaustion is an end. */
	if (gf_crypto_load(NULL) < 0)
		abort();
	h = gf_xcalloc(1, sizeof(*h));
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
		abort();
	return h;
}

void gf_sha256_update(struct gf_sha256 *h, const void *data, size_t len)
{
	if (len && EVP_DigestUpdate(h->ctx, data, len) != 1)
		abort();
}

void gf_sha256_final(struct gf_sha256 *h, char hex[GF_SHA256_HEX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;

	if (EVP_DigestFinal_ex(h->ctx, md, &len) != 1 || len != 32 ||
	    EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
		abort();
	for (unsigned i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

void gf_sha256_free(struct gf_sha256 *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

int gf_sha256_file(const char *path, unsigned long long *ret_size, char hex[GF_SHA256_HEX],
		   struct gf_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	unsigned long long size = 0;
	struct gf_sha256 *h;
	struct stat st;
	char buf[65536];
	ssize_t got;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "image '%s' cannot be read (not a readable regular file)", path);
	}
	h = gf_sha256_new();
	while ((got = read(fd, buf, sizeof(buf))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			break;
		gf_sha256_update(h, buf, (size_t)got);
		size += (unsigned long long)got;
	}
	close(fd);
	if (got < 0) {
		gf_sha256_free(h);
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "image '%s' cannot be read", path);
	}
	gf_sha256_final(h, hex);
	gf_sha256_free(h);
	*ret_size = size;
	return 0;
}

int gf_sha256_valid(const char *s)
{
	size_t i;

	for (i = 0; s && s[i]; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return s && i == 64;
}
