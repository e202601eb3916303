/*
 * nccl.c - what the exporters share about distributed runs (export.h): the rank, local rank and
 * world size of an export, the NCCL collectives (the store's COLLECTIVE column) matched to the
 * NCCL kernels CUPTI recorded, and the names PyTorch's Kineto traces give collectives and
 * dtypes. Called by chrome.c (distributedInfo, collective args) and sqlite_nccl.c
 * (NCCL_COLLECTIVES, META); single-threaded, logs nothing.
 */
#include "export/export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

#define SLACK_NS 10000		/* GPU timer -> trace clock conversion error allowed */
#define SCAN_BACK 256		/* NCCL kernels looked at before a collective's end */

void apx_export_dist_info(const struct apx_store *st, struct apx_export_dist *ret)
{
	const struct apx_es_collectives *c = &st->coll;
	struct apx_export_dist d = { .rank = -1, .local_rank = -1 };
	uint64_t *seen = NULL, best = 0;
	size_t nseen = 0, ranks = 0, j;
	int64_t first = -1;

	for (size_t i = 0; i < st->nfiles; i++) {
		const struct apx_es_file *f = &st->files[i];

		if (f->world > d.world)
			d.world = f->world;
		if (f->rank < 0)
			continue;
		if (first >= 0 && f->rank != first)
			d.several = 1;
		if (first < 0 || f->rank < first) {
			first = f->rank;
			d.local_rank = f->local_rank;
		}
		for (j = 0; j < i && st->files[j].rank != f->rank; j++)
			;
		if (j == i)	/* a rank not seen before */
			ranks++;
	}
	d.rank = first;
	/* the communicators: their count, and the largest one's rank when the header had none */
	if (c->n)
		seen = malloc(c->n * sizeof(*seen));
	for (size_t i = 0; i < c->n; i++) {
		if (c->nranks[i] > best) {
			best = c->nranks[i];
			if (first < 0 && c->rank[i] >= 0)
				d.rank = c->rank[i];
		}
		if (!seen)
			continue;
		for (j = 0; j < nseen && seen[j] != c->comm[i]; j++)
			;
		if (j == nseen && nseen < 4096)	/* a handful in practice: a linear look is enough */
			seen[nseen++] = c->comm[i];
	}
	free(seen);
	d.ncomms = nseen;
	if (!d.world)
		d.world = best ? best : ranks;
	*ret = d;
}

/* ---- matching collectives to NCCL kernels ---------------------------------------------------- */

