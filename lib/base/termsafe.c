/*
 * termsafe.c - escaping untrusted text for a terminal (see termsafe.h): one function that
 * escapes a byte, then a string form and a filtering stream (fopencookie) on top of it. Called
 * by apx report, info, history, status and top (cli/).
 */
#include "base/termsafe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/utf8.h"

#include "base/banned.h"

#define ESC_MAX 8	/* the longest output of one step: "\u009b" (6) or 4 bytes of UTF-8 */

/* Escape the character at p (n > 0 bytes left) into out; returns the bytes consumed, its
 * output length in *ret_olen. */
static size_t escape_step(const uint8_t *p, size_t n, int keep_nl, char out[ESC_MAX],
			  size_t *ret_olen)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t cp;
	size_t len = apx_utf8_decode(p, n, &cp);

	if (len == 0) {		/* not UTF-8: show the byte */
		memcpy(out, "\\x", 2);
		out[2] = hex[p[0] >> 4];
		out[3] = hex[p[0] & 15];
		*ret_olen = 4;
		return 1;
	}
	if ((cp < 0x20 && !(keep_nl && cp == '\n')) || cp == 0x7f) {
		memcpy(out, "\\x", 2);
		out[2] = hex[cp >> 4];
		out[3] = hex[cp & 15];
		*ret_olen = 4;
	} else if (cp >= 0x80 && cp <= 0x9f) {	/* C1: CSI, OSC... in 8-bit terminals */
		memcpy(out, "\\u00", 4);
		out[4] = hex[cp >> 4];
		out[5] = hex[cp & 15];
		*ret_olen = 6;
	} else {
		memcpy(out, p, len);
		*ret_olen = len;
	}
	return len;
}

const char *apx_term_safe(char *out, size_t cap, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t o = 0, i = 0;

	if (!s)
		len = 0;
	while (i < len) {	/* a NUL among the len bytes is escaped, "\x00", not a stop */
		char e[ESC_MAX];
		size_t olen, used = escape_step(p + i, len - i, 0, e, &olen);

		if (o + olen + 1 > cap)
			break;
		memcpy(out + o, e, olen);
		o += olen;
		i += used;
	}
	if (cap)
		out[o < cap ? o : cap - 1] = 0;
	return out;
}

const char *apx_term_safe_str(char *out, size_t cap, const char *s)
{
	return apx_term_safe(out, cap, s ? s : "", s ? strlen(s) : 0);
}

/* ---- the filtering stream ----------------------------------------------------------------- */

struct filter {
	FILE *dst;
	uint8_t carry[4];	/* the start of a character the last write cut */
	size_t ncarry;
};

/* Whether p[0..n) is the start of a longer UTF-8 character (its lead and continuations). */
static int utf8_incomplete(const uint8_t *p, size_t n)
{
	size_t want = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 1;

	if (p[0] < 0xc2 || p[0] > 0xf4 || n >= want)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return 1;
}

static void filter_put(struct filter *fl, const uint8_t *p, size_t n, int final)
{
	size_t i = 0;

	while (i < n) {
		char e[ESC_MAX];
		size_t olen, used;

		if (!final && utf8_incomplete(p + i, n - i)) {
			memcpy(fl->carry, p + i, n - i);
			fl->ncarry = n - i;
			return;
		}
		used = escape_step(p + i, n - i, 1, e, &olen);
		fwrite(e, 1, olen, fl->dst);
		i += used;
	}
}

static ssize_t filter_write(void *cookie, const char *buf, size_t size)
{
	struct filter *fl = cookie;
	const uint8_t *p = (const uint8_t *)buf;
	size_t taken = 0;

	while (fl->ncarry && taken < size) {	/* complete the character cut last time */
		uint8_t tmp[4];
		size_t n = fl->ncarry;

		memcpy(tmp, fl->carry, n);
		tmp[n] = p[taken++];
		fl->ncarry = 0;
		filter_put(fl, tmp, n + 1, 0);
	}
	filter_put(fl, p + taken, size - taken, 0);
	return (ssize_t)size;
}

static int filter_close(void *cookie)
{
	struct filter *fl = cookie;

	filter_put(fl, fl->carry, fl->ncarry, 1);
	fflush(fl->dst);
	free(fl);
	return 0;
}

FILE *apx_term_filter_open(FILE *dst)
{
	static const cookie_io_functions_t io = { .write = filter_write, .close = filter_close };
	struct filter *fl = calloc(1, sizeof(*fl));
	FILE *f;

	if (!fl)
		return NULL;
	fl->dst = dst;
	f = fopencookie(fl, "w", io);
	if (!f)
		free(fl);
	return f;
}

int apx_term_color_auto(int fd)
{
	const char *nc = getenv("NO_COLOR");

	return isatty(fd) && !(nc && nc[0]);
}
