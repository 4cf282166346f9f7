/*
 * Sensors from every model a BMC may use, into the one sensor model: legacy
 * Thermal (Temperatures, Fans) and Power (Voltages, PowerSupplies,
 * PowerControl), the Chassis Sensors collection, and ThermalSubsystem Fans /
 * PowerSubsystem PowerSupplies where the legacy documents are missing. A name
 * already reported for a chassis is not reported again (Dell and Lenovo show
 * both models).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "redfish/rf.h"

/* ReadingType -> canonical type and unit; a counter only grows, so no threshold judges it. */
static const struct {
	const char *reading_type;
	const char *type;
	const char *unit;
	bool counter;
} reading_types[] = {
	{"Temperature", "temperature", "C", false},
	{"Rotational", "fan", "RPM", false},
	{"Power", "power", "W", false},
	{"Voltage", "voltage", "V", false},
	{"Current", "current", "A", false},
	{"Percent", "utilization", "%", false},
	{"Frequency", "frequency", "Hz", false},
	{"EnergyJoules", "energy", "J", true},
	{"EnergykWh", "energy", "kWh", true},
	{"EnergyWh", "energy", "Wh", true},
	{"Humidity", "humidity", "%", false},
	{"AirFlow", "airflow", "CFM", false},
	{"AirFlowCMM", "airflow", "m3/min", false},
	{"Altitude", "altitude", "m", false},
	{"Barometric", "pressure", "Pa", false},
	{"PressurePa", "pressure", "Pa", false},
	{"LiquidFlowLPM", "liquid_flow", "L/min", false},
	{"LiquidLevel", "liquid_level", "cm", false},
};

/*
 * Units that say unambiguously what is measured: they win over a
 * contradicting ReadingType (Lenovo sends "Current" in "Watts", and fan
 * tachometers as "AirFlow" in "RPM").
 */
static const struct {
	const char *units;
	const char *type;
	const char *unit;
} unit_types[] = {
	{"W", "power", "W"},         {"Watts", "power", "W"},   {"RPM", "fan", "RPM"},
	{"Cel", "temperature", "C"}, {"C", "temperature", "C"}, {"V", "voltage", "V"},
	{"A", "current", "A"},
};

static bool seen_name(json_t *seen, const char *name)
{
	struct gf_buf b = GF_BUF_INIT;
	bool was;

	if (!name)
		return false;
	for (const char *p = name; *p; p++)
		gf_buf_addc(&b, (char)((*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p));
	was = json_object_get(seen, gf_buf_str(&b)) != NULL;
	if (!was)
		json_object_set_new(seen, gf_buf_str(&b), json_true());
	gf_buf_release(&b);
	return was;
}

static enum gf_sensor_state health_state(const char *h)
{
	if (rf_eq(h, "OK"))
		return GF_SENSOR_NOMINAL;
	if (rf_eq(h, "Warning"))
		return GF_SENSOR_WARNING;
	if (rf_eq(h, "Critical"))
		return GF_SENSOR_CRITICAL;
	return GF_SENSOR_UNKNOWN;
}

/* Absent or disabled parts have no reading worth showing. */
static bool present(const json_t *o)
{
	const char *st = rf_get_str(o, "Status.State");

	return !(rf_eq(st, "Absent") || rf_eq(st, "Disabled") || rf_eq(st, "UnavailableOffline"));
}

static void num_from(struct gf_num *n, const json_t *o, const char *key)
{
	double v;

	if (rf_num(o, key, &v)) {
		n->set = true;
		n->v = v;
	}
}

/*
 * The state of a sensor with a reading. The BMC's own judgement (Status.Health)
 * rules where it gives one: thresholds are data the BMC also holds, and they
 * can be wrong (a DGX gives its energy counters, megajoules by now, a limit of
 * 272850). Thresholds decide only where Health is missing, and never for a
 * @counter, which passes any limit in time. A crossing the state does not
 * show is kept as a note.
 */
static void settle_state(struct gf_sensor *s, const json_t *o, bool counter)
{
	/* The thresholds a reading can cross, mildest first, with their JSON names. */
	const struct {
		const struct gf_num *t;
		bool upper;
		enum gf_sensor_state state;
		const char *name;
	} limits[] = {
		{&s->unc, true, GF_SENSOR_WARNING, "upper_non_critical"},
		{&s->lnc, false, GF_SENSOR_WARNING, "lower_non_critical"},
		{&s->uc, true, GF_SENSOR_CRITICAL, "upper_critical"},
		{&s->lc, false, GF_SENSOR_CRITICAL, "lower_critical"},
		{&s->unr, true, GF_SENSOR_CRITICAL, "upper_non_recoverable"},
		{&s->lnr, false, GF_SENSOR_CRITICAL, "lower_non_recoverable"},
	};
	enum gf_sensor_state told = health_state(rf_get_str(o, "Status.Health"));
	enum gf_sensor_state th = GF_SENSOR_NOMINAL;
	size_t crossed = sizeof(limits) / sizeof(limits[0]);

	if (!s->reading.set) {
		s->state = told;
		return;
	}
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		const struct gf_num *t = limits[i].t;

		if (t->set && (limits[i].upper ? s->reading.v > t->v : s->reading.v < t->v)) {
			th = limits[i].state;
			crossed = i;
		}
	}
	if (told != GF_SENSOR_UNKNOWN)
		s->state = told;
	else
		s->state = counter ? GF_SENSOR_NOMINAL : th;
	if (th > s->state) {
		struct gf_buf b = GF_BUF_INIT;

		gf_buf_addf(&b, "reading beyond %s (%g)", limits[crossed].name,
			    limits[crossed].t->v);
		/* Only a milder state than the crossing gets here: OK or Warning. */
		if (told != GF_SENSOR_UNKNOWN)
			gf_buf_addf(&b, "; the bmc reports health %s",
				    told == GF_SENSOR_NOMINAL ? "OK" : "Warning");
		else
			gf_buf_adds(&b, "; a counter: thresholds do not judge it");
		s->note = gf_buf_detach(&b);
	}
}

