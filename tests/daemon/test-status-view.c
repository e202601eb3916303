/*
 * test-status-view.c - unit test of the `apx status` / `apx top` rendering
 * (lib/daemon/status_view.c) on canned answers of the control socket: the GPU columns with
 * known values and with "-", the GPU idle share and L2 persistence columns and the derived
 * JSON values (idle %, pageable H2D rate), the device line, which columns drop at 80, 100, 120 and 200
 * columns (exact tables), that no line is wider than asked, an older daemon's shorter lines
 * (GPU values not known, never 0; null in JSON), a newer daemon's extra fields, the gpu sort
 * key, untrusted bytes (escaped) and UTF-8 (shown as it is, in columns). Run by ctest (label daemon); needs no daemon.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/status_view.h"

#include "apx-test.h"

#include "base/banned.h"

/* proc fields: pid ppid uid user start age cpu_x10 utime stime rss peak vol invol threads
 * state cuda comm argv | uprobes h2d_pageable h2d_pinned gpu_mem_peak | gpu_device gpu_count
 * gpu_mem_now sm_util | gpu_samples gpu_idle_samples l2_persist_bytes l2_windows
 * h2d_pageable_call_ns */
#define PROC_BASE(pid, cpu, rss, argv)                                                         \
	"proc\t" #pid "\t1\t1000\talice\t1700000000000\t3723000\t" #cpu "\t10\t2\t" #rss       \
	"\t" #rss "\t12\t3456\t8\tR\t1\tpython3\t" argv

/* a training process on GPU 1: 40 GiB now, SM 87 %, idle in 10 of 40 samples, 1.5 GiB
 * copied to the device, 80 % of it from pageable memory in 1 s of calls, a 16 MiB
 * persisting-L2 limit and one access-policy window */
static const char answer_new[] =
	PROC_BASE(4242, 987, 2147483648, "/usr/bin/python3 train.py --epochs 3")
	"\tattached\t1288490189\t322122547\t45097156608\t1\t1\t42949672960\t87"
	"\t40\t10\t16777216\t1\t1000000000\n"
	/* a process NVML does not see on a GPU and without uprobes */
	PROC_BASE(77, 5, 1048576, "python3 -c pass")
	"\tnone\t-\t-\t-\t-\t0\t-\t-\t0\t0\t-\t-\t-\n"
	/* on two devices, idle in 199 of 200 samples (99.5 %: not shown as 100); everything
	 * it copied was pageable, copies not timed; no L2 persistence */
	PROC_BASE(9001, 1234, 3221225472, "python3 ddp.py")
	"\tattached\t5242880\t0\t1073741824\t0\t2\t2147483648\t100\t200\t199\t0\t0\t-\n"
	"gpu\t0\tNVIDIA H200\t87\t43057048371\t150110060544\t312000\n"
	"gpu\t1\tNVIDIA H200\t-\t-\t-\t-\n";

/* an older nvperfd: no uprobes nor GPU fields, no gpu lines */
static const char answer_old[] = PROC_BASE(555, 100, 1048576, "python3 old.py") "\n";

static int render(const char *answer, enum apx_sv_sort key, unsigned width, char **ret,
		  struct apx_sv *ret_sv)
{
	struct apx_sv sv;
	char *buf = strdup(answer), *out = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (!buf)
		return -ENOMEM;
	r = apx_sv_parse(buf, &sv);
	if (r < 0)
		return r;
	apx_sv_sort(&sv, key);
	f = open_memstream(&out, &len);
	if (!f) {
		apx_sv_release(&sv);
		return -errno;
	}
	if (width)
		apx_sv_print_table(f, &sv, width, 0);
	else
		apx_sv_print_json(f, &sv);
	fclose(f);
	if (ret_sv)
		*ret_sv = sv;
	else
		apx_sv_release(&sv);
	*ret = out;
	return 0;
}

