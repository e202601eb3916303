/*
 * test-base.c - unit tests of lib/base helpers not covered elsewhere: the /proc readers shared
 * by the collector and nvperfd, strict number parsing, number formatting, and the two writers
 * of untrusted text (terminal escaping, JSON strings) with their UTF-8 decoder.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>

#include "apx-test.h"
#include "base/fmt.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/procfs.h"
#include "base/termsafe.h"
#include "base/utf8.h"

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
	/* strictly decimal: strtod alone takes hex, exponents, infinities and signs */
	APX_ASSERT_EQ(apx_parse_seconds_ns("0x10", &ns), -EINVAL);
	APX_ASSERT_EQ(apx_parse_seconds_ns("1e99", &ns), -EINVAL);
	APX_ASSERT_EQ(apx_parse_seconds_ns("1e3", &ns), -EINVAL);
	APX_ASSERT_EQ(apx_parse_seconds_ns("inf", &ns), -EINVAL);
	APX_ASSERT_EQ(apx_parse_seconds_ns("-1", &ns), -EINVAL);
	APX_ASSERT_EQ(apx_parse_seconds_ns(" 5", &ns), -EINVAL);
	APX_ASSERT_EQ(apx_parse_seconds_ns("1.2.3", &ns), -EINVAL);
	APX_ASSERT_EQ(apx_parse_seconds_ns(".", &ns), -EINVAL);
	APX_ASSERT_EQ(apx_parse_seconds_ns("", &ns), -EINVAL);
	APX_ASSERT_EQ(apx_parse_seconds_ns("1000000001", &ns), -ERANGE);
	APX_ASSERT_EQ(apx_parse_seconds_ns("99999999999999999999999", &ns), -ERANGE);
	APX_ASSERT_OK(apx_parse_seconds_ns(".25", &ns));
	APX_ASSERT_EQ(ns, 250000000ull);
	APX_ASSERT_OK(apx_parse_seconds_ns("1000000000", &ns));
	APX_ASSERT_EQ(ns, 1000000000ull * 1000000000ull);
	/* rank lists (apx analyze --ranks) */
	APX_ASSERT_EQ(apx_parse_list_has("0,3,8-15", 100, 0), 1);
	APX_ASSERT_EQ(apx_parse_list_has("0,3,8-15", 100, 3), 1);
	APX_ASSERT_EQ(apx_parse_list_has("0,3,8-15", 100, 12), 1);
	APX_ASSERT_EQ(apx_parse_list_has("0,3,8-15", 100, 15), 1);
	APX_ASSERT_EQ(apx_parse_list_has("0,3,8-15", 100, 7), 0);
	APX_ASSERT_EQ(apx_parse_list_has("0,3,8-15", 100, 16), 0);
	APX_ASSERT_EQ(apx_parse_list_has("0,3,8-15", 100, UINT64_MAX), 0);
	APX_ASSERT_EQ(apx_parse_list_has("", 100, 0), -EINVAL);
	APX_ASSERT_EQ(apx_parse_list_has("3-", 100, 0), -EINVAL);
	APX_ASSERT_EQ(apx_parse_list_has("5-2", 100, 0), -EINVAL);
	APX_ASSERT_EQ(apx_parse_list_has("1,,2", 100, 0), -EINVAL);
	APX_ASSERT_EQ(apx_parse_list_has("1,", 100, 0), -EINVAL);
	APX_ASSERT_EQ(apx_parse_list_has(" 1", 100, 1), -EINVAL);
	APX_ASSERT_EQ(apx_parse_list_has("1-2-3", 100, 1), -EINVAL);
	APX_ASSERT_EQ(apx_parse_list_has("0-101", 100, 1), -ERANGE);
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

APX_TEST(utf8_strict)
{
	uint32_t cp;

	APX_ASSERT_EQ(apx_utf8_decode((const uint8_t *)"\xc3\xa9", 2, &cp), 2);
	APX_ASSERT_EQ(cp, 0xe9);
	APX_ASSERT_EQ(apx_utf8_decode((const uint8_t *)"\xf0\x9f\x98\x80", 4, &cp), 4);
	APX_ASSERT_EQ(cp, 0x1f600);
	APX_ASSERT_EQ(apx_utf8_decode((const uint8_t *)"\xc0\xaf", 2, &cp), 0);	/* overlong */
	APX_ASSERT_EQ(apx_utf8_decode((const uint8_t *)"\xed\xa0\x80", 3, &cp), 0);	/* surrogate */
	APX_ASSERT_EQ(apx_utf8_decode((const uint8_t *)"\xf4\x90\x80\x80", 4, &cp), 0); /* > 10FFFF */
	APX_ASSERT_EQ(apx_utf8_decode((const uint8_t *)"\xe2\x9c", 2, &cp), 0);	/* cut short */
	APX_ASSERT_EQ(apx_utf8_decode((const uint8_t *)"\x9b", 1, &cp), 0);
	return 0;
}

