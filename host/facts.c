/* The facts documents (hardware and host facts) as JSON: written, and read back. */
#include "host/facts.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/util.h"

/* ---- writing ------------------------------------------------------------ */

/* The string and number members of lib/model.c's documents. */
static json_t *str(const char *s)
{
	return gf_model_json_str(s);
}

static json_t *num(struct gf_num n)
{
	return gf_model_json_num(n);
}

static json_t *tri_json(int t)
{
	return t < 0 ? json_null() : json_boolean(t);
}

/* One NVLink port of "bmc_health"."nvlinks"."ports". */
static json_t *nvlink_json(const struct gf_nvlink *p)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o,s:o,s:o,s:o}}", "id", str(p->id),
			 "link_status", str(p->link_status), "health", str(p->health), "speed_gbps",
			 num(p->speed_gbps), "errors", "data_crc", num(p->data_crc), "flit_crc",
			 num(p->flit_crc), "recovery", num(p->recovery), "replay", num(p->replay),
			 "runtime", tri_json(p->runtime_error), "training",
			 tri_json(p->training_error));
}

/* A GPU's health as its BMC describes it: the documented "bmc_health" object. */
static json_t *gpu_health_json(const struct gf_gpu_health *g)
{
	json_t *links = json_null(), *ports;

	if (g->nvlinks_up >= 0) {
		ports = json_array();
		for (size_t i = 0; i < g->nnvlinks; i++)
			json_array_append_new(ports, nvlink_json(&g->nvlinks[i]));
		links = json_pack("{s:i,s:i,s:o}", "up", g->nvlinks_up, "down", g->nvlinks_down,
				  "ports", ports);
	}

	return json_pack("{s:o,s:{s:o,s:o},s:{s:o,s:o,s:o,s:o},s:o}", "health", str(g->health),
			 "ecc", "corrected", num(g->ecc_corrected), "uncorrected",
			 num(g->ecc_uncorrected), "row_remapping", "pending",
			 tri_json(g->remap_pending), "failed", tri_json(g->remap_failed),
			 "corrected", num(g->remap_corrected), "uncorrected",
			 num(g->remap_uncorrected), "nvlinks", links);
}

json_t *gf_hardware_to_json(const struct gf_hardware *h)
{
	json_t *cpus = json_array(), *gpus = json_array();

	for (size_t i = 0; i < h->ncpus; i++)
		json_array_append_new(cpus, str(h->cpus[i]));
	for (size_t i = 0; i < h->ngpus; i++) {
		json_t *g = json_pack("{s:i,s:o,s:o,s:o}", "index", h->gpus[i].index, "model",
				      str(h->gpus[i].model), "serial", str(h->gpus[i].serial),
				      "firmware", str(h->gpus[i].firmware));

		if (h->gpus[i].bmc.read)
			json_object_set_new(g, "bmc_health", gpu_health_json(&h->gpus[i].bmc));
		json_array_append_new(gpus, g);
	}
	return json_pack("{s:{s:o,s:o,s:o,s:o,s:o}, s:{s:o,s:o}, s:{s:o,s:o,s:o,s:o},"
			 " s:{s:o,s:o,s:o,s:o,s:o}, s:o, s:o, s:o}",
			 "system", "manufacturer", str(h->system.manufacturer), "model",
			 str(h->system.model), "serial", str(h->system.serial), "uuid",
			 str(h->system.uuid), "bios_version", str(h->system.bios_version),
			 "chassis", "serial", str(h->chassis.serial), "part_number",
			 str(h->chassis.part_number), "board", "manufacturer",
			 str(h->board.manufacturer), "product", str(h->board.product), "serial",
			 str(h->board.serial), "part_number", str(h->board.part_number), "product",
			 "manufacturer", str(h->product.manufacturer), "name", str(h->product.name),
			 "serial", str(h->product.serial), "part_number",
			 str(h->product.part_number), "asset_tag", str(h->product.asset_tag),
			 "cpus", cpus, "memory_gib", num(h->memory_gib), "gpus", gpus);
}

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *jcount(struct gf_count c)
{
	return c.set && c.v <= (uint64_t)LLONG_MAX ? json_integer((json_int_t)c.v) : json_null();
}

