/* gpufleet sensors: every sensor a BMC knows, its reading, state and thresholds. */
#include <stdlib.h>
#include <string.h>

#include "cli/bmc.h"
#include "cli/verbs.h"
#include "lib/buf.h"

enum { S_TYPE, S_STATE };

static const struct cli_opt sensors_opts[] = {
	[S_TYPE] =
		{{"type", required_argument, NULL, 't'},
		 "TYPES",
		 "only these types: temperature (temp), fan, power, voltage, current, power_supply (psu), ..."},
	[S_STATE] = {{"state", required_argument, NULL, 's'},
		     "STATES",
		     "only sensors in these states: nominal, warning, critical, unknown"},
};

struct sensors_args {
	char **types; /* canonical type names, owned; NULL: all */
	size_t ntypes;
	unsigned states; /* bit (1 << enum gf_sensor_state); 0: all */
};

/* Short names people type for the canonical ones. */
static const struct {
	const char *alias, *type;
} type_aliases[] = {
	{"amp", "current"},      {"amps", "current"}, {"psu", "power_supply"},
	{"temp", "temperature"}, {"volt", "voltage"}, {"volts", "voltage"},
};

static int add_type(struct sensors_args *a, const char *s, size_t len)
{
	char *t = gf_xstrndup(s, len);

	for (char *p = t; *p; p++) {
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
		if (*p == '-')
			*p = '_';
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) {
			cli_error("--type '%.*s' is not a sensor type (e.g. temperature, fan, power)",
				  (int)len, s);
			free(t);
			return GF_EXIT_USAGE;
		}
	}
	for (size_t i = 0; i < sizeof(type_aliases) / sizeof(type_aliases[0]); i++) {
		if (strcmp(t, type_aliases[i].alias) == 0) {
			free(t);
			t = gf_xstrdup(type_aliases[i].type);
			break;
		}
	}
	a->types = gf_xrealloc(a->types, (a->ntypes + 1) * sizeof(*a->types));
	a->types[a->ntypes++] = t;
	return 0;
}

/* Call @fn for each non-empty item of the comma-separated @arg. */
static int each_item(const char *arg, const char *opt, int (*fn)(void *, const char *, size_t),
		     void *ud)
{
	bool any = false;

	for (const char *p = arg; *p;) {
		size_t len = strcspn(p, ",");
		int rc;

		if (len) {
			rc = fn(ud, p, len);
			if (rc)
				return rc;
			any = true;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (!any) {
		cli_error("%s needs at least one value", opt);
		return GF_EXIT_USAGE;
	}
	return 0;
}

static int type_item(void *ud, const char *s, size_t len)
{
	return add_type(ud, s, len);
}

static int state_item(void *ud, const char *s, size_t len)
{
	struct sensors_args *a = ud;
	char *t = gf_xstrndup(s, len);
	int st = gf_sensor_state_parse(t);

	free(t);
	if (st < 0) {
		cli_error("--state '%.*s' is not nominal, warning, critical or unknown", (int)len,
			  s);
		return GF_EXIT_USAGE;
	}
	a->states |= 1u << st;
	return 0;
}

static int on_opt(void *ud, size_t idx, const char *arg)
{
	switch (idx) {
	case S_TYPE: return each_item(arg, "--type", type_item, ud);
	case S_STATE: return each_item(arg, "--state", state_item, ud);
	default: return 0;
	}
}

static bool wanted(const struct sensors_args *a, const struct gf_sensor *s)
{
	bool type_ok = a->ntypes == 0;

	for (size_t i = 0; i < a->ntypes && !type_ok; i++)
		type_ok = strcmp(a->types[i], s->type ? s->type : "other") == 0;
	return type_ok && (!a->states || (a->states & (1u << s->state)));
}

static int sensors_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		      const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct sensors_args *a = vctx;
	struct gf_sensor_list l = {0};
	json_t *arr;

	if (!be->sensors)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED, "%s cannot read sensors",
				  be->name);
	if (be->sensors(sess, &l, err) < 0)
		return GF_E_NODE;
	arr = json_array();
	for (size_t i = 0; i < l.n; i++)
		if (wanted(a, &l.v[i]))
			json_array_append_new(arr, gf_sensor_to_json(&l.v[i]));
	json_object_set_new(slot->data, "sensors", arr);
	json_object_set_new(slot->data, "leaks", json_integer(gf_sensor_leaks(&l)));
	gf_sensor_list_release(&l);
	return 0;
}

/*
 * CHASSIS: sensors of one name in several chassis (DGX's CPUBaseboard and
 * DGX) stay apart; left out of a table where no sensor has one (IPMI).
 */
static const struct gf_col sensor_cols[] = {
	{"?chassis", "CHASSIS"}, {"name", "SENSOR"}, {"type", "TYPE"},
	{"reading", "READING"},  {"unit", "UNIT"},   {"state", "STATE"},
	{"state_text", "EVENT"},
};

/* --format prometheus: rendered once every node has answered. */
static int print_prometheus(struct cli_bmc_run *run)
{
	json_t **objs = gf_xcalloc(run->n ? run->n : 1, sizeof(*objs));
	struct gf_buf b = GF_BUF_INIT;
	size_t failed = 0;

	for (size_t i = 0; i < run->n; i++) {
		objs[i] = gf_result_to_json(run->nodes[i].name, NULL, NULL, &run->slots[i]);
		if (!run->slots[i].ok)
			failed++;
	}
	gf_render_prometheus_sensors(objs, run->n, &b);
	fputs(gf_buf_str(&b), stdout);
	fflush(stdout);
	for (size_t i = 0; i < run->n; i++)
		json_decref(objs[i]);
	free(objs);
	gf_buf_release(&b);
	return failed ? GF_EXIT_FAILED : GF_EXIT_OK;
}

int cmd_sensors(struct gf_cli *cli, int argc, char **argv)
{
	struct sensors_args a = {0};
	struct gf_render_spec spec = {
		.cols = sensor_cols,
		.ncols = sizeof(sensor_cols) / sizeof(sensor_cols[0]),
		.rows_key = "sensors",
	};
	struct gf_bmc_opts opts = {0};
	struct cli_bmc_run run = {0};
	struct gf_node *nodes = NULL;
	char **args;
	int nargs, rc;
	size_t n = 0;

	rc = cli_parse(cli, argc, argv, sensors_opts,
		       sizeof(sensors_opts) / sizeof(sensors_opts[0]), on_opt, &a, &args, &nargs);
	if (rc)
		goto out;
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		goto out;
	/* Only JSON shows thresholds; the other formats save the commands. */
	opts.no_thresholds = cli->format != GF_FMT_JSON && cli->format != GF_FMT_NDJSON;
	run = (struct cli_bmc_run){
		.cli = cli,
		.nodes = nodes,
		.n = n,
		.op = sensors_op,
		.ctx = &a,
		.spec = cli->format == GF_FMT_PROMETHEUS ? NULL : &spec,
		.opts = &opts,
		.filtered = a.states || a.ntypes,
	};
	rc = cli_bmc_fanout(&run);
	if (cli->format == GF_FMT_PROMETHEUS && run.slots && rc != GF_EXIT_USAGE)
		rc = print_prometheus(&run);
out:
	cli_bmc_release(&run);
	gf_nodes_free(nodes, n);
	for (size_t i = 0; i < a.ntypes; i++)
		free(a.types[i]);
	free(a.types);
	return rc;
}
