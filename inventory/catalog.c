/* Firmware catalogs and the plan of one node against one. */
#include "inventory/catalog.h"

#include <ctype.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/compkey.h"
#include "lib/file.h"

static const char *const act_names[] = {
	[GF_ACT_DEFAULT] = "default",
	[GF_ACT_NONE] = "none",
	[GF_ACT_BMC_RESET] = "bmc-reset",
	[GF_ACT_HOST_REBOOT] = "host-reboot",
	[GF_ACT_HOST_POWER_CYCLE] = "host-power-cycle",
};

const char *gf_activation_name(enum gf_activation a)
{
	if ((size_t)a < sizeof(act_names) / sizeof(act_names[0]))
		return act_names[a];
	return "default";
}

int gf_activation_parse(const char *s)
{
	for (size_t i = GF_ACT_NONE; s && i < sizeof(act_names) / sizeof(act_names[0]); i++)
		if (strcmp(act_names[i], s) == 0)
			return (int)i;
	return -1;
}

bool gf_activation_is_host(enum gf_activation a)
{
	return a == GF_ACT_HOST_REBOOT || a == GF_ACT_HOST_POWER_CYCLE;
}

/*
 * What an image needs to take effect when the catalog does not say; first
 * match wins, "*" matches anything (a dialect row goes before the "*" row of
 * its kind). A BMC image waits for Manager.Reset (iDRAC and iLO restart on
 * their own too, where a reset asked for is harmless); HGX GPU, baseboard
 * and CPLD images need the host power cycled, host firmware a reboot.
 */
static const struct {
	const char *dialect, *kind;
	enum gf_activation act;
} act_defaults[] = {
	{"*", "bmc", GF_ACT_BMC_RESET},
	{"*", "bios", GF_ACT_HOST_REBOOT},
	{"*", "gpu", GF_ACT_HOST_POWER_CYCLE},
	{"*", "baseboard", GF_ACT_HOST_POWER_CYCLE},
	{"*", "cpld", GF_ACT_HOST_POWER_CYCLE},
	{"*", "nic", GF_ACT_HOST_REBOOT},
	{"*", "psu", GF_ACT_NONE},
	{"*", "*", GF_ACT_HOST_REBOOT},
};

enum gf_activation gf_activation_default(const char *dialect, const char *kind)
{
	for (size_t i = 0; i < sizeof(act_defaults) / sizeof(act_defaults[0]); i++) {
		bool d = strcmp(act_defaults[i].dialect, "*") == 0 ||
			 (dialect && strcmp(act_defaults[i].dialect, dialect) == 0);
		bool k = strcmp(act_defaults[i].kind, "*") == 0 ||
			 (kind && strcmp(act_defaults[i].kind, kind) == 0);

		if (d && k)
			return act_defaults[i].act;
	}
	return GF_ACT_HOST_REBOOT;
}

static void image_release(struct gf_catalog_image *im)
{
	free(im->model);
	free(im->component);
	free(im->version);
	free(im->file);
	free(im->image_uri);
	free(im->sha256);
}

void gf_catalog_release(struct gf_catalog *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		image_release(&c->v[i]);
	free(c->v);
	free(c->path);
	free(c->text);
	*c = (struct gf_catalog){0};
}

/* "images[2] (component 'bmc')" for messages. */
static void entry_name(struct gf_buf *b, size_t i, const json_t *e)
{
	const char *comp = json_string_value(json_object_get(e, "component"));

	gf_buf_addf(b, "images[%zu]", i);
	if (comp)
		gf_buf_addf(b, " (component '%.60s')", comp);
}

static int bad(struct gf_err *err, const char *path, size_t i, const json_t *e, const char *what)
{
	struct gf_buf b = GF_BUF_INIT;
	int rc;

	entry_name(&b, i, e);
	rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "catalog '%s': %s: %s", path, gf_buf_str(&b),
			what);
	gf_buf_release(&b);
	return rc;
}

