/*
 * test-stacks.c - unit tests of the Python stacks' analysis: the event store's
 * frames, stacks and samples (store_stacks.c) with hostile records counted and dropped, the
 * line a stack stands for (stacks.c: library frames folded, --frames all), hotspots'
 * order and sums (hotspots.c), the lines findings name (lines.c: sync-frequency,
 * input-pipeline), threads (threads.c: context switches too), the OS calls they waited in
 * (oswaits.c), the main thread inside idle gaps (idle_stacks.c), and
 * the report's hotspots, idle-stacks and threads sections. Traces from tracegen.c.
 */
#include <math.h>
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
#include "report/flame.h"
#include "unit/analysed.h"
#include "unit/reported.h"

#include "base/banned.h"

#define MS 1000000ull
#define US 1000ull

static struct apx_findings fd;

/* Close t and build its model with frames_all as asked, then run the rules into fd. */
static struct apx_model *model_of(struct tg *t, int frames_all)
{
	struct apx_model *m = apx_model_new();

	if (!m || tg_close(t) < 0 || apx_model_add_file(m, t->path, NULL) < 0)
		goto fail;
	m->frames_all = frames_all;
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

static const struct apx_finding *finding(const char *rule)
{
	return tg_find(&fd, rule);
}

static int text_is(const char *p, uint32_t len, const char *s)
{
	return p && len == strlen(s) && !memcmp(p, s, len);
}

/* A hotspot row's file, function and line. */
static int hotspot_is(const struct apx_model *m, size_t i, const char *file, const char *func,
		      uint32_t line)
{
	const struct apx_an_hotspot *h = APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, i);
	const struct apx_an_line *l = APX_VEC_AT(&m->lines, struct apx_an_line, h->line);
	struct apx_es_text f = apx_store_string(m->store, l->file);
	struct apx_es_text fn = apx_store_string(m->store, l->func);

	return text_is(f.p, f.len, file) && text_is(fn.p, fn.len, func) && l->line == line;
}

#define LIB "/usr/lib/python3/dist-packages/torch/nn/functional.py"

/* Frames: train.py:10 train, model.py:41 forward, torch's linear (a library frame),
 * model.py:50 loss_fn. Stacks: 1 linear < forward < train, 2 loss_fn < train, 3 train. */
static void program(struct tg *t)
{
	static const uint64_t s1[] = { 3, 2, 1 }, s2[] = { 4, 1 }, s3[] = { 1 };

	tg_frame(t, 1, "/home/u/train.py", "train", 10);
	tg_frame(t, 2, "/home/u/model.py", "Model.forward", 41);
	tg_frame(t, 3, LIB, "linear", 200);
	tg_frame(t, 4, "/home/u/model.py", "loss_fn", 50);
	tg_stack(t, 1, s1, 3);
	tg_stack(t, 2, s2, 2);
	tg_stack(t, 3, s3, 1);
}

/* 10 kernels of 100 us from stack 1, 5 of 300 us from stack 2, 2 of 50 us from stack 3, a
 * pageable copy and a sync from stack 3; samples of the main thread (tid 100 = pid). */
static void hotspot_trace(struct tg *t)
{
	uint64_t ts = 1 * MS;

	program(t);
	t->stack = 1;
	for (int i = 0; i < 10; i++, ts += 200 * US)
		tg_kernel(t, ts, 100 * US, "gemm", 7);
	t->stack = 2;
	for (int i = 0; i < 5; i++, ts += 400 * US)
		tg_kernel(t, ts, 300 * US, "loss", 7);
	t->stack = 3;
	for (int i = 0; i < 2; i++, ts += 100 * US)
		tg_kernel(t, ts, 50 * US, "step", 7);
	tg_copy(t, ts, 100 * US, APX_COPY_H2D, APX_MEM_PAGEABLE, 1 << 20, 0, 0, 7);
	tg_sync(t, ts + 200 * US, ts + 700 * US, APX_SYNC_KIND_DEVICE);
	t->stack = 0;
	tg_kernel(t, ts + 1 * MS, 10 * US, "nostack", 7);
	for (int i = 0; i < 4; i++)
		tg_sample(t, 1 * MS + (uint64_t)i * 1 * MS, 100, 2, APX_TSTATE_RUNNING, -1,
			  (uint64_t)i * 900 * US, 1 * MS);
}