/* 1 when every line of s is at most width columns */
static int fits(const char *s, unsigned width)
{
	for (const char *nl; *s; s = nl + 1) {
		nl = strchr(s, '\n');
		if (!nl || (size_t)(nl - s) > width) {
			fprintf(stderr, "line wider than %u: '%.*s'\n", width,
				nl ? (int)(nl - s) : (int)strlen(s), s);
			return 0;
		}
	}
	return 1;
}

static int table_is(unsigned width, const char *want)
{
	char *out = NULL;

	APX_ASSERT_OK(render(answer_new, APX_SV_SORT_PID, width, &out, NULL));
	if (strcmp(out, want))
		fprintf(stderr, "width %u, got:\n%s\nwanted:\n%s\n", width, out, want);
	APX_ASSERT(!strcmp(out, want));
	APX_ASSERT(fits(out, width));
	free(out);
	return 0;
}

APX_TEST(table_200)
{
	return table_is(200,
		"GPU0 NVIDIA H200  util 87%  mem 40.1/139.8 GiB  power 312 W\n"
		"GPU1 NVIDIA H200  util -  mem -  power -\n"
		"    PID USER         AGE   CPU%   RSS  PEAK CSW vol/inv  THR S CUDA GPU  GMEM  SM% IDLE%          H2D       L2 COMMAND\n"
		"     77 alice      1h02m    0.5    1M    1M     12/3456    8 R  yes   -     -    -     -            -        - python3 -c pass\n"
		"   4242 alice      1h02m   98.7  2.0G  2.0G     12/3456    8 R  yes   1   40G   87    25   1.5G 80%pg   16M/1w python3 train.py --epochs 3\n"
		"   9001 alice      1h02m  123.4  3.0G  3.0G     12/3456    8 R  yes  0+  2.0G  100    99    5M 100%pg       no python3 ddp.py\n");
}

APX_TEST(table_120)
{
	/* the state and CUDA go first; COMMAND gets what is left */
	return table_is(120,
		"GPU0 NVIDIA H200  util 87%  mem 40.1/139.8 GiB  power 312 W\n"
		"GPU1 NVIDIA H200  util -  mem -  power -\n"
		"    PID USER         AGE   CPU%   RSS  PEAK CSW vol/inv  THR GPU  GMEM  SM% IDLE%          H2D       L2 COMMAND\n"
		"     77 alice      1h02m    0.5    1M    1M     12/3456    8   -     -    -     -            -        - python3 -c pass\n"
		"   4242 alice      1h02m   98.7  2.0G  2.0G     12/3456    8   1   40G   87    25   1.5G 80%pg   16M/1w python3 train.py\n"
		"   9001 alice      1h02m  123.4  3.0G  3.0G     12/3456    8  0+  2.0G  100    99    5M 100%pg       no python3 ddp.py\n");
}

APX_TEST(table_100)
{
	/* then threads, peak RSS and context switches */
	return table_is(100,
		"GPU0 NVIDIA H200  util 87%  mem 40.1/139.8 GiB  power 312 W\n"
		"GPU1 NVIDIA H200  util -  mem -  power -\n"
		"    PID USER         AGE   CPU%   RSS GPU  GMEM  SM% IDLE%          H2D       L2 COMMAND\n"
		"     77 alice      1h02m    0.5    1M   -     -    -     -            -        - python3 -c pass\n"
		"   4242 alice      1h02m   98.7  2.0G   1   40G   87    25   1.5G 80%pg   16M/1w python3 train.py --\n"
		"   9001 alice      1h02m  123.4  3.0G  0+  2.0G  100    99    5M 100%pg       no python3 ddp.py\n");
}

APX_TEST(table_80)
{
	/* then age and L2; the other GPU columns stay */
	return table_is(80,
		"GPU0 NVIDIA H200  util 87%  mem 40.1/139.8 GiB  power 312 W\n"
		"GPU1 NVIDIA H200  util -  mem -  power -\n"
		"    PID USER       CPU%   RSS GPU  GMEM  SM% IDLE%          H2D COMMAND\n"
		"     77 alice       0.5    1M   -     -    -     -            - python3 -c pass\n"
		"   4242 alice      98.7  2.0G   1   40G   87    25   1.5G 80%pg python3 train.py\n"
		"   9001 alice     123.4  3.0G  0+  2.0G  100    99    5M 100%pg python3 ddp.py\n");
}

