/*
 * store_sort.c - the event store's order and indices (store.h): sorts every column by start
 * time once loading is done (a column already in order is left alone), turns device
 * allocations into a "device memory" series per device and file, and answers the ordered-stream
 * and correlation queries. Called through apx_store_open() and by the exporters;
 * single-threaded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/store_priv.h"

#include "base/banned.h"

static int cmp_by_key(const void *a, const void *b, void *keys)
{
	const uint64_t *k = keys;
	uint64_t x = k[*(const uint32_t *)a], y = k[*(const uint32_t *)b];

	if (x != y)
		return x < y ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;	/* stable */
}

/* Apply the permutation `order` to an array of n elements of elem bytes. */
static int permute(void *arr, size_t elem, const uint32_t *order, size_t n)
{
	uint8_t *tmp = malloc(n * elem), *a = arr;

	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		memcpy(tmp + i * elem, a + (size_t)order[i] * elem, elem);
	memcpy(a, tmp, n * elem);
	free(tmp);
	return 0;
}

struct col {
	void *arr;
	size_t elem;
};

static int cmp_long(const void *a, const void *b)
{
	const struct apx_es_long *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

/* After the kernels were sorted by `order` (row i was row order[i]): the long kernels' rows,
 * visited in the new order, so the new table is by index again. */
static int remap_long(struct apx_store *st, const uint32_t *order)
{
	struct apx_es_priv *pv = st->priv;
	struct apx_es_long *out;
	size_t j = 0;

	if (!pv->nklong)
		return 0;
	out = malloc(pv->nklong * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < st->k.n && j < pv->nklong; i++) {
		struct apx_es_long key = { order[i], 0 };
		const struct apx_es_long *l;

		if (st->k.dur[i] != UINT32_MAX)
			continue;
		l = bsearch(&key, pv->klong, pv->nklong, sizeof(*l), cmp_long);
		out[j++] = (struct apx_es_long){ (uint32_t)i, l ? l->end : st->k.start[i] + UINT32_MAX };
	}
	free(pv->klong);
	pv->klong = out;
	pv->nklong = j;
	pv->klong_cap = pv->nklong;
	return 0;
}

/* Sort the columns of one type by keys (its start times, one of the columns); kernels also
 * move their long-kernel table. */
static int sort_cols(struct apx_store *st, uint64_t *keys, size_t n, const struct col *cols,
		     size_t ncols)
{
	uint32_t *order;
	int r = 0;
	size_t i;

	for (i = 1; i < n && keys[i - 1] <= keys[i]; i++)
		;
	if (i >= n)
		return 0;	/* already in order */
	if (n > UINT32_MAX)
		return -E2BIG;
	order = malloc(n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), cmp_by_key, keys);
	for (i = 0; i < ncols && !r; i++)
		r = permute(cols[i].arr, cols[i].elem, order, n);
	if (!r && keys == st->k.start)
		r = remap_long(st, order);
	free(order);
	return r;
}

#define C(a) { (a), sizeof(*(a)) }

