/* Dry runs and the audit log of destructive verbs. */
#include "cli/common.h"

#include <stdlib.h>

#include "lib/util.h"

int cli_dry_run(struct gf_cli *cli, const char *action, const struct gf_node *nodes, size_t n,
		const struct gf_render_spec *spec)
{
	struct gf_result *slots = gf_xcalloc(n ? n : 1, sizeof(*slots));
	struct cli_render r = {.cli = cli, .nodes = nodes, .n = n, .spec = spec, .show_bmc = true};
	int rc;

	for (size_t i = 0; i < n; i++) {
		gf_result_init(&slots[i]);
		slots[i].ok = true;
		slots[i].data = json_pack("{s:s, s:b}", "action", action, "dry_run", 1);
		cli_render_done(&r, i, &slots[i]);
	}
	rc = cli_render_finish(&r, slots);
	for (size_t i = 0; i < n; i++)
		gf_result_release(&slots[i]);
	free(slots);
	return rc;
}

int cli_audit(struct gf_cli *cli, const char *verb, const char *sub, const struct gf_node *nodes,
	      size_t n, const struct gf_result *slots)
{
	struct gf_audit *rows = gf_xcalloc(n ? n : 1, sizeof(*rows));
	const char *user = gf_invoking_user();
	size_t k = 0;
	struct gf_err err = {0};
	struct gf_db *db;
	char what[96];
	int rc;

	snprintf(what, sizeof(what), "%s %s", verb, sub);
	for (size_t i = 0; i < n; i++) {
		if (slots[i].attempts == 0)
			continue; /* interrupted before anything was sent to it */
		rows[k].time = slots[i].t_start;
		rows[k].user = user;
		rows[k].verb = what;
		rows[k].node = nodes[i].name;
		rows[k].result = slots[i].ok ? "ok" : gf_errkind_name(slots[i].err.kind);
		rows[k].detail = slots[i].ok ? NULL : slots[i].err.msg;
		k++;
	}
	rc = cli_db(cli, &db);
	if (!rc && gf_db_audit_add(db, rows, k, &err) < 0) {
		cli_error("the audit log could not be written: %s", err.msg);
		rc = GF_EXIT_FAILED;
	}
	free(rows);
	return rc;
}
