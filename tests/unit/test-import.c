/*
 * test-import.c - unit tests of lib/import: the JSON pull parser (grammar, bounds, error
 * places, escapes, exact decimal scaling) and the Kineto mapping (a small trace converted in
 * memory, read back with the .apx reader, field by field). Run by ctest (unit-import).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "apx-test.h"

#include <apx/format.h>

#include "import/jsonparse.h"
#include "import/kineto.h"

#include "base/banned.h"

static int scaled(const char *text, unsigned decimals, int64_t *ret)
{
	struct apx_jp_tok t = { .type = APX_JP_NUMBER, .p = text, .n = strlen(text) };

	return apx_jp_scaled(&t, decimals, ret);
}

APX_TEST(scaled_exact)
{
	static const struct { const char *text; unsigned dec; int64_t want; } ok[] = {
		{ "1695835542514261", 3, 1695835542514261000ll },
		{ "2413669096090.1", 3, 2413669096090100ll },
		{ "13336315.805", 3, 13336315805ll },
		{ "0.001", 3, 1 }, { "1.0005", 3, 1001 }, { "-1.0005", 3, -1001 },
		{ "1.0004999", 3, 1000 }, { "1e3", 3, 1000000 }, { "1.5E-3", 3, 2 },
		{ "0", 3, 0 }, { "-0", 0, 0 }, { "0.0000", 3, 0 }, { "1e-400", 3, 0 },
		{ "9223372036854775807", 0, INT64_MAX }, { "-9223372036854775808", 0, INT64_MIN },
		{ "12.5", 0, 13 }, { "00", 0, 0 },
	};
	int64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		APX_ASSERT_OK(scaled(ok[i].text, ok[i].dec, &v));
		if (v != ok[i].want)
			APX_FAIL_("%s x 10^%u: %lld, want %lld", ok[i].text, ok[i].dec, (long long)v,
				  (long long)ok[i].want);
	}
	APX_ASSERT_EQ(scaled("9223372036854775808", 0, &v), -EOVERFLOW);
	APX_ASSERT_EQ(scaled("1e400", 3, &v), -EOVERFLOW);
	APX_ASSERT_EQ(scaled("9223372036854775.808", 4, &v), -EOVERFLOW);
	/* every microsecond value with 3 decimals is its nanoseconds exactly */
	srand(14);
	for (int i = 0; i < 200000; i++) {
		int64_t ns = ((int64_t)rand() << 31 ^ rand()) % 4000000000000000000ll;
		char buf[40];

		snprintf(buf, sizeof(buf), "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
		APX_ASSERT_OK(scaled(buf, 3, &v));
		APX_ASSERT_EQ(v, ns);
	}
	return 0;
}

/* Tokens of text until the end or an error; the error's message in msg. */
static int tokens(const char *text, int *ret_n, char *msg, size_t cap)
{
	struct apx_diag d = { 0 };
	struct apx_jp jp;
	struct apx_jp_tok t;
	int r, n = 0;

	apx_jp_init(&jp, text, strlen(text), &d);
	while ((r = apx_jp_next(&jp, &t)) > 0)
		n++;
	*ret_n = n;
	snprintf(msg, cap, "%s", d.msg);
	return r;
}

