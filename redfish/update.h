/*
 * Firmware updates over Redfish (update.c): what UpdateService offers,
 * pushing an image (MultipartHttpPushUri, HttpPushUri) or having it pulled
 * (SimpleUpdate), following the task, restarting the BMC and waiting for it
 * to come back. Internal to redfish/: redfish.c hands it the session's
 * requests, which return every status as it came (401 included).
 */
#ifndef GF_RF_UPDATE_H
#define GF_RF_UPDATE_H

#include "lib/cancel.h"
#include "lib/backend.h"
#include "redfish/http.h"
#include "redfish/rf.h"

/*
 * What a push learnt for the reset after it, kept by the session: the
 * Manager.Reset target a Completed task named (ResetRequired), the
 * FirmwareInventory member pushed (its Manager restarts otherwise).
 */
struct rf_upd_memo {
	char *reset_target;
	char *reset_type;
	char *component;
	/*
	 * The UpdateService as rf_update_caps() read it, for the push that
	 * follows in the same session (taken once: a later push reads it again).
	 */
	json_t *svc;
};

void rf_upd_memo_release(struct rf_upd_memo *m);

struct rf_upd {
	struct rf_client *c;
	void *ud;
	/*
	 * One request with the session's credentials, bounded by @until
	 * (monotonic): @body JSON text (or NULL), or the @image read as it is
	 * sent when not NULL.
	 */
	int (*request)(void *ud, const char *method, const char *path, const char *body,
		       const struct rf_body *image, double until, struct rf_resp *ret,
		       struct gf_err *err);
	/* A new session: after a BMC restart the old one is gone. */
	int (*login)(void *ud, double until, struct gf_err *err);
	double request_timeout;       /* seconds per request (the node's --timeout) */
	const gf_cancel_flag *cancel; /* Ctrl-C, NULL: none */
	struct rf_upd_memo *memo;     /* the session's, NULL: none */
	/* Requests go on for a few seconds after Ctrl-C or the deadline (putting back). */
	void (*cleanup)(void *ud);
};

int rf_update_caps(struct rf_upd *u, struct gf_fw_caps *ret, struct gf_err *err);
int rf_update_push(struct rf_upd *u, const struct gf_fw_push *p, struct gf_fw_task *ret,
		   struct gf_err *err);
int rf_update_tasks_wait(struct rf_upd *u, double deadline, struct gf_err *err);
/* update_state.c: the update tasks started since @since (the BMC's StartTime). */
int rf_update_tasks_since(struct rf_upd *u, double since, struct gf_fw_tasks_seen *ret,
			  struct gf_err *err);
/* Clear HttpPushUriTargetsBusy where it is set for exactly @targets (a killed push of ours). */
int rf_update_push_release(struct rf_upd *u, const char *const *targets, size_t ntargets,
			   bool *ret_cleared, struct gf_err *err);
int rf_update_bmc_reset(struct rf_upd *u, double deadline, struct gf_err *err);
/* @expect_down: a restart was asked for; an answer before the BMC went away does not count. */
int rf_update_bmc_wait(struct rf_upd *u, double deadline, bool expect_down, struct gf_err *err);

/*
 * The multipart/form-data framing of a MultipartHttpPushUri request (pure):
 * what goes before the image (the UpdateParameters part, the UpdateFile
 * part's headers) into @head, what goes after it into @tail.
 */
void rf_update_multipart(const char *boundary, const char *params, const char *filename,
			 struct gf_buf *head, struct gf_buf *tail);

#endif
