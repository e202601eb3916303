/*
 * hwcounters.c - the maths of the hardware-counter views (hwcounters.h): PM-sampling series
 * statistics, a replayed kernel's bound-by and stall reasons, and the L2 persistence advice.
 * Called by the analysis model, the report and the rules; allocates nothing.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hwcounters.h"
#include "collector/pm_sets.h"

#include "base/banned.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int apx_hw_stat_window(const struct apx_hw_sample *s, size_t n, uint64_t t0, uint64_t t1,
		       double *scratch, struct apx_hw_stat *out)
{
	double wsum = 0, w = 0;
	size_t k = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n && s[i].start < t1; i++) {
		uint64_t a = s[i].start > t0 ? s[i].start : t0, b = s[i].end < t1 ? s[i].end : t1;

		if (b <= a)
			continue;
		scratch[k++] = s[i].value;
		wsum += s[i].value * (double)(b - a);
		w += (double)(b - a);
	}
	if (!k)
		return -1;
	qsort(scratch, k, sizeof(*scratch), cmp_double);
	out->n = k;
	out->min = scratch[0];
	out->max = scratch[k - 1];
	out->p95 = scratch[(size_t)ceil(0.95 * (double)k) - 1];
	out->mean = wsum / w;
	return 0;
}

double apx_hw_mean_over(const struct apx_hw_sample *s, size_t n, const uint64_t *start,
			const uint64_t *end, size_t niv, double *scratch, uint64_t *covered,
			uint64_t *counted)
{
	double wsum = 0, w = 0, cov = 0;
	uint64_t cnt = 0;
	size_t j = 0;

	for (size_t m = 0; m < n; m++)
		scratch[m] = 0;
	for (size_t i = 0; i < niv; i++) {	/* each sample's overlap with the intervals */
		while (j < n && s[j].end <= start[i])	/* samples before this interval */
			j++;
		for (size_t m = j; m < n && s[m].start < end[i]; m++) {
			uint64_t a = s[m].start > start[i] ? s[m].start : start[i];
			uint64_t b = s[m].end < end[i] ? s[m].end : end[i];

			if (b > a)
				scratch[m] += (double)(b - a);
		}
	}
	for (size_t m = 0; m < n; m++) {
		cov += scratch[m];
		if (scratch[m] > 0 && 2 * scratch[m] >= (double)(s[m].end - s[m].start)) {
			wsum += s[m].value * scratch[m];
			w += scratch[m];
			cnt++;
		}
	}
	if (covered)
		*covered = (uint64_t)cov;
	if (counted)
		*counted = cnt;
	return w > 0 ? wsum / w : NAN;
}

int apx_hw_is_pm(const char *name, size_t len)
{
	return !(len >= 5 && !memcmp(name, "nvml.", 5));
}

/* A duration in three digits at most, for a line: "1 ms" (999999 ns), "40 us", "0.5 us". */
static const char *short_ns(char *buf, size_t cap, uint64_t ns)
{
	if (ns >= 999500000)
		snprintf(buf, cap, "%.3g s", (double)ns / 1e9);
	else if (ns >= 999500)
		snprintf(buf, cap, "%.3g ms", (double)ns / 1e6);
	else
		snprintf(buf, cap, "%.3g us", (double)ns / 1e3);
	return buf;
}

const char *apx_hw_kernel_why(char *buf, size_t cap, uint64_t sample_ns, uint64_t kernel_ns,
			      uint64_t counted, int pm)
{
	char bs[32], bk[32];
	uint64_t hz = 0;

	short_ns(bs, sizeof(bs), sample_ns);
	short_ns(bk, sizeof(bk), kernel_ns);
	if (2 * kernel_ns >= sample_ns) {	/* long enough: too few executions were sampled */
		snprintf(buf, cap, "%" PRIu64 " sample%s of %s mostly in it (%d needed): per-kernel "
			 "values need --replay or a longer run", counted, counted == 1 ? "" : "s", bs,
			 APX_HW_MIN_SAMPLES);
		return buf;
	}
	/* a rate whose samples are no longer than the kernel, as far as the sampler goes */
	if (pm && sample_ns > 1000000000 / APX_HW_MAX_FREQUENCY) {
		hz = kernel_ns ? (1000000000 + kernel_ns - 1) / kernel_ns : APX_HW_MAX_FREQUENCY;
		hz = (hz + 999) / 1000 * 1000;
		if (hz > APX_HW_MAX_FREQUENCY)
			hz = APX_HW_MAX_FREQUENCY;
		if (hz * sample_ns <= 1000000000)	/* no faster than now */
			hz = 0;
	}
	if (hz)
		snprintf(buf, cap, "samples of %s, kernels of %s: per-kernel values need --replay "
			 "or --metrics-frequency %" PRIu64, bs, bk, hz);
	else
		snprintf(buf, cap, "samples of %s, kernels of %s: per-kernel values need --replay",
			 bs, bk);
	return buf;
}

int apx_kc_index(const char *metric, size_t len)
{
	const struct apx_pm_set *set = apx_pm_replay_set();

	for (size_t i = 0; i < set->n && i < APX_KC__COUNT; i++)
		if (strlen(set->metrics[i].name) == len && !memcmp(set->metrics[i].name, metric, len))
			return (int)i;
	return -1;
}

#define HAVE(k, i) (((k)->have >> (i)) & 1u)

enum apx_bound apx_kc_bound(const struct apx_kc_values *k)
{
	double sm, dram;

