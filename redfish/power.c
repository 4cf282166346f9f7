/*
 * Power and boot through the main System: ComputerSystem.Reset with the
 * types the BMC allows (inline, or only in an ActionInfo resource), and the
 * Boot override PATCHed with If-Match.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/util.h"
#include "redfish/rf.h"

/* How long a two-step cycle waits for the ForceOff to show, at most (the node deadline still rules). */
#define OFF_WAIT_S 60.0
#define POLL_S 0.5

static bool has_reset(const json_t *sys)
{
	return rf_obj(rf_obj(sys, "Actions"), "#ComputerSystem.Reset") != NULL;
}

int rf_main_system(struct rf_client *c, json_t **ret, struct gf_err *err)
{
	json_t *systems = NULL, *pick;
	size_t i;
	json_t *s;
	int rc;

	if (c->main_system)
		return rf_fetch(c, c->main_system, ret, err);
	if (!rf_link(c->root, "Systems"))
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "bmc '%s' has no Systems",
				  c->node);
	rc = rf_collection_of(c, c->root, "Systems", RF_WALK_FETCH | RF_WALK_KEEP, &systems, err);
	if (rc < 0)
		return rc;
	pick = json_array_get(systems, 0);
	json_array_foreach(systems, i, s) {
		if (has_reset(s)) {
			pick = s;
			break;
		}
	}
	if (!pick || !rf_odata_id(pick)) {
		json_decref(systems);
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "bmc '%s' lists no System",
				  c->node);
	}
	c->main_system = gf_xstrdup(rf_odata_id(pick));
	/* The maker of the System decides the dialect better than the BMC's vendor. */
	c->dialect = rf_dialect_detect(c->root, rf_str(pick, "Manufacturer"));
	*ret = json_incref(pick);
	json_decref(systems);
	return 0;
}

enum gf_power rf_power_state(const char *s)
{
	if (rf_eq(s, "On"))
		return GF_POWER_ON;
	if (rf_eq(s, "Off"))
		return GF_POWER_OFF;
	return GF_POWER_UNKNOWN; /* PoweringOn, PoweringOff, Paused, missing */
}

/* What each operation may be sent as, best first. */
static const char *const plan_on[] = {"On", "ForceOn", NULL};
static const char *const plan_off[] = {"ForceOff", NULL};
static const char *const plan_cycle[] = {"PowerCycle", NULL};
static const char *const plan_reset[] = {"ForceRestart", NULL};
static const char *const plan_soft[] = {"GracefulShutdown", NULL};
static const char *const plan_nmi[] = {"Nmi", NULL};

static const char *const *const plans[] = {
	[GF_POWER_OP_ON] = plan_on,       [GF_POWER_OP_OFF] = plan_off,
	[GF_POWER_OP_CYCLE] = plan_cycle, [GF_POWER_OP_RESET] = plan_reset,
	[GF_POWER_OP_SOFT] = plan_soft,   [GF_POWER_OP_NMI] = plan_nmi,
};

static bool allows(const json_t *allowed, const char *type)
{
	size_t i;
	json_t *v;

	if (!allowed)
		return true; /* the BMC does not say: try */
	json_array_foreach(allowed, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), type) == 0)
			return true;
	return false;
}

static const char *first_allowed(const char *const *plan, const json_t *allowed)
{
	for (size_t i = 0; plan[i]; i++)
		if (allows(allowed, plan[i]))
			return plan[i];
	return NULL;
}

size_t rf_reset_plan(enum gf_power_op op, const json_t *allowed, const char *steps[2])
{
	const char *t;

	if ((unsigned)op >= sizeof(plans) / sizeof(plans[0]))
		return 0;
	if (allowed && !json_is_array(allowed))
		allowed = NULL;
	t = first_allowed(plans[op], allowed);
	if (t) {
		steps[0] = t;
		return 1;
	}
	if (op == GF_POWER_OP_CYCLE) {
		const char *off = first_allowed(plan_off, allowed),
			   *on = first_allowed(plan_on, allowed);

		if (off && on) {
			steps[0] = off;
			steps[1] = on;
			return 2;
		}
	}
	return 0;
}

