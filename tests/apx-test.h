/*
 * apx-test.h - the tiny unit-test harness of apx (systemd's tests.h shape): APX_TEST(name)
 * registers a test in a linker section, APX_TEST_MAIN() runs them all (or those named on the
 * command line), APX_ASSERT_* print the expression, file and line, then abort the test.
 * Exit status: 0 all passed, 1 a test failed, 77 every test skipped.
 */
#ifndef APX_TEST_H
#define APX_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct apx_test {
	const char *name;
	int (*fn)(void);	/* 0 pass, 77 skip */
};

#define APX_TEST_SKIP 77

#define APX_TEST(n)                                                                            \
	static int test_##n(void);                                                             \
	static const struct apx_test apx_test_##n                                              \
		__attribute__((used, section("apx_tests"), aligned(8))) = { #n, test_##n };    \
	static int test_##n(void)

#define APX_FAIL_(fmt, ...)                                                                    \
	do {                                                                                   \
		fprintf(stderr, "%s:%d: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__);          \
		return 1;                                                                      \
	} while (0)

#define APX_ASSERT(expr)                                                                       \
	do {                                                                                   \
		if (!(expr))                                                                   \
			APX_FAIL_("assertion failed: %s", #expr);                              \
	} while (0)

#define APX_ASSERT_EQ(a, b)                                                                    \
	do {                                                                                   \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                               \
		if (a_ != b_)                                                                  \
			APX_FAIL_("%s == %s failed: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_);  \
	} while (0)

#define APX_ASSERT_OK(expr)                                                                    \
	do {                                                                                   \
		long r_ = (long)(expr);                                                        \
		if (r_ < 0)                                                                    \
			APX_FAIL_("%s failed: %ld (%s)", #expr, r_, strerror((int)-r_));        \
	} while (0)

#define APX_ASSERT_STREQ(a, b)                                                                 \
	do {                                                                                   \
		const char *a_ = (a), *b_ = (b);                                               \
		if (!a_ || !b_ || strcmp(a_, b_))                                              \
			APX_FAIL_("%s == %s failed: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", \
				  b_ ? b_ : "(null)");                                         \
	} while (0)

extern const struct apx_test __start_apx_tests[], __stop_apx_tests[];

#define APX_TEST_MAIN()                                                                        \
	int main(int argc, char **argv)                                                        \
	{                                                                                      \
		int failed = 0, ran = 0, skipped = 0;                                          \
		for (const struct apx_test *t = __start_apx_tests; t < __stop_apx_tests; t++) { \
			int r, want = argc < 2;                                                \
			for (int i = 1; i < argc; i++)                                         \
				want |= !strcmp(argv[i], t->name);                             \
			if (!want)                                                             \
				continue;                                                      \
			r = t->fn();                                                           \
			ran++;                                                                 \
			if (r == APX_TEST_SKIP)                                                \
				skipped++;                                                     \
			failed += r != 0 && r != APX_TEST_SKIP;                                \
			fprintf(stderr, "%-40s %s\n", t->name,                                 \
				r == 0 ? "ok" : r == APX_TEST_SKIP ? "SKIP" : "FAIL");         \
		}                                                                              \
		if (failed)                                                                    \
			return 1;                                                              \
		return ran && skipped == ran ? APX_TEST_SKIP : 0;                              \
	}

#endif
