/*
 * store.c - builds the event store (store.h) from trace files: opens every file, resolves its
 * entities (host, devices by UUID, streams, threads), interns names across files and appends
 * one row per record to the columns of its type. store_sort.c then orders the columns and
 * answers the ordered-stream and correlation queries. Called by apx export (cli/cmd_export.c)
 * through apx_store_open() and by apx report's model (load.c, finish.c) through
 * apx_store_new/add_reader/build, whose record hook sees every record read; single-threaded.
 */
#include "analysis/store.h"
#include "base/torch_nvtx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/store_priv.h"

#include "base/banned.h"

/* ---- growable columns ---------------------------------------------------------------------- */

int apx_es_grow(void **arr, size_t elem, size_t need, size_t *cap)
{
	size_t ncap = *cap ? *cap : 256;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* Grow every array of a column set to hold one more row (they share one capacity). */
struct col {
	void **arr;
	size_t elem;
};

#define COL(a) { (void **)&(a), sizeof(*(a)) }
#define NCOLS(c) (sizeof(c) / sizeof((c)[0]))

static int cols_reserve(size_t n, size_t *cap, const struct col *cols, size_t ncols)
{
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 1024;
	for (size_t i = 0; i < ncols; i++) {
		void *p;

		if (ncap > SIZE_MAX / cols[i].elem)
			return -ENOMEM;
		p = realloc(*cols[i].arr, ncap * cols[i].elem);
		if (!p)
			return -ENOMEM;	/* the arrays grown so far stay valid */
		*cols[i].arr = p;
	}
	*cap = ncap;
	return 0;
}

/* ---- interning ------------------------------------------------------------------------------ */

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Open-addressing table of indices + 1; eq(i) says whether entry i is the key. */
static int table_find(struct apx_es_table *t, uint64_t h, int (*eq)(const void *ctx, uint32_t i),
		      const void *ctx, uint32_t *ret_slot, uint32_t *ret_index)
{
	size_t j;

	if (!t->cap)
		return -ENOENT;
	for (j = h & (t->cap - 1); t->slot[j]; j = (j + 1) & (t->cap - 1)) {
		if (t->hash[j] == h && eq(ctx, t->slot[j] - 1)) {
			*ret_index = t->slot[j] - 1;
			return 0;
		}
	}
	*ret_slot = (uint32_t)j;
	return -ENOENT;
}

static int table_insert(struct apx_es_table *t, uint64_t h, uint32_t index)
{
	size_t j;

	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		uint32_t *slot = calloc(cap, sizeof(*slot));
		uint64_t *hash = calloc(cap, sizeof(*hash));

		if (!slot || !hash) {
			free(slot);
			free(hash);
			return -ENOMEM;
		}
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->slot[i])
				continue;
			for (j = t->hash[i] & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
				;
			slot[j] = t->slot[i];
			hash[j] = t->hash[i];
		}
		free(t->slot);
		free(t->hash);
		t->slot = slot;
		t->hash = hash;
		t->cap = cap;
	}
	for (j = h & (t->cap - 1); t->slot[j]; j = (j + 1) & (t->cap - 1))
		;
	t->slot[j] = index + 1;
	t->hash[j] = h;
	t->n++;
	return 0;
}

struct text_key {
	const struct apx_store *st;
	const char *p;
	size_t len;
};

static int text_eq(const void *ctx, uint32_t i)
{
	const struct text_key *k = ctx;
	const struct apx_es_text *t = &k->st->strings[i];

	return t->len == k->len && !memcmp(t->p, k->p, k->len);
}

/* The store's index of a name (text borrowed from a reader's mapping). */
static int intern_text(struct apx_store *st, const char *p, size_t len, uint32_t *ret)
{
	struct apx_es_priv *pv = st->priv;
	struct text_key key = { st, p ? p : "", p ? len : 0 };
	uint64_t h = hash_bytes(key.p, key.len, 0xcbf29ce484222325ull);
	uint32_t slot;
	int r;

	if (key.len > UINT32_MAX)
		key.len = UINT32_MAX;
	if (table_find(&pv->strings_t, h, text_eq, &key, &slot, ret) == 0)
		return 0;
	if ((r = apx_es_grow((void **)&st->strings, sizeof(*st->strings), st->nstrings + 1,
			     &pv->strings_cap)) < 0 ||
	    (r = table_insert(&pv->strings_t, h, (uint32_t)st->nstrings)) < 0)
		return r;
	st->strings[st->nstrings].p = key.p;
	st->strings[st->nstrings].len = (uint32_t)key.len;
	*ret = (uint32_t)st->nstrings++;
	return 0;
}

/* A string field of a record, resolved through its file's string table; ids the file used
 * before are answered from a per-file map (kernel names repeat millions of times). */
static int intern_id(struct apx_store *st, uint16_t fi, uint64_t id, uint32_t *ret)
{
	struct apx_sidmap *m = &((struct apx_es_priv *)st->priv)->file_sid[fi];
	size_t len = 0;
	const char *p;
	int r;

	if (apx_sidmap_get(m, id, ret))
		return 0;
	p = id ? apx_reader_string(st->files[fi].r, id, &len) : NULL;
	if ((r = intern_text(st, p, p ? len : 0, ret)) < 0)
		return r;
	apx_sidmap_put(m, id, *ret);
	return 0;
}

int apx_es_intern_id(struct apx_store *st, uint16_t fi, uint64_t id, uint32_t *ret)
{
	return intern_id(st, fi, id, ret);
}

/* A record's stack field as the file wrote it (its per-file id; resolved once every file is
 * read, store_stacks.c): 0 when absent (files written before the field), ids past 32 bits
 * saturated (no STACK record can define them). */
