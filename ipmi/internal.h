/* What the files of the IPMI backend share; not for use outside ipmi/. */
#ifndef GF_IPMI_INTERNAL_H
#define GF_IPMI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include <freeipmi/freeipmi.h>

#include "lib/backend.h"

/* What a session takes from its profile, parsed (ipmi/profile.c). */
struct gf_ipmi_profile {
	int cipher_suite;          /* -1: the default (17, falling back to 3) */
	unsigned workaround_flags; /* of the profile's IPMI version */
	unsigned sol_workarounds;  /* IPMICONSOLE_WORKAROUND_*: the console's (ipmi/console.c) */
	uint8_t privilege;         /* IPMI_PRIVILEGE_LEVEL_* */
};

/*
 * The profile's IPMI words, parsed by the rules the file was checked with;
 * GF_E_CONFIG "profile 'NAME': ..." on a value no check has seen.
 */
int gf_ipmi_profile_parse(const struct gf_profile *p, struct gf_ipmi_profile *ret,
			  struct gf_err *err);

/* The check of those three keys for gf_creds_load() (gf_ipmi_backend.profile_check). */
int gf_ipmi_profile_check(const char *key, const char *value, struct gf_err *err);

struct ipmi_session {
	ipmi_ctx_t ctx;
	char *node;         /* for messages */
	int cipher;         /* the suite in use, -1 for IPMI 1.5 */
	char *host;         /* as given in the target, for cache keys */
	char *cache_dir;    /* the target's cache directory, may be NULL */
	double deadline;    /* monotonic: the target's deadline, for multi-command work */
	bool no_thresholds; /* sensors: do not send Get Sensor Thresholds */
	/*
	 * Read once per session, kept for its later operations (a sweep reads
	 * hardware and firmware, the event log and sensors in one session):
	 * the SDR, checked against the BMC when first opened, and the system
	 * firmware (BIOS) version. Freed with the session.
	 */
	ipmi_sdr_ctx_t sdr;
	bool bios_read;
	char *bios; /* NULL: the BMC has none */
};

/*
 * Fill @err for a failed command @what (e.g. "get chassis status"); @rs holds
 * the completion code when the BMC sent one, @netfn is the command's network
 * function for the completion code text. Returns GF_E_NODE (or GF_E_NOMEM).
 */
int gf_ipmi_cmd_error(struct ipmi_session *s, const char *what, fiid_obj_t rs, uint8_t netfn,
		      struct gf_err *err);

/*
 * The BMC's SDR repository, from the per-BMC cache under s->cache_dir when
 * its timestamps still match the BMC's (one Get SDR Repository Info), else
 * downloaded and cached. *@ret is an open SDR context that belongs to the
 * session (s->sdr: checked once per session, freed with it); the caller
 * does not destroy it. Defined in sensors.c; used by sel.c for sensor names.
 */
int gf_ipmi_sdr_open(struct ipmi_session *s, ipmi_sdr_ctx_t *ret, struct gf_err *err);

/* The canonical sensor type for an IPMI sensor type code ("temperature", ...). */
const char *gf_ipmi_sensor_type_name(uint8_t sensor_type);

/*
 * FreeIPMI's interpretation (IPMI_INTERPRET_STATE_*) of a sensor's state bits
 * and of an event log record; UNKNOWN when it has none. Thread-safe (one
 * process-wide context, built once, used under a lock). In sensors.c.
 */
unsigned gf_ipmi_interpret_sensor(uint8_t ertc, uint8_t type, uint16_t bits);
unsigned gf_ipmi_interpret_sel(const void *rec, unsigned len);

/* GF_E_NODE (timeout) with @err filled when s->deadline has passed; else 0. */
int gf_ipmi_check_deadline(struct ipmi_session *s, const char *what, struct gf_err *err);

/* Backend operations of sensors.c and sel.c, for the table in ipmi.c. */
int gf_ipmi_sensors(void *session, struct gf_sensor_list *ret, struct gf_err *err);
int gf_ipmi_sel_list(void *session, struct gf_sel_list *ret, struct gf_err *err);
int gf_ipmi_sel_clear(void *session, struct gf_err *err);
int gf_ipmi_sel_info(void *session, struct gf_sel_info *ret, struct gf_err *err);
int gf_ipmi_sel_since(void *session, const char *after, struct gf_sel_since *ret,
		      struct gf_err *err);

/* Backend operations of fru.c (firmware, hardware) and boot.c. */
int gf_ipmi_firmware(void *session, struct gf_component_list *ret, struct gf_err *err);
int gf_ipmi_hardware(void *session, struct gf_hardware *ret, struct gf_err *err);
int gf_ipmi_boot_get(void *session, struct gf_boot *ret, struct gf_err *err);
int gf_ipmi_boot_set(void *session, const struct gf_boot *want, struct gf_err *err);