APX_TEST(parser_grammar)
{
	static const struct { const char *text; const char *where; } bad[] = {
		{ "{\"a\":1,}", "byte 7): a member name" },
		{ "[1,]", "byte 3): unexpected character ']'" },
		{ "{\"a\" 1}", "':' expected" },
		{ "[1 2]", "',' or ']' expected" },
		{ "{\"a\":[1}", "',' or ']' expected" },
		{ "[\"abc", "string not terminated" },
		{ "[\"a\tb\"]", "control character 0x09" },
		{ "[\"\\x\"]", "bad escape" },
		{ "[\"\\u12g4\"]", "bad \\u escape" },
		{ "[01]", "',' or ']' expected" },
		{ "[1.]", "a digit expected after '.'" },
		{ "[-]", "bad number" },
		{ "[1e+]", "exponent" },
		{ "[tru]", "unexpected character 't'" },
		{ "{} {}", "text after the end" },
		{ "{\"a\":\n  [1,\n  2", "line 3, column 4 (byte 15): the file ends inside" },
		{ "", "the file ends inside" },
	};
	char msg[256], deep[200];
	int n;

	APX_ASSERT_EQ(tokens(" {\"a\": [1, -2.5e3, true, false, null, \"x\", {}]} ", &n, msg,
			     sizeof(msg)), 0);
	APX_ASSERT_EQ(n, 13);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = tokens(bad[i].text, &n, msg, sizeof(msg));

		if (r >= 0 || !strstr(msg, bad[i].where))
			APX_FAIL_("'%s': %d '%s', want '%s'", bad[i].text, r, msg, bad[i].where);
	}
	memset(deep, '[', 64);
	memset(deep + 64, ']', 64);
	deep[128] = 0;
	APX_ASSERT_EQ(tokens(deep, &n, msg, sizeof(msg)), 0);
	memset(deep, '[', 65);
	memset(deep + 65, ']', 65);
	deep[130] = 0;
	APX_ASSERT_EQ(tokens(deep, &n, msg, sizeof(msg)), -E2BIG);
	APX_ASSERT(strstr(msg, "nested deeper than 64 levels"));
	memset(deep, '1', 66);	/* 65 digits */
	deep[0] = '[';
	deep[66] = ']';
	deep[67] = 0;
	APX_ASSERT_EQ(tokens(deep, &n, msg, sizeof(msg)), -E2BIG);
	APX_ASSERT(strstr(msg, "number longer than 64"));
	return 0;
}

APX_TEST(parser_strings_skip)
{
	const char *text = "{\"s\": \"a\\u00e9\\ud83d\\ude00\\u0000\\ud800x\\n\\\"\", "
			   "\"skip\": {\"x\": [1, {\"y\": []}]}, \"z\": 5}";
	struct apx_diag d = { 0 };
	struct apx_jp jp;
	struct apx_jp_tok t;
	char buf[64];
	size_t n;
	int64_t v;

	apx_jp_init(&jp, text, strlen(text), &d);
	APX_ASSERT_EQ(apx_jp_next(&jp, &t), 1);
	APX_ASSERT_EQ(t.type, APX_JP_OBJECT);
	APX_ASSERT_EQ(apx_jp_next(&jp, &t), 1);
	APX_ASSERT(apx_jp_is(&t, "s"));
	APX_ASSERT_EQ(apx_jp_next(&jp, &t), 1);
	n = apx_jp_string(&t, buf, sizeof(buf));
	APX_ASSERT_EQ(n, strlen("a\xc3\xa9\xf0\x9f\x98\x80?\xef\xbf\xbdx\n\""));
	APX_ASSERT_STREQ(buf, "a\xc3\xa9\xf0\x9f\x98\x80?\xef\xbf\xbdx\n\"");
	APX_ASSERT_EQ(apx_jp_string(&t, buf, 4), 3);	/* "a" and "é"; not half an emoji */
	APX_ASSERT_EQ(apx_jp_next(&jp, &t), 1);
	APX_ASSERT(apx_jp_is(&t, "skip"));
	APX_ASSERT_EQ(apx_jp_next(&jp, &t), 1);
	APX_ASSERT_OK(apx_jp_skip(&jp, &t));
	APX_ASSERT_EQ(apx_jp_next(&jp, &t), 1);
	APX_ASSERT(apx_jp_is(&t, "z"));
	APX_ASSERT_EQ(apx_jp_next(&jp, &t), 1);
	APX_ASSERT_OK(apx_jp_scaled(&t, 0, &v));
	APX_ASSERT_EQ(v, 5);
	APX_ASSERT_EQ(apx_jp_next(&jp, &t), 1);
	APX_ASSERT_EQ(t.type, APX_JP_CLOSE);
	APX_ASSERT_EQ(apx_jp_next(&jp, &t), 0);
	return 0;
}

/* ---- the Kineto mapping ------------------------------------------------------------------ */

