/*
 * The inventory's JSON, both directions, in one place: the node records of
 * `inventory export` (and `show`), the array-or-ndjson files `inventory
 * import` reads, the error lists the store keeps, and baseline files
 * (`drift --baseline`, `inventory export --baseline`). Every member name of
 * these formats is spelled here and nowhere else. Nothing here prints; the
 * reader reads only the FILE it is given. For one thread.
 *
 * A node record: {"sweep","sweep_uid","time","finished"?,"node","status",
 * "errors":[{"op","kind","message"}],"protocol","model",
 * "collected":{"firmware","host"},"components":[{"key","version","source",
 * "id","name","kind"}],"sel":{"total","new":{"info","warning","critical"},
 * "mark"}|null,"sensors":{"nominal","warning","critical","unknown"}|null,
 * "hardware"?,"host"?}.
 */
#ifndef GF_CODEC_H
#define GF_CODEC_H

#include <jansson.h>
#include <stdio.h>

#include "inventory/sweep.h"
#include "lib/err.h"

struct gf_baseline; /* inventory/drift.h */

/* ---- node records -------------------------------------------------------- */

/* The member of a record that lists its components (rows of `inventory show`). */
#define GF_CODEC_COMPONENTS "components"

/*
 * The record of @n, a node of @sw (whose id, uid, start and end fill the
 * sweep members of a node that is not stored yet or is of @sw). New reference.
 */
json_t *gf_codec_node_to_json(const struct gf_sweep *sw, const struct gf_sweep_node *n);

/*
 * The inverse, for one record (the sweep members are ignored): appends a
 * node to @sw. Missing "collected" is derived (firmware: a protocol and no
 * bmc/firmware error; host: a "host" object). Keys are normalized to lower
 * case; a bad member is GF_E_USAGE naming it, and then nothing is added.
 */
int gf_codec_node_from_json(struct gf_sweep *sw, json_t *obj, struct gf_err *err);

/* The parts of a record, for outputs that show them: new references. */
json_t *gf_codec_comp_to_json(const struct gf_inv_comp *c);
json_t *gf_codec_errors_to_json(const struct gf_sweep_node *n);      /* [] when none */
json_t *gf_codec_sel_to_json(const struct gf_sel_summary *s);        /* null when not read */
json_t *gf_codec_sensors_to_json(const struct gf_sensor_summary *s); /* null when not read */
/*
 * The leak detectors of a sensor summary: a JSON array of {"chassis", "id",
 * "name", "state"} (new reference), what a record's "leaks" holds and the
 * store keeps; read back into @n (strings pooled in @sw; absent or null:
 * none), a malformed one refused with nothing added.
 */
json_t *gf_codec_leaks_to_json(const struct gf_sensor_summary *s);
int gf_codec_leaks_from_json(struct gf_sweep *sw, struct gf_sweep_node *n, const json_t *a,
			     struct gf_err *err);

/*
 * Append the errors of @arr (a record's "errors": an array, or NULL/null
 * for none) to @n. GF_E_USAGE naming the node when one is malformed; the
 * errors before it are appended already.
 */
int gf_codec_errors_from_json(struct gf_sweep *sw, struct gf_sweep_node *n, json_t *arr,
			      struct gf_err *err);

/* ---- files of records -------------------------------------------------- */

/* What a reader hands its records to; both return 0 or a GF_E_* code with @err set. */
struct gf_codec_sink {
	/*
	 * The first record of a sweep other than the last one's: @sw is new,
	 * its uid, id (0: none given), started and finished are set, no nodes.
	 */
	int (*sweep)(void *ud, struct gf_sweep *sw, struct gf_err *err);
	/* A node record, @n the last node of @sw: the reader drops it after the call. */
	int (*node)(void *ud, struct gf_sweep *sw, struct gf_sweep_node *n, struct gf_err *err);
	void *ud;
};

/*
 * Read the records of @f, a JSON array (export --format json, read whole)
 * or one record a line (ndjson, blank lines skipped), and hand each to
 * @sink, in file order. A record's sweep is its "sweep_uid", or else one
 * made of its "sweep" and "time" ("imported-" and 16 hex digits). Stops at
 * the first bad record or failed call with the message prefixed by where
 * it is ("'PATH' line 6: ..."); @path names the file in messages only.
 */
int gf_codec_read(FILE *f, const char *path, const struct gf_codec_sink *sink, struct gf_err *err);

/* ---- baseline files ------------------------------------------------------ */

/*
 * A baseline file: {"components": {KEY-GLOB: VERSION | [VERSION, ...]},
 * "models": {MODEL: {KEY-GLOB: ...}}} (a flat {KEY-GLOB: VERSION} object is
 * taken as "components"; "from" and "comment" are ignored). @name names the
 * file in messages. GF_E_USAGE with the reason on a bad file. Free the
 * result with gf_baseline_free().
 */
int gf_codec_baseline_parse(const char *text, const char *name, struct gf_baseline **ret,
			    struct gf_err *err);

/*
 * The file of @b, with "from": {node, sweep, time, model} when @from (the
 * node it was made of, nullable) is given; gf_codec_baseline_parse() reads
 * it back to the same rules. New reference.
 */
json_t *gf_codec_baseline_to_json(const struct gf_baseline *b, const struct gf_sweep_node *from);

#endif
