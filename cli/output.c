/* The one output path of cli/: errors, warnings, and rendering a fan-out run. */
#include "cli/common.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/problems.h"
#include "lib/buf.h"
#include "lib/util.h"

/*
 * Every line cli/ writes on stderr: "@prefix MESSAGE\n", the message made
 * terminal-safe (it may carry a BMC's or a host's text): controls escaped as
 * gf_term_escape() does, but its own line feeds kept.
 */
__attribute__((format(printf, 2, 0))) static void say(const char *prefix, const char *fmt,
						      va_list ap)
{
	struct gf_buf line = GF_BUF_INIT, text = GF_BUF_INIT;

	gf_buf_vaddf(&text, fmt, ap);
	gf_buf_adds(&line, prefix);
	gf_term_escape(&line, gf_buf_str(&text), "\n");
	gf_buf_addc(&line, '\n');
	fputs(gf_buf_str(&line), stderr);
	gf_buf_release(&line);
	gf_buf_release(&text);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("gpufleet: ", fmt, ap);
	va_end(ap);
}

void cli_warn(const struct gf_cli *cli, const char *fmt, ...)
{
	va_list ap;

	if (cli && cli->quiet)
		return;
	va_start(ap, fmt);
	say("gpufleet: warning: ", fmt, ap);
	va_end(ap);
}

void cli_note(const struct gf_cli *cli, const char *fmt, ...)
{
	va_list ap;

	if (cli->quiet)
		return;
	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}

void cli_verbose(const struct gf_cli *cli, const char *fmt, ...)
{
	va_list ap;

	if (!cli->verbose)
		return;
	va_start(ap, fmt);
	say("gpufleet: ", fmt, ap);
	va_end(ap);
}

int cli_interrupted(int rc)
{
	if (!gf_exec_cancelled())
		return rc;
	cli_error("interrupted");
	return GF_EXIT_INTERRUPTED;
}

int cli_fail(const struct gf_err *err)
{
	cli_error("%s", err->msg[0] ? err->msg : "unknown error");
	switch (err->code) {
	case GF_E_USAGE:
	case GF_E_CONFIG: return GF_EXIT_USAGE;
	default: return GF_EXIT_FAILED;
	}
}

static json_t *node_json(const struct cli_render *r, size_t i, const struct gf_result *slot)
{
	const struct gf_node *n = &r->nodes[i];
	char *bmc;
	json_t *o;

	if (!r->show_bmc)
		return gf_result_to_json(n->name, NULL, NULL, slot);
	bmc = n->bmc ? gf_hostport_format(n->bmc, n->bmc_port) : NULL;
	o = gf_result_to_json(n->name, bmc, gf_proto_name(n->protocol), slot);
	free(bmc);
	return o;
}

