/*
 * kname.c - the base name of a demangled kernel name, as nsys's shortName column holds it
 * ("void at::native::(anonymous namespace)::reduce_kernel<512, 1>(at::native::ReduceOp<...>)"
 * -> "reduce_kernel"): the identifier before the first template argument list or parameter
 * list at the top level, after its return type and scopes. Called by sqlite.c once per
 * distinct kernel name.
 */
#include <stdio.h>
#include <string.h>

#include "export/sqlite.h"

#include "base/banned.h"

#define ANON "(anonymous namespace)"

const char *apx_sq_short_name(const char *name, char *buf, size_t cap)
{
	size_t n = strlen(name), begin = 0, end = n;
	int depth = 0;

	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!depth && !strncmp(name + i, ANON, sizeof(ANON) - 1)) {
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
		} else if (!depth && c == ':' && name[i + 1] == ':') {
			begin = i + 2;		/* after a scope */
			i++;
		}
	}
	if (end <= begin) {		/* nothing left ("operator<", "<lambda>"): the whole name */
		begin = 0;
		end = n;
	}
	snprintf(buf, cap, "%.*s", (int)(end - begin), name + begin);
	return buf;
}
