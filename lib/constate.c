/* The state of a running console log (see lib/constate.h). */
#include "lib/constate.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lib/file.h"
#include "lib/output.h"
#include "lib/util.h"

#define STATE_MAX (64u << 20) /* 64 MiB: far more than 100,000 nodes take */

void gf_constate_release(struct gf_constate *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].node);
		free(s->v[i].state);
	}
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static char *state_path(const char *dir)
{
	struct gf_buf p = GF_BUF_INIT;

	gf_buf_addf(&p, "%s/%s", dir, GF_CONSTATE_FILE);
	return gf_buf_detach(&p);
}

int gf_constate_write(const char *dir, const struct gf_constate *s, struct gf_err *err)
{
	json_t *o = json_object(), *nodes = json_array();
	char *text, *path;
	int rc;

	json_object_set_new(o, "version", json_integer(1));
	json_object_set_new(o, "pid", json_integer(s->pid));
	json_object_set_new(o, "started", json_real(s->started));
	json_object_set_new(o, "updated", json_real(s->updated));
	json_object_set_new(o, "running", json_boolean(s->running));
	for (size_t i = 0; i < s->n; i++) {
		json_t *n = json_object();

		json_object_set_new(n, "node", json_string(s->v[i].node));
		json_object_set_new(n, "state", json_string(s->v[i].state));
		json_object_set_new(n, "bytes", json_integer((json_int_t)s->v[i].bytes));
		json_object_set_new(n, "since", json_real(s->v[i].since));
		json_array_append_new(nodes, n);
	}
	json_object_set_new(o, "nodes", nodes);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return gf_err_set(err, GF_E_NOMEM, GF_EK_NONE, "out of memory");
	path = state_path(dir);
	rc = gf_file_replace(path, text, strlen(text), err);
	free(path);
	free(text);
	return rc;
}

int gf_constate_read(const char *dir, struct gf_constate *ret, struct gf_err *err)
{
	struct gf_constate s = {0};
	char *path = state_path(dir), *text = NULL;
	json_t *o = NULL, *nodes, *n;
	size_t len, i;
	int rc;

	rc = gf_file_read(path, STATE_MAX, 0, &text, &len, err);
	if (rc < 0) {
		if (err && err->detail == ENOENT)
			rc = gf_err_set(err, GF_E_NOTFOUND, GF_EK_NONE,
					"no console log has run in '%s'", dir);
		else if (err)
			err->code = rc = GF_E_IO;
		goto out;
	}
	o = json_loadb(text, len, 0, NULL);
	nodes = json_object_get(o, "nodes");
	if (!json_is_object(o) || json_integer_value(json_object_get(o, "version")) != 1 ||
	    !json_is_array(nodes)) {
		rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
				"'%s' is not the state of a console log", path);
		goto out;
	}
	s.pid = (long)json_integer_value(json_object_get(o, "pid"));
	s.started = json_number_value(json_object_get(o, "started"));
	s.updated = json_number_value(json_object_get(o, "updated"));
	s.running = json_is_true(json_object_get(o, "running"));
	s.v = gf_xcalloc(json_array_size(nodes) + 1, sizeof(*s.v));
	json_array_foreach(nodes, i, n) {
		const char *name = json_string_value(json_object_get(n, "node"));
		const char *st = json_string_value(json_object_get(n, "state"));
		json_int_t bytes = json_integer_value(json_object_get(n, "bytes"));

		if (!name || !st || bytes < 0) {
			rc = gf_err_set(err, GF_E_CONFIG, GF_EK_NONE,
					"'%s' is not the state of a console log (node %zu)", path,
					i + 1);
			goto out;
		}
		s.v[s.n].node = gf_xstrdup(name);
		s.v[s.n].state = gf_xstrdup(st);
		s.v[s.n].bytes = (unsigned long long)bytes;
		s.v[s.n++].since = json_number_value(json_object_get(n, "since"));
	}
	*ret = s;
	s = (struct gf_constate){0};
out:
	gf_constate_release(&s);
	json_decref(o);
	free(text);
	free(path);
	return rc;
}

static bool wanted(const char *node, const char *const *only, size_t nonly)
{
	for (size_t i = 0; i < nonly; i++)
		if (!strcmp(only[i], node))
			return true;
	return nonly == 0;
}

void gf_constate_prom(const struct gf_constate *s, double now, const char *const *only,
		      size_t nonly, struct gf_buf *out)
{
	static const char *const states[] = {"connecting", "connected", "reconnecting",
					     "busy",       "failed",    "stopped"};
	bool up = s && s->running && now - s->updated <= GF_CONSTATE_STALE_S;
	size_t n = s ? s->n : 0;

	gf_prom_family(out, "gpufleet_console_log_up",
		       "1 when a console log is running and its state is fresh");
	gf_buf_addf(out, "gpufleet_console_log_up %d\n", up);
	if (!s)
		return;
	gf_prom_family(out, "gpufleet_console_log_timestamp_seconds",
		       "when the console log last wrote its state, in Unix time");
	gf_buf_adds(out, "gpufleet_console_log_timestamp_seconds ");
	gf_prom_number(out, s->updated);
	gf_buf_addc(out, '\n');
	gf_prom_family(out, "gpufleet_console_up", "1 when the node's serial console is connected");
	for (size_t i = 0; i < n; i++) {
		if (!wanted(s->v[i].node, only, nonly))
			continue;
		gf_buf_adds(out, "gpufleet_console_up{");
		gf_prom_label(out, "node", s->v[i].node, true);
		gf_buf_addf(out, "} %d\n", up && !strcmp(s->v[i].state, "connected"));
	}
	gf_prom_family(out, "gpufleet_console_state",
		       "the state of the node's serial console logger, 1 for the current one");
	for (size_t i = 0; i < n; i++) {
		const char *cur = up ? s->v[i].state : "stopped";

		if (!wanted(s->v[i].node, only, nonly))
			continue;
		for (size_t k = 0; k < NELEM(states); k++) {
			gf_buf_adds(out, "gpufleet_console_state{");
			gf_prom_label(out, "node", s->v[i].node, true);
			gf_prom_label(out, "state", states[k], false);
			gf_buf_addf(out, "} %d\n", !strcmp(cur, states[k]));
		}
	}
	gf_prom_family(out, "gpufleet_console_bytes",
		       "bytes the node's serial console printed since console log started");
	for (size_t i = 0; i < n; i++) {
		if (!wanted(s->v[i].node, only, nonly))
			continue;
		gf_buf_adds(out, "gpufleet_console_bytes{");
		gf_prom_label(out, "node", s->v[i].node, true);
		gf_buf_addf(out, "} %llu\n", s->v[i].bytes);
	}
}
