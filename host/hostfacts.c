#include "host/hostfacts.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/util.h"

/* ---- the commands ----------------------------------------------------- */

/*
 * The exact commands, as documented in gpufleet-host(1). Tools are found on
 * PATH (env, not an absolute path); LC_ALL=C keeps their messages parseable.
 */
static const struct {
	const char *name;
	const char *line;
} cmds[GF_HC_COUNT] = {
	[GF_HC_SMI_QUERY] = {"nvidia-smi --query-gpu", NULL},
	[GF_HC_SMI] = {"nvidia-smi", "env LC_ALL=C nvidia-smi"},
	[GF_HC_PROC_VERSION] = {"/proc/driver/nvidia/version", "cat /proc/driver/nvidia/version"},
	[GF_HC_NVCC] = {"nvcc", "env LC_ALL=C nvcc --version"},
	[GF_HC_CUDA_JSON] = {"/usr/local/cuda/version.json", "cat /usr/local/cuda/version.json"},
	[GF_HC_UNAME] = {"uname", "uname -r"},
	[GF_HC_OS_RELEASE] = {"/etc/os-release", "cat /etc/os-release"},
	[GF_HC_FABRICMANAGER] = {"nv-fabricmanager", "env LC_ALL=C nv-fabricmanager --version"},
	[GF_HC_OFED] = {"ofed_info", "env LC_ALL=C ofed_info -s"},
	[GF_HC_JOURNAL] = {"journalctl", "env LC_ALL=C journalctl -k --no-pager --since=-24h"},
	[GF_HC_CUDA_TXT] = {"/usr/local/cuda/version.txt", "cat /usr/local/cuda/version.txt"},
	[GF_HC_DMESG] = {"dmesg", "env LC_ALL=C dmesg --since=-24h"},
	[GF_HC_DMESG_ALL] = {"dmesg", "env LC_ALL=C dmesg"},
};

const char *const gf_hostfacts_query_fields[] = {
	"index",
	"name",
	"serial",
	"uuid",
	"pci.bus_id",
	"vbios_version",
	"memory.total",
	"mig.mode.current",
	"persistence_mode",
	"ecc.errors.corrected.volatile.total",
	"ecc.errors.uncorrected.volatile.total",
	"ecc.errors.corrected.aggregate.total",
	"ecc.errors.uncorrected.aggregate.total",
	"retired_pages.pending",
	"remapped_rows.pending",
	"inforom.img",
};
const size_t gf_hostfacts_nquery_fields = NELEM(gf_hostfacts_query_fields);

const char *gf_hostcmd_line(enum gf_hostcmd c)
{
	return (unsigned)c < GF_HC_COUNT ? cmds[c].line : NULL;
}

const char *gf_hostcmd_name(enum gf_hostcmd c)
{
	return (unsigned)c < GF_HC_COUNT ? cmds[c].name : "?";
}

char *gf_hostfacts_query_cmd(const char *const *fields, size_t n)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_adds(&b, "env LC_ALL=C nvidia-smi --query-gpu=");
	for (size_t i = 0; i < n; i++) {
		if (i)
			gf_buf_addc(&b, ',');
		gf_buf_adds(&b, fields[i]);
	}
	gf_buf_adds(&b, " --format=csv,noheader,nounits");
	return gf_buf_detach(&b);
}

bool gf_hostcmd_missing(const struct gf_cmd_out *o)
{
	return o->ran && !o->timed_out && (o->status == 127 || o->status == 126);
}

/* ---- small text helpers ----------------------------------------------- */

/* The next line of *p: its start and length (without "\r\n"); false at the end. */
static bool next_line(const char **p, const char **ret, size_t *ret_len)
{
	const char *s = *p, *e;
	size_t len;

	if (!s || !*s)
		return false;
	e = strchr(s, '\n');
	len = e ? (size_t)(e - s) : strlen(s);
	*p = e ? e + 1 : s + len;
	if (len && s[len - 1] == '\r')
		len--;
	*ret = s;
	*ret_len = len;
	return true;
}

static void trim(const char **s, size_t *len)
{
	while (*len && isspace((unsigned char)**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len && isspace((unsigned char)(*s)[*len - 1]))
		(*len)--;
}

/* Case-insensitive search for @needle within the @len bytes at @s. */
static const char *memcasemem(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle);

	for (size_t i = 0; n <= len && i <= len - n; i++)
		if (strncasecmp(s + i, needle, n) == 0)
			return s + i;
	return NULL;
}

/*
 * A version token at @s: a digit, then digits, letters, '.', '-' or '_';
 * it must hold a '.'. Returns its length, 0 when there is none.
 */
static size_t version_len(const char *s, size_t max)
{
	size_t n = 0;
	bool dot = false;

	if (!max || !isdigit((unsigned char)s[0]))
		return 0;
	while (n < max &&
	       (isalnum((unsigned char)s[n]) || s[n] == '.' || s[n] == '-' || s[n] == '_')) {
		dot |= s[n] == '.';
		n++;
	}
	while (n && (s[n - 1] == '.' || s[n - 1] == '-'))
		n--;
	return dot ? n : 0;
}

