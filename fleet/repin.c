/* Re-pinning: every node's certificate read at once, the new pins stored in one transaction. */
#include "fleet/repin.h"

#include <stdlib.h>
#include <string.h>

#include "fleet/bmc.h"
#include "lib/buf.h"

struct run {
	struct gf_repin *r;
	enum gf_repin_status *status; /* per node, written by its worker only (and pins.seen[i]) */
};

static void repin_one(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	const struct run *run = vctx;
	const struct gf_repin *r = run->r;
	const struct gf_node *n = &r->nodes[i];
	char *seen = r->pins.seen[i];
	struct gf_err err = {0};

	run->status[i] = GF_REPIN_FAILED;
	if (gf_bmc_peek_fingerprint(n, deadline, gf_exec_cancel_flag(), seen, &err) < 0) {
		gf_result_fail(slot, &err);
		return;
	}
	run->status[i] = GF_REPIN_OTHER;
	if (r->expect && strcmp(r->expect, seen) != 0) {
		/* Not the certificate the operator was told of: the old pin stays. */
		gf_err_set(&err, GF_E_NODE, GF_EK_TLS,
			   "bmc '%s' shows sha256 %s, not the expected %s; the pin was not changed",
			   n->name, seen, r->expect);
		gf_result_fail(slot, &err);
		return;
	}
	run->status[i] = GF_REPIN_OK;
	slot->ok = true;
}

static void node_done(void *ud, size_t i, const struct gf_result *slot)
{
	const struct run *run = ud;
	struct gf_repin *r = run->r;
	enum gf_repin_status status = run->status[i];

	(void)slot;
	if (r->done)
		r->done(r->ud, i, &r->slots[i], status, r->pins.pin[i],
			status >= GF_REPIN_OTHER ? r->pins.seen[i] : NULL);
}

int gf_repin_run(struct gf_db *db, struct gf_repin *r, struct gf_err *err)
{
	struct run run = {.r = r};
	size_t n = r->n;
	bool *which;
	int rc;

	rc = gf_pins_load(db, r->nodes, NULL, n, false, NULL, &r->pins, err);
	if (rc < 0)
		return rc;
	r->slots = gf_xcalloc(n ? n : 1, sizeof(*r->slots));
	run.status = gf_xcalloc(n ? n : 1, sizeof(*run.status));
	rc = gf_exec_run(&r->exec, n, repin_one, &run, r->slots, node_done, &run, err);
	free(run.status);
	if (rc < 0)
		return rc;
	/* Only what was read (and expected) is written: the others keep the pin they had. */
	which = gf_xcalloc(n ? n : 1, sizeof(*which));
	for (size_t i = 0; i < n; i++)
		which[i] = r->slots[i].ok;
	rc = gf_pins_replace(db, r->nodes, &r->pins, which, err);
	free(which);
	return rc;
}

void gf_repin_release(struct gf_repin *r)
{
	for (size_t i = 0; r->slots && i < r->n; i++)
		gf_result_release(&r->slots[i]);
	free(r->slots);
	r->slots = NULL;
	gf_pins_release(&r->pins);
}
