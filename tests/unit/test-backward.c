/*
 * test-backward.c - unit tests of backward kernels attributed to their forward line
 * (apx analyze --python-backward nvtx): the names PyTorch gives its op ranges
 * (base/torch_nvtx.c, odd ones included), and on synthetic traces (tracegen.c) the join of
 * backward.c: forward op ranges with sequence numbers on the Python thread with launches that
 * carry stacks, autograd node ranges on the engine thread around kernels without stacks, both
 * thread ids (CUPTI's and the OS tid), a view whose line comes from the nearest launch, a node
 * with no forward range (unattributed, counted), a kernel outside any node; hotspots' GPU bwd
 * column and the coverage in the report; PyTorch's ranges out of the NVTX table and steps.
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
#include "base/torch_nvtx.h"
#include "report/doc.h"
#include "unit/analysed.h"
#include "unit/reported.h"

#include "base/banned.h"

#define MS 1000000ull
#define US 1000ull

static struct apx_findings fd;

static int parsed(const char *name, const char *op, uint64_t seq1)
{
	size_t op_len = 0;
	uint64_t seq = 0;

	if (!apx_torch_nvtx_parse(name, strlen(name), &op_len, &seq))
		return !op;
	return op && op_len == strlen(op) && !memcmp(name, op, op_len) && seq == seq1;
}

APX_TEST(torch_names)
{
	APX_ASSERT(parsed("aten::addmm, seq = 12, op_id = 345", "aten::addmm", 13));
	APX_ASSERT(parsed("aten::addmm, seq = 12", "aten::addmm", 13));
	APX_ASSERT(parsed("AddmmBackward0, seq = 0, op_id = 9", "AddmmBackward0", 1));
	APX_ASSERT(parsed("AddmmBackward, stashed seq=12", "AddmmBackward", 13));
	APX_ASSERT(parsed("aten::addmm seq=7", "aten::addmm", 8));
	APX_ASSERT(parsed("aten::mm, op_id = 7", "aten::mm", 0));
	APX_ASSERT(parsed("aten::linear, seq = 3, op_id = 4, sizes = [[2, 3], []], "
			  "input_op_ids = [(1, 0)]", "aten::linear", 4));
	APX_ASSERT(parsed("aten::mm", "aten::mm", 0));
	APX_ASSERT(parsed("c10d::allreduce_", "c10d::allreduce_", 0));
	APX_ASSERT(parsed("autograd::engine::evaluate_function: AddmmBackward0",
			  "autograd::engine::evaluate_function: AddmmBackward0", 0));
	APX_ASSERT(parsed("Optimizer.step#SGD.step, op_id = 12", "Optimizer.step#SGD.step", 0));
	/* a huge number saturates, never wraps */
	APX_ASSERT(parsed("aten::add, seq = 99999999999999999999999", "aten::add",
			  UINT64_MAX - 1 + 1));
	/* user ranges */
	APX_ASSERT(parsed("step", NULL, 0));
	APX_ASSERT(parsed("ProfilerStep#3", NULL, 0));
	APX_ASSERT(parsed("my range, seq = x", NULL, 0));
	APX_ASSERT(parsed("data::", NULL, 0));
	APX_ASSERT(parsed("cub::DeviceRadixSort", NULL, 0));	/* CCCL's: a library's range */
	APX_ASSERT(parsed("aten::", NULL, 0));
	APX_ASSERT(parsed("::load", NULL, 0));
	APX_ASSERT(parsed("a b::c", NULL, 0));
	APX_ASSERT(parsed(", seq = 3", NULL, 0));
	APX_ASSERT(parsed("", NULL, 0));
	APX_ASSERT(apx_torch_nvtx_is_backward("AddmmBackward0", 14));
	APX_ASSERT(apx_torch_nvtx_is_backward("MyFnBackward", 12));
	APX_ASSERT(!apx_torch_nvtx_is_backward("aten::addmm", 11));
	APX_ASSERT(!apx_torch_nvtx_is_backward("Backward", 8));
	return 0;
}

#define FWD_CUPTI 0x7f01u	/* the Python thread: CUPTI's id, OS tid 100 */
#define BWD_CUPTI 0x7f02u	/* autograd's engine thread: OS tid 200 */