/* Does @s (NUL terminated) contain @needle within one line? */
static const char *find_line_with(const char *text, const char *needle, size_t *ret_len)
{
	const char *p = text, *l;
	size_t len;

	while (next_line(&p, &l, &len)) {
		if (memcasemem(l, len, needle)) {
			*ret_len = len;
			return l;
		}
	}
	return NULL;
}

/* ---- nvidia-smi ------------------------------------------------------- */

/*
 * In one line, "KEY<spaces>:<spaces>VERSION" for the first occurrence of @key
 * that has a version after it; a new string or NULL.
 */
static char *keyed_version(const char *l, size_t len, const char *key)
{
	const char *end = l + len, *k = l;

	while ((k = memcasemem(k, (size_t)(end - k), key))) {
		const char *v = k + strlen(key);

		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		if (v < end && *v == ':') {
			size_t n;

			v++;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			n = version_len(v, (size_t)(end - v));
			if (n)
				return gf_xstrndup(v, n);
		}
		k++;
	}
	return NULL;
}

int gf_hostfacts_parse_smi_versions(const char *text, char **ret_driver, char **ret_cuda)
{
	char *kmd = NULL, *drv = NULL, *umd = NULL, *cuda = NULL;
	const char *p = text, *l;
	size_t len;

	while (next_line(&p, &l, &len)) {
		if (!kmd)
			kmd = keyed_version(l, len, "KMD Version");
		if (!drv)
			drv = keyed_version(l, len, "Driver Version");
		if (!umd)
			umd = keyed_version(l, len, "CUDA UMD Version");
		if (!cuda)
			cuda = keyed_version(l, len, "CUDA Version");
	}
	/* 610 keeps the old keys, deprecated; the new ones win where both are given. */
	if (kmd) {
		free(drv);
		drv = kmd;
	}
	if (umd) {
		free(cuda);
		cuda = umd;
	}
	*ret_driver = drv;
	*ret_cuda = cuda;
	return drv || cuda ? 0 : GF_E_NOTFOUND;
}

enum gf_host_health gf_hostfacts_smi_error(const char *text, char **ret_line)
{
	static const struct {
		const char *needle;
		enum gf_host_health health;
	} msgs[] = {
		{"couldn't communicate with the NVIDIA driver", GF_HEALTH_NO_DRIVER},
		{"Unable to determine the device handle", GF_HEALTH_GPU_LOST},
		{"GPU is lost", GF_HEALTH_GPU_LOST},
		{"fallen off the bus", GF_HEALTH_GPU_LOST},
		{"No devices were found", GF_HEALTH_GPU_LOST},
		/* After a driver install without a reboot: the old module is still loaded. */
		{"Driver/library version mismatch", GF_HEALTH_DRIVER_MISMATCH},
	};

	for (size_t i = 0; text && i < NELEM(msgs); i++) {
		size_t len;
		const char *l = find_line_with(text, msgs[i].needle, &len);

		if (l) {
			trim(&l, &len);
			if (ret_line)
				*ret_line = gf_xstrndup(l, len);
			return msgs[i].health;
		}
	}
	return GF_HEALTH_OK;
}

char *gf_hostfacts_invalid_field(const char *out)
{
	const char *p = out, *l;
	size_t len;

	/* 'Field "x" is not a valid field to query.' (Windows builds print curly quotes). */
	while (next_line(&p, &l, &len)) {
		const char *end = l + len, *s, *e;

		trim(&l, &len);
		end = l + len;
		if (len < 6 || strncmp(l, "Field ", 6) != 0 ||
		    !memcasemem(l, len, "is not a valid field to query"))
			continue;
		s = l + 6;
		if (*s == '"')
			s++;
		else if ((size_t)(end - s) >= 3 && memcmp(s, "\xe2\x80\x9c", 3) == 0)
			s += 3;
		else
			continue;
		for (e = s; e < end && *e != '"' && *e != '\xe2'; e++)
			;
		if (e == s || e == end)
			continue;
		return gf_xstrndup(s, (size_t)(e - s));
	}
	return NULL;
}

/* "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "": no value. */
static bool no_value(const char *v, size_t len)
{
	return len == 0 || (len == 3 && strncasecmp(v, "N/A", 3) == 0) ||
	       (v[0] == '[' && v[len - 1] == ']');
}

static char *value_str(const char *v, size_t len)
{
	return no_value(v, len) ? NULL : gf_xstrndup(v, len);
}

static enum gf_tri value_tri(const char *v, size_t len)
{
	static const char *const yes[] = {"Yes", "Enabled", "On", "True"};
	static const char *const no[] = {"No", "Disabled", "Off", "False"};

	for (size_t i = 0; i < NELEM(yes); i++) {
		if (strlen(yes[i]) == len && strncasecmp(v, yes[i], len) == 0)
			return GF_TRI_YES;
		if (strlen(no[i]) == len && strncasecmp(v, no[i], len) == 0)
			return GF_TRI_NO;
	}
	return GF_TRI_UNKNOWN;
}

/* A count, tolerating a unit after it ("81559 MiB") when nounits was not honoured. */
static struct gf_count value_count(const char *v, size_t len)
{
	struct gf_count c = {0};
	uint64_t x = 0;
	size_t i = 0;

