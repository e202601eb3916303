/*
 * test-nccl.c - the collector's NCCL profiler plugin (lib/collector/nccl_plugin.c) without NCCL
 * or a GPU: calls ncclProfiler_v5 and ncclProfiler_v4 the way NCCL does (init, collective and
 * point-to-point events with kernel-channel and proxy-op children, recordEventState with the
 * kernel channel's stop timer, finalize), drains into a trace and reads the COLLECTIVE records
 * back. Also: inert before apx enables it, a full pool degrades and counts, proxy ops of other
 * processes (PXN) are ignored, operations whose channels never report are written partial,
 * a one-rank communicator's operations (no channel events from NCCL) are whole at their stop.
 * ctest unit-nccl.
 */
#include <stdlib.h>
#include <unistd.h>

#include "apx-test.h"

#include <apx/format.h>

#include "collector/nccl_plugin.h"

#include "base/banned.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now += 100;
}

#define MAXR 64
struct got {
	struct apx_rec r[MAXR];
	size_t n;
	int kv_comm;
};

/* Drain (or flush) into a fresh trace and read back its COLLECTIVE records and KVs. */
static int drain_to(struct got *g, int flush)
{
	char path[] = "/tmp/apx-test-nccl-XXXXXX";
	int fd = mkstemp(path);
	struct apx_writer *w;
	struct apx_reader *r;
	struct apx_rec h;

	if (fd < 0)
		return -1;
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "test-nccl");
	if (apx_writer_open_fd(fd, &h, NULL, &w) < 0)
		return -1;
	if (flush)
		apx_nccl_flush(w);
	else
		apx_nccl_drain(w, 0, 0);
	if (apx_writer_close(w, 1, 0) < 0 || apx_reader_open(path, &r, NULL) < 0)
		return -1;
	unlink(path);
	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {
		struct apx_chunk_iter it;

		if (apx_chunk_iter_init(&it, r, i, NULL) < 0)
			continue;
		while (apx_chunk_iter_next(&it, NULL) == 1) {
			if (it.rec.type == APX_REC_COLLECTIVE && g->n < MAXR)
				g->r[g->n++] = it.rec;
			if (it.rec.type == APX_REC_KV && it.rec.v[APX_KV_KEY] == 9 &&
			    !memcmp(it.rec.bytes[APX_KV_KEY], "nccl_comm", 9))
				g->kv_comm++;
		}
	}
	apx_reader_close(r);
	return 0;
}

static int enable(size_t slots)
{
	struct apx_nccl_opts o = { .slots = slots, .gpu_offset_ns = 1000, .device = 3,
				   .now_ns = fake_clock };

	apx_nccl_disable();
	return apx_nccl_enable(&o);
}

APX_TEST(names)
{
	APX_ASSERT_EQ(apx_nccl_func_of("AllReduce"), APX_COLL_ALL_REDUCE);
	APX_ASSERT_EQ(apx_nccl_func_of("ReduceScatter"), APX_COLL_REDUCE_SCATTER);
	APX_ASSERT_EQ(apx_nccl_func_of("Recv"), APX_COLL_RECV);
	APX_ASSERT_EQ(apx_nccl_func_of("SomethingNew"), APX_COLL_UNKNOWN);
	APX_ASSERT_EQ(apx_nccl_func_of(NULL), APX_COLL_UNKNOWN);
	APX_ASSERT_EQ(apx_nccl_dtype_of("ncclBfloat16"), APX_DT_BFLOAT16);
	APX_ASSERT_EQ(apx_nccl_dtype_of("ncclFloat32"), APX_DT_FLOAT32);
	APX_ASSERT_EQ(apx_nccl_dtype_of("ncclFloat8e4m3"), APX_DT_FP8_E4M3);
	APX_ASSERT_EQ(apx_nccl_algo_of("NVLSTree"), APX_ALGO_NVLS_TREE);
	APX_ASSERT_EQ(apx_nccl_algo_of("Ring"), APX_ALGO_RING);
	APX_ASSERT_EQ(apx_nccl_proto_of("LL128"), APX_PROTO_LL128);
	APX_ASSERT_EQ(apx_nccl_proto_of("Simple"), APX_PROTO_SIMPLE);
	APX_ASSERT_EQ(apx_nccl_dtype_bytes(APX_DT_BFLOAT16), 2);
	APX_ASSERT_EQ(apx_nccl_dtype_bytes(APX_DT_UNKNOWN), 0);
	APX_ASSERT_STREQ(apx_coll_func_name(APX_COLL_ALL_GATHER), "all_gather");
	APX_ASSERT_STREQ(apx_coll_func_name(200), "unknown");
	return 0;
}

