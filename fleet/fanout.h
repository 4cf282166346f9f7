/*
 * The one BMC fan-out frame. Every run that reaches the BMCs of nodes goes
 * through it: the verbs (cli/bmc.c), the sweep's BMC part (fleet/collect.c)
 * and rollouts. Given the nodes, their BMC profiles (resolved by the caller)
 * and what to do on each, gf_fanout_run():
 *
 *   1. reads the nodes' TLS pins, when a node's BMC may show a certificate
 *      (the inventory opened through hooks.db, only then);
 *   2. calls hooks.start: the last word before anything is sent (the audit
 *      intents committed, the --insecure warning);
 *   3. starts the fleet ping (fleet/bmc.c gf_bmc_gate_start) as the
 *      executor's gate: a node's BMC task is held until its BMC answered,
 *      failed at the run's start + exec.timeout with no session opened (not
 *      for staggered runs, nor for streams, nor for a node that may be
 *      restarting);
 *   4. runs the executor (lib/exec.c). A node's BMC task, on a worker
 *      thread: choose its backend (--protocol auto probes) -> open the
 *      session (again each second while the BMC of a node that may be
 *      restarting refuses it) -> the op -> close. With a side part, another
 *      task of the same node runs at once under its deadline (the sweep's
 *      SSH facts);
 *   5. calls hooks.done on the calling thread as each node finishes, and
 *      hooks.finish once the run is over (the audit rows completed);
 *   6. stores the certificates seen on first use as the nodes' pins
 *      (through hooks.db) and hands them back as data (f->pinned): the
 *      caller reports them.
 *
 * Nothing here prints. Ctrl-C is the executor's: gf_exec_cancelled().
 *
 * A long-lived task (mode GF_FANOUT_STREAM: an event stream, SEL polling,
 * console logging) is the same frame: its op keeps an open session as long
 * as it can and returns
 *   GF_FANOUT_DONE       the node's work is over: the node is ok;
 *   GF_FANOUT_RECONNECT  the session ended (the peer closed the stream, a
 *                        read timed out): the frame closes it, waits, opens
 *                        a new one and calls the op again;
 *   < 0 with @err        a failure. Of kind connect or timeout it is taken
 *                        as a reconnect (the BMC went away and may come
 *                        back); any other kind ends the node with @err.
 * A failed open of kind connect or timeout is waited on and tried again; any
 * other (auth, TLS, unsupported) ends the node: trying a refused login again
 * and again would lock the account. The wait between two sessions is a
 * jittered exponential backoff: backoff_min after a reconnect, doubled
 * after each failed open up to backoff_max, each wait drawn in [w/2, w];
 * it ends at once on Ctrl-C. The node's loop ends at its deadline (the
 * run's start + exec.timeout: how long the stream runs) or on Ctrl-C; the
 * op itself must return by s->deadline, and soon after Ctrl-C (its backend
 * calls watch the cancel flag, its own waits gf_exec_cancelled()). A node
 * stopped that way is ok when its last session opened, else it fails with
 * the error of its last open. slot->data (an object the frame made) is the
 * op's across sessions: where the stream got to, what it counted. A stream
 * run takes every node at once (exec.fanout is raised to n), is not gated by
 * the fleet ping (it retries on its own) and the executor never retries it
 * (its loop does). The restart retry of may_be_restarting is the short
 * ops' only.
 */
#ifndef GF_FLEET_FANOUT_H
#define GF_FLEET_FANOUT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "fleet/bmc.h"
#include "fleet/pins.h"
#include "inventory/db.h"
#include "lib/backend.h"
#include "lib/exec.h"
#include "lib/node.h"
#include "lib/result.h"

/*
 * A short op (mode GF_FANOUT_ONCE) on node @n's open session @sess, on its
 * worker thread: fill slot->data (an object, already made) and return 0, or
 * return < 0 with @err filled. Set slot->no_retry once the BMC may have
 * acted. @ctx is read-only. The frame closes the session.
 */
typedef int (*gf_fanout_op)(const struct gf_backend *be, void *sess, const struct gf_node *n,
			    const void *ctx, struct gf_result *slot, struct gf_err *err);

enum gf_fanout_mode {
	GF_FANOUT_ONCE = 0, /* one session per node, one op (with executor retries) */
	GF_FANOUT_STREAM,   /* a long-lived op, its session opened again until the deadline */
};