static const char trace[] =
	"{\"schemaVersion\": 1, \"traceEvents\": [\n"
	" {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 1, \"tid\": 7,"
	"  \"ts\": 10.001, \"dur\": 2.5, \"args\": {\"device\": 1, \"context\": 1, \"stream\": 7,"
	"  \"correlation\": 5, \"registers per thread\": 32, \"shared memory\": 1024,"
	"  \"grid\": [4, 2, 1], \"block\": [128, 1, 1], \"blocks per SM\": 0.5}},\n"
	" {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 42,"
	"  \"tid\": 43, \"ts\": 11, \"dur\": 1, \"args\": {\"correlation\": 6, \"cbid\": 41,"
	"  \"stream\": \"0x0\"}},\n"
	" {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\","
	"  \"pid\": 1, \"tid\": 7, \"ts\": 12, \"dur\": 3,"
	"  \"args\": {\"device\": 1, \"stream\": 7, \"correlation\": 6, \"bytes\": 4096}},\n"
	" {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pageable)\","
	"  \"pid\": 1, \"tid\": 7, \"ts\": 20, \"dur\": 1, \"args\": {\"device\": 1, \"bytes\": 8}},\n"
	" {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaDeviceSynchronize\", \"pid\": 42,"
	"  \"tid\": 43, \"ts\": 21, \"dur\": 4, \"args\": {\"correlation\": 9}},\n"
	" {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#3\", \"pid\": 42,"
	"  \"tid\": 43, \"ts\": 9, \"dur\": 20},\n"
	" {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 42, \"tid\": 43,"
	"  \"ts\": 9.5, \"dur\": 1, \"args\": {\"grid\": \"not ours\"}},\n"
	" {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 42, \"tid\": 43,"
	"  \"args\": {\"name\": \"python\"}}\n"
	"], \"deviceProperties\": [{\"id\": 0, \"name\": \"A\"}, {\"id\": 1, \"name\": \"B\","
	"  \"totalGlobalMem\": 1000, \"numSms\": 132, \"computeMajor\": 9}],"
	" \"distributedInfo\": {\"rank\": 3}, \"baseTimeNanoseconds\": 1700000000000000000}";

struct seen {
	struct apx_rec kernel, copy[2], sync, api[2], marker, device, thread;
	int kernels, copies, syncs, apis, markers, devices, threads, degraded;
	int64_t rank;
	uint64_t pid;
};

static int read_back(int fd, struct seen *s)
{
	char path[64];
	struct apx_reader *r;
	struct apx_diag d;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (apx_reader_open(path, &r, &d) < 0 || apx_reader_status(r) != APX_READ_COMPLETE)
		return -EBADMSG;
	s->rank = apx_rec_i64(apx_reader_header(r), APX_HEADER_RANK);
	s->pid = apx_reader_header(r)->v[APX_HEADER_PID];
	for (size_t c = 0; c < apx_reader_chunk_count(r); c++) {
		struct apx_chunk_iter it;

		if (apx_chunk_iter_init(&it, r, c, &d) < 0)
			continue;
		while (apx_chunk_iter_next(&it, &d) > 0) {
			const struct apx_rec *x = &it.rec;

			switch (x->type) {
			case APX_REC_KERNEL: s->kernel = *x; s->kernels++; break;
			case APX_REC_MEMCPY: if (s->copies < 2) s->copy[s->copies] = *x; s->copies++; break;
			case APX_REC_SYNC: s->sync = *x; s->syncs++; break;
			case APX_REC_API: if (s->apis < 2) s->api[s->apis] = *x; s->apis++; break;
			case APX_REC_MARKER: s->marker = *x; s->markers++; break;
			case APX_REC_DEVICE: s->device = *x; s->devices++; break;
			case APX_REC_THREAD: s->thread = *x; s->threads++; break;
			case APX_REC_KV:
				s->degraded += x->v[APX_KV_KEY] == 8 &&
					       !memcmp(x->bytes[APX_KV_KEY], "degraded", 8);
				break;
			default: break;
			}
		}
	}
	apx_reader_close(r);
	return 0;
}

