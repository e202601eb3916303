/*
 * test-format.c - unit tests of lib/base codecs and lib/format: varints, CRC32C, round trips
 * of every record type, the string table, forward/backward compatibility of field tables,
 * unknown chunk types and versions, and the writer's refusal to overwrite.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <apx/format.h>

#include "apx-test.h"
#include "base/crc32c.h"
#include "base/endian.h"
#include "base/varint.h"
#include "format/chunk.h"
#include "unit/sample.h"

#include "base/banned.h"

/* Read back a whole fd (memfd) into a heap buffer. */
static uint8_t *slurp(int fd, size_t *ret_len)
{
	struct stat st;
	uint8_t *buf;

	if (fstat(fd, &st) < 0)
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	if (buf && pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		return NULL;
	}
	*ret_len = (size_t)st.st_size;
	return buf;
}

/* A sample trace in memory: n records of every type. */
static uint8_t *sample(unsigned n, uint32_t chunk_bytes, int close_it, size_t *ret_len)
{
	int fd = memfd_create("apx-test", MFD_CLOEXEC), dup_fd;
	uint8_t *buf;

	if (fd < 0)
		return NULL;
	dup_fd = dup(fd);	/* the writer closes its fd */
	if (apx_sample_write(dup_fd, n, 42, chunk_bytes, close_it) < 0) {
		close(fd);
		return NULL;
	}
	buf = slurp(fd, ret_len);
	close(fd);
	return buf;
}

APX_TEST(varint_roundtrip)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 16383, 16384, UINT32_MAX, (uint64_t)1 << 63,
					 UINT64_MAX };
	uint8_t buf[16];

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		const uint8_t *p = buf;
		uint8_t *end = apx_varint_put(buf, vals[i]);
		uint64_t v;

		APX_ASSERT_EQ(end - buf, apx_varint_len(vals[i]));
		APX_ASSERT(apx_varint_get(&p, end, &v) == 0);
		APX_ASSERT_EQ(v, vals[i]);
		APX_ASSERT(p == end);
		p = buf;	/* one byte short must fail */
		APX_ASSERT(apx_varint_get(&p, end - 1, &v) < 0 || end - buf == 1);
	}
	for (int64_t s = -70000; s <= 70000; s += 777)
		APX_ASSERT(apx_unzigzag(apx_zigzag(s)) == s);
	APX_ASSERT(apx_unzigzag(apx_zigzag(INT64_MIN)) == INT64_MIN);
	return 0;
}

APX_TEST(varint_rejects_overlong)
{
	uint8_t eleven[11], bad10[10];
	const uint8_t *p = eleven;
	uint64_t v;

	memset(eleven, 0x80, sizeof(eleven));
	eleven[10] = 0;
	APX_ASSERT(apx_varint_get(&p, eleven + 11, &v) < 0);
	memset(bad10, 0xff, sizeof(bad10));
	bad10[9] = 0x02;	/* bit 64 set: overflow */
	p = bad10;
	APX_ASSERT(apx_varint_get(&p, bad10 + 10, &v) < 0);
	return 0;
}

APX_TEST(crc32c_known_and_paths_agree)
{
	uint8_t buf[1000];

	APX_ASSERT_EQ(apx_crc32c("123456789", 9), 0xe3069283u);
	APX_ASSERT_EQ(apx_crc32c_update_sw(0, "123456789", 9), 0xe3069283u);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	for (size_t n = 0; n < sizeof(buf); n += 37)
		APX_ASSERT_EQ(apx_crc32c(buf, n), apx_crc32c_update_sw(0, buf, n));
	APX_ASSERT_EQ(apx_crc32c_update(apx_crc32c(buf, 100), buf + 100, 900), apx_crc32c(buf, 1000));
	return 0;
}

