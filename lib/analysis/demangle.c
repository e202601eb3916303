/*
 * demangle.c - kernel names for humans: CUPTI reports C++ kernels by their mangled names
 * ("_ZN2at6native..."); this demangles them with the C++ runtime's __cxa_demangle (libstdc++,
 * linked with lib/analysis). Called by rules (evidence) and the report outputs.
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