/* What a stream op returns besides an error (see the contract above). */
enum {
	GF_FANOUT_DONE = 0,
	GF_FANOUT_RECONNECT = 1,
};

/* What a stream op is given: one open session of its node. */
struct gf_fanout_session {
	const struct gf_backend *be; /* the node's backend */
	void *sess;                  /* the open session; the frame closes it */
	const struct gf_node *node;
	size_t i;                       /* the node's index in the run */
	const struct gf_bmc_opts *opts; /* the run's knobs (the backend has them too), NULL: none */
	double deadline;                /* monotonic: the stream's end, every call ends by then */
	unsigned opened; /* sessions opened for this node so far, this one included */
};

/* A stream op: GF_FANOUT_DONE, GF_FANOUT_RECONNECT, or < 0 with @err. */
typedef int (*gf_fanout_stream_op)(const struct gf_fanout_session *s, const void *ctx,
				   struct gf_result *slot, struct gf_err *err);

struct gf_fanout {
	/* ---- given by the caller ---------------------------------------------- */
	const struct gf_node *nodes;
	size_t n;
	const struct gf_profile *const *profs; /* per node, resolved (NULL: none, nor entries) */
	const char *cache_dir;                 /* IPMI SDR caches, NULL: none */
	const char *cacert;             /* CA bundle for BMC certificates, NULL: system CAs */
	bool insecure;                  /* no certificate checks at all */
	bool tls_pin_new;               /* --tls-pin new: pin a certificate on first use */
	const struct gf_bmc_opts *opts; /* the verb's knobs for the backend, NULL: none */
	struct gf_exec_opts exec;       /* fanout, timeout (a node's deadline), retries,
						 * batch (staggered: no fleet ping) */
	enum gf_fanout_mode mode;
	gf_fanout_op op;            /* GF_FANOUT_ONCE */
	gf_fanout_stream_op stream; /* GF_FANOUT_STREAM */
	const void *ctx;            /* the op's, read-only */
	const char *action;         /* NULL, or put in every node's slot->data "action",
						 * also on failure */
	/*
	 * NULL, or true for a node whose BMC may be restarting when the run
	 * starts (update resume: a killed run left it mid-activation): it is
	 * not pinged, and its session is opened again each second while the
	 * connection is refused, dropped or times out, until its deadline.
	 */
	bool (*may_be_restarting)(const void *ctx, const struct gf_node *n);
	/*
	 * A second task per node, run at once with its BMC part under the
	 * node's one deadline (the sweep's SSH facts); task NULL: none. Then
	 * the slots are n * 2, node i's BMC part at 2i and its side part at
	 * 2i + 1; the side task is called with k = node index. A node without
	 * a BMC has an ok BMC part with nothing read (the side part is the
	 * node's). @wanted (NULL: every node) says which nodes have one: a node
	 * that has none waits for nothing.
	 */
	struct gf_fanout_side {
		gf_exec_task task;
		bool (*wanted)(void *ctx, size_t i);
		void *ctx;
	} side;
	double backoff_min, backoff_max; /* STREAM: seconds between sessions (0: 1 and 30) */
	/* NULL: each node's backend, chosen by fleet/bmc.c; else this one for all (tests: stubs). */
	const struct gf_backend *backend;
	/*
	 * NULL, or the sessions kept open from one run to the next over the
	 * same nodes (ONCE mode; events follow's rounds, see struct
	 * gf_fanout_keep), those of its first keep->n nodes (the others open
	 * and close theirs each run): a node with a kept session is not
	 * pinged and its op runs on it; an op that fails on a kept session is
	 * run once more on a fresh one (read-only ops only).
	 */
	struct gf_fanout_keep *keep;
	/*
	 * NULL, or where the sessions of backends that close_later are left
	 * open when their node is done (up to its cap), for the caller to
	 * close with gf_fanout_keep_release() once the results are out: the
	 * logout no longer holds back what is printed. Sessions past the cap
	 * are closed at once, as without it.
	 */
	struct gf_fanout_keep *later;
	/*
	 * The op only reads the power state into slot->data "power" (power
	 * status): when every node's backend can read all of them on the
	 * calling thread (gf_backend.power_get_many: one event loop, where a
	 * session takes a worker), the frame does that instead of the op, and
	 * sets "power" itself; a node the loop hands back runs the op on a
	 * worker afterwards, as any other. Not with a side part, kept
	 * sessions, staggering or restarting BMCs.
	 */
	bool reads_power;
	/*
	 * The caller's hooks, each NULL for none, all called on the calling
	 * thread with @ud. A hook's non-zero return is a code of the caller's
	 * own (cli: an exit code, already printed), > 0.
	 */
	struct gf_fanout_hooks {
		/*
		 * The inventory, opened on demand: only when pins are to be read
		 * (before the run) or stored (after it). NULL: no inventory, no
		 * pins read nor stored.
		 */
		int (*db)(void *ud, struct gf_db **ret);
		/* After the pins were read, before anything is sent; non-zero: nothing is. */
		int (*start)(void *ud, const struct gf_fanout *f);
		/* As each node finishes (with a side part: its parts' slots, the BMC's first). */
		void (*done)(void *ud, size_t i, const struct gf_result *slot);
		/* Once the executor returned, when start was called: all slots (some maybe unrun). */
		void (*finish)(void *ud, const struct gf_result *slots);
		void *ud;
	} hooks;