/* A string member that, when present, must be a non-empty string. */
static int opt_string(const char *path, size_t i, const json_t *e, const char *field, char **ret,
		      struct gf_err *err)
{
	json_t *v = json_object_get(e, field);

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || !*json_string_value(v)) {
		char what[96];

		snprintf(what, sizeof(what), "'%s' must be a non-empty string", field);
		return bad(err, path, i, e, what);
	}
	*ret = gf_xstrdup(json_string_value(v));
	return 0;
}

/* @file against the catalog's folder, made absolute against the current one. */
static char *resolve_file(const char *catalog, const char *file)
{
	struct gf_buf b = GF_BUF_INIT;
	const char *slash = strrchr(catalog, '/');

	if (file[0] != '/' && catalog[0] != '/') {
		char *cwd = getcwd(NULL, 0);

		if (cwd) {
			gf_buf_adds(&b, cwd);
			gf_buf_addc(&b, '/');
		}
		free(cwd);
	}
	if (file[0] != '/' && slash)
		gf_buf_add(&b, catalog, (size_t)(slash - catalog) + 1);
	gf_buf_adds(&b, file);
	return gf_buf_detach(&b);
}

/* Read the image's file: its size and SHA-256, checked against the catalog's sha256. */
static int record_file(const char *path, size_t i, const json_t *e, struct gf_catalog_image *im,
		       struct gf_err *err)
{
	struct gf_buf b = GF_BUF_INIT;
	struct stat st;
	int rc = 0;

	entry_name(&b, i, e);
	/* Not a regular file (a FIFO, a device): reading it may block a worker forever. */
	if (stat(im->file, &st) == 0 && !S_ISREG(st.st_mode))
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				"catalog '%s': %s: 'file' '%s' is not a regular file", path,
				gf_buf_str(&b), im->file);
	else if (access(im->file, R_OK) != 0 ||
		 gf_sha256_file(im->file, &im->size, im->digest, NULL) < 0)
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				"catalog '%s': %s: 'file' '%s' cannot be read", path,
				gf_buf_str(&b), im->file);
	else if (im->sha256 && strcmp(im->sha256, im->digest) != 0)
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				"catalog '%s': %s: image '%s' has sha256 %s, the catalog gives %s",
				path, gf_buf_str(&b), im->file, im->digest, im->sha256);
	gf_buf_release(&b);
	return rc;
}

static int parse_image(const char *path, size_t i, const json_t *e, bool read_files, bool exact,
		       struct gf_catalog_image *ret, struct gf_err *err)
{
	static const char *const known[] = {"model",   "component", "version",
					    "file",    "image_uri", "activation",
					    "comment", "sha256",    "version_match"};
	struct gf_catalog_image im = {0};
	char *file = NULL, *act = NULL, *match = NULL;
	const char *key;
	json_t *v;
	int rc = 0;

