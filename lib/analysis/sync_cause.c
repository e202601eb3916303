/*
 * sync_cause.c - what made the host wait in each synchronization (model.h, enum
 * apx_sync_cause), so that the report names the PyTorch call to change, not only the line.
 * PyTorch reads a value back with at::cuda::memcpy_and_sync(): a cudaMemcpyAsync, then a
 * cudaStreamSynchronize on the same thread, the next API call (its correlation id one more).
 * So a stream sync whose file has a copy call of a correlation id just below its own
 * (APX_SYNC_CORR_NEAR: other threads' calls may come between) that returned just before it
 * (APX_SYNC_COPY_GAP_NS; copies without host times: whose GPU interval meets the sync's)
 * waited for that copy: device->host of <= 8 bytes is .item() (1 byte: bool(t), `if t:`), of
 * more .cpu()/.tolist()/.numpy(), host->device .to('cuda') without non_blocking. A small read
 * back right after a nonzero, select or unique kernel on the copy's stream (one of the last two
 * kernels before it, launched after the file's sync before: cub's reduction over NonZeroOp may
 * end in a second, generic pass) is the count that torch.nonzero, boolean-mask indexing and
 * torch.unique read. Only a stream sync waits for a copy this way (a device or event sync
 * after a copy is the program's own call). Without a copy a sync is its kind:
 * torch.cuda.synchronize(), stream.synchronize(), event.synchronize(); traces whose syncs
 * carry no correlation id (older ones, some imports) get their kind only.
 *
 * Called by apx_model_finish() (finish.c) after the per-event lists (view_events.c); read by
 * the sync-frequency rule (rules/rule_sync_frequency.c) and the report's synchronization
 * section (lib/report/build_view_gpu.c). Single-threaded; allocates scratch per call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model.h"
#include "analysis/store.h"

#include "base/fmt.h"

#include "base/banned.h"

#define APX_SYNC_CORR_NEAR 4			/* copy call to sync call, correlation ids */
#define APX_SYNC_COPY_GAP_NS 1000000ull		/* copy call's return to the sync's start */
#define APX_SYNC_ITEM_MAX_BYTES 8		/* a scalar: .item() of the widest real dtype */

static const struct {
	const char *key, *call;
} causes[APX_SYNC_CAUSE__COUNT] = {
	[APX_SYNC_CAUSE_NONE] = { "none", "cudaStreamWaitEvent (no host wait)" },
	[APX_SYNC_CAUSE_ITEM] = { "item", ".item()" },
	[APX_SYNC_CAUSE_NONZERO] = { "nonzero", "nonzero / x[mask] / unique" },
	[APX_SYNC_CAUSE_READ_BACK] = { "read_back", ".cpu() / .tolist() / .numpy()" },
	[APX_SYNC_CAUSE_UPLOAD] = { "upload", "a blocking .to('cuda')" },
	[APX_SYNC_CAUSE_DEVICE] = { "device", "torch.cuda.synchronize()" },
	[APX_SYNC_CAUSE_STREAM] = { "stream", "stream.synchronize()" },
	[APX_SYNC_CAUSE_EVENT] = { "event", "event.synchronize()" },
	[APX_SYNC_CAUSE_UNKNOWN] = { "unknown", "a synchronization of unknown kind" },
};

const char *apx_sync_cause_key(unsigned cause)
{
	return cause < APX_SYNC_CAUSE__COUNT ? causes[cause].key : "?";
}

const char *apx_sync_cause_call(unsigned cause)
{
	return cause < APX_SYNC_CAUSE__COUNT ? causes[cause].call : "?";
}

/* The copies' size as an object: "a 4-byte read back", "a 33.6 MB read back", "4 B-1.2 MB
 * read backs" (one, many: the object, singular and plural). */
