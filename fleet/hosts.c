/* The host facts of many nodes: one executor run, typed results through a callback. */
#include "fleet/hosts.h"

#include <stdlib.h>

#include "host/ssh.h"
#include "lib/buf.h"

/* Node i's, written by its worker only (each attempt starts afresh). */
struct host_part {
	enum gf_hosts_status status;
	struct gf_hostfacts facts;
};

struct run {
	struct gf_hosts *h;
	struct host_part *parts; /* per node */
};

static void host_task(void *vctx, size_t i, double deadline, struct gf_result *slot)
{
	const struct run *r = vctx;
	const struct gf_hosts *h = r->h;
	const struct gf_node *n = &h->nodes[i];
	struct host_part *p = &r->parts[i];
	struct gf_err err = {0};
	int rc;

	gf_hostfacts_release(&p->facts);
	p->status = GF_HOSTS_FAILED;
	if (h->local) {
		struct gf_host_runner runner = {.run = gf_host_run_local,
						.cancel = gf_exec_cancel_flag()};

		rc = gf_host_collect(&runner, deadline, &p->facts, &err);
	} else if (!n->ssh) {
		rc = gf_err_set(&err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"node '%s' has no ssh address (nodes add --ssh)", n->name);
	} else {
		struct gf_ssh_target target = {
			.node = n->name,
			.spec = n->ssh,
			.prof = h->profs[i],
			.accept_new = h->accept_new,
			.deadline = deadline,
			.cancel = gf_exec_cancel_flag(),
		};

		rc = gf_host_facts_ssh(&target, &p->facts, &err);
	}
	if (rc < 0) {
		gf_result_fail(slot, &err);
		return;
	}
	/* A host that answered in part: what it answered is kept, the node fails as partial. */
	rc = gf_hostfacts_partial_err(&p->facts, &err);
	p->status = rc < 0 ? GF_HOSTS_PARTIAL : GF_HOSTS_OK;
	if (rc < 0)
		gf_result_fail(slot, &err);
	else
		slot->ok = true;
}

/* Hand node @i over, then free what it read. */
static void node_done(void *ud, size_t i, const struct gf_result *slot)
{
	struct run *r = ud;
	struct host_part *p = &r->parts[i];

	(void)slot;
	if (r->h->done)
		r->h->done(r->h->ud, i, &r->h->slots[i], p->status,
			   p->status >= GF_HOSTS_PARTIAL ? &p->facts : NULL);
	gf_hostfacts_release(&p->facts);
}

int gf_hosts_run(struct gf_hosts *h, struct gf_err *err)
{
	struct run r = {.h = h};
	size_t n = h->n;
	int rc;

	if (!h->local && (rc = gf_ssh_global_init(err)) < 0)
		return rc;
	r.parts = gf_xcalloc(n ? n : 1, sizeof(*r.parts));
	h->slots = gf_xcalloc(n ? n : 1, sizeof(*h->slots));
	rc = gf_exec_run(&h->exec, n, host_task, &r, h->slots, node_done, &r, err);
	for (size_t i = 0; i < n; i++)
		gf_hostfacts_release(&r.parts[i].facts);
	free(r.parts);
	if (!h->local)
		gf_ssh_global_cleanup();
	return rc;
}

void gf_hosts_release(struct gf_hosts *h)
{
	for (size_t i = 0; h->slots && i < h->n; i++)
		gf_result_release(&h->slots[i]);
	free(h->slots);
	h->slots = NULL;
}
