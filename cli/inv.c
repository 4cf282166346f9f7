#include "cli/inv.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/codec.h"
#include "lib/buf.h"
#include "lib/file.h"
#include "lib/util.h"

int inv_targets(struct gf_cli *cli, char **args, int nargs, struct gf_nodeset *ret, bool *ret_all)
{
	int rc;

	if (cli->hosts) {
		cli_error("'%s' reads the inventory: name nodes as TARGETS, not with -H",
			  cli->verb);
		return GF_EXIT_USAGE;
	}
	if (nargs == 0) {
		gf_nodeset_init(ret);
		*ret_all = true;
		return 0;
	}
	rc = cli_target_names(cli, args, nargs, ret);
	if (rc)
		return rc;
	*ret_all = false;
	return 0;
}

int inv_open(struct gf_cli *cli, char **args, int nargs, bool registry, struct gf_nodeset *ret,
	     bool *ret_all, struct gf_db **db)
{
	int rc = inv_targets(cli, args, nargs, ret, ret_all);

	if (!rc)
		rc = cli_db(cli, db);
	if (!rc && (registry || !*ret_all))
		rc = cli_registry(cli);
	return rc;
}

void inv_globs_add(struct inv_globs *g, const char *arg)
{
	const char *p = arg;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (len) {
			g->v = gf_xrealloc(g->v, (g->n + 1) * sizeof(*g->v));
			g->v[g->n] = gf_xstrndup(p, len);
			for (char *c = g->v[g->n]; *c; c++)
				if (*c >= 'A' && *c <= 'Z')
					*c = (char)(*c - 'A' + 'a');
			g->n++;
		}
		p += len;
		if (*p == ',')
			p++;
	}
}

void inv_globs_release(struct inv_globs *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i]);
	free(g->v);
	g->v = NULL;
	g->n = 0;
}

int inv_find_sweep(const struct gf_sweep_info *all, size_t n, const char *s,
		   const struct gf_sweep_info **ret)
{
	unsigned long id;
	struct gf_err err = {0};

	if (gf_parse_uint(s, 1, 0x7fffffffffffffffUL, &id, &err, "sweep") < 0)
		return cli_fail(&err);
	for (size_t i = 0; i < n; i++)
		if (all[i].id == (long long)id) {
			*ret = &all[i];
			return 0;
		}
	cli_error("there is no sweep %lu (see 'gpufleet inventory sweeps')", id);
	return GF_EXIT_USAGE;
}

bool inv_is_table(const struct gf_cli *cli)
{
	return cli->format == GF_FMT_TABLE;
}

void inv_print(const struct gf_cli *cli, json_t *const *objs, size_t n,
	       const struct gf_render_spec *spec)
{
	struct gf_render_spec s = *spec;
	struct gf_buf b = GF_BUF_INIT;

	s.collapse = cli->collapse;
	s.color = cli->color;
	switch (cli->format) {
	case GF_FMT_JSON: gf_render_json(objs, n, &b); break;
	case GF_FMT_NDJSON:
		for (size_t i = 0; i < n; i++)
			gf_render_ndjson_one(objs[i], &b);
		break;
	case GF_FMT_CSV: gf_render_csv(objs, n, &s, &b); break;
	default:
		if (n)
			gf_render_table_fit(objs, n, &s, cli->width, &b);
		break;
	}
	fputs(gf_buf_str(&b), stdout);
	fflush(stdout);
	gf_buf_release(&b);
}

json_t *inv_time_json(double t)
{
	char when[40];

	gf_time_format(t, when, sizeof(when));
	return json_string(when);
}

char *inv_groups_of(const struct gf_cli *cli, const char *node)
{
	struct gf_buf b = GF_BUF_INIT;

	for (size_t i = 0; i < cli->nreg; i++) {
		if (strcmp(cli->reg[i].name, node) != 0)
			continue;
		for (size_t g = 0; g < cli->reg[i].ngroups; g++)
			gf_buf_addf(&b, "%s%s", g ? "," : "", cli->reg[i].groups[g]);
		break;
	}
	return gf_buf_detach(&b);
}

