/*
 * ranks.c - several ranks of one run (ranks.h), from a finished model: the files' GPU work
 * from the event store (kernels, copies, memsets, ProfilerStep# ranges) and their NCCL
 * operations (the model's COLLECTIVE records, load.c). Computes per-rank GPU busy, step time,
 * communication and its exposed part; devices by (host, UUID); the collectives table with
 * nccl-tests' algbw/busbw (../shared/NCCL.md §4) over instances (one collective on all its
 * ranks, at its shortest duration over them), each function's time-vs-size fit; stragglers:
 * for every collective found on all ranks of its communicator (same comm id and sequence
 * number), each rank's arrival (its GPU start, else its host enqueue, on the wall clock
 * through the header's realtime offset, so hosts' clocks compare) against the median rank's;
 * and per rank what overlap and fusing could save, a step at a time, and the exposed time of
 * the network's collectives (communicators on several hosts) against the hosts' NIC line
 * rates (the rules of several ranks read them). Called by apx_model_finish() (finish.c) and
 * apx_ranks_load() (tests);
 * single-threaded, logs nothing.
 */
#include "analysis/ranks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/finding.h"
#include "analysis/model.h"
#include "analysis/p2p.h"
#include "analysis/store.h"

#include "base/banned.h"

struct iv {
	uint64_t s, e;
};

struct ivs {
	struct iv *v;
	size_t n, cap;
};

