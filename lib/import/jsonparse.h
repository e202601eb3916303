/*
 * jsonparse.h - a small pull parser for JSON read from untrusted files (torch.profiler traces,
 * lib/import/kineto.c): the caller asks for one token at a time and skips what it does not
 * need. Nothing is allocated and nothing recurses: nesting is bounded (APX_JP_DEPTH_MAX) and
 * kept in a fixed stack, strings and numbers are bounded, the grammar (RFC 8259) is checked
 * token by token, and every error says where it is ("line L, column C (byte O)") in the
 * struct apx_diag given at init. Tokens point into the caller's buffer.
 */
#ifndef APX_IMPORT_JSONPARSE_H
#define APX_IMPORT_JSONPARSE_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

#define APX_JP_DEPTH_MAX 64		/* nested objects/arrays; deeper input is an error */
#define APX_JP_STRING_MAX (1u << 20)	/* bytes between the quotes of one string */
#define APX_JP_NUMBER_MAX 64		/* characters of one number */

enum apx_jp_type {
	APX_JP_OBJECT = 1,	/* '{': members follow as KEY + value, then CLOSE */
	APX_JP_ARRAY,		/* '[': values follow, then CLOSE */
	APX_JP_CLOSE,		/* '}' or ']' */
	APX_JP_KEY,		/* a member name (the ':' is consumed) */
	APX_JP_STRING,
	APX_JP_NUMBER,
	APX_JP_TRUE,
	APX_JP_FALSE,
	APX_JP_NULL,
};

struct apx_jp_tok {
	enum apx_jp_type type;
	const char *p;		/* KEY/STRING: the raw bytes between the quotes; NUMBER: its text */
	size_t n;
	size_t off;		/* byte offset of the token in the buffer */
	uint32_t depth;		/* nesting after the token (inside an OBJECT/ARRAY it opens) */
	uint8_t escaped;	/* KEY/STRING: holds backslash escapes (apx_jp_string resolves them) */
};

struct apx_jp {
	const char *buf;
	size_t len, pos;
	uint32_t depth;
	uint8_t state;
	char kind[APX_JP_DEPTH_MAX];	/* '{' or '[' per open level */
	struct apx_diag *diag;
};

void apx_jp_init(struct apx_jp *jp, const void *buf, size_t len, struct apx_diag *diag);
/* The next token: 1 (ret_tok filled), 0 after the document's last token and only white space
 * after it, or negative errno (-EBADMSG syntax, -E2BIG a bound exceeded) with the diag set. */
int apx_jp_next(struct apx_jp *jp, struct apx_jp_tok *ret_tok);
/* After tok (just returned by apx_jp_next): skip the rest of the value it starts (the whole
 * object or array for OBJECT/ARRAY; nothing for a scalar). 0 or negative errno. */
int apx_jp_skip(struct apx_jp *jp, const struct apx_jp_tok *tok);
/* Record an error at byte off: "line L, column C (byte O): <fmt>"; returns err. */
int apx_jp_fail(struct apx_jp *jp, size_t off, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A KEY or STRING without escapes equal to s. */
int apx_jp_is(const struct apx_jp_tok *tok, const char *s);
/* The text of a KEY/STRING with escapes resolved (UTF-8; \u0000 becomes '?', a lone surrogate
 * U+FFFD), cut at cap - 1 bytes and NUL-terminated. Returns the length written. */
size_t apx_jp_string(const struct apx_jp_tok *tok, char *buf, size_t cap);
/* A NUMBER times 10^decimals, exactly, rounded half away from zero at the last kept digit:
 * "1.5" with decimals 3 is 1500, "2.0005" is 2001. 0, or -EOVERFLOW outside int64_t. */
int apx_jp_scaled(const struct apx_jp_tok *tok, unsigned decimals, int64_t *ret_v);

/* A short word for a token type ("an object", "a string"...), for messages. */
const char *apx_jp_type_name(enum apx_jp_type type);

#endif /* APX_IMPORT_JSONPARSE_H */
