/*
 * test-heap-view.c - the heap view (lib/analysis/heap.c) and the report's heap section
 * (lib/report/build_heap.c) on synthetic traces written here with the format writer: the
 * estimator, frees matched by address in record order, a lost free, an untracked sample, frees
 * of no sample, Python lines before native frames and library frames folded, the leak
 * window, records of nonsense (op, ids, interval 0), and the section absent from a report of a
 * trace without heap samples. ctest unit-heap-view.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/findings.h"
#include "analysis/heap.h"
#include "analysis/store.h"
#include "apx-test.h"
#include "report/doc.h"
#include "unit/reported.h"

#include "base/banned.h"

#define T0 1000000000000ull		/* the header's start */
static struct apx_findings g_fd;	/* large: not on the stack */
#define MS 1000000ull

struct gen {
	char path[64];
	struct apx_writer *w;
};

static int gen_open(struct gen *g)
{
	struct apx_rec h;
	int fd;

	snprintf(g->path, sizeof(g->path), "/tmp/apx-heap-view-XXXXXX");
	fd = mkstemp(g->path);
	if (fd < 0)
		return -1;
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "test-heap-view");
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = 42;
	h.v[APX_HEADER_START_NS] = T0;
	return apx_writer_open_fd(fd, &h, NULL, &g->w);
}

static uint32_t str(struct gen *g, const char *s)
{
	uint32_t id = 0;

	(void)apx_writer_intern(g->w, s, strlen(s), &id);
	return id;
}

static void frame(struct gen *g, uint32_t id, unsigned kind, const char *file, const char *func,
		  uint32_t line)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_FRAME);
	r.v[APX_FRAME_ID] = id;
	r.v[APX_FRAME_KIND] = kind;
	r.v[APX_FRAME_FILE] = str(g, file);
	r.v[APX_FRAME_FUNC] = str(g, func);
	r.v[APX_FRAME_LINE] = line;
	r.v[APX_FRAME_ADDRESS] = kind == APX_FRAME_NATIVE ? 0x1234 : 0;
	(void)apx_writer_add(g->w, &r);
}

static void stack(struct gen *g, uint32_t id, const uint8_t *frames, size_t n)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_STACK);
	r.v[APX_STACK_ID] = id;
	apx_rec_set_bytes(&r, APX_STACK_FRAMES, frames, n);
	(void)apx_writer_add(g->w, &r);
}

static void heap(struct gen *g, uint64_t ts, unsigned op, uint64_t addr, uint64_t bytes,
		 uint64_t interval, uint32_t pystack, uint32_t nstack, unsigned flags)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_HEAP);
	r.v[APX_HEAP_TS_NS] = ts;
	r.v[APX_HEAP_OP] = op;
	r.v[APX_HEAP_ADDRESS] = addr;
	r.v[APX_HEAP_BYTES] = bytes;
	r.v[APX_HEAP_INTERVAL_BYTES] = interval;
	r.v[APX_HEAP_TID] = 42;
	r.v[APX_HEAP_STACK] = pystack;
	r.v[APX_HEAP_NATIVE_STACK] = nstack;
	r.v[APX_HEAP_FLAGS] = flags;
	(void)apx_writer_add(g->w, &r);
}

/* Close the trace and build its model (leak window: the model's heap.leak* as given). */
static struct apx_model *gen_model(struct gen *g, const struct apx_an_heap *leak, int frames_all)
{
	struct apx_model *m;
	struct apx_diag d;

	if (apx_writer_close(g->w, T0 + 10000 * MS, 0) < 0)
		return NULL;
	m = apx_model_new();
	if (!m || apx_model_add_file(m, g->path, &d) < 0) {
		apx_model_free(m);
		unlink(g->path);
		return NULL;
	}
	m->frames_all = frames_all;
	if (leak) {
		m->heap.leak = leak->leak;
		m->heap.leak_has_from = leak->leak_has_from;
		m->heap.leak_has_to = leak->leak_has_to;
		m->heap.leak_from_ns = leak->leak_from_ns;
		m->heap.leak_to_ns = leak->leak_to_ns;
	}
	if (apx_model_finish(m) < 0) {
		apx_model_free(m);
		m = NULL;
	}
	unlink(g->path);
	return m;
}