	if (no_value(v, len) || !isdigit((unsigned char)v[0]))
		return c;
	for (; i < len && isdigit((unsigned char)v[i]); i++) {
		if (x > (UINT64_MAX - 9) / 10)
			return c;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	if (i < len && v[i] != ' ')
		return c;
	c.set = true;
	c.v = x;
	return c;
}

enum qf {
	QF_INDEX,
	QF_NAME,
	QF_SERIAL,
	QF_UUID,
	QF_PCI,
	QF_VBIOS,
	QF_MEMORY,
	QF_MIG,
	QF_PERSIST,
	QF_ECC_VC,
	QF_ECC_VU,
	QF_ECC_AC,
	QF_ECC_AU,
	QF_RETIRED,
	QF_REMAPPED,
	QF_INFOROM,
	QF_OTHER,
};

static enum qf field_id(const char *f)
{
	static const struct {
		const char *name;
		enum qf id;
	} names[] = {
		{"index", QF_INDEX},
		{"name", QF_NAME},
		{"gpu_name", QF_NAME},
		{"serial", QF_SERIAL},
		{"gpu_serial", QF_SERIAL},
		{"uuid", QF_UUID},
		{"gpu_uuid", QF_UUID},
		{"pci.bus_id", QF_PCI},
		{"gpu_bus_id", QF_PCI},
		{"vbios_version", QF_VBIOS},
		{"memory.total", QF_MEMORY},
		{"mig.mode.current", QF_MIG},
		{"persistence_mode", QF_PERSIST},
		{"ecc.errors.corrected.volatile.total", QF_ECC_VC},
		{"ecc.errors.uncorrected.volatile.total", QF_ECC_VU},
		{"ecc.errors.corrected.aggregate.total", QF_ECC_AC},
		{"ecc.errors.uncorrected.aggregate.total", QF_ECC_AU},
		{"retired_pages.pending", QF_RETIRED},
		{"remapped_rows.pending", QF_REMAPPED},
		{"inforom.img", QF_INFOROM},
		{"inforom.image", QF_INFOROM},
	};

	for (size_t i = 0; i < NELEM(names); i++)
		if (strcmp(names[i].name, f) == 0)
			return names[i].id;
	return QF_OTHER;
}

static void gpu_release(struct gf_host_gpu *g)
{
	free(g->name);
	free(g->serial);
	free(g->uuid);
	free(g->pci);
	free(g->vbios);
	free(g->inforom);
	memset(g, 0, sizeof(*g));
}

void gf_host_gpus_free(struct gf_host_gpu *gpus, size_t n)
{
	for (size_t i = 0; gpus && i < n; i++)
		gpu_release(&gpus[i]);
	free(gpus);
}

static void set_field(struct gf_host_gpu *g, enum qf id, const char *v, size_t len)
{
	switch (id) {
	case QF_INDEX: {
		struct gf_count c = value_count(v, len);

		if (c.set && c.v < 100000)
			g->index = (int)c.v;
		break;
	}
	case QF_NAME: g->name = value_str(v, len); break;
	case QF_SERIAL: g->serial = value_str(v, len); break;
	case QF_UUID: g->uuid = value_str(v, len); break;
	case QF_PCI: g->pci = value_str(v, len); break;
	case QF_VBIOS: g->vbios = value_str(v, len); break;
	case QF_MEMORY: g->memory_total_mib = value_count(v, len); break;
	case QF_MIG: g->mig_mode = value_tri(v, len); break;
	case QF_PERSIST: g->persistence_mode = value_tri(v, len); break;
	case QF_ECC_VC: g->ecc_volatile_corrected = value_count(v, len); break;
	case QF_ECC_VU: g->ecc_volatile_uncorrected = value_count(v, len); break;
	case QF_ECC_AC: g->ecc_aggregate_corrected = value_count(v, len); break;
	case QF_ECC_AU: g->ecc_aggregate_uncorrected = value_count(v, len); break;
	case QF_RETIRED: g->retired_pages_pending = value_tri(v, len); break;
	case QF_REMAPPED: g->remapped_rows_pending = value_tri(v, len); break;
	case QF_INFOROM: g->inforom = value_str(v, len); break;
	case QF_OTHER: break;
	}
}

int gf_hostfacts_parse_query_csv(const char *text, const char *const *fields, size_t nfields,
				 struct gf_host_gpu **ret, size_t *ret_n, struct gf_err *err)
{
	struct gf_host_gpu *gpus = NULL;
	size_t n = 0, cap = 0, lineno = 0;
	const char *p = text, *l;
	size_t len;
	bool has_index = false;

