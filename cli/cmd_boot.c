/*
 * gpufleet boot: the boot device override each node's BMC holds.
 *
 * Setting one is a write followed by a read-back: what the node reports is
 * what the BMC holds afterwards, not what was asked. A BMC that answers the
 * write with success but holds something else (an old firmware that ignores
 * the persistent or EFI bit, a BMC that drops the override) fails that node
 * with kind "refused", its "boot" member saying what it holds: a provisioning
 * script must not go on to power-cycle into the wrong device. Every set is
 * written to the audit log, like power actions.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/bmc.h"
#include "cli/verbs.h"
#include "lib/buf.h"

enum { B_PERSISTENT, B_UEFI, B_LEGACY, B_DRY_RUN };

static const struct cli_opt boot_opts[] = {
	[B_PERSISTENT] = {{"persistent", no_argument, NULL, 0},
			  NULL,
			  "keep the override for every boot, not only the next"},
	[B_UEFI] = {{"uefi", no_argument, NULL, 0}, NULL, "boot the device in UEFI mode"},
	[B_LEGACY] = {{"legacy", no_argument, NULL, 0},
		      NULL,
		      "boot the device in legacy (BIOS) mode"},
	[B_DRY_RUN] = {{"dry-run", no_argument, NULL, 'n'},
		       NULL,
		       "show what would be done, send nothing"},
};

struct boot_args {
	bool persistent, uefi, legacy, dry_run;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct boot_args *a = ud;

	switch (idx) {
	case B_PERSISTENT: a->persistent = true; return 0;
	case B_UEFI: a->uefi = true; return 0;
	case B_LEGACY: a->legacy = true; return 0;
	case B_DRY_RUN: a->dry_run = true; return 0;
	default: return 0;
	}
}

struct boot_ctx {
	bool status;
	struct gf_boot want;
};

static void describe(const struct gf_boot *b, char *buf, size_t size)
{
	const char *mode = gf_boot_mode_name(b->mode);

	if (b->dev == GF_BOOT_NONE) {
		snprintf(buf, size, "none");
		return;
	}
	snprintf(buf, size, "%s (%s%s%s)", gf_boot_dev_name(b->dev),
		 b->persistent ? "persistent" : "next boot only", mode ? ", " : "",
		 mode ? mode : "");
}

/* What the BMC holds is what was asked (a mode not asked for is not compared). */
static bool holds(const struct gf_boot *want, const struct gf_boot *got)
{
	if (want->dev != got->dev)
		return false;
	if (want->dev == GF_BOOT_NONE)
		return true;
	return want->persistent == got->persistent &&
	       (want->mode == GF_BOOT_MODE_UNSET || want->mode == got->mode);
}

static int boot_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		   const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct boot_ctx *ctx = vctx;
	struct gf_boot got = {0};
	char asked[64], held[64];

	if (!be->boot_get || (!ctx->status && !be->boot_set))
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s cannot %s the boot device of node '%s'", be->name,
				  ctx->status ? "read" : "set", n->name);
	if (!ctx->status) {
		json_object_set_new(slot->data, "requested", gf_boot_to_json(&ctx->want));
		slot->no_retry = true; /* from here on the BMC may have acted */
		if (be->boot_set(sess, &ctx->want, err) < 0)
			return GF_E_NODE;
	}
	if (be->boot_get(sess, &got, err) < 0)
		return GF_E_NODE;
	json_object_set_new(slot->data, "boot", gf_boot_to_json(&got));
	if (!ctx->status && !holds(&ctx->want, &got)) {
		describe(&ctx->want, asked, sizeof(asked));
		describe(&got, held, sizeof(held));
		return gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
				  "bmc of node '%s' accepted boot %s but holds %s", n->name, asked,
				  held);
	}
	return 0;
}

