/* The escapes of an interactive console (see lib/escape.h). */
#include "lib/escape.h"

#include <string.h>

void gf_escape_init(struct gf_escape *e, unsigned char ch)
{
	e->ch = ch;
	e->line_start = true;
	e->pending = false;
}

enum gf_escape_action gf_escape_byte(struct gf_escape *e, unsigned char c, unsigned char out[2],
				     size_t *nout)
{
	bool eol = c == '\r' || c == '\n';

	*nout = 0;
	if (e->pending) {
		e->pending = false;
		switch (c) {
		case '.': return GF_ESC_END;
		case 'B': return GF_ESC_BREAK; /* still at the start of a line: "~B~." works */
		case '?': return GF_ESC_HELP;
		default: break;
		}
		out[(*nout)++] = e->ch;
		if (c != e->ch)
			out[(*nout)++] = c;
		e->line_start = eol;
		return GF_ESC_NONE;
	}
	if (e->ch && e->line_start && c == e->ch) {
		e->pending = true;
		return GF_ESC_NONE;
	}
	out[(*nout)++] = c;
	e->line_start = eol;
	return GF_ESC_NONE;
}

int gf_escape_parse(const char *s, unsigned char *ret)
{
	if (strcmp(s, "none") == 0) {
		*ret = 0;
		return 0;
	}
	if (s[0] == '^' && s[1] && !s[2]) {
		unsigned char c = (unsigned char)s[1];

		if (c >= 'a' && c <= 'z')
			c = (unsigned char)(c - 'a' + 'A');
		if (c < '@' || c > '_')
			return -1;
		*ret = (unsigned char)(c - '@');
		return 0;
	}
	if (s[0] > ' ' && s[0] < 0x7f && !s[1]) {
		*ret = (unsigned char)s[0];
		return 0;
	}
	return -1;
}