static struct gf_sensor *add(struct gf_sensor_list *ret, json_t *seen, const char *name,
			     const char *type, const char *unit)
{
	struct gf_sensor *s;

	if (!name || seen_name(seen, name))
		return NULL;
	s = gf_sensor_list_add(ret);
	s->name = gf_xstrdup(name);
	s->type = gf_xstrdup(type);
	s->unit = unit ? gf_xstrdup(unit) : NULL;
	return s;
}

/* The legacy threshold members of Thermal and Power entries. */
static void legacy_thresholds(struct gf_sensor *s, const json_t *o)
{
	num_from(&s->unc, o, "UpperThresholdNonCritical");
	num_from(&s->uc, o, "UpperThresholdCritical");
	num_from(&s->unr, o, "UpperThresholdFatal");
	num_from(&s->lnc, o, "LowerThresholdNonCritical");
	num_from(&s->lc, o, "LowerThresholdCritical");
	num_from(&s->lnr, o, "LowerThresholdFatal");
}

static void legacy_reading(const json_t *o, const char *key, json_t *seen, const char *type,
			   const char *unit, struct gf_sensor_list *ret)
{
	struct gf_sensor *s;

	if (!json_is_object(o))
		return;
	s = add(ret, seen, rf_str(o, "Name"), type, unit);
	if (!s)
		return;
	if (present(o)) {
		num_from(&s->reading, o, key);
		legacy_thresholds(s, o);
		settle_state(s, o, false);
	}
}

void rf_sensor_fan(const json_t *fan, json_t *seen, struct gf_sensor_list *ret)
{
	const char *units = rf_str(fan, "ReadingUnits");
	const char *unit = rf_eq(units, "Percent") ? "%" : "RPM";
	const char *name = rf_str(fan, "Name");
	struct gf_sensor *s;
	double v;

	if (!json_is_object(fan))
		return;
	if (!name)
		name = rf_str(fan, "FanName");
	/* ThermalSubsystem Fans carry SpeedPercent {Reading, SpeedRPM}. */
	if (!json_object_get(fan, "Reading") && !json_object_get(fan, "ReadingRPM") &&
	    rf_obj(fan, "SpeedPercent"))
		unit = rf_num(rf_obj(fan, "SpeedPercent"), "SpeedRPM", &v) ? "RPM" : "%";
	s = add(ret, seen, name, "fan", unit);
	if (!s || !present(fan))
		return;
	if (rf_num(fan, "Reading", &v) || rf_num(fan, "ReadingRPM", &v) ||
	    (!strcmp(unit, "RPM") && rf_num(rf_obj(fan, "SpeedPercent"), "SpeedRPM", &v)) ||
	    rf_num(rf_obj(fan, "SpeedPercent"), "Reading", &v)) {
		s->reading.set = true;
		s->reading.v = v;
	}
	legacy_thresholds(s, fan);
	settle_state(s, fan, false);
}