APX_TEST(hotspots_order_and_sums)
{
	const struct apx_an_hotspot *h;
	struct apx_model *m;
	uint64_t sum = 0;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	hotspot_trace(&t);
	m = model_of(&t, 0);
	APX_ASSERT(m && m->has_stacks);
	/* frame and stack ids 1..4 (field 0) are not times: the trace starts at its header (1 us) */
	APX_ASSERT(m->files[0].first_ns >= 1 * US);
	APX_ASSERT_EQ(m->hotspots.n, 3);
	/* by GPU time: loss_fn 1.5 ms, forward (linear folded into it) 1 ms, train 100 us */
	APX_ASSERT(hotspot_is(m, 0, "/home/u/model.py", "loss_fn", 50));
	APX_ASSERT(hotspot_is(m, 1, "/home/u/model.py", "Model.forward", 41));
	APX_ASSERT(hotspot_is(m, 2, "/home/u/train.py", "train", 10));
	h = APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, 0);
	APX_ASSERT_EQ(h->gpu_ns, 1500 * US);
	APX_ASSERT_EQ(h->launches, 5);
	APX_ASSERT_EQ(h->host_ns, 4 * MS);		/* its 4 samples of 1 ms */
	APX_ASSERT_EQ(h->host_running_ns, 4 * MS);
	h = APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, 1);
	APX_ASSERT_EQ(h->gpu_ns, 1000 * US);
	APX_ASSERT_EQ(h->launches, 10);
	h = APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, 2);
	APX_ASSERT_EQ(h->gpu_ns, 100 * US);
	APX_ASSERT_EQ(h->launches, 2);
	APX_ASSERT_EQ(h->copies, 1);
	APX_ASSERT_EQ(h->copy_bytes, 1 << 20);
	APX_ASSERT_EQ(h->pageable_copies, 1);
	APX_ASSERT_EQ(h->syncs, 1);
	APX_ASSERT_EQ(h->sync_wait_ns, 500 * US);
	for (size_t i = 0; i < m->hotspots.n; i++)
		sum += APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, i)->gpu_ns;
	APX_ASSERT_EQ(sum, 2600 * US);	/* the kernel without a stack is in no line */
	APX_ASSERT(sum <= m->kernel_total_ns);
	apx_model_free(m);
	return 0;
}

APX_TEST(library_frames_folded_unless_frames_all)
{
	struct apx_model *m;
	struct tg t;

	APX_ASSERT(apx_frame_is_library(LIB, strlen(LIB)));
	APX_ASSERT(apx_frame_is_library("/opt/venv/lib/python3.12/site-packages/x.py", 43));
	APX_ASSERT(apx_frame_is_library("/usr/lib/python3.11/threading.py", 32));
	APX_ASSERT(apx_frame_is_library("<frozen importlib._bootstrap>", 29));
	APX_ASSERT(apx_frame_is_library("<string>", 8));
	APX_ASSERT(!apx_frame_is_library("/home/u/model.py", 16));
	APX_ASSERT(!apx_frame_is_library("train.py", 8));

	APX_ASSERT_OK(tg_open(&t));
	hotspot_trace(&t);
	m = model_of(&t, 1);	/* --frames all: linear is a line of its own */
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->hotspots.n, 3);
	APX_ASSERT(hotspot_is(m, 0, "/home/u/model.py", "loss_fn", 50));
	APX_ASSERT(hotspot_is(m, 1, LIB, "linear", 200));
	APX_ASSERT(!APX_VEC_AT(&m->lines, struct apx_an_line,
			       APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, 1)->line)->user);
	apx_model_free(m);

	/* a stack of library frames only stands for its innermost frame */
	APX_ASSERT_OK(tg_open(&t));
	tg_frame(&t, 1, LIB, "linear", 200);
	tg_frame(&t, 2, "<frozen runpy>", "_run_code", 88);
	tg_stack(&t, 1, (const uint64_t[]){ 1, 2 }, 2);
	t.stack = 1;
	tg_kernel(&t, 1 * MS, 100 * US, "k", 7);
	m = model_of(&t, 0);
	APX_ASSERT(m && m->hotspots.n == 1 && hotspot_is(m, 0, LIB, "linear", 200));
	apx_model_free(m);
	return 0;
}

