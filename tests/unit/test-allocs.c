/*
 * test-allocs.c - unit tests of the allocations the memory section names
 * (lib/analysis/allocs.c, lib/report/build_allocs.c): synthetic traces whose MEMORY records
 * carry Python stacks (the collector's stack/tid fields) and allocation calls that failed
 * (op ALLOC_FAILED): the largest allocations per device and kind with their user lines
 * (library frames folded), every failed one with its error and line, the memory-capacity
 * finding naming the line, the text, JSON and HTML reports showing them, and traces written
 * before those fields (a committed real trace) still reported, without lines. ctest
 * unit-allocs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/findings.h"
#include "analysis/model.h"
#include "analysis/stacks.h"
#include "analysis/store.h"
#include "apx-test.h"
#include "report/doc.h"
#include "unit/analysed.h"
#include "unit/reported.h"

#include "base/banned.h"

#define MS 1000000ull
#define GIB (1ull << 30)
#define MIB (1ull << 20)

static struct apx_findings fd;

static struct apx_model *model_of(struct tg *t)
{
	struct apx_model *m = apx_model_new();

	if (!m || tg_close(t) < 0 || apx_model_add_file(m, t->path, NULL) < 0)
		goto fail;
	if (apx_model_finish(m) < 0)
		goto fail;
	unlink(t->path);
	memset(&fd, 0, sizeof(fd));
	apx_rules_run(m, &fd);
	return m;
fail:
	unlink(t->path);
	apx_model_free(m);
	return NULL;
}

/* A MEMORY record as the collector writes it: stack, thread; a failed call (op
 * ALLOC_FAILED) has bytes 0 and the size asked for in requested_bytes. */
static void mem(struct tg *t, uint64_t ts, unsigned op, unsigned kind, uint64_t bytes,
		uint32_t device, uint64_t stack, uint32_t error)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_MEMORY);
	r.v[APX_MEMORY_TS_NS] = ts;
	r.v[APX_MEMORY_OP] = op;
	r.v[APX_MEMORY_MEM_KIND] = kind;
	r.v[APX_MEMORY_DEVICE] = device;
	r.v[APX_MEMORY_ADDRESS] = op == APX_MEMOP_ALLOC_FAILED ? 0 : 0x7f0000000000ull + ts;
	if (op == APX_MEMOP_ALLOC_FAILED)
		r.v[APX_MEMORY_REQUESTED_BYTES] = bytes;
	else
		r.v[APX_MEMORY_BYTES] = bytes;
	r.v[APX_MEMORY_STACK] = stack;
	r.v[APX_MEMORY_TID] = stack ? 100 : 0;
	r.v[APX_MEMORY_ERROR] = error;
	apx_writer_add(t->w, &r);
	if (ts > t->end_ns)
		t->end_ns = ts;
}

#define LIB "/usr/lib/python3/dist-packages/torch/cuda/memory.py"

/* Frames: train.py:12 main, model.py:41 load_weights, data.py:7 pin_batch, torch's caching
 * allocator (a library frame, folded). Stacks: 1 lib < load_weights < main, 2 pin_batch <
 * main, 3 main, 4 lib < main (a failed call), 5 lib alone. */
static void program(struct tg *t)
{
	static const uint64_t s1[] = { 4, 2, 1 }, s2[] = { 3, 1 }, s3[] = { 1 }, s4[] = { 4, 1 },
			      s5[] = { 4 };

	tg_frame(t, 1, "/home/u/train.py", "main", 12);
	tg_frame(t, 2, "/home/u/model.py", "load_weights", 41);
	tg_frame(t, 3, "/home/u/data.py", "pin_batch", 7);
	tg_frame(t, 4, LIB, "caching_allocator_alloc", 300);
	tg_stack(t, 1, s1, 3);
	tg_stack(t, 2, s2, 2);
	tg_stack(t, 3, s3, 1);
	tg_stack(t, 4, s4, 2);
	tg_stack(t, 5, s5, 1);
}

/* device 0: 7 device allocations (the largest, 20 GiB, from load_weights), 2 pinned from
 * pin_batch, a free; device 1: one of 3 GiB without a stack; a failed 1 TiB call from main and
 * a failed pinned one of 200 GiB from an undefined stack (no line, no harm) */
