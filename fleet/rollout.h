/*
 * The rollout engine of `gpufleet update`: a firmware rollout planned from
 * a fresh read of every node's firmware inventory against a catalog,
 * stored, then run batch by batch (the canary alone, then --batch nodes at
 * once), each node `done` only once its new versions are read back, and
 * resumed where a stopped run left it.
 *
 * The engine runs on the calling thread, which alone writes the store
 * (inventory/rollout.c). It reaches the nodes through the fan-out frame
 * (fleet/fanout.h), as the caller runs it (struct gf_rollout_fan: cli/
 * adds the profiles, the audit and the progress; a test, a stub backend):
 * the workers run the engine's frame ops on a session of the node's BMC
 * and fill only their own node's typed result; the calling thread gets
 * each node as it finishes and through the hooks. Nothing here prints,
 * prompts or exits.
 */
#ifndef GF_FLEET_ROLLOUT_H
#define GF_FLEET_ROLLOUT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "fleet/fanout.h"
#include "inventory/catalog.h"
#include "inventory/rollout.h"
#include "lib/backend.h"
#include "lib/node.h"
#include "lib/result.h"

/* One fan-out the engine asks for. */
struct gf_rollout_fanout {
	const struct gf_node *nodes;
	size_t n;
	gf_fanout_op op;   /* the frame's short op, on node i's open session */
	const void *ctx;   /* @op's, read-only */
	const char *audit; /* NULL: read-only; else the audited action ("update run") */
	/* NULL, or per node: what its audit row names ("rollout 3: bmc 7.1, bios 2.0") */
	const char *const *audit_detail;
	double timeout;  /* > 0: a node's deadline instead of the caller's */
	unsigned batch;  /* staggering (gf_exec_opts): nodes started @batch at a */
	double interval; /* time, @interval s apart; then no fleet ping */
	/* NULL, or true for a node whose BMC may be restarting: its session opened again */
	bool (*may_be_restarting)(const void *ctx, const struct gf_node *n);
	/* On the calling thread as each node finishes (its slot: ok, err, attempts). */
	void (*on_done)(void *ud, size_t i, const struct gf_result *slot);
	void *done_ud;
	struct gf_fanout_keep *keep; /* NULL, or sessions kept across runs (fanout.h) */
};

/*
 * The caller's fan-out: run @f, calling f->on_done for each node that
 * finished. Returns 0 when the nodes were tried (some may have failed), or
 * a positive code of the caller's that stops the rollout (nothing tried,
 * or interrupted); the engine hands it back as it is.
 */
struct gf_rollout_fan {
	int (*run)(void *ud, const struct gf_rollout_fanout *f);
	void *ud;
};

/* One node's plan, fresh from its BMC. */
struct gf_rollout_plan {
	char *model, *dialect; /* as its BMC names them, NULL: unknown */
	/*
	 * As stored: state not-started (items to update, listed first, then
	 * those already at their version, skipped), skipped (nothing to do),
	 * failed or unsupported (kind and message); batch 0 until stored.
	 */
	struct gf_rollout_node node;
};

void gf_rollout_plan_release(struct gf_rollout_plan *p);

/*
 * A batch as it runs, handed to the hooks: the workers add to its bytes
 * (the backend to @sent as it hands an image over), the calling thread
 * counts the nodes stored; any thread may read it while the batch runs.
 */
struct gf_rollout_progress {
	unsigned batch, batches; /* this one (1-based), of how many */
	size_t nodes;            /* in the batch */
	atomic_size_t finished;  /* nodes of the batch stored */
	atomic_ullong total;     /* bytes of the images its nodes push, once each */
	atomic_ullong sent;      /* bytes handed to the BMCs so far */
};

/* Callbacks; any may be NULL. */
struct gf_rollout_hooks {
	void *ud;
	/* Calling thread: node i's plan read (or failed: slot->ok false). */
	void (*planned)(void *ud, size_t i, const struct gf_rollout_plan *p,
			const struct gf_result *slot);
	/* Calling thread: a batch starts (its progress live until it ends); it ended, @ok ok. */
	void (*batch_start)(void *ud, const struct gf_rollout_progress *p);
	void (*batch_end)(void *ud, const struct gf_rollout_progress *p, size_t ok);
	/*
	 * Calling thread: a node of rollout @id in its new state, stored;
	 * @store_err: it could not be (the run's first such error; NULL else).
	 */
	void (*node_done)(void *ud, long id, const struct gf_rollout_node *rn,
			  const struct gf_err *store_err);
	/* Calling thread: more than --max-failures nodes failed, no more are started. */
	void (*stopping)(void *ud, size_t failed, unsigned long max_failures);
};

