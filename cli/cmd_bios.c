/*
 * gpufleet bios: the BIOS settings each node's BMC holds, and setting them.
 *
 * show reads the current attributes and what is staged for the next reset.
 * set checks every NAME=VALUE against the node's attribute registry (or,
 * without one, against the type of the value it holds) before anything is
 * sent, PATCHes the settings object (If-Match where the BMC gives an ETag),
 * then reads it back: a BMC that answers with success but holds another
 * value fails that node with kind "refused", like boot. Every set is
 * written to the audit log.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/bmc.h"
#include "cli/verbs.h"
#include "inventory/drift.h"
#include "lib/bios.h"
#include "lib/buf.h"
#include "lib/file.h"
#include "cli/inv.h"
#include "inventory/store.h"
#include "lib/util.h"

enum { B_ATTRIBUTE, B_PENDING, B_APPLY_TIME, B_DRY_RUN, B_YES, B_FROM_BASELINE, B_SECRET_FROM };

static const struct cli_opt bios_opts[] = {
	[B_ATTRIBUTE] = {{"attribute", required_argument, NULL, 'a'},
			 "PATTERN",
			 "show: only attributes whose name matches PATTERN (glob)"},
	[B_PENDING] = {{"pending", no_argument, NULL, 0},
		       NULL,
		       "show: only attributes with a value staged for the next reset"},
	[B_APPLY_TIME] =
		{{"apply-time", required_argument, NULL, 0},
		 "on-reset|immediate",
		 "set: when the values take effect (default: the BMC's, usually at the next reset)"},
	[B_DRY_RUN] = {{"dry-run", no_argument, NULL, 'n'},
		       NULL,
		       "set: read and check, send nothing"},
	[B_YES] = {{"yes", no_argument, NULL, 'y'},
		   NULL,
		   "set: on more than one node without asking"},
	[B_FROM_BASELINE] = {{"from-baseline", required_argument, NULL, 0},
			     "FILE",
			     "set: the bios.* values of a drift baseline file, where nodes differ"},
	[B_SECRET_FROM] = {{"secret-from", required_argument, NULL, 0},
			   "NAME=FILE",
			   "set: the value of NAME (a password) from FILE (mode 0600) or - (stdin)"},
};

struct bios_args {
	const char *pattern;
	bool pending, dry_run, yes, apply_given;
	enum gf_bios_apply when;
	const char *baseline;
	const char *secret_from[16]; /* --secret-from NAME=FILE, as given */
	size_t nsecret;
	bool too_many;
};

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct bios_args *a = ud;

	switch (idx) {
	case B_ATTRIBUTE: a->pattern = arg; return 0;
	case B_PENDING: a->pending = true; return 0;
	case B_APPLY_TIME:
		if (!gf_bios_apply_parse(arg, &a->when)) {
			cli_error("--apply-time takes on-reset or immediate, not '%s'", arg);
			return GF_EXIT_USAGE;
		}
		a->apply_given = true;
		return 0;
	case B_DRY_RUN: a->dry_run = true; return 0;
	case B_YES: a->yes = true; return 0;
	case B_FROM_BASELINE: a->baseline = arg; return 0;
	case B_SECRET_FROM:
		if (a->nsecret == NELEM(a->secret_from)) {
			cli_error("--secret-from is given more than %zu times",
				  NELEM(a->secret_from));
			return GF_EXIT_USAGE;
		}
		a->secret_from[a->nsecret++] = arg;
		return 0;
	default: return 0;
	}
}

struct show_ctx {
	const char *pattern;
	bool pending;
	bool rows; /* table or CSV: one row per attribute */
};

static bool wanted(const struct show_ctx *ctx, const struct gf_bios *b, const char *name)
{
	if (ctx->pattern && fnmatch(ctx->pattern, name, 0) != 0)
		return false;
	return !ctx->pending || json_object_get(b->pending, name);
}

