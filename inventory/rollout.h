/*
 * Firmware rollouts in the inventory (update run, status, resume): the
 * rollout (catalog, options, state), each node's state and each of its
 * components', written as they change so that a run that stops (Ctrl-C,
 * kill -9, a lost machine) can be resumed. Main thread only.
 *
 * States of a component: not-started, running (sent, outcome unknown until
 * read back), done, skipped, failed (kind and the BMC's message),
 * pending-activation. A node's state is derived the same way, plus
 * unsupported (its protocol cannot update). A rollout is running, stopped
 * or finished. One enum and one table of names for all of them: the
 * engine, the store and the renderer use it.
 */
#ifndef GF_INV_ROLLOUT_H
#define GF_INV_ROLLOUT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "inventory/catalog.h"
#include "inventory/db.h"

enum gf_rollout_state {
	GF_RS_NOT_STARTED = 0,
	GF_RS_RUNNING, /* a node or item: sent, outcome unknown; a rollout: under way */
	GF_RS_DONE,
	GF_RS_SKIPPED,
	GF_RS_FAILED,
	GF_RS_PENDING,     /* "pending-activation": staged, waits for its activation */
	GF_RS_UNSUPPORTED, /* a node only: its BMC cannot update */
	GF_RS_STOPPED,     /* a rollout only: nodes were left */
	GF_RS_FINISHED,    /* a rollout only */
	GF_RS_INTERRUPTED, /* a node or item: stopped (Ctrl-C) once its image was with the BMC */
};

/* "not-started", "running", ..., "pending-activation", ...: the names stored and printed. */
const char *gf_rollout_state_name(enum gf_rollout_state s);
/* The inverse; -1 when @s names no state. */
int gf_rollout_state_parse(const char *s);
/* Done or skipped: nothing left to do, not an error. */
bool gf_rollout_state_ok(enum gf_rollout_state s);

/* What a rollout runs with; stored with it (the options column) and read back by resume. */
struct gf_rollout_opts {
	const char *component;      /* only components whose key matches (a glob), NULL: all */
	unsigned long canary;       /* nodes updated first and alone */
	unsigned long batch;        /* nodes updated at once, 0: the fan-out */
	unsigned long max_failures; /* no more nodes started once more than this failed */
	bool reboot;                /* restart hosts whose firmware needs it */
	double update_timeout;      /* a node's whole update, seconds */
	double readback_wait;       /* how long a new version may take to show, seconds */
};

/* The options as stored: a JSON object, sorted keys. Free with free(). */
char *gf_rollout_opts_format(const struct gf_rollout_opts *o);
struct gf_rollout;
/*
 * The options rollout @r was stored with, over @given (resume: --reboot may
 * be added, the rest is the rollout's). ret->component points into *@own
 * (free with free()).
 */
void gf_rollout_opts_stored(const struct gf_rollout *r, const struct gf_rollout_opts *given,
			    struct gf_rollout_opts *ret, char **own);

struct gf_rollout_item {
	char *component;
	char *from, *to; /* from: NULL when the node reported none */
	char *action;    /* "multipart-push", "http-push", "simple-update", "unsupported" */
	char *activation;
	enum gf_rollout_state state;
	char *kind, *message; /* failed: the error kind and message; else NULL */
	char *sha256; /* a plan: the SHA-256 of the image it pushes; NULL: none, or stored */
};

struct gf_rollout_node {
	char *node;
	unsigned batch; /* 1: the canary, then 2, 3, ...; nodes with nothing to do: 0 */
	enum gf_rollout_state state;
	char *kind, *message;
	double updated; /* epoch seconds of the last change */
	struct gf_rollout_item *items;
	size_t nitems;
};

