/*
 * Sensors over IPMI: the SDR repository says which sensors exist and how to
 * decode them; Get Sensor Reading gives each value and its event state, Get
 * Sensor Thresholds its current thresholds (what `ipmi-sensors
 * --output-sensor-thresholds` asks too).
 *
 * The SDR repository is cached per BMC in <cache_dir>/sdr/, in FreeIPMI's
 * cache format. A cached copy is used while the BMC's SDR version and its
 * most recent addition and erase timestamps are those it was made with (one
 * Get SDR Repository Info per read); otherwise it is downloaded again into a
 * temporary file and renamed over the old one, so a concurrent reader (another
 * thread or process) always opens a whole file. A cache folder that takes no
 * file, or a cache that cannot be read, is no failure: the repository is
 * then read into a private temporary file, as without a cache directory.
 *
 * State: a threshold sensor is critical at or beyond a critical or
 * non-recoverable threshold, warning at or beyond a non-critical one,
 * nominal otherwise, from the comparison bits the BMC returns with the
 * reading. Discrete sensors are judged by FreeIPMI's interpretation rules
 * (freeipmi_interpret_sensor.conf, where the site may override them), which
 * say e.g. that an asserted "Power Supply Failure detected" is critical.
 *
 * Threads: each session's contexts are its own. Two things are shared: the
 * cache files, which are replaced atomically, and FreeIPMI's interpretation
 * rules. Those are one context for the process, built once on a thread with
 * a large stack (FreeIPMI's config parser needs more than a worker's 256 KiB)
 * and then used under a mutex: loading them takes ~50 ms of CPU per file,
 * too much to repeat per node, and FreeIPMI's context is not meant for
 * concurrent use. The system's freeipmi_interpret_*.conf files are parsed
 * only when they hold a rule; as shipped they are all comments, the
 * library's built-in rules.
 */
#include "ipmi/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <freeipmi/freeipmi.h>

#include "lib/buf.h"
#include "lib/util.h"

/* IPMI sensor type codes (IPMI 2.0 table 42-3) as canonical, lower-case names. */
static const char *const type_names[] = {
	[0x01] = "temperature",
	[0x02] = "voltage",
	[0x03] = "current",
	[0x04] = "fan",
	[0x05] = "physical_security",
	[0x06] = "platform_security",
	[0x07] = "processor",
	[0x08] = "power_supply",
	[0x09] = "power_unit",
	[0x0a] = "cooling_device",
	[0x0b] = "other_units",
	[0x0c] = "memory",
	[0x0d] = "drive",
	[0x0e] = "post_memory_resize",
	[0x0f] = "system_firmware",
	[0x10] = "event_logging",
	[0x11] = "watchdog",
	[0x12] = "system_event",
	[0x13] = "critical_interrupt",
	[0x14] = "button",
	[0x15] = "module_board",
	[0x16] = "microcontroller",
	[0x17] = "add_in_card",
	[0x18] = "chassis",
	[0x19] = "chipset",
	[0x1a] = "other_fru",
	[0x1b] = "cable",
	[0x1c] = "terminator",
	[0x1d] = "system_boot",
	[0x1e] = "boot_error",
	[0x1f] = "os_boot",
	[0x20] = "os_critical_stop",
	[0x21] = "slot_connector",
	[0x22] = "acpi_power_state",
	[0x23] = "watchdog",
	[0x24] = "platform_alert",
	[0x25] = "entity_presence",
	[0x26] = "monitor_asic",
	[0x27] = "lan",
	[0x28] = "management_subsystem",
	[0x29] = "battery",
	[0x2a] = "session_audit",
	[0x2b] = "version_change",
	[0x2c] = "fru_state",
};

const char *gf_ipmi_sensor_type_name(uint8_t sensor_type)
{
	if (sensor_type < sizeof(type_names) / sizeof(type_names[0]) && type_names[sensor_type])
		return type_names[sensor_type];
	return sensor_type >= 0xc0 ? "oem" : "other";
}