/* A list of allowed values must be one of names; anything else in it is a broken answer. */
static int only_strings(struct rf_client *c, const json_t *allowed, struct gf_err *err)
{
	size_t i;
	json_t *v;

	json_array_foreach(allowed, i, v)
		if (!json_is_string(v))
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "bmc '%s' lists reset types that are not strings",
					  c->node);
	return 0;
}

int rf_reset_allowed(struct rf_client *c, const json_t *sys, json_t **ret, struct gf_err *err)
{
	json_t *action = rf_obj(rf_obj(sys, "Actions"), "#ComputerSystem.Reset");
	json_t *allowed = rf_arr(action, "ResetType@Redfish.AllowableValues"), *info = NULL;
	const char *info_uri = rf_str(action, "@Redfish.ActionInfo");
	size_t i;
	json_t *p;
	int rc;

	if (!allowed && info_uri) {
		rc = rf_fetch_opt(c, info_uri, &info, err);
		if (rc < 0)
			return rc;
		json_array_foreach(rf_arr(info, "Parameters"), i, p) {
			if (rf_eq(rf_str(p, "Name"), "ResetType") && rf_arr(p, "AllowableValues")) {
				allowed = rf_arr(p, "AllowableValues");
				break;
			}
		}
	}
	rc = only_strings(c, allowed, err);
	if (rc == 0)
		*ret = json_incref(allowed);
	json_decref(info);
	return rc;
}

/*
 * The allowed types for a message: the names, cut short. Never a dump of the
 * BMC's JSON, which would recurse through whatever nesting it sent.
 */
static void allowed_text(const json_t *allowed, struct gf_buf *b)
{
	size_t i;
	json_t *v;

	json_array_foreach(allowed, i, v) {
		if (b->len > 160) {
			gf_buf_adds(b, ", ...");
			break;
		}
		gf_buf_addf(b, "%s'%.40s'", i ? ", " : "", json_string_value(v));
	}
	if (!b->len)
		gf_buf_adds(b, "nothing");
}

int rf_power_get(struct rf_client *c, enum gf_power *ret, struct gf_err *err)
{
	json_t *sys = NULL;
	int rc = rf_main_system(c, &sys, err);

	if (rc < 0)
		return rc;
	*ret = rf_power_state(rf_str(sys, "PowerState"));
	json_decref(sys);
	return 0;
}

static int send_reset(struct rf_client *c, const char *target, const char *type, struct gf_err *err)
{
	json_t *body = json_pack("{s:s}", "ResetType", type);
	int rc = c->io->send(c->ud, "POST", target, body, NULL, err);

	json_decref(body);
	return rc;
}

static int wait_state(struct rf_client *c, enum gf_power want, struct gf_err *err)
{
	double until = gf_monotime() + OFF_WAIT_S;

	for (;;) {
		enum gf_power now;
		int rc = rf_power_get(c, &now, err);

		if (rc < 0)
			return rc;
		if (now == want)
			return 0;
		if (gf_monotime() + POLL_S > until)
			return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
					  "bmc '%s' did not power %s in time", c->node,
					  gf_power_name(want));
		gf_sleep_until(gf_monotime() + POLL_S);
	}
}

/*
 * A Reset refused with 409 (Dell: "nothing to change") is a success when the
 * System already is where the operation leads; a cycle or reset of a System
 * that is off becomes a power on, as the wanted end state is on.
 */
