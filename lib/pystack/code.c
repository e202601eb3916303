/*
 * code.c - a code object's file name, qualified name, first line and the line of an
 * instruction, by copying reads only (the object may be freed while we read: a failed or
 * implausible read is -EFAULT / -EBADMSG, never a fault or a wrong name). str objects are
 * turned into UTF-8 from their 1-, 2- or 4-byte storage. Any thread; no allocation.
 */
#include <errno.h>
#include <string.h>

#include "pystack/pystack.h"

#include "base/banned.h"

static uintptr_t ptr_at(const uint8_t *b, unsigned off)
{
	uintptr_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static size_t put_utf8(char *out, size_t cap, size_t o, uint32_t c)
{
	if (c >= 0xd800 && c <= 0xdfff)
		c = '?';
	if (c < 0x80) {
		if (o + 1 >= cap)
			return cap;
		out[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	} else if (c < 0x800) {
		if (o + 2 >= cap)
			return cap;
		out[o++] = (char)(0xc0 | (c >> 6));
		out[o++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		if (o + 3 >= cap)
			return cap;
		out[o++] = (char)(0xe0 | (c >> 12));
		out[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[o++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x110000) {
		if (o + 4 >= cap)
			return cap;
		out[o++] = (char)(0xf0 | (c >> 18));
		out[o++] = (char)(0x80 | ((c >> 12) & 0x3f));
		out[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[o++] = (char)(0x80 | (c & 0x3f));
	} else {
		return put_utf8(out, cap, o, '?');
	}
	return o;
}

/* A str object as UTF-8 into out (NUL-terminated); 0 or -EFAULT/-EBADMSG. */
static int read_str(const struct apx_py_layout *L, uintptr_t obj, char *out, size_t cap)
{
	uint8_t hdr[80], data[768];
	uint32_t state;
	int64_t length;
	unsigned kind, compact, ascii;
	uintptr_t src;
	size_t o = 0, take;

	out[0] = '\0';
	/* the ASCII header first: a short str may end right after it, at the end of a mapping */
	if (!obj || apx_py_read(obj, hdr, L->unicode_ascii_size) < 0)
		return -EFAULT;
	memcpy(&state, hdr + L->unicode_state, sizeof(state));
	memcpy(&length, hdr + L->unicode_length, sizeof(length));
	kind = (state >> 2) & 7;
	compact = (state >> 5) & 1;
	ascii = (state >> 6) & 1;
	if ((!compact || !ascii) && apx_py_read(obj, hdr, L->unicode_compact_size + 8) < 0)
		return -EFAULT;		/* the longer headers: their data follows, so it is there */
	if (length < 0 || length > 1 << 20 || (kind != 1 && kind != 2 && kind != 4))
		return -EBADMSG;
	if (compact)
		src = obj + (ascii ? L->unicode_ascii_size : L->unicode_compact_size);
	else
		src = ptr_at(hdr, L->unicode_compact_size);	/* legacy str: data.any */
	take = (size_t)length * kind;
	if (take > sizeof(data))
		take = sizeof(data) / kind * kind;
	if (apx_py_read(src, data, take) < 0)
		return -EFAULT;
	for (size_t i = 0; i < take && o < cap; i += kind) {
		uint32_t c;

		if (kind == 1) {
			c = data[i];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, data + i, 2);
			c = u;
		} else {
			memcpy(&c, data + i, 4);
		}
		o = put_utf8(out, cap, o, c);
	}
	if (o >= cap)
		o = cap - 1;
	/* never end inside a UTF-8 sequence */
	while (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0x80) {
		size_t s = o - 1;

		while (s > 0 && ((unsigned char)out[s] & 0xc0) == 0x80)
			s--;
		{
			unsigned char lead = (unsigned char)out[s];
			size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;

			if (o - s == need)
				break;
			o = s;
		}
	}
	out[o] = '\0';
	return 0;
}

int apx_py_code_decode(const struct apx_py_runtime *rt, uintptr_t code, struct apx_py_code *ret)
{
	const struct apx_py_layout *L = &rt->L;
	struct apx_py_code c;
	uint8_t hdr[512];
	int32_t first;
	int r;

	if (!code || L->code_size > sizeof(hdr) || apx_py_read(code, hdr, L->code_size) < 0)
		return -EFAULT;
	if (ptr_at(hdr, 8) != rt->code_type)
		return -EBADMSG;
	memset(&c, 0, sizeof(c));
	memcpy(&first, hdr + L->code_firstlineno, sizeof(first));
	if (first < 0)
		return -EBADMSG;
	c.first_line = first;
	c.filename_obj = ptr_at(hdr, L->code_filename);
	c.qualname_obj = ptr_at(hdr, L->code_qualname ? L->code_qualname : L->code_name);
	c.linetable = ptr_at(hdr, L->code_linetable);
	r = read_str(L, c.filename_obj, c.file, sizeof(c.file));
	if (r < 0)
		return r;
	r = read_str(L, c.qualname_obj, c.func, sizeof(c.func));
	if (r < 0)
		return r;
	*ret = c;
	return 0;
}

int apx_py_code_line(const struct apx_py_runtime *rt, const struct apx_py_code *code,
		     uint32_t lasti_bytes)
{
	const struct apx_py_layout *L = &rt->L;
	uint8_t tab[16384];
	int64_t size;

	if (apx_py_read(code->linetable + L->bytes_size, &size, sizeof(size)) < 0 || size < 0)
		return -1;
	if ((uint64_t)size > sizeof(tab))
		size = sizeof(tab);	/* a longer table: lines past its first 16 KiB are unknown */
	if (apx_py_read(code->linetable + L->bytes_sval, tab, (size_t)size) < 0)
		return -1;
	if (L->minor == 10)
		return apx_py_line_310(tab, (size_t)size, code->first_line, lasti_bytes);
	return apx_py_line_311(tab, (size_t)size, code->first_line, lasti_bytes);
}