static json_t *jbool(enum gf_tri t)
{
	return t == GF_TRI_UNKNOWN ? json_null() : json_boolean(t == GF_TRI_YES);
}

static json_t *jmode(enum gf_tri t)
{
	return t == GF_TRI_UNKNOWN ? json_null()
				   : json_string(t == GF_TRI_YES ? "enabled" : "disabled");
}

/* The string members of the documents, one table for the writer and the reader. */
struct doc_field {
	const char *parent; /* NULL: a member of the document itself */
	const char *key;
	size_t off; /* of the char * in the struct */
};

#define HG(key, member)                                         \
	{                                                       \
		NULL, key, offsetof(struct gf_host_gpu, member) \
	}
static const struct doc_field gpu_fields[] = {
	HG("name", name), HG("serial", serial), HG("uuid", uuid),
	HG("pci", pci),   HG("vbios", vbios),   HG("inforom", inforom),
};
#undef HG

#define HF(key, member)                                          \
	{                                                        \
		NULL, key, offsetof(struct gf_hostfacts, member) \
	}
static const struct doc_field host_fields[] = {
	HF("driver", driver),
	HF("cuda_driver", cuda_driver),
	HF("cuda_toolkit", cuda_toolkit),
	HF("kernel", kernel),
	HF("os", os),
	HF("fabricmanager", fabricmanager),
	HF("ofed", ofed),
	HF("driver_library", driver_library),
};
#undef HF

/* The top-level string members of @table from @base into @o. */
static void doc_put_fields(json_t *o, const struct doc_field *table, size_t n, const void *base)
{
	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, table[i].key,
				    jstr(*(char *const *)((const char *)base + table[i].off)));
}

static json_t *gpu_json(const struct gf_host_gpu *g)
{
	json_t *o = json_object();

	json_object_set_new(o, "index", json_integer(g->index));
	doc_put_fields(o, gpu_fields, NELEM(gpu_fields) - 1, g); /* all but "inforom", last */
	json_object_set_new(o, "memory_total_mib", jcount(g->memory_total_mib));
	json_object_set_new(o, "mig_mode", jmode(g->mig_mode));
	json_object_set_new(o, "persistence_mode", jmode(g->persistence_mode));
	json_object_set_new(o, "ecc",
			    json_pack("{s:{s:o,s:o},s:{s:o,s:o}}", "volatile", "corrected",
				      jcount(g->ecc_volatile_corrected), "uncorrected",
				      jcount(g->ecc_volatile_uncorrected), "aggregate", "corrected",
				      jcount(g->ecc_aggregate_corrected), "uncorrected",
				      jcount(g->ecc_aggregate_uncorrected)));
	json_object_set_new(o, "retired_pages_pending", jbool(g->retired_pages_pending));
	json_object_set_new(o, "remapped_rows_pending", jbool(g->remapped_rows_pending));
	doc_put_fields(o, gpu_fields + NELEM(gpu_fields) - 1, 1, g);
	return o;
}

