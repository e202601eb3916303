/*
 * utf8.c - strict UTF-8 decoding, and copies of untrusted names as safe text (see utf8.h).
 * Called by termsafe.c, json.c, the CSV emitter, the exporters and the kernel name demangler.
 */
#include "base/utf8.h"

#include <string.h>

#include "base/banned.h"

size_t apx_utf8_decode(const uint8_t *p, size_t n, uint32_t *ret_cp)
{
	uint32_t cp, min;
	size_t len;

	if (n == 0)
		return 0;
	if (p[0] < 0x80) {
		*ret_cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2, cp = p[0] & 0x1f, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3, cp = p[0] & 0x0f, min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4, cp = p[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return len;
}

int apx_utf8_clean(const char *p, size_t n)
{
	const uint8_t *u = (const uint8_t *)p;
	uint32_t cp;

	for (size_t i = 0; i < n;) {
		size_t k;

		if (u[i] >= 0x20 && u[i] < 0x80) {	/* the common case: printable ASCII */
			i++;
			continue;
		}
		k = apx_utf8_decode(u + i, n - i, &cp);
		if (!k || !cp)
			return 0;
		i += k;
	}
	return 1;
}

static const char *copy(char *buf, size_t cap, const char *p, size_t n, int sanitize)
{
	const uint8_t *u = (const uint8_t *)p;
	size_t o = 0;

	if (!cap)
		return buf;
	for (size_t i = 0; i < n;) {
		const char *out = p + i;
		size_t in = 1, olen = 1;
		uint32_t cp;

		if (!u[i]) {
			out = "\\x00", olen = 4;
		} else if (u[i] >= 0x80 && sanitize) {
			in = apx_utf8_decode(u + i, n - i, &cp);
			if (!in)
				out = "\xef\xbf\xbd", in = 1, olen = 3;
			else
				olen = in;
		}
		if (o + olen >= cap)
			break;
		memcpy(buf + o, out, olen);
		o += olen;
		i += in;
	}
	buf[o] = 0;
	return buf;
}

const char *apx_text_copy(char *buf, size_t cap, const char *p, size_t n)
{
	return copy(buf, cap, p, n, 0);
}

const char *apx_utf8_sanitize(char *buf, size_t cap, const char *p, size_t n)
{
	return copy(buf, cap, p, n, 1);
}
