/*
 * The functions of OpenSSL's libcrypto that gpufleet calls (SHA-256 for
 * lib/digest.c, certificate fingerprints and checks for redfish/http.c),
 * loaded on first use (lib/dl.h): a run that checks no image and reaches
 * no Redfish BMC never maps libcrypto. Include this header in those files
 * instead of <openssl/evp.h> and <openssl/x509.h>: the names become calls
 * through the table below, filled by gf_crypto_load().
 */
#ifndef GF_LIB_CRYPTO_DL_H
#define GF_LIB_CRYPTO_DL_H

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/dl.h"

#define GF_CRYPTO_FNS(X, T)            \
	X(T, EVP_DigestFinal_ex)       \
	X(T, EVP_DigestInit_ex)        \
	X(T, EVP_DigestUpdate)         \
	X(T, EVP_MD_CTX_free)          \
	X(T, EVP_MD_CTX_new)           \
	X(T, EVP_sha256)               \
	X(T, X509_STORE_CTX_get0_cert) \
	X(T, X509_STORE_CTX_set_error) \
	X(T, X509_digest)              \
	X(T, X509_verify_cert)

struct gf_crypto_api {
	GF_DL_MEMBERS(GF_CRYPTO_FNS)
};

extern struct gf_crypto_api gf_crypto;
extern struct gf_dl_lib gf_crypto_lib;

/* Load libcrypto (once): before the first call below. Thread-safe. */
int gf_crypto_load(struct gf_err *err);

/* Every call below goes through the table. */
#define EVP_DigestFinal_ex (gf_crypto.p_EVP_DigestFinal_ex)
#define EVP_DigestInit_ex (gf_crypto.p_EVP_DigestInit_ex)
#define EVP_DigestUpdate (gf_crypto.p_EVP_DigestUpdate)
#define EVP_MD_CTX_free (gf_crypto.p_EVP_MD_CTX_free)
#define EVP_MD_CTX_new (gf_crypto.p_EVP_MD_CTX_new)
#define EVP_sha256 (gf_crypto.p_EVP_sha256)
#define X509_STORE_CTX_get0_cert (gf_crypto.p_X509_STORE_CTX_get0_cert)
#define X509_STORE_CTX_set_error (gf_crypto.p_X509_STORE_CTX_set_error)
#define X509_digest (gf_crypto.p_X509_digest)
#define X509_verify_cert (gf_crypto.p_X509_verify_cert)

#endif
