/*
 * test-base.c - unit tests of lib/base helpers not covered elsewhere: the /proc readers shared
 * by the collector and nvperfd, strict number parsing, and number formatting.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "apx-test.h"
#include "base/fmt.h"
#include "base/parse.h"
#include "base/procfs.h"

#include "base/banned.h"

APX_TEST(status_value_both_key_styles)
{
	static const char text[] = "Name:\tpython3\nThreads:\t22\nVmHWM:\t  852400 kB\n"
				   "VmRSS:\t  801000 kB\nvoluntary_ctxt_switches:\t123\n";

	APX_ASSERT_EQ(apx_status_value(text, "Threads"), 22);
	APX_ASSERT_EQ(apx_status_value(text, "\nThreads:"), 22);
	APX_ASSERT_EQ(apx_status_value(text, "VmRSS"), 801000);
	APX_ASSERT_EQ(apx_status_value(text, "\nVmHWM:"), 852400);
	APX_ASSERT_EQ(apx_status_value(text, "\nvoluntary_ctxt_switches:"), 123);
	APX_ASSERT_EQ(apx_status_value(text, "Nope"), 0);
	return 0;
}

APX_TEST(read_small_proc_self)
{
	char buf[4096];
	ssize_t n = apx_read_small("/proc/self/status", buf, sizeof(buf));

	APX_ASSERT(n > 0 && (size_t)n < sizeof(buf) && buf[n] == 0);
	APX_ASSERT(apx_status_value(buf, "VmRSS") > 0);
	APX_ASSERT_EQ(apx_status_value(buf, "Threads"), 1);
	APX_ASSERT_EQ(apx_read_small("/nonexistent/file", buf, sizeof(buf)), -ENOENT);
	n = apx_read_small("/proc/self/status", buf, 8);	/* cut to the buffer, terminated */
	APX_ASSERT(n == 7 && buf[7] == 0);
	return 0;
}

APX_TEST(parse_numbers_strictly)
{
	uint64_t v, ns;

	APX_ASSERT_OK(apx_parse_u64("42", 100, &v));
	APX_ASSERT_EQ(v, 42);
	APX_ASSERT_EQ(apx_parse_u64("101", 100, &v), -ERANGE);
	APX_ASSERT_EQ(apx_parse_u64("4x", 100, &v), -EINVAL);
	APX_ASSERT_EQ(apx_parse_u64("-1", 100, &v), -EINVAL);
	APX_ASSERT_OK(apx_parse_seconds_ns("1.5", &ns));
	APX_ASSERT_EQ(ns, 1500000000ull);
	APX_ASSERT_EQ(apx_parse_seconds_ns("1s", &ns), -EINVAL);
	return 0;
}

APX_TEST(format_for_humans)
{
	char b[32];

	APX_ASSERT_STREQ(apx_fmt_ns(b, sizeof(b), 1234567), "1.23 ms");
	APX_ASSERT_STREQ(apx_fmt_ns(b, sizeof(b), 950), "950 ns");
	APX_ASSERT_STREQ(apx_fmt_size(b, sizeof(b), 1.5e9), "1.50 GB");
	APX_ASSERT_STREQ(apx_fmt_size(b, sizeof(b), 2.5e12), "2.50 TB");
	APX_ASSERT_STREQ(apx_fmt_rate(b, sizeof(b), 1e9, 1e8), "10.0 GB/s");
	APX_ASSERT_STREQ(apx_fmt_rate(b, sizeof(b), 1e9, 0), "n/a");
	return 0;
}

APX_TEST_MAIN()
