/* A growable string, always NUL terminated. */
#ifndef GF_BUF_H
#define GF_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct gf_buf {
	char *s;    /* "" until something is added; owned */
	size_t len; /* bytes before the NUL */
	size_t cap; /* allocated size */
};

#define GF_BUF_INIT        \
	{                  \
		NULL, 0, 0 \
	}

void gf_buf_init(struct gf_buf *b);
void gf_buf_release(struct gf_buf *b);
/* Zero the bytes before freeing: for buffers that held a secret. */
void gf_buf_release_secret(struct gf_buf *b);
void gf_buf_reset(struct gf_buf *b);
/* These abort() on out of memory: a CLI tool cannot do anything useful then. */
void gf_buf_add(struct gf_buf *b, const char *s, size_t n);
void gf_buf_adds(struct gf_buf *b, const char *s);
void gf_buf_addc(struct gf_buf *b, char c);
void gf_buf_addf(struct gf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a va_list (@ap is used up). */
void gf_buf_vaddf(struct gf_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* The string, never NULL. */
const char *gf_buf_str(const struct gf_buf *b);
/* Hand the string to the caller (free() it); @b is left empty. */
char *gf_buf_detach(struct gf_buf *b);

/* xmalloc-style helpers that abort() on out of memory. */
void *gf_xmalloc(size_t n);
void *gf_xcalloc(size_t n, size_t size);
void *gf_xrealloc(void *p, size_t n);
char *gf_xstrdup(const char *s);
char *gf_xstrndup(const char *s, size_t n);
/* Zero then free a NUL-terminated secret; accepts NULL. */
void gf_free_secret(char *s);
/* qsort() for every array, an empty one too (NULL with 0: qsort's may not be NULL). */
void gf_sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
