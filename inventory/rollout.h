/*
 * Firmware rollouts in the inventory (update run, status, resume): the
 * rollout (catalog, options, state), each node's state and each of its
 * components', written as they change so that a run that stops (Ctrl-C,
 * kill -9, a lost machine) can be resumed. Main thread only.
 *
 * States of a component: not-started, running (sent, outcome unknown until
 * read back), done, skipped, failed (kind and the BMC's message),
 * pending-activation. A node's state is derived the same way, plus
 * unsupported (its protocol cannot update).
 */
#ifndef GF_INV_ROLLOUT_H
#define GF_INV_ROLLOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory/db.h"

struct gf_rollout_item {
	char *component;
	char *from, *to;        /* from: NULL when the node reported none */
	char *action;           /* "multipart-push", "http-push", "simple-update", "unsupported" */
	char *activation;
	char *state;
	char *kind, *message;   /* failed: the error kind and message; else NULL */
};

struct gf_rollout_node {
	char *node;
	unsigned batch;         /* 0: the canary, then 1, 2, ...; nodes with nothing to do: 0 */
	char *state;
	char *kind, *message;
	double updated;         /* epoch seconds of the last change */
	struct gf_rollout_item *items;
	size_t nitems;
};

struct gf_rollout {
	long id;
	double started, finished;  /* finished: 0 while it runs or when it stopped */
	char *user;
	char *state;               /* "running", "stopped", "finished" */
	char *catalog_path;
	char *catalog_text;        /* the catalog as it was read: resume plans with it */
	char *options;             /* JSON: component, canary, batch, max_failures, reboot, timeouts */
	struct gf_rollout_node *nodes;
	size_t n;
};

void gf_rollout_release(struct gf_rollout *r);
void gf_rollout_node_release(struct gf_rollout_node *n);

/* Store a new rollout with its nodes and items (one transaction); its id in *ret_id. */
int gf_rollout_create(struct gf_db *db, const struct gf_rollout *r, long *ret_id,
		      struct gf_err *err);
/* Replace the state of @n nodes (and their items) of rollout @id, in one transaction. */
int gf_rollout_nodes_set(struct gf_db *db, long id, const struct gf_rollout_node *nodes,
			 size_t n, struct gf_err *err);
/* The rollout's own state ("running", "stopped", "finished"); finished stamps the time. */
int gf_rollout_set_state(struct gf_db *db, long id, const char *state, struct gf_err *err);
/* Rollout @id, or the last one when @id is 0; GF_E_NOTFOUND when there is none. */
int gf_rollout_load(struct gf_db *db, long id, struct gf_rollout *ret, struct gf_err *err);

#endif
