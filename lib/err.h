/* Errors: return codes and the per-call error record. */
#ifndef GF_ERR_H
#define GF_ERR_H

#include <stdarg.h>

/* Return codes: 0 on success, one of these (negative) on failure. */
enum {
	GF_E_NOMEM = -1,  /* out of memory */
	GF_E_USAGE = -2,  /* bad input from the user: exit 2 */
	GF_E_CONFIG = -3, /* bad configuration (credentials, DB path): exit 2 */
	GF_E_IO = -4,     /* a local file or process failed */
	GF_E_DB = -5,     /* sqlite failed */
	GF_E_NODE = -6,   /* a node failed; the kind says how */
	GF_E_NOTFOUND = -7,
	GF_E_BUSY = -8, /* a lock is held by someone else */
};

/* How a node failed, as reported in JSON "error.kind". */
enum gf_errkind {
	GF_EK_NONE = 0,
	GF_EK_TIMEOUT,
	GF_EK_CONNECT,
	GF_EK_AUTH,
	GF_EK_TLS,
	GF_EK_HOSTKEY,
	GF_EK_PROTOCOL,
	GF_EK_UNSUPPORTED,
	GF_EK_REFUSED,
	GF_EK_INTERNAL,
	GF_EK_BUSY, /* in use by someone else (a console's SOL payload) */
};

struct gf_err {
	int code;             /* GF_E_* */
	enum gf_errkind kind; /* for GF_E_NODE */
	long detail;          /* protocol detail: completion code, HTTP status, sqlite rc */
	char msg[512];        /* lower case, no full stop, cause first */
};

/*
 * Fill @err (nullable) and return @code, so callers can `return gf_err_set(...)`.
 * The detail is reset to 0: a caller that has one sets it afterwards.
 */
int gf_err_set(struct gf_err *err, int code, enum gf_errkind kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int gf_err_setv(struct gf_err *err, int code, enum gf_errkind kind, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
void gf_err_clear(struct gf_err *err);

/* "timeout", "connect", ...; "" for GF_EK_NONE. Static strings. */
const char *gf_errkind_name(enum gf_errkind kind);
/* Inverse of gf_errkind_name(); GF_EK_NONE when unknown. */
enum gf_errkind gf_errkind_from_name(const char *name);

#endif
