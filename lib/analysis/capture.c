/*
 * capture.c - the times a trace was collected in, when apx analyze collected only between
 * cudaProfilerStart() and cudaProfilerStop() (--capture-range=cudaProfilerApi): load.c hands
 * each file's "capture" key/values ("start <ns>", "stop <ns>", in time order) and its
 * "capture_mode" one here; apx_model_finish() (finish.c) makes the union of every file's ranges
 * (model->collected), and apx_an_collected_overlap() / apx_an_collected_piece() are the one
 * notion of "collected" that the timelines, the idle attribution, the steps and the rules use:
 * time outside every range was not looked at, so it is neither idle nor a step's.
 * A model none of whose files has a valid range is not limited (every call here then answers
 * "all of it"); in one that has, a file without capture key/values adds no range (under
 * --capture-range every process the collector ran in writes them: such a file is another
 * producer's, nvperfd's summary or apx analyze's own record of a process without CUDA, whose
 * span would make the time between the ranges look collected).
 * Bad edges (a stop without a start, a second start, a time before the previous edge, a
 * value that does not parse) are ignored and counted. Single-threaded.
 */
#include "analysis/model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"

#include "base/banned.h"

/* An edge's time: "<word> <decimal ns>", nothing else. 0 when it parses. */
static int edge_time(const char *val, const char *word, uint64_t *ret_ns)
{
	size_t n = strlen(word);

	if (strncmp(val, word, n) || val[n] != ' ')
		return -EINVAL;
	return apx_parse_u64(val + n + 1, UINT64_MAX - 1, ret_ns);
}

int apx_capture_kv(struct apx_model *m, uint16_t fi, const char *key, const char *val)
{
	struct apx_an_file *f = &m->files[fi];
	uint64_t ns = 0;

	if (!strcmp(key, "capture_mode")) {
		f->capture = 1;
		return 0;
	}
	if (strcmp(key, "capture"))
		return 0;
	f->capture = 1;
	if (edge_time(val, "start", &ns) == 0) {
		if (f->capture_open || ns < f->capture_last) {
			f->capture_bad++;	/* a second start, or out of order */
			return 0;
		}
		f->capture_open = 1;
		f->capture_from = f->capture_last = ns;
		return 0;
	}
	if (edge_time(val, "stop", &ns) == 0) {
		struct apx_an_capture c = { .start = f->capture_from, .end = ns, .file = fi };

		if (!f->capture_open || ns < f->capture_last) {
			f->capture_bad++;	/* a stop without a start, or out of order */
			return 0;
		}
		f->capture_open = 0;
		f->capture_last = ns;
		return apx_vec_push(&m->captures, &c);
	}
	f->capture_bad++;			/* neither: unparsable */
	return 0;
}

static int cmp_capture(const void *a, const void *b)
{
	const struct apx_an_capture *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

int apx_capture_finish(struct apx_model *m)
{
	struct apx_vec all = { .size = sizeof(struct apx_an_capture) };
	uint64_t cum = 0;
	int r = 0;

	for (size_t i = 0; i < m->nfiles; i++) {
		struct apx_an_file *f = &m->files[i];

		m->capture_bad += f->capture_bad;
		m->capture |= f->capture;
		if (f->capture_open) {	/* no stop: the range ends with the trace */
			struct apx_an_capture c = {
				.start = f->capture_from, .file = (uint16_t)i,
				.end = f->last_ns > f->capture_from ? f->last_ns : f->capture_from,
			};

			f->capture_open = 0;
			if ((r = apx_vec_push(&m->captures, &c)) < 0)
				return r;
		}
	}
	for (size_t i = 0; i < m->captures.n && r == 0; i++) {
		const struct apx_an_capture *c = APX_VEC_AT(&m->captures, struct apx_an_capture, i);

		if (c->end > c->start) {	/* an empty range collected nothing */
			m->files[c->file].capture_ranges++;
			r = apx_vec_push(&all, c);
		}
	}
	if (r < 0 || !all.n) {
		free(all.data);
		m->collected_ns = m->wall_ns;
		return r;
	}
	qsort(all.data, all.n, all.size, cmp_capture);
	for (size_t i = 0; i < all.n; i++) {	/* the union, with the collected ns before each */
		const struct apx_an_capture *c = APX_VEC_AT(&all, struct apx_an_capture, i);
		struct apx_an_collected *last = m->collected.n
			? APX_VEC_AT(&m->collected, struct apx_an_collected, m->collected.n - 1) : NULL;
		struct apx_an_collected u = { .start = c->start, .end = c->end };

		if (last && c->start <= last->end) {
			if (c->end > last->end)
				last->end = c->end;
			continue;
		}
		if (last)
			cum += last->end - last->start;
		u.before = cum;
		if ((r = apx_vec_push(&m->collected, &u)) < 0)
			break;
	}
	free(all.data);
	m->collected_ns = apx_an_collected_overlap(m, m->run_start_ns, m->run_end_ns);
	return r;
}

/* The first collected range that ends after a. */
static size_t first_after(const struct apx_model *m, uint64_t a)
{
	const struct apx_an_collected *c = m->collected.data;
	size_t lo = 0, hi = m->collected.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The collected ns before time t (over all ranges). */
static uint64_t collected_before(const struct apx_model *m, uint64_t t)
{
	const struct apx_an_collected *c = m->collected.data;
	size_t i = first_after(m, t);

	if (i == m->collected.n)
		return i ? c[i - 1].before + (c[i - 1].end - c[i - 1].start) : 0;
	return c[i].before + (t > c[i].start ? t - c[i].start : 0);
}

uint64_t apx_an_collected_overlap(const struct apx_model *m, uint64_t a, uint64_t b)
{
	if (b <= a)
		return 0;
	if (!m->collected.n)
		return b - a;
	return collected_before(m, b) - collected_before(m, a);
}

int apx_an_collected_piece(const struct apx_model *m, uint64_t a, uint64_t b, uint64_t *ret_s,
			   uint64_t *ret_e)
{
	const struct apx_an_collected *c;
	size_t i;

	if (b <= a)
		return 0;
	if (!m->collected.n) {
		*ret_s = a;
		*ret_e = b;
		return 1;
	}
	i = first_after(m, a);
	if (i == m->collected.n)
		return 0;
	c = APX_VEC_AT(&m->collected, struct apx_an_collected, i);
	if (c->start >= b)
		return 0;
	*ret_s = c->start > a ? c->start : a;
	*ret_e = c->end < b ? c->end : b;
	return 1;
}
