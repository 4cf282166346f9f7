/*
 * The state of a running `console log`, kept beside its logs in
 * DIR/.console-state.json (replaced whole, every CONSTATE_REFRESH_S seconds
 * and at each change), so that another process (`gpufleet metrics`, run by
 * a Prometheus scrape or a timer) can tell each console's state and bytes
 * without talking to the logger; and the Prometheus text of it, the same for
 * `console log --metrics` and `metrics`. Protocol-free; for one thread.
 */
#ifndef GF_CONSTATE_H
#define GF_CONSTATE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/buf.h"
#include "lib/err.h"

#define GF_CONSTATE_FILE ".console-state.json"
#define GF_CONSTATE_REFRESH_S 10.0 /* the logger rewrites it at least this often */
#define GF_CONSTATE_STALE_S 35.0   /* older than this: the logger is not running */

struct gf_constate_node {
	char *node;
	char *state;              /* connecting, connected, reconnecting, busy, failed */
	unsigned long long bytes; /* what the console printed since the logger started */
	double since;             /* epoch seconds: in this state since */
};

struct gf_constate {
	double started; /* epoch seconds: the logger started */
	double updated; /* epoch seconds: the file was written */
	bool running;   /* false: the logger ended (it says so as it exits) */
	long pid;
	struct gf_constate_node *v;
	size_t n;
};

void gf_constate_release(struct gf_constate *s);

/* Replace @dir/.console-state.json with @s (mode 0644); GF_E_IO. */
int gf_constate_write(const char *dir, const struct gf_constate *s, struct gf_err *err);

/*
 * Read @dir's state into @ret (release it); GF_E_NOTFOUND when no logger
 * ever wrote one there, GF_E_IO or GF_E_CONFIG (not a state file).
 */
int gf_constate_read(const char *dir, struct gf_constate *ret, struct gf_err *err);

/*
 * Append the gpufleet_console_* families of @s at @now (epoch seconds) to
 * @out: only the nodes named in @only[0..nonly-1] when @nonly > 0; @s NULL:
 * no logger (gpufleet_console_log_up 0, no node). A logger that ended or
 * whose state is older than GF_CONSTATE_STALE_S is down: its nodes are
 * "stopped". Names: gpufleet-metrics(1).
 */
void gf_constate_prom(const struct gf_constate *s, double now, const char *const *only,
		      size_t nonly, struct gf_buf *out);

#endif
