/*
 * walk.c - lays the event store out on timeline tracks for the exporters (see walk.h): track
 * ids, lanes that keep slices nested, NVTX ranges projected onto the GPU, flows from launches
 * to GPU work, and slice ends in time order. Called by perfetto.c and chrome.c.
 */
#include "export/walk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "export/export.h"

#include "base/banned.h"

#define LANE_DEPTH 32			/* open slices a lane holds */
#define LANES_MAX 64			/* lanes of one track; the last takes what is left */

struct lane {
	uint64_t ends[LANE_DEPTH];
	uint32_t depth;
	int declared;
};

struct lanes {
	struct lane *l;
	uint32_t n;
};

/* A slice end waiting to be handed out (a binary heap ordered by time, then last-in first). */
struct pending {
	uint64_t ts, seq, track;
};

/* An NVTX range projected onto the GPU. */
struct proj {
	uint64_t start, end;
	uint32_t marker, device;
};

struct walk {
	struct apx_store *st;
	const struct apx_wk_ops *ops;
	struct lanes *thread_l, *nvtx_l, *stream_l, *gpunvtx_l;
	struct pending *heap;
	size_t nheap, heap_cap;
	uint64_t seq;
	struct proj *proj;
	size_t nproj;
	char **demangled;		/* per store string: its kernel name for humans, lazily */
	char name[4096], tname[512];
};

/* Small numbers (short varints in the Perfetto export): 1 + lane + 64 (kind + 8 index). */
static uint64_t uuid(enum apx_wk_kind kind, uint64_t index, uint32_t lane)
{
	return 1 + lane + LANES_MAX * ((uint64_t)kind + 8 * index);
}

uint64_t apx_wk_track_index(uint64_t track)
{
	return (track - 1) / LANES_MAX / 8;
}

/* ---- names ------------------------------------------------------------------------------- */

static const char *mem_word(unsigned k)
{
	static const char *const w[APX_MEM__COUNT] = {
		[APX_MEM_PAGEABLE] = "Pageable", [APX_MEM_PINNED] = "Pinned",
		[APX_MEM_DEVICE] = "Device", [APX_MEM_ARRAY] = "Array", [APX_MEM_MANAGED] = "Managed",
	};

	return k < APX_MEM__COUNT && w[k] ? w[k] : "Unknown";
}

const char *apx_wk_copy_name(const struct apx_store *st, size_t i, char *buf, size_t cap)
{
	static const char *const dir[APX_COPY__COUNT] = {
		[APX_COPY_H2D] = "HtoD", [APX_COPY_D2H] = "DtoH", [APX_COPY_D2D] = "DtoD",
		[APX_COPY_H2H] = "HtoH", [APX_COPY_P2P] = "PtoP",
	};
	unsigned k = st->c.kind[i];

	snprintf(buf, cap, "Memcpy %s (%s -> %s)", k < APX_COPY__COUNT && dir[k] ? dir[k] : "?",
		 mem_word(st->c.src[i]), mem_word(st->c.dst[i]));
	return buf;
}

const char *apx_wk_memset_name(const struct apx_store *st, size_t i, char *buf, size_t cap)
{
	(void)st;
	(void)i;
	snprintf(buf, cap, "Memset (Device)");
	return buf;
}

static const char *sync_name(unsigned kind)
{
	switch (kind) {
	case APX_SYNC_KIND_EVENT: return "cudaEventSynchronize";
	case APX_SYNC_KIND_STREAM: return "cudaStreamSynchronize";
	case APX_SYNC_KIND_DEVICE: return "cudaDeviceSynchronize";
	case APX_SYNC_KIND_STREAM_WAIT_EVENT: return "cudaStreamWaitEvent";
	default: return "synchronization";
	}
}

/* "python3 train.py --lr 1 (rank 0)": argv's NULs as spaces. */
static const char *process_name(const struct apx_es_file *f, char *buf, size_t cap)
{
	size_t n = f->argv.len < cap - 32 ? f->argv.len : cap - 32;

	for (size_t i = 0; i < n; i++)
		buf[i] = f->argv.p[i] ? f->argv.p[i] : ' ';
	while (n && buf[n - 1] == ' ')
		n--;
	if (!n)
		n = (size_t)snprintf(buf, cap, "process %llu", (unsigned long long)f->pid);
	buf[n] = 0;
	if (f->rank >= 0)
		snprintf(buf + n, cap - n, " (rank %lld)", (long long)f->rank);
	return buf;
}

/* ---- tracks ------------------------------------------------------------------------------- */

