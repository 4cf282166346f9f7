/*
 * An ipmi_sim module (lan.conf "loadlib") that makes a lab BMC behave like a
 * real one where OpenIPMI 2.0.33's simulator does not:
 *
 * - System boot options: ipmi_sim keeps only the boot device of parameter 5
 *   and always answers "not valid, one-time, legacy". Here the five bytes of
 *   the boot flags are kept whole in STATEDIR/bootflags (hex, one line), so
 *   the valid, persistent and EFI bits survive. The lab's chassis-control
 *   clears the valid bit of a one-time override when the host boots (power
 *   on from off, reset, the second half of a cycle), as a BIOS does.
 * - Get System Info Parameters, parameter 1 (system firmware version): the
 *   text of STATEDIR/bios-version, if that file exists.
 * - An emulator command "lab_set_aux_fw MC B1 B2 B3 B4" for the auxiliary
 *   firmware revision of Get Device ID, which mc_add cannot set.
 *
 * Every request is appended to STATEDIR/chassis.log like chassis-control's:
 *   <epoch> boot <dev> <once|persistent> <legacy|uefi>   (a valid override)
 *   <epoch> boot none                                      (override cleared)
 *   <epoch> get-boot
 *
 * Options (the loadlib string): the node's state directory.
 * Build: cc -shared -fPIC -o labbmc.so labbmc.c (needs libopenipmi-dev).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <OpenIPMI/mcserv.h>

#define NETFN_CHASSIS 0x00
#define NETFN_APP 0x06
#define CMD_SET_BOOT_OPTIONS 0x08
#define CMD_GET_BOOT_OPTIONS 0x09
#define CMD_GET_SYSINFO 0x59

#define CC_OK 0x00
#define CC_PARAM_UNSUPPORTED 0x80
#define CC_INVALID_FIELD 0xcc
#define CC_LENGTH 0xc7
#define CC_UNSPECIFIED 0xff

static char statedir[1024];
static unsigned char in_progress;

static const char *const dev_names[16] = {
	[0x0] = "none",      [0x1] = "pxe",          [0x2] = "disk",        [0x3] = "disk-safe",
	[0x4] = "diag",      [0x5] = "cd",           [0x6] = "bios",        [0x7] = "floppy",
	[0x8] = "remote-cd", [0x9] = "remote-media", [0xb] = "remote-disk", [0xf] = "removable",
};

static void path_of(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", statedir, name);
}

static void lablog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void lablog(const char *fmt, ...)
{
	char path[1100];
	struct timeval tv;
	va_list ap;
	FILE *f;

	path_of(path, sizeof(path), "chassis.log");
	f = fopen(path, "a");
	if (!f)
		return;
	gettimeofday(&tv, NULL);
	fprintf(f, "%ld.%06ld ", (long)tv.tv_sec, (long)tv.tv_usec);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* The five bytes of the boot flags; all zero when never set. */
static void read_flags(unsigned char flags[5])
{
	char path[1100];
	unsigned int b[5];
	FILE *f;

	memset(flags, 0, 5);
	path_of(path, sizeof(path), "bootflags");
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "%x %x %x %x %x", &b[0], &b[1], &b[2], &b[3], &b[4]) == 5)
		for (int i = 0; i < 5; i++)
			flags[i] = (unsigned char)b[i];
	fclose(f);
}