APX_TEST(table_narrow)
{
	char *out = NULL;

	/* PID, USER and COMMAND stay; the device line is cut, not wrapped */
	APX_ASSERT(table_is(40,
		"GPU0 NVIDIA H200  util 87%  mem 40.1/139\n"
		"GPU1 NVIDIA H200  util -  mem -  power -\n"
		"    PID USER       CPU% COMMAND\n"
		"     77 alice       0.5 python3 -c pass\n"
		"   4242 alice      98.7 python3 train.py\n"
		"   9001 alice     123.4 python3 ddp.py\n") == 0);
	/* below 29 columns: 29 */
	APX_ASSERT_OK(render(answer_new, APX_SV_SORT_PID, 10, &out, NULL));
	APX_ASSERT(fits(out, 29));
	APX_ASSERT(strstr(out, "\n    PID USER     COMMAND\n     77 alice    python3 -c p\n"));
	free(out);
	for (unsigned w = 29; w <= 260; w++) {
		APX_ASSERT_OK(render(answer_new, APX_SV_SORT_PID, w, &out, NULL));
		APX_ASSERT(fits(out, w));
		free(out);
	}
	return 0;
}

APX_TEST(old_daemon)
{
	struct apx_sv sv;
	char *out = NULL;

	/* the process is listed; what the daemon did not send is "-", not 0 */
	APX_ASSERT_OK(render(answer_old, APX_SV_SORT_GPU, 120, &out, &sv));
	APX_ASSERT_EQ(sv.nprocs, 1);
	APX_ASSERT_EQ(sv.ngpus, 0);
	APX_ASSERT_STREQ(out,
		"    PID USER         AGE   CPU%   RSS  PEAK CSW vol/inv  THR GPU  GMEM  SM% IDLE%          H2D       L2 COMMAND\n"
		"    555 alice      1h02m   10.0    1M    1M     12/3456    8   -     -    -     -            -        - python3 old.py\n");
	free(out);
	apx_sv_release(&sv);
	APX_ASSERT_OK(render(answer_old, APX_SV_SORT_CPU, 0, &out, NULL));
	APX_ASSERT(strstr(out, "\"argv\":\"python3 old.py\",\"uprobes\":null,\"h2d_pageable_bytes\":null,"
			       "\"h2d_pinned_bytes\":null,\"gpu_mem_peak_bytes\":null,\"gpu_device\":null,"
			       "\"gpu_count\":null,\"gpu_mem_bytes\":null,\"sm_util_pct\":null,"
			       "\"gpu_samples\":null,\"gpu_idle_samples\":null,\"l2_persist_bytes\":null,"
			       "\"l2_windows\":null,\"h2d_pageable_call_ns\":null,\"cpu_pct\":10.0,"
			       "\"gpu_idle_pct\":null,\"h2d_pageable_bytes_per_s\":null}"));
	APX_ASSERT(strstr(out, "],\"gpus\":[]}\n"));
	free(out);
	return 0;
}

APX_TEST(newer_daemon)
{
	static const char answer[] =
		PROC_BASE(1, 0, 4096, "python3")
		"\tnone\t-\t-\t-\t-\t0\t-\t-\t0\t0\t-\t-\t-\tfuture1\tfuture2\n"
		"gpu\t0\tX\t1\t2\t3\t4\tfuture\n"
		"someday\tnew kind\n";
	struct apx_sv sv;
	char *out = NULL;

	APX_ASSERT_OK(render(answer, APX_SV_SORT_CPU, 0, &out, &sv));
	APX_ASSERT_EQ(sv.nprocs, 1);
	APX_ASSERT_EQ(sv.ngpus, 1);
	APX_ASSERT(strstr(out, "\"gpu_count\":0,\"gpu_mem_bytes\":null,\"sm_util_pct\":null,"
			       "\"gpu_samples\":0,\"gpu_idle_samples\":0,\"l2_persist_bytes\":null,"
			       "\"l2_windows\":null,\"h2d_pageable_call_ns\":null,\"cpu_pct\":0.0,"
			       "\"gpu_idle_pct\":null,\"h2d_pageable_bytes_per_s\":null}"));
	APX_ASSERT(strstr(out, "\"gpus\":[{\"index\":0,\"name\":\"X\",\"util_pct\":1,"
			       "\"mem_used_bytes\":2,\"mem_total_bytes\":3,\"power_mw\":4}]"));
	free(out);
	apx_sv_release(&sv);
	return 0;
}