static int declare(struct walk *w, uint64_t id, uint64_t parent, enum apx_wk_kind kind,
		   const char *name, uint32_t file, uint32_t device, uint64_t tid, uint32_t lane,
		   int is_bytes)
{
	struct apx_wk_track t = { id, parent, kind, name, 0, tid, file, device, lane, is_bytes };

	if (file < w->st->nfiles)
		t.pid = w->st->files[file].pid;
	return w->ops->track(w->ops->ctx, &t);
}

static int declare_processes(struct walk *w)
{
	const struct apx_store *st = w->st;
	int r;

	for (size_t f = 0; f < st->nfiles; f++)
		if ((r = declare(w, uuid(APX_WK_PROCESS, f, 0), 0, APX_WK_PROCESS,
				 process_name(&st->files[f], w->name, sizeof(w->name)), (uint32_t)f,
				 UINT32_MAX, 0, 0, 0)) < 0)
			return r;
	for (size_t d = 0; d < st->ndevices; d++) {
		char label[256];

		apx_export_device_label(st, (uint32_t)d, label, sizeof(label));
		if (st->nhosts > 1)
			snprintf(w->name, sizeof(w->name), "%s on %.*s", label,
				 (int)st->hosts[st->devices[d].host].name.len,
				 st->hosts[st->devices[d].host].name.p);
		else
			snprintf(w->name, sizeof(w->name), "%s", label);
		if ((r = declare(w, uuid(APX_WK_DEVICE, d, 0), 0, APX_WK_DEVICE, w->name, UINT32_MAX,
				 (uint32_t)d, 0, 0, 0)) < 0)
			return r;
	}
	for (size_t s = 0; s < st->nseries; s++) {
		const struct apx_es_series *se = &st->series[s];
		uint64_t parent = se->device < st->ndevices ? uuid(APX_WK_DEVICE, se->device, 0)
							    : uuid(APX_WK_PROCESS, se->file, 0);

		snprintf(w->name, sizeof(w->name), "%.*s (pid %llu)", (int)se->name.len, se->name.p,
			 (unsigned long long)st->files[se->file].pid);
		if ((r = declare(w, uuid(APX_WK_COUNTER, s, 0), parent, APX_WK_COUNTER, w->name,
				 se->file, se->device, 0, 0, se->is_memory)) < 0)
			return r;
	}
	return 0;
}

/* The lane of a slice [start, end] on a track whose lanes are ls: the first lane where it
 * nests (it starts after the lane's open slices or ends inside the innermost one). */
static struct lane *place(struct lanes *ls, uint64_t start, uint64_t end, uint32_t *ret_lane)
{
	uint32_t i;

	for (i = 0; i < ls->n; i++) {
		struct lane *l = &ls->l[i];

		while (l->depth && l->ends[l->depth - 1] <= start)
			l->depth--;
		if (l->depth < LANE_DEPTH && (!l->depth || end <= l->ends[l->depth - 1]))
			goto found;
	}
	if (ls->n < LANES_MAX) {
		struct lane *n = realloc(ls->l, (ls->n + 1) * sizeof(*n));

		if (!n)
			return NULL;
		ls->l = n;
		memset(&ls->l[ls->n], 0, sizeof(ls->l[0]));
		i = ls->n++;
	} else {
		i = ls->n - 1;		/* out of lanes: the last one, nesting or not */
		if (ls->l[i].depth == LANE_DEPTH)
			ls->l[i].depth--;
	}
found:
	ls->l[i].ends[ls->l[i].depth++] = end;
	*ret_lane = i;
	return &ls->l[i];
}