static const struct apx_an_heap_site *site_of_func(const struct apx_model *m, const char *func)
{
	const struct apx_store *st = m->store;

	for (size_t i = 0; i < m->heap.sites.n; i++) {
		const struct apx_an_heap_site *s =
			APX_VEC_AT(&m->heap.sites, struct apx_an_heap_site, i);
		uint32_t f = 0;
		struct apx_es_text t;

		if (s->line != UINT32_MAX)
			f = APX_VEC_AT(&m->lines, struct apx_an_line, s->line)->func;
		else if (s->frame != UINT32_MAX)
			f = st->frames[s->frame].func;
		else
			continue;
		t = apx_store_string(st, f);
		if (t.len == strlen(func) && !memcmp(t.p, func, t.len))
			return s;
	}
	return NULL;
}

static int near(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

APX_TEST(estimator)
{
	/* small: about N (plus half the size); large: the size itself */
	APX_ASSERT(near(apx_heap_est_bytes(16, 524288), 524288 + 8, 1e-6));
	APX_ASSERT(near(apx_heap_est_allocs(4096, 524288), 524288.0 / 4096 + 0.5, 1e-3));
	APX_ASSERT(near(apx_heap_est_bytes(64u << 20, 524288), 64u << 20, 1e-9));
	APX_ASSERT(near(apx_heap_est_allocs(64u << 20, 524288), 1, 1e-9));
	APX_ASSERT(apx_heap_est_bytes(0, 524288) == 0);
	/* interval 0: a large allocation, recorded every time: it stands for itself */
	APX_ASSERT(apx_heap_est_bytes(100, 0) == 100);
	APX_ASSERT(apx_heap_est_allocs(100, 0) == 1);
	APX_ASSERT(apx_heap_object_is_user("/home/u/prog", 12));
	APX_ASSERT(!apx_heap_object_is_user("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so", 41));
	APX_ASSERT(!apx_heap_object_is_user("/usr/bin/python3.11", 19));
	APX_ASSERT(apx_heap_object_is_allocator("/lib/x86_64-linux-gnu/libc.so.6", 31));
	APX_ASSERT(apx_heap_object_is_allocator("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 40));
	APX_ASSERT(!apx_heap_object_is_allocator("/home/u/prog", 12));
	return 0;
}

/*
 * Frames: 1 libc malloc, 2 libstdc++ operator new, 3 prog's leaky(), 4 prog's churn(),
 * 5 libtorch, 6 data.py:12 load (Python, user), 7 site-packages torch (Python, library).
 * Stacks: 1 = [1, 3] native to leaky; 2 = [1, 2, 4] native to churn through new;
 * 3 = [1, 5] native in libtorch only; 4 = [7, 6] Python, user line load; 5 = [7] Python,
 * library only.
 */
static void stacks(struct gen *g)
{
	static const uint8_t s1[] = { 1, 3 }, s2[] = { 1, 2, 4 }, s3[] = { 1, 5 }, s4[] = { 7, 6 },
			     s5[] = { 7 };

	frame(g, 1, APX_FRAME_NATIVE, "/lib/x86_64-linux-gnu/libc.so.6", "malloc", 0);
	frame(g, 2, APX_FRAME_NATIVE, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "_Znwm", 0);
	frame(g, 3, APX_FRAME_NATIVE, "/home/u/prog", "leaky", 0);
	frame(g, 4, APX_FRAME_NATIVE, "/home/u/prog", "churn", 0);
	frame(g, 5, APX_FRAME_NATIVE, "/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so",
	      "", 0);
	frame(g, 6, APX_FRAME_PYTHON, "/home/u/data.py", "load", 12);
	frame(g, 7, APX_FRAME_PYTHON, "/usr/lib/python3/dist-packages/torch/nn.py", "forward", 99);
	stack(g, 1, s1, sizeof(s1));
	stack(g, 2, s2, sizeof(s2));
	stack(g, 3, s3, sizeof(s3));
	stack(g, 4, s4, sizeof(s4));
	stack(g, 5, s5, sizeof(s5));
}

APX_TEST(sites_frees_and_leaks)
{
	const uint64_t N = 1u << 20;
	struct apx_an_heap leak = { .leak = 1, .leak_has_from = 1, .leak_has_to = 1,
				    .leak_from_ns = 2000 * MS, .leak_to_ns = 4000 * MS };
	const struct apx_an_heap_site *s;
	struct apx_model *m;
	struct gen g;
	char *json, *text;

	APX_ASSERT_OK(gen_open(&g));
	stacks(&g);
	/* churn (through new, library frames folded to prog's churn): 10 samples of 4 MiB,
	 * each freed */
	for (unsigned i = 0; i < 10; i++) {
		heap(&g, T0 + (100 + i) * MS, APX_MEMOP_ALLOC, 0x1000 + i, 4u << 20, N, 0, 2, 0);
		heap(&g, T0 + (100 + i) * MS + 1, APX_MEMOP_FREE, 0x1000 + i, 0, 0, 0, 0, 0);
	}
	/* leaky: 1 MiB samples at 1 s (before the window) and 3 s (in it), never freed */
	for (unsigned i = 0; i < 4; i++)
		heap(&g, T0 + 1000 * MS + i, APX_MEMOP_ALLOC, 0x2000 + i, 8u << 20, N, 0, 1, 0);
	for (unsigned i = 0; i < 6; i++)
		heap(&g, T0 + 3000 * MS + i, APX_MEMOP_ALLOC, 0x3000 + i, 8u << 20, N, 0, 1, 0);
	/* a Python line with a libtorch native stack: the Python line (user) wins; one freed
	 * after the window's end (live at its end: leaked in the window), one before */
	heap(&g, T0 + 2500 * MS, APX_MEMOP_ALLOC, 0x4000, 2u << 20, N, 4, 3, 0);
	heap(&g, T0 + 2600 * MS, APX_MEMOP_ALLOC, 0x4001, 2u << 20, N, 4, 3, 0);
	heap(&g, T0 + 3500 * MS, APX_MEMOP_FREE, 0x4001, 0, 0, 0, 0, 0);
	heap(&g, T0 + 5000 * MS, APX_MEMOP_FREE, 0x4000, 0, 0, 0, 0, 0);
	/* a library-only Python stack with a library-only native one: the Python line */
	heap(&g, T0 + 2700 * MS, APX_MEMOP_ALLOC, 0x5000, 16, N, 5, 3, 0);
	/* the same address sampled again while live (its free lost), then freed */
	heap(&g, T0 + 2800 * MS, APX_MEMOP_ALLOC, 0x6000, 1u << 20, N, 0, 2, 0);
	heap(&g, T0 + 2900 * MS, APX_MEMOP_ALLOC, 0x6000, 1u << 20, N, 0, 2, 0);
	heap(&g, T0 + 2950 * MS, APX_MEMOP_FREE, 0x6000, 0, 0, 0, 0, 0);
	/* untracked: never live; a free of no sample; nonsense records */
	heap(&g, T0 + 3000 * MS, APX_MEMOP_ALLOC, 0x7000, 8u << 20, N, 0, 1, APX_HEAPF_UNTRACKED);
	heap(&g, T0 + 3100 * MS, APX_MEMOP_FREE, 0x7777, 0, 0, 0, 0, 0);
	heap(&g, T0 + 3200 * MS, 9, 0x8000, 1, N, 0, 0, 0);		/* unknown op: skipped */
	/* no interval, stacks no record defines */
	heap(&g, T0 + 3300 * MS, APX_MEMOP_ALLOC, 0x9000, 100, 0, 999, 12345, 0);
	m = gen_model(&g, &leak, 0);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->heap.samples, 10 + 10 + 2 + 1 + 2 + 1 + 1);
	APX_ASSERT_EQ(m->heap.frees, 10 + 2 + 1);
	APX_ASSERT_EQ(m->heap.frees_missed, 1);
	APX_ASSERT_EQ(m->heap.frees_unmatched, 1);
	APX_ASSERT_EQ(m->heap.untracked, 1);
	APX_ASSERT_EQ(m->heap.interval_min, N);
	/* churn: 40 MiB allocated (samples of 4 MiB stand for a bit more), none live */
	s = site_of_func(m, "churn");
	APX_ASSERT(s && s->user && s->samples == 12 && s->live_samples == 0);
	APX_ASSERT(near(s->bytes, 40.0 * (1 << 20) * 1.0187 + 2 * 1.58 * (1 << 20), 0.02));
	/* leaky: 10 live samples of 8 MiB plus the untracked one; the window holds the 6 of 3 s */
	s = site_of_func(m, "leaky");
	APX_ASSERT(s && s->user && s->samples == 11 && s->live_samples == 10);
	APX_ASSERT_EQ(s->leak_samples, 6);
	/* the Python line: 2 samples, one leaked in the window (freed after it) */
	s = site_of_func(m, "load");
	APX_ASSERT(s && s->user && s->line != UINT32_MAX && s->samples == 2);
	APX_ASSERT_EQ(s->leak_samples, 1);
	APX_ASSERT_EQ(s->live_samples, 0);
	/* the library-only Python stack stays its (library) line */
	s = site_of_func(m, "forward");
	APX_ASSERT(s && !s->user && s->samples == 1 && near(s->bytes, (double)N + 8, 1e-3));
	/* sites: user code first, by bytes: leaky (88 MiB), churn, load */
	s = APX_VEC_AT(&m->heap.sites, struct apx_an_heap_site, 0);
	APX_ASSERT(s == site_of_func(m, "leaky"));
	APX_ASSERT(m->heap.leak_start_ns == T0 + 2000 * MS);
	APX_ASSERT(m->heap.leak_end_ns == T0 + 4000 * MS);
	json = tg_report(m, NULL, 1u << APX_SEC_HEAP, 1);
	APX_ASSERT(json);
	if (getenv("HEAP_VIEW_DEBUG"))
		fputs(json, stderr);
	APX_ASSERT(strstr(json, "\"heap\":{\"interval_bytes\":1048576") &&
		   strstr(json, "\"sites\":[{\"file\":\"/home/u/prog\",\"line\":null,"
				"\"func\":\"leaky\"") &&
		   strstr(json, "\"leak_sites\":[{\"file\":\"/home/u/prog\""));
	APX_ASSERT(strstr(json, "\"leak_samples\":9"));
	free(json);
	text = tg_report(m, NULL, 1u << APX_SEC_HEAP, 0);
	APX_ASSERT(text);
	APX_ASSERT(strstr(text, "Host heap") && strstr(text, "leaky (prog)") &&
		   strstr(text, "data.py:12 load") && strstr(text, "leak view 2.000 .. 4.000 s"));
	APX_ASSERT(strstr(text, "libtorch_cpu.so") == NULL);	/* folded */
	free(text);
	apx_model_free(m);
	return 0;
}

APX_TEST(frames_all_and_no_leak_window)
{
	const uint64_t N = 1u << 16;
	struct apx_model *m;
	struct gen g;
	char *text;

	APX_ASSERT_OK(gen_open(&g));
	stacks(&g);
	heap(&g, T0 + 10 * MS, APX_MEMOP_ALLOC, 0x1000, 100, N, 0, 2, 0);
	heap(&g, T0 + 20 * MS, APX_MEMOP_ALLOC, 0x2000, 100, N, 0, 3, 0);
	m = gen_model(&g, NULL, 1);
	APX_ASSERT(m);
	/* innermost frames: libc's malloc for both */
	APX_ASSERT(site_of_func(m, "malloc") && m->heap.sites.n == 1);
	text = tg_report(m, NULL, 1u << APX_SEC_HEAP, 0);
	APX_ASSERT(text && strstr(text, "--heap-leak FROM:TO"));
	free(text);
	apx_model_free(m);
	return 0;
}

APX_TEST(no_samples_no_section)
{
	struct apx_model *m;
	struct gen g;
	char *text, *json;

	APX_ASSERT_OK(gen_open(&g));
	m = gen_model(&g, NULL, 0);
	APX_ASSERT(m && !m->heap.sites.n);
	apx_rules_run(m, &g_fd);
	/* every section: the heap section is left out ... */
	text = tg_report(m, &g_fd, 0, 0);
	json = tg_report(m, &g_fd, 0, 1);
	APX_ASSERT(text && json && !strstr(text, "Host heap") && !strstr(json, "\"heap\""));
	free(text);
	free(json);
	/* ... asked for by name, it says why it is empty */
	text = tg_report(m, NULL, 1u << APX_SEC_HEAP, 0);
	APX_ASSERT(text && strstr(text, "no heap samples"));
	free(text);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
