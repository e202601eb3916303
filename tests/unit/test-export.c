/*
 * test-export.c - unit tests of the timeline exporters (lib/export): the walk's layout (a flow
 * from each launch to its kernel, NVTX ranges projected onto the stream over the work launched
 * inside them, a partially overlapping range moved to a second lane, ends handed out in time
 * order with inner slices first) and what the Chrome and Perfetto writers make of it; NCCL
 * collectives: matched to the NCCL kernel under them (a group of two in one kernel),
 * their Kineto arguments, host events, a kernel-less one on its own track, distributedInfo
 * (rank 0 of 1 without a rank), the rank identity of an export (nccl.c). What real consumers
 * need: a CUPTI thread id shown as the OS tid the trace pairs it with (one track per thread,
 * every parent described first), sub-microsecond overlaps of a stream's kernels trimmed rather
 * than moved to a lane, long names cut visibly and counted, counter units in the Perfetto file.
 * Also a real trace's cross-stream waits (tests/fixtures/suite/pageable_fixed.apx: stream 7 waits
 * 20 times for stream 13's copies) as one "stream wait" flow each, from the awaited copy's
 * slice on stream 13 to the waiting kernel's on stream 7, as many as apx report counts, in the
 * walk, the Chrome file and the Perfetto file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apx-test.h"
#include "analysis/model.h"
#include "analysis/store.h"
#include "analysis/whatif/whatif.h"
#include "export/export.h"
#include "export/walk.h"
#include "unit/tracegen.h"

#include "base/banned.h"

#define US 1000ull
#define MS 1000000ull

/* A level-api trace: two launches inside an NVTX range "step", a range "late" that overlaps
 * "step" partially, kernels running after their launches. */
static int make_trace(struct tg *t)
{
	if (tg_open(t) < 0)
		return -1;
	tg_marker(t, 2 * MS, 3 * MS, "step");
	tg_marker(t, 2 * MS + 500 * US, 6 * MS, "late");
	tg_api(t, 2 * MS + 100 * US, 2 * MS + 110 * US, 1, 100, "cudaLaunchKernel");
	tg_api(t, 2 * MS + 200 * US, 2 * MS + 210 * US, 2, 100, "cudaLaunchKernel");
	tg_kernel(t, 4 * MS, 1 * MS, "k1", 7);	/* corr 1 */
	tg_kernel(t, 5 * MS, 1 * MS, "k2", 7);	/* corr 2 */
	return tg_close(t);
}

struct seen {
	int slices, flows_out, flows_in, projections, lane2, ends, bad_end_order;
	uint64_t proj_start, proj_end, last_end;
	char names[8][64];
};

static int on_track(void *ctx, const struct apx_wk_track *t)
{
	struct seen *s = ctx;

	if (t->kind == APX_WK_THREAD_NVTX && t->lane == 1)
		s->lane2++;
	return 0;
}

static int on_slice(void *ctx, const struct apx_wk_slice *sl)
{
	struct seen *s = ctx;

	if (s->slices < 8)
		snprintf(s->names[s->slices], sizeof(s->names[0]), "%s", sl->name);
	s->slices++;
	s->flows_out += sl->flow_out != 0;
	s->flows_in += sl->flow_in != 0;
	if (sl->type == APX_ES__COUNT && !strcmp(sl->name, "step")) {
		s->projections++;
		s->proj_start = sl->start;
		s->proj_end = sl->end;
	}
	return 0;
}

static int on_counter(void *ctx, uint64_t track, uint64_t ts, double v)
{
	(void)ctx;
	(void)track;
	(void)ts;
	(void)v;
	return 0;
}

static int on_end(void *ctx, uint64_t track, uint64_t ts)
{
	struct seen *s = ctx;

	(void)track;
	s->bad_end_order += ts < s->last_end;
	s->last_end = ts;
	s->ends++;
	return 0;
}

/* Exporter fmt's file of st (with waits, NULL none) at a fresh temporary path in out
 * ("/tmp/apx-export-XXXXXX": made, then removed so that the exporter makes it). 0, or the
 * exporter's error. */
static int export_to(struct apx_store *st, const struct apx_export_waits *waits, const char *fmt,
		     char *out, struct apx_diag *diag)
{
	int fd = mkstemp(out);

	if (fd < 0)
		return -errno;
	close(fd);
	unlink(out);
	return apx_exporter_find(fmt)->write(st, waits, out, diag);
}