	/* ---- filled by gf_fanout_run(), freed by gf_fanout_release() ------------- */
	bool tls;                /* some node's BMC may show a certificate: set
						 * before hooks.start */
	struct gf_result *slots; /* n (or n * 2 with a side part); the caller may
						 * take them (then set NULL) */
	/* The certificates pinned on first use, in node order (into f->pins: live as long). */
	struct gf_fanout_pinned {
		size_t i;          /* the node */
		const char *seen;  /* what it showed, now its pin unless @other */
		const char *other; /* NULL, or the pin another run stored first: kept,
						 * and this run's certificate is suspect */
	} * pinned;
	size_t npinned;
	int pins_rc; /* 0; or not stored: hooks.db's code, or a GF_E_*
						 * with pins_err */
	struct gf_err pins_err;

	/* ---- the frame's own ---------------------------------------------------- */
	struct gf_pins pins;
	struct gf_bmc_run bmc;
	struct gf_bmc_gate *gate;
	bool *served; /* per node: read by the power loop (reads_power), not pinged again */
};

/*
 * Sessions kept across runs of the same nodes, one slot per node: what
 * the node's worker left open (and its backend), reused by the next run's
 * worker of that node. Only a node's worker touches its slot during a run,
 * the calling thread between runs.
 */
struct gf_fanout_keep {
	size_t n;                     /* the first n nodes' sessions (as keep: n <= the run's) */
	const struct gf_backend **be; /* per node, NULL: no session kept */
	void **sess;                  /* per node, open, closed by release */
	size_t cap;                   /* as struct gf_fanout's later: the most held (0: none) */
	atomic_size_t held;           /* as later: how many are */
};

void gf_fanout_keep_init(struct gf_fanout_keep *k, size_t n);
/*
 * @f's sessions held in @k until the results are out (struct gf_fanout's
 * later): @k made for f->n nodes, at most f->exec.fanout held. Call once
 * f->exec is set; gf_fanout_keep_release(@k) after printing.
 */
void gf_fanout_later(struct gf_fanout *f, struct gf_fanout_keep *k);
/* Close every kept session, many at once; @k may be initialised again. */
void gf_fanout_keep_release(struct gf_fanout_keep *k);

/*
 * Run @f (see the top of this file). Returns 0 when the run happened (the
 * nodes' results in f->slots, the pins in f->pinned and f->pins_rc); a
 * hook's code (> 0) when hooks.db or hooks.start stopped it (nothing sent);
 * or a negative GF_E_* with @err: the pins could not be read (nothing sent),
 * or the executor could not start its threads. Call from the main thread,
 * one run at a time; then gf_fanout_release() whatever it returned.
 */
int gf_fanout_run(struct gf_fanout *f, struct gf_err *err);

/*
 * Store the certificates @p's nodes showed on first use (gf_pins_first_use())
 * in @db, in one transaction, and list them in *@ret (n in *@ret_n; free
 * it; its strings live as long as @p). Returns 0 (nothing to store: *@ret
 * NULL), or a negative GF_E_* with @err. Calling thread only.
 */
int gf_fanout_pins_store(struct gf_db *db, const struct gf_node *nodes, struct gf_pins *p,
			 struct gf_fanout_pinned **ret, size_t *ret_n, struct gf_err *err);

/* Free what gf_fanout_run() filled (the slots unless taken); @f may be run again after. */
void gf_fanout_release(struct gf_fanout *f);

#endif
