#include "lib/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym() needs function pointers "
							 "the size of data pointers");

/* pthread_once() takes no argument: the library being loaded, per thread. */
static _Thread_local struct gf_dl_lib *loading;

static void load_once(void)
{
	struct gf_dl_lib *lib = loading;
	void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	const char *e;

	if (!h) {
		e = dlerror();
		snprintf(lib->why, sizeof(lib->why), "%s", e ? e : lib->soname);
		lib->rc = -1;
		return;
	}
	for (size_t i = 0; i < lib->nfns; i++) {
		void *p = dlsym(h, lib->fns[i].name);

		if (!p) {
			snprintf(lib->why, sizeof(lib->why), "%s has no %s", lib->soname,
				 lib->fns[i].name);
			lib->rc = -1;
			return; /* the handle stays open: the process ends with it */
		}
		/* POSIX: a function's address as dlsym() returns it, copied as is. */
		memcpy((char *)lib->table + lib->fns[i].offset, &p, sizeof(p));
	}
	lib->rc = 0;
}

int gf_dl_load(struct gf_dl_lib *lib, struct gf_err *err)
{
	loading = lib;
	pthread_once(&lib->once, load_once);
	loading = NULL;
	if (lib->rc < 0)
		return gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "cannot load %s (%s)", lib->soname,
				  lib->why);
	return 0;
}