APX_TEST(json_gpu)
{
	char *out = NULL;

	APX_ASSERT_OK(render(answer_new, APX_SV_SORT_PID, 0, &out, NULL));
	APX_ASSERT(strstr(out, "\"pid\":4242,"));
	APX_ASSERT(strstr(out, "\"uprobes\":\"attached\",\"h2d_pageable_bytes\":1288490189,"
			       "\"h2d_pinned_bytes\":322122547,\"gpu_mem_peak_bytes\":45097156608,"
			       "\"gpu_device\":1,\"gpu_count\":1,\"gpu_mem_bytes\":42949672960,"
			       "\"sm_util_pct\":87,\"gpu_samples\":40,\"gpu_idle_samples\":10,"
			       "\"l2_persist_bytes\":16777216,\"l2_windows\":1,"
			       "\"h2d_pageable_call_ns\":1000000000,\"cpu_pct\":98.7,"
			       "\"gpu_idle_pct\":25.0,\"h2d_pageable_bytes_per_s\":1288490189}"));
	APX_ASSERT(strstr(out, "\"uprobes\":\"none\",\"h2d_pageable_bytes\":null,"
			       "\"h2d_pinned_bytes\":null,\"gpu_mem_peak_bytes\":null,"
			       "\"gpu_device\":null,\"gpu_count\":0,\"gpu_mem_bytes\":null,"
			       "\"sm_util_pct\":null,\"gpu_samples\":0,\"gpu_idle_samples\":0,"
			       "\"l2_persist_bytes\":null,\"l2_windows\":null,"
			       "\"h2d_pageable_call_ns\":null,\"cpu_pct\":0.5,"
			       "\"gpu_idle_pct\":null,\"h2d_pageable_bytes_per_s\":null}"));
	/* uprobes without copy timing: no rate; no L2 persistence is a known 0 */
	APX_ASSERT(strstr(out, "\"gpu_samples\":200,\"gpu_idle_samples\":199,"
			       "\"l2_persist_bytes\":0,\"l2_windows\":0,"
			       "\"h2d_pageable_call_ns\":null,\"cpu_pct\":123.4,"
			       "\"gpu_idle_pct\":99.5,\"h2d_pageable_bytes_per_s\":null}"));
	APX_ASSERT(strstr(out, "\"gpus\":[{\"index\":0,\"name\":\"NVIDIA H200\",\"util_pct\":87,"
			       "\"mem_used_bytes\":43057048371,\"mem_total_bytes\":150110060544,"
			       "\"power_mw\":312000},{\"index\":1,\"name\":\"NVIDIA H200\","
			       "\"util_pct\":null,\"mem_used_bytes\":null,\"mem_total_bytes\":null,"
			       "\"power_mw\":null}]}\n"));
	free(out);
	return 0;
}

APX_TEST(sort_gpu)
{
	struct apx_sv sv;
	char *out = NULL;

	APX_ASSERT_EQ(apx_sv_sort_parse("gpu"), APX_SV_SORT_GPU);
	APX_ASSERT_STREQ(apx_sv_sort_name(APX_SV_SORT_GPU), "gpu");
	APX_ASSERT_EQ(apx_sv_sort_parse("csw"), APX_SV_SORT_CSW);
	APX_ASSERT_EQ(apx_sv_sort_parse("nope"), -1);
	/* largest GPU memory first, not known last */
	APX_ASSERT_OK(render(answer_new, APX_SV_SORT_GPU, 100, &out, &sv));
	APX_ASSERT_EQ(sv.procs[0].n[APX_CTL_PROC_PID], 4242);
	APX_ASSERT_EQ(sv.procs[1].n[APX_CTL_PROC_PID], 9001);
	APX_ASSERT_EQ(sv.procs[2].n[APX_CTL_PROC_PID], 77);
	free(out);
	apx_sv_release(&sv);
	return 0;
}