static int recs_equal(const struct apx_rec *want, const struct apx_rec *got, unsigned type)
{
	const struct apx_rec_schema *s = apx_schema(type);

	for (unsigned f = 0; f < s->nfields; f++) {
		if (type == APX_REC_KERNEL && f == APX_KERNEL_NAME)
			continue;	/* an interned id, checked by name */
		if (want->v[f] != got->v[f]) {
			fprintf(stderr, "%s.%s: want %llu got %llu\n", s->name, s->fields[f].name,
				(unsigned long long)want->v[f], (unsigned long long)got->v[f]);
			return 0;
		}
		if (s->fields[f].kind == APX_FK_BYTES && want->v[f] &&
		    memcmp(want->bytes[f], got->bytes[f], want->v[f]))
			return 0;
	}
	return 1;
}

APX_TEST(roundtrip_every_record_type)
{
	static char text[APX_REC_FIELDS_MAX * 4096];
	const unsigned n = 300;
	uint64_t seen[APX_REC_TYPE__COUNT] = { 0 };
	struct apx_reader *r;
	struct apx_diag d;
	size_t len;
	uint8_t *buf = sample(n, 2048, 1, &len);

	APX_ASSERT(buf);
	APX_ASSERT_OK(apx_reader_open_mem(buf, len, &r, &d));
	APX_ASSERT_EQ(apx_reader_status(r), APX_READ_COMPLETE);
	APX_ASSERT(apx_reader_damage(r) == NULL);
	for (size_t c = 0; c < apx_reader_chunk_count(r); c++) {
		struct apx_chunk_iter it;
		unsigned type = apx_reader_chunk(r, c)->type;
		int k;

		if (apx_chunk_iter_init(&it, r, c, &d) < 0)
			APX_FAIL_("chunk %zu: %s", c, d.msg);
		while ((k = apx_chunk_iter_next(&it, &d)) > 0) {
			struct apx_rec want;

			APX_ASSERT_EQ(it.rec.present, (1ull << apx_schema(type)->nfields) - 1);
			if (type == APX_REC_HEADER) {
				apx_sample_header(&want);
			} else if (type == APX_REC_STRINGS) {
				char name[32];

				snprintf(name, sizeof(name), "kernel_%u", (unsigned)seen[type]);
				APX_ASSERT_EQ(it.rec.v[APX_STRINGS_ID], seen[type] + 1);
				APX_ASSERT_EQ(it.rec.v[APX_STRINGS_TEXT], strlen(name));
				APX_ASSERT(!memcmp(it.rec.bytes[APX_STRINGS_TEXT], name, strlen(name)));
				seen[type]++;
				continue;
			} else {
				apx_sample_rec(&want, type, seen[type], 42, text);
			}
			APX_ASSERT(recs_equal(&want, &it.rec, type));
			if (type == APX_REC_KERNEL) {
				char name[32];
				size_t nl;
				const char *s = apx_reader_string(r, it.rec.v[APX_KERNEL_NAME], &nl);

				snprintf(name, sizeof(name), "kernel_%u", (unsigned)(seen[type] % 7));
				APX_ASSERT(s && nl == strlen(name) && !memcmp(s, name, nl));
			}
			seen[type]++;
		}
		APX_ASSERT_EQ(k, 0);
	}
	for (unsigned t = APX_REC_DEVICE; t <= APX_REC_TYPE__LAST; t++)
		APX_ASSERT_EQ(seen[t], n);
	APX_ASSERT_EQ(seen[APX_REC_STRINGS], 7);	/* deduplicated */
	APX_ASSERT_EQ(seen[APX_REC_HEADER], 1);
	apx_reader_close(r);
	free(buf);
	return 0;
}

APX_TEST(truncated_producer_is_readable)
{
	struct apx_reader *r;
	struct apx_diag d;
	size_t len;
	uint8_t *buf = sample(40, 1024, 0, &len);

	APX_ASSERT(buf);
	APX_ASSERT_OK(apx_reader_open_mem(buf, len, &r, &d));
	APX_ASSERT_EQ(apx_reader_status(r), APX_READ_TRUNCATED);
	APX_ASSERT(strstr(apx_reader_damage(r)->msg, "without an end chunk"));
	APX_ASSERT(apx_reader_chunk_count(r) > 20);
	apx_reader_close(r);
	free(buf);
	return 0;
}

/* Build a file by hand: preamble + the given chunks (type, payload). */
struct raw_chunk {
	uint16_t type, version;
	const uint8_t *payload;
	uint32_t len, records;
};

