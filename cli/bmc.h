/* Fanning one BMC operation out over nodes: profiles, sessions, rendering. */
#ifndef GF_CLI_BMC_H
#define GF_CLI_BMC_H

#include "cli/common.h"
#include "inventory/bmc.h"
#include "lib/backend.h"

/*
 * One operation on an open session, on a worker thread: fill slot->data (an
 * object, already made) and return 0, or return < 0 with @err filled. Set
 * slot->no_retry once the BMC may have acted. @ctx is read-only.
 */
typedef int (*cli_bmc_op)(const struct gf_backend *be, void *sess, const struct gf_node *n,
			  const void *ctx, struct gf_result *slot, struct gf_err *err);

struct cli_bmc_run {
	struct gf_cli *cli;
	const struct gf_node *nodes;
	size_t n;
	cli_bmc_op op;
	const void *ctx;
	const struct gf_render_spec *spec;  /* NULL: do not render, the caller reads slots */
	const char *action;                 /* put in every node's "action", also on failure */
	const char *audit;                  /* destructive: "VERB SUB" audited (cli/audit.c): the
					     * intents committed before anything is sent (else
					     * nothing is), each node completed as it finishes */
	const char *log_name;               /* sel --log: the event log to read (Redfish), NULL: find it */
	bool no_thresholds;                 /* sensors: the output shows no thresholds */
	unsigned batch;                     /* staggering, see gf_exec_opts */
	double interval;
	double request_timeout;             /* > 0: each request bounded by this, the node by timeout */
	double timeout;                     /* > 0: the node's deadline instead of --timeout */
	/*
	 * NULL, or true for a node whose BMC may be restarting when the run
	 * starts (update resume: a killed run left it mid-activation): its
	 * session is then opened again each second, while the connection is
	 * refused, dropped or times out, until the node's deadline.
	 */
	bool (*may_be_restarting)(const void *ctx, const struct gf_node *n);
	/* Called on the main thread as each node finishes, after rendering (NULL: none). */
	void (*on_done)(void *ud, size_t i, const struct gf_result *slot);
	void *done_ud;
	struct gf_result *slots;            /* filled by cli_bmc_fanout(); cli_bmc_release() */
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
 * The parts of cli_bmc_fanout() for a fan-out of its own (sweep): before it,
 * the nodes' BMC profiles and TLS pins into @ret (with the --insecure
 * warning), 0 or an exit code (printed); after it, the pins on first use
 * stored (each one warned), 0 or an exit code; then the release.
 */
int cli_bmc_prepare(struct gf_cli *cli, const struct gf_node *nodes, size_t n,
		    struct gf_bmc_run *ret);
int cli_bmc_store_pins(struct gf_cli *cli, const struct gf_bmc_run *b);
void cli_bmc_prepared_release(struct gf_bmc_run *b);
void cli_bmc_release(struct cli_bmc_run *run);

/*
 * A whole read-only verb with no options of its own: parse, resolve the
 * targets, run @op on each, render with @spec. Returns the exit code.
 */
int cli_bmc_verb(struct gf_cli *cli, int argc, char **argv, cli_bmc_op op,
		 const struct gf_render_spec *spec);

#endif
