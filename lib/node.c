#include "lib/node.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/backend.h"
#include "lib/buf.h"
#include "lib/util.h"

/* Longer names are surely a mistake, and every renderer can count on this. */
#define MAX_NAME_LEN 255

void gf_node_release(struct gf_node *n)
{
	if (!n)
		return;
	free(n->name);
	free(n->bmc);
	free(n->ssh);
	free(n->profile);
	for (size_t i = 0; i < n->ngroups; i++)
		free(n->groups[i]);
	free(n->groups);
	memset(n, 0, sizeof(*n));
}

void gf_nodes_free(struct gf_node *nodes, size_t n)
{
	if (!nodes)
		return;
	for (size_t i = 0; i < n; i++)
		gf_node_release(&nodes[i]);
	free(nodes);
}

const char **gf_nodes_names(const struct gf_node *nodes, size_t n)
{
	const char **names = gf_xcalloc(n ? n : 1, sizeof(*names));

	for (size_t i = 0; i < n; i++)
		names[i] = nodes[i].name;
	return names;
}

static char *dup_or_null(const char *s)
{
	return s ? gf_xstrdup(s) : NULL;
}

void gf_node_copy(struct gf_node *dst, const struct gf_node *src)
{
	struct gf_node d = {0};

	d.name = dup_or_null(src->name);
	d.bmc = dup_or_null(src->bmc);
	d.bmc_port = src->bmc_port;
	d.protocol = src->protocol;
	d.ssh = dup_or_null(src->ssh);
	d.profile = dup_or_null(src->profile);
	if (src->ngroups) {
		d.groups = gf_xcalloc(src->ngroups, sizeof(*d.groups));
		for (size_t i = 0; i < src->ngroups; i++)
			d.groups[i] = gf_xstrdup(src->groups[i]);
		d.ngroups = src->ngroups;
	}
	*dst = d;
}

const char *gf_proto_name(const struct gf_backend *p)
{
	return p ? p->name : "auto";
}

int gf_proto_parse(const char *s, const struct gf_backend **ret, struct gf_err *err)
{
	const struct gf_backend *be = gf_backend_find(s);
	char *names;
	int rc;

	if (be || (s && strcasecmp(s, "auto") == 0)) {
		*ret = be;
		return 0;
	}
	names = gf_backend_names("auto", ", ");
	rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "protocol '%s' is not one of %s", s ? s : "",
			names);
	free(names);
	return rc;
}

/* Digits only, 1..65535: no sign, no space, no "0x". */
static bool parse_port(const char *s, int *ret)
{
	long v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
		if (v > 65535)
			return false;
	}
	if (v < 1)
		return false;
	*ret = (int)v;
	return true;
}

/* A host name or address as written: no space, no control character, none of "[]/@,;". */
static bool host_ok(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c == 0x7f || strchr("[]/@,;\"'\\", c))
			return false;
	}
	return true;
}

int gf_hostport_parse(const char *s, char **ret_host, int *ret_port, struct gf_err *err)
{
	const char *host, *port = NULL, *colon;
	size_t hlen;
	int p = 0;

	if (!s || !*s)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "host is empty");
	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "address '%s' has no closing ']'", s);
		host = s + 1;
		hlen = (size_t)(close - host);
		if (close[1] == ':')
			port = close + 2;
		else if (close[1])
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "address '%s' has text after ']' that is not ':port'", s);
	} else {
		host = s;
		colon = strchr(s, ':');
		if (colon && !strchr(colon + 1, ':')) {
			hlen = (size_t)(colon - s);
			port = colon + 1;
		} else {
			/* No colon, or several: a bare IPv6 address, without port. */
			hlen = strlen(s);
		}
	}
	if (!host_ok(host, hlen))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "host in '%s' is not valid", s);
	if (port && !parse_port(port, &p))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "port '%s' in '%s' is not a number from 1 to 65535", port, s);
	*ret_host = gf_xstrndup(host, hlen);
	*ret_port = p;
	return 0;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/* The rule for node, group and profile names; NULL when @s follows it, else why not. */
static const char *name_problem(const char *s)
{
	size_t len = strlen(s);

	if (!len)
		return "it is empty";
	if (len > MAX_NAME_LEN)
		return "it is longer than 255 characters";
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return "it does not start with a letter or digit";
	for (size_t i = 0; i < len; i++)
		if (!name_char(s[i]))
			return "only letters, digits, '.', '_' and '-' are allowed";
	return NULL;
}

int gf_node_name_check(const char *name, struct gf_err *err)
{
	const char *why = name_problem(name ? name : "");

	if (why)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "node name '%s' is not valid: %s",
				  name ? name : "", why);
	return 0;
}

