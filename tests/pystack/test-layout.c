/*
 * test-layout.c - lib/pystack without an interpreter (ctest unit-pystack-layout): the built-in
 * layouts by version, the _Py_DebugOffsets parser on tables shaped like CPython 3.13's and
 * 3.14's (and refusals: another cookie, a free-threaded build, an unknown shape), the two line
 * table decoders on tables CPython 3.10, 3.11 and 3.12 wrote (expected lines from their own
 * co_lines()), and apx_py_runtime_find in a process without Python.
 */
#include <errno.h>
#include <string.h>

#include "apx-test.h"
#include "pystack/pystack.h"

#include "base/banned.h"

APX_TEST(builtin_layouts_by_version)
{
	struct apx_py_layout L;

	APX_ASSERT_OK(apx_py_layout_builtin(0x030a0df0, &L));
	APX_ASSERT(L.frame_object && !L.cframe && L.minor == 10);
	APX_ASSERT_OK(apx_py_layout_builtin(0x030b07f0, &L));
	APX_ASSERT(L.cframe && L.code_qualname == 128 && L.skip_owner_min == 0);
	APX_ASSERT_OK(apx_py_layout_builtin(0x030c03f0, &L));
	APX_ASSERT(L.cframe && L.skip_owner_min == 3 && L.interp_threads_head == 72);
	APX_ASSERT_EQ(apx_py_layout_builtin(0x030900f0, &L), -ENOTSUP);
	APX_ASSERT_EQ(apx_py_layout_builtin(0x030d00f0, &L), -ENOTSUP);	/* debug offsets */
	APX_ASSERT_EQ(apx_py_layout_builtin(0x020700f0, &L), -ENOTSUP);
	return 0;
}

/* A _Py_DebugOffsets table: the 3.13.0 values measured with offsetof, in 3.13's shape, or in
 * 3.14's (threads_main, code_object_generation and tlbc_generation in the interpreter section,
 * stackpointer and tlbc_index in the frame's, co_tlbc in the code object's). */
static size_t table(uint64_t *w, uint64_t version, int shape14, uint64_t free_threaded)
{
	static const uint64_t interp13[] = { 10000, 8, 16, 7344, 100, 200, 300, 400, 500, 600,
					     0, 610, 620 };
	static const uint64_t interp14[] = { 10000, 8, 16, 7344, 7352, 100, 200, 300, 400, 500,
					     600, 0, 610, 620, 630, 0 };
	static const uint64_t thread[] = { 300, 0, 8, 16, 72, 152, 160, 232, 240 };
	static const uint64_t frame13[] = { 80, 8, 0, 56, 72, 70 };
	static const uint64_t frame14[] = { 80, 8, 0, 56, 72, 70, 64, 0 };
	static const uint64_t code13[] = { 208, 112, 120, 128, 136, 68, 72, 80, 88, 200 };
	static const uint64_t code14[] = { 208, 112, 120, 128, 136, 68, 72, 80, 88, 200, 0 };
	size_t n = 0;

	memcpy(&w[n++], "xdebugpy", 8);
	w[n++] = version;
	w[n++] = free_threaded;
	w[n++] = 400000;	/* runtime: size, finalizing, interpreters_head */
	w[n++] = 24;
	w[n++] = 632;
#define PUT(a) do { memcpy(&w[n], a, sizeof(a)); n += sizeof(a) / 8; } while (0)
	if (shape14)
		PUT(interp14);
	else
		PUT(interp13);
	PUT(thread);
	if (shape14)
		PUT(frame14);
	else
		PUT(frame13);
	if (shape14)
		PUT(code14);
	else
		PUT(code13);
#undef PUT
	w[n++] = 16;		/* PyObject: size, ob_type */
	w[n++] = 8;
	while (n < 96)
		w[n++] = 0;
	return n * 8;
}

APX_TEST(debug_offsets_of_313_and_314)
{
	uint64_t w[96];
	struct apx_py_layout L;
	char why[200];
	size_t n;

	n = table(w, 0x030d00f0, 0, 0);
	APX_ASSERT_OK(apx_py_layout_from_debug((const uint8_t *)w, n, &L, why, sizeof(why)));
	APX_ASSERT(L.minor == 13 && !L.tagged_code && L.runtime_interp_head == 632);
	APX_ASSERT(L.interp_threads_head == 7344 && L.tstate_frame == 72);
	APX_ASSERT(L.tstate_native_tid == 160);
	APX_ASSERT(L.frame_instr == 56 && L.frame_owner == 70 && L.code_adaptive == 200);
	n = table(w, 0x030e00f0, 1, 0);
	APX_ASSERT_OK(apx_py_layout_from_debug((const uint8_t *)w, n, &L, why, sizeof(why)));
	APX_ASSERT(L.minor == 14 && L.tagged_code && L.interp_threads_head == 7344);
	APX_ASSERT(L.tstate_frame == 72 && L.code_qualname == 128 && L.code_firstlineno == 68);
	return 0;
}

