/*
 * rule_repeated_copy.c - the same host buffer copied to the device again and again with the
 * same data: the data could stay on the device. A repeat is the same (address, size, content
 * fingerprint) again. The fingerprint (host_fp, taken by the collector at the copy call,
 * docs/collector.md) tells the same data from a buffer refilled with new data: a pinned
 * staging buffer refilled every step (or DataLoader's pinned batches, which its caching host
 * allocator hands out at the same addresses) gets a new fingerprint each time and is no
 * repeat. Copies without one (older traces, cuMemcpy[Async] calls) keep the rule's rule
 * before fingerprints: pageable buffers only, by (address, size), pinned ones left out as
 * possibly refilled. Saving: every copy after the first of each buffer copied at least 3
 * times, each at its bytes' time at the pinned rate (pinned copies' in the trace, or the
 * link's peak), at most its duration: the time a pageable copy takes beyond that is
 * pageable-copy's (or small-copies'), one owner per copy ns. Needs host addresses (the
 * collector's callbacks).
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/banned.h"

struct key {
	uint64_t addr, bytes, fp;	/* fp 0: no fingerprint (then only pageable buffers) */
	double share;	/* the copy's ns that are this rule's */
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

APX_RULE_DECL(repeated_copy)
{
	uint64_t h2d = 0, buffers = 0, repeats = 0, rep_bytes = 0, best_n = 0, best_bytes = 0;
	uint64_t fp_repeats = 0;	/* of repeats: with the same fingerprint */
	double saving = 0, rate = apx_pinned_or_link_bps(m, APX_COPY_H2D, NULL);
	struct key *keys;
	size_t n = 0;
	char b1[32], b2[32];
	struct apx_finding *f;

	keys = malloc((m->copies.n + 1) * sizeof(*keys));
	if (!keys)
		return APX_RULE_CLEAN;
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

		if (c->kind != APX_COPY_H2D || (c->src != APX_MEM_PAGEABLE && !c->host_fp))
			continue;
		h2d++;
		if (c->host_addr) {
			double at_rate = (double)c->bytes / rate * 1e9;

			keys[n++] = (struct key){ c->host_addr, c->bytes, c->host_fp,
						  at_rate < (double)c->dur ? at_rate : (double)c->dur };
		}
	}
	if (h2d && !n) {
		free(keys);
		snprintf(why, why_len, "no host addresses of copies in the trace (recorded by apx "
				       "analyze's collector)");
		return APX_RULE_NOT_MEASURED;
	}
	qsort(keys, n, sizeof(*keys), cmp_key);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		double d = 0;

		while (j < n && same(&keys[j], &keys[i]))
			d += keys[j++].share;
		if (j - i >= 3) {
			buffers++;
			repeats += j - i - 1;
			if (keys[i].fp)
				fp_repeats += j - i - 1;
			rep_bytes += (j - i - 1) * keys[i].bytes;
			saving += d;
			if ((j - i) * keys[i].bytes > best_n * best_bytes) {
				best_n = j - i;
				best_bytes = keys[i].bytes;
			}
		}
		i = j;
	}
	free(keys);
	if (!buffers || (m->steady_ns && saving < 0.01 * (double)m->steady_ns))
		return APX_RULE_CLEAN;
	f = apx_finding_add(out, m, "repeated-copy", APX_SEV_WARNING, saving, 70);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "%llu host buffers copied to the device %llu extra times",
		 (unsigned long long)buffers, (unsigned long long)repeats);
	snprintf(f->model, sizeof(f->model),
		 "a buffer copied N times needs one copy if kept on the device: saving = the other "
		 "N-1 copies at %.1f GB/s (the pinned rate; their time beyond it is pageable "
		 "memory's)", rate / 1e9);
	apx_text_append(f->evidence, sizeof(f->evidence), "repeated bytes: %s in %llu copies\n",
			apx_fmt_size(b1, sizeof(b1), (double)rep_bytes), (unsigned long long)repeats);
	apx_text_append(f->evidence, sizeof(f->evidence), "largest: one %s buffer copied %llu times\n",
			apx_fmt_size(b2, sizeof(b2), (double)best_bytes), (unsigned long long)best_n);
	if (fp_repeats)		/* the collector sampled the bytes at each copy call */
		apx_text_append(f->evidence, sizeof(f->evidence),
				"same data: %llu repeats with the content fingerprint of the "
				"buffer's earlier copies\n", (unsigned long long)fp_repeats);
	apx_finding_metric(f, "buffers", (double)buffers, APX_UNIT_COUNT);
	apx_finding_metric(f, "repeats", (double)repeats, APX_UNIT_COUNT);
	apx_finding_metric(f, "repeated_bytes", (double)rep_bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "largest_bytes", (double)best_bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "largest_copies", (double)best_n, APX_UNIT_COUNT);
	if (fp_repeats)		/* with fingerprints only: older traces' metrics stay */
		apx_finding_metric(f, "same_fp_repeats", (double)fp_repeats, APX_UNIT_COUNT);
	snprintf(f->fix, sizeof(f->fix),
		 "Move constant data to the device once, outside the loop:\n"
		 "  weights_gpu = weights.to('cuda')     # before the loop\n"
		 "  for batch in loader: out = model(batch, weights_gpu)\n"
		 "or register it as a buffer of the module (self.register_buffer(...)) and call "
		 "model.to('cuda').");
	return APX_RULE_FIRED;
}
