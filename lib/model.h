/*
 * The result model every backend fills, whatever protocol served: sensors,
 * event log entries, firmware components, hardware facts, boot override.
 * Each has a *_to_json() that makes the documented JSON shape, so output is
 * the same for IPMI and Redfish. Lists own their elements.
 */
#ifndef GF_MODEL_H
#define GF_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* ---- sensors ---------------------------------------------------------- */

enum gf_sensor_state {
	GF_SENSOR_UNKNOWN = 0,
	GF_SENSOR_NOMINAL,
	GF_SENSOR_WARNING,  /* beyond a non-critical threshold */
	GF_SENSOR_CRITICAL, /* beyond a critical or non-recoverable one; a failed PSU */
};

/* Canonical sensor types (JSON "type"): temperature, fan, power, voltage,
 * current, power_supply, processor, memory, drive, other ... as strings. */

struct gf_num {
	bool set;
	double v;
};

struct gf_sensor {
	char *name;    /* as the BMC names it: not unique, distinct sensors may share it */
	char *chassis; /* Redfish: the Id of the chassis that serves it; NULL: none (IPMI) */
	char *id;      /* where the BMC serves it: the Redfish URI (a legacy entry's with its
			* fragment), IPMI "owner.lun.number"; with chassis, unique per BMC */
	char *type;    /* canonical, lower case: "temperature", "fan", ... */
	struct gf_num reading;
	char *unit; /* "C", "RPM", "W", "V", "A", "%", NULL when discrete */
	enum gf_sensor_state state;
	char *state_text; /* discrete sensors: the asserted states, NULL otherwise */
	char *note;       /* a threshold crossing the state does not show (the BMC's own
				* health rules, or a counter), NULL: none; JSON "note" */
	struct gf_num lnr, lc, lnc, unc, uc, unr; /* thresholds */
};

struct gf_sensor_list {
	struct gf_sensor *v;
	size_t n, cap;
};

/* ---- event log -------------------------------------------------------- */

enum gf_severity {
	GF_SEV_INFO = 0,
	GF_SEV_WARNING,
	GF_SEV_CRITICAL,
};

struct gf_sel_entry {
	char *id; /* record id as the BMC gives it */
	bool has_time;
	double time;     /* epoch seconds, UTC */
	char *time_note; /* "pre-init" when stamped before the BMC clock was set */
	char *sensor;
	char *sensor_type;
	char *event; /* the decoded event text */
	bool deassertion;
	enum gf_severity severity;
	unsigned long stamp; /* the raw timestamp as logged (IPMI: pre-init counts too) */
};

struct gf_sel_list {
	struct gf_sel_entry *v;
	size_t n, cap;
};

/* What a SEL says of itself (IPMI Get SEL Info): to read only what is new. */
struct gf_sel_info {
	unsigned long entries; /* how many it holds */
	unsigned long added;   /* raw timestamp of the last addition (0xffffffff: none) */
	unsigned long erased;  /* raw timestamp of the last erase (0xffffffff: none) */
};

/* The entries after a given one (gf_backend.sel_since). */
struct gf_sel_since {
	struct gf_sel_list entries; /* in the log's order */
	bool from_start;            /* the given entry is not in the log any more (cleared,
				     * wrapped): these are all its entries */
};

/* ---- events (issue 19) ------------------------------------------------ */

/*
 * The one normalized event: what `events follow` prints and stores and
 * `events list` reads back, whatever the source (the IPMI SEL, a Redfish
 * Server-Sent Events stream, a Redfish LogService, the host's kernel log).
 * Each source's code fills these fields; the store, the renderers and the
 * metrics know only this struct.
 */
