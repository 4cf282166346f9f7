/* Canonical component keys: the words and keys are lib/compkey.c, the sources the tables here. */
#include "inventory/normalize.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/compkey.h"
#include "lib/util.h"

/* ---- host facts ---------------------------------------------------------- */

/* A fact of the host as a whole: the member of gf_hostfacts that holds it. */
struct host_rule {
	enum gf_compkey row; /* its key and kind */
	size_t off;          /* offsetof(struct gf_hostfacts, member): a char * */
	const char *id;      /* where it was read, as the raw id */
	const char *name;
};

static const struct host_rule host_rules[] = {
	{GF_COMPKEY_DRIVER, offsetof(struct gf_hostfacts, driver), "nvidia-smi:driver_version",
	 "NVIDIA driver"},
	{GF_COMPKEY_CUDA_DRIVER, offsetof(struct gf_hostfacts, cuda_driver),
	 "nvidia-smi:cuda_version", "CUDA version of the driver"},
	{GF_COMPKEY_CUDA_TOOLKIT, offsetof(struct gf_hostfacts, cuda_toolkit), "cuda:toolkit",
	 "CUDA toolkit"},
	{GF_COMPKEY_KERNEL, offsetof(struct gf_hostfacts, kernel), "uname -r", "Linux kernel"},
	{GF_COMPKEY_OS, offsetof(struct gf_hostfacts, os), "os-release:PRETTY_NAME",
	 "Operating system"},
	{GF_COMPKEY_FABRICMANAGER, offsetof(struct gf_hostfacts, fabricmanager), "nv-fabricmanager",
	 "NVIDIA Fabric Manager"},
	{GF_COMPKEY_OFED, offsetof(struct gf_hostfacts, ofed), "ofed_info", "MLNX OFED"},
	/* Only on a node whose library and loaded module differ: a half-done driver upgrade. */
	{GF_COMPKEY_DRIVER_LIBRARY, offsetof(struct gf_hostfacts, driver_library),
	 "nvidia-smi:nvml_library_version", "NVIDIA driver library (user space)"},
};

/*
 * A fact per GPU: '#' in the row's key is the GPU's nvidia-smi index; the
 * raw id "nvidia-smi:", its PCI bus id, ":" and the query field.
 */
struct gpu_rule {
	enum gf_compkey row; /* its key and kind */
	size_t off;          /* offsetof(struct gf_host_gpu, member): a char * */
	const char *field;   /* the nvidia-smi --query-gpu field */
	const char *name;    /* "GPU <index> " and this */
};

static const struct gpu_rule gpu_rules[] = {
	{GF_COMPKEY_GPU_VBIOS, offsetof(struct gf_host_gpu, vbios), "vbios_version", "VBIOS"},
};

/* A component of @set, its strings pooled in @sw and readable whatever a peer sent. */
static void add(struct gf_sweep *sw, struct gf_inv_set *set, const char *key, const char *version,
		const char *source, const char *id, const char *name, const char *kind)
{
	struct gf_inv_comp *c = gf_inv_set_add(set);

	c->key = gf_sweep_str(sw, key);
	c->version = gf_sweep_text(sw, version);
	c->source = gf_sweep_str(sw, source);
	c->raw_id = gf_sweep_text(sw, id);
	c->name = gf_sweep_text(sw, name);
	c->kind = gf_sweep_text(sw, kind);
	gf_norm_comp_show(sw, c);
}

void gf_norm_host_components(struct gf_sweep *sw, const struct gf_hostfacts *f,
			     struct gf_inv_set *set)
{
	for (size_t r = 0; r < NELEM(host_rules); r++) {
		const char *v = *(char *const *)((const char *)f + host_rules[r].off);
		const struct gf_compkey_rule *row = &gf_compkey_rules[host_rules[r].row];

		if (v && *v)
			add(sw, set, row->key, v, GF_SOURCE_HOST, host_rules[r].id,
			    host_rules[r].name, row->kind);
	}
	for (size_t g = 0; g < f->ngpus; g++) {
		const struct gf_host_gpu *gpu = &f->gpus[g];

		for (size_t r = 0; r < NELEM(gpu_rules); r++) {
			const char *v = *(char *const *)((const char *)gpu + gpu_rules[r].off);
			const struct gf_compkey_rule *row = &gf_compkey_rules[gpu_rules[r].row];
			char id[160], name[96], *key;

			if (!v || !*v || gpu->index < 0)
				continue;
			key = gf_compkey_expand(row->key, gpu->index);
			snprintf(id, sizeof(id), "nvidia-smi:%s:%s", gpu->pci ? gpu->pci : "?",
				 gpu_rules[r].field);
			snprintf(name, sizeof(name), "GPU %d %s", gpu->index, gpu_rules[r].name);
			add(sw, set, key, v, GF_SOURCE_HOST, id, name, row->kind);
			free(key);
		}
	}
}

bool gf_norm_key_ok(const char *key)
{
	if (!key || !*key)
		return false;
	for (const char *p = key; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '.' ||
		      *p == '_' || *p == '-' || *p == '#'))
			return false;
	return true;
}

bool gf_norm_key_is_host(const char *key)
{
	return gf_compkey_is_host(key);
}

/* ---- BMC inventories: keys a backend left missing or odd ----------------- */