/*
 * What an analog reading measures says more than the sensor type: a "Power
 * Supply" sensor in watts is a power reading, one in volts a voltage. These
 * are the kinds Redfish sensors have too.
 */
static const char *type_by_unit(uint8_t base_unit)
{
	switch (base_unit) {
	case IPMI_SENSOR_UNIT_DEGREES_C:
	case IPMI_SENSOR_UNIT_DEGREES_F:
	case IPMI_SENSOR_UNIT_DEGREES_K: return "temperature";
	case IPMI_SENSOR_UNIT_VOLTS: return "voltage";
	case IPMI_SENSOR_UNIT_AMPS: return "current";
	case IPMI_SENSOR_UNIT_WATTS: return "power";
	case IPMI_SENSOR_UNIT_RPM: return "fan";
	default: return NULL;
	}
}

int gf_ipmi_check_deadline(struct ipmi_session *s, const char *what, struct gf_err *err)
{
	if (s->deadline > 0 && gf_monotime() > s->deadline)
		return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
				  "bmc '%s': the deadline passed while reading %s", s->node, what);
	return 0;
}

/* ---- interpretation ------------------------------------------------- */

/* Where Debian's libfreeipmi looks for them (its sysconfdir). */
#define INTERPRET_SENSOR_CONF "/etc/freeipmi/freeipmi_interpret_sensor.conf"
#define INTERPRET_SEL_CONF "/etc/freeipmi/freeipmi_interpret_sel.conf"
#define INTERPRET_STACK (4u << 20)

static pthread_once_t interp_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t interp_lock = PTHREAD_MUTEX_INITIALIZER;
static ipmi_interpret_ctx_t interp; /* NULL: states unknown, severities info */

/* Does the configuration file @path hold any rule (a line that is not a comment)? */
static bool has_rules(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];
	bool rules = false;

	if (!f)
		return false;
	while (!rules && fgets(line, sizeof(line), f)) {
		const char *p = line;

		while (*p == ' ' || *p == '\t')
			p++;
		rules = *p && *p != '#' && *p != '\n' && *p != '\r';
	}
	fclose(f);
	return rules;
}

static ipmi_interpret_ctx_t interp_new(bool sensor_conf, bool sel_conf)
{
	ipmi_interpret_ctx_t c = ipmi_interpret_ctx_create();

	if (!c)
		return NULL;
	if ((sensor_conf && ipmi_interpret_load_sensor_config(c, NULL) < 0) ||
	    (sel_conf && ipmi_interpret_load_sel_config(c, NULL) < 0)) {
		/* A broken site file: the built-in rules rather than half of it. */
		ipmi_interpret_ctx_destroy(c);
		return NULL;
	}
	return c;
}

static void *interp_build(void *unused)
{
	bool sensor_conf = has_rules(INTERPRET_SENSOR_CONF),
	     sel_conf = has_rules(INTERPRET_SEL_CONF);

	interp = interp_new(sensor_conf, sel_conf);
	if (!interp && (sensor_conf || sel_conf))
		interp = interp_new(false, false);
	return unused;
}

