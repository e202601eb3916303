/*
 * heap.c - the model's view of the host heap samples (heap.h; HEAP records written from
 * libapx-heap.so, apx analyze --heap-sampling-bytes N). Each sampled allocation of s bytes,
 * sampled with probability p = 1 - exp(-s / N), stands for 1 / p allocations and s / p bytes;
 * a FREE record is matched to the last sample at its address in the same file (record order
 * is the sampler's, in which an allocation comes before its free); a sample never freed is
 * live at the end. Sites: the sample's Python line (library frames folded, stacks.c) when it
 * has one in the program's code, else its native stack's innermost frame of the program's own
 * code, else its innermost frame that is not the allocator's; --frames all: the innermost.
 * The leak window (apx report --heap-leak FROM:TO): samples made inside it and live at its end.
 * apx_heap_add_record() is called by load.c for every HEAP record, apx_heap_build() by
 * apx_model_finish() after apx_stacks_build(); single-threaded.
 */
#include "analysis/heap.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/findings.h"
#include "analysis/stacks.h"
#include "analysis/store.h"
#include "base/hash.h"

#include "base/banned.h"

int apx_heap_add_record(struct apx_model *m, uint16_t fi, const struct apx_rec *r)
{
	const uint64_t *v = r->v;
	struct apx_an_heap_rec h = {
		.ts = v[APX_HEAP_TS_NS], .addr = v[APX_HEAP_ADDRESS], .bytes = v[APX_HEAP_BYTES],
		.interval = v[APX_HEAP_INTERVAL_BYTES],
		.stack = v[APX_HEAP_STACK] < UINT32_MAX ? (uint32_t)v[APX_HEAP_STACK] : 0,
		.nstack = v[APX_HEAP_NATIVE_STACK] < UINT32_MAX
			  ? (uint32_t)v[APX_HEAP_NATIVE_STACK] : 0,
		.file = fi, .flags = (uint8_t)v[APX_HEAP_FLAGS],
	};

	if (v[APX_HEAP_OP] != APX_MEMOP_ALLOC && v[APX_HEAP_OP] != APX_MEMOP_FREE)
		return 0;	/* a newer writer's op: not known */
	h.op = (uint8_t)v[APX_HEAP_OP];
	if (h.op == APX_MEMOP_ALLOC) {
		if (h.flags & APX_HEAPF_LARGE)
			h.interval = 0;		/* stands for itself */
		m->heap.large += !!(h.flags & APX_HEAPF_LARGE);
		m->heap.sampled += !(h.flags & APX_HEAPF_LARGE);
	}
	m->heap.recs.size = sizeof(struct apx_an_heap_rec);	/* the model's vectors: here */
	return apx_vec_push(&m->heap.recs, &h);
}

void apx_heap_free(struct apx_model *m)
{
	free(m->heap.recs.data);
	free(m->heap.sites.data);
	free(m->heap.large_sorted);
	m->heap.large_sorted = NULL;
	m->heap.recs = (struct apx_vec){ 0 };
	m->heap.sites = (struct apx_vec){ 0 };
}

double apx_heap_est_allocs(uint64_t bytes, uint64_t interval)
{
	double p;

	if (!bytes)
		return 0;
	if (!interval)
		return 1;	/* a large allocation: every one is recorded */
	p = -expm1(-(double)bytes / (double)interval);	/* exact for small ratios too */
	return p > 0 ? 1.0 / p : 0;
}

double apx_heap_est_bytes(uint64_t bytes, uint64_t interval)
{
	return (double)bytes * apx_heap_est_allocs(bytes, interval);
}

/* ---- native frames ---------------------------------------------------------------------- */

static const char *base_name(const char *p, size_t len, size_t *ret_len)
{
	size_t i = len;

	while (i && p[i - 1] != '/')
		i--;
	*ret_len = len - i;
	return p + i;
}

static int starts(const char *p, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !memcmp(p, prefix, n);
}

int apx_heap_object_is_user(const char *path, size_t len)
{
	size_t bl;
	const char *b = base_name(path, len, &bl);

	if (!len || !bl)
		return 0;
	if (apx_text_has(path, len, "/lib/") || apx_text_has(path, len, "/lib64/") ||
	    apx_text_has(path, len, "/lib32/") || apx_text_has(path, len, "/site-packages/") ||
	    apx_text_has(path, len, "/dist-packages/"))
		return 0;
	return !starts(b, bl, "python") && !starts(b, bl, "libpython") && !starts(b, bl, "libapx-");
}

