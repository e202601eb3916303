/*
 * rule_redundant_replication.c - the same data resident in host and device memory: a host
 * buffer copied to the GPU once (or twice: not a staging buffer reused every step), whose
 * host copy stays allocated while a device allocation of the same size holds the copy. The
 * program pays the memory twice: `X_gpu = X.cuda()` with X still referenced, a state_dict
 * kept after load_state_dict() and .cuda(), a dataset pinned whole and copied over.
 *
 * Evidence that the host copy stays: for pinned memory, its allocation (MEMORY record) is
 * never freed after the copy; for pageable memory, the record of the malloc that holds it
 * (apx analyze records every host allocation of 1 MiB or more and its free by default,
 * --heap-large-bytes) is not freed by the end of the GPU work; without one, the process's
 * resident set (CPU samples) does not shrink by the buffer's size after the copy, up to the end
 * of the GPU work (exit teardown left out; with no sample before the copy or none after it by
 * then, the check says it was not measured). The resident set judges buffers of MIN_BYTES or
 * more only: glibc serves those with mmap and returns them to the system on free (its mmap
 * threshold never exceeds 32 MiB on 64-bit), while a smaller freed buffer may stay in its heap
 * (once a 16 MiB block has been freed, glibc serves the next ones from the heap: 64 of them
 * freed left the RSS where it was with the build machine's torch 1.13, though on the H100
 * machine's torch 2.11 the same program's RSS fell: it depends on what came before). So
 * buffers from
 * HEAP_MIN_BYTES up are judged only by their allocation records, and pinned buffers from
 * MIN_BYTES. The device copy: a device allocation made before the copy ended, of the buffer's
 * size up to the caching allocator's rounding (2 MiB, or an eighth for reused blocks), never
 * freed, one for each host buffer: when more kept host buffers were copied than such device
 * allocations exist, the device buffers are reused (data streamed through them), not replicas,
 * and the rule is silent. It fires when MIN_BYTES or more are held twice in all (a state dict
 * of many tensors as one of a single large one). A buffer copied twice is judged by its last
 * copy: the same address may hold other data by then (a module's CPU weights moved by
 * .to('cuda') and freed, a checkpoint loaded into the memory they left, copied again by
 * load_state_dict and kept).
 *
 * A memory cost, not a speed-up: saving 0, the bytes held twice in the evidence.
 */
#include "analysis/findings.h"
#include "analysis/heap.h"
#include "analysis/stacks.h"
#include "analysis/store.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/banned.h"

#define MIN_BYTES (32ull << 20)
#define HEAP_MIN_BYTES (1ull << 20)	/* judged by allocation records (apx analyze's default
					 * --heap-large-bytes) */
#define MAX_COPIES 2		/* copied more often: a staging buffer (pageable-copy's business) */
#define TOP 4

static const struct apx_an_copy *copies_sorted;
static const uint8_t *held_copy;	/* per copy: the last copy of a buffer held twice (1),
					 * judged by its malloc's record (2) */

static int is_held(const struct apx_model *m, size_t i)
{
	(void)m;
	return held_copy[i];
}

static int cmp_buffer(const void *a, const void *b)
{
	const struct apx_an_copy *x = &copies_sorted[*(const uint32_t *)a];
	const struct apx_an_copy *y = &copies_sorted[*(const uint32_t *)b];

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->host_addr != y->host_addr)
		return x->host_addr < y->host_addr ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Whether the allocation e is freed after it was made (the events are sorted by time). */
static int freed_later(const struct apx_model *m, size_t at)
{
	const struct apx_an_mem_event *a = APX_VEC_AT(&m->mem_events, struct apx_an_mem_event, at);

	for (size_t i = at + 1; i < m->mem_events.n; i++) {
		const struct apx_an_mem_event *e = APX_VEC_AT(&m->mem_events, struct apx_an_mem_event, i);

		if (e->op == APX_MEMOP_FREE && e->addr == a->addr && e->kind == a->kind &&
		    e->file == a->file)
			return 1;
		if (e->op == APX_MEMOP_ALLOC && e->addr == a->addr && e->kind == a->kind &&
		    e->file == a->file)
			return 1;	/* the address given out again: it was freed unseen */
	}
	return 0;
}