json_t *gf_hostfacts_to_json(const struct gf_hostfacts *f)
{
	json_t *o = json_object(), *gpus = json_array(), *health = json_object(),
	       *notes = json_array();
	json_t *failed = json_array();
	const char *module = gf_driver_module_name(f->driver_module);

	/* The documented order: "driver", "driver_module", then the others. */
	doc_put_fields(o, host_fields, 1, f);
	json_object_set_new(o, "driver_module", jstr(module));
	doc_put_fields(o, host_fields + 1, NELEM(host_fields) - 1, f);
	for (size_t i = 0; i < f->ngpus; i++)
		json_array_append_new(gpus, gpu_json(&f->gpus[i]));
	json_object_set_new(o, "gpus", gpus);

	json_object_set_new(health, "state", json_string(gf_host_health_name(f->health)));
	if (f->health_detail)
		json_object_set_new(health, "detail", json_string(f->health_detail));
	if (f->xid_read) {
		json_t *x = json_object();

		for (size_t i = 0; i < f->nxids; i++) {
			char code[16];

			snprintf(code, sizeof(code), "%u", f->xids[i].code);
			json_object_set_new(x, code, json_integer(f->xids[i].count));
		}
		json_object_set_new(health, "xid", x);
		json_object_set_new(health, "xid_source", jstr(f->xid_source));
	} else {
		json_object_set_new(health, "xid", json_null());
		if (f->xid_note)
			json_object_set_new(health, "xid_note", json_string(f->xid_note));
	}
	json_object_set_new(o, "health", health);
	for (size_t i = 0; i < f->nnotes; i++)
		json_array_append_new(notes, json_string(f->notes[i]));
	json_object_set_new(o, "notes", notes);
	for (size_t i = 0; i < f->nfailed; i++)
		json_array_append_new(failed,
				      json_pack("{s:s,s:s}", "command", f->failed[i].command,
						"message", f->failed[i].message));
	json_object_set_new(o, "failed", failed);
	return o;
}

/* ---- reading ------------------------------------------------------------ */

/* What the store keeps is the JSON with its keys sorted, as it always was. */
static char *doc_text(json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(doc);
	return text;
}

char *gf_hardware_text(const struct gf_hardware *h)
{
	return h ? doc_text(gf_hardware_to_json(h)) : NULL;
}

char *gf_hostfacts_text(const struct gf_hostfacts *f)
{
	return f ? doc_text(gf_hostfacts_to_json(f)) : NULL;
}

/* Where a member of a facts document is, for messages: node, document, path. */
struct doc_at {
	const char *node;
	const char *doc; /* "hardware", "host" */
	struct gf_err *err;
};

static int doc_bad(const struct doc_at *at, const char *parent, const char *key, const char *want)
{
	return gf_err_set(at->err, GF_E_USAGE, GF_EK_NONE, "node '%s': %s%s%s.%s must be %s",
			  at->node, at->doc, parent ? "." : "", parent ? parent : "", key, want);
}

/*
 * Member @key of @o into *@ret when it has @type, NULL when absent or null;
 * another type is refused as not @want.
 */
static int doc_get(const struct doc_at *at, json_t *o, const char *parent, const char *key,
		   json_type type, const char *want, json_t **ret)
{
	json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (json_typeof(v) != type)
		return doc_bad(at, parent, key, want);
	*ret = v;
	return 0;
}

/* A string member into a new copy; absent or null leaves *dst NULL. */
static int doc_str(const struct doc_at *at, json_t *o, const char *parent, const char *key,
		   char **dst)
{
	json_t *v;
	int rc = doc_get(at, o, parent, key, JSON_STRING, "a string or null", &v);

	if (v)
		*dst = gf_xstrdup(json_string_value(v));
	return rc;
}

/* An object member (NULL when absent or null). */
static int doc_obj(const struct doc_at *at, json_t *o, const char *parent, const char *key,
		   json_t **ret)
{
	return doc_get(at, o, parent, key, JSON_OBJECT, "an object or null", ret);
}

static int doc_arr(const struct doc_at *at, json_t *o, const char *key, json_t **ret)
{
	return doc_get(at, o, NULL, key, JSON_ARRAY, "an array or null", ret);
}

static int doc_index(const struct doc_at *at, json_t *o, const char *parent, int *dst)
{
	json_t *v;
	int rc = doc_get(at, o, parent, "index", JSON_INTEGER, "an integer", &v);

	if (rc < 0 || !v)
		return rc;
	if (json_integer_value(v) < INT_MIN || json_integer_value(v) > INT_MAX)
		return doc_bad(at, parent, "index", "an integer");
	*dst = (int)json_integer_value(v);
	return 0;
}

