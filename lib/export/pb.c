/*
 * pb.c - protobuf wire-format writer (see pb.h). Called by perfetto.c.
 */
#include "export/pb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#include "base/banned.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

static int reserve(struct apx_pb *b, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->err)
		return -1;
	if (b->n + more <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->n + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->err = -ENOMEM;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

static void varint(struct apx_pb *b, uint64_t v)
{
	if (reserve(b, 10) < 0)
		return;
	while (v >= 0x80) {
		b->p[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (uint8_t)v;
}

static void tag(struct apx_pb *b, unsigned field, unsigned wt)
{
	varint(b, (uint64_t)field << 3 | wt);
}

void apx_pb_reset(struct apx_pb *b)
{
	b->n = 0;
	b->depth = 0;
	b->err = 0;
}

void apx_pb_free(struct apx_pb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void apx_pb_uint(struct apx_pb *b, unsigned field, uint64_t v)
{
	tag(b, field, WT_VARINT);
	varint(b, v);
}

void apx_pb_int(struct apx_pb *b, unsigned field, int64_t v)
{
	apx_pb_uint(b, field, (uint64_t)v);
}

void apx_pb_fixed64(struct apx_pb *b, unsigned field, uint64_t v)
{
	tag(b, field, WT_I64);
	if (reserve(b, 8) < 0)
		return;
	for (int i = 0; i < 8; i++)
		b->p[b->n++] = (uint8_t)(v >> (8 * i));
}

void apx_pb_double(struct apx_pb *b, unsigned field, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	apx_pb_fixed64(b, field, bits);
}

void apx_pb_bytes(struct apx_pb *b, unsigned field, const void *p, size_t len)
{
	tag(b, field, WT_LEN);
	varint(b, len);
	if (!len || reserve(b, len) < 0)
		return;
	memcpy(b->p + b->n, p, len);
	b->n += len;
}

void apx_pb_string(struct apx_pb *b, unsigned field, const char *p, size_t len)
{
	char small[1024], *buf = small;
	size_t cap = len * 4 + 1;	/* each byte at most 4 out ("\\x00") */

	if (apx_utf8_clean(p, len)) {
		apx_pb_bytes(b, field, p, len);
		return;
	}
	if (cap > sizeof(small) && !(buf = malloc(cap))) {
		apx_pb_bytes(b, field, "\xef\xbf\xbd", 3);	/* out of memory: a replacement */
		return;
	}
	apx_utf8_sanitize(buf, buf == small ? sizeof(small) : cap, p, len);
	apx_pb_bytes(b, field, buf, strlen(buf));
	if (buf != small)
		free(buf);
}

void apx_pb_begin(struct apx_pb *b, unsigned field)
{
	tag(b, field, WT_LEN);
	if (b->depth >= APX_PB_DEPTH) {
		b->err = -E2BIG;
		return;
	}
	if (reserve(b, 4) < 0)
		return;
	b->open[b->depth++] = b->n;
	b->n += 4;
}

void apx_pb_end(struct apx_pb *b)
{
	size_t at, len;

	if (b->err || b->depth <= 0)
		return;
	at = b->open[--b->depth];
	len = b->n - at - 4;
	if (len >= 1u << 28) {
		b->err = -E2BIG;
		return;
	}
	b->p[at] = (uint8_t)(len | 0x80);
	b->p[at + 1] = (uint8_t)(len >> 7 | 0x80);
	b->p[at + 2] = (uint8_t)(len >> 14 | 0x80);
	b->p[at + 3] = (uint8_t)(len >> 21);
}