APX_TEST(h2d_share)
{
	/* 1 byte of 1 GiB pinned is not "100%pg"; nothing copied yet is "0", known */
	static const char answer[] =
		PROC_BASE(1, 0, 4096, "a")
		"\tattached\t1073741823\t1\t-\t-\t0\t-\t-\n"
		PROC_BASE(2, 0, 4096, "b")
		"\tattached\t1\t1073741823\t-\t-\t0\t-\t-\n"
		PROC_BASE(3, 0, 4096, "c")
		"\tattached\t0\t0\t-\t-\t0\t-\t-\n";
	char *out = NULL;

	APX_ASSERT_OK(render(answer, APX_SV_SORT_PID, 80, &out, NULL));
	APX_ASSERT(strstr(out, "  1.0G 99%pg a\n"));
	APX_ASSERT(strstr(out, "   1.0G 1%pg b\n"));
	APX_ASSERT(strstr(out, "            0 c\n"));
	free(out);
	return 0;
}

APX_TEST(idle_and_l2)
{
	/* IDLE%: 0 and 100 only when exact; "-" without samples of the GPU's utilization. L2:
	 * windows without a limit, a limit without windows, the counts compact; no copy time, or
	 * none spent yet: no rate */
	static const char answer[] =
		PROC_BASE(1, 0, 4096, "a")
		"\tattached\t0\t0\t-\t0\t1\t-\t-\t3\t3\t0\t2\t0\n"
		PROC_BASE(2, 0, 4096, "b")
		"\tattached\t0\t0\t-\t0\t1\t-\t-\t1000\t1\t3145728\t0\t-\n"
		PROC_BASE(3, 0, 4096, "c")
		"\tattached\t0\t0\t-\t0\t1\t-\t-\t1000\t0\t50331648\t12345\t-\n"
		PROC_BASE(4, 0, 4096, "d")
		"\tnone\t-\t-\t-\t-\t0\t-\t-\t0\t0\t-\t-\t-\n"
		/* more idle samples than samples: a confused daemon, not shown */
		PROC_BASE(5, 0, 4096, "e")
		"\tnone\t-\t-\t-\t-\t0\t-\t-\t1\t2\t-\t-\t-\n";
	char *out = NULL;

	APX_ASSERT_OK(render(answer, APX_SV_SORT_PID, 100, &out, NULL));
	APX_ASSERT(strstr(out, "   100            0     0/2w a\n"));
	APX_ASSERT(strstr(out, "     1            0    3M/0w b\n"));
	APX_ASSERT(strstr(out, "     0            0 48M/12kw c\n"));
	APX_ASSERT(strstr(out, "     -            -        - d\n"));
	APX_ASSERT(strstr(out, "     -            -        - e\n"));
	free(out);
	APX_ASSERT_OK(render(answer, APX_SV_SORT_PID, 0, &out, NULL));
	APX_ASSERT(strstr(out, "\"gpu_idle_pct\":100.0,\"h2d_pageable_bytes_per_s\":null}"));
	APX_ASSERT(strstr(out, "\"gpu_idle_pct\":0.1,\"h2d_pageable_bytes_per_s\":null}"));
	APX_ASSERT(strstr(out, "\"gpu_idle_pct\":0.0,\"h2d_pageable_bytes_per_s\":null}"));
	APX_ASSERT(strstr(out, "\"gpu_samples\":1,\"gpu_idle_samples\":2,"));
	APX_ASSERT(!strstr(out, "\"gpu_idle_pct\":200"));
	free(out);
	return 0;
}