/*
 * The vocabulary's row for the component: the row of its kind, else the
 * first whose words its name or id holds. *ret_from: the field a word
 * matched in (NULL: the kind alone).
 */
static const struct gf_compkey_rule *row_of(const struct gf_component *c, const char **ret_from)
{
	const struct gf_compkey_rule *row = gf_compkey_of_kind(c->kind);

	*ret_from = NULL;
	return row ? row : gf_compkey_guess(c->name, c->id, ret_from);
}

/*
 * The key of @c from its row's: '#' is the first number in @from (the field
 * a word matched), else in the id, else the name, else how often the row
 * was used. Without a row or a row's key: the kind (or "other"), '.', the
 * id (else the name) in key characters, else the component's @index.
 */
static char *derive_key(const struct gf_component *c, size_t index, unsigned *counts)
{
	const char *from, *text = c->id && *c->id ? c->id : c->name;
	const struct gf_compkey_rule *row = row_of(c, &from);
	struct gf_buf b = GF_BUF_INIT;
	long num;

	if (row && row->key) {
		if (!strchr(row->key, '#'))
			return gf_xstrdup(row->key);
		num = gf_compkey_first_number(from);
		if (num < 0)
			num = gf_compkey_first_number(c->id);
		if (num < 0)
			num = gf_compkey_first_number(c->name);
		if (num < 0)
			num = (long)counts[row - gf_compkey_rules];
		counts[row - gf_compkey_rules]++;
		return gf_compkey_expand(row->key, num);
	}
	if (!gf_compkey_add_fallback(&b, row ? row->kind : "other", text)) {
		b.s[--b.len] = '\0';
		gf_buf_addf(&b, "%zu", index);
	}
	return gf_buf_detach(&b);
}

static char *lower(const char *s)
{
	char *c = gf_xstrdup(s);

	for (char *p = c; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return c;
}

int gf_norm_bmc_components(struct gf_sweep *sw, const char *node, const struct gf_component_list *l,
			   const struct gf_hardware *hw, const char *source, struct gf_inv_set *set,
			   struct gf_err *err)
{
	unsigned counts[GF_COMPKEY_NROWS] = {0};
	const struct gf_compkey_rule *bios = &gf_compkey_rules[GF_COMPKEY_BIOS];
	bool known = gf_source_known(source);
	bool have_bios = false;

	for (size_t i = 0; i < l->n; i++) {
		const struct gf_component *c = &l->v[i];
		char *key = c->key && *c->key ? lower(c->key) : NULL;

		if (!gf_norm_key_ok(key)) {
			free(key);
			key = derive_key(c, i, counts);
		}
		/* The store keeps canonical keys only: what the rules made must be one too. */
		if (!known || !gf_norm_key_ok(key)) {
			char *names = gf_source_names();
			int rc = !known ? gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
						     "node '%s': component '%s' has an unknown "
						     "source '%s' (%s)",
						     node, key, source ? source : "", names)
					: gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
						     "node '%s' has a component key '%s' with a "
						     "character that is not allowed",
						     node, key);

			free(names);
			free(key);
			return rc;
		}
		if (strcmp(key, bios->key) == 0)
			have_bios = true;
		add(sw, set, key, c->version, source, c->id, c->name, c->kind ? c->kind : "other");
		free(key);
	}
	if (!have_bios && known && hw && hw->system.bios_version && *hw->system.bios_version)
		add(sw, set, bios->key, hw->system.bios_version, source, "system.bios_version",
		    "System BIOS", bios->kind);
	return 0;
}

const char *gf_norm_model(const struct gf_hardware *hw)
{
	if (!hw)
		return NULL;
	if (hw->system.model && *hw->system.model)
		return hw->system.model;
	if (hw->product.name && *hw->product.name)
		return hw->product.name;
	return NULL;
}

bool gf_norm_comp_is_setting(const struct gf_inv_comp *c)
{
	return c->kind && strcmp(c->kind, "setting") == 0 && strncmp(c->key, "bios.", 5) == 0;
}

void gf_norm_comp_show(struct gf_sweep *sw, struct gf_inv_comp *c)
{
	char *key;

	if (!gf_norm_comp_is_setting(c) || !c->raw_id)
		return;
	/* Only a name that keys back to it, case aside: one with odd bytes keeps its key. */
	key = gf_bios_component_key(c->raw_id);
	if (strcmp(key, c->key) == 0 && strcasecmp(key + 5, c->raw_id) == 0 &&
	    strcmp(key + 5, c->raw_id) != 0) {
		memcpy(key + 5, c->raw_id, strlen(c->raw_id));
		c->shown = gf_sweep_str(sw, key);
	}
	free(key);
}

const char *gf_norm_comp_shown(const struct gf_inv_comp *c)
{
	return c->shown ? c->shown : c->key;
}

void gf_norm_bios_components(struct gf_sweep *sw, const struct gf_bios *b, const char *source,
			     const char *ignore, struct gf_inv_set *set)
{
	const char *name;
	json_t *v;

	if (!gf_source_known(source))
		return;
	json_object_foreach(b->attributes, name, v) {
		char *key = gf_bios_component_key(name);
		char *text = gf_bios_value_text(v);

		if (text && !gf_bios_ignored(b->dialect, ignore, key))
			add(sw, set, key, text, source, name, name, "setting");
		free(key);
		free(text);
	}
}