/* The track id of a slice of logical track (kind, index), declaring its lane on first use. */
static int track_of(struct walk *w, enum apx_wk_kind kind, size_t index, uint64_t start,
		    uint64_t end, uint64_t *ret_id)
{
	const struct apx_store *st = w->st;
	struct lanes *ls;
	struct lane *l;
	uint64_t parent = 0, tid = 0;
	uint32_t lane, file = UINT32_MAX, device = UINT32_MAX;
	char base[300];
	int r;

	switch (kind) {
	case APX_WK_THREAD:
	case APX_WK_THREAD_NVTX: {
		const struct apx_es_thread *t = &st->threads[index];

		ls = kind == APX_WK_THREAD ? &w->thread_l[index] : &w->nvtx_l[index];
		file = t->file;
		tid = t->tid;
		parent = uuid(APX_WK_PROCESS, t->file, 0);
		if (t->name.len)
			apx_utf8_sanitize(base, sizeof(base), t->name.p, t->name.len);
		else if (t->tid)
			snprintf(base, sizeof(base), "thread %llu", (unsigned long long)t->tid);
		else	/* CUPTI's synchronization records name no thread */
			snprintf(base, sizeof(base), "host thread (tid not recorded)");
		if (kind == APX_WK_THREAD_NVTX) {
			parent = uuid(APX_WK_THREAD, index, 0);
			snprintf(base + strlen(base), sizeof(base) - strlen(base), " NVTX");
		}
		break;
	}
	case APX_WK_STREAM: {
		const struct apx_es_stream *s = &st->streams[index];

		ls = &w->stream_l[index];
		file = s->file;
		device = s->device;
		tid = s->id;
		parent = uuid(APX_WK_DEVICE, s->device, 0);
		snprintf(base, sizeof(base), "stream %llu (pid %llu)", (unsigned long long)s->id,
			 (unsigned long long)st->files[s->file].pid);
		break;
	}
	default:	/* APX_WK_GPU_NVTX */
		ls = &w->gpunvtx_l[index];
		device = (uint32_t)index;
		parent = uuid(APX_WK_DEVICE, index, 0);
		snprintf(base, sizeof(base), "NVTX (GPU)");
		break;
	}
	l = place(ls, start, end, &lane);
	if (!l)
		return -ENOMEM;
	*ret_id = uuid(kind, index, lane);
	if (l->declared)
		return 0;
	l->declared = 1;
	if (lane) {	/* a lane is a child of the track's first lane */
		parent = uuid(kind, index, 0);
		snprintf(w->tname, sizeof(w->tname), "%s (%u)", base, lane + 1);
	} else {
		snprintf(w->tname, sizeof(w->tname), "%s", base);
	}
	r = declare(w, *ret_id, parent, kind, w->tname, file, device, tid, lane, 0);
	return r;
}

/* ---- slice ends in time order --------------------------------------------------------------- */

static int later(const struct pending *a, const struct pending *b)
{
	return a->ts != b->ts ? a->ts > b->ts : a->seq < b->seq;	/* ties: last in, first out */
}

