/*
 * A temporary folder for one test file (`dir`), made by tmpdir_setup() and
 * removed, files and all, by tmpdir_teardown(): cmocka's group setup and
 * teardown. Included by one test file each: its names are static.
 */
#ifndef GF_TEST_TMPDIR_H
#define GF_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

#ifndef TMPDIR_PREFIX
#error "define TMPDIR_PREFIX (\"/tmp/gf-NAME-\") before including tmpdir.h"
#endif

static char dir[64];

static int tmpdir_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%sXXXXXX", TMPDIR_PREFIX);
	return mkdtemp(dir) ? 0 : -1;
}

static int tmpdir_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
