/*
 * build_series.c - the report document's time series, from the run's event store
 * (analysis/store.h), for the plots of the HTML report (and the CSV tables): GPU busy per
 * step (the steps of steps.c found again: its NVTX / ProfilerStep ranges, or every
 * period-th kernel of the busiest stream; with no steps, the GPU's span in equal windows),
 * device memory in use over time, every metric series (COUNTER records, e.g. nvperfd's
 * NVML/GPM samples; skipped when absent; in the summary, or the metrics or nvperfd section
 * when it is full; past METRICS_MAX, with one sample or with no room, named in a note of the
 * summary), and the kernels and copies of one step per stream (kernels demangled).
 * Long series are cut down to at most SERIES_MAX points (the largest value of each run of
 * points: a peak stays visible). Called by build.c (apx_rdoc_build).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/demangle.h"
#include "analysis/store.h"
#include "report/build.h"

#include "base/banned.h"

#define SERIES_MAX 2000		/* points of a time series */
#define STEPS_MAX 2000		/* steps plotted: more are merged */
#define NOSTEP_WINDOWS 50	/* no steps: the run's GPU span in this many windows */
#define METRICS_MAX 32		/* metric series plotted (the rest named in a note) */
#define TIMELINE_MAX 3000	/* boxes in the one-step timeline */

struct windows {
	uint64_t *start;		/* n + 1 boundaries */
	uint64_t *busy;
	size_t n;
};

static int windows_equal(struct windows *w, uint64_t first, uint64_t last, size_t n)
{
	if (!n || last <= first)
		return -1;
	w->start = malloc((n + 1) * sizeof(*w->start));
	w->busy = calloc(n, sizeof(*w->busy));
	if (!w->start || !w->busy)
		return -1;
	for (size_t i = 0; i <= n; i++)
		w->start[i] = first + (uint64_t)((double)(last - first) * (double)i / (double)n);
	w->n = n;
	return 0;
}

static int is_step_marker(const struct apx_es_text *t, const struct apx_an_steps *s)
{
	if (s->source == APX_STEPS_PROFILER)
		return t->len >= 13 && !memcmp(t->p, "ProfilerStep#", 13);
	return t->len == strlen(s->name) && !memcmp(t->p, s->name, t->len);
}

/* Steps from the NVTX ranges the step finder used; -1 when they cannot be found again. */
static int windows_ranges(struct windows *w, const struct apx_store *st,
			  const struct apx_an_steps *s)
{
	size_t n = 0, k = 0;
	uint64_t end = 0;

	for (size_t i = 0; i < st->mk.n; i++) {
		struct apx_es_text t = apx_store_string(st, st->mk.name[i]);

		n += st->mk.end[i] > st->mk.start[i] && is_step_marker(&t, s);
	}
	if (n < 2)
		return -1;
	w->start = malloc((n + 1) * sizeof(*w->start));
	w->busy = calloc(n, sizeof(*w->busy));
	if (!w->start || !w->busy)
		return -1;
	for (size_t i = 0; i < st->mk.n; i++) {
		struct apx_es_text t = apx_store_string(st, st->mk.name[i]);

		if (st->mk.end[i] <= st->mk.start[i] || !is_step_marker(&t, s))
			continue;
		if (k && st->mk.start[i] < w->start[k - 1])
			continue;
		w->start[k++] = st->mk.start[i];
		end = st->mk.end[i];
	}
	w->start[k] = end > w->start[k - 1] ? end : w->start[k - 1] + 1;
	w->n = k;
	return 0;
}

/* Steps of the kernel sequence found again (steps.c): every period-th kernel of the stream with
 * the most kernels, from the one that starts the first step. -1 when not found. */
