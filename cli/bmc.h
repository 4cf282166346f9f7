/* A verb's BMC fan-out on the frame (fleet/fanout.h): profiles, audit, rendering, messages. */
#ifndef GF_CLI_BMC_H
#define GF_CLI_BMC_H

#include "cli/common.h"
#include "fleet/fanout.h"
#include "lib/backend.h"

struct cli_bmc_run {
	struct gf_cli *cli;
	const struct gf_node *nodes;
	size_t n;
	gf_fanout_op op; /* fleet/fanout.h */
	const void *ctx;
	const struct gf_render_spec *spec; /* NULL: do not render, the caller reads slots */
	const char *action;                /* put in every node's "action", also on failure */
	const char *audit;                 /* destructive: "VERB SUB" audited (cli/audit.c): the
					     * intents committed before anything is sent (else
					     * nothing is), each node completed as it finishes */
	const char *const *audit_detail;   /* NULL, or per node: what its audit row names */
	const struct gf_bmc_opts *opts;    /* the verb's knobs for the backend (sel --log, ...),
					     * NULL: none */
	unsigned batch;                    /* staggering, see gf_exec_opts */
	double interval;
	bool reads_power; /* the op reads the power state only (struct gf_fanout's) */
	double timeout;   /* > 0: the node's deadline instead of --timeout */
	/* NULL, or a node whose BMC may be restarting (struct gf_fanout's). */
	bool (*may_be_restarting)(const void *ctx, const struct gf_node *n);
	/* Called on the main thread as each node finishes, after rendering (NULL: none). */
	void (*on_done)(void *ud, size_t i, const struct gf_result *slot);
	void *done_ud;
	struct gf_result *slots;     /* filled by cli_bmc_fanout(); cli_bmc_release() */
	bool filtered;               /* a filter chose the rows (struct cli_render's) */
	struct gf_fanout_keep *keep; /* NULL, or sessions kept across runs (fleet/fanout.h) */
	bool close_at_once;          /* each session closed as its node is done (rollouts) */
	/*
	 * The sessions whose logout waits until the results are out (struct
	 * gf_fanout's later): closed by cli_bmc_release(), which the caller
	 * calls once it has printed.
	 */
	struct gf_fanout_keep later;
};

/*
 * Resolve the profiles, run @op on every node, render (unless spec is NULL).
 * Redfish certificates: pins are read from the DB before and written after
 * the run (with --tls-pin new). Ctrl-C during the run stops it soon, with
 * sessions closed. Returns the exit code: 0 all ok, 1 some failed, 2
 * configuration error (then nothing was sent), 130 interrupted.
 */
int cli_bmc_fanout(struct cli_bmc_run *run);

/*
 * What every fan-out of cli/ shares (cli_bmc_fanout(), sweep): the frame's
 * settings from the global options (TLS, caches, the executor's) for
 * @nodes with their BMC @profs; its inventory hook (@ud: a struct
 * cli_render, or a struct that starts with one); the --insecure warning
 * (for hooks.start); and after the run, the report of the pins stored on
 * first use (each one warned), 0 or an exit code.
 */
void cli_bmc_frame(struct gf_cli *cli, struct gf_fanout *f, const struct gf_node *nodes, size_t n,
		   const struct gf_profile *const *profs);
int cli_bmc_db(void *ud, struct gf_db **ret);
void cli_bmc_warn_insecure(const struct gf_cli *cli, const struct gf_fanout *f);
int cli_bmc_pins_report(struct gf_cli *cli, const struct gf_fanout *f);
void cli_bmc_release(struct cli_bmc_run *run);

/* The knobs of a verb that reads once a node (firmware, power and boot status). */
extern const struct gf_bmc_opts cli_bmc_one_read;

/*
 * A whole read-only verb with no options of its own: parse, resolve the
 * targets, run @op on each (with the backend knobs @bopts, NULL: none),
 * render with @spec. Returns the exit code.
 */
int cli_bmc_verb(struct gf_cli *cli, int argc, char **argv, gf_fanout_op op,
		 const struct gf_render_spec *spec, const struct gf_bmc_opts *bopts);
/*
 * The same with options of its own: @on_opt (cli_parse()'s) is called with
 * @spec as its ud and may point *@spec at another spec (a view the option asks for).
 */
int cli_bmc_verb_opts(struct gf_cli *cli, int argc, char **argv, const struct cli_opt *opts,
		      size_t nopts, int (*on_opt)(void *ud, size_t idx, const char *arg),
		      gf_fanout_op op, const struct gf_render_spec **spec);

/*
 * The rollout engine's fan-outs (fleet/rollout.h struct gf_rollout_fan) on
 * cli_bmc_fanout(), with update's request timeout; @ud is a struct
 * cli_bmc_fan. Nodes that failed are results (0); any other exit code stops
 * the rollout and is handed back.
 */
struct cli_bmc_fan {
	struct gf_cli *cli;
	bool ran; /* the last fan-out ran (its nodes were tried) */
	int code; /* its exit code */
};
struct gf_rollout_fanout;
int cli_bmc_rollout_fan(void *ud, const struct gf_rollout_fanout *f);

#endif