/* Append [s, e) (steps: each kept). */
static int iv_push(struct ivs *a, uint64_t s, uint64_t e)
{
	if (e <= s)
		return 0;
	if (a->n == a->cap) {
		size_t c = a->cap ? a->cap * 2 : 256;
		struct iv *p = reallocarray(a->v, c, sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->v = p;
		a->cap = c;
	}
	a->v[a->n++] = (struct iv){ s, e };
	return 0;
}

/* Add [s, e) to a list to be merged; one that starts inside the last one (the store's columns
 * come in start order) extends it instead, so that back-to-back work takes one entry. */
static int iv_add(struct ivs *a, uint64_t s, uint64_t e)
{
	if (e > s && a->n && s >= a->v[a->n - 1].s && s <= a->v[a->n - 1].e) {
		if (e > a->v[a->n - 1].e)
			a->v[a->n - 1].e = e;
		return 0;
	}
	return iv_push(a, s, e);
}

static int iv_cmp(const void *a, const void *b)
{
	const struct iv *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* Sort and merge in place; returns the covered length. */
static uint64_t iv_union(struct ivs *a)
{
	size_t k = 0;
	uint64_t len = 0;

	if (!a->n)
		return 0;
	qsort(a->v, a->n, sizeof(*a->v), iv_cmp);
	for (size_t i = 1; i < a->n; i++) {
		if (a->v[i].s <= a->v[k].e) {
			if (a->v[i].e > a->v[k].e)
				a->v[k].e = a->v[i].e;
		} else {
			a->v[++k] = a->v[i];
		}
	}
	a->n = k + 1;
	for (size_t i = 0; i < a->n; i++)
		len += a->v[i].e - a->v[i].s;
	return len;
}

/* Length of the intersection of two merged lists. */
static uint64_t iv_overlap(const struct ivs *a, const struct ivs *b)
{
	size_t i = 0, j = 0;
	uint64_t len = 0;

	while (i < a->n && j < b->n) {
		uint64_t s = a->v[i].s > b->v[j].s ? a->v[i].s : b->v[j].s;
		uint64_t e = a->v[i].e < b->v[j].e ? a->v[i].e : b->v[j].e;

		if (e > s)
			len += e - s;
		if (a->v[i].e < b->v[j].e)
			i++;
		else
			j++;
	}
	return len;
}

/* The first interval of a merged list that ends after s. */
static size_t iv_first(const struct ivs *u, uint64_t s)
{
	size_t lo = 0, hi = u->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->v[mid].e <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* How much of [s, e) a merged list covers. */
static uint64_t iv_covered(const struct ivs *u, uint64_t s, uint64_t e)
{
	uint64_t len = 0;

	for (size_t i = iv_first(u, s); i < u->n && u->v[i].s < e; i++) {
		uint64_t a = u->v[i].s > s ? u->v[i].s : s, b = u->v[i].e < e ? u->v[i].e : e;

		if (b > a)
			len += b - a;
	}
	return len;
}

/* The time of merged list u inside [a, b) that merged list v does not cover. */
static uint64_t iv_uncovered(const struct ivs *u, const struct ivs *v, uint64_t a, uint64_t b)
{
	uint64_t len = 0;

	for (size_t i = iv_first(u, a); i < u->n && u->v[i].s < b; i++) {
		uint64_t x = u->v[i].s > a ? u->v[i].s : a, y = u->v[i].e < b ? u->v[i].e : b;

		if (y > x)
			len += (y - x) - iv_covered(v, x, y);
	}
	return len;
}

/* ---- nccl-tests ---------------------------------------------------------------------------- */

double apx_ranks_algbytes(unsigned func, uint64_t bytes, unsigned n)
{
	switch (func) {
	case APX_COLL_ALL_GATHER:		/* NCCL counts the send count */
	case APX_COLL_REDUCE_SCATTER:		/* ... and the receive count */
	case APX_COLL_ALL_TO_ALL:
		return (double)bytes * (n ? n : 1);
	default:
		return (double)bytes;
	}
}

double apx_ranks_busbw_factor(unsigned func, unsigned n)
{
	if (n < 1)
		return 1;
	switch (func) {
	case APX_COLL_ALL_REDUCE:
		return 2.0 * (n - 1) / n;
	case APX_COLL_ALL_GATHER:
	case APX_COLL_REDUCE_SCATTER:
	case APX_COLL_ALL_TO_ALL:
		return (double)(n - 1) / n;
	default:				/* broadcast, reduce, send/recv */
		return 1;
	}
}

double apx_ranks_fit_ns(const struct apx_ranks_coll *c, double bytes)
{
	return c->fit ? c->latency_ns + bytes * c->ns_per_byte : 0;
}

static const char *const bucket_names[APX_RANKS_SIZE_BUCKETS] = {
	"<4KiB", "4KiB-64KiB", "64KiB-1MiB", "1MiB-16MiB", "16MiB-256MiB", ">=256MiB",
};

const char *apx_ranks_bucket_name(unsigned b)
{
	return b < APX_RANKS_SIZE_BUCKETS ? bucket_names[b] : "?";
}

static unsigned size_bucket(uint64_t b)
{
	unsigned k = 0;

	for (uint64_t lim = 4096; k < APX_RANKS_SIZE_BUCKETS - 1 && b >= lim; lim <<= 4)
		k++;
	return k;
}

/* ---- the work of one build ------------------------------------------------------------------ */

struct call {					/* one COLLECTIVE record, for matching */
	uint64_t comm, seq, bytes, dur;		/* dur: on the GPU, 0 = not timed */
	int64_t arrive, enq;			/* wall ns: GPU start (else enqueue), enqueue */
	uint32_t file, nranks;
	uint8_t func, p2p;
};

struct sample {					/* one timed instance, for the fits */
	uint64_t bytes, ns;
	uint8_t func;
};

struct work {
	size_t nf, ndev;
	struct ivs *busy, *comm, *compute, *steps;	/* per file (steps: not merged) */
	struct ivs *devbusy;			/* per store device */
	uint32_t *fdev;				/* per file: its store device, UINT32_MAX none */
	int *from_coll;				/* ... named by a collective's device */
	uint32_t *dmap;				/* store device -> R->dev + 1, 0 none */
	uint32_t *order;			/* m->colls by (file, time) */
	size_t *ofirst;				/* per file: its first in order (nf + 1) */
	struct call *calls;
	size_t ncalls;
	int64_t *tmp;				/* a group's enqueue times */
	size_t tmpcap;
	struct sample *smp;
	size_t nsmp, smpcap;
	uint64_t *netcomm;			/* communicators on several hosts, ascending */
	size_t nnetcomm;
	double alg[APX_COLL__COUNT], bus[APX_COLL__COUNT];	/* bytes over timed instances */
	double nbus[APX_COLL__COUNT];		/* ... of the network's (busbw's bytes) */
	double bbus[APX_COLL__COUNT][APX_RANKS_SIZE_BUCKETS];
	uint64_t bns[APX_COLL__COUNT][APX_RANKS_SIZE_BUCKETS];
};

static void work_free(struct work *w)
{
	for (size_t i = 0; i < w->nf && w->busy; i++) {
		free(w->busy[i].v);
		free(w->comm[i].v);
		free(w->compute[i].v);
		free(w->steps[i].v);
	}
	free(w->busy);
	free(w->comm);
	free(w->compute);
	free(w->steps);
	free(w->fdev);
	free(w->from_coll);
	free(w->order);
	free(w->ofirst);
	free(w->calls);
	free(w->tmp);
	free(w->smp);
	free(w->netcomm);
}

static int is_nccl_kernel(struct apx_es_text nm)
{
	return nm.len >= 4 && !memcmp(nm.p, "nccl", 4);
}

static int is_step_name(struct apx_es_text nm)
{
	return nm.len > 13 && !memcmp(nm.p, "ProfilerStep#", 13);
}

/* The model's collective i: its ordering time on its file's clock. */
static uint64_t coll_time(const struct apx_an_coll *c)
{
	return c->end > c->start ? c->start : c->enq;
}

static const struct apx_an_coll *coll_at(const struct apx_model *m, size_t i)
{
	return APX_VEC_AT(&m->colls, struct apx_an_coll, i);
}

struct order_ctx {
	const struct apx_model *m;
};

static int order_cmp(const void *a, const void *b, void *ctx)
{
	const struct apx_model *m = ((const struct order_ctx *)ctx)->m;
	const struct apx_an_coll *x = coll_at(m, *(const uint32_t *)a);
	const struct apx_an_coll *y = coll_at(m, *(const uint32_t *)b);
	uint64_t tx = coll_time(x), ty = coll_time(y);

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return tx < ty ? -1 : tx > ty;
}

/* The files' devices: a collective's device first, else the device of the file's first
 * kernel, copy or memset. */
static void file_devices(const struct apx_model *m, struct work *w)
{
	const struct apx_store *st = m->store;
	const struct {
		size_t n;
		const uint32_t *stream;
	} cols[3] = { { st->k.n, st->k.stream }, { st->c.n, st->c.stream },
		      { st->s.n, st->s.stream } };

	for (size_t i = 0; i < m->colls.n; i++) {
		const struct apx_an_coll *c = coll_at(m, i);
		uint32_t d;

		if (c->file >= w->nf || w->from_coll[c->file] || c->device < 0)
			continue;
		d = apx_store_device_of(st, c->file, (uint64_t)c->device);
		if (d < st->ndevices) {
			w->fdev[c->file] = d;
			w->from_coll[c->file] = 1;
		}
	}
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < cols[k].n; i++) {
			const uint32_t s = cols[k].stream[i];

			if (s < st->nstreams && st->streams[s].file < w->nf &&
			    st->streams[s].device < w->ndev &&
			    w->fdev[st->streams[s].file] == UINT32_MAX)
				w->fdev[st->streams[s].file] = st->streams[s].device;
		}
}

/* Kernels, copies and memsets: each file's busy and compute time, each device's busy time;
 * ProfilerStep# ranges: each file's steps. */
static int gather_store(const struct apx_model *m, struct apx_ranks *R, struct work *w)
{
	const struct apx_store *st = m->store;
	int k = 0;

	for (size_t i = 0; i < st->k.n && k >= 0; i++) {
		uint32_t s = st->k.stream[i];
		uint64_t a = st->k.start[i], b = apx_store_end(st, APX_ES_KERNEL, i);
		uint16_t fi;

		if (s >= st->nstreams || (fi = st->streams[s].file) >= w->nf ||
		    st->streams[s].device >= w->ndev)
			continue;
		if ((k = iv_add(&w->busy[fi], a, b)) < 0 ||
		    (k = iv_add(&w->devbusy[st->streams[s].device], a, b)) < 0)
			break;
		if (!is_nccl_kernel(apx_store_string(st, st->k.name[i])))
			k = iv_add(&w->compute[fi], a, b);
	}
	for (size_t i = 0; i < st->c.n && k >= 0; i++) {
		uint32_t s = st->c.stream[i];
		uint16_t fi;

		if (s >= st->nstreams || (fi = st->streams[s].file) >= w->nf ||
		    st->streams[s].device >= w->ndev)
			continue;
		if (st->c.kind[i] == APX_COPY_H2D && st->c.end[i] > st->c.start[i])
			R->rank[fi].h2d_ns += st->c.end[i] - st->c.start[i];
		if ((k = iv_add(&w->busy[fi], st->c.start[i], st->c.end[i])) >= 0)
			k = iv_add(&w->devbusy[st->streams[s].device], st->c.start[i], st->c.end[i]);
	}
	for (size_t i = 0; i < st->s.n && k >= 0; i++) {
		uint32_t s = st->s.stream[i];
		uint16_t fi;

		if (s >= st->nstreams || (fi = st->streams[s].file) >= w->nf ||
		    st->streams[s].device >= w->ndev)
			continue;
		if ((k = iv_add(&w->busy[fi], st->s.start[i], st->s.end[i])) >= 0)
			k = iv_add(&w->devbusy[st->streams[s].device], st->s.start[i], st->s.end[i]);
	}
	for (size_t i = 0; i < st->mk.n && k >= 0; i++) {
		uint32_t t = st->mk.thread[i];

		if (t < st->nthreads && st->threads[t].file < w->nf &&
		    is_step_name(apx_store_string(st, st->mk.name[i])))
			k = iv_push(&w->steps[st->threads[t].file], st->mk.start[i], st->mk.end[i]);
	}
	return k < 0 ? k : 0;
}

/* The COLLECTIVE records: per file and per function, and the calls to match. */
static int gather_colls(const struct apx_model *m, struct apx_ranks *R, struct work *w)
{
	uint32_t *best = calloc(w->nf ? w->nf : 1, sizeof(*best));	/* largest nranks seen */
	int k = 0;

	if (!best)
		return -ENOMEM;
	w->calls = reallocarray(NULL, m->colls.n ? m->colls.n : 1, sizeof(*w->calls));
	if (!w->calls) {
		free(best);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->colls.n && k >= 0; i++) {
		const struct apx_an_coll *c = coll_at(m, i);
		struct apx_ranks_rank *rk;
		struct apx_ranks_coll *cl = &R->coll[c->func];
		uint64_t dur = c->end > c->start ? c->end - c->start : 0;

		if (c->file >= w->nf)
			continue;
		rk = &R->rank[c->file];
		rk->colls++;
		cl->func = c->func;
		cl->calls++;
		cl->bytes += c->bytes;
		cl->size_hist[size_bucket(c->bytes)]++;
		cl->algo[c->algo]++;
		cl->proto[c->proto]++;
		if ((int)c->nranks > R->world)
			R->world = (int)c->nranks;
		/* no rank in the header: its rank in its largest communicator */
		if (m->files[c->file].rank < 0 && c->rank >= 0 && c->nranks > best[c->file]) {
			best[c->file] = c->nranks;
			rk->rank = c->rank;
		}
		if (dur) {
			cl->time_ns += dur;
			cl->timed++;
			if ((k = iv_add(&w->busy[c->file], c->start, c->end)) < 0 ||
			    (k = iv_add(&w->comm[c->file], c->start, c->end)) < 0)
				break;
			if (w->fdev[c->file] != UINT32_MAX)
				k = iv_add(&w->devbusy[w->fdev[c->file]], c->start, c->end);
		}
		w->calls[w->ncalls++] = (struct call){
			.comm = c->comm, .seq = c->seq, .bytes = c->bytes, .dur = dur,
			/* on the wall clock (wrapping, never overflowing: hostile offsets) */
			.arrive = (int64_t)((dur ? c->start : c->enq) +
					    (uint64_t)rk->realtime_offset_ns),
			.enq = (int64_t)(c->enq + (uint64_t)rk->realtime_offset_ns), .file = c->file,
			.nranks = c->nranks, .func = c->func, .p2p = !!(c->flags & APX_COLL_F_P2P),
		};
	}
	free(best);
	return k < 0 ? k : 0;
}

static int call_cmp(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->p2p != y->p2p)
		return x->p2p < y->p2p ? -1 : 1;
	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return x->arrive < y->arrive ? -1 : x->arrive > y->arrive;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int is_net_comm(const struct work *w, uint64_t comm)
{
	size_t lo = 0, hi = w->nnetcomm;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->netcomm[mid] == comm)
			return 1;
		if (w->netcomm[mid] < comm)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* The communicators whose collectives come from files of several hosts: the network's (calls
 * sorted by call_cmp: collectives first, by communicator). */
static int net_comms(struct apx_ranks *R, struct work *w)
{
	size_t i = 0;

	w->netcomm = reallocarray(NULL, w->ncalls ? w->ncalls : 1, sizeof(*w->netcomm));
	if (!w->netcomm)
		return -ENOMEM;
	while (i < w->ncalls && !w->calls[i].p2p) {
		const char *host = R->rank[w->calls[i].file].host;
		size_t j = i + 1;
		int several = 0;

		for (; j < w->ncalls && !w->calls[j].p2p && w->calls[j].comm == w->calls[i].comm;
		     j++)
			several |= strcmp(R->rank[w->calls[j].file].host, host) != 0;
		if (several)
			w->netcomm[w->nnetcomm++] = w->calls[i].comm;
		i = j;
	}
	R->net_comms = (unsigned)w->nnetcomm;
	return 0;
}

/* One instance: its shortest timed duration for the bandwidth and the fits. */
static int instance(struct apx_ranks *R, struct work *w, const struct call *c, size_t n)
{
	struct apx_ranks_coll *cl = &R->coll[c[0].func];
	uint64_t t = 0;
	double s, f;
	unsigned b = size_bucket(c[0].bytes);

	cl->instances++;
	for (size_t i = 0; i < n; i++)
		if (c[i].dur && (!t || c[i].dur < t))
			t = c[i].dur;
	if (!t)
		return 0;
	s = c[0].p2p ? (double)c[0].bytes : apx_ranks_algbytes(c[0].func, c[0].bytes, c[0].nranks);
	f = c[0].p2p ? 1 : apx_ranks_busbw_factor(c[0].func, c[0].nranks);
	cl->inst_timed++;
	cl->inst_ns += t;
	w->alg[c[0].func] += s;
	w->bus[c[0].func] += s * f;
	w->bbus[c[0].func][b] += s * f;
	w->bns[c[0].func][b] += t;
	if (!c[0].p2p && is_net_comm(w, c[0].comm)) {
		cl->net_inst_timed++;
		cl->net_inst_ns += t;
		w->nbus[c[0].func] += s * f;
	}
	if (w->nsmp == w->smpcap) {
		size_t cap = w->smpcap ? w->smpcap * 2 : 256;
		struct sample *p = reallocarray(w->smp, cap, sizeof(*p));

		if (!p)
			return -ENOMEM;
		w->smp = p;
		w->smpcap = cap;
	}
	w->smp[w->nsmp++] = (struct sample){ c[0].bytes, t, c[0].func };
	return 0;
}

/* a - b for a >= b (wall times from a trace: any int64), else 0; never overflows */
static uint64_t later(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)a - (uint64_t)b : 0;
}

