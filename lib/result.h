/* The per-node result slot that a worker fills and the main thread reads. */
#ifndef GF_RESULT_H
#define GF_RESULT_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/err.h"

struct gf_result {
	bool ok;
	struct gf_err err; /* when !ok: kind and message */
	json_t *data;      /* owned: verb members ("power":"on", ...), may be NULL */
	double t_start;    /* wall clock (epoch seconds) the first attempt started */
	double t_end;      /* wall clock it finished */
	unsigned attempts;
	bool no_retry; /* the action reached the peer: never repeat it */
};

void gf_result_init(struct gf_result *r);
void gf_result_release(struct gf_result *r);
/* Mark failed with @e (copied); keeps data. */
void gf_result_fail(struct gf_result *r, const struct gf_err *e);

/*
 * The documented per-node JSON object: {"node":..,"bmc":..,"protocol":..,"ok":..,
 * then the data members, then "error":{"kind","message"} when !ok}. @bmc and
 * @protocol may be NULL (left out). New reference.
 */
json_t *gf_result_to_json(const char *node, const char *bmc, const char *protocol,
			  const struct gf_result *r);

#endif
