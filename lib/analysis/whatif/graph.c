/*
 * graph.c - builds the what-if graph of the steady window (whatif.h) from the event store:
 * the tasks of one process in host order, the host's arrival at each (recorded for copies,
 * syncs and, in level api traces or where the collector kept a kernel's launch time, launches;
 * inferred for the rest), what each waits for, and
 * per GPU operation what its recorded start is explained by (launch, stream, engine, another
 * stream's operation) and the delay nothing explains. Called once by apx_model_finish()
 * (finish.c) after the steps, the steady window and the timelines; never prints.
 */
#include "analysis/whatif/whatif.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/alloc_time.h"
#include "analysis/idle_attrib.h"
#include "analysis/model.h"
#include "analysis/store.h"

#include "base/banned.h"

/* A task while building: its sort key (correlation id, then kind), arrival, host end. */
struct item {
	uint64_t key;
	uint64_t arrive, hend;		/* recorded host times (arrive 0: infer) */
	uint64_t api_start, api_end;	/* a level api launch call, 0 none */
	struct apx_wi_task t;
};

struct pair {
	uint64_t a, b;
};

static int cmp_item(const void *x, const void *y)
{
	const struct item *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->t.rec_start < b->t.rec_start ? -1 : a->t.rec_start > b->t.rec_start;
}

