/*
 * The report as one self-contained HTML page: inline CSS, no script, no
 * external URL, so that it can be mailed, attached to a ticket or opened
 * from a file share as it is. Every string that came from a BMC or a host
 * (names, versions, models, messages) goes through gf_html_escape().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/report.h"
#include "lib/output.h"
#include "lib/util.h"

static const char css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}"
	"h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}"
	"table{border-collapse:collapse}td,th{padding:2px 6px;text-align:left;vertical-align:top}"
	"table.list td,table.list th,table.kv th,table.kv td{border-bottom:1px solid #eee}"
	".scroll{overflow:auto;max-height:80vh;border:1px solid #ccc}"
	"table.heat th,table.heat td{border:1px solid #fff;font-size:12px}"
	"table.heat thead th{position:sticky;top:0;background:#f4f4f4;z-index:1}"
	"table.heat th.c{vertical-align:bottom;padding:4px 1px}"
	"table.heat th.c span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}"
	"table.heat th.n{font-family:monospace;font-weight:normal;max-width:40em;"
	"overflow-wrap:anywhere;background:#fafafa}"
	"table.heat td.x{width:14px;min-width:14px;text-align:center;padding:0}"
	"td.s{background:#cfe8cf}td.o{background:#e5533d;color:#fff}td.m{background:#8e44ad;color:#fff}"
	"td.e{background:#2e86c1;color:#fff}td.t{background:#f1c40f}td.u{background:#ddd}"
	"tr.failed th.n{background:#f6d5d0}tr.partial th.n{background:#fbeed5}"
	".legend span{display:inline-block;padding:0 6px;margin-right:6px}"
	".nodes{font-family:monospace;overflow-wrap:anywhere}.severe{color:#b00;font-weight:bold}"
	".maj{font-weight:bold}.num{text-align:right}details{display:inline-block;margin-right:1em}"
	"summary{cursor:pointer}.muted{color:#777}";

static void esc(struct gf_buf *out, const char *s)
{
	gf_html_escape(out, s);
}

/* Table cells of a version: "(no version)" when there is none. */
static void esc_version(struct gf_buf *out, const char *v)
{
	if (v)
		esc(out, v);
	else
		gf_buf_adds(out, "<span class=\"muted\">(no version)</span>");
}

/*
 * A node list: as it is when short, else its start with the whole behind a
 * <details>, so that a row of 800 folded nodes does not fill the screen.
 */
static void node_list(struct gf_buf *out, const char *nodes)
{
	size_t len = strlen(nodes), cut = 120;

	if (len <= 2 * cut) {
		esc(out, nodes);
		return;
	}
	while (cut > 0 && ((unsigned char)nodes[cut] & 0xc0) == 0x80)
		cut--; /* not inside a UTF-8 sequence */
	{
		char *head = gf_xstrndup(nodes, cut);

		gf_buf_adds(out, "<details><summary>");
		esc(out, head);
		gf_buf_adds(out, "\xe2\x80\xa6</summary>");
		esc(out, nodes);
		gf_buf_adds(out, "</details>");
		free(head);
	}
}

static void kv(struct gf_buf *out, const char *k, const char *v)
{
	gf_buf_addf(out, "<tr><th>%s</th><td>", k);
	esc(out, v);
	gf_buf_adds(out, "</td></tr>\n");
}

static void kv_n(struct gf_buf *out, const char *k, size_t v)
{
	gf_buf_addf(out, "<tr><th>%s</th><td class=\"num\">%zu</td></tr>\n", k, v);
}

static void summary(const struct gf_report *r, struct gf_buf *out)
{
	char a[40], b[40];

	gf_buf_adds(out, "<section id=\"summary\"><h2>Summary</h2><table class=\"kv\">\n");
	kv_n(out, "nodes", r->nodes);
	kv_n(out, "ok", r->ok);
	kv_n(out, "partial", r->partial);
	kv_n(out, "failed", r->failed);
	if (r->nodes) {
		gf_time_format_secs(r->oldest, a, sizeof(a));
		gf_time_format_secs(r->newest, b, sizeof(b));
		kv(out, "swept", a);
		if (strcmp(a, b) != 0)
			kv(out, "until", b);
	}
	kv(out, "compared with", r->mode);
	kv_n(out, "nodes with drift", r->drifting);
	kv_n(out, "components with drift", r->ncols);
	kv_n(out, "drift findings", r->items);
	kv_n(out, "nodes not compared", r->not_compared);
	kv_n(out, "BMC and host disagree (GPUs)", r->rec->nodes_with_findings);
	gf_buf_adds(out, "</table></section>\n");
}

