/*
 * Walking a Redfish tree: the service root, $expand where the service says it
 * may be used, and collections with paging and de-duplication (real BMCs
 * page at 50 or 75 members, and captured trees hold merged pages).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "redfish/rf.h"

#define MAX_MEMBERS 20000u
#define MAX_PAGES 1000u

void rf_expand_query(const json_t *root, char *buf, size_t size)
{
	json_t *eq = rf_get(root, "ProtocolFeaturesSupported.ExpandQuery");
	const char *what = NULL;
	double max = 0;

	buf[0] = '\0';
	if (!json_is_object(eq))
		return;
	/* "." expands the subordinate resources (Members), not Links: what a walk needs. */
	if (rf_bool(eq, "NoLinks") == 1)
		what = ".";
	else if (rf_bool(eq, "ExpandAll") == 1)
		what = "*";
	if (!what)
		return;
	if (rf_bool(eq, "Levels") == 1 && rf_num(eq, "MaxLevels", &max) && max >= 1)
		snprintf(buf, size, "$expand=%s($levels=1)", what);
	else
		snprintf(buf, size, "$expand=%s", what);
}

/* Does the root allow "$expand=.($levels=2)" (subordinate resources two deep)? */
static bool deep_levels(const json_t *root)
{
	json_t *eq = rf_get(root, "ProtocolFeaturesSupported.ExpandQuery");
	double max = 0;

	return rf_bool(eq, "NoLinks") == 1 && rf_bool(eq, "Levels") == 1 &&
	       rf_num(eq, "MaxLevels", &max) && max >= 2;
}

void rf_client_setup(struct rf_client *c, const struct rf_io *io, void *ud, const char *node,
		     json_t *root)
{
	memset(c, 0, sizeof(*c));
	c->io = io;
	c->ud = ud;
	c->node = node ? node : "";
	c->root = json_incref(root);
	c->max_members = MAX_MEMBERS;
	c->max_pages = MAX_PAGES;
	rf_expand_query(root, c->expand, sizeof(c->expand));
	c->deep = rf_bool(rf_obj(root, "ProtocolFeaturesSupported"), "SelectQuery") == 1 &&
		  deep_levels(root);
	c->dialect = rf_dialect_detect(root, NULL);
}

int rf_client_init(struct rf_client *c, const struct rf_io *io, void *ud, const char *node,
		   struct gf_err *err)
{
	json_t *root = NULL;
	int rc = io->get(ud, "/redfish/v1", &root, NULL, err);

	if (rc < 0)
		return rc;
	rf_client_setup(c, io, ud, node, root);
	json_decref(root);
	return 0;
}

void rf_client_release(struct rf_client *c)
{
	json_decref(c->root);
	c->root = NULL;
	json_decref(c->kept);
	c->kept = NULL;
	free(c->main_system);
	c->main_system = NULL;
}

int rf_fetch(struct rf_client *c, const char *path, json_t **ret, struct gf_err *err)
{
	return c->io->get(c->ud, path, ret, NULL, err);
}

/* Was the member listed with more than its link, i.e. expanded? */
static bool expanded(const json_t *m)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)m, k, v) {
		if (strcmp(k, "@odata.id") != 0)
			return true;
	}
	return false;
}

static char *with_query(const char *path, const char *query)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_adds(&b, path);
	gf_buf_addc(&b, strchr(path, '?') ? '&' : '?');
	gf_buf_adds(&b, query);
	return gf_buf_detach(&b);
}

/*
 * GET @path judged on a fresh error record: a failure is copied to @err, and
 * *ret_status is that answer's HTTP status (0: none, e.g. a timeout). Never
 * judge a request by the detail left in a record an earlier request filled.
 */
static int get_judged(struct rf_client *c, const char *path, json_t **ret, long *ret_status,
		      struct gf_err *err)
{
	struct gf_err e = {0};
	int rc = c->io->get(c->ud, path, ret, NULL, &e);

	*ret_status = rc < 0 ? e.detail : 0;
	if (rc < 0 && err)
		*err = e;
	return rc;
}