/* CSV parsing. */

enum col {
	COL_NAME,
	COL_BMC,
	COL_PROTOCOL,
	COL_SSH,
	COL_PROFILE,
	COL_GROUPS,
	NCOLS,
};

static const char *const col_names[NCOLS] = {
	[COL_NAME] = "name", [COL_BMC] = "bmc",         [COL_PROTOCOL] = "protocol",
	[COL_SSH] = "ssh",   [COL_PROFILE] = "profile", [COL_GROUPS] = "groups",
};

/* The fields of one line, each a new string. */
struct fields {
	char **v;
	size_t n;
	size_t cap;
};

static void fields_clear(struct fields *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
	f->n = 0;
}

static void fields_release(struct fields *f)
{
	fields_clear(f);
	free(f->v);
	memset(f, 0, sizeof(*f));
}

static void fields_push(struct fields *f, struct gf_buf *b)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 8;
		f->v = gf_xrealloc(f->v, f->cap * sizeof(*f->v));
	}
	f->v[f->n++] = b->s ? gf_buf_detach(b) : gf_xstrdup("");
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Split one line (@s, @len bytes, no line end) into fields: separated by ',',
 * blanks around a field dropped, a field in double quotes may hold ',' and
 * '""' for a quote. Returns NULL, or why the line is bad.
 */
static const char *split_line(const char *s, size_t len, struct fields *f)
{
	struct gf_buf b = GF_BUF_INIT;
	size_t i = 0;

	fields_clear(f);
	for (;;) {
		while (i < len && is_blank(s[i]))
			i++;
		if (i < len && s[i] == '"') {
			i++;
			for (;;) {
				if (i == len) {
					gf_buf_release(&b);
					return "a quoted field is not closed on its line";
				}
				if (s[i] == '"') {
					if (i + 1 < len && s[i + 1] == '"') {
						gf_buf_addc(&b, '"');
						i += 2;
						continue;
					}
					i++;
					break;
				}
				gf_buf_addc(&b, s[i++]);
			}
			while (i < len && is_blank(s[i]))
				i++;
			if (i < len && s[i] != ',') {
				gf_buf_release(&b);
				return "text after the closing quote of a field";
			}
		} else {
			size_t start = i, end;

			while (i < len && s[i] != ',') {
				if (s[i] == '"') {
					gf_buf_release(&b);
					return "a double quote inside an unquoted field";
				}
				i++;
			}
			end = i;
			while (end > start && is_blank(s[end - 1]))
				end--;
			gf_buf_add(&b, s + start, end - start);
		}
		fields_push(f, &b);
		if (i == len)
			break;
		i++; /* the ',' */
	}
	return NULL;
}

/* A set of names with the line each was first seen on, to find duplicates fast. */
struct name_set {
	const char **keys; /* borrowed from the nodes being built */
	int *lines;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

static void name_set_grow(struct name_set *ns)
{
	size_t cap = ns->cap ? ns->cap * 2 : 64;
	const char **keys = gf_xcalloc(cap, sizeof(*keys));
	int *lines = gf_xcalloc(cap, sizeof(*lines));

	for (size_t i = 0; i < ns->cap; i++) {
		size_t j;

		if (!ns->keys[i])
			continue;
		for (j = gf_hash64(ns->keys[i], strlen(ns->keys[i])) & (cap - 1); keys[j];
		     j = (j + 1) & (cap - 1))
			;
		keys[j] = ns->keys[i];
		lines[j] = ns->lines[i];
	}
	free(ns->keys);
	free(ns->lines);
	ns->keys = keys;
	ns->lines = lines;
	ns->cap = cap;
}

/* Add @name seen on @line; returns 0, or the line it was first seen on. */
static int name_set_add(struct name_set *ns, const char *name, int line)
{
	size_t j;

	if ((ns->n + 1) * 2 > ns->cap)
		name_set_grow(ns);
	for (j = gf_hash64(name, strlen(name)) & (ns->cap - 1); ns->keys[j];
	     j = (j + 1) & (ns->cap - 1))
		if (strcmp(ns->keys[j], name) == 0)
			return ns->lines[j];
	ns->keys[j] = name;
	ns->lines[j] = line;
	ns->n++;
	return 0;
}

static void name_set_release(struct name_set *ns)
{
	free(ns->keys);
	free(ns->lines);
	memset(ns, 0, sizeof(*ns));
}

struct csv_state {
	int col_of[NCOLS]; /* field index of each column, -1: absent */
	size_t ncols;      /* fields per line, from the header */
	struct gf_node *nodes;
	size_t n, cap;
	struct name_set names;
};

static int parse_header(struct csv_state *cs, const struct fields *f, int line, struct gf_err *err)
{
	for (int c = 0; c < NCOLS; c++)
		cs->col_of[c] = -1;
	for (size_t i = 0; i < f->n; i++) {
		int c;

		for (c = 0; c < NCOLS; c++)
			if (strcasecmp(f->v[i], col_names[c]) == 0)
				break;
		if (c == NCOLS)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "line %d: unknown column '%s' (known: name, bmc, protocol, "
					  "ssh, profile, groups)",
					  line, f->v[i]);
		if (cs->col_of[c] >= 0)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "line %d: column '%s' appears twice", line, col_names[c]);
		cs->col_of[c] = (int)i;
	}
	if (cs->col_of[COL_NAME] < 0)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "line %d: the header has no 'name' column", line);
	cs->ncols = f->n;
	return 0;
}

