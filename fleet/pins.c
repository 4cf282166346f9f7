#include "fleet/pins.h"

#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"

void gf_pins_release(struct gf_pins *p)
{
	for (size_t i = 0; p->pin && i < p->n; i++)
		free(p->pin[i]);
	for (size_t i = 0; p->other && i < p->n; i++)
		free(p->other[i]);
	free(p->other);
	free(p->pin);
	free(p->pin_new);
	free(p->seen);
	*p = (struct gf_pins){0};
}

int gf_pins_load(struct gf_db *db, const struct gf_node *nodes,
		 const struct gf_profile *const *profs, size_t n, bool pin_new,
		 bool (*want)(const struct gf_node *n), struct gf_pins *ret, struct gf_err *err)
{
	struct gf_pins p = {.n = n};
	size_t cap = n ? n : 1;

	p.pin = gf_xcalloc(cap, sizeof(*p.pin));
	p.pin_new = gf_xcalloc(cap, sizeof(*p.pin_new));
	p.seen = gf_xcalloc(cap, sizeof(*p.seen));
	for (size_t i = 0; i < n; i++) {
		int rc;

		p.pin_new[i] = pin_new || (profs && profs[i] && profs[i]->redfish_tls_pin_new);
		if (want && !want(&nodes[i]))
			continue;
		rc = gf_db_tls_pin_get(db, nodes[i].name, &p.pin[i], err);
		if (rc < 0) {
			gf_pins_release(&p);
			return rc;
		}
	}
	*ret = p;
	return 0;
}

bool gf_pins_first_use(const struct gf_pins *p, size_t i)
{
	return p->pin_new[i] && !p->pin[i] && p->seen[i][0];
}

const char *gf_pins_expected(const struct gf_pins *p, size_t i)
{
	if (p->pin[i])
		return p->pin[i];
	return p->pin_new[i] && p->seen[i][0] ? p->seen[i] : NULL;
}

/* Write the pins of the nodes @pick says: seen[i], or none when it is "". */
static int store(struct gf_db *db, const struct gf_node *nodes, const struct gf_pins *p,
		 bool (*pick)(const struct gf_pins *p, size_t i, const bool *which),
		 const bool *which,
		 int (*put)(struct gf_db *db, const char *const *nodes, const char *const *fps,
			    size_t n, struct gf_err *err),
		 struct gf_err *err)
{
	const char **names = gf_xcalloc(p->n ? p->n : 1, sizeof(*names));
	const char **fps = gf_xcalloc(p->n ? p->n : 1, sizeof(*fps));
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (!pick(p, i, which))
			continue;
		names[k] = nodes[i].name;
		fps[k++] = p->seen[i][0] ? p->seen[i] : NULL;
	}
	if (k)
		rc = put(db, names, fps, k, err);
	free(names);
	free(fps);
	return rc;
}

static bool pick_first_use(const struct gf_pins *p, size_t i, const bool *which)
{
	(void)which;
	return gf_pins_first_use(p, i);
}

static bool pick_which(const struct gf_pins *p, size_t i, const bool *which)
{
	(void)p;
	return which[i];
}

int gf_pins_store_first_use(struct gf_db *db, const struct gf_node *nodes, struct gf_pins *p,
			    struct gf_err *err)
{
	int rc = store(db, nodes, p, pick_first_use, NULL, gf_db_tls_pin_add, err);

	/* Read back: a concurrent first use may have pinned another certificate first. */
	if (rc == 0 && !p->other)
		p->other = gf_xcalloc(p->n ? p->n : 1, sizeof(*p->other));
	for (size_t i = 0; rc == 0 && i < p->n; i++) {
		char *now = NULL;

		if (!gf_pins_first_use(p, i))
			continue;
		rc = gf_db_tls_pin_get(db, nodes[i].name, &now, err);
		if (rc == 0 && now && strcmp(now, p->seen[i]) != 0)
			p->other[i] = now;
		else
			free(now);
	}
	return rc;
}

int gf_pins_replace(struct gf_db *db, const struct gf_node *nodes, const struct gf_pins *p,
		    const bool *which, struct gf_err *err)
{
	return store(db, nodes, p, pick_which, which, gf_db_tls_pin_set, err);
}
