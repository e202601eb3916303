/*
 * view_streams.c - the model's streams as a view over the event store: one per store stream
 * (file, device, stream id) that ran kernels, copies or memsets, in that order (files in input
 * order, then device ordinal, then stream id), with their kernel and copy counts and busy
 * time, and each file's kernels, kernel time, copies, bytes and copy time.
 * Called by apx_model_finish() (finish.c) first among the views; single-threaded.
 */
#include <errno.h>
#include <stdlib.h>

#include "analysis/views.h"

#include "base/banned.h"

static const struct apx_store *sort_store;

/* the model's stream order: file (input order), device, stream id */
static int cmp_stream(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct apx_es_stream *p = &sort_store->streams[x], *q = &sort_store->streams[y];
	uint32_t dx = apx_view_stream_ordinal(sort_store, x), dy = apx_view_stream_ordinal(sort_store, y);

	if (p->file != q->file)
		return p->file < q->file ? -1 : 1;
	if (dx != dy)
		return dx < dy ? -1 : 1;
	if (p->id != q->id)
		return p->id < q->id ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int streams_table(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	uint8_t *used = calloc(st->nstreams + 1, 1);
	uint32_t *order = calloc(st->nstreams + 1, sizeof(*order));
	size_t n = 0;
	int r = 0;

	m->stream_of_es = calloc(st->nstreams + 1, sizeof(*m->stream_of_es));
	if (!used || !order || !m->stream_of_es) {
		free(used);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < st->k.n; i++)
		used[st->k.stream[i]] = 1;
	for (size_t i = 0; i < st->c.n; i++)
		used[st->c.stream[i]] = 1;
	for (size_t i = 0; i < st->s.n; i++)
		used[st->s.stream[i]] = 1;
	for (size_t i = 0; i < st->nstreams; i++)
		if (used[i])
			order[n++] = (uint32_t)i;
	sort_store = st;
	qsort(order, n, sizeof(*order), cmp_stream);
	for (size_t j = 0; j < n && r == 0; j++) {
		uint32_t i = order[j];
		struct apx_an_stream s = {
			.device = apx_view_stream_ordinal(st, i), .id = st->streams[i].id,
			.file = st->streams[i].file, .es_stream = i,
		};

		if (m->streams.n >= UINT16_MAX) {	/* the model's stream indices are 16 bits */
			m->stream_of_es[i] = 1;
			continue;
		}
		r = apx_vec_push(&m->streams, &s);
		m->stream_of_es[i] = (uint32_t)m->streams.n;
	}
	free(used);
	free(order);
	return r;
}

int apx_view_streams(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	uint64_t gpu_so_far = 0;
	int r = streams_table(m);

	if (r < 0)
		return r;
	m->k.n = m->k.cap = st->k.n;	/* the durations come with view_kernels.c */
	for (size_t i = 0; i < st->k.n; i++) {
		uint32_t es = st->k.stream[i];
		struct apx_an_stream *s = APX_VEC_AT(&m->streams, struct apx_an_stream,
						     m->stream_of_es[es] - 1);
		struct apx_an_file *f = &m->files[st->streams[es].file];

		s->kernels++;
		s->busy_ns += st->k.dur[i];
		f->kernels++;
		f->kernel_ns += st->k.dur[i] == UINT32_MAX	/* 4.29 s or more: the exact end */
			? apx_store_end(st, APX_ES_KERNEL, i) - st->k.start[i] : st->k.dur[i];
	}
	for (size_t i = 0; i < st->c.n; i++) {
		uint32_t es = st->c.stream[i], d = apx_view_dur(st->c.start[i], st->c.end[i]);
		struct apx_an_stream *s = APX_VEC_AT(&m->streams, struct apx_an_stream,
						     m->stream_of_es[es] - 1);
		struct apx_an_file *f = &m->files[st->streams[es].file];

		s->copies++;
		s->busy_ns += d;
		f->copies++;
		f->copy_bytes += st->c.bytes[i];
		f->copy_ns += d;
	}
	/* a file whose producer did not say: CUDA was used when GPU work was seen in it or in
	 * a file before it */
	for (size_t i = 0; i < m->nfiles; i++) {
		struct apx_an_file *f = &m->files[i];

		gpu_so_far += f->kernels + f->copies;
		if (f->cuda_used < 0 && gpu_so_far)
			f->cuda_used = 1;
	}
	return 0;
}
