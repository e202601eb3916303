/*
 * jsonparse.c - the pull parser of jsonparse.h: a state machine over a caller's buffer that
 * returns one token per call, checks the JSON grammar as it goes and names the line, column
 * and byte of the first error. Used by the Kineto importer (kineto_walk.c) and its fuzzer;
 * single-threaded, no allocation, no recursion.
 */
#include "import/jsonparse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/banned.h"

enum state {
	S_VALUE,		/* a value (document start, after ':' or an array's ',') */
	S_VALUE_OR_CLOSE,	/* after '[' */
	S_KEY_OR_CLOSE,		/* after '{' */
	S_KEY,			/* after an object's ',' */
	S_AFTER,		/* after a value: ',', the container's close, or the end */
	S_DONE,			/* the document is complete */
};

void apx_jp_init(struct apx_jp *jp, const void *buf, size_t len, struct apx_diag *diag)
{
	memset(jp, 0, sizeof(*jp));
	jp->buf = buf;
	jp->len = len;
	jp->state = S_VALUE;
	jp->diag = diag;
}

int apx_jp_fail(struct apx_jp *jp, size_t off, int err, const char *fmt, ...)
{
	size_t line = 1, col = 1;
	char what[200];
	va_list ap;

	if (off > jp->len)
		off = jp->len;
	for (size_t i = 0; i < off; i++) {
		if (jp->buf[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (jp->diag) {
		jp->diag->err = err;
		jp->diag->offset = off;
		jp->diag->chunk = -1;
		snprintf(jp->diag->msg, sizeof(jp->diag->msg),
			 "line %zu, column %zu (byte %zu): %s", line, col, off, what);
	}
	return err;
}

const char *apx_jp_type_name(enum apx_jp_type type)
{
	switch (type) {
	case APX_JP_OBJECT: return "an object";
	case APX_JP_ARRAY: return "an array";
	case APX_JP_CLOSE: return "the end of a container";
	case APX_JP_KEY: return "a member name";
	case APX_JP_STRING: return "a string";
	case APX_JP_NUMBER: return "a number";
	case APX_JP_TRUE: case APX_JP_FALSE: return "a boolean";
	case APX_JP_NULL: return "null";
	}
	return "?";
}

static void skip_ws(struct apx_jp *jp)
{
	while (jp->pos < jp->len) {
		char c = jp->buf[jp->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return;
		jp->pos++;
	}
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A string starting at the opening quote at jp->pos. */
static int scan_string(struct apx_jp *jp, struct apx_jp_tok *t)
{
	size_t start = jp->pos, i = jp->pos + 1;

	t->off = start;
	t->escaped = 0;
	for (;;) {
		unsigned char c;

		if (i >= jp->len)
			return apx_jp_fail(jp, start, -EBADMSG, "string not terminated (the file ends "
							     "inside it: truncated?)");
		if (i - start - 1 > APX_JP_STRING_MAX)
			return apx_jp_fail(jp, start, -E2BIG, "string longer than %u bytes",
					   APX_JP_STRING_MAX);
		c = (unsigned char)jp->buf[i];
		if (c == '"')
			break;
		if (c < 0x20)
			return apx_jp_fail(jp, i, -EBADMSG, "control character 0x%02x in a string", c);
		if (c == '\\') {
			char e = i + 1 < jp->len ? jp->buf[i + 1] : 0;

			t->escaped = 1;
			if (e == 'u') {
				for (int k = 2; k < 6; k++)
					if (i + k >= jp->len || hexval(jp->buf[i + k]) < 0)
						return apx_jp_fail(jp, i, -EBADMSG, "bad \\u escape "
										    "(4 hex digits expected)");
				i += 6;
				continue;
			}
			if (!e || !strchr("\"\\/bfnrt", e))
				return apx_jp_fail(jp, i, -EBADMSG, "bad escape in a string");
			i += 2;
			continue;
		}
		i++;
	}
	t->p = jp->buf + start + 1;
	t->n = i - start - 1;
	jp->pos = i + 1;
	return 0;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A number starting at jp->pos: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(struct apx_jp *jp, struct apx_jp_tok *t)
{
	const char *b = jp->buf;
	size_t i = jp->pos, start = jp->pos, n = jp->len;

	if (i < n && b[i] == '-')
		i++;
	if (i < n && b[i] == '0')
		i++;
	else if (i < n && is_digit(b[i]))
		while (i < n && is_digit(b[i]))
			i++;
	else
		return apx_jp_fail(jp, i, -EBADMSG, "bad number (a digit expected)");
	if (i < n && b[i] == '.') {
		if (++i >= n || !is_digit(b[i]))
			return apx_jp_fail(jp, i, -EBADMSG, "bad number (a digit expected after '.')");
		while (i < n && is_digit(b[i]))
			i++;
	}
	if (i < n && (b[i] == 'e' || b[i] == 'E')) {
		if (++i < n && (b[i] == '+' || b[i] == '-'))
			i++;
		if (i >= n || !is_digit(b[i]))
			return apx_jp_fail(jp, i, -EBADMSG, "bad number (a digit expected in the "
							 "exponent)");
		while (i < n && is_digit(b[i]))
			i++;
	}
	if (i - start > APX_JP_NUMBER_MAX)
		return apx_jp_fail(jp, start, -E2BIG, "number longer than %d characters",
				   APX_JP_NUMBER_MAX);
	t->off = start;
	t->p = b + start;
	t->n = i - start;
	jp->pos = i;
	return 0;
}

static int scan_literal(struct apx_jp *jp, struct apx_jp_tok *t)
{
	static const struct { const char *word; enum apx_jp_type type; } lit[] = {
		{ "true", APX_JP_TRUE }, { "false", APX_JP_FALSE }, { "null", APX_JP_NULL },
	};

	for (size_t k = 0; k < sizeof(lit) / sizeof(lit[0]); k++) {
		size_t l = strlen(lit[k].word);

		if (jp->len - jp->pos >= l && !memcmp(jp->buf + jp->pos, lit[k].word, l)) {
			t->type = lit[k].type;
			t->off = jp->pos;
			t->p = jp->buf + jp->pos;
			t->n = l;
			jp->pos += l;
			return 0;
		}
	}
	return apx_jp_fail(jp, jp->pos, -EBADMSG, "unexpected character '%c' (a value expected)",
			   jp->buf[jp->pos] >= 0x20 && jp->buf[jp->pos] < 0x7f ? jp->buf[jp->pos] : '?');
}

static int open_container(struct apx_jp *jp, struct apx_jp_tok *t, char kind)
{
	if (jp->depth >= APX_JP_DEPTH_MAX)
		return apx_jp_fail(jp, jp->pos, -E2BIG, "nested deeper than %d levels",
				   APX_JP_DEPTH_MAX);
	jp->kind[jp->depth++] = kind;
	t->depth = jp->depth;
	t->type = kind == '{' ? APX_JP_OBJECT : APX_JP_ARRAY;
	t->off = jp->pos++;
	t->p = jp->buf + t->off;
	t->n = 1;
	jp->state = kind == '{' ? S_KEY_OR_CLOSE : S_VALUE_OR_CLOSE;
	return 1;
}

static int close_container(struct apx_jp *jp, struct apx_jp_tok *t)
{
	t->type = APX_JP_CLOSE;
	t->off = jp->pos++;
	t->p = jp->buf + t->off;
	t->n = 1;
	jp->depth--;
	jp->state = S_AFTER;
	return 1;
}

static int value(struct apx_jp *jp, struct apx_jp_tok *t)
{
	char c = jp->buf[jp->pos];
	int r;

	if (c == '{' || c == '[')
		return open_container(jp, t, c);
	if (c == '"') {
		t->type = APX_JP_STRING;
		r = scan_string(jp, t);
	} else if (c == '-' || is_digit(c)) {
		t->type = APX_JP_NUMBER;
		t->escaped = 0;
		r = scan_number(jp, t);
	} else {
		r = scan_literal(jp, t);
	}
	if (r < 0)
		return r;
	jp->state = S_AFTER;
	return 1;
}

static int key(struct apx_jp *jp, struct apx_jp_tok *t)
{
	int r;

	if (jp->buf[jp->pos] != '"')
		return apx_jp_fail(jp, jp->pos, -EBADMSG, "a member name in double quotes expected");
	t->type = APX_JP_KEY;
	r = scan_string(jp, t);
	if (r < 0)
		return r;
	skip_ws(jp);
	if (jp->pos >= jp->len)
		return apx_jp_fail(jp, jp->pos, -EBADMSG, "the file ends after a member name "
							  "(truncated?)");
	if (jp->buf[jp->pos] != ':')
		return apx_jp_fail(jp, jp->pos, -EBADMSG, "':' expected after a member name");
	jp->pos++;
	jp->state = S_VALUE;
	return 1;
}

int apx_jp_next(struct apx_jp *jp, struct apx_jp_tok *t)
{
	for (;;) {
		char c;

		skip_ws(jp);
		if (jp->state == S_DONE) {
			if (jp->pos < jp->len)
				return apx_jp_fail(jp, jp->pos, -EBADMSG, "text after the end of the "
									  "JSON document");
			return 0;
		}
		if (jp->state == S_AFTER && !jp->depth) {
			jp->state = S_DONE;
			continue;
		}
		if (jp->pos >= jp->len)
			return apx_jp_fail(jp, jp->pos, -EBADMSG, "the file ends inside the JSON "
								  "document (truncated?)");
		c = jp->buf[jp->pos];
		t->depth = jp->depth;
		switch (jp->state) {
		case S_AFTER:
			if (c == ',') {
				jp->pos++;
				jp->state = jp->kind[jp->depth - 1] == '{' ? S_KEY : S_VALUE;
				continue;
			}
			if ((c == '}' && jp->kind[jp->depth - 1] == '{') ||
			    (c == ']' && jp->kind[jp->depth - 1] == '['))
				break;
			return apx_jp_fail(jp, jp->pos, -EBADMSG, "',' or '%c' expected",
					   jp->kind[jp->depth - 1] == '{' ? '}' : ']');
		case S_KEY_OR_CLOSE:
			if (c == '}')
				break;
			return key(jp, t);
		case S_KEY:
			return key(jp, t);
		case S_VALUE_OR_CLOSE:
			if (c == ']')
				break;
			return value(jp, t);
		default:
			return value(jp, t);
		}
		close_container(jp, t);
		t->depth = jp->depth;
		return 1;
	}
}

int apx_jp_skip(struct apx_jp *jp, const struct apx_jp_tok *tok)
{
	uint32_t inside = tok->depth;
	struct apx_jp_tok t;
	int r;

	if (tok->type != APX_JP_OBJECT && tok->type != APX_JP_ARRAY)
		return 0;
	while (jp->depth >= inside) {
		r = apx_jp_next(jp, &t);
		if (r < 0)
			return r;
		if (r == 0)
			return apx_jp_fail(jp, jp->pos, -EBADMSG, "unbalanced document");
	}
	return 0;
}

int apx_jp_is(const struct apx_jp_tok *tok, const char *s)
{
	size_t l = strlen(s);

	return !tok->escaped && tok->n == l && !memcmp(tok->p, s, l);
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The 4 hex digits at p (checked by scan_string). */
static uint32_t hex4(const char *p)
{
	return (uint32_t)(hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]));
}

size_t apx_jp_string(const struct apx_jp_tok *tok, char *buf, size_t cap)
{
	size_t o = 0;

	if (!cap)
		return 0;
	for (size_t i = 0; i < tok->n;) {
		char tmp[4], c = tok->p[i];
		size_t k = 1;

		if (c != '\\') {
			tmp[0] = c;
			i++;
		} else if (tok->p[i + 1] != 'u') {
			static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";

			tmp[0] = to[strchr(from, tok->p[i + 1]) - from];
			i += 2;
		} else {
			uint32_t cp = hex4(tok->p + i + 2);

			i += 6;
			if (cp >= 0xd800 && cp < 0xdc00 && i + 6 <= tok->n && tok->p[i] == '\\' &&
			    tok->p[i + 1] == 'u' && hex4(tok->p + i + 2) >= 0xdc00 &&
			    hex4(tok->p + i + 2) < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (hex4(tok->p + i + 2) - 0xdc00);
				i += 6;
			} else if (cp >= 0xd800 && cp < 0xe000) {
				cp = 0xfffd;	/* a lone surrogate */
			}
			if (!cp)
				cp = '?';
			k = put_utf8(tmp, cp);
		}
		if (o + k >= cap)
			break;
		memcpy(buf + o, tmp, k);
		o += k;
	}
	buf[o] = 0;
	return o;
}

int apx_jp_scaled(const struct apx_jp_tok *tok, unsigned decimals, int64_t *ret_v)
{
	const char *p = tok->p, *end = tok->p + tok->n;
	char digits[APX_JP_NUMBER_MAX + 1];
	size_t nd = 0, keep;
	int neg = 0, exp_neg = 0;
	long exp = 0, shift;
	uint64_t v = 0;

	if (tok->type != APX_JP_NUMBER || !tok->n || tok->n > APX_JP_NUMBER_MAX)
		return -EINVAL;
	if (*p == '-') {
		neg = 1;
		p++;
	}
	for (; p < end && is_digit(*p); p++)
		if (nd || *p != '0')
			digits[nd++] = *p;
	shift = (long)decimals;
	if (p < end && *p == '.')
		for (p++; p < end && is_digit(*p); p++) {
			if (nd || *p != '0')
				digits[nd++] = *p;
			shift--;
		}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			exp_neg = *p++ == '-';
		for (; p < end && is_digit(*p); p++)
			if (exp < 100000)
				exp = exp * 10 + (*p - '0');
	}
	shift += exp_neg ? -exp : exp;
	/* value = digits * 10^shift */
	if (!nd) {
		*ret_v = 0;
		return 0;
	}
	if (shift >= 0) {
		if ((size_t)shift + nd > 19)
			return -EOVERFLOW;
		keep = nd;
	} else {
		if ((size_t)-shift > nd) {
			*ret_v = 0;	/* under a tenth of the unit: rounds to 0 */
			return 0;
		}
		keep = nd - (size_t)-shift;
	}
	for (size_t i = 0; i < keep; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EOVERFLOW;
		v = v * 10 + (uint64_t)(digits[i] - '0');
	}
	for (long s = shift; s > 0; s--) {
		if (v > UINT64_MAX / 10)
			return -EOVERFLOW;
		v *= 10;
	}
	if (keep < nd && digits[keep] >= '5')
		v++;	/* round half away from zero */
	if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
		return -EOVERFLOW;
	*ret_v = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}
