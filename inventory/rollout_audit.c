/*
 * The audit rows of a rollout's runs that a kill -9 left pending: their
 * intents name the rollout ("rollout 3: bmc 7.1", fleet/rollout.c), so
 * that once resume has asked each node's BMC what it holds and stored it,
 * they are completed from that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inventory/audit.h"
#include "inventory/rollout.h"
#include "lib/buf.h"

/* Does @detail name rollout @id ("rollout ID" alone, or followed by ':')? */
static bool names_rollout(const char *detail, long id)
{
	char head[48];
	size_t n;

	if (!detail)
		return false;
	n = (size_t)snprintf(head, sizeof(head), "rollout %ld", id);
	return strncmp(detail, head, n) == 0 && (detail[n] == '\0' || detail[n] == ':');
}

static const struct gf_rollout_node *node_of(const struct gf_rollout *r, const char *name)
{
	for (size_t i = 0; name && i < r->n; i++)
		if (strcmp(r->nodes[i].node, name) == 0)
			return &r->nodes[i];
	return NULL;
}

int gf_rollout_audit_reconcile(struct gf_db *db, long id, const char *by, size_t *ret_n,
			       struct gf_err *err)
{
	struct gf_rollout r = {0};
	struct gf_audit_entry *e = NULL;
	size_t n = 0, done = 0;
	int rc;

	*ret_n = 0;
	if ((rc = gf_rollout_load(db, id, &r, err)) < 0)
		return rc;
	if ((rc = gf_db_audit_list(db, true, &e, &n, err)) < 0) {
		gf_rollout_release(&r);
		return rc;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct gf_rollout_node *rn = node_of(&r, e[i].node);
		struct gf_buf b = GF_BUF_INIT;
		struct gf_audit row = {0};

		if (!rn || !e[i].verb || strncmp(e[i].verb, "update ", 7) != 0 ||
		    !names_rollout(e[i].detail, id))
			continue;
		/* Still in flight (this resume did not get to it): it stays pending. */
		if (rn->state == GF_RS_RUNNING || rn->state == GF_RS_NOT_STARTED)
			continue;
		gf_buf_addf(&b, "%s: ended without a result (killed); %s found the node %s",
			    e[i].detail, by, gf_rollout_state_name(rn->state));
		if (rn->message)
			gf_buf_addf(&b, " (%s)", rn->message);
		row.result = rn->state == GF_RS_DONE || rn->state == GF_RS_SKIPPED
				     ? "ok"
				     : (rn->kind ? rn->kind : gf_rollout_state_name(rn->state));
		row.detail = gf_buf_str(&b);
		rc = gf_db_audit_finish(db, &e[i].id, &row, 1, err);
		gf_buf_release(&b);
		done += rc == 0;
	}
	gf_db_audit_entries_free(e, n);
	gf_rollout_release(&r);
	*ret_n = done;
	return rc;
}
