/*
 * A sweep in memory: per node, its status, the errors of the operations that
 * failed, its hardware model, its components under canonical keys, its SEL
 * and sensor summaries and the hardware and host facts as read (typed, from
 * lib/model.h and host/hostfacts.h; their JSON is the codec's). No I/O here:
 * inventory/store.c reads and writes sweeps, inventory/drift.c compares them.
 *
 * Strings live in a pool owned by the sweep (equal strings are stored once),
 * and nodes with identical component lists may share one set, so that a
 * sweep of 10,000 nodes loaded from the store stays small. A sweep is used by
 * one thread. Its JSON (export, import) is inventory/codec.h.
 */
#ifndef GF_SWEEP_H
#define GF_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/hostfacts.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/model.h"

enum gf_node_status {
	GF_NODE_OK = 0,
	GF_NODE_PARTIAL, /* some operations failed or are unsupported */
	GF_NODE_FAILED,  /* nothing could be read */
};

/*
 * Where a component was read, a name: a backend's (lib/backend.h), or
 * GF_SOURCE_HOST for what the host's facts gave. The names are data: the
 * store keeps any.
 */
#define GF_SOURCE_HOST "ssh"

const char *gf_node_status_name(enum gf_node_status s); /* "ok", "partial", "failed" */
int gf_node_status_parse(const char *s);                /* -1 when unknown */
/* Is @s a source this gpufleet reads: a backend's name, or GF_SOURCE_HOST? */
bool gf_source_known(const char *s);
/* Those names, for messages: "ipmi, redfish, ssh". Caller frees. */
char *gf_source_names(void);

/* The operations a sweep runs on a node, as named in errors ("op"). */
#define GF_OP_BMC "bmc" /* opening the BMC session */
#define GF_OP_FIRMWARE "firmware"
#define GF_OP_HARDWARE "hardware"
#define GF_OP_SEL "sel"
#define GF_OP_SENSORS "sensors"
#define GF_OP_BIOS "bios" /* BIOS settings (Redfish) */
#define GF_OP_SSH "ssh"   /* host facts */

struct gf_inv_comp {
	const char *key;     /* canonical: "bmc", "gpu3.firmware", "driver" ... (pooled) */
	const char *version; /* NULL: reported without a version */
	const char *source;  /* a backend's name, or GF_SOURCE_HOST (pooled) */
	const char *raw_id;  /* the id it had where it was read (Redfish member id ...) */
	const char *name;
	const char *kind; /* bmc, bios, gpu, nic, psu, cpld, driver, cuda, os ... */
	/* The key as shown, NULL: @key; a BIOS setting's in its BMC's case (normalize.h) */
	const char *shown;
};

/* A node's components, sorted by key, keys unique (after gf_inv_set_finish()). */
struct gf_inv_set {
	struct gf_inv_comp *v;
	size_t n, cap;
};

struct gf_sweep_error {
	const char *op; /* GF_OP_* (pooled) */
	enum gf_errkind kind;
	const char *message; /* pooled */
};

struct gf_sel_summary {
	bool read;      /* the SEL was read; the rest is meaningless otherwise */
	unsigned total; /* entries in the log */
	unsigned new_info, new_warning, new_critical; /* since the node's previous read */
	bool has_mark;
	double mark; /* the newest entry time seen: the next sweep counts after it */
};

/* A leak detector as a sweep keeps it (issue 21): where the BMC serves it and its state. */
struct gf_leak {
	const char *chassis, *id, *name; /* pooled; as struct gf_sensor's (type "leak") */
	enum gf_sensor_state state;      /* from its DetectorState, or its threshold */
};

struct gf_sensor_summary {
	bool read;
	unsigned nominal, warning, critical, unknown;
	struct gf_leak *leaks; /* each leak detector the BMC serves; owned by the sweep node
				* (gf_sweep_node_add_leak()), NULL: none */
	size_t nleaks;
};

struct gf_sweep_node {
	const char *node; /* pooled */
	long long sweep;  /* the sweep this row belongs to (0: not stored yet) */
	double time;      /* that sweep's start, epoch seconds */
	enum gf_node_status status;
	const char *protocol; /* the BMC protocol that answered, NULL: none */
	const char *model;    /* hardware model, NULL: unknown */
	bool fw_read;         /* the BMC's firmware inventory was read */
	bool host_read;       /* host facts were read over SSH */
	bool bios_read;       /* the BIOS settings (bios.* of kind setting) were read */
	struct gf_sweep_error *errors;
	size_t nerrors;
	struct gf_inv_set *set;       /* never NULL; owned by the sweep, maybe shared */
	struct gf_hardware *hardware; /* owned, NULL: not read (or not loaded) */
	struct gf_hostfacts *host;    /* owned, NULL: not read (or not loaded) */
	struct gf_sel_summary sel;
	struct gf_sensor_summary sensors;
};

