/*
 * sidmap.c - string id -> index maps of the event store (see sidmap.h).
 */
#include "analysis/sidmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

#define SID_MAX (1u << 22)

void apx_sidmap_put(struct apx_sidmap *m, uint64_t id, uint32_t index)
{
	if (id >= SID_MAX)
		return;
	if (id >= m->cap) {
		size_t cap = m->cap ? m->cap : 1024, old = m->cap;
		uint32_t *t;

		while (cap <= id)
			cap *= 2;
		t = realloc(m->map, cap * sizeof(*t));
		if (!t)
			return;
		memset(t + old, 0, (cap - old) * sizeof(*t));
		m->map = t;
		m->cap = cap;
	}
	m->map[id] = index + 1;
}

void apx_sidmap_clear(struct apx_sidmap *m)
{
	if (m->map)
		memset(m->map, 0, m->cap * sizeof(*m->map));
}

void apx_sidmap_free(struct apx_sidmap *m)
{
	free(m->map);
	m->map = NULL;
	m->cap = 0;
}
