/*
 * reported.c - the report of a synthetic trace's model as text, JSON or CSV in memory, for the
 * unit tests (reported.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/doc.h"
#include "unit/reported.h"

#include "base/banned.h"

char *tg_report(const struct apx_model *m, const struct apx_findings *fd, unsigned sections,
		int json)
{
	struct apx_rdoc_opts o = { .sections = sections, .top = 10 };
	struct apx_rdoc *d = apx_rdoc_build(m, fd, &o);
	struct apx_text_out to = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!d || !f) {
		apx_rdoc_free(d);
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	to.f = f;
	if (json == 2)
		apx_report_emit_csv(f, d);
	else if (json)
		apx_report_emit_json(f, d);
	else
		apx_report_emit_text(&to, d);
	fclose(f);
	apx_rdoc_free(d);
	return buf;
}

int tg_report_fits(const char *text)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len > APX_REPORT_W) {
			fprintf(stderr, "%.*s\n", (int)len, p);
			return 0;
		}
		p += len + (nl ? 1 : 0);
	}
	return 1;
}