/* A collective found on every rank of its communicator (c sorted by arrival): each rank's
 * lateness against the median rank, waits, and what the last one cost the others. */
static int matched(struct apx_ranks *R, struct work *w, const struct call *c, size_t n)
{
	int64_t med = c[(n - 1) / 2].arrive, last = c[n - 1].arrive, menq;
	uint64_t late, host;
	struct apx_ranks_rank *lr = &R->rank[c[n - 1].file];

	if (n > w->tmpcap) {
		int64_t *p = reallocarray(w->tmp, n, sizeof(*p));

		if (!p)
			return -ENOMEM;
		w->tmp = p;
		w->tmpcap = n;
	}
	for (size_t k = 0; k < n; k++)
		w->tmp[k] = c[k].enq;
	qsort(w->tmp, n, sizeof(*w->tmp), i64_cmp);
	menq = w->tmp[(n - 1) / 2];
	for (size_t k = 0; k < n; k++) {
		struct apx_ranks_rank *rk = &R->rank[c[k].file];

		late = later(c[k].arrive, med);
		rk->matched++;
		rk->late_sum_ns += late;
		if (late > rk->late_max_ns)
			rk->late_max_ns = late;
		if (k + 1 < n) {
			rk->wait_ns += later(last, c[k].arrive);
			lr->last_wait_ns += later(last, c[k].arrive);
		}
	}
	lr->last++;
	lr->last_gap_ns += later(last, c[n - 2].arrive);
	late = later(last, med);
	lr->last_late_ns += late;
	host = later(c[n - 1].enq, menq);	/* its host was that late */
	lr->last_host_ns += host < late ? host : late;
	return 0;
}