static void interp_init(void)
{
	pthread_attr_t attr;
	pthread_t t;
	bool started = false;

	if (pthread_attr_init(&attr) == 0) {
		started = pthread_attr_setstacksize(&attr, INTERPRET_STACK) == 0 &&
			  pthread_create(&t, &attr, interp_build, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	if (started)
		pthread_join(t, NULL);
	else
		interp = interp_new(false, false); /* built-ins need no large stack */
}

unsigned gf_ipmi_interpret_sensor(uint8_t ertc, uint8_t type, uint16_t bits)
{
	unsigned st = IPMI_INTERPRET_STATE_UNKNOWN;

	pthread_once(&interp_once, interp_init);
	if (!interp)
		return st;
	pthread_mutex_lock(&interp_lock);
	if (ipmi_interpret_sensor(interp, ertc, type, bits, &st) < 0)
		st = IPMI_INTERPRET_STATE_UNKNOWN;
	pthread_mutex_unlock(&interp_lock);
	return st;
}

unsigned gf_ipmi_interpret_sel(const void *rec, unsigned len)
{
	unsigned st = IPMI_INTERPRET_STATE_UNKNOWN;

	pthread_once(&interp_once, interp_init);
	if (!interp)
		return st;
	pthread_mutex_lock(&interp_lock);
	if (ipmi_interpret_sel(interp, rec, len, &st) < 0)
		st = IPMI_INTERPRET_STATE_UNKNOWN;
	pthread_mutex_unlock(&interp_lock);
	return st;
}

/* ---- the SDR cache ---------------------------------------------------- */

/* A file name part for @s: printable ASCII kept, the rest as %XX. */
static void key_part(struct gf_buf *b, const char *s)
{
	for (size_t i = 0; s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == ':' ||
			    (c == '.' && i > 0);

		if (keep)
			gf_buf_addc(b, (char)c);
		else
			gf_buf_addf(b, "%%%02X", c);
	}
}

/*
 * <cache_dir>/sdr/<node>@<host>.sdr: one file per BMC. The node name is
 * part of the key because two registered nodes may reach different BMCs
 * through one address (a port forward); ad-hoc hosts are named by host[:port].
 */
static char *cache_path(const struct ipmi_session *s)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_adds(&b, s->cache_dir);
	gf_buf_adds(&b, "/sdr/");
	key_part(&b, s->node);
	gf_buf_addc(&b, '@');
	key_part(&b, s->host ? s->host : "");
	gf_buf_adds(&b, ".sdr");
	return gf_buf_detach(&b);
}

static int sdr_error(struct ipmi_session *s, ipmi_sdr_ctx_t sdr, const char *what,
		     struct gf_err *err)
{
	int e = ipmi_sdr_ctx_errnum(sdr);
	char why[128];

	/* Errors from the BMC side are in the IPMI context. */
	if (e == IPMI_SDR_ERR_IPMI_ERROR || e == IPMI_SDR_ERR_SYSTEM_ERROR)
		return gf_ipmi_cmd_error(s, what, NULL, 0, err);
	if (e == IPMI_SDR_ERR_OUT_OF_MEMORY)
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL, "bmc '%s': %s failed (freeipmi: %s)",
			  s->node, what,
			  gf_ipmi_lower(ipmi_sdr_ctx_errormsg(sdr), why, sizeof(why)));
}

/*
 * Download the repository into @path: a temporary file, then rename().
 * GF_E_IO (nothing asked of the BMC yet) when the folder cannot be written.
 */
static int sdr_download(struct ipmi_session *s, const char *path, struct gf_err *err)
{
	ipmi_sdr_ctx_t sdr;
	struct gf_buf tmp = GF_BUF_INIT;
	struct gf_err e = {0};
	int rc = 0, fd;

	if (gf_mkdir_parents(path, &e) < 0)
		return gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "%s", e.msg);
	/* Unique among this process's sessions (the session's address) and processes. */
	gf_buf_addf(&tmp, "%s.%ld.%p.tmp", path, (long)getpid(), (void *)s);
	/* Whether the folder takes a file, before the BMC is asked for anything. */
	fd = open(gf_buf_str(&tmp), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		rc = gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "cannot write sdr cache '%s' (%s)",
				path, strerror(errno));
		gf_buf_release(&tmp);
		return rc;
	}
	close(fd);
	sdr = ipmi_sdr_ctx_create();
	if (!sdr) {
		unlink(gf_buf_str(&tmp));
		gf_buf_release(&tmp);
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	}
	if (ipmi_sdr_cache_create(sdr, s->ctx, gf_buf_str(&tmp),
				  IPMI_SDR_CACHE_CREATE_FLAGS_OVERWRITE, NULL, NULL) < 0) {
		rc = sdr_error(s, sdr, "the sdr repository", err);
		unlink(gf_buf_str(&tmp));
		goto out;
	}
	if (rename(gf_buf_str(&tmp), path) < 0) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "cannot write sdr cache '%s' (%s)",
				path, strerror(errno));
		unlink(gf_buf_str(&tmp));
	}
