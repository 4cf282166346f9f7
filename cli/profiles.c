/* Credentials: the file, loaded on demand, and each node's profile. */
#include "cli/common.h"

#include <stdlib.h>

#include "fleet/bmc.h"
#include "lib/util.h"

/*
 * The file is checked whole as it is read, the backends' words included,
 * whatever the verb and the nodes' protocols.
 */
int cli_creds(struct gf_cli *cli)
{
	struct gf_err err = {0};

	if (cli->creds_loaded)
		return 0;
	if (gf_creds_load(cli->creds_path, cli->creds_explicit, gf_bmc_profile_check, &cli->creds,
			  &err) < 0)
		return cli_fail(&err);
	cli->creds_loaded = true;
	return 0;
}

int cli_profiles(struct gf_cli *cli, enum cli_profile_use use, const struct gf_node *nodes,
		 size_t n, const struct gf_profile ***ret)
{
	const struct gf_profile **profs;
	struct gf_err err = {0};
	int rc = cli_creds(cli);

	if (rc)
		return rc;
	profs = gf_xcalloc(n ? n : 1, sizeof(*profs));
	for (size_t i = 0; i < n; i++) {
		bool ssh = use == CLI_PROFILE_SSH;

		if (!(ssh ? nodes[i].ssh : nodes[i].bmc))
			continue;
		if ((ssh ? gf_creds_resolve_ssh : gf_creds_resolve)(&cli->creds, nodes[i].profile,
								    &profs[i], &err) < 0) {
			free(profs);
			return cli_fail(&err);
		}
	}
	*ret = profs;
	return 0;
}