	for (size_t i = 0; i < nfields; i++)
		has_index |= field_id(fields[i]) == QF_INDEX;
	while (next_line(&p, &l, &len)) {
		struct gf_host_gpu g = {0};
		const char *end, *s;
		size_t col = 0;
		char *msg = NULL;

		lineno++;
		trim(&l, &len);
		if (!len)
			continue;
		/* nvidia-smi prints a lost GPU's error among the rows of the others. */
		{
			char *line = gf_xstrndup(l, len);
			enum gf_host_health h = gf_hostfacts_smi_error(line, &msg);

			free(line);
			free(msg);
			if (h != GF_HEALTH_OK)
				continue;
		}
		end = l + len;
		s = l;
		for (;;) {
			const char *c = memchr(s, ',', (size_t)(end - s));
			const char *e = c ? c : end;
			const char *v = s;
			size_t vlen = (size_t)(e - s);

			trim(&v, &vlen);
			if (col < nfields)
				set_field(&g, field_id(fields[col]), v, vlen);
			col++;
			if (!c)
				break;
			s = c + 1;
		}
		if (col != nfields) {
			gpu_release(&g);
			gf_host_gpus_free(gpus, n);
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "nvidia-smi --query-gpu line %zu has %zu columns, not %zu",
					  lineno, col, nfields);
		}
		if (n == GF_HOST_MAX_GPUS) {
			gpu_release(&g);
			gf_host_gpus_free(gpus, n);
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "nvidia-smi --query-gpu lists more than %d GPUs",
					  GF_HOST_MAX_GPUS);
		}
		if (!has_index)
			g.index = (int)n;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			gpus = gf_xrealloc(gpus, cap * sizeof(*gpus));
		}
		gpus[n++] = g;
	}
	*ret = gpus;
	*ret_n = n;
	return 0;
}

/* ---- other tools and files -------------------------------------------- */

int gf_hostfacts_parse_proc_version(const char *text, char **ret_version,
				    enum gf_driver_module *ret_module)
{
	const char *l, *k, *end;
	size_t len;

	l = find_line_with(text, "NVRM version:", &len);
	if (!l)
		return GF_E_NOTFOUND;
	end = l + len;
	k = memcasemem(l, len, "Kernel Module");
	if (!k)
		return GF_E_NOTFOUND;
	/* "... Kernel Module  535.161.08  <date>" or "... Open Kernel Module for x86_64  565.57.01 ..." */
	for (const char *t = k + strlen("Kernel Module"); t < end;) {
		size_t n;

		while (t < end && isspace((unsigned char)*t))
			t++;
		n = version_len(t, (size_t)(end - t));
		if (n) {
			*ret_version = gf_xstrndup(t, n);
			*ret_module = memcasemem(l, (size_t)(k - l), "Open ")
					      ? GF_MODULE_OPEN
					      : GF_MODULE_PROPRIETARY;
			return 0;
		}
		while (t < end && !isspace((unsigned char)*t))
			t++;
	}
	return GF_E_NOTFOUND;
}

/* The version token right after @key on the first line that has it. */
static int version_after(const char *text, const char *key, char **ret)
{
	const char *p = text, *l;
	size_t len;

	while (next_line(&p, &l, &len)) {
		const char *k = memcasemem(l, len, key), *end = l + len, *v;
		size_t n;

		if (!k)
			continue;
		v = k + strlen(key);
		while (v < end && (isspace((unsigned char)*v) || *v == ':'))
			v++;
		n = version_len(v, (size_t)(end - v));
		if (n) {
			*ret = gf_xstrndup(v, n);
			return 0;
		}
	}
	return GF_E_NOTFOUND;
}

int gf_hostfacts_parse_nvcc(const char *text, char **ret)
{
	const char *l, *end, *r, *v;
	size_t len, n;

	l = find_line_with(text, "Cuda compilation tools, release ", &len);
	if (!l)
		return GF_E_NOTFOUND;
	end = l + len;
	r = memcasemem(l, len, "release ") + strlen("release ");
	v = memcasemem(r, (size_t)(end - r), ", V");
	if (v) {
		v += 3;
		n = version_len(v, (size_t)(end - v));
		if (n) {
			*ret = gf_xstrndup(v, n);
			return 0;
		}
	}
	n = version_len(r, (size_t)(end - r));
	if (!n)
		return GF_E_NOTFOUND;
	*ret = gf_xstrndup(r, n);
	return 0;
}

int gf_hostfacts_parse_cuda_json(const char *text, char **ret)
{
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	const char *v = json_string_value(json_object_get(json_object_get(root, "cuda"),
							  "version"));
	int rc = GF_E_NOTFOUND;

	if (v && version_len(v, strlen(v)) == strlen(v)) {
		*ret = gf_xstrdup(v);
		rc = 0;
	}
	json_decref(root);
	return rc;
}

int gf_hostfacts_parse_cuda_txt(const char *text, char **ret)
{
	return version_after(text, "CUDA Version", ret);
}

int gf_hostfacts_parse_fabricmanager(const char *text, char **ret)
{
	return version_after(text, "Fabric Manager version is", ret);
}

int gf_hostfacts_parse_first_line(const char *text, char **ret)
{
	const char *p = text, *l;
	size_t len;

	while (next_line(&p, &l, &len)) {
		trim(&l, &len);
		if (len) {
			*ret = gf_xstrndup(l, len);
			return 0;
		}
	}
	return GF_E_NOTFOUND;
}

int gf_hostfacts_parse_ofed(const char *text, char **ret)
{
	const char *p = text, *l;
	size_t len;

	while (next_line(&p, &l, &len)) {
		trim(&l, &len);
		while (len && l[len - 1] == ':')
			len--;
		if (len) {
			*ret = gf_xstrndup(l, len);
			return 0;
		}
	}
	return GF_E_NOTFOUND;
}

