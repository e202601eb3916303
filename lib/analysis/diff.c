/*
 * diff.c - two runs compared step by step (see diff.h): the steps compared on each side (the
 * steady window's, from steps.c's bounds), their times and a percentile bootstrap of the
 * medians (both sides resampled with one fixed-seed generator, so the output is reproducible),
 * the kernels of each side's steps matched by demangled name, the idle time by cause and the
 * work a step, the rules' findings matched by rule id, and the program check (command lines and
 * the kernels' overlap). Called by cli/cmd_diff.c and the unit tests; reads finished models
 * and their event stores, allocates the kernel list (apx_diff_release frees it).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff.h"
#include "analysis/store.h"
#include "analysis/views.h"

#include "base/banned.h"

static const char *const status_keys[APX_DIFF__COUNT] = {
	"same", "shrank", "grew", "disappeared", "appeared",
};

const char *apx_diff_status_key(unsigned status)
{
	return status < APX_DIFF__COUNT ? status_keys[status] : "?";
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ---- the steps compared ---------------------------------------------------------------- */

/* Steps lo..hi-1 of m->steady: those of the steady window (from the first step after warm-up
 * to the last one), or every step found when fewer than APX_DIFF_MIN_STEPS are in it. */
static void step_range(const struct apx_model *m, size_t *ret_lo, size_t *ret_hi,
		       int *ret_window)
{
	const struct apx_an_steps *s = &m->steady;
	size_t lo = SIZE_MAX, hi = 0;

	for (size_t i = 0; i < s->count; i++)
		if (s->bounds[i] >= m->steady_start_ns && s->bounds[i + 1] <= m->steady_end_ns) {
			if (lo == SIZE_MAX)
				lo = i;
			hi = i + 1;
		}
	if (lo != SIZE_MAX && hi - lo >= APX_DIFF_MIN_STEPS) {
		*ret_lo = lo;
		*ret_hi = hi;
		*ret_window = 1;
		return;
	}
	*ret_lo = 0;
	*ret_hi = s->count;
	*ret_window = 0;
}

/* The times of steps lo..hi-1 into out (hi - lo room), as steps.c times them: a step whose span
 * holds time outside the capture ranges is left out, unless no step is whole (then each step's
 * collected time is its time). Their number. */
static size_t step_times(const struct apx_model *m, size_t lo, size_t hi, double *out)
{
	const uint64_t *b = m->steady.bounds;
	int any_whole = 0;
	size_t n = 0;

	for (size_t i = lo; i < hi && !any_whole; i++)
		any_whole = apx_an_collected_overlap(m, b[i], b[i + 1]) == b[i + 1] - b[i];
	for (size_t i = lo; i < hi; i++) {
		uint64_t len = apx_an_collected_overlap(m, b[i], b[i + 1]);

		if (any_whole && len < b[i + 1] - b[i])
			continue;
		out[n++] = (double)len;
	}
	return n;
}

int apx_diff_steps_check(const struct apx_model *m, char *why, size_t cap)
{
	const struct apx_an_steps *s = &m->steady;
	size_t lo, hi, n;
	int window;
	double *t;

	if (s->source == APX_STEPS_NONE || !s->bounds || !s->count) {
		snprintf(why, cap, "no steady state: no repeating step was found (no "
			 "torch.profiler ProfilerStep#, NVTX range a step or repeating kernel "
			 "sequence)");
		return -ENODATA;
	}
	step_range(m, &lo, &hi, &window);
	t = malloc((hi - lo) * sizeof(*t));
	if (!t) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	n = step_times(m, lo, hi, t);
	free(t);
	if (n < APX_DIFF_MIN_STEPS) {
		snprintf(why, cap, "no steady state to compare: %zu step%s with a time (%d "
			 "needed)", n, n == 1 ? "" : "s", APX_DIFF_MIN_STEPS);
		return -ENODATA;
	}
	return 0;
}

/* ---- bootstrap ----------------------------------------------------------------------------- */

