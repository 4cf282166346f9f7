/* gpufleet nodes: the registry. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/inv.h"
#include "cli/verbs.h"
#include "fleet/bmc.h"
#include "fleet/repin.h"
#include "lib/buf.h"
#include "lib/file.h"

enum { N_BMC, N_SSH, N_GROUP, N_REPLACE, N_ADD_GROUP, N_REMOVE_GROUP, N_EXPECT };

static const struct cli_opt nodes_opts[] = {
	[N_BMC] = {{"bmc", required_argument, NULL, 0}, "HOST[:PORT]", "the node's BMC (add)"},
	[N_SSH] = {{"ssh", required_argument, NULL, 0},
		   "[USER@]HOST[:PORT]",
		   "the node's host, for SSH (add)"},
	[N_GROUP] = {{"group", required_argument, NULL, 'g'},
		     "G",
		     "put the node in group G; repeatable (add)"},
	[N_REPLACE] = {{"replace", no_argument, NULL, 0},
		       NULL,
		       "update a node that exists (add, import)"},
	[N_ADD_GROUP] = {{"add-group", required_argument, NULL, 0},
			 "G",
			 "add group G (tag; same as +G)"},
	[N_REMOVE_GROUP] = {{"remove-group", required_argument, NULL, 0},
			    "G",
			    "remove group G (tag; same as -G)"},
	[N_EXPECT] = {{"expect", required_argument, NULL, 0},
		      "SHA256",
		      "pin only a certificate with this fingerprint (repin)"},
};

struct nodes_args {
	const char *bmc;
	const char *ssh;
	bool replace;
	const char **add; /* groups to add (add, tag) */
	size_t nadd;
	const char **del; /* groups to remove (tag) */
	size_t ndel;
	const char *expect; /* repin: the fingerprint the BMC must show */
};

static void push(const char ***v, size_t *n, const char *s)
{
	*v = gf_xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = s;
}

static int on_opt(void *ud, size_t idx, const char *arg)
{
	struct nodes_args *a = ud;

	switch (idx) {
	case N_BMC: a->bmc = arg; break;
	case N_SSH: a->ssh = arg; break;
	case N_GROUP:
	case N_ADD_GROUP: push(&a->add, &a->nadd, arg); break;
	case N_REMOVE_GROUP: push(&a->del, &a->ndel, arg); break;
	case N_REPLACE: a->replace = true; break;
	case N_EXPECT: a->expect = arg; break;
	default: break;
	}
	return 0;
}

static int check_group(const char *g)
{
	struct gf_err err = {0};

	if (gf_node_name_check(g, &err) < 0) {
		cli_error("bad group name '%s': use letters, digits, '.', '_' and '-'", g);
		return GF_EXIT_USAGE;
	}
	return 0;
}

static int nodes_add(struct gf_cli *cli, const struct cli_subverb *sub, void *ud, char **args,
		     int nargs)
{
	struct nodes_args *a = ud;
	struct gf_node n = {0};
	struct gf_err err = {0};
	struct gf_db *db;
	int rc;

	if (nargs != 1) {
		cli_error("nodes add takes one NAME; see 'gpufleet nodes --help'");
		return GF_EXIT_USAGE;
	}
	if (!a->bmc && !a->ssh) {
		cli_error("node '%s' needs --bmc or --ssh", args[0]);
		return GF_EXIT_USAGE;
	}
	if (gf_node_name_check(args[0], &err) < 0)
		return cli_fail(&err);
	for (size_t i = 0; i < a->nadd; i++)
		if ((rc = check_group(a->add[i])))
			return rc;
	if (cli->protocol && gf_proto_parse(cli->protocol, &n.protocol, &err) < 0)
		return cli_fail(&err);
	if (a->bmc && gf_hostport_parse(a->bmc, &n.bmc, &n.bmc_port, &err) < 0)
		return cli_fail(&err);
	n.name = gf_xstrdup(args[0]);
	n.ssh = a->ssh ? gf_xstrdup(a->ssh) : NULL;
	n.profile = cli->profile ? gf_xstrdup(cli->profile) : NULL;
	n.groups = gf_xcalloc(a->nadd ? a->nadd : 1, sizeof(char *));
	for (size_t i = 0; i < a->nadd; i++)
		n.groups[n.ngroups++] = gf_xstrdup(a->add[i]);
	rc = cli_db(cli, &db);
	if (!rc && gf_db_nodes_add(db, &n, 1, a->replace, &err) < 0)
		rc = cli_fail(&err);
	gf_node_release(&n);
	return rc;
}