/* An os-release value: "quoted with \\ escapes", 'single quoted', or bare. */
static char *shell_value(const char *v, size_t len)
{
	struct gf_buf b = GF_BUF_INIT;

	if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
		for (size_t i = 1; i < len - 1; i++) {
			if (v[i] == '\\' && i + 1 < len - 1)
				i++;
			gf_buf_addc(&b, v[i]);
		}
	} else if (len >= 2 && v[0] == '\'' && v[len - 1] == '\'') {
		gf_buf_add(&b, v + 1, len - 2);
	} else {
		gf_buf_add(&b, v, len);
	}
	return gf_buf_detach(&b);
}

int gf_hostfacts_parse_os_release(const char *text, char **ret)
{
	char *pretty = NULL, *name = NULL, *version = NULL;
	const char *p = text, *l;
	size_t len;

	while (next_line(&p, &l, &len)) {
		const char *eq;
		char **slot = NULL;

		trim(&l, &len);
		eq = memchr(l, '=', len);
		if (!eq || l[0] == '#')
			continue;
		if ((size_t)(eq - l) == 11 && strncmp(l, "PRETTY_NAME", 11) == 0)
			slot = &pretty;
		else if ((size_t)(eq - l) == 4 && strncmp(l, "NAME", 4) == 0)
			slot = &name;
		else if ((size_t)(eq - l) == 10 && strncmp(l, "VERSION_ID", 10) == 0)
			slot = &version;
		if (slot && !*slot)
			*slot = shell_value(eq + 1, (size_t)(l + len - eq - 1));
	}
	if (pretty && !*pretty) {
		free(pretty);
		pretty = NULL;
	}
	if (!pretty && name && *name) {
		struct gf_buf b = GF_BUF_INIT;

		gf_buf_adds(&b, name);
		if (version && *version)
			gf_buf_addf(&b, " %s", version);
		pretty = gf_buf_detach(&b);
	}
	free(name);
	free(version);
	if (!pretty)
		return GF_E_NOTFOUND;
	*ret = pretty;
	return 0;
}

static int xid_cmp(const void *a, const void *b)
{
	const struct gf_xid_count *x = a, *y = b;

	return (x->code > y->code) - (x->code < y->code);
}

/* Is this an "NVRM: Xid (PCI:...): CODE," line? Its code into *@ret_code. */
static bool xid_line(const char *l, size_t len, unsigned *ret_code)
{
	const char *x = memcasemem(l, len, "NVRM: Xid ("), *end = l + len, *c;
	unsigned code = 0;
	size_t digits = 0;

	if (!x)
		return false;
	c = memchr(x, ')', (size_t)(end - x));
	if (!c || c + 1 >= end || c[1] != ':')
		return false;
	for (c += 2; c < end && *c == ' '; c++)
		;
	for (; c < end && isdigit((unsigned char)*c) && digits < 6; c++, digits++)
		code = code * 10 + (unsigned)(*c - '0');
	if (!digits || (c < end && isdigit((unsigned char)*c)))
		return false;
	*ret_code = code;
	return true;
}

/* The next Xid line of the text at *@p (advanced): the line, its length and its code. */
static bool next_xid(const char **p, const char **l, size_t *len, unsigned *code)
{
	while (*p && next_line(p, l, len))
		if (xid_line(*l, *len, code))
			return true;
	return false;
}

void gf_hostfacts_count_xids(const char *text, struct gf_xid_count **ret, size_t *ret_n)
{
	struct gf_xid_count *v = NULL;
	size_t n = 0, cap = 0, len, i;
	const char *p = text, *l;
	unsigned code = 0;

	while (next_xid(&p, &l, &len, &code)) {
		for (i = 0; i < n && v[i].code != code; i++)
			;
		if (i == n) {
			if (n == cap) {
				cap = cap ? cap * 2 : 4;
				v = gf_xrealloc(v, cap * sizeof(*v));
			}
			v[n].code = code;
			v[n++].count = 0;
		}
		if (v[i].count < ~0u)
			v[i].count++;
	}
	if (n)
		gf_sort(v, n, sizeof(*v), xid_cmp);
	*ret = v;
	*ret_n = n;
}

void gf_hostfacts_xid_lines(const char *text, struct gf_xid_line **ret, size_t *ret_n)
{
	struct gf_xid_line *v = NULL, *x;
	size_t n = 0, first = 0, len;
	const char *p = text, *l;
	unsigned code = 0;

	while (next_xid(&p, &l, &len, &code)) {
		if (!v)
			v = gf_xcalloc(GF_XID_LINES_MAX, sizeof(*v));
		/* A ring of the last GF_XID_LINES_MAX: a flooding log costs no more. */
		x = &v[(first + n) % GF_XID_LINES_MAX];
		if (n == GF_XID_LINES_MAX) {
			free(x->line);
			first = (first + 1) % GF_XID_LINES_MAX;
		} else {
			n++;
		}
		x->code = code;
		x->line = gf_xstrndup(l, len < GF_XID_LINE_MAX ? len : GF_XID_LINE_MAX);
	}
	if (first) {
		struct gf_xid_line *w = gf_xcalloc(GF_XID_LINES_MAX, sizeof(*w));

		for (size_t k = 0; k < n; k++)
			w[k] = v[(first + k) % GF_XID_LINES_MAX];
		free(v);
		v = w;
	}
	*ret = v;
	*ret_n = n;
}