static size_t raw_file(uint8_t *out, uint16_t major, const struct raw_chunk *c, size_t n)
{
	size_t off = APX_PREAMBLE_SIZE;

	apx_preamble_encode(out, major, 0);
	for (size_t i = 0; i < n; i++) {
		struct apx_chunk_hdr h = { c[i].type, c[i].version, 0, c[i].len, c[i].records,
					   apx_crc32c(c[i].payload, c[i].len) };

		apx_chunk_hdr_encode(out + off, &h);
		memcpy(out + off + APX_CHUNK_HDR_SIZE, c[i].payload, c[i].len);
		off += APX_CHUNK_HDR_SIZE + c[i].len;
	}
	return off;
}

/* A header chunk payload: the sample header encoded with its schema. */
static uint32_t header_payload(uint8_t *out)
{
	const struct apx_rec_schema *s = apx_schema(APX_REC_HEADER);
	struct apx_enc_state st;
	struct apx_rec h;
	uint8_t *p;

	apx_sample_header(&h);
	apx_enc_state_init(&st, s);
	p = apx_payload_schema_put(out, s);
	p = apx_rec_encode(&st, &h, p);
	return (uint32_t)(p - out);
}

APX_TEST(unknown_chunk_type_and_version_are_skipped)
{
	static uint8_t file[8192];
	uint8_t hp[1024], odd[3] = { 1, APX_FK_UINT, 0 }, kp[64], *p;
	const struct apx_rec_schema *ks = apx_schema(APX_REC_KERNEL);
	struct apx_enc_state st;
	struct apx_rec k;
	struct apx_reader *r;
	struct apx_diag d;
	struct apx_chunk_iter it;
	uint32_t hl = header_payload(hp), kl;
	size_t len;

	apx_rec_init(&k, APX_REC_KERNEL);
	k.v[APX_KERNEL_START_NS] = 5;
	k.v[APX_KERNEL_END_NS] = 9;
	apx_enc_state_init(&st, ks);
	p = apx_payload_schema_put(kp, ks);
	kl = (uint32_t)(apx_rec_encode(&st, &k, p) - kp);
	{
		struct raw_chunk c[] = {
			{ APX_REC_HEADER, 1, hp, hl, 1 },
			{ 200, 1, odd, sizeof(odd), 0 },		/* a future record type */
			{ APX_REC_KERNEL, 9, kp, kl, 1 },		/* a future version */
			{ APX_REC_KERNEL, 1, kp, kl, 1 },
		};
		len = raw_file(file, APX_FORMAT_MAJOR, c, 4);
	}
	APX_ASSERT_OK(apx_reader_open_mem(file, len, &r, &d));
	APX_ASSERT_EQ(apx_reader_status(r), APX_READ_TRUNCATED);	/* no END chunk */
	APX_ASSERT_EQ(apx_reader_chunk_count(r), 4);
	APX_ASSERT_EQ(apx_chunk_iter_init(&it, r, 1, &d), -ENOTSUP);
	APX_ASSERT(strstr(d.msg, "unknown to this apx"));
	APX_ASSERT_EQ(apx_chunk_iter_init(&it, r, 2, &d), -ENOTSUP);
	APX_ASSERT(strstr(d.msg, "version 9"));
	APX_ASSERT_OK(apx_chunk_iter_init(&it, r, 3, &d));
	APX_ASSERT_EQ(apx_chunk_iter_next(&it, &d), 1);
	APX_ASSERT_EQ(it.rec.v[APX_KERNEL_END_NS], 9);
	apx_reader_close(r);
	return 0;
}

APX_TEST(unknown_major_version_is_refused)
{
	static uint8_t file[4096];
	uint8_t hp[1024];
	uint32_t hl = header_payload(hp);
	struct raw_chunk c[] = { { APX_REC_HEADER, 1, hp, hl, 1 } };
	size_t len = raw_file(file, 2, c, 1);
	struct apx_reader *r;
	struct apx_diag d;

	APX_ASSERT_EQ(apx_reader_open_mem(file, len, &r, &d), -ENOTSUP);
	APX_ASSERT(strstr(d.msg, "version 2.0 is not supported"));
	return 0;
}