APX_TEST(walk_flows_projection_lanes)
{
	struct tg t;
	struct apx_store *st;
	struct seen s = { 0 };
	struct apx_wk_ops ops = { &s, on_track, on_slice, on_counter, on_end };
	const char *p;

	APX_ASSERT_OK(make_trace(&t));
	p = t.path;
	APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
	APX_ASSERT_OK(apx_walk(st, NULL, &ops, NULL));
	/* 2 ranges, 2 launches, 2 kernels, 1 projection: "late" launched nothing */
	APX_ASSERT_EQ(s.slices, 2 + 2 + 2 + 1);
	APX_ASSERT_EQ(s.flows_out, 2);
	APX_ASSERT_EQ(s.flows_in, 2);
	/* "step" launched k1 and k2: its GPU span is 4..6 ms after the run's start (1 us) */
	APX_ASSERT_EQ(s.projections, 1);
	APX_ASSERT_EQ(s.proj_start, 4 * MS - 1000);
	APX_ASSERT_EQ(s.proj_end, 6 * MS - 1000);
	APX_ASSERT_EQ(s.lane2, 1);		/* "late" overlaps "step" partially */
	APX_ASSERT_EQ(s.ends, s.slices);
	APX_ASSERT_EQ(s.bad_end_order, 0);
	APX_ASSERT_STREQ(s.names[0], "step");
	apx_store_free(st);
	unlink(t.path);
	return 0;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *q = hay; (q = strstr(q, needle)); q += strlen(needle))
		n++;
	return n;
}

