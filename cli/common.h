/*
 * What every verb handler shares, one file per concern: options.c (global and
 * verb options), output.c (errors, warnings, rendering), targets.c (the
 * inventory, the registry, TARGETS), profiles.c (credentials and profiles),
 * guard.c (--yes or a prompt), audit.c (dry run and audit).
 */
#ifndef GF_CLI_COMMON_H
#define GF_CLI_COMMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "inventory/db.h"
#include "lib/creds.h"
#include "lib/exec.h"
#include "lib/node.h"
#include "lib/output.h"
#include "lib/result.h"

/* Exit codes, the same for every verb. */
enum {
	GF_EXIT_OK = 0,
	GF_EXIT_FAILED = 1,        /* at least one target failed */
	GF_EXIT_USAGE = 2,         /* usage or configuration error */
	GF_EXIT_DRIFT = 3,         /* drift found, with --fail-on-drift */
	GF_EXIT_REFUSED = 4,       /* refused for safety */
	GF_EXIT_INTERRUPTED = 130, /* Ctrl-C stopped a fan-out */
};

/* Global options, after parsing. */
struct gf_cli {
	const char *prog;
	const char *verb;
	const char *usage;   /* the verb's usage text, for --help */
	const char *db_path; /* resolved: option, env, or XDG default */
	const char *creds_path;
	const char *cache_dir; /* $XDG_CACHE_HOME/gpufleet: SDR caches */
	bool creds_explicit;   /* given by option or env: must exist */
	enum gf_format format;
	bool allow_prometheus; /* the verb can print --format prometheus */
	bool collapse;
	unsigned fanout;
	double timeout;
	unsigned retries;
	bool quiet;
	int verbose;
	bool progress;
	bool color;
	size_t width;                    /* stdout's terminal width in columns; 0: not a terminal */
	const char *hosts;               /* -H: ad-hoc BMC hosts */
	const char *protocol;            /* --protocol for -H, or nodes add */
	const char *profile;             /* --profile for -H, or nodes add */
	const char *cacert;              /* --cacert: CA bundle for Redfish BMC certificates */
	bool insecure;                   /* --insecure: no Redfish certificate checks */
	bool tls_pin_new;                /* --tls-pin new: pin Redfish certificates on first use */
	const struct cli_opt *verb_opts; /* the verb's option table, as cli_parse saw it */
	size_t nverb_opts;
	unsigned long long verb_opts_given; /* which of them were given: CLI_OPT(index) */

	struct gf_db *db;    /* opened on demand by cli_db() */
	struct gf_node *reg; /* the registry, loaded on demand */
	size_t nreg;
	bool reg_loaded;
	struct gf_creds creds;
	bool creds_loaded;
};

/* A verb's own option: getopt_long entry plus help text. */
struct cli_opt {
	struct option lo;
	const char *arg; /* metavar for help, NULL if no argument */
	const char *help;
};

/* cli/options.c: the global options, accepted before and after the verb. */
extern const struct cli_opt cli_global_opts[];
extern const size_t cli_nglobal_opts;
void cli_print_global_opts(FILE *f);

/*
 * Parse the verb's argv (argv[0] is the verb) with the global options and
 * @opts; calls @on_opt(ud, index into opts, optarg) for each verb option.
 * The positional arguments are left in *ret_args / *ret_nargs (pointing into
 * argv). Returns 0, or prints the error and returns GF_EXIT_USAGE; --help
 * prints the verb's help and returns -1.
 */
int cli_parse(struct gf_cli *cli, int argc, char **argv, const struct cli_opt *opts, size_t nopts,
	      int (*on_opt)(void *ud, size_t idx, const char *arg), void *ud, char ***ret_args,
	      int *ret_nargs);

/*
 * --since DATE|DURATION (2026-11-29, 2026-11-29T12:00Z, 90m, 7d) into epoch
 * seconds, and a --severity list (info,warning,critical) added to a mask of
 * bits (1 << enum gf_severity): 0, or GF_EXIT_USAGE (printed, naming @opt).
 */
int cli_parse_since(const char *opt, const char *arg, double *ret);
int cli_parse_severities(const char *opt, const char *arg, unsigned *ret);

