/* Console logs (see lib/conlog.h). */
#include "lib/conlog.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/output.h"
#include "lib/util.h"

#define LINE_MAX_BYTES 4096 /* a longer line is cut and goes on in the next */
#define KEEP_MAX 99

struct gf_conlog {
	char *path; /* DIR/NODE.log */
	int fd;
	struct gf_conlog_opts o;
	unsigned long long size[KEEP_MAX + 1]; /* [0] NODE.log, [k] NODE.log.k */
	unsigned long long fed;
	struct gf_buf line; /* the partial line, raw */
	double line_t;      /* when its first byte came */
	bool cr;            /* the last byte fed was a CR */
};

static unsigned long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (unsigned long long)st.st_size : 0;
}

static char *rotated(const struct gf_conlog *l, unsigned k)
{
	char *p = NULL;

	if (k == 0)
		return strdup(l->path);
	if (asprintf(&p, "%s.%u", l->path, k) < 0)
		return NULL;
	return p;
}

static int reopen(struct gf_conlog *l, struct gf_err *err)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (l->fd < 0)
		return gf_err_set(err, GF_E_IO, GF_EK_NONE, "cannot open '%s': %s", l->path,
				  strerror(errno));
	l->size[0] = file_size(l->path);
	return 0;
}

int gf_conlog_open(const char *dir, const char *node, const struct gf_conlog_opts *o,
		   struct gf_conlog **ret, struct gf_err *err)
{
	struct gf_conlog *l;
	int rc;

	if (!*node || strchr(node, '/') || node[0] == '.')
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node name '%s' cannot be a log file name", node);
	l = calloc(1, sizeof(*l));
	if (!l || asprintf(&l->path, "%s/%s.log", dir, node) < 0) {
		free(l);
		return gf_err_set(err, GF_E_NOMEM, GF_EK_NONE, "out of memory");
	}
	l->fd = -1;
	l->o = *o;
	if (!l->o.max_size)
		l->o.max_size = 10ULL << 20;
	if (l->o.keep > KEEP_MAX)
		l->o.keep = KEEP_MAX;
	gf_buf_init(&l->line);
	for (unsigned k = 1; k <= l->o.keep; k++) {
		char *p = rotated(l, k);

		l->size[k] = p ? file_size(p) : 0;
		free(p);
	}
	rc = reopen(l, err);
	if (rc < 0) {
		gf_conlog_close(l);
		return rc;
	}
	*ret = l;
	return 0;
}

/* NODE.log becomes NODE.log.1, .1 .2, ...; the oldest beyond keep goes. */
static int rotate(struct gf_conlog *l, struct gf_err *err)
{
	for (unsigned k = l->o.keep; k >= 1; k--) {
		char *from = rotated(l, k - 1), *to = rotated(l, k);

		if (from && to)
			rename(from, to); /* a missing one: nothing to move */
		free(from);
		free(to);
		l->size[k] = l->size[k - 1];
	}
	if (!l->o.keep && ftruncate(l->fd, 0) < 0)
		return gf_err_set(err, GF_E_IO, GF_EK_NONE, "cannot truncate '%s': %s", l->path,
				  strerror(errno));
	l->size[0] = 0;
	return reopen(l, err);
}

static int put(struct gf_conlog *l, const char *s, size_t n, struct gf_err *err)
{
	if (l->size[0] && l->size[0] + n > l->o.max_size) {
		int rc = rotate(l, err);

		if (rc < 0)
			return rc;
	}
	while (n) {
		ssize_t k = write(l->fd, s, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return gf_err_set(err, GF_E_IO, GF_EK_NONE, "cannot write '%s': %s",
					  l->path, k < 0 ? strerror(errno) : "short write");
		s += k;
		n -= (size_t)k;
		l->size[0] += (unsigned long long)k;
	}
	return 0;
}

/* The held line, stamped and escaped, as one write. */
static int flush_line(struct gf_conlog *l, struct gf_err *err)
{
	struct gf_buf out = GF_BUF_INIT;
	char ts[40];
	size_t i = 0;
	int rc;

	gf_time_format(l->line_t, ts, sizeof(ts));
	gf_buf_addf(&out, "%s ", ts);
	/* gf_term_escape() stops at a NUL: the pieces between them, each NUL shown. */
	while (i < l->line.len) {
		size_t len = strlen(l->line.s + i);

		gf_term_escape(&out, l->line.s + i, "\t");
		i += len;
		if (i < l->line.len) {
			gf_buf_adds(&out, "\\x00");
			i++;
		}
	}
	gf_buf_addc(&out, '\n');
	rc = put(l, out.s, out.len, err);
	gf_buf_release(&out);
	gf_buf_reset(&l->line);
	return rc;
}

int gf_conlog_data(struct gf_conlog *l, const void *buf, size_t n, double now, struct gf_err *err)
{
	const unsigned char *p = buf;

	l->fed += n;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		bool cr = l->cr;

		l->cr = c == '\r';
		if (c == '\r')
			continue; /* held: dropped before LF, kept before anything else */
		if (cr && c != '\n') {
			if (!l->line.len)
				l->line_t = now;
			gf_buf_addc(&l->line, '\r');
		}
		if (c == '\n') {
			if (!l->line.len)
				l->line_t = now;
			if (flush_line(l, err) < 0)
				return GF_E_IO;
			continue;
		}
		if (!l->line.len)
			l->line_t = now;
		gf_buf_add(&l->line, (const char *)&c, 1);
		if (l->line.len >= LINE_MAX_BYTES && flush_line(l, err) < 0)
			return GF_E_IO;
	}
	return 0;
}