APX_TEST(chrome_and_perfetto_files)
{
	static char buf[1 << 16];
	char out[] = "/tmp/apx-export-XXXXXX";
	struct apx_diag diag = { 0 };
	struct apx_store *st;
	struct tg t;
	const char *p;
	size_t n;
	FILE *f;

	APX_ASSERT_OK(make_trace(&t));
	p = t.path;
	APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
	APX_ASSERT_OK(export_to(st, NULL, "chrome", out, &diag));
	f = fopen(out, "r");
	APX_ASSERT(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	APX_ASSERT_EQ(count(buf, "\"cat\": \"kernel\""), 2);
	APX_ASSERT_EQ(count(buf, "\"cat\": \"cuda_runtime\""), 2);
	APX_ASSERT_EQ(count(buf, "\"cat\": \"gpu_user_annotation\""), 1);
	APX_ASSERT_EQ(count(buf, "\"ph\": \"s\""), 2);
	APX_ASSERT_EQ(count(buf, "\"ph\": \"f\""), 2);
	APX_ASSERT(strstr(buf, "\"ts\": 3999.000, \"dur\": 1000.000"));	/* k1, in us */
	/* Kineto's gpu_user_annotation: on the kernels' stream (pid = device, tid = stream) */
	APX_ASSERT(strstr(buf, "\"cat\": \"gpu_user_annotation\", \"name\": \"step\", "
			  "\"pid\": 0, \"tid\": 7, \"ts\": 3999.000, \"dur\": 2000.000, "
			  "\"args\": {\"range id\": 1}"));
	APX_ASSERT(strstr(buf, "\"cat\": \"user_annotation\", \"name\": \"step\", \"pid\": 100, "
			  "\"tid\": 281474976710656, \"ts\": 1999.000, \"dur\": 1000.000, "
			  "\"args\": {\"range id\": 1}"));
	APX_ASSERT(strstr(buf, "\"deviceProperties\""));
	unlink(out);

	APX_ASSERT_OK(apx_exporter_find("perfetto")->write(st, NULL, out, &diag));
	f = fopen(out, "rb");
	APX_ASSERT(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	APX_ASSERT(n > 100 && buf[0] == (1 << 3 | 2));	/* Trace.packet, length-delimited */
	APX_ASSERT(memmem(buf, n, "cudaLaunchKernel", 16));
	APX_ASSERT(memmem(buf, n, "k1", 2));
	unlink(out);
	apx_store_free(st);
	unlink(t.path);
	return 0;
}

/* Rank 1 of 2 (node-b): a compute kernel; an NCCL kernel under two grouped all-reduces (seq 0
 * 64 MiB, seq 1 1 MiB); a broadcast with GPU times and no kernel; an all-gather without GPU
 * times. tg_open_rank starts the trace at 1000 ns: times below are after that. */
static int make_rank_trace(struct tg *t)
{
	static const uint8_t uuid[16] = { 0xab, 1 };

	if (tg_open_rank(t, "node-b", uuid, 1, 2) < 0)
		return -1;
	tg_kernel(t, 2 * MS, 1 * MS, "sm90_gemm", 7);
	tg_kernel(t, 4 * MS, 2 * MS, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL("
		  "ncclDevKernelArgsStorage<4096ul>)", 13);
	tg_collective(t, 3 * MS, 4 * MS + 5 * US, 5 * MS, APX_COLL_ALL_REDUCE, 64 << 20, 0xabc, 0,
		      1, 2);
	tg_collective(t, 3 * MS + 10 * US, 5 * MS, 6 * MS - 5 * US, APX_COLL_ALL_REDUCE, 1 << 20,
		      0xabc, 1, 1, 2);
	tg_collective(t, 7 * MS, 8 * MS, 8 * MS + 500 * US, APX_COLL_BROADCAST, 4096, 0xabc, 2, 1, 2);
	tg_collective(t, 9 * MS, 0, 0, APX_COLL_ALL_GATHER, 8192, 0xabc, 3, 1, 2);
	return tg_close(t);
}

static size_t read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = 0;
	return n;
}

APX_TEST(nccl_match_and_dist_info)
{
	struct apx_export_nccl m;
	struct apx_export_dist d;
	struct apx_store *st;
	struct tg t;
	const char *p;
	size_t first = 99;

	APX_ASSERT_OK(make_rank_trace(&t));
	p = t.path;
	APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
	APX_ASSERT_EQ(st->coll.n, 4);
	APX_ASSERT_EQ(st->coll.start[3], 0);		/* no GPU times */
	APX_ASSERT_OK(apx_export_nccl_match(st, &m));
	/* kernel 1 (by start: the gemm is 0) runs both all-reduces; the others match nothing */
	APX_ASSERT_EQ(m.kernel_of[0], 1);
	APX_ASSERT_EQ(m.kernel_of[1], 1);
	APX_ASSERT_EQ(m.kernel_of[2], UINT32_MAX);
	APX_ASSERT_EQ(m.kernel_of[3], UINT32_MAX);
	APX_ASSERT_EQ(apx_export_nccl_of_kernel(&m, 1, &first), 2);
	APX_ASSERT_EQ(first, 0);
	APX_ASSERT_EQ(apx_export_nccl_of_kernel(&m, 0, &first), 0);
	apx_export_nccl_release(&m);
	apx_export_dist_info(st, &d);
	APX_ASSERT_EQ(d.rank, 1);
	APX_ASSERT_EQ(d.world, 2);
	APX_ASSERT_EQ(d.local_rank, 1);
	APX_ASSERT_EQ(d.ncomms, 1);
	APX_ASSERT_EQ(d.several, 0);
	apx_store_free(st);
	unlink(t.path);

	/* no rank in the header: the rank in its largest communicator */
	APX_ASSERT_OK(tg_open(&t));
	tg_collective(&t, 2 * MS, 0, 0, APX_COLL_ALL_REDUCE, 4096, 0x1, 0, 3, 4);
	tg_collective(&t, 3 * MS, 0, 0, APX_COLL_ALL_REDUCE, 4096, 0x2, 0, 5, 8);
	APX_ASSERT_OK(tg_close(&t));
	p = t.path;
	APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
	apx_export_dist_info(st, &d);
	APX_ASSERT_EQ(d.rank, 5);
	APX_ASSERT_EQ(d.world, 8);
	APX_ASSERT_EQ(d.ncomms, 2);
	apx_store_free(st);
	unlink(t.path);

	/* --from past the collectives: none kept */
	{
		struct apx_store_opts so = { .from_ns = 20 * MS };

		APX_ASSERT_OK(make_rank_trace(&t));
		p = t.path;
		APX_ASSERT_OK(apx_store_open(&p, 1, &so, &st, NULL));
		APX_ASSERT_EQ(st->coll.n, 0);
		apx_store_free(st);
		unlink(t.path);
	}
	return 0;
}

APX_TEST(chrome_collectives)
{
	static char buf[1 << 16];
	char out[] = "/tmp/apx-export-XXXXXX";
	struct apx_diag diag = { 0 };
	struct apx_store *st;
	const char *p, *di;
	struct tg t;

	APX_ASSERT_OK(make_rank_trace(&t));
	p = t.path;
	APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
	APX_ASSERT_OK(export_to(st, NULL, "chrome", out, &diag));
	APX_ASSERT(read_file(out, buf, sizeof(buf)) > 0);
	/* Kineto's distributedInfo, on the third line (Holistic Trace Analysis's rank scan) */
	di = strstr(buf, "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 1, \"world_size\": "
		     "2, \"local_rank\": 1, \"pg_count\": 1, \"pg_config\": [{\"pg_name\": "
		     "\"0000000000000abc\", \"pg_desc\": \"nccl communicator\", \"backend_config\": "
		     "\"cuda:nccl\", \"pg_size\": 2}], \"nccl_version\": \"unknown\"},\n");
	APX_ASSERT(di && di == strstr(buf, "\n\"schemaVersion\": 1,\n") + 21);
	/* the NCCL kernel carries the first all-reduce's arguments and says it ran two */
	APX_ASSERT(strstr(buf, "\"Collective name\": \"allreduce\", \"In msg nelems\": 33554432, "
			  "\"Out msg nelems\": 33554432, \"Group size\": 2, \"dtype\": \"BFloat16\", "
			  "\"Process Group Name\": \"0000000000000abc\", \"Rank\": 1, \"Seq\": 0, "
			  "\"nccl algorithm\": \"ring\", \"nccl protocol\": \"simple\", "
			  "\"nccl channels\": 4, \"nccl bytes\": 67108864, \"nccl collectives\": 2"));
	APX_ASSERT_EQ(count(buf, "\"nccl collectives\""), 1);
	/* a host event each; the all-gather's output is count x ranks */
	APX_ASSERT_EQ(count(buf, "\"cat\": \"cpu_op\", \"name\": \"record_param_comms\""), 4);
	APX_ASSERT(strstr(buf, "\"Collective name\": \"allgather\", \"In msg nelems\": 4096, "
			  "\"Out msg nelems\": 8192"));
	APX_ASSERT_EQ(count(buf, "\"name\": \"NCCL (host)\""), 1);
	/* the broadcast has no kernel under it: its own GPU event, on the NCCL stream the kernel
	 * taught (stream 13), in 500 us */
	APX_ASSERT_EQ(count(buf, "\"cat\": \"kernel\""), 3);
	APX_ASSERT(strstr(buf, "\"name\": \"nccl:broadcast\", \"pid\": 0, \"tid\": "
			  "2251799813685248, \"ts\": 7999.000, \"dur\": 500.000, \"args\": "
			  "{\"device\": 0, \"Collective name\": \"broadcast\""));
	APX_ASSERT_EQ(count(buf, "\"name\": \"NCCL (pid 1001)\""), 1);
	unlink(out);
	apx_store_free(st);
	unlink(t.path);

	/* a trace without a rank: rank 0 of 1, said, where HTA's rank scan looks (line 3) */
	APX_ASSERT_OK(make_trace(&t));
	p = t.path;
	APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
	APX_ASSERT_OK(apx_exporter_find("chrome")->write(st, NULL, out, &diag));
	APX_ASSERT(read_file(out, buf, sizeof(buf)) > 0);
	di = "{\n\"schemaVersion\": 1,\n\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, "
	     "\"world_size\": 1, \"pg_count\": 0, \"pg_config\": [], \"nccl_version\": \"unknown\"";
	APX_ASSERT(!strncmp(buf, di, strlen(di)));
	APX_ASSERT(!strstr(buf, "record_param_comms"));
	unlink(out);
	apx_store_free(st);
	unlink(t.path);
	return 0;
}

/* ---- exports the real consumers accept ------------------------------------------------------- */

#define CUPTI_TID 0x9533b640ull		/* low 32 bits of a pthread_t: CUPTI's thread id */
#define CUPTI_TID2 0x7777a640ull	/* another thread, never paired with its OS tid */

/* What a walk declared and where it put things. */
struct layout {
	uint64_t declared[64];
	size_t ndeclared;
	int orphans;			/* tracks whose parent was not declared before them */
	uint64_t thread_tids[8];	/* lane-0 thread tracks: tid */
	char thread_names[8][64];
	uint64_t thread_uuid[8];
	size_t nthreads;
	uint64_t tracks_of[8];		/* tracks of the API call, the sync and the marker */
	uint64_t max_lane;
	/* the slices of a test, in order */
	uint64_t start[16], end[16], trimmed[16], name_len[16];
	size_t name_bytes[16];
	int type[16];
	char name_end[16][48];
	size_t nslices;
};

static int declared_before(const struct layout *l, uint64_t uuid)
{
	for (size_t i = 0; i < l->ndeclared; i++)
		if (l->declared[i] == uuid)
			return 1;
	return 0;
}

static int lay_track(void *ctx, const struct apx_wk_track *t)
{
	struct layout *l = ctx;

	if (t->parent && !declared_before(l, t->parent))
		l->orphans++;
	if (l->ndeclared < 64)
		l->declared[l->ndeclared++] = t->uuid;
	if (t->kind == APX_WK_THREAD && !t->lane && l->nthreads < 8) {
		l->thread_tids[l->nthreads] = t->tid;
		l->thread_uuid[l->nthreads] = t->uuid;
		snprintf(l->thread_names[l->nthreads++], sizeof(l->thread_names[0]), "%s", t->name);
	}
	if (t->lane > l->max_lane)
		l->max_lane = t->lane;
	return 0;
}

static int lay_slice(void *ctx, const struct apx_wk_slice *s)
{
	struct layout *l = ctx;
	size_t n = strlen(s->name), i = l->nslices;

	if (s->type == APX_ES_API)
		l->tracks_of[0] = s->track;
	else if (s->type == APX_ES_SYNC)
		l->tracks_of[1] = s->track;
	else if (s->type == APX_ES_MARKER && !strcmp(s->name, "fwd"))
		l->tracks_of[2] = s->track;
	if (i < 16) {
		l->start[i] = s->start;
		l->end[i] = s->end;
		l->trimmed[i] = s->trimmed_ns;
		l->name_len[i] = s->name_len;
		l->name_bytes[i] = n;
		l->type[i] = s->type;
		snprintf(l->name_end[i], sizeof(l->name_end[0]), "%s",
			 s->name + (n > 40 ? n - 40 : 0));
		l->nslices++;
	}
	return 0;
}

static int walk_file(const char *path, struct layout *l, struct apx_wk_stats *ws)
{
	struct apx_wk_ops ops = { l, lay_track, lay_slice, on_counter, NULL };
	struct apx_store *st;
	int r;

	if ((r = apx_store_open(&path, 1, NULL, &st, NULL)) < 0)
		return r;
	r = apx_walk(st, NULL, &ops, ws);
	apx_store_free(st);
	return r;
}

/* A host sync the collector's callbacks timed: the OS tid and the call's correlation id. */
static int sync_rec(struct tg *t, uint64_t start, uint64_t end, uint64_t tid, uint64_t corr)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_SYNC);
	r.v[APX_SYNC_START_NS] = start;
	r.v[APX_SYNC_END_NS] = end;
	r.v[APX_SYNC_KIND] = APX_SYNC_KIND_STREAM;
	r.v[APX_SYNC_STREAM] = 7;
	r.v[APX_SYNC_CORRELATION] = corr;
	r.v[APX_SYNC_TID] = tid;
	APX_ASSERT_OK(apx_writer_add(t->w, &r));
	return 0;
}

