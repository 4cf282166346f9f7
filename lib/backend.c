#include "lib/backend.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"

const char *gf_power_name(enum gf_power p)
{
	switch (p) {
	case GF_POWER_ON: return "on";
	case GF_POWER_OFF: return "off";
	default: return "unknown";
	}
}

const char *gf_power_op_name(enum gf_power_op op)
{
	static const char *const names[] = {
		[GF_POWER_OP_ON] = "on",       [GF_POWER_OP_OFF] = "off",
		[GF_POWER_OP_CYCLE] = "cycle", [GF_POWER_OP_RESET] = "reset",
		[GF_POWER_OP_SOFT] = "soft",   [GF_POWER_OP_NMI] = "nmi",
	};

	if ((unsigned)op >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[op];
}

void gf_fw_caps_release(struct gf_fw_caps *c)
{
	if (!c)
		return;
	free(c->dialect);
	free(c->model);
	*c = (struct gf_fw_caps){0};
}

void gf_fw_task_release(struct gf_fw_task *t)
{
	if (!t)
		return;
	free(t->state);
	free(t->message);
	*t = (struct gf_fw_task){0};
}

const char *gf_fw_method_name(enum gf_fw_method m)
{
	switch (m) {
	case GF_FW_MULTIPART: return "multipart-push";
	case GF_FW_PUSH: return "http-push";
	case GF_FW_PULL: return "simple-update";
	default: return "unsupported";
	}
}

enum gf_fw_method gf_fw_method_for(const struct gf_fw_caps *c, bool file, bool image_uri)
{
	if (file && c->multipart)
		return GF_FW_MULTIPART;
	if (file && c->push)
		return GF_FW_PUSH;
	if (image_uri && c->pull)
		return GF_FW_PULL;
	return GF_FW_NONE;
}

static struct {
	const struct gf_backend *const *v;
	size_t n;
} table;

void gf_backends_set(const struct gf_backend *const *v, size_t n)
{
	table.v = v;
	table.n = n;
}

const struct gf_backend *gf_backend_find(const char *name)
{
	for (size_t i = 0; name && i < table.n; i++)
		if (strcasecmp(table.v[i]->name, name) == 0)
			return table.v[i];
	return NULL;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *gf_backend_names(const char *more, const char *last)
{
	const char **names = gf_xcalloc(table.n + 1, sizeof(*names));
	struct gf_buf b = GF_BUF_INIT;
	size_t n = 0;

	for (size_t i = 0; i < table.n; i++)
		names[n++] = table.v[i]->name;
	gf_sort(names, n, sizeof(*names), name_cmp);
	if (more)
		names[n++] = more;
	for (size_t i = 0; i < n; i++)
		gf_buf_addf(&b, "%s%s", i == 0 ? "" : i + 1 == n ? last : ", ", names[i]);
	free(names);
	return gf_buf_detach(&b);
}