static int read_all(const char *path, char **ret)
{
	struct gf_err err = {0};
	size_t len;

	if (gf_file_read(path, 64u << 20, GF_FILE_DASH_STDIN, ret, &len, &err) < 0) {
		cli_error("%s", err.msg);
		return GF_EXIT_USAGE;
	}
	return 0;
}

static int nodes_import(struct gf_cli *cli, const struct cli_subverb *sub, void *ud, char **args,
			int nargs)
{
	struct nodes_args *a = ud;
	struct gf_err err = {0};
	struct gf_node *nodes;
	struct gf_db *db;
	size_t n;
	char *text;
	int rc;

	if (nargs != 1) {
		cli_error("nodes import takes one FILE (or - for stdin)");
		return GF_EXIT_USAGE;
	}
	rc = read_all(args[0], &text);
	if (rc)
		return rc;
	rc = gf_nodes_parse_csv(text, &nodes, &n, &err);
	free(text);
	if (rc < 0) {
		cli_error("'%s' %s; nothing imported", args[0], err.msg);
		return GF_EXIT_USAGE;
	}
	rc = cli_db(cli, &db);
	if (!rc && gf_db_nodes_add(db, nodes, n, a->replace, &err) < 0) {
		cli_error("%s; nothing imported", err.msg);
		rc = GF_EXIT_USAGE;
	}
	if (!rc)
		cli_note(cli, "imported %zu node%s", n, n == 1 ? "" : "s");
	gf_nodes_free(nodes, n);
	return rc;
}

static const struct gf_col list_cols[] = {
	{"bmc", "BMC"},         {"protocol", "PROTOCOL"}, {"ssh", "SSH"},
	{"profile", "PROFILE"}, {"groups", "GROUPS"},
};

static int nodes_list(struct gf_cli *cli, const struct cli_subverb *sub, void *ud, char **args,
		      int nargs)
{
	struct gf_render_spec spec = {list_cols, sizeof(list_cols) / sizeof(list_cols[0]), NULL,
				      cli->collapse, false};
	struct gf_node *nodes;
	json_t **objs;
	size_t n;
	int rc;

	rc = cli_targets(cli, args, nargs, true, &nodes, &n);
	if (rc)
		return rc;
	objs = gf_xcalloc(n ? n : 1, sizeof(*objs));
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object(), *g = json_array();

		json_object_set_new(o, "node", json_string(nodes[i].name));
		if (nodes[i].bmc) {
			char *bmc = gf_hostport_format(nodes[i].bmc, nodes[i].bmc_port);

			json_object_set_new(o, "bmc", json_string(bmc));
			free(bmc);
		} else {
			json_object_set_new(o, "bmc", json_null());
		}
		json_object_set_new(o, "protocol", json_string(gf_proto_name(nodes[i].protocol)));
		json_object_set_new(o, "ssh",
				    nodes[i].ssh ? json_string(nodes[i].ssh) : json_null());
		json_object_set_new(o, "profile",
				    json_string(nodes[i].profile ? nodes[i].profile : "default"));
		for (size_t k = 0; k < nodes[i].ngroups; k++)
			json_array_append_new(g, json_string(nodes[i].groups[k]));
		json_object_set_new(o, "groups", g);
		objs[i] = o;
	}
	if (cli->format == GF_FMT_TABLE || cli->format == GF_FMT_CSV) {
		/* Groups as "a;b", the way nodes import reads them back. */
		for (size_t i = 0; i < n; i++) {
			struct gf_buf g = GF_BUF_INIT;

			for (size_t k = 0; k < nodes[i].ngroups; k++)
				gf_buf_addf(&g, "%s%s", k ? ";" : "", nodes[i].groups[k]);
			json_object_set_new(objs[i], "groups", json_string(gf_buf_str(&g)));
			gf_buf_release(&g);
		}
	}
	inv_print(cli, objs, n, &spec);
	for (size_t i = 0; i < n; i++)
		json_decref(objs[i]);
	free(objs);
	gf_nodes_free(nodes, n);
	return GF_EXIT_OK;
}

