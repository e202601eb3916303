/*
 * demangle.h - kernel names for humans (demangle.c): C++ names demangled, others as they are.
 */
#ifndef APX_ANALYSIS_DEMANGLE_H
#define APX_ANALYSIS_DEMANGLE_H

#include <stddef.h>

/* text (len bytes, not NUL-terminated) demangled into buf when it is a C++ name, else copied
 * (a NUL byte in it written "\x00": escaped, not cut; apx_text_copy). */
const char *apx_demangle(const char *text, size_t len, char *buf, size_t cap);

#endif