out:
	ipmi_sdr_ctx_destroy(sdr);
	gf_buf_release(&tmp);
	return rc;
}

/*
 * Without a cache directory: a file in a private directory (mkdtemp, 0700,
 * so nothing in a shared /tmp can be raced), removed once it is open: the
 * context keeps it mapped.
 */
static int sdr_uncached(struct ipmi_session *s, ipmi_sdr_ctx_t *ret, struct gf_err *err)
{
	const char *tmpdir = getenv("TMPDIR");
	struct gf_buf dir = GF_BUF_INIT, path = GF_BUF_INIT;
	ipmi_sdr_ctx_t sdr;
	int rc;

	gf_buf_addf(&dir, "%s/gpufleet-sdr-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(dir.s)) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				"cannot make a temporary directory for the sdr of bmc '%s' (%s)",
				s->node, strerror(errno));
		gf_buf_release(&dir);
		return rc;
	}
	gf_buf_addf(&path, "%s/sdr", gf_buf_str(&dir));
	rc = sdr_download(s, gf_buf_str(&path), err);
	if (rc == GF_E_IO)
		rc = GF_E_NODE; /* a fresh private folder that takes no file: the node's failure */
	if (rc < 0)
		goto out;
	sdr = ipmi_sdr_ctx_create();
	if (!sdr) {
		rc = gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	} else if (ipmi_sdr_cache_open(sdr, NULL, gf_buf_str(&path)) < 0) {
		rc = sdr_error(s, sdr, "the sdr cache", err);
		ipmi_sdr_ctx_destroy(sdr);
	} else {
		*ret = sdr;
	}
out:
	unlink(gf_buf_str(&path));
	rmdir(gf_buf_str(&dir));
	gf_buf_release(&path);
	gf_buf_release(&dir);
	return rc;
}

static int sdr_open(struct ipmi_session *s, ipmi_sdr_ctx_t *ret, struct gf_err *err)
{
	ipmi_sdr_ctx_t sdr;
	char *path;
	int rc, e;

	if (!s->cache_dir || !*s->cache_dir)
		return sdr_uncached(s, ret, err);
	path = cache_path(s);
	sdr = ipmi_sdr_ctx_create();
	if (!sdr) {
		free(path);
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	}
	/* With the IPMI context, FreeIPMI compares the cache with the BMC's repository info. */
	if (ipmi_sdr_cache_open(sdr, s->ctx, path) == 0)
		goto done;
	e = ipmi_sdr_ctx_errnum(sdr);
	if (e == IPMI_SDR_ERR_IPMI_ERROR || e == IPMI_SDR_ERR_SYSTEM_ERROR ||
	    e == IPMI_SDR_ERR_OUT_OF_MEMORY) {
		rc = sdr_error(s, sdr, "get sdr repository info", err);
		goto fail;
	}
	/* Missing, out of date, not a cache or not readable: fetch it again. */
	rc = e == IPMI_SDR_ERR_PERMISSION ? GF_E_IO : sdr_download(s, path, err);
	if (rc == GF_E_IO) {
		/* A cache folder that cannot be used: read without it. */
		ipmi_sdr_ctx_destroy(sdr);
		free(path);
		return sdr_uncached(s, ret, err);
	}
	if (rc < 0)
		goto fail;
	ipmi_sdr_ctx_destroy(sdr);
	sdr = ipmi_sdr_ctx_create();
	if (!sdr) {
		free(path);
		return gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
	}
	if (ipmi_sdr_cache_open(sdr, NULL, path) < 0) {
		rc = sdr_error(s, sdr, "the sdr cache", err);
		goto fail;
	}
done:
	free(path);
	*ret = sdr;
	return 0;
fail:
	ipmi_sdr_ctx_destroy(sdr);
	free(path);
	return rc;
}

