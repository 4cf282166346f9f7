/*
 * Inside the Redfish backend: the pieces its files share, and what the unit
 * tests drive directly. Nothing outside redfish/ and tests/ includes this.
 *
 * The walkers (firmware, sensors, event log, hardware, power, boot) speak to
 * a BMC only through struct rf_io, so the same code runs over HTTPS in the
 * backend and over a captured mockup tree in the tests.
 */
#ifndef GF_RF_H
#define GF_RF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/backend.h"
#include "lib/bios.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/model.h"

/* ---- JSON access that tolerates whatever a BMC sends -------------------- */

/* Members of the wanted type, or NULL when absent or of another type. Borrowed. */
const char *rf_str(const json_t *o, const char *key);
json_t *rf_obj(const json_t *o, const char *key);
json_t *rf_arr(const json_t *o, const char *key);
/* A number member (integer or real): true and *ret set, false otherwise. */
bool rf_num(const json_t *o, const char *key, double *ret);
/* A boolean member: 1, 0, or -1 when absent or not a boolean. */
int rf_bool(const json_t *o, const char *key);
/* Follow "A.B.C" through objects; NULL when a step is missing. Borrowed. */
json_t *rf_get(const json_t *o, const char *dotted);
const char *rf_get_str(const json_t *o, const char *dotted);
/* o["@odata.id"] and o[key]["@odata.id"]. */
const char *rf_odata_id(const json_t *o);
const char *rf_link(const json_t *o, const char *key);
/* A copy with surrounding blanks removed; NULL for NULL or an empty result. */
char *rf_dup(const char *s);

/* How deep BMC JSON may nest; what lies deeper reads as null. */
#define RF_JSON_DEPTH 64

/*
 * Parse JSON a BMC sent (json_loadb() with @flags): every answer of a BMC
 * enters here. Values nested deeper than RF_JSON_DEPTH are replaced by
 * null before parsing, so that nothing that walks the document (jansson's
 * dump and comparison recurse) goes deeper than that on a worker's stack;
 * the shape above stays, and reads as the wrong type where it matters.
 * A new reference, NULL (with @je) when it does not parse. Thread-safe.
 */
json_t *rf_json_parse(const char *text, size_t len, size_t flags, json_error_t *je);
/* Case-insensitive equality, either side may be NULL (then false). */
bool rf_eq(const char *a, const char *b);
/* Parse an RFC 3339 time ("2024-06-11T00:13:00-05:00", ".851+00:00", "Z"). */
bool rf_time_parse(const char *s, double *ret);

/* ---- how the walkers reach a BMC ---------------------------------------- */

struct rf_io {
	/*
	 * GET @path (absolute, "/redfish/v1/...", may carry a query): the JSON
	 * object (new reference) and, when @ret_etag is not NULL, the ETag
	 * (header, else NULL; caller frees). Errors are per-node (GF_E_NODE).
	 */
	int (*get)(void *ud, const char *path, json_t **ret, char **ret_etag, struct gf_err *err);
	/* POST or PATCH @body; @if_match NULL: no If-Match header. */
	int (*send)(void *ud, const char *method, const char *path, const json_t *body,
		    const char *if_match, struct gf_err *err);
	/*
	 * GET @path as bytes (an attachment: AdditionalDataURI), at most @max
	 * of them (more: GF_E_NODE), into @ret (set on success). NULL: none.
	 */
	int (*get_bytes)(void *ud, const char *path, size_t max, struct gf_buf *ret,
			 struct gf_err *err);
};

struct rf_dialect;

struct rf_client {
	const struct rf_io *io;
	void *ud;
	const char *node; /* for messages */
	json_t *root;     /* the service root, owned */
	const struct rf_dialect *dialect;
	char expand[32];      /* "$expand=.($levels=1)", "" when not advertised */
	const char *log_name; /* sel: the log service to use, NULL: discover */
	char *main_system;    /* @odata.id of the main System, once known; owned */
	size_t max_members;   /* per collection, against runaway paging */
	unsigned max_pages;
	bool deep;    /* the root allows $select and $expand two levels deep */
	json_t *kept; /* RF_WALK_KEEP: collections read once per session, by path; owned */
};