int gf_conlog_marker(struct gf_conlog *l, double now, const char *text, struct gf_err *err)
{
	char ts[40];
	struct gf_buf out = GF_BUF_INIT;
	int rc;

	if (l->line.len && flush_line(l, err) < 0)
		return GF_E_IO;
	l->cr = false;
	gf_time_format(now, ts, sizeof(ts));
	gf_buf_addf(&out, "%s -- ", ts);
	gf_term_escape(&out, text, "");
	gf_buf_addc(&out, '\n');
	rc = put(l, out.s, out.len, err);
	gf_buf_release(&out);
	return rc;
}

unsigned long long gf_conlog_fed(const struct gf_conlog *l)
{
	return l->fed;
}

unsigned long long gf_conlog_disk(const struct gf_conlog *l)
{
	unsigned long long t = 0;

	for (unsigned k = 0; k <= l->o.keep; k++)
		t += l->size[k];
	return t;
}

/* Remove @l's oldest rotated file; false when it has none. */
static bool drop_oldest(struct gf_conlog *l)
{
	for (unsigned k = l->o.keep; k >= 1; k--) {
		if (l->size[k]) {
			char *p = rotated(l, k);

			if (p)
				unlink(p);
			free(p);
			l->size[k] = 0;
			return true;
		}
	}
	return false;
}

void gf_conlog_total_cap(struct gf_conlog *const *v, size_t n, unsigned long long cap)
{
	for (;;) {
		unsigned long long total = 0, most = 0;
		struct gf_conlog *big = NULL;

		for (size_t i = 0; i < n; i++) {
			unsigned long long d = v[i] ? gf_conlog_disk(v[i]) : 0;

			total += d;
			if (d > most) {
				most = d;
				big = v[i];
			}
		}
		if (total <= cap || !big)
			return;
		if (drop_oldest(big))
			continue;
		if (!big->size[0])
			return;
		/* Only its current file: rotated away (with keep 0, emptied). */
		if (big->o.keep ? rotate(big, NULL) < 0 || !drop_oldest(big)
				: rotate(big, NULL) < 0)
			return;
	}
}

void gf_conlog_close(struct gf_conlog *l)
{
	if (!l)
		return;
	if (l->line.len && l->fd >= 0)
		flush_line(l, NULL);
	if (l->fd >= 0)
		close(l->fd);
	gf_buf_release(&l->line);
	free(l->path);
	free(l);
}

int gf_conlog_parse_size(const char *s, unsigned long long min, unsigned long long max,
			 unsigned long long *ret)
{
	unsigned long long v = 0, mul = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9') {
		if (v > (~0ULL - 9) / 10)
			return -1;
		v = v * 10 + (unsigned long long)(*p++ - '0');
	}
	switch (*p) {
	case 0: break;
	case 'K':
	case 'k':
		mul = 1ULL << 10;
		p++;
		break;
	case 'M':
	case 'm':
		mul = 1ULL << 20;
		p++;
		break;
	case 'G':
	case 'g':
		mul = 1ULL << 30;
		p++;
		break;
	default: return -1;
	}
	if (*p || (v && mul > ~0ULL / v) || v * mul < min || v * mul > max)
		return -1;
	*ret = v * mul;
	return 0;
}

/* One file's lines to @fn. */
static int read_file(const char *path, int (*fn)(void *ud, double t, const char *text), void *ud,
		     struct gf_err *err)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0;

	if (!f)
		return errno == ENOENT ? 0
				       : gf_err_set(err, GF_E_IO, GF_EK_NONE,
						    "cannot read '%s': %s", path, strerror(errno));
	while (!rc && (len = getline(&line, &cap, f)) >= 0) {
		char *sp = strchr(line, ' ');
		double t = NAN;
		const char *text = line;

		if (len && line[len - 1] == '\n')
			line[len - 1] = 0;
		if (sp) {
			*sp = 0;
			if (gf_time_parse_iso8601(line, &t) == 0)
				text = sp + 1;
			else
				*sp = ' ';
		}
		rc = fn(ud, t, text);
	}
	free(line);
	fclose(f);
	return rc;
}

int gf_conlog_read(const char *dir, const char *node,
		   int (*fn)(void *ud, double t, const char *text), void *ud, struct gf_err *err)
{
	char *base = NULL;
	int rc = 0;

	if (!*node || strchr(node, '/') || node[0] == '.')
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node name '%s' cannot be a log file name", node);
	if (asprintf(&base, "%s/%s.log", dir, node) < 0)
		return gf_err_set(err, GF_E_NOMEM, GF_EK_NONE, "out of memory");
	for (int k = KEEP_MAX; !rc && k >= 0; k--) {
		char *p = NULL;

		if (k == 0)
			p = strdup(base);
		else if (asprintf(&p, "%s.%d", base, k) < 0)
			p = NULL;
		if (!p) {
			rc = gf_err_set(err, GF_E_NOMEM, GF_EK_NONE, "out of memory");
			break;
		}
		rc = read_file(p, fn, ud, err);
		free(p);
	}
	free(base);
	return rc;
}