/* splitmix64: small, fast, and the same sequence on every machine. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The median (x[n / 2] of the sorted sample, as steps.c's) of a resample of x (sorted, n > 0)
 * drawn with replacement: how often each x[i] was drawn, then the count walked up to rank n / 2
 * (O(n) a resample, no sort). cnt: n slots of scratch. */
static double resample_median(const double *x, size_t n, uint32_t *cnt, uint64_t *s)
{
	size_t c = 0;

	memset(cnt, 0, n * sizeof(*cnt));
	for (size_t i = 0; i < n; i++)
		cnt[rng_next(s) % n]++;
	for (size_t i = 0; i < n; i++) {
		c += cnt[i];
		if (c > n / 2)
			return x[i];
	}
	return x[n - 1];
}

/* The 2.5th and 97.5th percentiles of v[0..r-1] (sorted here). */
static void percentiles(double *v, size_t r, double *ret_lo, double *ret_hi)
{
	size_t k = r * 25 / 1000;

	qsort(v, r, sizeof(*v), cmp_double);
	*ret_lo = v[k];
	*ret_hi = v[r - 1 - k];
}

int apx_diff_median_ci(const double *x, size_t n, unsigned resamples, uint64_t seed,
		       double *ret_lo, double *ret_hi)
{
	uint32_t *cnt;
	double *med;
	uint64_t s = seed;

	if (!n || !resamples)
		return -EINVAL;
	cnt = malloc(n * sizeof(*cnt));
	med = malloc(resamples * sizeof(*med));
	if (!cnt || !med) {
		free(cnt);
		free(med);
		return -ENOMEM;
	}
	for (unsigned b = 0; b < resamples; b++)
		med[b] = resample_median(x, n, cnt, &s);
	percentiles(med, resamples, ret_lo, ret_hi);
	free(cnt);
	free(med);
	return 0;
}

int apx_diff_step_times(const struct apx_model *m, double **ret_x, size_t *ret_n)
{
	size_t lo, hi, n;
	int window;
	double *x;

	*ret_x = NULL;
	*ret_n = 0;
	if (m->steady.source == APX_STEPS_NONE || !m->steady.bounds || !m->steady.count)
		return -ENODATA;
	step_range(m, &lo, &hi, &window);
	x = malloc((hi - lo ? hi - lo : 1) * sizeof(*x));
	if (!x)
		return -ENOMEM;
	n = step_times(m, lo, hi, x);
	if (n < APX_DIFF_MIN_STEPS) {
		free(x);
		return -ENODATA;
	}
	qsort(x, n, sizeof(*x), cmp_double);
	*ret_x = x;
	*ret_n = n;
	return 0;
}

int apx_diff_median_diff_ci(const double *a, size_t na, const double *b, size_t nb,
			    unsigned resamples, uint64_t seed, double *ret_lo, double *ret_hi)
{
	uint32_t *cnt;
	double *dif;
	uint64_t s = seed;

	if (!na || !nb || !resamples)
		return -EINVAL;
	cnt = malloc((na > nb ? na : nb) * sizeof(*cnt));
	dif = malloc(resamples * sizeof(*dif));
	if (!cnt || !dif) {
		free(cnt);
		free(dif);
		return -ENOMEM;
	}
	for (unsigned r = 0; r < resamples; r++) {
		double ma = resample_median(a, na, cnt, &s);

		dif[r] = resample_median(b, nb, cnt, &s) - ma;
	}
	percentiles(dif, resamples, ret_lo, ret_hi);
	free(cnt);
	free(dif);
	return 0;
}

