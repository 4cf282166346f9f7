/*
 * Sensors from every model a BMC may use, into the one sensor model: legacy
 * Thermal (Temperatures, Fans) and Power (Voltages, PowerSupplies,
 * PowerControl), the Chassis Sensors collection, and ThermalSubsystem Fans /
 * PowerSubsystem PowerSupplies where the legacy documents are missing.
 * A sensor is where the BMC serves it (its chassis and URI), never its name:
 * distinct sensors may share a name (two supplies' input and output power,
 * one card temperature per slot). A legacy entry and a Sensors member are one
 * sensor only where the BMC says so (a link, RelatedItem, the member's Id) or
 * where their name is unique on both sides of that chassis (Dell and Lenovo
 * show both models, unlinked).
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
	{"W", "power", "W"},         {"Watts", "power", "W"},    {"RPM", "fan", "RPM"},
	{"Cel", "temperature", "C"}, {"C", "temperature", "C"},  {"V", "voltage", "V"},
	{"A", "current", "A"},       {"CFM", "airflow", "CFM"},  {"[ft_i]3/min", "airflow", "CFM"},
	{"Pa", "pressure", "Pa"},    {"kPa", "pressure", "kPa"}, {"L/min", "liquid_flow", "L/min"},
};

static bool type_of_unit(const char *units)
{
	for (size_t i = 0; i < sizeof(unit_types) / sizeof(unit_types[0]); i++)
		if (strcmp(units, unit_types[i].units) == 0)
			return true;
	return false;
}

/* Record @key in @seen (a JSON object used as a set); true when it was there already. */
static bool seen_key(json_t *seen, const char *key)
{
	if (!key)
		return false;
	if (json_object_get(seen, key))
		return true;
	json_object_set_new(seen, key, json_true());
	return false;
}

/*
 * Where the BMC serves @o: its @odata.id (a URI, or a URI and a fragment for
 * the entries of a legacy document), else its member id under the document
 * it came in; NULL when it has neither. Owned by the caller.
 */
