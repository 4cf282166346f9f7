#include "lib/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(void)
{
	/* Below cli/ we do not print; abort() is the only honest answer to no memory. */
	abort();
}

void *gf_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom();
	return p;
}

void *gf_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom();
	return p;
}

void gf_sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, size, cmp);
}

void *gf_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		oom();
	return q;
}

char *gf_xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		oom();
	return p;
}

char *gf_xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (!p)
		oom();
	return p;
}

void gf_free_secret(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

void gf_buf_init(struct gf_buf *b)
{
	b->s = NULL;
	b->len = 0;
	b->cap = 0;
}

void gf_buf_release(struct gf_buf *b)
{
	free(b->s);
	gf_buf_init(b);
}

void gf_buf_release_secret(struct gf_buf *b)
{
	if (b->s)
		explicit_bzero(b->s, b->cap);
	gf_buf_release(b);
}

void gf_buf_reset(struct gf_buf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
}

static void grow(struct gf_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	size_t cap;

	if (need < b->len)
		oom();
	if (need <= b->cap)
		return;
	cap = b->cap ? b->cap : 64;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			oom();
		cap *= 2;
	}
	b->s = gf_xrealloc(b->s, cap);
	b->cap = cap;
}

void gf_buf_add(struct gf_buf *b, const char *s, size_t n)
{
	grow(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void gf_buf_adds(struct gf_buf *b, const char *s)
{
	gf_buf_add(b, s, strlen(s));
}

void gf_buf_addc(struct gf_buf *b, char c)
{
	gf_buf_add(b, &c, 1);
}

void gf_buf_vaddf(struct gf_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	size_t room;
	int n;

	grow(b, 64);
	room = b->cap - b->len;
	va_copy(aq, ap);
	n = vsnprintf(b->s + b->len, room, fmt, aq);
	va_end(aq);
	if (n < 0) {
		b->s[b->len] = '\0';
		return;
	}
	if ((size_t)n >= room) {
		grow(b, (size_t)n);
		vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	}
	b->len += (size_t)n;
}

void gf_buf_addf(struct gf_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gf_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

const char *gf_buf_str(const struct gf_buf *b)
{
	return b->s ? b->s : "";
}

char *gf_buf_detach(struct gf_buf *b)
{
	char *s = b->s ? b->s : gf_xstrdup("");

	gf_buf_init(b);
	return s;
}