int gf_ipmi_sdr_open(struct ipmi_session *s, ipmi_sdr_ctx_t *ret, struct gf_err *err)
{
	int rc = 0;

	if (!s->sdr)
		rc = sdr_open(s, &s->sdr, err);
	if (rc == 0)
		*ret = s->sdr;
	return rc;
}

/* ---- one sensor ------------------------------------------------------- */

/* Everything one read needs, made once per call. */
struct reader {
	struct ipmi_session *s;
	ipmi_sdr_ctx_t sdr;
	ipmi_sensor_read_ctx_t rd;
	fiid_obj_t thr_rs;
	uint8_t rec[IPMI_SDR_MAX_RECORD_LENGTH];
	int len;
};

/* Get Sensor Reading answers that are about one sensor, not the session. */
static bool sensor_only_error(struct reader *r)
{
	int e = ipmi_sensor_read_ctx_errnum(r->rd);

	if (e != IPMI_SENSOR_READ_ERR_IPMI_ERROR && e != IPMI_SENSOR_READ_ERR_SYSTEM_ERROR &&
	    e != IPMI_SENSOR_READ_ERR_OUT_OF_MEMORY)
		return true;
	switch (ipmi_ctx_errnum(r->s->ctx)) {
	case IPMI_ERR_SESSION_TIMEOUT:
	case IPMI_ERR_CONNECTION_TIMEOUT:
	case IPMI_ERR_MESSAGE_TIMEOUT:
	case IPMI_ERR_SYSTEM_ERROR:
	case IPMI_ERR_OUT_OF_MEMORY:
	case IPMI_ERR_BAD_RMCPPLUS_STATUS_CODE: return false;
	default: return true; /* a completion code for this sensor */
	}
}

static void set_num(struct gf_num *n, double v)
{
	n->set = true;
	n->v = v;
}

/* Thresholds as the SDR record holds them (fixed thresholds, or a fallback). */
static int sdr_thresholds(struct reader *r, struct gf_sensor *out)
{
	uint8_t rd[6] = {0};
	double *v[6] = {NULL};
	struct gf_num *dst[6] = {&out->lnc, &out->lc, &out->lnr, &out->unc, &out->uc, &out->unr};

	if (ipmi_sdr_parse_threshold_readable(r->sdr, r->rec, (unsigned)r->len, &rd[0], &rd[1],
					      &rd[2], &rd[3], &rd[4], &rd[5]) < 0)
		return 0;
	if (ipmi_sdr_parse_thresholds(r->sdr, r->rec, (unsigned)r->len, &v[0], &v[1], &v[2], &v[3],
				      &v[4], &v[5]) < 0)
		return 0;
	for (int i = 0; i < 6; i++) {
		if (rd[i] && v[i])
			set_num(dst[i], *v[i]);
		free(v[i]);
	}
	return 0;
}

/*
 * The thresholds in effect, like ipmi-sensors: Get Sensor Thresholds for a
 * sensor of the BMC whose thresholds are readable (they may have been set
 * since the SDR was written); the SDR's values for fixed thresholds, for
 * sensors of satellite controllers, and for BMCs that lack the command.
 */
static int thresholds(struct reader *r, uint8_t owner, uint8_t lun, uint8_t number,
		      struct gf_sensor *out, struct gf_err *err)
{
	static const char *const fields[6][2] = {
		{"readable_thresholds.lower_non_critical_threshold",
		 "lower_non_critical_threshold"},
		{"readable_thresholds.lower_critical_threshold", "lower_critical_threshold"},
		{"readable_thresholds.lower_non_recoverable_threshold",
		 "lower_non_recoverable_threshold"},
		{"readable_thresholds.upper_non_critical_threshold",
		 "upper_non_critical_threshold"},
		{"readable_thresholds.upper_critical_threshold", "upper_critical_threshold"},
		{"readable_thresholds.upper_non_recoverable_threshold",
		 "upper_non_recoverable_threshold"},
	};
	struct gf_num *dst[6] = {&out->lnc, &out->lc, &out->lnr, &out->unc, &out->uc, &out->unr};
	uint8_t access = 0, linearization = 0, format = 0;
	int8_t r_exp = 0, b_exp = 0;
	int16_t m = 0, b = 0;
	uint64_t cc = 0;

