#include "lib/crypto_dl.h"

#include <stddef.h>

GF_DL_DEFINE(GF_CRYPTO_FNS, struct gf_crypto_api, gf_crypto, gf_crypto_lib, "libcrypto.so.3");

int gf_crypto_load(struct gf_err *err)
{
	return gf_dl_load(&gf_crypto_lib, err);
}
