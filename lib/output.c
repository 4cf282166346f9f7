#include "lib/output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/nodeset.h"

int gf_format_parse(const char *s, enum gf_format *ret, struct gf_err *err)
{
	static const char *const names[] = {
		[GF_FMT_TABLE] = "table",           [GF_FMT_JSON] = "json",
		[GF_FMT_NDJSON] = "ndjson",         [GF_FMT_CSV] = "csv",
		[GF_FMT_PROMETHEUS] = "prometheus",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*ret = (enum gf_format)i;
			return 0;
		}
	}
	return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
			  "unknown format '%s' (table, json, ndjson, csv, prometheus)", s);
}

/* Look up a dotted path in @o; NULL when absent. Borrowed. */
static json_t *lookup(json_t *o, const char *path)
{
	char key[128];

	while (o && json_is_object(o)) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);

		if (len >= sizeof(key))
			return NULL;
		memcpy(key, path, len);
		key[len] = '\0';
		o = json_object_get(o, key);
		if (!dot)
			return o;
		path = dot + 1;
	}
	return NULL;
}

/*
 * The value of column @key for a row: from the row's element @elem, else
 * from the node's object. "a|b" names alternatives: the first that is
 * present and not null (e.g. "time|time_note": an event's date, else why it
 * has none).
 */
static json_t *lookup_cell(json_t *obj, json_t *elem, const char *key)
{
	json_t *first = NULL;

	if (*key == '?') /* an optional column: see struct gf_col */
		key++;
	for (const char *p = key;;) {
		size_t len = strcspn(p, "|");
		char path[128];

		if (len < sizeof(path)) {
			json_t *v;

			memcpy(path, p, len);
			path[len] = '\0';
			v = elem ? lookup(elem, path) : NULL;
			if (!v)
				v = lookup(obj, path);
			if (v && !json_is_null(v))
				return v;
			if (!first)
				first = v;
		}
		if (!p[len])
			return first;
		p += len + 1;
	}
}

/*
 * The length of the well-formed UTF-8 sequence of two or more bytes at @s
 * (shortest form, no surrogate, at most U+10FFFF), 0 when there is none.
 */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* bounds of the second byte */

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return len;
}

void gf_term_escape(struct gf_buf *out, const char *s, const char *keep)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned char c = *p;
		size_t len;

		if (c >= 0x20 && c < 0x7f) {
			gf_buf_addc(out, (char)c);
			p++;
		} else if (c < 0x80 && c != 0x7f && strchr(keep, c)) {
			gf_buf_addc(out, (char)c);
			p++;
		} else if (c == '\t' || c == '\n' || c == '\r') {
			gf_buf_adds(out, c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r");
			p++;
		} else if (c < 0x80 || (len = utf8_seq(p)) == 0) {
			gf_buf_addf(out, "\\x%02x", c);
			p++;
		} else if (c == 0xc2 && p[1] <= 0x9f) {
			gf_buf_addf(out, "\\u%04x", p[1]); /* a C1 control, U+0080..U+009F */
			p += 2;
		} else {
			gf_buf_add(out, (const char *)p, len);
			p += len;
		}
	}
}

char *gf_term_safe(const char *s)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_term_escape(&b, s, "");
	return gf_buf_detach(&b);
}

void gf_html_escape(struct gf_buf *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		switch (*p) {
		case '&': gf_buf_adds(out, "&amp;"); break;
		case '<': gf_buf_adds(out, "&lt;"); break;
		case '>': gf_buf_adds(out, "&gt;"); break;
		case '"': gf_buf_adds(out, "&quot;"); break;
		case '\'': gf_buf_adds(out, "&#39;"); break;
		case '\t':
		case '\n':
		case '\r': gf_buf_addc(out, (char)*p); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				gf_buf_addf(out, "\\x%02x", *p);
			else
				gf_buf_addc(out, (char)*p);
		}
	}
}

char *gf_render_cell(json_t *v)
{
	char tmp[64];

	if (!v || json_is_null(v))
		return gf_xstrdup("-");
	if (json_is_string(v))
		return gf_term_safe(json_string_value(v));
	if (json_is_integer(v)) {
		snprintf(tmp, sizeof(tmp), "%lld", (long long)json_integer_value(v));
		return gf_xstrdup(tmp);
	}
	if (json_is_real(v)) {
		snprintf(tmp, sizeof(tmp), "%g", json_real_value(v));
		return gf_xstrdup(tmp);
	}
	if (json_is_boolean(v))
		return gf_xstrdup(json_is_true(v) ? "yes" : "no");
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	char *safe = gf_term_safe(s ? s : "?");

	free(s);
	return safe;
}

