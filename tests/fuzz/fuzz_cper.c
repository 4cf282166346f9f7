/*
 * libFuzzer target for the CPER decoder (lib/cper.c): whatever the bytes,
 * it reads only inside them, and its output stays within its caps. The same
 * bytes are also tried as a LogEntry's base64 DiagnosticData.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cper.h"
#include "tests/fuzz/worker.h"

static void check(json_t *o)
{
	json_t *secs = json_object_get(o, "sections");
	char *text;

	if (!json_is_array(secs) || json_array_size(secs) > GF_CPER_MAX_SECTIONS)
		abort();
	for (size_t i = 0; i < json_array_size(secs); i++) {
		json_t *ctxs = json_object_get(json_array_get(secs, i), "contexts");

		if (ctxs && json_array_size(ctxs) > GF_CPER_MAX_CONTEXTS)
			abort();
	}
	text = json_dumps(o, JSON_COMPACT);
	if (!text)
		abort(); /* every string made is valid UTF-8 */
	free(text);
}

static void fuzz_input(const uint8_t *data, size_t size)
{
	struct gf_err err = {0};
	json_t *o = NULL;
	char *s;

	if (gf_cper_decode(data, size, &o, &err) == 0) {
		check(o);
		json_decref(o);
	} else if (o || !err.msg[0]) {
		abort();
	}
	s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	o = NULL;
	if (gf_cper_decode_base64(s, &o, &err) == 0) {
		check(o);
		json_decref(o);
	}
	free(s);
}