static int doc_fields(const struct doc_at *at, json_t *doc, const struct doc_field *f, size_t n,
		      void *base)
{
	for (size_t i = 0; i < n; i++) {
		json_t *o = doc;
		int rc;

		if (f[i].parent && (rc = doc_obj(at, doc, NULL, f[i].parent, &o)) < 0)
			return rc;
		if (o && (rc = doc_str(at, o, f[i].parent, f[i].key,
				       (char **)((char *)base + f[i].off))) < 0)
			return rc;
	}
	return 0;
}

#define HW(parent, key, member)                                   \
	{                                                         \
		parent, key, offsetof(struct gf_hardware, member) \
	}
static const struct doc_field hw_fields[] = {
	HW("system", "manufacturer", system.manufacturer),
	HW("system", "model", system.model),
	HW("system", "serial", system.serial),
	HW("system", "uuid", system.uuid),
	HW("system", "bios_version", system.bios_version),
	HW("chassis", "serial", chassis.serial),
	HW("chassis", "part_number", chassis.part_number),
	HW("board", "manufacturer", board.manufacturer),
	HW("board", "product", board.product),
	HW("board", "serial", board.serial),
	HW("board", "part_number", board.part_number),
	HW("product", "manufacturer", product.manufacturer),
	HW("product", "name", product.name),
	HW("product", "serial", product.serial),
	HW("product", "part_number", product.part_number),
	HW("product", "asset_tag", product.asset_tag),
};
#undef HW

static void num_of(const json_t *o, const char *key, struct gf_num *n)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_number(v)) {
		n->set = true;
		n->v = json_number_value(v);
	}
}