/* One output row before folding: the node and its cells (without NODE). */
struct row {
	const char *node;
	char **cells; /* ncols cells, then the error cell */
	bool failed;
	bool folded;  /* already printed as part of an earlier fold */
	size_t nodes; /* how many nodes its NODE cell names (with collapse) */
};

struct table {
	struct row *rows;
	size_t n, cap;
	size_t ncells; /* spec cols + error */
	bool any_failed;
};

static void add_row(struct table *t, json_t *obj, json_t *elem, const struct gf_render_spec *spec)
{
	struct row r = {0};
	json_t *ok = json_object_get(obj, "ok");

	r.node = json_string_value(json_object_get(obj, "node"));
	r.cells = gf_xcalloc(t->ncells, sizeof(char *));
	r.failed = ok && !json_is_true(ok);
	for (size_t c = 0; c < spec->ncols; c++)
		r.cells[c] = gf_render_cell(lookup_cell(obj, elem, spec->cols[c].key));
	if (r.failed) {
		json_t *e = json_object_get(obj, "error");
		char *msg = NULL;
		const char *kind = json_string_value(json_object_get(e, "kind"));
		const char *text = json_string_value(json_object_get(e, "message"));
		struct gf_buf b = GF_BUF_INIT;

		gf_buf_addf(&b, "%s: ", kind ? kind : "internal");
		gf_term_escape(&b, text ? text : "", "");
		msg = gf_buf_detach(&b);
		r.cells[spec->ncols] = msg;
		t->any_failed = true;
	} else {
		r.cells[spec->ncols] = gf_xstrdup("");
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->rows = gf_xrealloc(t->rows, t->cap * sizeof(*t->rows));
	}
	t->rows[t->n++] = r;
}

static void build_table(json_t *const *objs, size_t n, const struct gf_render_spec *spec,
			struct table *t)
{
	memset(t, 0, sizeof(*t));
	t->ncells = spec->ncols + 1;
	for (size_t i = 0; i < n; i++) {
		json_t *arr = spec->rows_key ? json_object_get(objs[i], spec->rows_key) : NULL;

		if (arr && json_is_array(arr) && json_array_size(arr) > 0) {
			size_t k;
			json_t *elem;

			json_array_foreach(arr, k, elem)
				add_row(t, objs[i], elem, spec);
		} else {
			add_row(t, objs[i], NULL, spec);
		}
	}
}

static void free_table(struct table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		for (size_t c = 0; c < t->ncells; c++)
			free(t->rows[i].cells[c]);
		free(t->rows[i].cells);
	}
	free(t->rows);
}

static bool same_cells(const struct table *t, const struct row *a, const struct row *b)
{
	for (size_t c = 0; c < t->ncells; c++)
		if (strcmp(a->cells[c], b->cells[c]) != 0)
			return false;
	return true;
}

/*
 * The NODE column of every output row: the node itself, or with collapse the
 * folded range of all rows with the same cells. Returns a new array of owned
 * strings, one per row; NULL marks a row folded into an earlier one.
 */
static char **node_column(struct table *t, bool collapse)
{
	char **col = gf_xcalloc(t->n, sizeof(char *));
	const char **names = gf_xcalloc(t->n, sizeof(char *));

	for (size_t i = 0; i < t->n; i++) {
		size_t k = 0;

		if (t->rows[i].folded)
			continue;
		if (!collapse) {
			col[i] = gf_xstrdup(t->rows[i].node ? t->rows[i].node : "");
			continue;
		}
		for (size_t j = i; j < t->n; j++) {
			if (t->rows[j].folded || !same_cells(t, &t->rows[i], &t->rows[j]))
				continue;
			if (j != i)
				t->rows[j].folded = true;
			/* A node with several identical rows is named once. */
			bool dup = false;

			for (size_t m = 0; m < k; m++)
				if (strcmp(names[m], t->rows[j].node) == 0)
					dup = true;
			if (!dup)
				names[k++] = t->rows[j].node;
		}
		col[i] = gf_nodeset_collapse(names, k);
		t->rows[i].nodes = k;
	}
	free(names);
	return col;
}