static int push_end(struct walk *w, uint64_t ts, uint64_t track)
{
	size_t i;

	if (!w->ops->end)
		return 0;
	if (w->nheap == w->heap_cap) {
		size_t cap = w->heap_cap ? w->heap_cap * 2 : 256;
		struct pending *h = realloc(w->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		w->heap = h;
		w->heap_cap = cap;
	}
	i = w->nheap++;
	w->heap[i] = (struct pending){ ts, w->seq++, track };
	while (i && later(&w->heap[(i - 1) / 2], &w->heap[i])) {
		struct pending t = w->heap[i];

		w->heap[i] = w->heap[(i - 1) / 2];
		w->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	return 0;
}

/* Hand out every pending end at or before ts (UINT64_MAX: all). */
static int pop_ends(struct walk *w, uint64_t ts)
{
	while (w->nheap && w->heap[0].ts <= ts) {
		struct pending top = w->heap[0];
		size_t i = 0;
		int r;

		w->heap[0] = w->heap[--w->nheap];
		for (;;) {
			size_t l = 2 * i + 1, m = i;

			if (l < w->nheap && later(&w->heap[m], &w->heap[l]))
				m = l;
			if (l + 1 < w->nheap && later(&w->heap[m], &w->heap[l + 1]))
				m = l + 1;
			if (m == i)
				break;
			struct pending t = w->heap[i];

			w->heap[i] = w->heap[m];
			w->heap[m] = t;
			i = m;
		}
		if ((r = w->ops->end(w->ops->ctx, top.track, top.ts)) < 0)
			return r;
	}
	return 0;
}

/* ---- NVTX ranges projected onto the GPU ------------------------------------------------------ */

struct launch {
	uint64_t at, start, end;	/* launch time (API call, else the event's start), run */
	uint32_t device;
	uint16_t file;
};

static int cmp_launch(const void *a, const void *b)
{
	const struct launch *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* For each NVTX range, the span of the GPU work its process launched inside it: launches are
 * the API calls when the trace has them (level api), else the GPU events' own start times. */
static int project(struct walk *w)
{
	struct apx_store *st = w->st;
	static const enum apx_es_type gpu[] = { APX_ES_KERNEL, APX_ES_COPY, APX_ES_MEMSET };
	size_t n = st->k.n + st->c.n + st->s.n, k = 0;
	struct launch *ls;

	if (!st->mk.n || !n)
		return 0;
	ls = malloc(n * sizeof(*ls));
	w->proj = malloc(st->mk.n * sizeof(*w->proj));
	if (!ls || !w->proj) {
		free(ls);
		return -ENOMEM;
	}
	for (size_t g = 0; g < 3; g++)
		for (size_t i = 0; i < apx_store_count(st, gpu[g]); i++) {
			const uint32_t *sm = gpu[g] == APX_ES_KERNEL ? st->k.stream
					     : gpu[g] == APX_ES_COPY ? st->c.stream : st->s.stream;
			size_t api;
			struct launch *l = &ls[k++];

			l->start = apx_store_start(st, gpu[g], i);
			l->end = apx_store_end(st, gpu[g], i);
			l->at = apx_store_api_of_gpu(st, gpu[g], i, &api) == 0 ? st->a.start[api]
									       : l->start;
			l->device = st->streams[sm[i]].device;
			l->file = st->streams[sm[i]].file;
		}
	qsort(ls, k, sizeof(*ls), cmp_launch);
	for (size_t m = 0; m < st->mk.n; m++) {
		uint16_t file = apx_store_file_of(st, APX_ES_MARKER, m);
		struct launch key = { st->mk.start[m], 0, 0, 0, file };
		size_t lo = 0, hi = k;
		struct proj p = { UINT64_MAX, 0, (uint32_t)m, 0 };

		if (st->mk.end[m] == st->mk.start[m])
			continue;
		while (lo < hi) {	/* first launch of this file at or after the range's start */
			size_t mid = (lo + hi) / 2;

			if (cmp_launch(&ls[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < k && ls[lo].file == file && ls[lo].at < st->mk.end[m]; lo++) {
			if (ls[lo].start < p.start) {
				p.start = ls[lo].start;
				p.device = ls[lo].device;
			}
			if (ls[lo].end > p.end)
				p.end = ls[lo].end;
		}
		if (p.start != UINT64_MAX)
			w->proj[w->nproj++] = p;
	}
	free(ls);
	return 0;
}

static int cmp_proj(const void *a, const void *b)
{
	const struct proj *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* ---- the walk --------------------------------------------------------------------------------- */

static uint64_t flow_id(const struct apx_store *st, enum apx_es_type type, size_t i)
{
	uint32_t corr = type == APX_ES_KERNEL ? st->k.corr[i] : type == APX_ES_COPY ? st->c.corr[i]
		      : type == APX_ES_MEMSET ? st->s.corr[i] : st->a.corr[i];

	return ((uint64_t)apx_store_file_of(st, type, i) + 1) << 32 | corr;
}

static int emit(struct walk *w, struct apx_wk_slice *s)
{
	int r;

	if ((r = pop_ends(w, s->start)) < 0 || (r = w->ops->slice(w->ops->ctx, s)) < 0)
		return r;
	return s->instant ? 0 : push_end(w, s->end, s->track);
}

static int one(struct walk *w, enum apx_es_type type, size_t i)
{
	struct apx_store *st = w->st;
	uint64_t start = apx_export_rel_ns(st, apx_store_start(st, type, i));
	uint64_t end = apx_export_rel_ns(st, apx_store_end(st, type, i));
	struct apx_wk_slice s = { type, i, 0, start, end, w->name, NULL, 0, 0, 0 };
	enum apx_es_type gt;
	size_t other;
	int r;

	switch (type) {
	case APX_ES_KERNEL:
	case APX_ES_COPY:
	case APX_ES_MEMSET: {
		const uint32_t *sm = type == APX_ES_KERNEL ? st->k.stream
				     : type == APX_ES_COPY ? st->c.stream : st->s.stream;

		if (type == APX_ES_KERNEL) {
			uint32_t nm = st->k.name[i];

			if (!w->demangled[nm]) {	/* demangling is slow: once per name */
				apx_export_kernel_name(st, nm, w->name, sizeof(w->name));
				w->demangled[nm] = strdup(w->name);
				if (!w->demangled[nm])
					return -ENOMEM;
			}
			s.name = w->demangled[nm];
			s.category = "kernel";
		} else if (type == APX_ES_COPY) {
			apx_wk_copy_name(st, i, w->name, sizeof(w->name));
			s.category = "gpu_memcpy";
		} else {
			apx_wk_memset_name(st, i, w->name, sizeof(w->name));
			s.category = "gpu_memset";
		}
		if (apx_store_api_of_gpu(st, type, i, &other) == 0)
			s.flow_in = flow_id(st, type, i);
		r = track_of(w, APX_WK_STREAM, sm[i], start, end, &s.track);
		break;
	}
	case APX_ES_API:
		apx_export_text(apx_store_string(st, st->a.name[i]), w->name, sizeof(w->name));
		if (!w->name[0])
			snprintf(w->name, sizeof(w->name), "CUDA API");
		s.category = st->a.domain[i] == APX_API_DRIVER ? "cuda_driver" : "cuda_runtime";
		if (apx_store_gpu_of_api(st, i, &gt, &other) == 0)
			s.flow_out = flow_id(st, APX_ES_API, i);
		r = track_of(w, APX_WK_THREAD, st->a.thread[i], start, end, &s.track);
		break;
	case APX_ES_MARKER:
		apx_export_text(apx_store_string(st, st->mk.name[i]), w->name, sizeof(w->name));
		s.category = "user_annotation";
		s.instant = start == end;
		r = track_of(w, APX_WK_THREAD_NVTX, st->mk.thread[i], start, end, &s.track);
		break;
	case APX_ES_SYNC:
		snprintf(w->name, sizeof(w->name), "%s", sync_name(st->y.kind[i]));
		s.category = "cuda_sync";
		r = track_of(w, APX_WK_THREAD, st->y.thread[i], start, end, &s.track);
		break;
	default:	/* APX_ES_COUNTER */
		if ((r = pop_ends(w, start)) < 0)
			return r;
		return w->ops->counter(w->ops->ctx, uuid(APX_WK_COUNTER, st->ct.series[i], 0), start,
				       st->ct.value[i]);
	}
	if (r < 0)
		return r;
	return emit(w, &s);
}

static int one_projection(struct walk *w, const struct proj *p)
{
	struct apx_wk_slice s = { APX_ES__COUNT, p->marker, 0, apx_export_rel_ns(w->st, p->start),
				  apx_export_rel_ns(w->st, p->end), w->name, "gpu_user_annotation",
				  0, 0, 0 };
	int r = track_of(w, APX_WK_GPU_NVTX, p->device, s.start, s.end, &s.track);

	if (r < 0)
		return r;
	apx_export_text(apx_store_string(w->st, w->st->mk.name[p->marker]), w->name, sizeof(w->name));
	return emit(w, &s);
}

int apx_walk(struct apx_store *st, const struct apx_wk_ops *ops)
{
	struct walk w = { .st = st, .ops = ops };
	struct apx_store_iter it;
	enum apx_es_type type;
	size_t i, pi = 0;
	int r = -ENOMEM;

	w.thread_l = calloc(st->nthreads + 1, sizeof(*w.thread_l));
	w.nvtx_l = calloc(st->nthreads + 1, sizeof(*w.nvtx_l));
	w.stream_l = calloc(st->nstreams + 1, sizeof(*w.stream_l));
	w.gpunvtx_l = calloc(st->ndevices + 1, sizeof(*w.gpunvtx_l));
	w.demangled = calloc(st->nstrings + 1, sizeof(*w.demangled));
	if (!w.thread_l || !w.nvtx_l || !w.stream_l || !w.gpunvtx_l || !w.demangled)
		goto out;
	if ((r = declare_processes(&w)) < 0 || (r = project(&w)) < 0)
		goto out;
	if (w.nproj)
		qsort(w.proj, w.nproj, sizeof(*w.proj), cmp_proj);
	apx_store_iter_init(&it);
	while (apx_store_next(st, &it, &type, &i)) {
		while (pi < w.nproj && w.proj[pi].start <= apx_store_start(st, type, i))
			if ((r = one_projection(&w, &w.proj[pi++])) < 0)
				goto out;
		if ((r = one(&w, type, i)) < 0)
			goto out;
	}
	while (pi < w.nproj)
		if ((r = one_projection(&w, &w.proj[pi++])) < 0)
			goto out;
	r = pop_ends(&w, UINT64_MAX);
out:
	if (w.thread_l)
		for (size_t t = 0; t < st->nthreads; t++) {
			free(w.thread_l[t].l);
			free(w.nvtx_l[t].l);
		}
	if (w.stream_l)
		for (size_t t = 0; t < st->nstreams; t++)
			free(w.stream_l[t].l);
	if (w.gpunvtx_l)
		for (size_t t = 0; t < st->ndevices; t++)
			free(w.gpunvtx_l[t].l);
	for (size_t t = 0; w.demangled && t < st->nstrings; t++)
		free(w.demangled[t]);
	free(w.demangled);
	free(w.thread_l);
	free(w.nvtx_l);
	free(w.stream_l);
	free(w.gpunvtx_l);
	free(w.heap);
	free(w.proj);
	return r;
}