APX_TEST(inert_before_enable)
{
	void *ctx = (void *)1, *h = (void *)1;
	int mask = -1;
	struct apx_nccl_descr_v5 d = { .type = APX_NCCL_EV_COLL };

	apx_nccl_disable();
	APX_ASSERT_EQ(ncclProfiler_v5.init(&ctx, 42, &mask, "c", 1, 2, 0, NULL), 0);
	APX_ASSERT_EQ(mask, 0);
	APX_ASSERT(ctx == NULL);
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &h, &d), 0);
	APX_ASSERT(h == NULL);
	APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(NULL), 0);
	return 0;
}

/* A v5 all-reduce on 2 channels with a CollApi parent, completed by its kernel channels. */
APX_TEST(v5_collective_kernel_channels)
{
	void *ctx, *api, *coll, *ch0, *ch1;
	int mask;
	struct apx_nccl_descr_v5 d;
	union apx_nccl_state_args a;
	struct apx_nccl_stats st;
	struct got g;
	const struct apx_rec *r;

	APX_ASSERT_OK(enable(16));
	APX_ASSERT_EQ(ncclProfiler_v5.init(&ctx, 0xabcdef, &mask, "world", 1, 4, 2, NULL), 0);
	APX_ASSERT(ctx != NULL);
	APX_ASSERT(mask & APX_NCCL_EV_COLL);
	APX_ASSERT(mask & APX_NCCL_EV_KERNEL_CH);
	APX_ASSERT(mask & APX_NCCL_EV_COLL_API);

	memset(&d, 0, sizeof(d));
	d.type = APX_NCCL_EV_COLL_API;
	d.u.collApi.func = "AllReduce";
	d.u.collApi.stream = (void *)0x5000;
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &api, &d), 0);
	APX_ASSERT(api != NULL);

	memset(&d, 0, sizeof(d));
	d.type = APX_NCCL_EV_COLL;
	d.parentObj = api;
	d.rank = 2;
	d.u.coll.seqNumber = 7;
	d.u.coll.func = "AllReduce";
	d.u.coll.count = 1024;
	d.u.coll.datatype = "ncclFloat32";
	d.u.coll.nChannels = 2;
	d.u.coll.algo = "Ring";
	d.u.coll.proto = "Simple";
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &coll, &d), 0);
	APX_ASSERT(coll != NULL);
	APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(api), 0);
	APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(coll), 0);	/* enqueued, not finished */
	APX_ASSERT_OK(drain_to(&g, 0));
	APX_ASSERT_EQ(g.n, 0);
	APX_ASSERT_EQ(g.kv_comm, 1);

	memset(&d, 0, sizeof(d));
	d.type = APX_NCCL_EV_KERNEL_CH;
	d.parentObj = coll;
	d.u.kernelCh.channelId = 0;
	d.u.kernelCh.pTimer = 50000;
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &ch0, &d), 0);
	d.u.kernelCh.channelId = 1;
	d.u.kernelCh.pTimer = 50100;
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &ch1, &d), 0);
	APX_ASSERT(ch0 && ch1 && ch0 != ch1);
	a.kernelCh.pTimer = 90000;
	APX_ASSERT_EQ(ncclProfiler_v5.recordEventState(ch0, APX_NCCL_STATE_KERNEL_CH_STOP, &a), 0);
	APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(ch0), 0);
	APX_ASSERT_OK(drain_to(&g, 0));
	APX_ASSERT_EQ(g.n, 0);				/* one channel still running */
	a.kernelCh.pTimer = 95000;
	APX_ASSERT_EQ(ncclProfiler_v5.recordEventState(ch1, APX_NCCL_STATE_KERNEL_CH_STOP, &a), 0);
	APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(ch1), 0);
	APX_ASSERT_OK(drain_to(&g, 0));
	APX_ASSERT_EQ(g.n, 1);
	r = &g.r[0];
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_FUNC], APX_COLL_ALL_REDUCE);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_COUNT], 1024);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_DATATYPE], APX_DT_FLOAT32);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_BYTES], 4096);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_ALGO], APX_ALGO_RING);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_PROTO], APX_PROTO_SIMPLE);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_CHANNELS], 2);
	APX_ASSERT_EQ(apx_rec_i64(r, APX_COLLECTIVE_PEER), -1);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_COMM], 0xabcdef);
	APX_ASSERT_EQ(apx_rec_i64(r, APX_COLLECTIVE_RANK), 2);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_NRANKS], 4);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_SEQ], 7);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_STREAM], 0x5000);
	APX_ASSERT_EQ(apx_rec_i64(r, APX_COLLECTIVE_DEVICE), 3);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_GPU_TIMER_START], 50000);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_GPU_TIMER_END], 95000);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_START_NS], 49000);	/* minus the GPU offset */
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_END_NS], 94000);
	APX_ASSERT(r->v[APX_COLLECTIVE_ENQUEUE_END_NS] > r->v[APX_COLLECTIVE_ENQUEUE_NS]);
	APX_ASSERT_EQ(r->v[APX_COLLECTIVE_FLAGS], APX_COLL_F_GPU_TIMES);
	APX_ASSERT_EQ(ncclProfiler_v5.finalize(ctx), 0);
	apx_nccl_stats(&st);
	APX_ASSERT_EQ(st.version, 5);
	APX_ASSERT_EQ(st.written, 1);
	APX_ASSERT_EQ(st.pool_full, 0);
	apx_nccl_disable();
	return 0;
}