/* A copy of @o with only the names wanted. */
static json_t *filtered(const struct show_ctx *ctx, const struct gf_bios *b, const json_t *o)
{
	json_t *out = json_object(), *v;
	const char *k;

	json_object_foreach((json_t *)o, k, v)
		if (wanted(ctx, b, k))
			json_object_set(out, k, v);
	return out;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* {"attribute", "value", "pending"} rows, in name order, for tables. */
static json_t *rows_of(const json_t *attrs, const json_t *pending, const json_t *requested)
{
	json_t *rows = json_array();
	const char **names;
	const char *k;
	json_t *v;
	size_t n = 0, i = 0;

	names = gf_xcalloc(json_object_size(attrs) + 1, sizeof(*names));
	json_object_foreach((json_t *)attrs, k, v)
		names[n++] = k;
	gf_sort(names, n, sizeof(*names), cmp_name);
	for (i = 0; i < n; i++) {
		json_t *row = json_pack("{s:s, s:O}", "attribute", names[i], "value",
					json_object_get(attrs, names[i]));

		if (json_object_get(pending, names[i]))
			json_object_set(row, "pending", json_object_get(pending, names[i]));
		if (requested && json_object_get(requested, names[i]))
			json_object_set(row, "requested", json_object_get(requested, names[i]));
		json_array_append_new(rows, row);
	}
	free(names);
	return rows;
}

/*
 * A node's "bios" member (@attrs and @pending taken over) and, for a table
 * or CSV (@rows), its "rows", limited to @requested where not NULL.
 */
static void put_bios(json_t *data, bool rows, json_t *attrs, json_t *pending,
		     const json_t *requested, const char *registry)
{
	if (rows)
		json_object_set_new(data, "rows", rows_of(attrs, pending, requested));
	json_object_set_new(data, "bios",
			    json_pack("{s:o, s:o, s:o}", "attributes", attrs, "pending", pending,
				      "registry", registry ? json_string(registry) : json_null()));
}

static int show_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		   const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct show_ctx *ctx = vctx;
	struct gf_bios b = {0};
	json_t *attrs, *pending;

	if (!be->bios_get)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s cannot read the BIOS settings of node '%s'", be->name,
				  n->name);
	if (be->bios_get(sess, false, &b, err) < 0)
		return GF_E_NODE;
	attrs = filtered(ctx, &b, b.attributes);
	pending = filtered(ctx, &b, b.pending);
	put_bios(slot->data, ctx->rows, attrs, pending, NULL, b.registry);
	gf_bios_release(&b);
	return 0;
}

struct set_ctx {
	const struct gf_node *nodes;
	json_t *assigns;              /* {name: text} for every node */
	json_t *secrets;              /* {name: text} from --secret-from: never shown */
	const struct gf_baseline *bl; /* --from-baseline, else NULL */
	const char **models; /* per node index: its model in the last sweep, NULL: unknown */
	enum gf_bios_apply when;
	bool dry_run;
	bool rows;
};

/* What the node holds for @name now: staged, else current. Borrowed. */
static json_t *held(const struct gf_bios *b, const char *name, bool immediate)
{
	json_t *p = immediate ? NULL : json_object_get(b->pending, name);

	return p ? p : json_object_get(b->attributes, name);
}

/* Is @name a password in the node's registry? */
static bool is_password(const struct gf_bios *b, const char *name)
{
	json_t *entry = b->entries ? json_object_get(b->entries, name) : NULL;

	const char *type = json_string_value(json_object_get(entry, "type"));

	return type && strcmp(type, "password") == 0;
}

/*
 * The typed values to send: every assignment checked against the node's
 * registry. A password given on the command line is not sent (it was on
 * argv already; at least it goes no further); one from --secret-from is,
 * and no message names its value.
 */
static int values_for(const struct gf_bios *b, const struct gf_node *n, const json_t *assigns,
		      const json_t *secrets, json_t **ret, struct gf_err *err)
{
	json_t *out = json_object(), *t, *v;
	const char *name;

	json_object_foreach((json_t *)assigns, name, t) {
		if (is_password(b, name)) {
			json_decref(out);
			return gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
					  "BIOS attribute '%s' of node '%s' is a password: give its "
					  "value with --secret-from %s=FILE, never on the command "
					  "line; nothing was sent",
					  name, n->name, name);
		}
		if (gf_bios_value(b, n->name, name, json_string_value(t), &v, err) < 0) {
			json_decref(out);
			return GF_E_NODE;
		}
		json_object_set_new(out, name, v);
	}
	json_object_foreach((json_t *)secrets, name, t) {
		if (gf_bios_value(b, n->name, name, json_string_value(t), &v, NULL) < 0) {
			json_decref(out);
			return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
					  "the secret value for BIOS attribute '%s' of node '%s' does "
					  "not fit it (its type, or not an attribute of the node)",
					  name, n->name);
		}
		json_object_set_new(out, name, v);
	}
	*ret = out;
	return 0;
}