	if (ipmi_sdr_parse_sensor_capabilities(r->sdr, r->rec, (unsigned)r->len, NULL, &access,
					       NULL, NULL, NULL) < 0 ||
	    access == IPMI_SDR_NO_THRESHOLDS_SUPPORT)
		return 0;
	if (ipmi_sdr_parse_sensor_decoding_data(r->sdr, r->rec, (unsigned)r->len, &r_exp, &b_exp,
						&m, &b, &linearization, &format) < 0 ||
	    !IPMI_SDR_ANALOG_DATA_FORMAT_VALID(format) ||
	    !IPMI_SDR_LINEARIZATION_IS_LINEAR(linearization))
		return 0;
	if (access == IPMI_SDR_FIXED_UNREADABLE_THRESHOLDS_SUPPORT ||
	    owner != IPMI_SLAVE_ADDRESS_BMC || lun != IPMI_BMC_IPMB_LUN_BMC)
		return sdr_thresholds(r, out);
	fiid_obj_clear(r->thr_rs);
	if (ipmi_cmd_get_sensor_thresholds(r->s->ctx, number, r->thr_rs) < 0) {
		if (FIID_OBJ_GET(r->thr_rs, "comp_code", &cc) == 1 && cc != 0) {
			if (cc == IPMI_COMP_CODE_COMMAND_ILLEGAL_FOR_SENSOR_OR_RECORD_TYPE ||
			    cc == IPMI_COMP_CODE_REQUESTED_SENSOR_DATA_OR_RECORD_NOT_PRESENT)
				return 0;
			return sdr_thresholds(r, out);
		}
		return gf_ipmi_cmd_error(r->s, "get sensor thresholds", r->thr_rs,
					 IPMI_NET_FN_SENSOR_EVENT_RQ, err);
	}
	for (int i = 0; i < 6; i++) {
		uint64_t readable = 0, raw = 0;
		double v;

		if (FIID_OBJ_GET(r->thr_rs, fields[i][0], &readable) != 1 || !readable)
			continue;
		if (FIID_OBJ_GET(r->thr_rs, fields[i][1], &raw) != 1)
			continue;
		if (ipmi_sensor_decode_value(r_exp, b_exp, m, b, linearization, format,
					     (uint8_t)raw, &v) < 0)
			continue;
		set_num(dst[i], v);
	}
	return 0;
}

/* Comparison status bits of a threshold sensor's reading (Get Sensor Reading byte 3). */
enum {
	AT_LNC = 1 << 0,
	AT_LC = 1 << 1,
	AT_LNR = 1 << 2,
	AT_UNC = 1 << 3,
	AT_UC = 1 << 4,
	AT_UNR = 1 << 5,
};

static enum gf_sensor_state threshold_state(uint16_t bits)
{
	if (bits & (AT_LC | AT_LNR | AT_UC | AT_UNR))
		return GF_SENSOR_CRITICAL;
	if (bits & (AT_LNC | AT_UNC))
		return GF_SENSOR_WARNING;
	return GF_SENSOR_NOMINAL;
}

static enum gf_sensor_state discrete_state(uint8_t ertc, uint8_t type, uint16_t bits)
{
	switch (gf_ipmi_interpret_sensor(ertc, type, bits)) {
	case IPMI_INTERPRET_STATE_NOMINAL: return GF_SENSOR_NOMINAL;
	case IPMI_INTERPRET_STATE_WARNING: return GF_SENSOR_WARNING;
	case IPMI_INTERPRET_STATE_CRITICAL: return GF_SENSOR_CRITICAL;
	default: return GF_SENSOR_UNKNOWN;
	}
}

