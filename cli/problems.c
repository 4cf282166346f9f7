/*
 * The block a fan-out ends with on a terminal: what needs attention (failed
 * and partial nodes with their error, critical sensors, new critical event
 * log entries), built here from the typed results of every verb, folded by
 * -C, and the summary. Pipes and --format outputs never get it.
 */
#include "cli/problems.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/util.h"

struct cli_problems {
	json_t *rows; /* {"node", "ok": true, "problem"} in the order added */
	json_t *seen; /* node -> true: the nodes named */
	size_t count[3];
	bool partial;   /* the summary counts partial nodes */
	size_t nomatch; /* nodes where a filter chose nothing; (size_t)-1: no filter */
};

bool cli_problems_shown(const struct gf_cli *cli, size_t n)
{
	return cli->width && cli->format == GF_FMT_TABLE && (n > 1 || cli->quiet);
}

struct cli_problems *cli_problems_new(bool partial)
{
	struct cli_problems *p = gf_xcalloc(1, sizeof(*p));

	p->rows = json_array();
	p->seen = json_object();
	p->partial = partial;
	p->nomatch = (size_t)-1;
	return p;
}

void cli_problems_nomatch(struct cli_problems *p, size_t n)
{
	p->nomatch = n;
}

__attribute__((format(printf, 3, 4))) static void add(struct cli_problems *p, const char *node,
						      const char *fmt, ...)
{
	struct gf_buf text = GF_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	gf_buf_vaddf(&text, fmt, ap);
	va_end(ap);
	json_array_append_new(p->rows, json_pack("{s:s,s:b,s:s}", "node", node, "ok", 1, "problem",
						 gf_buf_str(&text)));
	json_object_set_new(p->seen, node, json_true());
	gf_buf_release(&text);
}

void cli_problems_add_slot(struct cli_problems *p, const char *node, const struct gf_result *slot)
{
	json_t *sensors = json_object_get(slot->data, "sensors"), *s;
	struct gf_buf crit = GF_BUF_INIT;
	size_t k;

	p->count[slot->ok ? GF_NODE_OK : GF_NODE_FAILED]++;
	if (!slot->ok) {
		add(p, node, "failed: %s: %s", gf_errkind_name(slot->err.kind), slot->err.msg);
		return;
	}
	json_array_foreach(sensors, k, s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		const char *state = json_string_value(json_object_get(s, "state"));

		if (state && strcmp(state, "critical") == 0)
			gf_buf_addf(&crit, "%s%s", crit.len ? ", " : "", name ? name : "?");
	}
	if (crit.len)
		add(p, node, "critical sensors: %s", gf_buf_str(&crit));
	gf_buf_release(&crit);
}

void cli_problems_add_sweep(struct cli_problems *p, const struct gf_sweep_node *sn)
{
	p->count[sn->status]++;
	if (sn->status != GF_NODE_OK) {
		struct gf_buf msg = GF_BUF_INIT;

		for (size_t k = 0; k < sn->nerrors; k++)
			gf_buf_addf(&msg, "%s%s: %s", k ? "; " : "", sn->errors[k].op,
				    sn->errors[k].message);
		add(p, sn->node, "%s: %s: %s", gf_node_status_name(sn->status),
		    sn->nerrors ? gf_errkind_name(sn->errors[0].kind) : "internal",
		    gf_buf_str(&msg));
		gf_buf_release(&msg);
	}
	if (sn->sensors.read && sn->sensors.critical)
		add(p, sn->node, "%u critical sensor%s", sn->sensors.critical,
		    sn->sensors.critical == 1 ? "" : "s");
	if (sn->sel.read && sn->sel.new_critical)
		add(p, sn->node, "%u new critical SEL entr%s", sn->sel.new_critical,
		    sn->sel.new_critical == 1 ? "y" : "ies");
}

void cli_problems_print(const struct gf_cli *cli, struct cli_problems *p)
{
	static const struct gf_col cols[] = {{"problem", "PROBLEM"}};
	const struct gf_render_spec spec = {cols, 1, NULL, cli->collapse, false};
	size_t n = json_array_size(p->rows), total;
	struct gf_buf b = GF_BUF_INIT;
	json_t **objs = gf_xcalloc(n ? n : 1, sizeof(*objs));

	total = p->count[GF_NODE_OK] + p->count[GF_NODE_PARTIAL] + p->count[GF_NODE_FAILED];
	for (size_t i = 0; i < n; i++)
		objs[i] = json_array_get(p->rows, i);
	if (n) {
		gf_buf_addf(&b, "%sNEEDS ATTENTION: %zu of %zu node%s\n", cli->quiet ? "" : "\n",
			    json_object_size(p->seen), total, total == 1 ? "" : "s");
		gf_render_table_fit(objs, n, &spec, cli->width, &b);
	}
	gf_buf_addf(&b, "%zu node%s: %zu ok", total, total == 1 ? "" : "s", p->count[GF_NODE_OK]);
	if (p->partial)
		gf_buf_addf(&b, ", %zu partial", p->count[GF_NODE_PARTIAL]);
	gf_buf_addf(&b, ", %zu failed", p->count[GF_NODE_FAILED]);
	if (p->nomatch != (size_t)-1)
		gf_buf_addf(&b, "; %zu with nothing that matched", p->nomatch);
	gf_buf_addc(&b, '\n');
	fputs(gf_buf_str(&b), stdout);
	fflush(stdout);
	gf_buf_release(&b);
	free(objs);
	json_decref(p->rows);
	json_decref(p->seen);
	free(p);
}