/*
 * Read the service root through @io and set up @c: dialect, $expand support.
 * @c is zeroed first; release with rf_client_release().
 */
int rf_client_init(struct rf_client *c, const struct rf_io *io, void *ud, const char *node,
		   struct gf_err *err);
/* Use an already read service root (a new reference is taken). */
void rf_client_setup(struct rf_client *c, const struct rf_io *io, void *ud, const char *node,
		     json_t *root);
void rf_client_release(struct rf_client *c);

/* The $expand query allowed by a service root's ProtocolFeaturesSupported ("" if none). */
void rf_expand_query(const json_t *root, char *buf, size_t size);

enum {
	RF_WALK_FETCH = 0,       /* members as full resources (expanded or fetched one by one) */
	RF_WALK_REFS = 1 << 0,   /* members as they are listed, never fetched */
	RF_WALK_EXPAND = 1 << 1, /* ask for $expand where the service allows it */
	/*
	 * Keep what was read for the rest of the session (the client), and read
	 * it from there next time: for what a session's verbs all walk (Systems,
	 * Chassis, Managers, LogServices), whose links do not change while it is
	 * open. The caller must not change the array or its members.
	 */
	RF_WALK_KEEP = 1 << 2
};

/*
 * Every distinct member of the collection at @path, following
 * Members@odata.nextLink and skipping members already seen (by @odata.id; a
 * member without one is kept). *ret is a new array of objects (a new
 * reference to the kept one with RF_WALK_KEEP). Full members (without
 * RF_WALK_REFS) come with one request per page where the service root
 * advertises $expand, RF_WALK_EXPAND or not.
 */
int rf_collection(struct rf_client *c, const char *path, unsigned flags, json_t **ret,
		  struct gf_err *err);
/*
 * The resource at @path and the members of its collection @key, in one
 * request where the service root advertises $select and two levels of
 * $expand ("?$select=KEY&$expand=.($levels=2)"), else the resource then the
 * collection (rf_collection_of()). *ret: the resource (with $select, only
 * its annotations and @key); *ret_members: a new array, NULL when the
 * resource links no @key. A service that refuses the query (400, 405, 501)
 * or answers without @key is read the plain way.
 */
int rf_fetch_with_members(struct rf_client *c, const char *path, const char *key, unsigned flags,
			  json_t **ret, json_t **ret_members, struct gf_err *err);
/* The collection linked from @o[key], or an empty array when there is no link. */
int rf_collection_of(struct rf_client *c, const json_t *o, const char *key, unsigned flags,
		     json_t **ret, struct gf_err *err);
/* GET through the client: a helper for the walkers. */
int rf_fetch(struct rf_client *c, const char *path, json_t **ret, struct gf_err *err);
/* The same, where 404 is no error: *ret is then NULL. */
int rf_fetch_opt(struct rf_client *c, const char *path, json_t **ret, struct gf_err *err);

/*
 * PATCH @uri with If-Match: read it with its ETag (the header where sent,
 * else the payload's @odata.etag; none: no If-Match), ask @body for the
 * body given what was read (NULL with @err filled: nothing is sent), send;
 * on 412 (changed between the read and the write) once more from the read.
 * @body gets @ud; the body it returns is freed here.
 */
int rf_patch_fresh(struct rf_client *c, const char *uri,
		   json_t *(*body)(struct rf_client *c, const json_t *res, void *ud,
				   struct gf_err *err),
		   void *ud, struct gf_err *err);

/*
 * What an open session of the backend (gf_redfish_backend.open) holds:
 * its walker client, and its HTTPS connection (credentials set, the pin
 * taken). Borrowed, valid until the session is closed.
 */
struct rf_http;
struct rf_client *rf_session_client(void *session);
struct rf_http *rf_session_http(void *session);

/* ---- vendor dialects (dialect.c): differences kept as data -------------- */