int apx_heap_object_is_allocator(const char *path, size_t len)
{
	static const char *const alloc[] = { "libc.so", "libc-", "libstdc++", "libgcc_s",
					     "ld-linux", "ld64.so", "libapx-heap", "libjemalloc",
					     "libtcmalloc", "libmimalloc" };
	size_t bl;
	const char *b = base_name(path, len, &bl);

	for (size_t i = 0; i < sizeof(alloc) / sizeof(alloc[0]); i++)
		if (starts(b, bl, alloc[i]))
			return 1;
	return 0;
}

static int frame_user(const struct apx_store *st, uint32_t f)
{
	struct apx_es_text t = apx_store_string(st, st->frames[f].file);

	return st->frames[f].kind == APX_FRAME_NATIVE ? apx_heap_object_is_user(t.p, t.len)
						       : !apx_frame_is_library(t.p, t.len);
}

static int frame_allocator(const struct apx_store *st, uint32_t f)
{
	struct apx_es_text t = apx_store_string(st, st->frames[f].file);

	return apx_heap_object_is_allocator(t.p, t.len);
}

/* The frame a native stack stands for (a store frame index, UINT32_MAX none). */
static uint32_t native_frame(const struct apx_model *m, uint32_t stack, int *ret_user)
{
	const struct apx_store *st = m->store;
	const struct apx_es_stack *s = st ? apx_store_stack(st, stack) : NULL;

	*ret_user = 0;
	if (!s || !s->depth)
		return UINT32_MAX;
	if (!m->frames_all) {
		for (uint16_t j = 0; j < s->depth; j++)
			if (frame_user(st, st->stack_frames[s->first + j])) {
				*ret_user = 1;
				return st->stack_frames[s->first + j];
			}
		for (uint16_t j = 0; j < s->depth; j++)
			if (!frame_allocator(st, st->stack_frames[s->first + j]))
				return st->stack_frames[s->first + j];
	}
	*ret_user = frame_user(st, st->stack_frames[s->first]);
	return st->stack_frames[s->first];
}

/* ---- open addressing: 64-bit keys (never 0) to indices ---------------------------------- */

struct imap {
	uint64_t *key;
	uint32_t *val;
	size_t cap;
};

static int imap_init(struct imap *t, size_t n)
{
	for (t->cap = 64; t->cap < 2 * n + 2; t->cap *= 2)
		;
	t->key = calloc(t->cap, sizeof(*t->key));
	t->val = calloc(t->cap, sizeof(*t->val));
	return t->key && t->val ? 0 : -ENOMEM;
}

static void imap_free(struct imap *t)
{
	free(t->key);
	free(t->val);
}

/* The slot of key, or of the empty slot where it would go (keys are never removed). */
static size_t imap_slot(const struct imap *t, uint64_t key, int *ret_found)
{
	size_t i = apx_fmix64(key) & (t->cap - 1);

	for (; t->key[i]; i = (i + 1) & (t->cap - 1))
		if (t->key[i] == key) {
			*ret_found = 1;
			return i;
		}
	*ret_found = 0;
	return i;
}

/* ---- the build --------------------------------------------------------------------------- */

struct site_key {
	uint32_t line, frame;
};

/* The site of a sample: its line or frame, and whether it is the program's own code. */
static struct site_key site_of(const struct apx_model *m, const struct apx_an_heap_rec *h,
			       uint8_t *ret_user)
{
	uint32_t line = apx_stack_line(m, h->stack);
	int nuser, puser = 0;
	uint32_t f = native_frame(m, h->nstack, &nuser);

	if (line != UINT32_MAX)
		puser = APX_VEC_AT(&m->lines, struct apx_an_line, line)->user;
	if (line != UINT32_MAX && (m->frames_all || puser || !nuser)) {
		*ret_user = (uint8_t)puser;
		return (struct site_key){ line, UINT32_MAX };
	}
	*ret_user = (uint8_t)nuser;
	return (struct site_key){ UINT32_MAX, f };
}

