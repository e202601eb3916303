/*
 * test-damage.c - the reader on damaged input (docs/format.md §7): a sample trace truncated
 * at every byte offset, and with every byte flipped (all bits, and one bit), must never crash
 * and must give exactly the documented result: every chunk before the damage is kept and
 * decodes; the damage is reported at the chunk that holds the bad byte; a cut on a chunk
 * boundary reads as TRUNCATED, anywhere else as DAMAGED; damage in the preamble or the
 * header chunk makes the file unusable (-EBADMSG).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <apx/format.h>

#include "apx-test.h"
#include "unit/sample.h"

#include "base/banned.h"

struct layout {
	size_t n;		/* chunks including END */
	uint64_t start[4096];	/* offset of each chunk; start[n] = file size */
};

static uint8_t *make_sample(size_t *ret_len)
{
	int fd = memfd_create("apx-damage", MFD_CLOEXEC);
	struct stat st;
	uint8_t *buf;

	if (fd < 0 || apx_sample_write(dup(fd), 24, 7, 700, 1) < 0 || fstat(fd, &st) < 0)
		return NULL;
	buf = malloc((size_t)st.st_size);
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		return NULL;
	close(fd);
	*ret_len = (size_t)st.st_size;
	return buf;
}

static int get_layout(const uint8_t *buf, size_t len, struct layout *l)
{
	struct apx_reader *r;
	struct apx_diag d;

	if (apx_reader_open_mem(buf, len, &r, &d) < 0 || apx_reader_status(r) != APX_READ_COMPLETE)
		return -1;
	l->n = apx_reader_chunk_count(r) + 1;
	for (size_t i = 0; i + 1 < l->n; i++)
		l->start[i] = apx_reader_chunk(r, i)->offset;
	l->start[l->n - 1] = apx_reader_chunk(r, l->n - 2)->offset + APX_CHUNK_HDR_SIZE +
			     apx_reader_chunk(r, l->n - 2)->payload_len;
	l->start[l->n] = len;
	apx_reader_close(r);
	return 0;
}

/* Index of the chunk holding byte off (n-1 = END). */
static size_t chunk_of(const struct layout *l, uint64_t off)
{
	size_t i = 0;

	while (i + 1 <= l->n && l->start[i + 1] <= off)
		i++;
	return i;
}

/* Every kept chunk must decode completely. */
static int all_kept_decode(const struct apx_reader *r)
{
	for (size_t c = 0; c < apx_reader_chunk_count(r); c++) {
		struct apx_chunk_iter it;
		struct apx_diag d;
		int k;

		if (apx_chunk_iter_init(&it, r, c, &d) < 0)
			return 0;
		while ((k = apx_chunk_iter_next(&it, &d)) > 0)
			;
		if (k < 0)
			return 0;
	}
	return 1;
}

APX_TEST(truncated_at_every_offset)
{
	static struct layout l;
	size_t len;
	uint8_t *buf = make_sample(&len);
	unsigned boundaries = 0;

	APX_ASSERT(buf && len > 8000);
	APX_ASSERT_OK(get_layout(buf, len, &l));
	APX_ASSERT(l.n > 30);
	for (size_t k = 0; k <= len; k++) {
		uint8_t *cut = malloc(k ? k : 1);	/* exact size: ASan catches overreads */
		struct apx_reader *r;
		struct apx_diag d = { 0 };
		int ret;

		memcpy(cut, buf, k);
		ret = apx_reader_open_mem(cut, k, &r, &d);
		if (k < l.start[1]) {	/* preamble or header chunk incomplete */
			APX_ASSERT_EQ(ret, -EBADMSG);
			APX_ASSERT(d.msg[0]);
			free(cut);
			continue;
		}
		APX_ASSERT_OK(ret);
		if (k == len) {
			APX_ASSERT_EQ(apx_reader_status(r), APX_READ_COMPLETE);
		} else {
			size_t c = chunk_of(&l, k);
			const struct apx_diag *dm = apx_reader_damage(r);

			APX_ASSERT(dm && dm->msg[0]);
			if (l.start[c] == k) {
				APX_ASSERT_EQ(apx_reader_status(r), APX_READ_TRUNCATED);
				boundaries++;
			} else {
				APX_ASSERT_EQ(apx_reader_status(r), APX_READ_DAMAGED);
				APX_ASSERT(strstr(dm->msg, "cut short"));
			}
			APX_ASSERT_EQ(dm->chunk, c);
			APX_ASSERT_EQ(dm->offset, l.start[c]);
			APX_ASSERT_EQ(apx_reader_chunk_count(r), c);	/* all before kept */
		}
		APX_ASSERT(all_kept_decode(r));
		apx_reader_close(r);
		free(cut);
	}
	APX_ASSERT_EQ(boundaries, l.n - 1);
	free(buf);
	return 0;
}

static int check_flip(const uint8_t *buf, size_t len, const struct layout *l, size_t k,
		      uint8_t x)
{
	uint8_t *bad = malloc(len);
	struct apx_reader *r;
	struct apx_diag d = { 0 };
	size_t c = chunk_of(l, k);
	int ret;

	memcpy(bad, buf, len);
	bad[k] ^= x;
	ret = apx_reader_open_mem(bad, len, &r, &d);
	if (k < l->start[1]) {
		APX_ASSERT_EQ(ret, -EBADMSG);
		APX_ASSERT(d.msg[0]);
	} else {
		const struct apx_diag *dm;

		APX_ASSERT_OK(ret);
		dm = apx_reader_damage(r);
		APX_ASSERT_EQ(apx_reader_status(r), APX_READ_DAMAGED);
		APX_ASSERT(dm && dm->msg[0]);
		APX_ASSERT_EQ(dm->chunk, c);
		APX_ASSERT_EQ(dm->offset, l->start[c]);
		APX_ASSERT_EQ(apx_reader_chunk_count(r), c);
		APX_ASSERT(all_kept_decode(r));
		apx_reader_close(r);
	}
	free(bad);
	return 0;
}

APX_TEST(every_byte_flipped)
{
	static struct layout l;
	size_t len;
	uint8_t *buf = make_sample(&len);

	APX_ASSERT(buf);
	APX_ASSERT_OK(get_layout(buf, len, &l));
	for (size_t k = 0; k < len; k++) {
		if (check_flip(buf, len, &l, k, 0xff))
			APX_FAIL_("flipping all bits of byte %zu", k);
		if (check_flip(buf, len, &l, k, (uint8_t)(1u << (k % 8))))
			APX_FAIL_("flipping bit %zu of byte %zu", k % 8, k);
	}
	free(buf);
	return 0;
}

APX_TEST(bytes_appended_after_end)
{
	size_t len;
	uint8_t *buf = make_sample(&len), *more;
	struct apx_reader *r;
	struct apx_diag d;

	APX_ASSERT(buf);
	more = malloc(len + 5);
	memcpy(more, buf, len);
	memcpy(more + len, "junk!", 5);
	APX_ASSERT_OK(apx_reader_open_mem(more, len + 5, &r, &d));
	APX_ASSERT_EQ(apx_reader_status(r), APX_READ_DAMAGED);
	APX_ASSERT(strstr(apx_reader_damage(r)->msg, "5 bytes follow the end chunk"));
	apx_reader_close(r);
	free(more);
	free(buf);
	return 0;
}

APX_TEST_MAIN()