/*
 * The cipher suite IDs in the record data of Get Channel Cipher Suites
 * (@data, @len bytes: the concatenated 16-byte pieces), at most @max into
 * @ids; returns how many, or -1 when the data is not a list of records
 * (IPMI 2.0 22.15: 0xC0 ID algorithms..., or 0xC1 ID IANA[3] algorithms...).
 */
int gf_ipmi_cipher_records(const uint8_t *data, size_t len, uint8_t *ids, size_t max);

/* What to make of suite 17 refused and 3 then opened (see ipmi.c's open). */
enum gf_ipmi_fallback {
	GF_IPMI_FALLBACK_MEMO,   /* missing: use 3, and remember it for a week */
	GF_IPMI_FALLBACK_USE,    /* refused although listed: use 3 this once, not remembered */
	GF_IPMI_FALLBACK_REFUSE, /* not proven: fail the node, never downgrade */
};

/*
 * @definite: the answer to 17 was an RMCP+ status that refuses it (not a
 * malformed answer); @listed: 1 the BMC's cipher suite list (read in the
 * suite-3 session, so authenticated) has 17, 0 it has not, -1 it could not
 * be read. Only a definite refusal or the list itself lets 3 be used.
 */
enum gf_ipmi_fallback gf_ipmi_fallback_verdict(bool definite, int listed);

/*
 * "host", "host:port" or "[v6]:port" of @t's BMC, its name resolved to a
 * numeric address by the deadline (ipmi.c); GF_E_NODE otherwise.
 */
int gf_ipmi_host_arg(const struct gf_bmc_target *t, char *buf, size_t size, struct gf_err *err);

/* ---- the UDP side the fleet ping (ping.c) and the power loop (batch.c) share ---- */

/* @t's address and port (623 unless given) when its host is numeric: nothing resolved. */
bool gf_ipmi_numeric_addr(const struct gf_bmc_target *t, struct sockaddr_storage *sa,
			  socklen_t *len);
/* Order of addresses (family, address, port): sockaddr bytes compared field by field. */
int gf_ipmi_addr_cmp(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
/* A target's address and its index, in an array sorted by gf_ipmi_addr_entry_cmp. */
struct gf_ipmi_addr_entry {
	struct sockaddr_storage sa;
	size_t j;
};
int gf_ipmi_addr_entry_cmp(const void *a, const void *b); /* for gf_sort() */
/* The first of @v[0..n-1] (sorted) at @sa or after it; n when none is. */
size_t gf_ipmi_addr_lower(const struct gf_ipmi_addr_entry *v, size_t n,
			  const struct sockaddr_storage *sa);
/* A received peer address as gf_ipmi_numeric_addr() would have made it (IPv6: no zone, no flow). */
void gf_ipmi_addr_norm(struct sockaddr_storage *sa);
/* A non-blocking datagram socket of @family with room for a burst of answers; -1: none. */
int gf_ipmi_udp_socket(int family);
/* The time between two pings (and retransmissions) of a run of @timeout seconds: 0.2-1 s. */
double gf_ipmi_ping_interval(double timeout);

/* Does a recent session remember that @t's BMC lacks suite 17 (ipmi.c)? */
bool gf_ipmi_memo_fallback(const struct gf_bmc_target *t);
/* Remember (or forget) that @t's BMC lacks suite 17, for a week (ipmi.c). */
void gf_ipmi_memo_set(const struct gf_bmc_target *t, bool fallback);
/* GF_E_NODE: suite 3 not used after 17's malformed refusal (verdict REFUSE). */
int gf_ipmi_fallback_refused(const char *node, int listed, struct gf_err *err);
/* libgcrypt set up for RMCP+, once per process (ipmi.c); false: it could not be. */
bool gf_ipmi_crypt_ready(void);

/* The power loop (batch.c): gf_ipmi_backend's power_get_many. */
void gf_ipmi_power_get_many(const struct gf_bmc_target *t, size_t n, unsigned fanout,
			    gf_power_done done, void *ud);

/* For the fuzzer (tests/fuzz/fuzz_ipmi_loop.c): @d[1..] as a BMC's answer in every stage of one session. */
void gf_ipmi_batch_feed(const uint8_t *d, size_t n);

/* The console of the IPMI backend: Serial over LAN through libipmiconsole (console.c). */
extern const struct gf_console_ops gf_ipmi_console_ops;

/* Lower-case copy of @in into @buf; returns @buf. */
const char *gf_ipmi_lower(const char *in, char *buf, size_t size);

#endif