static int tri_of(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* "bmc_health"."nvlinks"."ports", read back (absent: none, as stored before them). */
static int nvlinks_from_json(const struct doc_at *at, json_t *ports, struct gf_gpu_health *g)
{
	json_t *v;
	size_t i;
	int rc;

	if (!ports || json_is_null(ports))
		return 0;
	if (!json_is_array(ports))
		return doc_bad(at, "gpus[].bmc_health.nvlinks", "ports", "an array");
	g->nvlinks = gf_xcalloc(json_array_size(ports) + 1, sizeof(*g->nvlinks));
	json_array_foreach(ports, i, v) {
		struct gf_nvlink *p = &g->nvlinks[g->nnvlinks];
		json_t *e = json_object_get(v, "errors");

		if (!json_is_object(v))
			return doc_bad(at, "gpus[].bmc_health.nvlinks", "ports",
				       "an array of objects");
		g->nnvlinks++;
		if ((rc = doc_str(at, v, "gpus[].bmc_health.nvlinks.ports[]", "id", &p->id)) < 0 ||
		    (rc = doc_str(at, v, "gpus[].bmc_health.nvlinks.ports[]", "link_status",
				  &p->link_status)) < 0 ||
		    (rc = doc_str(at, v, "gpus[].bmc_health.nvlinks.ports[]", "health",
				  &p->health)) < 0)
			return rc;
		num_of(v, "speed_gbps", &p->speed_gbps);
		num_of(e, "data_crc", &p->data_crc);
		num_of(e, "flit_crc", &p->flit_crc);
		num_of(e, "recovery", &p->recovery);
		num_of(e, "replay", &p->replay);
		p->runtime_error = tri_of(e, "runtime");
		p->training_error = tri_of(e, "training");
	}
	return 0;
}

/* "bmc_health" of a GPU, read back; absent or null: not read. */
static int gpu_health_from_json(const struct doc_at *at, json_t *o, struct gf_gpu_health *g)
{
	json_t *ecc, *remap, *links;
	int rc;

	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return doc_bad(at, "gpus[]", "bmc_health", "an object or null");
	g->read = true;
	g->remap_pending = g->remap_failed = g->nvlinks_up = g->nvlinks_down = -1;
	if ((rc = doc_str(at, o, "gpus[].bmc_health", "health", &g->health)) < 0)
		return rc;
	ecc = json_object_get(o, "ecc");
	remap = json_object_get(o, "row_remapping");
	links = json_object_get(o, "nvlinks");
	num_of(ecc, "corrected", &g->ecc_corrected);
	num_of(ecc, "uncorrected", &g->ecc_uncorrected);
	g->remap_pending = tri_of(remap, "pending");
	g->remap_failed = tri_of(remap, "failed");
	num_of(remap, "corrected", &g->remap_corrected);
	num_of(remap, "uncorrected", &g->remap_uncorrected);
	if (json_is_integer(json_object_get(links, "up")) &&
	    json_is_integer(json_object_get(links, "down"))) {
		g->nvlinks_up = (int)json_integer_value(json_object_get(links, "up"));
		g->nvlinks_down = (int)json_integer_value(json_object_get(links, "down"));
	}
	return nvlinks_from_json(at, json_object_get(links, "ports"), g);
}

static int hw_lists(const struct doc_at *at, json_t *o, struct gf_hardware *h)
{
	json_t *cpus, *gpus, *mem = json_object_get(o, "memory_gib"), *v;
	size_t i;
	int rc;

	if ((rc = doc_arr(at, o, "cpus", &cpus)) < 0 || (rc = doc_arr(at, o, "gpus", &gpus)) < 0)
		return rc;
	if (mem && !json_is_null(mem)) {
		if (!json_is_number(mem))
			return doc_bad(at, NULL, "memory_gib", "a number or null");
		h->memory_gib.set = true;
		h->memory_gib.v = json_number_value(mem);
	}
	h->cpus = gf_xcalloc(json_array_size(cpus) + 1, sizeof(*h->cpus));
	json_array_foreach(cpus, i, v) {
		if (!json_is_string(v))
			return doc_bad(at, NULL, "cpus", "an array of strings");
		h->cpus[h->ncpus++] = gf_xstrdup(json_string_value(v));
	}
	h->gpus = gf_xcalloc(json_array_size(gpus) + 1, sizeof(*h->gpus));
	json_array_foreach(gpus, i, v) {
		struct gf_gpu_hw *g = &h->gpus[h->ngpus];

		if (!json_is_object(v))
			return doc_bad(at, NULL, "gpus", "an array of objects");
		h->ngpus++;
		if ((rc = doc_index(at, v, "gpus[]", &g->index)) < 0 ||
		    (rc = doc_str(at, v, "gpus[]", "model", &g->model)) < 0 ||
		    (rc = doc_str(at, v, "gpus[]", "serial", &g->serial)) < 0 ||
		    (rc = doc_str(at, v, "gpus[]", "firmware", &g->firmware)) < 0 ||
		    (rc = gpu_health_from_json(at, json_object_get(v, "bmc_health"), &g->bmc)) < 0)
			return rc;
	}
	return 0;
}

int gf_hardware_from_json(json_t *o, const char *node, struct gf_hardware *ret, struct gf_err *err)
{
	const struct doc_at at = {node, "hardware", err};
	struct gf_hardware h = {0};
	int rc;

	if (!json_is_object(o))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node '%s': 'hardware' must be an object", node);
	if ((rc = doc_fields(&at, o, hw_fields, NELEM(hw_fields), &h)) < 0 ||
	    (rc = hw_lists(&at, o, &h)) < 0) {
		gf_hardware_release(&h);
		return rc;
	}
	*ret = h;
	return 0;
}

/* A count: a non-negative integer, or null for not known. */
static int doc_count(const struct doc_at *at, json_t *o, const char *parent, const char *key,
		     struct gf_count *dst)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return doc_bad(at, parent, key, "a non-negative integer or null");
	dst->set = true;
	dst->v = (uint64_t)json_integer_value(v);
	return 0;
}

