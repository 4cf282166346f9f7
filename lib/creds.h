/* Credentials: named profiles from an INI file, environment overrides. */
#ifndef GF_CREDS_H
#define GF_CREDS_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"

struct gf_profile {
	char *name;
	char *bmc_user;
	char *bmc_password;          /* secret: zeroed on release */
	char *bmc_password_command;  /* run by /bin/sh, first line of stdout is the password */
	int ipmi_cipher_suite;       /* -1: default (17, falling back to 3) */
	char *ipmi_workarounds;      /* FreeIPMI names, comma separated, as ipmipower -W */
	bool ipmi_v15;               /* ipmi_version = 1.5: IPMI 1.5 LAN, explicit only */
	char *ipmi_privilege;        /* user|operator|admin, NULL: admin */
	char *ssh_user;
	char *ssh_key;
	char *ssh_key_passphrase_env;
	char *ssh_key_passphrase_command; /* like bmc_password_command, for the key */
	char *ssh_key_passphrase;    /* secret, set by gf_creds_resolve_ssh() */
	char *ssh_known_hosts;
	char *redfish_cacert;
	bool redfish_tls_pin_new;    /* redfish_tls_pin = new: pin certificates on first use */
};

struct gf_creds {
	char *path;                  /* the file read, NULL when none */
	struct gf_profile *profiles;
	size_t n;
};

/*
 * Read @path. A missing file is not an error when @must_exist is false (the
 * profiles are then empty). The file is refused (GF_E_CONFIG) when group or
 * others have any permission on it, or on an unknown key or bad value, with
 * "file:line" in the message. On success fills @ret.
 */
int gf_creds_load(const char *path, bool must_exist, struct gf_creds *ret, struct gf_err *err);
void gf_creds_release(struct gf_creds *c);

/*
 * The profile @name (NULL means "default"), after the environment overrides
 * GPUFLEET_BMC_USER and GPUFLEET_BMC_PASSWORD are applied and the password
 * command, if any, has been run. "default" always exists (empty when the file
 * has none); any other unknown name is GF_E_CONFIG. The result points into
 * @c and lives as long as it. Not thread-safe: resolve in the main thread
 * before fanning out.
 */
int gf_creds_resolve(struct gf_creds *c, const char *name, const struct gf_profile **ret,
		     struct gf_err *err);

/*
 * The profile @name for SSH: like gf_creds_resolve() but runs the key
 * passphrase command (once) instead of the BMC password command, which SSH
 * never needs. Not thread-safe: call in the main thread.
 */
int gf_creds_resolve_ssh(struct gf_creds *c, const char *name, const struct gf_profile **ret,
			 struct gf_err *err);

#endif