static int windows_kernels(struct windows *w, const struct apx_store *st,
			   const struct apx_an_steps *s)
{
	size_t *count = calloc(st->nstreams ? st->nstreams : 1, sizeof(*count));
	size_t busiest = 0, j = 0, k = 0;
	int found = 0;

	if (!count || !s->period || s->count < 2) {
		free(count);
		return -1;
	}
	for (size_t i = 0; i < st->k.n; i++)
		if (st->k.stream[i] < st->nstreams)
			count[st->k.stream[i]]++;
	for (size_t i = 1; i < st->nstreams; i++)
		busiest = count[i] > count[busiest] ? i : busiest;
	free(count);
	w->start = malloc((s->count + 1) * sizeof(*w->start));
	w->busy = calloc(s->count, sizeof(*w->busy));
	if (!w->start || !w->busy)
		return -1;
	for (size_t i = 0; i < st->k.n && k < s->count; i++) {
		if (st->k.stream[i] != busiest)
			continue;
		if (!found && st->k.start[i] == s->first_ns)
			found = 1;
		if (found && j++ % s->period == 0)
			w->start[k++] = st->k.start[i];
	}
	if (k < 2)
		return -1;
	w->start[k] = s->last_ns > w->start[k - 1] ? s->last_ns : w->start[k - 1] + 1;
	w->n = k;
	return 0;
}