/* @values with every secret's value replaced by "(secret)": what may be shown. */
static json_t *masked(const json_t *values, const json_t *secrets)
{
	json_t *out = json_deep_copy(values), *t;
	const char *name;

	json_object_foreach((json_t *)secrets, name, t)
		if (json_object_get(out, name))
			json_object_set_new(out, name, json_string("(secret)"));
	return out;
}

/*
 * --from-baseline: for each attribute of the node whose key bios.<name>
 * (lower case, as the inventory keys it) the baseline has a rule for, and
 * whose value (as the inventory writes it) is not among the accepted ones,
 * the first accepted value. Read-only attributes, those the inventory
 * ignores by default on the node's dialect (serial-like, per node), those
 * the baseline's "ignore" names and passwords (registry type Password) are
 * left alone.
 */
static int values_from_baseline(const struct gf_bios *b, const struct gf_node *n,
				const struct gf_baseline *bl, const char *model, bool immediate,
				json_t **ret, struct gf_err *err)
{
	json_t *out = json_object(), *cur, *v;
	const char *name;

	json_object_foreach(b->attributes, name, cur) {
		const char *const *versions = NULL;
		size_t nv = 0, k;
		char *key = gf_bios_component_key(name), *text;
		json_t *entry = b->entries ? json_object_get(b->entries, name) : NULL;
		bool same = false;

		/*
		 * A password never drifts (a BMC never shows one back), and a
		 * baseline file is no place for one: never sent from it.
		 */
		if (gf_bios_ignored(b->dialect, NULL, key) || gf_baseline_ignores(bl, key) ||
		    json_is_true(json_object_get(entry, "read_only")) || is_password(b, name) ||
		    !gf_baseline_expect(bl, model, key, &versions, &nv) || nv == 0) {
			free(key);
			continue;
		}
		free(key);
		text = gf_bios_value_text(held(b, name, immediate));
		for (k = 0; k < nv && text; k++)
			if (strcmp(versions[k], text) == 0)
				same = true;
		free(text);
		if (same)
			continue;
		if (gf_bios_value(b, n->name, name, versions[0], &v, err) < 0) {
			json_decref(out);
			return GF_E_NODE;
		}
		json_object_set_new(out, name, v);
	}
	*ret = out;
	return 0;
}

