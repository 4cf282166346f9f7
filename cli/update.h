/* gpufleet update: how a rollout looks (cli/update_view.c), shared with cli/cmd_update.c. */
#ifndef GF_CLI_UPDATE_H
#define GF_CLI_UPDATE_H

#include "cli/bmc.h"
#include "cli/inv.h"
#include "fleet/rollout.h"

/* A run of the verb: its fan-outs on cli/bmc.c, the plan's rendering, the upload bar. */
struct upd {
	struct gf_cli *cli;
	bool dry_run;             /* update run --dry-run: plans say so */
	struct cli_bmc_fan fan;   /* the engine's fan-outs: whether the last ran, its code */
	struct cli_render render; /* plan: rendered once all are read, ndjson as they come */
	struct gf_result *shown;  /* plan: each node's object as rendered */
	struct cli_ticker *meter; /* the batch's upload bar, or NULL */
	bool progress;            /* cli->progress, while the meter replaces it */
};

/* The engine's view of a run of this verb: its fan-out and hooks over @u. */
void upd_run_init(struct upd *u, const struct gf_catalog *cat, const struct gf_rollout_opts *o,
		  const struct gf_node *nodes, size_t n, struct gf_db *db,
		  struct gf_rollout_run *ret);

/* The plan's table: a row per update of each node. */
extern const struct gf_render_spec upd_plan_spec;

/* Print rollout @id as stored, and the exit code: 0 when every node is done or skipped. */
int upd_print_rollout(struct gf_cli *cli, struct gf_db *db, long id, bool quiet_ndjson);

#endif
