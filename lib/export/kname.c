/*
 * kname.c - the base name of a demangled kernel name, as nsys's shortName column holds it
 * ("void at::native::(anonymous namespace)::reduce_kernel<512, 1>(at::native::ReduceOp<...>)"
 * -> "reduce_kernel"): the identifier before the first template argument list or parameter
 * list at the top level, after its return type and scopes (apx_cxx_base_span), the whole name
 * when it has none. Called by sqlite.c once per distinct kernel name.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/demangle.h"
#include "export/sqlite.h"

#include "base/banned.h"

const char *apx_sq_short_name(const char *name, char *buf, size_t cap)
{
	size_t n = strlen(name), begin, end, words;

	apx_cxx_base_span(name, n, &begin, &end, &words);
	if (end <= begin) {		/* nothing left ("operator<", "<lambda>"): the whole name */
		begin = 0;
		end = n;
	}
	snprintf(buf, cap, "%.*s", (int)(end - begin), name + begin);
	return buf;
}