/* How a FirmwareInventory member Id is cut before the rules see it. */
enum rf_fwid {
	RF_FWID_PLAIN = 0,
	RF_FWID_DELL, /* "Installed-25227-6.00.30.00__iDRAC.Embedded.1-1": state, FQDD */
};

enum rf_on {
	RF_ON_ID = 0, /* the (cut) member Id */
	RF_ON_NAME,   /* the member Name */
};

/*
 * One firmware rule. @match is a case-insensitive pattern: '#' matches a run
 * of digits (captured), '*' any text, anything else itself. In @key each '#'
 * is replaced by the next capture, '@' by the first number of the member's
 * location (HPE DeviceContext "Bay 2" gives 2). A NULL @kind is guessed from
 * the name. @alt is the key used when another member, matched by an earlier
 * rule, holds @key already (HGX_FW_GPU_SXM_n next to GPUn on Supermicro).
 */
struct rf_fw_rule {
	const char *match;
	enum rf_on on;
	const char *key;
	const char *kind;
	const char *alt;
};

struct rf_fw_state {
	const char *state;  /* Dell Id prefix */
	const char *suffix; /* added to the key */
};

/* Where a vendor keeps, under Oem, what the standard properties lack. */
enum rf_oem_field {
	RF_OEM_SEL_SEVERITY = 0, /* a LogEntry's severity when Severity is missing */
	RF_OEM_SEL_SENSOR,       /* the sensor a LogEntry is about */
	RF_OEM_SENSOR_TEXT,      /* a discrete sensor's state as text */
	RF_OEM_NFIELDS
};

struct rf_dialect {
	const char *name;           /* "dell", "hpe", "lenovo", "supermicro", "nvidia", "generic" */
	const char *const *vendors; /* Vendor / Manufacturer prefixes that select it */
	enum rf_fwid fwid;
	const struct rf_fw_state *states; /* RF_FWID_DELL: suffix per state, NULL-terminated */
	const struct rf_fw_rule *fw;      /* terminated by a rule with a NULL match */
	const char *const *logs;          /* event log service Ids, most wanted first */
	const char *context; /* where a member says where it sits ("Oem.Hpe.DeviceContext") */
	bool gpus_in_pcie;   /* GPUs are Chassis PCIeDevices, not Processors */
	const char *oem[RF_OEM_NFIELDS]; /* dotted paths ("Oem.Hpe.Severity"), NULL: none */
	const char *psu_shared_name; /* a Name every power supply has alike: tell them by MemberId */
};

/* The dialect for a service root and, when known, the main System's Manufacturer. */
const struct rf_dialect *rf_dialect_detect(const json_t *root, const char *manufacturer);
const struct rf_dialect *rf_dialect_by_name(const char *name);
/* Every dialect, for tests. */
extern const struct rf_dialect *const rf_dialects[];
/* Rules tried after the vendor's own: the HGX baseboard; then the words of lib/compkey.c. */
extern const struct rf_fw_rule rf_fw_hgx[];

/*
 * The string at the first of the dialects' @which Oem paths that @o holds,
 * or NULL. Every vendor's place is looked at, whatever the detected dialect:
 * an Oem member names its vendor, so no other vendor's data can be taken.
 */
const char *rf_oem_str(const json_t *o, enum rf_oem_field which);
/* Is @name one that some dialect gives to every power supply alike? */
bool rf_psu_name_shared(const char *name);

/* Match @s against a rule pattern; captures (at most @ncap) as numbers. */
bool rf_pattern_match(const char *pattern, const char *s, long *caps, size_t ncap,
		      size_t *ret_ncaps);

/* ---- firmware (firmware.c) ---------------------------------------------- */

/*
 * Normalize FirmwareInventory members (objects, in BMC order) into
 * components: raw id, name, version, updateable, kind, a key stable across
 * vendors and releases and unique within the list, and details (Status
 * state and health, SoftwareId, ReleaseDate). Pure; appends to @ret.
 */
void rf_firmware_normalize(const struct rf_dialect *d, const json_t *members,
			   struct gf_component_list *ret);
int rf_firmware(struct rf_client *c, struct gf_component_list *ret, struct gf_err *err);

/* ---- sensors (sensors.c) ------------------------------------------------ */

