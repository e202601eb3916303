/*
 * chunk.h - internal to lib/format: the file preamble and the 32-byte chunk header, and the
 * record codec shared by writer.c and reader.c. Layout summary (normative: docs/format.md):
 *
 *   preamble (16 B)  magic "\x89APX\r\n\x1a\n" | major u16 | minor u16 | crc32c(bytes 0..11) u32
 *   chunk header     magic "APXC" u32 | type u16 | version u16 | flags u32 | payload_len u32 |
 *   (32 B)           records u32 | reserved u32 | payload crc32c u32 | crc32c(bytes 0..27) u32
 *   payload          nfields u8 | kind u8 x nfields | records
 *   record           varint mask | for each set bit i, ascending: field i in its kind's coding
 *
 * All integers little-endian. A clear mask bit means "same as the previous record of this
 * chunk" (UINT, DELTA, SINT, F64, SPAN) or "empty" (BYTES); every chunk starts from zeros.
 */
#ifndef APX_FORMAT_CHUNK_H
#define APX_FORMAT_CHUNK_H

#include <apx/format.h>

#include <stdint.h>

extern const uint8_t apx_preamble_magic[8];

struct apx_chunk_hdr {
	uint16_t type;
	uint16_t version;
	uint32_t flags;
	uint32_t payload_len;
	uint32_t records;
	uint32_t payload_crc;
};

void apx_preamble_encode(uint8_t out[APX_PREAMBLE_SIZE], uint16_t major, uint16_t minor);
void apx_chunk_hdr_encode(uint8_t out[APX_CHUNK_HDR_SIZE], const struct apx_chunk_hdr *h);
/* 0, or -EBADMSG with a reason in *ret_why (magic, header checksum). */
int apx_chunk_hdr_decode(const uint8_t in[APX_CHUNK_HDR_SIZE], struct apx_chunk_hdr *ret_h,
			 const char **ret_why);

/* Encoder state of one open chunk: the previous record's values, and facts about the schema
 * precomputed by apx_enc_state_init so the per-record path does no table walks. */
struct apx_enc_state {
	uint64_t prev[APX_REC_FIELDS_MAX];
	uint64_t prev_span;
	const struct apx_rec_schema *s;
	uint8_t kinds[APX_REC_FIELDS_MAX];
	uint64_t bytes_mask;		/* fields of kind BYTES */
	int span_field;			/* -1 = none */
};

void apx_enc_state_init(struct apx_enc_state *st, const struct apx_rec_schema *s);
/* Forget the previous record (a new chunk starts from zeros). */
void apx_enc_state_reset(struct apx_enc_state *st);

/* Bytes of the schema preamble at the start of a chunk payload of this schema. */
size_t apx_payload_schema_size(const struct apx_rec_schema *s);
uint8_t *apx_payload_schema_put(uint8_t *out, const struct apx_rec_schema *s);
/* Upper bound of the encoded size of rec; -EOVERFLOW when a byte field is too long. */
long apx_rec_max_size(const struct apx_enc_state *st, const struct apx_rec *rec);
/* Encode rec at out (room for apx_rec_max_size) against st; returns the new end. */
uint8_t *apx_rec_encode(struct apx_enc_state *st, const struct apx_rec *rec, uint8_t *out);

#endif