struct gf_strpool;

struct gf_sweep {
	long long id;             /* 0 until stored; rows of several sweeps: 0 */
	const char *uid;          /* 32 hex digits, the identity across sites (pooled) */
	double started, finished; /* epoch seconds, whole milliseconds */
	struct gf_sweep_node *nodes;
	size_t n, cap;
	struct gf_inv_set **sets; /* every set the nodes point to */
	size_t nsets, capsets;
	struct gf_strpool *pool;
};

/* Append a leak detector to @n's sensors, its strings pooled in @sw. */
void gf_sweep_node_add_leak(struct gf_sweep *sw, struct gf_sweep_node *n, const char *chassis,
			    const char *id, const char *name, enum gf_sensor_state state);
/* Drop @n's leak detectors. */
void gf_sweep_node_clear_leaks(struct gf_sweep_node *n);

/* A new, empty sweep; free with gf_sweep_free() (accepts NULL). */
struct gf_sweep *gf_sweep_new(void);
void gf_sweep_free(struct gf_sweep *sw);

/* The pooled copy of @s (NULL for NULL): lives as long as @sw. */
const char *gf_sweep_str(struct gf_sweep *sw, const char *s);
const char *gf_sweep_strn(struct gf_sweep *sw, const char *s, size_t len);
/*
 * The same for text a peer sent, kept readable: when @s is not valid UTF-8
 * (what JSON and the store take), its bytes from 0x80 on become '?'.
 */
const char *gf_sweep_text(struct gf_sweep *sw, const char *s);

/*
 * Append a node named @name with a new, empty component set. The pointer is
 * valid until the next gf_sweep_add_node().
 */
struct gf_sweep_node *gf_sweep_add_node(struct gf_sweep *sw, const char *name);
/*
 * Drop every node and set, keeping the header and the string pool: a reader
 * of a long file stores nodes as it goes and keeps memory flat.
 */
void gf_sweep_clear_nodes(struct gf_sweep *sw);
/*
 * Give @n the facts of *@hw (or *@host), which the node then owns: *@hw is
 * zeroed. A NULL pointer drops what @n had.
 */
void gf_sweep_node_take_hardware(struct gf_sweep_node *n, struct gf_hardware *hw);
void gf_sweep_node_take_host(struct gf_sweep_node *n, struct gf_hostfacts *host);

/* A new empty set owned by @sw. */
struct gf_inv_set *gf_sweep_new_set(struct gf_sweep *sw);
void gf_sweep_node_error(struct gf_sweep *sw, struct gf_sweep_node *n, const char *op,
			 enum gf_errkind kind, const char *message);

/* Append a zeroed component to @s. */
struct gf_inv_comp *gf_inv_set_add(struct gf_inv_set *s);
/*
 * Sort by key and make keys unique: a repeated key gets "#2", "#3" ... in
 * the order the components were added. Call after the last add.
 */
void gf_inv_set_finish(struct gf_sweep *sw, struct gf_inv_set *s);
/* The component with @key, NULL when none (binary search: @s is finished). */
const struct gf_inv_comp *gf_inv_set_find(const struct gf_inv_set *s, const char *key);

/*
 * The canonical byte string of a finished set (unambiguous: length-prefixed
 * fields; hashed with gf_hash64()): two sets are equal when their bodies are.
 */
void gf_inv_set_body(const struct gf_inv_set *s, struct gf_buf *out);
/*
 * The inverse of gf_inv_set_body(): append the components of @body to @out
 * (strings pooled in @sw). GF_E_DB when the body is malformed.
 */
int gf_inv_set_from_body(struct gf_sweep *sw, const char *body, size_t len, struct gf_inv_set *out);

/* A fresh random uid (32 lower-case hex digits) for a new sweep. */
int gf_sweep_make_uid(struct gf_sweep *sw, struct gf_err *err);

/* Status from the errors and what was read: ok, partial, failed. */
enum gf_node_status gf_sweep_node_judge(const struct gf_sweep_node *n);

#endif