static void pad(struct gf_buf *out, size_t n)
{
	while (n--)
		gf_buf_addc(out, ' ');
}

/*
 * The length of the first piece of @s that fits in @avail columns, broken
 * after the last of @brk in it (else within a word, not inside a UTF-8
 * sequence); strlen(@s) when it all fits.
 */
static size_t fit_piece(const char *s, size_t avail, const char *brk)
{
	size_t len = strlen(s), cut;

	if (len <= avail)
		return len;
	if (s[avail] == ' ' && strchr(brk, ' '))
		return avail; /* the blank after it is dropped */
	for (cut = avail; cut > 0; cut--)
		if (strchr(brk, s[cut - 1]))
			return cut;
	for (cut = avail; cut > 1 && ((unsigned char)s[cut] & 0xc0) == 0x80; cut--)
		;
	return cut ? cut : 1;
}

/*
 * @s in lines of at most @avail columns, broken after one of @brk, each line
 * after the first starting with @indent blanks; blanks at a break dropped.
 */
static void wrap(struct gf_buf *out, const char *s, size_t avail, size_t indent, const char *brk)
{
	for (bool first = true; *s; first = false) {
		size_t len = fit_piece(s, avail, brk);

		if (!first) {
			gf_buf_addc(out, '\n');
			pad(out, indent);
		}
		gf_buf_add(out, s, len);
		s += len;
		if (!*s)
			break;
		while (out->len && out->s[out->len - 1] == ' ')
			out->s[--out->len] = '\0';
		while (*s == ' ')
			s++;
	}
}

/* A column is not narrowed below this (nor below its title) to fit the terminal. */
enum { MIN_COL = 12 };

/*
 * Narrow the widest of the columns 1..@ncols of @w (NODE, w[0], keeps its
 * width) one at a time until the line fits @width or none can give more.
 */
static void shrink_to(size_t *w, const size_t *floor, size_t ncols, size_t width)
{
	size_t total = w[0];

	for (size_t c = 1; c <= ncols; c++)
		total += w[c] + 2;
	while (total > width) {
		size_t widest = 0;

		for (size_t c = 1; c <= ncols; c++)
			if (w[c] > floor[c] && (!widest || w[c] > w[widest]))
				widest = c;
		if (!widest)
			return;
		w[widest]--;
		total--;
	}
}

/* One table row, its cells wrapped at their column's width (@width 0: none). */
static void table_row(struct gf_buf *out, const char *node, char *const *cells, size_t ncols,
		      const size_t *w, size_t width, bool red_last)
{
	const char **rest = gf_xcalloc(ncols + 1, sizeof(char *));
	bool more = true;

	rest[0] = node;
	for (size_t c = 0; c < ncols; c++)
		rest[c + 1] = cells[c];
	while (more) {
		size_t at = 0, col = 0; /* where the line is, where column c starts */

		more = false;
		for (size_t c = 0; c <= ncols; c++) {
			const char *s = rest[c];
			size_t len = width && c ? fit_piece(s, w[c], " ") : strlen(s);
			bool red = red_last && c == ncols;

			if (len) {
				pad(out, col - at);
				if (red)
					gf_buf_adds(out, "\033[31m");
				gf_buf_add(out, s, len);
				if (red)
					gf_buf_adds(out, "\033[0m");
				at = col + len;
				s += len;
				while (*s == ' ')
					s++;
			}
			rest[c] = s;
			more |= *s != '\0';
			col += w[c] + 2;
		}
		/* No trailing blanks: trim what padding of empty cells left. */
		while (out->len && out->s[out->len - 1] == ' ')
			out->s[--out->len] = '\0';
		gf_buf_addc(out, '\n');
	}
	free(rest);
}

void gf_render_table(json_t *const *objs, size_t n, const struct gf_render_spec *spec,
		     struct gf_buf *out)
{
	gf_render_table_fit(objs, n, spec, 0, out);
}

/* Whether any row of @objs (spec->rows_key's elements, or the objects) has a value for @key. */
static bool col_has_value(json_t *const *objs, size_t n, const struct gf_render_spec *spec,
			  const char *key)
{
	for (size_t i = 0; i < n; i++) {
		json_t *arr = spec->rows_key ? json_object_get(objs[i], spec->rows_key) : NULL, *e,
		       *v;
		size_t k;

		if (!json_is_array(arr) || json_array_size(arr) == 0) {
			v = lookup_cell(objs[i], NULL, key);
			if (v && !json_is_null(v))
				return true;
			continue;
		}
		json_array_foreach(arr, k, e) {
			v = lookup_cell(objs[i], e, key);
			if (v && !json_is_null(v))
				return true;
		}
	}
	return false;
}