static void alloc_trace(struct tg *t)
{
	program(t);
	tg_kernel(t, 1 * MS, 10 * MS, "gemm", 7);
	mem(t, 2 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 2 * MIB, 0, 3, 0);
	mem(t, 3 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 20 * GIB, 0, 1, 0);
	mem(t, 4 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 1 * GIB, 0, 3, 0);
	mem(t, 5 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 4 * GIB, 0, 3, 0);
	mem(t, 6 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 512 * MIB, 0, 3, 0);
	mem(t, 7 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 64 * MIB, 0, 3, 0);
	mem(t, 8 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 8 * GIB, 0, 1, 0);
	mem(t, 8 * MS, APX_MEMOP_FREE, APX_MEM_DEVICE, 8 * GIB, 0, 0, 0);
	mem(t, 9 * MS, APX_MEMOP_ALLOC, APX_MEM_PINNED, 64 * MIB, 0, 2, 0);
	mem(t, 9 * MS, APX_MEMOP_ALLOC, APX_MEM_PINNED, 256 * MIB, 0, 2, 0);
	mem(t, 9 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE_STATIC, 64 * GIB, 0, 0, 0);	/* not listed */
	mem(t, 10 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 3 * GIB, 1, 0, 0);
	mem(t, 11 * MS, APX_MEMOP_ALLOC_FAILED, APX_MEM_DEVICE, 1ull << 40, 0, 4, 2);
	mem(t, 12 * MS, APX_MEMOP_ALLOC_FAILED, APX_MEM_PINNED, 200 * GIB, 0, 77, 2);
}

static int line_is(const struct apx_model *m, uint32_t line, const char *file, const char *func,
		   uint32_t n)
{
	const struct apx_an_line *l;
	struct apx_es_text f, fn;

	if (line >= m->lines.n)
		return 0;
	l = APX_VEC_AT(&m->lines, struct apx_an_line, line);
	f = apx_store_string(m->store, l->file);
	fn = apx_store_string(m->store, l->func);
	return f.len == strlen(file) && !memcmp(f.p, file, f.len) && fn.len == strlen(func) &&
	       !memcmp(fn.p, func, fn.len) && l->line == n;
}

static const struct apx_an_alloc *alloc_at(const struct apx_vec *v, size_t i)
{
	return APX_VEC_AT(v, struct apx_an_alloc, i);
}

APX_TEST(largest_allocations_per_device_and_kind)
{
	const struct apx_an_alloc *a;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	alloc_trace(&t);
	m = model_of(&t);
	APX_ASSERT(m);
	/* device 0: the 5 largest device allocations, 2 pinned; device 1: one */
	APX_ASSERT_EQ(m->allocs.n, 8);
	a = alloc_at(&m->allocs, 0);
	APX_ASSERT(a->device == 0 && a->kind == APX_MEM_DEVICE && a->bytes == 20 * GIB);
	APX_ASSERT(!a->failed && a->ts == 3 * MS && a->tid == 100);
	/* the allocator's library frame folded into the user line that called it */
	APX_ASSERT(line_is(m, a->line, "/home/u/model.py", "load_weights", 41));
	APX_ASSERT_EQ(alloc_at(&m->allocs, 1)->bytes, 8 * GIB);
	APX_ASSERT(line_is(m, alloc_at(&m->allocs, 1)->line, "/home/u/model.py", "load_weights",
			   41));
	APX_ASSERT_EQ(alloc_at(&m->allocs, 2)->bytes, 4 * GIB);
	APX_ASSERT(line_is(m, alloc_at(&m->allocs, 2)->line, "/home/u/train.py", "main", 12));
	APX_ASSERT_EQ(alloc_at(&m->allocs, 3)->bytes, 1 * GIB);
	APX_ASSERT_EQ(alloc_at(&m->allocs, 4)->bytes, 512 * MIB);	/* 64 and 2 MiB left out */
	a = alloc_at(&m->allocs, 5);
	APX_ASSERT(a->device == 0 && a->kind == APX_MEM_PINNED && a->bytes == 256 * MIB);
	APX_ASSERT(line_is(m, a->line, "/home/u/data.py", "pin_batch", 7));
	APX_ASSERT_EQ(alloc_at(&m->allocs, 6)->bytes, 64 * MIB);
	a = alloc_at(&m->allocs, 7);
	APX_ASSERT(a->device == 1 && a->bytes == 3 * GIB && a->line == UINT32_MAX && !a->stack);
	/* the failed calls allocated nothing: not in the peak, not counted as allocations */
	APX_ASSERT_EQ(m->device_allocs, 8);
	APX_ASSERT_EQ(m->pinned_allocs, 2);
	APX_ASSERT_EQ(m->pinned_peak, 320 * MIB);
	APX_ASSERT(m->device_mem_peak < 40 * GIB);
	apx_model_free(m);
	return 0;
}

