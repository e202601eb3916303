/*
 * writer.c - the append-only .apx writer (API in include/apx/format.h). Designed for one
 * thread: the collector's writer thread, nvperfd's main loop, tests and benchmarks. Records
 * are delta-encoded into one open chunk per record type; a chunk is written with one writev(2)
 * when it reaches chunk_bytes or on apx_writer_flush(), string-table chunk first, so any
 * prefix of the file that ends on a chunk boundary is a readable trace.
 */
#include <apx/format.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/crc32c.h"
#include "format/chunk.h"

#include "base/banned.h"

#define DEFAULT_CHUNK_BYTES (64u << 10)
#define STRTAB_MAX (1u << 24)	/* distinct strings per file */

struct open_chunk {
	uint8_t *buf;			/* schema preamble + records */
	size_t len, cap;
	uint32_t records;
	struct apx_enc_state st;
};

struct strtab_slot {
	uint64_t hash;
	uint32_t id;			/* 0 = empty */
	uint32_t off;			/* into strtab.text */
	uint32_t len;
};

struct apx_writer {
	int fd;
	int err;			/* sticky: first write error, later calls return it */
	uint32_t chunk_bytes;
	uint64_t bytes, records, chunks;
	struct open_chunk *open[APX_REC_TYPE__COUNT];
	struct {
		struct strtab_slot *slots;
		size_t nslots, used;
		char *text;
		size_t text_len, text_cap;
	} strtab;
};

static int write_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int emit_chunk(struct apx_writer *w, unsigned type, const uint8_t *payload, size_t len,
		      uint32_t records)
{
	const struct apx_rec_schema *s = apx_schema(type);
	struct apx_chunk_hdr h = {
		.type = (uint16_t)type,
		.version = s->version,
		.payload_len = (uint32_t)len,
		.records = records,
		.payload_crc = apx_crc32c(payload, len),
	};
	uint8_t hdr[APX_CHUNK_HDR_SIZE];
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)(uintptr_t)payload, len } };
	int r;

	if (w->err)
		return w->err;
	apx_chunk_hdr_encode(hdr, &h);
	r = write_all(w->fd, iov, 2);
	if (r < 0)
		return w->err = r;
	w->bytes += sizeof(hdr) + len;
	w->records += records;
	w->chunks++;
	return 0;
}

static int close_chunk(struct apx_writer *w, unsigned type)
{
	struct open_chunk *c = w->open[type];
	int r;

	if (!c || !c->records)
		return 0;
	/* strings first: a chunk never refers to a string id the file does not hold yet */
	if (type != APX_REC_STRINGS) {
		r = close_chunk(w, APX_REC_STRINGS);
		if (r < 0)
			return r;
	}
	r = emit_chunk(w, type, c->buf, c->len, c->records);
	apx_enc_state_reset(&c->st);
	c->len = apx_payload_schema_put(c->buf, apx_schema(type)) - c->buf;
	c->records = 0;
	return r;
}

static struct open_chunk *open_chunk_get(struct apx_writer *w, unsigned type, size_t need)
{
	const struct apx_rec_schema *s = apx_schema(type);
	struct open_chunk *c = w->open[type];

	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		c->cap = w->chunk_bytes + apx_payload_schema_size(s) + 256;
		c->buf = malloc(c->cap);
		if (!c->buf) {
			free(c);
			return NULL;
		}
		c->len = apx_payload_schema_put(c->buf, s) - c->buf;
		apx_enc_state_init(&c->st, s);
		w->open[type] = c;
	}
	if (c->len + need > c->cap) {
		size_t cap = c->len + need + 256;
		uint8_t *b = realloc(c->buf, cap);

		if (!b)
			return NULL;
		c->buf = b;
		c->cap = cap;
	}
	return c;
}

