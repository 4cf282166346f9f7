/*
 * Host facts: what a GPU node's operating system says about its NVIDIA
 * driver, CUDA, GPUs and their health. The parsers here are pure functions
 * of command output (no I/O, thread-safe); host/hostcollect.c runs the
 * commands, locally or over SSH, and hands their output to
 * gf_hostfacts_build().
 */
#ifndef GF_HOSTFACTS_H
#define GF_HOSTFACTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

enum gf_host_health {
	GF_HEALTH_OK = 0,
	GF_HEALTH_NO_NVIDIA_SMI, /* nvidia-smi is not installed (or not on PATH) */
	GF_HEALTH_NO_DRIVER,     /* "couldn't communicate with the NVIDIA driver" */
	GF_HEALTH_GPU_LOST,      /* "Unable to determine the device handle": fell off the bus */
	GF_HEALTH_TIMEOUT,       /* nvidia-smi did not answer before the deadline */
	GF_HEALTH_DRIVER_MISMATCH, /* "Driver/library version mismatch": a driver installed, not loaded */
	GF_HEALTH_UNKNOWN, /* nvidia-smi failed for a reason it did not name: see failed[] */
};

/* A yes/no fact that a driver may not report. */
enum gf_tri {
	GF_TRI_UNKNOWN = 0,
	GF_TRI_NO,
	GF_TRI_YES,
};

/* A count that a driver may not report ("[N/A]"). */
struct gf_count {
	bool set;
	uint64_t v;
};

struct gf_host_gpu {
	int index;
	char *name;
	char *serial;
	char *uuid;
	char *pci; /* "00000000:19:00.0" */
	char *vbios;
	struct gf_count memory_total_mib;
	enum gf_tri mig_mode; /* current MIG mode: yes = enabled */
	enum gf_tri persistence_mode;
	struct gf_count ecc_volatile_corrected, ecc_volatile_uncorrected;
	struct gf_count ecc_aggregate_corrected, ecc_aggregate_uncorrected;
	enum gf_tri retired_pages_pending;
	enum gf_tri remapped_rows_pending;
	char *inforom; /* InfoROM image version */
};

struct gf_xid_count {
	unsigned code;
	unsigned count;
};

/* One Xid line of the kernel log, as it was logged (events: source host-xid). */
struct gf_xid_line {
	unsigned code;
	char *line; /* the whole line, its kernel timestamp included, GF_XID_LINE_MAX at most */
};
#define GF_XID_LINES_MAX 256 /* the last ones of a log are kept */
#define GF_XID_LINE_MAX 512

/* A command that failed for a reason no health state names: the node answered in part. */
struct gf_host_failure {
	char *command; /* gf_hostcmd_name(): "nvidia-smi --query-gpu" */
	char *message; /* "nvidia-smi --query-gpu failed (exit 4): ..." */
};

enum gf_driver_module {
	GF_MODULE_UNKNOWN = 0,
	GF_MODULE_OPEN, /* "Open Kernel Module" */
	GF_MODULE_PROPRIETARY,
};

struct gf_hostfacts {
	char *driver;         /* the loaded kernel module: "590.48.01" (KMD version from 610 on) */
	char *driver_library; /* the user-space NVML library, set only when it is not the
	                                 loaded module's (driver-mismatch): "570.124" */
	enum gf_driver_module driver_module;
	char *cuda_driver;   /* the CUDA version the driver supports: "13.1" */
	char *cuda_toolkit;  /* the toolkit installed: "12.8.93" */
	char *kernel;        /* uname -r */
	char *os;            /* os-release PRETTY_NAME */
	char *fabricmanager; /* nv-fabricmanager version */
	char *ofed;          /* "MLNX_OFED_LINUX-23.10-3.2.2.0" */
	struct gf_host_gpu *gpus;
	size_t ngpus;
	enum gf_host_health health;
	char *health_detail;       /* the line that told the health state, or NULL */
	bool xid_read;             /* the kernel log could be read */
	char *xid_source;          /* "journal", "dmesg" (last 24 h) or "dmesg-boot" (since boot) */
	char *xid_note;            /* why the kernel log could not be read */
	struct gf_xid_count *xids; /* sorted by code */
	size_t nxids;
	struct gf_xid_line *xid_lines; /* the last GF_XID_LINES_MAX Xid lines, oldest first */
	size_t nxid_lines;
	char **notes; /* other things worth flagging (toolkit newer than driver) */
	size_t nnotes;
	struct gf_host_failure *failed; /* commands that failed unexplained: the facts are partial */
	size_t nfailed;
};