/* A pinned allocation holding c's host range, made before c and never freed. */
static int pinned_kept(const struct apx_model *m, const struct apx_an_copy *c)
{
	for (size_t i = 0; i < m->mem_events.n; i++) {
		const struct apx_an_mem_event *e = APX_VEC_AT(&m->mem_events, struct apx_an_mem_event, i);

		if (e->ts > c->start)
			break;
		if (e->op == APX_MEMOP_ALLOC && e->kind == APX_MEM_PINNED && e->file == c->file &&
		    e->addr <= c->host_addr && c->host_addr + c->bytes <= e->addr + e->bytes)
			return !freed_later(m, i);
	}
	return 0;
}

/* The process's RSS did not drop by half of c's size after c, up to until_ns: 1; it did: 0;
 * -1 when no RSS sample comes before c or none after it by until_ns (the collector samples
 * once a flush, a second: a short run may have its samples at start and exit only). */
static int rss_kept(const struct apx_model *m, const struct apx_an_copy *c, uint64_t until_ns)
{
	uint64_t before = 0, before_ts = 0, after = UINT64_MAX, end = c->start + c->dur;

	for (size_t i = 0; i < m->cpu.n; i++) {
		const struct apx_an_cpu *s = APX_VEC_AT(&m->cpu, struct apx_an_cpu, i);

		if (s->file != c->file || s->tid || !s->rss)
			continue;
		if (s->ts <= c->start && s->ts >= before_ts) {
			before = s->rss;
			before_ts = s->ts;
		} else if (s->ts > end && s->ts <= until_ns && s->rss < after)
			after = s->rss;
	}
	if (!before || after == UINT64_MAX)
		return -1;
	return after + c->bytes / 2 >= before;
}

/* A device allocation that can hold c's copy (not used[] yet), alive to the end. */
static long device_copy(const struct apx_model *m, const struct apx_an_copy *c, const uint8_t *used)
{
	uint64_t slack = c->bytes / 8 > (2ull << 20) ? c->bytes / 8 : 2ull << 20;

	for (size_t i = 0; i < m->mem_events.n; i++) {
		const struct apx_an_mem_event *e = APX_VEC_AT(&m->mem_events, struct apx_an_mem_event, i);

		if (e->ts > c->start + c->dur)
			break;
		if (e->op == APX_MEMOP_ALLOC && e->kind == APX_MEM_DEVICE && !used[i] &&
		    e->file == c->file && e->bytes >= c->bytes && e->bytes <= c->bytes + slack &&
		    !freed_later(m, i))
			return (long)i;
	}
	return -1;
}

/* A host->device copy the rule judges: pinned or pageable from MIN_BYTES, pageable from
 * HEAP_MIN_BYTES when the trace has large allocations' records (else nothing could judge it). */
static int candidate(const struct apx_model *m, const struct apx_an_copy *c)
{
	if (c->kind != APX_COPY_H2D || !c->host_addr)
		return 0;
	return c->bytes >= MIN_BYTES ||
	       (c->bytes >= HEAP_MIN_BYTES && c->src == APX_MEM_PAGEABLE && m->heap.large);
}

/* One evidence line: the Python line that made most of the held buffers' bytes, by their
 * malloc's record (the large allocations' Python stacks), with how many and how much. */
struct made {
	uint32_t line;
	uint64_t bytes;
};

static int cmp_made(const void *a, const void *b)
{
	const struct made *x = a, *y = b;

	return x->line < y->line ? -1 : x->line > y->line;
}

static void made_at(const struct apx_model *m, struct apx_finding *f, const uint8_t *held)
{
	const struct apx_an_copy *cp = m->copies.data;
	uint64_t best_bytes = 0, best_n = 0;
	uint32_t best = UINT32_MAX;
	struct made *v;
	size_t n = 0;
	char b1[32];

	if (!m->has_stacks || !m->heap.large)
		return;
	for (size_t i = 0; i < m->copies.n; i++)
		n += held[i];
	if (!n || !(v = malloc(n * sizeof(*v))))
		return;
	n = 0;
	for (size_t i = 0; i < m->copies.n; i++) {
		const struct apx_an_heap_rec *h;
		uint32_t line;

		if (held[i] == 2 && (h = apx_heap_host_record(m, cp[i].file, cp[i].host_addr, cp[i].bytes,
							  cp[i].start)) &&
		    (line = apx_stack_line(m, h->stack)) != UINT32_MAX)
			v[n++] = (struct made){ line, cp[i].bytes };
	}
	qsort(v, n, sizeof(*v), cmp_made);
	for (size_t a = 0, b; a < n; a = b) {
		uint64_t bytes = 0;

		for (b = a; b < n && v[b].line == v[a].line; b++)
			bytes += v[b].bytes;
		if (bytes > best_bytes) {
			best = v[a].line;
			best_bytes = bytes;
			best_n = b - a;
		}
	}
	free(v);
	if (best == UINT32_MAX)
		return;
	{
		const struct apx_an_line *ln = APX_VEC_AT(&m->lines, struct apx_an_line, best);
		struct apx_es_text file = apx_store_string(m->store, ln->file);
		struct apx_es_text func = apx_store_string(m->store, ln->func);

		apx_text_append(f->evidence, sizeof(f->evidence),
				"made at `%.*s` in %.*s:%u: %llu of them, %s\n",
				(int)(func.len > 60 ? 60 : func.len), func.p,
				(int)(file.len > 120 ? 120 : file.len), file.p, ln->line,
				(unsigned long long)best_n, apx_fmt_size(b1, sizeof(b1),
									 (double)best_bytes));
	}
}