static int after_conflict(struct rf_client *c, enum gf_power_op op, const char *target,
			  const json_t *allowed, struct gf_err *err)
{
	struct gf_err saved = err ? *err : (struct gf_err){0};
	enum gf_power now;
	const char *on;

	if (rf_power_get(c, &now, NULL) < 0)
		goto refuse;
	switch (op) {
	case GF_POWER_OP_ON:
		if (now == GF_POWER_ON)
			goto ok;
		break;
	case GF_POWER_OP_OFF:
	case GF_POWER_OP_SOFT:
		if (now == GF_POWER_OFF)
			goto ok;
		break;
	case GF_POWER_OP_CYCLE:
	case GF_POWER_OP_RESET:
		on = first_allowed(plan_on, allowed);
		if (now == GF_POWER_OFF && on) {
			gf_err_clear(err);
			return send_reset(c, target, on, err);
		}
		break;
	default: break;
	}
refuse:
	if (err)
		*err = saved;
	return GF_E_NODE;
ok:
	gf_err_clear(err);
	return 0;
}

int rf_power_set(struct rf_client *c, enum gf_power_op op, struct gf_err *err)
{
	json_t *sys = NULL, *allowed = NULL;
	const char *steps[2] = {NULL, NULL}, *target;
	char *tgt = NULL;
	size_t nsteps;
	int rc;

	rc = rf_main_system(c, &sys, err);
	if (rc < 0)
		return rc;
	target = rf_str(rf_obj(rf_obj(sys, "Actions"), "#ComputerSystem.Reset"), "target");
	if (!target) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"system '%s' of bmc '%s' has no Reset action",
				rf_odata_id(sys) ? rf_odata_id(sys) : "?", c->node);
		goto out;
	}
	tgt = gf_xstrdup(target);
	rc = rf_reset_allowed(c, sys, &allowed, err);
	if (rc < 0)
		goto out;
	nsteps = rf_reset_plan(op, allowed, steps);
	if (nsteps == 0) {
		struct gf_buf list = GF_BUF_INIT;

		allowed_text(allowed, &list);
		rc = gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				"bmc '%s' allows no reset type for power %s (it allows %s)",
				c->node, gf_power_op_name(op), gf_buf_str(&list));
		gf_buf_release(&list);
		goto out;
	}
	for (size_t i = 0; i < nsteps; i++) {
		struct gf_err e = {0}; /* this request's own: its detail is its HTTP status */

		rc = send_reset(c, tgt, steps[i], &e);
		if (rc < 0 && e.detail == 409 && nsteps == 1)
			rc = after_conflict(c, op, tgt, allowed, &e);
		else if (rc < 0 && e.detail == 409 && i == 0 && nsteps == 2)
			rc = 0; /* already off: go on with the On */
		if (rc < 0) {
			if (err)
				*err = e;
			goto out;
		}
		if (i + 1 < nsteps) {
			rc = wait_state(c, GF_POWER_OFF, err);
			if (rc < 0)
				goto out;
		}
	}
out:
	free(tgt);
	json_decref(allowed);
	json_decref(sys);
	return rc;
}

/* ---- boot override ------------------------------------------------------ */

static const struct {
	enum gf_boot_dev dev;
	const char *target;
} boot_targets[] = {
	{GF_BOOT_NONE, "None"},      {GF_BOOT_PXE, "Pxe"}, {GF_BOOT_DISK, "Hdd"},
	{GF_BOOT_BIOS, "BiosSetup"}, {GF_BOOT_CD, "Cd"},
};

void rf_boot_parse(const json_t *sys, struct gf_boot *ret)
{
	json_t *boot = rf_obj(sys, "Boot");
	const char *target = rf_str(boot, "BootSourceOverrideTarget");
	const char *enabled = rf_str(boot, "BootSourceOverrideEnabled");
	const char *mode = rf_str(boot, "BootSourceOverrideMode");
	struct gf_boot b = {GF_BOOT_NONE, false, GF_BOOT_MODE_UNSET};

	if (target && !rf_eq(enabled, "Disabled")) {
		b.dev = GF_BOOT_OTHER;
		for (size_t i = 0; i < sizeof(boot_targets) / sizeof(boot_targets[0]); i++)
			if (rf_eq(target, boot_targets[i].target))
				b.dev = boot_targets[i].dev;
		/* UsbCd is a CD too, as far as the operator is concerned. */
		if (rf_eq(target, "UsbCd"))
			b.dev = GF_BOOT_CD;
	}
	b.persistent = b.dev != GF_BOOT_NONE && rf_eq(enabled, "Continuous");
	if (rf_eq(mode, "UEFI"))
		b.mode = GF_BOOT_MODE_UEFI;
	else if (rf_eq(mode, "Legacy"))
		b.mode = GF_BOOT_MODE_LEGACY;
	*ret = b;
}