/* The asserted states of a discrete sensor, as FreeIPMI words them, joined by ", ". */
static char *discrete_text(uint8_t ertc, uint8_t type, uint8_t number, uint16_t bits)
{
	char **msgs = NULL;
	unsigned nmsgs = 0;
	struct gf_buf b = GF_BUF_INIT;

	if (ipmi_get_event_messages(ertc, type, number, bits, 0, 0, &msgs, &nmsgs, NULL,
				    IPMI_GET_EVENT_MESSAGES_FLAGS_DEFAULT) < 0)
		return NULL;
	for (unsigned i = 0; i < nmsgs; i++) {
		if (i)
			gf_buf_adds(&b, ", ");
		gf_buf_adds(&b, msgs[i]);
		free(msgs[i]);
	}
	free(msgs);
	return b.len ? gf_buf_detach(&b) : NULL;
}

/* One sensor of the current record (@offset into a shared record). */
static int read_one(struct reader *r, uint8_t offset, struct gf_sensor_list *out,
		    struct gf_err *err)
{
	char name[IPMI_SDR_MAX_SENSOR_NAME_LENGTH + 1] = "";
	uint8_t owner = 0, owner_type = 0, lun = 0, chan = 0, number = 0, type = 0, ertc = 0;
	uint8_t pct = 0, mod = 0, rate = 0, base = 0, mod_base = 0;
	uint8_t raw = 0;
	double *value = NULL;
	uint16_t bits = 0;
	bool threshold;
	struct gf_sensor *sn;
	int rc;

	if (ipmi_sdr_parse_sensor_owner_id(r->sdr, r->rec, (unsigned)r->len, &owner_type, &owner) <
		    0 ||
	    ipmi_sdr_parse_sensor_owner_lun(r->sdr, r->rec, (unsigned)r->len, &lun, &chan) < 0 ||
	    ipmi_sdr_parse_sensor_number(r->sdr, r->rec, (unsigned)r->len, &number) < 0 ||
	    ipmi_sdr_parse_sensor_type(r->sdr, r->rec, (unsigned)r->len, &type) < 0 ||
	    ipmi_sdr_parse_event_reading_type_code(r->sdr, r->rec, (unsigned)r->len, &ertc) < 0)
		return 0; /* a record FreeIPMI cannot parse: skip it, as ipmi-sensors does */
	owner = (uint8_t)(owner << 1 | owner_type); /* the 8-bit slave address form */
	number = (uint8_t)(number + offset);
	if (ipmi_sdr_parse_sensor_name(r->sdr, r->rec, (unsigned)r->len, number,
				       IPMI_SDR_SENSOR_NAME_FLAGS_DEFAULT, name, sizeof(name)) < 0)
		snprintf(name, sizeof(name), "sensor %u", (unsigned)number);
	threshold = IPMI_EVENT_READING_TYPE_CODE_IS_THRESHOLD(ertc);

	sn = gf_sensor_list_add(out);
	sn->name = gf_xstrdup(name);
	{
		char id[32];

		/* Names repeat (one per DIMM bank on some boards): where it is read does not. */
		snprintf(id, sizeof(id), "0x%02x.%u.%u", (unsigned)owner, (unsigned)lun,
			 (unsigned)number);
		sn->id = gf_xstrdup(id);
	}
	sn->state = GF_SENSOR_UNKNOWN;
	if (threshold && ipmi_sdr_parse_sensor_units(r->sdr, r->rec, (unsigned)r->len, &pct, &mod,
						     &rate, &base, &mod_base) == 0) {
		char unit[64] = "";
		const char *by_unit = type_by_unit(base);

		if (ipmi_sensor_units_string(pct, mod, rate, base, mod_base, unit, sizeof(unit),
					     1) > 0 &&
		    strcmp(unit, "unspecified") != 0)
			sn->unit = gf_xstrdup(unit);
		sn->type = gf_xstrdup(by_unit ? by_unit : gf_ipmi_sensor_type_name(type));
	} else {
		sn->type = gf_xstrdup(gf_ipmi_sensor_type_name(type));
	}