static const char *sized(char *buf, size_t cap, const char *one, const char *many, uint64_t min,
			 uint64_t max)
{
	char a[32], b[32];

	if (min == max && min < 1000)
		snprintf(buf, cap, "a %llu-byte %s", (unsigned long long)min, one);
	else if (min == max)
		snprintf(buf, cap, "a %s %s", apx_fmt_size(a, sizeof(a), (double)min), one);
	else
		snprintf(buf, cap, "%s-%s %s", apx_fmt_size(a, sizeof(a), (double)min),
			 apx_fmt_size(b, sizeof(b), (double)max), many);
	return buf;
}

const char *apx_sync_cause_text(char *buf, size_t cap, unsigned cause, uint64_t min_bytes,
				uint64_t max_bytes)
{
	char s[72];

	switch (cause) {
	case APX_SYNC_CAUSE_ITEM:
		snprintf(buf, cap, "%s (%s)", max_bytes == 1 ? "bool(t) / `if t:` / .item()"
			 : causes[cause].call, sized(s, sizeof(s), "read back", "read backs",
						     min_bytes, max_bytes));
		break;
	case APX_SYNC_CAUSE_NONZERO:
		snprintf(buf, cap, "%s (%s)", causes[cause].call,
			 sized(s, sizeof(s), "count read back", "count read backs", min_bytes,
			       max_bytes));
		break;
	case APX_SYNC_CAUSE_READ_BACK:
		snprintf(buf, cap, "%s (%s)", causes[cause].call,
			 sized(s, sizeof(s), "read back", "read backs", min_bytes, max_bytes));
		break;
	case APX_SYNC_CAUSE_UPLOAD:
		snprintf(buf, cap, "%s (%s)", causes[cause].call,
			 sized(s, sizeof(s), "copy", "copies", min_bytes, max_bytes));
		break;
	case APX_SYNC_CAUSE_DEVICE:
	case APX_SYNC_CAUSE_STREAM:
		snprintf(buf, cap, "%s (no copy)", causes[cause].call);
		break;
	default:
		snprintf(buf, cap, "%s", apx_sync_cause_call(cause));
		break;
	}
	return buf;
}

enum apx_sync_cause apx_sync_cause_of(unsigned kind, unsigned copy_kind, uint64_t bytes,
				      int after_select)
{
	switch (copy_kind) {
	case APX_COPY_D2H:
		if (bytes <= APX_SYNC_ITEM_MAX_BYTES)
			return after_select ? APX_SYNC_CAUSE_NONZERO : APX_SYNC_CAUSE_ITEM;
		return APX_SYNC_CAUSE_READ_BACK;
	case APX_COPY_H2D:
		return APX_SYNC_CAUSE_UPLOAD;
	default:
		break;	/* no copy, or one between devices: the sync's kind says */
	}
	switch (kind) {
	case APX_SYNC_KIND_STREAM_WAIT_EVENT: return APX_SYNC_CAUSE_NONE;
	case APX_SYNC_KIND_DEVICE: return APX_SYNC_CAUSE_DEVICE;
	case APX_SYNC_KIND_STREAM: return APX_SYNC_CAUSE_STREAM;
	case APX_SYNC_KIND_EVENT: return APX_SYNC_CAUSE_EVENT;
	default: return APX_SYNC_CAUSE_UNKNOWN;
	}
}

int apx_sync_kernel_selects(const char *name, size_t len)
{
	static const char *const pats[] = {
		"NonZero",		/* cub::DeviceReduce over at::native NonZeroOp (nonzero) */
		"nonzero",		/* at::native nonzero kernels, nonzero_static's */
		"DeviceSelect",		/* cub::DeviceSelect sweeps (Flagged, If, Unique) */
		"Unique",		/* cub unique_by_key sweeps */
		"unique",		/* at::native unique kernels (unique_bool_write_output) */
	};

	for (size_t i = 0; name && i < sizeof(pats) / sizeof(pats[0]); i++)
		if (memmem(name, len, pats[i], strlen(pats[i])))
			return 1;
	return 0;
}

static uint16_t copy_file(const struct apx_store *st, size_t c)
{
	return st->streams[st->c.stream[c]].file;
}