static const struct {
	const char *cls, *mark, *what, *colour;
} cells[] = {
	[GF_RCELL_SAME] = {"s", "", "as expected", "#cfe8cf"},
	[GF_RCELL_OFF] = {"o", "\xc3\x97", "another version", "#e5533d"},
	[GF_RCELL_MISSING] = {"m", "\xe2\x88\x92", "missing", "#8e44ad"},
	[GF_RCELL_EXTRA] = {"e", "+", "extra (or new)", "#2e86c1"},
	[GF_RCELL_TIE] = {"t", "?", "no majority", "#f1c40f"},
	[GF_RCELL_NONE] = {"u", "\xc2\xb7", "not compared", "#ddd"},
};

static void cell_title(struct gf_buf *out, const char *key, const struct gf_drift_item *it,
		       size_t count)
{
	esc(out, key);
	gf_buf_adds(out, ": ");
	esc(out, it->actual                       ? it->actual
		 : (it->flags & GF_DRIFT_MISSING) ? "(absent)"
						  : "(no version)");
	gf_buf_adds(out, ", expected ");
	if (it->flags & GF_DRIFT_TIE) {
		gf_buf_adds(out, "one of");
		for (size_t k = 0; k < it->ntie; k++) {
			gf_buf_adds(out, k ? " | " : " ");
			esc(out, it->tie[k] ? it->tie[k] : "(absent)");
		}
	} else {
		esc(out, it->expected ? it->expected : "(absent)");
	}
	if (count > 1)
		gf_buf_addf(out, " (the first of %zu nodes)", count);
}

static void heatmap(const struct gf_report *r, struct gf_buf *out)
{
	gf_buf_adds(out, "<section id=\"heatmap\"><h2>Drift by node and component</h2>\n"
			 "<p class=\"legend\">");
	for (size_t k = 0; k < sizeof(cells) / sizeof(cells[0]); k++)
		gf_buf_addf(out, "<span class=\"%s\" style=\"background:%s\">%s %s</span>",
			    cells[k].cls, cells[k].colour, cells[k].mark, cells[k].what);
	gf_buf_adds(out, "</p>\n");
	if (r->ncols == 0)
		gf_buf_adds(out, "<p id=\"no-drift\">No drift: every node compared agrees.</p>\n");
	gf_buf_adds(out, "<div class=\"scroll\"><table class=\"heat\"><thead><tr><th>nodes</th>"
			 "<th>model</th><th>count</th>");
	for (size_t c = 0; c < r->ncols; c++) {
		gf_buf_adds(out, "<th class=\"c\" data-c=\"");
		esc(out, r->cols[c]);
		gf_buf_adds(out, "\"><span>");
		esc(out, r->cols[c]);
		gf_buf_adds(out, "</span></th>");
	}
	gf_buf_adds(out, "</tr></thead>\n<tbody>\n");
	for (size_t k = 0; k < r->nrows; k++) {
		const struct gf_report_row *row = &r->rows[k];

		gf_buf_addf(out, "<tr class=\"%s\" data-nodes=\"",
			    gf_node_status_name(row->status));
		esc(out, row->nodes);
		gf_buf_adds(out, "\"><th class=\"n\">");
		node_list(out, row->nodes);
		gf_buf_adds(out, "</th><td>");
		esc(out, row->class);
		gf_buf_addf(out, "</td><td class=\"num\">%zu</td>", row->count);
		for (size_t c = 0; c < r->ncols; c++) {
			unsigned char v = row->cells[c];

			gf_buf_addf(out, "<td class=\"x %s\"", cells[v].cls);
			if (row->items && row->items[c]) {
				gf_buf_adds(out, " data-c=\"");
				esc(out, r->cols[c]);
				gf_buf_adds(out, "\" title=\"");
				cell_title(out, r->cols[c], row->items[c], row->count);
				gf_buf_adds(out, "\"");
			}
			gf_buf_addf(out, ">%s</td>", cells[v].mark);
		}
		gf_buf_adds(out, "</tr>\n");
	}
	gf_buf_adds(out, "</tbody></table></div></section>\n");
}

static void versions(const struct gf_report *r, struct gf_buf *out)
{
	gf_buf_adds(out, "<section id=\"versions\"><h2>Versions of each component</h2>\n"
			 "<table class=\"list\"><thead><tr><th>component</th><th>source</th>"
			 "<th>versions (nodes)</th></tr></thead><tbody>\n");
	for (size_t k = 0; k < r->ncomps; k++) {
		const struct gf_report_comp *c = &r->comps[k];

		gf_buf_adds(out, "<tr data-c=\"");
		esc(out, c->key);
		gf_buf_addf(out, "\"%s><th>", c->drifted ? " class=\"drifted\"" : "");
		esc(out, c->key);
		gf_buf_addf(out, "</th><td>%s</td><td>", c->source);
		for (size_t j = 0; j < c->n; j++) {
			const struct gf_report_version *v = &c->v[j];

			if (!v->nodes) {
				gf_buf_adds(out, "<span class=\"maj\">");
				esc_version(out, v->version);
				gf_buf_addf(out, "</span> (%zu) ", v->count);
				continue;
			}
			gf_buf_adds(out, "<details><summary>");
			esc_version(out, v->version);
			gf_buf_addf(out, " (%zu)</summary><span class=\"nodes\">", v->count);
			esc(out, v->nodes);
			gf_buf_adds(out, "</span></details>");
		}
		gf_buf_adds(out, "</td></tr>\n");
	}
	gf_buf_adds(out, "</tbody></table></section>\n");
}

