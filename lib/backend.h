/* The table of BMC operations that each protocol backend implements. */
#ifndef GF_BACKEND_H
#define GF_BACKEND_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "lib/cancel.h"
#include "lib/bios.h"
#include "lib/creds.h"
#include "lib/err.h"
#include "lib/model.h"

enum gf_power {
	GF_POWER_UNKNOWN = 0,
	GF_POWER_ON,
	GF_POWER_OFF,
};

enum gf_power_op {
	GF_POWER_OP_ON = 0,
	GF_POWER_OP_OFF, /* hard off */
	GF_POWER_OP_CYCLE,
	GF_POWER_OP_RESET, /* hard reset */
	GF_POWER_OP_SOFT,  /* ACPI shutdown request */
	GF_POWER_OP_NMI,   /* diagnostic interrupt */
};

/*
 * One target of a backend's power_get_many done: @rc 0 with its state in
 * @p, < 0 with @err, or GF_POWER_AGAIN: not for that loop after all (it
 * sent nothing a login could fail on): the usual session reads it.
 */
#define GF_POWER_AGAIN 1
typedef void (*gf_power_done)(void *ud, size_t j, int rc, enum gf_power p,
			      const struct gf_err *err);

const char *gf_power_name(enum gf_power p);        /* "on", "off", "unknown" */
const char *gf_power_op_name(enum gf_power_op op); /* "on", "off", "cycle", ... */

/*
 * The knobs of one verb's run that reach the backend: set once by the verb,
 * handed down as one pointer (the fan-out frame, the target, the session)
 * and read by the backend when it opens a session. Zero: every default.
 */
struct gf_bmc_opts {
	const char *log_name; /* sel: the log to use (Redfish LogService Id), NULL: find it */
	bool no_thresholds;   /* sensors: thresholds will not be shown; skip commands for them */
	double request_timeout; /* > 0: each request also bounded by this (update), 0: deadline only */
	/*
	 * Read-only, one or two reads a node where the BMC expands collections
	 * (firmware, power and boot status): Redfish sends them with Basic credentials,
	 * which costs less than a session's login and logout (a session still
	 * where the BMC refuses Basic).
	 */
	bool few_reads;
};

/* What a backend needs to reach one BMC. Read-only for the backend. */
struct gf_bmc_target {
	const char *node; /* for messages */
	const char *host;
	int port;                      /* 0: protocol default */
	const struct gf_profile *prof; /* resolved: passwords present */
	double deadline;               /* monotonic; every call must return by then */
	const char *cache_dir;         /* per-user cache (IPMI SDR cache), NULL: none */
	/* Redfish TLS: CA verification by default, or a pin, or nothing with insecure. */
	const char *cacert;           /* CA bundle for the BMC certificate, NULL: system CAs */
	bool insecure;                /* no certificate check at all (the CLI warns) */
	const char *tls_pin;          /* pinned SHA-256 of the BMC certificate (hex), NULL: none */
	bool tls_pin_new;             /* no pin yet: accept and report the certificate seen */
	const gf_cancel_flag *cancel; /* set on Ctrl-C: stop soon, still clean up; NULL: none */
	const struct gf_bmc_opts *opts; /* the verb's knobs, NULL: none (every default) */
};

/* What a BMC offers to update its firmware (update plan and run). */
struct gf_fw_caps {
	char *dialect;   /* "dell", "supermicro", ...; NULL: unknown */
	char *model;     /* the main system's model; NULL: unknown */
	bool multipart;  /* MultipartHttpPushUri */
	bool push;       /* HttpPushUri */
	bool pull;       /* SimpleUpdate (the BMC downloads an image URI) */
	bool apply_time; /* @Redfish.OperationApplyTime "Immediate" advertised */
};

void gf_fw_caps_release(struct gf_fw_caps *c);

/* How an image reaches a BMC. */
enum gf_fw_method {
	GF_FW_NONE = 0, /* no way: unsupported */
	GF_FW_MULTIPART,
	GF_FW_PUSH,
	GF_FW_PULL,
};

/* "multipart-push", "http-push", "simple-update", "unsupported". */
const char *gf_fw_method_name(enum gf_fw_method m);
/* The method for an image with @file and/or @image_uri on a BMC offering @c. */
enum gf_fw_method gf_fw_method_for(const struct gf_fw_caps *c, bool file, bool image_uri);