/* rule_sync_frequency's trace (test-analysis.c), the syncs called from forward. */
APX_TEST(sync_frequency_names_the_line)
{
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	program(&t);
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t s = 1 * MS + i * 140 * US;

		t.stack = 3;
		tg_kernel(&t, s, 100 * US, "k", 7);
		t.stack = 1;	/* `if h.abs().amax() > 6:` in forward, under torch's linear */
		tg_sync(&t, s + 10 * US, s + 110 * US, APX_SYNC_KIND_DEVICE);
		tg_marker(&t, s, s + 140 * US, "step");
	}
	m = model_of(&t, 0);
	APX_ASSERT(m);
	f = finding("sync-frequency");
	APX_ASSERT(f);
	APX_ASSERT(f->nlines >= 1);
	APX_ASSERT(text_is(f->lines[0].func, f->lines[0].func_len, "Model.forward"));
	APX_ASSERT(text_is(f->lines[0].file, f->lines[0].file_len, "/home/u/model.py"));
	APX_ASSERT_EQ(f->lines[0].line, 41);
	APX_ASSERT_EQ((uint64_t)f->lines[0].count, 100);
	APX_ASSERT_EQ((uint64_t)f->lines[0].ns, 100 * 100 * US);
	APX_ASSERT(strstr(f->title, "`Model.forward` in model.py:41"));
	APX_ASSERT(strstr(f->evidence, "/home/u/model.py:41"));
	/* the saving as before: the what-if simulator's (the default) within 1 % of the rule's
	 * own model, 99 gaps of 40 us */
	APX_ASSERT(fabs(f->saving_ns - 99.0 * 40 * US) <= 0.01 * 99.0 * 40 * US);
	apx_model_free(m);
	return 0;
}

/* rule_input_pipeline's trace (test-analysis.c): each step the GPU idles 3 ms until the next
 * batch arrives; the main thread is sampled in tokenize during the gaps and in train while
 * the kernels run. */
APX_TEST(input_pipeline_names_the_function)
{
	const struct apx_an_idle_stack *is;
	const struct apx_finding *f;
	char want[128], b1[32];
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	tg_frame(&t, 1, "/home/u/train.py", "train", 30);
	tg_frame(&t, 2, "/home/u/data.py", "tokenize", 12);
	tg_frame(&t, 3, "/usr/lib/python3.11/re.py", "sub", 200);
	tg_stack(&t, 1, (const uint64_t[]){ 1 }, 1);
	tg_stack(&t, 2, (const uint64_t[]){ 3, 2, 1 }, 3);
	for (uint64_t i = 0; i < 20; i++) {
		uint64_t s = 1 * MS + i * 6 * MS;

		tg_kernel(&t, s, 2 * MS, "k", 7);
		tg_copy(&t, s + 5 * MS, 1 * MS, APX_COPY_H2D, APX_MEM_PINNED, 4 << 20, 1, 0, 7);
		tg_sample(&t, s + 1 * MS, 100, 1, APX_TSTATE_SLEEPING, 202, i * MS, 1 * MS);
		tg_sample(&t, s + 3 * MS, 100, 2, APX_TSTATE_RUNNING, -1, i * MS, 1 * MS);
		tg_sample(&t, s + 4 * MS, 100, 2, APX_TSTATE_RUNNING, -1, i * MS, 1 * MS);
		tg_sample(&t, s + 4 * MS, 101, 2, APX_TSTATE_RUNNING, -1, i * MS, 1 * MS);
	}
	m = model_of(&t, 0);
	APX_ASSERT(m);
	f = finding("input-pipeline");
	APX_ASSERT(f && f->nlines == 1);	/* tid 101 is not the main thread */
	APX_ASSERT(text_is(f->lines[0].func, f->lines[0].func_len, "tokenize"));
	APX_ASSERT_EQ(f->lines[0].line, 12);
	APX_ASSERT_EQ((uint64_t)f->lines[0].ns, (uint64_t)f->lines[0].count * MS);
	APX_ASSERT(f->lines[0].count >= 2 * 16);	/* two a gap, in the steady gaps */
	APX_ASSERT(m->steady_steps > 0);
	snprintf(want, sizeof(want), "`tokenize` in data.py:12, %s a step",
		 apx_fmt_ns(b1, sizeof(b1), f->lines[0].ns / (double)m->steady_steps));
	APX_ASSERT(strstr(f->title, want));
	APX_ASSERT(m->idle_stacks.n == 1);
	is = APX_VEC_AT(&m->idle_stacks, struct apx_an_idle_stack, 0);
	APX_ASSERT_EQ(is->stack, 2);
	APX_ASSERT_EQ(is->ns, m->idle_samples_ns);
	apx_model_free(m);
	return 0;
}