struct nk {				/* an NCCL kernel */
	uint64_t start, end;
	uint32_t index, device;
	uint16_t file;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int is_nccl(struct apx_es_text t)
{
	return t.len >= 4 && !memcmp(t.p, "nccl", 4);
}

int apx_export_nccl_match(const struct apx_store *st, struct apx_export_nccl *m)
{
	const struct apx_es_collectives *c = &st->coll;
	const struct apx_es_kernels *k = &st->k;
	uint8_t *nccl_name = NULL;	/* per store string: 1 a name starting "nccl" */
	struct nk *ks = NULL;
	size_t nk = 0;
	int r = -ENOMEM;

	memset(m, 0, sizeof(*m));
	if (!c->n)
		return 0;
	m->kernel_of = malloc(c->n * sizeof(*m->kernel_of));
	m->pairs = malloc(c->n * sizeof(*m->pairs));
	nccl_name = calloc(st->nstrings + 1, 1);
	if (!m->kernel_of || !m->pairs || !nccl_name)
		goto out;
	for (size_t s = 0; s < st->nstrings; s++)
		nccl_name[s] = (uint8_t)is_nccl(st->strings[s]);
	for (size_t i = 0; i < k->n; i++)
		if (k->name[i] < st->nstrings && nccl_name[k->name[i]])
			nk++;
	ks = malloc((nk ? nk : 1) * sizeof(*ks));
	if (!ks)
		goto out;
	nk = 0;
	for (size_t i = 0; i < k->n; i++) {	/* by start: the kernel columns are sorted */
		const struct apx_es_stream *sm = &st->streams[k->stream[i]];

		if (k->name[i] >= st->nstrings || !nccl_name[k->name[i]])
			continue;
		ks[nk++] = (struct nk){ k->start[i], apx_store_end(st, APX_ES_KERNEL, i),
					(uint32_t)i, sm->device, sm->file };
	}
	for (size_t i = 0; i < c->n; i++) {
		uint32_t dev = c->device[i] >= 0 ? apx_store_device_of(st, c->file[i],
								       (uint64_t)c->device[i])
						 : UINT32_MAX;
		uint64_t lo = c->start[i] > SLACK_NS ? c->start[i] - SLACK_NS : 0;
		uint64_t hi = c->end[i] + SLACK_NS, best = 0;
		size_t a = 0, b = nk, scanned = 0;

		m->kernel_of[i] = UINT32_MAX;
		if (!c->start[i])
			continue;
		while (a < b) {		/* the first NCCL kernel starting after hi */
			size_t mid = a + (b - a) / 2;

			if (ks[mid].start <= hi)
				a = mid + 1;
			else
				b = mid;
		}
		while (a-- > 0 && scanned++ < SCAN_BACK) {
			const struct nk *x = &ks[a];
			uint64_t s = x->start > lo ? x->start : lo, e = x->end < hi ? x->end : hi;

			if (x->file != c->file[i] || (dev != UINT32_MAX && x->device != dev))
				continue;
			if (e > s && e - s > best) {
				best = e - s;
				m->kernel_of[i] = x->index;
			}
		}
		if (m->kernel_of[i] != UINT32_MAX)
			m->pairs[m->npairs++] = (uint64_t)m->kernel_of[i] << 32 | (uint64_t)i;
	}
	qsort(m->pairs, m->npairs, sizeof(*m->pairs), cmp_u64);
	r = 0;
out:
	free(ks);
	free(nccl_name);
	if (r < 0)
		apx_export_nccl_release(m);
	return r;
}

void apx_export_nccl_release(struct apx_export_nccl *m)
{
	free(m->kernel_of);
	free(m->pairs);
	memset(m, 0, sizeof(*m));
}

size_t apx_export_nccl_of_kernel(const struct apx_export_nccl *m, size_t k, size_t *ret_first)
{
	size_t a = 0, b = m->npairs, n = 0;

	if (!m->npairs)
		return 0;
	while (a < b) {			/* the first pair of kernel k */
		size_t mid = a + (b - a) / 2;

		if (m->pairs[mid] >> 32 < k)
			a = mid + 1;
		else
			b = mid;
	}
	if (a < m->npairs && m->pairs[a] >> 32 == k)
		*ret_first = (size_t)(m->pairs[a] & 0xffffffffu);
	while (a + n < m->npairs && m->pairs[a + n] >> 32 == k)
		n++;
	return n;
}

/* ---- names -------------------------------------------------------------------------------------- */

#define NAME_OF(table, i) ((i) < sizeof(table) / sizeof(table[0]) && table[i] ? table[i] : "")

/* ProcessGroup's method names, as c10d's record_param_comms calls them */
const char *apx_export_nccl_c10d_name(unsigned func)
{
	static const char *const names[] = {
		[APX_COLL_ALL_REDUCE] = "allreduce", [APX_COLL_ALL_GATHER] = "allgather",
		[APX_COLL_REDUCE_SCATTER] = "reduce_scatter", [APX_COLL_BROADCAST] = "broadcast",
		[APX_COLL_REDUCE] = "reduce", [APX_COLL_ALL_TO_ALL] = "alltoall",
		[APX_COLL_SEND] = "send", [APX_COLL_RECV] = "recv", [APX_COLL_GATHER] = "gather",
		[APX_COLL_SCATTER] = "scatter",
	};
	const char *n = NAME_OF(names, func);

	return *n ? n : "unknown";
}

const char *apx_export_nccl_api_name(unsigned func)
{
	static const char *const names[] = {
		[APX_COLL_ALL_REDUCE] = "ncclAllReduce", [APX_COLL_ALL_GATHER] = "ncclAllGather",
		[APX_COLL_REDUCE_SCATTER] = "ncclReduceScatter", [APX_COLL_BROADCAST] = "ncclBroadcast",
		[APX_COLL_REDUCE] = "ncclReduce", [APX_COLL_ALL_TO_ALL] = "ncclAlltoAll",
		[APX_COLL_SEND] = "ncclSend", [APX_COLL_RECV] = "ncclRecv",
		[APX_COLL_GATHER] = "ncclGather", [APX_COLL_SCATTER] = "ncclScatter",
	};
	const char *n = NAME_OF(names, func);

	return *n ? n : "ncclUnknown";
}

/* c10::ScalarType names, as Kineto's "dtype" argument spells them */
const char *apx_export_nccl_torch_dtype(unsigned dtype)
{
	static const char *const names[APX_DT__COUNT] = {
		[APX_DT_INT8] = "Char", [APX_DT_UINT8] = "Byte", [APX_DT_INT32] = "Int",
		[APX_DT_UINT32] = "UInt32", [APX_DT_INT64] = "Long", [APX_DT_UINT64] = "UInt64",
		[APX_DT_FLOAT16] = "Half", [APX_DT_FLOAT32] = "Float", [APX_DT_FLOAT64] = "Double",
		[APX_DT_BFLOAT16] = "BFloat16", [APX_DT_FP8_E4M3] = "Float8_e4m3fn",
		[APX_DT_FP8_E5M2] = "Float8_e5m2",
	};

	return NAME_OF(names, dtype);
}

void apx_export_nccl_nelems(unsigned func, uint64_t count, uint32_t nranks, uint64_t *ret_in,
			    uint64_t *ret_out)
{
	uint64_t all = nranks && count <= UINT64_MAX / nranks ? count * nranks : count;

	*ret_in = *ret_out = count;
	switch (func) {
	case APX_COLL_ALL_GATHER:
	case APX_COLL_GATHER:
		*ret_out = all;
		break;
	case APX_COLL_REDUCE_SCATTER:
	case APX_COLL_SCATTER:
		*ret_in = all;
		break;
	case APX_COLL_SEND:
		*ret_out = 0;
		break;
	case APX_COLL_RECV:
		*ret_in = 0;
		break;
	default:
		break;
	}
}