APX_TEST(walk_one_track_per_thread)
{
	struct layout l = { 0 };
	struct apx_wk_stats ws = { 0 };
	struct tg t;

	/* the main thread (OS tid 4242) under CUPTI's id in its API call and NVTX range, under its
	 * OS tid in the sync the callbacks timed (same correlation id); a second thread with an
	 * NVTX range and nothing that pairs its CUPTI id */
	APX_ASSERT_OK(tg_open(&t));
	tg_thread(&t, 4242, "pt_main_thread");
	tg_marker_on(&t, 2 * MS, 4 * MS, "fwd", CUPTI_TID);
	tg_api(&t, 3 * MS, 3 * MS + 500 * US, 10, CUPTI_TID, "cudaStreamSynchronize");
	APX_ASSERT(!sync_rec(&t, 3 * MS + 10 * US, 3 * MS + 490 * US, 4242, 10));
	tg_marker_on(&t, 5 * MS, 6 * MS, "loader", CUPTI_TID2);
	tg_kernel(&t, 7 * MS, 1 * MS, "k", 7);
	APX_ASSERT_OK(tg_close(&t));
	APX_ASSERT_OK(walk_file(t.path, &l, &ws));
	unlink(t.path);

	APX_ASSERT_EQ(l.orphans, 0);		/* every parent described before its child */
	APX_ASSERT_EQ(ws.threads_mapped, 1);
	APX_ASSERT_EQ(l.nthreads, 2);		/* not three: the main thread is one */
	APX_ASSERT_EQ(l.thread_tids[0], 4242);
	APX_ASSERT_STREQ(l.thread_names[0], "pt_main_thread");
	APX_ASSERT_EQ(l.thread_tids[1], CUPTI_TID2);	/* unpaired: CUPTI's id, said */
	APX_ASSERT_STREQ(l.thread_names[1], "thread 2004330048 (CUPTI id)");
	/* the API call and the sync on the main thread's track, its NVTX range on a child of it */
	APX_ASSERT_EQ(l.tracks_of[0], l.thread_uuid[0]);
	APX_ASSERT_EQ(l.tracks_of[1], l.thread_uuid[0]);
	APX_ASSERT(l.tracks_of[2] && l.tracks_of[2] != l.thread_uuid[0]);
	return 0;
}