	if (!json_is_object(e))
		return bad(err, path, i, e, "not an object");
	json_object_foreach((json_t *)e, key, v) {
		bool ok = false;

		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			ok = ok || strcmp(key, known[k]) == 0;
		if (!ok) {
			char what[96];

			snprintf(what, sizeof(what), "unknown field '%.60s'", key);
			return bad(err, path, i, e, what);
		}
	}
	if ((rc = opt_string(path, i, e, "model", &im.model, err)) < 0 ||
	    (rc = opt_string(path, i, e, "component", &im.component, err)) < 0 ||
	    (rc = opt_string(path, i, e, "version", &im.version, err)) < 0 ||
	    (rc = opt_string(path, i, e, "file", &file, err)) < 0 ||
	    (rc = opt_string(path, i, e, "image_uri", &im.image_uri, err)) < 0 ||
	    (rc = opt_string(path, i, e, "activation", &act, err)) < 0 ||
	    (rc = opt_string(path, i, e, "sha256", &im.sha256, err)) < 0 ||
	    (rc = opt_string(path, i, e, "version_match", &match, err)) < 0)
		goto out;
	if (match && strcmp(match, "exact") != 0 && strcmp(match, "leading") != 0) {
		rc = bad(err, path, i, e, "'version_match' must be leading or exact");
		goto out;
	}
	im.version_exact = match ? strcmp(match, "exact") == 0 : exact;
	if (!im.component) {
		rc = bad(err, path, i, e, "'component' is missing");
		goto out;
	}
	if (!im.version) {
		rc = bad(err, path, i, e, "'version' is missing");
		goto out;
	}
	if (!file && !im.image_uri) {
		rc = bad(err, path, i, e, "'file' or 'image_uri' is missing");
		goto out;
	}
	if (im.image_uri && strncmp(im.image_uri, "https://", 8) != 0 &&
	    strncmp(im.image_uri, "http://", 7) != 0) {
		rc = bad(err, path, i, e, "'image_uri' must be an http:// or https:// URI");
		goto out;
	}
	if (im.sha256 && (!file || !gf_sha256_valid(im.sha256))) {
		rc = bad(err, path, i, e,
			 file ? "'sha256' must be 64 hex digits" : "'sha256' needs a 'file'");
		goto out;
	}
	for (char *c = im.sha256; c && *c; c++)
		*c = (char)tolower((unsigned char)*c);
	if (file) {
		im.file = resolve_file(path, file);
		if (read_files && (rc = record_file(path, i, e, &im, err)) < 0)
			goto out;
	}
	if (act) {
		int a = gf_activation_parse(act);

		if (a < 0) {
			rc = bad(err, path, i, e,
				 "'activation' must be none, bmc-reset, host-reboot or host-power-cycle");
			goto out;
		}
		im.activation = (enum gf_activation)a;
	}
	*ret = im;
	im = (struct gf_catalog_image){0};
out:
	image_release(&im);
	free(file);
	free(act);
	free(match);
	return rc;
}

/*
 * The first image that matches a component is the one used: an entry that
 * an earlier one always matches first (the same component twice, or a glob
 * before a specific entry, for the same models) would never be used. Refused,
 * naming both, rather than silently ignored.
 */
static int shadowed(const char *path, const struct gf_catalog *c, const json_t *images,
		    struct gf_err *err)
{
	for (size_t j = 1; j < c->n; j++) {
		const struct gf_catalog_image *b = &c->v[j];

		for (size_t i = 0; i < j; i++) {
			const struct gf_catalog_image *a = &c->v[i];
			struct gf_buf first = GF_BUF_INIT;
			int rc;

			if (a->model && (!b->model || strcmp(a->model, b->model) != 0))
				continue;
			if (fnmatch(a->component, b->component, 0) != 0)
				continue;
			gf_buf_adds(&first, "never used: ");
			entry_name(&first, i, json_array_get(images, i));
			gf_buf_addf(&first,
				    " comes first and matches the same components%s; put the "
				    "specific entry first, or remove one",
				    a->model ? " of the same models" : "");
			rc = bad(err, path, j, json_array_get(images, j), gf_buf_str(&first));
			gf_buf_release(&first);
			return rc;
		}
	}
	return 0;
}

/* A "version_match" value: "leading" or "exact". */
static bool match_name_ok(const json_t *v)
{
	const char *s = json_string_value(v);

	return s && (strcmp(s, "leading") == 0 || strcmp(s, "exact") == 0);
}

static int parse(const char *path, const char *text, size_t len, bool read_files,
		 struct gf_catalog *ret, struct gf_err *err)
{
	struct gf_catalog c = {0};
	json_error_t je;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *images, *e, *match;
	bool exact = false;
	size_t i;
	int rc = 0;

