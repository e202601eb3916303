/*
 * test-export.c - unit tests of the timeline exporters (lib/export): the walk's layout (a flow
 * from each launch to its kernel, NVTX ranges projected onto the GPU over the work launched
 * inside them, a partially overlapping range moved to a second lane, ends handed out in time
 * order with inner slices first) and what the Chrome and Perfetto writers make of it.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apx-test.h"
#include "analysis/store.h"
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
	APX_ASSERT_OK(apx_walk(st, &ops));
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
	int fd;

	APX_ASSERT_OK(make_trace(&t));
	p = t.path;
	APX_ASSERT_OK(apx_store_open(&p, 1, NULL, &st, NULL));
	fd = mkstemp(out);
	APX_ASSERT(fd >= 0);
	close(fd);
	unlink(out);
	APX_ASSERT_OK(apx_exporter_find("chrome")->write(st, out, &diag));
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
	APX_ASSERT(strstr(buf, "\"deviceProperties\""));
	unlink(out);

	APX_ASSERT_OK(apx_exporter_find("perfetto")->write(st, out, &diag));
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

APX_TEST_MAIN()
