/*
 * Firmware catalogs for `gpufleet update` (gpufleet-update(1)): the images
 * a fleet should run, which components each covers (a key or a key
 * pattern), where the image is (a file next to the catalog, or a URI the
 * BMC pulls) and how it is activated; and the plan of one node: which of
 * its components differ from the catalog. The activation defaults per
 * dialect and component kind are a table of data here. Pure, no SQL, no
 * protocol; thread-safe once loaded.
 */
#ifndef GF_INV_CATALOG_H
#define GF_INV_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/digest.h"
#include "lib/err.h"
#include "lib/model.h"

enum gf_activation {
	GF_ACT_DEFAULT = 0,      /* not given: from the defaults table */
	GF_ACT_NONE,             /* the image is live once the task ends */
	GF_ACT_BMC_RESET,        /* Manager.Reset */
	GF_ACT_HOST_REBOOT,      /* a restarting ComputerSystem.Reset (--reboot) */
	GF_ACT_HOST_POWER_CYCLE, /* ComputerSystem.Reset PowerCycle (--reboot) */
};

/* "none", "bmc-reset", "host-reboot", "host-power-cycle"; "default" for GF_ACT_DEFAULT. */
const char *gf_activation_name(enum gf_activation a);
/* The inverse; -1 when unknown ("default" is not accepted). */
int gf_activation_parse(const char *s);
/* Does @a restart the host (needs --reboot)? */
bool gf_activation_is_host(enum gf_activation a);

/*
 * The activation an image needs when the catalog does not say, for a BMC of
 * @dialect ("dell", "supermicro", ... as redfish/ names them, NULL: unknown)
 * and a component of @kind ("bmc", "bios", "gpu", ...). Never GF_ACT_DEFAULT.
 */
enum gf_activation gf_activation_default(const char *dialect, const char *kind);

struct gf_catalog_image {
	char *model;     /* glob against the node's model; NULL: any */
	char *component; /* canonical key or key glob ("gpu*.firmware") */
	char *version;
	char *file;      /* absolute (resolved against the catalog's folder), or NULL */
	char *image_uri; /* for BMCs that pull (SimpleUpdate), or NULL */
	enum gf_activation activation;
	bool version_exact; /* "version_match": "exact": the version reported byte for byte */
	char *sha256;       /* the catalog's, lower case, or NULL */
	/*
	 * What the file was when the catalog was read (a push refuses it once it
	 * differs): its size and SHA-256; digest "" when not recorded (no file,
	 * or a rollout stored before gpufleet recorded images).
	 */
	unsigned long long size;
	char digest[GF_SHA256_HEX];
};

/* An image as a rollout recorded it at plan: catalog entry @image, its file, size and SHA-256. */
struct gf_catalog_record {
	size_t image;
	char *file; /* absolute */
	unsigned long long size;
	char sha256[GF_SHA256_HEX];
};

struct gf_catalog {
	char *path; /* as given */
	char *text; /* the bytes parsed, as read (a rollout stores them) */
	size_t len;
	struct gf_catalog_image *v;
	size_t n;
};

/*
 * Read and check the catalog at @path: {"images":[{...}]}, members model
 * (optional glob), component, version, file or image_uri (at least one; a
 * file must be a readable regular file), activation (optional), sha256
 * (optional: 64 hex digits the file must hash to), version_match (optional:
 * "leading", the default, or "exact"; also at the top level, for every
 * image: see gf_version_matches()). Each file is read and its size and
 * SHA-256 recorded in its image (digest). Anything else is refused
 * with GF_E_USAGE and one line naming the entry and the field ("catalog
 * 'c.json': images[2] (component 'bmc'): 'version' is missing"). @ret is
 * filled only on success; release with gf_catalog_release().
 */
int gf_catalog_load(const char *path, struct gf_catalog *ret, struct gf_err *err);
/* The same from text; @path names it in messages and files are relative to its folder. */
int gf_catalog_parse(const char *path, const char *text, size_t len, struct gf_catalog *ret,
		     struct gf_err *err);
/*
 * The catalog of a stored rollout: @text parsed without reading any file,
 * each image of @rec (@nrec of them) taking the file, size and SHA-256 the
 * rollout recorded, so that a resume from another folder, or after the
 * file changed, pushes (or refuses) what was planned.
 */
int gf_catalog_parse_recorded(const char *path, const char *text, size_t len,
			      const struct gf_catalog_record *rec, size_t nrec,
			      struct gf_catalog *ret, struct gf_err *err);
void gf_catalog_release(struct gf_catalog *c);

/* One component of a node against the catalog. */
struct gf_plan_item {
	char *component;               /* the node's canonical key */
	char *raw_id;                  /* its FirmwareInventory member id, as the BMC names it */
	char *from;                    /* the version the node reports, NULL: none */
	char *to;                      /* the catalog's */
	bool skip;                     /* already at @to */
	bool exact;                    /* @to is matched byte for byte (gf_version_matches()) */
	size_t image;                  /* index into the catalog */
	enum gf_activation activation; /* resolved (never DEFAULT) */
};

struct gf_plan {
	struct gf_plan_item *v;
	size_t n;
};

/*
 * The plan of a node of @model (NULL: unknown; only images without a model
 * apply) on a BMC of @dialect, from its components @comps: for each
 * component the first image (catalog order) whose model and component
 * patterns match it, and that @only (a glob, NULL: any) matches too.
 * Components no image names are left out. Appends to @ret.
 */
void gf_catalog_plan(const struct gf_catalog *c, const char *model, const char *dialect,
		     const struct gf_component_list *comps, const char *only, struct gf_plan *ret);
void gf_plan_release(struct gf_plan *p);

#endif
