/*
 * reader.c - the .apx reader (API in include/apx/format.h): reads a regular file into memory
 * with pread (or takes a buffer), checks the preamble, then walks every chunk checking its
 * header and payload CRC32C, and builds the chunk index. On the first bad byte it stops, keeps
 * every chunk before it and records where and what in r->damage. Records are decoded lazily
 * by the chunk iterator, with every length checked against the bytes left. Input is untrusted (fuzzed: tests/fuzz/).
 * Used by the apx command, analysis and tests; one reader may be iterated from several
 * threads once apx_reader_string() has been called once.
 */
#include <apx/format.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/varint.h"
#include "format/chunk.h"

#include "base/banned.h"

struct str_ref {
	const char *p;
	uint32_t len;
};

struct apx_reader {
	const uint8_t *base;
	size_t size;
	/* owned: base is the reader's copy of the file, an anonymous mapping of size bytes
	 * unmapped at close; released[i]: chunk i's pages were given back (apx_reader_release),
	 * allocated with the index, written through a const reader */
	int owned;
	uint8_t *released;
	uint16_t minor;
	struct apx_chunk_info *chunks;
	size_t nchunks, cap;
	enum apx_read_status status;
	struct apx_diag damage;
	struct apx_rec header;
	struct str_ref *strs;
	size_t nstrs;
	int strs_loaded;
};

