/*
 * test_encode.c - unit test of the collector's encoder (lib/collector/encode.c) without a GPU:
 * builds a CUPTI activity buffer by hand (kernel with an access-policy window, pageable H2D
 * copy whose host address and fingerprint were seen by the API callbacks, memset, pinned
 * allocation, stream sync, unified-memory migration, device), encodes it into a trace with
 * apx_enc_buffer (as the writer thread does; CUPTI's cuptiActivityGetNextRecord works without
 * a driver); then puts a host synchronization into the event ring as the callbacks do (ring.c)
 * and drains it; reads the trace back and checks every mapped field. The allocation calls'
 * callbacks (alloc_calls.c) with hand-made callback data: a successful call's Python stack
 * joined to its MEMORY record by correlation id, failed calls as ALLOC_FAILED records, every
 * call's host time (a free's too) as an API record at level light and none at level api,
 * nothing outside the collection window. Run by ctest (label unit) where CUPTI is built.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#include "collector/collector.h"
#include "collector/nvml_metrics.h"
#include "collector/pystacks.h"

#include "base/banned.h"

static int failures;

#define CHECK(cond)                                                                             \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
			failures++;                                                             \
		}                                                                               \
	} while (0)

/* src_pystack.c's side, which walks real Python frames: here every call has stack 5 on
 * thread 99 (alloc_calls.c calls these) */
uint32_t apx_pystack_here(uint32_t *ret_tid)
{
	*ret_tid = 99;
	return 5;
}

void apx_pystack_at_call(uint32_t corr)
{
	apx_pystacks_set_corr(corr, 5, 99);
}

/* src_replay.c's: whether kernels without times are replays (kept) or in flight (left out) */
static int replay_on;

int apx_replay_wanted(void)
{
	return replay_on;
}

/* One allocation call through alloc_calls.c: enter, then exit returning ret. */
static void alloc_call(struct apx_collector *c, CUpti_CallbackId cbid, void *params, uint32_t corr,
		       CUresult ret)
{
	uint64_t data = 0;
	CUpti_CallbackData cb;

	memset(&cb, 0, sizeof(cb));
	cb.callbackSite = CUPTI_API_ENTER;
	cb.functionParams = params;
	cb.correlationId = corr;
	cb.correlationData = &data;
	apx_alloc_callback(c, cbid, &cb);
	cb.callbackSite = CUPTI_API_EXIT;
	cb.functionReturnValue = &ret;
	apx_alloc_callback(c, cbid, &cb);
}

static uint8_t buf[1 << 16] __attribute__((aligned(8)));
static size_t used;

static void put(const void *rec, size_t size)
{
	memcpy(buf + used, rec, size);
	used += (size + 7) & ~(size_t)7;
}

