/* gpufleet firmware: the firmware components each node's BMC reports. */
#include <stdlib.h>

#include "cli/bmc.h"
#include "cli/verbs.h"

static int firmware_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		       const void *ctx, struct gf_result *slot, struct gf_err *err)
{
	struct gf_component_list l = {0};

	if (!be->firmware)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s cannot report firmware of node '%s'", be->name, n->name);
	if (be->firmware(sess, &l, err) < 0)
		return GF_E_NODE;
	json_object_set_new(slot->data, "components", gf_components_to_json(&l));
	gf_component_list_release(&l);
	return 0;
}

static const struct gf_col cols[] = {
	{"key", "COMPONENT"},
	{"name", "NAME"},
	{"version", "VERSION"},
};

int cmd_firmware(struct gf_cli *cli, int argc, char **argv)
{
	static const struct gf_render_spec spec = {.cols = cols,
						   .ncols = sizeof(cols) / sizeof(cols[0]),
						   .rows_key = "components"};

	/* One read where the BMC expands: the UpdateService with its inventory. */
	return cli_bmc_verb(cli, argc, argv, firmware_op, &spec, &cli_bmc_one_read);
}
