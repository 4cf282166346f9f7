#include "lib/file.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"

/* The folder of @path ("." when it has none); caller frees. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	struct gf_buf b = GF_BUF_INIT;

	if (!slash)
		gf_buf_adds(&b, ".");
	else if (slash == path)
		gf_buf_adds(&b, "/");
	else
		gf_buf_add(&b, path, (size_t)(slash - path));
	return gf_buf_detach(&b);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int gf_file_replace(const char *path, const char *data, size_t len, struct gf_err *err)
{
	struct gf_buf tmp = GF_BUF_INIT;
	char *dir = dir_of(path);
	const char *slash = strrchr(path, '/');
	int fd, dfd, rc = 0;

	/* A dot name: the textfile collector reads only *.prom, so it never opens this one. */
	gf_buf_addf(&tmp, "%s/.%s.XXXXXX", dir, slash ? slash + 1 : path);
	fd = mkstemp(tmp.s);
	if (fd < 0) {
		rc = gf_err_set(err, GF_E_IO, GF_EK_NONE, "cannot write '%s' (%s)", path,
				strerror(errno));
		goto out;
	}
	if (fchmod(fd, 0644) < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		rc = gf_err_set(err, GF_E_IO, GF_EK_NONE, "cannot write '%s' (%s)", path,
				strerror(errno));
		close(fd);
		unlink(tmp.s);
		goto out;
	}
	if (close(fd) < 0 || rename(tmp.s, path) < 0) {
		rc = gf_err_set(err, GF_E_IO, GF_EK_NONE, "cannot write '%s' (%s)", path,
				strerror(errno));
		unlink(tmp.s);
		goto out;
	}
	/* The rename itself survives a crash once the folder is on disk. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
out:
	gf_buf_release(&tmp);
	free(dir);
	return rc;
}

int gf_file_read(const char *path, size_t max, unsigned flags, char **ret, size_t *ret_len,
		 struct gf_err *err)
{
	bool is_stdin = (flags & GF_FILE_DASH_STDIN) && strcmp(path, "-") == 0;
	FILE *f = is_stdin ? stdin : fopen(path, "r");
	struct gf_buf b = GF_BUF_INIT;
	char chunk[8192];
	size_t got;
	int rc = 0, e = 0;

	if (!f) {
		e = errno;
		goto out;
	}
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (got > max - b.len) {
			rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "'%s' is larger than %zu MiB",
					path, max >> 20);
			goto out;
		}
		gf_buf_add(&b, chunk, got);
	}
	if (ferror(f))
		e = errno ? errno : EIO;
out:
	if (e) {
		rc = gf_err_set(err, GF_E_USAGE, GF_EK_NONE, "cannot read '%s' (%s)", path,
				strerror(e));
		if (err)
			err->detail = e;
	}
	if (f && !is_stdin)
		fclose(f);
	if (rc < 0) {
		gf_buf_release(&b);
		return rc;
	}
	*ret_len = b.len;
	*ret = gf_buf_detach(&b);
	return 0;
}
