/*
 * store_stacks.c - the event store's Python stacks (store.h): FRAME records become frames
 * (their file and function names interned as store strings), STACK records lists of frames,
 * and once every file is read the stacks' frame ids and the stack fields of kernels, copies,
 * memsets, syncs and samples are resolved through per-file id maps (ids are per trace file).
 * The lists come from the traced process: a list that does not decode, is deeper than
 * APX_STACK_DEPTH_MAX, names a frame no record defines, or an id given twice is dropped and
 * counted in st->stack_loss, never trusted. Called by store.c (apx_store_build), which reads
 * the files; single-threaded. apx_store_stack_of() resolves an id of a record the store keeps
 * no column for (apx report's allocations, allocs.c) through the same map, after the build.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/store_priv.h"

#include "base/banned.h"

/* A frame or stack id a record may define: 1 .. 2^32 - 2 (0 is "none"; 2^32 - 1 stands for
 * an event's id past 32 bits, store.c). */
static int id_ok(uint64_t id)
{
	return id && id < UINT32_MAX;
}

static int idmap_add(struct apx_es_idmap **a, size_t *n, size_t *cap, uint16_t fi, uint32_t id,
		     uint32_t index)
{
	int e = apx_es_grow((void **)a, sizeof(**a), *n + 1, cap);

	if (e < 0)
		return e;
	(*a)[*n] = (struct apx_es_idmap){ id, index, (uint32_t)*n, fi };
	(*n)++;
	return 0;
}

int apx_es_add_frame(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_priv *pv = st->priv;
	const uint64_t *v = r->v;
	struct apx_es_frame f = { 0 };
	int e;

	if (!id_ok(v[APX_FRAME_ID]) || st->nframes >= UINT32_MAX - 1) {
		st->stack_loss.bad_id++;
		return 0;
	}
	if ((e = apx_es_intern_id(st, fi, v[APX_FRAME_FILE], &f.file)) < 0 ||
	    (e = apx_es_intern_id(st, fi, v[APX_FRAME_FUNC], &f.func)) < 0)
		return e;
	f.line = v[APX_FRAME_LINE] < UINT32_MAX ? (uint32_t)v[APX_FRAME_LINE] : 0;
	f.first_line = v[APX_FRAME_FIRST_LINE] < UINT32_MAX ? (uint32_t)v[APX_FRAME_FIRST_LINE] : 0;
	f.address = v[APX_FRAME_ADDRESS];
	f.src = fi;
	f.kind = v[APX_FRAME_KIND] == APX_FRAME_PYTHON || v[APX_FRAME_KIND] == APX_FRAME_NATIVE
		 ? (uint8_t)v[APX_FRAME_KIND] : 0;
	if ((e = apx_es_grow((void **)&st->frames, sizeof(*st->frames), st->nframes + 1,
			     &pv->frames_cap)) < 0 ||
	    (e = idmap_add(&pv->frame_ids, &pv->nframe_ids, &pv->frame_ids_cap, fi,
			   (uint32_t)v[APX_FRAME_ID], (uint32_t)st->nframes)) < 0)
		return e;
	st->frames[st->nframes++] = f;
	return 0;
}

/* Decode a list of LEB128 varints into out (at most max + 1 of them, so that a list that is
 * too long is seen): the count, -EBADMSG when a value is cut off or passes 64 bits. */
static int varints(const uint8_t *p, size_t len, uint64_t *out, size_t max)
{
	size_t n = 0, i = 0;

	while (i < len) {
		uint64_t val = 0;
		unsigned shift = 0;

		for (;;) {
			uint8_t b;

			if (i >= len)
				return -EBADMSG;	/* the last value's continuation bit set */
			b = p[i++];
			if (shift == 63 && (b & 0x7e))
				return -EBADMSG;	/* past 64 bits */
			val |= (uint64_t)(b & 0x7f) << shift;
			if (!(b & 0x80))
				break;
			shift += 7;
			if (shift > 63)
				return -EBADMSG;
		}
		if (n > max)
			return (int)n;
		out[n++] = val;
	}
	return (int)n;
}

