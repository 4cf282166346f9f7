#include "inventory/metrics.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "inventory/events.h"
#include "inventory/normalize.h"
#include "inventory/store.h"
#include "lib/backend.h"
#include "lib/output.h"
#include "lib/util.h"

/* "name{node="..."" : a sample's name and first label; more labels follow. */
static void sample(struct gf_buf *out, const char *name, const struct gf_sweep_node *n)
{
	gf_buf_adds(out, name);
	gf_buf_addc(out, '{');
	gf_prom_label(out, "node", n->node, true);
}

/* "} VALUE\n": the end of a sample. */
static void value(struct gf_buf *out, double v)
{
	gf_buf_adds(out, "} ");
	gf_prom_number(out, v);
	gf_buf_addc(out, '\n');
}

static void label(struct gf_buf *out, const char *name, const char *v)
{
	gf_prom_label(out, name, v ? v : "", false);
}

static void sweep_times(const struct gf_sweep *sw, struct gf_buf *out)
{
	double newest = 0;

	gf_prom_family(out, "gpufleet_sweep_timestamp_seconds",
		       "Start of the newest sweep the metrics come from, in Unix time.");
	for (size_t i = 0; i < sw->n; i++)
		if (sw->nodes[i].time > newest)
			newest = sw->nodes[i].time;
	if (sw->n) {
		gf_buf_adds(out, "gpufleet_sweep_timestamp_seconds ");
		gf_prom_number(out, newest);
		gf_buf_addc(out, '\n');
	}
	gf_prom_family(out, "gpufleet_node_sweep_timestamp_seconds",
		       "Start of the node's last sweep, in Unix time.");
	for (size_t i = 0; i < sw->n; i++) {
		sample(out, "gpufleet_node_sweep_timestamp_seconds", &sw->nodes[i]);
		value(out, sw->nodes[i].time);
	}
}

static void node_families(const struct gf_sweep *sw, struct gf_buf *out)
{
	static const enum gf_node_status all[] = {GF_NODE_OK, GF_NODE_PARTIAL, GF_NODE_FAILED};

	gf_prom_family(out, "gpufleet_node_info",
		       "1 for each node: its hardware model and the BMC protocol that answered.");
	for (size_t i = 0; i < sw->n; i++) {
		sample(out, "gpufleet_node_info", &sw->nodes[i]);
		label(out, "model", sw->nodes[i].model);
		label(out, "protocol", sw->nodes[i].protocol);
		value(out, 1);
	}
	gf_prom_family(
		out, "gpufleet_node_status",
		"1 for the status of the node's last sweep (ok, partial, failed), 0 for the others.");
	for (size_t i = 0; i < sw->n; i++)
		for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
			sample(out, "gpufleet_node_status", &sw->nodes[i]);
			label(out, "status", gf_node_status_name(all[k]));
			value(out, sw->nodes[i].status == all[k]);
		}
	gf_prom_family(out, "gpufleet_node_errors",
		       "Operations of the node's last sweep that failed, by operation and error kind.");
	for (size_t i = 0; i < sw->n; i++)
		for (size_t k = 0; k < sw->nodes[i].nerrors; k++) {
			const struct gf_sweep_error *e = &sw->nodes[i].errors[k];
			size_t same = 0, j;

			/* One sample per (op, kind): count the repeats at the first. */
			for (j = 0; j < k; j++)
				if (strcmp(sw->nodes[i].errors[j].op, e->op) == 0 &&
				    sw->nodes[i].errors[j].kind == e->kind)
					break;
			if (j < k)
				continue;
			for (j = k; j < sw->nodes[i].nerrors; j++)
				same += strcmp(sw->nodes[i].errors[j].op, e->op) == 0 &&
					sw->nodes[i].errors[j].kind == e->kind;
			sample(out, "gpufleet_node_errors", &sw->nodes[i]);
			label(out, "op", e->op);
			label(out, "kind", gf_errkind_name(e->kind));
			value(out, (double)same);
		}
}

static void components(const struct gf_sweep *sw, struct gf_buf *out)
{
	gf_prom_family(out, "gpufleet_component_info",
		       "1 for each component of the node's last sweep, with its version"
		       " (empty when reported without one) and where it was read.");
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_inv_set *s = sw->nodes[i].set;

		for (size_t k = 0; k < s->n; k++) {
			sample(out, "gpufleet_component_info", &sw->nodes[i]);
			label(out, "component", gf_norm_comp_shown(&s->v[k]));
			label(out, "version", s->v[k].version);
			label(out, "source", s->v[k].source);
			value(out, 1);
		}
	}
}