void rf_sensor_psu(const json_t *psu, json_t *seen, struct gf_sensor_list *ret)
{
	const char *name = rf_str(psu, "Name"), *health, *state;
	struct gf_buf b = GF_BUF_INIT;
	struct gf_sensor *s;
	char fallback[48];

	if (!json_is_object(psu))
		return;
	/* A Name every supply has alike (the dialect tables say which): the member id tells them apart. */
	if (!name || rf_psu_name_shared(name)) {
		const char *mid = rf_str(psu, "MemberId");

		snprintf(fallback, sizeof(fallback), "Power Supply %s", mid ? mid : "?");
		name = fallback;
	}
	s = add(ret, seen, name, "power_supply", NULL);
	if (!s)
		return;
	health = rf_get_str(psu, "Status.Health");
	state = rf_get_str(psu, "Status.State");
	if (rf_eq(state, "Absent")) {
		s->state = GF_SENSOR_UNKNOWN;
		s->state_text = gf_xstrdup("absent");
		return;
	}
	s->state = health_state(health);
	gf_buf_adds(&b, state ? state : "present");
	if (health)
		gf_buf_addf(&b, ", %s", health);
	s->state_text = gf_buf_detach(&b);
}

void rf_sensors_thermal(const json_t *thermal, json_t *seen, struct gf_sensor_list *ret)
{
	size_t i;
	json_t *o;

	json_array_foreach(rf_arr(thermal, "Temperatures"), i, o)
		legacy_reading(o, "ReadingCelsius", seen, "temperature", "C", ret);
	json_array_foreach(rf_arr(thermal, "Fans"), i, o)
		rf_sensor_fan(o, seen, ret);
}

void rf_sensors_power(const json_t *power, json_t *seen, struct gf_sensor_list *ret)
{
	size_t i;
	json_t *o;

	json_array_foreach(rf_arr(power, "Voltages"), i, o)
		legacy_reading(o, "ReadingVolts", seen, "voltage", "V", ret);
	json_array_foreach(rf_arr(power, "PowerSupplies"), i, o)
		rf_sensor_psu(o, seen, ret);
	json_array_foreach(rf_arr(power, "PowerControl"), i, o) {
		const char *name = rf_str(o, "Name");
		char fallback[48];
		struct gf_sensor *s;

		if (!json_is_object(o))
			continue;
		if (!name) {
			const char *mid = rf_str(o, "MemberId");

			snprintf(fallback, sizeof(fallback), "Power Control %s", mid ? mid : "0");
			name = fallback;
		}
		s = add(ret, seen, name, "power", "W");
		if (!s)
			continue;
		num_from(&s->reading, o, "PowerConsumedWatts");
		settle_state(s, o, false);
	}
}

void rf_sensor_one(const json_t *o, json_t *seen, struct gf_sensor_list *ret)
{
	const char *rt = rf_str(o, "ReadingType"), *units = rf_str(o, "ReadingUnits");
	const char *type = NULL, *unit = NULL;
	json_t *th = rf_obj(o, "Thresholds");
	struct gf_sensor *s;
	bool discrete, counter = false;

	if (!json_is_object(o))
		return;
	for (size_t i = 0; rt && i < sizeof(reading_types) / sizeof(reading_types[0]); i++) {
		if (rf_eq(rt, reading_types[i].reading_type)) {
			type = reading_types[i].type;
			unit = reading_types[i].unit;
			counter = reading_types[i].counter;
		}
	}
	for (size_t i = 0; units && i < sizeof(unit_types) / sizeof(unit_types[0]); i++) {
		if (strcmp(units, unit_types[i].units) == 0) {
			type = unit_types[i].type;
			unit = unit_types[i].unit;
			counter = false;
		}
	}
	/*
	 * No ReadingType, or an empty ReadingUnits (Lenovo's state sensors read
	 * 0 whatever happens): a discrete sensor, known by its health alone.
	 */
	discrete = !type || (units && !*units);
	s = add(ret, seen, rf_str(o, "Name") ? rf_str(o, "Name") : rf_str(o, "Id"),
		type ? type : "other", discrete ? NULL : unit);
	if (!s)
		return;
	if (!present(o))
		return;
	if (discrete) {
		const char *h = rf_get_str(o, "Status.Health");
		const char *oem = rf_oem_str(o, RF_OEM_SENSOR_TEXT);

		s->state = health_state(h);
		if (oem || h)
			s->state_text = gf_xstrdup(oem ? oem : h);
		return;
	}
	num_from(&s->reading, o, "Reading");
	if (th) {
		num_from(&s->unc, rf_obj(th, "UpperCaution"), "Reading");
		num_from(&s->uc, rf_obj(th, "UpperCritical"), "Reading");
		num_from(&s->unr, rf_obj(th, "UpperFatal"), "Reading");
		num_from(&s->lnc, rf_obj(th, "LowerCaution"), "Reading");
		num_from(&s->lc, rf_obj(th, "LowerCritical"), "Reading");
		num_from(&s->lnr, rf_obj(th, "LowerFatal"), "Reading");
	}
	settle_state(s, o, counter);
}

