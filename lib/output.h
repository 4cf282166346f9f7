/* Renderers: table, json, ndjson, csv, built into a buffer; cli/ prints it. */
#ifndef GF_OUTPUT_H
#define GF_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/buf.h"
#include "lib/err.h"

enum gf_format {
	GF_FMT_TABLE = 0,
	GF_FMT_JSON,
	GF_FMT_NDJSON,
	GF_FMT_CSV,
	GF_FMT_PROMETHEUS,
};

int gf_format_parse(const char *s, enum gf_format *ret, struct gf_err *err);

/* A column: a member of the per-node object (dotted path into objects allowed). */
struct gf_col {
	const char *key;   /* e.g. "power"; "?chassis": a table leaves the column out when no
			    * row has a value (CSV keeps it) */
	const char *title; /* e.g. "POWER" */
};

struct gf_render_spec {
	const struct gf_col *cols; /* besides NODE and, when any node failed, ERROR */
	size_t ncols;
	const char *rows_key; /* array member shown as one row per element, or NULL */
	bool collapse;        /* fold identical rows into node ranges */
	bool color;           /* ANSI colour for ok/error in tables */
};

/* @objs: the per-node objects (borrowed), as made by gf_result_to_json(). */
void gf_render_table(json_t *const *objs, size_t n, const struct gf_render_spec *spec,
		     struct gf_buf *out);
/*
 * The table fitted to a terminal @width columns wide (0: as gf_render_table):
 * a folded node set wider than what the other columns leave goes on a line
 * of its own above the row it names (wrapped after a comma), that row's NODE
 * cell then "(N nodes)"; the last cell wraps at the width, its lines indented
 * to its column (unless that leaves it under 24 columns).
 */
void gf_render_table_fit(json_t *const *objs, size_t n, const struct gf_render_spec *spec,
			 size_t width, struct gf_buf *out);
void gf_render_csv(json_t *const *objs, size_t n, const struct gf_render_spec *spec,
		   struct gf_buf *out);
/* A JSON array of the objects, one per line, closed by "]\n". */
void gf_render_json(json_t *const *objs, size_t n, struct gf_buf *out);
/* One object on one line. */
void gf_render_ndjson_one(json_t *obj, struct gf_buf *out);
/*
 * A value as the table renderers show it in a cell: "-" for absent or null,
 * strings made terminal-safe (gf_term_safe), yes/no, numbers, compact JSON
 * otherwise. Caller frees.
 */
char *gf_render_cell(json_t *v);

/*
 * Text from BMCs and hosts made safe for a terminal, appended to @out: no
 * control byte reaches it. Tab, line feed and carriage return become \t, \n,
 * \r; every other C0 control (0x00-0x1f) and DEL become \xHH (e.g. ESC is
 * \x1b); a C1 control encoded in UTF-8 (U+0080..U+009F, bytes C2 80..C2 9F)
 * becomes \u00HH (CSI is \u009b); a byte that is not part of well-formed
 * UTF-8 (a raw 0x9b among them) becomes \xHH. Printable ASCII, a backslash
 * included, and well-formed UTF-8 stay as they are, so the form is for
 * reading, not reversible (JSON output keeps the exact string). The C0
 * characters in @keep (e.g. "\n" for messages) pass unchanged.
 * gf_term_safe() returns the same as a new string (caller frees).
 */
void gf_term_escape(struct gf_buf *out, const char *s, const char *keep);
char *gf_term_safe(const char *s);

/*
 * Text from BMCs and hosts made safe inside HTML, as element content and
 * as a quoted attribute value, appended to @out: & < > " ' become character
 * references; C0 controls other than tab, line feed and carriage return,
 * and DEL, become the visible text \xHH (as gf_term_escape() shows them),
 * since HTML has no way to show them; everything else, UTF-8 included,
 * stays. NULL appends nothing.
 */
void gf_html_escape(struct gf_buf *out, const char *s);

/*
 * Sensors in the Prometheus text exposition format (0.0.4), for
 * node_exporter's textfile collector. @objs are per-node objects as
 * gf_result_to_json() makes them, with a "sensors" array of the shape of
 * gf_sensor_to_json(). Three gauge families:
 *   gpufleet_node_up{node}                             1 answered, 0 failed
 *   gpufleet_sensor_value{node,sensor,type,unit}       the reading (when there is one)
 *   gpufleet_sensor_state{node,sensor,type,unit}       0 nominal, 1 warning,
 *                                                      2 critical, 3 unknown
 * A failed node also gets a comment line with its error. A sensor name
 * repeated on one node is made unique with " #2", " #3"... Label values are
 * escaped (backslash, double quote, newline).
 */
void gf_render_prometheus_sensors(json_t *const *objs, size_t n, struct gf_buf *out);

/*
 * The pieces of the Prometheus text format (0.0.4), for every renderer of it:
 * a label, name="value" with backslash, double quote and line feed escaped
 * (a ',' before it unless @first; a NULL value is ""); a sample value
 * (NaN, +Inf, -Inf as the format spells them); the HELP and TYPE lines of a
 * gauge family (@help is a constant without backslashes or line feeds).
 */
void gf_prom_label(struct gf_buf *out, const char *name, const char *v, bool first);
void gf_prom_number(struct gf_buf *out, double v);
void gf_prom_family(struct gf_buf *out, const char *name, const char *help);

#endif
