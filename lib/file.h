/*
 * Whole files: read with a cap, and written so that a reader sees the old
 * content or the new, never part of it.
 */
#ifndef GF_FILE_H
#define GF_FILE_H

#include <stddef.h>

#include "lib/err.h"

/*
 * Replace @path with the @len bytes of @data, mode 0644: a temporary file in
 * the same folder (so that rename(2) stays on one file system), written,
 * fsync'ed and renamed over @path, then the folder fsync'ed. A reader that
 * opens @path at any moment gets the old file or the new one whole (what
 * node_exporter's textfile collector needs). On failure @path is left as it
 * was and the temporary file is removed. GF_E_IO naming the path and cause.
 * Thread-safe.
 */
int gf_file_replace(const char *path, const char *data, size_t len, struct gf_err *err);

/* gf_file_read(): "-" is standard input. */
#define GF_FILE_DASH_STDIN 1u

/*
 * Read all of @path (with GF_FILE_DASH_STDIN in @flags, "-" is standard
 * input) into a new NUL-terminated string (caller frees) and its length (the
 * text may hold NULs), at most @max bytes. The path is the user's, so
 * failures are GF_E_USAGE: "cannot read '<path>' (<cause>)" with err->detail
 * the errno, or "'<path>' is larger than <max> MiB" (@max a whole number of
 * MiB) with err->detail 0. *ret and *ret_len are set only on success.
 * Thread-safe, standard input aside.
 */
int gf_file_read(const char *path, size_t max, unsigned flags, char **ret, size_t *ret_len,
		 struct gf_err *err);

#endif
