/* Credentials: named profiles from an INI file, environment overrides. */
#ifndef GF_CREDS_H
#define GF_CREDS_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"

struct gf_profile {
	char *name;
	char *bmc_user;
	char *bmc_password;         /* secret: zeroed on release */
	char *bmc_password_command; /* run by /bin/sh, first line of stdout is the password */
	/* The IPMI words, as written (NULL: not given); ipmi/ checks and parses them. */
	char *ipmi_cipher_suite; /* a FreeIPMI suite id, "-1": default (17, falling back to 3) */
	char *ipmi_workarounds;  /* FreeIPMI names, comma separated, as ipmipower -W */
	bool ipmi_v15;           /* ipmi_version = 1.5: IPMI 1.5 LAN, explicit only */
	char *ipmi_privilege;    /* user|operator|admin, NULL: admin */
	char *ssh_user;
	char *ssh_key;
	char *ssh_key_passphrase_env;
	char *ssh_key_passphrase_command; /* like bmc_password_command, for the key */
	char *ssh_key_passphrase;         /* secret, set by gf_creds_resolve_ssh() */
	char *ssh_known_hosts;
	char *redfish_cacert;
	bool redfish_tls_pin_new; /* redfish_tls_pin = new: pin certificates on first use */
	bool redfish_sessions; /* redfish_auth = session: a session even for a verb that reads once */
	double secret_command_timeout; /* seconds a password/passphrase command may take, 0: 30 */
	char *bios_ignore; /* BIOS settings a sweep does not keep: bios.NAME globs, comma separated */
};

struct gf_creds {
	char *path; /* the file read, NULL when none */
	struct gf_profile *profiles;
	size_t n;
};

/*
 * The check of the keys that protocol modules read (the IPMI words; lib/
 * keeps their values as written): 0 when @value is fine or @key is not one
 * it reads, else GF_E_CONFIG with the reason in @err, worded "KEY 'VALUE' is
 * not ...".
 */
typedef int (*gf_creds_check_fn)(const char *key, const char *value, struct gf_err *err);

/*
 * Read @path. A missing file is not an error when @must_exist is false (the
 * profiles are then empty). As OpenSSH treats its keys, the file is refused
 * (GF_E_CONFIG) when it is a symbolic link, when it is owned by someone other
 * than the effective user or root, when group or others have any permission
 * on it, when a folder above it is owned by someone else than the user or
 * root or writable by group or others (a sticky one such as /tmp excepted),
 * and on an unknown key or bad value, with
 * "'file' line N: " before the reason. The protocols' keys are checked by
 * @check (NULL: not at all) as they are read, in their turn with the others.
 * On success fills @ret.
 */
int gf_creds_load(const char *path, bool must_exist, gf_creds_check_fn check, struct gf_creds *ret,
		  struct gf_err *err);
void gf_creds_release(struct gf_creds *c);

/*
 * Take GPUFLEET_BMC_PASSWORD out of the environment: its value is kept for
 * gf_creds_resolve() and the variable is erased and removed, so no child
 * (password commands, local host commands) inherits it. Called once early
 * in main(), before any thread, and by gf_creds_resolve() (a value set
 * again since replaces the kept one).
 */
void gf_creds_take_env(void);
/* Erase and drop the kept value (at exit; tests). */
void gf_creds_forget_env(void);

/*
 * The profile @name (NULL means "default"), after the environment overrides
 * GPUFLEET_BMC_USER and GPUFLEET_BMC_PASSWORD are applied and the password
 * command, if any, has been run: by `/bin/sh -s` with the command on its
 * standard input (never in an argv that /proc shows), killed after the
 * profile's secret_command_timeout (30 s). "default" always exists (empty when the file
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