static int diag_set(struct apx_diag *d, int err, uint64_t off, int64_t chunk, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int diag_set(struct apx_diag *d, int err, uint64_t off, int64_t chunk, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return err;
	d->err = err;
	d->offset = off;
	d->chunk = chunk;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return err;
}

/* Whether records of the type carry bytes fields (pointers into the chunk reach callers). */
static int has_bytes(unsigned type)
{
	const struct apx_rec_schema *s = apx_schema(type);

	if (!s)
		return 1;
	for (unsigned f = 0; f < s->nfields; f++)
		if (s->fields[f].kind == APX_FK_BYTES)
			return 1;
	return 0;
}

/* Give back the pages wholly inside chunk i of the reader's copy: the resident size of a large
 * trace stays near what is being read (bench/report). Only chunks whose records are numbers
 * (kernels, copies, syncs...): strings and other bytes fields may still be pointed to, so
 * those chunks stay. A released chunk cannot be iterated again. */
void apx_reader_release(const struct apx_reader *r, size_t i)
{
	uint64_t page = 4096, from, to, a, b;

	if (!r->owned || i >= r->nchunks || !r->released || has_bytes(r->chunks[i].type))
		return;
	from = r->chunks[i].offset;
	to = from + APX_CHUNK_HDR_SIZE + r->chunks[i].payload_len;
	a = (from + page - 1) / page * page;
	b = to / page * page;
	r->released[i] = 1;
	if (b > a)
		madvise((void *)(uintptr_t)(r->base + a), b - a, MADV_DONTNEED);
}

static int index_add(struct apx_reader *r, const struct apx_chunk_info *ci)
{
	if (r->nchunks == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct apx_chunk_info *c = reallocarray(r->chunks, cap, sizeof(*c));
		uint8_t *rel;

		if (!c)
			return -ENOMEM;
		r->chunks = c;
		rel = realloc(r->released, cap);
		if (!rel)
			return -ENOMEM;
		memset(rel + r->cap, 0, cap - r->cap);
		r->released = rel;
		r->cap = cap;
	}
	r->chunks[r->nchunks++] = *ci;
	return 0;
}

/* Decode the single record of chunk i into *ret (header and end chunks). */
static int read_single(struct apx_reader *r, size_t i, struct apx_rec *ret, struct apx_diag *d)
{
	struct apx_chunk_iter it;
	int k;

	k = apx_chunk_iter_init(&it, r, i, d);
	if (k < 0)
		return k;
	k = apx_chunk_iter_next(&it, d);
	if (k < 0)
		return k;
	if (k == 0 || it.left != 0)
		return diag_set(d, -EBADMSG, r->chunks[i].offset, (int64_t)i,
				"%s chunk must hold exactly one record", apx_rec_type_name(it.rec.type));
	*ret = it.rec;
	return 0;
}

/* Walk the chunks after the header; sets status and damage. Never fails except on ENOMEM. */
static int scan_chunks(struct apx_reader *r, uint64_t off)
{
	uint64_t records = 0;

	for (;;) {
		size_t idx = r->nchunks;
		struct apx_chunk_hdr h;
		struct apx_chunk_info ci;
		const char *why;
		uint64_t left = r->size - off;
		uint32_t crc;
		int k;

		if (left == 0 && idx == 0) {
			r->status = APX_READ_TRUNCATED;
			diag_set(&r->damage, -ENODATA, off, 0,
				 "file ends after the preamble, before the header chunk");
			return 0;
		}
		if (left == 0) {
			r->status = APX_READ_TRUNCATED;
			diag_set(&r->damage, -ENODATA, off, (int64_t)idx,
				 "file ends after chunk %zu (offset %llu) without an end chunk: the producer "
				 "stopped before closing it; all %zu chunks before are readable",
				 idx - 1, (unsigned long long)off, idx);
			return 0;
		}
		if (left < APX_CHUNK_HDR_SIZE) {
			r->status = APX_READ_DAMAGED;
			diag_set(&r->damage, -EBADMSG, off, (int64_t)idx,
				 "chunk %zu at offset %llu is cut short: its header needs %d bytes, the file "
				 "has %llu left; chunks from %zu on are lost",
				 idx, (unsigned long long)off, APX_CHUNK_HDR_SIZE, (unsigned long long)left, idx);
			return 0;
		}
		if (apx_chunk_hdr_decode(r->base + off, &h, &why) < 0) {
			r->status = APX_READ_DAMAGED;
			diag_set(&r->damage, -EBADMSG, off, (int64_t)idx,
				 "chunk %zu at offset %llu: %s; chunks from %zu on (%llu bytes) are lost",
				 idx, (unsigned long long)off, why, idx, (unsigned long long)left);
			return 0;
		}
		if (h.payload_len > APX_CHUNK_PAYLOAD_MAX || h.records > APX_CHUNK_RECORDS_MAX) {
			r->status = APX_READ_DAMAGED;
			diag_set(&r->damage, -EBADMSG, off, (int64_t)idx,
				 "chunk %zu (%s) at offset %llu declares %u bytes / %u records, over the "
				 "limits (%u / %u); chunks from %zu on are lost",
				 idx, apx_rec_type_name(h.type), (unsigned long long)off, h.payload_len,
				 h.records, APX_CHUNK_PAYLOAD_MAX, APX_CHUNK_RECORDS_MAX, idx);
			return 0;
		}
		if (h.records > h.payload_len) {	/* a record takes at least one byte */
			r->status = APX_READ_DAMAGED;
			diag_set(&r->damage, -EBADMSG, off, (int64_t)idx,
				 "chunk %zu (%s) at offset %llu declares %u records in a %u-byte "
				 "payload (each needs at least a byte); chunks from %zu on are lost",
				 idx, apx_rec_type_name(h.type), (unsigned long long)off, h.records,
				 h.payload_len, idx);
			return 0;
		}
		if (h.payload_len > left - APX_CHUNK_HDR_SIZE) {
			r->status = APX_READ_DAMAGED;
			diag_set(&r->damage, -EBADMSG, off, (int64_t)idx,
				 "chunk %zu (%s) at offset %llu is cut short: its payload needs %u bytes, "
				 "the file has %llu left; its %u record%s lost",
				 idx, apx_rec_type_name(h.type), (unsigned long long)off, h.payload_len,
				 (unsigned long long)(left - APX_CHUNK_HDR_SIZE), h.records,
				 h.records == 1 ? " is" : "s are");
			return 0;
		}
		crc = apx_crc32c(r->base + off + APX_CHUNK_HDR_SIZE, h.payload_len);
		if (crc != h.payload_crc) {
			r->status = APX_READ_DAMAGED;
			diag_set(&r->damage, -EBADMSG, off, (int64_t)idx,
				 "chunk %zu (%s, %u record%s) at offset %llu: payload checksum mismatch "
				 "(stored %08x, computed %08x); chunks from %zu on are lost",
				 idx, apx_rec_type_name(h.type), h.records, h.records == 1 ? "" : "s",
				 (unsigned long long)off, h.payload_crc, crc, idx);
			return 0;
		}
		ci = (struct apx_chunk_info){ off, h.payload_len, h.records, h.type, h.version,
					      h.payload_crc };
		k = index_add(r, &ci);
		if (k < 0)
			return k;
		off += APX_CHUNK_HDR_SIZE + h.payload_len;
		if (h.type == APX_REC_HEADER && idx > 0) {
			r->nchunks--;
			r->status = APX_READ_DAMAGED;
			diag_set(&r->damage, -EBADMSG, ci.offset, (int64_t)idx,
				 "chunk %zu at offset %llu is a second header chunk", idx,
				 (unsigned long long)ci.offset);
			return 0;
		}
		if (h.type == APX_REC_END) {
			struct apx_rec end;
			struct apx_diag d = { 0 };

			k = read_single(r, idx, &end, &d);
			r->nchunks--;	/* END is not indexed as data */
			if (k < 0) {
				r->status = APX_READ_DAMAGED;
				r->damage = d;
				return 0;
			}
			if (end.v[APX_END_CHUNKS] != idx || end.v[APX_END_RECORDS] != records) {
				r->status = APX_READ_DAMAGED;
				diag_set(&r->damage, -EBADMSG, ci.offset, (int64_t)idx,
					 "end chunk at offset %llu counts %llu chunks and %llu records, the "
					 "file has %zu and %llu",
					 (unsigned long long)ci.offset,
					 (unsigned long long)end.v[APX_END_CHUNKS],
					 (unsigned long long)end.v[APX_END_RECORDS], idx,
					 (unsigned long long)records);
				return 0;
			}
			if (off != r->size) {
				r->status = APX_READ_DAMAGED;
				diag_set(&r->damage, -EBADMSG, off, (int64_t)idx + 1,
					 "%llu bytes follow the end chunk at offset %llu",
					 (unsigned long long)(r->size - off), (unsigned long long)ci.offset);
				return 0;
			}
			r->status = APX_READ_COMPLETE;
			return 0;
		}
		records += h.records;
	}
}

static int reader_load(struct apx_reader *r, struct apx_diag *diag)
{
	const uint8_t *p = r->base;
	uint16_t major;
	int k;

	if (r->size < APX_PREAMBLE_SIZE)
		return diag_set(diag, -EBADMSG, 0, -1,
				"not an apx file: %zu bytes, shorter than the %d-byte preamble", r->size,
				APX_PREAMBLE_SIZE);
	if (memcmp(p, apx_preamble_magic, 8))
		return diag_set(diag, -EBADMSG, 0, -1, "not an apx file: no apx magic at offset 0");
	if (apx_get_le32(p + 12) != apx_crc32c(p, 12))
		return diag_set(diag, -EBADMSG, 8, -1,
				"file preamble damaged: checksum mismatch over bytes 0-11");
	major = apx_get_le16(p + 8);
	r->minor = apx_get_le16(p + 10);
	if (major != APX_FORMAT_MAJOR)
		return diag_set(diag, -ENOTSUP, 8, -1,
				"format version %u.%u is not supported: this apx reads version %d.x "
				"(a newer apx wrote this file)",
				major, r->minor, APX_FORMAT_MAJOR);
	k = scan_chunks(r, APX_PREAMBLE_SIZE);
	if (k < 0)
		return diag_set(diag, k, 0, -1, "out of memory indexing chunks");
	if (r->nchunks == 0 || r->chunks[0].type != APX_REC_HEADER) {
		if (r->nchunks == 0 && r->status != APX_READ_COMPLETE) {
			if (diag) {	/* callers that only ask whether it is a trace pass none */
				*diag = r->damage;
				diag->err = -EBADMSG;
			}
			return -EBADMSG;
		}
		return diag_set(diag, -EBADMSG, APX_PREAMBLE_SIZE, 0,
				"the first chunk is not a header chunk");
	}
	k = read_single(r, 0, &r->header, diag);
	if (k < 0)
		return k == -ENOTSUP ? -EBADMSG : k;
	return 0;
}

static int reader_new(const void *buf, size_t len, int owned, struct apx_reader **ret_r,
		      struct apx_diag *diag)
{
	struct apx_reader *r = calloc(1, sizeof(*r));
	int k;

	if (!r)
		return diag_set(diag, -ENOMEM, 0, -1, "out of memory");
	r->base = buf;
	r->size = len;
	r->owned = owned;
	k = reader_load(r, diag);
	if (k < 0) {
		r->owned = 0;	/* the caller frees its buffer on failure */
		apx_reader_close(r);
		return k;
	}
	*ret_r = r;
	return 0;
}

int apx_reader_open_mem(const void *buf, size_t len, struct apx_reader **ret_r,
			struct apx_diag *diag)
{
	return reader_new(buf, len, 0, ret_r, diag);
}

static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a file";
}