/* Group the calls by (comm, seq, func): instances, and the matched ones' arrivals. */
static int match_calls(struct apx_ranks *R, struct work *w)
{
	size_t i = 0;
	int k = 0;

	if (w->ncalls)
		qsort(w->calls, w->ncalls, sizeof(*w->calls), call_cmp);
	k = net_comms(R, w);
	while (i < w->ncalls && k >= 0) {
		const struct call *c = &w->calls[i];
		size_t j = i + 1, n;

		while (!c->p2p && j < w->ncalls && !w->calls[j].p2p && w->calls[j].comm == c->comm &&
		       w->calls[j].seq == c->seq && w->calls[j].func == c->func)
			j++;
		n = j - i;
		k = instance(R, w, c, n);
		if (k >= 0 && n >= 2 && n == c->nranks)
			k = matched(R, w, c, n);
		i = j;
	}
	return k;
}

static int sample_cmp(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Each function's time against size: per distinct size its shortest instance; the slope by
 * least squares over them (0 when times do not grow with size), the latency as the median
 * over the sizes under 64 KiB of their time less the slope's part (without such sizes, the
 * line's intercept). A fit needs sizes spanning a factor of 2. */
static int fit_sizes(struct apx_ranks *R, struct work *w)
{
	double *lat = reallocarray(NULL, w->nsmp ? w->nsmp : 1, sizeof(*lat));
	size_t i = 0;

	if (!lat)
		return -ENOMEM;
	if (w->nsmp)	/* none when no collective has GPU times (one rank) */
		qsort(w->smp, w->nsmp, sizeof(*w->smp), sample_cmp);
	while (i < w->nsmp) {
		struct apx_ranks_coll *cl = &R->coll[w->smp[i].func];
		double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0, k = 0, a;
		uint64_t lo = w->smp[i].bytes, hi = lo;
		size_t j = i, nl = 0;

		for (; j < w->nsmp && w->smp[j].func == w->smp[i].func; j++) {
			double x = (double)w->smp[j].bytes, y = (double)w->smp[j].ns;

			if (j > i && w->smp[j].bytes == w->smp[j - 1].bytes)
				continue;	/* the shortest of a size came first */
			sx += x;
			sy += y;
			sxx += x * x;
			sxy += x * y;
			n++;
			hi = w->smp[j].bytes;
		}
		if (n >= 2 && hi >= 2 * lo && hi > 0) {
			double den = n * sxx - sx * sx;

			k = den > 0 ? (n * sxy - sx * sy) / den : 0;
			if (k < 0)
				k = 0;
			for (size_t q = i; q < j; q++)
				if (w->smp[q].bytes < APX_RANKS_SMALL_BYTES &&
				    (q == i || w->smp[q].bytes != w->smp[q - 1].bytes)) {
					a = (double)w->smp[q].ns - k * (double)w->smp[q].bytes;
					lat[nl++] = a > 0 ? a : 0;
				}
			if (nl) {
				qsort(lat, nl, sizeof(*lat), dbl_cmp);
				a = lat[(nl - 1) / 2];
			} else {
				a = (sy - k * sx) / n;
			}
			cl->fit = 1;
			cl->fit_sizes = (unsigned)n;
			cl->latency_ns = a > 0 ? a : 0;
			cl->ns_per_byte = k;
		}
		i = j;
	}
	free(lat);
	return 0;
}

/* The index in steps (sorted, disjoint) of the step holding t; -1 none. */
static int64_t step_of(const struct ivs *steps, uint64_t t)
{
	size_t lo = 0, hi = steps->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (steps->v[mid].e <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < steps->n && steps->v[lo].s <= t ? (int64_t)lo : -1;
}

/* Exposed communication a step at a time: what overlap could hide (ranks.h). */
static void exposure(const struct apx_model *m, struct apx_ranks *R, struct work *w, size_t fi)
{
	struct apx_ranks_rank *rk = &R->rank[fi];
	const struct ivs *cm = &w->comm[fi], *cp = &w->compute[fi];
	struct ivs one = { &(struct iv){ rk->first_ns, rk->end_ns + 1 }, 1, 1 };
	const struct ivs *steps = w->steps[fi].n ? &w->steps[fi] : &one;
	size_t o = w->ofirst[fi];

	for (size_t s = 0; s < steps->n; s++) {
		uint64_t a = steps->v[s].s, b = steps->v[s].e, stays, tail, beside;
		uint64_t exposed = iv_uncovered(cm, cp, a, b);	/* its communication in the step */
		const struct apx_an_coll *last = NULL;

		for (; o < w->ofirst[fi + 1]; o++) {	/* its last timed collective in the step */
			const struct apx_an_coll *c = coll_at(m, w->order[o]);

			if (coll_time(c) >= b)
				break;
			if (c->end > c->start && c->start >= a)
				last = c;
		}
		if (!last || !exposed)
			continue;
		tail = (last->end - last->start) - iv_covered(cp, last->start, last->end);
		stays = tail;
		if (last->bytes > APX_RANKS_BUCKET_BYTES) {	/* in buckets, the last one stays */
			double bucket = R->coll[last->func].fit
				? apx_ranks_fit_ns(&R->coll[last->func], (double)APX_RANKS_BUCKET_BYTES)
				: (double)tail * (double)APX_RANKS_BUCKET_BYTES / (double)last->bytes;

			if (bucket < (double)stays)
				stays = (uint64_t)bucket;
		}
		beside = iv_uncovered(cp, cm, a, last->start);	/* compute before it, no comm */
		rk->tail_ns += stays;
		rk->free_compute_ns += beside;
		if (exposed > stays)
			rk->hideable_ns += exposed - stays < beside ? exposed - stays : beside;
	}
}

/* The network's collectives of file fi in its steps: calls, bytes, and the time they run
 * beside no compute kernel, in all, per function, and per function of the float32 ones. */
static int network(const struct apx_model *m, struct apx_ranks *R, struct work *w, size_t fi)
{
	struct apx_ranks_rank *rk = &R->rank[fi];
	const struct ivs *cp = &w->compute[fi];
	struct ivs one = { &(struct iv){ rk->first_ns, rk->end_ns + 1 }, 1, 1 };
	const struct ivs *steps = w->steps[fi].n ? &w->steps[fi] : &one;
	struct ivs all = { 0 }, fn[APX_COLL__COUNT] = { 0 }, f32[APX_COLL__COUNT] = { 0 };
	int k = 0;

	for (size_t o = w->ofirst[fi]; o < w->ofirst[fi + 1] && k >= 0; o++) {
		const struct apx_an_coll *c = coll_at(m, w->order[o]);
		struct apx_ranks_coll *cl = &R->coll[c->func];

		if ((c->flags & APX_COLL_F_P2P) || !is_net_comm(w, c->comm))
			continue;
		cl->net_calls++;
		cl->net_bytes += c->bytes;
		if (c->dtype == APX_DT_FLOAT32)
			cl->net_fp32_bytes += c->bytes;
		if (w->steps[fi].n && step_of(&w->steps[fi], coll_time(c)) < 0)
			continue;
		rk->net_calls++;
		rk->net_bytes += c->bytes;
		if (c->end <= c->start)
			continue;
		if ((k = iv_add(&all, c->start, c->end)) < 0 ||
		    (k = iv_add(&fn[c->func], c->start, c->end)) < 0)
			break;
		if (c->dtype == APX_DT_FLOAT32)
			k = iv_add(&f32[c->func], c->start, c->end);
	}
	if (k >= 0 && rk->net_calls) {
		iv_union(&all);
		for (unsigned f = 0; f < APX_COLL__COUNT; f++) {
			iv_union(&fn[f]);
			iv_union(&f32[f]);
		}
		for (size_t s = 0; s < steps->n; s++) {
			uint64_t a = steps->v[s].s, b = steps->v[s].e;

			rk->net_step_ns += b - a;
			rk->net_exposed_ns += iv_uncovered(&all, cp, a, b);
			for (unsigned f = 0; f < APX_COLL__COUNT; f++) {
				rk->net_fexposed_ns[f] += iv_uncovered(&fn[f], cp, a, b);
				rk->net_fp32_exposed_ns[f] += iv_uncovered(&f32[f], cp, a, b);
			}
		}
	}
	free(all.v);
	for (unsigned f = 0; f < APX_COLL__COUNT; f++) {
		free(fn[f].v);
		free(f32[f].v);
	}
	return k < 0 ? k : 0;
}

#define OPEN_GROUPS 64

struct group {
	uint64_t comm, exposed;
	int64_t step;
	uint32_t n;
	uint8_t func;
};

static void close_group(struct apx_ranks *R, struct apx_ranks_rank *rk, const struct group *g)
{
	double fuse;

	if (g->n < 2)
		return;
	fuse = (double)(g->n - 1) * R->coll[g->func].latency_ns;
	rk->small_groups++;
	rk->small_saving_ns += fuse < (double)g->exposed ? fuse : (double)g->exposed;
}

/* Small, latency-bound collectives in groups that could be one call: consecutive ones of one
 * communicator and function within a step (a larger one of the communicator ends them). */
static void small_groups(const struct apx_model *m, struct apx_ranks *R, struct work *w,
			 size_t fi, uint64_t *nofit)
{
	struct apx_ranks_rank *rk = &R->rank[fi];
	struct group g[OPEN_GROUPS];
	size_t ng = 0;

	for (size_t o = w->ofirst[fi]; o < w->ofirst[fi + 1]; o++) {
		const struct apx_an_coll *c = coll_at(m, w->order[o]);
		const struct apx_ranks_coll *cl = &R->coll[c->func];
		int64_t step = w->steps[fi].n ? step_of(&w->steps[fi], coll_time(c)) : 0;
		uint64_t exposed = 0;
		size_t k;

		if (c->flags & APX_COLL_F_P2P)
			continue;
		if (c->bytes >= APX_RANKS_SMALL_BYTES) {	/* ends its communicator's groups */
			for (k = 0; k < ng;)
				if (g[k].comm == c->comm) {
					close_group(R, rk, &g[k]);
					g[k] = g[--ng];
				} else {
					k++;
				}
			continue;
		}
		if (!cl->fit) {
			(*nofit)++;
			continue;
		}
		if ((double)c->bytes * cl->ns_per_byte > cl->latency_ns)
			continue;			/* not latency-bound */
		rk->small_calls++;
		if (c->end > c->start) {
			exposed = (c->end - c->start) - iv_covered(&w->compute[fi], c->start, c->end);
			rk->small_exposed_ns += exposed;
		}
		for (k = 0; k < ng && !(g[k].comm == c->comm && g[k].func == c->func); k++)
			;
		if (k < ng && g[k].step == step) {
			g[k].n++;
			g[k].exposed += exposed;
			continue;
		}
		if (k < ng) {
			close_group(R, rk, &g[k]);
		} else if (ng == OPEN_GROUPS) {
			close_group(R, rk, &g[0]);
			k = 0;
		} else {
			k = ng++;
		}
		g[k] = (struct group){ c->comm, exposed, step, 1, c->func };
	}
	for (size_t k = 0; k < ng; k++)
		close_group(R, rk, &g[k]);
}

/* A straggler: last at more than half of at least 3 matched collectives, and on average more
 * than 50 us after the median rank (below that, launch jitter). */
static void find_straggler(struct apx_ranks *R)
{
	R->straggler.rank = -1;
	R->straggler.index = -1;
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];
		uint64_t mean = rk->matched ? rk->late_sum_ns / rk->matched : 0;

		if (rk->matched >= 3 && rk->last * 2 > rk->matched && mean > 50000 &&
		    (R->straggler.index < 0 || mean > R->straggler.mean_late_ns)) {
			R->straggler.rank = rk->rank;
			R->straggler.index = (int)i;
			R->straggler.last = rk->last;
			R->straggler.matched = rk->matched;
			R->straggler.mean_late_ns = mean;
		}
	}
}