static int sort_all(struct apx_store *st)
{
	struct apx_es_kernels *k = &st->k;
	struct apx_es_copies *c = &st->c;
	struct apx_es_memsets *s = &st->s;
	struct apx_es_apis *a = &st->a;
	struct apx_es_markers *m = &st->mk;
	struct apx_es_syncs *y = &st->y;
	struct apx_es_counters *t = &st->ct;
	int r;

	/* the order is computed first, then every column (the key one too) is permuted */
	if ((r = sort_cols(st, k->start, k->n, (const struct col[]){ C(k->dur), C(k->corr), C(k->stream),
			   C(k->name), C(k->launch), C(k->stack), C(k->launch_ns), C(k->lthread),
			   C(k->othread), C(k->start) }, 10)) < 0 ||
	    (r = sort_cols(st, c->start, c->n, (const struct col[]){ C(c->end), C(c->bytes), C(c->corr),
			   C(c->stream), C(c->kind), C(c->src), C(c->dst), C(c->flags),
			   C(c->host_addr), C(c->api_enter), C(c->api_exit), C(c->host_fp),
			   C(c->stack), C(c->start) }, 14)) < 0 ||
	    (r = sort_cols(st, s->start, s->n, (const struct col[]){ C(s->end), C(s->bytes), C(s->corr),
			   C(s->stream), C(s->kind), C(s->flags), C(s->stack), C(s->start) }, 8)) < 0 ||
	    (r = sort_cols(st, a->start, a->n, (const struct col[]){ C(a->end), C(a->corr), C(a->thread),
			   C(a->name), C(a->cbid), C(a->domain), C(a->stack), C(a->start) }, 8)) < 0 ||
	    (r = sort_cols(st, m->start, m->n, (const struct col[]){ C(m->end), C(m->thread), C(m->name),
			   C(m->kind), C(m->seq), C(m->torch), C(m->start) }, 7)) < 0 ||
	    (r = sort_cols(st, y->start, y->n, (const struct col[]){ C(y->end), C(y->thread), C(y->stream),
			   C(y->kind), C(y->stack), C(y->corr), C(y->start) }, 7)) < 0 ||
	    (r = sort_cols(st, st->smp.ts, st->smp.n, (const struct col[]){ C(st->smp.cpu_ns),
			   C(st->smp.thread), C(st->smp.stack), C(st->smp.period), C(st->smp.syscall),
			   C(st->smp.state), C(st->smp.ts) }, 7)) < 0 ||
	    (r = sort_cols(st, t->ts, t->n, (const struct col[]){ C(t->end), C(t->value), C(t->series),
			   C(t->ts) }, 4)) < 0)
		return r;
	return 0;
}