static int write_flags(const unsigned char flags[5])
{
	char path[1100], tmp[1200];
	FILE *f;

	path_of(path, sizeof(path), "bootflags");
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%02x %02x %02x %02x %02x\n", flags[0], flags[1], flags[2], flags[3], flags[4]);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

static void log_flags(const unsigned char flags[5])
{
	const char *dev = dev_names[(flags[1] >> 2) & 0xf];

	if (!(flags[0] & 0x80)) {
		lablog("boot none");
		return;
	}
	lablog("boot %s %s %s", dev ? dev : "other", (flags[0] & 0x40) ? "persistent" : "once",
	       (flags[0] & 0x20) ? "uefi" : "legacy");
}

static void reply_cc(unsigned char *rdata, unsigned int *rdata_len, unsigned char cc)
{
	rdata[0] = cc;
	*rdata_len = 1;
}

static void set_boot_options(lmc_data_t *mc, msg_t *msg, unsigned char *rdata,
			     unsigned int *rdata_len, void *cb_data)
{
	unsigned char flags[5];

	if (msg->len < 1)
		return reply_cc(rdata, rdata_len, CC_LENGTH);
	switch (msg->data[0] & 0x7f) {
	case 0: /* set in progress */
		if (msg->len < 2)
			return reply_cc(rdata, rdata_len, CC_LENGTH);
		in_progress = msg->data[1] & 0x3;
		break;
	case 1: /* service partition selector */
	case 2: /* service partition scan */
	case 3: /* valid bit clearing */
	case 4: /* boot info acknowledge */ break;
	case 5:
		if (msg->len < 6)
			return reply_cc(rdata, rdata_len, CC_LENGTH);
		memcpy(flags, msg->data + 1, 5);
		if (write_flags(flags) < 0)
			return reply_cc(rdata, rdata_len, CC_UNSPECIFIED);
		log_flags(flags);
		break;
	default: return reply_cc(rdata, rdata_len, CC_PARAM_UNSUPPORTED);
	}
	reply_cc(rdata, rdata_len, CC_OK);
}

static void get_boot_options(lmc_data_t *mc, msg_t *msg, unsigned char *rdata,
			     unsigned int *rdata_len, void *cb_data)
{
	unsigned char flags[5];
	unsigned char param;

	if (msg->len < 3)
		return reply_cc(rdata, rdata_len, CC_LENGTH);
	param = msg->data[0] & 0x7f;
	rdata[0] = CC_OK;
	rdata[1] = 0x01; /* parameter version */
	rdata[2] = param;
	switch (param) {
	case 0:
		rdata[3] = in_progress;
		*rdata_len = 4;
		break;
	case 5:
		read_flags(flags);
		memcpy(rdata + 3, flags, 5);
		*rdata_len = 8;
		lablog("get-boot");
		break;
	default: reply_cc(rdata, rdata_len, CC_PARAM_UNSUPPORTED); break;
	}
}

/* Get System Info Parameters: parameter 1 from STATEDIR/bios-version. */
static void get_sysinfo(lmc_data_t *mc, msg_t *msg, unsigned char *rdata, unsigned int *rdata_len,
			void *cb_data)
{
	char path[1100], text[256];
	size_t len, set, off, n;
	FILE *f;

	if (msg->len < 4)
		return reply_cc(rdata, rdata_len, CC_LENGTH);
	if (msg->data[1] != 1)
		return reply_cc(rdata, rdata_len, CC_PARAM_UNSUPPORTED);
	path_of(path, sizeof(path), "bios-version");
	f = fopen(path, "r");
	if (!f)
		return reply_cc(rdata, rdata_len, CC_PARAM_UNSUPPORTED);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	rdata[0] = CC_OK;
	rdata[1] = 0x11;           /* parameter revision */
	if (msg->data[0] & 0x80) { /* revision only */
		*rdata_len = 2;
		return;
	}
	set = msg->data[2];
	rdata[2] = (unsigned char)set;
	if (set == 0) {
		/* encoding (ASCII), length, then up to 14 bytes */
		rdata[3] = 0x00;
		rdata[4] = (unsigned char)len;
		n = len < 14 ? len : 14;
		memset(rdata + 5, 0, 14);
		memcpy(rdata + 5, text, n);
		*rdata_len = 19;
		return;
	}
	off = 14 + (set - 1) * 16;
	if (off >= len)
		return reply_cc(rdata, rdata_len, CC_INVALID_FIELD);
	n = len - off < 16 ? len - off : 16;
	memset(rdata + 3, 0, 16);
	memcpy(rdata + 3, text + off, n);
	*rdata_len = 19;
}

/* lab_set_aux_fw MC B1 B2 B3 B4 */
static int cmd_set_aux_fw(emu_out_t *out, emu_data_t *emu, lmc_data_t *mc, char **toks)
{
	unsigned char aux[4];
	const char *errstr = NULL;

	for (int i = 0; i < 4; i++) {
		unsigned int v;

		if (get_uint(toks, &v, &errstr) || v > 0xff) {
			out->eprintf(out, "aux firmware byte %d: %s\n", i + 1,
				     errstr ? errstr : "out of range");
			return EINVAL;
		}
		aux[i] = (unsigned char)v;
	}
	ipmi_mc_set_aux_fw_revision(mc, aux);
	return 0;
}

int ipmi_sim_module_print_version(sys_data_t *sys, char *options);
int ipmi_sim_module_init(sys_data_t *sys, const char *options);

int ipmi_sim_module_print_version(sys_data_t *sys, char *options)
{
	printf("gpufleet lab bmc module 1\n");
	return 0;
}

int ipmi_sim_module_init(sys_data_t *sys, const char *options)
{
	int rv;

	if (!options || !*options || strlen(options) >= sizeof(statedir) - 64)
		return EINVAL;
	snprintf(statedir, sizeof(statedir), "%s", options);
	rv = ipmi_emu_register_cmd_handler(NETFN_CHASSIS, CMD_SET_BOOT_OPTIONS, set_boot_options,
					   NULL);
	if (!rv)
		rv = ipmi_emu_register_cmd_handler(NETFN_CHASSIS, CMD_GET_BOOT_OPTIONS,
						   get_boot_options, NULL);
	if (!rv)
		rv = ipmi_emu_register_cmd_handler(NETFN_APP, CMD_GET_SYSINFO, get_sysinfo, NULL);
	if (!rv)
		rv = ipmi_emu_add_cmd("lab_set_aux_fw", MC, cmd_set_aux_fw);
	return rv;
}