/* Read the whole file into memory with pread: the reader then works on its own copy, so a
 * file that shrinks or changes while it is read cannot fault (SIGBUS on a mapping) or change
 * what was checked. */
static int read_all(int fd, uint64_t size, uint8_t **ret_buf, struct apx_diag *diag)
{
	uint8_t *buf;
	uint64_t off = 0;

	buf = size > SIZE_MAX ? MAP_FAILED : mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
						 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return diag_set(diag, -ENOMEM, 0, -1, "cannot allocate %llu bytes to read the file",
				(unsigned long long)size);
	while (off < size) {
		ssize_t n = pread(fd, buf + off, (size_t)(size - off), (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int k = n < 0 ? -errno : -EIO;

			munmap(buf, (size_t)size);
			if (n < 0)
				return diag_set(diag, k, off, -1, "read error at offset %llu: %s",
						(unsigned long long)off, strerror(-k));
			return diag_set(diag, k, off, -1,
					"the file shrank while it was read: %llu bytes when opened, "
					"it ends at offset %llu", (unsigned long long)size,
					(unsigned long long)off);
		}
		off += (uint64_t)n;
	}
	*ret_buf = buf;
	return 0;
}

int apx_reader_open(const char *path, struct apx_reader **ret_r, struct apx_diag *diag)
{
	struct stat st;
	uint8_t *buf = NULL;
	int fd, k;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return diag_set(diag, -errno, 0, -1, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) < 0) {
		k = -errno;
		close(fd);
		return diag_set(diag, k, 0, -1, "cannot stat: %s", strerror(-k));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return diag_set(diag, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL, 0, -1,
				"not a regular file (%s): traces are read from regular files only",
				file_kind(st.st_mode));
	}
	if (st.st_size == 0) {
		close(fd);
		return diag_set(diag, -EBADMSG, 0, -1, "not an apx file: the file is empty");
	}
	k = read_all(fd, (uint64_t)st.st_size, &buf, diag);
	close(fd);
	if (k < 0)
		return k;
	mprotect(buf, (size_t)st.st_size, PROT_READ);	/* the copy is read-only from here */
	k = reader_new(buf, (size_t)st.st_size, 1, ret_r, diag);
	if (k < 0)
		munmap(buf, (size_t)st.st_size);
	return k;
}