/* Both sides resampled with one generator: each side's interval, and the difference's. */
static int bootstrap(struct apx_diff *d, double *const x[2], const size_t n[2])
{
	size_t most = n[0] > n[1] ? n[0] : n[1];
	uint32_t *cnt = malloc(most * sizeof(*cnt));
	double *med[2], *dif;
	uint64_t s = d->seed;
	int r = -ENOMEM;

	med[0] = malloc(d->resamples * sizeof(double));
	med[1] = malloc(d->resamples * sizeof(double));
	dif = malloc(d->resamples * sizeof(double));
	if (!cnt || !med[0] || !med[1] || !dif)
		goto out;
	for (unsigned b = 0; b < d->resamples; b++) {
		med[0][b] = resample_median(x[0], n[0], cnt, &s);
		med[1][b] = resample_median(x[1], n[1], cnt, &s);
		dif[b] = med[1][b] - med[0][b];
	}
	for (unsigned k = 0; k < 2; k++)
		percentiles(med[k], d->resamples, &d->side[k].ci_lo_ns, &d->side[k].ci_hi_ns);
	percentiles(dif, d->resamples, &d->ci_lo_ns, &d->ci_hi_ns);
	d->outside_noise = d->ci_lo_ns > 0 || d->ci_hi_ns < 0;
	r = 0;
out:
	free(cnt);
	free(med[0]);
	free(med[1]);
	free(dif);
	return r;
}

/* ---- a side ------------------------------------------------------------------------------ */

