/*
 * The SSH serial console of a BMC that advertises one (fleet/console_ssh.c):
 * struct gf_console_ops whose open is gf_console_ssh_open().
 */
#ifndef GF_FLEET_CONSOLE_SSH_H
#define GF_FLEET_CONSOLE_SSH_H

#include <stdbool.h>

#include "lib/backend.h"

extern const struct gf_console_ops gf_console_ssh_ops;

/*
 * Start connecting to the SSH console node @t's BMC advertises (@be's
 * console_ssh, read in a session of @be opened with @t), logged in as the
 * profile's bmc_user with its bmc_password, the host key checked against
 * the profile's known_hosts (@accept_new: an unknown one is recorded, as
 * `host --ssh-accept-new`). @interactive: with a terminal (a person's);
 * else none (the logger's). @t's strings are borrowed until close().
 * state() tells when it is connected; gf_console_ssh_ops works it.
 */
int gf_console_ssh_open(const struct gf_backend *be, const struct gf_bmc_target *t, bool accept_new,
			bool interactive, struct gf_console **ret, struct gf_err *err);

#endif