APX_TEST(walk_trims_sub_us_overlaps)
{
	struct layout l = { 0 };
	struct apx_wk_stats ws = { 0 };
	struct tg t;

	/* k1 ends 300 ns after k2 starts (back-to-back, timestamps overlap): trimmed, one lane;
	 * k3 and k4 overlap by 5 us (real concurrency): k4 on the stream's second lane. A range
	 * "r" holds k1's launch (no API records: its start): its projection ends where k1 now
	 * ends, so k2 does not overlap it either. */
	APX_ASSERT_OK(tg_open(&t));
	tg_marker(&t, 2 * MS - 1 * US, 2 * MS + 1 * US, "r");
	tg_kernel(&t, 2 * MS, 10 * US + 300, "k1", 7);
	tg_kernel(&t, 2 * MS + 10 * US, 10 * US, "k2", 7);
	tg_kernel(&t, 3 * MS, 10 * US, "k3", 7);
	tg_kernel(&t, 3 * MS + 5 * US, 10 * US, "k4", 7);
	APX_ASSERT_OK(tg_close(&t));
	APX_ASSERT_OK(walk_file(t.path, &l, &ws));
	unlink(t.path);

	APX_ASSERT_EQ(ws.ends_trimmed, 1);
	APX_ASSERT_EQ(l.max_lane, 1);		/* k4's lane only */
	/* r (host), its projection onto stream 7, k1, k2, k3, k4 */
	APX_ASSERT_EQ(l.nslices, 6);
	APX_ASSERT_EQ(l.type[1], APX_ES__COUNT);
	APX_ASSERT_STREQ(l.name_end[2], "k1");
	APX_ASSERT_EQ(l.trimmed[2], 300);
	APX_ASSERT_EQ(l.end[2], l.start[3]);		/* k1 ends where k2 starts */
	APX_ASSERT_EQ(l.end[2] - l.start[2], 10 * US);
	APX_ASSERT_EQ(l.end[1], l.end[2]);		/* the projection ends with k1 */
	APX_ASSERT_EQ(l.trimmed[3] + l.trimmed[4] + l.trimmed[5], 0);
	return 0;
}