void inv_table(const struct gf_col *cols, size_t ncols, json_t *const *rows, size_t n)
{
	size_t *w = gf_xcalloc(ncols, sizeof(*w));
	char **cells = gf_xcalloc(n * ncols + 1, sizeof(*cells));

	for (size_t c = 0; c < ncols; c++)
		w[c] = strlen(cols[c].title);
	for (size_t r = 0; r < n; r++)
		for (size_t c = 0; c < ncols; c++) {
			char *s = gf_render_cell(json_object_get(rows[r], cols[c].key));

			cells[r * ncols + c] = s;
			if (strlen(s) > w[c])
				w[c] = strlen(s);
		}
	for (size_t c = 0; c < ncols; c++)
		printf("%-*s%s", c + 1 < ncols ? (int)w[c] : 0, cols[c].title,
		       c + 1 < ncols ? "  " : "\n");
	for (size_t r = 0; r < n; r++)
		for (size_t c = 0; c < ncols; c++)
			printf("%-*s%s", c + 1 < ncols ? (int)w[c] : 0, cells[r * ncols + c],
			       c + 1 < ncols ? "  " : "\n");
	for (size_t i = 0; i < n * ncols; i++)
		free(cells[i]);
	free(cells);
	free(w);
	fflush(stdout);
}

void inv_out_begin(struct inv_out *o, const struct gf_cli *cli, const struct gf_render_spec *spec)
{
	memset(o, 0, sizeof(*o));
	o->cli = cli;
	o->spec = spec;
	if (cli->format == GF_FMT_JSON)
		fputs("[", stdout);
}

void inv_out_add(struct inv_out *o, json_t *obj)
{
	char *line;

	switch (o->cli->format) {
	case GF_FMT_JSON:
	case GF_FMT_NDJSON:
		line = json_dumps(obj, JSON_COMPACT);
		if (o->cli->format == GF_FMT_JSON)
			printf("%s\n%s", o->any ? "," : "", line ? line : "null");
		else
			printf("%s\n", line ? line : "null");
		o->any = true;
		free(line);
		json_decref(obj);
		return;
	default:
		if (o->n == o->cap) {
			o->cap = o->cap ? o->cap * 2 : 64;
			o->objs = gf_xrealloc(o->objs, o->cap * sizeof(*o->objs));
		}
		o->objs[o->n++] = obj;
		return;
	}
}

void inv_out_end(struct inv_out *o)
{
	if (o->cli->format == GF_FMT_JSON)
		fputs(o->any ? "\n]\n" : "]\n", stdout);
	else if (o->cli->format != GF_FMT_NDJSON)
		inv_print(o->cli, o->objs, o->n, o->spec);
	fflush(stdout);
	for (size_t i = 0; i < o->n; i++)
		json_decref(o->objs[i]);
	free(o->objs);
	o->objs = NULL;
	o->n = o->cap = 0;
}

int inv_load_baseline(struct gf_db *db, const char *file, const char *node,
		      struct gf_baseline **ret, struct gf_err *err)
{
	struct gf_store_query q = {.nodes = &node, .nnodes = 1};
	struct gf_sweep *sw = NULL;
	char *text;
	int rc;

	if (file) {
		size_t len;

		text = NULL;
		rc = gf_file_read(file, 64u << 20, GF_FILE_DASH_STDIN, &text, &len, err);
		if (rc == 0)
			rc = gf_codec_baseline_parse(text, file, ret, err);
		free(text);
		return rc;
	}
	rc = gf_store_load(db, &q, &sw, err);
	if (rc == 0 && sw->n == 1)
		*ret = gf_baseline_from_node(&sw->nodes[0]);
	else if (rc == 0)
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				"baseline node '%s' has not been swept", node);
	gf_sweep_free(sw);
	return rc;
}

int inv_since_bound(const char *s, const struct gf_sweep_info *all, size_t nall,
		    struct gf_store_query *q, json_t **ret_desc)
{
	struct gf_err err = {0};
	double t;
	bool digits = *s != '\0';

	for (const char *p = s; *p; p++)
		digits &= isdigit((unsigned char)*p) != 0;
	q->bounded = true;
	if (digits) {
		const struct gf_sweep_info *si = NULL;
		int rc = inv_find_sweep(all, nall, s, &si);

		if (rc)
			return rc;
		q->before = si->started;
		q->before_id = si->id;
		*ret_desc = json_pack("{s:I,s:o}", "sweep", (json_int_t)si->id, "time",
				      inv_time_json(si->started));
		return 0;
	}
	if (gf_time_parse_since(s, gf_walltime(), &t, &err) < 0) {
		cli_error("--since '%s' is not a sweep number, a date (2026-11-29T12:00:00Z)"
			  " or a duration (7d)",
			  s);
		return GF_EXIT_USAGE;
	}
	q->before = t;
	q->before_id = LLONG_MAX;
	*ret_desc = json_pack("{s:n,s:o}", "sweep", "time", inv_time_json(t));
	return 0;
}
