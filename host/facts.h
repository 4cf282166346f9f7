/*
 * The facts documents: a node's hardware (what its BMC reports, lib/model.h)
 * and its host facts (host/hostfacts.h) as JSON, written and read back in
 * this one file. The store keeps them, records of export and import carry
 * them, `hardware` and `host` print them. No I/O here; thread-safe.
 */
#ifndef GF_HOST_FACTS_H
#define GF_HOST_FACTS_H

#include <jansson.h>

#include "host/hostfacts.h"
#include "lib/err.h"
#include "lib/model.h"

/*
 * The documented object: {"system":{..},"chassis":{..},"board":{..},
 * "product":{..},"cpus":[..],"memory_gib","gpus":[{"index","model","serial",
 * "firmware"}]}. New reference.
 */
json_t *gf_hardware_to_json(const struct gf_hardware *h);
/*
 * The documented object: {"driver","driver_module","cuda_driver",
 * "cuda_toolkit","kernel","os","fabricmanager","ofed","driver_library","gpus":[...],
 * "health":{"state","xid":{...}},"notes":[..],"failed":[{"command","message"}]}.
 * New reference.
 */
json_t *gf_hostfacts_to_json(const struct gf_hostfacts *f);

/*
 * The documents read back, typed: the inverse of gf_hardware_to_json() and
 * gf_hostfacts_to_json(). An absent or null member
 * is not known; one of the wrong type is GF_E_USAGE naming @node and the
 * member ("node 'n1': host.gpus[].serial must be a string or null"), and then
 * *@ret is untouched. Members these shapes do not have are ignored.
 */
int gf_hardware_from_json(json_t *obj, const char *node, struct gf_hardware *ret,
			  struct gf_err *err);
int gf_hostfacts_from_json(json_t *obj, const char *node, struct gf_hostfacts *ret,
			   struct gf_err *err);
/* Their text as the store keeps it (compact, keys sorted); NULL for NULL. Caller frees. */
char *gf_hardware_text(const struct gf_hardware *h);
char *gf_hostfacts_text(const struct gf_hostfacts *f);

#endif