void apx_reader_close(struct apx_reader *r)
{
	if (!r)
		return;
	if (r->owned)
		munmap((void *)(uintptr_t)r->base, r->size);
	free(r->released);
	free(r->chunks);
	free(r->strs);
	free(r);
}

enum apx_read_status apx_reader_status(const struct apx_reader *r)
{
	return r->status;
}

const struct apx_diag *apx_reader_damage(const struct apx_reader *r)
{
	return r->status == APX_READ_COMPLETE ? NULL : &r->damage;
}

const struct apx_rec *apx_reader_header(const struct apx_reader *r)
{
	return &r->header;
}

uint16_t apx_reader_minor(const struct apx_reader *r)
{
	return r->minor;
}

uint64_t apx_reader_size(const struct apx_reader *r)
{
	return r->size;
}

size_t apx_reader_chunk_count(const struct apx_reader *r)
{
	return r->nchunks;
}

const struct apx_chunk_info *apx_reader_chunk(const struct apx_reader *r, size_t i)
{
	return i < r->nchunks ? &r->chunks[i] : NULL;
}

static void load_strings(struct apx_reader *r)
{
	size_t total = 0;

	r->strs_loaded = 1;
	for (size_t i = 0; i < r->nchunks; i++)
		if (r->chunks[i].type == APX_REC_STRINGS)
			total += r->chunks[i].records;
	if (!total)
		return;
	r->strs = calloc(total + 1, sizeof(*r->strs));
	if (!r->strs)
		return;
	r->nstrs = total + 1;
	for (size_t i = 0; i < r->nchunks; i++) {
		struct apx_chunk_iter it;

		if (r->chunks[i].type != APX_REC_STRINGS || apx_chunk_iter_init(&it, r, i, NULL) < 0)
			continue;
		while (apx_chunk_iter_next(&it, NULL) > 0) {
			uint64_t id = it.rec.v[APX_STRINGS_ID];

			if (id && id < r->nstrs && it.rec.bytes[APX_STRINGS_TEXT]) {
				r->strs[id].p = (const char *)it.rec.bytes[APX_STRINGS_TEXT];
				r->strs[id].len = (uint32_t)it.rec.v[APX_STRINGS_TEXT];
			}
		}
	}
}

