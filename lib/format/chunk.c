/*
 * chunk.c - encoding of the file preamble and chunk headers, and of records into a chunk
 * payload (the layout is summarised in chunk.h, specified in docs/format.md). Called by the
 * writer (one thread) and, for headers, by the reader. No allocation.
 */
#include "format/chunk.h"

#include <errno.h>
#include <string.h>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/varint.h"

#include "base/banned.h"

const uint8_t apx_preamble_magic[8] = { 0x89, 'A', 'P', 'X', '\r', '\n', 0x1a, '\n' };

void apx_preamble_encode(uint8_t out[APX_PREAMBLE_SIZE], uint16_t major, uint16_t minor)
{
	memcpy(out, apx_preamble_magic, 8);
	apx_put_le16(out + 8, major);
	apx_put_le16(out + 10, minor);
	apx_put_le32(out + 12, apx_crc32c(out, 12));
}

void apx_chunk_hdr_encode(uint8_t out[APX_CHUNK_HDR_SIZE], const struct apx_chunk_hdr *h)
{
	apx_put_le32(out + 0, APX_CHUNK_MAGIC);
	apx_put_le16(out + 4, h->type);
	apx_put_le16(out + 6, h->version);
	apx_put_le32(out + 8, h->flags);
	apx_put_le32(out + 12, h->payload_len);
	apx_put_le32(out + 16, h->records);
	apx_put_le32(out + 20, 0);
	apx_put_le32(out + 24, h->payload_crc);
	apx_put_le32(out + 28, apx_crc32c(out, 28));
}

int apx_chunk_hdr_decode(const uint8_t in[APX_CHUNK_HDR_SIZE], struct apx_chunk_hdr *ret_h,
			 const char **ret_why)
{
	if (apx_get_le32(in) != APX_CHUNK_MAGIC) {
		*ret_why = "no chunk magic \"APXC\" where a chunk header should start";
		return -EBADMSG;
	}
	if (apx_get_le32(in + 28) != apx_crc32c(in, 28)) {
		*ret_why = "chunk header checksum mismatch";
		return -EBADMSG;
	}
	ret_h->type = apx_get_le16(in + 4);
	ret_h->version = apx_get_le16(in + 6);
	ret_h->flags = apx_get_le32(in + 8);
	ret_h->payload_len = apx_get_le32(in + 12);
	ret_h->records = apx_get_le32(in + 16);
	ret_h->payload_crc = apx_get_le32(in + 24);
	return 0;
}

size_t apx_payload_schema_size(const struct apx_rec_schema *s)
{
	return 1 + s->nfields;
}

uint8_t *apx_payload_schema_put(uint8_t *out, const struct apx_rec_schema *s)
{
	*out++ = s->nfields;
	for (unsigned i = 0; i < s->nfields; i++)
		*out++ = s->fields[i].kind;
	return out;
}

void apx_enc_state_init(struct apx_enc_state *st, const struct apx_rec_schema *s)
{
	memset(st, 0, sizeof(*st));
	st->s = s;
	st->span_field = -1;
	for (unsigned i = 0; i < s->nfields; i++) {
		st->kinds[i] = s->fields[i].kind;
		if (st->kinds[i] == APX_FK_BYTES)
			st->bytes_mask |= 1ull << i;
		if (st->kinds[i] == APX_FK_SPAN)
			st->span_field = (int)i;
	}
}

void apx_enc_state_reset(struct apx_enc_state *st)
{
	memset(st->prev, 0, sizeof(st->prev));
	st->prev_span = 0;
}

long apx_rec_max_size(const struct apx_enc_state *st, const struct apx_rec *rec)
{
	long n = APX_VARINT_MAX + (long)st->s->nfields * APX_VARINT_MAX;

	for (uint64_t bits = st->bytes_mask; bits; bits &= bits - 1) {
		unsigned i = (unsigned)__builtin_ctzll(bits);

		if (rec->v[i] > APX_BYTES_MAX)
			return -EOVERFLOW;
		n += (long)rec->v[i];
	}
	return n;
}

uint8_t *apx_rec_encode(struct apx_enc_state *st, const struct apx_rec *rec, uint8_t *out)
{
	const unsigned n = st->s->nfields;
	uint64_t span = 0;
	uint64_t mask = 0;

	for (unsigned i = 0; i < n; i++)
		mask |= (uint64_t)(rec->v[i] != st->prev[i]) << i;
	if (st->span_field >= 0) {
		span = rec->v[st->span_field] - rec->v[0];
		mask &= ~(1ull << st->span_field);
		mask |= (uint64_t)(span != st->prev_span) << st->span_field;
	}
	if (st->bytes_mask) {
		mask &= ~st->bytes_mask;
		for (uint64_t bits = st->bytes_mask; bits; bits &= bits - 1) {
			unsigned i = (unsigned)__builtin_ctzll(bits);

			if (rec->v[i] && rec->bytes[i])
				mask |= 1ull << i;
		}
	}
	out = apx_varint_put(out, mask);
	for (uint64_t bits = mask; bits; bits &= bits - 1) {
		unsigned i = (unsigned)__builtin_ctzll(bits);
		uint64_t v = rec->v[i];

		switch (st->kinds[i]) {
		case APX_FK_UINT:
			out = apx_varint_put(out, v);
			break;
		case APX_FK_DELTA:
			out = apx_varint_put(out, apx_zigzag((int64_t)(v - st->prev[i])));
			break;
		case APX_FK_SPAN:
			out = apx_varint_put(out, apx_zigzag((int64_t)span));
			break;
		case APX_FK_SINT:
			out = apx_varint_put(out, apx_zigzag((int64_t)v));
			break;
		case APX_FK_F64:
			apx_put_le64(out, v);
			out += 8;
			break;
		case APX_FK_BYTES:
			out = apx_varint_put(out, v);
			memcpy(out, rec->bytes[i], v);
			out += v;
			break;
		}
	}
	memcpy(st->prev, rec->v, n * sizeof(rec->v[0]));
	st->prev_span = span;
	return out;
}