/* The steps of side k: range, times (sorted into *ret_x, allocated), their statistics. */
static int side_steps(const struct apx_model *m, struct apx_diff_side *sd, double **ret_x,
		      size_t *ret_n, size_t *ret_span)
{
	const struct apx_an_steps *s = &m->steady;
	size_t lo, hi, n;
	double *x, sum = 0;
	int r;

	step_range(m, &lo, &hi, &sd->window_only);
	if ((r = apx_diff_step_times(m, &x, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		sum += x[i];
	sd->source = s->source;
	sd->steps_found = s->count;
	sd->steps = n;
	sd->span_start_ns = s->bounds[lo];
	sd->span_end_ns = s->bounds[hi];
	sd->median_ns = x[n / 2];
	sd->p95_ns = x[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1];
	sd->min_ns = x[0];
	sd->max_ns = x[n - 1];
	sd->mean_ns = sum / (double)n;
	*ret_x = x;
	*ret_n = n;
	*ret_span = hi - lo;
	return 0;
}

/* The script of a Python command line ("train.py"; "-m pkg.mod" for a module, "-c" for a
 * string), else the executable's name: what two runs of one program share. */
static void program_of(const char *argv, char *out, size_t cap)
{
	const char *p = argv, *tok, *base;
	size_t len;
	int python, skip_next = 0, module = 0;

	while (*p == ' ')
		p++;
	tok = p;
	while (*p && *p != ' ')
		p++;
	len = (size_t)(p - tok);
	base = tok;
	for (const char *q = tok; q < p; q++)
		if (*q == '/')
			base = q + 1;
	python = (size_t)(p - base) >= 6 && !strncmp(base, "python", 6);
	snprintf(out, cap, "%.*s", (int)(p - base), base);
	if (!python || !len)
		return;
	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			return;
		tok = p;
		while (*p && *p != ' ')
			p++;
		len = (size_t)(p - tok);
		if (module) {
			snprintf(out, cap, "-m %.*s", (int)len, tok);
			return;
		}
		if (skip_next) {
			skip_next = 0;
			continue;
		}
		if (len == 2 && !strncmp(tok, "-m", 2)) {
			module = 1;
			continue;
		}
		if (len == 2 && !strncmp(tok, "-c", 2)) {
			snprintf(out, cap, "-c");
			return;
		}
		if (tok[0] == '-') {	/* an interpreter option; -X, -W take a value */
			skip_next = len == 2 && (tok[1] == 'X' || tok[1] == 'W');
			continue;
		}
		base = tok;
		for (const char *q = tok; q < p; q++)
			if (*q == '/')
				base = q + 1;
		snprintf(out, cap, "%.*s", (int)(p - base), base);
		return;
	}
}

/* Whether two command lines are the same, the folder of their first word (the interpreter of
 * another virtual environment) aside. */
static int same_command(const char *a, const char *b)
{
	const char *ea = strchr(a, ' '), *eb = strchr(b, ' ');
	const char *ba = a, *bb = b;

	ea = ea ? ea : a + strlen(a);
	eb = eb ? eb : b + strlen(b);
	for (const char *q = a; q < ea; q++)
		if (*q == '/')
			ba = q + 1;
	for (const char *q = b; q < eb; q++)
		if (*q == '/')
			bb = q + 1;
	return !strcmp(ba, bb);
}

/* ---- kernels ----------------------------------------------------------------------------- */

struct kname {
	char *name;
	unsigned side;
	double ns, launches;
};

static int cmp_kname(const void *a, const void *b)
{
	const struct kname *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (int)x->side - (int)y->side;
}

static int cmp_kernel_change(const void *a, const void *b)
{
	const struct apx_diff_kernel *x = a, *y = b;
	double cx = fabs(x->ns[1] - x->ns[0]), cy = fabs(y->ns[1] - y->ns[0]);
	double mx = fmax(x->ns[0], x->ns[1]), my = fmax(y->ns[0], y->ns[1]);

	if (cx != cy)
		return cx < cy ? 1 : -1;
	if (mx != my)
		return mx < my ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Side k's kernels inside its span, a step, by model name, appended to *v (demangled names). */
static int side_kernels(const struct apx_model *m, unsigned k, const struct apx_diff_side *sd,
			double nsteps, struct kname **v, size_t *n, size_t *cap)
{
	const struct apx_store *st = m->store;
	double *ns = calloc(m->names.n ? m->names.n : 1, sizeof(*ns));
	double *cnt = calloc(m->names.n ? m->names.n : 1, sizeof(*cnt));
	char buf[4096];
	int r = -ENOMEM;

	if (!ns || !cnt)
		goto out;
	for (size_t i = 0; st && i < st->k.n; i++) {
		uint32_t j;

		if (st->k.start[i] < sd->span_start_ns || st->k.start[i] >= sd->span_end_ns)
			continue;
		j = apx_view_kname(st, i);
		if (j >= m->names.n)
			continue;
		ns[j] += st->k.dur[i];
		cnt[j] += 1;
	}
	for (size_t j = 0; j < m->names.n; j++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j);
		const char *dn;

		if (!cnt[j])
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? 2 * *cap : 64;
			struct kname *nv = realloc(*v, nc * sizeof(*nv));

			if (!nv)
				goto out;
			*v = nv;
			*cap = nc;
		}
		dn = apx_kernel_display_name(nm, buf, sizeof(buf));
		(*v)[*n].name = strdup(dn ? dn : "");
		if (!(*v)[*n].name)
			goto out;
		(*v)[*n].side = k;
		(*v)[*n].ns = ns[j] / nsteps;
		(*v)[*n].launches = cnt[j] / nsteps;
		(*n)++;
	}
	r = 0;
out:
	free(ns);
	free(cnt);
	return r;
}

/* Both sides' kernels matched by demangled name (a name twice on one side, from two devices or
 * mangled names that demangle alike, summed), the overlaps, sorted by change. */
static int kernels(struct apx_diff *d, const struct apx_model *const m[2], const double nsteps[2])
{
	struct kname *v = NULL;
	size_t n = 0, cap = 0, nk = 0, both = 0;
	double tot[2] = { 0, 0 }, lo = 0, hi = 0;
	int r = 0;

	for (unsigned k = 0; k < 2 && !r; k++)
		r = side_kernels(m[k], k, &d->side[k], nsteps[k], &v, &n, &cap);
	if (r < 0)
		goto out;
	qsort(v, n, sizeof(*v), cmp_kname);
	d->kernels = calloc(n ? n : 1, sizeof(*d->kernels));
	if (!d->kernels) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct apx_diff_kernel *kd;

		if (!nk || strcmp(d->kernels[nk - 1].name, v[i].name)) {
			kd = &d->kernels[nk++];
			kd->name = v[i].name;
			v[i].name = NULL;	/* moved */
		} else {
			kd = &d->kernels[nk - 1];
		}
		kd->ns[v[i].side] += v[i].ns;
		kd->launches[v[i].side] += v[i].launches;
	}
	d->nkernels = nk;
	for (size_t i = 0; i < nk; i++) {
		const struct apx_diff_kernel *kd = &d->kernels[i];

		for (unsigned k = 0; k < 2; k++) {
			tot[k] += kd->ns[k];
			d->side[k].distinct_kernels += kd->launches[k] > 0;
		}
		both += kd->launches[0] > 0 && kd->launches[1] > 0;
	}
	for (size_t i = 0; i < nk; i++) {
		double p = tot[0] > 0 ? d->kernels[i].ns[0] / tot[0] : 0;
		double q = tot[1] > 0 ? d->kernels[i].ns[1] / tot[1] : 0;

		lo += fmin(p, q);
		hi += fmax(p, q);
	}
	d->overlap_time = hi > 0 ? lo / hi : nk ? 0 : 1;
	d->overlap_names = nk ? (double)both / (double)nk : 1;
	qsort(d->kernels, nk, sizeof(*d->kernels), cmp_kernel_change);
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	return r;
}