const char *apx_reader_string(struct apx_reader *r, uint64_t id, size_t *ret_len)
{
	if (!r->strs_loaded)
		load_strings(r);
	if (id == 0 || id >= r->nstrs || !r->strs[id].p)
		return NULL;
	if (ret_len)
		*ret_len = r->strs[id].len;
	return r->strs[id].p;
}

/* ---- record decoding ---------------------------------------------------------------------- */

int apx_chunk_iter_init(struct apx_chunk_iter *it, const struct apx_reader *r, size_t i,
			struct apx_diag *diag)
{
	const struct apx_chunk_info *ci = apx_reader_chunk(r, i);
	const struct apx_rec_schema *s;
	const uint8_t *p, *end;
	unsigned nfields;

	if (!ci)
		return diag_set(diag, -EINVAL, 0, (int64_t)i, "no chunk %zu", i);
	if (r->released && r->released[i])
		return diag_set(diag, -ESTALE, ci->offset, (int64_t)i,
				"chunk %zu was released (apx_reader_release) and cannot be read again", i);
	s = apx_schema(ci->type);
	if (!s)
		return diag_set(diag, -ENOTSUP, ci->offset, (int64_t)i,
				"chunk %zu has record type %u, unknown to this apx: skipped", i, ci->type);
	if (ci->version != s->version)
		return diag_set(diag, -ENOTSUP, ci->offset, (int64_t)i,
				"chunk %zu (%s) has version %u, this apx reads version %u: skipped", i,
				s->name, ci->version, s->version);
	p = r->base + ci->offset + APX_CHUNK_HDR_SIZE;
	end = p + ci->payload_len;
	if (p >= end || *p > APX_REC_FIELDS_MAX || (size_t)(end - p) < 1u + *p)
		return diag_set(diag, -EBADMSG, ci->offset + APX_CHUNK_HDR_SIZE, (int64_t)i,
				"chunk %zu (%s, %u records) at offset %llu: field table missing or "
				"too long: the chunk's records cannot be read", i, s->name, ci->records,
				(unsigned long long)ci->offset);
	nfields = *p++;
	memset(it, 0, offsetof(struct apx_chunk_iter, rec));
	it->r = r;
	it->chunk = i;
	it->nfields = (uint8_t)nfields;
	it->known = (uint8_t)(nfields < s->nfields ? nfields : s->nfields);
	it->span_field = -1;
	for (unsigned f = 0; f < nfields; f++) {
		uint8_t k = p[f];

		/* A field this build knows, in a chunk of the version it reads, has the kind of
		 * the schema: anything else is damage, not a newer writer (-EBADMSG). A field
		 * added later may be of a kind this build cannot decode: the chunk is skipped. */
		if (k == 0 || (f < it->known && k != s->fields[f].kind))
			return diag_set(diag, -EBADMSG, ci->offset + APX_CHUNK_HDR_SIZE + 1 + f,
					(int64_t)i,
					"chunk %zu (%s, %u records) at offset %llu: field %u is stored as "
					"kind %u, the format says %u: the chunk's records cannot be read",
					i, s->name, ci->records, (unsigned long long)ci->offset, f, k,
					f < s->nfields ? s->fields[f].kind : 0);
		if (k >= APX_FK__COUNT)
			return diag_set(diag, -ENOTSUP, ci->offset + APX_CHUNK_HDR_SIZE + 1 + f,
					(int64_t)i,
					"chunk %zu (%s): field %u has kind %u, unknown to this apx: skipped",
					i, s->name, f, k);
		it->kinds[f] = k;
		if (f < it->known && k == APX_FK_SPAN)
			it->span_field = (int8_t)f;
		if (f < it->known && k == APX_FK_BYTES)
			it->bytes_mask |= 1ull << f;
	}
	it->p = p + nfields;
	it->end = end;
	it->left = ci->records;
	apx_rec_init(&it->rec, ci->type);
	it->rec.present = it->known == 64 ? UINT64_MAX : (1ull << it->known) - 1;
	return 0;
}