/* Window holding t: the last start <= t (w->n when past the end). */
static size_t window_of(const struct windows *w, uint64_t t)
{
	size_t lo = 0, hi = w->n;

	if (t < w->start[0])
		return 0;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (w->start[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void add_busy(struct windows *w, uint64_t s, uint64_t e)
{
	for (size_t i = window_of(w, s); i < w->n && w->start[i] < e; i++) {
		uint64_t a = s > w->start[i] ? s : w->start[i];
		uint64_t b = e < w->start[i + 1] ? e : w->start[i + 1];

		if (b > a)
			w->busy[i] += b - a;
	}
}

/* Kernel time (the union over streams) inside each window. */
static void windows_fill(struct windows *w, const struct apx_store *st)
{
	uint64_t cs = 0, ce = 0;
	int open = 0;

	for (size_t i = 0; i < st->k.n; i++) {
		uint64_t s = st->k.start[i], e = apx_store_end(st, APX_ES_KERNEL, i);

		if (open && s <= ce) {
			if (e > ce)
				ce = e;
			continue;
		}
		if (open)
			add_busy(w, cs, ce);
		cs = s;
		ce = e;
		open = 1;
	}
	if (open)
		add_busy(w, cs, ce);
}

static const struct apx_rcol busy_per_step_cols[] = {
	{ "step", "step", APX_UNIT_COUNT },
	{ "start_ns", "start (since the run's start)", APX_UNIT_NS },
	{ "duration_ns", "duration", APX_UNIT_NS },
	{ "gpu_busy_pct", "GPU busy", APX_UNIT_PCT },
};

static void busy_per_step(struct apx_rdoc *d, const struct apx_store *st)
{
	const struct apx_an_steps *s = &d->m->steady;
	struct windows w = { 0 };
	struct apx_rtable *t;
	size_t merge;
	int r = -1;

	if (!st->k.n)
		return;
	if (s->source == APX_STEPS_PROFILER || s->source == APX_STEPS_NVTX)
		r = windows_ranges(&w, st, s);
	else if (s->source == APX_STEPS_KERNELS)
		r = windows_kernels(&w, st, s);
	if (r < 0 && s->source != APX_STEPS_NONE && s->count >= 2) {
		free(w.start);
		free(w.busy);
		memset(&w, 0, sizeof(w));
		r = windows_equal(&w, s->first_ns, s->last_ns, s->count);
	}
	if (r < 0) {
		uint64_t last = 0;

		free(w.start);
		free(w.busy);
		memset(&w, 0, sizeof(w));
		for (size_t i = 0; i < st->k.n; i++)
			if (apx_store_end(st, APX_ES_KERNEL, i) > last)
				last = apx_store_end(st, APX_ES_KERNEL, i);
		r = windows_equal(&w, st->k.start[0], last, NOSTEP_WINDOWS);
	}
	if (r < 0)
		goto out;
	windows_fill(&w, st);
	t = apx_rdoc_table(d, APX_SEC_SUMMARY, "gpu_busy_per_step",
			   s->source == APX_STEPS_NONE ? "GPU busy over time (no steps found: the "
							 "GPU's span in equal windows)"
						       : "GPU busy per step");
	APX_RTABLE_SET_COLS(t, busy_per_step_cols);
	if (!t)
		goto out;
	t->plot = APX_PLOT_LINE;
	t->plot_x = 1;
	t->plot_y = 3;
	t->plot_only = 1;
	merge = (w.n + STEPS_MAX - 1) / STEPS_MAX;
	for (size_t i = 0; i < w.n; i += merge) {
		size_t j = i + merge < w.n ? i + merge : w.n;
		uint64_t busy = 0, dur = w.start[j] - w.start[i];

		for (size_t k = i; k < j; k++)
			busy += w.busy[k];
		if (apx_rtable_row(t) < 0)
			break;
		apx_rtable_u64(t, 0, i + 1);
		apx_rtable_u64(t, 1, w.start[i] - st->run_start_ns);
		apx_rtable_u64(t, 2, dur);
		apx_rtable_num(t, 3, dur ? 100.0 * (double)busy / (double)dur : 0);
	}
	if (merge > 1)
		t->note = apx_rdoc_strdup(d, "steps merged in groups to keep the plot readable", 48);
out:
	free(w.start);
	free(w.busy);
}

/* One series of COUNTER samples as a table (time since the run's start, value): 1; 0 when it
 * has fewer than 2 samples, -1 when the section has no room for it (no table). */
static int series_table(struct apx_rdoc *d, const struct apx_store *st, uint32_t si,
			 unsigned sec, const char *key, const char *title, unsigned unit)
{
	size_t n = 0, step, k = 0;
	struct apx_rtable *t;
	double best = 0;
	uint64_t at = 0;

	for (size_t i = 0; i < st->ct.n; i++)
		n += st->ct.series[i] == si;
	if (n < 2)
		return 0;
	t = apx_rdoc_table(d, sec, key, title);
	apx_rtable_col(t, "time_ns", "time (since the run's start)", APX_UNIT_NS);
	apx_rtable_col(t, "value", "value", unit);
	if (!t)
		return -1;
	t->plot = APX_PLOT_LINE;
	t->plot_x = 0;
	t->plot_y = 1;
	t->plot_only = 1;
	step = (n + SERIES_MAX - 1) / SERIES_MAX;
	for (size_t i = 0; i < st->ct.n; i++) {
		double v = st->ct.value[i];

		if (st->ct.series[i] != si)
			continue;
		if (k % step == 0) {
			at = st->ct.ts[i];
			best = v;
		} else if (v > best) {
			best = v;
		}
		k++;
		if (k % step == 0 || k == n) {
			if (apx_rtable_row(t) < 0)
				return 1;
			apx_rtable_u64(t, 0, at > st->run_start_ns ? at - st->run_start_ns : 0);
			apx_rtable_num(t, 1, best);
		}
	}
	return 1;
}

/* The unit of a metric series, from the unit text its producer wrote. */
static unsigned metric_unit(const struct apx_es_text *u)
{
	if (u->len == 5 && !memcmp(u->p, "bytes", 5))
		return APX_UNIT_BYTES;
	if ((u->len == 1 && u->p[0] == '%') || (u->len == 3 && !memcmp(u->p, "pct", 3)))
		return APX_UNIT_PCT;
	if (u->len == 2 && !memcmp(u->p, "ns", 2))
		return APX_UNIT_NS;
	if (u->len == 3 && !memcmp(u->p, "B/s", 3))
		return APX_UNIT_BYTES_PER_S;
	return APX_UNIT_RATIO;
}

/* A series not plotted, named in the note of its section: "3 more metric series not
 * plotted: a, b, c" (at most sizeof(list->text) bytes of names; then "..."). */
struct unplotted {
	unsigned n;
	char text[600];
	size_t len;
};

static void unplotted_add(struct unplotted *u, const struct apx_es_text *name, const char *why)
{
	int w;

	u->n++;
	if (u->len >= sizeof(u->text) - 8)
		return;
	w = snprintf(u->text + u->len, sizeof(u->text) - u->len, "%s%.*s%s", u->n > 1 ? ", " : "",
		     (int)name->len, name->p, why);
	if (w < 0 || (size_t)w >= sizeof(u->text) - u->len)
		snprintf(u->text + sizeof(u->text) - 5, 5, "...");
	u->len = strlen(u->text);
}

/* The section of the next metric plot: the summary, then (when it is full) the metrics and
 * nvperfd sections; APX_SEC__COUNT when none has room. */
static unsigned metric_section(const struct apx_rdoc *d)
{
	static const unsigned order[] = { APX_SEC_SUMMARY, APX_SEC_METRICS, APX_SEC_NVPERFD };

	for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (d->sec[order[i]].present && d->sec[order[i]].ntables < APX_RSECTION_TABLES)
			return order[i];
	return APX_SEC__COUNT;
}

static void memory_and_metrics(struct apx_rdoc *d, const struct apx_store *st)
{
	unsigned nmetrics = 0, nmem = 0;
	struct unplotted mem = { 0 }, met = { 0 };

	for (uint32_t i = 0; i < st->nseries; i++) {
		const struct apx_es_series *s = &st->series[i];
		char title[200], key[32];
		unsigned sec;
		int r;

		if (s->is_memory && d->sec[APX_SEC_MEMORY].present) {
			if (nmem >= 4) {
				unplotted_add(&mem, &s->name, "");
				continue;
			}
			snprintf(title, sizeof(title), "Device memory in use over time (device %u)",
				 s->device < st->ndevices ? st->devices[s->device].ordinal : 0);
			if (nmem)
				snprintf(key, sizeof(key), "device_memory_%u", nmem + 1);
			else
				snprintf(key, sizeof(key), "device_memory");
			r = series_table(d, st, i, APX_SEC_MEMORY, apx_rdoc_strdup(d, key, strlen(key)),
					 apx_rdoc_strdup(d, title, strlen(title)), APX_UNIT_BYTES);
			if (r > 0)
				nmem++;
			else if (r < 0)
				unplotted_add(&mem, &s->name, " (no room)");
		} else if (!s->is_memory && !apx_rdoc_pymem_is(&s->name) &&
			   !apx_es_is_nic(s->name) &&	/* cumulative: build_nic.c's rates */
			   d->sec[APX_SEC_SUMMARY].present) {
			sec = metric_section(d);
			if (nmetrics >= METRICS_MAX || sec == APX_SEC__COUNT) {
				unplotted_add(&met, &s->name, "");
				continue;
			}
			snprintf(title, sizeof(title), "Metric %.*s (%.*s) over time", (int)s->name.len,
				 s->name.p, (int)s->unit.len, s->unit.p);
			snprintf(key, sizeof(key), "metric_%u", nmetrics + 1);
			r = series_table(d, st, i, sec, apx_rdoc_strdup(d, key, strlen(key)),
					 apx_rdoc_strdup(d, title, strlen(title)), metric_unit(&s->unit));
			if (r > 0)
				nmetrics++;
			else
				unplotted_add(&met, &s->name, r ? " (no room)" : " (one sample)");
		}
	}
	if (met.n)
		apx_rdoc_note(d, APX_SEC_SUMMARY, "%u more metric series not plotted: %s", met.n,
			      met.text);
	if (mem.n)
		apx_rdoc_note(d, APX_SEC_MEMORY, "%u more device memory series not plotted: %s",
			      mem.n, mem.text);
}

static size_t first_at_or_after(const uint64_t *start, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (start[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void lane_name(char *buf, size_t cap, const struct apx_store *st, uint32_t stream)
{
	const struct apx_es_stream *s = stream < st->nstreams ? &st->streams[stream] : NULL;

	if (!s)
		snprintf(buf, cap, "stream ?");
	else
		snprintf(buf, cap, "device %u stream %llu",
			 s->device < st->ndevices ? st->devices[s->device].ordinal : 0,
			 (unsigned long long)s->id);
}

static const struct apx_rcol step_timeline_cols[] = {
	{ "lane", "stream", APX_UNIT_TEXT },
	{ "start_ns", "start (in the step)", APX_UNIT_NS },
	{ "duration_ns", "duration", APX_UNIT_NS },
	{ "name", "name", APX_UNIT_TEXT },
};

/* The kernels and copies of the middle step, per stream. */
static void step_timeline(struct apx_rdoc *d, const struct apx_store *st)
{
	const struct apx_an_steps *s = &d->m->steady;
	uint64_t ws, we, len;
	struct apx_rtable *t;
	char lane[96], title[160];
	size_t boxes = 0;

	if (s->source == APX_STEPS_NONE || !s->count || !st->k.n)
		return;
	len = s->median_ns ? s->median_ns : (s->last_ns - s->first_ns) / s->count;
	ws = s->first_ns + (s->last_ns - s->first_ns) / 2;
	/* start at a kernel: the first one at or after the middle of the steady state */
	{
		size_t k = first_at_or_after(st->k.start, st->k.n, ws);

		if (k < st->k.n)
			ws = st->k.start[k];
	}
	we = ws + len;
	snprintf(title, sizeof(title), "One step's timeline (%.3f ms from +%.3f s): kernels and "
		 "copies per stream", (double)len / 1e6, (double)(ws - st->run_start_ns) / 1e9);
	t = apx_rdoc_table(d, APX_SEC_STREAMS, "step_timeline", apx_rdoc_strdup(d, title, strlen(title)));
	APX_RTABLE_SET_COLS(t, step_timeline_cols);
	if (!t)
		return;
	t->plot = APX_PLOT_TIMELINE;
	t->plot_x = 0;
	t->plot_y = 1;
	t->plot_only = 1;
	for (size_t i = first_at_or_after(st->k.start, st->k.n, ws);
	     i < st->k.n && st->k.start[i] < we && boxes < TIMELINE_MAX; i++, boxes++) {
		struct apx_es_text nm = apx_store_string(st, st->k.name[i]);
		char name[4096];

		if (apx_rtable_row(t) < 0)
			return;
		lane_name(lane, sizeof(lane), st, st->k.stream[i]);
		apx_rtable_str(d, t, 0, lane);
		apx_rtable_u64(t, 1, st->k.start[i] - ws);
		apx_rtable_u64(t, 2, apx_store_end(st, APX_ES_KERNEL, i) - st->k.start[i]);
		apx_rtable_str(d, t, 3, apx_demangle(nm.p, nm.len, name, sizeof(name)));
	}
	for (size_t i = first_at_or_after(st->c.start, st->c.n, ws);
	     i < st->c.n && st->c.start[i] < we && boxes < TIMELINE_MAX; i++, boxes++) {
		char name[64];

		if (apx_rtable_row(t) < 0)
			return;
		lane_name(lane, sizeof(lane), st, st->c.stream[i]);
		snprintf(name, sizeof(name), "copy %s %llu bytes", apx_copy_kind_name(st->c.kind[i]),
			 (unsigned long long)st->c.bytes[i]);
		apx_rtable_str(d, t, 0, lane);
		apx_rtable_u64(t, 1, st->c.start[i] - ws);
		apx_rtable_u64(t, 2, st->c.end[i] > st->c.start[i] ? st->c.end[i] - st->c.start[i] : 0);
		apx_rtable_str(d, t, 3, name);
	}
}

void apx_rdoc_build_series(struct apx_rdoc *d, const struct apx_store *st)
{
	if (d->sec[APX_SEC_SUMMARY].present)
		busy_per_step(d, st);
	memory_and_metrics(d, st);
	apx_rdoc_pymem_series(d, st);		/* PyTorch's allocator and the process's memory */
	if (d->sec[APX_SEC_STREAMS].present)
		step_timeline(d, st);
}