struct gf_rollout_run {
	const struct gf_catalog *cat;
	const struct gf_rollout_opts *o;
	const struct gf_node *nodes; /* plan: the targets; run, resume: node i is r->nodes[i] */
	size_t n;
	unsigned fanout; /* the batch size when o->batch is 0 */
	struct gf_rollout_fan fan;
	struct gf_rollout_hooks hooks;
	struct gf_db *db; /* run and resume */
};

/*
 * Read every node's firmware and plan it. *ret gets @run->n plans (free
 * each with gf_rollout_plan_release(), then the array); NULL when the
 * fan-out did not run. Returns the fan-out's code (0: the nodes were read).
 */
int gf_rollout_plan(const struct gf_rollout_run *run, struct gf_rollout_plan **ret);

/*
 * Store a new rollout from @plans (node i of run->nodes): batches assigned
 * to the nodes to update, the catalog's bytes and the options kept. The
 * rollout, as stored, in @ret (release with gf_rollout_release()), the
 * number of nodes to update in *ret_work. 0 or GF_E_* with @err.
 */
int gf_rollout_start(const struct gf_rollout_run *run, const struct gf_rollout_plan *plans,
		     const char *user, struct gf_rollout *ret, size_t *ret_work,
		     struct gf_err *err);

/*
 * Run stored rollout @r, batch by batch: the nodes not started (run), or
 * all but those done, skipped or unsupported (@resume). Each batch's nodes
 * are stored running before anything is sent to them; each node's state
 * is stored as it finishes. Returns 0, a code of the fan-out's, or GF_E_*
 * with @err; *ret_store_failed when a node's state could not be stored
 * (reported through node_done; no batch was started after it).
 */
int gf_rollout_execute(const struct gf_rollout_run *run, const struct gf_rollout *r, bool resume,
		       bool *ret_store_failed, struct gf_err *err);
/* The rollout's own state once it ran: finished, or stopped when nodes are left. */
int gf_rollout_finish(struct gf_db *db, long id, struct gf_err *err);
/* Nodes of @r a resume would start (not done, skipped or unsupported). */
size_t gf_rollout_left(const struct gf_rollout *r);

/* A stored rollout to resume, with the catalog and the options it was started with. */
struct gf_rollout_resume {
	struct gf_rollout r;
	struct gf_catalog cat;    /* parsed from the bytes stored */
	struct gf_rollout_opts o; /* the rollout's, --reboot added when given */
	char **names;             /* its nodes' names, in its order (borrowed from r) */
	char *component;          /* o.component's */
};

/*
 * Load rollout @id (0: the last) to resume it with @given's --reboot.
 * GF_E_NOTFOUND when there is none, GF_E_USAGE when its catalog no longer
 * parses (a file it names is gone). Release with gf_rollout_resume_release().
 */
int gf_rollout_resume_load(struct gf_db *db, long id, const struct gf_rollout_opts *given,
			   struct gf_rollout_resume *ret, struct gf_err *err);
void gf_rollout_resume_release(struct gf_rollout_resume *rs);
/*
 * Claim @r for this process before it is resumed, and mark it running:
 * GF_E_BUSY (naming each node and the rollout that holds it) when a node it
 * would start belongs to a rollout that a live process runs, this one
 * included. A claim whose process died is taken over.
 */
int gf_rollout_resume_claim(struct gf_db *db, const struct gf_rollout *r, struct gf_err *err);
/*
 * Put @nodes (what the registry has of @r's names) in @r's order: node i is
 * r->nodes[i]. GF_E_USAGE when some are missing.
 */
int gf_rollout_match(const struct gf_rollout *r, struct gf_node *nodes, size_t n,
		     struct gf_err *err);

#endif