int rf_boot_get(struct rf_client *c, struct gf_boot *ret, struct gf_err *err)
{
	json_t *sys = NULL;
	int rc = rf_main_system(c, &sys, err);

	if (rc < 0)
		return rc;
	if (!rf_obj(sys, "Boot")) {
		json_decref(sys);
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "the main system of bmc '%s' has no Boot settings", c->node);
	}
	rf_boot_parse(sys, ret);
	json_decref(sys);
	return 0;
}

static bool value_allowed(const json_t *boot, const char *prop, const char *value)
{
	char key[96];
	json_t *allowed;
	size_t i;
	json_t *v;

	snprintf(key, sizeof(key), "%s@Redfish.AllowableValues", prop);
	allowed = rf_arr(boot, key);
	if (!allowed)
		return true;
	json_array_foreach(allowed, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), value) == 0)
			return true;
	return false;
}

/* The PATCH body for @want, or NULL with @err when the BMC cannot do it. */
static json_t *boot_body(struct rf_client *c, const json_t *boot, const struct gf_boot *want,
			 struct gf_err *err)
{
	const char *target = NULL, *enabled, *mode = NULL;
	json_t *b;

	for (size_t i = 0; i < sizeof(boot_targets) / sizeof(boot_targets[0]); i++)
		if (boot_targets[i].dev == want->dev)
			target = boot_targets[i].target;
	if (!target) {
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "boot device '%s' cannot be set",
			   gf_boot_dev_name(want->dev));
		return NULL;
	}
	enabled = want->dev == GF_BOOT_NONE ? "Disabled"
					    : (want->persistent ? "Continuous" : "Once");
	if (!value_allowed(boot, "BootSourceOverrideTarget", target)) {
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "bmc '%s' does not allow boot override target '%s'", c->node, target);
		return NULL;
	}
	if (!value_allowed(boot, "BootSourceOverrideEnabled", enabled)) {
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "bmc '%s' does not allow a boot override that is '%s'", c->node,
			   enabled);
		return NULL;
	}
	if (want->mode == GF_BOOT_MODE_UEFI)
		mode = "UEFI";
	else if (want->mode == GF_BOOT_MODE_LEGACY)
		mode = "Legacy";
	if (mode && (!json_object_get(boot, "BootSourceOverrideMode") ||
		     !value_allowed(boot, "BootSourceOverrideMode", mode))) {
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "bmc '%s' cannot set the boot mode to '%s'", c->node, mode);
		return NULL;
	}
	b = json_pack("{s:s,s:s}", "BootSourceOverrideTarget", target, "BootSourceOverrideEnabled",
		      enabled);
	if (mode)
		json_object_set_new(b, "BootSourceOverrideMode", json_string(mode));
	return json_pack("{s:o}", "Boot", b);
}

/* rf_patch_fresh(): the Boot PATCH from the System as just read. */
static json_t *boot_patch(struct rf_client *c, const json_t *sys, void *ud, struct gf_err *err)
{
	if (!rf_obj(sys, "Boot")) {
		gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
			   "the main system of bmc '%s' has no Boot settings", c->node);
		return NULL;
	}
	return boot_body(c, rf_obj(sys, "Boot"), ud, err);
}

int rf_boot_set(struct rf_client *c, const struct gf_boot *want, struct gf_err *err)
{
	json_t *sys = NULL;
	int rc;

	rc = rf_main_system(c, &sys, err);
	if (rc < 0)
		return rc;
	json_decref(sys);
	return rf_patch_fresh(c, c->main_system, boot_patch, (void *)want, err);
}
