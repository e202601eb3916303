/*
 * ranks.c - several ranks of one run (ranks.h): reads each trace once, keys devices by
 * (host, UUID), and computes per-rank GPU busy, step time, communication and its exposed part,
 * the collectives table with nccl-tests' algbw/busbw (../shared/NCCL.md §4), and stragglers:
 * for every collective found on all ranks of its communicator (same comm id and sequence
 * number), each rank's arrival (host enqueue time on the wall clock, through the header's
 * realtime offset, so hosts' clocks compare) against the median rank's. Called by apx report's
 * rank sections and tests/unit/test-ranks.c; single-threaded, logs nothing.
 */
#include "analysis/ranks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

struct iv {
	uint64_t s, e;
};

struct ivs {
	struct iv *v;
	size_t n, cap;
};

static int iv_add(struct ivs *a, uint64_t s, uint64_t e)
{
	if (e <= s)
		return 0;
	if (a->n == a->cap) {
		size_t c = a->cap ? a->cap * 2 : 256;
		struct iv *p = realloc(a->v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->v = p;
		a->cap = c;
	}
	a->v[a->n++] = (struct iv){ s, e };
	return 0;
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

/* ---- loading -------------------------------------------------------------------------------- */

struct call {					/* one COLLECTIVE record, for matching */
	uint64_t comm, seq;
	int64_t arrive;				/* wall ns */
	uint32_t file;
	uint16_t nranks;
	uint8_t func;
};

struct work {
	struct ivs *busy, *comm, *compute;	/* per file */
	uint64_t **steps;			/* per file: ProfilerStep# durations */
	size_t *nsteps;
	struct call *calls;
	size_t ncalls, capcalls;
};

static int add_call(struct work *w, const struct call *c)
{
	if (w->ncalls == w->capcalls) {
		size_t n = w->capcalls ? w->capcalls * 2 : 1024;
		struct call *p = realloc(w->calls, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		w->calls = p;
		w->capcalls = n;
	}
	w->calls[w->ncalls++] = *c;
	return 0;
}

static void copy_str(char *dst, size_t cap, const struct apx_rec *h, unsigned f)
{
	size_t n = h->bytes[f] ? (size_t)h->v[f] : 0;

	if (n >= cap)
		n = cap - 1;
	if (n)
		memcpy(dst, h->bytes[f], n);
	dst[n] = 0;
}

static int size_bucket(uint64_t b)
{
	int k = 0;

	for (uint64_t lim = 4096; k < APX_RANKS_SIZE_BUCKETS - 1 && b >= lim; lim <<= 4)
		k++;
	return k;
}

static int is_nccl_kernel(const char *name, size_t len)
{
	return len >= 4 && !memcmp(name, "nccl", 4);
}

static int step_name(const char *s, size_t len)
{
	return len > 13 && !memcmp(s, "ProfilerStep#", 13);
}

static int read_file(struct apx_ranks *R, struct work *w, size_t fi, struct apx_reader *rd)
{
	struct apx_ranks_rank *rk = &R->rank[fi];
	uint8_t uuid[16] = { 0 };
	int has_uuid = 0, k;

	for (size_t c = 0; c < apx_reader_chunk_count(rd); c++) {
		struct apx_chunk_iter it;
		const struct apx_rec *r = &it.rec;

		if (apx_chunk_iter_init(&it, rd, c, NULL) < 0)
			continue;
		while (apx_chunk_iter_next(&it, NULL) == 1) {
			uint64_t s, e;
			size_t len = 0;
			const char *nm;

			switch (r->type) {
			case APX_REC_DEVICE:
				if (!has_uuid && r->bytes[APX_DEVICE_UUID] &&
				    r->v[APX_DEVICE_UUID] == 16) {
					memcpy(uuid, r->bytes[APX_DEVICE_UUID], 16);
					has_uuid = 1;
				}
				break;
			case APX_REC_KERNEL:
				s = r->v[APX_KERNEL_START_NS];
				e = r->v[APX_KERNEL_END_NS];
				nm = apx_reader_string(rd, r->v[APX_KERNEL_NAME], &len);
				if ((k = iv_add(&w->busy[fi], s, e)) < 0)
					return k;
				if (!nm || !is_nccl_kernel(nm, len))
					k = iv_add(&w->compute[fi], s, e);
				if (k < 0)
					return k;
				break;
			case APX_REC_MEMCPY:
			case APX_REC_MEMSET:
				if ((k = iv_add(&w->busy[fi], r->v[0], r->v[1])) < 0)
					return k;
				break;
			case APX_REC_MARKER:
				nm = apx_reader_string(rd, r->v[APX_MARKER_NAME], &len);
				if (nm && step_name(nm, len) &&
				    r->v[APX_MARKER_END_NS] > r->v[APX_MARKER_START_NS]) {
					uint64_t *p = realloc(w->steps[fi],
							      (w->nsteps[fi] + 1) * sizeof(*p));

					if (!p)
						return -ENOMEM;
					p[w->nsteps[fi]++] = r->v[APX_MARKER_END_NS] -
							     r->v[APX_MARKER_START_NS];
					w->steps[fi] = p;
				}
				break;
			case APX_REC_COLLECTIVE: {
				unsigned f = (unsigned)r->v[APX_COLLECTIVE_FUNC];
				unsigned n = (unsigned)r->v[APX_COLLECTIVE_NRANKS];
				struct apx_ranks_coll *cl = &R->coll[f < APX_COLL__COUNT ? f : 0];
				struct call call = {
					.comm = r->v[APX_COLLECTIVE_COMM],
					.seq = r->v[APX_COLLECTIVE_SEQ],
					.arrive = (int64_t)r->v[APX_COLLECTIVE_ENQUEUE_NS] +
						  rk->realtime_offset_ns,
					.file = (uint32_t)fi,
					.nranks = (uint16_t)(n > 65535 ? 65535 : n),
					.func = (uint8_t)(f < APX_COLL__COUNT ? f : 0),
				};

				s = r->v[APX_COLLECTIVE_START_NS];
				e = r->v[APX_COLLECTIVE_END_NS];
				rk->colls++;
				cl->func = call.func;
				cl->calls++;
				cl->bytes += r->v[APX_COLLECTIVE_BYTES];
				cl->size_hist[size_bucket(r->v[APX_COLLECTIVE_BYTES])]++;
				cl->algo[r->v[APX_COLLECTIVE_ALGO] < APX_ALGO__COUNT ?
						 r->v[APX_COLLECTIVE_ALGO] : 0]++;
				cl->proto[r->v[APX_COLLECTIVE_PROTO] < APX_PROTO__COUNT ?
						  r->v[APX_COLLECTIVE_PROTO] : 0]++;
				if ((int)n > R->world)
					R->world = (int)n;
				if (s && e > s) {
					double t = (double)(e - s) / 1e9;
					double sb = apx_ranks_algbytes(f, r->v[APX_COLLECTIVE_BYTES], n);

					cl->time_ns += e - s;
					cl->timed++;
					/* summed per call here; divided by timed calls below */
					cl->algbw_gbps += sb / t / 1e9;
					cl->busbw_gbps += sb / t / 1e9 * apx_ranks_busbw_factor(f, n);
					if ((k = iv_add(&w->busy[fi], s, e)) < 0 ||
					    (k = iv_add(&w->comm[fi], s, e)) < 0)
						return k;
				}
				if (!(r->v[APX_COLLECTIVE_FLAGS] & APX_COLL_F_P2P) && n > 1 &&
				    (k = add_call(w, &call)) < 0)
					return k;
				break;
			}
			default:
				break;
			}
		}
	}
	/* the device: (host, UUID); without a UUID, one device per file */
	rk->device = -1;
	for (size_t d = 0; has_uuid && d < R->ndevs; d++)
		if (!strcmp(R->dev[d].host, rk->host) && !memcmp(R->dev[d].uuid, uuid, 16))
			rk->device = (int)d;
	if (rk->device < 0) {
		struct apx_ranks_device *dv = &R->dev[R->ndevs];

		memset(dv, 0, sizeof(*dv));
		snprintf(dv->host, sizeof(dv->host), "%s", rk->host);
		memcpy(dv->uuid, uuid, 16);
		rk->device = (int)R->ndevs++;
	}
	R->dev[rk->device].nfiles++;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int call_cmp(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return x->arrive < y->arrive ? -1 : x->arrive > y->arrive;
}

/* Group the calls by (comm, seq, func); groups with every rank of the communicator count. */
static void match_calls(struct apx_ranks *R, struct work *w)
{
	size_t i = 0;

	if (!w->ncalls)
		return;
	qsort(w->calls, w->ncalls, sizeof(*w->calls), call_cmp);
	while (i < w->ncalls) {
		size_t j = i + 1, n;
		int64_t med;

		while (j < w->ncalls && w->calls[j].comm == w->calls[i].comm &&
		       w->calls[j].seq == w->calls[i].seq && w->calls[j].func == w->calls[i].func)
			j++;
		n = j - i;
		R->coll[w->calls[i].func].instances++;
		if (n >= 2 && n == w->calls[i].nranks) {	/* sorted by arrival */
			med = w->calls[i + (n - 1) / 2].arrive;
			for (size_t k = i; k < j; k++) {
				struct apx_ranks_rank *rk = &R->rank[w->calls[k].file];
				int64_t late = w->calls[k].arrive - med;

				rk->matched++;
				if (late > 0) {
					rk->late_sum_ns += (uint64_t)late;
					if ((uint64_t)late > rk->late_max_ns)
						rk->late_max_ns = (uint64_t)late;
				}
			}
			R->rank[w->calls[j - 1].file].last++;
		}
		i = j;
	}
}

/* A straggler: last at more than half of at least 3 matched collectives, and on average more
 * than 50 us after the median rank (below that, launch jitter). */
static void find_straggler(struct apx_ranks *R)
{
	R->straggler.rank = -1;
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];
		uint64_t mean = rk->matched ? rk->late_sum_ns / rk->matched : 0;

		if (rk->matched >= 3 && rk->last * 2 > rk->matched && mean > 50000 &&
		    (R->straggler.rank < 0 || mean > R->straggler.mean_late_ns)) {
			R->straggler.rank = rk->rank;
			R->straggler.last = rk->last;
			R->straggler.matched = rk->matched;
			R->straggler.mean_late_ns = mean;
		}
	}
}

static void finish(struct apx_ranks *R, struct work *w)
{
	for (size_t d = 0; d < R->ndevs; d++) {
		struct ivs all = { 0 };
		uint64_t lo = UINT64_MAX, hi = 0;

		for (size_t i = 0; i < R->nranks; i++) {
			if (R->rank[i].device != (int)d)
				continue;
			for (size_t k = 0; k < w->busy[i].n; k++)
				if (iv_add(&all, w->busy[i].v[k].s, w->busy[i].v[k].e) < 0)
					break;
		}
		R->dev[d].busy_ns = iv_union(&all);
		if (all.n) {
			lo = all.v[0].s;
			hi = all.v[all.n - 1].e;
		}
		R->dev[d].span_ns = hi > lo ? hi - lo : 0;
		R->dev[d].busy_pct = R->dev[d].span_ns ?
			100.0 * (double)R->dev[d].busy_ns / (double)R->dev[d].span_ns : 0;
		free(all.v);
	}
	for (size_t i = 0; i < R->nranks; i++) {
		struct apx_ranks_rank *rk = &R->rank[i];

		rk->gpu_busy_ns = iv_union(&w->busy[i]);
		if (w->busy[i].n)
			rk->end_ns = w->busy[i].v[w->busy[i].n - 1].e;
		rk->comm_ns = iv_union(&w->comm[i]);
		iv_union(&w->compute[i]);
		rk->exposed_ns = rk->comm_ns - iv_overlap(&w->comm[i], &w->compute[i]);
		if (w->nsteps[i]) {
			qsort(w->steps[i], w->nsteps[i], sizeof(uint64_t), u64_cmp);
			rk->step_ns = w->steps[i][w->nsteps[i] / 2];
		}
	}
	for (unsigned f = 0; f < APX_COLL__COUNT; f++)
		if (R->coll[f].timed) {
			R->coll[f].algbw_gbps /= (double)R->coll[f].timed;
			R->coll[f].busbw_gbps /= (double)R->coll[f].timed;
		}
	match_calls(R, w);
	find_straggler(R);
}

/* The same process read twice (a name given twice, or two names of one file). */
static int seen_before(const struct apx_ranks *R, const struct apx_ranks_rank *rk)
{
	for (size_t i = 0; i < R->nranks; i++)
		if (R->rank[i].pid == rk->pid && R->rank[i].start_ns == rk->start_ns &&
		    !strcmp(R->rank[i].host, rk->host) && R->rank[i].rank == rk->rank)
			return 1;
	return 0;
}

int apx_ranks_load(const char *const *paths, size_t n, struct apx_ranks **ret,
		   struct apx_diag *diag)
{
	struct apx_ranks *R;
	struct work w = { 0 };
	int k = 0;

	if (n > APX_RANKS_FILES_MAX)
		return -EINVAL;
	R = calloc(1, sizeof(*R));
	if (!R)
		return -ENOMEM;
	R->rank = calloc(n ? n : 1, sizeof(*R->rank));
	R->dev = calloc(n ? n : 1, sizeof(*R->dev));
	w.busy = calloc(n ? n : 1, sizeof(*w.busy));
	w.comm = calloc(n ? n : 1, sizeof(*w.comm));
	w.compute = calloc(n ? n : 1, sizeof(*w.compute));
	w.steps = calloc(n ? n : 1, sizeof(*w.steps));
	w.nsteps = calloc(n ? n : 1, sizeof(*w.nsteps));
	if (!R->rank || !R->dev || !w.busy || !w.comm || !w.compute || !w.steps || !w.nsteps) {
		k = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct apx_reader *rd;
		const struct apx_rec *h;
		struct apx_ranks_rank *rk = &R->rank[R->nranks];

		k = apx_reader_open(paths[i], &rd, diag);
		if (k < 0)
			goto out;
		h = apx_reader_header(rd);
		memset(rk, 0, sizeof(*rk));
		snprintf(rk->path, sizeof(rk->path), "%s", paths[i]);
		copy_str(rk->host, sizeof(rk->host), h, APX_HEADER_HOSTNAME);
		rk->rank = (int)apx_rec_i64(h, APX_HEADER_RANK);
		rk->world = (int)h->v[APX_HEADER_WORLD_SIZE];
		rk->local_rank = rk->world > 0 ? (int)apx_rec_i64(h, APX_HEADER_LOCAL_RANK) : -1;
		rk->pid = h->v[APX_HEADER_PID];
		rk->start_ns = h->v[APX_HEADER_START_NS];
		rk->realtime_offset_ns = apx_rec_i64(h, APX_HEADER_REALTIME_OFFSET_NS);
		if (seen_before(R, rk)) {
			R->duplicates++;
			apx_reader_close(rd);
			continue;
		}
		if (rk->world > R->world)
			R->world = rk->world;
		k = read_file(R, &w, R->nranks, rd);
		apx_reader_close(rd);
		if (k < 0)
			goto out;
		R->nranks++;
	}
	finish(R, &w);
	k = 0;
out:
	for (size_t i = 0; i < n && w.busy; i++) {
		free(w.busy[i].v);
		free(w.comm[i].v);
		free(w.compute[i].v);
		free(w.steps[i]);
	}
	free(w.busy);
	free(w.comm);
	free(w.compute);
	free(w.steps);
	free(w.nsteps);
	free(w.calls);
	if (k < 0) {
		apx_ranks_free(R);
		return k;
	}
	*ret = R;
	return 0;
}

void apx_ranks_free(struct apx_ranks *r)
{
	if (!r)
		return;
	free(r->rank);
	free(r->dev);
	free(r);
}

/* ---- views ------------------------------------------------------------------------------------ */

static const char *const bucket_names[APX_RANKS_SIZE_BUCKETS] = {
	"<4KiB", "4KiB-64KiB", "64KiB-1MiB", "1MiB-16MiB", "16MiB-256MiB", ">=256MiB",
};

static unsigned top_of(const uint64_t *c, unsigned n)
{
	unsigned best = 0;

	for (unsigned i = 1; i < n; i++)
		if (c[i] > c[best])
			best = i;
	return best;
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void text_str(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
}

void apx_ranks_text(const struct apx_ranks *R, FILE *out)
{
	fprintf(out, "Ranks (%zu files, world size %d%s)\n", R->nranks, R->world,
		R->duplicates ? ", duplicates skipped" : "");
	fprintf(out, "  %-5s %-16s %7s %10s %10s %10s %10s %10s\n", "rank", "host", "dev",
		"busy ms", "busy %", "step ms", "comm ms", "exposed");
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];
		const struct apx_ranks_device *d = rk->device >= 0 ? &R->dev[rk->device] : NULL;
		char host[17];
		size_t hl = strnlen(rk->host, 16);

		memcpy(host, rk->host, hl);	/* the first 16 bytes of the host name */
		host[hl] = 0;
		fprintf(out, "  %-5d ", rk->rank);
		text_str(out, host);
		fprintf(out, "%*s %7d %10.3f %10.1f ", (int)(16 - strlen(host)), "", rk->device,
			(double)rk->gpu_busy_ns / 1e6, d ? d->busy_pct : 0.0);
		if (rk->step_ns)
			fprintf(out, "%10.3f", (double)rk->step_ns / 1e6);
		else
			fprintf(out, "%10s", "n/a");
		fprintf(out, " %10.3f %10.3f\n", (double)rk->comm_ns / 1e6,
			(double)rk->exposed_ns / 1e6);
	}
	fprintf(out, "Collectives\n  %-15s %7s %9s %12s %10s %10s %-8s %-7s\n", "func", "calls",
		"instances", "bytes", "algbw GB/s", "busbw GB/s", "algo", "proto");
	for (unsigned f = 0; f < APX_COLL__COUNT; f++) {
		const struct apx_ranks_coll *c = &R->coll[f];

		if (!c->calls)
			continue;
		fprintf(out, "  %-15s %7llu %9llu %12llu ", apx_coll_func_name(f),
			(unsigned long long)c->calls, (unsigned long long)c->instances,
			(unsigned long long)c->bytes);
		if (c->timed)
			fprintf(out, "%10.2f %10.2f", c->algbw_gbps, c->busbw_gbps);
		else
			fprintf(out, "%10s %10s", "n/a", "n/a");
		fprintf(out, " %-8s %-7s\n", apx_nccl_algo_name(top_of(c->algo, APX_ALGO__COUNT)),
			apx_nccl_proto_name(top_of(c->proto, APX_PROTO__COUNT)));
	}
	if (R->straggler.rank >= 0)
		fprintf(out, "Straggler: rank %d arrived last at %llu of %llu collectives, on average "
			"%.3f ms after the median rank\n", R->straggler.rank,
			(unsigned long long)R->straggler.last,
			(unsigned long long)R->straggler.matched,
			(double)R->straggler.mean_late_ns / 1e6);
}

void apx_ranks_json(const struct apx_ranks *R, FILE *out)
{
	fprintf(out, "{\"ranks\":{\"world_size\":%d,\"duplicates\":%llu,\"files\":[", R->world,
		(unsigned long long)R->duplicates);
	for (size_t i = 0; i < R->nranks; i++) {
		const struct apx_ranks_rank *rk = &R->rank[i];

		fprintf(out, "%s{\"rank\":%d,\"local_rank\":%d,\"path\":", i ? "," : "", rk->rank,
			rk->local_rank);
		json_str(out, rk->path);
		fprintf(out, ",\"host\":");
		json_str(out, rk->host);
		fprintf(out, ",\"pid\":%llu,\"device\":%d,\"gpu_busy_ns\":%llu,\"step_ns\":",
			(unsigned long long)rk->pid, rk->device,
			(unsigned long long)rk->gpu_busy_ns);
		if (rk->step_ns)
			fprintf(out, "%llu", (unsigned long long)rk->step_ns);
		else
			fprintf(out, "null");
		fprintf(out, ",\"comm_ns\":%llu,\"exposed_comm_ns\":%llu,\"collectives\":%llu,"
			"\"matched\":%llu,\"arrived_last\":%llu,\"late_mean_ns\":%llu,"
			"\"late_max_ns\":%llu}", (unsigned long long)rk->comm_ns,
			(unsigned long long)rk->exposed_ns, (unsigned long long)rk->colls,
			(unsigned long long)rk->matched, (unsigned long long)rk->last,
			(unsigned long long)(rk->matched ? rk->late_sum_ns / rk->matched : 0),
			(unsigned long long)rk->late_max_ns);
	}
	fprintf(out, "],\"devices\":[");
	for (size_t d = 0; d < R->ndevs; d++) {
		const struct apx_ranks_device *dv = &R->dev[d];

		fprintf(out, "%s{\"host\":", d ? "," : "");
		json_str(out, dv->host);
		fprintf(out, ",\"uuid\":\"");
		for (int b = 0; b < 16; b++)
			fprintf(out, "%02x", dv->uuid[b]);
		fprintf(out, "\",\"files\":%u,\"span_ns\":%llu,\"busy_ns\":%llu,\"busy_pct\":%.3f}",
			dv->nfiles, (unsigned long long)dv->span_ns,
			(unsigned long long)dv->busy_ns, dv->busy_pct);
	}
	fprintf(out, "],\"straggler\":");
	if (R->straggler.rank >= 0)
		fprintf(out, "{\"rank\":%d,\"arrived_last\":%llu,\"matched\":%llu,"
			"\"late_mean_ns\":%llu}", R->straggler.rank,
			(unsigned long long)R->straggler.last,
			(unsigned long long)R->straggler.matched,
			(unsigned long long)R->straggler.mean_late_ns);
	else
		fprintf(out, "null");
	fprintf(out, "},\"collectives\":[");
	for (unsigned f = 0, first = 1; f < APX_COLL__COUNT; f++) {
		const struct apx_ranks_coll *c = &R->coll[f];

		if (!c->calls)
			continue;
		fprintf(out, "%s{\"func\":\"%s\",\"calls\":%llu,\"instances\":%llu,\"bytes\":%llu,"
			"\"time_ns\":%llu,\"timed\":%llu,", first ? "" : ",", apx_coll_func_name(f),
			(unsigned long long)c->calls, (unsigned long long)c->instances,
			(unsigned long long)c->bytes, (unsigned long long)c->time_ns,
			(unsigned long long)c->timed);
		if (c->timed)
			fprintf(out, "\"algbw_gbps\":%.4f,\"busbw_gbps\":%.4f", c->algbw_gbps,
				c->busbw_gbps);
		else
			fprintf(out, "\"algbw_gbps\":null,\"busbw_gbps\":null");
		fprintf(out, ",\"algo\":\"%s\",\"proto\":\"%s\",\"sizes\":{",
			apx_nccl_algo_name(top_of(c->algo, APX_ALGO__COUNT)),
			apx_nccl_proto_name(top_of(c->proto, APX_PROTO__COUNT)));
		for (int b = 0; b < APX_RANKS_SIZE_BUCKETS; b++)
			fprintf(out, "%s\"%s\":%llu", b ? "," : "", bucket_names[b],
				(unsigned long long)c->size_hist[b]);
		fprintf(out, "}}");
		first = 0;
	}
	fprintf(out, "]}\n");
}
