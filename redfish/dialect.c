/*
 * Vendor dialects as data: one table per vendor. A new BMC family, or a
 * vendor's new naming, is a new row here, not a new branch in the walkers.
 *
 * Firmware keys are lower case and dotted, the component first and what of
 * it second ("gpu3.firmware", "bmc.backup", "psu2"); numbers are the BMC's
 * own (GPU1..8 and SXM_1..8 are 1-based, DGX PSU_0..5 0-based), so a key is
 * stable across BMC releases of one vendor.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "lib/compkey.h"
#include "redfish/rf.h"

/* ---- Dell iDRAC: Ids are "<State>-<ComponentId>-<Version>__<FQDD>", rules match the FQDD */

static const struct rf_fw_state dell_states[] = {
	{"Installed", ""},
	{"Current", ".current"},
	{"Previous", ".previous"},
	{"Available", ".available"},
	{NULL, NULL},
};

static const struct rf_fw_rule dell_fw[] = {
	{"iDRAC.Embedded.#-#", RF_ON_ID, "bmc", "bmc", NULL},
	{"BIOS.Setup.#-#", RF_ON_ID, "bios", "bios", NULL},
	{"CPLD.Embedded.#", RF_ON_ID, "cpld", "cpld", NULL},
	{"PSU.Slot.#", RF_ON_ID, "psu#", "psu", NULL},
	{"NIC.Integrated.#-#-#", RF_ON_ID, "nic.integrated#.#.#", "nic", NULL},
	{"NIC.Embedded.#-#-#", RF_ON_ID, "nic.embedded#.#.#", "nic", NULL},
	{"NIC.Slot.#-#-#", RF_ON_ID, "nic.slot#.#.#", "nic", NULL},
	{"NIC.Slot.#-#", RF_ON_ID, "nic.slot#.#", "nic", NULL},
	{"InfiniBand.Slot.#-#", RF_ON_ID, "nic.slot#.#", "nic", NULL},
	{"Video.Slot.#-#", RF_ON_ID, "gpu.slot#.firmware", "gpu", NULL},
	{"Disk.Bay.#:Enclosure.Internal.#-#", RF_ON_ID, "drive.bay#", "other", NULL},
	{"RAID.Backplane.Firmware.#", RF_ON_ID, "backplane#", "other", NULL},
	{"TPM.Integrated.#-#", RF_ON_ID, "tpm", "other", NULL},
	{"ServiceModule.Embedded.#", RF_ON_ID, "ism", "other", NULL},
	{"USC.Embedded.#:LC.Embedded.#", RF_ON_ID, "lc", "bmc", NULL},
	{"DriverPack.Embedded.#:LC.Embedded.#", RF_ON_ID, "lc.driverpack", "other", NULL},
	{"Diagnostics.Embedded.#:LC.Embedded.#", RF_ON_ID, "lc.diagnostics", "other", NULL},
	{NULL, 0, NULL, NULL, NULL},
};

static const char *const dell_vendors[] = {"Dell", NULL};
static const char *const dell_logs[] = {"Sel", "SEL", NULL};

/* ---- HPE iLO: Ids are numbers, the meaning is in Name; '@' and '$' from Oem.Hpe.DeviceContext */

static const struct rf_fw_rule hpe_fw[] = {
	{"iLO #", RF_ON_NAME, "bmc", "bmc", NULL},
	{"System ROM", RF_ON_NAME, "bios", "bios", NULL},
	{"Redundant System ROM", RF_ON_NAME, "bios.redundant", "bios", NULL},
	{"System Programmable Logic Device", RF_ON_NAME, "cpld", "cpld", NULL},
	{"PCIe Riser # Programmable Logic Device", RF_ON_NAME, "cpld.riser#", "cpld", NULL},
	{"Power Management Controller Firmware", RF_ON_NAME, "pmc", "other", NULL},
	{"Power Management Controller FW Bootloader", RF_ON_NAME, "pmc.bootloader", "other", NULL},
	{"Power Supply Firmware", RF_ON_NAME, "psu@", "psu", NULL},
	{"Intelligent Platform Abstraction Data", RF_ON_NAME, "ipad", "other", NULL},
	{"Intelligent Provisioning", RF_ON_NAME, "provisioning", "other", NULL},
	{"TPM Firmware", RF_ON_NAME, "tpm", "other", NULL},
	{"Embedded Video Controller", RF_ON_NAME, "video", "other", NULL},
	{"HPE Smart Storage Energy Pack # Firmware", RF_ON_NAME, "energypack#", "other", NULL},
	{"HPE Smart Array *", RF_ON_NAME, "raid.$", "other", NULL},
	{"NVMe Drive", RF_ON_NAME, "drive.$", "other", NULL},
	{"*SSD", RF_ON_NAME, "drive.$", "other", NULL},
	{"*HDD", RF_ON_NAME, "drive.$", "other", NULL},
	{"* BP", RF_ON_NAME, "backplane.$", "other", NULL},
	{"*NIC*", RF_ON_NAME, "nic.$", "nic", NULL},
	{"Intel Eth*", RF_ON_NAME, "nic.$", "nic", NULL},
	{"*Ethernet*", RF_ON_NAME, "nic.$", "nic", NULL},
	{"*Adapter*", RF_ON_NAME, "nic.$", "nic", NULL},
	{NULL, 0, NULL, NULL, NULL},
};