APX_RULE_DECL(redundant_replication)
{
	const struct apx_an_copy *cp = m->copies.data;
	const struct apx_an_copy *top[TOP] = { 0 };
	uint64_t held = 0, n = 0, pinned = 0, peak_rss = 0, until = m->gpu.last_ns, recorded = 0;
	char b1[32], b2[32], b3[32];
	struct apx_finding *f;
	uint32_t *idx;
	uint8_t *used, *held_mark;
	size_t nidx = 0, kept_n = 0, untold = 0;
	long dev;

	for (size_t i = 0; i < m->copies.n; i++)
		nidx += candidate(m, &cp[i]);
	if (!nidx)
		return APX_RULE_CLEAN;
	if (!m->mem_events.n) {
		snprintf(why, why_len, "no memory allocation records in the trace");
		return APX_RULE_NOT_MEASURED;
	}
	idx = malloc(nidx * sizeof(*idx));
	used = calloc(m->mem_events.n, 1);
	held_mark = calloc(m->copies.n, 1);
	if (!idx || !used || !held_mark) {
		free(idx);
		free(used);
		free(held_mark);
		snprintf(why, why_len, "out of memory");
		return APX_RULE_NOT_MEASURED;
	}
	nidx = 0;
	for (size_t i = 0; i < m->copies.n; i++)
		if (candidate(m, &cp[i]))
			idx[nidx++] = (uint32_t)i;
	copies_sorted = cp;
	qsort(idx, nidx, sizeof(*idx), cmp_buffer);
	for (size_t a = 0, b; a < nidx; a = b) {
		const struct apx_an_copy *c = &cp[idx[a]];
		int kept, by_record = 0;

		for (b = a + 1; b < nidx && cp[idx[b]].file == c->file &&
			       cp[idx[b]].host_addr == c->host_addr && cp[idx[b]].bytes == c->bytes; b++)
			;
		if (b - a > MAX_COPIES)
			continue;
		c = &cp[idx[b - 1]];	/* its last copy: kept after that one? */
		kept = c->src == APX_MEM_PINNED ? pinned_kept(m, c) : 0;
		if (c->src == APX_MEM_PAGEABLE) {
			kept = apx_heap_host_kept(m, c->file, c->host_addr, c->bytes, c->start, until);
			by_record = kept >= 0;
			if (kept < 0 && c->bytes >= MIN_BYTES)
				kept = rss_kept(m, c, until);
			else if (kept < 0)
				continue;	/* small, and no record: nothing can judge it */
		}
		if (kept < 0) {		/* a pageable buffer the samples cannot judge */
			untold += c->bytes;
			continue;
		}
		if (!kept)
			continue;
		recorded += by_record ? c->bytes : 0;
		kept_n++;
		if ((dev = device_copy(m, c, used)) < 0)
			continue;
		used[dev] = 1;
		held_mark[c - cp] = by_record ? 2 : 1;	/* 2: judged by its malloc's record */
		held += c->bytes;
		pinned += c->src == APX_MEM_PINNED ? c->bytes : 0;
		n++;
		for (size_t t = 0; t < TOP; t++)
			if (!top[t] || c->bytes > top[t]->bytes) {
				for (size_t u = TOP - 1; u > t; u--)
					top[u] = top[u - 1];
				top[t] = c;
				break;
			}
	}
	free(idx);
	free(used);
	if (!n || held < MIN_BYTES || kept_n > n)
		free(held_mark);
	if (n && kept_n > n) {
		snprintf(why, why_len, "%zu host buffers of %s or more were copied into %llu device "
			 "buffers: reused for streaming, not replicas", kept_n,
			 apx_fmt_size(b1, sizeof(b1), (double)MIN_BYTES), (unsigned long long)n);
		return APX_RULE_CLEAN;
	}
	if (!n && untold) {
		snprintf(why, why_len, "%s copied from pageable memory to the GPU, but no RSS sample "
			 "between the copy and the end of the GPU work tells whether the host copy "
			 "was kept", apx_fmt_size(b1, sizeof(b1), (double)untold));
		return APX_RULE_NOT_MEASURED;
	}
	if (!n)
		return APX_RULE_CLEAN;
	if (held < MIN_BYTES) {
		snprintf(why, why_len, "%s of host buffers copied to the GPU and kept: under %s",
			 apx_fmt_size(b1, sizeof(b1), (double)held),
			 apx_fmt_size(b2, sizeof(b2), (double)MIN_BYTES));
		return APX_RULE_CLEAN;
	}
	for (size_t i = 0; i < m->cpu.n; i++) {
		const struct apx_an_cpu *s = APX_VEC_AT(&m->cpu, struct apx_an_cpu, i);

		if (s->peak > peak_rss)
			peak_rss = s->peak;
	}
	f = apx_finding_add(out, m, "redundant-replication",
			    held >= (1ull << 30) || (peak_rss && held * 10 >= peak_rss)
				    ? APX_SEV_WARNING : APX_SEV_INFO, 0, pinned == held ? 70 : 55);
	if (!f) {
		free(held_mark);
		return APX_RULE_FIRED;
	}
	snprintf(f->title, sizeof(f->title), "%s held twice: in host memory and on the GPU",
		 apx_fmt_size(b1, sizeof(b1), (double)held));
	snprintf(f->model, sizeof(f->model), "a memory cost, not a speed-up: the host copies of "
		 "data the GPU holds");
	if (pinned)
		apx_text_append(f->model, sizeof(f->model), " (%s of them pinned)",
				apx_fmt_size(b2, sizeof(b2), (double)pinned));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"%llu host buffer%s copied to the GPU and kept, %s in all%s%s\n",
			(unsigned long long)n, n > 1 ? "s" : "", apx_fmt_size(b1, sizeof(b1), (double)held),
			peak_rss ? "; process peak RSS " : "",
			peak_rss ? apx_fmt_size(b3, sizeof(b3), (double)peak_rss) : "");
	for (size_t t = 0; t < TOP && top[t]; t++)
		apx_text_append(f->evidence, sizeof(f->evidence),
				"  %s %s (0x%llx), copied at %s: %s\n",
				apx_fmt_size(b1, sizeof(b1), (double)top[t]->bytes),
				top[t]->src == APX_MEM_PINNED ? "pinned" : "pageable",
				(unsigned long long)top[t]->host_addr,
				apx_fmt_ns(b2, sizeof(b2), (double)(top[t]->start - m->run_start_ns)),
				top[t]->src == APX_MEM_PINNED ? "never freed"
				: held_mark[top[t] - cp] == 2 ? "its malloc never freed"
				: "RSS did not drop");
	apx_finding_metric(f, "held_bytes", (double)held, APX_UNIT_BYTES);
	apx_finding_metric(f, "pinned_bytes", (double)pinned, APX_UNIT_BYTES);
	apx_finding_metric(f, "buffers", (double)n, APX_UNIT_COUNT);
	apx_finding_metric(f, "peak_rss_bytes", (double)peak_rss, APX_UNIT_BYTES);
	apx_finding_metric(f, "recorded_bytes", (double)recorded, APX_UNIT_BYTES);
	made_at(m, f, held_mark);	/* where they were made (the mallocs' stacks) */
	held_copy = held_mark;		/* the lines that copied them (the copy calls' stacks) */
	apx_lines_of_copies(m, f, is_held);
	free(held_mark);
	snprintf(f->fix, sizeof(f->fix),
		 "Keep one copy: drop the host tensor once it is on the GPU,\n"
		 "  x_gpu = x.to('cuda'); del x        # and any list or dict that refers to it\n"
		 "  model.load_state_dict(sd); del sd  # a state_dict kept after loading\n"
		 "or make it on the device: torch.load(f, map_location='cuda'),\n"
		 "  torch.randn(..., device='cuda')\n"
		 "and pin_memory() only small staging buffers, not whole datasets.");
	return APX_RULE_FIRED;
}