/* A v5 send of count elements of dtype to peer on one channel. */
static void send_descr(struct apx_nccl_descr_v5 *d, size_t count, const char *dtype, int peer)
{
	memset(d, 0, sizeof(*d));
	d->type = APX_NCCL_EV_P2P;
	d->u.p2p.func = "Send";
	d->u.p2p.count = count;
	d->u.p2p.datatype = dtype;
	d->u.p2p.peer = peer;
	d->u.p2p.nChannels = 1;
}

/* A v5 send with a proxy op and one kernel channel; a PXN proxy op of another process is
 * ignored; kernel-channel children of unknown parents are refused. */
APX_TEST(v5_p2p_proxy)
{
	void *ctx, *op, *px, *foreign, *ch, *orphan;
	int mask;
	struct apx_nccl_descr_v5 d;
	union apx_nccl_state_args a;
	struct apx_nccl_stats st;
	struct got g;

	APX_ASSERT_OK(enable(16));
	APX_ASSERT_EQ(ncclProfiler_v5.init(&ctx, 77, &mask, "pp", 2, 2, 0, NULL), 0);
	send_descr(&d, 100, "ncclBfloat16", 1);
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &op, &d), 0);
	APX_ASSERT(op != NULL);

	memset(&d, 0, sizeof(d));
	d.type = APX_NCCL_EV_PROXY_OP;
	d.parentObj = op;
	d.u.proxyOp.pid = getpid();
	d.u.proxyOp.isSend = 1;
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &px, &d), 0);
	APX_ASSERT(px != NULL);
	d.u.proxyOp.pid = getpid() + 1;
	d.parentObj = (void *)0x10;		/* another process's object: never touched */
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &foreign, &d), 0);
	APX_ASSERT(foreign == NULL);

	memset(&d, 0, sizeof(d));
	d.type = APX_NCCL_EV_KERNEL_CH;
	d.parentObj = (void *)&d;		/* not one of ours */
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &orphan, &d), 0);
	APX_ASSERT(orphan == NULL);
	d.parentObj = op;
	d.u.kernelCh.pTimer = 7000;
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &ch, &d), 0);
	APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(op), 0);
	a.kernelCh.pTimer = 8000;
	APX_ASSERT_EQ(ncclProfiler_v5.recordEventState(ch, APX_NCCL_STATE_KERNEL_CH_STOP, &a), 0);
	APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(ch), 0);
	APX_ASSERT_OK(drain_to(&g, 0));
	APX_ASSERT_EQ(g.n, 0);				/* the proxy op still holds it */
	APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(px), 0);
	APX_ASSERT_OK(drain_to(&g, 0));
	APX_ASSERT_EQ(g.n, 1);
	APX_ASSERT_EQ(g.r[0].v[APX_COLLECTIVE_FUNC], APX_COLL_SEND);
	APX_ASSERT_EQ(apx_rec_i64(&g.r[0], APX_COLLECTIVE_PEER), 1);
	APX_ASSERT_EQ(g.r[0].v[APX_COLLECTIVE_BYTES], 200);
	APX_ASSERT_EQ(g.r[0].v[APX_COLLECTIVE_FLAGS], APX_COLL_F_P2P | APX_COLL_F_GPU_TIMES);
	APX_ASSERT_EQ(g.r[0].v[APX_COLLECTIVE_END_NS] - g.r[0].v[APX_COLLECTIVE_START_NS], 1000);
	apx_nccl_stats(&st);
	APX_ASSERT_EQ(st.foreign, 1);
	APX_ASSERT_EQ(st.unknown_parent, 1);
	apx_nccl_disable();
	return 0;
}