static const char *const hpe_vendors[] = {"HPE", "Hpe", "Hewlett Packard", NULL};
static const char *const hpe_logs[] = {"IML", "IEL", "Event", NULL};

/* ---- Lenovo XCC */

static const struct rf_fw_rule lenovo_fw[] = {
	{"BMC-Primary", RF_ON_ID, "bmc", "bmc", NULL},
	{"BMC-Backup", RF_ON_ID, "bmc.backup", "bmc", NULL},
	{"BMC-Primary-Pending", RF_ON_ID, "bmc.pending", "bmc", NULL},
	{"UEFI", RF_ON_ID, "bios", "bios", NULL},
	{"UEFI-Pending", RF_ON_ID, "bios.pending", "bios", NULL},
	{"UEFI-Backup", RF_ON_ID, "bios.backup", "bios", NULL},
	{"LXPM", RF_ON_ID, "lxpm", "other", NULL},
	{"LXPMWindowsDriver", RF_ON_ID, "lxpm.windows-drivers", "other", NULL},
	{"LXPMLinuxDriver", RF_ON_ID, "lxpm.linux-drivers", "other", NULL},
	{"GPU#", RF_ON_ID, "gpu#.firmware", "gpu", NULL},
	{"PSU#", RF_ON_ID, "psu#", "psu", NULL},
	{"Disk#", RF_ON_ID, "drive#", "other", NULL},
	{"Slot_#.Bundle", RF_ON_ID, "slot#.bundle", NULL, NULL},
	{"Slot_#.#", RF_ON_ID, "slot#.#", NULL, NULL},
	{NULL, 0, NULL, NULL, NULL},
};

static const char *const lenovo_vendors[] = {"Lenovo", NULL};
/* The XCC's SEL often has no Entries over Redfish; PlatformLog holds the same events. */
static const char *const lenovo_logs[] = {"SEL", "PlatformLog", NULL};

/* ---- Supermicro */

static const struct rf_fw_rule supermicro_fw[] = {
	{"BMC", RF_ON_ID, "bmc", "bmc", NULL},
	{"Backup_BMC", RF_ON_ID, "bmc.backup", "bmc", NULL},
	{"Golden_BMC", RF_ON_ID, "bmc.golden", "bmc", NULL},
	{"Staging_BMC", RF_ON_ID, "bmc.staging", "bmc", NULL},
	{"BIOS", RF_ON_ID, "bios", "bios", NULL},
	{"Backup_BIOS", RF_ON_ID, "bios.backup", "bios", NULL},
	{"Golden_BIOS", RF_ON_ID, "bios.golden", "bios", NULL},
	{"Staging_BIOS", RF_ON_ID, "bios.staging", "bios", NULL},
	{"BIOS_ME", RF_ON_ID, "bios.me", "bios", NULL},
	{"Capsule_BIOS", RF_ON_ID, "bios.capsule", "bios", NULL},
	{"Capsule_ME", RF_ON_ID, "bios.me.capsule", "bios", NULL},
	{"Capsule_MCU", RF_ON_ID, "bios.microcode.capsule", "bios", NULL},
	{"CPLD_Motherboard", RF_ON_ID, "cpld.motherboard", "cpld", NULL},
	{"CPLD_Motherboard_#", RF_ON_ID, "cpld.motherboard#", "cpld", NULL},
	{"Golden_CPLD_Motherboard", RF_ON_ID, "cpld.motherboard.golden", "cpld", NULL},
	{"CPLD_Backplane_#", RF_ON_ID, "cpld.backplane#", "cpld", NULL},
	{"Switchboard_#_CPLD_#", RF_ON_ID, "cpld.switchboard#.#", "cpld", NULL},
	{"Fanboard_#_CPLD_#", RF_ON_ID, "cpld.fanboard#.#", "cpld", NULL},
	{"NIC#", RF_ON_ID, "nic#", "nic", NULL},
	{"GPU#", RF_ON_ID, "gpu#.firmware", "gpu", NULL},
	{"NVMeController#", RF_ON_ID, "nvme.controller#", "other", NULL},
	{"NVMeSSDA#", RF_ON_ID, "drive.a#", "other", NULL},
	{"PowerSupply#", RF_ON_ID, "psu#", "psu", NULL},
	{NULL, 0, NULL, NULL, NULL},
};