/* One page's members into @out. */
static int take_members(struct rf_client *c, const json_t *page, unsigned flags, json_t *seen,
			json_t *out, struct gf_err *err)
{
	json_t *members = rf_arr(page, "Members");
	size_t i;
	json_t *m;

	json_array_foreach(members, i, m) {
		const char *id = rf_odata_id(m);
		json_t *full = NULL;
		int rc;

		if (!json_is_object(m))
			continue;
		if (id) {
			if (json_object_get(seen, id))
				continue;
			json_object_set_new(seen, id, json_true());
		}
		if (json_array_size(out) >= c->max_members)
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "bmc '%s' lists more than %zu members in one collection",
					  c->node, c->max_members);
		if ((flags & RF_WALK_REFS) || expanded(m) || !id) {
			json_array_append(out, m);
			continue;
		}
		/* A member that is gone (or was trimmed from a capture) is no failure. */
		rc = rf_fetch_opt(c, id, &full, err);
		if (rc < 0)
			return rc;
		if (!full)
			continue;
		if (json_is_object(full))
			json_array_append_new(out, full);
		else
			json_decref(full);
	}
	return 0;
}

static int collection(struct rf_client *c, const char *path, unsigned flags, json_t *given,
		      json_t **ret, struct gf_err *err);

int rf_collection(struct rf_client *c, const char *path, unsigned flags, json_t **ret,
		  struct gf_err *err)
{
	char key[8];
	struct gf_buf k = GF_BUF_INIT;
	json_t *got;
	int rc;

	if (!(flags & RF_WALK_KEEP))
		return collection(c, path, flags, NULL, ret, err);
	/* What was read as references is kept apart from what was read whole. */
	snprintf(key, sizeof(key), "%c ", (flags & RF_WALK_REFS) ? 'r' : 'f');
	gf_buf_adds(&k, key);
	gf_buf_adds(&k, path);
	got = c->kept ? json_object_get(c->kept, k.s) : NULL;
	if (got) {
		*ret = json_incref(got);
		gf_buf_release(&k);
		return 0;
	}
	rc = collection(c, path, flags, NULL, ret, err);
	if (rc == 0) {
		if (!c->kept)
			c->kept = json_object();
		json_object_set(c->kept, k.s, *ret);
	}
	gf_buf_release(&k);
	return rc;
}

/* @given: the first page, read already (then not asked for again), or NULL. */
static int collection(struct rf_client *c, const char *path, unsigned flags, json_t *given,
		      json_t **ret, struct gf_err *err)
{
	json_t *out = json_array(), *seen = json_object(), *pages = json_object();
	char *first = NULL, *next = NULL;
	unsigned npages = 0;
	int rc = 0;

	/* Full members: one request per page where the service expands, not one per member. */
	if (!(flags & RF_WALK_REFS) && c->expand[0] && !given)
		first = with_query(path, c->expand);
	next = gf_xstrdup(first ? first : path);
	while (next) {
		json_t *page = NULL;
		const char *link;
		long status;

		json_object_set_new(pages, next, json_true());
		if (given) {
			page = json_incref(given);
			given = NULL;
			status = 0;
			rc = 0;
		} else {
			rc = get_judged(c, next, &page, &status, err);
		}
		if (rc < 0 && first && npages == 0 &&
		    (status == 400 || status == 501 || status == 405)) {
			/* The service refused $expand after all: walk without it from now on. */
			c->expand[0] = '\0';
			free(next);
			next = gf_xstrdup(path);
			free(first);
			first = NULL;
			gf_err_clear(err);
			continue;
		}
		if (rc < 0 && npages > 0 && status == 404) {
			/* Only a collection that is not there at all is empty; a lost page misses members. */
			rc = gf_err_set(
				err, GF_E_NODE, GF_EK_PROTOCOL,
				"bmc '%s' lists a next page '%s' of '%s' that is not there (HTTP 404)",
				c->node, next, path);
			goto out;
		}
		if (rc < 0)
			goto out;
		if (!json_is_object(page)) {
			json_decref(page);
			rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					"bmc '%s' answered '%s' with something that is not an object",
					c->node, next);
			goto out;
		}
		rc = take_members(c, page, flags, seen, out, err);
		link = rf_str(page, "Members@odata.nextLink");
		free(next);
		next = NULL;
		if (rc == 0 && link && *link && !json_object_get(pages, link)) {
			if (++npages >= c->max_pages)
				rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
						"bmc '%s' pages '%s' more than %u times", c->node,
						path, c->max_pages);
			else
				next = gf_xstrdup(link);
		}
		json_decref(page);
		if (rc < 0)
			goto out;
	}
