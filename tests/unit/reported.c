/*
 * reported.c - the report of a synthetic trace's model as text, JSON or CSV in memory, for the
 * unit tests (reported.h).
 */
#include <stdio.h>
#include <stdlib.h>

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