/* The field of column @c, or NULL when the column is absent or the field empty. */
static const char *field(const struct csv_state *cs, const struct fields *f, enum col c)
{
	int i = cs->col_of[c];

	if (i < 0 || !*f->v[i])
		return NULL;
	return f->v[i];
}

static int parse_groups(const char *s, struct gf_node *n, int line, struct gf_err *err)
{
	while (*s) {
		const char *end = strchr(s, ';');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *b = s, *e = s + len;
		const char *why;
		char *g;
		bool dup = false;

		while (b < e && is_blank(*b))
			b++;
		while (e > b && is_blank(e[-1]))
			e--;
		if (b < e) {
			g = gf_xstrndup(b, (size_t)(e - b));
			why = name_problem(g);
			if (why) {
				int rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
						    "line %d: group '%s' is not valid: %s", line, g,
						    why);
				free(g);
				return rc;
			}
			for (size_t i = 0; i < n->ngroups && !dup; i++)
				dup = strcmp(n->groups[i], g) == 0;
			if (dup) {
				free(g);
			} else {
				n->groups = gf_xrealloc(n->groups,
							(n->ngroups + 1) * sizeof(*n->groups));
				n->groups[n->ngroups++] = g;
			}
		}
		if (!end)
			break;
		s = end + 1;
	}
	return 0;
}

/* "[user@]host[:port]": the user, if any, is a plain word; the rest a host:port. */
static int check_ssh(const char *s, int line, struct gf_err *err)
{
	const char *at = strrchr(s, '@');
	const char *hp = at ? at + 1 : s;
	struct gf_err sub = {0};
	char *host;
	int port;

	if (at) {
		for (const char *p = s; p < at; p++)
			if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '@' || *p == ':')
				return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
						  "line %d: ssh user in '%s' is not valid", line,
						  s);
		if (at == s)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "line %d: ssh user in '%s' is empty", line, s);
	}
	if (gf_hostport_parse(hp, &host, &port, &sub))
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "line %d: ssh: %s", line, sub.msg);
	free(host);
	return 0;
}

static int parse_record(struct csv_state *cs, const struct fields *f, int line, struct gf_err *err)
{
	struct gf_node n = {0};
	struct gf_err sub = {0};
	const char *v;
	const char *why;
	int rc, first;

	if (f->n != cs->ncols)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "line %d: %zu fields, but the header has %zu", line, f->n,
				  cs->ncols);
	v = field(cs, f, COL_NAME);
	if (!v)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "line %d: the node name is empty",
				  line);
	why = name_problem(v);
	if (why)
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "line %d: node name '%s' is not valid: %s", line, v, why);
	n.name = gf_xstrdup(v);

	v = field(cs, f, COL_BMC);
	if (v && gf_hostport_parse(v, &n.bmc, &n.bmc_port, &sub)) {
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "line %d: bmc: %s", line, sub.msg);
		goto fail;
	}
	v = field(cs, f, COL_PROTOCOL);
	if (v && gf_proto_parse(v, &n.protocol, &sub)) {
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "line %d: %s", line, sub.msg);
		goto fail;
	}
	v = field(cs, f, COL_SSH);
	if (v) {
		rc = check_ssh(v, line, err);
		if (rc)
			goto fail;
		n.ssh = gf_xstrdup(v);
	}
	v = field(cs, f, COL_PROFILE);
	if (v) {
		why = name_problem(v);
		if (why) {
			rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					"line %d: profile '%s' is not valid: %s", line, v, why);
			goto fail;
		}
		n.profile = gf_xstrdup(v);
	}
	v = field(cs, f, COL_GROUPS);
	if (v) {
		rc = parse_groups(v, &n, line, err);
		if (rc)
			goto fail;
	}

	if (cs->n == cs->cap) {
		cs->cap = cs->cap ? cs->cap * 2 : 16;
		cs->nodes = gf_xrealloc(cs->nodes, cs->cap * sizeof(*cs->nodes));
	}
	first = name_set_add(&cs->names, n.name, line);
	if (first) {
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				"line %d: node '%s' is already on line %d", line, n.name, first);
		goto fail;
	}
	/* The set borrows the name; the node keeps its address when the array moves. */
	cs->nodes[cs->n++] = n;
	return 0;