/* Copies inside side k's span, a step. */
static void side_copies(const struct apx_model *m, struct apx_diff_side *sd, double nsteps)
{
	const struct apx_store *st = m->store;
	double c = 0, bytes = 0, ns = 0;

	for (size_t i = 0; st && i < st->c.n; i++) {
		if (st->c.start[i] < sd->span_start_ns || st->c.start[i] >= sd->span_end_ns)
			continue;
		c += 1;
		bytes += (double)st->c.bytes[i];
		ns += st->c.end[i] > st->c.start[i] ? (double)(st->c.end[i] - st->c.start[i]) : 0;
	}
	sd->copies = c / nsteps;
	sd->copy_bytes = bytes / nsteps;
	sd->copy_ns = ns / nsteps;
}

/* The steady window's idle time by cause (idle_attrib.c), a step of the window. */
static void side_idle(const struct apx_model *m, struct apx_diff_side *sd, double nsteps)
{
	double win = m->steady_steps ? (double)m->steady_steps : nsteps;

	sd->idle_total_ns = 0;
	for (unsigned c = 0; c < APX_IDLE__COUNT; c++) {
		sd->idle_ns[c] = (double)m->gpu.idle_by_cause[c] / win;
		sd->idle_total_ns += sd->idle_ns[c];
	}
}

/* ---- findings ---------------------------------------------------------------------------- */

static struct apx_diff_finding *finding_of(struct apx_diff *d, const char *rule)
{
	for (size_t i = 0; i < d->nfindings; i++)
		if (!strcmp(d->findings[i].rule, rule))
			return &d->findings[i];
	if (d->nfindings == APX_DIFF_FINDINGS_MAX)
		return NULL;
	d->findings[d->nfindings].rule = rule;
	return &d->findings[d->nfindings++];
}

/* Side k's main-list findings by rule, their saving a step as apx report says it (the steady
 * findings' saving over the steps found). */
static void side_findings(struct apx_diff *d, unsigned k, const struct apx_model *m,
			  const struct apx_findings *fd)
{
	int per_step = m->steady.source != APX_STEPS_NONE && m->steady.count &&
		       fd->steady_budget_ns > 0;

	for (size_t i = 0; i < fd->n; i++) {
		const struct apx_finding *f = &fd->f[i];
		struct apx_diff_finding *df;

		if (!f->rule || !apx_finding_in_main(fd, f))
			continue;
		df = finding_of(d, f->rule);
		if (!df)
			return;
		if (!df->title[0])
			snprintf(df->title, sizeof(df->title), "%s", f->title);
		df->count[k]++;
		if (per_step && !f->startup && f->saving_estimated) {
			df->estimated[k] = 1;
			df->step_ns[k] += f->saving_ns / (double)m->steady.count;
		}
	}
}

