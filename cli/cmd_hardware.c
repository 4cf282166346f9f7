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

/* --gpus: one row per GPU, its health as the BMC says (JSON is the same either way). */
static const struct gf_col gpu_cols[] = {
	{"index", "GPU"},
	{"model", "MODEL"},
	{"serial", "SERIAL"},
	{"bmc_health.health", "HEALTH"},
	{"bmc_health.ecc.uncorrected", "ECC-UNCORR"},
	{"bmc_health.row_remapping.pending", "REMAP-PENDING"},
	{"bmc_health.nvlinks.up", "NVLINK-UP"},
	{"bmc_health.nvlinks.down", "NVLINK-DOWN"},
};

static const struct cli_opt hardware_opts[] = {
	{{"gpus", no_argument, NULL, 'g'},
	 NULL,
	 "one row per GPU: its health, ECC, row remapping and NVLinks as the BMC says"},
};

static const struct gf_render_spec gpu_spec = {.cols = gpu_cols,
					       .ncols = sizeof(gpu_cols) / sizeof(gpu_cols[0]),
					       .rows_key = "gpus"};

/* --gpus: the GPUs' rows instead of the node's. */
static int on_opt(void *ud, size_t idx, const char *arg)
{
	(void)idx;
	(void)arg;
	*(const struct gf_render_spec **)ud = &gpu_spec;
	return 0;
}

int cmd_hardware(struct gf_cli *cli, int argc, char **argv)
{
	static const struct gf_render_spec node_spec = {.cols = cols,
							.ncols = sizeof(cols) / sizeof(cols[0])};
	const struct gf_render_spec *spec = &node_spec;

	return cli_bmc_verb_opts(cli, argc, argv, hardware_opts,
				 sizeof(hardware_opts) / sizeof(hardware_opts[0]), on_opt,
				 hardware_op, &spec);
}
