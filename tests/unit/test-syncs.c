/*
 * test-syncs.c - unit tests of what made the host wait in each synchronization
 * (lib/analysis/sync_cause.c, model.h enum apx_sync_cause): the classification of a sync by the
 * copy it waited for and the kernel before that copy (.item(), a bool's truth value, a
 * nonzero's count, .cpu(), a blocking .to('cuda')), else by its kind; which copy is the
 * sync's (the call just before it, returned just before it) and which is not (too far in
 * correlation ids or time, before a device sync); the totals per cause; the words the report
 * prints; and the sync-frequency finding naming the cause of each line, in its evidence, its
 * lines and its evidence table. Synthetic traces (tests/unit/tracegen.c).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/findings.h"
#include "analysis/model.h"
#include "apx-test.h"
#include "unit/analysed.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull

/* at::native's nonzero on PyTorch 2.x: cub::DeviceReduce::Sum over a TransformInputIterator
 * of NonZeroOp<float> (one tile: the single-tile kernel names the iterator) */
#define NONZERO_KERNEL                                                                         \
	"_ZN7at_cuda_detail3cub28DeviceReduceSingleTileKernelINS0_18DeviceReducePolicyIiiNS0_3"  \
	"SumEE9Policy600ENS0_23TransformInputIteratorIbN2at6native12_GLOBAL__N_19NonZeroOpIfEE" \
	"PKflEEPiiS4_iiEEvT0_T1_T2_T3_T4_"
/* torch.unique's sweep (cub::DeviceSelect::Unique) */
#define SELECT_KERNEL "_ZN7at_cuda_detail3cub23DeviceSelectSweepKernelINS0_17DispatchSelectIfE"

static const struct apx_an_sync *sync_at(const struct apx_model *m, size_t i)
{
	return APX_VEC_AT(&m->syncs, struct apx_an_sync, i);
}

APX_TEST(cause_of)
{
	/* a small read back: .item() (a bool's: 1 byte), or a count after a select kernel */
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_STREAM, APX_COPY_D2H, 4, 0),
		      APX_SYNC_CAUSE_ITEM);
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_STREAM, APX_COPY_D2H, 1, 0),
		      APX_SYNC_CAUSE_ITEM);
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_STREAM, APX_COPY_D2H, 8, 1),
		      APX_SYNC_CAUSE_NONZERO);
	/* more than a scalar: .cpu(), whatever ran before it */
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_STREAM, APX_COPY_D2H, 9, 1),
		      APX_SYNC_CAUSE_READ_BACK);
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_STREAM, APX_COPY_H2D, 4, 0),
		      APX_SYNC_CAUSE_UPLOAD);
	/* no copy (or one between devices): the kind */
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_STREAM, APX_COPY_D2D, 4, 0),
		      APX_SYNC_CAUSE_STREAM);
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_DEVICE, APX_COPY__COUNT, 0, 0),
		      APX_SYNC_CAUSE_DEVICE);
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_EVENT, APX_COPY__COUNT, 0, 0),
		      APX_SYNC_CAUSE_EVENT);
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_STREAM_WAIT_EVENT, APX_COPY__COUNT, 0, 0),
		      APX_SYNC_CAUSE_NONE);
	APX_ASSERT_EQ(apx_sync_cause_of(APX_SYNC_KIND_UNKNOWN, APX_COPY__COUNT, 0, 0),
		      APX_SYNC_CAUSE_UNKNOWN);
	return 0;
}

APX_TEST(select_kernels)
{
	static const char *const yes[] = {
		NONZERO_KERNEL, SELECT_KERNEL,
		/* embedding backward's and torch.unique's unique-by-key sweep */
		"_ZN14at_cuda_detail3cub6detail13unique_by_key28DeviceUniqueByKeySweepKernelINS2_",
		"_ZN2at6native8internal12_GLOBAL__N_124unique_bool_write_outputEiPKiPbPl",
	};
	static const char *const no[] = {
		"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffEEjfLi4EEEEEvT1_",
		"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32",
		"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE", "",
	};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		APX_ASSERT(apx_sync_kernel_selects(yes[i], strlen(yes[i])));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		APX_ASSERT(!apx_sync_kernel_selects(no[i], strlen(no[i])));
	/* a name is its bytes, not a C string: a match past len does not count */
	APX_ASSERT(!apx_sync_kernel_selects("reduce_NonZero", 7));
	APX_ASSERT(!apx_sync_kernel_selects(NULL, 0));
	return 0;
}