int apx_es_add_stack(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_priv *pv = st->priv;
	uint64_t ids[APX_STACK_DEPTH_MAX + 2];
	const uint8_t *p = (r->present >> APX_STACK_FRAMES & 1) ? r->bytes[APX_STACK_FRAMES] : NULL;
	size_t len = p ? r->v[APX_STACK_FRAMES] : 0;
	int n, e;

	if (!id_ok(r->v[APX_STACK_ID])) {
		st->stack_loss.bad_id++;
		return 0;
	}
	n = varints(p, len, ids, APX_STACK_DEPTH_MAX);
	if (n < 0) {
		st->stack_loss.bad_list++;
		return 0;
	}
	if (n > APX_STACK_DEPTH_MAX) {
		st->stack_loss.too_deep++;
		return 0;
	}
	if ((e = apx_es_grow((void **)&pv->raw_frames, sizeof(*pv->raw_frames),
			     pv->nraw_frames + (size_t)n, &pv->raw_frames_cap)) < 0 ||
	    (e = apx_es_grow((void **)&pv->raw_stacks, sizeof(*pv->raw_stacks),
			     pv->nraw_stacks + 1, &pv->raw_stacks_cap)) < 0)
		return e;
	pv->raw_stacks[pv->nraw_stacks++] = (struct apx_es_raw_stack){
		(uint32_t)r->v[APX_STACK_ID], (uint32_t)pv->nraw_frames, (uint16_t)n, fi,
		(uint8_t)(r->v[APX_STACK_TRUNCATED] != 0) };
	for (int i = 0; i < n; i++)	/* an id past 32 bits never resolves */
		pv->raw_frames[pv->nraw_frames++] = ids[i] < UINT32_MAX ? (uint32_t)ids[i] : 0;
	return 0;
}

static int cmp_idmap(const void *a, const void *b)
{
	const struct apx_es_idmap *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort a map by (file, id) and keep the first record of each id; the count of the others. */
static uint64_t idmap_sort(struct apx_es_idmap *a, size_t *n)
{
	size_t k = 0;
	uint64_t dups = 0;

	if (*n > 1)
		qsort(a, *n, sizeof(*a), cmp_idmap);
	for (size_t i = 0; i < *n; i++) {
		if (k && a[k - 1].file == a[i].file && a[k - 1].id == a[i].id) {
			dups++;
			continue;
		}
		a[k++] = a[i];
	}
	*n = k;
	return dups;
}

/* The index an id of file fi maps to, or UINT32_MAX. */
static uint32_t idmap_find(const struct apx_es_idmap *a, size_t n, uint16_t fi, uint32_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].file < fi || (a[mid].file == fi && a[mid].id < id))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && a[lo].file == fi && a[lo].id == id ? a[lo].index : UINT32_MAX;
}

/* The raw stacks whose every frame resolves become the store's stacks. */
static int build_stacks(struct apx_store *st)
{
	struct apx_es_priv *pv = st->priv;
	int e;

	for (size_t i = 0; i < pv->nraw_stacks; i++) {
		const struct apx_es_raw_stack *rs = &pv->raw_stacks[i];
		size_t base = st->nstack_frames;
		int ok = 1;

		if (st->nstacks >= UINT32_MAX - 1)
			break;
		if ((e = apx_es_grow((void **)&st->stack_frames, sizeof(*st->stack_frames),
				     base + rs->depth + 1, &pv->stack_frames_cap)) < 0)
			return e;
		for (uint16_t j = 0; j < rs->depth && ok; j++) {
			uint32_t f = idmap_find(pv->frame_ids, pv->nframe_ids, rs->file,
						pv->raw_frames[rs->first + j]);

			ok = f != UINT32_MAX;
			st->stack_frames[base + j] = f;
		}
		if (!ok) {
			st->stack_loss.undefined_frame++;
			continue;
		}
		if ((e = apx_es_grow((void **)&st->stacks, sizeof(*st->stacks), st->nstacks + 1,
				     &pv->stacks_cap)) < 0 ||
		    (e = idmap_add(&pv->stack_ids, &pv->nstack_ids, &pv->stack_ids_cap, rs->file,
				   rs->id, (uint32_t)st->nstacks)) < 0)
			return e;
		st->stacks[st->nstacks++] = (struct apx_es_stack){ (uint32_t)base, rs->depth,
			rs->file, rs->truncated };
		st->nstack_frames = base + rs->depth;
	}
	return 0;
}