static const char *const supermicro_vendors[] = {"Supermicro", NULL};
static const char *const supermicro_logs[] = {"Log1", "SEL", NULL};

/* ---- NVIDIA DGX (AMI host BMC; the HGX baseboard rows are shared, below) */

static const struct rf_fw_rule nvidia_fw[] = {
	{"HostBMC_#", RF_ON_ID, "bmc", "bmc", NULL},
	{"HostBIOS_#", RF_ON_ID, "bios", "bios", NULL},
	{"EROT_BMC_#", RF_ON_ID, "bmc.erot", "bmc", NULL},
	{"EROT_BIOS_#", RF_ON_ID, "bios.erot", "bios", NULL},
	{"CPLDMB_#", RF_ON_ID, "cpld.motherboard", "cpld", NULL},
	{"CPLDMID_#", RF_ON_ID, "cpld.midplane", "cpld", NULL},
	{"PCIeRetimer_#", RF_ON_ID, "retimer#", "other", NULL},
	{"PCIeSwitch_#", RF_ON_ID, "pcieswitch#", "other", NULL},
	{"PSU_#", RF_ON_ID, "psu#", "psu", NULL},
	{NULL, 0, NULL, NULL, NULL},
};

static const char *const nvidia_vendors[] = {"NVIDIA", "AMI", NULL};
static const char *const nvidia_logs[] = {"SEL", "EventLog", NULL};

/* ---- The HGX baseboard's HMC, the same on every vendor that carries it */

const struct rf_fw_rule rf_fw_hgx[] = {
	{"HGX_FW_GPU_SXM_#", RF_ON_ID, "gpu#.firmware", "gpu", "hgx.gpu#.firmware"},
	{"HGX_InfoROM_GPU_SXM_#", RF_ON_ID, "gpu#.inforom", "gpu", "hgx.gpu#.inforom"},
	{"HGX_FW_ERoT_GPU_SXM_#", RF_ON_ID, "gpu#.erot", "gpu", "hgx.gpu#.erot"},
	{"HGX_FW_GPU_#", RF_ON_ID, "gpu#.firmware", "gpu", "hgx.gpu#.firmware"},
	{"HGX_InfoROM_GPU_#", RF_ON_ID, "gpu#.inforom", "gpu", "hgx.gpu#.inforom"},
	{"HGX_FW_NVSwitch_#", RF_ON_ID, "nvswitch#.firmware", "baseboard", NULL},
	{"HGX_InfoROM_NVSwitch_#", RF_ON_ID, "nvswitch#.inforom", "baseboard", NULL},
	{"HGX_FW_ERoT_NVSwitch_#", RF_ON_ID, "nvswitch#.erot", "baseboard", NULL},
	{"HGX_FW_PCIeRetimer_#", RF_ON_ID, "hgx.retimer#", "baseboard", NULL},
	{"HGX_FW_PCIeSwitch_#", RF_ON_ID, "hgx.pcieswitch#", "baseboard", NULL},
	{"HGX_FW_ERoT_PCIeSwitch_#", RF_ON_ID, "hgx.pcieswitch#.erot", "baseboard", NULL},
	/* The HMC, as three generations name it: one component for drift and rollouts. */
	{"HGX_FW_BMC_#", RF_ON_ID, "hgx.bmc", "baseboard", NULL},
	{"HGX_FW_HMC_#", RF_ON_ID, "hgx.bmc", "baseboard", NULL},
	{"HMC_Firmware", RF_ON_ID, "hgx.bmc", "baseboard", NULL},
	{"HGX_FW_ERoT_BMC_#", RF_ON_ID, "hgx.bmc.erot", "baseboard", NULL},
	{"HGX_FW_FPGA_#", RF_ON_ID, "hgx.fpga", "baseboard", NULL},
	{"HGX_FW_ERoT_FPGA_#", RF_ON_ID, "hgx.fpga.erot", "baseboard", NULL},
	{NULL, 0, NULL, NULL, NULL},
};

static const struct rf_fw_rule generic_fw[] = {
	{NULL, 0, NULL, NULL, NULL},
};

static const char *const generic_logs[] = {
	"SEL", "Sel", "Log1", "IML", "EventLog", "IEL", "Lclog", "PlatformLog", "Event", NULL,
};