static int cmp_mem(const void *a, const void *b)
{
	const struct apx_es_mem *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int in_window(const struct apx_store *st, uint64_t ts)
{
	const struct apx_es_priv *pv = st->priv;

	return (!pv->opts.from_ns || ts >= st->run_start_ns + pv->opts.from_ns) &&
	       (!pv->opts.to_ns || ts < st->run_start_ns + pv->opts.to_ns);
}

/* Device memory in use over time, per (file, device): allocations add, frees take away. The
 * whole run is counted; samples outside --from/--to are not kept. */
static int memory_series(struct apx_store *st)
{
	struct apx_es_priv *pv = st->priv;
	static const char name[] = "device memory";
	static const char unit[] = "bytes";
	struct apx_es_text tn = { name, sizeof(name) - 1 }, tu = { unit, sizeof(unit) - 1 };
	double *now;
	int r = 0;

	if (!pv->nmem)
		return 0;
	now = calloc(APX_ES_SERIES_MAX, sizeof(*now));
	if (!now)
		return -ENOMEM;
	qsort(pv->mem, pv->nmem, sizeof(*pv->mem), cmp_mem);
	for (size_t i = 0; i < pv->nmem && r >= 0; i++) {
		const struct apx_es_mem *m = &pv->mem[i];
		double b = (double)m->bytes;
		uint32_t series;

		if ((r = apx_es_series_of(st, m->file, m->device, tn, tu, 1, &series)) < 0) {
			r = r == -E2BIG ? 0 : r;
			break;
		}
		now[series] = m->alloc ? now[series] + b : (now[series] > b ? now[series] - b : 0);
		if (in_window(st, m->ts))
			r = apx_es_add_counter(st, m->ts, 0, now[series], series);
	}
	free(now);
	return r;
}

static void run_end(struct apx_store *st)
{
	for (int t = 0; t < APX_ES__COUNT; t++) {
		size_t n = apx_store_count(st, (enum apx_es_type)t);

		st->events += n;
		for (size_t i = 0; i < n; i++) {
			uint64_t e = apx_store_end(st, (enum apx_es_type)t, i);

			if (e > st->run_end_ns)
				st->run_end_ns = e;
		}
	}
	if (st->run_end_ns < st->run_start_ns)
		st->run_end_ns = st->run_start_ns;
}

int apx_es_finish(struct apx_store *st)
{
	int r = memory_series(st);

	if (r < 0 || (r = sort_all(st)) < 0)
		return r;
	run_end(st);
	return 0;
}

/* ---- queries ------------------------------------------------------------------------------- */

size_t apx_store_count(const struct apx_store *st, enum apx_es_type type)
{
	switch (type) {
	case APX_ES_KERNEL: return st->k.n;
	case APX_ES_COPY: return st->c.n;
	case APX_ES_MEMSET: return st->s.n;
	case APX_ES_API: return st->a.n;
	case APX_ES_MARKER: return st->mk.n;
	case APX_ES_SYNC: return st->y.n;
	case APX_ES_COUNTER: return st->ct.n;
	default: return 0;
	}
}

uint64_t apx_store_start(const struct apx_store *st, enum apx_es_type type, size_t i)
{
	switch (type) {
	case APX_ES_KERNEL: return st->k.start[i];
	case APX_ES_COPY: return st->c.start[i];
	case APX_ES_MEMSET: return st->s.start[i];
	case APX_ES_API: return st->a.start[i];
	case APX_ES_MARKER: return st->mk.start[i];
	case APX_ES_SYNC: return st->y.start[i];
	case APX_ES_COUNTER: return st->ct.ts[i];
	default: return 0;
	}
}

static uint64_t kernel_end(const struct apx_store *st, size_t i)
{
	const struct apx_es_priv *pv = st->priv;
	struct apx_es_long key = { (uint32_t)i, 0 }, *l;

	if (st->k.dur[i] != UINT32_MAX)
		return st->k.start[i] + st->k.dur[i];
	l = bsearch(&key, pv->klong, pv->nklong, sizeof(*l), cmp_long);
	return l ? l->end : st->k.start[i] + UINT32_MAX;
}

uint64_t apx_store_end(const struct apx_store *st, enum apx_es_type type, size_t i)
{
	switch (type) {
	case APX_ES_KERNEL: return kernel_end(st, i);
	case APX_ES_COPY: return st->c.end[i];
	case APX_ES_MEMSET: return st->s.end[i];
	case APX_ES_API: return st->a.end[i];
	case APX_ES_MARKER: return st->mk.end[i];
	case APX_ES_SYNC: return st->y.end[i];
	case APX_ES_COUNTER: return st->ct.ts[i];
	default: return 0;
	}
}

uint16_t apx_store_file_of(const struct apx_store *st, enum apx_es_type type, size_t i)
{
	switch (type) {
	case APX_ES_KERNEL: return st->streams[st->k.stream[i]].file;
	case APX_ES_COPY: return st->streams[st->c.stream[i]].file;
	case APX_ES_MEMSET: return st->streams[st->s.stream[i]].file;
	case APX_ES_API: return st->threads[st->a.thread[i]].file;
	case APX_ES_MARKER: return st->threads[st->mk.thread[i]].file;
	case APX_ES_SYNC: return st->threads[st->y.thread[i]].file;
	case APX_ES_COUNTER: return st->series[st->ct.series[i]].file;
	default: return 0;
	}
}

void apx_store_iter_init(struct apx_store_iter *it)
{
	memset(it, 0, sizeof(*it));
}

int apx_store_next(const struct apx_store *st, struct apx_store_iter *it,
		   enum apx_es_type *ret_type, size_t *ret_index)
{
	int best = -1;
	uint64_t best_t = 0;

	for (int t = 0; t < APX_ES__COUNT; t++) {
		uint64_t s;

		if (it->pos[t] >= apx_store_count(st, (enum apx_es_type)t))
			continue;
		s = apx_store_start(st, (enum apx_es_type)t, it->pos[t]);
		if (best < 0 || s < best_t) {
			best = t;
			best_t = s;
		}
	}
	if (best < 0)
		return 0;
	*ret_type = (enum apx_es_type)best;
	*ret_index = it->pos[best]++;
	return 1;
}

/* ---- correlation ----------------------------------------------------------------------------- */

static int cmp_corr(const void *a, const void *b)
{
	const struct apx_es_corr *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int build_corr(struct apx_store *st)
{
	struct apx_es_priv *pv = st->priv;
	static const enum apx_es_type gpu[] = { APX_ES_KERNEL, APX_ES_COPY, APX_ES_MEMSET };
	size_t ng = st->k.n + st->c.n + st->s.n, k = 0;

	if (pv->corr_built)
		return 0;
	pv->gpu_by_corr = malloc((ng ? ng : 1) * sizeof(*pv->gpu_by_corr));
	pv->api_by_corr = malloc((st->a.n ? st->a.n : 1) * sizeof(*pv->api_by_corr));
	if (!pv->gpu_by_corr || !pv->api_by_corr)
		return -ENOMEM;
	for (size_t g = 0; g < 3; g++) {
		size_t n = apx_store_count(st, gpu[g]);
		const uint32_t *corr = gpu[g] == APX_ES_KERNEL ? st->k.corr
				       : gpu[g] == APX_ES_COPY ? st->c.corr : st->s.corr;

		for (size_t i = 0; i < n; i++) {
			if (!corr[i])
				continue;
			pv->gpu_by_corr[k++] = (struct apx_es_corr){ corr[i],
				apx_store_file_of(st, gpu[g], i), (uint8_t)gpu[g], (uint32_t)i };
		}
	}
	pv->ngpu_corr = k;
	k = 0;
	for (size_t i = 0; i < st->a.n; i++)
		if (st->a.corr[i])
			pv->api_by_corr[k++] = (struct apx_es_corr){ st->a.corr[i],
				apx_store_file_of(st, APX_ES_API, i), APX_ES_API, (uint32_t)i };
	pv->napi_corr = k;
	qsort(pv->gpu_by_corr, pv->ngpu_corr, sizeof(*pv->gpu_by_corr), cmp_corr);
	qsort(pv->api_by_corr, pv->napi_corr, sizeof(*pv->api_by_corr), cmp_corr);
	pv->corr_built = 1;
	return 0;
}

static const struct apx_es_corr *find_corr(const struct apx_es_corr *a, size_t n, uint16_t file,
					   uint32_t corr)
{
	struct apx_es_corr key = { corr, file, 0, 0 };

	return bsearch(&key, a, n, sizeof(*a), cmp_corr);
}

int apx_store_gpu_of_api(struct apx_store *st, size_t api, enum apx_es_type *ret_type,
			 size_t *ret_index)
{
	struct apx_es_priv *pv = st->priv;
	const struct apx_es_corr *c;
	int r = build_corr(st);

	if (r < 0)
		return r;
	if (api >= st->a.n || !st->a.corr[api])
		return -ENOENT;
	c = find_corr(pv->gpu_by_corr, pv->ngpu_corr, apx_store_file_of(st, APX_ES_API, api),
		      st->a.corr[api]);
	if (!c)
		return -ENOENT;
	*ret_type = (enum apx_es_type)c->type;
	*ret_index = c->index;
	return 0;
}

int apx_store_api_of_gpu(struct apx_store *st, enum apx_es_type type, size_t i, size_t *ret_api)
{
	struct apx_es_priv *pv = st->priv;
	const struct apx_es_corr *c;
	const uint32_t *corr;
	int r = build_corr(st);

	if (r < 0)
		return r;
	if (i >= apx_store_count(st, type))
		return -ENOENT;
	corr = type == APX_ES_KERNEL ? st->k.corr : type == APX_ES_COPY ? st->c.corr
		: type == APX_ES_MEMSET ? st->s.corr : NULL;
	if (!corr || !corr[i])
		return -ENOENT;
	c = find_corr(pv->api_by_corr, pv->napi_corr, apx_store_file_of(st, type, i), corr[i]);
	if (!c)
		return -ENOENT;
	*ret_api = c->index;
	return 0;
}
