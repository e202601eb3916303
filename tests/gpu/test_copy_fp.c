/*
 * test_copy_fp.c - unit test of the collector's copy fingerprint (lib/collector/copy_fp.c), no
 * GPU needed: buffers of exact sizes from malloc (the sanitized build catches a read outside
 * them) checked for: 0 only for 0 bytes; equal contents at any alignment give equal
 * fingerprints; any changed byte of a buffer hashed whole, and a changed byte in each sample of
 * a larger one, changes it; a byte between the samples does not (a fingerprint, not a proof);
 * the size is part of it; constant batches filled with 0..19 (examples/pinned_h2d.py) differ.
 * `test-copy-fp --print` prints "offset bytes fp" lines of a patterned buffer instead, which
 * tests/gpu/copy_fp.py compares with its Python mirror. Run by ctest (label unit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/copy_fp.h"

#include "base/banned.h"

static int failures;

#define CHECK(cond)                                                                             \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
			failures++;                                                             \
		}                                                                               \
	} while (0)

static const uint64_t sizes[] = { 1, 7, 8, 9, 63, 64, 65, 255, 256, 257, 300, 1000, 4096,
				  65537, 1u << 20 };

/* a copy of n bytes of pattern at offset off of a fresh allocation (exact size + off) */
static unsigned char *buffer(uint64_t n, unsigned off, unsigned seed, unsigned char **base)
{
	*base = malloc(n + off);
	if (!*base)
		abort();
	for (uint64_t i = 0; i < n; i++)
		(*base)[off + i] = (unsigned char)(i * 131u + seed * 7u + (i >> 8));
	return *base + off;
}

/* the byte offsets apx_copy_fp reads first in each sample of n bytes at p (copy_fp.h) */
static void sample_starts(const unsigned char *p, uint64_t n, uint64_t out[4])
{
	uint64_t span = n - APX_COPY_FP_SAMPLE;

	for (unsigned k = 0; k < 4; k++) {
		out[k] = span / 3 * k;
		if (k == 1 || k == 2)
			out[k] -= ((uintptr_t)p + out[k]) & (APX_COPY_FP_SAMPLE - 1);
	}
	out[3] = span;
}

static void print_mode(void)
{
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (unsigned off = 0; off < 3; off++) {
			unsigned char *base, *b = buffer(sizes[s], off * 13, 1, &base);

			/* the offset of b from a 64-byte boundary decides the inner samples */
			printf("%u %llu %llu\n", (unsigned)((uintptr_t)b & 63),
			       (unsigned long long)sizes[s],
			       (unsigned long long)apx_copy_fp(b, sizes[s]));
			free(base);
		}
}

int main(int argc, char **argv)
{
	uint64_t seen[20];

	if (argc > 1 && !strcmp(argv[1], "--print")) {
		print_mode();
		return 0;
	}
	CHECK(apx_copy_fp("x", 0) == 0);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint64_t n = sizes[s], fp, st[4];
		unsigned char *b0, *b1, *a = buffer(n, 0, 1, &b0), *b = buffer(n, 5, 1, &b1);

		fp = apx_copy_fp(a, n);
		CHECK(fp != 0);
		if (n <= APX_COPY_FP_WHOLE) {	/* whole: any alignment, any byte */
			CHECK(apx_copy_fp(b, n) == fp);
			for (uint64_t i = 0; i < n; i++) {
				a[i] ^= 0x40;
				CHECK(apx_copy_fp(a, n) != fp);
				a[i] ^= 0x40;
			}
		} else {
			sample_starts(a, n, st);
			for (unsigned k = 0; k < 4; k++) {
				a[st[k]] ^= 1;			/* first byte of the sample */
				CHECK(apx_copy_fp(a, n) != fp);
				a[st[k]] ^= 1;
				a[st[k] + APX_COPY_FP_SAMPLE - 1] ^= 0x80;	/* its last */
				CHECK(apx_copy_fp(a, n) != fp);
				a[st[k] + APX_COPY_FP_SAMPLE - 1] ^= 0x80;
			}
			CHECK(apx_copy_fp(a, n) == fp);
			if (n >= 4096) {	/* between the first and second samples: not seen */
				a[APX_COPY_FP_SAMPLE + 8] ^= 1;
				CHECK(apx_copy_fp(a, n) == fp);
				a[APX_COPY_FP_SAMPLE + 8] ^= 1;
			}
		}
		if (n > 1)	/* the size counts: the same bytes, one fewer */
			CHECK(apx_copy_fp(a, n - 1) != fp);
		free(b0);
		free(b1);
	}
	/* 20 batches of 64 KiB of float32 i each, as examples/pinned_h2d.py fills them */
	for (unsigned i = 0; i < 20; i++) {
		float *f = malloc(65536);
		float v = (float)i;

		if (!f)
			abort();
		for (size_t j = 0; j < 65536 / sizeof(float); j++)
			memcpy(&f[j], &v, sizeof(v));
		seen[i] = apx_copy_fp(f, 65536);
		for (unsigned j = 0; j < i; j++)
			CHECK(seen[j] != seen[i]);
		free(f);
	}
	if (failures)
		fprintf(stderr, "test-copy-fp: %d failures\n", failures);
	else
		printf("test-copy-fp: ok\n");
	return failures ? 1 : 0;
}