/* A yes/no: true/false (or, with @on/@off, those words), null for not known. */
static int doc_tri(const struct doc_at *at, json_t *o, const char *parent, const char *key,
		   const char *on, const char *off, enum gf_tri *dst)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!on && json_is_boolean(v))
		*dst = json_is_true(v) ? GF_TRI_YES : GF_TRI_NO;
	else if (on && json_is_string(v) && strcmp(json_string_value(v), on) == 0)
		*dst = GF_TRI_YES;
	else if (on && json_is_string(v) && strcmp(json_string_value(v), off) == 0)
		*dst = GF_TRI_NO;
	else
		return doc_bad(at, parent, key,
			       on ? "\"enabled\", \"disabled\" or null" : "a boolean or null");
	return 0;
}

static int host_gpu(const struct doc_at *gat, json_t *v, struct gf_host_gpu *g)
{
	const struct doc_at at = {gat->node, "host.gpus[]", gat->err};
	json_t *ecc, *vol = NULL, *agg = NULL;
	int rc;

	if ((rc = doc_index(&at, v, NULL, &g->index)) < 0 ||
	    (rc = doc_fields(&at, v, gpu_fields, NELEM(gpu_fields), g)) < 0 ||
	    (rc = doc_count(&at, v, NULL, "memory_total_mib", &g->memory_total_mib)) < 0 ||
	    (rc = doc_tri(&at, v, NULL, "mig_mode", "enabled", "disabled", &g->mig_mode)) < 0 ||
	    (rc = doc_tri(&at, v, NULL, "persistence_mode", "enabled", "disabled",
			  &g->persistence_mode)) < 0 ||
	    (rc = doc_tri(&at, v, NULL, "retired_pages_pending", NULL, NULL,
			  &g->retired_pages_pending)) < 0 ||
	    (rc = doc_tri(&at, v, NULL, "remapped_rows_pending", NULL, NULL,
			  &g->remapped_rows_pending)) < 0 ||
	    (rc = doc_obj(&at, v, NULL, "ecc", &ecc)) < 0 ||
	    (ecc && ((rc = doc_obj(&at, ecc, "ecc", "volatile", &vol)) < 0 ||
		     (rc = doc_obj(&at, ecc, "ecc", "aggregate", &agg)) < 0)) ||
	    (vol && ((rc = doc_count(&at, vol, "ecc.volatile", "corrected",
				     &g->ecc_volatile_corrected)) < 0 ||
		     (rc = doc_count(&at, vol, "ecc.volatile", "uncorrected",
				     &g->ecc_volatile_uncorrected)) < 0)) ||
	    (agg && ((rc = doc_count(&at, agg, "ecc.aggregate", "corrected",
				     &g->ecc_aggregate_corrected)) < 0 ||
		     (rc = doc_count(&at, agg, "ecc.aggregate", "uncorrected",
				     &g->ecc_aggregate_uncorrected)) < 0)))
		return rc;
	return 0;
}

static int xid_cmp(const void *a, const void *b)
{
	unsigned x = ((const struct gf_xid_count *)a)->code,
		 y = ((const struct gf_xid_count *)b)->code;

	return x < y ? -1 : x > y;
}

