/*
 * build_pymem.c - the memory section's view of the samples apx analyze's Python hooks took
 * (--memory-sampling; lib/collector/py/apx_site.py): PyTorch's caching allocator per device
 * (torch.allocated_bytes, torch.reserved_bytes, torch.peak_allocated_bytes) and the process's
 * pinned host bytes, RSS and RSS peak (torch.pinned_host_bytes, process.rss_bytes,
 * process.rss_peak_bytes), from the event store's METRIC series. For each series: samples,
 * min, max, last and when the max was first reached; the text lines, the JSON member
 * memory.over_time, and for the HTML one plot per device of allocated vs reserved vs peak
 * and one of the process's. The CUDA allocations (MEMORY records) stay the section's own
 * (build_gpu.c, build_view_gpu.c). Called by those two and by build_series.c; single-threaded.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/store.h"
#include "base/fmt.h"
#include "report/build.h"

#include "base/banned.h"

#define PYMEM_MAX 64		/* series shown */
#define PLOT_POINTS 2000	/* rows of a plot's table */

/* The known series, in the order shown; host: not of a device. */
static const struct {
	const char *name, *title;
	int host;
} known[] = {
	{ "torch.allocated_bytes", "allocated", 0 },
	{ "torch.reserved_bytes", "reserved", 0 },
	{ "torch.peak_allocated_bytes", "peak allocated", 0 },
	{ "torch.pinned_host_bytes", "pinned host (torch)", 1 },
	{ "process.rss_bytes", "process RSS", 1 },
	{ "process.rss_peak_bytes", "process RSS peak", 1 },
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

struct pymem {
	uint32_t series;		/* store series index */
	unsigned kind;			/* index into known[] */
	uint32_t ordinal;		/* device ordinal, UINT32_MAX for the host's */
	uint64_t n, max_ts, last_ts;
	double min, max, last;
};

static int kind_of(const struct apx_es_text *name)
{
	for (unsigned k = 0; k < NKNOWN; k++)
		if (name->len == strlen(known[k].name) && !memcmp(name->p, known[k].name, name->len))
			return (int)k;
	return -1;
}

int apx_rdoc_pymem_is(const struct apx_es_text *name)
{
	return kind_of(name) >= 0;
}

static int cmp_pymem(const void *a, const void *b)
{
	const struct pymem *x = a, *y = b;

	if (x->ordinal != y->ordinal)
		return x->ordinal < y->ordinal ? -1 : 1;
	return x->kind < y->kind ? -1 : x->kind > y->kind;
}

/* The series of st that the hooks wrote, with their statistics, sorted by device then kind. */
static size_t collect(const struct apx_store *st, struct pymem *out, size_t max)
{
	size_t n = 0;

	for (uint32_t si = 0; si < st->nseries && n < max; si++) {
		const struct apx_es_series *s = &st->series[si];
		int k = s->is_memory ? -1 : kind_of(&s->name);

		if (k < 0)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].series = si;
		out[n].kind = (unsigned)k;
		out[n].ordinal = known[k].host ? UINT32_MAX
				 : s->device < st->ndevices ? st->devices[s->device].ordinal : 0;
		n++;
	}
	for (size_t i = 0; i < st->ct.n; i++) {
		for (size_t j = 0; j < n; j++) {
			struct pymem *p = &out[j];
			double v = st->ct.value[i];

			if (st->ct.series[i] != p->series)
				continue;
			if (!p->n || v < p->min)
				p->min = v;
			if (!p->n || v > p->max) {
				p->max = v;
				p->max_ts = st->ct.ts[i];
			}
			p->last = v;
			p->last_ts = st->ct.ts[i];
			p->n++;
			break;
		}
	}
	qsort(out, n, sizeof(*out), cmp_pymem);
	return n;
}

static uint64_t since_start(const struct apx_store *st, uint64_t ts)
{
	return ts > st->run_start_ns ? ts - st->run_start_ns : 0;
}

static const struct apx_rvcol over_time_cols[] = {
	{ .key = "metric", .title = "metric", .unit = APX_UNIT_TEXT },
	{ .key = "device", .title = "device", .unit = APX_UNIT_ID },
	{ .key = "samples", .title = "samples", .unit = APX_UNIT_COUNT },
	{ .key = "min_bytes", .title = "min", .unit = APX_UNIT_BYTES },
	{ .key = "max_bytes", .title = "max", .unit = APX_UNIT_BYTES },
	{ .key = "last_bytes", .title = "last", .unit = APX_UNIT_BYTES },
	{ .key = "max_at_ns", .title = "max first at (since the run's start)", .unit = APX_UNIT_NS },
};

void apx_rdoc_pymem_json(struct apx_rdoc *d)
{
	const struct apx_store *st = d->m->store;
	struct pymem p[PYMEM_MAX];
	struct apx_rtable *t;
	size_t n;

	if (!st)
		return;
	n = collect(st, p, PYMEM_MAX);
	t = apx_rdoc_view_table(d, APX_SEC_MEMORY, "json:memory_over_time", APX_VIEW_JSON);
	APX_RTABLE_SET_VCOLS(t, over_time_cols);
	for (size_t i = 0; i < n && apx_rtable_row(t) == 0; i++) {
		const char *name = known[p[i].kind].name;

		apx_rtable_text(d, t, 0, name, strlen(name));
		if (p[i].ordinal != UINT32_MAX)	/* n/a: JSON null, the process's */
			apx_rtable_u64(t, 1, p[i].ordinal);
		apx_rtable_u64(t, 2, p[i].n);
		apx_rtable_u64(t, 3, (uint64_t)p[i].min);
		apx_rtable_u64(t, 4, (uint64_t)p[i].max);
		apx_rtable_u64(t, 5, (uint64_t)p[i].last);
		apx_rtable_u64(t, 6, since_start(st, p[i].max_ts));
	}
	apx_rdoc_json(d, APX_SEC_MEMORY, "over_time", t, APX_RJ_ARRAY, 1);
}

