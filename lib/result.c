#include "lib/result.h"

#include <string.h>

void gf_result_init(struct gf_result *r)
{
	memset(r, 0, sizeof(*r));
}

void gf_result_release(struct gf_result *r)
{
	json_decref(r->data);
	gf_result_init(r);
}

void gf_result_fail(struct gf_result *r, const struct gf_err *e)
{
	r->ok = false;
	r->err = *e;
	if (r->err.kind == GF_EK_NONE)
		r->err.kind = GF_EK_INTERNAL;
}

json_t *gf_result_to_json(const char *node, const char *bmc, const char *protocol,
			  const struct gf_result *r)
{
	json_t *o = json_object();
	const char *key;
	json_t *v;

	json_object_set_new(o, "node", json_string(node));
	if (bmc)
		json_object_set_new(o, "bmc", json_string(bmc));
	if (protocol)
		json_object_set_new(o, "protocol", json_string(protocol));
	json_object_set_new(o, "ok", json_boolean(r->ok));
	if (r->data)
		json_object_foreach(r->data, key, v)
			json_object_set(o, key, v);
	if (!r->ok) {
		json_t *e = json_object();

		json_object_set_new(e, "kind", json_string(gf_errkind_name(r->err.kind)));
		json_object_set_new(e, "message", json_string(r->err.msg));
		json_object_set_new(o, "error", e);
	}
	return o;
}
