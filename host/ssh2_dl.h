/*
 * libssh2, loaded on the first SSH session (lib/dl.h): a run that opens no
 * SSH session never maps it. Include this header in the files that call
 * libssh2, instead of <libssh2.h>: its names become calls through the
 * table below, filled by gf_ssh_global_init() (or gf_ssh_open()).
 */
#ifndef GF_HOST_SSH2_DL_H
#define GF_HOST_SSH2_DL_H

#include <libssh2.h>

#include "lib/dl.h"

#define GF_SSH2_FNS(X, T)                              \
	X(T, libssh2_agent_connect)                    \
	X(T, libssh2_agent_disconnect)                 \
	X(T, libssh2_agent_free)                       \
	X(T, libssh2_agent_get_identity)               \
	X(T, libssh2_agent_init)                       \
	X(T, libssh2_agent_list_identities)            \
	X(T, libssh2_agent_userauth)                   \
	X(T, libssh2_channel_close)                    \
	X(T, libssh2_channel_eof)                      \
	X(T, libssh2_channel_free)                     \
	X(T, libssh2_channel_get_exit_signal)          \
	X(T, libssh2_channel_get_exit_status)          \
	X(T, libssh2_channel_open_ex)                  \
	X(T, libssh2_channel_process_startup)          \
	X(T, libssh2_channel_read_ex)                  \
	X(T, libssh2_channel_request_pty_ex)           \
	X(T, libssh2_channel_request_pty_size_ex)      \
	X(T, libssh2_channel_send_eof)                 \
	X(T, libssh2_channel_wait_closed)              \
	X(T, libssh2_channel_write_ex)                 \
	X(T, libssh2_exit)                             \
	X(T, libssh2_free)                             \
	X(T, libssh2_hostkey_hash)                     \
	X(T, libssh2_init)                             \
	X(T, libssh2_keepalive_config)                 \
	X(T, libssh2_keepalive_send)                   \
	X(T, libssh2_knownhost_addc)                   \
	X(T, libssh2_knownhost_check)                  \
	X(T, libssh2_knownhost_free)                   \
	X(T, libssh2_knownhost_init)                   \
	X(T, libssh2_knownhost_readline)               \
	X(T, libssh2_knownhost_writeline)              \
	X(T, libssh2_session_block_directions)         \
	X(T, libssh2_session_callback_set)             \
	X(T, libssh2_session_disconnect_ex)            \
	X(T, libssh2_session_free)                     \
	X(T, libssh2_session_handshake)                \
	X(T, libssh2_session_hostkey)                  \
	X(T, libssh2_session_init_ex)                  \
	X(T, libssh2_session_last_errno)               \
	X(T, libssh2_session_last_error)               \
	X(T, libssh2_session_method_pref)              \
	X(T, libssh2_session_set_blocking)             \
	X(T, libssh2_session_supported_algs)           \
	X(T, libssh2_userauth_authenticated)           \
	X(T, libssh2_userauth_keyboard_interactive_ex) \
	X(T, libssh2_userauth_list)                    \
	X(T, libssh2_userauth_password_ex)             \
	X(T, libssh2_userauth_publickey_fromfile_ex)

struct gf_ssh2_api {
	GF_DL_MEMBERS(GF_SSH2_FNS)
};

extern struct gf_ssh2_api gf_ssh2;
extern struct gf_dl_lib gf_ssh2_lib;

