/* The inventory and its registry, opened on demand, and TARGETS resolved into nodes. */
#include "cli/common.h"

#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/nodeset.h"
#include "lib/util.h"

int cli_db(struct gf_cli *cli, struct gf_db **ret)
{
	struct gf_err err = {0};

	if (!cli->db) {
		if (gf_db_open(cli->db_path, &cli->db, &err) < 0) {
			cli_fail(&err);
			return GF_EXIT_USAGE; /* a DB that cannot be opened is a configuration error */
		}
	}
	*ret = cli->db;
	return 0;
}

int cli_registry(struct gf_cli *cli)
{
	struct gf_err err = {0};
	struct gf_db *db;
	int rc;

	if (cli->reg_loaded)
		return 0;
	rc = cli_db(cli, &db);
	if (rc)
		return rc;
	if (gf_db_nodes_load(db, &cli->reg, &cli->nreg, &err) < 0)
		return cli_fail(&err);
	cli->reg_loaded = true;
	return 0;
}

static int group_members(void *ud, const char *group, struct gf_nodeset *out, struct gf_err *err)
{
	const struct gf_cli *cli = ud;
	bool any = false;

	for (size_t i = 0; i < cli->nreg; i++) {
		for (size_t g = 0; g < cli->reg[i].ngroups; g++) {
			if (strcmp(cli->reg[i].groups[g], group) == 0) {
				gf_nodeset_add(out, cli->reg[i].name);
				any = true;
			}
		}
	}
	if (!any)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "unknown group '@%s'", group);
	return 0;
}

/* The registered node @name, NULL when none; @order is gf_node_name_order(@reg). */
static const struct gf_node *find_node(const struct gf_names *reg, const size_t *order,
				       const char *name)
{
	size_t at = gf_node_name_find(reg, order, name);

	return at == GF_NAME_NONE ? NULL : &((const struct gf_node *)reg->base)[at];
}

static char *join_args(char **args, int nargs)
{
	struct gf_buf b = GF_BUF_INIT;

	for (int i = 0; i < nargs; i++) {
		if (i)
			gf_buf_addc(&b, ',');
		gf_buf_adds(&b, args[i]);
	}
	return gf_buf_detach(&b);
}

static int adhoc_targets(struct gf_cli *cli, struct gf_node **ret, size_t *ret_n)
{
	struct gf_nodeset set;
	struct gf_err err = {0};
	const struct gf_backend *proto = NULL;
	struct gf_node *nodes;

	if (cli->protocol && gf_proto_parse(cli->protocol, &proto, &err) < 0)
		return cli_fail(&err);
	if (gf_nodeset_parse(cli->hosts, NULL, NULL, &set, &err) < 0)
		return cli_fail(&err);
	nodes = gf_xcalloc(set.n, sizeof(*nodes));
	for (size_t i = 0; i < set.n; i++) {
		if (gf_hostport_parse(set.names[i], &nodes[i].bmc, &nodes[i].bmc_port, &err) < 0) {
			gf_nodes_free(nodes, i);
			gf_nodeset_release(&set);
			return cli_fail(&err);
		}
		nodes[i].name = gf_xstrdup(set.names[i]);
		nodes[i].protocol = proto;
		nodes[i].profile = cli->profile ? gf_xstrdup(cli->profile) : NULL;
	}
	*ret = nodes;
	*ret_n = set.n;
	gf_nodeset_release(&set);
	return 0;
}

int cli_target_names(struct gf_cli *cli, char **args, int nargs, struct gf_nodeset *ret)
{
	struct gf_err err = {0};
	char *expr;
	int rc = cli_registry(cli);

	if (rc)
		return rc;
	expr = join_args(args, nargs);
	rc = gf_nodeset_parse(expr, group_members, cli, ret, &err);
	free(expr);
	return rc < 0 ? cli_fail(&err) : 0;
}

int cli_targets(struct gf_cli *cli, char **args, int nargs, bool all_if_empty, struct gf_node **ret,
		size_t *ret_n)
{
	struct gf_nodeset set;
	struct gf_buf unknown = GF_BUF_INIT;
	size_t nunknown = 0, *order;
	struct gf_node *nodes;
	struct gf_names reg = {NULL, 0, sizeof(struct gf_node), offsetof(struct gf_node, name)};
	int rc;

	if (cli->hosts) {
		if (nargs > 0) {
			cli_error("give either -H HOSTS or registered TARGETS, not both");
			return GF_EXIT_USAGE;
		}
		return adhoc_targets(cli, ret, ret_n);
	}
	rc = cli_registry(cli);
	if (rc)
		return rc;
	if (nargs == 0) {
		if (!all_if_empty) {
			cli_error("no targets given; name nodes (e.g. 'gpu[01-04]' or '@rack1') or use -H");
			return GF_EXIT_USAGE;
		}
		nodes = gf_xcalloc(cli->nreg, sizeof(*nodes));
		for (size_t i = 0; i < cli->nreg; i++)
			gf_node_copy(&nodes[i], &cli->reg[i]);
		*ret = nodes;
		*ret_n = cli->nreg;
		return 0;
	}
	rc = cli_target_names(cli, args, nargs, &set);
	if (rc)
		return rc;
	reg.base = cli->reg;
	reg.n = cli->nreg;
	order = gf_node_name_order(&reg);
	for (size_t i = 0; i < set.n; i++) {
		if (find_node(&reg, order, set.names[i]))
			continue;
		if (nunknown < 10)
			gf_buf_addf(&unknown, "%s'%s'", nunknown ? ", " : "", set.names[i]);
		nunknown++;
	}
	if (nunknown) {
		char *folded;
		struct gf_nodeset miss = GF_NODESET_INIT;

		for (size_t i = 0; i < set.n; i++)
			if (!find_node(&reg, order, set.names[i]))
				gf_nodeset_add(&miss, set.names[i]);
		folded = gf_nodeset_collapse((const char *const *)miss.names, miss.n);
		cli_error("unknown node%s '%s' (not in the registry; see 'gpufleet nodes list')",
			  nunknown > 1 ? "s" : "", folded);
		free(folded);
		gf_nodeset_release(&miss);
		gf_buf_release(&unknown);
		gf_nodeset_release(&set);
		free(order);
		return GF_EXIT_USAGE;
	}
	gf_buf_release(&unknown);
	nodes = gf_xcalloc(set.n ? set.n : 1, sizeof(*nodes));
	for (size_t i = 0; i < set.n; i++)
		gf_node_copy(&nodes[i], find_node(&reg, order, set.names[i]));
	*ret = nodes;
	*ret_n = set.n;
	gf_nodeset_release(&set);
	free(order);
	return 0;
}

void cli_release(struct gf_cli *cli)
{
	if (cli->reg)
		gf_nodes_free(cli->reg, cli->nreg);
	if (cli->creds_loaded)
		gf_creds_release(&cli->creds);
	gf_creds_forget_env();
	gf_db_close(cli->db);
}

int cli_targets_db(struct gf_cli *cli, char **args, int nargs, struct gf_node **ret, size_t *ret_n,
		   struct gf_db **db)
{
	int rc = cli_targets(cli, args, nargs, false, ret, ret_n);

	if (!rc && (rc = cli_db(cli, db))) {
		gf_nodes_free(*ret, *ret_n);
		*ret = NULL;
		*ret_n = 0;
	}
	return rc;
}