/* A kernel chunk whose field table has two more fields than this build knows (a newer
 * producer), and one with fewer (an older producer). */
APX_TEST(field_tables_newer_and_older)
{
	static uint8_t file[8192];
	const struct apx_rec_schema *ks = apx_schema(APX_REC_KERNEL);
	uint8_t hp[1024], newer[256], older[64], *p;
	uint32_t hl = header_payload(hp), nl, ol;
	struct apx_reader *r;
	struct apx_diag d;
	struct apx_chunk_iter it;
	size_t len;

	p = newer;
	*p++ = (uint8_t)(ks->nfields + 2);
	for (unsigned f = 0; f < ks->nfields; f++)
		*p++ = ks->fields[f].kind;
	*p++ = APX_FK_UINT;
	*p++ = APX_FK_BYTES;
	/* one record: start=100 (bit 0), grid_x=7, extra uint 300, extra bytes "xyz" */
	p = apx_varint_put(p, (1u << 0) | (1u << APX_KERNEL_GRID_X) | (1ull << ks->nfields) |
				      (1ull << (ks->nfields + 1)));
	p = apx_varint_put(p, apx_zigzag(100));
	p = apx_varint_put(p, 7);
	p = apx_varint_put(p, 300);
	p = apx_varint_put(p, 3);
	memcpy(p, "xyz", 3);
	p += 3;
	nl = (uint32_t)(p - newer);

	p = older;
	*p++ = 3;
	for (unsigned f = 0; f < 3; f++)
		*p++ = ks->fields[f].kind;
	p = apx_varint_put(p, 7);	/* start, end, device */
	p = apx_varint_put(p, apx_zigzag(50));
	p = apx_varint_put(p, apx_zigzag(20));
	p = apx_varint_put(p, 3);
	ol = (uint32_t)(p - older);
	{
		struct raw_chunk c[] = { { APX_REC_HEADER, 1, hp, hl, 1 },
					 { APX_REC_KERNEL, 1, newer, nl, 1 },
					 { APX_REC_KERNEL, 1, older, ol, 1 } };
		len = raw_file(file, APX_FORMAT_MAJOR, c, 3);
	}
	APX_ASSERT_OK(apx_reader_open_mem(file, len, &r, &d));
	APX_ASSERT_OK(apx_chunk_iter_init(&it, r, 1, &d));
	APX_ASSERT_EQ(apx_chunk_iter_next(&it, &d), 1);
	APX_ASSERT_EQ(it.rec.v[APX_KERNEL_START_NS], 100);
	APX_ASSERT_EQ(it.rec.v[APX_KERNEL_GRID_X], 7);
	APX_ASSERT_EQ(apx_chunk_iter_next(&it, &d), 0);
	APX_ASSERT_OK(apx_chunk_iter_init(&it, r, 2, &d));
	APX_ASSERT_EQ(apx_chunk_iter_next(&it, &d), 1);
	APX_ASSERT_EQ(it.rec.present, 7);
	APX_ASSERT_EQ(it.rec.v[APX_KERNEL_START_NS], 50);
	APX_ASSERT_EQ(it.rec.v[APX_KERNEL_END_NS], 70);
	APX_ASSERT_EQ(it.rec.v[APX_KERNEL_DEVICE], 3);
	APX_ASSERT_EQ(it.rec.v[APX_KERNEL_GRID_X], 0);
	apx_reader_close(r);
	return 0;
}