/* Every call below goes through the table. */
#define libssh2_agent_connect (gf_ssh2.p_libssh2_agent_connect)
#define libssh2_agent_disconnect (gf_ssh2.p_libssh2_agent_disconnect)
#define libssh2_agent_free (gf_ssh2.p_libssh2_agent_free)
#define libssh2_agent_get_identity (gf_ssh2.p_libssh2_agent_get_identity)
#define libssh2_agent_init (gf_ssh2.p_libssh2_agent_init)
#define libssh2_agent_list_identities (gf_ssh2.p_libssh2_agent_list_identities)
#define libssh2_agent_userauth (gf_ssh2.p_libssh2_agent_userauth)
#define libssh2_channel_close (gf_ssh2.p_libssh2_channel_close)
#define libssh2_channel_eof (gf_ssh2.p_libssh2_channel_eof)
#define libssh2_channel_free (gf_ssh2.p_libssh2_channel_free)
#define libssh2_channel_get_exit_signal (gf_ssh2.p_libssh2_channel_get_exit_signal)
#define libssh2_channel_get_exit_status (gf_ssh2.p_libssh2_channel_get_exit_status)
#define libssh2_channel_open_ex (gf_ssh2.p_libssh2_channel_open_ex)
#define libssh2_channel_process_startup (gf_ssh2.p_libssh2_channel_process_startup)
#define libssh2_channel_read_ex (gf_ssh2.p_libssh2_channel_read_ex)
#define libssh2_channel_request_pty_ex (gf_ssh2.p_libssh2_channel_request_pty_ex)
#define libssh2_channel_request_pty_size_ex (gf_ssh2.p_libssh2_channel_request_pty_size_ex)
#define libssh2_channel_send_eof (gf_ssh2.p_libssh2_channel_send_eof)
#define libssh2_channel_wait_closed (gf_ssh2.p_libssh2_channel_wait_closed)
#define libssh2_channel_write_ex (gf_ssh2.p_libssh2_channel_write_ex)
#define libssh2_exit (gf_ssh2.p_libssh2_exit)
#define libssh2_free (gf_ssh2.p_libssh2_free)
#define libssh2_hostkey_hash (gf_ssh2.p_libssh2_hostkey_hash)
#define libssh2_init (gf_ssh2.p_libssh2_init)
#define libssh2_keepalive_config (gf_ssh2.p_libssh2_keepalive_config)
#define libssh2_keepalive_send (gf_ssh2.p_libssh2_keepalive_send)
#define libssh2_knownhost_addc (gf_ssh2.p_libssh2_knownhost_addc)
#define libssh2_knownhost_check (gf_ssh2.p_libssh2_knownhost_check)
#define libssh2_knownhost_free (gf_ssh2.p_libssh2_knownhost_free)
#define libssh2_knownhost_init (gf_ssh2.p_libssh2_knownhost_init)
#define libssh2_knownhost_readline (gf_ssh2.p_libssh2_knownhost_readline)
#define libssh2_knownhost_writeline (gf_ssh2.p_libssh2_knownhost_writeline)
#define libssh2_session_block_directions (gf_ssh2.p_libssh2_session_block_directions)
#define libssh2_session_callback_set (gf_ssh2.p_libssh2_session_callback_set)
#define libssh2_session_disconnect_ex (gf_ssh2.p_libssh2_session_disconnect_ex)
#define libssh2_session_free (gf_ssh2.p_libssh2_session_free)
#define libssh2_session_handshake (gf_ssh2.p_libssh2_session_handshake)
#define libssh2_session_hostkey (gf_ssh2.p_libssh2_session_hostkey)
#define libssh2_session_init_ex (gf_ssh2.p_libssh2_session_init_ex)
#define libssh2_session_last_errno (gf_ssh2.p_libssh2_session_last_errno)
#define libssh2_session_last_error (gf_ssh2.p_libssh2_session_last_error)
#define libssh2_session_method_pref (gf_ssh2.p_libssh2_session_method_pref)
#define libssh2_session_set_blocking (gf_ssh2.p_libssh2_session_set_blocking)
#define libssh2_session_supported_algs (gf_ssh2.p_libssh2_session_supported_algs)
#define libssh2_userauth_authenticated (gf_ssh2.p_libssh2_userauth_authenticated)
#define libssh2_userauth_keyboard_interactive_ex \
	(gf_ssh2.p_libssh2_userauth_keyboard_interactive_ex)
#define libssh2_userauth_list (gf_ssh2.p_libssh2_userauth_list)
#define libssh2_userauth_password_ex (gf_ssh2.p_libssh2_userauth_password_ex)
#define libssh2_userauth_publickey_fromfile_ex (gf_ssh2.p_libssh2_userauth_publickey_fromfile_ex)

#endif