/* Append the sensors of one document; names in @seen (a JSON object used as a set) are skipped. */
void rf_sensors_thermal(const json_t *thermal, json_t *seen, struct gf_sensor_list *ret);
void rf_sensors_power(const json_t *power, json_t *seen, struct gf_sensor_list *ret);
void rf_sensor_one(const json_t *sensor, json_t *seen, struct gf_sensor_list *ret);
void rf_sensor_fan(const json_t *fan, json_t *seen, struct gf_sensor_list *ret);
void rf_sensor_psu(const json_t *psu, json_t *seen, struct gf_sensor_list *ret);
/* A LeakDetector: type "leak", its state from DetectorState (not Status.Health). */
void rf_leak_detector(const json_t *detector, json_t *seen, struct gf_sensor_list *ret);
int rf_sensors(struct rf_client *c, struct gf_sensor_list *ret, struct gf_err *err);

/* ---- event log (sel.c) -------------------------------------------------- */

/* One LogEntry into the model; false when it is not an object. */
bool rf_sel_entry(const json_t *entry, struct gf_sel_list *ret);
/*
 * Pick the event log among @services (LogService objects) for dialect @d, or
 * the one named @want. Returns the index, or -1.
 */
long rf_sel_pick(const struct rf_dialect *d, const json_t *services, const char *want);
/* The raw LogEntry members of the event log rf_sel_list() reads (new array, BMC order). */
int rf_sel_entries(struct rf_client *c, json_t **ret, struct gf_err *err);
int rf_sel_list(struct rf_client *c, struct gf_sel_list *ret, struct gf_err *err);
int rf_sel_clear(struct rf_client *c, struct gf_err *err);

/* ---- hardware (hardware.c) ---------------------------------------------- */

int rf_hardware(struct rf_client *c, struct gf_hardware *ret, struct gf_err *err);

/* ---- power and boot (power.c) ------------------------------------------- */

/* The main System (the first member of /Systems that has a Reset action, else the first). */
int rf_main_system(struct rf_client *c, json_t **ret, struct gf_err *err);
/* The port of the SSH serial console a Manager advertises (SerialConsole.SSH), 0: none. */
int rf_console_ssh(struct rf_client *c, int *ret, struct gf_err *err);
enum gf_power rf_power_state(const char *s);
/*
 * The Reset types to send for @op, given what the BMC allows (@allowed, an
 * array of strings, or NULL when it does not say). Up to 2 steps
 * ("ForceOff" then "On" where PowerCycle is missing). Returns the number of
 * steps, 0 when the BMC allows nothing that does @op.
 */
size_t rf_reset_plan(enum gf_power_op op, const json_t *allowed, const char *steps[2]);
/* The allowed ResetType values of a System: inline, else from its ActionInfo. New ref or NULL. */
int rf_reset_allowed(struct rf_client *c, const json_t *sys, json_t **ret, struct gf_err *err);
int rf_power_get(struct rf_client *c, enum gf_power *ret, struct gf_err *err);
int rf_power_set(struct rf_client *c, enum gf_power_op op, struct gf_err *err);
/* Boot override from a System's Boot object. */
void rf_boot_parse(const json_t *sys, struct gf_boot *ret);
int rf_boot_get(struct rf_client *c, struct gf_boot *ret, struct gf_err *err);
int rf_boot_set(struct rf_client *c, const struct gf_boot *want, struct gf_err *err);

/* ---- BIOS settings (bios.c) --------------------------------------------- */

/* An AttributeRegistry's entries in the gf_bios "entries" shape; NULL without RegistryEntries. */
json_t *rf_bios_registry_parse(const json_t *reg);
/* Attributes, pending values, and with @with_registry the registry where published. */
int rf_bios_get(struct rf_client *c, bool with_registry, struct gf_bios *ret, struct gf_err *err);
/* PATCH the settings object with @values ({name: JSON value}), If-Match where an ETag is given. */
int rf_bios_set(struct rf_client *c, const json_t *values, enum gf_bios_apply when,
		struct gf_err *err);

#endif