int apx_writer_add(struct apx_writer *w, const struct apx_rec *rec)
{
	struct open_chunk *c;
	long need;
	int r;

	if (w->err)
		return w->err;
	if (rec->type >= APX_REC_TYPE__COUNT || rec->type == APX_REC_HEADER ||
	    rec->type == APX_REC_END || !apx_schema(rec->type))
		return -EINVAL;
	c = w->open[rec->type];
	if (!c) {
		c = open_chunk_get(w, rec->type, 0);
		if (!c)
			return -ENOMEM;
	}
	need = apx_rec_max_size(&c->st, rec);
	if (need < 0)
		return (int)need;
	if (c->records && (c->len + (size_t)need > w->chunk_bytes ||
			   c->records >= APX_CHUNK_RECORDS_MAX)) {
		r = close_chunk(w, rec->type);
		if (r < 0)
			return r;
	}
	if (c->len + (size_t)need > c->cap && !open_chunk_get(w, rec->type, (size_t)need))
		return -ENOMEM;
	c->len = apx_rec_encode(&c->st, rec, c->buf + c->len) - c->buf;
	c->records++;
	return 0;
}

/* ---- string table: open addressing on a 64-bit FNV-1a hash ------------------------------- */

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h | 1;
}

static int strtab_grow(struct apx_writer *w)
{
	size_t n = w->strtab.nslots ? w->strtab.nslots * 2 : 1024;
	struct strtab_slot *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < w->strtab.nslots; i++) {
		struct strtab_slot *o = &w->strtab.slots[i];
		size_t j;

		if (!o->id)
			continue;
		for (j = o->hash & (n - 1); slots[j].id; j = (j + 1) & (n - 1))
			;
		slots[j] = *o;
	}
	free(w->strtab.slots);
	w->strtab.slots = slots;
	w->strtab.nslots = n;
	return 0;
}

int apx_writer_intern(struct apx_writer *w, const char *s, size_t len, uint32_t *ret_id)
{
	struct strtab_slot *slot;
	struct apx_rec rec;
	uint64_t h;
	size_t j;
	int r;

	if (!s) {
		*ret_id = 0;
		return 0;
	}
	if (len > APX_BYTES_MAX)
		return -EOVERFLOW;
	if ((w->strtab.used + 1) * 2 > w->strtab.nslots) {
		if (w->strtab.used >= STRTAB_MAX)
			return -EOVERFLOW;
		r = strtab_grow(w);
		if (r < 0)
			return r;
	}
	h = str_hash(s, len);
	for (j = h & (w->strtab.nslots - 1);; j = (j + 1) & (w->strtab.nslots - 1)) {
		slot = &w->strtab.slots[j];
		if (!slot->id)
			break;
		if (slot->hash == h && slot->len == len &&
		    (!len || !memcmp(w->strtab.text + slot->off, s, len))) {
			*ret_id = slot->id;
			return 0;
		}
	}
	if (w->strtab.text_len + len > w->strtab.text_cap) {
		size_t cap = (w->strtab.text_cap + len) * 2;
		char *t = cap > UINT32_MAX ? NULL : realloc(w->strtab.text, cap);

		if (!t)
			return -ENOMEM;
		w->strtab.text = t;
		w->strtab.text_cap = cap;
	}
	apx_rec_init(&rec, APX_REC_STRINGS);
	rec.v[APX_STRINGS_ID] = w->strtab.used + 1;
	apx_rec_set_bytes(&rec, APX_STRINGS_TEXT, s, len);
	r = apx_writer_add(w, &rec);
	if (r < 0)
		return r;
	if (len)	/* the first string interned may be empty: no table yet (NULL) */
		memcpy(w->strtab.text + w->strtab.text_len, s, len);
	*slot = (struct strtab_slot){ h, (uint32_t)(w->strtab.used + 1), (uint32_t)w->strtab.text_len,
				      (uint32_t)len };
	w->strtab.text_len += len;
	w->strtab.used++;
	*ret_id = slot->id;
	return 0;
}

/* ---- life cycle ---------------------------------------------------------------------------- */