/* A one-rank communicator's send to itself gets no kernel-channel event from NCCL: it is
 * written at its stop, not held for the stale sweep, and not flagged partial; a loop of them
 * does not fill the pool. */
APX_TEST(v5_one_rank_no_channels)
{
	void *ctx, *op, *ch;
	int mask;
	struct apx_nccl_descr_v5 d;
	struct apx_nccl_stats st;
	struct got g;

	APX_ASSERT_OK(enable(2));
	APX_ASSERT_EQ(ncclProfiler_v5.init(&ctx, 91, &mask, "self", 1, 1, 0, NULL), 0);
	send_descr(&d, 256, "ncclFloat32", 0);
	for (int i = 0; i < 5; i++) {		/* more than the pool's 2 slots */
		APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &op, &d), 0);
		APX_ASSERT(op != NULL);
		APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(op), 0);
		APX_ASSERT_OK(drain_to(&g, 0));
		APX_ASSERT_EQ(g.n, 1);
		APX_ASSERT_EQ(g.r[0].v[APX_COLLECTIVE_FLAGS], APX_COLL_F_P2P);
		APX_ASSERT_EQ(g.r[0].v[APX_COLLECTIVE_BYTES], 1024);
		APX_ASSERT_EQ(g.r[0].v[APX_COLLECTIVE_NRANKS], 1);
	}
	/* a child of the written operation (a later NCCL's channel event) is counted, not kept */
	memset(&d, 0, sizeof(d));
	d.type = APX_NCCL_EV_KERNEL_CH;
	d.parentObj = op;
	d.u.kernelCh.pTimer = 7000;
	APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &ch, &d), 0);
	APX_ASSERT(ch == NULL);
	apx_nccl_stats(&st);
	APX_ASSERT_EQ(st.pool_full, 0);
	APX_ASSERT_EQ(st.partial, 0);
	APX_ASSERT_EQ(st.unknown_parent, 1);
	apx_nccl_disable();
	return 0;
}

static int g_wakes;

static void count_wake(void)
{
	g_wakes++;
}

/* The writer is woken once each time a quarter of the pool waits to be drained (a tight loop
 * of small operations would empty the pool between its 100 ms wake-ups), and no more. */