/* A NIC's line rate series (src_nic.c, bit/s): 1 InfiniBand/RoCE port, 0 net device, -1 none. */
static int line_rate_kind(const struct apx_an_series *x)
{
	static const char tail[] = ".line_rate";
	const size_t n = x->name_len, t = sizeof(tail) - 1;

	if (!x->name || !x->count || n <= t || memcmp(x->name + n - t, tail, t))
		return -1;
	if (n > 3 && !memcmp(x->name, "ib.", 3))
		return 1;
	return n > 4 && !memcmp(x->name, "nic.", 4) ? 0 : -1;
}

/* Host's NIC line rate, bits a second a direction: its InfiniBand/RoCE ports' line rates summed
 * (NCCL takes RDMA when there is some; an IPoIB or RoCE port's net device is the same NIC),
 * else its physical Ethernet devices'; from the first of its files that recorded any (LOCAL_RANK
 * 0 samples the host's NICs). 0: none recorded. *ret_n: how many links, *ret_ib: RDMA. */
static double host_line_rate(const struct apx_model *m, const char *host, unsigned *ret_n,
			     int *ret_ib)
{
	double sum[2] = { 0, 0 };
	unsigned n[2] = { 0, 0 };
	int file = -1;

	for (size_t i = 0; i < m->series.n; i++) {
		const struct apx_an_series *x = APX_VEC_AT(&m->series, struct apx_an_series, i);
		int ib = line_rate_kind(x);

		if (ib < 0 || x->file >= m->nfiles || strcmp(m->files[x->file].host, host) ||
		    (file >= 0 && x->file != file) || !(x->max > 0))
			continue;
		file = x->file;
		sum[ib] += x->max;
		n[ib]++;
	}
	*ret_ib = n[1] > 0;
	*ret_n = n[*ret_ib];
	return sum[*ret_ib];
}