static void drift(const struct gf_drift *d, struct gf_buf *out)
{
	gf_prom_family(out, "gpufleet_drift_components",
		       "Components of the node off the majority of its model (absent: not compared).");
	for (size_t i = 0; i < d->n; i++) {
		if (!d->nodes[i].compared)
			continue;
		sample(out, "gpufleet_drift_components", d->nodes[i].node);
		value(out, (double)d->nodes[i].n);
	}
	gf_prom_family(out, "gpufleet_drift_info",
		       "1 for each component off the majority: the majority's version (expected,"
		       " empty on a tie or when absent) and the node's (actual).");
	for (size_t i = 0; i < d->n; i++)
		for (size_t k = 0; k < d->nodes[i].n; k++) {
			const struct gf_drift_item *it = &d->nodes[i].items[k];

			sample(out, "gpufleet_drift_info", d->nodes[i].node);
			label(out, "component", it->component);
			label(out, "expected", it->expected);
			label(out, "actual", it->actual);
			label(out, "source", it->source);
			value(out, 1);
		}
}

static void gpus(const struct gf_sweep *sw, struct gf_buf *out)
{
	gf_prom_family(out, "gpufleet_gpus",
		       "GPUs of the node as the host (source ssh, nvidia-smi) and the BMC"
		       " (source redfish) list them.");
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_sweep_node *n = &sw->nodes[i];
		const struct gf_backend *be;

		if (n->host_read && n->host) {
			sample(out, "gpufleet_gpus", n);
			label(out, "source", GF_SOURCE_HOST);
			value(out, (double)n->host->ngpus);
		}
		/* The BMC's count where its protocol lists GPUs: elsewhere 0 would mean nothing. */
		be = gf_backend_find(n->protocol);
		if (be && be->lists_gpus && strcmp(be->name, n->protocol) == 0 && n->hardware) {
			sample(out, "gpufleet_gpus", n);
			label(out, "source", n->protocol);
			value(out, (double)n->hardware->ngpus);
		}
	}
	gf_prom_family(
		out, "gpufleet_gpu_xid_errors",
		"NVIDIA Xid errors in the host's kernel log over the last 24 hours, by Xid code.");
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_hostfacts *h = sw->nodes[i].host;

		if (!sw->nodes[i].host_read || !h || !h->xid_read)
			continue;
		for (size_t k = 0; k < h->nxids; k++) {
			char code[16];

			snprintf(code, sizeof(code), "%u", h->xids[k].code);
			sample(out, "gpufleet_gpu_xid_errors", &sw->nodes[i]);
			label(out, "xid", code);
			value(out, (double)h->xids[k].count);
		}
	}
}

/* One sample of a GPU's BMC health family: labels node, gpu, serial (and @extra=@v). */
static void gpu_sample(struct gf_buf *out, const char *name, const struct gf_sweep_node *n,
		       const struct gf_gpu_hw *g, const char *extra, const char *v)
{
	char idx[16];

	snprintf(idx, sizeof(idx), "%d", g->index);
	sample(out, name, n);
	label(out, "gpu", idx);
	label(out, "serial", g->serial);
	if (extra)
		label(out, extra, v);
}

static int health_code(const char *h)
{
	if (!h)
		return 3;
	if (strcasecmp(h, "OK") == 0)
		return 0;
	if (strcasecmp(h, "Warning") == 0)
		return 1;
	if (strcasecmp(h, "Critical") == 0)
		return 2;
	return 3;
}

/* The samples for NVLink port @p of the @f-th per-port family (gpu_bmc_health()'s order). */
static void nvlink_samples(struct gf_buf *out, const char *name, size_t f,
			   const struct gf_sweep_node *n, const struct gf_gpu_hw *g,
			   const struct gf_nvlink *p)
{
	const struct {
		const char *type;
		struct gf_num v;
	} counters[] = {
		{"data_crc", p->data_crc},
		{"flit_crc", p->flit_crc},
		{"recovery", p->recovery},
		{"replay", p->replay},
	};
	const struct {
		const char *type;
		int v;
	} flags[] = {{"runtime", p->runtime_error}, {"training", p->training_error}};

	switch (f) {
	case 0:
		gpu_sample(out, name, n, g, "port", p->id);
		value(out, p->link_status && strcmp(p->link_status, "LinkUp") == 0);
		break;
	case 1:
		for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++)
			if (counters[c].v.set) {
				gpu_sample(out, name, n, g, "port", p->id);
				label(out, "type", counters[c].type);
				value(out, counters[c].v.v);
			}
		break;
	default:
		for (size_t c = 0; c < sizeof(flags) / sizeof(flags[0]); c++)
			if (flags[c].v >= 0) {
				gpu_sample(out, name, n, g, "port", p->id);
				label(out, "type", flags[c].type);
				value(out, flags[c].v);
			}
		break;
	}
}

