/*
 * A shared library loaded on first use (dlopen), its functions looked up
 * into a table of typed pointers: what only some runs need (libcurl for
 * Redfish, libssh2 for SSH) costs nothing at the start of the others. The
 * dynamic loader maps and relocates every library a binary names, and
 * libcurl alone brings some thirty (TLS, Kerberos, LDAP, ...), which was
 * most of the cost of starting gpufleet.
 *
 * A user declares one struct gf_dl_lib with its soname and its functions
 * (name and offset in the table), and calls gf_dl_load() before the first
 * call through the table (redfish/curl_dl.h, host/ssh2_dl.h).
 */
#ifndef GF_LIB_DL_H
#define GF_LIB_DL_H

#include <pthread.h>
#include <stddef.h>

#include "lib/err.h"

struct gf_dl_fn {
	const char *name; /* the symbol */
	size_t offset;    /* of its pointer in the table */
};

struct gf_dl_lib {
	const char *soname; /* "libcurl.so.4": the ABI the headers describe */
	const struct gf_dl_fn *fns;
	size_t nfns;
	void *table; /* where the pointers go */
	/* Private: set by gf_dl_load(). */
	pthread_once_t once;
	int rc;
	char why[200];
};

/*
 * A library's functions as an X-macro list, LIST(X, T) giving X(T, name)
 * for each: GF_DL_MEMBERS(LIST) the members of its table (pointers of the
 * functions' own types, from the library's header), GF_DL_DEFINE() the
 * table, its names and its struct gf_dl_lib.
 */
#define GF_DL_MEMBER_(T, f) __typeof__(f) *p_##f;
#define GF_DL_FN_(T, f) {#f, offsetof(T, p_##f)},
#define GF_DL_MEMBERS(list) list(GF_DL_MEMBER_, _)
#define GF_DL_DEFINE(list, type, var, lib, so)                              \
	type var;                                                           \
	static const struct gf_dl_fn var##_fns[] = {list(GF_DL_FN_, type)}; \
	struct gf_dl_lib lib = GF_DL_LIB(so, var##_fns, &var)

#define GF_DL_LIB(so, fns_, table_)                                                      \
	{                                                                                \
		.soname = (so), .fns = (fns_), .nfns = sizeof(fns_) / sizeof((fns_)[0]), \
		.table = (table_), .once = PTHREAD_ONCE_INIT                             \
	}

/*
 * Load @lib and fill its table, once per process (later calls return the
 * first answer). GF_E_IO (kind internal) when the library or one of its
 * functions is missing; then the table stays unusable. Thread-safe.
 */
int gf_dl_load(struct gf_dl_lib *lib, struct gf_err *err);

#endif