/* Several hosts: the NICs, the least over the hosts of their line rate (ranks.h). */
static void nic_link(const struct apx_model *m, struct apx_ranks *R)
{
	struct apx_ranks_link *l = &R->link;
	double least = 0;

	for (size_t i = 0; i < R->nranks; i++) {
		const char *host = R->rank[i].host;
		unsigned n;
		int ib, seen = 0;
		double bits;

		if (!R->rank[i].colls)
			continue;
		for (size_t k = 0; k < i && !seen; k++)
			seen = R->rank[k].colls && !strcmp(R->rank[k].host, host);
		if (seen)
			continue;
		bits = host_line_rate(m, m->files[R->rank[i].file].host, &n, &ib);
		if (!(bits > 0)) {
			snprintf(l->why, sizeof(l->why), "the ranks are on %u hosts: the network "
				 "is the bottleneck, and host %.60s recorded no NIC line rate "
				 "(apx analyze --nic-metrics records it)", R->hosts,
				 host[0] ? host : "?");
			l->kind = NULL;
			l->peak_bps = 0;
			return;
		}
		if (!least || bits < least) {
			least = bits;
			snprintf(l->why, sizeof(l->why), "the ranks are on %u hosts: NICs, "
				 "%.0f Gb/s a direction (%u %s of host %.60s; the least over "
				 "the hosts)",
				 R->hosts, bits / 1e9, n,
				 ib ? (n > 1 ? "RDMA ports" : "RDMA port")
				    : (n > 1 ? "Ethernet devices" : "Ethernet device"),
				 host[0] ? host : "?");
		}
	}
	l->kind = least > 0 ? "NIC" : NULL;
	l->peak_bps = least / 8;
}

/* The bottleneck link of the collectives (ranks.h): NVLink (its links x the link's speed for
 * the architecture), else, on a GPU that has none, its PCIe link (generation x width); on
 * several hosts, the NICs (nic_link). */
static void find_link(const struct apx_model *m, struct apx_ranks *R, const struct work *w)
{
	struct apx_ranks_link *l = &R->link;
	const char *kind = NULL;
	double peak = 0;

	if (R->world <= 1) {
		snprintf(l->why, sizeof(l->why), "one rank: no data crosses a link");
		return;
	}
	if (R->hosts > 1) {
		nic_link(m, R);
		return;
	}
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_an_device *d;
		double gb, bps;
		int links;

		if (!R->rank[i].colls)
			continue;
		d = w->fdev[i] == UINT32_MAX ? NULL : apx_model_device_es(m, w->fdev[i]);
		links = w->fdev[i] == UINT32_MAX ? -1 : apx_device_nvlinks(m, w->fdev[i]);
		if (!d || links < 0) {
			snprintf(l->why, sizeof(l->why), "the trace does not say how the GPUs are "
				 "linked (no NVLink count from the device record or NVML)");
			return;
		}
		if (!links) {	/* no NVLink: PCIe */
			gb = apx_pcie_lane_gbps(d->pcie_gen) * d->pcie_width;
			if (!gb) {
				snprintf(l->why, sizeof(l->why), "no NVLink, and no PCIe link "
					 "recorded for device %u", d->id);
				return;
			}
			bps = gb * 1e9;
			if (!peak || bps < peak) {
				peak = bps;
				kind = "PCIe";
				snprintf(l->why, sizeof(l->why), "PCIe gen %u x%u: %.1f GB/s a "
					 "direction (no NVLink)", d->pcie_gen, d->pcie_width, gb);
			}
			continue;
		}
		gb = apx_nvlink_gbps(d->cc_major, d->cc_minor);
		if (!gb) {
			snprintf(l->why, sizeof(l->why), "no NVLink speed known for sm_%u%u",
				 d->cc_major % 100, d->cc_minor % 100);
			return;
		}
		bps = gb * 1e9 * links;
		if (!peak || bps < peak) {
			peak = bps;
			kind = "NVLink";
			snprintf(l->why, sizeof(l->why), "NVLink: %d links x %.0f GB/s a direction "
				 "(sm_%u%u)", links, gb, d->cc_major % 100, d->cc_minor % 100);
		}
	}
	l->kind = kind;
	l->peak_bps = peak;
}

static void copy_text(char *dst, size_t cap, const char *s)
{
	snprintf(dst, cap, "%s", s ? s : "");
}

/* The files: identity from the model's header fields (rank from the header; the world size and
 * local rank from the reader's header). */
static void files(const struct apx_model *m, struct apx_ranks *R)
{
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct apx_an_file *f = &m->files[i];
		struct apx_ranks_rank *rk = &R->rank[i];
		const struct apx_rec *h = f->reader ? apx_reader_header(f->reader) : NULL;

		copy_text(rk->path, sizeof(rk->path), f->path);
		copy_text(rk->host, sizeof(rk->host), f->host);
		rk->file = (uint16_t)i;
		rk->rank = f->rank >= 0 && f->rank <= INT32_MAX ? (int)f->rank : -1;
		rk->world = h ? (int)(h->v[APX_HEADER_WORLD_SIZE] > 1u << 20 ? 1u << 20
				      : h->v[APX_HEADER_WORLD_SIZE]) : 0;
		rk->local_rank = h && rk->world > 0 ? (int)apx_rec_i64(h, APX_HEADER_LOCAL_RANK) : -1;
		rk->pid = f->pid;
		rk->start_ns = h ? h->v[APX_HEADER_START_NS] : 0;
		rk->realtime_offset_ns = f->realtime_offset_ns;
		rk->device = -1;
		if (rk->world > R->world)
			R->world = rk->world;
	}
	R->nranks = m->nfiles;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Per file: busy, communication, exposed, steps; the devices of the files. */