static void issues(struct gf_buf *out, const char *id, const char *title, const char *none,
		   const char *detail_title, const struct gf_report_issue *v, size_t n)
{
	gf_buf_addf(out, "<section id=\"%s\"><h2>%s</h2>\n", id, title);
	if (n == 0) {
		gf_buf_addf(out, "<p>%s</p></section>\n", none);
		return;
	}
	gf_buf_addf(out,
		    "<table class=\"list\"><thead><tr><th>finding</th><th>nodes</th>"
		    "<th>count</th><th>%s</th></tr></thead><tbody>\n",
		    detail_title);
	for (size_t k = 0; k < n; k++) {
		gf_buf_addf(out, "<tr data-nodes=\"");
		esc(out, v[k].nodes);
		gf_buf_addf(out, "\"><td%s>", v[k].severe ? " class=\"severe\"" : "");
		esc(out, v[k].what);
		gf_buf_adds(out, "</td><td class=\"nodes\">");
		node_list(out, v[k].nodes);
		gf_buf_addf(out, "</td><td class=\"num\">%zu</td><td>", v[k].count);
		esc(out, v[k].detail);
		gf_buf_adds(out, "</td></tr>\n");
	}
	gf_buf_adds(out, "</tbody></table></section>\n");
}

static void reconcile(const struct gf_reconcile *rec, struct gf_buf *out)
{
	gf_buf_addf(out,
		    "<section id=\"reconcile\"><h2>BMC and host</h2>\n<p class=\"muted\">"
		    "GPU count, serials and firmware, where the BMC and the host both list GPUs "
		    "(%zu node%s).</p>\n",
		    rec->compared, rec->compared == 1 ? "" : "s");
	if (rec->findings == 0) {
		gf_buf_adds(out, "<p>The BMCs and the hosts agree.</p></section>\n");
		return;
	}
	gf_buf_adds(out,
		    "<table class=\"list\"><thead><tr><th>node</th><th>component</th>"
		    "<th>check</th><th>BMC</th><th>host</th><th>finding</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < rec->n; i++)
		for (size_t k = 0; k < rec->nodes[i].n; k++) {
			const struct gf_reconcile_item *it = &rec->nodes[i].items[k];

			gf_buf_adds(out, "<tr data-nodes=\"");
			esc(out, rec->nodes[i].node->node);
			gf_buf_adds(out, "\"><td class=\"nodes\">");
			esc(out, rec->nodes[i].node->node);
			gf_buf_adds(out, "</td><td>");
			esc(out, it->component);
			gf_buf_addf(out, "</td><td>%s</td><td>", it->check);
			esc(out, it->expected ? it->expected : "-");
			gf_buf_adds(out, "</td><td>");
			esc(out, it->actual ? it->actual : "-");
			gf_buf_adds(out, "</td><td>");
			esc(out, it->detail);
			gf_buf_adds(out, "</td></tr>\n");
		}
	gf_buf_adds(out, "</tbody></table></section>\n");
}

void gf_report_html(const struct gf_report *r, struct gf_buf *out)
{
	char when[40] = "";

	if (r->nodes)
		gf_time_format_secs(r->newest, when, sizeof(when));
	gf_buf_adds(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
			 "<meta name=\"viewport\" content=\"width=device-width\">\n"
			 "<meta name=\"generator\" content=\"gpufleet report\">\n");
	gf_buf_addf(out,
		    "<title>gpufleet report: %zu nodes %s</title>\n<style>%s</style></head>\n"
		    "<body>\n<h1>gpufleet inventory report</h1>\n",
		    r->nodes, when, css);
	summary(r, out);
	heatmap(r, out);
	versions(r, out);
	issues(out, "failures", "Failed and partial nodes", "Every node was read in full.",
	       "first message", r->failures, r->nfailures);
	gf_buf_addf(out,
		    "<section id=\"gpu-health-note\"><p class=\"muted\">GPU health from the host "
		    "facts of %zu node%s (nvidia-smi and the kernel log over SSH).</p></section>\n",
		    r->health_nodes, r->health_nodes == 1 ? "" : "s");
	issues(out, "gpu-health", "GPU health",
	       "No Xid errors, uncorrected ECC errors or pending "
	       "row remaps.",
	       "total", r->health, r->nhealth);
	reconcile(r->rec, out);
	gf_buf_adds(out, "</body></html>\n");
}