/* 40 NVTX steps of two 1 ms kernels with a 600 us gap between them that nothing in the trace
 * explains, the main thread (tid 100) sampled twice in each gap in the given state. With
 * waits, a 3 ms optimizer kernel follows, and the host waits for the second kernel's end in an
 * event sync (returning as the optimizer starts: in no gap), so that its own work (4.61 of a
 * step's 5.61 ms) is shorter than the GPU's (5 ms): queued ahead, it would hide the gaps.
 * Without, the host works the whole window: host-bound. */
static struct apx_model *gapped_steps(unsigned state, int64_t syscall, int waits)
{
	struct tg t;
	uint64_t ts = 1 * MS;

	if (tg_open(&t) < 0)
		return NULL;
	tg_frame(&t, 1, "/home/u/train.py", "train", 30);
	tg_stack(&t, 1, (const uint64_t[]){ 1 }, 1);
	for (uint64_t i = 0; i < 40; i++) {
		uint64_t s0 = ts;

		tg_kernel(&t, ts, 1 * MS, "fwd", 7);
		tg_sample(&t, ts + 1 * MS + 200 * US, 100, 1, state, syscall, i * MS, 200 * US);
		tg_sample(&t, ts + 1 * MS + 400 * US, 100, 1, state, syscall, i * MS, 200 * US);
		ts += 1 * MS + 600 * US;
		tg_kernel(&t, ts, 1 * MS, "bwd", 7);
		ts += 1 * MS;
		if (waits) {
			tg_sync(&t, ts - 1 * MS, ts, APX_SYNC_KIND_EVENT);
			tg_kernel(&t, ts, 3 * MS, "opt", 7);
			ts += 3 * MS;
		}
		ts += 10 * US;
		tg_marker(&t, s0, ts - 5 * US, "step");
	}
	return model_of(&t, 0);
}

/* gpu-starvation's reading of short in-step gaps: the host's per-op work when the main thread
 * was running in them; when it was waiting in a system call there, not (the evidence says so);
 * a host-bound program (its host works the whole window) gains nothing there by queueing ahead */
APX_TEST(gpu_starvation_tells_waiting_from_per_op_work)
{
	const struct apx_finding *f;
	struct apx_model *m = gapped_steps(APX_TSTATE_RUNNING, -1, 1);

	APX_ASSERT(m && !m->launch_bound);
	f = finding("gpu-starvation");
	APX_ASSERT(f && strstr(f->title, "host per-op work"));
	APX_ASSERT(strstr(f->evidence, "in the gaps of 100 us or more: 15.60 ms running, 0 ns "
			  "waiting in a system call\n"));	/* 78 of 200 us: 39 gaps, 2 each */
	APX_ASSERT(!strstr(f->evidence, "left out\n"));	/* the host could get ahead */
	APX_ASSERT(strstr(f->fix, "torch.compile"));
	apx_model_free(m);

	m = gapped_steps(APX_TSTATE_SLEEPING, 202, 1);	/* futex: a queue, a lock */
	APX_ASSERT(m);
	f = finding("gpu-starvation");
	APX_ASSERT(f && !strstr(f->title, "host per-op work"));
	APX_ASSERT(strstr(f->evidence, "0 ns running, 15.60 ms waiting in a system call (waiting "
			  "for something"));
	APX_ASSERT(!strstr(f->evidence, "eager overhead"));
	APX_ASSERT(!strstr(f->fix, "torch.compile"));
	apx_model_free(m);

	m = gapped_steps(APX_TSTATE_RUNNING, -1, 0);	/* host-bound: silent */
	APX_ASSERT(m && m->gpu.idle_by_cause[APX_IDLE_UNKNOWN] >= 38 * 600 * US);
	APX_ASSERT(!finding("gpu-starvation") && tg_status(&fd, "gpu-starvation") == APX_RULE_CLEAN);
	apx_model_free(m);
	return 0;
}