static int per_file(const struct apx_model *m, struct apx_ranks *R, struct work *w)
{
	const struct apx_store *st = m->store;

	for (size_t i = 0; i < w->nf; i++) {
		struct apx_ranks_rank *rk = &R->rank[i];
		uint32_t d = w->fdev[i];
		uint64_t *dur;

		rk->gpu_busy_ns = iv_union(&w->busy[i]);
		if (w->busy[i].n) {
			rk->first_ns = w->busy[i].v[0].s;
			rk->end_ns = w->busy[i].v[w->busy[i].n - 1].e;
			if (rk->end_ns > rk->first_ns)
				rk->busy_pct = 100.0 * (double)rk->gpu_busy_ns /
					       (double)(rk->end_ns - rk->first_ns);
		}
		rk->comm_ns = iv_union(&w->comm[i]);
		rk->compute_ns = iv_union(&w->compute[i]);
		rk->exposed_ns = rk->comm_ns - iv_overlap(&w->comm[i], &w->compute[i]);
		if (w->steps[i].n) {	/* sorted, and made disjoint (nested ranges cut) */
			struct ivs *s = &w->steps[i];

			qsort(s->v, s->n, sizeof(*s->v), iv_cmp);
			for (size_t k = 1; k < s->n; k++)
				if (s->v[k].s < s->v[k - 1].e)
					s->v[k].s = s->v[k - 1].e;
			dur = reallocarray(NULL, s->n, sizeof(*dur));
			if (!dur)
				return -ENOMEM;
			for (size_t k = 0; k < s->n; k++)
				dur[k] = s->v[k].e > s->v[k].s ? s->v[k].e - s->v[k].s : 0;
			qsort(dur, s->n, sizeof(*dur), u64_cmp);
			rk->steps = s->n;
			rk->step_ns = dur[s->n / 2];
			free(dur);
		}
		if (d == UINT32_MAX || d >= st->ndevices)
			continue;
		if (!w->dmap[d]) {	/* the device (host, UUID), first seen */
			struct apx_ranks_device *dv = &R->dev[R->ndevs];
			const struct apx_es_device *ed = &st->devices[d];
			struct apx_es_text hn = ed->host < st->nhosts ? st->hosts[ed->host].name
					: (struct apx_es_text){ "", 0 };

			snprintf(dv->host, sizeof(dv->host), "%.*s", (int)(hn.len < 63 ? hn.len : 63),
				 hn.p);
			memcpy(dv->uuid, ed->uuid, 16);
			dv->has_uuid = ed->has_uuid;
			dv->busy_ns = iv_union(&w->devbusy[d]);
			if (w->devbusy[d].n)
				dv->span_ns = w->devbusy[d].v[w->devbusy[d].n - 1].e - w->devbusy[d].v[0].s;
			dv->busy_pct = dv->span_ns ? 100.0 * (double)dv->busy_ns / (double)dv->span_ns
						   : 0;
			w->dmap[d] = (uint32_t)++R->ndevs;
		}
		rk->device = (int)w->dmap[d] - 1;
		R->dev[rk->device].nfiles++;
	}
	return 0;
}

/* Each file's device-memory peak: its allocations less its frees, in time order (finish.c's
 * memory() sorted them), and the size of its device. */
static int mem_peaks(const struct apx_model *m, struct apx_ranks *R, const struct work *w)
{
	int64_t *now = calloc(w->nf ? w->nf : 1, sizeof(*now));

	if (!now)
		return -ENOMEM;
	for (size_t i = 0; i < m->mem_events.n; i++) {
		const struct apx_an_mem_event *e = APX_VEC_AT(&m->mem_events,
							      struct apx_an_mem_event, i);
		int64_t *v = e->file < w->nf ? &now[e->file] : NULL;

		if (!v || e->kind != APX_MEM_DEVICE ||
		    (e->op != APX_MEMOP_ALLOC && e->op != APX_MEMOP_FREE))
			continue;
		*v += e->op == APX_MEMOP_FREE ? -(int64_t)e->bytes : (int64_t)e->bytes;
		*v = *v < 0 ? 0 : *v;
		if ((uint64_t)*v > R->rank[e->file].mem_peak_bytes)
			R->rank[e->file].mem_peak_bytes = (uint64_t)*v;
	}
	for (size_t i = 0; i < w->nf; i++) {
		const struct apx_an_device *d = w->fdev[i] == UINT32_MAX ? NULL
						: apx_model_device_es(m, w->fdev[i]);

		R->rank[i].mem_total_bytes = d ? d->mem_bytes : 0;
	}
	free(now);
	return 0;
}

static int64_t rank_key(const struct apx_ranks_rank *rk)
{
	return rk->rank < 0 ? INT64_MAX : rk->rank;
}

/* The devices in the order of their first rank (files without a rank after, in file order):
 * the report lists them so. */
static int order_devices(struct apx_ranks *R)
{
	struct apx_ranks_device *nd = calloc(R->ndevs ? R->ndevs : 1, sizeof(*nd));
	int *to = malloc((R->ndevs ? R->ndevs : 1) * sizeof(*to));
	size_t k = 0;

	if (!nd || !to) {
		free(nd);
		free(to);
		return -ENOMEM;
	}
	for (size_t d = 0; d < R->ndevs; d++)
		to[d] = -1;
	while (k < R->ndevs) {	/* the unplaced device of the lowest rank; devices are few */
		size_t best = R->nranks;

		for (size_t i = 0; i < R->nranks; i++)
			if (R->rank[i].device >= 0 && to[R->rank[i].device] < 0 &&
			    (best == R->nranks || rank_key(&R->rank[i]) < rank_key(&R->rank[best])))
				best = i;
		if (best == R->nranks)
			break;
		to[R->rank[best].device] = (int)k;
		nd[k++] = R->dev[R->rank[best].device];
	}
	for (size_t i = 0; i < R->nranks; i++)
		if (R->rank[i].device >= 0)
			R->rank[i].device = to[R->rank[i].device];
	free(R->dev);
	R->dev = nd;
	free(to);
	return 0;
}

static int alloc_work(struct work *w, size_t nf, size_t ndev, size_t ncolls)
{
	size_t n = nf ? nf : 1;

	w->nf = nf;
	w->ndev = ndev;
	w->busy = calloc(n, sizeof(*w->busy));
	w->comm = calloc(n, sizeof(*w->comm));
	w->compute = calloc(n, sizeof(*w->compute));
	w->steps = calloc(n, sizeof(*w->steps));
	w->fdev = malloc(n * sizeof(*w->fdev));
	w->from_coll = calloc(n, sizeof(*w->from_coll));
	w->ofirst = calloc(n + 1, sizeof(*w->ofirst));
	w->order = reallocarray(NULL, ncolls ? ncolls : 1, sizeof(*w->order));
	w->devbusy = calloc(ndev ? ndev : 1, sizeof(*w->devbusy));
	w->dmap = calloc(ndev ? ndev : 1, sizeof(*w->dmap));
	if (!w->busy || !w->comm || !w->compute || !w->steps || !w->fdev || !w->from_coll ||
	    !w->ofirst || !w->order || !w->devbusy || !w->dmap)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		w->fdev[i] = UINT32_MAX;
	return 0;
}

