/*
 * rule_repeated_copy.c - the same host buffer copied to the device again and again with the
 * same data: the data could stay on the device. What a repeat is, is measured by
 * copy_repeats.c: the same (address, size, content fingerprint) again, the fingerprint
 * (host_fp, taken by the collector at the copy call, docs/collector.md) telling the same data
 * from a buffer refilled with new data (a pinned staging buffer, or DataLoader's pinned
 * batches, which its caching host allocator hands out at the same addresses), and without
 * fingerprints (older traces) pageable buffers only, by address and size. Saving: every copy
 * after the first of each buffer copied at least 3 times, each at its bytes' time at the
 * pinned rate (pinned copies' in the trace, or the link's peak), at most its duration: the
 * time a pageable copy takes beyond that is pageable-copy's (or small-copies'), one owner per
 * copy ns; copy-overlap leaves the fingerprinted repeats' time to this rule, and the engine
 * caps the two together at the copies' time (rules.c). Needs host addresses (the collector's
 * callbacks).
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "analysis/stacks.h"

#include "base/banned.h"

/* The copies that can be repeats (the lines of the finding: host->device copies from a known
 * host address; copy_repeats.c tells the repeats among them). */
static int addressed_h2d(const struct apx_model *m, size_t i)
{
	const struct apx_an_copy *c = APX_VEC_AT(&m->copies, struct apx_an_copy, i);

	return c->kind == APX_COPY_H2D && c->host_addr;
}

APX_RULE_DECL(repeated_copy)
{
	struct apx_copy_repeats r;
	char b1[32], b2[32];
	struct apx_finding *f;

	if (apx_copy_repeats(m, &r) < 0)
		return APX_RULE_CLEAN;
	if (r.candidates && !r.addressed) {
		snprintf(why, why_len, "no host addresses of copies in the trace (recorded by apx "
				       "analyze's collector)");
		return APX_RULE_NOT_MEASURED;
	}
	if (!r.buffers || (m->steady_ns && r.saving_ns < 0.01 * (double)m->steady_ns))
		return APX_RULE_CLEAN;
	f = apx_finding_add(out, m, "repeated-copy", APX_SEV_WARNING, r.saving_ns, 70);
	if (!f)
		return APX_RULE_FIRED;
	f->copy_ns = r.saving_ns;	/* copies not made: not there for copy-overlap to hide */
	snprintf(f->title, sizeof(f->title), "%llu host buffers copied to the device %llu extra times",
		 (unsigned long long)r.buffers, (unsigned long long)r.repeats);
	snprintf(f->model, sizeof(f->model),
		 "a buffer copied N times needs one copy if kept on the device: saving = the other "
		 "N-1 copies at %.1f GB/s (the pinned rate; their time beyond it is pageable "
		 "memory's)", r.rate_bps / 1e9);
	apx_text_append(f->evidence, sizeof(f->evidence), "repeated bytes: %s in %llu copies\n",
			apx_fmt_size(b1, sizeof(b1), (double)r.rep_bytes),
			(unsigned long long)r.repeats);
	apx_text_append(f->evidence, sizeof(f->evidence), "largest: one %s buffer copied %llu times\n",
			apx_fmt_size(b2, sizeof(b2), (double)r.best_bytes),
			(unsigned long long)r.best_n);
	if (r.fp_repeats)	/* the collector sampled the bytes at each copy call */
		apx_text_append(f->evidence, sizeof(f->evidence),
				"same data: %llu repeats with the content fingerprint of the "
				"buffer's earlier copies\n", (unsigned long long)r.fp_repeats);
	apx_finding_metric(f, "buffers", (double)r.buffers, APX_UNIT_COUNT);
	apx_finding_metric(f, "repeats", (double)r.repeats, APX_UNIT_COUNT);
	apx_finding_metric(f, "repeated_bytes", (double)r.rep_bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "largest_bytes", (double)r.best_bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "largest_copies", (double)r.best_n, APX_UNIT_COUNT);
	if (r.fp_repeats)	/* with fingerprints only: older traces' metrics stay */
		apx_finding_metric(f, "same_fp_repeats", (double)r.fp_repeats, APX_UNIT_COUNT);
	snprintf(f->fix, sizeof(f->fix),
		 "Move constant data to the device once, outside the loop:\n"
		 "  weights_gpu = weights.to('cuda')     # before the loop\n"
		 "  for batch in loader: out = model(batch, weights_gpu)\n"
		 "or register it as a buffer of the module (self.register_buffer(...)) and call "
		 "model.to('cuda').");
	apx_lines_of_copies(m, f, addressed_h2d);
	return APX_RULE_FIRED;
}