static int set_op(const struct gf_backend *be, void *sess, const struct gf_node *n,
		  const void *vctx, struct gf_result *slot, struct gf_err *err)
{
	const struct set_ctx *ctx = vctx;
	bool immediate = ctx->when == GF_BIOS_APPLY_IMMEDIATE;
	struct gf_bios b = {0};
	json_t *values = NULL, *shown_values = NULL, *shown, *pending, *v;
	const char *name;
	int rc = GF_E_NODE;

	if (!be->bios_get || !be->bios_set)
		return gf_err_set(err, GF_E_NODE, GF_EK_UNSUPPORTED,
				  "%s cannot set the BIOS settings of node '%s'", be->name,
				  n->name);
	if (be->bios_get(sess, true, &b, err) < 0)
		return GF_E_NODE;
	if ((ctx->bl ? values_from_baseline(&b, n, ctx->bl, ctx->models[n - ctx->nodes], immediate,
					    &values, err)
		     : values_for(&b, n, ctx->assigns, ctx->secrets, &values, err)) < 0)
		goto out;
	shown_values = masked(values, ctx->secrets);
	json_object_set(slot->data, "requested", shown_values);
	if (!ctx->dry_run && json_object_size(values) > 0) {
		slot->no_retry = true; /* from here on the BMC may have acted */
		if (be->bios_set(sess, values, ctx->when, err) < 0)
			goto out;
		gf_bios_release(&b);
		if (be->bios_get(sess, false, &b, err) < 0)
			goto out;
	}
	if (ctx->dry_run)
		json_object_set_new(slot->data, "dry_run", json_true());
	shown = json_object();
	json_object_foreach(values, name, v)
		json_object_set(shown, name,
				json_object_get(b.attributes, name)
					? json_object_get(b.attributes, name)
					: json_null());
	pending = json_object();
	json_object_foreach(values, name, v)
		if (json_object_get(b.pending, name))
			json_object_set(pending, name, json_object_get(b.pending, name));
	/* What a BMC shows of a password (some echo it as staged) is not shown either. */
	json_object_foreach(ctx->secrets, name, v) {
		if (!json_is_null(json_object_get(shown, name)) && json_object_get(shown, name))
			json_object_set_new(shown, name, json_string("(secret)"));
		if (json_object_get(pending, name))
			json_object_set_new(pending, name, json_string("(secret)"));
	}
	put_bios(slot->data, ctx->rows, shown, pending, shown_values, b.registry);
	rc = 0;
	if (ctx->dry_run)
		goto out;
	json_object_foreach(values, name, v) {
		char *want, *got;

		/* A BMC never shows a password back: its PATCH accepted is all there is. */
		if (json_object_get(ctx->secrets, name) || gf_bios_holds(&b, name, v, immediate))
			continue;
		want = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		got = json_dumps(held(&b, name, immediate) ? held(&b, name, immediate)
							   : json_null(),
				 JSON_ENCODE_ANY | JSON_COMPACT);
		rc = gf_err_set(err, GF_E_NODE, GF_EK_REFUSED,
				"bmc of node '%s' accepted %s=%s but holds %s", n->name, name,
				want ? want : "?", got ? got : "?");
		free(want);
		free(got);
		break;
	}
out:
	json_decref(values);
	json_decref(shown_values);
	gf_bios_release(&b);
	return rc;
}

static const struct gf_col show_cols[] = {
	{"attribute", "ATTRIBUTE"},
	{"value", "VALUE"},
	{"pending", "PENDING"},
};
static const struct gf_col set_cols[] = {
	{"attribute", "ATTRIBUTE"},
	{"requested", "REQUESTED"},
	{"value", "VALUE"},
	{"pending", "PENDING"},
};

static bool table_rows(const struct gf_cli *cli)
{
	return cli->format == GF_FMT_TABLE || cli->format == GF_FMT_CSV;
}

static int show_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		    int nargs)
{
	const struct bios_args *a = ud;
	struct show_ctx ctx = {.pattern = a->pattern,
			       .pending = a->pending,
			       .rows = table_rows(cli)};
	struct gf_render_spec spec = {.cols = show_cols, .ncols = 3, .rows_key = "rows"};
	struct cli_bmc_run run = {0};
	struct gf_node *nodes = NULL;
	size_t n = 0;
	int rc;

	(void)sv;
	if (a->dry_run || a->yes || a->apply_given || a->baseline) {
		cli_error("bios show takes no --apply-time, --dry-run, --yes or --from-baseline");
		return GF_EXIT_USAGE;
	}
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	run = (struct cli_bmc_run){.cli = cli,
				   .nodes = nodes,
				   .n = n,
				   .op = show_op,
				   .ctx = &ctx,
				   .spec = &spec};
	rc = cli_bmc_fanout(&run);
	cli_bmc_release(&run);
	gf_nodes_free(nodes, n);
	return rc;
}

/* NAME=VALUE words at the front of @args into @ret ({name: text}); the rest are targets. */
static int parse_assigns(char **args, int nargs, json_t *ret, int *ret_used)
{
	int i;

	for (i = 0; i < nargs; i++) {
		const char *eq = strchr(args[i], '=');
		char *name;

		if (!eq)
			break;
		if (eq == args[i]) {
			cli_error("'%s' names no attribute (NAME=VALUE)", args[i]);
			return GF_EXIT_USAGE;
		}
		name = gf_xstrndup(args[i], (size_t)(eq - args[i]));
		if (json_object_get(ret, name)) {
			cli_error("attribute '%s' is given twice", name);
			free(name);
			return GF_EXIT_USAGE;
		}
		if (json_object_set_new(ret, name, json_string(eq + 1)) < 0) {
			cli_error("the value of '%s' is not UTF-8", name);
			free(name);
			return GF_EXIT_USAGE;
		}
		free(name);
	}
	*ret_used = i;
	return 0;
}

