/*
 * demangle.c - kernel names for humans: CUPTI reports C++ kernels by their mangled names
 * ("_ZN2at6native..."); this demangles them with the C++ runtime's __cxa_demangle (libstdc++,
 * linked with lib/analysis). Also the base name of a demangled name (apx_cxx_base_span), for
 * the SQLite export's shortName (lib/export/kname.c) and the HTML report's short names.
 * Called by rules (evidence), the report outputs and the exporters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/demangle.h"
#include "analysis/model.h"
#include "base/utf8.h"

#include "base/banned.h"

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

const char *apx_demangle(const char *text, size_t len, char *buf, size_t cap)
{
	char mangled[4096];
	char *d;
	int status = 0;

	if (len >= 2 && text[0] == '_' && text[1] == 'Z' && len < sizeof(mangled) &&
	    !memchr(text, 0, len)) {
		memcpy(mangled, text, len);
		mangled[len] = 0;
		d = __cxa_demangle(mangled, NULL, NULL, &status);
		if (d && status == 0) {
			snprintf(buf, cap, "%s", d);
			free(d);
			return buf;
		}
		free(d);
	}
	return apx_text_copy(buf, cap, text, len);	/* a NUL byte escaped, not cut */
}

const char *apx_kernel_display_name(const struct apx_an_name *nm, char *buf, size_t cap)
{
	return apx_demangle(nm->text, nm->len, buf, cap);
}

#define ANON "(anonymous namespace)"

void apx_cxx_base_span(const char *s, size_t n, size_t *ret_begin, size_t *ret_end,
		       size_t *ret_words)
{
	size_t begin = 0, end = n, words = 0;
	int depth = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!depth && n - i >= sizeof(ANON) - 1 && !memcmp(s + i, ANON, sizeof(ANON) - 1)) {
			i += sizeof(ANON) - 2;
		} else if (c == '<' || c == '(') {
			if (!depth) {
				end = i;
				break;
			}
			depth++;
		} else if (c == '[' || c == '{') {
			depth++;
		} else if (c == '>' || c == ')' || c == ']' || c == '}') {
			depth -= depth > 0;
		} else if (!depth && c == ' ') {
			begin = i + 1;		/* after the return type */
			words++;
		} else if (!depth && c == ':' && i + 1 < n && s[i + 1] == ':') {
			begin = i + 2;		/* after a scope */
			i++;
		}
	}
	*ret_begin = begin;
	*ret_end = end;
	*ret_words = words;
}