/* @spec without its optional columns that no row has a value for; @cols: what to free. */
static struct gf_render_spec shown_cols(json_t *const *objs, size_t n,
					const struct gf_render_spec *spec, struct gf_col **cols)
{
	struct gf_render_spec s = *spec;
	bool any = false;

	*cols = NULL;
	for (size_t c = 0; c < spec->ncols; c++)
		any |= spec->cols[c].key[0] == '?';
	if (!any)
		return s;
	*cols = gf_xcalloc(spec->ncols, sizeof(**cols));
	s.ncols = 0;
	for (size_t c = 0; c < spec->ncols; c++)
		if (spec->cols[c].key[0] != '?' || col_has_value(objs, n, spec, spec->cols[c].key))
			(*cols)[s.ncols++] = spec->cols[c];
	s.cols = *cols;
	return s;
}

void gf_render_table_fit(json_t *const *objs, size_t n, const struct gf_render_spec *spec_in,
			 size_t width, struct gf_buf *out)
{
	struct gf_col *kept;
	struct gf_render_spec shown = shown_cols(objs, n, spec_in, &kept);
	const struct gf_render_spec *spec = &shown;
	struct table t;
	char **nodes;
	bool *above;
	size_t *w, *floor;
	size_t ncols, others = 0;

	build_table(objs, n, spec, &t);
	nodes = node_column(&t, spec->collapse);
	above = gf_xcalloc(t.n ? t.n : 1, sizeof(bool));
	ncols = t.any_failed ? t.ncells : spec->ncols;
	w = gf_xcalloc(ncols + 1, sizeof(size_t));
	floor = gf_xcalloc(ncols + 1, sizeof(size_t));
	w[0] = strlen("NODE");
	for (size_t c = 0; c < spec->ncols; c++)
		w[c + 1] = strlen(spec->cols[c].title);
	if (t.any_failed)
		w[ncols] = strlen("ERROR");
	for (size_t c = 1; c <= ncols; c++)
		floor[c] = w[c] > MIN_COL ? w[c] : MIN_COL;
	for (size_t i = 0; i < t.n; i++) {
		if (!nodes[i])
			continue;
		for (size_t c = 0; c < ncols; c++)
			if (strlen(t.rows[i].cells[c]) > w[c + 1])
				w[c + 1] = strlen(t.rows[i].cells[c]);
	}
	for (size_t c = 1; c <= ncols; c++)
		if (floor[c] > w[c])
			floor[c] = w[c];
	/* What the other columns leave to NODE; a wider fold goes above its row. */
	for (size_t c = 1; c <= ncols; c++)
		others += (width ? floor[c] : w[c]) + 2;
	for (size_t i = 0; i < t.n; i++) {
		if (!nodes[i])
			continue;
		if (width && spec->collapse && t.rows[i].nodes > 1 &&
		    strlen(nodes[i]) + others > width) {
			char label[32];

			above[i] = true;
			snprintf(label, sizeof(label), "(%zu nodes)", t.rows[i].nodes);
			if (strlen(label) > w[0])
				w[0] = strlen(label);
		} else if (strlen(nodes[i]) > w[0]) {
			w[0] = strlen(nodes[i]);
		}
	}
	if (width)
		shrink_to(w, floor, ncols, width);

	gf_buf_adds(out, "NODE");
	for (size_t c = 0; c < ncols; c++) {
		const char *title = c < spec->ncols ? spec->cols[c].title : "ERROR";

		pad(out, w[c] - (c ? strlen(spec->cols[c - 1].title) : 4) + 2);
		gf_buf_adds(out, title);
	}
	gf_buf_addc(out, '\n');
	for (size_t i = 0; i < t.n; i++) {
		char label[32];
		const char *node = nodes[i];

		if (!node)
			continue;
		if (above[i]) {
			wrap(out, node, width, 0, ",");
			gf_buf_addc(out, '\n');
			snprintf(label, sizeof(label), "(%zu nodes)", t.rows[i].nodes);
			node = label;
		}
		table_row(out, node, t.rows[i].cells, ncols, w, width,
			  spec->color && t.rows[i].failed && ncols > spec->ncols);
	}
	for (size_t i = 0; i < t.n; i++)
		free(nodes[i]);
	free(nodes);
	free(above);
	free(floor);
	free(w);
	free_table(&t);
	free(kept);
}

