#include "lib/file.h"

#include <errno.h>
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
