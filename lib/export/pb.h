/*
 * pb.h - a minimal protobuf wire-format writer for the Perfetto exporter (perfetto.c): fields
 * are appended to a growable buffer; a nested message reserves a 4-byte length (a redundant,
 * still valid varint, as Perfetto's own protozero does) that is filled in when it ends.
 * Single-threaded; an allocation failure sets err and makes every later call a no-op.
 */
#ifndef APX_EXPORT_PB_H
#define APX_EXPORT_PB_H

#include <stddef.h>
#include <stdint.h>

#define APX_PB_DEPTH 8

struct apx_pb {
	uint8_t *p;
	size_t n, cap;
	size_t open[APX_PB_DEPTH];	/* offsets of the reserved lengths of open messages */
	int depth;
	int err;			/* -ENOMEM, or -E2BIG for a message over 256 MiB */
};

void apx_pb_reset(struct apx_pb *b);	/* empty, keeps the memory */
void apx_pb_free(struct apx_pb *b);
void apx_pb_uint(struct apx_pb *b, unsigned field, uint64_t v);	/* varint: uint32/64, enum, bool */
void apx_pb_int(struct apx_pb *b, unsigned field, int64_t v);	/* int32/int64 (not sint) */
void apx_pb_fixed64(struct apx_pb *b, unsigned field, uint64_t v);
void apx_pb_double(struct apx_pb *b, unsigned field, double v);
void apx_pb_bytes(struct apx_pb *b, unsigned field, const void *p, size_t len);	/* bytes */
/* A string field: valid UTF-8 whatever p holds (bytes that are not UTF-8 as U+FFFD, a NUL as
 * "\x00": apx_utf8_sanitize), as protobuf's string type requires. */
void apx_pb_string(struct apx_pb *b, unsigned field, const char *p, size_t len);
void apx_pb_begin(struct apx_pb *b, unsigned field);	/* a nested message */
void apx_pb_end(struct apx_pb *b);

#endif