fail:
	gf_node_release(&n);
	return rc;
}

/* Only blanks, or a '#' comment after leading blanks. */
static bool skip_line(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && (is_blank(s[i]) || s[i] == '\r'))
		i++;
	return i == len || s[i] == '#';
}

int gf_nodes_parse_csv(const char *text, struct gf_node **ret_nodes, size_t *ret_n,
		       struct gf_err *err)
{
	struct csv_state cs = {0};
	struct fields f = {0};
	bool have_header = false;
	const char *s = text;
	int line = 0, rc = 0;

	/* Spreadsheets like to start UTF-8 files with a byte order mark. */
	if (strncmp(s, "\xEF\xBB\xBF", 3) == 0)
		s += 3;
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		const char *why;

		line++;
		if (len && s[len - 1] == '\r')
			len--;
		if (!skip_line(s, len)) {
			why = split_line(s, len, &f);
			if (why) {
				rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "line %d: %s", line,
						why);
				goto out;
			}
			if (!have_header) {
				rc = parse_header(&cs, &f, line, err);
				have_header = true;
			} else {
				rc = parse_record(&cs, &f, line, err);
			}
			if (rc)
				goto out;
		}
		if (!nl)
			break;
		s = nl + 1;
	}
	if (!have_header) {
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				"line %d: no header line (expected columns such as "
				"name,bmc,protocol,ssh,profile,groups)",
				line + 1);
	}
out:
	fields_release(&f);
	name_set_release(&cs.names);
	if (rc) {
		gf_nodes_free(cs.nodes, cs.n);
		return rc;
	}
	*ret_nodes = cs.nodes;
	*ret_n = cs.n;
	return 0;
}

char *gf_hostport_format(const char *host, int port)
{
	struct gf_buf b = GF_BUF_INIT;
	bool v6 = strchr(host, ':') != NULL;

	if (v6 && port)
		gf_buf_addf(&b, "[%s]:%d", host, port);
	else if (port)
		gf_buf_addf(&b, "%s:%d", host, port);
	else
		gf_buf_adds(&b, host);
	return gf_buf_detach(&b);
}

/* ---- order and lookup by name ------------------------------------------- */

int gf_node_name_cmp(const char *a, const char *b)
{
	const char *p = a, *q = b;

	while (*p && *q) {
		if (isdigit((unsigned char)*p) && isdigit((unsigned char)*q)) {
			const char *ps = p, *qs = q;
			size_t lp, lq;
			int c;

			while (*ps == '0' && isdigit((unsigned char)ps[1]))
				ps++;
			while (*qs == '0' && isdigit((unsigned char)qs[1]))
				qs++;
			for (p = ps; isdigit((unsigned char)*p); p++)
				;
			for (q = qs; isdigit((unsigned char)*q); q++)
				;
			lp = (size_t)(p - ps);
			lq = (size_t)(q - qs);
			if (lp != lq)
				return lp < lq ? -1 : 1;
			c = memcmp(ps, qs, lp);
			if (c)
				return c;
			continue;
		}
		if (*p != *q)
			return (unsigned char)*p < (unsigned char)*q ? -1 : 1;
		p++;
		q++;
	}
	if (*p || *q)
		return *p ? 1 : -1;
	return strcmp(a, b); /* "gpu01" and "gpu1": still a total order */
}

static const char *name_at(const struct gf_names *v, size_t i)
{
	return *(const char *const *)((const char *)v->base + i * v->size + v->name_off);
}

static int order_cmp(const void *a, const void *b, void *ud)
{
	const struct gf_names *v = ud;

	return gf_node_name_cmp(name_at(v, *(const size_t *)a), name_at(v, *(const size_t *)b));
}

size_t *gf_node_name_order(const struct gf_names *v)
{
	size_t *idx = gf_xcalloc(v->n ? v->n : 1, sizeof(*idx));

	for (size_t i = 0; i < v->n; i++)
		idx[i] = i;
	qsort_r(idx, v->n, sizeof(*idx), order_cmp, (void *)v);
	return idx;
}

size_t gf_node_name_find(const struct gf_names *v, const size_t *order, const char *name)
{
	size_t lo = 0, hi = v->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		size_t at = order ? order[mid] : mid;
		int c = gf_node_name_cmp(name_at(v, at), name);

		if (c == 0)
			return at;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return GF_NAME_NONE;
}