int main(void)
{
	static struct apx_hostptr_slot hp[16];
	static struct apx_enc enc;
	CUaccessPolicyWindow win = { (void *)0x7f0000100000ull, 4u << 20, 1.0f,
				     CU_ACCESS_PROPERTY_PERSISTING, CU_ACCESS_PROPERTY_STREAMING };
	CUpti_ActivityKernel10 k;
	CUpti_ActivityMemcpy6 m;
	CUpti_ActivityMemset4 ms;
	CUpti_ActivityMemory4 mem;
	CUpti_ActivitySynchronization2 sy;
	CUpti_ActivityUnifiedMemoryCounter3 u;
	CUpti_ActivityDevice5 d;
	char path[] = "/tmp/apx-test-encode-XXXXXX";
	struct apx_rec hdr;
	struct apx_reader *r;
	struct apx_diag diag;
	int fd, seen[APX_REC_TYPE__COUNT] = { 0 }, capture_edges = 0, failed = 0;
	static struct apx_py_runtime no_python;	/* the side table by correlation id only */

	CHECK(apx_pystacks_init(&no_python) == 0);

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 1000;
	k.end = 3000;
	k.deviceId = 0;
	k.streamId = 7;
	k.correlationId = 11;
	k.name = "_Z6kernelv";
	k.gridX = 128, k.gridY = 1, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
	k.registersPerThread = 32;
	k.staticSharedMemory = 1024;
	k.graphId = 5;
	k.pAccessPolicyWindow = &win;
	put(&k, sizeof(k));
	{	/* in flight at a forced flush: no times, not a replay: left out, counted */
		CUpti_ActivityKernel10 z = k;

		z.start = z.end = 0;
		z.correlationId = 99;
		put(&z, sizeof(z));
	}
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.bytes = 64u << 20;
	m.start = 4000;
	m.end = 9000;
	m.streamId = 7;
	m.correlationId = 12;
	put(&m, sizeof(m));
	{	/* a copy in flight at a forced flush: start all ones, end 0: left out */
		CUpti_ActivityMemcpy6 z = m;

		z.start = UINT64_MAX;
		z.end = 0;
		z.correlationId = 97;
		put(&z, sizeof(z));
	}
	memset(&ms, 0, sizeof(ms));
	ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	ms.bytes = 4096;
	ms.value = 0;
	ms.start = 9100;
	ms.end = 9200;
	ms.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	ms.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
	put(&ms, sizeof(ms));
	memset(&mem, 0, sizeof(mem));
	mem.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	mem.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	mem.address = 0x7f0000200000ull;
	mem.bytes = 1u << 20;
	mem.timestamp = 500;
	mem.correlationId = 21;
	put(&mem, sizeof(mem));
	apx_pystack_at_call(21);	/* its cuMemHostAlloc's enter callback */
	memset(&sy, 0, sizeof(sy));
	sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	sy.start = 9300;
	sy.end = 9900;
	sy.streamId = 7;
	sy.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	put(&sy, sizeof(sy));
	memset(&u, 0, sizeof(u));
	u.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
	u.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD;
	u.value = 2u << 20;
	u.start = 10000;
	u.end = 11000;
	u.address = 0x7f0000300000ull;
	put(&u, sizeof(u));
	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.name = "NVIDIA H200";
	d.numMultiprocessors = 132;
	d.l2CacheSize = 60u << 20;
	d.globalMemoryBandwidth = 4800000000ull;	/* KB/s */
	d.computeCapabilityMajor = 9;
	put(&d, sizeof(d));

	/* the API callbacks saw the copy's host address under correlation id 12, its call from
	 * enter (1500) to exit (2600), and its source's fingerprint at the exit */
	atomic_store(&hp[12].src, 0x7f0000400000ull);
	atomic_store(&hp[12].dst, 0x7e0000000000ull);
	atomic_store(&hp[12].bytes, 64u << 20);
	atomic_store(&hp[12].enter_ns, 1500);
	atomic_store(&hp[12].host_fp, 0x9e3779b97f4a7c15ull);
	atomic_store(&hp[12].exit_ns, 2600);
	atomic_store(&hp[12].corr, 12);

	fd = mkstemp(path);
	CHECK(fd >= 0);
	apx_rec_init(&hdr, APX_REC_HEADER);
	apx_rec_set_str(&hdr, APX_HEADER_PRODUCER, "test");
	CHECK(apx_writer_open_fd(fd, &hdr, NULL, &enc.w) == 0);
	enc.hp = hp;
	enc.hp_mask = 15;
	{	/* a host sync before any activity buffer: our clock, not a foreign one */
		struct apx_event early = { .kind = APX_EV_SYNC, .cfg_kind = APX_SYNC_KIND_STREAM,
					   .ts_ns = 100, .end_ns = 200 };

		apx_enc_event(&enc, &early);
		CHECK(enc.foreign_clock == 0);
	}
	{	/* a replayed kernel's L2 hit rate (src_replay.c), metric 5 of the replay set */
		double v = 82.75;
		struct apx_event ev = { .kind = APX_EV_COUNTER, .cfg_kind = 5, .corr = 11,
					.device = 0, .target = 13 };

		memcpy(&ev.value, &v, sizeof(v));
		apx_enc_event(&enc, &ev);
		ev.cfg_kind = 999;		/* not a metric of the set: dropped */
		apx_enc_event(&enc, &ev);
	}
	{	/* a capture range's edges (capture.c): kv capture = "start <ns>" / "stop <ns>" */
		struct apx_event ev = { .kind = APX_EV_CAPTURE, .ts_ns = 123456789012ull, .value = 1 };

		apx_enc_event(&enc, &ev);
		ev.ts_ns = 223456789012ull;
		ev.value = 0;
		apx_enc_event(&enc, &ev);
	}
	CHECK(apx_enc_buffer(&enc, buf, used) == 9);
	CHECK(enc.kernels == 1 && enc.memcpys == 1 && enc.hostptr_joined == 1 && !enc.foreign);
	CHECK(enc.untimed == 2);
	CHECK(enc.host_fps_joined == 1);
	{	/* a cuCtxSynchronize seen by the callbacks: enter 5000, exit 9000 */
		static struct apx_event ring[APX_EVENT_SLOTS];
		static struct apx_collector col;
		struct apx_event *ev;
		uint64_t pos;

		col.ev = ring;
		col.enc = &enc;
		ev = apx_ring_begin(&col, &pos);
		ev->kind = APX_EV_SYNC;
		ev->cfg_kind = APX_SYNC_KIND_DEVICE;
		ev->ts_ns = 5000;
		ev->end_ns = 9000;
		ev->context = 1;
		ev->tid = 77;
		ev->corr = 40;
		apx_ring_commit(ev, pos);
		ev = apx_ring_begin(&col, &pos);	/* claimed, never committed: not drained */
		apx_ring_drain(&col);
		CHECK(col.ev_tail == 1 && col.ev_lost == 0);
	}
	{	/* allocation calls: a cudaMalloc that ran out of memory, a pinned one too, one that
		 * succeeded (its stack by correlation id), one outside the collection window */
		static struct apx_event ring[APX_EVENT_SLOTS];
		static struct apx_collector col;
		cuMemAlloc_v2_params big = { NULL, (size_t)1 << 40 };
		cuMemHostAlloc_params pin = { NULL, (size_t)3 << 30, 0 };
		cuMemAlloc_v2_params ok = { NULL, 4096 };
		uint32_t tid = 0;

		col.ev = ring;
		col.enc = &enc;
		atomic_store(&col.enabled, 1);
		alloc_call(&col, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &big, 31,
			   CUDA_ERROR_OUT_OF_MEMORY);
		alloc_call(&col, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, &pin, 32,
			   CUDA_ERROR_OUT_OF_MEMORY);
		alloc_call(&col, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &ok, 33, CUDA_SUCCESS);
		CHECK(apx_pystack_of_corr(33, &tid) == 5 && tid == 99);
		atomic_store(&col.enabled, 0);
		alloc_call(&col, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &big, 34,
			   CUDA_ERROR_OUT_OF_MEMORY);
		CHECK(apx_pystack_of_corr(34, &tid) == 0);
		atomic_store(&col.enabled, 1);
		alloc_call(&col, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, NULL, 36, CUDA_SUCCESS);
		col.api_level = 1;	/* CUPTI's API records have them: no second record */
		alloc_call(&col, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &ok, 37, CUDA_SUCCESS);
		col.api_level = 0;
		/* 31 and 32: timed and failed; 33 and the free 36: timed */
		CHECK(atomic_load(&col.ev_head) == 6);
		{	/* a launch is none of its business: not handled, nothing recorded */
			CUpti_CallbackData cb;

			memset(&cb, 0, sizeof(cb));
			cb.callbackSite = CUPTI_API_ENTER;
			cb.correlationId = 35;
			atomic_store(&col.enabled, 1);
			CHECK(apx_alloc_callback(&col, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb) == 0);
			CHECK(apx_pystack_of_corr(35, &tid) == 0);
		}
		apx_ring_drain(&col);
		CHECK(col.ev_tail == 6 && col.ev_lost == 0);
	}
	{	/* a power reading (src_nvml.c); self_cost.c's wait on its own stream: dropped */
		double w = 691.5;
		struct apx_event ev = { .kind = APX_EV_METRIC, .cfg_kind = APX_NV_POWER,
					.device = 0, .ts_ns = 300, .end_ns = 400 };
		struct apx_event own = { .kind = APX_EV_SYNC, .cfg_kind = APX_SYNC_KIND_STREAM,
					 .ts_ns = 600, .end_ns = 700, .context = 3, .stream = 9 };

		memcpy(&ev.value, &w, sizeof(w));
		apx_enc_event(&enc, &ev);
		ev.cfg_kind = APX_NV__COUNT;	/* no such reading: dropped */
		apx_enc_event(&enc, &ev);
		apx_enc_drop_stream(3, 9);
		apx_enc_event(&enc, &own);
	}
	{	/* under --replay a kernel without times is a replayed launch: kept */
		CUpti_ActivityKernel10 z = k;

		z.start = z.end = 0;
		z.correlationId = 98;
		used = 0;
		put(&z, sizeof(z));
		replay_on = 1;
		CHECK(apx_enc_buffer(&enc, buf, used) == 1);
		CHECK(enc.kernels == 2 && enc.untimed == 2);
		replay_on = 0;
	}
	CHECK(apx_writer_close(enc.w, 20000, 0) == 0);

	CHECK(apx_reader_open(path, &r, &diag) == 0);
	CHECK(apx_reader_status(r) == APX_READ_COMPLETE);
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {
		struct apx_chunk_iter it;
		const struct apx_rec *x = &it.rec;
		size_t len;
		const char *name;

		if (apx_chunk_iter_init(&it, r, i, &diag) < 0)
			continue;
		while (apx_chunk_iter_next(&it, &diag) > 0) {
			seen[x->type]++;
			switch (x->type) {
			case APX_REC_KERNEL:
				name = apx_reader_string(r, x->v[APX_KERNEL_NAME], &len);
				CHECK(name && len == 10 && !memcmp(name, "_Z6kernelv", 10));
				if (x->v[APX_KERNEL_CORRELATION] == 98) {	/* the replayed one */
					CHECK(!x->v[APX_KERNEL_START_NS] && !x->v[APX_KERNEL_END_NS]);
					break;
				}
				CHECK(x->v[APX_KERNEL_CORRELATION] == 11);
				CHECK(x->v[APX_KERNEL_START_NS] == 1000 && x->v[APX_KERNEL_END_NS] == 3000);
				CHECK(x->v[APX_KERNEL_GRID_X] == 128 && x->v[APX_KERNEL_BLOCK_X] == 256);
				CHECK(x->v[APX_KERNEL_REGISTERS] == 32 && x->v[APX_KERNEL_GRAPH_ID] == 5);
				CHECK(x->v[APX_KERNEL_APW_BASE] == 0x7f0000100000ull);
				CHECK(x->v[APX_KERNEL_APW_BYTES] == 4u << 20);
				CHECK(x->v[APX_KERNEL_APW_HIT_PPM] == 1000000);
				CHECK(x->v[APX_KERNEL_APW_PROPS] == (APX_ACCESS_PERSISTING |
								      APX_ACCESS_STREAMING << 4));
				break;
			case APX_REC_MEMCPY:
				CHECK(x->v[APX_MEMCPY_COPY_KIND] == APX_COPY_H2D);
				CHECK(x->v[APX_MEMCPY_SRC_KIND] == APX_MEM_PAGEABLE);
				CHECK(x->v[APX_MEMCPY_DST_KIND] == APX_MEM_DEVICE);
				CHECK(x->v[APX_MEMCPY_BYTES] == 64u << 20);
				CHECK(x->v[APX_MEMCPY_HOST_ADDR] == 0x7f0000400000ull);
				CHECK(x->v[APX_MEMCPY_API_ENTER_NS] == 1500);
				CHECK(x->v[APX_MEMCPY_API_EXIT_NS] == 2600);
				CHECK(x->v[APX_MEMCPY_HOST_FP] == 0x9e3779b97f4a7c15ull);
				CHECK(x->v[APX_MEMCPY_STREAM] == 7 && x->v[APX_MEMCPY_COPY_COUNT] == 1);
				break;
			case APX_REC_COUNTER:
				name = apx_reader_string(r, x->v[APX_COUNTER_NAME], &len);
				CHECK(name && len == 26 && !memcmp(name, "lts__t_sector_hit_rate.pct", 26));
				CHECK(apx_rec_f64(x, APX_COUNTER_VALUE) == 82.75);
				CHECK(x->v[APX_COUNTER_CORRELATION] == 11 && x->v[APX_COUNTER_PASSES] == 13);
				break;
			case APX_REC_MEMSET:
				CHECK(x->v[APX_MEMSET_BYTES] == 4096 && x->v[APX_MEMSET_FLAGS] == 1);
				break;
			case APX_REC_KV: {
				static const char *const want[] = { "start 123456789012",
								    "stop 223456789012" };

				CHECK(x->v[APX_KV_KEY] == 7 && !memcmp(x->bytes[APX_KV_KEY], "capture", 7));
				CHECK(capture_edges < 2 &&
				      x->v[APX_KV_VALUE] == strlen(want[capture_edges]) &&
				      !memcmp(x->bytes[APX_KV_VALUE], want[capture_edges],
					      x->v[APX_KV_VALUE]));
				capture_edges++;
				break;
			}
			case APX_REC_MEMORY:
				if (x->v[APX_MEMORY_OP] == APX_MEMOP_ALLOC_FAILED) {
					int pinned = x->v[APX_MEMORY_CORRELATION] == 32;

					CHECK(x->v[APX_MEMORY_CORRELATION] == 31 + (unsigned)failed);
					CHECK(x->v[APX_MEMORY_MEM_KIND] ==
					      (pinned ? APX_MEM_PINNED : APX_MEM_DEVICE));
					CHECK(x->v[APX_MEMORY_BYTES] == 0 && x->v[APX_MEMORY_ADDRESS] == 0);
					CHECK(x->v[APX_MEMORY_REQUESTED_BYTES] ==
					      (pinned ? 3ull << 30 : 1ull << 40));
					CHECK(x->v[APX_MEMORY_ERROR] == CUDA_ERROR_OUT_OF_MEMORY);
					CHECK(x->v[APX_MEMORY_STACK] == 5 && x->v[APX_MEMORY_TID] == 99);
					CHECK(x->v[APX_MEMORY_TS_NS] > 0);
					failed++;
					break;
				}
				CHECK(x->v[APX_MEMORY_OP] == APX_MEMOP_ALLOC);
				CHECK(x->v[APX_MEMORY_MEM_KIND] == APX_MEM_PINNED);
				CHECK(x->v[APX_MEMORY_BYTES] == 1u << 20);
				CHECK(x->v[APX_MEMORY_STACK] == 5 && x->v[APX_MEMORY_TID] == 99);
				CHECK(x->v[APX_MEMORY_ERROR] == 0 && x->v[APX_MEMORY_REQUESTED_BYTES] == 0);
				break;
			case APX_REC_API: {	/* an allocator call's host time (level light) */
				uint64_t c = x->v[APX_API_CORRELATION];

				CHECK(c == 31 || c == 32 || c == 33 || c == 36);
				CHECK(x->v[APX_API_CBID] ==
				      (c == 32 ? CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc
				       : c == 36 ? CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2
						 : CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2));
				CHECK(x->v[APX_API_DOMAIN] == APX_API_DRIVER);
				CHECK(apx_rec_i64(x, APX_API_RETURN) ==
				      (c <= 32 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS));
				CHECK(x->v[APX_API_STACK] == 5 && x->v[APX_API_TID] == 99);
				CHECK(x->v[APX_API_START_NS] > 0 &&
				      x->v[APX_API_END_NS] >= x->v[APX_API_START_NS]);
				name = apx_reader_string(r, x->v[APX_API_NAME], &len);
				CHECK(!x->v[APX_API_NAME] ||
				      (name && len >= 8 && !memcmp(name, c == 36 ? "cuMemFre" : "cuMemAll", 8)) ||
				      c == 32);
				break;
			}
			case APX_REC_SYNC:
				if (x->v[APX_SYNC_KIND] == APX_SYNC_KIND_DEVICE) {	/* from the ring */
					CHECK(x->v[APX_SYNC_START_NS] == 5000);
					CHECK(x->v[APX_SYNC_END_NS] == 9000);
					CHECK(x->v[APX_SYNC_TID] == 77 && x->v[APX_SYNC_CORRELATION] == 40);
					break;
				}
				if (x->v[APX_SYNC_START_NS] == 100) {	/* the early one */
					CHECK(x->v[APX_SYNC_END_NS] == 200);
					break;
				}
				CHECK(x->v[APX_SYNC_KIND] == APX_SYNC_KIND_STREAM);
				CHECK(x->v[APX_SYNC_STREAM] == 7 && x->v[APX_SYNC_EVENT] == 0);
				break;
			case APX_REC_METRIC:
				name = apx_reader_string(r, x->v[APX_METRIC_NAME], &len);
				CHECK(name && len == 10 && !memcmp(name, "nvml.power", 10));
				name = apx_reader_string(r, x->v[APX_METRIC_UNIT], &len);
				CHECK(name && len == 1 && name[0] == 'W');
				CHECK(x->v[APX_METRIC_TS_NS] == 300);
				CHECK(x->v[APX_METRIC_END_NS] == 400);
				CHECK(apx_rec_f64(x, APX_METRIC_VALUE) == 691.5);
				break;
			case APX_REC_UVM:
				CHECK(x->v[APX_UVM_KIND] == APX_UVM_MIGRATE_H2D);
				CHECK(x->v[APX_UVM_BYTES] == 2u << 20);
				break;
			case APX_REC_DEVICE:
				CHECK(x->v[APX_DEVICE_SM_COUNT] == 132);
				CHECK(x->v[APX_DEVICE_L2_BYTES] == 60u << 20);
				CHECK(x->v[APX_DEVICE_MEM_BW_BPS] == 4800000000000ull);
				CHECK(x->v[APX_DEVICE_NAME] == 11);
				break;
			default:
				break;
			}
		}
	}
	CHECK(seen[APX_REC_KERNEL] == 2 && seen[APX_REC_MEMCPY] == 1 && seen[APX_REC_MEMSET] == 1);
	CHECK(seen[APX_REC_MEMORY] == 3 && failed == 2 && seen[APX_REC_API] == 4);
	CHECK(seen[APX_REC_SYNC] == 3 && seen[APX_REC_UVM] == 1);
	CHECK(seen[APX_REC_DEVICE] == 1 && seen[APX_REC_COUNTER] == 1 && seen[APX_REC_METRIC] == 1);
	CHECK(seen[APX_REC_KV] == 2 && capture_edges == 2);
	apx_reader_close(r);
	unlink(path);
	if (failures)
		return 1;
	printf("ok: encoder maps 7 CUPTI record kinds, a ring sync event, a power reading and "
	       "capture edges onto .apx records; self-cost's own wait dropped; an allocation's "
	       "stack joined, failed allocations recorded, allocator calls timed\n");
	return 0;
}