/*
 * A name that looks like a password's. The audit intent is written before
 * any registry is read: a password given as NAME=VALUE (its node then
 * fails, nothing sent) must not reach the audit log either.
 */
static bool secret_name(const char *name)
{
	static const char *const words[] = {"password", "passwd", "secret", "passphrase"};

	for (size_t i = 0; i < NELEM(words); i++)
		if (strcasestr(name, words[i]))
			return true;
	return false;
}

/* Blank the values of @secrets, then free it. */
static void forget_secrets(json_t *secrets)
{
	const char *name;
	json_t *t;

	json_object_foreach(secrets, name, t)
		explicit_bzero((char *)json_string_value(t), json_string_length(t));
	json_decref(secrets);
}

/*
 * --secret-from NAME=FILE into @secrets ({name: text}): the file's first line
 * (a password never goes on argv, where ps shows it), from standard input for
 * "-" (once). A file readable by group or others is refused, as the
 * credentials file is.
 */
static int read_secrets(const struct bios_args *a, const json_t *assigns, json_t *secrets)
{
	bool stdin_used = false;

	for (size_t i = 0; i < a->nsecret; i++) {
		const char *eq = strchr(a->secret_from[i], '='), *path;
		struct gf_err err = {0};
		struct stat st;
		char *name, *text = NULL;
		size_t len = 0;
		int rc = 0;

		if (!eq || eq == a->secret_from[i] || !eq[1]) {
			cli_error("--secret-from takes NAME=FILE, not '%s'", a->secret_from[i]);
			return GF_EXIT_USAGE;
		}
		name = gf_xstrndup(a->secret_from[i], (size_t)(eq - a->secret_from[i]));
		path = eq + 1;
		if (json_object_get(assigns, name) || json_object_get(secrets, name)) {
			cli_error("attribute '%s' is given twice", name);
			rc = GF_EXIT_USAGE;
		} else if (strcmp(path, "-") == 0 && stdin_used) {
			cli_error("--secret-from reads standard input once only");
			rc = GF_EXIT_USAGE;
		} else if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && (st.st_mode & 077)) {
			cli_error("secret file '%s' is readable by group or others (mode %04o); "
				  "chmod 600 it",
				  path, (unsigned)(st.st_mode & 07777));
			rc = GF_EXIT_USAGE;
		} else if (gf_file_read(path, 1u << 20, GF_FILE_DASH_STDIN, &text, &len, &err) <
			   0) {
			rc = cli_fail(&err);
		} else {
			stdin_used = stdin_used || strcmp(path, "-") == 0;
			len = strcspn(text, "\r\n");
			text[len] = '\0';
			if (json_object_set_new(secrets, name, json_stringn(text, len)) < 0) {
				cli_error("the value of '%s' is not UTF-8", name);
				rc = GF_EXIT_USAGE;
			}
			gf_free_secret(text);
		}
		free(name);
		if (rc)
			return rc;
	}
	return 0;
}

/* Each node's model in its last sweep (for the baseline's per-model rules); NULLs when none. */
static int last_models(struct gf_cli *cli, const struct gf_node *nodes, size_t n,
		       struct gf_sweep **ret_sw, const char ***ret)
{
	const char **models = gf_xcalloc(n ? n : 1, sizeof(*models));
	const char **names = gf_nodes_names(nodes, n);
	struct gf_store_query q = {.nodes = names, .nnodes = n};
	struct gf_sweep *sw = NULL;
	struct gf_err err = {0};
	struct gf_db *db;
	int rc = cli_db(cli, &db);

	if (!rc && gf_store_load(db, &q, &sw, &err) < 0)
		rc = cli_fail(&err);
	free(names);
	if (rc) {
		free(models);
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < sw->n; k++)
			if (strcmp(sw->nodes[k].node, nodes[i].name) == 0)
				models[i] = sw->nodes[k].model;
	*ret_sw = sw;
	*ret = models;
	return 0;
}