struct gf_event {
	char *node;   /* node name */
	char *source; /* "sel", "redfish-sse", "redfish-log", "host-xid", ... */
	char *bmc_id; /* the id the peer gives (SEL record id, EventId, log entry Id) */
	bool has_time;
	double time;     /* when it happened, epoch seconds UTC, as the peer says */
	double received; /* when gpufleet received it, epoch seconds UTC */
	enum gf_severity severity;
	char *message;    /* the text as the peer gives it (escaped only when printed) */
	char *message_id; /* Redfish MessageId, NULL where none */
	char *sensor;     /* sensor name or number where given */
	char *type;       /* sensor type / EntryType / event type where given */
	char *origin;     /* Redfish OriginOfCondition URI where given */
	json_t *payload;  /* owned, NULL: none; the decoded payload (CPER sections, Xid) */
	char *key;        /* the dedupe key: a node's events with one key are one event, whatever
		    * path brought them ("sel:<record id>:<raw stamp>"); NULL: source and id */
};

struct gf_event_list {
	struct gf_event *v;
	size_t n, cap;
};

struct gf_event *gf_event_list_add(struct gf_event_list *l);
void gf_event_release(struct gf_event *e);
void gf_event_list_release(struct gf_event_list *l);

/* Severity mapped once: Redfish Severity / MessageSeverity ("OK", "Warning",
 * "Critical", case-insensitive; unknown or NULL: info). */
enum gf_severity gf_event_severity_redfish(const char *s);

/* The documented JSON shape of one event (new reference). */
json_t *gf_event_to_json(const struct gf_event *e);

/* ---- firmware --------------------------------------------------------- */

struct gf_component {
	char *key; /* canonical: "bmc", "bios", "gpu3.firmware", "nic0", "psu1" ... */
	char *id;  /* raw member id as the BMC names it */
	char *name;
	char *kind; /* bmc, bios, gpu, nic, psu, cpld, baseboard, other */
	char *version;
	bool updateable;
	json_t *details; /* owned, NULL: none; what else the protocol reports (IPMI: ids,
				* ipmi_version, aux_revision), JSON member "details" */
};

struct gf_component_list {
	struct gf_component *v;
	size_t n, cap;
};

/* ---- hardware --------------------------------------------------------- */

/* One NVLink port of a GPU as its BMC serves it (a Port and its PortMetrics). */
struct gf_nvlink {
	char *id;                 /* the Port's Id ("NVLink_0"), or its URI's last segment */
	char *link_status;        /* LinkStatus as served ("LinkUp", "LinkDown"); NULL: none */
	char *health;             /* Status.Health as served; NULL: not given */
	struct gf_num speed_gbps; /* CurrentSpeedGbps */
	struct gf_num data_crc, flit_crc, recovery, replay; /* error counters; unset: not served */
	int runtime_error, training_error;                  /* 1 yes, 0 no, -1 not served */
};

/* A GPU's health as its BMC describes it (Redfish Processors of type GPU and their metrics). */
struct gf_gpu_health {
	bool read;    /* the BMC serves this GPU as a Processor: the rest may be set */
	char *health; /* Status.Health: "OK", "Warning", "Critical"; NULL: not given */
	struct gf_num ecc_corrected, ecc_uncorrected; /* GPU memory, lifetime counts */
	int remap_pending, remap_failed; /* row remapping: 1 yes, 0 no, -1 not served */
	struct gf_num remap_corrected, remap_uncorrected; /* rows remapped, by error kind */
	int nvlinks_up, nvlinks_down;                     /* NVLink ports by LinkStatus; -1: none */
	struct gf_nvlink *nvlinks; /* each NVLink port, in the BMC's order; owned */
	size_t nnvlinks;
};

struct gf_gpu_hw {
	int index;
	char *model;
	char *serial;
	char *firmware;
	struct gf_gpu_health bmc; /* JSON "bmc_health", absent when not read */
};