APX_TEST(debug_offsets_refused)
{
	uint64_t w[96];
	struct apx_py_layout L;
	char why[200];
	size_t n;

	n = table(w, 0x030d00f0, 0, 1);
	APX_ASSERT_EQ(apx_py_layout_from_debug((const uint8_t *)w, n, &L, why, sizeof(why)),
		      -ENOTSUP);
	APX_ASSERT(strstr(why, "free-threaded"));
	n = table(w, 0x030d00f0, 0, 0);
	memcpy(w, "ydebugpy", 8);
	APX_ASSERT_EQ(apx_py_layout_from_debug((const uint8_t *)w, n, &L, why, sizeof(why)),
		      -ENOTSUP);
	n = table(w, 0x030d00f0, 0, 0);
	w[6 + 13 + 2] = 12;	/* thread_state.next is not 8: no shape fits */
	APX_ASSERT_EQ(apx_py_layout_from_debug((const uint8_t *)w, n, &L, why, sizeof(why)),
		      -ENOTSUP);
	APX_ASSERT(strstr(why, "shape"));
	n = table(w, 0x030d00f0, 0, 0);
	APX_ASSERT_EQ(apx_py_layout_from_debug((const uint8_t *)w, 64, &L, why, sizeof(why)),
		      -ENOTSUP);	/* too short */
	return 0;
}

/* def f(a):\n    b = a + 1\n    if b:\n        b = [x * 2 for x in range(b)]\n    return b
 * compiled by each version; (start, end, line) from its own co_lines(). */
struct range {
	uint32_t start, end;
	int line;
};

static int check(int (*fn)(const uint8_t *, size_t, int, uint32_t), const uint8_t *tab, size_t n,
		 const struct range *r, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		for (uint32_t a = r[i].start; a < r[i].end; a += 2)
			if (fn(tab, n, 1, a) != r[i].line) {
				fprintf(stderr, "offset %u: line %d, CPython says %d\n", a,
					fn(tab, n, 1, a), r[i].line);
				return 0;
			}
	return 1;
}

APX_TEST(line_tables_as_cpython_says)
{
	static const uint8_t t310[] = { 0x08, 0x01, 0x04, 0x01, 0x12, 0x01, 0x04, 0x01 };
	static const struct range r310[] = { { 0, 8, 2 }, { 8, 12, 3 }, { 12, 30, 4 },
					     { 30, 34, 5 } };
	static const uint8_t t311[] = { 0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80,
		0x41, 0xd8, 0x07, 0x08, 0xf0, 0x00, 0x01, 0x05, 0x26, 0xd8, 0x0c, 0x25, 0xd0, 0x0c,
		0x25, 0x9d, 0x45, 0xa0, 0x21, 0x99, 0x48, 0x9c, 0x48, 0xd0, 0x0c, 0x25, 0xd1, 0x0c,
		0x25, 0xd4, 0x0c, 0x25, 0x88, 0x01, 0xd8, 0x0b, 0x0c, 0x80, 0x48 };
	static const struct range r311[] = { { 0, 2, 1 }, { 2, 12, 2 }, { 12, 16, 3 },
					     { 16, 66, 4 }, { 66, 70, 5 } };
	static const uint8_t t312[] = { 0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80,
		0x41, 0xd9, 0x07, 0x08, 0xdc, 0x1c, 0x21, 0xa0, 0x21, 0x9b, 0x48, 0xd6, 0x0c, 0x25,
		0x90, 0x71, 0x88, 0x51, 0x90, 0x11, 0x8b, 0x55, 0xd0, 0x0c, 0x25, 0x88, 0x01, 0xd0,
		0x0c, 0x25, 0xd8, 0x0b, 0x0c, 0x80, 0x48, 0xf9, 0xf2, 0x03, 0x00, 0x0d, 0x26 };
	static const struct range r312[] = { { 0, 2, 1 }, { 2, 12, 2 }, { 12, 16, 3 },
					     { 16, 70, 4 }, { 70, 74, 5 }, { 74, 78, -1 },
					     { 78, 84, 4 } };

	APX_ASSERT(check(apx_py_line_310, t310, sizeof(t310), r310, 4));
	APX_ASSERT(check(apx_py_line_311, t311, sizeof(t311), r311, 5));
	APX_ASSERT(check(apx_py_line_311, t312, sizeof(t312), r312, 7));
	/* past the end, and damaged tables: -1, never a read past n */
	APX_ASSERT_EQ(apx_py_line_311(t311, sizeof(t311), 1, 1000), (uint64_t)-1);
	APX_ASSERT_EQ(apx_py_line_311(t311 + 1, sizeof(t311) - 1, 1, 4), (uint64_t)-1);
	APX_ASSERT_EQ(apx_py_line_311(t311, 16, 1, 40), (uint64_t)-1);
	APX_ASSERT_EQ(apx_py_line_310(t310, 3, 1, 20), (uint64_t)-1);
	return 0;
}

APX_TEST(no_python_in_this_process)
{
	struct apx_py_runtime rt;
	char why[200];

	APX_ASSERT_EQ(apx_py_runtime_find(&rt, why, sizeof(why)), -ENOENT);
	APX_ASSERT(strstr(why, "no Python"));
	return 0;
}

APX_TEST_MAIN()