APX_TEST(term_safe_escapes_controls_keeps_utf8)
{
	char out[256];

	/* CSI clear screen, OSC retitle, C1 CSI (U+009B), DEL, bad bytes; UTF-8 kept */
	APX_ASSERT_STREQ(apx_term_safe_str(out, sizeof(out), "\033[2Jk\033]0;t\007"),
			 "\\x1b[2Jk\\x1b]0;t\\x07");
	APX_ASSERT_STREQ(apx_term_safe_str(out, sizeof(out), "a\xc2\x9b" "b\x7f\xff\xfe"),
			 "a\\u009bb\\x7f\\xff\\xfe");
	APX_ASSERT_STREQ(apx_term_safe_str(out, sizeof(out), "caf\xc3\xa9 \xe2\x9c\x93\n\t"),
			 "caf\xc3\xa9 \xe2\x9c\x93\\x0a\\x09");
	APX_ASSERT_STREQ(apx_term_safe(out, sizeof(out), "abc\0def", 7), "abc\\x00def");	/* escaped */
	/* cut to the buffer, never inside an escape or a character */
	APX_ASSERT_STREQ(apx_term_safe_str(out, 6, "ab\033cd"), "ab");
	APX_ASSERT_STREQ(apx_term_safe_str(out, 4, "a\xc3\xa9\xc3\xa9"), "a\xc3\xa9");
	APX_ASSERT_STREQ(apx_term_safe_str(out, sizeof(out), NULL), "");
	return 0;
}

/* Write s through the filter in pieces of `step` bytes; return what reached the sink. */
static char *filtered(const char *s, size_t step, char *buf, size_t cap)
{
	FILE *sink = fmemopen(buf, cap, "w");
	FILE *f = apx_term_filter_open(sink);
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i += step) {
		fwrite(s + i, 1, n - i < step ? n - i : step, f);
		fflush(f);	/* each piece is one write of the filter */
	}
	fclose(f);
	fclose(sink);
	return buf;
}

APX_TEST(term_filter_stream)
{
	static const char in[] = "k \033[31mred\xc2\x9b\n\tcaf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80\xff";
	static const char want[] = "k \\x1b[31mred\\u009b\n\\x09caf\xc3\xa9 \xe2\x9c\x93 "
				   "\xf0\x9f\x98\x80\\xff";
	char buf[512];

	/* newlines pass; a character split between writes is put back together */
	for (size_t step = 1; step <= sizeof(in); step++) {
		memset(buf, 0, sizeof(buf));
		APX_ASSERT_STREQ(filtered(in, step, buf, sizeof(buf)), want);
	}
	/* a character cut by the end of the stream is shown as bytes */
	memset(buf, 0, sizeof(buf));
	APX_ASSERT_STREQ(filtered("x\xe2\x9c", 1, buf, sizeof(buf)), "x\\xe2\\x9c");
	return 0;
}

APX_TEST(term_color_respects_no_color)
{
	int null = open("/dev/null", O_WRONLY), m = posix_openpt(O_RDWR | O_NOCTTY), tty;

	APX_ASSERT(null >= 0);
	unsetenv("NO_COLOR");
	APX_ASSERT_EQ(apx_term_color_auto(null), 0);	/* not a terminal */
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || !ptsname(m))
		return APX_TEST_SKIP;
	tty = open(ptsname(m), O_RDWR | O_NOCTTY);
	APX_ASSERT(tty >= 0);
	APX_ASSERT_EQ(apx_term_color_auto(tty), 1);	/* a terminal */
	setenv("NO_COLOR", "1", 1);
	APX_ASSERT_EQ(apx_term_color_auto(tty), 0);	/* NO_COLOR set: never */
	setenv("NO_COLOR", "", 1);
	APX_ASSERT_EQ(apx_term_color_auto(tty), 1);	/* set but empty: ignored (no-color.org) */
	unsetenv("NO_COLOR");
	close(tty);
	close(m);
	close(null);
	return 0;
}

/* apx_json_strn into buf. */
static const char *json(const char *s, size_t n, char *buf, size_t cap)
{
	FILE *f = fmemopen(buf, cap, "w");

	memset(buf, 0, cap);
	apx_json_strn(f, s, n);
	fclose(f);
	return buf;
}

APX_TEST(json_strings_one_writer)
{
	char b[256];

	APX_ASSERT_STREQ(json("caf\xc3\xa9 \xe2\x9c\x93", 9, b, sizeof(b)), "\"caf\xc3\xa9 \xe2\x9c\x93\"");
	APX_ASSERT_STREQ(json("a\"b\\c", 5, b, sizeof(b)), "\"a\\\"b\\\\c\"");
	APX_ASSERT_STREQ(json("\n\t\r\033\x01\x7f", 6, b, sizeof(b)),
			 "\"\\n\\t\\r\\u001b\\u0001\\u007f\"");
	APX_ASSERT_STREQ(json("\xc2\x9b", 2, b, sizeof(b)), "\"\\u009b\"");	/* C1 */
	APX_ASSERT_STREQ(json("x\xff\xc3", 3, b, sizeof(b)), "\"x\\ufffd\\ufffd\"");
	/* a NUL inside a trace's string is escaped, not cut */
	APX_ASSERT_STREQ(json("ab\0cd", 5, b, sizeof(b)), "\"ab\\u0000cd\"");
	return 0;
}

APX_TEST_MAIN()