/* The model's collectives by (file, time), and where each file's start. */
static void order_colls(const struct apx_model *m, struct work *w)
{
	struct order_ctx ctx = { m };
	size_t k = 0;

	for (size_t i = 0; i < m->colls.n; i++)
		if (coll_at(m, i)->file < w->nf)
			w->order[k++] = (uint32_t)i;
	qsort_r(w->order, k, sizeof(*w->order), order_cmp, &ctx);
	for (size_t i = 0, f = 0; f <= w->nf; f++) {
		while (i < k && coll_at(m, w->order[i])->file < f)
			i++;
		w->ofirst[f] = i;
	}
}

/* The files with collectives and their hosts; each function's bandwidths. */
static void counts(struct apx_ranks *R, struct work *w)
{
	for (size_t i = 0; i < R->nranks; i++) {
		int seen = 0;

		if (!R->rank[i].colls)
			continue;
		R->participants++;
		for (size_t k = 0; k < i && !seen; k++)
			seen = R->rank[k].colls && !strcmp(R->rank[k].host, R->rank[i].host);
		R->hosts += !seen;
	}
	for (unsigned f = 0; f < APX_COLL__COUNT; f++) {
		struct apx_ranks_coll *c = &R->coll[f];

		if (!c->inst_ns)
			continue;
		c->algbw_bps = w->alg[f] / ((double)c->inst_ns / 1e9);
		c->busbw_bps = w->bus[f] / ((double)c->inst_ns / 1e9);
		for (unsigned b = 0; b < APX_RANKS_SIZE_BUCKETS; b++)
			if (w->bns[f][b])
				c->bucket_busbw_bps[b] = w->bbus[f][b] / ((double)w->bns[f][b] / 1e9);
		if (c->net_inst_ns)
			c->net_busbw_bps = w->nbus[f] / ((double)c->net_inst_ns / 1e9);
	}
}

int apx_ranks_build(const struct apx_model *m, struct apx_ranks **ret)
{
	struct apx_ranks *R = calloc(1, sizeof(*R));
	struct work w = { 0 };
	uint64_t nofit = 0;
	size_t ndev = m->store ? m->store->ndevices : 0;
	int k;

	if (!R)
		return -ENOMEM;
	R->rank = calloc(m->nfiles ? m->nfiles : 1, sizeof(*R->rank));
	R->dev = calloc(ndev ? ndev : 1, sizeof(*R->dev));
	k = !R->rank || !R->dev ? -ENOMEM : alloc_work(&w, m->nfiles, ndev, m->colls.n);
	if (k < 0 || !m->store)
		goto out;
	files(m, R);
	file_devices(m, &w);
	if ((k = gather_store(m, R, &w)) < 0 || (k = gather_colls(m, R, &w)) < 0 ||
	    (k = per_file(m, R, &w)) < 0 || (k = mem_peaks(m, R, &w)) < 0 ||
	    (k = match_calls(R, &w)) < 0 ||
	    (k = fit_sizes(R, &w)) < 0)
		goto out;
	order_colls(m, &w);
	for (size_t i = 0; i < w.nf && k >= 0; i++)
		if (R->rank[i].colls) {
			exposure(m, R, &w, i);
			small_groups(m, R, &w, i, &nofit);
			if (w.nnetcomm)
				k = network(m, R, &w, i);
		}
	if (k < 0)
		goto out;
	R->small_nofit = nofit;
	if ((k = order_devices(R)) < 0)
		goto out;
	counts(R, &w);
	find_straggler(R);
	find_link(m, R, &w);
out:
	for (size_t d = 0; w.devbusy && d < ndev; d++)
		free(w.devbusy[d].v);
	free(w.devbusy);
	free(w.dmap);
	work_free(&w);
	if (k < 0) {
		apx_ranks_free(R);
		return k;
	}
	*ret = R;
	return 0;
}

/* ---- from files ------------------------------------------------------------------------------ */

/* The same process read twice (a name given twice, or two names of one file). */
static int seen_before(const struct apx_rec *const *h, size_t n, const struct apx_rec *x)
{
	for (size_t i = 0; i < n; i++)
		if (h[i]->v[APX_HEADER_PID] == x->v[APX_HEADER_PID] &&
		    h[i]->v[APX_HEADER_START_NS] == x->v[APX_HEADER_START_NS] &&
		    apx_rec_i64(h[i], APX_HEADER_RANK) == apx_rec_i64(x, APX_HEADER_RANK) &&
		    h[i]->v[APX_HEADER_HOSTNAME] == x->v[APX_HEADER_HOSTNAME] &&
		    (!x->v[APX_HEADER_HOSTNAME] ||
		     !memcmp(h[i]->bytes[APX_HEADER_HOSTNAME], x->bytes[APX_HEADER_HOSTNAME],
			     x->v[APX_HEADER_HOSTNAME])))
			return 1;
	return 0;
}

int apx_ranks_load(const char *const *paths, size_t n, struct apx_ranks **ret,
		   struct apx_diag *diag)
{
	struct apx_model *m = apx_model_new();
	const struct apx_rec **hdr = calloc(n ? n : 1, sizeof(*hdr));
	uint64_t dup = 0;
	int k = 0;

	if (!m || !hdr) {
		free(hdr);
		if (m)
			apx_model_free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && k >= 0; i++) {
		struct apx_reader *rd;

		k = apx_reader_open(paths[i], &rd, diag);
		if (k < 0)
			break;
		if (seen_before(hdr, m->nfiles, apx_reader_header(rd))) {
			dup++;
			apx_reader_close(rd);
			continue;
		}
		hdr[m->nfiles] = apx_reader_header(rd);	/* the model keeps the reader open */
		k = apx_model_add_reader(m, paths[i], rd, diag);
	}
	if (k >= 0)
		k = apx_model_finish(m);
	if (k >= 0 && !m->ranks)
		k = apx_ranks_build(m, &m->ranks);
	if (k >= 0) {
		*ret = m->ranks;
		m->ranks = NULL;
		(*ret)->duplicates = dup;
	}
	free(hdr);
	apx_model_free(m);
	return k < 0 ? k : 0;
}

void apx_ranks_free(struct apx_ranks *r)
{
	if (!r)
		return;
	free(r->rank);
	free(r->dev);
	free(r);
}

double *apx_ranks_evidence_row(struct apx_finding *f, const struct apx_ranks_rank *rk)
{
	char label[32];

	if (!rk->colls)
		return NULL;
	snprintf(label, sizeof(label), "rank %d", rk->rank);
	return apx_evidence_row(f, label, strlen(label));
}