static int cmp_pair(const void *x, const void *y)
{
	const struct pair *a = x, *b = y;

	return a->a < b->a ? -1 : a->a > b->a;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static int push(struct item **v, size_t *n, size_t *cap, const struct item *it)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		struct item *p = realloc(*v, nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = *it;
	return 0;
}

static uint32_t step_of(const struct apx_model *m, uint64_t ts)
{
	size_t lo = 0, hi;

	if (!m->steady.bounds || !m->steady.count)
		return APX_WI_NONE;
	hi = m->steady.count;
	if (ts < m->steady.bounds[0] || ts >= m->steady.bounds[hi])
		return APX_WI_NONE;
	while (hi - lo > 1) {		/* bounds[lo] <= ts < bounds[hi] */
		size_t mid = lo + (hi - lo) / 2;

		if (m->steady.bounds[mid] <= ts)
			lo = mid;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

struct build {
	struct apx_model *m;
	const struct apx_store *st;
	struct apx_whatif *w;
	uint32_t *gstream;		/* store stream -> graph stream + 1 */
	uint32_t *gdev;			/* store device -> graph device + 1 */
	uint32_t streams_cap;		/* w->streams' capacity */
	struct item *it;
	size_t n, cap;
	struct pair *ops;		/* (start, corr) of the file's operations, by start */
	size_t nops;
	struct pair *api;		/* (corr, index) of the file's API calls, by corr */
	size_t napi;
};

static int graph_stream(struct build *b, uint32_t es, uint32_t *ret)
{
	struct apx_whatif *w = b->w;
	uint32_t dev = b->st->streams[es].device;

	if (!b->gdev[dev]) {
		uint8_t *c = realloc(w->dev_concurrent, w->ndevices + 1);

		if (!c)
			return -ENOMEM;
		w->dev_concurrent = c;
		c[w->ndevices] = 0;
		b->gdev[dev] = ++w->ndevices;
	}
	if (!b->gstream[es]) {
		struct apx_wi_stream *s = w->streams;

		if (w->nstreams == b->streams_cap) {	/* geometric: many streams (hashed) */
			b->streams_cap = b->streams_cap ? 2 * b->streams_cap : 16;
			s = realloc(w->streams, b->streams_cap * sizeof(*s));
			if (!s)
				return -ENOMEM;
			w->streams = s;
		}
		memset(&s[w->nstreams], 0, sizeof(*s));
		s[w->nstreams].es = es;
		s[w->nstreams].device = b->gdev[dev] - 1;
		b->gstream[es] = ++w->nstreams;
	}
	*ret = b->gstream[es] - 1;
	return 0;
}

/* The level api launch call of an operation (correlation id), or none. */
static void api_of(struct build *b, uint32_t corr, struct item *it)
{
	size_t lo = 0, hi = b->napi;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->api[mid].a < corr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < b->napi && b->api[lo].a == corr) {
		it->api_start = b->st->a.start[b->api[lo].b];
		it->api_end = b->st->a.end[b->api[lo].b];
	}
}

static int add_op(struct build *b, enum apx_wi_kind kind, size_t i, uint32_t es, uint32_t corr,
		  uint64_t start, uint64_t end)
{
	struct item it;
	int r;

	memset(&it, 0, sizeof(it));
	it.key = (uint64_t)corr << 2 | 1;
	it.t.kind = (uint8_t)kind;
	it.t.src = (uint32_t)i;
	it.t.rec_start = start;
	it.t.rec_end = end > start ? end : start;
	it.t.dur_ns = it.t.rec_end - start;
	it.t.await = it.t.dep = APX_WI_NONE;
	it.t.engine = APX_WI_ENG_COMPUTE;
	if ((r = graph_stream(b, es, &it.t.stream)) < 0)
		return r;
	it.t.device = b->w->streams[it.t.stream].device;
	if (b->napi)
		api_of(b, corr, &it);
	if (kind == APX_WI_KERNEL && !it.api_start && b->st->k.launch_ns &&
	    b->st->k.launch_ns[i] && b->st->k.launch_ns[i] <= start)
		it.api_start = it.api_end = b->st->k.launch_ns[i];	/* its launch's enter */
	return push(&b->it, &b->n, &b->cap, &it);
}

/* The file whose GPU operations fill most of the window. */
static uint16_t main_file(const struct apx_store *st, uint64_t ws, uint64_t we, uint64_t *cnt)
{
	uint16_t best = 0;

	for (size_t i = 0; i < st->k.n; i++)
		if (st->k.start[i] >= ws && st->k.start[i] < we)
			cnt[st->streams[st->k.stream[i]].file] += 1 + st->k.dur[i] / 1000;
	for (size_t i = 0; i < st->c.n; i++)
		if (st->c.start[i] >= ws && st->c.start[i] < we)
			cnt[st->streams[st->c.stream[i]].file] += 1 + (st->c.end[i] - st->c.start[i]) / 1000;
	for (size_t f = 1; f < st->nfiles; f++)
		if (cnt[f] > cnt[best])
			best = (uint16_t)f;
	return best;
}

static int collect(struct build *b, uint16_t file)
{
	const struct apx_store *st = b->st;
	struct apx_whatif *w = b->w;
	uint64_t ws = w->start_ns, we = w->end_ns;
	int r;

	if (b->m->files[file].has_api) {	/* launch calls and allocator calls */
		b->api = malloc((st->a.n + 1) * sizeof(*b->api));
		if (!b->api)
			return -ENOMEM;
		for (size_t i = 0; i < st->a.n; i++)
			if (st->threads[st->a.thread[i]].file == file && st->a.corr[i])
				b->api[b->napi++] = (struct pair){ st->a.corr[i], i };
		qsort(b->api, b->napi, sizeof(*b->api), cmp_pair);
	}
	b->ops = malloc((st->k.n + st->c.n + st->s.n + 1) * sizeof(*b->ops));
	if (!b->ops)
		return -ENOMEM;
	for (size_t i = 0; i < st->k.n; i++) {
		uint32_t es = st->k.stream[i];
		uint64_t s = st->k.start[i], e = apx_store_end(st, APX_ES_KERNEL, i);

		if (st->streams[es].file != file)
			continue;
		b->ops[b->nops++] = (struct pair){ s, st->k.corr[i] };
		if (s < ws || s >= we)
			continue;
		if ((r = add_op(b, APX_WI_KERNEL, i, es, st->k.corr[i], s, e)) < 0)
			return r;
		b->it[b->n - 1].t.name = st->k.name[i];
	}
	for (size_t i = 0; i < st->c.n; i++) {
		uint32_t es = st->c.stream[i];
		struct apx_wi_task *t;
		struct item *it;

		if (st->streams[es].file != file)
			continue;
		b->ops[b->nops++] = (struct pair){ st->c.start[i], st->c.corr[i] };
		if (st->c.start[i] < ws || st->c.start[i] >= we)
			continue;
		if ((r = add_op(b, APX_WI_COPY, i, es, st->c.corr[i], st->c.start[i], st->c.end[i])) < 0)
			return r;
		it = &b->it[b->n - 1];
		t = &it->t;
		t->bytes = st->c.bytes[i];
		t->copy_kind = st->c.kind[i];
		if (t->copy_kind == APX_COPY_H2D)
			t->engine = APX_WI_ENG_H2D;
		else if (t->copy_kind == APX_COPY_D2H)
			t->engine = APX_WI_ENG_D2H;
		if ((t->copy_kind == APX_COPY_H2D && st->c.src[i] == APX_MEM_PAGEABLE) ||
		    (t->copy_kind == APX_COPY_D2H && st->c.dst[i] == APX_MEM_PAGEABLE))
			t->flags |= APX_WI_F_PAGEABLE;
		if (apx_copy_small(t->bytes))
			t->flags |= APX_WI_F_SMALL;
		if (st->c.api_enter[i] && st->c.api_exit[i] >= st->c.api_enter[i]) {
			it->arrive = st->c.api_enter[i];
			it->hend = st->c.api_exit[i];
			if (it->hend >= t->rec_end &&
			    (!(st->c.flags[i] & 1) || (t->flags & APX_WI_F_PAGEABLE)))
				t->flags |= APX_WI_F_BLOCKING;
		} else if (!(st->c.flags[i] & 1) ||
			   (t->copy_kind == APX_COPY_D2H && (t->flags & APX_WI_F_PAGEABLE))) {
			t->flags |= APX_WI_F_BLOCKING;
		}
	}
	for (size_t i = 0; i < st->s.n; i++) {
		uint32_t es = st->s.stream[i];

		if (st->streams[es].file != file)
			continue;
		b->ops[b->nops++] = (struct pair){ st->s.start[i], st->s.corr[i] };
		if (st->s.start[i] < ws || st->s.start[i] >= we)
			continue;
		if ((r = add_op(b, APX_WI_MEMSET, i, es, st->s.corr[i], st->s.start[i], st->s.end[i])) < 0)
			return r;
		if (!(st->s.flags[i] & 1))
			b->it[b->n - 1].t.flags |= APX_WI_F_BLOCKING;
	}
	qsort(b->ops, b->nops, sizeof(*b->ops), cmp_pair);
	for (size_t i = 1; i < b->nops; i++)	/* b: the largest correlation id so far */
		if (b->ops[i].b < b->ops[i - 1].b)
			b->ops[i].b = b->ops[i - 1].b;
	for (size_t i = 0; i < st->y.n; i++) {
		struct item it;

		if (st->threads[st->y.thread[i]].file != file || st->y.start[i] < ws ||
		    st->y.start[i] >= we || st->y.kind[i] == APX_SYNC_KIND_STREAM_WAIT_EVENT)
			continue;
		memset(&it, 0, sizeof(it));
		if (st->y.corr[i]) {
			it.key = (uint64_t)st->y.corr[i] << 2 | 1;
		} else {	/* after the operations that started before it returned */
			size_t lo = 0, hi = b->nops;

			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (b->ops[mid].a < st->y.end[i])
					lo = mid + 1;
				else
					hi = mid;
			}
			it.key = (lo ? b->ops[lo - 1].b << 2 : 0) | 2;
		}
		it.arrive = st->y.start[i];
		it.hend = st->y.end[i];
		it.t.kind = APX_WI_SYNC;
		it.t.copy_kind = st->y.kind[i];
		it.t.src = (uint32_t)i;
		it.t.rec_start = st->y.start[i];
		it.t.rec_end = st->y.end[i];
		it.t.stream = APX_WI_NONE;
		it.t.engine = APX_WI_ENG_NONE;
		it.t.await = it.t.dep = APX_WI_NONE;
		if (st->y.stream[i] != UINT32_MAX && (r = graph_stream(b, st->y.stream[i], &it.t.stream)) < 0)
			return r;
		if ((r = push(&b->it, &b->n, &b->cap, &it)) < 0)
			return r;
	}
	for (size_t j = 0; j < b->napi; j++) {	/* allocator calls */
		size_t i = b->api[j].b;
		struct item it;

		if (st->a.start[i] < ws || st->a.start[i] >= we ||
		    !apx_alloc_call_of(apx_store_string(st, st->a.name[i])))
			continue;
		memset(&it, 0, sizeof(it));
		it.key = (uint64_t)st->a.corr[i] << 2 | 1;
		it.arrive = st->a.start[i];
		it.hend = st->a.end[i];
		it.t.kind = APX_WI_ALLOC;
		it.t.copy_kind = (uint8_t)apx_alloc_call_of(apx_store_string(st, st->a.name[i]));
		it.t.name = st->a.name[i];
		it.t.src = (uint32_t)i;
		it.t.rec_start = st->a.start[i];
		it.t.rec_end = st->a.end[i];
		it.t.stream = APX_WI_NONE;
		it.t.engine = APX_WI_ENG_NONE;
		it.t.await = it.t.dep = APX_WI_NONE;
		if ((r = push(&b->it, &b->n, &b->cap, &it)) < 0)
			return r;
	}
	for (size_t i = 0; i < b->n; i++)	/* a level api launch: its call's times */
		if (b->it[i].api_start && !b->it[i].arrive && b->it[i].api_start <= b->it[i].t.rec_start) {
			b->it[i].arrive = b->it[i].api_start;
			b->it[i].hend = b->it[i].api_end > b->it[i].api_start ? b->it[i].api_end
									      : b->it[i].api_start;
		}
	return 0;
}

/* Each stream's and engine's last end before the window. */
static void initial_state(struct build *b, uint16_t file)
{
	const struct apx_store *st = b->st;
	struct apx_whatif *w = b->w;
	const size_t nk = st->k.n, nc = st->c.n, ns = st->s.n;

	for (size_t j = 0; j < nk + nc + ns; j++) {
		uint32_t es, g, eng = APX_WI_ENG_COMPUTE;
		uint64_t s, e;

		if (j < nk) {
			es = st->k.stream[j];
			s = st->k.start[j];
			e = apx_store_end(st, APX_ES_KERNEL, j);
		} else if (j < nk + nc) {
			size_t i = j - nk;

			es = st->c.stream[i];
			s = st->c.start[i];
			e = st->c.end[i];
			eng = st->c.kind[i] == APX_COPY_H2D ? APX_WI_ENG_H2D
				: st->c.kind[i] == APX_COPY_D2H ? APX_WI_ENG_D2H : APX_WI_ENG_COMPUTE;
		} else {
			size_t i = j - nk - nc;

			es = st->s.stream[i];
			s = st->s.start[i];
			e = st->s.end[i];
		}
		if (s >= w->start_ns || st->streams[es].file != file || !b->gstream[es])
			continue;
		g = b->gstream[es] - 1;
		if (e > w->streams[g].free0)
			w->streams[g].free0 = e;
		if (e > w->eng_free0[w->streams[g].device * APX_WI_ENG__COUNT + eng])
			w->eng_free0[w->streams[g].device * APX_WI_ENG__COUNT + eng] = e;
	}
}

/* Host times: arrivals inferred backwards (no later than the GPU start, nor the next task's
 * arrival), then each task's own host costs forwards. */
static void host_times(struct build *b)
{
	struct apx_whatif *w = b->w;
	uint64_t up = UINT64_MAX, hprev = w->start_ns;

	for (size_t k = b->n; k-- > 0;) {
		struct item *it = &b->it[k];

		if (it->arrive) {
			up = it->arrive;
			continue;
		}
		up = it->t.rec_start < up ? it->t.rec_start : up;
		it->arrive = up;
		it->t.flags |= APX_WI_F_INFERRED;
		w->inferred++;
	}
	for (size_t k = 0; k < b->n; k++) {
		struct item *it = &b->it[k];
		struct apx_wi_task *t = &it->t;
		uint64_t a = it->arrive;

		if ((t->flags & APX_WI_F_INFERRED) && a < hprev)
			a = hprev;	/* launches come in order */
		t->pre_ns = a > hprev ? a - hprev : 0;
		if (a < hprev)
			a = hprev;
		if (t->flags & APX_WI_F_INFERRED)
			it->hend = (t->flags & APX_WI_F_BLOCKING) && t->rec_end > a ? t->rec_end : a;
		if (it->hend < a)
			it->hend = a;
		it->arrive = a;
		if (t->kind == APX_WI_SYNC) {
			/* await and call/ret: after the awaited task is known (awaits()) */
		} else if (t->flags & APX_WI_F_BLOCKING) {
			t->ret_ns = it->hend > t->rec_end ? it->hend - t->rec_end : 0;
			t->await = (uint32_t)k;
		} else {
			t->call_ns = it->hend - a;
		}
		if (it->hend > hprev)
			hprev = it->hend;
	}
}

/* What each sync waited for: a stream sync its stream's last earlier operation, others the
 * earlier operation that ended last before it returned. */
static void awaits(struct build *b)
{
	uint32_t *last = calloc(b->w->nstreams + 1, sizeof(*last));	/* task + 1 */
	uint32_t maxk = APX_WI_NONE;

	for (size_t k = 0; k < b->n; k++) {
		struct item *it = &b->it[k];
		struct apx_wi_task *t = &it->t;
		uint32_t aw = APX_WI_NONE;
		uint64_t s = it->arrive, e = it->hend;

		if (t->kind == APX_WI_SYNC) {
			if (t->copy_kind == APX_SYNC_KIND_STREAM && t->stream != APX_WI_NONE) {
				if (last && last[t->stream])
					aw = last[t->stream] - 1;
			} else if (maxk != APX_WI_NONE && b->it[maxk].t.rec_end <= e) {
				aw = maxk;
			} else {
				uint64_t best = 0;

				for (size_t j = k, lim = 0; j-- > 0 && lim < 4096; lim++)
					if (b->it[j].t.kind != APX_WI_SYNC && b->it[j].t.kind != APX_WI_ALLOC &&
					    b->it[j].t.rec_end <= e && b->it[j].t.rec_end > best) {
						best = b->it[j].t.rec_end;
						aw = (uint32_t)j;
					}
			}
			if (aw != APX_WI_NONE && b->it[aw].t.rec_end > s) {
				uint64_t te = b->it[aw].t.rec_end < e ? b->it[aw].t.rec_end : e;

				t->await = aw;
				t->ret_ns = e - te;
			} else {
				t->call_ns = e - s;
			}
			continue;
		}
		if (t->kind == APX_WI_ALLOC) {
			/* cudaFree waits for the device's work: like a device sync */
			if (t->copy_kind == APX_ALLOC_CALL_FREE_SYNC && maxk != APX_WI_NONE &&
			    b->it[maxk].t.rec_end > s && b->it[maxk].t.rec_end <= e) {
				t->await = maxk;
				t->call_ns = 0;
				t->ret_ns = e - b->it[maxk].t.rec_end;
			} else {
				t->call_ns = e - s;
			}
			continue;
		}
		if (last)
			last[t->stream] = (uint32_t)k + 1;
		if (maxk == APX_WI_NONE || t->rec_end > b->it[maxk].t.rec_end)
			maxk = (uint32_t)k;
	}
	free(last);
}

/* Replays the recorded times in host order: each operation's start explained by its launch,
 * its stream, its engine or another stream's operation; the rest is its delay. */
static void explain(struct build *b)
{
	struct apx_whatif *w = b->w;
	uint64_t *sl = calloc(w->nstreams + 1, sizeof(*sl));
	uint64_t *el = calloc((size_t)w->ndevices * APX_WI_ENG__COUNT + 1, sizeof(*el));
	enum { RING = 256 };
	uint32_t ring[RING];
	size_t nring = 0;

	if (!sl || !el)
		goto out;
	for (uint32_t s = 0; s < w->nstreams; s++)
		sl[s] = w->streams[s].free0;
	memcpy(el, w->eng_free0, (size_t)w->ndevices * APX_WI_ENG__COUNT * sizeof(*el));
	for (size_t k = 0; k < b->n; k++) {
		struct apx_wi_task *t = &b->it[k].t;
		uint32_t dev;
		uint64_t ex, *eng;

		if (t->kind == APX_WI_SYNC || t->kind == APX_WI_ALLOC)
			continue;
		dev = w->streams[t->stream].device;
		eng = &el[dev * APX_WI_ENG__COUNT + t->engine];
		ex = b->it[k].arrive;
		if (sl[t->stream] > ex)
			ex = sl[t->stream];
		if ((t->engine != APX_WI_ENG_COMPUTE || !w->dev_concurrent[dev]) && *eng <= t->rec_start) {
			t->flags |= APX_WI_F_SERIAL;
			if (*eng > ex)
				ex = *eng;
		}
		if (t->rec_start > ex + 1000) {	/* an event wait on another stream? */
			uint64_t best = 0;
			uint32_t bj = APX_WI_NONE;

			for (size_t r = 0; r < nring && r < RING; r++) {
				const struct apx_wi_task *o = &b->it[ring[r]].t;

				if (o->stream != t->stream && w->streams[o->stream].device == dev &&
				    o->rec_end <= t->rec_start && o->rec_end + APX_WI_DEP_NS >= t->rec_start &&
				    o->rec_end > ex && o->rec_end > best) {
					best = o->rec_end;
					bj = ring[r];
				}
			}
			if (bj != APX_WI_NONE) {
				t->dep = bj;
				w->deps++;
				ex = best;
			}
		}
		if (t->rec_start > ex) {
			t->delay_ns = t->rec_start - ex;
			w->delayed++;
			w->delay_ns += t->delay_ns;
		}
		t->gap_ns = t->rec_start > sl[t->stream] ? t->rec_start - sl[t->stream] : 0;
		if (t->rec_end > sl[t->stream])
			sl[t->stream] = t->rec_end;
		if ((t->flags & APX_WI_F_SERIAL) && t->rec_end > *eng)
			*eng = t->rec_end;
		ring[nring++ % RING] = (uint32_t)k;
	}
out:
	free(sl);
	free(el);
}

static void concurrency(struct build *b)
{
	struct apx_whatif *w = b->w;

	for (size_t i = 0; i < b->m->timelines.n; i++) {
		const struct apx_an_timeline *tl = APX_VEC_AT(&b->m->timelines, struct apx_an_timeline, i);

		if (tl->es_device < b->st->ndevices && b->gdev[tl->es_device] &&
		    (double)tl->concurrent_ns > 0.01 * (double)tl->kernel_busy_ns)
			w->dev_concurrent[b->gdev[tl->es_device] - 1] = 1;
	}
}

static void finish_tasks(struct build *b)
{
	struct apx_whatif *w = b->w;
	uint64_t *calls = malloc((b->n + 1) * sizeof(*calls));
	size_t ncalls = 0;

	for (size_t k = 0; k < b->n; k++) {
		struct item *it = &b->it[k];
		struct apx_wi_task *t = &it->t;

		t->step = step_of(b->m, t->kind == APX_WI_SYNC || t->kind == APX_WI_ALLOC ? it->arrive
											  : t->rec_start);
		if (t->stream != APX_WI_NONE && t->kind == APX_WI_KERNEL)
			w->streams[t->stream].kernels++;
		if (it->hend > w->rec_end_ns)
			w->rec_end_ns = it->hend;
		if (t->kind != APX_WI_SYNC && t->kind != APX_WI_ALLOC && t->rec_end > w->rec_end_ns)
			w->rec_end_ns = t->rec_end;
		if (calls && t->kind == APX_WI_COPY && !(t->flags & (APX_WI_F_BLOCKING | APX_WI_F_PAGEABLE)) &&
		    !(t->flags & APX_WI_F_INFERRED) && t->call_ns)
			calls[ncalls++] = t->call_ns;
	}
	for (size_t k = 0; k < b->n; k++) {
		struct apx_wi_task *t = &b->it[k].t;

		if (t->kind == APX_WI_COPY && t->stream != APX_WI_NONE && w->streams[t->stream].kernels)
			t->flags |= APX_WI_F_COMPUTE_STREAM;
	}
	w->async_call_ns = APX_WI_ASYNC_CALL_NS;
	if (ncalls) {
		qsort(calls, ncalls, sizeof(*calls), cmp_u64);
		w->async_call_ns = calls[ncalls / 2];
	}
	free(calls);
}

void apx_whatif_free(struct apx_whatif *w)
{
	if (!w)
		return;
	free(w->t);
	free(w->streams);
	free(w->dev_concurrent);
	free(w->eng_free0);
	free(w);
}

uint64_t apx_wi_graph_gap_ns(const struct apx_model *m)
{
	return m->graph_gaps >= APX_WI_GRAPH_MIN_GAPS ? m->graph_gap_sum / m->graph_gaps
						      : APX_WI_GRAPH_GAP_NS;
}

int apx_whatif_build(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	struct build b = { .m = m, .st = st };
	uint64_t *cnt = NULL;
	uint16_t file;
	int r = -ENOMEM;

	m->whatif = NULL;
	if (!st || m->steady_end_ns <= m->steady_start_ns || !st->nfiles)
		return 0;
	b.w = calloc(1, sizeof(*b.w));
	cnt = calloc(st->nfiles, sizeof(*cnt));
	b.gstream = calloc(st->nstreams + 1, sizeof(*b.gstream));
	b.gdev = calloc(st->ndevices + 1, sizeof(*b.gdev));
	if (!b.w || !cnt || !b.gstream || !b.gdev)
		goto out;
	b.w->start_ns = m->steady_start_ns;
	b.w->end_ns = m->steady_end_ns;
	file = main_file(st, b.w->start_ns, b.w->end_ns, cnt);
	b.w->file = file;
	for (size_t f = 0; f < st->nfiles; f++)
		if (f != file)
			b.w->other_files += cnt[f];
	b.w->launch_cost_ns = file < m->nfiles ? m->files[file].launch_cost_ns : 0;
	if (!b.w->launch_cost_ns)
		b.w->launch_cost_ns = m->launch_cost_ns;
	if ((r = collect(&b, file)) < 0)
		goto out;
	r = -ENOMEM;
	if (!b.n) {
		r = 0;
		goto out;
	}
	b.w->eng_free0 = calloc((size_t)b.w->ndevices * APX_WI_ENG__COUNT + 1, sizeof(uint64_t));
	if (!b.w->eng_free0)
		goto out;
	qsort(b.it, b.n, sizeof(*b.it), cmp_item);
	concurrency(&b);
	initial_state(&b, file);
	host_times(&b);
	awaits(&b);
	explain(&b);
	finish_tasks(&b);
	{
		uint32_t lo = APX_WI_NONE, hi = 0;

		for (size_t k = 0; k < b.n; k++)	/* the steps its tasks lie in */
			if (b.it[k].t.step != APX_WI_NONE) {
				lo = b.it[k].t.step < lo ? b.it[k].t.step : lo;
				hi = b.it[k].t.step > hi ? b.it[k].t.step : hi;
			}
		b.w->steps = lo == APX_WI_NONE ? 0 : hi - lo + 1u;
	}
	b.w->t = malloc(b.n * sizeof(*b.w->t));
	if (!b.w->t)
		goto out;
	for (size_t k = 0; k < b.n; k++)
		b.w->t[k] = b.it[k].t;
	b.w->n = b.n;
	m->whatif = b.w;
	b.w = NULL;
	r = 0;
out:
	apx_whatif_free(b.w);
	free(cnt);
	free(b.gstream);
	free(b.gdev);
	free(b.it);
	free(b.ops);
	free(b.api);
	return r;
}
