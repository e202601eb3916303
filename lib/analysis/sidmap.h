/*
 * sidmap.h - a map from a trace file's string ids (small, dense integers) to an index of the
 * reader's own (a name of the event store), so that a kernel name repeated millions of times
 * is interned once per file. Used by store.c (the event store, which apx report's model and
 * the exporters read); single-threaded.
 */
#ifndef APX_ANALYSIS_SIDMAP_H
#define APX_ANALYSIS_SIDMAP_H

#include <stddef.h>
#include <stdint.h>

struct apx_sidmap {
	uint32_t *map;			/* id -> index + 1, 0 = not known */
	size_t cap;
};

/* 1 with *ret_index when id is known, else 0. */
static inline int apx_sidmap_get(const struct apx_sidmap *m, uint64_t id, uint32_t *ret_index)
{
	if (id >= m->cap || !m->map[id])
		return 0;
	*ret_index = m->map[id] - 1;
	return 1;
}

/* Remember index for id. Ids past 2^22 and a failed allocation are not remembered (the
 * caller then interns again next time): never an error. */
void apx_sidmap_put(struct apx_sidmap *m, uint64_t id, uint32_t index);
void apx_sidmap_clear(struct apx_sidmap *m);	/* forget everything, keep the memory */
void apx_sidmap_free(struct apx_sidmap *m);

#endif