APX_TEST(failed_allocations_and_the_finding)
{
	const struct apx_finding *f;
	const struct apx_an_alloc *a;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	alloc_trace(&t);
	m = model_of(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->allocs_failed_n, 2);
	APX_ASSERT_EQ(m->allocs_failed.n, 2);
	a = alloc_at(&m->allocs_failed, 0);
	APX_ASSERT(a->failed && a->bytes == 1ull << 40 && a->error == 2 && a->ts == 11 * MS);
	APX_ASSERT(a->kind == APX_MEM_DEVICE && a->device == 0);
	APX_ASSERT(line_is(m, a->line, "/home/u/train.py", "main", 12));
	a = alloc_at(&m->allocs_failed, 1);
	APX_ASSERT(a->kind == APX_MEM_PINNED && a->line == UINT32_MAX);	/* stack 77: none */
	APX_ASSERT_STREQ(apx_cuda_error_name(2), "CUDA_ERROR_OUT_OF_MEMORY");
	APX_ASSERT(apx_cuda_error_name(12345) == NULL);
	/* memory-capacity fires on the failures and names the failed call's line */
	f = tg_find(&fd, "memory-capacity");
	APX_ASSERT(f && f->severity == APX_SEV_WARNING);
	APX_ASSERT(strstr(f->title, "2 allocation calls failed"));
	APX_ASSERT(strstr(f->title, "out of memory"));
	APX_ASSERT(strstr(f->title, "`main` in train.py:12"));
	APX_ASSERT(f->nlines == 1 && f->lines[0].line == 12);
	APX_ASSERT(f->lines[0].func_len == 4 && !memcmp(f->lines[0].func, "main", 4));
	APX_ASSERT(strstr(f->evidence, "CUDA_ERROR_OUT_OF_MEMORY"));
	APX_ASSERT(strstr(f->evidence, "failed allocation (1.10 TB): `main` in /home/u/train.py:12"));
	apx_model_free(m);
	return 0;
}

/* The device peak over 90 % of the device's 100 GB: the finding names the largest
 * allocation's line; pinned memory over 8 GB names the largest pinned allocation's. */
APX_TEST(memory_capacity_names_the_largest_allocation)
{
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;
	int device = 0, pinned = 0;

	APX_ASSERT_OK(tg_open(&t));
	program(&t);
	tg_kernel(&t, 1 * MS, 10 * MS, "gemm", 7);
	mem(&t, 2 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 10 * GIB, 0, 3, 0);
	mem(&t, 3 * MS, APX_MEMOP_ALLOC, APX_MEM_DEVICE, 80 * GIB, 0, 1, 0);
	mem(&t, 4 * MS, APX_MEMOP_ALLOC, APX_MEM_PINNED, 12 * GIB, 0, 2, 0);
	m = model_of(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->allocs_failed_n, 0);
	for (size_t i = 0; i < fd.n; i++) {
		f = &fd.f[i];
		if (strcmp(f->rule, "memory-capacity"))
			continue;
		APX_ASSERT(f->nlines == 1);
		if (strstr(f->title, "device memory peaked")) {
			APX_ASSERT(strstr(f->title, "; largest allocation `load_weights` in "
						    "model.py:41"));
			APX_ASSERT(f->lines[0].line == 41);
			APX_ASSERT(strstr(f->evidence, "largest allocation (85.90 GB): "
						       "`load_weights` in /home/u/model.py:41"));
			device = 1;
		} else {
			APX_ASSERT(strstr(f->title, "pinned host memory; largest pinned allocation "
						    "`pin_batch` in data.py:7"));
			pinned = 1;
		}
	}
	APX_ASSERT(device && pinned);
	apx_model_free(m);
	return 0;
}