int apx_chunk_iter_next(struct apx_chunk_iter *it, struct apx_diag *diag)
{
	const uint8_t *p = it->p, *end = it->end;
	struct apx_rec *rec = &it->rec;
	uint64_t mask, v;

	if (it->left == 0) {
		if (p != end)
			goto bad_trailing;
		return 0;
	}
	if (apx_varint_get(&p, end, &mask) < 0 || (it->nfields < 64 && mask >> it->nfields))
		goto bad;
	/* Fields this build does not know (f >= known) are decoded into the spare slots of
	 * rec->v / rec->bytes like the others, so no per-field check is needed; their values
	 * are unspecified for callers (rec->present says which fields are known). */
	for (uint64_t bits = mask; bits; bits &= bits - 1) {
		unsigned f = (unsigned)__builtin_ctzll(bits);

		switch (it->kinds[f]) {
		case APX_FK_UINT:
			if (apx_varint_get(&p, end, &v) < 0)
				goto bad;
			break;
		case APX_FK_DELTA:
			if (apx_varint_get(&p, end, &v) < 0)
				goto bad;
			v = rec->v[f] + (uint64_t)apx_unzigzag(v);
			break;
		case APX_FK_SPAN:
			if (apx_varint_get(&p, end, &v) < 0)
				goto bad;
			v = (uint64_t)apx_unzigzag(v);
			if ((int)f == it->span_field)
				it->span = v;
			break;
		case APX_FK_SINT:
			if (apx_varint_get(&p, end, &v) < 0)
				goto bad;
			v = (uint64_t)apx_unzigzag(v);
			break;
		case APX_FK_F64:
			if (end - p < 8)
				goto bad;
			v = apx_get_le64(p);
			p += 8;
			break;
		case APX_FK_BYTES:
			if (apx_varint_get(&p, end, &v) < 0 || v > APX_BYTES_MAX || v > (uint64_t)(end - p))
				goto bad;
			rec->bytes[f] = v ? p : NULL;
			p += v;
			break;
		default:
			goto bad;
		}
		rec->v[f] = v;
	}
	for (uint64_t empty = it->bytes_mask & ~mask; empty; empty &= empty - 1) {
		unsigned f = (unsigned)__builtin_ctzll(empty);

		rec->v[f] = 0;
		rec->bytes[f] = NULL;
	}
	if (it->span_field >= 0)
		rec->v[it->span_field] = rec->v[0] + it->span;
	it->p = p;
	it->left--;
	return 1;
bad:
	return diag_set(diag, -EBADMSG, (uint64_t)(p - it->r->base), (int64_t)it->chunk,
			"chunk %zu (%s): record %u of %u cannot be decoded at offset %llu",
			it->chunk, apx_rec_type_name(rec->type),
			it->r->chunks[it->chunk].records - it->left, it->r->chunks[it->chunk].records,
			(unsigned long long)(p - it->r->base));
bad_trailing:
	return diag_set(diag, -EBADMSG, (uint64_t)(p - it->r->base), (int64_t)it->chunk,
			"chunk %zu (%s): %zu bytes left after its %u records", it->chunk,
			apx_rec_type_name(rec->type), (size_t)(end - p),
			it->r->chunks[it->chunk].records);
}