/* cli/output.c: print "gpufleet: MESSAGE" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print @err as an error and return the exit code it maps to (2 for usage/config). */
int cli_fail(const struct gf_err *err);
/*
 * After a fan-out: when Ctrl-C stopped it, print "interrupted" and return
 * GF_EXIT_INTERRUPTED; else @rc.
 */
int cli_interrupted(int rc);
/* Warnings and -v messages on stderr; quiet silences warnings. */
void cli_warn(const struct gf_cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line for the user on stderr, as it is ("imported 3 nodes"); quiet silences it. */
void cli_note(const struct gf_cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A -v line on stderr: "gpufleet: MESSAGE"; only with --verbose. */
void cli_verbose(const struct gf_cli *cli, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * cli/subverb.c: a verb's sub-verbs, in the order its messages list them.
 * @run gets the words after the sub-verb and the @ud the verb passed.
 */
struct cli_subverb {
	const char *name;
	int (*run)(struct gf_cli *cli, const struct cli_subverb *sub, void *ud, char **args,
		   int nargs);
	const void *data; /* what @run needs to know of this sub-verb, or NULL */
	/*
	 * The verb options it takes, a bit per index in the verb's option table
	 * (CLI_OPT(i)); 0: every one. CLI_NO_OPTS: none. Another one given is a
	 * usage error that names it.
	 */
	unsigned long long takes;
};

#define CLI_OPT(i) (1ULL << (i))
#define CLI_NO_OPTS (1ULL << 63)

/*
 * Run the sub-verb @args[0] names. A missing or unknown one is a usage error
 * that lists the names of @subs (printed).
 */
int cli_subverb_run(struct gf_cli *cli, const struct cli_subverb *subs, size_t n, void *ud,
		    char **args, int nargs);

/* cli/targets.c: the inventory and its registry, opened on demand. */
int cli_db(struct gf_cli *cli, struct gf_db **ret);
int cli_registry(struct gf_cli *cli);
/* cli/profiles.c: the credentials file, loaded on demand. */
int cli_creds(struct gf_cli *cli);

/*
 * Resolve the TARGETS arguments (joined with ',') or -H into nodes. Unknown
 * names are a usage error that lists them. With @all_if_empty, no targets
 * means every registered node. Returns 0 or an exit code (printed).
 */
int cli_targets(struct gf_cli *cli, char **args, int nargs, bool all_if_empty, struct gf_node **ret,
		size_t *ret_n);

/*
 * cli_targets() (no TARGETS: none), then the inventory opened into *@db for
 * what the verb stores; on failure nothing is left to free. 0 or an exit code.
 */
int cli_targets_db(struct gf_cli *cli, char **args, int nargs, struct gf_node **ret, size_t *ret_n,
		   struct gf_db **db);
/*
 * Only the names TARGETS (@nargs > 0) name, @group members from the registry,
 * names not checked against it (verbs that read the inventory name imported
 * nodes too). Returns 0 or an exit code (printed).
 */
struct gf_nodeset;
int cli_target_names(struct gf_cli *cli, char **args, int nargs, struct gf_nodeset *ret);

enum cli_profile_use {
	CLI_PROFILE_BMC, /* nodes with a BMC; BMC password (command) resolved */
	CLI_PROFILE_SSH, /* nodes with an SSH address; key passphrase (command) resolved */
};

/*
 * The credentials profile of each node that has what @use needs (NULL for
 * the others), resolved in the main thread before fanning out: only the
 * secret that use needs is fetched. Returns 0 or an exit code (printed).
 * Free *ret with free().
 */
int cli_profiles(struct gf_cli *cli, enum cli_profile_use use, const struct gf_node *nodes,
		 size_t n, const struct gf_profile ***ret);

/* cli/options.c: the executor options from the global options. */
void cli_exec_opts(const struct gf_cli *cli, struct gf_exec_opts *o);

/* cli/output.c: rendering a fan-out run. */
struct cli_render {
	struct gf_cli *cli;
	const struct gf_node *nodes;
	size_t n;
	const struct gf_render_spec *spec;
	size_t finished;
	size_t failed;
	bool show_bmc; /* add "bmc"/"protocol" to each object */
	bool filtered; /* a filter chose spec->rows_key's rows: a table leaves out the nodes
			* with none (counted in the summary) */
};

/* The exec "done" callback: streams ndjson and draws progress. @ud is a struct cli_render. */
void cli_render_done(void *ud, size_t i, const struct gf_result *slot);
/* Only its ndjson part: node @i's object on stdout when the format is ndjson. */
void cli_render_stream(struct cli_render *r, size_t i, const struct gf_result *slot);
/*
 * A progress line on stderr, drawn over the last one ("\r\033[K", the text,
 * no line feed); cleared. The caller draws only on a terminal (cli->progress).
 */
void cli_progress_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_progress_clear(void);
/*
 * A progress line redrawn every @every seconds by a thread of its own that
 * calls @draw (which draws with cli_progress_line); NULL when no thread
 * could start. Stopped: drawn a last time, cleared, freed (NULL: nothing).
 */
struct cli_ticker;
struct cli_ticker *cli_ticker_start(void (*draw)(void *ud), void *ud, double every);
void cli_ticker_stop(struct cli_ticker *t);
/* The exec "done" callback that only counts, draws progress and prints -v lines (@ud as above). */
void cli_progress_done(void *ud, size_t i, const struct gf_result *slot);
/* Print all results (table/json/csv) after the run; returns 0 or 1 (some failed). */
int cli_render_finish(struct cli_render *r, const struct gf_result *slots);

/*
 * cli/guard.c: the safety guard of destructive verbs: more than one node needs @yes, or a
 * "y" on a terminal. Returns 0 to go on, or GF_EXIT_REFUSED (printed).
 */
int cli_guard(struct gf_cli *cli, const char *what, const struct gf_node *nodes, size_t n,
	      bool yes);
/* cli/audit.c: render {"action":@action,"dry_run":true} for every node; sends nothing. */
int cli_dry_run(struct gf_cli *cli, const char *action, const struct gf_node *nodes, size_t n,
		const struct gf_render_spec *spec);
/*
 * cli/audit.c: audit before acting, for every destructive verb. The record of
 * an action that may have happened survives a crash, kill -9 or a full disk:
 *
 *   a = cli_audit_open(cli, "power cycle", nodes, n);
 *   rc = cli_audit_intent(a, NULL, 0);  // all nodes, or cli_audit_intent(a, idx, k)
 *   if (rc) -> cli_audit_close(a, NULL), send nothing, return rc
 *   ... fan out; as node i finishes (main thread, e.g. the exec done callback):
 *   cli_audit_done(a, i, slot);
 *   rc2 = cli_audit_close(a, slots);    // the nodes not done yet, from @slots
 *
 * cli_audit_intent() writes a 'pending' row for each node (@idx: only nodes
 * idx[0..k-1], e.g. one batch or one node just before a worker sends to it)
 * and commits it synced to disk; it returns 0, or an exit code (printed) and
 * then nothing may be sent to those nodes. cli_audit_done() completes node
 * @i's row from its slot: "ok" or the error kind with the message; a node
 * with no attempt (interrupted before it started) has its intent removed.
 * Only the main thread calls these. cli_audit_close() with NULL slots leaves
 * the rows not done pending; it frees @a and returns 0 or GF_EXIT_FAILED
 * when a result could not be written (printed once; those rows stay
 * pending).
 */
struct cli_audit;
struct cli_audit *cli_audit_open(struct gf_cli *cli, const char *what, const struct gf_node *nodes,
				 size_t n);
/*
 * Before the intents: what each node's row names (@details[i], NULL: nothing;
 * "rollout 3: bmc 7.1"), copied; a node's result keeps it, an error after it.
 */
void cli_audit_details(struct cli_audit *a, const char *const *details);
int cli_audit_intent(struct cli_audit *a, const size_t *idx, size_t k);
void cli_audit_done(struct cli_audit *a, size_t i, const struct gf_result *slot);
int cli_audit_close(struct cli_audit *a, const struct gf_result *slots);

/* cli/output.c: stdout's terminal width in columns (80 when it does not say); 0: not a terminal. */
size_t cli_term_width(void);

/* Ask on a terminal; false when not a terminal. */
bool cli_confirm(const char *question);

/* cli/targets.c: free what was loaded on demand (inventory, registry, credentials). */
void cli_release(struct gf_cli *cli);

#endif