APX_TEST(cause_words)
{
	char b[96];

	APX_ASSERT_STREQ(apx_sync_cause_text(b, sizeof(b), APX_SYNC_CAUSE_ITEM, 4, 4),
			 ".item() (a 4-byte read back)");
	APX_ASSERT_STREQ(apx_sync_cause_text(b, sizeof(b), APX_SYNC_CAUSE_ITEM, 1, 1),
			 "bool(t) / `if t:` / .item() (a 1-byte read back)");
	APX_ASSERT_STREQ(apx_sync_cause_text(b, sizeof(b), APX_SYNC_CAUSE_ITEM, 2, 8),
			 ".item() (2 B-8 B read backs)");
	APX_ASSERT_STREQ(apx_sync_cause_text(b, sizeof(b), APX_SYNC_CAUSE_NONZERO, 4, 4),
			 "nonzero / x[mask] / unique (a 4-byte count read back)");
	APX_ASSERT_STREQ(apx_sync_cause_text(b, sizeof(b), APX_SYNC_CAUSE_READ_BACK, 33554432,
					     33554432),
			 ".cpu() / .tolist() / .numpy() (a 33.6 MB read back)");
	APX_ASSERT_STREQ(apx_sync_cause_text(b, sizeof(b), APX_SYNC_CAUSE_UPLOAD, 3072, 50331648),
			 "a blocking .to('cuda') (3.1 kB-50.3 MB copies)");
	APX_ASSERT_STREQ(apx_sync_cause_text(b, sizeof(b), APX_SYNC_CAUSE_DEVICE, 0, 0),
			 "torch.cuda.synchronize() (no copy)");
	APX_ASSERT_STREQ(apx_sync_cause_text(b, sizeof(b), APX_SYNC_CAUSE_STREAM, 0, 0),
			 "stream.synchronize() (no copy)");
	APX_ASSERT_STREQ(apx_sync_cause_text(b, sizeof(b), APX_SYNC_CAUSE_EVENT, 0, 0),
			 "event.synchronize()");
	APX_ASSERT_STREQ(apx_sync_cause_key(APX_SYNC_CAUSE_READ_BACK), "read_back");
	APX_ASSERT_STREQ(apx_sync_cause_key(APX_SYNC_CAUSE__COUNT), "?");
	/* a short buffer cuts the words, never past it */
	APX_ASSERT_STREQ(apx_sync_cause_text(b, 8, APX_SYNC_CAUSE_ITEM, 4, 4), ".item()");
	return 0;
}

/* Each case: the GPU work and copy call before the sync, then the sync; the cause and copy
 * the model gives it. The calls are 1 ms apart; times in us from 1 ms. */
