/*
 * libFuzzer target for the text/event-stream parser and the Redfish Event
 * decoder behind it (redfish/sse.c, redfish/events.c): the input is a
 * stream, fed in chunks whose size the first byte picks. Whatever it holds,
 * the parser's buffers stay within their caps and every event decodes or
 * fails with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redfish/events.h"
#include "redfish/sse.h"
#include "tests/fuzz/worker.h"

#define LINE_CAP 4096u
#define EVENT_CAP 65536u

static int on_event(void *ud, const struct gf_sse_msg *m, struct gf_err *err)
{
	struct gf_event_list l = {0};
	json_t *doc;

	if (m->data_len > EVENT_CAP || strlen(m->data) > m->data_len)
		abort();
	if (m->id && strlen(m->id) > GF_SSE_MAX_ID)
		abort();
	doc = json_loadb(m->data, m->data_len, 0, NULL);
	if (doc && gf_redfish_event_parse(doc, "n", 0, &l, err) == 0) {
		for (size_t i = 0; i < l.n; i++) {
			json_t *j = gf_event_to_json(&l.v[i]);

			if (!j)
				abort();
			json_decref(j);
		}
	}
	gf_event_list_release(&l);
	json_decref(doc);
	return 0;
}

static void fuzz_input(const uint8_t *data, size_t size)
{
	struct gf_sse_parser p;
	struct gf_err err = {0};
	size_t step;

	if (size == 0)
		return;
	step = (size_t)data[0] % 64 + 1;
	gf_sse_parser_init(&p, LINE_CAP, EVENT_CAP);
	for (size_t i = 1; i < size; i += step) {
		size_t n = size - i < step ? size - i : step;

		if (gf_sse_parser_feed(&p, (const char *)data + i, n, on_event, NULL, &err) < 0) {
			if (!err.msg[0])
				abort();
			break;
		}
		if (p.line.len > LINE_CAP || p.data.len > EVENT_CAP)
			abort();
	}
	gf_sse_parser_release(&p);
}