struct gf_rollout {
	long id;
	double started, finished; /* finished: 0 while it runs or when it stopped */
	char *user;
	enum gf_rollout_state state; /* GF_RS_RUNNING, GF_RS_STOPPED, GF_RS_FINISHED */
	char *catalog_path;
	char *catalog_text; /* the catalog as it was read: resume plans with it */
	char *options;      /* JSON: component, canary, batch, max_failures, reboot, timeouts */
	struct gf_rollout_node *nodes;
	size_t n;
	/* Each image file of the catalog as planned (none: stored before they were recorded). */
	struct gf_catalog_record *images;
	size_t nimages;
};

void gf_rollout_release(struct gf_rollout *r);
void gf_rollout_node_release(struct gf_rollout_node *n);

/*
 * Who runs a rollout: a process of this machine, told apart from a later
 * one that got the same pid by its start time, and from any process of an
 * earlier boot by the boot id.
 */
struct gf_rollout_holder {
	long pid;
	long long start; /* clock ticks after boot (/proc/PID/stat) */
	char boot[40];   /* /proc/sys/kernel/random/boot_id */
};

/* This process. GF_E_IO when /proc cannot tell. */
int gf_rollout_holder_self(struct gf_rollout_holder *ret, struct gf_err *err);
/* Does @h still run (this boot, that pid, that start time)? */
bool gf_rollout_holder_alive(const struct gf_rollout_holder *h);
/*
 * GF_E_BUSY when one of @names belongs to a rollout whose holder is alive,
 * each such node named with that rollout and pid; else 0. Call it inside
 * the write transaction that claims (as gf_rollout_create and
 * gf_rollout_claim do).
 */
int gf_rollout_check_held(struct gf_db *db, const char *const *names, size_t n, struct gf_err *err);
/*
 * Claim rollout @id for this process and mark it running, in one
 * transaction with gf_rollout_check_held() over @names (the nodes it is
 * about to touch): GF_E_BUSY when another live process holds one.
 * gf_rollout_set_state() to stopped or finished lets go of it.
 */
int gf_rollout_claim(struct gf_db *db, long id, const char *const *names, size_t n,
		     struct gf_err *err);

/*
 * Store a new rollout with its nodes and items (one transaction); its id in
 * *ret_id. The rollout is claimed by this process in the same transaction:
 * GF_E_BUSY (nothing stored) when a node to update (state not-started) is
 * held by another live rollout.
 */
int gf_rollout_create(struct gf_db *db, const struct gf_rollout *r, long *ret_id,
		      struct gf_err *err);
/* Replace the state of @n nodes (and their items) of rollout @id, in one transaction. */
int gf_rollout_nodes_set(struct gf_db *db, long id, const struct gf_rollout_node *nodes, size_t n,
			 struct gf_err *err);
/* The rollout's own state (running, stopped, finished); finished stamps the time. */
int gf_rollout_set_state(struct gf_db *db, long id, enum gf_rollout_state state,
			 struct gf_err *err);
/* Rollout @id, or the last one when @id is 0; GF_E_NOTFOUND when there is none. */
int gf_rollout_load(struct gf_db *db, long id, struct gf_rollout *ret, struct gf_err *err);

/*
 * rollout_audit.c: complete the audit rows of rollout @id's runs left
 * pending (a kill -9 before their result; their intents name the rollout)
 * from each node's state as stored once @by ("update resume") asked its
 * BMC: "ok" for a node done, else its error kind, the state found in the
 * detail. Nodes still running or not started keep theirs. *ret_n: rows
 * completed. Main thread.
 */
int gf_rollout_audit_reconcile(struct gf_db *db, long id, const char *by, size_t *ret_n,
			       struct gf_err *err);

/*
 * The documents of a rollout, as `update` prints them: an item of a plan
 * {"component","from","to","action","activation","host_reboot"[,"sha256"]}, and a
 * stored node of rollout @id {"node","ok","rollout","batch","state",
 * "updates"[,"error"]}. New references. Thread-safe.
 */
json_t *gf_rollout_item_json(const struct gf_rollout_item *it);
json_t *gf_rollout_node_json(long id, const struct gf_rollout_node *n);

#endif