static int nodes_remove(struct gf_cli *cli, const struct cli_subverb *sub, void *ud, char **args,
			int nargs)
{
	struct gf_err err = {0};
	struct gf_node *nodes;
	const char **names;
	size_t n;
	int rc;

	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	names = gf_nodes_names(nodes, n);
	if (gf_db_nodes_remove(cli->db, names, n, &err) < 0)
		rc = cli_fail(&err);
	else
		cli_note(cli, "removed %zu node%s", n, n == 1 ? "" : "s");
	free(names);
	gf_nodes_free(nodes, n);
	return rc;
}

static int nodes_tag(struct gf_cli *cli, const struct cli_subverb *sub, void *ud, char **args,
		     int nargs)
{
	struct nodes_args *a = ud;
	struct gf_err err = {0};
	struct gf_node *nodes;
	const char **names;
	size_t n;
	int rc;

	if (a->nadd + a->ndel == 0) {
		cli_error("nodes tag needs +GROUP or -GROUP");
		return GF_EXIT_USAGE;
	}
	for (size_t i = 0; i < a->nadd; i++)
		if ((rc = check_group(a->add[i])))
			return rc;
	for (size_t i = 0; i < a->ndel; i++)
		if ((rc = check_group(a->del[i])))
			return rc;
	rc = cli_targets(cli, args, nargs, false, &nodes, &n);
	if (rc)
		return rc;
	names = gf_nodes_names(nodes, n);
	if (gf_db_nodes_tag(cli->db, names, n, a->add, a->nadd, a->del, a->ndel, &err) < 0)
		rc = cli_fail(&err);
	free(names);
	gf_nodes_free(nodes, n);
	return rc;
}

/*
 * A SHA-256 fingerprint as given ("SHA256:" or "sha256 " before it, colons
 * between the bytes, either case) into @out as 64 lower-case hex digits;
 * false when it is not one.
 */
static bool parse_fingerprint(const char *s, char out[GF_BMC_FP_SIZE])
{
	size_t n = 0;

	if (strncasecmp(s, "sha256", 6) == 0 && (s[6] == ':' || s[6] == ' ' || s[6] == '='))
		s += 7;
	for (; *s; s++) {
		if (*s == ':' && n && n % 2 == 0)
			continue;
		if (!isxdigit((unsigned char)*s) || n + 1 >= GF_BMC_FP_SIZE)
			return false;
		out[n++] = (char)tolower((unsigned char)*s);
	}
	out[n] = '\0';
	return n == GF_BMC_FP_SIZE - 1;
}

/* A node's object, built as it finishes: its pin before, the one it has now or what it showed. */
static void repin_done(void *ud, size_t i, struct gf_result *slot, enum gf_repin_status status,
		       const char *old, const char *seen)
{
	if (status != GF_REPIN_NOT_RUN) {
		slot->data = json_object();
		json_object_set_new(slot->data, "previous", old ? json_string(old) : json_null());
		if (status == GF_REPIN_OTHER)
			json_object_set_new(slot->data, "seen", json_string(seen));
		else if (status == GF_REPIN_OK)
			json_object_set_new(slot->data, "pin", json_string(seen));
	}
	cli_render_done(ud, i, slot);
}

static const struct gf_col repin_cols[] = {{"pin", "PIN"}, {"previous", "PREVIOUS"}};

/*
 * Replace the pinned certificates of TARGETS by the ones they show now (no
 * credentials are sent for that), with --expect only by that one. A node
 * that cannot be reached, or shows another certificate than expected,
 * keeps the pin it had.
 */