APX_TEST(walk_cuts_long_names_visibly)
{
	static char buf[1 << 18], big[70001];
	char out[] = "/tmp/apx-export-XXXXXX";
	struct layout l = { 0 };
	struct apx_wk_stats ws = { 0 };
	struct apx_diag diag = { 0 };
	struct apx_store *st;
	const char *p;
	struct tg t;

	memset(big, 'a', sizeof(big) - 1);
	APX_ASSERT_OK(tg_open(&t));
	big[5000] = 0;			/* longer than the old 4,095-byte cut: whole */
	tg_marker_on(&t, 2 * MS, 3 * MS, big, 4242);
	big[5000] = 'a';
	tg_marker_on(&t, 4 * MS, 5 * MS, big, 4242);	/* 70,000 bytes: cut, said, counted */
	APX_ASSERT_OK(tg_close(&t));
	APX_ASSERT_OK(walk_file(t.path, &l, &ws));

	APX_ASSERT_EQ(l.nslices, 2);
	APX_ASSERT_EQ(l.name_bytes[0], 5000);
	APX_ASSERT_EQ(l.name_len[0], 0);
	APX_ASSERT_EQ(l.name_len[1], 70000);
	APX_ASSERT_STREQ(l.name_end[1], "aaaaaaaaaaaaaaaaa [... cut: 70000 bytes]");
	APX_ASSERT_EQ(l.name_bytes[1], APX_WK_NAME_MAX + strlen(" [... cut: 70000 bytes]"));
	APX_ASSERT_EQ(ws.names_cut, 1);

	/* the Chrome file says it on the event and counts it */
	p = t.path;
	APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
	APX_ASSERT_OK(export_to(st, NULL, "chrome", out, &diag));
	APX_ASSERT(read_file(out, buf, sizeof(buf)) > 0);
	APX_ASSERT(strstr(buf, "aaa [... cut: 70000 bytes]\", \"pid\""));
	APX_ASSERT(strstr(buf, "\"name cut (bytes)\": 70000}"));
	APX_ASSERT(strstr(buf, "\n],\n\"apx_names_cut\": 1\n}\n"));
	unlink(out);
	apx_store_free(st);
	unlink(t.path);
	return 0;
}