static const struct gf_col status_cols[] = {
	{"boot.device", "DEVICE"},
	{"boot.persistent", "PERSISTENT"},
	{"boot.mode", "MODE"},
};
static const struct gf_col action_cols[] = {
	{"action", "ACTION"},
	{"boot.device", "DEVICE"},
	{"boot.persistent", "PERSISTENT"},
	{"boot.mode", "MODE"},
};

/* What a sub-verb sets; "none" cancels an override. */
struct boot_sub {
	bool status;
	enum gf_boot_dev dev;
};

static int boot_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		    int nargs)
{
	const struct boot_sub *bs = sv->data;
	const struct boot_args *a = ud;
	struct boot_ctx ctx = {.status = bs->status, .want.dev = bs->dev};
	struct gf_node *nodes = NULL;
	struct gf_render_spec spec = {0};
	struct cli_bmc_run run = {0};
	struct gf_buf audit = GF_BUF_INIT;
	const char *sub = sv->name;
	int rc;
	size_t n = 0;

	if (a->uefi && a->legacy) {
		cli_error("--uefi and --legacy exclude each other");
		return GF_EXIT_USAGE;
	}
	if ((ctx.status || ctx.want.dev == GF_BOOT_NONE) &&
	    (a->persistent || a->uefi || a->legacy || (ctx.status && a->dry_run))) {
		cli_error("boot %s takes no --persistent, --uefi or --legacy%s", sub,
			  ctx.status ? " or --dry-run" : "");
		return GF_EXIT_USAGE;
	}
	ctx.want.persistent = a->persistent;
	ctx.want.mode = a->uefi     ? GF_BOOT_MODE_UEFI
			: a->legacy ? GF_BOOT_MODE_LEGACY
				    : GF_BOOT_MODE_UNSET;
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	spec.cols = ctx.status ? status_cols : action_cols;
	spec.ncols = ctx.status ? sizeof(status_cols) / sizeof(status_cols[0])
				: sizeof(action_cols) / sizeof(action_cols[0]);
	if (a->dry_run) {
		rc = cli_dry_run(cli, sub, nodes, n, &spec);
		goto out;
	}
	gf_buf_adds(&audit, "boot ");
	gf_buf_adds(&audit, sub);
	if (a->persistent)
		gf_buf_adds(&audit, " persistent");
	if (a->uefi || a->legacy)
		gf_buf_adds(&audit, a->uefi ? " uefi" : " legacy");
	run = (struct cli_bmc_run){
		.cli = cli,
		.nodes = nodes,
		.n = n,
		.op = boot_op,
		.ctx = &ctx,
		.spec = &spec,
		.action = ctx.status ? NULL : sub,
		.audit = ctx.status ? NULL : gf_buf_str(&audit),
		.opts = ctx.status ? &cli_bmc_one_read : NULL, /* its Systems, expanded */
	};
	rc = cli_bmc_fanout(&run);
out:
	gf_buf_release(&audit);
	cli_bmc_release(&run);
	gf_nodes_free(nodes, n);
	return rc;
}

static const struct cli_subverb subs[] = {
	{"status", boot_run, &(const struct boot_sub){true, GF_BOOT_NONE}, 0},
	{"pxe", boot_run, &(const struct boot_sub){false, GF_BOOT_PXE}, 0},
	{"disk", boot_run, &(const struct boot_sub){false, GF_BOOT_DISK}, 0},
	{"bios", boot_run, &(const struct boot_sub){false, GF_BOOT_BIOS}, 0},
	{"cd", boot_run, &(const struct boot_sub){false, GF_BOOT_CD}, 0},
	{"none", boot_run, &(const struct boot_sub){false, GF_BOOT_NONE}, 0},
};

int cmd_boot(struct gf_cli *cli, int argc, char **argv)
{
	struct boot_args a = {0};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, boot_opts, sizeof(boot_opts) / sizeof(boot_opts[0]), on_opt,
		       &a, &args, &nargs);
	if (rc)
		return rc;
	return cli_subverb_run(cli, subs, sizeof(subs) / sizeof(subs[0]), &a, args, nargs);
}