void gf_hostfacts_release(struct gf_hostfacts *f);
/* Append a failure (both strings copied). */
void gf_hostfacts_add_failure(struct gf_hostfacts *f, const char *command, const char *message);
/*
 * When @f is partial (a command failed unexplained): GF_E_NODE, kind
 * protocol, every failure's message in @err; else 0. For the node's result,
 * which keeps the facts.
 */
int gf_hostfacts_partial_err(const struct gf_hostfacts *f, struct gf_err *err);
const char *gf_host_health_name(enum gf_host_health h); /* "ok", "no-nvidia-smi", ... */
int gf_host_health_parse(const char *s);                /* -1 when unknown */
/* "open", "proprietary", NULL when unknown; and back (-1 when not one of them). */
const char *gf_driver_module_name(enum gf_driver_module m);
int gf_driver_module_parse(const char *s);

/* ---- the commands ----------------------------------------------------- */

/* The commands the collector runs, each on its own channel (or process). */
enum gf_hostcmd {
	GF_HC_SMI_QUERY = 0, /* nvidia-smi --query-gpu=... (built from the field list) */
	GF_HC_SMI,           /* nvidia-smi: the header has the driver and CUDA versions */
	GF_HC_PROC_VERSION,  /* cat /proc/driver/nvidia/version */
	GF_HC_NVCC,          /* nvcc --version */
	GF_HC_CUDA_JSON,     /* cat /usr/local/cuda/version.json */
	GF_HC_UNAME,         /* uname -r */
	GF_HC_OS_RELEASE,    /* cat /etc/os-release */
	GF_HC_FABRICMANAGER, /* nv-fabricmanager --version */
	GF_HC_OFED,          /* ofed_info -s */
	GF_HC_JOURNAL,       /* journalctl -k --since=-24h */
	/* Fallbacks, run only when the ones above did not answer. */
	GF_HC_CUDA_TXT,  /* cat /usr/local/cuda/version.txt, when version.json is absent */
	GF_HC_DMESG,     /* dmesg --since=-24h, when journalctl is absent or not allowed */
	GF_HC_DMESG_ALL, /* dmesg, when its --since is not known (util-linux before 2.37) */
	GF_HC_COUNT,
};

/* The fixed command line of @c; GF_HC_SMI_QUERY needs gf_hostfacts_query_cmd(). */
const char *gf_hostcmd_line(enum gf_hostcmd c);
/* A short name for messages: "nvidia-smi --query-gpu", "nvcc", ... */
const char *gf_hostcmd_name(enum gf_hostcmd c);

/* The --query-gpu fields asked for first, in column order. */
extern const char *const gf_hostfacts_query_fields[];
extern const size_t gf_hostfacts_nquery_fields;

/*
 * The nvidia-smi --query-gpu command for @fields (a subset of
 * gf_hostfacts_query_fields, in that order). Caller frees.
 */
char *gf_hostfacts_query_cmd(const char *const *fields, size_t n);

/* One command's outcome as the collector saw it. */
struct gf_cmd_out {
	bool ran;        /* false: not run; the rest is meaningless */
	bool timed_out;  /* killed at the deadline: output may be partial */
	int status;      /* exit status, -1 when killed by a signal */
	const char *out; /* stdout, NUL terminated ("" when none) */
	const char *err; /* stderr, NUL terminated ("" when none) */
};

/*
 * Should the fallback @c (GF_HC_CUDA_TXT, GF_HC_DMESG, GF_HC_DMESG_ALL) run,
 * given what the commands so far answered?
 */
bool gf_hostfacts_need_fallback(enum gf_hostcmd c, const struct gf_cmd_out outs[GF_HC_COUNT]);

/* Did the shell or env say the command does not exist (exit 126/127)? */
bool gf_hostcmd_missing(const struct gf_cmd_out *o);

/*
 * The field that nvidia-smi refused in @out ('Field "x" is not a valid field
 * to query.'), as a new string, or NULL when it did not say so.
 */
char *gf_hostfacts_invalid_field(const char *out);

