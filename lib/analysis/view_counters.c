/*
 * view_counters.c - the replayed kernels' counters (COUNTER records of `apx analyze --replay`,
 * collected by load.c's record hook) joined to their kernels by (file, correlation id) through
 * the event store, and summarised per kernel name: the median of each counter over the name's
 * replayed launches (struct apx_kc_values of hwcounters.h, which reads them: bound-by, stalls,
 * L2 advice). A later launch of each replayed kernel was measured in one pass (src_replay.c: in
 * the program's cache state, right after a plain launch, or after an L2 sweep with
 * --replay-flush; its counters have passes 1, and a duration copied from the replayed launch
 * before it): a counter these give (the DRAM ones, the L2 sector hits) is the median over
 * them alone, the replay's own value of it (writes inflated by the replay's save and restore
 * of memory) the fallback for kernels without one; the L2 hit rate is then each one-pass
 * launch's hits over the lookups (hits and misses) of the replayed launch before it. The
 * kernels may be timed ones or replayed ones without times (store.h struct apx_es_untimed).
 * Called by apx_model_finish() (finish.c) after the kernel names, and its lookup by
 * view_kernels.c for the untimed launches' durations; single-threaded.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hwcounters.h"
#include "analysis/views.h"

#include "base/banned.h"

_Static_assert(APX_KC__COUNT <= 32,
	       "struct apx_an_kc holds every counter of the replay set");

static int cmp_counter(const void *a, const void *b)
{
	const struct apx_an_counter *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

/* The index of the first of the n sorted counters c of key's (file, correlation). */
static size_t first_counter(const struct apx_an_counter *c, size_t n,
			    const struct apx_an_counter *key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_counter(&c[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The kernel name of each counter (UINT32_MAX: no kernel has its correlation id). */
static void join(const struct apx_model *m, uint32_t *name_of)
{
	const struct apx_store *st = m->store;
	const struct apx_an_counter *c = m->counters.data;
	size_t n = m->counters.n;

	for (size_t i = 0; i < n; i++)
		name_of[i] = UINT32_MAX;
	for (size_t i = 0; i < st->k.n; i++) {
		struct apx_an_counter key = { .corr = st->k.corr[i],
					      .file = st->streams[st->k.stream[i]].file };

		for (size_t lo = first_counter(c, n, &key); lo < n && !cmp_counter(&c[lo], &key); lo++)
			name_of[lo] = apx_view_kname(st, i);
	}
	for (size_t i = 0; i < st->ku.n; i++) {	/* replayed launches: the usual case */
		struct apx_an_counter key = { .corr = st->ku.corr[i],
					      .file = st->streams[st->ku.stream[i]].file };

		for (size_t lo = first_counter(c, n, &key); lo < n && !cmp_counter(&c[lo], &key); lo++)
			name_of[lo] = apx_view_untimed_kname(st, i);
	}
}

/* one_pass[i]: counter i belongs to a launch measured in one pass (one of its counters has
 * passes 1); the counters are in (file, correlation) order. */
static void mark_one_pass(const struct apx_an_counter *c, size_t n, uint8_t *one_pass)
{
	for (size_t lo = 0, hi; lo < n; lo = hi) {
		uint8_t one = 0;

		for (hi = lo; hi < n && !cmp_counter(&c[hi], &c[lo]); hi++)
			one |= c[hi].passes == 1;
		memset(one_pass + lo, one, hi - lo);
	}
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The L2 hit rate of kernel name j in the program's cache state, %: the median over its
 * one-pass launches of their L2 sector hits over the lookups (hits plus misses) of the
 * replayed launch before them (of the same shape, up to three after each: src_replay.c; how
 * many lookups a launch makes does not depend on what L2 holds, how many hit does, and the
 * replay's passes start after its restores of memory). NaN when no one-pass launch follows a
 * replayed one with both counts. vals: scratch of n. */
static double one_pass_l2_hit(const struct apx_an_counter *c, size_t n, const uint32_t *name_of,
			      const uint8_t *one_pass, uint32_t j, double *vals)
{
	double lookups = 0;
	size_t nv = 0;

	for (size_t lo = 0, hi; lo < n; lo = hi) {
		double hits = 0, misses = 0;
		int got = 0;

		for (hi = lo; hi < n && !cmp_counter(&c[hi], &c[lo]); hi++) {
			if (name_of[hi] != j || !(c[hi].metric == APX_KC_L2_SECTOR_HITS ||
						  c[hi].metric == APX_KC_L2_SECTOR_MISSES))
				continue;
			*(c[hi].metric == APX_KC_L2_SECTOR_HITS ? &hits : &misses) = c[hi].value;
			got |= c[hi].metric == APX_KC_L2_SECTOR_HITS ? 1 : 2;
		}
		if (!got)
			continue;
		if (!one_pass[lo]) {		/* a replayed launch: the next one's lookups */
			lookups = got == 3 ? hits + misses : 0;
		} else if (got & 1 && lookups > 0) {	/* a one-pass launch after it */
			vals[nv++] = 100.0 * hits / lookups;
		}
		if (hi < n && c[hi].file != c[lo].file)
			lookups = 0;
	}
	if (!nv)
		return NAN;
	lookups = median(vals, nv);
	return lookups < 100.0 ? lookups : 100.0;
}

void apx_view_counters_sort(struct apx_model *m)
{
	if (m->counters.n && !m->counters_sorted)
		qsort(m->counters.data, m->counters.n, sizeof(struct apx_an_counter), cmp_counter);
	m->counters_sorted = 1;
}

int apx_view_counter_value(const struct apx_model *m, uint16_t file, uint64_t corr, int metric,
			   double *ret)
{
	const struct apx_an_counter *c = m->counters.data;
	struct apx_an_counter key = { .corr = corr, .file = file };
	size_t lo = 0, hi = m->counters.n;

	while (lo < hi) {	/* the first counter of (file, corr) */
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_counter(&c[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < m->counters.n && !cmp_counter(&c[lo], &key); lo++)
		if (c[lo].metric == metric) {
			*ret = c[lo].value;
			return 0;
		}
	return -ENOENT;
}

int apx_view_counters(struct apx_model *m)
{
	const struct apx_an_counter *c;
	size_t n = m->counters.n;
	uint32_t *name_of;
	uint8_t *one_pass;
	double *vals;
	int r = 0;

	if (!n)
		return 0;
	apx_view_counters_sort(m);
	c = m->counters.data;
	name_of = malloc(n * sizeof(*name_of));
	vals = malloc(n * sizeof(*vals));
	one_pass = malloc(n);
	if (!name_of || !vals || !one_pass) {
		free(name_of);
		free(vals);
		free(one_pass);
		return -ENOMEM;
	}
	join(m, name_of);
	mark_one_pass(c, n, one_pass);
	for (uint32_t j = 0; j < m->names.n && r == 0; j++) {
		struct apx_an_kc kc = { .name = j };
		double hit;
		uint64_t last_corr = UINT64_MAX;
		uint16_t last_file = UINT16_MAX;

		for (size_t i = 0; i < n; i++)
			if (name_of[i] == j) {
				if (c[i].corr != last_corr || c[i].file != last_file)
					*(one_pass[i] ? &kc.one_pass : &kc.launches) += 1;
				last_corr = c[i].corr;
				last_file = c[i].file;
				if (c[i].passes > kc.passes)
					kc.passes = c[i].passes;
			}
		if (!kc.launches && !kc.one_pass)
			continue;
		for (int k = 0; k < APX_KC__COUNT; k++) {
			size_t nv = 0, nf = 0;

			for (size_t i = 0; i < n; i++)	/* the one-pass launches' own counters */
				if (name_of[i] == j && c[i].metric == k && one_pass[i] &&
				    c[i].passes == 1)
					vals[nf++] = c[i].value;
			for (size_t i = 0; i < n && !nf; i++)	/* else the replayed launches' */
				if (name_of[i] == j && c[i].metric == k && !one_pass[i])
					vals[nv++] = c[i].value;
			if (nf) {
				nv = nf;
				kc.from_one_pass |= 1u << k;
			}
			if (!nv)
				continue;
			kc.v[k] = median(vals, nv);
			kc.have |= 1u << k;
		}
		hit = one_pass_l2_hit(c, n, name_of, one_pass, j, vals);
		if (isfinite(hit)) {	/* in place of the replay's own, after its restores */
			kc.v[APX_KC_L2_HIT] = hit;
			kc.have |= 1u << APX_KC_L2_HIT;
			kc.from_one_pass |= 1u << APX_KC_L2_HIT;
		}
		r = apx_vec_push(&m->kc, &kc);
	}
	free(name_of);
	free(vals);
	free(one_pass);
	return r;
}
