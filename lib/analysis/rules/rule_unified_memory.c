/*
 * rule_unified_memory.c - unified (managed) memory page faults and migrations: the GPU stalls
 * while pages move. Saving: the time of the migrations and GPU faults recorded.
 */
#include "analysis/findings.h"

#include <stdio.h>

#include "base/banned.h"

APX_RULE_DECL(unified_memory)
{
	uint64_t events = 0, stall = 0, mig_bytes, faults, thrash;
	char b1[32], b2[32];
	struct apx_finding *f;

	for (size_t i = 0; i < m->uvm.n; i++) {
		const struct apx_an_uvm *u = APX_VEC_AT(&m->uvm, struct apx_an_uvm, i);

		events++;
		if (u->end > u->start && u->kind != APX_UVM_CPU_FAULT)
			stall += u->end - u->start;
	}
	mig_bytes = m->uvm_bytes[APX_UVM_MIGRATE_H2D] + m->uvm_bytes[APX_UVM_MIGRATE_D2H];
	faults = m->uvm_count[APX_UVM_CPU_FAULT] + m->uvm_count[APX_UVM_GPU_FAULT];
	thrash = m->uvm_count[APX_UVM_THRASHING];
	if (!events)
		return APX_RULE_CLEAN;
	f = apx_finding_add(out, m, "unified-memory",
			    thrash ? APX_SEV_CRITICAL : APX_SEV_WARNING, (double)stall, 60);
	if (!f)
		return APX_RULE_FIRED;
	snprintf(f->title, sizeof(f->title), "unified memory: %llu page faults, %s migrated",
		 (unsigned long long)faults, apx_fmt_size(b1, sizeof(b1), (double)mig_bytes));
	snprintf(f->model, sizeof(f->model),
		 "the GPU waits while pages fault and migrate; prefetched or explicitly copied, the "
		 "transfer is done ahead: saving = the recorded migration and GPU-fault time");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"migrations host->device: %llu (%s), device->host: %llu (%s)\n",
			(unsigned long long)m->uvm_count[APX_UVM_MIGRATE_H2D],
			apx_fmt_size(b1, sizeof(b1), (double)m->uvm_bytes[APX_UVM_MIGRATE_H2D]),
			(unsigned long long)m->uvm_count[APX_UVM_MIGRATE_D2H],
			apx_fmt_size(b2, sizeof(b2), (double)m->uvm_bytes[APX_UVM_MIGRATE_D2H]));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"CPU faults %llu, GPU faults %llu, thrashing %llu; stall time %s\n",
			(unsigned long long)m->uvm_count[APX_UVM_CPU_FAULT],
			(unsigned long long)m->uvm_count[APX_UVM_GPU_FAULT], (unsigned long long)thrash,
			apx_fmt_ns(b1, sizeof(b1), (double)stall));
	snprintf(f->fix, sizeof(f->fix),
		 "Keep tensors in device memory (plain torch allocations), or prefetch managed memory\n"
		 "before use: cudaMemPrefetchAsync(ptr, bytes, device, stream) (ctypes/cupy), and set\n"
		 "cudaMemAdviseSetPreferredLocation for data the GPU owns.");
	(void)why;
	(void)why_len;
	return APX_RULE_FIRED;
}