/* A site's key in the map (never 0): a line; a named native function (object, symbol); an
 * unnamed native frame (its address); or no stack. */
static uint64_t site_hash(const struct apx_model *m, struct site_key k)
{
	const struct apx_es_frame *f;

	if (k.line != UINT32_MAX)
		return 1ull << 60 | k.line;
	if (k.frame == UINT32_MAX)
		return 2;
	f = &m->store->frames[k.frame];
	if (apx_store_string(m->store, f->func).len)
		return 3ull << 60 | ((uint64_t)f->file << 30 ^ f->func);
	return 4ull << 60 | k.frame;
}

static int cmp_site(const void *a, const void *b, void *ctx)
{
	const struct apx_model *m = ctx;
	const struct apx_an_heap_site *x = a, *y = b;

	if (!m->frames_all && x->user != y->user)
		return x->user ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

/* The live samples by (file, address): open addressing, tombstones for removed ones. */
struct live_map {
	uint64_t *addr;
	uint32_t *rec;			/* recs index + 1; 0 empty, UINT32_MAX removed */
	uint16_t *file;
	size_t cap;
};

/* The slot holding (file, addr), or where it would go (*ret_found 0). */
static size_t live_slot(const struct live_map *t, uint16_t file, uint64_t addr, int *ret_found)
{
	size_t i = apx_fmix64(addr ^ (uint64_t)file << 48) & (t->cap - 1), free_at = SIZE_MAX;

	for (;; i = (i + 1) & (t->cap - 1)) {
		if (!t->rec[i]) {
			*ret_found = 0;
			return free_at != SIZE_MAX ? free_at : i;
		}
		if (t->rec[i] == UINT32_MAX) {
			if (free_at == SIZE_MAX)
				free_at = i;
		} else if (t->addr[i] == addr && t->file[i] == file) {
			*ret_found = 1;
			return i;
		}
	}
}

/* Every sample's free time (0: live at the end, UINT64_MAX: not known), matching frees to
 * samples per file and address in record order. */
static int match_frees(struct apx_model *m, uint64_t *freed)
{
	struct apx_an_heap *hp = &m->heap;
	struct live_map t = { 0 };
	int r = 0;

	for (t.cap = 64; t.cap < 2 * hp->recs.n + 2; t.cap *= 2)
		;
	t.addr = calloc(t.cap, sizeof(*t.addr));
	t.rec = calloc(t.cap, sizeof(*t.rec));
	t.file = calloc(t.cap, sizeof(*t.file));
	if (!t.addr || !t.rec || !t.file) {
		r = -ENOMEM;
		goto out;
	}
	/* every record takes at most one slot ever (tombstones included): cap > 2n, no growth */
	for (size_t i = 0; i < hp->recs.n; i++) {
		const struct apx_an_heap_rec *h = APX_VEC_AT(&hp->recs, struct apx_an_heap_rec, i);
		int found;
		size_t j = live_slot(&t, h->file, h->addr, &found);

		if (h->op == APX_MEMOP_FREE) {
			if (!found) {
				hp->frees_unmatched++;
				continue;
			}
			freed[t.rec[j] - 1] = h->ts ? h->ts : 1;
			t.rec[j] = UINT32_MAX;
			hp->frees++;
			continue;
		}
		if (found) {		/* sampled again while live: its free was lost */
			freed[t.rec[j] - 1] = h->ts ? h->ts : 1;
			hp->frees_missed++;
		}
		if (h->flags & APX_HEAPF_UNTRACKED) {
			freed[i] = UINT64_MAX;	/* its free is never seen */
			if (found)
				t.rec[j] = UINT32_MAX;
			continue;
		}
		t.addr[j] = h->addr;
		t.file[j] = h->file;
		t.rec[j] = (uint32_t)i + 1;
	}
out:
	free(t.addr);
	free(t.rec);
	free(t.file);
	return r;
}

/* The time origin of --heap-leak (the run's start; a trace of heap samples only: its files'
 * header start). */
static uint64_t origin(const struct apx_model *m)
{
	uint64_t o = UINT64_MAX;

	if (m->wall_ns && m->run_start_ns)
		return m->run_start_ns;
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].first_ns && m->files[i].first_ns < o)
			o = m->files[i].first_ns;
	return o != UINT64_MAX ? o : m->heap.first_ns;
}

