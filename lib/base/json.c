/*
 * json.c - JSON string writer (see json.h). Called by lib/report/emit_json.c, cli/cmd_history.c and
 * lib/daemon/status_view.c (apx status/top --json), lib/export/chrome.c and the report
 * document's emitters (lib/report).
 */
#include "base/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/utf8.h"

#include "base/banned.h"

void apx_json_strn(FILE *f, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0;

	fputc('"', f);
	if (!s)
		len = 0;
	while (i < len) {
		uint32_t cp;
		size_t n, run = i;

		/* a run of printable ASCII goes out at once (kernel names are long) */
		while (run < len && p[run] >= 0x20 && p[run] < 0x7f && p[run] != '"' && p[run] != '\\')
			run++;
		if (run > i) {
			fwrite(p + i, 1, run - i, f);
			i = run;
			continue;
		}
		n = apx_utf8_decode(p + i, len - i, &cp);

		if (n == 0) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(f, "\\%c", (char)cp);
		else if (cp == '\n')
			fputs("\\n", f);
		else if (cp == '\t')
			fputs("\\t", f);
		else if (cp == '\r')
			fputs("\\r", f);
		else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
			fprintf(f, "\\u%04x", (unsigned)cp);
		else
			fwrite(p + i, 1, n, f);
		i += n;
	}
	fputc('"', f);
}

void apx_json_str(FILE *f, const char *s)
{
	apx_json_strn(f, s, s ? strlen(s) : 0);
}

void apx_json_num(FILE *f, double v, int integer)
{
	if (!isfinite(v))
		fputs("null", f);
	else if (integer)
		fprintf(f, "%" PRIu64, v > 0 && v < 1.8e19 ? (uint64_t)(v + 0.5) : (uint64_t)0);
	else
		fprintf(f, "%.6g", v);
}