/*
 * Assemble the facts from every command's outcome. @fields are the
 * --query-gpu fields that @outs[GF_HC_SMI_QUERY] was asked for. Missing
 * tools and unreadable files leave their facts unset; a broken nvidia-smi is
 * a health state, not an error. An nvidia-smi --query-gpu that fails for a
 * reason no health state names, or answers with output that cannot be read,
 * costs its GPUs only: health unknown, the failure in ret->failed, every
 * other fact kept. Driver/library version mismatch: the loaded module's
 * version (from /proc) in driver, the library's (nvidia-smi's "NVML library
 * version" line) in driver_library. Fills @ret (release with
 * gf_hostfacts_release()); returns 0.
 */
int gf_hostfacts_build(const struct gf_cmd_out outs[GF_HC_COUNT], const char *const *fields,
		       size_t nfields, struct gf_hostfacts *ret, struct gf_err *err);

/* ---- the parsers, one per output ---------------------------------------- */

/*
 * Driver and CUDA versions from the header of `nvidia-smi` (either table
 * layout), `nvidia-smi -q` or `nvidia-smi --version`, including the 610
 * names "KMD Version" and "CUDA UMD Version". Each of *ret_driver and
 * *ret_cuda is set to a new string or left NULL when absent; returns 0 when
 * at least one was found, GF_E_NOTFOUND otherwise.
 */
int gf_hostfacts_parse_smi_versions(const char *text, char **ret_driver, char **ret_cuda);

/*
 * The --query-gpu CSV (noheader, nounits) with columns @fields. Values like
 * "[N/A]" become unset. GF_E_NODE (protocol) on a line with the wrong number
 * of columns. On success *ret (free with gf_host_gpus_free()) and *ret_n.
 */
int gf_hostfacts_parse_query_csv(const char *text, const char *const *fields, size_t nfields,
				 struct gf_host_gpu **ret, size_t *ret_n, struct gf_err *err);
/* GPU rows read at most: more is no host (GF_E_NODE, protocol), whatever nvidia-smi says. */
#define GF_HOST_MAX_GPUS 256
void gf_host_gpus_free(struct gf_host_gpu *gpus, size_t n);

/*
 * The health that nvidia-smi's own error message tells (no-driver, gpu-lost),
 * with the line that told it in *ret_line (new string); GF_HEALTH_OK when
 * the text has no such message.
 */
enum gf_host_health gf_hostfacts_smi_error(const char *text, char **ret_line);

/* /proc/driver/nvidia/version: the version and open/proprietary. GF_E_NOTFOUND when absent. */
int gf_hostfacts_parse_proc_version(const char *text, char **ret_version,
				    enum gf_driver_module *ret_module);
/* nvcc --version: "12.8.93" from "release 12.8, V12.8.93". */
int gf_hostfacts_parse_nvcc(const char *text, char **ret);
/* /usr/local/cuda/version.json: "cuda"."version". */
int gf_hostfacts_parse_cuda_json(const char *text, char **ret);
/* /usr/local/cuda/version.txt: "CUDA Version 10.1.243". */
int gf_hostfacts_parse_cuda_txt(const char *text, char **ret);
/* /etc/os-release: PRETTY_NAME, else NAME VERSION_ID (quotes and escapes undone). */
int gf_hostfacts_parse_os_release(const char *text, char **ret);
/* nv-fabricmanager --version: "Fabric Manager version is : 535.161.08". */
int gf_hostfacts_parse_fabricmanager(const char *text, char **ret);
/* ofed_info -s: "MLNX_OFED_LINUX-23.10-3.2.2.0:" without the colon. */
int gf_hostfacts_parse_ofed(const char *text, char **ret);
/* The first line, trimmed (uname -r). GF_E_NOTFOUND when empty. */
int gf_hostfacts_parse_first_line(const char *text, char **ret);
/*
 * Count "NVRM: Xid (PCI:...): CODE," lines per code, in any kernel log
 * format (dmesg, dmesg -T, journalctl). *ret sorted by code, NULL when none.
 */
void gf_hostfacts_count_xids(const char *text, struct gf_xid_count **ret, size_t *ret_n);
/* The Xid lines themselves, the last GF_XID_LINES_MAX; free with gf_xid_lines_free(). */
void gf_hostfacts_xid_lines(const char *text, struct gf_xid_line **ret, size_t *ret_n);
void gf_xid_lines_free(struct gf_xid_line *v, size_t n);

/*
 * Compare CUDA versions "12.8.93" and "12.2" by major.minor: <0, 0, >0.
 * Unparseable versions compare equal.
 */
int gf_cuda_version_cmp(const char *a, const char *b);

#endif