APX_TEST(threads_table)
{
	const struct apx_an_thread *a, *b;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	tg_thread(&t, 100, "python3");
	tg_thread(&t, 105, "pt_autograd_0");
	tg_kernel(&t, 1 * MS, 1 * MS, "k", 7);
	for (uint64_t i = 0; i < 10; i++) {	/* main: 6 running, 4 in futex; 0.5 ms CPU each */
		tg_sample(&t, 1 * MS + i * 5 * MS, 100, 0,
			  i < 6 ? APX_TSTATE_RUNNING : APX_TSTATE_SLEEPING, i < 6 ? -1 : 202,
			  1000 * MS + i * 500 * US, 5 * MS);
	}
	for (uint64_t i = 0; i < 4; i++)	/* autograd: waits in poll, then syscall 999 */
		tg_sample(&t, 1 * MS + i * 5 * MS, 105, 0, APX_TSTATE_SLEEPING, i < 3 ? 7 : 999,
			  7 * MS, 5 * MS);
	m = model_of(&t, 0);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->threads.n, 2);
	a = APX_VEC_AT(&m->threads, struct apx_an_thread, 0);
	b = APX_VEC_AT(&m->threads, struct apx_an_thread, 1);
	APX_ASSERT_EQ(a->tid, 100);
	APX_ASSERT(text_is(a->name, a->name_len, "python3"));
	APX_ASSERT_EQ(a->samples, 10);
	APX_ASSERT_EQ(a->cpu_ns, 9 * 500 * US);
	APX_ASSERT_EQ(a->running, 6);
	APX_ASSERT_EQ(a->waiting, 4);
	APX_ASSERT(a->nsys == 1 && a->sys[0].nr == 202 && a->sys[0].samples == 4);
	APX_ASSERT_STREQ(apx_syscall_name(a->sys[0].nr), "futex");
	APX_ASSERT_EQ(b->tid, 105);
	APX_ASSERT(text_is(b->name, b->name_len, "pt_autograd_0"));
	APX_ASSERT_EQ(b->cpu_ns, 0);
	APX_ASSERT(b->nsys == 2 && b->sys[0].nr == 7 && b->sys[1].nr == 999);
	APX_ASSERT_STREQ(apx_syscall_name(7), "poll");
	APX_ASSERT(!apx_syscall_name(999));
	APX_ASSERT(!m->has_stacks && !m->hotspots.n);	/* samples without Python frames */
	apx_model_free(m);
	return 0;
}

/* Waits: main (stack 1: torch's linear folded into model.py:41) in futex for 6 samples of 5 ms = one wait
 * of 30 ms, running, futex again for 1 sample (5 ms), then a hole of 50 ms in poll (two
 * waits); thread 105 (no Python) in poll for 3 samples. Threshold 10 ms: futex 30 ms at
 * model.py:41, poll 15 ms of thread 105; the lone 5 ms waits only in the totals. Thread
 * CPU records: main 10 -> 250 voluntary, 1 -> 4 involuntary switches; 105 one record only. */