static const struct rf_dialect dialect_dell = {
	.name = "dell",
	.vendors = dell_vendors,
	.fwid = RF_FWID_DELL,
	.states = dell_states,
	.fw = dell_fw,
	.logs = dell_logs,
};
static const struct rf_dialect dialect_hpe = {
	.name = "hpe",
	.vendors = hpe_vendors,
	.fw = hpe_fw,
	.logs = hpe_logs,
	.context = "Oem.Hpe.DeviceContext",
	.oem = {[RF_OEM_SEL_SEVERITY] = "Oem.Hpe.Severity"},
	/* iLO names every supply "HpeServerPowerSupply". */
	.psu_shared_name = "HpeServerPowerSupply",
};
static const struct rf_dialect dialect_lenovo = {
	.name = "lenovo",
	.vendors = lenovo_vendors,
	.fw = lenovo_fw,
	.logs = lenovo_logs,
};
static const struct rf_dialect dialect_supermicro = {
	.name = "supermicro",
	.vendors = supermicro_vendors,
	.fw = supermicro_fw,
	.logs = supermicro_logs,
	.gpus_in_pcie = true,
	.oem =
		{
			[RF_OEM_SEL_SENSOR] = "Oem.Supermicro.RawEventData.SensorName",
			[RF_OEM_SENSOR_TEXT] = "Oem.Supermicro.SensorValue",
		},
};
static const struct rf_dialect dialect_nvidia = {
	.name = "nvidia",
	.vendors = nvidia_vendors,
	.fw = nvidia_fw,
	.logs = nvidia_logs,
};
static const struct rf_dialect dialect_generic = {
	.name = "generic",
	.fw = generic_fw,
	.logs = generic_logs,
};

const struct rf_dialect *const rf_dialects[] = {
	&dialect_dell,    &dialect_hpe, &dialect_lenovo, &dialect_supermicro, &dialect_nvidia,
	&dialect_generic, NULL,
};

static bool prefix_ci(const char *s, const char *prefix)
{
	return s && strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* Does any of the dialect's vendor names start @s? */
static bool vendor_is(const struct rf_dialect *d, const char *s)
{
	for (size_t i = 0; s && d->vendors && d->vendors[i]; i++)
		if (prefix_ci(s, d->vendors[i]))
			return true;
	return false;
}

const struct rf_dialect *rf_dialect_detect(const json_t *root, const char *manufacturer)
{
	const char *vendor = rf_str(root, "Vendor");
	json_t *oem = rf_obj(root, "Oem");

	/* The System's maker first: a DGX runs an AMI BMC, an OEM may run anyone's. */
	for (size_t i = 0; rf_dialects[i]; i++)
		if (vendor_is(rf_dialects[i], manufacturer))
			return rf_dialects[i];
	for (size_t i = 0; rf_dialects[i]; i++)
		if (vendor_is(rf_dialects[i], vendor))
			return rf_dialects[i];
	if (oem) {
		const char *k;
		json_t *v;

		json_object_foreach(oem, k, v) {
			for (size_t i = 0; rf_dialects[i]; i++)
				if (vendor_is(rf_dialects[i], k))
					return rf_dialects[i];
		}
	}
	return &dialect_generic;
}

const char *rf_oem_str(const json_t *o, enum rf_oem_field which)
{
	const char *v;

	if ((unsigned)which >= RF_OEM_NFIELDS)
		return NULL;
	for (size_t i = 0; rf_dialects[i]; i++)
		if (rf_dialects[i]->oem[which] && (v = rf_get_str(o, rf_dialects[i]->oem[which])))
			return v;
	return NULL;
}

bool rf_psu_name_shared(const char *name)
{
	for (size_t i = 0; name && rf_dialects[i]; i++)
		if (rf_eq(name, rf_dialects[i]->psu_shared_name))
			return true;
	return false;
}

const struct rf_dialect *rf_dialect_by_name(const char *name)
{
	for (size_t i = 0; rf_dialects[i]; i++)
		if (rf_eq(rf_dialects[i]->name, name))
			return rf_dialects[i];
	return NULL;
}

/*
 * Iterative matcher with one '*' backtrack point, as in a shell glob; '#'
 * needs at least one digit and takes them all (patterns put a non-digit
 * after it). Captures past the backtrack point are redone on retry.
 */
bool rf_pattern_match(const char *pattern, const char *s, long *caps, size_t ncap,
		      size_t *ret_ncaps)
{
	const char *p = pattern, *star_p = NULL, *star_s = NULL;
	size_t n = 0, star_n = 0;

	if (!pattern || !s)
		return false;
	while (*s) {
		if (*p == '#' && isdigit((unsigned char)*s)) {
			long v = gf_compkey_digits(&s);

			if (n < ncap)
				caps[n] = v;
			n++;
			p++;
			continue;
		}
		if (*p == '*') {
			star_p = ++p;
			star_s = s;
			star_n = n;
			continue;
		}
		if (*p && *p != '#' && tolower((unsigned char)*p) == tolower((unsigned char)*s)) {
			p++;
			s++;
			continue;
		}
		if (!star_p)
			return false;
		p = star_p;
		s = ++star_s;
		n = star_n;
	}
	while (*p == '*')
		p++;
	if (*p)
		return false;
	if (ret_ncaps)
		*ret_ncaps = n < ncap ? n : ncap;
	return true;
}
