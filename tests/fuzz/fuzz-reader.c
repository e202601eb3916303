/*
 * fuzz-reader.c - libFuzzer target over the .apx reader: opens the input as a trace, walks
 * every chunk and record, looks up strings. Anything but a clean return is a bug (ASan/UBSan
 * report it). Inputs starting with "P" are a record type byte and a chunk payload, wrapped in
 * a file with valid checksums, so the fuzzer reaches the record decoder past the CRCs. Built with -fsanitize=fuzzer when APX_FUZZ=ON; otherwise linked with replay.c
 * so ctest replays the committed corpus on every build.
 */
#include <stddef.h>
#include <stdint.h>

#include <stdlib.h>
#include <string.h>

#include <apx/format.h>

#include "base/crc32c.h"
#include "format/chunk.h"

#include "base/banned.h"

/* preamble + a minimal header chunk + one chunk of the given type around payload */
static uint8_t *wrap_payload(const uint8_t *data, size_t size, size_t *ret_len)
{
	const struct apx_rec_schema *hs = apx_schema(APX_REC_HEADER);
	struct apx_enc_state st;
	struct apx_chunk_hdr h = { 0 };
	uint8_t hp[512], *p, *buf;
	struct apx_rec hdr;
	size_t hl, off;

	apx_rec_init(&hdr, APX_REC_HEADER);
	hdr.v[APX_HEADER_PID] = 1;
	apx_enc_state_init(&st, hs);
	p = apx_payload_schema_put(hp, hs);
	hl = (size_t)(apx_rec_encode(&st, &hdr, p) - hp);
	buf = malloc(APX_PREAMBLE_SIZE + 2 * APX_CHUNK_HDR_SIZE + hl + size);
	if (!buf)
		return NULL;
	apx_preamble_encode(buf, APX_FORMAT_MAJOR, APX_FORMAT_MINOR);
	off = APX_PREAMBLE_SIZE;
	h = (struct apx_chunk_hdr){ APX_REC_HEADER, hs->version, 0, (uint32_t)hl, 1, apx_crc32c(hp, hl) };
	apx_chunk_hdr_encode(buf + off, &h);
	memcpy(buf + off + APX_CHUNK_HDR_SIZE, hp, hl);
	off += APX_CHUNK_HDR_SIZE + hl;
	h = (struct apx_chunk_hdr){ data[0], 1, 0, (uint32_t)(size - 1), 1 + data[0] % 5,
				    apx_crc32c(data + 1, size - 1) };
	apx_chunk_hdr_encode(buf + off, &h);
	memcpy(buf + off + APX_CHUNK_HDR_SIZE, data + 1, size - 1);
	*ret_len = off + APX_CHUNK_HDR_SIZE + size - 1;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct apx_reader *r;
	struct apx_diag d;
	volatile uint64_t sink = 0;
	uint8_t *wrapped = NULL;

	if (size >= 2 && size < (1u << 20) && data[0] == 'P') {
		wrapped = wrap_payload(data + 1, size - 1, &size);
		if (!wrapped)
			return 0;
		data = wrapped;
	}
	if (apx_reader_open_mem(data, size, &r, &d) < 0) {
		free(wrapped);
		return 0;
	}
	sink += apx_reader_status(r) + apx_reader_header(r)->v[APX_HEADER_PID];
	for (size_t c = 0; c < apx_reader_chunk_count(r); c++) {
		struct apx_chunk_iter it;

		if (apx_chunk_iter_init(&it, r, c, &d) < 0)
			continue;
		while (apx_chunk_iter_next(&it, &d) > 0) {
			size_t len = 0;
			const char *s = apx_reader_string(r, it.rec.v[1], &len);

			sink += it.rec.v[0] + (s && len ? (uint8_t)s[len - 1] : 0);
		}
	}
	apx_reader_close(r);
	free(wrapped);
	(void)sink;
	return 0;
}
