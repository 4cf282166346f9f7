#include "lib/err.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_names[] = {
	[GF_EK_NONE] = "",
	[GF_EK_TIMEOUT] = "timeout",
	[GF_EK_CONNECT] = "connect",
	[GF_EK_AUTH] = "auth",
	[GF_EK_TLS] = "tls",
	[GF_EK_HOSTKEY] = "hostkey",
	[GF_EK_PROTOCOL] = "protocol",
	[GF_EK_UNSUPPORTED] = "unsupported",
	[GF_EK_REFUSED] = "refused",
	[GF_EK_INTERNAL] = "internal",
	[GF_EK_BUSY] = "busy",
};

int gf_err_setv(struct gf_err *err, int code, enum gf_errkind kind, const char *fmt, va_list ap)
{
	if (!err)
		return code;
	err->code = code;
	err->kind = kind;
	err->detail = 0; /* a detail is this failure's own; whoever has one sets it after */
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return code;
}

int gf_err_set(struct gf_err *err, int code, enum gf_errkind kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gf_err_setv(err, code, kind, fmt, ap);
	va_end(ap);
	return code;
}

void gf_err_clear(struct gf_err *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

const char *gf_errkind_name(enum gf_errkind kind)
{
	if ((unsigned)kind >= sizeof(kind_names) / sizeof(kind_names[0]))
		return "internal";
	return kind_names[kind];
}

enum gf_errkind gf_errkind_from_name(const char *name)
{
	for (size_t i = 1; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (strcmp(kind_names[i], name) == 0)
			return (enum gf_errkind)i;
	return GF_EK_NONE;
}