static int host_health(const struct doc_at *at, json_t *o, struct gf_hostfacts *f)
{
	json_t *h, *x, *v;
	const char *code;
	int rc, st;

	if ((rc = doc_obj(at, o, NULL, "health", &h)) < 0 || !h)
		return rc;
	v = json_object_get(h, "state");
	if (v && !json_is_null(v)) {
		st = json_is_string(v) ? gf_host_health_parse(json_string_value(v)) : -1;
		if (st < 0)
			return doc_bad(at, "health", "state", "a known health state");
		f->health = (enum gf_host_health)st;
	}
	if ((rc = doc_str(at, h, "health", "detail", &f->health_detail)) < 0 ||
	    (rc = doc_str(at, h, "health", "xid_source", &f->xid_source)) < 0 ||
	    (rc = doc_str(at, h, "health", "xid_note", &f->xid_note)) < 0 ||
	    (rc = doc_obj(at, h, "health", "xid", &x)) < 0 || !x)
		return rc;
	f->xid_read = true;
	f->xids = gf_xcalloc(json_object_size(x) + 1, sizeof(*f->xids));
	json_object_foreach(x, code, v) {
		char *end;
		unsigned long c = strtoul(code, &end, 10);

		if (!*code || *end || c > 0xffffffffUL || !json_is_integer(v) ||
		    json_integer_value(v) < 0 || json_integer_value(v) > 0xffffffffLL)
			return doc_bad(at, "health", "xid", "an object of Xid codes and counts");
		f->xids[f->nxids].code = (unsigned)c;
		f->xids[f->nxids++].count = (unsigned)json_integer_value(v);
	}
	gf_sort(f->xids, f->nxids, sizeof(*f->xids), xid_cmp);
	return 0;
}

/* "failed": the commands that failed unexplained (absent in documents older than it). */
static int host_failed(const struct doc_at *at, json_t *o, struct gf_hostfacts *f)
{
	json_t *failed, *v;
	size_t i;
	int rc;

	if ((rc = doc_arr(at, o, "failed", &failed)) < 0)
		return rc;
	json_array_foreach(failed, i, v) {
		const char *c = json_string_value(json_object_get(v, "command"));
		const char *m = json_string_value(json_object_get(v, "message"));

		if (!c || !m)
			return doc_bad(at, NULL, "failed", "an array of {\"command\",\"message\"}");
		gf_hostfacts_add_failure(f, c, m);
	}
	return 0;
}

static int host_doc(const struct doc_at *at, json_t *o, struct gf_hostfacts *f)
{
	json_t *gpus, *notes, *v;
	size_t i;
	int rc;

	if ((rc = doc_fields(at, o, host_fields, NELEM(host_fields), f)) < 0)
		return rc;
	v = json_object_get(o, "driver_module");
	if (v && !json_is_null(v)) {
		int m = json_is_string(v) ? gf_driver_module_parse(json_string_value(v)) : -1;

		if (m < 0)
			return doc_bad(at, NULL, "driver_module",
				       "\"open\", \"proprietary\" or null");
		f->driver_module = (enum gf_driver_module)m;
	}
	if ((rc = doc_arr(at, o, "gpus", &gpus)) < 0 || (rc = doc_arr(at, o, "notes", &notes)) < 0)
		return rc;
	f->gpus = gf_xcalloc(json_array_size(gpus) + 1, sizeof(*f->gpus));
	json_array_foreach(gpus, i, v) {
		if (!json_is_object(v))
			return doc_bad(at, NULL, "gpus", "an array of objects");
		if ((rc = host_gpu(at, v, &f->gpus[f->ngpus++])) < 0)
			return rc;
	}
	f->notes = gf_xcalloc(json_array_size(notes) + 1, sizeof(*f->notes));
	json_array_foreach(notes, i, v) {
		if (!json_is_string(v))
			return doc_bad(at, NULL, "notes", "an array of strings");
		f->notes[f->nnotes++] = gf_xstrdup(json_string_value(v));
	}
	if ((rc = host_failed(at, o, f)) < 0)
		return rc;
	return host_health(at, o, f);
}

int gf_hostfacts_from_json(json_t *o, const char *node, struct gf_hostfacts *ret,
			   struct gf_err *err)
{
	const struct doc_at at = {node, "host", err};
	struct gf_hostfacts f = {0};
	int rc;

	if (!json_is_object(o))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node '%s': 'host' must be an object", node);
	if ((rc = host_doc(&at, o, &f)) < 0) {
		gf_hostfacts_release(&f);
		return rc;
	}
	*ret = f;
	return 0;
}