APX_TEST(untrusted_text)
{
	/* apx_ctl_split unescapes: raw control bytes must not reach the terminal */
	static const char answer[] =
		"proc\t1\t1\t0\tev\\x1bil\t0\t0\t0\t0\t0\t0\t0\t0\t0\t1\tR\t0\tev\t"
		"x\\x1b[31m\\x07y\n"
		"gpu\t0\tbad\\x1b[2Jname\t-\t-\t-\t-\n";
	char *out = NULL;

	APX_ASSERT_OK(render(answer, APX_SV_SORT_PID, 100, &out, NULL));
	APX_ASSERT(!strchr(out, '\033') && !strchr(out, '\a'));
	APX_ASSERT(strstr(out, "GPU0 bad\\x1b[2Jname  util -"));
	APX_ASSERT(strstr(out, " ev\\x1bil "));	/* 8 columns: escapes count */
	APX_ASSERT(strstr(out, " x\\x1b[31m\\x07y\n"));
	free(out);
	return 0;
}

APX_TEST(table_keeps_utf8)
{
	/* valid UTF-8 as it is (café, not caf??), counted in columns; control
	 * characters, C1 controls and bytes that are not UTF-8 escaped as the docs say; a wide
	 * character is never cut in half, nor a line made wider than asked */
	static const char answer[] =
		"proc\t1\t1\t0\tj\\xc3\\xb6rg\t0\t0\t0\t0\t0\t0\t0\t0\t0\t1\tR\t0\tpython3\t"
		"python3 caf\\xc3\\xa9.py \\xe2\\x9c\\x93\\x1b\\xff\\xc2\\x9b|\n"
		"proc\t2\t1\t0\tbob\t0\t0\t0\t0\t0\t0\t0\t0\t0\t1\tR\t0\tpython3\t"
		"python3 \\xe6\\xbc\\xa2\\xe5\\xad\\x97\\xe6\\xbc\\xa2\\xe5\\xad\\x97\\xe6\\xbc\\xa2"
		"\\xe5\\xad\\x97\\xe6\\xbc\\xa2\\xe5\\xad\\x97.py\n";
	char *out = NULL, *l2;

	APX_ASSERT_OK(render(answer, APX_SV_SORT_PID, 200, &out, NULL));
	APX_ASSERT(fits(out, 200));
	APX_ASSERT(strstr(out, " j\xc3\xb6rg     "));	/* 4 columns, padded to 8 */
	APX_ASSERT(strstr(out, " python3 caf\xc3\xa9.py \xe2\x9c\x93\\x1b\\xff\\u009b|\n"));
	APX_ASSERT(!strchr(out, '?'));
	free(out);
	/* 29 columns: PID, USER and 12 of COMMAND; the fourth wide character would end at
	 * column 14: it is left out, not cut */
	APX_ASSERT_OK(render(answer, APX_SV_SORT_PID, 29, &out, NULL));
	l2 = strstr(out, "      2 bob      ");
	APX_ASSERT(l2);
	APX_ASSERT(!strncmp(l2 + 17, "python3 \xe6\xbc\xa2\xe5\xad\x97\n", 15));
	APX_ASSERT(strstr(out, " python3 caf\xc3\xa9\n"));
	free(out);
	return 0;
}

APX_TEST(json_keeps_utf8)
{
	/* UTF-8 arrives escaped byte by byte on the wire; the JSON keeps it as UTF-8 (one writer,
	 * base/json.c), escapes controls as \u00XX and never turns bytes into mojibake */
	static const char answer[] =
		"proc\t1\t1\t0\tj\\xc3\\xb6rg\t0\t0\t0\t0\t0\t0\t0\t0\t0\t1\tR\t0\tpython3\t"
		"python3 caf\\xc3\\xa9.py \\xe2\\x9c\\x93\\x1b\\xff\n";
	char *out = NULL;

	APX_ASSERT_OK(render(answer, APX_SV_SORT_PID, 0, &out, NULL));
	APX_ASSERT(strstr(out, "\"j\xc3\xb6rg\""));
	APX_ASSERT(strstr(out, "\"python3 caf\xc3\xa9.py \xe2\x9c\x93\\u001b\\ufffd\""));
	APX_ASSERT(!strstr(out, "\\u00c3"));
	free(out);
	return 0;
}

APX_TEST_MAIN()
