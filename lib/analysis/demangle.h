/*
 * demangle.h - kernel names for humans (demangle.c): C++ names demangled, others as they are.
 */
#ifndef APX_ANALYSIS_DEMANGLE_H
#define APX_ANALYSIS_DEMANGLE_H

#include <stddef.h>

/* text (len bytes, not NUL-terminated) demangled into buf when it is a C++ name, else copied
 * (a NUL byte in it written "\x00": escaped, not cut; apx_text_copy). */
const char *apx_demangle(const char *text, size_t len, char *buf, size_t cap);

/* The base name of a demangled C++ name, as nsys's shortName holds it ("void
 * at::native::(anonymous namespace)::reduce_kernel<512, 1>(...)" -> "reduce_kernel"): the
 * identifier before the first template argument or parameter list at the top level (*ret_end:
 * len when there is none), after its return type and scopes (*ret_begin); *ret_words counts the
 * top-level spaces before it. The callers decide what a name without one shows (sqlite's
 * shortName: the whole name; the HTML report: the name cut). */
void apx_cxx_base_span(const char *s, size_t len, size_t *ret_begin, size_t *ret_end,
		       size_t *ret_words);

#endif