/* Each GPU's health as its BMC describes it (stored with the sweep's hardware). */
static void gpu_bmc_health(const struct gf_sweep *sw, struct gf_buf *out)
{
	static const char *const fams[][2] = {
		{"gpufleet_gpu_bmc_health",
		 "A GPU's health as its BMC says: 0 OK, 1 warning, 2 critical, 3 not given."},
		{"gpufleet_gpu_bmc_ecc_errors",
		 "ECC errors of a GPU's memory over its lifetime, as its BMC counts them, by type."},
		{"gpufleet_gpu_bmc_row_remap_pending",
		 "Whether a GPU has a row remapping pending (1), as its BMC says; a reset applies it."},
		{"gpufleet_gpu_bmc_remapped_rows",
		 "Rows a GPU's memory has remapped, as its BMC counts them, by error type."},
		{"gpufleet_gpu_bmc_nvlinks",
		 "A GPU's NVLink ports as its BMC lists them, by state."},
		/* per NVLink port: nvlink_samples() */
		{"gpufleet_gpu_bmc_nvlink_up",
		 "1 when a GPU's NVLink port is LinkUp as its BMC says, 0 for any other LinkStatus."},
		{"gpufleet_gpu_bmc_nvlink_errors",
		 "Errors a GPU's NVLink port counted, as its BMC serves them (PortMetrics), by type."},
		{"gpufleet_gpu_bmc_nvlink_error_flag",
		 "1 when a GPU's NVLink port reports a runtime or training error (PortMetrics)."},
	};

	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		gf_prom_family(out, fams[f][0], fams[f][1]);
		for (size_t i = 0; i < sw->n; i++) {
			const struct gf_sweep_node *n = &sw->nodes[i];

			for (size_t k = 0; n->hardware && k < n->hardware->ngpus; k++) {
				const struct gf_gpu_hw *g = &n->hardware->gpus[k];
				const struct gf_gpu_health *h = &g->bmc;

				if (!h->read)
					continue;
				switch (f) {
				case 0:
					gpu_sample(out, fams[f][0], n, g, NULL, NULL);
					value(out, health_code(h->health));
					break;
				case 1:
					if (h->ecc_corrected.set) {
						gpu_sample(out, fams[f][0], n, g, "type",
							   "corrected");
						value(out, h->ecc_corrected.v);
					}
					if (h->ecc_uncorrected.set) {
						gpu_sample(out, fams[f][0], n, g, "type",
							   "uncorrected");
						value(out, h->ecc_uncorrected.v);
					}
					break;
				case 2:
					if (h->remap_pending >= 0) {
						gpu_sample(out, fams[f][0], n, g, NULL, NULL);
						value(out, h->remap_pending);
					}
					break;
				case 3:
					if (h->remap_corrected.set) {
						gpu_sample(out, fams[f][0], n, g, "type",
							   "corrected");
						value(out, h->remap_corrected.v);
					}
					if (h->remap_uncorrected.set) {
						gpu_sample(out, fams[f][0], n, g, "type",
							   "uncorrected");
						value(out, h->remap_uncorrected.v);
					}
					break;
				case 4:
					if (h->nvlinks_up >= 0) {
						gpu_sample(out, fams[f][0], n, g, "state", "up");
						value(out, h->nvlinks_up);
						gpu_sample(out, fams[f][0], n, g, "state", "down");
						value(out, h->nvlinks_down);
					}
					break;
				default:
					for (size_t p = 0; p < h->nnvlinks; p++)
						nvlink_samples(out, fams[f][0], f - 5, n, g,
							       &h->nvlinks[p]);
					break;
				}
			}
		}
	}
}