/* One chassis: legacy documents first, then the newer models for what they miss. */
static int chassis_sensors(struct rf_client *c, const json_t *ch, json_t *seen,
			   struct gf_sensor_list *ret, struct gf_err *err)
{
	json_t *doc = NULL, *list = NULL;
	size_t i;
	json_t *o;
	int rc;

	if (rf_link(ch, "Thermal")) {
		if ((rc = rf_fetch_opt(c, rf_link(ch, "Thermal"), &doc, err)) < 0)
			return rc;
		rf_sensors_thermal(doc, seen, ret);
		json_decref(doc);
	}
	if (rf_link(ch, "Power")) {
		if ((rc = rf_fetch_opt(c, rf_link(ch, "Power"), &doc, err)) < 0)
			return rc;
		rf_sensors_power(doc, seen, ret);
		json_decref(doc);
	}
	if (rf_link(ch, "Sensors")) {
		if ((rc = rf_collection_of(c, ch, "Sensors", RF_WALK_EXPAND, &list, err)) < 0)
			return rc;
		json_array_foreach(list, i, o)
			rf_sensor_one(o, seen, ret);
		json_decref(list);
	}
	if (!rf_link(ch, "Thermal") && rf_link(ch, "ThermalSubsystem")) {
		if ((rc = rf_fetch_opt(c, rf_link(ch, "ThermalSubsystem"), &doc, err)) < 0)
			return rc;
		rc = rf_collection_of(c, doc, "Fans", RF_WALK_EXPAND, &list, err);
		json_decref(doc);
		if (rc < 0)
			return rc;
		json_array_foreach(list, i, o)
			rf_sensor_fan(o, seen, ret);
		json_decref(list);
	}
	if (!rf_link(ch, "Power") && rf_link(ch, "PowerSubsystem")) {
		if ((rc = rf_fetch_opt(c, rf_link(ch, "PowerSubsystem"), &doc, err)) < 0)
			return rc;
		rc = rf_collection_of(c, doc, "PowerSupplies", RF_WALK_EXPAND, &list, err);
		json_decref(doc);
		if (rc < 0)
			return rc;
		json_array_foreach(list, i, o)
			rf_sensor_psu(o, seen, ret);
		json_decref(list);
	}
	return 0;
}

int rf_sensors(struct rf_client *c, struct gf_sensor_list *ret, struct gf_err *err)
{
	struct gf_sensor_list out = {0};
	json_t *chassis = NULL;
	size_t i;
	json_t *ch;
	int rc;

	if (!rf_link(c->root, "Chassis"))
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "bmc '%s' has no Chassis",
				  c->node);
	rc = rf_collection_of(c, c->root, "Chassis", RF_WALK_FETCH, &chassis, err);
	if (rc < 0)
		goto out;
	json_array_foreach(chassis, i, ch) {
		/* Names are unique per chassis, not per BMC (each GPU tray has a "TEMP_0"). */
		json_t *seen = json_object();

		rc = chassis_sensors(c, ch, seen, &out, err);
		json_decref(seen);
		if (rc < 0)
			goto out;
	}
	for (size_t k = 0; k < out.n; k++)
		*gf_sensor_list_add(ret) = out.v[k];
	free(out.v);
	out = (struct gf_sensor_list){0};
out:
	gf_sensor_list_release(&out);
	json_decref(chassis);
	return rc;
}