void gf_xid_lines_free(struct gf_xid_line *v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		free(v[k].line);
	free(v);
}

int gf_cuda_version_cmp(const char *a, const char *b)
{
	unsigned long am, an, bm, bn;
	char *e;

	if (!a || !b || !isdigit((unsigned char)*a) || !isdigit((unsigned char)*b))
		return 0;
	am = strtoul(a, &e, 10);
	an = *e == '.' ? strtoul(e + 1, NULL, 10) : 0;
	bm = strtoul(b, &e, 10);
	bn = *e == '.' ? strtoul(e + 1, NULL, 10) : 0;
	if (am != bm)
		return am < bm ? -1 : 1;
	if (an != bn)
		return an < bn ? -1 : 1;
	return 0;
}

/* ---- assembling the facts --------------------------------------------- */

static const char *const health_names[] = {
	[GF_HEALTH_OK] = "ok",
	[GF_HEALTH_NO_NVIDIA_SMI] = "no-nvidia-smi",
	[GF_HEALTH_NO_DRIVER] = "no-driver",
	[GF_HEALTH_GPU_LOST] = "gpu-lost",
	[GF_HEALTH_TIMEOUT] = "timeout",
	[GF_HEALTH_DRIVER_MISMATCH] = "driver-mismatch",
	[GF_HEALTH_UNKNOWN] = "unknown",
};

const char *gf_host_health_name(enum gf_host_health h)
{
	return (unsigned)h < NELEM(health_names) ? health_names[h] : "ok";
}

int gf_host_health_parse(const char *s)
{
	for (size_t i = 0; s && i < NELEM(health_names); i++)
		if (health_names[i] && strcmp(health_names[i], s) == 0)
			return (int)i;
	return -1;
}

static const char *const module_names[] = {
	[GF_MODULE_OPEN] = "open",
	[GF_MODULE_PROPRIETARY] = "proprietary",
};

const char *gf_driver_module_name(enum gf_driver_module m)
{
	return (unsigned)m < NELEM(module_names) ? module_names[m] : NULL;
}

int gf_driver_module_parse(const char *s)
{
	for (size_t i = 0; s && i < NELEM(module_names); i++)
		if (module_names[i] && strcmp(module_names[i], s) == 0)
			return (int)i;
	return -1;
}

void gf_hostfacts_release(struct gf_hostfacts *f)
{
	free(f->driver);
	free(f->driver_library);
	free(f->cuda_driver);
	free(f->cuda_toolkit);
	free(f->kernel);
	free(f->os);
	free(f->fabricmanager);
	free(f->ofed);
	gf_host_gpus_free(f->gpus, f->ngpus);
	free(f->health_detail);
	free(f->xid_source);
	free(f->xid_note);
	free(f->xids);
	gf_xid_lines_free(f->xid_lines, f->nxid_lines);
	for (size_t i = 0; i < f->nnotes; i++)
		free(f->notes[i]);
	free(f->notes);
	for (size_t i = 0; i < f->nfailed; i++) {
		free(f->failed[i].command);
		free(f->failed[i].message);
	}
	free(f->failed);
	memset(f, 0, sizeof(*f));
}

void gf_hostfacts_add_failure(struct gf_hostfacts *f, const char *command, const char *message)
{
	f->failed = gf_xrealloc(f->failed, (f->nfailed + 1) * sizeof(*f->failed));
	f->failed[f->nfailed].command = gf_xstrdup(command ? command : "?");
	f->failed[f->nfailed++].message = gf_xstrdup(message ? message : "failed");
}

int gf_hostfacts_partial_err(const struct gf_hostfacts *f, struct gf_err *err)
{
	struct gf_buf b = GF_BUF_INIT;
	int rc;

	if (!f->nfailed)
		return 0;
	for (size_t i = 0; i < f->nfailed; i++)
		gf_buf_addf(&b, "%s%s", i ? "; " : "", f->failed[i].message);
	rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
			"answered in part: %s (the other facts are kept)", gf_buf_str(&b));
	gf_buf_release(&b);
	return rc;
}

static void add_note(struct gf_hostfacts *f, char *note)
{
	f->notes = gf_xrealloc(f->notes, (f->nnotes + 1) * sizeof(*f->notes));
	f->notes[f->nnotes++] = note;
}

/* Ran, finished in time and exited 0. */
static bool succeeded(const struct gf_cmd_out *o)
{
	return o->ran && !o->timed_out && o->status == 0;
}

static char *first_line_of(const struct gf_cmd_out *o)
{
	char *s = NULL;

	/* nvidia-smi writes its errors on stdout; stderr may hold login noise. */
	if (gf_hostfacts_parse_first_line(o->out, &s) < 0 &&
	    gf_hostfacts_parse_first_line(o->err, &s) < 0)
		return NULL;
	return s;
}

/*
 * The kernel log could not be read for lack of permission: a result, not a
 * failure. journalctl says so, or shows a user outside adm/systemd-journal
 * only their own messages; dmesg fails to read the kernel buffer.
 */