/* An event's stack field: the raw id of its file -> stacks[] + 1 (0 none). */
static uint32_t resolve_one(struct apx_store *st, uint16_t fi, uint32_t raw)
{
	const struct apx_es_priv *pv = st->priv;
	uint32_t s;

	if (!raw)
		return 0;
	s = idmap_find(pv->stack_ids, pv->nstack_ids, fi, raw);
	if (s == UINT32_MAX) {
		st->stack_loss.undefined_stack++;
		return 0;
	}
	return s + 1;
}

/* The loading scratch; the stack map stays (apx_store_stack_of) until the store is freed. */
static void free_scratch(struct apx_es_priv *pv)
{
	free(pv->frame_ids);
	free(pv->raw_stacks);
	free(pv->raw_frames);
	pv->frame_ids = NULL;
	pv->raw_stacks = NULL;
	pv->raw_frames = NULL;
	pv->nframe_ids = pv->nraw_stacks = pv->nraw_frames = 0;
	pv->frame_ids_cap = pv->raw_stacks_cap = pv->raw_frames_cap = 0;
}

uint32_t apx_store_stack_of(const struct apx_store *st, uint16_t file, uint64_t raw)
{
	const struct apx_es_priv *pv = st->priv;
	uint32_t s;

	if (!raw || raw >= UINT32_MAX || !pv || !pv->stack_ids)
		return 0;
	s = idmap_find(pv->stack_ids, pv->nstack_ids, file, (uint32_t)raw);
	return s == UINT32_MAX ? 0 : s + 1;
}

int apx_es_resolve_stacks(struct apx_store *st)
{
	struct apx_es_priv *pv = st->priv;
	int e;

	st->stack_loss.dup_frame += idmap_sort(pv->frame_ids, &pv->nframe_ids);
	if ((e = build_stacks(st)) < 0)
		return e;
	st->stack_loss.dup_stack += idmap_sort(pv->stack_ids, &pv->nstack_ids);
	for (size_t i = 0; i < st->k.n; i++)
		st->k.stack[i] = resolve_one(st, st->streams[st->k.stream[i]].file, st->k.stack[i]);
	for (size_t i = 0; i < st->c.n; i++)
		st->c.stack[i] = resolve_one(st, st->streams[st->c.stream[i]].file, st->c.stack[i]);
	for (size_t i = 0; i < st->s.n; i++)
		st->s.stack[i] = resolve_one(st, st->streams[st->s.stream[i]].file, st->s.stack[i]);
	for (size_t i = 0; i < st->y.n; i++)
		st->y.stack[i] = resolve_one(st, st->threads[st->y.thread[i]].file, st->y.stack[i]);
	for (size_t i = 0; i < st->a.n; i++)
		st->a.stack[i] = resolve_one(st, st->threads[st->a.thread[i]].file, st->a.stack[i]);
	for (size_t i = 0; i < st->smp.n; i++)
		st->smp.stack[i] = resolve_one(st, st->threads[st->smp.thread[i]].file,
					       st->smp.stack[i]);
	free_scratch(pv);
	return 0;
}

void apx_es_free_stacks(struct apx_store *st)
{
	free(st->frames);
	free(st->stacks);
	free(st->stack_frames);
	if (st->priv) {
		struct apx_es_priv *pv = st->priv;

		free_scratch(pv);
		free(pv->stack_ids);
		pv->stack_ids = NULL;
		pv->nstack_ids = pv->stack_ids_cap = 0;
	}
}