void cli_progress_done(void *ud, size_t i, const struct gf_result *slot)
{
	struct cli_render *r = ud;

	if (r->nodes)
		cli_verbose(r->cli, "%s: %s in %.3f s (%u attempt%s)%s%s", r->nodes[i].name,
			    slot->ok ? "ok" : gf_errkind_name(slot->err.kind),
			    slot->t_end - slot->t_start, slot->attempts,
			    slot->attempts == 1 ? "" : "s", slot->ok ? "" : ": ",
			    slot->ok ? "" : slot->err.msg);
	r->finished++;
	if (!slot->ok)
		r->failed++;
	if (r->cli->progress && r->n > 4) {
		fprintf(stderr, "\r%zu/%zu done, %zu failed", r->finished, r->n, r->failed);
		if (r->finished == r->n)
			fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}

void cli_render_stream(struct cli_render *r, size_t i, const struct gf_result *slot)
{
	struct gf_buf b = GF_BUF_INIT;
	json_t *o;

	if (r->cli->format != GF_FMT_NDJSON)
		return;
	o = node_json(r, i, slot);
	gf_render_ndjson_one(o, &b);
	fputs(gf_buf_str(&b), stdout);
	fflush(stdout);
	json_decref(o);
	gf_buf_release(&b);
}

void cli_render_done(void *ud, size_t i, const struct gf_result *slot)
{
	cli_render_stream(ud, i, slot);
	cli_progress_done(ud, i, slot);
}

void cli_progress_line(const char *fmt, ...)
{
	struct gf_buf line = GF_BUF_INIT;
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	gf_buf_adds(&line, "\r\033[K");
	gf_term_escape(&line, text, "");
	fputs(gf_buf_str(&line), stderr);
	fflush(stderr);
	gf_buf_release(&line);
}

void cli_progress_clear(void)
{
	fputs("\r\033[K", stderr);
	fflush(stderr);
}

struct cli_ticker {
	void (*draw)(void *ud);
	void *ud;
	double every;
	atomic_bool stop;
	pthread_t thread;
};

static void *ticker_main(void *ud)
{
	struct cli_ticker *t = ud;

	while (!atomic_load(&t->stop)) {
		double next = gf_monotime() + t->every;

		t->draw(t->ud);
		while (!atomic_load(&t->stop) && gf_monotime() < next)
			gf_sleep_until(gf_monotime() + 0.05 < next ? gf_monotime() + 0.05 : next);
	}
	return NULL;
}

struct cli_ticker *cli_ticker_start(void (*draw)(void *ud), void *ud, double every)
{
	struct cli_ticker *t = gf_xcalloc(1, sizeof(*t));

	*t = (struct cli_ticker){.draw = draw, .ud = ud, .every = every};
	atomic_init(&t->stop, false);
	if (pthread_create(&t->thread, NULL, ticker_main, t) != 0) {
		free(t);
		return NULL;
	}
	return t;
}

void cli_ticker_stop(struct cli_ticker *t)
{
	if (!t)
		return;
	atomic_store(&t->stop, true);
	pthread_join(t->thread, NULL);
	t->draw(t->ud);
	cli_progress_clear();
	free(t);
}

size_t cli_term_width(void)
{
	struct winsize ws;

	if (!isatty(STDOUT_FILENO))
		return 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

int cli_render_finish(struct cli_render *r, const struct gf_result *slots)
{
	struct gf_buf b = GF_BUF_INIT;
	json_t **objs, **rows;
	size_t failed = 0, nrows = 0, nomatch = 0;
	struct gf_render_spec spec = *r->spec;
	bool shown;

	for (size_t i = 0; i < r->n; i++)
		if (!slots[i].ok)
			failed++;
	if (r->cli->format == GF_FMT_NDJSON)
		return failed ? GF_EXIT_FAILED : GF_EXIT_OK;
	objs = gf_xcalloc(r->n ? r->n : 1, sizeof(*objs));
	rows = gf_xcalloc(r->n ? r->n : 1, sizeof(*rows));
	for (size_t i = 0; i < r->n; i++) {
		json_t *chosen;

		objs[i] = node_json(r, i, &slots[i]);
		chosen = spec.rows_key ? json_object_get(objs[i], spec.rows_key) : NULL;
		/* A filter that chose nothing on a node: the table leaves the node out. */
		if (r->filtered && slots[i].ok && json_is_array(chosen) &&
		    json_array_size(chosen) == 0)
			nomatch++;
		else
			rows[nrows++] = objs[i];
	}
	spec.collapse = r->cli->collapse;
	spec.color = r->cli->color;
	shown = cli_problems_shown(r->cli, r->n);
	switch (r->cli->format) {
	case GF_FMT_JSON: gf_render_json(objs, r->n, &b); break;
	case GF_FMT_CSV: gf_render_csv(objs, r->n, &spec, &b); break;
	default:
		if ((!shown || !r->cli->quiet) && nrows)
			gf_render_table_fit(rows, nrows, &spec, r->cli->width, &b);
		break;
	}
	fputs(gf_buf_str(&b), stdout);
	fflush(stdout);
	for (size_t i = 0; i < r->n; i++)
		json_decref(objs[i]);
	free(objs);
	free(rows);
	gf_buf_release(&b);
	if (r->cli->format != GF_FMT_TABLE)
		return failed ? GF_EXIT_FAILED : GF_EXIT_OK;
	if (shown) {
		struct cli_problems *p = cli_problems_new(false);

		for (size_t i = 0; i < r->n; i++)
			cli_problems_add_slot(p, r->nodes ? r->nodes[i].name : "?", &slots[i]);
		cli_problems_nomatch(p, r->filtered ? nomatch : (size_t)-1);
		cli_problems_print(r->cli, p);
	} else {
		if (failed && r->n > 1)
			cli_note(r->cli, "%zu of %zu nodes failed", failed, r->n);
		if (nomatch)
			cli_note(r->cli, "%zu of %zu nodes had nothing that matched", nomatch,
				 r->n);
	}
	return failed ? GF_EXIT_FAILED : GF_EXIT_OK;
}