APX_TEST(perfetto_counter_units)
{
	static char buf[1 << 16];
	char out[] = "/tmp/apx-export-XXXXXX";
	struct apx_diag diag = { 0 };
	struct apx_store *st;
	const char *p;
	struct tg t;
	size_t n;
	FILE *f;

	APX_ASSERT_OK(tg_open(&t));
	tg_metric(&t, 2 * MS, "gpu.power", "W", 0, 100, 300.0);
	tg_metric(&t, 2 * MS, "gpu.sm_clock", "MHz", 0, 100, 1980.0);
	tg_metric(&t, 2 * MS, "gpu.util_pct", "%", 0, 100, 50.0);
	tg_metric(&t, 2 * MS, "gpu.mem_bytes", "bytes", 0, 100, 1e9);
	tg_kernel(&t, 3 * MS, 1 * MS, "k", 7);
	APX_ASSERT_OK(tg_close(&t));
	p = t.path;
	APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
	APX_ASSERT_OK(export_to(st, NULL, "perfetto", out, &diag));
	f = fopen(out, "rb");
	APX_ASSERT(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	/* CounterDescriptor (TrackDescriptor field 8, its length in 4 bytes) holding unit_name
	 * (field 6) "W", "MHz", "%", and unit (field 3) UNIT_SIZE_BYTES (3) */
	APX_ASSERT(memmem(buf, n, "\x42\x83\x80\x80\x00\x32\x01W", 8));
	APX_ASSERT(memmem(buf, n, "\x42\x85\x80\x80\x00\x32\x03MHz", 10));
	APX_ASSERT(memmem(buf, n, "\x42\x83\x80\x80\x00\x32\x01%", 8));
	APX_ASSERT(memmem(buf, n, "\x42\x82\x80\x80\x00\x18\x03", 7));
	unlink(out);
	apx_store_free(st);
	unlink(t.path);
	return 0;
}

/* ---- cross-stream waits ------------------------------------------------------------------ */

#define WAIT_FIXTURE APX_SOURCE_DIR "/tests/fixtures/suite/pageable_fixed.apx"
#define WAITS_MAX 64
#define TRACKS_MAX 256

struct waits_seen {
	uint64_t track[TRACKS_MAX], tid[TRACKS_MAX];	/* stream tracks: the CUDA stream id */
	size_t ntracks;
	uint64_t out_id[WAITS_MAX], out_tid[WAITS_MAX], out_end[WAITS_MAX];
	uint64_t in_id[WAITS_MAX], in_tid[WAITS_MAX], in_start[WAITS_MAX];
	size_t nout, nin;
	int bad;			/* a wait flow on a slice that is not GPU work */
};

static int wt_track(void *ctx, const struct apx_wk_track *t)
{
	struct waits_seen *w = ctx;

	if (t->kind == APX_WK_STREAM && w->ntracks < TRACKS_MAX) {
		w->track[w->ntracks] = t->uuid;
		w->tid[w->ntracks++] = t->tid;
	}
	return 0;
}

static uint64_t wt_tid(const struct waits_seen *w, uint64_t track)
{
	for (size_t i = 0; i < w->ntracks; i++)
		if (w->track[i] == track)
			return w->tid[i];
	return UINT64_MAX;
}

static int wt_slice(void *ctx, const struct apx_wk_slice *s)
{
	struct waits_seen *w = ctx;
	int gpu = s->type == APX_ES_KERNEL || s->type == APX_ES_COPY || s->type == APX_ES_MEMSET;

	if ((s->nwait_out || s->wait_in) && !gpu)
		w->bad++;
	for (uint32_t k = 0; k < s->nwait_out && w->nout < WAITS_MAX; k++, w->nout++) {
		w->out_id[w->nout] = s->wait_out + k;
		w->out_tid[w->nout] = wt_tid(w, s->track);
		w->out_end[w->nout] = s->end;
	}
	if (s->wait_in && w->nin < WAITS_MAX) {
		w->in_id[w->nin] = s->wait_in;
		w->in_tid[w->nin] = wt_tid(w, s->track);
		w->in_start[w->nin++] = s->start;
	}
	return 0;
}

/* The waits apx report counts (its streams section): stream 7 waited for stream 13. */
static uint64_t report_waits(void)
{
	struct apx_model *m = apx_model_new();
	struct apx_wi_wait g[8];
	uint64_t n = 0;
	size_t ng;

	if (!m || apx_model_add_file(m, WAIT_FIXTURE, NULL) < 0 || apx_model_finish(m) < 0) {
		apx_model_free(m);
		return 0;
	}
	ng = apx_whatif_waits(m, g, 8);
	for (size_t i = 0; i < ng; i++)
		n += g[i].count;
	apx_model_free(m);
	return n;
}

/* How often bytes [p, p + len) occur in buf[0..n). */
static size_t count_bytes(const char *buf, size_t n, const char *p, size_t len)
{
	size_t c = 0;

	for (const char *q = buf; (q = memmem(q, n - (size_t)(q - buf), p, len)); q++)
		c++;
	return c;
}

APX_TEST(stream_wait_flows)
{
	static char buf[1 << 20];
	static struct waits_seen w;
	struct apx_wk_ops ops = { &w, wt_track, wt_slice, on_counter, NULL };
	char out[] = "/tmp/apx-export-XXXXXX";
	struct apx_diag diag = { 0 };
	struct apx_export_waits waits;
	struct apx_wk_stats ws;
	struct apx_store *st;
	const char *p = WAIT_FIXTURE;
	uint64_t want = report_waits();
	size_t n;
	FILE *f;

	APX_ASSERT_EQ(want, 20);
	/* the store and its waits in one pass over the file, as apx export reads it */
	APX_ASSERT_OK(apx_export_open(&p, 1, NULL, apx_reader_open, &waits, &st, NULL));
	APX_ASSERT_EQ(waits.n, want);
	APX_ASSERT_OK(apx_walk(st, &waits, &ops, &ws));
	APX_ASSERT_EQ(ws.waits, want);
	APX_ASSERT_EQ(w.nout, want);
	APX_ASSERT_EQ(w.nin, want);
	APX_ASSERT_EQ(w.bad, 0);
	for (size_t i = 0; i < w.nin; i++) {	/* each ends on stream 7, from stream 13 */
		size_t j;

		for (j = 0; j < w.nout && w.out_id[j] != w.in_id[i]; j++)
			;
		APX_ASSERT(j < w.nout);
		APX_ASSERT(w.in_id[i] > APX_WK_WAIT_FLOW_BASE);
		APX_ASSERT_EQ(w.out_tid[j], 13);
		APX_ASSERT_EQ(w.in_tid[i], 7);
		APX_ASSERT(w.out_end[j] <= w.in_start[i]);	/* it started as the copy ended */
		APX_ASSERT(w.in_start[i] - w.out_end[j] <= APX_WI_DEP_NS);
	}

	APX_ASSERT_OK(export_to(st, &waits, "chrome", out, &diag));
	f = fopen(out, "r");
	APX_ASSERT(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	APX_ASSERT(n < sizeof(buf) - 1);
	APX_ASSERT_EQ(count(buf, "\"ph\": \"s\""), want);	/* level light: no launch flows */
	APX_ASSERT_EQ(count(buf, "\"ph\": \"f\""), want);
	APX_ASSERT_EQ(count(buf, "\"cat\": \"stream_wait\", \"name\": \"stream wait\"}"), want);
	APX_ASSERT_EQ(count(buf, "\"cat\": \"stream_wait\", \"name\": \"stream wait\", "
			  "\"bp\": \"e\"}"), want);
	/* the first: from the end of stream 13's copy (1 ns before it) to stream 7's kernel */
	APX_ASSERT(strstr(buf, "{\"ph\": \"s\", \"id\": 1125899906842625, \"pid\": 0, "
			  "\"tid\": 13, \"ts\": 500253.334, \"cat\": \"stream_wait\""));
	APX_ASSERT(strstr(buf, "{\"ph\": \"f\", \"id\": 1125899906842625, \"pid\": 0, "
			  "\"tid\": 7, \"ts\": 500256.312, \"cat\": \"stream_wait\""));
	unlink(out);

	APX_ASSERT_OK(apx_exporter_find("perfetto")->write(st, &waits, out, &diag));
	f = fopen(out, "rb");
	APX_ASSERT(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	APX_ASSERT(n < sizeof(buf));
	/* each id once in TrackEvent.flow_ids (field 47, fixed64: key 0xf9 0x02) and once in
	 * terminating_flow_ids (48: 0x81 0x03) */
	for (uint64_t k = 1; k <= want; k++) {
		uint64_t id = APX_WK_WAIT_FLOW_BASE + k;
		char start[10] = "\xf9\x02", end[10] = "\x81\x03";

		for (int b = 0; b < 8; b++)
			start[2 + b] = end[2 + b] = (char)(id >> (8 * b));
		APX_ASSERT_EQ(count_bytes(buf, n, start, sizeof(start)), 1);
		APX_ASSERT_EQ(count_bytes(buf, n, end, sizeof(end)), 1);
	}
	unlink(out);
	free(waits.w);
	apx_store_free(st);
	return 0;
}

APX_TEST_MAIN()