	if (!doc)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "catalog '%s' is not JSON (%s, line %d)", path, je.text, je.line);
	images = json_object_get(doc, "images");
	if (!json_is_object(doc) || !json_is_array(images)) {
		json_decref(doc);
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "catalog '%s' has no \"images\" list", path);
	}
	match = json_object_get(doc, "version_match");
	if (match && !match_name_ok(match)) {
		json_decref(doc);
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "catalog '%s': 'version_match' must be leading or exact", path);
	}
	exact = match && strcmp(json_string_value(match), "exact") == 0;
	c.path = gf_xstrdup(path);
	c.text = gf_xmalloc(len + 1);
	memcpy(c.text, text, len);
	c.text[len] = '\0';
	c.len = len;
	c.v = gf_xcalloc(json_array_size(images) ? json_array_size(images) : 1, sizeof(*c.v));
	json_array_foreach(images, i, e) {
		rc = parse_image(path, i, e, read_files, exact, &c.v[c.n], err);
		if (rc < 0)
			break;
		c.n++;
	}
	/* A stored rollout's catalog was checked when it was planned: resume takes it as it is. */
	if (rc == 0 && read_files)
		rc = shadowed(path, &c, images, err);
	json_decref(doc);
	if (rc < 0) {
		gf_catalog_release(&c);
		return rc;
	}
	*ret = c;
	return 0;
}

int gf_catalog_parse(const char *path, const char *text, size_t len, struct gf_catalog *ret,
		     struct gf_err *err)
{
	return parse(path, text, len, true, ret, err);
}

int gf_catalog_parse_recorded(const char *path, const char *text, size_t len,
			      const struct gf_catalog_record *rec, size_t nrec,
			      struct gf_catalog *ret, struct gf_err *err)
{
	int rc = parse(path, text, len, false, ret, err);

	for (size_t k = 0; rc == 0 && k < nrec; k++) {
		struct gf_catalog_image *im;

		if (rec[k].image >= ret->n || !rec[k].file) {
			gf_catalog_release(ret);
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "catalog '%s': the rollout's record of images[%zu] does "
					  "not match it",
					  path, rec[k].image);
		}
		im = &ret->v[rec[k].image];
		free(im->file);
		im->file = gf_xstrdup(rec[k].file);
		im->size = rec[k].size;
		snprintf(im->digest, sizeof(im->digest), "%s", rec[k].sha256);
	}
	return rc;
}

int gf_catalog_load(const char *path, struct gf_catalog *ret, struct gf_err *err)
{
	char *text;
	size_t len;
	int rc = gf_file_read(path, 16u << 20, 0, &text, &len, err);

	if (rc < 0 && err && !err->detail)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "catalog '%s' is larger than 16 MiB",
				  path);
	if (rc < 0)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "catalog '%s' cannot be read", path);
	rc = gf_catalog_parse(path, text, len, ret, err);
	free(text);
	return rc;
}

void gf_plan_release(struct gf_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].component);
		free(p->v[i].raw_id);
		free(p->v[i].from);
		free(p->v[i].to);
	}
	free(p->v);
	*p = (struct gf_plan){0};
}

void gf_catalog_plan(const struct gf_catalog *c, const char *model, const char *dialect,
		     const struct gf_component_list *comps, const char *only, struct gf_plan *ret)
{
	for (size_t k = 0; k < comps->n; k++) {
		const struct gf_component *cp = &comps->v[k];
		struct gf_plan_item *it;

		if (!cp->key || (only && fnmatch(only, cp->key, 0) != 0))
			continue;
		for (size_t i = 0; i < c->n; i++) {
			const struct gf_catalog_image *im = &c->v[i];

			if (im->model && (!model || fnmatch(im->model, model, 0) != 0))
				continue;
			if (fnmatch(im->component, cp->key, 0) != 0)
				continue;
			ret->v = gf_xrealloc(ret->v, (ret->n + 1) * sizeof(*ret->v));
			it = &ret->v[ret->n++];
			*it = (struct gf_plan_item){
				.component = gf_xstrdup(cp->key),
				.raw_id = cp->id ? gf_xstrdup(cp->id) : NULL,
				.from = cp->version ? gf_xstrdup(cp->version) : NULL,
				.to = gf_xstrdup(im->version),
				.skip = gf_version_matches(cp->version, im->version,
							   im->version_exact),
				.exact = im->version_exact,
				.image = i,
				.activation = im->activation != GF_ACT_DEFAULT
						      ? im->activation
						      : gf_activation_default(dialect, cp->kind),
			};
			break;
		}
	}
}