static void csv_field(struct gf_buf *out, const char *s)
{
	if (strpbrk(s, ",\"\r\n") == NULL) {
		gf_buf_adds(out, s);
		return;
	}
	gf_buf_addc(out, '"');
	for (; *s; s++) {
		if (*s == '"')
			gf_buf_addc(out, '"');
		gf_buf_addc(out, *s);
	}
	gf_buf_addc(out, '"');
}

void gf_render_csv(json_t *const *objs, size_t n, const struct gf_render_spec *spec,
		   struct gf_buf *out)
{
	struct table t;
	char **nodes;

	build_table(objs, n, spec, &t);
	nodes = node_column(&t, spec->collapse);
	gf_buf_adds(out, "node");
	for (size_t c = 0; c < spec->ncols; c++) {
		const char *key = spec->cols[c].key + (spec->cols[c].key[0] == '?');
		char *name = gf_xstrndup(key, strcspn(key, "|")); /* "a|b": named a */

		gf_buf_addc(out, ',');
		csv_field(out, name);
		free(name);
	}
	gf_buf_adds(out, ",error\n");
	for (size_t i = 0; i < t.n; i++) {
		if (!nodes[i])
			continue;
		csv_field(out, nodes[i]);
		for (size_t c = 0; c < t.ncells; c++) {
			gf_buf_addc(out, ',');
			csv_field(out, t.rows[i].cells[c]);
		}
		gf_buf_addc(out, '\n');
	}
	for (size_t i = 0; i < t.n; i++)
		free(nodes[i]);
	free(nodes);
	free_table(&t);
}

static void dump(json_t *obj, struct gf_buf *out)
{
	/* 15 digits: a reading of 12.04 prints as 12.04, not 12.039999999999999. */
	char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));

	if (s) {
		gf_buf_adds(out, s);
		free(s);
	}
}

void gf_render_json(json_t *const *objs, size_t n, struct gf_buf *out)
{
	gf_buf_adds(out, "[");
	for (size_t i = 0; i < n; i++) {
		gf_buf_adds(out, i ? ",\n" : "\n");
		dump(objs[i], out);
	}
	gf_buf_adds(out, n ? "\n]\n" : "]\n");
}

void gf_render_ndjson_one(json_t *obj, struct gf_buf *out)
{
	dump(obj, out);
	gf_buf_addc(out, '\n');
}

/* ---- Prometheus ----------------------------------------------------------- */

void gf_prom_label(struct gf_buf *out, const char *name, const char *v, bool first)
{
	if (!first)
		gf_buf_addc(out, ',');
	gf_buf_adds(out, name);
	gf_buf_adds(out, "=\"");
	while (v && *v) {
		size_t plain = strcspn(v, "\\\"\n");

		gf_buf_add(out, v, plain);
		v += plain;
		switch (*v) {
		case '\\': gf_buf_adds(out, "\\\\"); break;
		case '"': gf_buf_adds(out, "\\\""); break;
		case '\n': gf_buf_adds(out, "\\n"); break;
		default: continue; /* the end */
		}
		v++;
	}
	gf_buf_addc(out, '"');
}

void gf_prom_number(struct gf_buf *out, double v)
{
	if (v != v)
		gf_buf_adds(out, "NaN");
	else if (v > 1e308)
		gf_buf_adds(out, "+Inf");
	else if (v < -1e308)
		gf_buf_adds(out, "-Inf");
	else if (v == (double)(long long)v && (v != 0 || !signbit(v)) && v < 1e15 && v > -1e15) {
		/* Most samples are counts: "%.15g" prints them as integers, more slowly. */
		char d[24], *p = d + sizeof(d);
		unsigned long long u = v < 0 ? (unsigned long long)-(long long)v
					     : (unsigned long long)v;

		do
			*--p = (char)('0' + u % 10);
		while (u /= 10);
		if (v < 0)
			*--p = '-';
		gf_buf_add(out, p, (size_t)(d + sizeof(d) - p));
	} else {
		gf_buf_addf(out, "%.15g", v);
	}
}