APX_TEST(field_table_damage_is_not_a_newer_writer)
{
	static uint8_t file[8192];
	const struct apx_rec_schema *ks = apx_schema(APX_REC_KERNEL);
	uint8_t hp[1024], wrong[64], unknown[64], *p;
	uint32_t hl = header_payload(hp), wl, ul;
	struct apx_reader *r;
	struct apx_diag d;
	struct apx_chunk_iter it;
	size_t len;

	p = wrong;	/* field 0 (a delta) stored as uint: damage */
	*p++ = 1;
	*p++ = APX_FK_UINT;
	p = apx_varint_put(p, 1);
	p = apx_varint_put(p, 5);
	wl = (uint32_t)(p - wrong);
	p = unknown;	/* a field added later, of a kind this build cannot decode: skip */
	*p++ = (uint8_t)(ks->nfields + 1);
	for (unsigned f = 0; f < ks->nfields; f++)
		*p++ = ks->fields[f].kind;
	*p++ = 99;
	p = apx_varint_put(p, 0);
	ul = (uint32_t)(p - unknown);
	{
		struct raw_chunk c[] = { { APX_REC_HEADER, 1, hp, hl, 1 },
					 { APX_REC_KERNEL, 1, wrong, wl, 1 },
					 { APX_REC_KERNEL, 1, unknown, ul, 1 },
					 { APX_REC_KERNEL, 1, wrong, wl, 9 } };
		len = raw_file(file, APX_FORMAT_MAJOR, c, 4);
	}
	APX_ASSERT_OK(apx_reader_open_mem(file, len, &r, &d));
	APX_ASSERT_EQ(apx_chunk_iter_init(&it, r, 1, &d), -EBADMSG);
	APX_ASSERT(strstr(d.msg, "field 0 is stored as kind 1, the format says 2") != NULL);
	APX_ASSERT_EQ(apx_chunk_iter_init(&it, r, 2, &d), -ENOTSUP);
	/* 9 records cannot fit in a 3-byte payload: the reader stops there */
	APX_ASSERT_EQ(apx_reader_chunk_count(r), 3);
	APX_ASSERT_EQ(apx_reader_status(r), APX_READ_DAMAGED);
	APX_ASSERT(strstr(apx_reader_damage(r)->msg, "declares 9 records in a 4-byte payload"));
	apx_reader_close(r);
	return 0;
}

/* A sample trace written to a file under /tmp; path receives its name. */
static int sample_file(char path[64], unsigned n)
{
	int fd;

	memcpy(path, "/tmp/apx-test-XXXXXX", 21);
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	return apx_sample_write(fd, n, 42, 4096, 1);
}

APX_TEST(file_shrinking_under_the_reader)
{
	char path[64];
	struct apx_reader *r;
	struct apx_diag d;
	uint64_t records = 0;

	/* a mapped file cut while read faulted the reader (SIGBUS); it reads its own copy */
	APX_ASSERT_OK(sample_file(path, 200));
	APX_ASSERT_OK(apx_reader_open(path, &r, &d));
	APX_ASSERT_EQ(apx_reader_status(r), APX_READ_COMPLETE);
	APX_ASSERT_OK(truncate(path, 100));
	for (size_t c = 0; c < apx_reader_chunk_count(r); c++) {
		struct apx_chunk_iter it;

		APX_ASSERT_OK(apx_chunk_iter_init(&it, r, c, &d));
		while (apx_chunk_iter_next(&it, &d) > 0)
			records++;
		apx_reader_release(r, c);
	}
	APX_ASSERT(records > 200);
	apx_reader_close(r);
	unlink(path);
	return 0;
}

APX_TEST(only_regular_files_never_blocking)
{
	char path[64] = "/tmp/apx-fifo-XXXXXX";
	struct apx_reader *r;
	struct apx_diag d;
	int fd = mkstemp(path);

	/* a FIFO with no writer: open(2) without O_NONBLOCK would wait forever */
	APX_ASSERT(fd >= 0);
	close(fd);
	unlink(path);
	APX_ASSERT_OK(mkfifo(path, 0600));
	APX_ASSERT_EQ(apx_reader_open(path, &r, &d), -EINVAL);
	APX_ASSERT(strstr(d.msg, "not a regular file (a FIFO)") != NULL);
	unlink(path);
	APX_ASSERT_EQ(apx_reader_open("/dev/null", &r, &d), -EINVAL);
	APX_ASSERT(strstr(d.msg, "a character device") != NULL);
	APX_ASSERT_EQ(apx_reader_open("/tmp", &r, &d), -EISDIR);
	return 0;
}