/* Copies by (file, correlation id); ctx: the store. */
static int cmp_copy(const void *a, const void *b, void *ctx)
{
	const struct apx_store *st = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint16_t fx = copy_file(st, x), fy = copy_file(st, y);

	if (fx != fy)
		return fx < fy ? -1 : 1;
	return st->c.corr[x] < st->c.corr[y] ? -1 : st->c.corr[x] > st->c.corr[y];
}

/* The copies that have a correlation id, by (file, correlation id); their count in *ret_n. */
static uint32_t *copies_by_corr(struct apx_store *st, size_t *ret_n)
{
	uint32_t *v = malloc((st->c.n ? st->c.n : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < st->c.n; i++)
		if (st->c.corr[i])
			v[n++] = (uint32_t)i;
	qsort_r(v, n, sizeof(*v), cmp_copy, st);
	*ret_n = n;
	return v;
}

/* The copy sync i waited for (store copy index), UINT32_MAX none: a stream sync's call came
 * right after a copy call of its file (module comment). */
static uint32_t copy_of(const struct apx_store *st, const uint32_t *v, size_t n, size_t i)
{
	const struct apx_es_syncs *y = &st->y;
	uint16_t file = st->threads[y->thread[i]].file;
	uint32_t corr = y->corr[i];
	size_t lo = 0, hi = n;
	uint32_t c;

	if (y->kind[i] != APX_SYNC_KIND_STREAM || !corr)
		return UINT32_MAX;	/* PyTorch's reads back end in a stream sync */
	while (lo < hi) {	/* the first copy at or past (file, corr) */
		size_t mid = lo + (hi - lo) / 2;
		uint16_t f = copy_file(st, v[mid]);

		if (f < file || (f == file && st->c.corr[v[mid]] < corr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return UINT32_MAX;
	c = v[lo - 1];
	if (copy_file(st, c) != file || corr - st->c.corr[c] > APX_SYNC_CORR_NEAR)
		return UINT32_MAX;
	if (st->c.api_exit[c]) {	/* the copy call returned just before the sync began */
		if (st->c.api_enter[c] > y->start[i] ||
		    y->start[i] > st->c.api_exit[c] + APX_SYNC_COPY_GAP_NS)
			return UINT32_MAX;
	} else if (st->c.start[c] > y->end[i] ||
		   st->c.end[c] + APX_SYNC_COPY_GAP_NS < y->start[i]) {
		return UINT32_MAX;	/* no host times: the copy ran before or inside the sync */
	}
	return c;
}

/* For each copy of want (1: a small read back a sync waited for), whether one of the last two
 * kernels on its stream before it is a nonzero, select or unique kernel launched after floor[c]
 * (the correlation id of its file's sync before: a count read back follows its own kernels),
 * then 2: one sweep over kernels and copies by start time. */
static int after_select(const struct apx_store *st, uint8_t *want, const uint32_t *floor)
{
	uint32_t (*last)[2] = calloc(st->nstreams ? st->nstreams : 1, sizeof(*last));
	int8_t *sel = malloc(st->nstrings ? st->nstrings : 1);	/* per name: -1 not looked at */
	size_t k = 0;

	if (!last || !sel) {
		free(last);
		free(sel);
		return -ENOMEM;
	}
	memset(sel, -1, st->nstrings ? st->nstrings : 1);
	for (size_t c = 0; c < st->c.n; c++) {
		uint32_t s = st->c.stream[c];
		int hit = 0;

		for (; k < st->k.n && st->k.start[k] <= st->c.start[c]; k++) {
			last[st->k.stream[k]][1] = last[st->k.stream[k]][0];
			last[st->k.stream[k]][0] = (uint32_t)k + 1;
		}
		if (!want[c])
			continue;
		for (unsigned j = 0; j < 2 && !hit; j++) {
			uint32_t kk = last[s][j], nm;

			if (!kk || st->k.corr[kk - 1] <= floor[c])
				break;	/* none, or launched before the sync before */
			nm = st->k.name[kk - 1];
			if (nm >= st->nstrings)
				continue;
			if (sel[nm] < 0) {
				struct apx_es_text t = apx_store_string(st, nm);

				sel[nm] = (int8_t)apx_sync_kernel_selects(t.p, t.len);
			}
			hit = sel[nm];
		}
		want[c] = (uint8_t)(hit ? 2 : 1);
	}
	free(last);
	free(sel);
	return 0;
}

int apx_sync_causes_build(struct apx_model *m)
{
	struct apx_store *st = m->store;
	uint32_t *v = NULL, *floor = NULL, *prev = NULL;
	uint8_t *want = NULL;
	size_t n = 0;
	int r = -ENOMEM;

	memset(m->sync_cause, 0, sizeof(m->sync_cause));
	if (!st || !st->y.n || m->syncs.n != st->y.n)
		return 0;
	if (!(v = copies_by_corr(st, &n)) || !(want = calloc(st->c.n ? st->c.n : 1, 1)) ||
	    !(floor = calloc(st->c.n ? st->c.n : 1, sizeof(*floor))) ||
	    !(prev = calloc(st->nfiles ? st->nfiles : 1, sizeof(*prev))))
		goto out;
	for (size_t i = 0; i < st->y.n; i++) {	/* by start time */
		struct apx_an_sync *s = APX_VEC_AT(&m->syncs, struct apx_an_sync, i);
		uint16_t file = st->threads[st->y.thread[i]].file;

		s->copy = copy_of(st, v, n, i);
		if (s->copy != UINT32_MAX && st->c.kind[s->copy] == APX_COPY_D2H &&
		    st->c.bytes[s->copy] <= APX_SYNC_ITEM_MAX_BYTES) {
			want[s->copy] = 1;	/* a small read back: a count after a select? */
			floor[s->copy] = file < st->nfiles ? prev[file] : 0;
		}
		if (file < st->nfiles && st->y.corr[i] &&
		    st->y.kind[i] != APX_SYNC_KIND_STREAM_WAIT_EVENT)
			prev[file] = st->y.corr[i];
	}
	if ((r = after_select(st, want, floor)) < 0)
		goto out;
	for (size_t i = 0; i < st->y.n; i++) {
		struct apx_an_sync *s = APX_VEC_AT(&m->syncs, struct apx_an_sync, i);
		uint32_t c = s->copy;
		uint64_t bytes = c != UINT32_MAX ? st->c.bytes[c] : 0;
		struct apx_an_sync_cause *a;

		s->cause = (uint8_t)apx_sync_cause_of(s->kind, c != UINT32_MAX ? st->c.kind[c]
						      : APX_COPY__COUNT, bytes,
						      c != UINT32_MAX && want[c] == 2);
		a = &m->sync_cause[s->cause];
		if (c != UINT32_MAX) {	/* the copy causes: every sync of them has one */
			if (!a->count || bytes < a->min_bytes)
				a->min_bytes = bytes;
			if (bytes > a->max_bytes)
				a->max_bytes = bytes;
			a->bytes += bytes;
		}
		a->count++;
		a->ns += s->end > s->start ? s->end - s->start : 0;
	}
	r = 0;
out:
	free(v);
	free(want);
	free(floor);
	free(prev);
	return r;
}

unsigned apx_sync_causes_ranked(const struct apx_model *m, unsigned ret[APX_SYNC_CAUSE__COUNT])
{
	unsigned n = 0;

	for (unsigned c = 0; c < APX_SYNC_CAUSE__COUNT; c++) {
		const struct apx_an_sync_cause *a = &m->sync_cause[c];
		unsigned i;

		if (c == APX_SYNC_CAUSE_NONE || !a->count)
			continue;
		for (i = n++; i > 0; i--) {	/* insertion: most host time first, then syncs */
			const struct apx_an_sync_cause *b = &m->sync_cause[ret[i - 1]];

			if (b->ns > a->ns || (b->ns == a->ns && b->count >= a->count))
				break;
			ret[i] = ret[i - 1];
		}
		ret[i] = c;
	}
	return n;
}
