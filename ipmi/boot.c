/*
 * The boot override over IPMI: parameter 5 (boot flags) of Get/Set System
 * Boot Options. The BIOS reads it at the next boot; without the persistent
 * bit the BIOS (or the BMC, at power on or reset) clears the valid bit after
 * that one boot.
 *
 * Only the device, the valid, persistent and EFI bits are written; every
 * other flag (CMOS clear, keyboard lock, console redirection, ...) is sent as
 * zero, so a boot override never carries a stale CMOS clear along. When the
 * caller does not choose UEFI or legacy, the BIOS boot type the BMC already
 * holds is kept: writing "legacy" by default turns UEFI machines into legacy
 * PXE clients on many BMCs.
 */
#include "ipmi/internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <freeipmi/freeipmi.h>

/* IPMI boot device selector <-> the model; the first match wins on the way out. */
static const struct {
	uint8_t sel;
	enum gf_boot_dev dev;
} devices[] = {
	{IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_NO_OVERRIDE, GF_BOOT_NONE},
	{IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_PXE, GF_BOOT_PXE},
	{IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_HARD_DRIVE, GF_BOOT_DISK},
	{IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_BIOS_SETUP, GF_BOOT_BIOS},
	{IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_CD_DVD, GF_BOOT_CD},
};

struct flags {
	bool valid, persistent, efi;
	uint8_t device;
};

static int read_flags(struct ipmi_session *s, struct flags *ret, struct gf_err *err)
{
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_get_system_boot_options_boot_flags_rs);
	uint64_t valid, persistent, type, device;
	int rc;

	if (!rs)
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	if (ipmi_cmd_get_system_boot_options_boot_flags(s->ctx, 0, 0, rs) < 0) {
		rc = gf_ipmi_cmd_error(s, "get boot flags", rs, IPMI_NET_FN_CHASSIS_RQ, err);
		goto out;
	}
	if (FIID_OBJ_GET(rs, "boot_flags_valid", &valid) != 1 ||
	    FIID_OBJ_GET(rs, "boot_flags_persistent", &persistent) != 1 ||
	    FIID_OBJ_GET(rs, "bios_boot_type", &type) != 1 ||
	    FIID_OBJ_GET(rs, "boot_device", &device) != 1) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL, "bmc '%s' sent short boot flags",
				s->node);
		goto out;
	}
	*ret = (struct flags){
		.valid = valid != 0,
		.persistent = persistent != 0,
		.efi = type == IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_TYPE_EFI,
		.device = (uint8_t)device,
	};
	rc = 0;
out:
	fiid_obj_destroy(rs);
	return rc;
}

int gf_ipmi_boot_get(void *session, struct gf_boot *ret, struct gf_err *err)
{
	struct ipmi_session *s = session;
	struct gf_boot b = {.dev = GF_BOOT_NONE};
	struct flags f = {0};
	int rc = read_flags(s, &f, err);

	if (rc < 0)
		return rc;
	/* Flags without the valid bit are what the BIOS ignores: no override. */
	if (f.valid && f.device != IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_NO_OVERRIDE) {
		b.dev = GF_BOOT_OTHER;
		for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++)
			if (devices[i].sel == f.device)
				b.dev = devices[i].dev;
		b.persistent = f.persistent;
		b.mode = f.efi ? GF_BOOT_MODE_UEFI : GF_BOOT_MODE_LEGACY;
	}
	*ret = b;
	return 0;
}

int gf_ipmi_boot_set(void *session, const struct gf_boot *want, struct gf_err *err)
{
	struct ipmi_session *s = session;
	struct flags now = {0};
	fiid_obj_t rs;
	uint8_t sel = 0, efi;
	bool found = false, clear = want->dev == GF_BOOT_NONE;
	char what[48];
	int rc;

	for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
		if (devices[i].dev == want->dev) {
			sel = devices[i].sel;
			found = true;
			break;
		}
	}
	if (!found)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "boot device '%s' cannot be set over ipmi",
				  gf_boot_dev_name(want->dev));
	if (want->mode == GF_BOOT_MODE_UNSET && !clear) {
		rc = read_flags(s, &now, err);
		if (rc < 0)
			return rc;
	}
	efi = want->mode == GF_BOOT_MODE_UEFI || (want->mode == GF_BOOT_MODE_UNSET && now.efi)
		      ? IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_TYPE_EFI
		      : IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_TYPE_PC_COMPATIBLE;
	rs = fiid_obj_create(tmpl_cmd_set_system_boot_options_rs);
	if (!rs)
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	snprintf(what, sizeof(what), "set boot %s", gf_boot_dev_name(want->dev));
	if (ipmi_cmd_set_system_boot_options_boot_flags(
		    s->ctx, IPMI_SYSTEM_BOOT_OPTIONS_PARAMETER_VALID_UNLOCKED, efi,
		    want->persistent && !clear
			    ? IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_VALID_PERSISTENTLY
			    : IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_VALID_FOR_NEXT_BOOT,
		    clear ? IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_INVALID
			  : IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_VALID,
		    0, 0, sel, 0, 0, IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_CONSOLE_REDIRECTION_DEFAULT,
		    0, 0, 0, IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_FIRMWARE_BIOS_VERBOSITY_DEFAULT, 0,
		    IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAGS_SET_MUX_TO_RECOMENDED_AT_END_OF_POST, 0, 0,
		    rs) < 0)
		rc = gf_ipmi_cmd_error(s, what, rs, IPMI_NET_FN_CHASSIS_RQ, err);
	else
		rc = 0;
	fiid_obj_destroy(rs);
	return rc;
}