static uint32_t raw_stack(const struct apx_rec *r, unsigned f)
{
	uint64_t v = (r->present >> f & 1) ? r->v[f] : 0;

	return v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static struct apx_es_text rec_text(const struct apx_rec *r, unsigned f)
{
	struct apx_es_text t = { "", 0 };

	if ((r->present >> f & 1) && r->bytes[f] && r->v[f] <= UINT32_MAX) {
		t.p = (const char *)r->bytes[f];
		t.len = (uint32_t)r->v[f];
	}
	return t;
}

struct launch_key {
	const struct apx_store *st;
	const struct apx_es_launch *l;
};

static int launch_eq(const void *ctx, uint32_t i)
{
	const struct launch_key *k = ctx;

	return !memcmp(&k->st->launches[i], k->l, sizeof(*k->l));
}

static int intern_launch(struct apx_store *st, const struct apx_es_launch *l, uint32_t *ret)
{
	struct apx_es_priv *pv = st->priv;
	struct launch_key key = { st, l };
	uint64_t h = hash_bytes(l, sizeof(*l), 0x84222325cbf29ce4ull);
	uint32_t slot;
	int r;

	if (table_find(&pv->launches_t, h, launch_eq, &key, &slot, ret) == 0)
		return 0;
	if ((r = apx_es_grow((void **)&st->launches, sizeof(*st->launches), st->nlaunches + 1,
			     &pv->launches_cap)) < 0 ||
	    (r = table_insert(&pv->launches_t, h, (uint32_t)st->nlaunches)) < 0)
		return r;
	st->launches[st->nlaunches] = *l;
	*ret = (uint32_t)st->nlaunches++;
	return 0;
}

/* ---- entities ------------------------------------------------------------------------------- */

static int host_index(struct apx_store *st, struct apx_es_text name, uint32_t *ret)
{
	struct apx_es_priv *pv = st->priv;
	int r;

	for (size_t i = 0; i < st->nhosts; i++)
		if (st->hosts[i].name.len == name.len && !memcmp(st->hosts[i].name.p, name.p, name.len)) {
			*ret = (uint32_t)i;
			return 0;
		}
	if ((r = apx_es_grow((void **)&st->hosts, sizeof(*st->hosts), st->nhosts + 1,
			     &pv->hosts_cap)) < 0)
		return r;
	st->hosts[st->nhosts].name = name;
	*ret = (uint32_t)st->nhosts++;
	return 0;
}

/* The store device of (file, ordinal); created without a UUID when the file has no DEVICE
 * record for it (yet). Devices without a UUID are keyed by (host, ordinal). Ordinals past the
 * per-file map (APX_ES_ORDINALS, never seen from CUDA) are looked up by (host, ordinal). */
static int device_of(struct apx_store *st, uint16_t fi, uint64_t ordinal, uint32_t *ret)
{
	struct apx_es_priv *pv = st->priv;
	struct apx_es_device *d;
	uint32_t o = ordinal > UINT32_MAX ? UINT32_MAX : (uint32_t)ordinal;
	int mapped = o < APX_ES_ORDINALS, r;

	if (mapped && pv->file_dev[fi][o]) {
		*ret = pv->file_dev[fi][o] - 1;
		return 0;
	}
	for (size_t i = 0; i < st->ndevices; i++) {
		d = &st->devices[i];
		if ((!d->has_uuid || !mapped) && d->host == st->files[fi].host && d->ordinal == o) {
			if (mapped)
				pv->file_dev[fi][o] = (uint32_t)i + 1;
			*ret = (uint32_t)i;
			return 0;
		}
	}
	if ((r = apx_es_grow((void **)&st->devices, sizeof(*st->devices), st->ndevices + 1,
			     &pv->devices_cap)) < 0)
		return r;
	d = &st->devices[st->ndevices];
	memset(d, 0, sizeof(*d));
	d->host = st->files[fi].host;
	d->ordinal = o;
	d->first_file = fi;
	if (mapped)
		pv->file_dev[fi][o] = (uint32_t)st->ndevices + 1;
	*ret = (uint32_t)st->ndevices++;
	return 0;
}

/* A DEVICE record: the same GPU seen by two processes of one host is one device. */
static int add_device(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_priv *pv = st->priv;
	struct apx_es_text uuid = rec_text(r, APX_DEVICE_UUID);
	uint64_t ord = r->v[APX_DEVICE_ID];
	uint32_t o = ord < APX_ES_ORDINALS ? (uint32_t)ord : 0;
	struct apx_es_device *d;
	uint32_t idx;
	int e;

	if (uuid.len == 16 && ord < APX_ES_ORDINALS && !pv->file_dev[fi][o]) {
		for (size_t i = 0; i < st->ndevices; i++) {
			d = &st->devices[i];
			if (d->has_uuid && d->host == st->files[fi].host &&
			    !memcmp(d->uuid, uuid.p, 16)) {
				pv->file_dev[fi][o] = (uint32_t)i + 1;
				return 0;
			}
		}
	}
	if ((e = device_of(st, fi, ord, &idx)) < 0)
		return e;
	d = &st->devices[idx];
	if (uuid.len == 16 && !d->has_uuid) {
		memcpy(d->uuid, uuid.p, 16);
		d->has_uuid = 1;
	}
	d->name = rec_text(r, APX_DEVICE_NAME);
	d->mem_bytes = r->v[APX_DEVICE_MEM_BYTES];
	d->l2_bytes = r->v[APX_DEVICE_L2_BYTES];
	d->mem_bw_bps = r->v[APX_DEVICE_MEM_BW_BPS];
	d->clock_khz = r->v[APX_DEVICE_CLOCK_KHZ];
	d->sm_count = (uint32_t)r->v[APX_DEVICE_SM_COUNT];
	d->cc_major = (uint32_t)r->v[APX_DEVICE_CC_MAJOR];
	d->cc_minor = (uint32_t)r->v[APX_DEVICE_CC_MINOR];
	return 0;
}

struct stream_key {
	const struct apx_store *st;
	uint16_t file;
	uint32_t device;
	uint64_t id;
};

static int stream_eq(const void *ctx, uint32_t i)
{
	const struct stream_key *k = ctx;
	const struct apx_es_stream *s = &k->st->streams[i];

	return s->file == k->file && s->device == k->device && s->id == k->id;
}

static int stream_of(struct apx_store *st, uint16_t fi, uint64_t ordinal, uint64_t id,
		     uint32_t *ret)
{
	struct apx_es_priv *pv = st->priv;
	struct stream_key key = { st, fi, 0, id };
	struct apx_es_stream_hit *hit = &pv->stream_hit[(id ^ ordinal) % APX_ES_STREAM_CACHE];
	uint32_t slot;
	uint64_t h;
	int r;

	if (hit->index && hit->id == id && hit->ordinal == ordinal && hit->file == fi) {
		*ret = hit->index - 1;
		return 0;
	}
	if ((r = device_of(st, fi, ordinal, &key.device)) < 0)
		return r;
	h = hash_bytes(&id, sizeof(id), ((uint64_t)fi << 32 | key.device) * 0x9e3779b97f4a7c15ull);
	if (table_find(&pv->streams_t, h, stream_eq, &key, &slot, ret) == 0)
		goto remember;
	if ((r = apx_es_grow((void **)&st->streams, sizeof(*st->streams), st->nstreams + 1,
			     &pv->streams_cap)) < 0 ||
	    (r = table_insert(&pv->streams_t, h, (uint32_t)st->nstreams)) < 0)
		return r;
	st->streams[st->nstreams].file = fi;
	st->streams[st->nstreams].device = key.device;
	st->streams[st->nstreams].id = id;
	*ret = (uint32_t)st->nstreams++;
remember:
	if (ordinal <= UINT32_MAX)
		*hit = (struct apx_es_stream_hit){ id, *ret + 1, (uint32_t)ordinal, fi };
	return 0;
}

struct thread_key {
	const struct apx_store *st;
	uint16_t file;
	uint64_t tid;
};

static int thread_eq(const void *ctx, uint32_t i)
{
	const struct thread_key *k = ctx;

	return k->st->threads[i].file == k->file && k->st->threads[i].tid == k->tid;
}

static int thread_of(struct apx_store *st, uint16_t fi, uint64_t tid, uint32_t *ret)
{
	struct apx_es_priv *pv = st->priv;
	struct thread_key key = { st, fi, tid };
	uint64_t h = hash_bytes(&tid, sizeof(tid), (uint64_t)(fi + 1) * 0x9e3779b97f4a7c15ull);
	uint32_t slot;
	int r;

	if (table_find(&pv->threads_t, h, thread_eq, &key, &slot, ret) == 0)
		return 0;
	if ((r = apx_es_grow((void **)&st->threads, sizeof(*st->threads), st->nthreads + 1,
			     &pv->threads_cap)) < 0 ||
	    (r = table_insert(&pv->threads_t, h, (uint32_t)st->nthreads)) < 0)
		return r;
	memset(&st->threads[st->nthreads], 0, sizeof(st->threads[0]));
	st->threads[st->nthreads].file = fi;
	st->threads[st->nthreads].tid = tid;
	*ret = (uint32_t)st->nthreads++;
	return 0;
}

int apx_es_series_of(struct apx_store *st, uint16_t fi, uint32_t device, struct apx_es_text name,
		     struct apx_es_text unit, int is_memory, uint32_t *ret)
{
	struct apx_es_priv *pv = st->priv;
	struct apx_es_series *s;
	int r;

	for (size_t i = st->nseries; i-- > 0;) {	/* few series: a linear search is enough */
		s = &st->series[i];
		if (s->file == fi && s->device == device && s->is_memory == is_memory &&
		    s->name.len == name.len && !memcmp(s->name.p, name.p, name.len)) {
			*ret = (uint32_t)i;
			return 0;
		}
	}
	if (st->nseries >= APX_ES_SERIES_MAX)
		return -E2BIG;
	if ((r = apx_es_grow((void **)&st->series, sizeof(*st->series), st->nseries + 1,
			     &pv->series_cap)) < 0)
		return r;
	s = &st->series[st->nseries];
	s->file = fi;
	s->device = device;
	s->name = name;
	s->unit = unit;
	s->is_memory = is_memory;
	*ret = (uint32_t)st->nseries++;
	return 0;
}

/* ---- records --------------------------------------------------------------------------------- */

/* Kept under the options? Times are the file's, already shifted. */
static int keep(const struct apx_store *st, uint16_t fi, uint64_t start, uint64_t end)
{
	const struct apx_es_priv *pv = st->priv;

	if (end < start)
		end = start;
	if (pv->opts.min_dur_ns && end - start < pv->opts.min_dur_ns)
		goto drop;
	if (pv->opts.from_ns && end < st->run_start_ns + pv->opts.from_ns)
		goto drop;
	if (pv->opts.to_ns && start >= st->run_start_ns + pv->opts.to_ns)
		goto drop;
	return 1;
drop:
	st->files[fi].skipped++;
	return 0;
}

static uint64_t sh(const struct apx_store *st, uint16_t fi, uint64_t t)
{
	return (uint64_t)((int64_t)t + st->files[fi].shift_ns);
}

/* The launch of a kernel named name (a string index). Kernels of one name mostly repeat one
 * configuration: the last one of the name is tried before the table. The first kernel of a
 * name makes it a kernel name (knames). */
static int kernel_launch(struct apx_store *st, uint32_t name, const struct apx_es_launch *l,
			 uint64_t ordinal, uint32_t *ret)
{
	struct apx_es_priv *pv = st->priv;
	uint32_t kn;
	int e;

	if (name >= pv->string_kname_cap) {
		size_t old = pv->string_kname_cap;

		if ((e = apx_es_grow((void **)&st->string_kname, sizeof(*st->string_kname),
				     (size_t)name + 1, &pv->string_kname_cap)) < 0)
			return e;
		memset(st->string_kname + old, 0, (pv->string_kname_cap - old) * sizeof(uint32_t));
	}
	if (st->string_kname[name]) {
		kn = st->string_kname[name] - 1;
		if (!memcmp(&st->launches[pv->kname_last[kn]], l, sizeof(*l))) {
			*ret = pv->kname_last[kn];
			return 0;
		}
		if ((e = intern_launch(st, l, ret)) < 0)
			return e;
		pv->kname_last[kn] = *ret;
		return 0;
	}
	if ((e = intern_launch(st, l, ret)) < 0)
		return e;
	{
		size_t cap = pv->knames_cap;

		if ((e = apx_es_grow((void **)&st->knames, sizeof(*st->knames), st->nknames + 1,
				     &pv->knames_cap)) < 0 ||
		    (e = apx_es_grow((void **)&pv->kname_last, sizeof(*pv->kname_last),
				     st->nknames + 1, &cap)) < 0)
			return e;
	}
	kn = (uint32_t)st->nknames++;
	st->knames[kn] = (struct apx_es_kname){ name, *ret,
		ordinal > UINT32_MAX ? UINT32_MAX : (uint32_t)ordinal };
	pv->kname_last[kn] = *ret;
	st->string_kname[name] = kn + 1;
	return 0;
}

/* A kernel with no times (a replayed launch, struct apx_es_untimed): kept whatever the time
 * options, since it has no time to be outside them. */
static int add_untimed(struct apx_store *st, uint16_t fi, const uint64_t *v,
		       const struct apx_es_launch *l)
{
	struct apx_es_untimed *u = &st->ku;
	int e;

	if ((e = cols_reserve(u->n, &u->cap, (const struct col[]){
				COL(u->corr), COL(u->stream), COL(u->name), COL(u->launch) }, 4)) < 0)
		return e;
	if ((e = stream_of(st, fi, v[APX_KERNEL_DEVICE], v[APX_KERNEL_STREAM], &u->stream[u->n])) < 0 ||
	    (e = intern_id(st, fi, v[APX_KERNEL_NAME], &u->name[u->n])) < 0 ||
	    (e = kernel_launch(st, u->name[u->n], l, v[APX_KERNEL_DEVICE], &u->launch[u->n])) < 0)
		return e;
	u->corr[u->n] = (uint32_t)v[APX_KERNEL_CORRELATION];
	u->n++;
	return 0;
}

static int add_kernel(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_kernels *k = &st->k;
	const uint64_t *v = r->v;
	uint64_t start = sh(st, fi, v[APX_KERNEL_START_NS]), end = sh(st, fi, v[APX_KERNEL_END_NS]);
	struct apx_es_launch l = {
		{ (uint32_t)v[APX_KERNEL_GRID_X], (uint32_t)v[APX_KERNEL_GRID_Y],
		  (uint32_t)v[APX_KERNEL_GRID_Z] },
		{ (uint32_t)v[APX_KERNEL_BLOCK_X], (uint32_t)v[APX_KERNEL_BLOCK_Y],
		  (uint32_t)v[APX_KERNEL_BLOCK_Z] },
		(uint32_t)v[APX_KERNEL_REGISTERS], (uint32_t)v[APX_KERNEL_STATIC_SMEM],
		(uint32_t)v[APX_KERNEL_DYNAMIC_SMEM],
	};
	int e;

	if (!v[APX_KERNEL_START_NS] && !v[APX_KERNEL_END_NS])
		return add_untimed(st, fi, v, &l);
	if (!keep(st, fi, start, end))
		return 0;
	if ((e = cols_reserve(k->n, &k->cap, (const struct col[]){
				COL(k->start), COL(k->dur), COL(k->corr), COL(k->stream),
				COL(k->name), COL(k->launch), COL(k->stack), COL(k->launch_ns),
				COL(k->lthread), COL(k->othread) },
				10)) < 0)
		return e;
	if ((e = stream_of(st, fi, v[APX_KERNEL_DEVICE], v[APX_KERNEL_STREAM], &k->stream[k->n])) < 0 ||
	    (e = intern_id(st, fi, v[APX_KERNEL_NAME], &k->name[k->n])) < 0 ||
	    (e = kernel_launch(st, k->name[k->n], &l, v[APX_KERNEL_DEVICE], &k->launch[k->n])) < 0)
		return e;
	k->start[k->n] = start;
	if (end < start)
		end = start;
	k->dur[k->n] = end - start < UINT32_MAX ? (uint32_t)(end - start) : UINT32_MAX;
	if (k->dur[k->n] == UINT32_MAX) {
		struct apx_es_priv *pv = st->priv;

		if ((e = apx_es_grow((void **)&pv->klong, sizeof(*pv->klong), pv->nklong + 1,
				     &pv->klong_cap)) < 0)
			return e;
		pv->klong[pv->nklong++] = (struct apx_es_long){ (uint32_t)k->n, end };
	}
	k->corr[k->n] = (uint32_t)v[APX_KERNEL_CORRELATION];
	k->stack[k->n] = raw_stack(r, APX_KERNEL_STACK);
	k->launch_ns[k->n] = 0;
	k->lthread[k->n] = k->othread[k->n] = UINT32_MAX;
	if (v[APX_KERNEL_LAUNCH_NS]) {	/* --python-backward nvtx: backward.c's join */
		k->launch_ns[k->n] = sh(st, fi, v[APX_KERNEL_LAUNCH_NS]);
		if ((v[APX_KERNEL_LAUNCH_THREAD] &&
		     (e = thread_of(st, fi, v[APX_KERNEL_LAUNCH_THREAD], &k->lthread[k->n])) < 0) ||
		    (v[APX_KERNEL_TID] &&
		     (e = thread_of(st, fi, v[APX_KERNEL_TID], &k->othread[k->n])) < 0))
			return e;
	}
	k->n++;
	return 0;
}

static int add_copy(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_copies *c = &st->c;
	const uint64_t *v = r->v;
	uint64_t start = sh(st, fi, v[APX_MEMCPY_START_NS]), end = sh(st, fi, v[APX_MEMCPY_END_NS]);
	int e;

	if (!keep(st, fi, start, end))
		return 0;
	if ((e = cols_reserve(c->n, &c->cap, (const struct col[]){
				COL(c->start), COL(c->end), COL(c->bytes), COL(c->host_addr),
				COL(c->api_enter), COL(c->api_exit), COL(c->host_fp), COL(c->corr),
				COL(c->stream), COL(c->kind), COL(c->src), COL(c->dst),
				COL(c->flags), COL(c->stack) },
				14)) < 0)
		return e;
	if ((e = stream_of(st, fi, v[APX_MEMCPY_DEVICE], v[APX_MEMCPY_STREAM], &c->stream[c->n])) < 0)
		return e;
	c->start[c->n] = start;
	c->end[c->n] = end < start ? start : end;
	c->bytes[c->n] = v[APX_MEMCPY_BYTES];
	c->host_addr[c->n] = v[APX_MEMCPY_HOST_ADDR];
	c->host_fp[c->n] = v[APX_MEMCPY_COPY_KIND] == APX_COPY_H2D ? v[APX_MEMCPY_HOST_FP] : 0;
	c->api_enter[c->n] = c->api_exit[c->n] = 0;
	if (v[APX_MEMCPY_API_ENTER_NS] && v[APX_MEMCPY_API_EXIT_NS] >= v[APX_MEMCPY_API_ENTER_NS]) {
		c->api_enter[c->n] = sh(st, fi, v[APX_MEMCPY_API_ENTER_NS]);
		c->api_exit[c->n] = sh(st, fi, v[APX_MEMCPY_API_EXIT_NS]);
	}
	c->corr[c->n] = (uint32_t)v[APX_MEMCPY_CORRELATION];
	c->kind[c->n] = (uint8_t)(v[APX_MEMCPY_COPY_KIND] < APX_COPY__COUNT ? v[APX_MEMCPY_COPY_KIND] : 0);
	c->src[c->n] = (uint8_t)(v[APX_MEMCPY_SRC_KIND] < APX_MEM__COUNT ? v[APX_MEMCPY_SRC_KIND] : 0);
	c->dst[c->n] = (uint8_t)(v[APX_MEMCPY_DST_KIND] < APX_MEM__COUNT ? v[APX_MEMCPY_DST_KIND] : 0);
	c->flags[c->n] = (uint8_t)(v[APX_MEMCPY_FLAGS] & 1);
	c->stack[c->n] = raw_stack(r, APX_MEMCPY_STACK);
	c->n++;
	return 0;
}

static int add_memset(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_memsets *s = &st->s;
	const uint64_t *v = r->v;
	uint64_t start = sh(st, fi, v[APX_MEMSET_START_NS]), end = sh(st, fi, v[APX_MEMSET_END_NS]);
	int e;

	if (!keep(st, fi, start, end))
		return 0;
	if ((e = cols_reserve(s->n, &s->cap, (const struct col[]){
				COL(s->start), COL(s->end), COL(s->bytes), COL(s->corr),
				COL(s->stream), COL(s->kind), COL(s->flags), COL(s->stack) },
				8)) < 0)
		return e;
	if ((e = stream_of(st, fi, v[APX_MEMSET_DEVICE], v[APX_MEMSET_STREAM], &s->stream[s->n])) < 0)
		return e;
	s->start[s->n] = start;
	s->end[s->n] = end < start ? start : end;
	s->bytes[s->n] = v[APX_MEMSET_BYTES];
	s->corr[s->n] = (uint32_t)v[APX_MEMSET_CORRELATION];
	s->kind[s->n] = (uint8_t)(v[APX_MEMSET_MEM_KIND] & 0xff);
	s->flags[s->n] = (uint8_t)(v[APX_MEMSET_FLAGS] & 1);
	s->stack[s->n] = raw_stack(r, APX_MEMSET_STACK);
	s->n++;
	return 0;
}

static int add_api(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_apis *a = &st->a;
	const uint64_t *v = r->v;
	uint64_t start = sh(st, fi, v[APX_API_START_NS]), end = sh(st, fi, v[APX_API_END_NS]);
	int e;

	if (!keep(st, fi, start, end))
		return 0;
	if ((e = cols_reserve(a->n, &a->cap, (const struct col[]){
				COL(a->start), COL(a->end), COL(a->corr), COL(a->thread),
				COL(a->name), COL(a->cbid), COL(a->domain), COL(a->stack) },
				8)) < 0)
		return e;
	if ((e = thread_of(st, fi, v[APX_API_TID], &a->thread[a->n])) < 0 ||
	    (e = intern_id(st, fi, v[APX_API_NAME], &a->name[a->n])) < 0)
		return e;
	a->start[a->n] = start;
	a->end[a->n] = end < start ? start : end;
	a->corr[a->n] = (uint32_t)v[APX_API_CORRELATION];
	a->cbid[a->n] = (uint32_t)v[APX_API_CBID];
	a->domain[a->n] = (uint8_t)v[APX_API_DOMAIN];
	a->stack[a->n] = raw_stack(r, APX_API_STACK);
	a->n++;
	return 0;
}

static int add_marker(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_markers *m = &st->mk;
	const uint64_t *v = r->v;
	uint64_t start = sh(st, fi, v[APX_MARKER_START_NS]), end = sh(st, fi, v[APX_MARKER_END_NS]);
	int e;

	if (v[APX_MARKER_END_NS] < v[APX_MARKER_START_NS])
		end = start;
	if (!keep(st, fi, start, end) && end != start)
		return 0;
	if ((e = cols_reserve(m->n, &m->cap, (const struct col[]){
				COL(m->start), COL(m->end), COL(m->thread), COL(m->name),
				COL(m->kind), COL(m->seq), COL(m->torch) },
				7)) < 0)
		return e;
	if ((e = thread_of(st, fi, v[APX_MARKER_TID], &m->thread[m->n])) < 0 ||
	    (e = intern_id(st, fi, v[APX_MARKER_NAME], &m->name[m->n])) < 0)
		return e;
	m->start[m->n] = start;
	m->end[m->n] = end;
	m->kind[m->n] = (uint8_t)v[APX_MARKER_KIND];
	m->seq[m->n] = v[APX_MARKER_SEQ];
	m->torch[m->n] = v[APX_MARKER_FLAGS] & 1;
	if (!m->torch[m->n] && v[APX_MARKER_DOMAIN]) {	/* libapx-watch.so's library calls */
		uint32_t dom;
		struct apx_es_text d;

		if ((e = intern_id(st, fi, v[APX_MARKER_DOMAIN], &dom)) < 0)
			return e;
		d = apx_store_string(st, dom);
		if ((d.len == 6 && !memcmp(d.p, "cuBLAS", 6)) || (d.len == 5 && !memcmp(d.p, "cuDNN", 5)) ||
		    (d.len == 4 && !memcmp(d.p, "CCCL", 4)))
			m->torch[m->n] = 2;
	}
	if (!m->torch[m->n]) {	/* another tool's trace: the name says it */
		struct apx_es_text t = apx_store_string(st, m->name[m->n]);
		size_t op_len;

		if (apx_torch_nvtx_parse(t.p, t.len, &op_len, &m->seq[m->n]))
			m->torch[m->n] = 1;
		else if ((t.len > 5 && !memcmp(t.p, "cub::", 5)) ||
			 (t.len > 8 && !memcmp(t.p, "thrust::", 8)))
			m->torch[m->n] = 2;	/* CUB's and Thrust's own ranges (nonzero, sort) */
	}
	m->n++;
	return 0;
}

static int add_sync(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_syncs *y = &st->y;
	const uint64_t *v = r->v;
	uint64_t start = sh(st, fi, v[APX_SYNC_START_NS]), end = sh(st, fi, v[APX_SYNC_END_NS]);
	unsigned kind = v[APX_SYNC_KIND] < APX_SYNC_KIND__COUNT ? (unsigned)v[APX_SYNC_KIND] : 0;
	int e;

	if (!keep(st, fi, start, end))
		return 0;
	if ((e = cols_reserve(y->n, &y->cap, (const struct col[]){
				COL(y->start), COL(y->end), COL(y->thread), COL(y->stream),
				COL(y->kind), COL(y->stack), COL(y->corr) },
				7)) < 0)
		return e;
	if ((e = thread_of(st, fi, v[APX_SYNC_TID], &y->thread[y->n])) < 0)
		return e;
	y->stream[y->n] = UINT32_MAX;
	if (v[APX_SYNC_STREAM] && (e = stream_of(st, fi, 0, v[APX_SYNC_STREAM], &y->stream[y->n])) < 0)
		return e;
	y->start[y->n] = start;
	y->end[y->n] = end < start ? start : end;
	y->kind[y->n] = (uint8_t)kind;
	y->stack[y->n] = raw_stack(r, APX_SYNC_STACK);
	y->corr[y->n] = v[APX_SYNC_CORRELATION] <= UINT32_MAX ? (uint32_t)v[APX_SYNC_CORRELATION] : 0;
	y->n++;
	return 0;
}

/* A SAMPLE record: one thread's state and stack at a time (the collector's sampler). */
static int add_sample(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_samples *p = &st->smp;
	const uint64_t *v = r->v;
	uint64_t ts = sh(st, fi, v[APX_SAMPLE_TS_NS]);
	int64_t sc = (r->present >> APX_SAMPLE_SYSCALL & 1) ? apx_rec_i64(r, APX_SAMPLE_SYSCALL) : -1;
	int e;

	if (!keep(st, fi, ts, ts))
		return 0;
	if ((e = cols_reserve(p->n, &p->cap, (const struct col[]){
				COL(p->ts), COL(p->cpu_ns), COL(p->thread), COL(p->stack),
				COL(p->period), COL(p->syscall), COL(p->state) },
				7)) < 0)
		return e;
	if ((e = thread_of(st, fi, v[APX_SAMPLE_TID], &p->thread[p->n])) < 0)
		return e;
	p->ts[p->n] = ts;
	p->cpu_ns[p->n] = v[APX_SAMPLE_CPU_NS];
	p->stack[p->n] = raw_stack(r, APX_SAMPLE_STACK);
	p->period[p->n] = v[APX_SAMPLE_PERIOD_NS] < UINT32_MAX ? (uint32_t)v[APX_SAMPLE_PERIOD_NS]
							       : UINT32_MAX;
	p->syscall[p->n] = sc < 0 || sc > INT32_MAX ? -1 : (int32_t)sc;
	p->state[p->n] = (uint8_t)(v[APX_SAMPLE_STATE] < APX_TSTATE__COUNT ? v[APX_SAMPLE_STATE]
									     : APX_TSTATE_OTHER);
	p->n++;
	return 0;
}

/* A COLLECTIVE record: kept when [enqueue, GPU end] overlaps --from/--to (no --min-dur: an
 * operation's enqueue span says nothing of its length). */
static int add_collective(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	const struct apx_es_priv *pv = st->priv;
	struct apx_es_collectives *c = &st->coll;
	const uint64_t *v = r->v;
	uint64_t enq = sh(st, fi, v[APX_COLLECTIVE_ENQUEUE_NS]);
	uint64_t enq_end = sh(st, fi, v[APX_COLLECTIVE_ENQUEUE_END_NS]);
	uint64_t start = v[APX_COLLECTIVE_START_NS], end = v[APX_COLLECTIVE_END_NS], last;
	int64_t peer = apx_rec_i64(r, APX_COLLECTIVE_PEER), rank = apx_rec_i64(r, APX_COLLECTIVE_RANK);
	int64_t dev = apx_rec_i64(r, APX_COLLECTIVE_DEVICE);
	size_t n = c->n;
	int e;

	if (!start || end < start)	/* no GPU times (or nonsense): enqueue times only */
		start = end = 0;
	else
		start = sh(st, fi, start), end = sh(st, fi, end);
	if (enq_end < enq)
		enq_end = enq;
	last = end > enq_end ? end : enq_end;
	if ((pv->opts.from_ns && last < st->run_start_ns + pv->opts.from_ns) ||
	    (pv->opts.to_ns && (start && start < enq ? start : enq) >= st->run_start_ns + pv->opts.to_ns)) {
		st->files[fi].skipped++;
		return 0;
	}
	if ((e = cols_reserve(n, &c->cap, (const struct col[]){
				COL(c->enq), COL(c->enq_end), COL(c->start), COL(c->end),
				COL(c->count), COL(c->bytes), COL(c->comm), COL(c->seq),
				COL(c->stream), COL(c->peer), COL(c->rank), COL(c->device),
				COL(c->nranks), COL(c->file), COL(c->channels), COL(c->func),
				COL(c->dtype), COL(c->algo), COL(c->proto), COL(c->flags) },
				20)) < 0)
		return e;
	c->enq[n] = enq;
	c->enq_end[n] = enq_end;
	c->start[n] = start;
	c->end[n] = end;
	c->count[n] = v[APX_COLLECTIVE_COUNT];
	c->bytes[n] = v[APX_COLLECTIVE_BYTES];
	c->comm[n] = v[APX_COLLECTIVE_COMM];
	c->seq[n] = v[APX_COLLECTIVE_SEQ];
	c->stream[n] = v[APX_COLLECTIVE_STREAM];
	c->peer[n] = (r->present >> APX_COLLECTIVE_PEER & 1) && peer >= 0 && peer <= INT32_MAX
		     ? (int32_t)peer : -1;
	c->rank[n] = (r->present >> APX_COLLECTIVE_RANK & 1) && rank >= 0 && rank <= INT32_MAX
		     ? (int32_t)rank : -1;
	c->device[n] = (r->present >> APX_COLLECTIVE_DEVICE & 1) && dev >= 0 && dev <= INT32_MAX
		       ? (int32_t)dev : -1;
	c->nranks[n] = v[APX_COLLECTIVE_NRANKS] <= UINT32_MAX ? (uint32_t)v[APX_COLLECTIVE_NRANKS] : 0;
	c->file[n] = fi;
	c->channels[n] = v[APX_COLLECTIVE_CHANNELS] <= UINT16_MAX ? (uint16_t)v[APX_COLLECTIVE_CHANNELS]
								  : UINT16_MAX;
	c->func[n] = v[APX_COLLECTIVE_FUNC] < APX_COLL__COUNT ? (uint8_t)v[APX_COLLECTIVE_FUNC] : 0;
	c->dtype[n] = v[APX_COLLECTIVE_DATATYPE] < APX_DT__COUNT ? (uint8_t)v[APX_COLLECTIVE_DATATYPE]
								 : APX_DT_UNKNOWN;
	c->algo[n] = v[APX_COLLECTIVE_ALGO] < APX_ALGO__COUNT ? (uint8_t)v[APX_COLLECTIVE_ALGO] : 0;
	c->proto[n] = v[APX_COLLECTIVE_PROTO] < APX_PROTO__COUNT ? (uint8_t)v[APX_COLLECTIVE_PROTO] : 0;
	c->flags[n] = (uint8_t)(v[APX_COLLECTIVE_FLAGS] & 0xff);
	c->n++;
	return 0;
}

int apx_es_add_counter(struct apx_store *st, uint64_t ts, uint64_t end, double value,
		       uint32_t series)
{
	struct apx_es_counters *c = &st->ct;
	int e;

	if ((e = cols_reserve(c->n, &c->cap, (const struct col[]){
				COL(c->ts), COL(c->end), COL(c->value), COL(c->series) },
				4)) < 0)
		return e;
	c->ts[c->n] = ts;
	c->end[c->n] = end > ts ? end : 0;
	c->value[c->n] = value;
	c->series[c->n] = series;
	c->n++;
	return 0;
}

int apx_es_is_nic(struct apx_es_text name)
{
	return (name.len > 4 && !memcmp(name.p, "nic.", 4)) ||
	       (name.len > 3 && !memcmp(name.p, "ib.", 3));
}

static int add_metric(struct apx_store *st, uint16_t fi, struct apx_rec *r)
{
	struct apx_es_text name = { "", 0 }, unit = { "", 0 };
	uint64_t ts = sh(st, fi, r->v[APX_METRIC_TS_NS]);
	uint32_t series, dev = UINT32_MAX;
	size_t len;
	const char *p;
	int e;

	if (!keep(st, fi, ts, ts))
		return 0;
	if ((p = apx_reader_string(st->files[fi].r, r->v[APX_METRIC_NAME], &len)) && len <= UINT32_MAX)
		name = (struct apx_es_text){ p, (uint32_t)len };
	if ((p = apx_reader_string(st->files[fi].r, r->v[APX_METRIC_UNIT], &len)) && len <= UINT32_MAX)
		unit = (struct apx_es_text){ p, (uint32_t)len };
	/* the host's NIC counters (nic.*, ib.*: apx analyze --nic-metrics) are of no GPU */
	if (!apx_es_is_nic(name) && (e = device_of(st, fi, r->v[APX_METRIC_DEVICE], &dev)) < 0)
		return e;
	if ((e = apx_es_series_of(st, fi, dev, name, unit, 0, &series)) < 0)
		return e == -E2BIG ? 0 : e;
	return apx_es_add_counter(st, ts, (r->present >> APX_METRIC_END_NS & 1) && r->v[APX_METRIC_END_NS]
					  ? sh(st, fi, r->v[APX_METRIC_END_NS]) : 0,
				  apx_rec_f64(r, APX_METRIC_VALUE), series);
}

/* Device allocations and frees become the "device memory" series in apx_es_finish(). */
static int add_memory(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	struct apx_es_priv *pv = st->priv;
	const uint64_t *v = r->v;
	struct apx_es_mem *m;
	uint32_t dev;
	int e;

	if (v[APX_MEMORY_MEM_KIND] != APX_MEM_DEVICE ||
	    (v[APX_MEMORY_OP] != APX_MEMOP_ALLOC && v[APX_MEMORY_OP] != APX_MEMOP_FREE))
		return 0;	/* a failed allocation allocated nothing */
	if ((e = device_of(st, fi, v[APX_MEMORY_DEVICE], &dev)) < 0 ||
	    (e = apx_es_grow((void **)&pv->mem, sizeof(*pv->mem), pv->nmem + 1, &pv->mem_cap)) < 0)
		return e;
	m = &pv->mem[pv->nmem++];
	m->ts = sh(st, fi, v[APX_MEMORY_TS_NS]);
	m->bytes = v[APX_MEMORY_BYTES];
	m->alloc = v[APX_MEMORY_OP] == APX_MEMOP_ALLOC;
	m->file = fi;
	m->device = dev;
	return 0;
}

static int add_thread(struct apx_store *st, uint16_t fi, const struct apx_rec *r)
{
	uint32_t t;
	int e = thread_of(st, fi, r->v[APX_THREAD_TID], &t);

	if (e < 0)
		return e;
	st->threads[t].name = rec_text(r, APX_THREAD_NAME);
	return 0;
}

static int add_record(struct apx_store *st, uint16_t fi, struct apx_rec *r)
{
	switch (r->type) {
	case APX_REC_DEVICE: return add_device(st, fi, r);
	case APX_REC_THREAD: return add_thread(st, fi, r);
	case APX_REC_KERNEL: return add_kernel(st, fi, r);
	case APX_REC_MEMCPY: return add_copy(st, fi, r);
	case APX_REC_MEMSET: return add_memset(st, fi, r);
	case APX_REC_API: return add_api(st, fi, r);
	case APX_REC_MARKER: return add_marker(st, fi, r);
	case APX_REC_SYNC: return add_sync(st, fi, r);
	case APX_REC_METRIC: return add_metric(st, fi, r);
	case APX_REC_MEMORY: return add_memory(st, fi, r);
	case APX_REC_FRAME: return apx_es_add_frame(st, fi, r);
	case APX_REC_STACK: return apx_es_add_stack(st, fi, r);
	case APX_REC_SAMPLE: return add_sample(st, fi, r);
	case APX_REC_COLLECTIVE: return add_collective(st, fi, r);
	default: return 0;
	}
}

/* ---- files ------------------------------------------------------------------------------------ */

uint32_t apx_store_device_of(const struct apx_store *st, uint16_t file, uint64_t ordinal)
{
	const struct apx_es_priv *pv = st->priv;

	if (file >= st->nfiles)
		return UINT32_MAX;
	if (ordinal < APX_ES_ORDINALS)
		return pv->file_dev[file][ordinal] ? pv->file_dev[file][ordinal] - 1 : UINT32_MAX;
	for (size_t i = 0; i < st->ndevices; i++)
		if (st->devices[i].host == st->files[file].host && st->devices[i].ordinal == ordinal)
			return (uint32_t)i;
	return UINT32_MAX;
}

struct apx_store *apx_store_new(const struct apx_store_opts *opts)
{
	struct apx_store *st = calloc(1, sizeof(*st));
	struct apx_es_priv *pv = calloc(1, sizeof(*pv));

	if (!st || !pv) {
		free(st);
		free(pv);
		return NULL;
	}
	st->priv = pv;
	if (opts)
		pv->opts = *opts;
	return st;
}

/* A reader the store gives up: closed unless it is the caller's (opts.borrow_readers). */
static void drop_reader(const struct apx_es_priv *pv, struct apx_reader *rd)
{
	if (!pv || !pv->opts.borrow_readers)
		apx_reader_close(rd);
}

int apx_store_add_reader(struct apx_store *st, const char *name, struct apx_reader *rd,
			 struct apx_diag *diag)
{
	struct apx_es_priv *pv = st->priv;
	size_t fcap = pv->files_cap, dcap = pv->files_cap, n = st->nfiles;
	struct apx_es_file *f;
	const struct apx_rec *h;
	int r;

	if (n >= APX_STORE_MAX_FILES || pv->built) {
		drop_reader(pv, rd);
		if (diag)
			snprintf(diag->msg, sizeof(diag->msg), "more than %d files", APX_STORE_MAX_FILES);
		return diag ? (diag->err = -E2BIG) : -E2BIG;
	}
	if ((r = apx_es_grow((void **)&st->files, sizeof(*st->files), n + 1, &pv->files_cap)) < 0 ||
	    (r = apx_es_grow((void **)&pv->file_dev, sizeof(*pv->file_dev), n + 1, &fcap)) < 0 ||
	    (r = apx_es_grow((void **)&pv->file_sid, sizeof(*pv->file_sid), n + 1, &dcap)) < 0) {
		drop_reader(pv, rd);
		return r;
	}
	f = &st->files[n];
	memset(f, 0, sizeof(*f));
	memset(pv->file_dev[n], 0, sizeof(pv->file_dev[n]));
	memset(&pv->file_sid[n], 0, sizeof(pv->file_sid[n]));
	f->path = name;
	f->r = rd;
	h = apx_reader_header(rd);
	f->status = apx_reader_status(rd);
	f->pid = h->v[APX_HEADER_PID];
	f->ppid = h->v[APX_HEADER_PPID];
	f->rank = apx_rec_i64(h, APX_HEADER_RANK);
	f->world = h->v[APX_HEADER_WORLD_SIZE];
	f->local_rank = f->world && (h->present >> APX_HEADER_LOCAL_RANK & 1)
			? apx_rec_i64(h, APX_HEADER_LOCAL_RANK) : -1;
	if (f->local_rank < -1)
		f->local_rank = -1;
	f->argv = rec_text(h, APX_HEADER_ARGV);
	f->run_id = rec_text(h, APX_HEADER_RUN_ID);
	if ((r = host_index(st, rec_text(h, APX_HEADER_HOSTNAME), &f->host)) < 0) {
		drop_reader(pv, rd);
		return r;
	}
	st->nfiles++;
	return 0;
}

/* Files of other hosts are moved onto the first file's clock through their wall-clock offsets
 * (unless the caller keeps every file's clock); files of one host share CLOCK_MONOTONIC and
 * are not moved. */
static void align_clocks(struct apx_store *st)
{
	const struct apx_es_priv *pv = st->priv;
	int64_t ref = apx_rec_i64(apx_reader_header(st->files[0].r), APX_HEADER_REALTIME_OFFSET_NS);

	st->run_start_ns = UINT64_MAX;
	for (size_t i = 0; i < st->nfiles; i++) {
		struct apx_es_file *f = &st->files[i];
		const struct apx_rec *h = apx_reader_header(f->r);

		if (f->host != st->files[0].host && !pv->opts.keep_clocks)
			f->shift_ns = apx_rec_i64(h, APX_HEADER_REALTIME_OFFSET_NS) - ref;
		if (h->v[APX_HEADER_START_NS] &&
		    (uint64_t)((int64_t)h->v[APX_HEADER_START_NS] + f->shift_ns) < st->run_start_ns)
			st->run_start_ns = (uint64_t)((int64_t)h->v[APX_HEADER_START_NS] + f->shift_ns);
	}
	if (st->run_start_ns == UINT64_MAX)
		st->run_start_ns = 0;
	if (pv->opts.origin_utc_ns && pv->opts.origin_utc_ns <= INT64_MAX) {
		int64_t o;	/* on the first file's clock */

		if (!__builtin_sub_overflow((int64_t)pv->opts.origin_utc_ns, ref, &o) && o > 0 &&
		    (uint64_t)o <= st->run_start_ns)
			st->run_start_ns = (uint64_t)o;
	}
}

static int load_oom(struct apx_diag *diag, struct apx_reader *rd, size_t c, int e)
{
	if (diag) {
		diag->err = e;
		diag->offset = apx_reader_chunk(rd, c)->offset;
		diag->chunk = (int64_t)c;
		snprintf(diag->msg, sizeof(diag->msg), "out of memory at chunk %zu (%s) at offset %llu",
			 c, apx_rec_type_name(apx_reader_chunk(rd, c)->type),
			 (unsigned long long)apx_reader_chunk(rd, c)->offset);
	}
	return e;
}

/* A chunk whose records (lost of them) cannot be read: a newer writer's (-ENOTSUP, skipped
 * as apx info says) or undecodable, which makes the file damaged (d says where: the first
 * place is kept). */
static void chunk_lost(struct apx_es_file *f, int err, const struct apx_diag *d, uint32_t lost)
{
	if (err == -ENOTSUP) {
		f->chunks_unknown++;
		return;
	}
	f->records_lost += lost;
	f->chunks_lost++;
	f->status = APX_READ_DAMAGED;
	if (f->damage.msg[0])
		return;
	f->damage = *d;
	if (!f->damage.msg[0])
		snprintf(f->damage.msg, sizeof(f->damage.msg), "a chunk's records cannot be read: %s",
			 strerror(-err));
}

/* A chunk (or its rest) not read: counted in st's file, told to st's hook. */
static void chunk_skipped(struct apx_store *st, uint16_t fi, size_t c, int err,
			  const struct apx_diag *d, uint32_t lost)
{
	const struct apx_es_priv *pv = st->priv;

	chunk_lost(&st->files[fi], err, d, lost);
	if (pv->opts.on_chunk)	/* unknown types and versions: skipped, as apx info says */
		pv->opts.on_chunk(pv->opts.ctx, fi, c, err, d, lost);
}

/* One record into st's columns, then st's hook. */
static int take_record(struct apx_store *st, uint16_t fi, struct apx_rec *rec)
{
	const struct apx_es_priv *pv = st->priv;
	int e;

	if ((e = add_record(st, fi, rec)) < 0 ||
	    (pv->opts.on_record && (e = pv->opts.on_record(pv->opts.ctx, fi, rec)) < 0))
		return e;
	return 0;
}

/* Every readable record of a file: the store's columns, then the caller's hook, and the same
 * in twin (NULL: none). Chunks that cannot be read are skipped (and told to the hooks). */
static int load_file(struct apx_store *st, struct apx_store *twin, uint16_t fi,
		     struct apx_diag *diag)
{
	struct apx_reader *rd = st->files[fi].r;

	for (size_t c = 0; c < apx_reader_chunk_count(rd); c++) {
		struct apx_chunk_iter it;
		struct apx_diag d = { 0 };
		uint32_t done = 0, lost;
		int r, e;

		if ((r = apx_chunk_iter_init(&it, rd, c, &d)) < 0) {
			lost = apx_reader_chunk(rd, c)->records;
			chunk_skipped(st, fi, c, r, &d, lost);
			if (twin)
				chunk_skipped(twin, fi, c, r, &d, lost);
			continue;
		}
		while ((r = apx_chunk_iter_next(&it, &d)) > 0) {
			done++;
			if ((e = take_record(st, fi, &it.rec)) < 0 ||
			    (twin && (e = take_record(twin, fi, &it.rec)) < 0))
				return load_oom(diag, rd, c, e);
		}
		if (r < 0) {
			lost = apx_reader_chunk(rd, c)->records - done;
			chunk_skipped(st, fi, c, r, &d, lost);
			if (twin)
				chunk_skipped(twin, fi, c, r, &d, lost);
		}
		apx_reader_release(rd, c);
	}
	return 0;
}

/* The store after its records: the stacks resolved, the columns sorted and indexed. */
static int build_end(struct apx_store *st)
{
	int r = apx_es_resolve_stacks(st);

	return r < 0 ? r : apx_es_finish(st);
}

static int build(struct apx_store *st, struct apx_store *twin, struct apx_diag *diag)
{
	struct apx_es_priv *pv = st->priv;
	int r;

	if (pv->built)
		return -EALREADY;
	pv->built = 1;
	if (twin)
		((struct apx_es_priv *)twin->priv)->built = 1;
	if (!st->nfiles)
		return 0;	/* an empty store */
	align_clocks(st);
	if (twin)
		align_clocks(twin);
	for (size_t i = 0; i < st->nfiles; i++)
		if ((r = load_file(st, twin, (uint16_t)i, diag)) < 0)
			return r;
	if ((r = build_end(st)) < 0)
		return r;
	return twin ? build_end(twin) : 0;
}

int apx_store_build(struct apx_store *st, struct apx_diag *diag)
{
	return build(st, NULL, diag);
}

int apx_store_build_twin(struct apx_store *st, struct apx_store *twin, struct apx_diag *diag)
{
	const struct apx_es_priv *tv = twin->priv;

	if (twin->nfiles != st->nfiles || tv->built || !tv->opts.borrow_readers)
		return -EINVAL;
	for (size_t i = 0; i < st->nfiles; i++)
		if (twin->files[i].r != st->files[i].r)
			return -EINVAL;
	return build(st, twin, diag);
}

int apx_store_open(const char *const *paths, size_t npaths, const struct apx_store_opts *opts,
		   struct apx_store **ret_store, struct apx_diag *diag)
{
	return apx_store_open_with(paths, npaths, opts, apx_reader_open, ret_store, diag);
}

int apx_store_open_with(const char *const *paths, size_t npaths,
			const struct apx_store_opts *opts,
			int (*open_file)(const char *path, struct apx_reader **ret,
					 struct apx_diag *diag),
			struct apx_store **ret_store, struct apx_diag *diag)
{
	struct apx_store *st;
	int r = -ENOMEM;

	if (!npaths || npaths > APX_STORE_MAX_FILES)
		return -EINVAL;
	st = apx_store_new(opts);
	if (!st)
		return -ENOMEM;
	for (size_t i = 0; i < npaths; i++) {
		struct apx_reader *rd;

		if ((r = open_file(paths[i], &rd, diag)) < 0 ||
		    (r = apx_store_add_reader(st, paths[i], rd, diag)) < 0)
			goto fail;
	}
	if ((r = apx_store_build(st, diag)) < 0)
		goto fail;
	*ret_store = st;
	return 0;
fail:
	apx_store_free(st);
	return r;
}

void apx_store_free(struct apx_store *st)
{
	struct apx_es_priv *pv;

	if (!st)
		return;
	pv = st->priv;
	for (size_t i = 0; i < st->nfiles; i++)
		drop_reader(pv, st->files[i].r);
	free(st->files);
	free(st->hosts);
	free(st->devices);
	free(st->streams);
	free(st->threads);
	free(st->strings);
	free(st->launches);
	free(st->series);
	free(st->knames);
	free(st->string_kname);
	{
		void *cols[] = { st->k.start, st->k.dur, st->k.corr, st->k.stream, st->k.name,
				 st->k.launch, st->k.stack, st->c.stack, st->s.stack, st->y.stack,
				 st->a.stack,
				 st->smp.ts, st->smp.cpu_ns, st->smp.thread, st->smp.stack,
				 st->smp.period, st->smp.syscall, st->smp.state, st->ku.corr, st->ku.stream, st->ku.name, st->ku.launch,
				 st->c.start, st->c.end, st->c.bytes, st->c.corr,
				 st->c.stream, st->c.kind, st->c.src, st->c.dst, st->c.flags,
				 st->c.host_addr, st->c.api_enter, st->c.api_exit, st->c.host_fp,
				 st->s.start, st->s.end, st->s.bytes, st->s.corr,
				 st->s.stream, st->s.kind, st->s.flags, st->a.start, st->a.end,
				 st->a.corr, st->a.thread, st->a.name, st->a.cbid, st->a.domain,
				 st->mk.start, st->mk.end, st->mk.thread, st->mk.name, st->mk.kind,
				 st->mk.seq, st->mk.torch, st->k.launch_ns, st->k.lthread,
				 st->k.othread,
				 st->y.start, st->y.end, st->y.thread, st->y.stream, st->y.kind, st->y.corr,
				 st->ct.ts, st->ct.end, st->ct.value, st->ct.series,
				 st->coll.enq, st->coll.enq_end, st->coll.start, st->coll.end,
				 st->coll.count, st->coll.bytes, st->coll.comm, st->coll.seq,
				 st->coll.stream, st->coll.peer, st->coll.rank, st->coll.device,
				 st->coll.nranks, st->coll.file, st->coll.channels, st->coll.func,
				 st->coll.dtype, st->coll.algo, st->coll.proto, st->coll.flags };

		for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
			free(cols[i]);
	}
	apx_es_free_stacks(st);
	if (pv) {
		struct apx_es_table *t[] = { &pv->strings_t, &pv->launches_t, &pv->streams_t,
					     &pv->threads_t };

		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			free(t[i]->slot);
			free(t[i]->hash);
		}
		for (size_t i = 0; pv->file_sid && i < st->nfiles; i++)
			apx_sidmap_free(&pv->file_sid[i]);
		free(pv->file_sid);
		free(pv->file_dev);
		free(pv->kname_last);
		free(pv->klong);
		free(pv->mem);
		free(pv->gpu_by_corr);
		free(pv->api_by_corr);
		free(pv);
	}
	free(st);
}