static char *identity(const json_t *o, const char *doc_uri, const char *array)
{
	const char *uri = rf_str(o, "@odata.id");
	const char *mid = rf_str(o, "MemberId") ? rf_str(o, "MemberId") : rf_str(o, "Id");
	struct gf_buf b = GF_BUF_INIT;

	if (uri)
		return gf_xstrdup(uri);
	if (!mid)
		return NULL;
	gf_buf_addf(&b, "%s#/%s/%s", doc_uri ? doc_uri : "", array ? array : "", mid);
	return gf_buf_detach(&b);
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
static void settle_state(struct gf_sensor *s, const json_t *o, bool counter, bool leak)
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
	/* A leak served only as a threshold on a reading: the crossing is the leak. */
	if (leak && th > s->state)
		s->state = th;
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

/*
 * A new sensor for @o, unless what serves it was seen already (the same
 * member listed twice, or a Sensors member a legacy entry already stands
 * for). Nameless sensors take their member id as name.
 */
static struct gf_sensor *add(struct gf_sensor_list *ret, json_t *seen, const json_t *o,
			     const char *doc_uri, const char *array, const char *name,
			     const char *type, const char *unit)
{
	struct gf_sensor *s;
	char *id = identity(o, doc_uri, array);

	if (!name || seen_key(seen, id)) {
		free(id);
		return NULL;
	}
	s = gf_sensor_list_add(ret);
	s->name = gf_xstrdup(name);
	s->id = id;
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

static void legacy_reading(const json_t *o, const char *array, const char *key, json_t *seen,
			   const char *type, const char *unit, struct gf_sensor_list *ret)
{
	struct gf_sensor *s;

	if (!json_is_object(o))
		return;
	s = add(ret, seen, o, NULL, array, rf_str(o, "Name"), type, unit);
	if (!s)
		return;
	if (present(o)) {
		num_from(&s->reading, o, key);
		legacy_thresholds(s, o);
		settle_state(s, o, false, false);
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
	s = add(ret, seen, fan, NULL, "Fans", name, "fan", unit);
	if (!s || !present(fan))
		return;
	if (rf_num(fan, "Reading", &v) || rf_num(fan, "ReadingRPM", &v) ||
	    (!strcmp(unit, "RPM") && rf_num(rf_obj(fan, "SpeedPercent"), "SpeedRPM", &v)) ||
	    rf_num(rf_obj(fan, "SpeedPercent"), "Reading", &v)) {
		s->reading.set = true;
		s->reading.v = v;
	}
	legacy_thresholds(s, fan);
	settle_state(s, fan, false, false);
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
	s = add(ret, seen, psu, NULL, "PowerSupplies", name, "power_supply", NULL);
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

/*
 * A legacy Thermal or Power resource @doc: each reading of its array @array
 * (its value @key), then each member of @items read by @item.
 */
static void legacy_doc(const json_t *doc, const char *array, const char *key, const char *type,
		       const char *unit, const char *items,
		       void (*item)(const json_t *o, json_t *seen, struct gf_sensor_list *ret),
		       json_t *seen, struct gf_sensor_list *ret)
{
	size_t i;
	json_t *o;

	json_array_foreach(rf_arr(doc, array), i, o)
		legacy_reading(o, array, key, seen, type, unit, ret);
	json_array_foreach(rf_arr(doc, items), i, o)
		item(o, seen, ret);
}

void rf_sensors_thermal(const json_t *thermal, json_t *seen, struct gf_sensor_list *ret)
{
	legacy_doc(thermal, "Temperatures", "ReadingCelsius", "temperature", "C", "Fans",
		   rf_sensor_fan, seen, ret);
}

void rf_sensors_power(const json_t *power, json_t *seen, struct gf_sensor_list *ret)
{
	size_t i;
	json_t *o;

	legacy_doc(power, "Voltages", "ReadingVolts", "voltage", "V", "PowerSupplies",
		   rf_sensor_psu, seen, ret);
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
		s = add(ret, seen, o, NULL, "PowerControl", name, "power", "W");
		if (!s)
			continue;
		num_from(&s->reading, o, "PowerConsumedWatts");
		settle_state(s, o, false, false);
	}
}

/*
 * Names that make a Sensor a leak detector: BMCs that have no LeakDetector
 * resource serve a leak rope as a voltage with thresholds, named so.
 */
static const char *const leak_words[] = {"leak"};

static bool leak_named(const char *name)
{
	for (size_t i = 0; name && i < sizeof(leak_words) / sizeof(leak_words[0]); i++)
		for (const char *p = name; *p; p++)
			if (strncasecmp(p, leak_words[i], strlen(leak_words[i])) == 0)
				return true;
	return false;
}

void rf_sensor_one(const json_t *o, json_t *seen, struct gf_sensor_list *ret)
{
	const char *rt = rf_str(o, "ReadingType"), *units = rf_str(o, "ReadingUnits");
	const char *type = NULL, *unit = NULL;
	json_t *th = rf_obj(o, "Thresholds");
	struct gf_sensor *s;
	bool discrete, leak, counter = false;

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
	 * A unit the tables do not know is kept as the BMC gives it, and so is
	 * the reading (Lenovo's airflow in CFM has no ReadingType).
	 */
	if (units && *units && (!unit || strcmp(unit, units) != 0) && !type_of_unit(units)) {
		unit = units;
		if (!type)
			type = "other";
	}
	/*
	 * No ReadingType nor unit, or an empty ReadingUnits (Lenovo's state
	 * sensors read 0 whatever happens): a discrete sensor, known by its
	 * health alone.
	 */
	discrete = !type || (units && !*units);
	leak = leak_named(rf_str(o, "Name")) || leak_named(rf_str(o, "Id"));
	s = add(ret, seen, o, NULL, "Sensors",
		rf_str(o, "Name") ? rf_str(o, "Name") : rf_str(o, "Id"),
		leak   ? "leak"
		: type ? type
		       : "other",
		discrete ? NULL : unit);
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
	settle_state(s, o, counter, leak);
}

/* ---- leaks ---------------------------------------------------------------- */

void rf_leak_detector(const json_t *o, json_t *seen, struct gf_sensor_list *ret)
{
	const char *ds = rf_str(o, "DetectorState"), *health = rf_get_str(o, "Status.Health");
	struct gf_buf b = GF_BUF_INIT;
	struct gf_sensor *s;

	if (!json_is_object(o))
		return;
	s = add(ret, seen, o, NULL, "LeakDetectors",
		rf_str(o, "Name") ? rf_str(o, "Name") : rf_str(o, "Id"), "leak", NULL);
	if (!s)
		return;
	if (!present(o)) {
		s->state_text = gf_xstrdup("absent");
		return;
	}
	/* DetectorState is the leak; Status.Health is the detector's own (OK while it leaks). */
	s->state = ds ? health_state(ds) : GF_SENSOR_UNKNOWN;
	gf_buf_addf(&b, "detector %s", ds ? ds : "state unknown");
	if (health && !rf_eq(health, ds))
		gf_buf_addf(&b, ", health %s", health);
	s->state_text = gf_buf_detach(&b);
}

/* ---- one chassis ---------------------------------------------------------- */

/* The entries of the legacy documents (and subsystem members) that may stand for a Sensor. */
static const char *const legacy_arrays[] = {"Temperatures", "Fans", "Voltages", "PowerSupplies",
					    "PowerControl"};

static void count_name(json_t *counts, const char *name)
{
	struct gf_buf b = GF_BUF_INIT;

	if (!name)
		return;
	for (const char *p = name; *p; p++)
		gf_buf_addc(&b, (char)((*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p));
	json_object_set_new(counts, gf_buf_str(&b),
			    json_integer(json_integer_value(json_object_get(counts,
									    gf_buf_str(&b))) +
					 1));
	gf_buf_release(&b);
}

static bool name_once(json_t *counts, const char *name)
{
	struct gf_buf b = GF_BUF_INIT;
	bool once;

	if (!name)
		return false;
	for (const char *p = name; *p; p++)
		gf_buf_addc(&b, (char)((*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p));
	once = json_integer_value(json_object_get(counts, gf_buf_str(&b))) == 1;
	gf_buf_release(&b);
	return once;
}

static bool related_to(const json_t *sensor, const char *uri)
{
	size_t i;
	json_t *r;

	json_array_foreach(rf_arr(sensor, "RelatedItem"), i, r)
		if (uri && rf_eq(rf_str(r, "@odata.id"), uri))
			return true;
	return false;
}

/* The names of one chassis's entries and Sensors, to know which occur once. */
struct chassis_docs {
	json_t *entries;      /* the legacy or subsystem entries, an array (borrowed members) */
	json_t *sensors;      /* the Sensors members (owned), NULL: none */
	json_t *entry_names;  /* lower-case name -> count */
	json_t *sensor_names; /* lower-case name -> count */
};

/*
 * The Sensors member @e (a legacy entry, a subsystem fan or supply) stands
 * for, or NULL: the one it names as DataSourceUri, the one that names it as
 * RelatedItem, the one whose Id is its name (NVIDIA), or the one with the
 * same name where that name occurs once among the entries and once among
 * the Sensors (Dell and Lenovo link neither way).
 */
static const json_t *same_sensor(const struct chassis_docs *d, const json_t *e)
{
	const char *src = rf_str(e, "DataSourceUri");
	const char *uri = rf_str(e, "@odata.id"), *name = rf_str(e, "Name");
	size_t i;
	json_t *m;

	if (!src)
		src = rf_str(rf_obj(e, "SpeedPercent"), "DataSourceUri");
	json_array_foreach(d->sensors, i, m) {
		if ((src && rf_eq(rf_str(m, "@odata.id"), src)) || related_to(m, uri) ||
		    (name && rf_eq(rf_str(m, "Id"), name)))
			return m;
	}
	if (!name_once(d->entry_names, name) || !name_once(d->sensor_names, name))
		return NULL;
	json_array_foreach(d->sensors, i, m)
		if (rf_str(m, "Name") && strcasecmp(rf_str(m, "Name"), name) == 0)
			return m;
	return NULL;
}

/* The Sensors the entries of the legacy @doc stand for are seen: not shown again. */
static void claim(const struct chassis_docs *d, const json_t *doc, json_t *seen)
{
	for (size_t k = 0; k < sizeof(legacy_arrays) / sizeof(legacy_arrays[0]); k++) {
		size_t i;
		json_t *o;

		json_array_foreach(rf_arr(doc, legacy_arrays[k]), i, o) {
			const json_t *m = json_is_object(o) ? same_sensor(d, o) : NULL;

			if (m && rf_str(m, "@odata.id"))
				seen_key(seen, rf_str(m, "@odata.id"));
		}
	}
}

static void add_entries(json_t *entries, const json_t *doc)
{
	for (size_t k = 0; k < sizeof(legacy_arrays) / sizeof(legacy_arrays[0]); k++) {
		size_t i;
		json_t *o;

		json_array_foreach(rf_arr(doc, legacy_arrays[k]), i, o)
			if (json_is_object(o))
				json_array_append(entries, o);
	}
}

/* The collection @key of the document at @ch's link @sub (owned, NULL: none); the document in @doc. */
static int subsystem(struct rf_client *c, const json_t *ch, const char *sub, const char *key,
		     json_t **doc, json_t **ret, struct gf_err *err)
{
	json_t *list = NULL;
	int rc;

	if (!*doc && (rc = rf_fetch_opt(c, rf_link(ch, sub), doc, err)) < 0)
		return rc;
	if (!rf_link(*doc, key))
		return 0;
	if ((rc = rf_collection_of(c, *doc, key, RF_WALK_EXPAND, &list, err)) < 0)
		return rc;
	*ret = list;
	return 0;
}

/*
 * The leak detectors of a chassis: ThermalSubsystem/LeakDetection/LeakDetectors
 * (owned, NULL: none). The ThermalSubsystem document is kept in @tsub.
 */
static int leak_detectors(struct rf_client *c, const json_t *ch, json_t **tsub, json_t **ret,
			  struct gf_err *err)
{
	json_t *ld = NULL;
	int rc;

	if (!*tsub && (rc = rf_fetch_opt(c, rf_link(ch, "ThermalSubsystem"), tsub, err)) < 0)
		return rc;
	if (!rf_link(*tsub, "LeakDetection"))
		return 0;
	rc = subsystem(c, *tsub, "LeakDetection", "LeakDetectors", &ld, ret, err);
	json_decref(ld);
	return rc;
}

/*
 * One chassis: the legacy documents, the Sensors members no legacy entry
 * stands for, then the subsystems' fans and supplies where the legacy
 * documents are missing, unless they stand for a Sensor already shown.
 */
static int chassis_sensors(struct rf_client *c, const json_t *ch, json_t *seen,
			   struct gf_sensor_list *ret, struct gf_err *err)
{
	struct chassis_docs d = {.entries = json_array(),
				 .entry_names = json_object(),
				 .sensor_names = json_object()};
	json_t *thermal = NULL, *power = NULL, *fans = NULL, *psus = NULL, *leaks = NULL;
	json_t *tsub = NULL, *psub = NULL;
	size_t i;
	json_t *o;
	int rc = 0;

	if (rf_link(ch, "Thermal") &&
	    (rc = rf_fetch_opt(c, rf_link(ch, "Thermal"), &thermal, err)) < 0)
		goto out;
	if (rf_link(ch, "Power") && (rc = rf_fetch_opt(c, rf_link(ch, "Power"), &power, err)) < 0)
		goto out;
	if (rf_link(ch, "Sensors") &&
	    (rc = rf_collection_of(c, ch, "Sensors", RF_WALK_EXPAND, &d.sensors, err)) < 0)
		goto out;
	if (!rf_link(ch, "Thermal") && rf_link(ch, "ThermalSubsystem") &&
	    (rc = subsystem(c, ch, "ThermalSubsystem", "Fans", &tsub, &fans, err)) < 0)
		goto out;
	if (!rf_link(ch, "Power") && rf_link(ch, "PowerSubsystem") &&
	    (rc = subsystem(c, ch, "PowerSubsystem", "PowerSupplies", &psub, &psus, err)) < 0)
		goto out;
	/* A ThermalSubsystem read already (found or not) is not asked for again. */
	if (rf_link(ch, "ThermalSubsystem") && (tsub || rf_link(ch, "Thermal")) &&
	    (rc = leak_detectors(c, ch, &tsub, &leaks, err)) < 0)
		goto out;
	add_entries(d.entries, thermal);
	add_entries(d.entries, power);
	json_array_foreach(fans, i, o)
		if (json_is_object(o))
			json_array_append(d.entries, o);
	json_array_foreach(psus, i, o)
		if (json_is_object(o))
			json_array_append(d.entries, o);
	json_array_foreach(d.entries, i, o)
		count_name(d.entry_names, rf_str(o, "Name"));
	json_array_foreach(d.sensors, i, o)
		count_name(d.sensor_names, rf_str(o, "Name"));

	/* A legacy entry that stands for a Sensor hides it: the Sensor's URI is seen. */
	rf_sensors_thermal(thermal, seen, ret);
	rf_sensors_power(power, seen, ret);
	claim(&d, thermal, seen);
	claim(&d, power, seen);
	json_array_foreach(d.sensors, i, o)
		rf_sensor_one(o, seen, ret);
	/* Subsystem members come last: a Sensor they stand for is shown already. */
	json_array_foreach(fans, i, o)
		if (!same_sensor(&d, o))
			rf_sensor_fan(o, seen, ret);
	json_array_foreach(psus, i, o)
		if (!same_sensor(&d, o))
			rf_sensor_psu(o, seen, ret);
	json_array_foreach(leaks, i, o)
		rf_leak_detector(o, seen, ret);
out:
	json_decref(tsub);
	json_decref(psub);
	json_decref(leaks);
	json_decref(thermal);
	json_decref(power);
	json_decref(fans);
	json_decref(psus);
	json_decref(d.entries);
	json_decref(d.sensors);
	json_decref(d.entry_names);
	json_decref(d.sensor_names);
	return rc;
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
	rc = rf_collection_of(c, c->root, "Chassis", RF_WALK_FETCH | RF_WALK_KEEP, &chassis, err);
	if (rc < 0)
		goto out;
	json_array_foreach(chassis, i, ch) {
		/* What a chassis showed already; each GPU tray has its own "TEMP_0". */
		json_t *seen = json_object();

		size_t first = out.n;

		rc = chassis_sensors(c, ch, seen, &out, err);
		json_decref(seen);
		for (size_t k = first; k < out.n; k++)
			out.v[k].chassis = gf_xstrdup(rf_str(ch, "Id") ? rf_str(ch, "Id")
								       : rf_str(ch, "@odata.id"));
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
