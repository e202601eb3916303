/*
 * linetable.c - the line of an instruction from a copy of a code object's co_linetable:
 * CPython 3.10's (byte-offset delta, line delta) pairs and 3.11+'s location entries
 * (Objects/locations.md in CPython's source; the same walk as PyCode_Addr2Line). Pure
 * functions on bytes the caller copied; every read is bounded by n.
 */
#include "pystack/pystack.h"

#include "base/banned.h"

int apx_py_line_310(const uint8_t *tab, size_t n, int first_line, uint32_t lasti_bytes)
{
	uint32_t start = 0, end = 0;
	int line = first_line, cur = -1;

	for (size_t i = 0; i + 1 < n; i += 2) {
		int ldelta = (int8_t)tab[i + 1];

		start = end;
		end = start + tab[i];
		if (ldelta == -128) {
			cur = -1;
		} else {
			line += ldelta;
			cur = line;
		}
		if (start == end)
			continue;
		if (lasti_bytes < end)
			return cur;
	}
	return -1;
}

/* 6-bit varints of the 3.11 table: continuation bit 0x40. */
static int varint(const uint8_t *tab, size_t n, size_t *i, uint32_t *ret)
{
	uint32_t v = 0;
	unsigned shift = 0;

	for (;;) {
		uint8_t b;

		if (*i >= n || shift > 30)
			return -1;
		b = tab[(*i)++];
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*ret = v;
	return 0;
}

int apx_py_line_311(const uint8_t *tab, size_t n, int first_line, uint32_t lasti_bytes)
{
	uint32_t addr = 0;
	int line = first_line;
	size_t i = 0;

	while (i < n) {
		uint8_t b = tab[i];
		unsigned code = (b >> 3) & 15, len = (b & 7) + 1;
		int delta = 0, none = 0;
		size_t next;

		if (!(b & 0x80))
			return -1;		/* not the start of an entry: a damaged table */
		next = i + 1;
		if (code == 15) {
			none = 1;
		} else if (code == 14 || code == 13) {
			uint32_t u;

			if (varint(tab, n, &next, &u) < 0)
				return -1;
			delta = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
		} else if (code >= 10) {
			delta = (int)code - 10;
		}
		line += delta;
		/* skip the entry's remaining bytes: up to the next byte with bit 7 set */
		while (next < n && !(tab[next] & 0x80))
			next++;
		if (lasti_bytes < addr + len * 2)
			return none ? -1 : line;
		addr += len * 2;
		i = next;
	}
	return -1;
}