void apx_rdoc_pymem_text(struct apx_rdoc *d)
{
	const struct apx_store *st = d->m->store;
	struct pymem p[PYMEM_MAX];
	uint32_t shown = UINT32_MAX - 1;
	size_t n;

	if (!st || !(n = collect(st, p, PYMEM_MAX)))
		return;
	for (size_t i = 0; i < n; i++) {
		char b[4][32], head[64];

		if (p[i].ordinal != shown) {
			shown = p[i].ordinal;
			if (shown == UINT32_MAX)
				snprintf(head, sizeof(head), "host memory over time");
			else
				snprintf(head, sizeof(head), "PyTorch's allocator on device %u over time",
					 shown);
			apx_rdoc_line(d, APX_SEC_MEMORY, 2, "%s (apx analyze --memory-sampling):", head);
		}
		apx_rdoc_line(d, APX_SEC_MEMORY, 4, "%-19s min %9s  max %9s  last %9s  max at +%s, "
			      "%" PRIu64 " samples", known[p[i].kind].title,
			      apx_fmt_size(b[0], sizeof(b[0]), p[i].min),
			      apx_fmt_size(b[1], sizeof(b[1]), p[i].max),
			      apx_fmt_size(b[2], sizeof(b[2]), p[i].last),
			      apx_fmt_ns(b[3], sizeof(b[3]), (double)since_start(st, p[i].max_ts)),
			      p[i].n);
	}
}

/* One plot: the series p[0..n) (one device's, or the host's) as columns over time, a row per
 * sample time of the first (the hooks sample every series of a tick at one time). */
static void plot(struct apx_rdoc *d, const struct apx_store *st, const struct pymem *p, size_t n,
		 unsigned index)
{
	size_t rows = p[0].n, step, k = 0;
	double *best = calloc(n, sizeof(*best));
	char key[48], title[96];
	struct apx_rtable *t;
	uint64_t row_ts = 0;

	if (!best || rows < 2)
		goto out;
	snprintf(key, sizeof(key), index ? "memory_over_time_%u" : "memory_over_time", index + 1);
	if (p[0].ordinal == UINT32_MAX)
		snprintf(title, sizeof(title), "Host memory over time (pinned by torch, RSS, RSS peak)");
	else
		snprintf(title, sizeof(title), "PyTorch memory over time on device %u: allocated, "
			 "reserved, peak", p[0].ordinal);
	t = apx_rdoc_table(d, APX_SEC_MEMORY, apx_rdoc_strdup(d, key, strlen(key)),
			   apx_rdoc_strdup(d, title, strlen(title)));
	apx_rtable_col(t, "time_ns", "time (since the run's start)", APX_UNIT_NS);
	for (size_t j = 0; j < n; j++)
		apx_rtable_col(t, known[p[j].kind].name + (p[j].kind < 4 ? 6 : 8),
			       known[p[j].kind].title, APX_UNIT_BYTES);
	if (!t)
		goto out;
	t->plot = APX_PLOT_LINES;
	t->plot_x = 0;
	t->plot_y = 1;
	t->plot_only = 1;
	step = (rows + PLOT_POINTS - 1) / PLOT_POINTS;
	/* walk the counters once: each series' samples in time order, grouped by step */
	for (size_t i = 0; i < st->ct.n; i++) {
		size_t j;

		for (j = 0; j < n && st->ct.series[i] != p[j].series; j++)
			;
		if (j == n)
			continue;
		if (j == 0) {
			if (k && k % step == 0) {
				if (apx_rtable_row(t) < 0)
					goto out;
				apx_rtable_u64(t, 0, since_start(st, row_ts));
				for (size_t c = 0; c < n; c++)
					apx_rtable_u64(t, (unsigned)c + 1, (uint64_t)best[c]);
				memset(best, 0, n * sizeof(*best));
			}
			if (k % step == 0)
				row_ts = st->ct.ts[i];
			k++;
		}
		if (st->ct.value[i] > best[j])
			best[j] = st->ct.value[i];
	}
	if (k && apx_rtable_row(t) == 0) {
		apx_rtable_u64(t, 0, since_start(st, row_ts));
		for (size_t c = 0; c < n; c++)
			apx_rtable_u64(t, (unsigned)c + 1, (uint64_t)best[c]);
	}
out:
	free(best);
}

void apx_rdoc_pymem_series(struct apx_rdoc *d, const struct apx_store *st)
{
	struct pymem p[PYMEM_MAX];
	size_t n = collect(st, p, PYMEM_MAX), first = 0;
	unsigned plots = 0;

	if (!d->sec[APX_SEC_MEMORY].present)
		return;
	for (size_t i = 1; i <= n; i++)
		if (i == n || p[i].ordinal != p[first].ordinal) {
			if (plots < 8)
				plot(d, st, p + first, i - first, plots++);
			first = i;
		}
}
