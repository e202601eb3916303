/*
 * view_events.c - the model's per-event lists (copies, memsets, host synchronizations, NVTX
 * markers, API calls) as views over the event store's columns, in time order, with the
 * model's stream indices and device ids. Rules and outputs read these lists (model.h); the
 * store keeps the same events for the exporters. Called by apx_model_finish() after
 * view_streams.c; single-threaded.
 */
#include <errno.h>
#include <stdlib.h>

#include "analysis/views.h"

#include "base/banned.h"

/* Size a list once for n items: no doubling (peak memory, bench/report). */
static int reserve(struct apx_vec *v, size_t n)
{
	void *d;

	if (n <= v->cap)
		return 0;
	d = reallocarray(v->data, n, v->size);
	if (!d)
		return -ENOMEM;
	v->data = d;
	v->cap = n;
	return 0;
}

static uint16_t model_stream(const struct apx_model *m, uint32_t es)
{
	return (uint16_t)(m->stream_of_es[es] - 1);
}

static int copies(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	const struct apx_es_copies *c = &st->c;
	int r = reserve(&m->copies, c->n);

	for (size_t i = 0; i < c->n && r == 0; i++) {
		struct apx_an_copy x = {
			.start = c->start[i], .bytes = c->bytes[i], .host_addr = c->host_addr[i],
			.api_enter = c->api_enter[i], .api_exit = c->api_exit[i],
			.host_fp = c->host_fp[i],
			.dur = apx_view_dur(c->start[i], c->end[i]),
			.stream = model_stream(m, c->stream[i]), .file = st->streams[c->stream[i]].file,
			.device = (uint16_t)apx_view_stream_ordinal(st, c->stream[i]),
			.kind = c->kind[i], .src = c->src[i], .dst = c->dst[i], .async = c->flags[i] & 1,
		};

		r = apx_vec_push(&m->copies, &x);
	}
	return r;
}

static int memsets(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	const struct apx_es_memsets *s = &st->s;
	int r = reserve(&m->memsets, s->n);

	for (size_t i = 0; i < s->n && r == 0; i++) {
		struct apx_an_memset x = {
			.start = s->start[i], .bytes = s->bytes[i],
			.dur = apx_view_dur(s->start[i], s->end[i]),
			.stream = model_stream(m, s->stream[i]), .kind = s->kind[i],
			.async = s->flags[i] & 1, .device = apx_view_stream_ordinal(st, s->stream[i]),
		};

		r = apx_vec_push(&m->memsets, &x);
	}
	return r;
}

static int syncs(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	const struct apx_es_syncs *y = &st->y;
	int r = reserve(&m->syncs, y->n);

	for (size_t i = 0; i < y->n && r == 0; i++) {
		const struct apx_es_thread *t = &st->threads[y->thread[i]];
		struct apx_an_sync x = {
			.start = y->start[i], .end = y->end[i], .tid = t->tid, .kind = y->kind[i],
			.stream = y->stream[i] == UINT32_MAX ? 0 : st->streams[y->stream[i]].id,
			.file = t->file, .copy = UINT32_MAX,	/* cause: sync_cause.c */
		};

		r = apx_vec_push(&m->syncs, &x);
	}
	return r;
}

static int markers(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	const struct apx_es_markers *k = &st->mk;
	int r = reserve(&m->markers, k->n);

	for (size_t i = 0; i < k->n && r == 0; i++) {
		struct apx_es_text name = apx_store_string(st, k->name[i]);
		struct apx_an_marker x = {
			.start = k->start[i], .end = k->end[i], .tid = st->threads[k->thread[i]].tid,
			.name = name.len ? name.p : NULL, .name_len = name.len, .kind = k->kind[i],
			.torch = k->torch[i], .seq = k->seq[i],
		};

		r = apx_vec_push(&m->markers, &x);
	}
	return r;
}

static int apis(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	const struct apx_es_apis *a = &st->a;
	int r = reserve(&m->api, a->n);

	for (size_t i = 0; i < a->n && r == 0; i++) {
		struct apx_es_text name = apx_store_string(st, a->name[i]);
		struct apx_an_api x = {
			.start = a->start[i], .end = a->end[i], .tid = st->threads[a->thread[i]].tid,
			.corr = a->corr[i], .cbid = a->cbid[i], .domain = a->domain[i],
			.name = name.len ? name.p : NULL, .name_len = name.len,
		};

		r = apx_vec_push(&m->api, &x);
	}
	return r;
}

int apx_view_events(struct apx_model *m)
{
	int r;

	if ((r = copies(m)) < 0 || (r = memsets(m)) < 0 || (r = syncs(m)) < 0 ||
	    (r = markers(m)) < 0 || (r = apis(m)) < 0)
		return r;
	return 0;
}