/* One image sent to one BMC: pushed or pulled, its task followed to the end. */
struct gf_fw_push {
	enum gf_fw_method method;
	const char *file;           /* image to push */
	unsigned long long size;    /* with @sha256: what @file must still be */
	const char *sha256;         /* NULL, or the SHA-256 the bytes pushed must have (a push
				     * whose file differs is refused, before or while it is sent) */
	const char *image_uri;      /* image to pull */
	const char *const *targets; /* raw FirmwareInventory member ids it updates */
	size_t ntargets;
	bool apply_now;      /* ask for @Redfish.OperationApplyTime Immediate */
	double deadline;     /* monotonic: the node's whole update */
	atomic_ullong *sent; /* NULL, or bytes of the image handed over so far are
					  * added to it as they go (taken off again on a resend) */
	/* NULL, or the version the image installs (gf_version_matches(), exact or not). */
	const char *version;
	bool version_exact;
};

struct gf_fw_task {
	char *state;   /* the task's last TaskState, NULL: there was no task */
	char *message; /* the BMC's last message about it, NULL: none */
	bool vanished; /* the task monitor went away (404) before a final state */
};

void gf_fw_task_release(struct gf_fw_task *t);

/* The update tasks a BMC lists that started at or after a time (resume's evidence). */
struct gf_fw_tasks_seen {
	unsigned completed; /* ended Completed: its image is staged, or applied */
	unsigned failed;    /* ended Exception, Killed or Cancelled */
	unsigned running;   /* not ended yet */
};

/*
 * A fleet ping (struct gf_backend's ping): before a fan-out, one cheap
 * unauthenticated request to each BMC of the run at once, from one thread
 * and one socket per address family, so that a BMC that never answers can
 * fail at the run's start + the deadline without a session.
 */
struct gf_ping; /* the backend's, opaque */

enum gf_ping_state {
	GF_PING_WAITING = 0, /* sent, no answer yet */
	GF_PING_ANSWERED,    /* something came back from its address and port */
	GF_PING_SKIPPED,     /* not pinged (a host name: resolving it is unbounded) */
};

struct gf_ping_ops {
	/*
	 * Ping @t[0..n-1] (host, port, cancel read) at once, again while
	 * unanswered, for @timeout seconds, on a thread of its own that stops
	 * within 0.1 s of *t->cancel. GF_E_IO when nothing could be sent (then
	 * nobody waits on it).
	 */
	int (*start)(const struct gf_bmc_target *t, size_t n, double timeout, struct gf_ping **ret,
		     struct gf_err *err);
	enum gf_ping_state (*state)(const struct gf_ping *p, size_t j); /* any thread */
	/* Until a new answer came, the ping ended, or @until (monotonic), 50 ms at most. */
	void (*wait)(struct gf_ping *p, double until);
	void (*stop)(struct gf_ping *p); /* ends its thread and frees it; NULL: nothing */
};

/*
 * A node's serial console (struct gf_backend's console): a session the
 * backend's own threads keep (FreeIPMI's SOL engine), seen by its caller as
 * one file descriptor: reading it gives what the node printed, writing it
 * types; EOF when the session ended.
 */
struct gf_console; /* the backend's, opaque */

enum gf_console_state {
	GF_CONSOLE_CONNECTING = 0,
	GF_CONSOLE_CONNECTED,
	GF_CONSOLE_FAILED, /* ended or never started; the error says why */
};

struct gf_console_ops {
	/*
	 * Before the first open: room for @n consoles at once. Not thread-safe;
	 * once per process, undone by stop().
	 */
	int (*start)(size_t n, struct gf_err *err);
	/*
	 * Ends every console still open, their payloads deactivated (waits
	 * for that, bounded by the protocol's session timeout).
	 */
	void (*stop)(void);
	/*
	 * Start connecting to @t's console without waiting: state() tells when
	 * it is connected. @steal: take over a console someone else holds (else
	 * that fails with kind GF_EK_BUSY); @keepalive: notice a serial port that
	 * went silent behind a live session (the logger's). Credentials and
	 * protocol knobs come from @t->prof.
	 */
	int (*open)(const struct gf_bmc_target *t, bool steal, bool keepalive,
		    struct gf_console **ret, struct gf_err *err);
	int (*fd)(struct gf_console *c);
	/* Where the session is; GF_CONSOLE_FAILED with @err filled. Any thread. */
	enum gf_console_state (*state)(struct gf_console *c, struct gf_err *err);
	/* Send a break to the node's serial port. */
	int (*brk)(struct gf_console *c, struct gf_err *err);
	/* The terminal's size changed (or is first known); NULL: the transport has none. */
	int (*resize)(struct gf_console *c, int cols, int rows);
	/* Close the fd and end the session (its payload deactivated); NULL: nothing. */
	void (*close)(struct gf_console *c);
};