APX_TEST(syncs_get_their_copy)
{
	struct apx_model *m;
	struct tg t;
	uint64_t s = 1 * MS;

	APX_ASSERT_OK(tg_open(&t));
	/* 0: .item(): a reduction, its 4-byte result read into pinned memory, a stream sync */
	tg_kernel(&t, s, 50 * US, "reduce_kernel", 0);
	tg_copy_call(&t, s + 60 * US, 2 * US, APX_COPY_D2H, APX_MEM_PINNED, 4, s + 5 * US,
		     s + 8 * US);
	tg_sync_call(&t, s + 10 * US, s + 70 * US, APX_SYNC_KIND_STREAM, 0);
	/* 1: torch.nonzero: the NonZeroOp reduction, its count read back */
	s += 1 * MS;
	tg_kernel(&t, s, 50 * US, NONZERO_KERNEL, 0);
	tg_copy_call(&t, s + 60 * US, 2 * US, APX_COPY_D2H, APX_MEM_PINNED, 4, s + 5 * US,
		     s + 8 * US);
	tg_sync_call(&t, s + 10 * US, s + 70 * US, APX_SYNC_KIND_STREAM, 0);
	/* 2: torch.unique: the select sweep, then a generic kernel, its 8-byte count read back
	 * (the last two kernels before the copy are looked at) */
	s += 1 * MS;
	tg_kernel(&t, s, 20 * US, SELECT_KERNEL, 0);
	tg_kernel(&t, s + 25 * US, 20 * US, "copy_kernel", 0);
	tg_copy_call(&t, s + 60 * US, 2 * US, APX_COPY_D2H, APX_MEM_PINNED, 8, s + 5 * US,
		     s + 8 * US);
	tg_sync_call(&t, s + 10 * US, s + 70 * US, APX_SYNC_KIND_STREAM, 2);	/* calls between */
	/* 3: if mask.any(): a bool's truth value (1 byte); case 2's select kernels were launched
	 * before case 2's sync: not this read's */
	s += 1 * MS;
	tg_copy_call(&t, s + 60 * US, 2 * US, APX_COPY_D2H, APX_MEM_PINNED, 1, s + 5 * US,
		     s + 8 * US);
	tg_sync_call(&t, s + 10 * US, s + 70 * US, APX_SYNC_KIND_STREAM, 0);
	/* 4: y.cpu() into pageable memory: the copy call returns when the copy is done */
	s += 1 * MS;
	tg_copy_call(&t, s + 10 * US, 500 * US, APX_COPY_D2H, APX_MEM_PAGEABLE, 32u << 20,
		     s + 5 * US, s + 515 * US);
	tg_sync_call(&t, s + 520 * US, s + 530 * US, APX_SYNC_KIND_STREAM, 0);
	/* 5: x.to('cuda') from pageable memory */
	s += 1 * MS;
	tg_copy_call(&t, s + 10 * US, 100 * US, APX_COPY_H2D, APX_MEM_PAGEABLE, 1u << 20,
		     s + 5 * US, s + 115 * US);
	tg_sync_call(&t, s + 120 * US, s + 125 * US, APX_SYNC_KIND_STREAM, 0);
	/* 6: torch.cuda.synchronize() right after a read back: the user's call, not the copy */
	s += 1 * MS;
	tg_copy_call(&t, s + 60 * US, 2 * US, APX_COPY_D2H, APX_MEM_PINNED, 4, s + 5 * US,
		     s + 8 * US);
	tg_sync_call(&t, s + 10 * US, s + 70 * US, APX_SYNC_KIND_DEVICE, 0);
	/* 7: a stream sync 2 ms after the copy call returned: not that copy's */
	s += 1 * MS;
	tg_copy_call(&t, s + 10 * US, 2 * US, APX_COPY_D2H, APX_MEM_PINNED, 4, s + 5 * US,
		     s + 8 * US);
	tg_sync_call(&t, s + 2100 * US, s + 2110 * US, APX_SYNC_KIND_STREAM, 0);
	/* 8: a stream sync 5 calls after the copy's: some other call's */
	s += 3 * MS;
	tg_copy_call(&t, s + 10 * US, 2 * US, APX_COPY_D2H, APX_MEM_PINNED, 4, s + 5 * US,
		     s + 8 * US);
	tg_sync_call(&t, s + 10 * US, s + 20 * US, APX_SYNC_KIND_STREAM, 4);
	/* 9: a copy without host times (older traces): its GPU copy inside the sync */
	s += 1 * MS;
	tg_copy(&t, s + 60 * US, 2 * US, APX_COPY_D2H, APX_MEM_PINNED, 4, 1, 0, 0);
	tg_sync_call(&t, s + 10 * US, s + 70 * US, APX_SYNC_KIND_STREAM, 0);
	/* 10, 11: an event sync; a device-side wait */
	s += 1 * MS;
	tg_sync_call(&t, s, s + 10 * US, APX_SYNC_KIND_EVENT, 0);
	tg_sync_call(&t, s + 20 * US, s + 20 * US, APX_SYNC_KIND_STREAM_WAIT_EVENT, 0);
	m = tg_model(&t, 1);
	APX_ASSERT(m);
	APX_ASSERT_EQ(m->syncs.n, 12);
	APX_ASSERT_EQ(sync_at(m, 0)->cause, APX_SYNC_CAUSE_ITEM);
	APX_ASSERT_EQ(sync_at(m, 0)->copy, 0);
	APX_ASSERT_EQ(sync_at(m, 1)->cause, APX_SYNC_CAUSE_NONZERO);
	APX_ASSERT_EQ(sync_at(m, 1)->copy, 1);
	APX_ASSERT_EQ(sync_at(m, 2)->cause, APX_SYNC_CAUSE_NONZERO);
	APX_ASSERT_EQ(sync_at(m, 3)->cause, APX_SYNC_CAUSE_ITEM);
	APX_ASSERT_EQ(sync_at(m, 4)->cause, APX_SYNC_CAUSE_READ_BACK);
	APX_ASSERT_EQ(sync_at(m, 4)->copy, 4);
	APX_ASSERT_EQ(sync_at(m, 5)->cause, APX_SYNC_CAUSE_UPLOAD);
	APX_ASSERT_EQ(sync_at(m, 6)->cause, APX_SYNC_CAUSE_DEVICE);
	APX_ASSERT_EQ(sync_at(m, 6)->copy, UINT32_MAX);
	APX_ASSERT_EQ(sync_at(m, 7)->cause, APX_SYNC_CAUSE_STREAM);
	APX_ASSERT_EQ(sync_at(m, 7)->copy, UINT32_MAX);
	APX_ASSERT_EQ(sync_at(m, 8)->cause, APX_SYNC_CAUSE_STREAM);
	APX_ASSERT_EQ(sync_at(m, 9)->cause, APX_SYNC_CAUSE_ITEM);
	APX_ASSERT_EQ(sync_at(m, 9)->copy, 9);
	APX_ASSERT_EQ(sync_at(m, 10)->cause, APX_SYNC_CAUSE_EVENT);
	APX_ASSERT_EQ(sync_at(m, 11)->cause, APX_SYNC_CAUSE_NONE);
	/* the totals: counts, host time, the copies' bytes */
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_ITEM].count, 3);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_ITEM].ns, 60 * US + 60 * US + 60 * US);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_ITEM].bytes, 4 + 1 + 4);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_ITEM].min_bytes, 1);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_ITEM].max_bytes, 4);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_NONZERO].count, 2);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_NONZERO].max_bytes, 8);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_READ_BACK].bytes, 32u << 20);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_STREAM].count, 2);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_STREAM].max_bytes, 0);
	APX_ASSERT_EQ(m->sync_cause[APX_SYNC_CAUSE_NONE].count, 1);
	{
		unsigned order[APX_SYNC_CAUSE__COUNT], n = apx_sync_causes_ranked(m, order);

		/* every cause with syncs but NONE, the most host time first: item 180 us,
		 * nonzero 120, device 60, stream 20, read back and event 10 each (the enum's
		 * order), upload 5 */
		APX_ASSERT_EQ(n, APX_SYNC_CAUSE__COUNT - 2);	/* not NONE, no UNKNOWN */
		APX_ASSERT_EQ(order[0], APX_SYNC_CAUSE_ITEM);
		APX_ASSERT_EQ(order[1], APX_SYNC_CAUSE_NONZERO);
		APX_ASSERT_EQ(order[4], APX_SYNC_CAUSE_READ_BACK);
		APX_ASSERT_EQ(order[5], APX_SYNC_CAUSE_EVENT);
		APX_ASSERT_EQ(order[6], APX_SYNC_CAUSE_UPLOAD);
		for (unsigned i = 1; i < n; i++)
			APX_ASSERT(m->sync_cause[order[i - 1]].ns >= m->sync_cause[order[i]].ns);
	}
	apx_model_free(m);

	/* no syncs: nothing, and no copy is anyone's */
	APX_ASSERT_OK(tg_open(&t));
	tg_copy_call(&t, 1 * MS, 2 * US, APX_COPY_D2H, APX_MEM_PINNED, 4, 1 * MS, 1 * MS + 5 * US);
	m = tg_model(&t, 1);
	APX_ASSERT(m && !m->syncs.n);
	for (unsigned c = 0; c < APX_SYNC_CAUSE__COUNT; c++)
		APX_ASSERT_EQ(m->sync_cause[c].count, 0);
	apx_model_free(m);
	return 0;
}

