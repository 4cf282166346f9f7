#include "redfish/curl_dl.h"

#include "lib/crypto_dl.h"

#include <stddef.h>

GF_DL_DEFINE(RF_CURL_FNS, struct rf_curl_api, rf_curl, rf_curl_lib, "libcurl.so.4");

GF_DL_DEFINE(RF_SSL_FNS, struct rf_ssl_api, rf_ssl, rf_ssl_lib, "libssl.so.3");

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

/* libcurl's global set-up is not safe to race: once, from whichever worker comes first. */
static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int rf_curl_load(struct gf_err *err)
{
	if (gf_dl_load(&rf_curl_lib, err) < 0 || gf_dl_load(&rf_ssl_lib, err) < 0 ||
	    gf_crypto_load(err) < 0) {
		if (err)
			err->code = GF_E_NODE; /* a node's failure, as libcurl's own below */
		return GF_E_NODE;
	}
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "libcurl could not start (%s)",
				  curl_easy_strerror(global_rc));
	return 0;
}