static int nodes_repin(struct gf_cli *cli, const struct cli_subverb *sub, void *ud, char **args,
		       int nargs)
{
	struct gf_render_spec spec = {repin_cols, 2, NULL, cli->collapse, cli->color};
	struct cli_render r = {.cli = cli, .spec = &spec, .show_bmc = true};
	struct gf_repin rp = {.done = repin_done, .ud = &r};
	char expect[GF_BMC_FP_SIZE];
	struct gf_err err = {0};
	struct gf_node *nodes;
	struct gf_db *db;
	const struct nodes_args *a = ud;
	size_t n;
	int rc;

	(void)sub;
	if (a->expect && !parse_fingerprint(a->expect, expect)) {
		cli_error("bad --expect '%s': give the certificate's SHA-256 as 64 hex digits "
			  "(colons and a 'SHA256:' prefix allowed)",
			  a->expect);
		return GF_EXIT_USAGE;
	}
	rp.expect = a->expect ? expect : NULL;
	rc = cli_targets_db(cli, args, nargs, &nodes, &n, &db);
	if (rc)
		return rc;
	rp.nodes = nodes;
	rp.n = n;
	r.nodes = nodes;
	r.n = n;
	cli_exec_opts(cli, &rp.exec);
	if (gf_repin_run(db, &rp, &err) < 0) {
		rc = cli_fail(&err);
		goto out;
	}
	rc = cli_interrupted(cli_render_finish(&r, rp.slots));
out:
	gf_repin_release(&rp);
	gf_nodes_free(nodes, n);
	return rc;
}

enum { N_ADD, N_IMPORT, N_LIST, N_REMOVE, N_REPIN, N_TAG };

static const struct cli_subverb nodes_subs[] = {
	[N_ADD] = {"add", nodes_add, NULL,
		   CLI_OPT(N_BMC) | CLI_OPT(N_SSH) | CLI_OPT(N_GROUP) | CLI_OPT(N_REPLACE)},
	[N_IMPORT] = {"import", nodes_import, NULL, CLI_OPT(N_REPLACE)},
	[N_LIST] = {"list", nodes_list, NULL, CLI_NO_OPTS},
	[N_REMOVE] = {"remove", nodes_remove, NULL, CLI_NO_OPTS},
	[N_REPIN] = {"repin", nodes_repin, NULL, CLI_OPT(N_EXPECT)},
	[N_TAG] = {"tag", nodes_tag, NULL,
		   CLI_OPT(N_GROUP) | CLI_OPT(N_ADD_GROUP) | CLI_OPT(N_REMOVE_GROUP)},
};

/* Is @s a "+GROUP" or "-GROUP" word of nodes tag, rather than an option? */
static bool is_tag_word(const char *s)
{
	if (s[0] == '+')
		return s[1] != '\0';
	if (s[0] != '-' || s[1] == '-' || s[1] == '\0')
		return false;
	/* Single-letter short options keep their meaning. */
	return strlen(s) > 2;
}

int cmd_nodes(struct gf_cli *cli, int argc, char **argv)
{
	struct nodes_args a = {0};
	char **args, **kept;
	int nargs, nkept = 0, rc;
	bool tag = false;

	/* "+G -G" words are taken out before getopt sees "-G" as options. */
	kept = gf_xcalloc((size_t)argc + 1, sizeof(char *));
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], nodes_subs[N_TAG].name) == 0 && !tag) {
			tag = true;
		} else if (tag && is_tag_word(argv[i])) {
			if (argv[i][0] == '+')
				push(&a.add, &a.nadd, argv[i] + 1);
			else
				push(&a.del, &a.ndel, argv[i] + 1);
			continue;
		}
		kept[nkept++] = argv[i];
	}
	rc = cli_parse(cli, nkept, kept, nodes_opts, sizeof(nodes_opts) / sizeof(nodes_opts[0]),
		       on_opt, &a, &args, &nargs);
	if (rc)
		goto out;
	rc = cli_subverb_run(cli, nodes_subs, sizeof(nodes_subs) / sizeof(nodes_subs[0]), &a, args,
			     nargs);
out:
	free(a.add);
	free(a.del);
	free(kept);
	return rc;
}