APX_TEST(wake_at_quarter_pool)
{
	void *ctx, *op;
	int mask;
	struct apx_nccl_descr_v5 d;
	struct apx_nccl_opts o = { .slots = 16, .device = 0, .now_ns = fake_clock,
				   .wake = count_wake };
	struct apx_nccl_stats st;
	struct got g;

	apx_nccl_disable();
	APX_ASSERT_OK(apx_nccl_enable(&o));
	g_wakes = 0;
	APX_ASSERT_EQ(ncclProfiler_v5.init(&ctx, 92, &mask, "self", 1, 1, 0, NULL), 0);
	send_descr(&d, 64, "ncclFloat32", 0);
	for (int round = 1; round <= 2; round++) {
		for (int i = 0; i < 7; i++) {	/* 16 / 4 = 4 wakes the writer, 5-7 do not */
			APX_ASSERT_EQ(ncclProfiler_v5.startEvent(ctx, &op, &d), 0);
			APX_ASSERT(op != NULL);
			APX_ASSERT_EQ(ncclProfiler_v5.stopEvent(op), 0);
			APX_ASSERT_EQ(g_wakes, round - 1 + (i >= 3));
		}
		APX_ASSERT_OK(drain_to(&g, 0));
		APX_ASSERT_EQ(g.n, 7);
	}
	apx_nccl_stats(&st);
	APX_ASSERT_EQ(st.pool_full, 0);
	apx_nccl_disable();
	return 0;
}

/* v4's table (uint8_t type, init(ctx, mask, name, hash, ...)); a broadcast whose channels never
 * report is written partial at the end; a full pool refuses and counts. */
APX_TEST(v4_pool_full_and_partial)
{
	void *ctx, *h[6];
	int mask;
	struct apx_nccl_descr_v4 d;
	struct apx_nccl_stats st;
	struct got g;

	APX_ASSERT_OK(enable(4));
	APX_ASSERT_EQ(ncclProfiler_v4.init(&ctx, &mask, "w4", 0x44, 1, 8, 5, NULL), 0);
	APX_ASSERT(mask & APX_NCCL_EV_KERNEL_CH);
	APX_ASSERT(!(mask & APX_NCCL_EV_COLL_API));	/* v5 events are not v4's */
	memset(&d, 0, sizeof(d));
	d.type = APX_NCCL_EV_COLL;
	d.u.coll.func = "Broadcast";
	d.u.coll.root = 3;
	d.u.coll.count = 10;
	d.u.coll.datatype = "ncclInt64";
	d.u.coll.nChannels = 1;
	for (int i = 0; i < 6; i++) {
		d.u.coll.seqNumber = (uint64_t)i;
		APX_ASSERT_EQ(ncclProfiler_v4.startEvent(ctx, &h[i], &d), 0);
		APX_ASSERT((i < 4) == (h[i] != NULL));
		APX_ASSERT_EQ(ncclProfiler_v4.stopEvent(h[i]), 0);
	}
	apx_nccl_stats(&st);
	APX_ASSERT_EQ(st.pool_full, 2);
	APX_ASSERT_EQ(st.version, 4);
	APX_ASSERT_OK(drain_to(&g, 1));
	APX_ASSERT_EQ(g.n, 4);
	for (size_t i = 0; i < g.n; i++) {
		APX_ASSERT_EQ(g.r[i].v[APX_COLLECTIVE_FUNC], APX_COLL_BROADCAST);
		APX_ASSERT_EQ(apx_rec_i64(&g.r[i], APX_COLLECTIVE_PEER), 3);
		APX_ASSERT_EQ(g.r[i].v[APX_COLLECTIVE_BYTES], 80);
		APX_ASSERT_EQ(g.r[i].v[APX_COLLECTIVE_NRANKS], 8);
		APX_ASSERT_EQ(g.r[i].v[APX_COLLECTIVE_FLAGS], APX_COLL_F_PARTIAL);
		APX_ASSERT_EQ(g.r[i].v[APX_COLLECTIVE_START_NS], 0);
	}
	/* the slots came back: the pool takes operations again */
	APX_ASSERT_EQ(ncclProfiler_v4.startEvent(ctx, &h[0], &d), 0);
	APX_ASSERT(h[0] != NULL);
	apx_nccl_disable();
	return 0;
}

APX_TEST_MAIN()