	if (!HAVE(k, APX_KC_SM_PCT) || !HAVE(k, APX_KC_DRAM_PCT))
		return APX_BOUND_UNKNOWN;
	sm = k->v[APX_KC_SM_PCT];
	dram = k->v[APX_KC_DRAM_PCT];
	if (dram >= 60 && dram >= sm)
		return APX_BOUND_MEMORY;
	if (sm >= 60)
		return APX_BOUND_COMPUTE;
	return APX_BOUND_LATENCY;
}

const char *apx_bound_name(enum apx_bound b)
{
	switch (b) {
	case APX_BOUND_MEMORY: return "memory";
	case APX_BOUND_COMPUTE: return "compute";
	case APX_BOUND_LATENCY: return "latency";
	default: return "unknown";
	}
}

/* In the replay set's order (pm_sets.c): words, then what to try. */
static const char *const stall_text[12][2] = {
	{ "waiting on global or local memory (long scoreboard)",
	  "improve locality and coalescing, keep reused data in shared memory, or run more warps "
	  "to hide the latency" },
	{ "waiting on shared memory or special math (short scoreboard)",
	  "fewer shared-memory round trips per instruction; avoid bank conflicts" },
	{ "the shared-memory instruction queue is full (MIO throttle)",
	  "fewer, wider shared-memory accesses; fewer special-math instructions" },
	{ "the global/local memory instruction queue is full (LG throttle)",
	  "vectorize loads and stores (float4, 128-bit), fewer register spills to local memory" },
	{ "waiting at a barrier (__syncthreads)", "balance the work between the warps of a block" },
	{ "waiting for a memory fence", "fewer memory fences or atomics" },
	{ "the math pipes are busy (math pipe throttle)",
	  "compute bound on one pipe: use tensor cores (bf16/TF32) or spread over pipes" },
	{ "fixed-latency dependencies (wait)", "more independent instructions between dependent ones" },
	{ "eligible but another warp was picked (not selected)",
	  "enough warps to hide latency: not a problem in itself" },
	{ "issuing (selected)", "not a stall" },
	{ "no instruction fetched (instruction cache, branches)",
	  "smaller kernels, fewer divergent branches" },
	{ "dispatch stalls", "usually a pipeline conflict; rarely actionable" },
};

size_t apx_kc_top_stalls(const struct apx_kc_values *k, unsigned *idx, size_t max)
{
	unsigned cand[12];
	size_t n = 0;

	for (unsigned s = 0; s < 12; s++)
		if (s != 9 && HAVE(k, APX_KC_STALL_FIRST + s) && k->v[APX_KC_STALL_FIRST + s] > 0)
			cand[n++] = s;
	for (size_t i = 1; i < n; i++)		/* insertion sort, largest first */
		for (size_t j = i; j > 0 && k->v[APX_KC_STALL_FIRST + cand[j]] >
					     k->v[APX_KC_STALL_FIRST + cand[j - 1]]; j--) {
			unsigned t = cand[j];

			cand[j] = cand[j - 1];
			cand[j - 1] = t;
		}
	if (n > max)
		n = max;
	memcpy(idx, cand, n * sizeof(*idx));
	return n;
}

const char *apx_stall_words(unsigned stall)
{
	return stall < 12 ? stall_text[stall][0] : "?";
}

const char *apx_stall_try(unsigned stall)
{
	return stall < 12 ? stall_text[stall][1] : "?";
}

void apx_l2_advise(const struct apx_l2_input *in, struct apx_l2_advice *out)
{
	const struct apx_kc_values *k = in->k, *kw = in->k_window;

	memset(out, 0, sizeof(*out));
	if (in->window_bytes) {
		if (in->persist_limit && in->window_bytes > in->persist_limit) {
			out->kind = APX_L2_SETASIDE_TOO_SMALL;
			out->window_bytes = in->window_bytes;
			out->hit_ratio = (double)in->persist_limit / (double)in->window_bytes;
		}
		if (k && kw && HAVE(k, APX_KC_L2_HIT) && HAVE(kw, APX_KC_L2_HIT)) {
			out->hit_before = k->v[APX_KC_L2_HIT];
			out->hit_after = kw->v[APX_KC_L2_HIT];
			if (out->kind == APX_L2_NONE && fabs(out->hit_after - out->hit_before) < 5)
				out->kind = APX_L2_WINDOW_NO_GAIN;
		}
		return;
	}
	/* no window: the data each launch reads from DRAM is what a window could keep in L2 */
	if (!k || !in->persist_max || in->launches_per_step < 1 || !HAVE(k, APX_KC_L2_HIT) ||
	    !HAVE(k, APX_KC_DRAM_READ) || !HAVE(k, APX_KC_DRAM_PCT))
		return;
	if (k->v[APX_KC_L2_HIT] >= 50 || k->v[APX_KC_DRAM_PCT] < 30 || k->v[APX_KC_DRAM_READ] <= 0)
		return;
	out->window_bytes = (uint64_t)k->v[APX_KC_DRAM_READ];
	out->window_bytes = (out->window_bytes + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
	out->hit_ratio = (double)in->persist_max / (double)out->window_bytes;
	if (out->hit_ratio > 1)
		out->hit_ratio = 1;
	if (out->hit_ratio < 0.25)	/* a quarter of the data would persist: not worth it */
		return;
	out->kind = APX_L2_SUGGEST_WINDOW;
	out->hit_before = k->v[APX_KC_L2_HIT];
}