static void sel_and_sensors(const struct gf_sweep *sw, struct gf_buf *out)
{
	static const char *const states[] = {"nominal", "warning", "critical", "unknown"};

	gf_prom_family(out, "gpufleet_sel_entries", "Entries in the BMC's system event log.");
	for (size_t i = 0; i < sw->n; i++) {
		if (!sw->nodes[i].sel.read)
			continue;
		sample(out, "gpufleet_sel_entries", &sw->nodes[i]);
		value(out, sw->nodes[i].sel.total);
	}
	gf_prom_family(out, "gpufleet_sel_new_entries",
		       "Event log entries new since the node's previous sweep, by severity.");
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_sel_summary *s = &sw->nodes[i].sel;
		const unsigned counts[] = {s->new_info, s->new_warning, s->new_critical};
		static const char *const sev[] = {"info", "warning", "critical"};

		if (!s->read)
			continue;
		for (size_t k = 0; k < 3; k++) {
			sample(out, "gpufleet_sel_new_entries", &sw->nodes[i]);
			label(out, "severity", sev[k]);
			value(out, counts[k]);
		}
	}
	gf_prom_family(out, "gpufleet_sensors", "BMC sensors of the node, by state.");
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_sensor_summary *s = &sw->nodes[i].sensors;
		const unsigned counts[] = {s->nominal, s->warning, s->critical, s->unknown};

		if (!s->read)
			continue;
		for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
			sample(out, "gpufleet_sensors", &sw->nodes[i]);
			label(out, "state", states[k]);
			value(out, counts[k]);
		}
	}
	gf_prom_family(out, "gpufleet_leak_state",
		       "Each leak detector of the node's last sweep, by where its BMC serves it:"
		       " 0 dry, 1 warning, 2 critical (a leak), 3 unknown.");
	for (size_t i = 0; i < sw->n; i++) {
		const struct gf_sensor_summary *s = &sw->nodes[i].sensors;

		for (size_t k = 0; s->read && k < s->nleaks; k++) {
			const struct gf_leak *l = &s->leaks[k];

			sample(out, "gpufleet_leak_state", &sw->nodes[i]);
			label(out, "chassis", l->chassis);
			label(out, "id", l->id);
			label(out, "sensor", l->name);
			value(out, l->state == GF_SENSOR_NOMINAL    ? 0
				   : l->state == GF_SENSOR_WARNING  ? 1
				   : l->state == GF_SENSOR_CRITICAL ? 2
								    : 3);
		}
	}
}

void gf_metrics_render(const struct gf_sweep *sw, const struct gf_drift *d, struct gf_buf *out)
{
	sweep_times(sw, out);
	node_families(sw, out);
	components(sw, out);
	if (d)
		drift(d, out);
	gpus(sw, out);
	gpu_bmc_health(sw, out);
	sel_and_sensors(sw, out);
}

/* The stored events (events follow, host Xid): counts and the newest's arrival. */
static void events(const struct gf_events_count *v, size_t n, struct gf_buf *out)
{
	static const struct {
		const char *name, *help;
	} fam[] = {
		{"gpufleet_events",
		 "Events stored for the node, per source and severity (events follow, host Xid)."},
		{"gpufleet_event_last_received_timestamp_seconds",
		 "When the newest of those events was received, in Unix time."},
	};

	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		gf_prom_family(out, fam[f].name, fam[f].help);
		for (size_t i = 0; i < n; i++) {
			gf_buf_adds(out, fam[f].name);
			gf_buf_addc(out, '{');
			gf_prom_label(out, "node", v[i].node, true);
			label(out, "source", v[i].source);
			label(out, "severity", gf_severity_name(v[i].severity));
			value(out, f == 0 ? (double)v[i].n : v[i].last);
		}
	}
}

int gf_metrics_build(struct gf_db *db, const char *const *nodes, size_t nnodes, struct gf_buf *out,
		     size_t *ret_n, struct gf_err *err)
{
	struct gf_store_query q = {.details = true};
	struct gf_drift_opts o = {.mode = GF_DRIFT_MAJORITY};
	struct gf_sweep *sw = NULL;
	struct gf_drift *d = NULL;
	const char **classes = NULL;
	struct gf_events_count *ev = NULL;
	size_t nev = 0;
	int rc;

	if (nnodes) {
		q.nodes = nodes;
		q.nnodes = nnodes;
	}
	rc = gf_store_load(db, &q, &sw, err);
	if (rc < 0)
		goto out;
	classes = gf_drift_model_classes(sw);
	o.classes = classes;
	rc = gf_drift_compute(sw, &o, &d, err);
	if (rc < 0)
		goto out;
	gf_metrics_render(sw, d, out);
	rc = gf_events_counts(db, nnodes ? nodes : NULL, nnodes, &ev, &nev, err);
	if (rc < 0)
		goto out;
	events(ev, nev, out);
	if (ret_n)
		*ret_n = sw->n;
out:
	gf_events_counts_free(ev, nev);
	gf_drift_free(d);
	free(classes);
	gf_sweep_free(sw);
	return rc;
}