static int set_run(struct gf_cli *cli, const struct cli_subverb *sv, void *ud, char **args,
		   int nargs)
{
	const struct bios_args *a = ud;
	struct set_ctx ctx = {.when = a->when, .dry_run = a->dry_run, .rows = table_rows(cli)};
	struct gf_render_spec spec = {.cols = set_cols, .ncols = 4, .rows_key = "rows"};
	struct cli_bmc_run run = {0};
	struct gf_node *nodes = NULL;
	struct gf_baseline *bl = NULL;
	struct gf_sweep *sw = NULL;
	struct gf_buf audit = GF_BUF_INIT;
	struct gf_err err = {0};
	json_t *assigns = json_object(), *secrets = json_object(), *t;
	const char *name;
	size_t n = 0;
	int rc, used = 0;

	(void)sv;
	if (a->pattern || a->pending) {
		cli_error("bios set takes no --attribute or --pending");
		rc = GF_EXIT_USAGE;
		goto out;
	}
	rc = parse_assigns(args, nargs, assigns, &used);
	if (rc)
		goto out;
	rc = read_secrets(a, assigns, secrets);
	if (rc)
		goto out;
	if (a->baseline && (used || a->nsecret)) {
		cli_error("bios set takes NAME=VALUE or --from-baseline, not both");
		rc = GF_EXIT_USAGE;
		goto out;
	}
	if (!a->baseline && !used && !a->nsecret) {
		cli_error("bios set needs NAME=VALUE before the targets");
		rc = GF_EXIT_USAGE;
		goto out;
	}
	if (a->baseline) {
		if (inv_load_baseline(NULL, a->baseline, NULL, &bl, &err) < 0) {
			rc = cli_fail(&err);
			goto out;
		}
	}
	rc = cli_targets(cli, args + used, nargs - used, false, &nodes, &n);
	if (rc)
		goto out;
	if (!a->dry_run) {
		rc = cli_guard(cli, "bios set", nodes, n, a->yes);
		if (rc)
			goto out;
	}
	ctx.nodes = nodes;
	ctx.assigns = assigns;
	ctx.secrets = secrets;
	ctx.bl = bl;
	if (bl) {
		rc = last_models(cli, nodes, n, &sw, &ctx.models);
		if (rc)
			goto out;
	}
	/* Audited before anything is sent (an intent row per node), completed per node. */
	gf_buf_adds(&audit, "bios set");
	if (a->baseline)
		gf_buf_addf(&audit, " --from-baseline %s", a->baseline);
	json_object_foreach(assigns, name, t)
		gf_buf_addf(&audit, " %s=%s", name,
			    secret_name(name) ? "(secret)" : json_string_value(t));
	json_object_foreach(secrets, name, t)
		gf_buf_addf(&audit, " %s=(secret)", name); /* the name only, never the value */
	run = (struct cli_bmc_run){.cli = cli,
				   .nodes = nodes,
				   .n = n,
				   .op = set_op,
				   .ctx = &ctx,
				   .spec = &spec,
				   .action = "set",
				   .audit = a->dry_run ? NULL : gf_buf_str(&audit)};
	rc = cli_bmc_fanout(&run);
out:
	free(ctx.models);
	gf_sweep_free(sw);
	gf_baseline_free(bl);
	gf_buf_release(&audit);
	json_decref(assigns);
	forget_secrets(secrets);
	cli_bmc_release(&run);
	gf_nodes_free(nodes, n);
	return rc;
}

static const struct cli_subverb subs[] = {
	{"show", show_run, NULL, 0},
	{"set", set_run, NULL, 0},
};

int cmd_bios(struct gf_cli *cli, int argc, char **argv)
{
	struct bios_args a = {0};
	char **args;
	int nargs, rc;

	rc = cli_parse(cli, argc, argv, bios_opts, sizeof(bios_opts) / sizeof(bios_opts[0]), on_opt,
		       &a, &args, &nargs);
	if (rc)
		return rc;
	return cli_subverb_run(cli, subs, sizeof(subs) / sizeof(subs[0]), &a, args, nargs);
}