/* Frames: train.py:10 train; model.py:20 attn, :30 mlp, :40 reshape (a view: launches
 * nothing, then :41 launches). Stacks 1 attn, 2 mlp, 3 :41, 4 train (loss.backward()). */
static void program(struct tg *t)
{
	static const uint64_t s1[] = { 2, 1 }, s2[] = { 3, 1 }, s3[] = { 5, 1 }, s4[] = { 1 };

	tg_frame(t, 1, "/home/u/train.py", "train", 10);
	tg_frame(t, 2, "/home/u/model.py", "attn", 20);
	tg_frame(t, 3, "/home/u/model.py", "mlp", 30);
	tg_frame(t, 4, "/home/u/model.py", "reshape", 40);
	tg_frame(t, 5, "/home/u/model.py", "reshape", 41);
	tg_stack(t, 1, s1, 2);
	tg_stack(t, 2, s2, 2);
	tg_stack(t, 3, s3, 2);
	tg_stack(t, 4, s4, 1);
}

/* A forward op range, three ways: step 0 PyTorch 2.x names, step 1 as the collector writes
 * them (name cut, seq in a field), step 2 1.13 / old names. */
static void op(struct tg *t, int way, uint64_t s, uint64_t e, const char *name, uint64_t seq,
	       uint64_t tid)
{
	char buf[128];

	if (way == 1) {
		tg_marker_op(t, s, e, name, tid, seq);
		return;
	}
	if (seq == UINT64_MAX)
		snprintf(buf, sizeof(buf), "%s%s", name, way == 0 ? ", op_id = 77" : "");
	else if (way == 0)
		snprintf(buf, sizeof(buf), "%s, seq = %llu, op_id = 77", name,
			 (unsigned long long)seq);
	else if (strstr(name, "Backward"))
		snprintf(buf, sizeof(buf), "%s, stashed seq=%llu", name, (unsigned long long)seq);
	else
		snprintf(buf, sizeof(buf), "%s, seq = %llu", name, (unsigned long long)seq);
	tg_marker_on(t, s, e, buf, tid);
}

/* Three steps of 10 ms, each: forward on the Python thread, backward on the engine thread (in
 * step 2 its ranges name the thread by OS tid: the join takes either id). Per step, backward
 * GPU time: 620 us of attn (AddmmBackward0: 20 us of them launched in its evaluate_function
 * range after the node's own), 100 us of mlp (GeluBackward0), 50 us of the view's line
 * (nearest launch), 40 us in a node with no forward range, 10 us outside nodes. */
