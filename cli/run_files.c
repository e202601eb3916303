/*
 * run_files.c - naming and identifying the files of one apx analyze run (see run_files.h).
 * Called by cmd_analyze.c and cmd_report.c.
 */
#include "cli/run_files.h"

#include <stdio.h>
#include <string.h>

#include "base/banned.h"

int apx_run_is_child_name(const char *name, const char *base)
{
	size_t n = strlen(base);
	const char *p = name + n + 1;

	if (strncmp(name, base, n) || name[n] != '.' || !*p)
		return 0;
	return strspn(p, "0123456789") == strlen(p);
}

int apx_run_id_of(const char *path, char *buf, size_t cap, struct apx_diag *d)
{
	struct apx_reader *r;
	const struct apx_rec *h;
	int k;

	buf[0] = 0;
	k = apx_reader_open(path, &r, d);
	if (k < 0)
		return k;
	h = apx_reader_header(r);
	if (h->bytes[APX_HEADER_RUN_ID])
		snprintf(buf, cap, "%.*s", (int)h->v[APX_HEADER_RUN_ID],
			 (const char *)h->bytes[APX_HEADER_RUN_ID]);
	apx_reader_close(r);
	return 0;
}