static bool log_denied(const struct gf_cmd_out *o)
{
	static const char *const needles[] = {
		"insufficient permissions",
		"not seeing messages from other users",
		"read kernel buffer failed",
	};

	for (size_t i = 0; i < NELEM(needles); i++) {
		size_t len;

		if (find_line_with(o->err, needles[i], &len) ||
		    find_line_with(o->out, needles[i], &len))
			return true;
	}
	return false;
}

bool gf_hostfacts_need_fallback(enum gf_hostcmd c, const struct gf_cmd_out outs[GF_HC_COUNT])
{
	switch (c) {
	case GF_HC_CUDA_TXT:
		return !succeeded(&outs[GF_HC_NVCC]) && outs[GF_HC_CUDA_JSON].ran &&
		       !succeeded(&outs[GF_HC_CUDA_JSON]) && !outs[GF_HC_CUDA_JSON].timed_out;
	case GF_HC_DMESG:
		return outs[GF_HC_JOURNAL].ran && !outs[GF_HC_JOURNAL].timed_out &&
		       (!succeeded(&outs[GF_HC_JOURNAL]) || log_denied(&outs[GF_HC_JOURNAL]));
	case GF_HC_DMESG_ALL:
		/* An older dmesg refuses --since: read all of it (since boot), unless not allowed. */
		return outs[GF_HC_DMESG].ran && !outs[GF_HC_DMESG].timed_out &&
		       !succeeded(&outs[GF_HC_DMESG]) && !gf_hostcmd_missing(&outs[GF_HC_DMESG]) &&
		       !log_denied(&outs[GF_HC_DMESG]);
	default: return false;
	}
}

static void build_health(const struct gf_cmd_out outs[GF_HC_COUNT], struct gf_hostfacts *f)
{
	const struct gf_cmd_out *q = &outs[GF_HC_SMI_QUERY], *s = &outs[GF_HC_SMI];
	const struct gf_cmd_out *both[] = {q, s};

	if (gf_hostcmd_missing(q) || gf_hostcmd_missing(s)) {
		const struct gf_cmd_out *m = gf_hostcmd_missing(q) ? q : s;
		size_t len;
		/* The shell's own complaint, not a login message on the same stream. */
		const char *l = find_line_with(m->err, "nvidia-smi", &len);

		f->health = GF_HEALTH_NO_NVIDIA_SMI;
		if (l) {
			trim(&l, &len);
			f->health_detail = gf_xstrndup(l, len);
		}
		if (!f->health_detail)
			f->health_detail = gf_xstrdup("nvidia-smi is not installed");
		return;
	}
	for (size_t i = 0; i < NELEM(both); i++) {
		enum gf_host_health h;

		if (!both[i]->ran)
			continue;
		h = gf_hostfacts_smi_error(both[i]->out, &f->health_detail);
		if (h == GF_HEALTH_OK)
			h = gf_hostfacts_smi_error(both[i]->err, &f->health_detail);
		if (h != GF_HEALTH_OK) {
			f->health = h;
			return;
		}
	}
	if ((q->ran && q->timed_out) || (s->ran && s->timed_out)) {
		f->health = GF_HEALTH_TIMEOUT;
		f->health_detail =
			gf_xstrdup(q->timed_out ? "nvidia-smi --query-gpu did not finish in time"
						: "nvidia-smi did not finish in time");
	}
}

static void build_xids(const struct gf_cmd_out outs[GF_HC_COUNT], struct gf_hostfacts *f)
{
	const struct gf_cmd_out *j = &outs[GF_HC_JOURNAL], *d = &outs[GF_HC_DMESG];
	const struct gf_cmd_out *da = &outs[GF_HC_DMESG_ALL];
	bool denied = false;

	if (succeeded(j) && !log_denied(j)) {
		gf_hostfacts_count_xids(j->out, &f->xids, &f->nxids);
		gf_hostfacts_xid_lines(j->out, &f->xid_lines, &f->nxid_lines);
		f->xid_read = true;
		f->xid_source = gf_xstrdup("journal");
		return;
	}
	if (succeeded(d) && !log_denied(d)) {
		gf_hostfacts_count_xids(d->out, &f->xids, &f->nxids);
		gf_hostfacts_xid_lines(d->out, &f->xid_lines, &f->nxid_lines);
		f->xid_read = true;
		f->xid_source = gf_xstrdup("dmesg");
		return;
	}
	if (succeeded(da) && !log_denied(da)) {
		gf_hostfacts_count_xids(da->out, &f->xids, &f->nxids);
		gf_hostfacts_xid_lines(da->out, &f->xid_lines, &f->nxid_lines);
		f->xid_read = true;
		f->xid_source = gf_xstrdup("dmesg-boot");
		return;
	}
	denied = (j->ran && log_denied(j)) || (d->ran && log_denied(d)) ||
		 (da->ran && log_denied(da));
	if (denied)
		f->xid_note = gf_xstrdup("no permission to read the kernel log");
	else if ((j->ran && j->timed_out) || (d->ran && d->timed_out) || (da->ran && da->timed_out))
		f->xid_note = gf_xstrdup("reading the kernel log did not finish in time");
	else if (gf_hostcmd_missing(j) && (!d->ran || gf_hostcmd_missing(d)))
		f->xid_note = gf_xstrdup("neither journalctl nor dmesg is installed");
	else if (j->ran || d->ran)
		f->xid_note = gf_xstrdup("the kernel log could not be read");
}

