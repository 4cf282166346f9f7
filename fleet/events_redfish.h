/*
 * events follow on Redfish nodes: the pushed source of the follow loop
 * (fleet/events.h struct gf_events_pusher). One thread runs the
 * Server-Sent Events multiplexer (redfish/sse.h) over the followed nodes
 * whose protocol is Redfish (or auto, when the BMC answers Redfish's probe;
 * the others are polled), each stream opened with the node's target as
 * every session is (gf_bmc_target_of(): profile, CA, pin) and resumed
 * after the stored "redfish-sse" cursor. Its hooks hand the events to the
 * loop (gf_events_push()); the loop stores them on its thread.
 *
 * The node's LogService (gf_redfish_log_since(), from the stored
 * "redfish-log" cursor) is read, on the same thread: before its stream
 * is opened (the first time: the baseline, stored but not reported; then
 * what came while nothing followed it), after each reconnect (what the
 * replay may not cover), and every interval for a node whose BMC has no
 * SSE or refuses another stream. An event both paths deliver has one
 * dedupe key, "redfish:<id>" (the SSE EventId, the LogEntry Id): stored
 * and reported once where the BMC gives both the same id (OpenBMC's
 * bmcweb does); where it does not, both are stored.
 * TLS: every session of a node, stream or log read, is held to its stored
 * pin or, pinning on first use (--tls-pin new), to the certificate it
 * showed first in this follow, and those are stored as pins when the
 * follow ends (struct gf_fanout's rules; x->pinned for the report).
 * Nothing here prints.
 */
#ifndef GF_FLEET_EVENTS_REDFISH_H
#define GF_FLEET_EVENTS_REDFISH_H

#include <pthread.h>
#include <stdbool.h>

#include "fleet/bmc.h"
#include "fleet/fanout.h"
#include "fleet/events.h"
#include "fleet/pins.h"

struct gf_events_redfish {
	/* ---- given ---- */
	const struct gf_profile *const *profs; /* per node of the follow, resolved */
	const char *cacert;                    /* CA bundle, NULL: system CAs */
	bool insecure;
	bool tls_pin_new;
	double interval; /* seconds between two reads of a polled node's LogService */

	/* ---- its own (gf_events_redfish_release) ---- */
	struct gf_events_follow *f;
	struct gf_bmc_run run;
	struct gf_pins pins;
	struct gf_rf_sse *m;
	struct rf_node *nodes; /* per node of the follow */
	size_t *of;            /* per stream of the multiplexer: its node */
	size_t nstreams;
	size_t *probe_of; /* the nodes being probed, or read first, at start */
	/* After stop: the certificates pinned on first use (into pins), or why not stored. */
	struct gf_fanout_pinned *pinned;
	size_t npinned;
	int pins_rc;
	struct gf_err pins_err;
	gf_cancel_flag quit;
	pthread_t thread;
	bool started;
	int rc;
	struct gf_err err;
};

/* struct gf_events_pusher's: @ud is a struct gf_events_redfish. */
int gf_events_redfish_start(void *ud, struct gf_events_follow *f, bool *pushed_only,
			    struct gf_err *err);
int gf_events_redfish_stop(void *ud, struct gf_err *err);
/* After stop, once x->pinned is reported: free the pins. */
void gf_events_redfish_release(struct gf_events_redfish *x);

#endif