static int emit_single(struct apx_writer *w, const struct apx_rec *rec)
{
	const struct apx_rec_schema *s = apx_schema(rec->type);
	struct apx_enc_state st;
	uint8_t *buf, *end;
	long max;
	int r;

	apx_enc_state_init(&st, s);
	max = apx_rec_max_size(&st, rec);
	if (max < 0)
		return (int)max;
	buf = malloc(apx_payload_schema_size(s) + (size_t)max);
	if (!buf)
		return -ENOMEM;
	end = apx_payload_schema_put(buf, s);
	end = apx_rec_encode(&st, rec, end);
	r = emit_chunk(w, rec->type, buf, (size_t)(end - buf), 1);
	free(buf);
	return r;
}

int apx_writer_open_fd(int fd, const struct apx_rec *header, const struct apx_writer_opts *opts,
		       struct apx_writer **ret_w)
{
	uint8_t pre[APX_PREAMBLE_SIZE];
	struct iovec iov = { pre, sizeof(pre) };
	struct apx_writer *w;
	int r;

	if (fd < 0 || !header || header->type != APX_REC_HEADER)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->chunk_bytes = opts && opts->chunk_bytes ? opts->chunk_bytes : DEFAULT_CHUNK_BYTES;
	if (w->chunk_bytes > APX_CHUNK_PAYLOAD_MAX / 2)
		w->chunk_bytes = APX_CHUNK_PAYLOAD_MAX / 2;
	apx_preamble_encode(pre, APX_FORMAT_MAJOR, APX_FORMAT_MINOR);
	r = write_all(fd, &iov, 1);
	if (r == 0) {
		w->bytes = sizeof(pre);
		r = emit_single(w, header);
	}
	if (r < 0) {
		apx_writer_abandon(w);
		return r;
	}
	*ret_w = w;
	return 0;
}

int apx_writer_open(const char *path, int overwrite, const struct apx_rec *header,
		    const struct apx_writer_opts *opts, struct apx_writer **ret_w)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (overwrite ? O_TRUNC : O_EXCL);
	int fd = open(path, flags, 0644);

	if (fd < 0)
		return -errno;
	return apx_writer_open_fd(fd, header, opts, ret_w);
}

int apx_writer_flush(struct apx_writer *w)
{
	int r = close_chunk(w, APX_REC_STRINGS);

	for (unsigned t = 0; t < APX_REC_TYPE__COUNT && r == 0; t++)
		r = close_chunk(w, t);
	return r;
}

int apx_writer_close(struct apx_writer *w, uint64_t end_ns, unsigned status)
{
	struct apx_rec end;
	int r;

	r = apx_writer_flush(w);
	if (r == 0) {
		apx_rec_init(&end, APX_REC_END);
		end.v[APX_END_CHUNKS] = w->chunks;
		end.v[APX_END_RECORDS] = w->records;
		end.v[APX_END_END_NS] = end_ns;
		end.v[APX_END_STATUS] = status;
		r = emit_single(w, &end);
	}
	if (close(w->fd) < 0 && r == 0)
		r = -errno;
	w->fd = -1;
	apx_writer_abandon(w);
	return r;
}

void apx_writer_abandon(struct apx_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (unsigned t = 0; t < APX_REC_TYPE__COUNT; t++) {
		if (w->open[t])
			free(w->open[t]->buf);
		free(w->open[t]);
	}
	free(w->strtab.slots);
	free(w->strtab.text);
	free(w);
}

uint64_t apx_writer_bytes(const struct apx_writer *w)
{
	return w->bytes;
}

uint64_t apx_writer_records(const struct apx_writer *w)
{
	return w->records;
}

int apx_writer_add_loss(struct apx_writer *w, uint64_t ts_ns, unsigned source, uint64_t count,
			const char *reason)
{
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_LOSS);
	rec.v[APX_LOSS_TS_NS] = ts_ns;
	rec.v[APX_LOSS_SOURCE] = source;
	rec.v[APX_LOSS_COUNT] = count;
	apx_rec_set_str(&rec, APX_LOSS_REASON, reason);
	return apx_writer_add(w, &rec);
}