/* Why nvidia-smi --query-gpu exited non-zero without a known health message, into @e. */
static void query_failed(const struct gf_cmd_out *q, struct gf_err *e)
{
	char *line = first_line_of(q);
	char *bad = gf_hostfacts_invalid_field(q->out);

	if (bad)
		gf_err_set(e, GF_E_NODE, GF_EK_PROTOCOL, "nvidia-smi refused the query field '%s'",
			   bad);
	else
		gf_err_set(e, GF_E_NODE, GF_EK_PROTOCOL,
			   "nvidia-smi --query-gpu failed (exit %d)%s%s", q->status,
			   line ? ": " : "", line ? line : "");
	free(line);
	free(bad);
}

int gf_hostfacts_build(const struct gf_cmd_out outs[GF_HC_COUNT], const char *const *fields,
		       size_t nfields, struct gf_hostfacts *ret, struct gf_err *err)
{
	struct gf_hostfacts f = {0};
	const struct gf_cmd_out *q = &outs[GF_HC_SMI_QUERY];
	char *pdrv = NULL;

	(void)err;
	build_health(outs, &f);
	if (f.health == GF_HEALTH_OK && q->ran && !q->timed_out) {
		struct gf_err qe = {0};

		/* A reason no health state names costs the GPUs, never the node's other facts. */
		if (q->status != 0)
			query_failed(q, &qe);
		else
			gf_hostfacts_parse_query_csv(q->out, fields, nfields, &f.gpus, &f.ngpus,
						     &qe);
		if (qe.msg[0]) {
			gf_hostfacts_add_failure(&f, gf_hostcmd_name(GF_HC_SMI_QUERY), qe.msg);
			f.health = GF_HEALTH_UNKNOWN;
			f.health_detail = gf_xstrdup(qe.msg);
		}
	} else if (f.health == GF_HEALTH_DRIVER_MISMATCH) {
		/* nvidia-smi names the library it loaded: "NVML library version: 570.124". */
		if (version_after(q->out, "NVML library version", &f.driver_library) < 0)
			version_after(outs[GF_HC_SMI].out, "NVML library version",
				      &f.driver_library);
	} else if (f.health == GF_HEALTH_GPU_LOST && q->ran && !q->timed_out) {
		/* The GPUs still on the bus answer; the lost one is in health. */
		if (gf_hostfacts_parse_query_csv(q->out, fields, nfields, &f.gpus, &f.ngpus, NULL) <
		    0) {
			f.gpus = NULL;
			f.ngpus = 0;
		}
	}

	if (succeeded(&outs[GF_HC_SMI]) || outs[GF_HC_SMI].ran)
		gf_hostfacts_parse_smi_versions(outs[GF_HC_SMI].out, &f.driver, &f.cuda_driver);
	if (succeeded(&outs[GF_HC_PROC_VERSION]) &&
	    gf_hostfacts_parse_proc_version(outs[GF_HC_PROC_VERSION].out, &pdrv,
					    &f.driver_module) == 0) {
		if (!f.driver)
			f.driver = pdrv;
		else
			free(pdrv);
	}
	if (!(succeeded(&outs[GF_HC_NVCC]) &&
	      gf_hostfacts_parse_nvcc(outs[GF_HC_NVCC].out, &f.cuda_toolkit) == 0) &&
	    !(succeeded(&outs[GF_HC_CUDA_JSON]) &&
	      gf_hostfacts_parse_cuda_json(outs[GF_HC_CUDA_JSON].out, &f.cuda_toolkit) == 0) &&
	    succeeded(&outs[GF_HC_CUDA_TXT]))
		gf_hostfacts_parse_cuda_txt(outs[GF_HC_CUDA_TXT].out, &f.cuda_toolkit);
	if (succeeded(&outs[GF_HC_UNAME]))
		gf_hostfacts_parse_first_line(outs[GF_HC_UNAME].out, &f.kernel);
	if (succeeded(&outs[GF_HC_OS_RELEASE]))
		gf_hostfacts_parse_os_release(outs[GF_HC_OS_RELEASE].out, &f.os);
	if (succeeded(&outs[GF_HC_FABRICMANAGER]))
		gf_hostfacts_parse_fabricmanager(outs[GF_HC_FABRICMANAGER].out, &f.fabricmanager);
	if (succeeded(&outs[GF_HC_OFED]))
		gf_hostfacts_parse_ofed(outs[GF_HC_OFED].out, &f.ofed);
	build_xids(outs, &f);

	if (f.cuda_toolkit && f.cuda_driver &&
	    gf_cuda_version_cmp(f.cuda_toolkit, f.cuda_driver) > 0) {
		struct gf_buf b = GF_BUF_INIT;

		gf_buf_addf(&b, "cuda toolkit %s is newer than the driver supports (%s)",
			    f.cuda_toolkit, f.cuda_driver);
		add_note(&f, gf_buf_detach(&b));
	}
	*ret = f;
	return 0;
}