	rc = ipmi_sensor_read(r->rd, r->rec, (unsigned)r->len, offset, &raw, &value, &bits);
	if (rc < 0) {
		if (!sensor_only_error(r))
			return gf_ipmi_cmd_error(r->s, "get sensor reading", NULL, 0, err);
		return 0; /* this sensor cannot be read now: unknown */
	}
	if (rc == 0)
		return 0; /* reading unavailable or scanning disabled: unknown */
	if (threshold) {
		if (value) {
			set_num(&sn->reading, *value);
			sn->state = threshold_state(bits);
		}
		free(value);
		return r->s->no_thresholds ? 0 : thresholds(r, owner, lun, number, sn, err);
	}
	free(value);
	sn->state = discrete_state(ertc, type, bits);
	sn->state_text = discrete_text(ertc, type, number, bits);
	return 0;
}

static int read_all(struct reader *r, struct gf_sensor_list *out, struct gf_err *err)
{
	uint16_t count = 0;
	int rc;

	if (ipmi_sdr_cache_record_count(r->sdr, &count) < 0 || count == 0)
		return 0;
	if (ipmi_sdr_cache_first(r->sdr) < 0)
		return sdr_error(r->s, r->sdr, "the sdr cache", err);
	do {
		uint16_t id = 0;
		uint8_t rtype = 0, share = 1, mod_type = 0, mod_off = 0, inst = 0;

		if ((rc = gf_ipmi_check_deadline(r->s, "sensors", err)) < 0)
			return rc;
		r->len = ipmi_sdr_cache_record_read(r->sdr, r->rec, sizeof(r->rec));
		if (r->len <= 0 ||
		    ipmi_sdr_parse_record_id_and_type(r->sdr, r->rec, (unsigned)r->len, &id,
						      &rtype) < 0)
			continue;
		if (rtype != IPMI_SDR_FORMAT_FULL_SENSOR_RECORD &&
		    rtype != IPMI_SDR_FORMAT_COMPACT_SENSOR_RECORD)
			continue;
		if (rtype == IPMI_SDR_FORMAT_COMPACT_SENSOR_RECORD &&
		    (ipmi_sdr_parse_sensor_record_sharing(r->sdr, r->rec, (unsigned)r->len, &share,
							  &mod_type, &mod_off, &inst) < 0 ||
		     share == 0))
			share = 1;
		for (uint8_t off = 0; off < share; off++) {
			rc = read_one(r, off, out, err);
			if (rc < 0)
				return rc;
		}
	} while (ipmi_sdr_cache_next(r->sdr) == 1);
	return 0;
}

int gf_ipmi_sensors(void *session, struct gf_sensor_list *ret, struct gf_err *err)
{
	struct ipmi_session *s = session;
	struct reader r = {.s = s};
	struct gf_sensor_list l = {0};
	int rc;

	rc = gf_ipmi_sdr_open(s, &r.sdr, err);
	if (rc < 0)
		return rc;
	r.rd = ipmi_sensor_read_ctx_create(s->ctx);
	r.thr_rs = fiid_obj_create(tmpl_cmd_get_sensor_thresholds_rs);
	if (!r.rd || !r.thr_rs) {
		rc = gf_err_set(err, GF_E_NOMEM, GF_EK_INTERNAL, "out of memory");
		goto out;
	}
	rc = read_all(&r, &l, err);
	if (rc == 0) {
		*ret = l;
		memset(&l, 0, sizeof(l));
	}
out:
	gf_sensor_list_release(&l);
	if (r.thr_rs)
		fiid_obj_destroy(r.thr_rs);
	if (r.rd)
		ipmi_sensor_read_ctx_destroy(r.rd);
	return rc;
}
