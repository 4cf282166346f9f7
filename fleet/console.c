/* Nodes' serial consoles (see fleet/console.h). */
#include "fleet/console.h"

#include "fleet/bmc.h"
#include "lib/cancel.h"
#include "lib/util.h"

#include <string.h>

/* The engines started (one per backend with a console; two are plenty). */
static const struct gf_console_ops *started[4];
static size_t nstarted;
static size_t room = 1;

int gf_console_start(size_t n, struct gf_err *err)
{
	room = n ? n : 1;
	return 0;
}

/* Start @ops' engine the first time a console of it opens. */
static int engine(const struct gf_console_ops *ops, struct gf_err *err)
{
	int rc;

	for (size_t i = 0; i < nstarted; i++)
		if (started[i] == ops)
			return 0;
	if (nstarted == NELEM(started))
		return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "too many console engines");
	rc = ops->start(room, err);
	if (rc < 0)
		return rc;
	started[nstarted++] = ops;
	return 0;
}

void gf_console_stop(void)
{
	while (nstarted)
		started[--nstarted]->stop();
}

int gf_console_ops_of(const struct gf_node *n, const struct gf_profile *prof, double deadline,
		      const gf_cancel_flag *cancel, const struct gf_console_ops **ret,
		      struct gf_err *err)
{
	const struct gf_profile *profs[1] = {prof};
	struct gf_bmc_run r = {.nodes = n, .profs = profs, .cancel = cancel};
	const struct gf_backend *be = gf_bmc_choose(&r, 0, deadline, err);

	if (!be)
		return GF_E_NODE;
	if (!be->console)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s has no serial console gpufleet can use (node '%s')",
				  be->title, n->name);
	*ret = be->console;
	return 0;
}

int gf_console_connect(const struct gf_node *n, const struct gf_profile *prof, bool steal,
		       bool keepalive, double deadline, const gf_cancel_flag *cancel,
		       struct gf_console_conn *ret, struct gf_err *err)
{
	const struct gf_console_ops *ops;
	struct gf_bmc_target t = {
		.node = n->name,
		.host = n->bmc,
		.port = n->bmc_port,
		.prof = prof,
		.deadline = deadline,
		.cancel = cancel,
	};
	struct gf_console *con;
	int rc;

	rc = gf_console_ops_of(n, prof, deadline, cancel, &ops, err);
	if (rc < 0)
		return rc;
	rc = engine(ops, err);
	if (rc < 0)
		return rc;
	rc = ops->open(&t, steal, keepalive, &con, err);
	if (rc < 0)
		return rc;
	for (;;) {
		enum gf_console_state st = ops->state(con, err);

		if (st == GF_CONSOLE_CONNECTED)
			break;
		if (st == GF_CONSOLE_FAILED) {
			ops->close(con);
			return GF_E_NODE;
		}
		if ((cancel && atomic_load(cancel)) || gf_monotime() >= deadline) {
			ops->close(con);
			return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					  cancel && atomic_load(cancel)
						  ? "interrupted while connecting to the serial "
						    "console of node '%s'"
						  : "the serial console of node '%s' did not connect "
						    "in time",
					  n->name);
		}
		gf_cancel_sleep_until(cancel, gf_monotime() + 0.05);
	}
	ret->ops = ops;
	ret->con = con;
	return 0;
}

void gf_console_close(struct gf_console_conn *c)
{
	if (c && c->con)
		c->ops->close(c->con);
	if (c)
		c->con = NULL;
}