/* One sensor's labels, as "{node=..,sensor=..,type=..,unit=..}". */
static void prom_sensor_labels(struct gf_buf *out, const char *node, const char *sensor, json_t *s)
{
	const char *type = json_string_value(json_object_get(s, "type"));
	const char *unit = json_string_value(json_object_get(s, "unit"));

	gf_buf_addc(out, '{');
	gf_prom_label(out, "node", node, true);
	gf_prom_label(out, "sensor", sensor, false);
	gf_prom_label(out, "type", type ? type : "other", false);
	gf_prom_label(out, "unit", unit ? unit : "", false);
	gf_buf_addc(out, '}');
}

/* The sensor label of a sensor named @name after @before others of that name in its node. */
static char *prom_sensor_name(const char *name, json_int_t before)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_adds(&b, name ? name : "");
	if (before)
		gf_buf_addf(&b, " #%" JSON_INTEGER_FORMAT, before + 1);
	return gf_buf_detach(&b);
}

static int prom_state(const char *s)
{
	if (!s)
		return 3;
	if (strcmp(s, "nominal") == 0)
		return 0;
	if (strcmp(s, "warning") == 0)
		return 1;
	if (strcmp(s, "critical") == 0)
		return 2;
	return 3;
}

void gf_prom_family(struct gf_buf *out, const char *name, const char *help)
{
	gf_buf_addf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* Every sample line of one family for every node that answered. */
static void prom_samples(json_t *const *objs, size_t n, struct gf_buf *out, bool values)
{
	for (size_t i = 0; i < n; i++) {
		const char *node = json_string_value(json_object_get(objs[i], "node"));
		json_t *arr = json_object_get(objs[i], "sensors"), *seen;
		size_t k;
		json_t *s;

		if (!json_is_true(json_object_get(objs[i], "ok")) || !json_is_array(arr))
			continue;
		/* How many sensors of each name came before: names made unique in one pass. */
		seen = json_object();
		json_array_foreach(arr, k, s) {
			json_t *reading = json_object_get(s, "reading");
			const char *sname = json_string_value(json_object_get(s, "name"));
			json_int_t before = json_integer_value(json_object_get(seen,
									       sname ? sname : ""));
			char *name;

			if (sname)
				json_object_set_new(seen, sname, json_integer(before + 1));
			if (values && !json_is_number(reading))
				continue;
			name = prom_sensor_name(sname, before);
			gf_buf_adds(out,
				    values ? "gpufleet_sensor_value" : "gpufleet_sensor_state");
			prom_sensor_labels(out, node ? node : "", name, s);
			gf_buf_addc(out, ' ');
			if (values)
				gf_prom_number(out, json_number_value(reading));
			else
				gf_buf_addf(out, "%d",
					    prom_state(json_string_value(json_object_get(s,
											 "state"))));
			gf_buf_addc(out, '\n');
			free(name);
		}
		json_decref(seen);
	}
}

void gf_render_prometheus_sensors(json_t *const *objs, size_t n, struct gf_buf *out)
{
	gf_prom_family(out, "gpufleet_node_up",
		       "Whether the node's BMC answered the sensor read (1) or not (0).");
	for (size_t i = 0; i < n; i++) {
		const char *node = json_string_value(json_object_get(objs[i], "node"));
		bool ok = json_is_true(json_object_get(objs[i], "ok"));

		gf_buf_adds(out, "gpufleet_node_up{");
		gf_prom_label(out, "node", node ? node : "", true);
		gf_buf_addf(out, "} %d\n", ok ? 1 : 0);
	}
	/* Why a node is down, as comments (ignored by parsers, read by people). */
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_object_get(objs[i], "error");
		const char *node = json_string_value(json_object_get(objs[i], "node"));
		const char *kind = json_string_value(json_object_get(e, "kind"));
		const char *msg = json_string_value(json_object_get(e, "message"));

		if (json_is_true(json_object_get(objs[i], "ok")))
			continue;
		gf_buf_addf(out, "# gpufleet: node %s failed: %s: ", node ? node : "?",
			    kind ? kind : "internal");
		/* One line, and text only: the message may quote the BMC. */
		gf_term_escape(out, msg ? msg : "", "");
		gf_buf_addc(out, '\n');
	}
	gf_prom_family(out, "gpufleet_sensor_value",
		       "Sensor reading from the BMC, in the unit of the unit label.");
	prom_samples(objs, n, out, true);
	gf_prom_family(out, "gpufleet_sensor_state",
		       "Sensor state: 0 nominal, 1 warning, 2 critical, 3 unknown.");
	prom_samples(objs, n, out, false);
}
