/*
 * walk.c - lays the event store out on timeline tracks for the exporters (see walk.h): track
 * ids, lanes that keep slices nested, sub-microsecond overlaps of a stream's GPU events trimmed,
 * NVTX ranges projected onto the streams, flows from launches to GPU work and from awaited to
 * waiting GPU work across streams (the export's waits, export.c's apx_export_open, looked up
 * per slice in two sorted tables), one track per host thread (threads.c), names cut visibly,
 * and slice ends in time order. Called by perfetto.c and chrome.c.
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

#define NAME_ROOM (APX_WK_NAME_MAX + 128)	/* a name before its cut, and the marker */
#define NAME_GROW_MAX (64u << 20)		/* a demangled name is not made longer than this */
#define THREAD_NAME_MAX 240			/* bytes of a thread name kept */

/* An NVTX range projected onto a stream (store times). */
struct proj {
	uint64_t start, end;
	uint32_t marker, stream;
};

/* A GPU event whose end is trimmed to the next event's start on its stream (store times). */
struct trim {
	uint64_t key;			/* type << 48 | index */
	uint64_t end;
};

/* A stream wait flow by its waiting operation (APX_EXPORT_WAIT_KEY). */
struct wait_in {
	uint64_t key, id;
};

struct walk {
	struct apx_store *st;
	const struct apx_wk_ops *ops;
	struct lanes *thread_l, *nvtx_l, *stream_l;
	struct pending *heap;
	size_t nheap, heap_cap;
	uint64_t seq;
	struct proj *proj;
	size_t nproj, proj_cap;
	struct trim *trim;		/* sorted by key */
	size_t ntrim;
	const struct apx_export_wait *wait_a;	/* the export's, by awaited, then waiting:
						 * flow k's id is APX_WK_WAIT_FLOW_BASE + k + 1 */
	struct wait_in *wait_w;		/* by waiting */
	size_t nwait;
	uint32_t *canon;		/* per store thread: the thread whose track it is on */
	char **demangled;		/* per store string: its kernel name for humans, lazily */
	uint64_t *dem_len;		/* per store string: the full length of a cut one, 0 */
	char *name;			/* the name being built: name_cap bytes */
	size_t name_cap;
	char tname[THREAD_NAME_MAX * 4 + 160];
	struct apx_wk_stats stats;
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

/* w->name of at least need bytes. */
static int name_room(struct walk *w, size_t need)
{
	char *p;

	if (need <= w->name_cap)
		return 0;
	if (!(p = realloc(w->name, need)))
		return -ENOMEM;
	w->name = p;
	w->name_cap = need;
	return 0;
}

/* Cut p (cap >= limit + 64 bytes) to limit bytes, whole characters, with a visible marker, when
 * it is longer. Returns its length before, 0 when it is whole. */
static uint64_t cut_text(char *p, size_t cap, size_t limit)
{
	size_t n = strlen(p), k = limit;

	if (n <= limit)
		return 0;
	while (k && ((unsigned char)p[k] & 0xc0) == 0x80)	/* not inside a character */
		k--;
	snprintf(p + k, cap - k, " [... cut: %zu bytes]", n);
	return n;
}

/* A name from the trace into w->name, valid UTF-8 (apx_export_text), cut at APX_WK_NAME_MAX:
 * *ret_len its full length when cut, else 0. */
static int text_name(struct walk *w, struct apx_es_text t, uint64_t *ret_len)
{
	int r = name_room(w, (size_t)t.len * 4 + 1);	/* each byte at most 4 out ("\x00") */

	if (r < 0)
		return r;
	apx_export_text(t, w->name, w->name_cap);
	*ret_len = cut_text(w->name, w->name_cap, APX_WK_NAME_MAX);
	return 0;
}

/* The kernel name of store string nm for humans (demangled), made once: into s. */
static int kernel_name(struct walk *w, uint32_t nm, struct apx_wk_slice *s)
{
	if (!w->demangled[nm]) {	/* demangling is slow: once per name */
		struct apx_es_text t = apx_store_string(w->st, nm);
		int r = name_room(w, (size_t)t.len * 4 + 1);

		while (r >= 0) {	/* the whole demangled name, however long */
			apx_export_kernel_name(w->st, nm, w->name, w->name_cap);
			if (strlen(w->name) + 1 < w->name_cap || w->name_cap >= NAME_GROW_MAX)
				break;
			r = name_room(w, w->name_cap * 2);
		}
		if (r < 0)
			return r;
		w->dem_len[nm] = cut_text(w->name, w->name_cap, APX_WK_NAME_MAX);
		if (!(w->demangled[nm] = strdup(w->name)))
			return -ENOMEM;
	}
	s->name = w->demangled[nm];
	s->name_len = w->dem_len[nm];
	return 0;
}

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

/* "python3 train.py --lr 1 (rank 0)" into w->name: argv's NULs as spaces, cut at
 * APX_WK_NAME_MAX. */
static int process_name(struct walk *w, const struct apx_es_file *f)
{
	size_t n = f->argv.len;
	char *buf;
	int r = name_room(w, n + NAME_ROOM);

	if (r < 0)
		return r;
	buf = w->name;
	for (size_t i = 0; i < n; i++)
		buf[i] = f->argv.p[i] ? f->argv.p[i] : ' ';
	while (n && buf[n - 1] == ' ')
		n--;
	if (!n)
		n = (size_t)snprintf(buf, w->name_cap, "process %llu", (unsigned long long)f->pid);
	buf[n] = 0;
	if (cut_text(buf, w->name_cap, APX_WK_NAME_MAX)) {
		w->stats.names_cut++;
		n = strlen(buf);
	}
	if (f->rank >= 0)
		snprintf(buf + n, w->name_cap - n, " (rank %lld)", (long long)f->rank);
	return 0;
}

/* ---- tracks ------------------------------------------------------------------------------- */

static int declare(struct walk *w, uint64_t id, uint64_t parent, enum apx_wk_kind kind,
		   const char *name, uint32_t file, uint32_t device, uint64_t tid, uint32_t lane)
{
	struct apx_wk_track t = { id, parent, kind, name, 0, tid, file, device, lane, 0, "" };

	if (file < w->st->nfiles)
		t.pid = w->st->files[file].pid;
	return w->ops->track(w->ops->ctx, &t);
}

static int declare_processes(struct walk *w)
{
	const struct apx_store *st = w->st;
	int r;

	for (size_t f = 0; f < st->nfiles; f++)
		if ((r = process_name(w, &st->files[f])) < 0 ||
		    (r = declare(w, uuid(APX_WK_PROCESS, f, 0), 0, APX_WK_PROCESS, w->name,
				 (uint32_t)f, UINT32_MAX, 0, 0)) < 0)
			return r;
	for (size_t d = 0; d < st->ndevices; d++) {
		const struct apx_es_text *host = &st->hosts[st->devices[d].host].name;
		size_t n;

		/* "GPU 0 (NVIDIA H200)" [" on node-a"]: whole (names from the trace are short) */
		if ((r = name_room(w, (size_t)st->devices[d].name.len + host->len + NAME_ROOM)) < 0)
			return r;
		apx_export_device_label(st, (uint32_t)d, w->name, w->name_cap);
		n = strlen(w->name);
		if (st->nhosts > 1)
			snprintf(w->name + n, w->name_cap - n, " on %.*s", (int)host->len, host->p);
		w->stats.names_cut += cut_text(w->name, w->name_cap, APX_WK_NAME_MAX) != 0;
		if ((r = declare(w, uuid(APX_WK_DEVICE, d, 0), 0, APX_WK_DEVICE, w->name, UINT32_MAX,
				 (uint32_t)d, 0, 0)) < 0)
			return r;
	}
	for (size_t s = 0; s < st->nseries; s++) {
		const struct apx_es_series *se = &st->series[s];
		uint64_t parent = se->device < st->ndevices ? uuid(APX_WK_DEVICE, se->device, 0)
							    : uuid(APX_WK_PROCESS, se->file, 0);
		struct apx_wk_track t = { uuid(APX_WK_COUNTER, s, 0), parent, APX_WK_COUNTER, NULL,
					  st->files[se->file].pid, 0, se->file, se->device, 0,
					  se->is_memory, NULL };
		char unit[64];

		if ((r = name_room(w, (size_t)se->name.len * 4 + NAME_ROOM)) < 0)
			return r;
		apx_export_text(se->name, w->name, w->name_cap - 64);
		w->stats.names_cut += cut_text(w->name, w->name_cap, APX_WK_NAME_MAX) != 0;
		snprintf(w->name + strlen(w->name), 64, " (pid %llu)",
			 (unsigned long long)st->files[se->file].pid);
		t.name = w->name;
		t.unit = apx_export_text(se->unit, unit, sizeof(unit));
		if ((r = w->ops->track(w->ops->ctx, &t)) < 0)
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

/* Declare lane `lane` of logical track (kind, index): a thread (its lane 0 a thread track, or a
 * named one when its tid is not known), a thread's NVTX track (child of the thread's), or a
 * stream. Further lanes are children of the track's first lane. */
static int declare_lane(struct walk *w, enum apx_wk_kind kind, size_t index, uint32_t lane)
{
	const struct apx_store *st = w->st;
	uint64_t parent, tid;
	uint32_t file, device = UINT32_MAX;
	char base[THREAD_NAME_MAX * 4 + 96];	/* each byte at most 4 out, sanitized */

	if (kind == APX_WK_STREAM) {
		const struct apx_es_stream *s = &st->streams[index];

		file = s->file;
		device = s->device;
		tid = s->id;
		parent = uuid(APX_WK_DEVICE, s->device, 0);
		snprintf(base, sizeof(base), "stream %llu (pid %llu)", (unsigned long long)s->id,
			 (unsigned long long)st->files[s->file].pid);
	} else {
		const struct apx_es_thread *t = &st->threads[index];

		file = t->file;
		tid = t->tid;
		parent = uuid(APX_WK_PROCESS, t->file, 0);
		if (t->name.len) {
			struct apx_es_text n = t->name;

			n.len = n.len > THREAD_NAME_MAX ? THREAD_NAME_MAX : n.len;
			apx_utf8_sanitize(base, THREAD_NAME_MAX * 4 + 1, n.p, n.len);
			if (t->name.len > THREAD_NAME_MAX) {
				snprintf(base + strlen(base), sizeof(base) - strlen(base),
					 " [... cut: %u bytes]", t->name.len);
				w->stats.names_cut++;
			}
		} else if (t->tid > APX_WK_TID_MAX) {	/* no OS tid paired with it */
			snprintf(base, sizeof(base), "thread %llu (CUPTI id)",
				 (unsigned long long)t->tid);
		} else if (t->tid) {
			snprintf(base, sizeof(base), "thread %llu", (unsigned long long)t->tid);
		} else {	/* CUPTI's synchronization records name no thread */
			snprintf(base, sizeof(base), "host thread (tid not recorded)");
		}
		if (kind == APX_WK_THREAD_NVTX) {
			parent = uuid(APX_WK_THREAD, index, 0);
			snprintf(base + strlen(base), sizeof(base) - strlen(base), " NVTX");
		}
	}
	if (lane) {	/* a lane is a child of the track's first lane */
		parent = uuid(kind, index, 0);
		snprintf(w->tname, sizeof(w->tname), "%s (%u)", base, lane + 1);
	} else {
		snprintf(w->tname, sizeof(w->tname), "%s", base);
	}
	return declare(w, uuid(kind, index, lane), parent, kind, w->tname, file, device, tid, lane);
}

/* The thread track (lane 0) of store thread index, declared: the parent of its NVTX track
 * even when the thread has no API call or sync of its own. */
static int thread_declared(struct walk *w, size_t index)
{
	struct lanes *ls = &w->thread_l[index];

	if (!ls->n) {
		if (!(ls->l = calloc(1, sizeof(*ls->l))))
			return -ENOMEM;
		ls->n = 1;
	}
	if (ls->l[0].declared)
		return 0;
	ls->l[0].declared = 1;
	return declare_lane(w, APX_WK_THREAD, index, 0);
}

/* The track id of a slice of logical track (kind, index), declaring its lane on first use. */
static int track_of(struct walk *w, enum apx_wk_kind kind, size_t index, uint64_t start,
		    uint64_t end, uint64_t *ret_id)
{
	struct lanes *ls = kind == APX_WK_THREAD ? &w->thread_l[index]
			   : kind == APX_WK_THREAD_NVTX ? &w->nvtx_l[index] : &w->stream_l[index];
	uint32_t lane;
	struct lane *l;
	int r;

	if (kind == APX_WK_THREAD_NVTX && (r = thread_declared(w, index)) < 0)
		return r;
	l = place(ls, start, end, &lane);
	if (!l)
		return -ENOMEM;
	*ret_id = uuid(kind, index, lane);
	if (l->declared)
		return 0;
	l->declared = 1;
	return declare_lane(w, kind, index, lane);
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

/* ---- sub-microsecond overlaps of a stream's GPU events ------------------------------------ */

static uint64_t trim_key(enum apx_es_type type, size_t i)
{
	return (uint64_t)type << 48 | i;
}

static int cmp_trim(const void *a, const void *b)
{
	const struct trim *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static const uint32_t *stream_col(const struct apx_store *st, enum apx_es_type type)
{
	return type == APX_ES_KERNEL ? st->k.stream : type == APX_ES_COPY ? st->c.stream
									   : st->s.stream;
}

/* The GPU events (by start) whose end overlaps the next one's start on their stream by less
 * than APX_WK_TRIM_NS while the next one starts later and ends later: each is trimmed to end
 * where the next starts, so that both stay on the stream's track (a partial overlap needs a
 * second lane). Per stream, the event compared is the one that ends last so far. */
static int find_trims(struct walk *w)
{
	struct apx_store *st = w->st;
	struct open_ev {
		uint64_t key, start, end;
		int any;
	} *last;
	struct apx_store_iter it;
	enum apx_es_type type;
	size_t i, cap = 0;
	int r = 0;

	if (!st->nstreams)
		return 0;
	if (!(last = calloc(st->nstreams, sizeof(*last))))
		return -ENOMEM;
	apx_store_iter_init(&it);
	while (r >= 0 && apx_store_next(st, &it, &type, &i)) {
		uint64_t start, end;
		struct open_ev *o;

		if (type != APX_ES_KERNEL && type != APX_ES_COPY && type != APX_ES_MEMSET)
			continue;
		start = apx_store_start(st, type, i);
		end = apx_store_end(st, type, i);
		o = &last[stream_col(st, type)[i]];
		if (o->any && o->start < start && o->end > start && o->end < end &&
		    o->end - start < APX_WK_TRIM_NS) {
			if (w->ntrim == cap) {
				size_t c = cap ? cap * 2 : 64;
				struct trim *t = realloc(w->trim, c * sizeof(*t));

				if (!t) {
					r = -ENOMEM;
					break;
				}
				w->trim = t;
				cap = c;
			}
			w->trim[w->ntrim++] = (struct trim){ o->key, start };
			o->end = start;
		}
		if (!o->any || end > o->end)
			*o = (struct open_ev){ trim_key(type, i), start, end, 1 };
	}
	free(last);
	if (r >= 0 && w->ntrim)
		qsort(w->trim, w->ntrim, sizeof(*w->trim), cmp_trim);
	return r;
}

/* The end of GPU event (type, i), trimmed or not (store time). */
static uint64_t gpu_end(const struct walk *w, enum apx_es_type type, size_t i)
{
	uint64_t key = trim_key(type, i);
	size_t lo = 0, hi = w->ntrim;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->trim[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->ntrim && w->trim[lo].key == key ? w->trim[lo].end
						       : apx_store_end(w->st, type, i);
}

/* ---- NVTX ranges projected onto the streams ---------------------------------------------- */

struct launch {
	uint64_t at, start, end;	/* launch time (API call, else the event's start), run */
	uint32_t stream;
	uint16_t file;
};

static int cmp_launch(const void *a, const void *b)
{
	const struct launch *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static int add_proj(struct walk *w, struct proj p)
{
	if (w->nproj == w->proj_cap) {
		size_t cap = w->proj_cap ? w->proj_cap * 2 : 64;
		struct proj *n = realloc(w->proj, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->proj = n;
		w->proj_cap = cap;
	}
	w->proj[w->nproj++] = p;
	return 0;
}

/* For each NVTX range and each stream, the span of the GPU work its process launched on that
 * stream inside it (Kineto's gpu_user_annotation, one per range and stream): launches are the
 * API calls when the trace has them (level api), else the GPU events' own start times. */
static int project(struct walk *w)
{
	struct apx_store *st = w->st;
	static const enum apx_es_type gpu[] = { APX_ES_KERNEL, APX_ES_COPY, APX_ES_MEMSET };
	size_t n = st->k.n + st->c.n + st->s.n, k = 0, nspan = 0;
	struct launch *ls;
	struct proj *span;		/* this range's streams so far */
	int r = 0;

	if (!st->mk.n || !n)
		return 0;
	ls = malloc(n * sizeof(*ls));
	span = malloc(st->nstreams * sizeof(*span));
	if (!ls || !span) {
		free(ls);
		free(span);
		return -ENOMEM;
	}
	for (size_t g = 0; g < 3; g++)
		for (size_t i = 0; i < apx_store_count(st, gpu[g]); i++) {
			const uint32_t *sm = stream_col(st, gpu[g]);
			size_t api;
			struct launch *l = &ls[k++];

			l->start = apx_store_start(st, gpu[g], i);
			l->end = gpu_end(w, gpu[g], i);
			l->at = apx_store_api_of_gpu(st, gpu[g], i, &api) == 0 ? st->a.start[api]
									       : l->start;
			l->stream = sm[i];
			l->file = st->streams[sm[i]].file;
		}
	qsort(ls, k, sizeof(*ls), cmp_launch);
	for (size_t m = 0; m < st->mk.n && r >= 0; m++) {
		uint16_t file = apx_store_file_of(st, APX_ES_MARKER, m);
		struct launch key = { st->mk.start[m], 0, 0, 0, file };
		size_t lo = 0, hi = k;

		if (st->mk.end[m] == st->mk.start[m])
			continue;
		while (lo < hi) {	/* first launch of this file at or after the range's start */
			size_t mid = (lo + hi) / 2;

			if (cmp_launch(&ls[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		nspan = 0;
		for (; lo < k && ls[lo].file == file && ls[lo].at < st->mk.end[m]; lo++) {
			size_t j;

			for (j = 0; j < nspan && span[j].stream != ls[lo].stream; j++)
				;
			if (j == nspan)
				span[nspan++] = (struct proj){ ls[lo].start, ls[lo].end,
							       (uint32_t)m, ls[lo].stream };
			if (ls[lo].start < span[j].start)
				span[j].start = ls[lo].start;
			if (ls[lo].end > span[j].end)
				span[j].end = ls[lo].end;
		}
		for (size_t j = 0; j < nspan && r >= 0; j++)
			r = add_proj(w, span[j]);
	}
	free(ls);
	free(span);
	return r;
}

/* By start; of two with one start the longer first (it holds the other), then the range that
 * began first on the host (the outer one), then record order. */
static int cmp_proj(const void *a, const void *b, void *ctx)
{
	const struct proj *x = a, *y = b;
	const struct apx_store *st = ctx;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	if (st->mk.start[x->marker] != st->mk.start[y->marker])
		return st->mk.start[x->marker] < st->mk.start[y->marker] ? -1 : 1;
	if (x->marker != y->marker)
		return x->marker < y->marker ? -1 : 1;
	return x->stream < y->stream ? -1 : x->stream > y->stream;
}

/* ---- stream wait flows ---------------------------------------------------------------------- */

static int cmp_wait_w(const void *a, const void *b)
{
	const struct wait_in *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/* The cross-stream waits (NULL: none) as two lookup tables: the export's, sorted by awaited
 * (their ids fixed by that order), and one by waiting. */
static int find_waits(struct walk *w, const struct apx_export_waits *waits)
{
	if (!waits || !waits->n)
		return 0;
	w->wait_a = waits->w;
	w->nwait = waits->n;
	if (!(w->wait_w = malloc(w->nwait * sizeof(*w->wait_w))))
		return -ENOMEM;
	for (size_t k = 0; k < w->nwait; k++)
		w->wait_w[k] = (struct wait_in){ w->wait_a[k].waiting, APX_WK_WAIT_FLOW_BASE + k + 1 };
	qsort(w->wait_w, w->nwait, sizeof(*w->wait_w), cmp_wait_w);
	return 0;
}

/* The stream wait flows of GPU event (type, i) into s. */
static void wait_flows(struct walk *w, enum apx_es_type type, size_t i, struct apx_wk_slice *s)
{
	uint64_t key = APX_EXPORT_WAIT_KEY(type, i);
	size_t lo = 0, hi = w->nwait, k;

	while (lo < hi) {	/* first flow out of it */
		size_t mid = lo + (hi - lo) / 2;

		if (w->wait_a[mid].awaited < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = lo; k < w->nwait && w->wait_a[k].awaited == key; k++)
		;
	if (k > lo) {
		s->wait_out = APX_WK_WAIT_FLOW_BASE + lo + 1;
		s->nwait_out = (uint32_t)(k - lo);
	}
	lo = 0;
	hi = w->nwait;
	while (lo < hi) {	/* the flow into it */
		size_t mid = lo + (hi - lo) / 2;

		if (w->wait_w[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < w->nwait && w->wait_w[lo].key == key) {
		s->wait_in = w->wait_w[lo].id;
		w->stats.waits++;
	}
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

	w->stats.names_cut += s->name_len != 0;
	if ((r = pop_ends(w, s->start)) < 0 || (r = w->ops->slice(w->ops->ctx, s)) < 0)
		return r;
	return s->instant ? 0 : push_end(w, s->end, s->track);
}

static int one(struct walk *w, enum apx_es_type type, size_t i)
{
	struct apx_store *st = w->st;
	uint64_t start = apx_export_rel_ns(st, apx_store_start(st, type, i));
	uint64_t end = apx_export_rel_ns(st, apx_store_end(st, type, i));
	struct apx_wk_slice s = { .type = type, .index = i, .start = start, .end = end };
	enum apx_es_type gt;
	size_t other;
	int r;

	switch (type) {
	case APX_ES_KERNEL:
	case APX_ES_COPY:
	case APX_ES_MEMSET: {
		uint64_t raw_end = apx_store_end(st, type, i), cut_end;

		if (type == APX_ES_KERNEL) {
			if ((r = kernel_name(w, st->k.name[i], &s)) < 0)
				return r;
			s.category = "kernel";
		} else if (type == APX_ES_COPY) {
			s.name = apx_wk_copy_name(st, i, w->name, w->name_cap);
			s.category = "gpu_memcpy";
		} else {
			s.name = apx_wk_memset_name(st, i, w->name, w->name_cap);
			s.category = "gpu_memset";
		}
		if (w->ntrim && (cut_end = gpu_end(w, type, i)) != raw_end) {
			s.end = apx_export_rel_ns(st, cut_end);
			s.trimmed_ns = raw_end - cut_end;
			w->stats.ends_trimmed++;
		}
		if (apx_store_api_of_gpu(st, type, i, &other) == 0)
			s.flow_in = flow_id(st, type, i);
		if (w->nwait)
			wait_flows(w, type, i, &s);
		r = track_of(w, APX_WK_STREAM, stream_col(st, type)[i], s.start, s.end, &s.track);
		break;
	}
	case APX_ES_API:
		if ((r = text_name(w, apx_store_string(st, st->a.name[i]), &s.name_len)) < 0)
			return r;
		if (!w->name[0])
			snprintf(w->name, w->name_cap, "CUDA API");
		s.name = w->name;
		s.category = st->a.domain[i] == APX_API_DRIVER ? "cuda_driver" : "cuda_runtime";
		if (apx_store_gpu_of_api(st, i, &gt, &other) == 0)
			s.flow_out = flow_id(st, APX_ES_API, i);
		r = track_of(w, APX_WK_THREAD, w->canon[st->a.thread[i]], start, end, &s.track);
		break;
	case APX_ES_MARKER:
		if ((r = text_name(w, apx_store_string(st, st->mk.name[i]), &s.name_len)) < 0)
			return r;
		s.name = w->name;
		s.category = "user_annotation";
		s.instant = start == end;
		r = track_of(w, APX_WK_THREAD_NVTX, w->canon[st->mk.thread[i]], start, end,
			     &s.track);
		break;
	case APX_ES_SYNC:
		snprintf(w->name, w->name_cap, "%s", sync_name(st->y.kind[i]));
		s.name = w->name;
		s.category = "cuda_sync";
		r = track_of(w, APX_WK_THREAD, w->canon[st->y.thread[i]], start, end, &s.track);
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
	struct apx_wk_slice s = { .type = APX_ES__COUNT, .index = p->marker,
				  .start = apx_export_rel_ns(w->st, p->start),
				  .end = apx_export_rel_ns(w->st, p->end),
				  .category = "gpu_user_annotation" };
	int r = track_of(w, APX_WK_STREAM, p->stream, s.start, s.end, &s.track);

	if (r < 0 ||
	    (r = text_name(w, apx_store_string(w->st, w->st->mk.name[p->marker]), &s.name_len)) < 0)
		return r;
	s.name = w->name;
	return emit(w, &s);
}

int apx_walk(struct apx_store *st, const struct apx_export_waits *waits,
	     const struct apx_wk_ops *ops, struct apx_wk_stats *ret_stats)
{
	struct walk w = { .st = st, .ops = ops };
	struct apx_store_iter it;
	enum apx_es_type type;
	size_t i, pi = 0, mapped = 0;
	int r = -ENOMEM;

	w.thread_l = calloc(st->nthreads + 1, sizeof(*w.thread_l));
	w.nvtx_l = calloc(st->nthreads + 1, sizeof(*w.nvtx_l));
	w.stream_l = calloc(st->nstreams + 1, sizeof(*w.stream_l));
	w.demangled = calloc(st->nstrings + 1, sizeof(*w.demangled));
	w.dem_len = calloc(st->nstrings + 1, sizeof(*w.dem_len));
	if (!w.thread_l || !w.nvtx_l || !w.stream_l || !w.demangled || !w.dem_len ||
	    name_room(&w, NAME_ROOM) < 0)
		goto out;
	if ((r = apx_wk_thread_map(st, &w.canon, &mapped)) < 0 || (r = declare_processes(&w)) < 0 ||
	    (r = find_trims(&w)) < 0 || (r = project(&w)) < 0 || (r = find_waits(&w, waits)) < 0)
		goto out;
	w.stats.threads_mapped = mapped;
	if (w.nproj)
		qsort_r(w.proj, w.nproj, sizeof(*w.proj), cmp_proj, st);
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
	if (r >= 0 && ret_stats)
		*ret_stats = w.stats;
out:
	if (w.thread_l)
		for (size_t t = 0; t < st->nthreads; t++) {
			free(w.thread_l[t].l);
			free(w.nvtx_l[t].l);
		}
	if (w.stream_l)
		for (size_t t = 0; t < st->nstreams; t++)
			free(w.stream_l[t].l);
	for (size_t t = 0; w.demangled && t < st->nstrings; t++)
		free(w.demangled[t]);
	free(w.demangled);
	free(w.dem_len);
	free(w.thread_l);
	free(w.nvtx_l);
	free(w.stream_l);
	free(w.heap);
	free(w.proj);
	free(w.trim);
	free(w.wait_w);
	free(w.canon);
	free(w.name);
	return r;
}
