/*
 * libcurl and the two functions of libssl that redfish/ calls, loaded on
 * the first Redfish session (lib/dl.h): a run that reaches no Redfish BMC
 * never maps them. Include this header first, before <curl/curl.h> comes
 * from anywhere else, and only in the files that call libcurl: its names
 * become calls through the tables below, filled by rf_curl_load().
 * (curl.h defines curl_easy_setopt() and curl_easy_getinfo() as macros,
 * type-checking ones with GCC: they are undefined here, so those two calls
 * are not type-checked by the compiler.)
 */
#ifndef GF_REDFISH_CURL_DL_H
#define GF_REDFISH_CURL_DL_H

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <openssl/ssl.h>

#include "lib/dl.h"

#define RF_CURL_FNS(X, T)              \
	X(T, curl_easy_cleanup)        \
	X(T, curl_easy_getinfo)        \
	X(T, curl_easy_init)           \
	X(T, curl_easy_setopt)         \
	X(T, curl_easy_strerror)       \
	X(T, curl_getdate)             \
	X(T, curl_global_init)         \
	X(T, curl_multi_add_handle)    \
	X(T, curl_multi_cleanup)       \
	X(T, curl_multi_info_read)     \
	X(T, curl_multi_init)          \
	X(T, curl_multi_perform)       \
	X(T, curl_multi_poll)          \
	X(T, curl_multi_remove_handle) \
	X(T, curl_multi_strerror)      \
	X(T, curl_multi_wakeup)        \
	X(T, curl_slist_append)        \
	X(T, curl_slist_free_all)

struct rf_curl_api {
	GF_DL_MEMBERS(RF_CURL_FNS)
};

extern struct rf_curl_api rf_curl;
extern struct gf_dl_lib rf_curl_lib;

#define RF_SSL_FNS(X, T)                       \
	X(T, SSL_CTX_set_cert_verify_callback) \
	X(T, SSL_CTX_set_verify)

struct rf_ssl_api {
	GF_DL_MEMBERS(RF_SSL_FNS)
};

extern struct rf_ssl_api rf_ssl;
extern struct gf_dl_lib rf_ssl_lib;

/*
 * Load libcurl and libssl (once) and run curl_global_init() (once): before
 * the first call of libcurl. GF_E_NODE (kind internal) when that failed.
 * Thread-safe.
 */
int rf_curl_load(struct gf_err *err);

/* Every call below goes through the table. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_cleanup (rf_curl.p_curl_easy_cleanup)
#define curl_easy_getinfo (rf_curl.p_curl_easy_getinfo)
#define curl_easy_init (rf_curl.p_curl_easy_init)
#define curl_easy_setopt (rf_curl.p_curl_easy_setopt)
#define curl_easy_strerror (rf_curl.p_curl_easy_strerror)
#define curl_getdate (rf_curl.p_curl_getdate)
#define curl_global_init (rf_curl.p_curl_global_init)
#define curl_multi_add_handle (rf_curl.p_curl_multi_add_handle)
#define curl_multi_cleanup (rf_curl.p_curl_multi_cleanup)
#define curl_multi_info_read (rf_curl.p_curl_multi_info_read)
#define curl_multi_init (rf_curl.p_curl_multi_init)
#define curl_multi_perform (rf_curl.p_curl_multi_perform)
#define curl_multi_poll (rf_curl.p_curl_multi_poll)
#define curl_multi_remove_handle (rf_curl.p_curl_multi_remove_handle)
#define curl_multi_strerror (rf_curl.p_curl_multi_strerror)
#define curl_multi_wakeup (rf_curl.p_curl_multi_wakeup)
#define curl_slist_append (rf_curl.p_curl_slist_append)
#define curl_slist_free_all (rf_curl.p_curl_slist_free_all)
#define SSL_CTX_set_cert_verify_callback (rf_ssl.p_SSL_CTX_set_cert_verify_callback)
#define SSL_CTX_set_verify (rf_ssl.p_SSL_CTX_set_verify)

#endif