APX_TEST(kineto_mapping)
{
	const uint64_t base = 1700000000000000000ull;
	struct apx_diag d = { 0 };
	struct seen s = { 0 };
	int fd = memfd_create("test-import", MFD_CLOEXEC);

	APX_ASSERT(fd >= 0);
	APX_ASSERT_OK(apx_kineto_import_mem(trace, strlen(trace), dup(fd), &d));
	APX_ASSERT_OK(read_back(fd, &s));
	close(fd);
	APX_ASSERT_EQ(s.pid, 42);
	APX_ASSERT_EQ(s.rank, 3);
	APX_ASSERT_EQ(s.kernels, 1);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_START_NS], base + 10001);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_END_NS], base + 12501);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_DEVICE], 1);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_STREAM], 7);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_CORRELATION], 5);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_GRID_X], 4);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_GRID_Y], 2);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_BLOCK_X], 128);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_REGISTERS], 32);
	APX_ASSERT_EQ(s.kernel.v[APX_KERNEL_STATIC_SMEM], 1024);
	APX_ASSERT_EQ(s.copies, 2);
	APX_ASSERT_EQ(s.copy[0].v[APX_MEMCPY_COPY_KIND], APX_COPY_H2D);
	APX_ASSERT_EQ(s.copy[0].v[APX_MEMCPY_SRC_KIND], APX_MEM_PINNED);
	APX_ASSERT_EQ(s.copy[0].v[APX_MEMCPY_DST_KIND], APX_MEM_DEVICE);
	APX_ASSERT_EQ(s.copy[0].v[APX_MEMCPY_BYTES], 4096);
	APX_ASSERT_EQ(s.copy[0].v[APX_MEMCPY_FLAGS], 1);	/* cudaMemcpyAsync, correlation 6 */
	APX_ASSERT_EQ(s.copy[1].v[APX_MEMCPY_COPY_KIND], APX_COPY_D2H);
	APX_ASSERT_EQ(s.copy[1].v[APX_MEMCPY_DST_KIND], APX_MEM_PAGEABLE);
	APX_ASSERT_EQ(s.syncs, 1);	/* from cudaDeviceSynchronize: no cuda_sync records */
	APX_ASSERT_EQ(s.sync.v[APX_SYNC_KIND], APX_SYNC_KIND_DEVICE);
	APX_ASSERT_EQ(s.sync.v[APX_SYNC_START_NS], base + 21000);
	APX_ASSERT_EQ(s.sync.v[APX_SYNC_TID], 43);
	APX_ASSERT_EQ(s.apis, 2);
	APX_ASSERT_EQ(s.api[0].v[APX_API_CBID], 41);
	APX_ASSERT_EQ(s.api[0].v[APX_API_DOMAIN], APX_API_RUNTIME);
	APX_ASSERT_EQ(s.markers, 1);
	APX_ASSERT_EQ(s.marker.v[APX_MARKER_END_NS] - s.marker.v[APX_MARKER_START_NS], 20000);
	APX_ASSERT_EQ(s.devices, 1);	/* only the device the events ran on */
	APX_ASSERT_EQ(s.device.v[APX_DEVICE_ID], 1);
	APX_ASSERT_EQ(s.device.v[APX_DEVICE_SM_COUNT], 132);
	APX_ASSERT_EQ(s.device.v[APX_DEVICE_CC_MAJOR], 9);
	APX_ASSERT_EQ(s.threads, 1);
	APX_ASSERT_EQ(s.thread.v[APX_THREAD_TID], 43);
	APX_ASSERT(s.degraded >= 4);	/* the always-missing facts, the copy without its API */
	return 0;
}

APX_TEST(kineto_errors)
{
	static const struct { const char *json; const char *msg; } bad[] = {
		{ "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": \"1\"}]}",
		  "byte 35): ts: a number (microseconds) expected, found a string" },
		{ "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1,"
		  " \"args\": {\"device\": \"0\"}}]}", "args.device: a number expected" },
		{ "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1e300}]}", "ts: 1e300 us is out of range" },
		{ "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1,"
		  " \"args\": {\"stream\": 99999999999999999999}}]}", "args.stream: out of range" },
		{ "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\"}]}", "without \"ts\"" },
		{ "{\"traceEvents\": [], \"baseTimeNanoseconds\": -5}", "baseTimeNanoseconds: -5 is out" },
		{ "{\"traceEvents\": {}}", "traceEvents: an array expected" },
		{ "{\"events\": []}", "no \"traceEvents\" array" },
		{ "\"x\"", "a Kineto trace is a JSON object" },
		{ "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1}", "the file ends inside" },
		{ "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": -5}]}",
		  "ts of this event is out of range" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct apx_diag d = { 0 };
		int fd = memfd_create("test-import", MFD_CLOEXEC);
		int r = apx_kineto_import_mem(bad[i].json, strlen(bad[i].json), fd, &d);

		if (r >= 0 || !strstr(d.msg, bad[i].msg) || !strstr(d.msg, "line 1, column "))
			APX_FAIL_("%s: %d '%s', want '%s'", bad[i].json, r, d.msg, bad[i].msg);
	}
	return 0;
}

APX_TEST_MAIN()
