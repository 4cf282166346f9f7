/*
 * The escapes of an interactive console, as ssh(1) reads them: the escape
 * character (default '~') is special only at the start of a line (the first
 * byte typed, or the one after a CR or LF). There, the next byte says what to
 * do: '.' end the session, 'B' send a break, '?' list the escapes, the escape
 * character again sends one literal escape character; anything else sends the
 * escape character and that byte, as typed. Protocol-free: the caller sends
 * the bytes and does the actions.
 */
#ifndef GF_ESCAPE_H
#define GF_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

enum gf_escape_action {
	GF_ESC_NONE = 0,
	GF_ESC_END,   /* "~." */
	GF_ESC_BREAK, /* "~B" */
	GF_ESC_HELP,  /* "~?" */
};

struct gf_escape {
	unsigned char ch; /* the escape character */
	bool line_start;  /* the next byte starts a line */
	bool pending;     /* the escape character was typed at a line start */
};

/* A new state with @ch as the escape character, at the start of a line. */
void gf_escape_init(struct gf_escape *e, unsigned char ch);

/*
 * One byte typed, @c: the bytes to send to the node go in @out (0, 1 or 2 of
 * them, *@nout says how many); returns the action to take after sending them.
 */
enum gf_escape_action gf_escape_byte(struct gf_escape *e, unsigned char c, unsigned char out[2],
				     size_t *nout);

/*
 * The escape character of --escape: one printable ASCII byte other than a
 * blank, or "^X" for a control character, or "none" (*ret = 0: no escapes).
 * Returns 0, or -1 when @s is none of these.
 */
int gf_escape_parse(const char *s, unsigned char *ret);

#endif
