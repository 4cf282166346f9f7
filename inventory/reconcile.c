/*
 * BMC against host: GPU count, serials, firmware held against VBIOS running,
 * and a GPU the BMC calls critical that the host reports healthy.
 */
#include "inventory/reconcile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/compkey.h"

static char *dup_or_null(const char *s)
{
	return s ? gf_xstrdup(s) : NULL;
}

static void add(struct gf_reconcile_node *rn, char *component, const char *check,
		const char *expected, const char *actual, struct gf_buf *detail)
{
	struct gf_reconcile_item *it;

	rn->items = gf_xrealloc(rn->items, (rn->n + 1) * sizeof(*rn->items));
	it = &rn->items[rn->n++];
	it->component = component;
	it->check = check;
	it->expected = dup_or_null(expected);
	it->actual = dup_or_null(actual);
	it->detail = gf_buf_detach(detail);
}

static bool has_serial(const char *s)
{
	return s && *s;
}

static const struct gf_host_gpu *host_by_serial(const struct gf_hostfacts *h, const char *serial)
{
	for (size_t k = 0; k < h->ngpus; k++)
		if (has_serial(h->gpus[k].serial) && strcasecmp(h->gpus[k].serial, serial) == 0)
			return &h->gpus[k];
	return NULL;
}

static bool bmc_has_serial(const struct gf_hardware *hw, const char *serial)
{
	for (size_t k = 0; k < hw->ngpus; k++)
		if (has_serial(hw->gpus[k].serial) && strcasecmp(hw->gpus[k].serial, serial) == 0)
			return true;
	return false;
}

/*
 * The firmware the BMC holds for GPU @g: its entry in the firmware
 * inventory under the same key (what an update stages), else what the
 * GPU's processor resource says.
 */
static const char *bmc_firmware(const struct gf_sweep_node *n, const char *key,
				const struct gf_gpu_hw *g)
{
	const struct gf_inv_comp *c = gf_inv_set_find(n->set, key);

	if (c && c->version && strcmp(c->source, GF_SOURCE_HOST) != 0)
		return c->version;
	return g->firmware && *g->firmware ? g->firmware : NULL;
}

/* The host reports nothing wrong with @hg: no uncorrected ECC, nothing pending. */
static bool host_says_ok(const struct gf_host_gpu *hg)
{
	return !(hg->ecc_aggregate_uncorrected.set && hg->ecc_aggregate_uncorrected.v > 0) &&
	       !(hg->ecc_volatile_uncorrected.set && hg->ecc_volatile_uncorrected.v > 0) &&
	       hg->remapped_rows_pending != GF_TRI_YES && hg->retired_pages_pending != GF_TRI_YES;
}

/* A GPU the BMC calls critical while the host, which sees it, reports it healthy. */
static void bmc_health(struct gf_reconcile_node *rn, const struct gf_gpu_hw *g,
		       const struct gf_host_gpu *hg)
{
	struct gf_buf d = GF_BUF_INIT;
	char comp[32];

	if (!g->bmc.read || !g->bmc.health || strcasecmp(g->bmc.health, "Critical") != 0 ||
	    !host_says_ok(hg))
		return;
	snprintf(comp, sizeof(comp), "gpu%d", g->index);
	gf_buf_addf(&d,
		    "GPU serial %s: the BMC calls it Critical%s, the host sees it (GPU %d) and"
		    " reports no error",
		    g->serial, g->bmc.remap_pending == 1 ? " (row remapping pending)" : "",
		    hg->index);
	add(rn, gf_xstrdup(comp), "health", "Critical", "ok", &d);
}

static void reconcile_node(const struct gf_sweep_node *n, struct gf_reconcile_node *rn)
{
	const struct gf_hardware *hw = n->hardware;
	const struct gf_hostfacts *h = n->host;
	char a[32], b[32];

	if (!hw || !h || !n->host_read || hw->ngpus == 0 || h->ngpus == 0)
		return;
	rn->compared = true;
	if (hw->ngpus != h->ngpus) {
		struct gf_buf d = GF_BUF_INIT;

		snprintf(a, sizeof(a), "%zu", hw->ngpus);
		snprintf(b, sizeof(b), "%zu", h->ngpus);
		gf_buf_addf(&d, "the BMC lists %zu GPUs, the host sees %zu", hw->ngpus, h->ngpus);
		add(rn, gf_xstrdup("gpus"), "count", a, b, &d);
	}
	for (size_t k = 0; k < hw->ngpus; k++) {
		const struct gf_gpu_hw *g = &hw->gpus[k];
		char *key = gf_compkey_expand("gpu#.firmware", g->index);
		const struct gf_host_gpu *hg;
		const char *held;

		if (!has_serial(g->serial)) {
			free(key);
			continue;
		}
		hg = host_by_serial(h, g->serial);
		if (!hg) {
			struct gf_buf d = GF_BUF_INIT;

			gf_buf_addf(&d,
				    "GPU serial %s: the BMC lists it (gpu%d), the host does not see it"
				    " (fallen off the bus?)",
				    g->serial, g->index);
			add(rn, gf_xstrdup("gpus"), "serial", g->serial, NULL, &d);
			free(key);
			continue;
		}
		bmc_health(rn, g, hg);
		held = bmc_firmware(n, key, g);
		if (held && hg->vbios && *hg->vbios && strcasecmp(held, hg->vbios) != 0) {
			struct gf_buf d = GF_BUF_INIT;

			gf_buf_addf(&d,
				    "GPU serial %s: the BMC holds firmware %s, the driver runs VBIOS %s"
				    " on GPU %d (staged, waiting for a power cycle?)",
				    g->serial, held, hg->vbios, hg->index);
			add(rn, key, "firmware", held, hg->vbios, &d);
			key = NULL;
		}
		free(key);
	}
	for (size_t k = 0; k < h->ngpus; k++) {
		const struct gf_host_gpu *hg = &h->gpus[k];
		struct gf_buf d = GF_BUF_INIT;

		if (!has_serial(hg->serial) || bmc_has_serial(hw, hg->serial))
			continue;
		gf_buf_addf(&d,
			    "GPU serial %s: the host sees it (GPU %d), the BMC does not list it"
			    " (a stale BMC inventory?)",
			    hg->serial, hg->index);
		add(rn, gf_xstrdup("gpus"), "serial", NULL, hg->serial, &d);
	}
}

struct gf_reconcile *gf_reconcile_compute(const struct gf_sweep *sw)
{
	struct gf_reconcile *r = gf_xcalloc(1, sizeof(*r));

	r->nodes = gf_xcalloc(sw->n ? sw->n : 1, sizeof(*r->nodes));
	r->n = sw->n;
	for (size_t i = 0; i < sw->n; i++) {
		r->nodes[i].node = &sw->nodes[i];
		reconcile_node(&sw->nodes[i], &r->nodes[i]);
		r->compared += r->nodes[i].compared;
		r->findings += r->nodes[i].n;
		r->nodes_with_findings += r->nodes[i].n > 0;
	}
	return r;
}

void gf_reconcile_free(struct gf_reconcile *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		for (size_t k = 0; k < r->nodes[i].n; k++) {
			free(r->nodes[i].items[k].component);
			free(r->nodes[i].items[k].expected);
			free(r->nodes[i].items[k].actual);
			free(r->nodes[i].items[k].detail);
		}
		free(r->nodes[i].items);
	}
	free(r->nodes);
	free(r);
}