static void training(struct tg *t)
{
	program(t);
	for (int i = 0; i < 3; i++) {
		uint64_t b = (uint64_t)i * 10 * MS, q = 100 * (uint64_t)i;	/* seq base */
		uint64_t bt = i == 2 ? 200 : BWD_CUPTI;

		tg_marker_on(t, b, b + 9 * MS, "train_step", FWD_CUPTI);
		op(t, i, b, b + 100 * US, "aten::linear", 10 + q, FWD_CUPTI);
		op(t, i, b + 5 * US, b + 10 * US, "aten::t", 10 + q, FWD_CUPTI);
		op(t, i, b + 20 * US, b + 90 * US, "aten::addmm", 11 + q, FWD_CUPTI);
		t->stack = 1;
		tg_kernel_launch(t, b + 1 * MS, 200 * US, "gemm_fwd", b + 30 * US, FWD_CUPTI, 100);
		op(t, i, b + 200 * US, b + 300 * US, "aten::gelu", 12 + q, FWD_CUPTI);
		t->stack = 2;
		tg_kernel_launch(t, b + 1300 * US, 100 * US, "gelu_fwd", b + 250 * US, FWD_CUPTI,
				 100);
		op(t, i, b + 400 * US, b + 410 * US, "aten::view", 13 + q, FWD_CUPTI);
		t->stack = 3;
		tg_kernel_launch(t, b + 1500 * US, 20 * US, "add_fwd", b + 500 * US, FWD_CUPTI, 100);
		t->stack = 4;	/* loss.backward(): launched with a stack, not a backward kernel */
		tg_kernel_launch(t, b + 1900 * US, 5 * US, "fill", b + 1900 * US, FWD_CUPTI, 100);
		t->stack = 0;
		/* backward, on the engine thread */
		tg_marker_on(t, b + 2000 * US, b + 2100 * US,
			     "autograd::engine::evaluate_function: ViewBackward0", bt);
		op(t, i, b + 2001 * US, b + 2099 * US, "ViewBackward0", 13 + q, bt);
		tg_kernel_launch(t, b + 3000 * US, 50 * US, "copy_bwd", b + 2050 * US, BWD_CUPTI,
				 200);
		op(t, i, b + 2200 * US, b + 2300 * US, "GeluBackward0", 12 + q, bt);
		op(t, i, b + 2210 * US, b + 2290 * US, "aten::gelu_backward", UINT64_MAX, bt);
		tg_kernel_launch(t, b + 3100 * US, 100 * US, "gelu_bwd", b + 2250 * US, BWD_CUPTI,
				 200);
		/* the engine's range around the node: a kernel after the node's own range (the
		 * sum_to of a broadcast gradient) is still the node's */
		tg_marker_on(t, b + 2390 * US, b + 2650 * US,
			     "autograd::engine::evaluate_function: AddmmBackward0", bt);
		op(t, i, b + 2400 * US, b + 2600 * US, "AddmmBackward0", 11 + q, bt);
		tg_kernel_launch(t, b + 3950 * US, 20 * US, "sum_to", b + 2620 * US, BWD_CUPTI, 200);
		tg_kernel_launch(t, b + 3300 * US, 300 * US, "gemm_bwd", b + 2450 * US, BWD_CUPTI,
				 200);
		tg_kernel_launch(t, b + 3600 * US, 300 * US, "gemm_bwd", b + 2500 * US, BWD_CUPTI,
				 200);
		op(t, i, b + 2700 * US, b + 2710 * US, "TBackward0", 10 + q, bt);
		op(t, i, b + 2800 * US, b + 2900 * US, "MissingBackward0", 999 + q, bt);
		tg_kernel_launch(t, b + 4000 * US, 40 * US, "lost_bwd", b + 2850 * US, BWD_CUPTI,
				 200);
		tg_kernel_launch(t, b + 4100 * US, 10 * US, "outside", b + 3000 * US, BWD_CUPTI,
				 200);
	}
}

static struct apx_model *model_of(struct tg *t)
{
	struct apx_model *m = apx_model_new();

	if (!m || tg_close(t) < 0 || apx_model_add_file(m, t->path, NULL) < 0 ||
	    apx_model_finish(m) < 0) {
		unlink(t->path);
		apx_model_free(m);
		return NULL;
	}
	unlink(t->path);
	memset(&fd, 0, sizeof(fd));
	apx_rules_run(m, &fd);
	return m;
}

static const struct apx_an_hotspot *hotspot_at(const struct apx_model *m, uint32_t line)
{
	for (size_t i = 0; i < m->hotspots.n; i++) {
		const struct apx_an_hotspot *h = APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, i);
		const struct apx_an_line *l = APX_VEC_AT(&m->lines, struct apx_an_line, h->line);

		if (l->line == line)
			return h;
	}
	return NULL;
}