APX_TEST(os_waits_and_switches)
{
	const struct apx_an_oswait *w0, *w1;
	const struct apx_an_oswait_line *l0, *l1;
	const struct apx_an_thread *a, *b;
	struct apx_model *m;
	struct tg t;
	uint64_t ts = 1 * MS;

	APX_ASSERT_OK(tg_open(&t));
	program(&t);
	tg_thread(&t, 100, "python3");
	tg_thread(&t, 105, "cuda-poll");
	tg_kernel(&t, 1 * MS, 1 * MS, "k", 7);
	for (int i = 0; i < 6; i++, ts += 5 * MS)
		tg_sample(&t, ts, 100, 1, APX_TSTATE_SLEEPING, 202, 0, 5 * MS);
	tg_sample(&t, ts, 100, 2, APX_TSTATE_RUNNING, -1, 0, 5 * MS);
	ts += 5 * MS;
	tg_sample(&t, ts, 100, 3, APX_TSTATE_SLEEPING, 202, 0, 5 * MS);
	tg_sample(&t, ts + 5 * MS, 100, 3, APX_TSTATE_SLEEPING, 7, 0, 5 * MS);
	tg_sample(&t, ts + 55 * MS, 100, 3, APX_TSTATE_SLEEPING, 7, 0, 5 * MS);
	for (uint64_t i = 0; i < 3; i++)
		tg_sample(&t, 1 * MS + i * 5 * MS, 105, 0, APX_TSTATE_SLEEPING, 7, 0, 5 * MS);
	tg_cpu_thread(&t, 1 * MS, 100, 10, 1);
	tg_cpu_thread(&t, 2000 * MS, 100, 250, 4);
	tg_cpu_thread(&t, 1 * MS, 105, 10, 1);
	m = model_of(&t, 0);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->os_wait_threshold_ns, 10 * MS);
	APX_ASSERT_EQ(m->oswaits.n, 2);
	w0 = APX_VEC_AT(&m->oswaits, struct apx_an_oswait, 0);
	w1 = APX_VEC_AT(&m->oswaits, struct apx_an_oswait, 1);
	APX_ASSERT(w0->nr == 202 && w0->waits == 2 && w0->threads == 1);
	APX_ASSERT(w0->ns == 35 * MS && w0->max_ns == 30 * MS);
	APX_ASSERT(w1->nr == 7 && w1->waits == 3 && w1->threads == 2);
	APX_ASSERT(w1->ns == 25 * MS && w1->max_ns == 15 * MS);
	APX_ASSERT_EQ(m->oswait_lines.n, 2);
	l0 = APX_VEC_AT(&m->oswait_lines, struct apx_an_oswait_line, 0);
	l1 = APX_VEC_AT(&m->oswait_lines, struct apx_an_oswait_line, 1);
	APX_ASSERT(l0->nr == 202 && l0->waits == 1 && l0->ns == 30 * MS && l0->tid == 100);
	APX_ASSERT(l0->line != UINT32_MAX);
	APX_ASSERT_EQ(APX_VEC_AT(&m->lines, struct apx_an_line, l0->line)->line, 41);
	APX_ASSERT(l1->nr == 7 && l1->line == UINT32_MAX && l1->tid == 105 && l1->ns == 15 * MS);
	a = APX_VEC_AT(&m->threads, struct apx_an_thread, 0);
	b = APX_VEC_AT(&m->threads, struct apx_an_thread, 1);
	APX_ASSERT(a->tid == 100 && a->has_csw && a->vcsw == 240 && a->ivcsw == 3);
	APX_ASSERT(b->tid == 105 && !b->has_csw);
	apx_model_free(m);
	return 0;
}

/* A trace without stacks: no line anywhere, the findings as they were. */
APX_TEST(traces_without_stacks_read_as_before)
{
	const struct apx_finding *f;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t s = 1 * MS + i * 140 * US;

		tg_kernel(&t, s, 100 * US, "k", 7);
		tg_sync(&t, s + 10 * US, s + 110 * US, APX_SYNC_KIND_DEVICE);
		tg_marker(&t, s, s + 140 * US, "step");
	}
	m = model_of(&t, 0);
	APX_ASSERT(m);
	APX_ASSERT(!m->has_stacks && !m->lines.n && !m->hotspots.n && !m->threads.n &&
		   !m->idle_stacks.n);
	f = finding("sync-frequency");
	APX_ASSERT(f && !f->nlines);
	APX_ASSERT_STREQ(f->title, "100 host synchronizations left the GPU idle for 3.96 ms");
	APX_ASSERT(!strstr(f->evidence, "lines (Python stacks)"));
	for (size_t i = 0; i < fd.n; i++)
		APX_ASSERT(!fd.f[i].nlines && !strstr(fd.f[i].title, "top line"));
	apx_model_free(m);
	return 0;
}

