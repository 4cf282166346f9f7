/*
 * For unit tests that need a node's hardware and host facts: give @n the
 * facts of their record JSON (the codec's form), as a sweep loaded from the
 * store would have them. Include after cmocka.h.
 */
#ifndef GF_TEST_SWEEP_FACTS_H
#define GF_TEST_SWEEP_FACTS_H

#include <jansson.h>

#include "host/facts.h"
#include "inventory/codec.h"
#include "inventory/sweep.h"

static void facts(struct gf_sweep_node *n, const char *hw, const char *host)
{
	json_t *hj = json_loads(hw, 0, NULL), *fj = json_loads(host, 0, NULL);
	struct gf_hardware h;
	struct gf_hostfacts f;

	assert_int_equal(gf_hardware_from_json(hj, n->node, &h, NULL), 0);
	assert_int_equal(gf_hostfacts_from_json(fj, n->node, &f, NULL), 0);
	gf_sweep_node_take_hardware(n, &h);
	gf_sweep_node_take_host(n, &f);
	json_decref(hj);
	json_decref(fj);
}

#endif