APX_TEST(writer_never_overwrites_silently)
{
	char path[] = "/tmp/apx-test-XXXXXX";
	int fd = mkstemp(path);
	struct apx_writer *w;
	struct apx_rec h;

	APX_ASSERT(fd >= 0);
	close(fd);
	apx_sample_header(&h);
	APX_ASSERT_EQ(apx_writer_open(path, 0, &h, NULL, &w), -EEXIST);
	APX_ASSERT_OK(apx_writer_open(path, 1, &h, NULL, &w));
	APX_ASSERT_OK(apx_writer_close(w, 1, 0));
	unlink(path);
	return 0;
}

APX_TEST(writer_rejects_bad_records)
{
	char big[8];
	struct apx_writer *w;
	struct apx_rec rec;
	int fd = memfd_create("apx-test", MFD_CLOEXEC);

	APX_ASSERT(fd >= 0);
	apx_sample_header(&rec);
	APX_ASSERT_OK(apx_writer_open_fd(fd, &rec, NULL, &w));
	apx_rec_init(&rec, 77);
	APX_ASSERT_EQ(apx_writer_add(w, &rec), -EINVAL);
	apx_rec_init(&rec, APX_REC_HEADER);
	APX_ASSERT_EQ(apx_writer_add(w, &rec), -EINVAL);
	apx_rec_init(&rec, APX_REC_KV);
	apx_rec_set_bytes(&rec, APX_KV_KEY, big, APX_BYTES_MAX + 1);
	APX_ASSERT_EQ(apx_writer_add(w, &rec), -EOVERFLOW);
	apx_writer_abandon(w);
	return 0;
}

APX_TEST(schema_has_no_gaps)
{
	unsigned types = 0;

	for (unsigned t = 0; t < APX_REC_TYPE__COUNT; t++) {
		const struct apx_rec_schema *s = apx_schema(t);

		if (!s)
			continue;
		types++;
		APX_ASSERT(s->nfields > 0 && s->nfields <= APX_REC_FIELDS_MAX);
		for (unsigned f = 0; f < s->nfields; f++) {
			APX_ASSERT(s->fields[f].name);
			APX_ASSERT(s->fields[f].kind > 0 && s->fields[f].kind < APX_FK__COUNT);
			/* a SPAN field is relative to field 0, which must be a timestamp */
			if (s->fields[f].kind == APX_FK_SPAN)
				APX_ASSERT(strstr(s->fields[0].name, "_ns"));
		}
	}
	APX_ASSERT_EQ(types, APX_REC_TYPE__LAST + 1);	/* every type 1..LAST, plus END */
	{
		static const unsigned counts[][2] = {
			{ APX_REC_HEADER, APX_HEADER__COUNT },
			{ APX_REC_STRINGS, APX_STRINGS__COUNT },
			{ APX_REC_DEVICE, APX_DEVICE__COUNT },
			{ APX_REC_PROCESS, APX_PROCESS__COUNT },
			{ APX_REC_THREAD, APX_THREAD__COUNT },
			{ APX_REC_KERNEL, APX_KERNEL__COUNT },
			{ APX_REC_MEMCPY, APX_MEMCPY__COUNT },
			{ APX_REC_MEMSET, APX_MEMSET__COUNT },
			{ APX_REC_MEMORY, APX_MEMORY__COUNT },
			{ APX_REC_SYNC, APX_SYNC__COUNT },
			{ APX_REC_API, APX_API__COUNT },
			{ APX_REC_MARKER, APX_MARKER__COUNT },
			{ APX_REC_CONFIG, APX_CONFIG__COUNT },
			{ APX_REC_UVM, APX_UVM__COUNT },
			{ APX_REC_METRIC, APX_METRIC__COUNT },
			{ APX_REC_COUNTER, APX_COUNTER__COUNT },
			{ APX_REC_CPU, APX_CPU__COUNT },
			{ APX_REC_FINDING, APX_FINDING__COUNT },
			{ APX_REC_KV, APX_KV__COUNT },
			{ APX_REC_GRAPH, APX_GRAPH__COUNT },
			{ APX_REC_LOSS, APX_LOSS__COUNT },
			{ APX_REC_END, APX_END__COUNT },
		};

		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
			APX_ASSERT_EQ(apx_schema(counts[i][0])->nfields, counts[i][1]);
	}
	return 0;
}

APX_TEST_MAIN()