/* Stack records from a process apx does not trust: each bad one counted and dropped. */
APX_TEST(hostile_stack_records)
{
	static const uint8_t cut[] = { 0x81 };				/* continuation, no end */
	static const uint8_t wide[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					0x7f };				/* past 64 bits */
	uint64_t deep[300], huge_id[] = { 1ull << 40 };
	const struct apx_es_stack_loss *l;
	struct apx_model *m;
	struct tg t;

	for (size_t i = 0; i < 300; i++)
		deep[i] = 1;
	APX_ASSERT_OK(tg_open(&t));
	tg_frame(&t, 1, "/home/u/a.py", "f", 1);
	tg_frame(&t, 1, "/home/u/b.py", "g", 2);		/* duplicate: the first is kept */
	tg_frame(&t, 0, "/home/u/c.py", "h", 3);		/* id 0 */
	tg_stack(&t, 1, (const uint64_t[]){ 1 }, 1);		/* the good one */
	tg_stack(&t, 1, (const uint64_t[]){ 1, 1 }, 2);		/* duplicate id */
	tg_stack(&t, 2, (const uint64_t[]){ 1, 99 }, 2);	/* undefined frame */
	tg_stack_bytes(&t, 3, cut, sizeof(cut));
	tg_stack_bytes(&t, 4, wide, sizeof(wide));
	tg_stack(&t, 5, deep, 300);				/* over 256 frames */
	tg_stack(&t, 6, huge_id, 1);				/* a frame id past 32 bits */
	tg_stack(&t, 0, (const uint64_t[]){ 1 }, 1);		/* id 0 */
	tg_stack(&t, 7, deep, 256);				/* 256: allowed */
	t.stack = 1;
	tg_kernel(&t, 1 * MS, 100 * US, "k", 7);
	t.stack = 2;						/* dropped: no stack */
	tg_kernel(&t, 2 * MS, 100 * US, "k", 7);
	t.stack = 77;						/* never defined */
	tg_kernel(&t, 3 * MS, 100 * US, "k", 7);
	t.stack = 1ull << 40;
	tg_sync(&t, 3 * MS, 4 * MS, APX_SYNC_KIND_DEVICE);
	tg_sample(&t, 4 * MS, 100, 7, APX_TSTATE_RUNNING, -1, 0, 1 * MS);
	m = model_of(&t, 0);
	APX_ASSERT(m);
	l = &m->store->stack_loss;
	APX_ASSERT_EQ(l->bad_list, 2);
	APX_ASSERT_EQ(l->too_deep, 1);
	APX_ASSERT_EQ(l->undefined_frame, 2);			/* ids 2 and 6 */
	APX_ASSERT_EQ(l->bad_id, 2);
	APX_ASSERT_EQ(l->dup_frame, 1);
	APX_ASSERT_EQ(l->dup_stack, 1);
	APX_ASSERT_EQ(l->undefined_stack, 3);			/* kernels of 2 and 77, the sync */
	APX_ASSERT_EQ(m->hotspots.n, 1);			/* a.py:1 f, the first frame 1 */
	APX_ASSERT(hotspot_is(m, 0, "/home/u/a.py", "f", 1));
	APX_ASSERT_EQ(APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, 0)->launches, 1);
	APX_ASSERT_EQ(APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, 0)->host_ns, 1 * MS);
	apx_model_free(m);
	return 0;
}

/* The three sections in the JSON and text reports; without stacks they say so. */
static char *emit(const struct apx_model *m, int json)
{
	return tg_report(m, &fd, 1u << APX_SEC_HOTSPOTS | 1u << APX_SEC_IDLE_STACKS |
			 1u << APX_SEC_THREADS | 1u << APX_SEC_FINDINGS, json);
}

APX_TEST(report_sections)
{
	struct apx_model *m;
	struct tg t;
	char *j, *x;

	APX_ASSERT_OK(tg_open(&t));
	hotspot_trace(&t);
	tg_thread(&t, 100, "python3");
	m = model_of(&t, 0);
	APX_ASSERT(m);
	j = emit(m, 1);
	x = emit(m, 0);
	APX_ASSERT(j && x);
	APX_ASSERT(strstr(j, "\"hotspots\":[{\"file\":\"/home/u/model.py\",\"line\":50,"
			     "\"func\":\"loss_fn\",\"gpu_ns\":1500000,\"launches\":5,"));
	APX_ASSERT(strstr(j, "\"threads\":[{\"pid\":100,\"tid\":100,\"name\":\"python3\""));
	APX_ASSERT(strstr(j, "\"idle_stacks\":["));
	APX_ASSERT(strstr(j, "\"stacks_dropped\":{\"bad_list\":0,"));
	APX_ASSERT(strstr(x, "model.py:50 loss_fn"));
	APX_ASSERT(strstr(x, "--frames all shows them"));
	free(j);
	free(x);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));
	tg_kernel(&t, 1 * MS, 100 * US, "k", 7);
	m = model_of(&t, 0);
	APX_ASSERT(m);
	j = emit(m, 1);
	x = emit(m, 0);
	APX_ASSERT(j && x);
	APX_ASSERT(strstr(j, "\"hotspots\":[]") && strstr(j, "\"threads\":[]") &&
		   strstr(j, "\"idle_stacks\":[]"));
	APX_ASSERT(strstr(x, "no Python stacks in this trace"));
	APX_ASSERT(strstr(x, "no thread samples in this trace"));
	free(j);
	free(x);
	apx_model_free(m);
	return 0;
}

