/* gpufleet hardware: model, serials, UUID and FRU data as each node's BMC reports them. */
#include <stdlib.h>

#include "cli/bmc.h"
#include "cli/verbs.h"
#include "host/facts.h"

static int hardware_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		       const void *ctx, struct gf_result *slot, struct gf_err *err)
{
	struct gf_hardware h = {0};
	json_t *o;

	if (!be->hardware)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s cannot report the hardware of node '%s'", be->name, n->name);
	if (be->hardware(sess, &h, err) < 0)
		return GF_E_NODE;
	/* The documented shape: "system", "chassis", ... are members of the node object. */
	o = gf_hardware_to_json(&h);
	json_object_update(slot->data, o);
	json_decref(o);
	gf_hardware_release(&h);
	return 0;
}

static const struct gf_col cols[] = {
	{"system.manufacturer", "MANUFACTURER"},
	{"system.model", "MODEL"},
	{"system.serial", "SERIAL"},
	{"system.uuid", "UUID"},
	{"system.bios_version", "BIOS"},
};

int cmd_hardware(struct gf_cli *cli, int argc, char **argv)
{
	static const struct gf_render_spec spec = {.cols = cols,
						   .ncols = sizeof(cols) / sizeof(cols[0])};

	return cli_bmc_verb(cli, argc, argv, hardware_op, &spec);
}
