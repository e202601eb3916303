/*
 * copy_repeats.c - host buffers copied to the device again with the same data (findings.h,
 * apx_copy_repeats): the measurement behind repeated-copy (rules/rule_repeated_copy.c), which
 * copy-overlap (rules/rule_copy_overlap.c) also reads so that a copy repeated-copy removes is
 * not also one copy-overlap hides. A repeat is the same (host address, size, content
 * fingerprint) again, for a buffer copied at least 3 times. Copies with a fingerprint (the
 * collector's host_fp) count pinned or pageable; copies without one (older traces,
 * cuMemcpy[Async] calls) count when pageable only, by address and size: a pinned staging
 * buffer refilled every step looks the same without one. Each repeat's share is its bytes'
 * time at the pinned rate, at most its duration (the rest of a pageable copy's time is
 * pageable-copy's or small-copies').
 */
#include "analysis/findings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

struct key {
	uint64_t addr, bytes, fp;	/* fp 0: no fingerprint (then only pageable buffers) */
	double share;			/* the copy's ns that are repeated-copy's */
};

static int cmp_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return x->fp < y->fp ? -1 : x->fp > y->fp;
}

static int same(const struct key *x, const struct key *y)
{
	return x->addr == y->addr && x->bytes == y->bytes && x->fp == y->fp;
}

int apx_copy_repeats(const struct apx_model *m, struct apx_copy_repeats *r)
{
	double rate = apx_pinned_or_link_bps(m, APX_COPY_H2D, NULL);
	struct key *keys;
	size_t n = 0;

	memset(r, 0, sizeof(*r));
	r->rate_bps = rate;
	keys = malloc((m->copies.n + 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if (c->kind != APX_COPY_H2D || (c->src != APX_MEM_PAGEABLE && !c->host_fp))
			continue;
		r->candidates++;
		if (c->host_addr) {
			double at_rate = (double)c->bytes / rate * 1e9;

			keys[n++] = (struct key){ c->host_addr, c->bytes, c->host_fp,
						  at_rate < (double)c->dur ? at_rate : (double)c->dur };
		}
	}
	r->addressed = n;
	qsort(keys, n, sizeof(*keys), cmp_key);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		double d = 0;

		while (j < n && same(&keys[j], &keys[i]))
			d += keys[j++].share;
		if (j - i >= 3) {
			r->buffers++;
			r->repeats += j - i - 1;
			r->rep_bytes += (j - i - 1) * keys[i].bytes;
			r->saving_ns += d;
			if (keys[i].fp) {
				r->fp_repeats += j - i - 1;
				r->fp_saving_ns += d;
			}
			if ((j - i) * keys[i].bytes > r->best_n * r->best_bytes) {
				r->best_n = j - i;
				r->best_bytes = keys[i].bytes;
			}
		}
		i = j;
	}
	free(keys);
	return 0;
}