static int cmp_large(const void *a, const void *b, void *ctx)
{
	const struct apx_an_heap *hp = ctx;
	const struct apx_an_heap_rec *x = APX_VEC_AT(&hp->recs, struct apx_an_heap_rec,
						     *(const uint32_t *)a);
	const struct apx_an_heap_rec *y = APX_VEC_AT(&hp->recs, struct apx_an_heap_rec,
						     *(const uint32_t *)b);

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* hp->large_sorted: the large ALLOC records by file, address and time (apx_heap_host_kept). */
static int sort_large(struct apx_model *m)
{
	struct apx_an_heap *hp = &m->heap;
	size_t n = 0;

	hp->large_sorted = malloc(hp->large * sizeof(*hp->large_sorted));
	if (!hp->large_sorted)
		return -ENOMEM;
	for (size_t i = 0; i < hp->recs.n && n < hp->large; i++) {
		const struct apx_an_heap_rec *h = APX_VEC_AT(&hp->recs, struct apx_an_heap_rec, i);

		if (h->op != APX_MEMOP_ALLOC || h->interval)
			continue;
		hp->large_sorted[n++] = (uint32_t)i;
		if (h->bytes > hp->large_max_bytes)
			hp->large_max_bytes = h->bytes;
	}
	hp->large = n;
	qsort_r(hp->large_sorted, n, sizeof(*hp->large_sorted), cmp_large, hp);
	return 0;
}

int apx_heap_build(struct apx_model *m)
{
	struct apx_an_heap *hp = &m->heap;
	struct imap sites = { 0 };
	uint64_t *freed = NULL, t0;
	int r = 0;

	if (!hp->recs.n)
		return 0;
	if (hp->recs.n > UINT32_MAX - 1)
		return -E2BIG;
	hp->sites.size = sizeof(struct apx_an_heap_site);
	hp->first_ns = UINT64_MAX;
	for (size_t i = 0; i < hp->recs.n; i++) {
		struct apx_an_heap_rec *h = APX_VEC_AT(&hp->recs, struct apx_an_heap_rec, i);

		h->stack = m->store ? apx_store_stack_of(m->store, h->file, h->stack) : 0;
		h->nstack = m->store ? apx_store_stack_of(m->store, h->file, h->nstack) : 0;
		if (h->ts < hp->first_ns)
			hp->first_ns = h->ts;
		if (h->ts > hp->last_ns)
			hp->last_ns = h->ts;
	}
	t0 = origin(m);
	hp->leak_start_ns = hp->leak_has_from ? t0 + hp->leak_from_ns : 0;
	hp->leak_end_ns = hp->leak_has_to ? t0 + hp->leak_to_ns : UINT64_MAX;
	if (hp->leak_end_ns > hp->last_ns)
		hp->leak_end_ns = hp->last_ns;	/* live at its end: at the last record */
	if (hp->leak_start_ns < hp->first_ns)
		hp->leak_start_ns = hp->first_ns;
	freed = calloc(hp->recs.n, sizeof(*freed));
	if (!freed || (r = match_frees(m, freed)) < 0)
		goto out;
	for (size_t i = 0; i < hp->recs.n; i++)
		APX_VEC_AT(&hp->recs, struct apx_an_heap_rec, i)->freed = freed[i];
	if (hp->large && (r = sort_large(m)) < 0)
		goto out;
	if (!hp->sampled)
		goto out;	/* large allocations only: no sites (the rules read them) */
	if ((r = imap_init(&sites, hp->recs.n < 65536 ? hp->recs.n : 65536)) < 0)
		goto out;
	for (size_t i = 0; i < hp->recs.n && r == 0; i++) {
		const struct apx_an_heap_rec *h = APX_VEC_AT(&hp->recs, struct apx_an_heap_rec, i);
		double bytes = apx_heap_est_bytes(h->bytes, h->interval);
		double allocs = apx_heap_est_allocs(h->bytes, h->interval);
		struct apx_an_heap_site *s;
		struct site_key k;
		uint8_t user;
		uint64_t key;
		size_t j;
		int found;

		if (h->op != APX_MEMOP_ALLOC)
			continue;
		hp->samples++;
		hp->untracked += !!(h->flags & APX_HEAPF_UNTRACKED);
		hp->nostack += !!(h->flags & APX_HEAPF_NOSTACK);
		if (h->interval && (!hp->interval_min || h->interval < hp->interval_min))
			hp->interval_min = h->interval;
		if (h->interval > hp->interval_max)
			hp->interval_max = h->interval;
		k = site_of(m, h, &user);
		key = site_hash(m, k);
		if (2 * (hp->sites.n + 1) > sites.cap) {	/* grow the site map */
			struct imap g;

			if ((r = imap_init(&g, 2 * hp->sites.n + 2)) < 0) {
				imap_free(&g);
				break;
			}
			for (size_t q = 0; q < sites.cap; q++)
				if (sites.key[q]) {
					size_t z = imap_slot(&g, sites.key[q], &found);

					g.key[z] = sites.key[q];
					g.val[z] = sites.val[q];
				}
			imap_free(&sites);
			sites = g;
		}
		j = imap_slot(&sites, key, &found);
		if (!found) {
			struct apx_an_heap_site ns = { .line = k.line, .frame = k.frame,
							.user = user };

			if ((r = apx_vec_push(&hp->sites, &ns)) < 0)
				break;
			sites.key[j] = key;
			sites.val[j] = (uint32_t)(hp->sites.n - 1);
		}
		s = APX_VEC_AT(&hp->sites, struct apx_an_heap_site, sites.val[j]);
		s->samples++;
		s->bytes += bytes;
		s->allocs += allocs;
		hp->bytes += bytes;
		hp->allocs += allocs;
		if (!freed[i]) {
			s->live_samples++;
			s->live_bytes += bytes;
			hp->live_samples++;
			hp->live_bytes += bytes;
		}
		if (hp->leak && h->ts >= hp->leak_start_ns && h->ts <= hp->leak_end_ns &&
		    freed[i] != UINT64_MAX && (!freed[i] || freed[i] > hp->leak_end_ns)) {
			s->leak_samples++;
			s->leak_bytes += bytes;
			hp->leak_samples++;
			hp->leak_bytes += bytes;
		}
	}
	if (r == 0 && hp->sites.n > 1)
		qsort_r(hp->sites.data, hp->sites.n, sizeof(struct apx_an_heap_site), cmp_site, m);
out:
	imap_free(&sites);
	free(freed);
	if (!freed && r == 0)
		r = -ENOMEM;
	return r;
}

const struct apx_an_heap_rec *apx_heap_host_record(const struct apx_model *m, uint16_t file,
						   uint64_t addr, uint64_t bytes, uint64_t at_ns)
{
	const struct apx_an_heap *hp = &m->heap;
	const struct apx_an_heap_rec *best = NULL;
	size_t lo = 0, hi = hp->large_sorted ? hp->large : 0;

	/* the first record past (file, addr): those before it start at or below addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct apx_an_heap_rec *h = APX_VEC_AT(&hp->recs, struct apx_an_heap_rec,
							     hp->large_sorted[mid]);

		if (h->file < file || (h->file == file && h->addr <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* back over the allocations that may hold [addr, addr + bytes): none starts more than
	 * the largest one's size below addr */
	while (lo--) {
		const struct apx_an_heap_rec *h = APX_VEC_AT(&hp->recs, struct apx_an_heap_rec,
							     hp->large_sorted[lo]);

		if (h->file != file || h->addr + hp->large_max_bytes < addr)
			break;
		if (h->ts > at_ns || addr + bytes > h->addr + h->bytes)
			continue;
		if (!best || h->ts > best->ts)
			best = h;
	}
	return best;
}

int apx_heap_host_kept(const struct apx_model *m, uint16_t file, uint64_t addr, uint64_t bytes,
		       uint64_t at_ns, uint64_t until_ns)
{
	const struct apx_an_heap_rec *best = apx_heap_host_record(m, file, addr, bytes, at_ns);

	if (!best || best->freed == UINT64_MAX || (best->freed && best->freed < at_ns))
		return -1;	/* none recorded holds it (or its free was seen before the copy:
				 * the record of what holds it now is missing) */
	return !best->freed || best->freed > until_ns;
}
