#include "host/ssh2_dl.h"

#include <stddef.h>

GF_DL_DEFINE(GF_SSH2_FNS, struct gf_ssh2_api, gf_ssh2, gf_ssh2_lib, "libssh2.so.1");