static void finding_status(struct apx_diff_finding *f)
{
	if (f->count[0] && !f->count[1])
		f->status = APX_DIFF_DISAPPEARED;
	else if (!f->count[0] && f->count[1])
		f->status = APX_DIFF_APPEARED;
	else if (f->estimated[0] && f->estimated[1] &&
		 f->step_ns[1] < f->step_ns[0] * (1 - APX_DIFF_FINDING_BAND))
		f->status = APX_DIFF_SHRANK;
	else if (f->estimated[0] && f->estimated[1] &&
		 f->step_ns[1] > f->step_ns[0] * (1 + APX_DIFF_FINDING_BAND))
		f->status = APX_DIFF_GREW;
	else
		f->status = APX_DIFF_SAME;
}

/* ---- the whole ------------------------------------------------------------------------- */

static int apart(double a, double b)
{
	return fabs(a - b) > APX_DIFF_WORK_SHARE * fmax(a, b);
}

void apx_diff_release(struct apx_diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nkernels; i++)
		free(d->kernels[i].name);
	free(d->kernels);
	d->kernels = NULL;
	d->nkernels = 0;
}

int apx_diff_compute(const struct apx_model *before, const struct apx_findings *fb,
		     const struct apx_model *after, const struct apx_findings *fa,
		     unsigned resamples, struct apx_diff *ret)
{
	const struct apx_model *m[2] = { before, after };
	const struct apx_findings *fd[2] = { fb, fa };
	struct apx_diff *d = calloc(1, sizeof(*d));
	double *x[2] = { NULL, NULL }, nsteps[2];
	size_t n[2], span[2];
	int r = -ENOMEM;

	if (!d)
		return -ENOMEM;
	d->resamples = resamples ? resamples : APX_DIFF_RESAMPLES;
	d->seed = APX_DIFF_SEED;
	for (unsigned k = 0; k < 2; k++) {
		struct apx_diff_side *sd = &d->side[k];

		r = side_steps(m[k], sd, &x[k], &n[k], &span[k]);
		if (r < 0)
			goto out;
		nsteps[k] = (double)span[k];
		sd->path = m[k]->nfiles ? m[k]->files[0].path : "";
		sd->command = m[k]->nfiles ? m[k]->files[0].argv : "";
		program_of(sd->command, sd->program, sizeof(sd->program));
		side_copies(m[k], sd, nsteps[k]);
		side_idle(m[k], sd, nsteps[k]);
	}
	d->change_ns = d->side[1].median_ns - d->side[0].median_ns;
	d->change_pct = d->side[0].median_ns > 0 ? 100.0 * d->change_ns / d->side[0].median_ns : 0;
	r = bootstrap(d, x, n);
	if (r < 0)
		goto out;
	r = kernels(d, m, nsteps);
	if (r < 0)
		goto out;
	for (unsigned k = 0; k < 2; k++) {
		struct apx_diff_side *sd = &d->side[k];

		for (size_t i = 0; i < d->nkernels; i++) {
			sd->kernels += d->kernels[i].launches[k];
			sd->kernel_ns += d->kernels[i].ns[k];
		}
		side_findings(d, k, m[k], fd[k]);
	}
	for (size_t i = 0; i < d->nfindings; i++)
		finding_status(&d->findings[i]);
	d->same_command = same_command(d->side[0].command, d->side[1].command);
	d->same_program = !strcmp(d->side[0].program, d->side[1].program);
	d->different_program = !d->same_command && d->overlap_time < APX_DIFF_OVERLAP_MIN &&
			       d->overlap_names < APX_DIFF_OVERLAP_MIN;
	if (apart(d->side[0].kernels, d->side[1].kernels))
		d->work_differs |= APX_DIFF_WORK_KERNELS;
	if (apart(d->side[0].copies, d->side[1].copies))
		d->work_differs |= APX_DIFF_WORK_COPIES;
	if (apart(d->side[0].copy_bytes, d->side[1].copy_bytes))
		d->work_differs |= APX_DIFF_WORK_BYTES;
	*ret = *d;
	d->kernels = NULL;	/* moved to *ret */
	d->nkernels = 0;
	r = 0;
out:
	apx_diff_release(d);
	free(d);
	free(x[0]);
	free(x[1]);
	return r;
}