APX_TEST(attribution)
{
	const struct apx_an_hotspot *h;
	struct apx_model *m;
	struct tg t;

	APX_ASSERT_OK(tg_open(&t));
	training(&t);
	m = model_of(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->bwd.launch_times, 3u * 11);
	APX_ASSERT_EQ(m->bwd.nostack_kernels, 3u * 7);
	APX_ASSERT_EQ(m->bwd.nostack_ns, 3 * 820 * US);
	APX_ASSERT_EQ(m->bwd.in_node_ns, 3 * 810 * US);
	APX_ASSERT_EQ(m->bwd.attr_ns, 3 * 770 * US);
	APX_ASSERT_EQ(m->bwd.attr_kernels, 3u * 5);
	APX_ASSERT_EQ(m->bwd.near_ns, 3 * 50 * US);
	APX_ASSERT_EQ(m->bwd.no_forward_ns, 3 * 40 * US);
	APX_ASSERT((h = hotspot_at(m, 20)));	/* attn: its forward GEMMs and AddmmBackward0's */
	APX_ASSERT_EQ(h->gpu_ns, 3 * 200 * US);
	APX_ASSERT_EQ(h->gpu_bwd_ns, 3 * 620 * US);
	APX_ASSERT_EQ(h->bwd_launches, 9u);
	APX_ASSERT((h = hotspot_at(m, 30)));
	APX_ASSERT_EQ(h->gpu_bwd_ns, 3 * 100 * US);
	APX_ASSERT((h = hotspot_at(m, 41)));	/* the view's next launch */
	APX_ASSERT_EQ(h->gpu_bwd_ns, 3 * 50 * US);
	APX_ASSERT((h = hotspot_at(m, 10)));	/* loss.backward(): its own launch only */
	APX_ASSERT_EQ(h->gpu_bwd_ns, 0u);
	APX_ASSERT_EQ(h->gpu_ns, 3 * 5 * US);
	/* sorted by forward + backward GPU time: attn first */
	h = APX_VEC_AT(&m->hotspots, struct apx_an_hotspot, 0);
	APX_ASSERT_EQ(APX_VEC_AT(&m->lines, struct apx_an_line, h->line)->line, 20u);
	/* PyTorch's ranges: counted, not in the NVTX table, not the steps */
	APX_ASSERT_EQ(m->ranges.n, 1u);
	APX_ASSERT_EQ(m->torch_ranges, 3u * 13);
	APX_ASSERT_EQ(m->steady.source, APX_STEPS_NVTX);
	APX_ASSERT(!strcmp(m->steady.name, "train_step"));
	apx_model_free(m);
	return 0;
}

static char *emit(const struct apx_model *m, int json)
{
	return tg_report(m, &fd, 1u << APX_SEC_HOTSPOTS, json);
}

APX_TEST(report)
{
	struct apx_model *m;
	struct tg t;
	char *j, *x;

	APX_ASSERT_OK(tg_open(&t));
	training(&t);
	m = model_of(&t);
	APX_ASSERT(m);
	j = emit(m, 1);
	x = emit(m, 0);
	APX_ASSERT(j && x);
	APX_ASSERT(strstr(j, "\"gpu_bwd_ns\":1860000"));
	APX_ASSERT(strstr(j, "\"backward\":{\"nostack_ns\":2460000,"));
	APX_ASSERT(strstr(j, "\"coverage_pct\":93.90"));	/* 770 of 820 us a step */
	APX_ASSERT(strstr(j, "\"torch_ranges\":39"));
	APX_ASSERT(strstr(x, "GPU bwd"));
	APX_ASSERT(strstr(x, "backward: 93.9 % of the GPU time launched without a Python stack"));
	free(j);
	free(x);
	apx_model_free(m);
	return 0;
}

/* Without launch times (an ordinary trace): nothing changes, no backward keys. */
APX_TEST(off_without_launch_times)
{
	struct apx_model *m;
	struct tg t;
	char *j;

	APX_ASSERT_OK(tg_open(&t));
	program(&t);
	t.stack = 1;
	tg_kernel(&t, 1 * MS, 100 * US, "gemm", 7);
	t.stack = 0;
	tg_kernel(&t, 2 * MS, 100 * US, "gemm_bwd", 7);
	tg_marker_on(&t, 0, 3 * MS, "AddmmBackward0, seq = 3", BWD_CUPTI);
	m = model_of(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->bwd.launch_times, 0u);
	APX_ASSERT(!m->bwd.kernel_line);
	j = emit(m, 1);
	APX_ASSERT(j && !strstr(j, "gpu_bwd_ns") && !strstr(j, "\"backward\""));
	free(j);
	apx_model_free(m);
	return 0;
}

/* Launch times but no PyTorch ranges (emit_nvtx did not start): said, nothing attributed. */
APX_TEST(no_ranges)
{
	struct apx_model *m;
	struct tg t;
	char *x;

	APX_ASSERT_OK(tg_open(&t));
	program(&t);
	tg_kernel_launch(&t, 2 * MS, 100 * US, "gemm_bwd", 1 * MS, BWD_CUPTI, 200);
	t.stack = 1;
	tg_kernel_launch(&t, 3 * MS, 100 * US, "gemm", 1 * MS, FWD_CUPTI, 100);
	m = model_of(&t);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->bwd.nostack_ns, 100 * US);
	APX_ASSERT_EQ(m->bwd.attr_ns, 0u);
	x = emit(m, 0);
	APX_ASSERT(x && strstr(x, "no PyTorch op ranges"));
	free(x);
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