/* Text, JSON and HTML name the lines; the CSV has the tables. */
APX_TEST(report_names_the_lines)
{
	struct apx_rdoc_opts o = { .sections = 1u << APX_SEC_MEMORY, .top = 10 };
	struct apx_model *m;
	struct apx_rdoc *d;
	char *text, *json, *html = NULL;
	size_t len = 0;
	struct tg t;
	FILE *f;

	APX_ASSERT_OK(tg_open(&t));
	alloc_trace(&t);
	m = model_of(&t);
	APX_ASSERT(m);
	text = tg_report(m, &fd, 1u << APX_SEC_MEMORY, 0);
	json = tg_report(m, &fd, 1u << APX_SEC_MEMORY, 1);
	APX_ASSERT(text && json);
	APX_ASSERT(strstr(text, "largest allocations per device and memory kind, with the user "
				"line that made them:"));
	APX_ASSERT(strstr(text, "0 device    21.47 GB    3.00 ms  u/model.py:41 load_weights"));
	APX_ASSERT(strstr(text, "u/model.py:41 load_weights"));
	APX_ASSERT(strstr(text, "u/data.py:7 pin_batch"));
	APX_ASSERT(strstr(text, "(no Python stack)"));
	APX_ASSERT(strstr(text, "failed allocations: 2 calls returned an error"));
	APX_ASSERT(strstr(text, "OUT_OF_MEMORY"));
	APX_ASSERT(strstr(text, "u/train.py:12 main"));
	APX_ASSERT(strstr(json, "\"largest_allocations\":[{\"device\":0,\"kind\":\"device\","
				"\"bytes\":21474836480,\"at_ns\":"));
	APX_ASSERT(strstr(json, "\"file\":\"/home/u/model.py\",\"line\":41,"
				"\"func\":\"load_weights\",\"tid\":100}"));
	APX_ASSERT(strstr(json, "\"failed_allocations\":[{\"device\":0,\"kind\":\"device\","
				"\"bytes\":1099511627776,\"error\":2,"
				"\"error_name\":\"CUDA_ERROR_OUT_OF_MEMORY\""));
	APX_ASSERT(strstr(json, "\"file\":\"/home/u/train.py\",\"line\":12,\"func\":\"main\""));
	APX_ASSERT(strstr(json, "\"file\":null,\"line\":null,\"func\":null"));
	/* inside the memory object, after over_time */
	APX_ASSERT(strstr(json, "\"over_time\":[],\"largest_allocations\":["));
	d = apx_rdoc_build(m, &fd, &o);
	f = open_memstream(&html, &len);
	APX_ASSERT(d && f);
	APX_ASSERT_OK(apx_report_emit_html(f, d));
	fclose(f);
	APX_ASSERT(strstr(html, "Largest allocations (per device and memory kind)"));
	APX_ASSERT(strstr(html, "Failed allocations"));
	APX_ASSERT(strstr(html, "load_weights"));
	APX_ASSERT(strstr(html, "CUDA_ERROR_OUT_OF_MEMORY"));
	apx_rdoc_free(d);
	free(html);
	free(text);
	free(json);
	apx_model_free(m);
	return 0;
}

/* A trace written before the MEMORY record had stack, tid, error and requested_bytes: its
 * allocations are listed without lines and the report still reads. */
APX_TEST(old_trace_without_the_fields)
{
	struct apx_model *m = apx_model_new();
	char *text, *json;

	APX_ASSERT(m);
	APX_ASSERT_OK(apx_model_add_file(m, APX_SOURCE_DIR "/tests/fixtures/real/pinned_h2d.apx",
					 NULL));
	APX_ASSERT_OK(apx_model_finish(m));
	memset(&fd, 0, sizeof(fd));
	apx_rules_run(m, &fd);
	APX_ASSERT(m->allocs.n >= 2 && m->allocs_failed_n == 0);
	for (size_t i = 0; i < m->allocs.n; i++) {
		const struct apx_an_alloc *a = alloc_at(&m->allocs, i);

		APX_ASSERT(!a->stack && a->line == UINT32_MAX && !a->tid && !a->failed);
	}
	APX_ASSERT_EQ(alloc_at(&m->allocs, 0)->kind, APX_MEM_DEVICE);
	text = tg_report(m, &fd, 1u << APX_SEC_MEMORY, 0);
	json = tg_report(m, &fd, 1u << APX_SEC_MEMORY, 1);
	APX_ASSERT(text && json);
	APX_ASSERT(strstr(text, "largest allocations per device and memory kind:"));
	APX_ASSERT(strstr(text, "(no Python stack)"));
	APX_ASSERT(!strstr(text, "failed allocations"));
	APX_ASSERT(strstr(json, "\"failed_allocations\":[]"));
	APX_ASSERT(strstr(json, "\"kind\":\"pinned\",\"bytes\":67108864"));
	free(text);
	free(json);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
