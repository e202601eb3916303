/*
 * rule_memory_capacity.c - device memory near capacity (peak of the allocations recorded
 * above 90% of the device's memory: the next larger batch fails), allocation calls that
 * failed (out of memory, recorded by the collector's allocation callbacks), and excessive
 * pinned host memory (page-locked memory cannot be swapped). A risk, not a speed-up: saving 0.
 * With Python stacks each finding names its line: the largest device (pinned) allocation's,
 * the first failed call's (allocs.c). The same rule on the device memory NVML saw a process's
 * GPU reach is obs_memory_capacity.c (nvperfd).
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "analysis/stacks.h"
#include "analysis/store.h"

#include "base/banned.h"

/* The largest allocation of a kind over every device (m->allocs: most bytes first per
 * device and kind), NULL none. */
static const struct apx_an_alloc *largest(const struct apx_model *m, unsigned kind)
{
	const struct apx_an_alloc *best = NULL;

	for (size_t i = 0; i < m->allocs.n; i++) {
		const struct apx_an_alloc *a = APX_VEC_AT(&m->allocs, struct apx_an_alloc, i);

		if (a->kind == kind && (!best || a->bytes > best->bytes))
			best = a;
	}
	return best;
}

/* An allocation's line into the finding (its lines, an evidence line "<what> (size): `func`
 * in path:12", and for the first the title's end "; <title_what> `func` in file.py:12").
 * Nothing when it has no line. */
static void name_line(const struct apx_model *m, struct apx_finding *f,
		      const struct apx_an_alloc *a, const char *what, const char *title_what)
{
	const struct apx_an_line *ln;
	struct apx_es_text file, func;
	const char *base;
	uint32_t blen;
	char b1[32];
	size_t len;

	if (!a || a->line == UINT32_MAX || a->line >= m->lines.n || !m->store ||
	    f->nlines >= APX_FINDING_LINES_MAX)
		return;
	ln = APX_VEC_AT(&m->lines, struct apx_an_line, a->line);
	file = apx_store_string(m->store, ln->file);
	func = apx_store_string(m->store, ln->func);
	f->lines[f->nlines++] = (struct apx_finding_line){ file.p, func.p, file.len, func.len,
							    ln->line, 1, 0, NULL, "", 0, 0 };
	apx_text_append(f->evidence, sizeof(f->evidence), "%s (%s): `%.*s` in %.*s:%u\n", what,
			apx_fmt_size(b1, sizeof(b1), (double)a->bytes),
			(int)(func.len > 60 ? 60 : func.len), func.p,
			(int)(file.len > 120 ? 120 : file.len), file.p, ln->line);
	for (blen = file.len, base = file.p + file.len; blen && base[-1] != '/'; blen--)
		base--;
	blen = file.len - blen;
	len = strlen(f->title);
	if (f->nlines == 1 && len < sizeof(f->title))
		snprintf(f->title + len, sizeof(f->title) - len, "; %s `%.*s` in %.*s:%u", title_what,
			 (int)(func.len > 40 ? 40 : func.len), func.p, (int)(blen > 40 ? 40 : blen),
			 base, ln->line);
}

/* Allocation calls that failed (out of memory): one finding, the first failure's line. */
static int failed_allocs(const struct apx_model *m, struct apx_findings *out)
{
	const struct apx_an_alloc *a = APX_VEC_AT(&m->allocs_failed, struct apx_an_alloc, 0);
	const char *err = apx_cuda_error_name(a->error);
	struct apx_finding *f;
	char b1[32], b2[32];

	f = apx_finding_add(out, m, "memory-capacity", APX_SEV_WARNING, 0, 95);
	if (!f)
		return 0;
	if (m->allocs_failed_n == 1)
		snprintf(f->title, sizeof(f->title), "an allocation of %s on device %u failed (%s)",
			 apx_fmt_size(b1, sizeof(b1), (double)a->bytes), a->device,
			 a->error == 2 ? "out of memory" : err ? err : "CUDA error");
	else
		snprintf(f->title, sizeof(f->title), "%llu allocation calls failed, the first of %s on "
			 "device %u (%s)", (unsigned long long)m->allocs_failed_n,
			 apx_fmt_size(b1, sizeof(b1), (double)a->bytes), a->device,
			 a->error == 2 ? "out of memory" : err ? err : "CUDA error");
	snprintf(f->model, sizeof(f->model), "a failure (the driver refused memory the program "
		 "asked for), not a speed-up");
	for (size_t i = 0; i < m->allocs_failed.n && i < 4; i++) {
		const struct apx_an_alloc *x = APX_VEC_AT(&m->allocs_failed, struct apx_an_alloc, i);
		const char *e = apx_cuda_error_name(x->error);

		apx_text_append(f->evidence, sizeof(f->evidence), "failed: %s of %s memory on device "
				"%u, %s (%u), at +%s\n",
				apx_fmt_size(b1, sizeof(b1), (double)x->bytes),
				x->kind == APX_MEM_PINNED ? "pinned host" :
				x->kind == APX_MEM_MANAGED ? "managed" : "device", x->device,
				e ? e : "CUDA error", x->error,
				apx_fmt_ns(b2, sizeof(b2), x->ts > m->run_start_ns ?
					   (double)(x->ts - m->run_start_ns) : 0));
	}
	apx_finding_metric(f, "failed_allocations", (double)m->allocs_failed_n, APX_UNIT_COUNT);
	apx_finding_metric(f, "failed_bytes", (double)a->bytes, APX_UNIT_BYTES);
	for (size_t i = 0; i < m->allocs_failed.n && f->nlines < APX_FINDING_LINES_MAX; i++) {
		const struct apx_an_alloc *x = APX_VEC_AT(&m->allocs_failed, struct apx_an_alloc, i);
		int seen = 0;

		for (size_t j = 0; j < i && !seen; j++)	/* PyTorch retries a failed cudaMalloc */
			seen = APX_VEC_AT(&m->allocs_failed, struct apx_an_alloc, j)->line == x->line;
		if (!seen)
			name_line(m, f, x, "failed allocation", "at");
	}
	snprintf(f->fix, sizeof(f->fix), "%s", apx_memory_capacity_fix);
	return 1;
}