struct gf_hardware {
	struct {
		char *manufacturer, *model, *serial, *uuid, *bios_version;
	} system;
	struct {
		char *serial, *part_number;
	} chassis;
	struct {
		char *manufacturer, *product, *serial, *part_number;
	} board;
	struct {
		char *manufacturer, *name, *serial, *part_number, *asset_tag;
	} product;
	char **cpus; /* model strings, one per socket */
	size_t ncpus;
	struct gf_num memory_gib;
	struct gf_gpu_hw *gpus;
	size_t ngpus;
};

/* ---- boot override ---------------------------------------------------- */

enum gf_boot_dev {
	GF_BOOT_NONE = 0, /* no override: the BIOS order */
	GF_BOOT_PXE,
	GF_BOOT_DISK,
	GF_BOOT_BIOS,
	GF_BOOT_CD,
	GF_BOOT_OTHER,
};

enum gf_boot_mode {
	GF_BOOT_MODE_UNSET = 0,
	GF_BOOT_MODE_UEFI,
	GF_BOOT_MODE_LEGACY,
};

struct gf_boot {
	enum gf_boot_dev dev;
	bool persistent; /* false: next boot only */
	enum gf_boot_mode mode;
};

/* ---- functions -------------------------------------------------------- */

const char *gf_sensor_state_name(enum gf_sensor_state s); /* "nominal", ... */
const char *gf_severity_name(enum gf_severity s);         /* "info", ... */
const char *gf_boot_dev_name(enum gf_boot_dev d); /* "none", "pxe", "disk", "bios", "cd", "other" */
const char *gf_boot_mode_name(enum gf_boot_mode m); /* null-able: NULL when unset */
/* Parse names back; return -1 when unknown. */
int gf_sensor_state_parse(const char *s);
int gf_severity_parse(const char *s);
int gf_boot_dev_parse(const char *s);

/* Append a zeroed element and return it (owned by the list). */
struct gf_sensor *gf_sensor_list_add(struct gf_sensor_list *l);
struct gf_sel_entry *gf_sel_list_add(struct gf_sel_list *l);
struct gf_event *gf_event_list_add(struct gf_event_list *l);
struct gf_component *gf_component_list_add(struct gf_component_list *l);

void gf_sensor_list_release(struct gf_sensor_list *l);
void gf_sel_list_release(struct gf_sel_list *l);
void gf_event_release(struct gf_event *e);
void gf_event_list_release(struct gf_event_list *l);
void gf_component_list_release(struct gf_component_list *l);
void gf_hardware_release(struct gf_hardware *h);
void gf_gpu_health_release(struct gf_gpu_health *g); /* what it owns; zeroed */

/* The documented JSON shapes. New references. */
json_t *gf_sensor_to_json(const struct gf_sensor *s);
json_t *gf_sensors_to_json(const struct gf_sensor_list *l); /* array */
/*
 * Leaks: the chassis (trays) with a leak detector (type "leak") in warning
 * or critical. A tray whose aggregate detector fires with local ones is one
 * leak. Pure.
 */
unsigned gf_sensor_leaks(const struct gf_sensor_list *l);
json_t *gf_sel_entry_to_json(const struct gf_sel_entry *e);
json_t *gf_sel_to_json(const struct gf_sel_list *l); /* array */
json_t *gf_component_to_json(const struct gf_component *c);
json_t *gf_components_to_json(const struct gf_component_list *l); /* array */
json_t *gf_boot_to_json(const struct gf_boot *b); /* {"device","persistent","mode"} */
/* A string member, or null: BMCs send text that is not always UTF-8 (then only its ASCII). */
json_t *gf_model_json_str(const char *s);
json_t *gf_model_json_num(struct gf_num n); /* the number, or null */

/* Events: severity mapped once from Redfish Severity / MessageSeverity ("OK",
 * "Warning", "Critical", case-insensitive; unknown or NULL: info); the
 * documented JSON shape of one event (new reference). */
enum gf_severity gf_event_severity_redfish(const char *s);
json_t *gf_event_to_json(const struct gf_event *e);

#endif