/* A certificate's SHA-256 fingerprint as lower-case hex, plus the NUL. */
#define GF_BMC_FP_SIZE 65

/*
 * A backend: NULL members are operations it does not support. Every function
 * is called from one worker thread for one session; sessions are never shared.
 * Functions return 0 or a negative GF_E_* with @err filled (kind set for
 * GF_E_NODE). fleet/bmc.c lists the backends and chooses one per node.
 */
struct gf_backend {
	const char
		*name; /* the protocol: nodes are registered with it, the source of what it reads */
	const char *title; /* the name in messages */
	bool lists_gpus;   /* hardware() lists the GPUs (an empty list means none) */
	/*
	 * --protocol auto: does a service of this protocol answer at @t (nothing
	 * secret sent)? 1 yes, 0 no, within @timeout seconds and the deadline.
	 * NULL: not probed; auto falls back to the backend without a probe.
	 */
	int (*probe)(const struct gf_bmc_target *t, double timeout);
	/* The fleet ping of the nodes registered with this protocol; NULL: none. */
	const struct gf_ping_ops *ping;
	/*
	 * The fingerprint of the certificate an open session's BMC showed, NULL
	 * when none was seen; lives as long as the session. NULL member: the
	 * protocol has no certificates, so nothing to pin.
	 */
	const char *(*fingerprint)(void *session);
	/*
	 * Connect to @t without credentials and put the fingerprint of the
	 * certificate it shows in @ret (GF_BMC_FP_SIZE bytes), whatever the pin
	 * says: for re-pinning.
	 */
	int (*peek_fingerprint)(const struct gf_bmc_target *t, char *ret, struct gf_err *err);
	/* Checks the profile keys it reads (a gf_creds_check_fn); NULL: it reads none. */
	int (*profile_check)(const char *key, const char *value, struct gf_err *err);
	int (*open)(const struct gf_bmc_target *t, void **ret_session, struct gf_err *err);
	void (*close)(void *session);
	/*
	 * An open session's calls bounded by @deadline from now on (a session
	 * kept from one fan-out to the next, fleet/fanout.h struct
	 * gf_fanout_keep); NULL: its sessions are never kept.
	 */
	void (*rearm)(void *session, double deadline);
	/*
	 * Closing a session is a round trip worth leaving until the results
	 * are out (a Redfish logout): a run may hold its sessions and close
	 * them after printing (struct gf_fanout's later).
	 */
	bool close_later;
	int (*power_get)(void *session, enum gf_power *ret, struct gf_err *err);
	/*
	 * The power state of many BMCs on the calling thread: one event loop
	 * for all their sessions, where open/power_get/close take a thread
	 * each. NULL: none. Reads @t[0..n-1], at most @fanout sessions at
	 * once, and calls @done on this thread for each target as it ends; it
	 * returns once every session it opened is closed. All or none: when
	 * it cannot read one of them it sends nothing and calls @done for none
	 * (then each node goes through open, power_get and close on a worker).
	 */
	void (*power_get_many)(const struct gf_bmc_target *t, size_t n, unsigned fanout,
			       gf_power_done done, void *ud);
	int (*power_set)(void *session, enum gf_power_op op, struct gf_err *err);
	/* Boot override: what the BMC holds now; set, then the caller reads it back. */
	int (*boot_get)(void *session, struct gf_boot *ret, struct gf_err *err);
	int (*boot_set)(void *session, const struct gf_boot *want, struct gf_err *err);
	/* Lists are filled only on success (the caller passes empty ones). */
	int (*sensors)(void *session, struct gf_sensor_list *ret, struct gf_err *err);
	int (*sel_list)(void *session, struct gf_sel_list *ret, struct gf_err *err);
	int (*sel_clear)(void *session, struct gf_err *err);
	/* Incremental reading (events follow): the SEL's counters; cheap, one command. */
	int (*sel_info)(void *session, struct gf_sel_info *ret, struct gf_err *err);
	/*
	 * The entries after record @after (its id; NULL: from the first); when
	 * @after is not in the log any more, every entry with ret->from_start.
	 */
	int (*sel_since)(void *session, const char *after, struct gf_sel_since *ret,
			 struct gf_err *err);
	int (*firmware)(void *session, struct gf_component_list *ret, struct gf_err *err);
	int (*hardware)(void *session, struct gf_hardware *ret, struct gf_err *err);
	/* Firmware updates (update plan/run): what the BMC offers, filled on success. */
	int (*fw_caps)(void *session, struct gf_fw_caps *ret, struct gf_err *err);
	/*
	 * Send @p and follow its task until it ends (409/503 answers retried until
	 * the deadline): 0 with *ret when the task did not fail (Completed, or its
	 * monitor vanished: only reading the inventory back tells), GF_E_NODE
	 * (refused, with the BMC's message) when it ended in Exception, Killed or
	 * Cancelled, or when the BMC would not take the image.
	 */
	int (*fw_push)(void *session, const struct gf_fw_push *p, struct gf_fw_task *ret,
		       struct gf_err *err);
	/*
	 * Wait until no update task of the BMC is still running, by @deadline
	 * (resume: a task a killed run left behind).
	 */
	int (*fw_tasks_wait)(void *session, double deadline, struct gf_err *err);
	/*
	 * The update tasks the BMC lists that started at or after @since (epoch
	 * seconds, compared with the tasks' StartTime: the BMC's clock), by state:
	 * what resume asks before it activates or pushes again. Filled on success.
	 */
	int (*fw_tasks_since)(void *session, double since, struct gf_fw_tasks_seen *ret,
			      struct gf_err *err);
	/*
	 * Resume: take back what a killed push of this client left set on the
	 * BMC for members @targets (raw ids): HttpPushUriTargetsBusy, when it
	 * is set for exactly those members, is cleared with them (*ret_cleared
	 * true); a flag set for other members is another client's, left alone.
	 */
	int (*fw_push_release)(void *session, const char *const *targets, size_t ntargets,
			       bool *ret_cleared, struct gf_err *err);
	/*
	 * Restart the BMC (Manager.Reset), wait for it to come back (connections
	 * refused, 503) by @deadline, and log in again: the session stays usable.
	 */
	int (*bmc_reset)(void *session, double deadline, struct gf_err *err);
	/* After a host reset: wait for the BMC to answer again by @deadline (logged in again if needed). */
	int (*bmc_wait)(void *session, double deadline, struct gf_err *err);
	/*
	 * BIOS settings: what the BMC holds, with the attribute registry where
	 * @with_registry and the BMC publishes one; then stage (or apply) @values
	 * ({name: JSON value}, checked by the caller with gf_bios_value()); the
	 * caller reads back.
	 */
	int (*bios_get)(void *session, bool with_registry, struct gf_bios *ret, struct gf_err *err);
	int (*bios_set)(void *session, const json_t *values, enum gf_bios_apply when,
			struct gf_err *err);
	/* The node's serial console, without a session of open(); NULL: none. */
	const struct gf_console_ops *console;
	/*
	 * The SSH serial console the BMC advertises (Redfish
	 * Manager.SerialConsole.SSH, enabled): *ret_port its TCP port on the
	 * BMC's address, 0 when it offers none. NULL: never one.
	 */
	int (*console_ssh)(void *session, int *ret_port, struct gf_err *err);
};

/*
 * The table of backends, for the layers that may not include one (nodes,
 * the store, drift, metrics, help): the layer that lists them
 * (gf_bmc_register()) hands its table over once, at start, before any
 * thread; it is read-only after that, and its order is --protocol auto's.
 */
void gf_backends_set(const struct gf_backend *const *v, size_t n);
/* The backend of protocol @name (case-insensitive), NULL when none has it. Thread-safe. */
const struct gf_backend *gf_backend_find(const char *name);
/*
 * The protocols' names in alphabetical order, then @more (NULL: none), joined
 * with ", " and @last before the final one: ("auto", " or ") gives "ipmi,
 * redfish or auto". Caller frees. Thread-safe.
 */
char *gf_backend_names(const char *more, const char *last);

#endif