APX_RULE_DECL(memory_capacity)
{
	uint64_t total = 0, peak_rss = 0;
	char b1[32], b2[32];
	int fired = 0;

	if (!m->mem_events.n) {
		if (m->k.n) {
			snprintf(why, why_len, "no memory allocation records in the trace");
			return APX_RULE_NOT_MEASURED;
		}
		return APX_RULE_CLEAN;
	}
	for (size_t i = 0; i < m->ndevices; i++)
		total += m->devices[i].mem_bytes;
	for (size_t i = 0; i < m->cpu.n; i++) {
		const struct apx_an_cpu *c = APX_VEC_AT(&m->cpu, struct apx_an_cpu, i);

		if (c->peak > peak_rss)
			peak_rss = c->peak;
	}
	if (total && (double)m->device_mem_peak > 0.9 * (double)total) {
		struct apx_finding *f = apx_finding_add(out, m, "memory-capacity", APX_SEV_WARNING, 0, 90);

		if (f) {
			snprintf(f->title, sizeof(f->title), "device memory peaked at %.0f%% of capacity",
				 100.0 * (double)m->device_mem_peak / (double)total);
			snprintf(f->model, sizeof(f->model), "a risk (out of memory), not a speed-up");
			apx_text_append(f->evidence, sizeof(f->evidence),
					"peak allocated %s of %s (allocations by the CUDA caching "
					"allocator: reserved memory)\n",
					apx_fmt_size(b1, sizeof(b1), (double)m->device_mem_peak),
					apx_fmt_size(b2, sizeof(b2), (double)total));
			apx_finding_metric(f, "peak_bytes", (double)m->device_mem_peak, APX_UNIT_BYTES);
			apx_finding_metric(f, "capacity_bytes", (double)total, APX_UNIT_BYTES);
			name_line(m, f, largest(m, APX_MEM_DEVICE), "largest allocation",
				  "largest allocation");
			snprintf(f->fix, sizeof(f->fix), "%s", apx_memory_capacity_fix);
			fired = 1;
		}
	}
	if (m->allocs_failed.n && failed_allocs(m, out))
		fired = 1;
	/* pinned memory: over 8 GB, or over half the process's peak RSS and over 4 GB */
	if (m->pinned_peak > (8ull << 30) || (peak_rss && m->pinned_peak > peak_rss / 2 &&
					      m->pinned_peak > (4ull << 30))) {
		struct apx_finding *f = apx_finding_add(out, m, "memory-capacity", APX_SEV_INFO, 0, 70);

		if (f) {
			snprintf(f->title, sizeof(f->title), "%s of pinned host memory",
				 apx_fmt_size(b1, sizeof(b1), (double)m->pinned_peak));
			snprintf(f->model, sizeof(f->model), "a risk (host memory pressure), not a speed-up");
			apx_text_append(f->evidence, sizeof(f->evidence),
					"pinned peak %s in %llu allocations; process peak RSS %s\n",
					apx_fmt_size(b1, sizeof(b1), (double)m->pinned_peak),
					(unsigned long long)m->pinned_allocs,
					peak_rss ? apx_fmt_size(b2, sizeof(b2), (double)peak_rss) : "n/a");
			apx_finding_metric(f, "pinned_peak_bytes", (double)m->pinned_peak, APX_UNIT_BYTES);
			apx_finding_metric(f, "pinned_allocations", (double)m->pinned_allocs, APX_UNIT_COUNT);
			if (peak_rss)
				apx_finding_metric(f, "peak_rss_bytes", (double)peak_rss, APX_UNIT_BYTES);
			name_line(m, f, largest(m, APX_MEM_PINNED), "largest pinned allocation",
				  "largest pinned allocation");
			snprintf(f->fix, sizeof(f->fix),
				 "Pin only the staging buffers you copy from (a few batches), not whole "
				 "datasets;\nreuse pinned buffers instead of calling .pin_memory() per batch.");
			fired = 1;
		}
	}
	return fired ? APX_RULE_FIRED : APX_RULE_CLEAN;
}
