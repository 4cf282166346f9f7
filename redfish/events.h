/*
 * Redfish events into the one normalized event (struct gf_event, lib/model.h):
 * the records of an EventService Event (what a Server-Sent Events stream
 * carries in its data: field) and the entries of a LogService, their CPER
 * diagnostic data decoded (lib/cper.h). Nothing here prints; pure but for
 * gf_redfish_log_since(), which reads the BMC.
 */
#ifndef GF_RF_EVENTS_H
#define GF_RF_EVENTS_H

#include <jansson.h>

#include "lib/err.h"
#include "lib/model.h"

#define GF_RF_SOURCE_SSE "redfish-sse" /* gf_event.source of a streamed event */
#define GF_RF_SOURCE_LOG "redfish-log" /* gf_event.source of a LogService entry */

/* Records of one Event payload taken, at most (the rest are counted in the error). */
#define GF_RF_EVENT_MAX_RECORDS 1024u

/*
 * The records of one Event payload (@doc: {"Events": [EventRecord...]}) as
 * events of @node, appended to @ret: bmc_id EventId, time EventTimestamp,
 * severity from MessageSeverity else Severity (gf_event_severity_redfish),
 * message, message id, origin (OriginOfCondition), type (EventType), and a
 * payload where the record has CPER DiagnosticData or a Resolution.
 * @received is stamped on each. A payload that is not an Event object:
 * GF_E_USAGE, nothing appended. Pure, thread-safe.
 */
int gf_redfish_event_parse(const json_t *doc, const char *node, double received,
			   struct gf_event_list *ret, struct gf_err *err);

/*
 * One LogEntry as an event of @node (source "redfish-log"): bmc_id Id,
 * time Created (else EventTimestamp), severity, message, message id,
 * sensor and type (SensorType, else EntryType), origin
 * (Links.OriginOfCondition), and the payload: {"cper": decoded} for
 * DiagnosticDataType CPER with base64 DiagnosticData ({"cper_error": why}
 * when it does not decode), "resolution" where given. Set on success only;
 * release with gf_event_release(). Pure.
 */
int gf_redfish_logentry_parse(const json_t *entry, const char *node, double received,
			      struct gf_event *ret, struct gf_err *err);

/*
 * Is LogEntry Id @a newer than @b? Numeric ids compare as numbers, others
 * as text (shorter first); NULL @b: every id is newer.
 */
bool gf_redfish_log_newer(const char *a, const char *b);

/*
 * The entries of the node's event log (the LogService `sel` reads, as
 * `--log` would name it) newer than @cursor (a LogEntry Id, NULL: all),
 * oldest first, appended to @ret; *ret_cursor (caller frees) the newest Id
 * now in the log, or a copy of @cursor when nothing is newer. A new
 * entry whose CPER record is behind its AdditionalDataURI (not inline)
 * has it fetched (1 MiB at most) and decoded: payload "cper" (or
 * "cper_error") and "cper_uri". @session is
 * an open session of the Redfish backend (gf_redfish_backend.open). What
 * the caller calls after a stream reconnected (gf_rf_sse_hooks.resumed),
 * or for a BMC it polls. Per-node errors are GF_E_NODE. Not thread-safe
 * for one session.
 */
int gf_redfish_log_since(void *session, const char *cursor, double received,
			 struct gf_event_list *ret, char **ret_cursor, struct gf_err *err);

#endif