/* rule_sync_frequency's trace (test-stacks.c): each step a kernel, then a read back of bytes
 * from train.py:61 and the stream sync that waits for it; the finding and its model. */
static struct apx_model *read_each_step(struct apx_findings *fd, const char *kernel,
					uint64_t bytes)
{
	struct tg t;

	if (tg_open(&t) < 0)
		return NULL;
	tg_frame(&t, 1, "/home/u/train.py", "train", 61);
	tg_stack(&t, 1, (const uint64_t[]){ 1 }, 1);
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t s = 1 * MS + i * 140 * US;

		t.stack = 0;
		tg_kernel(&t, s, 100 * US, kernel, 0);
		t.stack = 1;
		tg_copy_call(&t, s + 100 * US, 1 * US, APX_COPY_D2H, APX_MEM_PINNED, bytes,
			     s + 5 * US, s + 8 * US);
		tg_sync_call(&t, s + 10 * US, s + 110 * US, APX_SYNC_KIND_STREAM, 0);
		tg_marker(&t, s, s + 140 * US, "step");
	}
	return tg_analyse(&t, fd);
}

/* A .item() in train.py:61 each step: the finding names the cause in the line's evidence, its
 * typed line and its table; the fix is the general one. */
APX_TEST(sync_frequency_names_the_cause)
{
	static struct apx_findings fd;
	struct apx_model *m = read_each_step(&fd, "reduce_kernel", 4);
	const struct apx_finding *f;

	APX_ASSERT(m);
	f = tg_find(&fd, "sync-frequency");
	APX_ASSERT(f);
	APX_ASSERT(f->nlines == 1);
	APX_ASSERT_EQ(f->lines[0].line, 61);
	APX_ASSERT_STREQ(f->lines[0].cause_key, "item");
	APX_ASSERT_STREQ(f->lines[0].cause, ".item() (a 4-byte read back)");
	APX_ASSERT(f->lines[0].has_per_step);
	APX_ASSERT(f->lines[0].per_step > 0.9 && f->lines[0].per_step <= 1.0);
	APX_ASSERT(strstr(f->evidence, "/home/u/train.py:61: 100 syncs (1.0 a step), 10.00 ms: "
				       ".item() (a 4-byte read back)\n"));
	APX_ASSERT(strstr(f->evidence, "what the syncs waited for:\n"
				       "  .item() (a 4-byte read back): 100 syncs, 10.00 ms\n"));
	APX_ASSERT_STREQ(f->table.label_key, "cause");
	APX_ASSERT_EQ(f->table.nrows, 1);
	APX_ASSERT_STREQ(f->table.row[0].label, "item");
	APX_ASSERT_EQ((uint64_t)f->table.row[0].v[0], 100);	/* syncs */
	APX_ASSERT_EQ((uint64_t)f->table.row[0].v[1], 100 * 100 * US);	/* host blocked */
	APX_ASSERT_EQ((uint64_t)f->table.row[0].v[2], 400);	/* bytes */
	APX_ASSERT(!strstr(f->fix, "The top cause"));
	apx_model_free(m);
	return 0;
}

/* torch.nonzero each step: its count read back, and the fix says how to keep the shape. */
APX_TEST(sync_frequency_nonzero_fix)
{
	static struct apx_findings fd;
	struct apx_model *m = read_each_step(&fd, NONZERO_KERNEL, 4);
	const struct apx_finding *f;

	APX_ASSERT(m);
	f = tg_find(&fd, "sync-frequency");
	APX_ASSERT(f && f->nlines == 1);
	APX_ASSERT_STREQ(f->lines[0].cause_key, "nonzero");
	APX_ASSERT_STREQ(f->lines[0].cause,
			 "nonzero / x[mask] / unique (a 4-byte count read back)");
	APX_ASSERT_STREQ(f->table.row[0].label, "nonzero");
	APX_ASSERT(strstr(f->fix, "torch.nonzero_static(mask, size=N)"));
	apx_model_free(m);
	return 0;
}

APX_TEST_MAIN()