/* The flame graphs (report/flame.h): GPU time under the launch stacks, root first; host
 * samples by thread and state; their JSON member and HTML figures; none without stacks. */
APX_TEST(flame_graphs)
{
	struct apx_rdoc_opts o = { .sections = 1u << APX_SEC_HOTSPOTS | 1u << APX_SEC_THREADS,
				   .top = 10 };
	const struct apx_rflame_node *n;
	const struct apx_rflame *g, *h;
	struct apx_rdoc *d;
	struct apx_model *m;
	char *buf[2] = { NULL, NULL }, name[256];
	size_t len[2];
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	hotspot_trace(&t);
	m = model_of(&t, 0);
	APX_ASSERT(m);
	d = apx_rdoc_build(m, &fd, &o);
	APX_ASSERT(d && d->flame[0] && d->flame[1]);
	g = d->flame[0];
	APX_ASSERT_EQ(g->n[0].value, 2610 * US);		/* every kernel, 10 us without a stack */
	n = &g->n[g->kid[g->n[0].kids]];			/* the largest child: train */
	APX_ASSERT_EQ(n->value, 2600 * US);
	APX_ASSERT(!strcmp(apx_rflame_name(g, n, name, sizeof(name)), "train (train.py:10)"));
	APX_ASSERT_EQ(n->nkids, 2u);
	APX_ASSERT_EQ(g->n[g->kid[n->kids]].value, 1500 * US);	/* loss_fn, then forward */
	n = &g->n[g->kid[n->kids + 1]];
	APX_ASSERT(!strcmp(apx_rflame_name(g, n, name, sizeof(name)), "Model.forward (model.py:41)"));
	APX_ASSERT_EQ(n->nkids, 1u);
	APX_ASSERT_EQ(g->n[g->kid[n->kids]].kind, APX_FK_LIBRARY);	/* linear, shown */
	h = d->flame[1];
	APX_ASSERT_EQ(h->n[0].value, 4 * MS);
	n = &h->n[h->kid[h->n[0].kids]];
	APX_ASSERT_EQ(n->kind, APX_FK_THREAD);
	n = &h->n[h->kid[n->kids]];
	APX_ASSERT(n->kind == APX_FK_STATE && !strcmp(n->label, "running"));
	for (int k = 0; k < 2; k++) {
		FILE *f = open_memstream(&buf[k], &len[k]);

		APX_ASSERT(f);
		(k ? apx_report_emit_html : apx_report_emit_json)(f, d);
		fclose(f);
	}
	APX_ASSERT(strstr(buf[0], "\"flame\":{\"gpu\":{\"name\":\"all kernels\",\"file\":null,"
			  "\"line\":null,\"library\":false,\"value\":2610000,\"children\":"
			  "[{\"name\":\"train\",\"file\":\"/home/u/train.py\",\"line\":10,"));
	APX_ASSERT(strstr(buf[0], "\"name\":\"linear\",\"file\":\"" LIB "\",\"line\":200,"
			  "\"library\":true,\"value\":1000000"));
	APX_ASSERT(strstr(buf[0], "\"host\":{\"name\":\"all samples\""));
	APX_ASSERT(strstr(buf[1], "<figure class=\"flame\" id=\"flame-gpu\">"));
	APX_ASSERT(strstr(buf[1], "<figure class=\"flame\" id=\"flame-host\">"));
	APX_ASSERT(strstr(buf[1], "<g><title>linear (functional.py:200)\n" LIB ":200 (library)"));
	free(buf[0]);
	free(buf[1]);
	apx_rdoc_free(d);
	apx_model_free(m);

	APX_ASSERT_OK(tg_open(&t));	/* no stacks: no flame graph, no "flame" member */
	tg_kernel(&t, 1 * MS, 100 * US, "k", 7);
	m = model_of(&t, 0);
	APX_ASSERT(m);
	d = apx_rdoc_build(m, &fd, &o);
	APX_ASSERT(d && !d->flame[0] && !d->flame[1]);
	apx_rdoc_free(d);
	buf[0] = emit(m, 1);
	APX_ASSERT(buf[0] && !strstr(buf[0], "\"flame\""));
	free(buf[0]);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
