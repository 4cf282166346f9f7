/* What the files of the IPMI backend share; not for use outside ipmi/. */
#ifndef GF_IPMI_INTERNAL_H
#define GF_IPMI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <freeipmi/freeipmi.h>

#include "lib/backend.h"

/* What a session takes from its profile, parsed (ipmi/profile.c). */
struct gf_ipmi_profile {
	int cipher_suite;          /* -1: the default (17, falling back to 3) */
	unsigned workaround_flags; /* of the profile's IPMI version */
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
	char *node;              /* for messages */
	int cipher;              /* the suite in use, -1 for IPMI 1.5 */
	char *host;              /* as given in the target, for cache keys */
	char *cache_dir;         /* the target's cache directory, may be NULL */
	double deadline;         /* monotonic: the target's deadline, for multi-command work */
	bool no_thresholds;      /* sensors: do not send Get Sensor Thresholds */
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
 * downloaded and cached. *@ret is an open SDR context the caller destroys.
 * Defined in sensors.c; used by sel.c for sensor names.
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

/* Backend operations of fru.c (firmware, hardware) and boot.c. */
int gf_ipmi_firmware(void *session, struct gf_component_list *ret, struct gf_err *err);
int gf_ipmi_hardware(void *session, struct gf_hardware *ret, struct gf_err *err);
int gf_ipmi_boot_get(void *session, struct gf_boot *ret, struct gf_err *err);
int gf_ipmi_boot_set(void *session, const struct gf_boot *want, struct gf_err *err);

/* Lower-case copy of @in into @buf; returns @buf. */
const char *gf_ipmi_lower(const char *in, char *buf, size_t size);

#endif
