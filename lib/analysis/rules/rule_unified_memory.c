/*
 * rule_unified_memory.c - unified (managed) memory page faults and migrations: kernels stall
 * while pages migrate to the GPU, and the host stalls while it faults them back. Saving, in
 * the steady state: the time of the kernels that ran while pages migrated to the GPU plus the
 * GPU idle time attributed to the host faulting pages back (idle_attrib.c). With the data
 * prefetched or in device memory those kernels run at full speed (their faultless time is not
 * known: counted as saved, so the estimate is an upper bound).
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <string.h>

#include "base/banned.h"

APX_RULE_DECL(unified_memory)
{
	uint64_t events = 0, stall = 0, saving, mig_bytes, faults, thrash;
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
	if (!events) {
		/* torch.profiler's JSON has no unified-memory records (lib/import/kineto_facts.c):
		 * nothing there is not "ok" */
		for (size_t i = 0; i < m->nfiles; i++)
			if (strncmp(m->files[i].producer, "torch.profiler", 14))
				return APX_RULE_CLEAN;
		snprintf(why, why_len, "a torch.profiler (Kineto JSON) trace has no unified-memory "
				       "records (trace with apx analyze)");
		return m->nfiles ? APX_RULE_NOT_MEASURED : APX_RULE_CLEAN;
	}
	saving = m->gpu.uvm_kernel_ns + m->gpu.idle_by_cause[APX_IDLE_UVM];
	if (!saving) {	/* events, but none in the steady state's time: start-up, or harmless */
		snprintf(why, why_len, "%llu unified-memory events, none costing the steady state "
			 "time", (unsigned long long)events);
		return APX_RULE_MINOR;
	}
	f = apx_finding_add(out, m, "unified-memory",
			    thrash || (double)saving > 0.25 * (double)m->steady_ns ? APX_SEV_CRITICAL
										    : APX_SEV_WARNING,
			    (double)saving, 60);
	if (!f)
		return APX_RULE_FIRED;
	f->kernel_ns = (double)m->gpu.uvm_kernel_ns;	/* kernels made shorter (no faults) */
	snprintf(f->title, sizeof(f->title), "unified memory: %llu page faults, %s migrated",
		 (unsigned long long)faults, apx_fmt_size(b1, sizeof(b1), (double)mig_bytes));
	snprintf(f->model, sizeof(f->model),
		 "steady state: kernels that ran while pages migrated in, plus GPU idle while the "
		 "host faulted pages back; prefetched or in device memory, that waiting goes");
	apx_text_append(f->evidence, sizeof(f->evidence),
			"migrations host->device: %llu (%s), device->host: %llu (%s)\n",
			(unsigned long long)m->uvm_count[APX_UVM_MIGRATE_H2D],
			apx_fmt_size(b1, sizeof(b1), (double)m->uvm_bytes[APX_UVM_MIGRATE_H2D]),
			(unsigned long long)m->uvm_count[APX_UVM_MIGRATE_D2H],
			apx_fmt_size(b2, sizeof(b2), (double)m->uvm_bytes[APX_UVM_MIGRATE_D2H]));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"kernels running during migrations to the GPU: %s; GPU idle while the host "
			"faulted: %s\n", apx_fmt_ns(b1, sizeof(b1), (double)m->gpu.uvm_kernel_ns),
			apx_fmt_ns(b2, sizeof(b2), (double)m->gpu.idle_by_cause[APX_IDLE_UVM]));
	apx_text_append(f->evidence, sizeof(f->evidence),
			"CPU faults %llu, GPU faults %llu, thrashing %llu; migration time %s\n",
			(unsigned long long)m->uvm_count[APX_UVM_CPU_FAULT],
			(unsigned long long)m->uvm_count[APX_UVM_GPU_FAULT], (unsigned long long)thrash,
			apx_fmt_ns(b1, sizeof(b1), (double)stall));
	apx_finding_metric(f, "page_faults", (double)faults, APX_UNIT_COUNT);
	apx_finding_metric(f, "migrated_bytes", (double)mig_bytes, APX_UNIT_BYTES);
	apx_finding_metric(f, "thrashing", (double)thrash, APX_UNIT_COUNT);
	apx_finding_metric(f, "kernel_during_migration_ns", (double)m->gpu.uvm_kernel_ns, APX_UNIT_NS);
	apx_finding_metric(f, "idle_while_faulting_ns", (double)m->gpu.idle_by_cause[APX_IDLE_UVM], APX_UNIT_NS);
	apx_finding_metric(f, "migration_ns", (double)stall, APX_UNIT_NS);
	snprintf(f->fix, sizeof(f->fix),
		 "Keep tensors in device memory (plain torch allocations), or prefetch managed memory\n"
		 "before use: cudaMemPrefetchAsync(ptr, bytes, device, stream) (ctypes/cupy), and set\n"
		 "cudaMemAdviseSetPreferredLocation for data the GPU owns.");
	return APX_RULE_FIRED;
}