out:
	free(first);
	free(next);
	json_decref(seen);
	json_decref(pages);
	if (rc < 0) {
		json_decref(out);
		return rc;
	}
	*ret = out;
	return 0;
}

int rf_fetch_with_members(struct rf_client *c, const char *path, const char *key, unsigned flags,
			  json_t **ret, json_t **ret_members, struct gf_err *err)
{
	struct gf_buf q = GF_BUF_INIT;
	json_t *res = NULL, *sub;
	long status = 0;
	char *uri;
	int rc;

	*ret = *ret_members = NULL;
	if (c->deep && c->expand[0] && !(flags & RF_WALK_REFS)) {
		gf_buf_addf(&q, "$select=%s&$expand=.($levels=2)", key);
		uri = with_query(path, q.s);
		gf_buf_release(&q);
		rc = get_judged(c, uri, &res, &status, err);
		free(uri);
		if (rc < 0 && (status == 400 || status == 501 || status == 405)) {
			/* Not for this service after all: one request at a time from now on. */
			c->deep = false;
			gf_err_clear(err);
		} else if (rc < 0) {
			return rc;
		} else {
			sub = rf_obj(res, key);
			/* Members that came whole (or as references: fetched) are walked from here. */
			if (rf_arr(sub, "Members") && rf_odata_id(sub)) {
				rc = collection(c, rf_odata_id(sub), flags, sub, ret_members, err);
				if (rc < 0) {
					json_decref(res);
					return rc;
				}
				*ret = res;
				return 0;
			}
			if (rf_link(res, key)) {
				*ret = res;
				return rf_collection_of(c, res, key, flags, ret_members, err);
			}
			/* It answered without what was selected: read it the plain way. */
			json_decref(res);
			res = NULL;
		}
	}
	rc = rf_fetch(c, path, &res, err);
	if (rc < 0)
		return rc;
	*ret = res;
	if (!rf_link(res, key))
		return 0;
	return rf_collection_of(c, res, key, flags, ret_members, err);
}

int rf_collection_of(struct rf_client *c, const json_t *o, const char *key, unsigned flags,
		     json_t **ret, struct gf_err *err)
{
	const char *link = rf_link(o, key);
	struct gf_err e = {0};
	int rc;

	if (!link) {
		*ret = json_array();
		return 0;
	}
	rc = rf_collection(c, link, flags, ret, &e);
	/*
	 * A link to nothing (a part the BMC does not serve after all) is an empty
	 * collection. Only the collection's own 404 gets here with that detail:
	 * lost members and pages are dealt with, or failed, by rf_collection().
	 */
	if (rc < 0 && e.detail == 404) {
		*ret = json_array();
		return 0;
	}
	if (rc < 0 && err)
		*err = e;
	return rc;
}

int rf_fetch_opt(struct rf_client *c, const char *path, json_t **ret, struct gf_err *err)
{
	long status;
	int rc = get_judged(c, path, ret, &status, err);

	if (rc < 0 && status == 404) {
		gf_err_clear(err);
		*ret = NULL;
		return 0;
	}
	return rc;
}

int rf_patch_fresh(struct rf_client *c, const char *uri,
		   json_t *(*body)(struct rf_client *c, const json_t *res, void *ud,
				   struct gf_err *err),
		   void *ud, struct gf_err *err)
{
	json_t *res = NULL, *b = NULL;
	struct gf_err e; /* the PATCH's own: its detail is its HTTP status */
	char *etag = NULL;
	int rc = 0;

	for (int attempt = 0; attempt < 2; attempt++) {
		json_decref(res);
		res = NULL;
		json_decref(b);
		free(etag);
		etag = NULL;
		rc = c->io->get(c->ud, uri, &res, &etag, err);
		if (rc < 0)
			break;
		if (!etag && rf_str(res, "@odata.etag"))
			etag = gf_xstrdup(rf_str(res, "@odata.etag"));
		b = body(c, res, ud, err);
		if (!b) {
			rc = GF_E_NODE;
			break;
		}
		gf_err_clear(&e);
		rc = c->io->send(c->ud, "PATCH", uri, b, etag, &e);
		/* Someone changed it between our read and our write: read again, once. */
		if (rc < 0 && e.detail == 412 && attempt == 0)
			continue;
		if (rc < 0 && err)
			*err = e;
		break;
	}
	free(etag);
	json_decref(b);
	json_decref(res);
	return rc;
}
