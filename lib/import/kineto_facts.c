/*
 * kineto_facts.c - what an imported Kineto trace cannot say, written as key/values the report
 * already prints: `imported_from` = "kineto-json", `cuda_used`, and one `degraded` value per
 * missing fact (the summary's "not collected" line and the "How this was measured" block;
 * docs/report.md, "Kineto JSON traces"). Called by kineto.c after pass 2.
 */
#include "import/kineto_int.h"

#include <stdio.h>

#include "base/banned.h"

static int kv(struct apx_ki *ki, const char *key, const char *value)
{
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_KV);
	apx_rec_set_str(&rec, APX_KV_KEY, key);
	apx_rec_set_str(&rec, APX_KV_VALUE, value);
	return apx_writer_add(ki->w, &rec);
}

/* "N what" as a degraded value, when n is not 0. */
static int counted(struct apx_ki *ki, uint64_t n, const char *what)
{
	char buf[256];

	if (!n)
		return 0;
	snprintf(buf, sizeof(buf), "%llu %s", (unsigned long long)n, what);
	return kv(ki, "degraded", buf);
}

int apx_ki_facts(struct apx_ki *ki)
{
	int r;

	if ((r = kv(ki, "imported_from", "kineto-json")) < 0 ||
	    (r = kv(ki, "cuda_used", ki->kernels || ki->copies || ki->memsets || ki->api
						 ? "yes" : "no")) < 0)
		return r;
	/* always missing from Kineto JSON */
	if ((r = kv(ki, "degraded", "Kineto JSON lacks host addresses of copies, unified memory, "
				    "allocations, CPU samples, L2 settings")) < 0 ||
	    (r = kv(ki, "degraded", "torch.profiler's own cost per launch is unknown (not taken "
				    "off launch gaps)")) < 0)
		return r;
	if (!ki->has_devprops || !ki->ndevices)
		r = kv(ki, "degraded", "no deviceProperties: no occupancy, device memory size");
	else
		r = kv(ki, "degraded", "deviceProperties lack L2 size, memory bandwidth, PCIe link");
	if (r < 0)
		return r;
	if ((r = counted(ki, ki->copies_no_host_kind, "copies without a host memory kind (pageable "
					      "or pinned)")) < 0 ||
	    (r = counted(ki, ki->async_unknown, "copies/memsets without their API call: taken as "
					       "asynchronous")) < 0)
		return r;
	if (!ki->cupti_syncs && ki->api_syncs)
		r = kv(ki, "degraded", "host syncs from cudaXSynchronize calls only (no cuda_sync "
				       "records)");
	else if (!ki->cupti_syncs && !ki->api)
		r = kv(ki, "degraded", "no CUDA API calls or cuda_sync records: host syncs unknown");
	if (r < 0)
		return r;
	return counted(ki, ki->negative_dur, "events with a negative duration taken as 0");
}
