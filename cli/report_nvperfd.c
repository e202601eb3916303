/*
 * report_nvperfd.c - the "GPU (observed)" line of the text summary: what nvperfd observed
 * from outside (model->obs). Its section moved to the report document
 * (lib/report/build_view_nvperfd.c). Called by report_text.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/report.h"

#include "base/banned.h"

static const char *const dir_words[2] = { "host->device", "device->host" };
static const char *const kind_name[2] = { "pageable", "pinned" };

void apx_report_nvperfd_summary(FILE *f, const struct apx_model *m)
{
	const struct apx_an_observed_run *r = &m->obs;
	char b[600], b1[32];
	int any_cuda = 0;

	if (!m->observed.n)
		return;
	b[0] = 0;
	if (r->sm_has)
		apx_text_append(b, sizeof(b), "SM %.1f%% mean", r->sm_util_pct);
	if (r->mem_has)
		apx_text_append(b, sizeof(b), "%smemory peak %s", b[0] ? ", " : "",
				apx_fmt_size(b1, sizeof(b1), (double)r->mem_peak_bytes));
	for (int d = 0; d < 2; d++)
		for (int k = 0; k < 2; k++)
			if (r->copy_has[d][k] && r->copy_bytes[d][k])
				apx_text_append(b, sizeof(b), "%s%s %s (%s)", b[0] ? ", " : "",
						apx_fmt_size(b1, sizeof(b1), (double)r->copy_bytes[d][k]),
						dir_words[d], kind_name[k]);
	for (size_t i = 0; i < m->nfiles; i++)
		any_cuda |= m->files[i].cuda_used == 1;
	if (!b[0])
		apx_text_append(b, sizeof(b), "%s", any_cuda ? "no GPU values in the summary"
						     : "none: nvperfd did not see the program use CUDA");
	fprintf(f, "  %-18s ", "GPU (observed)");
	apx_text_wrap(f, 21, 21, b);
	if (m->no_gpu_trace)
		fprintf(f, "  %-18s none (nvperfd observes from outside): run apx analyze for kernels "
			"and copies\n", "GPU trace");
}
