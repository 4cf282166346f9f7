/*
 * What a BMC says about the updates it ran (resume): its update tasks
 * since a time, by state. An update task is one whose Payload names a URI
 * of the UpdateService (a push URI, SimpleUpdate): tasks of other services
 * (a BIOS job, a log collection) say nothing about a firmware image.
 */
#include <string.h>
#include <strings.h>

#include "lib/util.h"
#include "redfish/update.h"

static bool update_task(const json_t *t, const json_t *svc)
{
	const char *target = rf_str(rf_obj(t, "Payload"), "TargetUri");
	const char *own[] = {
		rf_str(svc, "MultipartHttpPushUri"),
		rf_str(svc, "HttpPushUri"),
		rf_str(rf_obj(rf_obj(svc, "Actions"), "#UpdateService.SimpleUpdate"), "target"),
	};

	if (!target)
		return false;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (own[i] && strcmp(own[i], target) == 0)
			return true; /* a push URI outside /UpdateService (XCC, iLO) */
	return strcasestr(target, "/UpdateService") != NULL;
}

int rf_update_tasks_since(struct rf_upd *u, double since, struct gf_fw_tasks_seen *ret,
			  struct gf_err *err)
{
	const char *ts = rf_link(u->c->root, "Tasks");
	const char *us = rf_link(u->c->root, "UpdateService");
	struct gf_fw_tasks_seen seen = {0};
	json_t *svc = NULL, *upd = NULL, *tasks = NULL, *t;
	size_t i;
	int rc;

	if (!ts) {
		*ret = seen; /* no TaskService: no evidence either way */
		return 0;
	}
	rc = rf_fetch_opt(u->c, ts, &svc, err);
	if (rc == 0 && svc)
		rc = rf_collection_of(u->c, svc, "Tasks", RF_WALK_FETCH, &tasks, err);
	json_decref(svc);
	if (rc == 0 && us)
		rc = rf_fetch_opt(u->c, us, &upd, err);
	if (rc < 0) {
		json_decref(tasks);
		return rc;
	}
	json_array_foreach(tasks, i, t) {
		const char *state = rf_str(t, "TaskState");
		double started;

		if (!update_task(t, upd) || !rf_str(t, "StartTime") ||
		    gf_time_parse_iso8601(rf_str(t, "StartTime"), &started) < 0 || started < since)
			continue;
		if (rf_eq(state, "Completed"))
			seen.completed++;
		else if (rf_eq(state, "Exception") || rf_eq(state, "Killed") ||
			 rf_eq(state, "Cancelled"))
			seen.failed++;
		else
			seen.running++;
	}
	json_decref(tasks);
	json_decref(upd);
	*ret = seen;
	return 0;
}
