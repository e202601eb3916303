/*
 * findings.h - the rules of apx report on a trace (struct apx_model): their table, running
 * and ranking them (rules.c), and the measurements they share (measure.c). The record they
 * produce (struct apx_finding: evidence, typed metrics, an estimated saving and the one-line
 * model behind it, the fix in PyTorch terms, a confidence) and the registration struct are
 * finding.h's, shared with nvperfd's rules (procobs.h). Rules live one per file in
 * rules/rule_<id>.c (trace) and rules/obs_<id>.c (what nvperfd saw of a process).
 */
#ifndef APX_ANALYSIS_FINDINGS_H
#define APX_ANALYSIS_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/finding.h"
#include "analysis/model.h"
#include "base/fmt.h"
#include "base/unit.h"

/* Whether a finding belongs in the main list (else only in the start-up section). */
int apx_finding_in_main(const struct apx_findings *fd, const struct apx_finding *f);

/* Run every rule of the table (rules.c; the ones that also observe processes share their entry
 * with procobs.c's table) and sort the findings by estimated saving (largest first), then
 * findings without an estimate (recorded by nvperfd) by severity. When the run holds no GPU trace
 * (model->no_gpu_trace: nvperfd summaries only) no rule runs: each is NOT_MEASURED, saying so. */
void apx_rules_run(const struct apx_model *m, struct apx_findings *out);
/* The union of the kernels' intervals inside the steady window, per device, summed: the most
 * kernel time the steady state's findings can save together (rules.c's cap). */
double apx_rules_steady_kernel_busy(const struct apx_model *m);
const struct apx_rule *apx_rules(size_t *ret_n);
/* The rules of several ranks (exposed-communication, straggler, small-collectives,
 * unbalanced-memory, network-bound): run after the others, and only when the trace holds NCCL
 * collectives (m->ranks, ranks.h). */
const struct apx_rule *apx_rank_rules(size_t *ret_n);
struct apx_ranks;
struct apx_ranks_rank;
/* What network-bound saves on rank rk when its evidence holds, else 0
 * (rules/rule_network_bound.c): exposed-communication leaves it out (each ns once). */
double apx_network_bound_claim(const struct apx_ranks *R, const struct apx_ranks_rank *rk);

/* For rules: a new finding (NULL when full), saving set from ns and the model's wall time. */
struct apx_finding *apx_finding_add(struct apx_findings *out, const struct apx_model *m,
				    const char *rule, int severity, double saving_ns,
				    int confidence_pct);
/* The evidence line of the idle gaps ended by a host-to-device copy (input-pipeline,
 * dataloader-workers). */
void apx_data_gaps_evidence(const struct apx_model *m, struct apx_finding *f);

/* Host cost of one eager PyTorch op on a CUDA tensor (Python, the dispatcher, the launch): a
 * few microseconds on a current server CPU; rules that remove launches save this per launch. */
#define APX_HOST_OP_NS 4000.0

/* Shared measurements used by several rules (measure.c). */
/* Host<->device link peak in bytes/s for a device (PCIe gen x width), 0 if unknown. */
double apx_link_peak_bps(const struct apx_model *m, uint32_t device);
/* GPU time summed over devices (busy, kernel or copy time) as % of the run: of the wall time
 * of every device with activity (a mean over them), 0-100. */
double apx_gpu_time_pct(const struct apx_model *m, uint64_t ns);
/* Achieved bytes/s of pinned copies in one direction (0 if too few bytes to tell). */
double apx_pinned_rate_bps(const struct apx_model *m, unsigned copy_kind);
/* The rate a pinned copy in that direction would reach: the pinned copies' of the trace, or
 * the host link's peak of the run's first copying device (*ret_peak 1), or APX_LINK_FLOOR_BPS
 * (*ret_peak 1). ret_peak may be NULL. */
double apx_pinned_or_link_bps(const struct apx_model *m, unsigned copy_kind, int *ret_peak);
/* Host buffers copied to the device again with the same data (copy_repeats.c: what counts as
 * a repeat, and each repeat's share of its copy's time). */
struct apx_copy_repeats {
	double rate_bps;		/* the pinned rate the shares are at */
	uint64_t candidates;		/* H2D copies that could be repeats */
	uint64_t addressed;		/* of those: with a host address */
	uint64_t buffers, repeats, rep_bytes;	/* buffers copied >= 3 times; copies after the
						 * first of each; their bytes */
	uint64_t best_n, best_bytes;	/* the largest: its copies and size */
	uint64_t fp_repeats;		/* of repeats: with a content fingerprint */
	double saving_ns;		/* the repeats' shares */
	double fp_saving_ns;		/* of it: the fingerprinted repeats' */
};
int apx_copy_repeats(const struct apx_model *m, struct apx_copy_repeats *r);	/* -ENOMEM */
/* Whether the n bytes at s (a kernel name: not NUL-terminated) contain needle. */
int apx_text_has(const char *s, size_t n, const char *needle);
int apx_name_has(const struct apx_an_name *nm, const char *needle);
/* The host cost of one kernel launch in a launch-bound steady state: its mean launch gap under
 * 50 us (idle_attrib.c's launch overhead less the collector's own cost; the longer in-step
 * gaps left out); 0 when the steady state is not launch-bound (rules then take
 * APX_HOST_OP_NS). Rules that remove launches claim that much launch idle per launch, and
 * launch-bound leaves it to them (apx_launch_idle_claimed). */
double apx_launch_host_ns(const struct apx_model *m);
/* An optimizer stepping one tensor at a time (optimizer_loop.c): params 0 when none. */
struct apx_optimizer_loop {
	double params;			/* tensors a step (addcdiv kernels a step) */
	uint64_t upd, upd_ns, cmul;	/* the steady state's addcdiv kernels, their time; addcmul */
	const struct apx_an_name *top;	/* the addcdiv name with the most launches */
	uint64_t span_steps;		/* steps in which the loop's span was found */
	double span_ns;			/* the loop's span a step: median over those steps */
	double launches;		/* kernels in it a step: median */
	uint64_t idle_ns;		/* the GPU idle inside the spans, summed over the steps */
};
int apx_optimizer_loop_find(const struct apx_model *m, struct apx_optimizer_loop *l); /* -ENOMEM */
/* Python loops that update tensors one at a time (tensor_loop.c: an EMA of the weights, a
 * hand-written SGD): per loop, by the line that launched most of its kernels. */
#define APX_TENSOR_LOOPS_MAX 4
struct apx_tensor_loop {
	uint32_t line;			/* model->lines: the line that launched most of its kernels */
	uint64_t steps;			/* steady steps it ran in */
	double kernels;			/* its kernels a step: median over those steps */
	double span_ns;			/* its span a step: median */
	double gpu_ns;			/* its kernels' GPU time a step: median */
	double floor_ns;		/* its shortest kernel: what a kernel costs the GPU at least */
	uint64_t idle_ns;		/* the GPU idle inside its spans, summed over the steps */
};
/* Up to cap loops into out (*ret_n), in the order found. 0 or -ENOMEM. */
int apx_tensor_loops_find(const struct apx_model *m, struct apx_tensor_loop *out, size_t cap,
			  size_t *ret_n);
/* What optimizer-foreach claims: the steady idle of cause c (launch overhead in a
 * launch-bound steady state, else no cause) inside the optimizer loop's and the tensor loops'
 * spans, less the collector's cost for their launches (0 for every other cause, or without
 * spans), and in *ret_launches the launches a step it removes (0: it does not fire). */
double apx_optimizer_loop_claim(const struct apx_model *m, unsigned c, double *ret_launches);
/* The steady launch-overhead idle that rules removing launches claim, in ns (*ret_launches:
 * all steps). */
double apx_launch_idle_claimed(const struct apx_model *m, double *ret_launches);
/* Gradients zeroed by kernels every step (rule_zero_grad_memset.c): per step, the zeroing
 * launches and their GPU time, the gradient accumulations set_to_none would spare (adds into
 * the zeroed gradients) and theirs, and what each launch costs the host; launch_idle_ns: the
 * steady state's launch-overhead idle these launches account for (launch-bound leaves it to
 * zero-grad-memset). found 0: no such zeroing. */
struct apx_zero_grad {
	int found, foreach;			/* foreach: multi_tensor_apply zeroing kernels */
	const struct apx_an_name *top;		/* the zeroing kernel */
	double launches, gpu_ns, adds, add_ns, host_ns, launch_idle_ns;
	double waited_ns;	/* outside a launch-bound steady state, the zero_() loop's: a step's
				 * GPU idle between its fills (the collector's cost per launch left
				 * out), what its launches cost the step; < 0: not measured */
};
void apx_zero_grad_find(const struct apx_model *m, struct apx_zero_grad *z);
/* Child processes of the process that ran the GPU work (DataLoader workers, subprocesses):
 * from the collector's process records and the run's other files; -1 when the trace cannot
 * tell (no process records: a collector that did not look, or no GPU work). */
long apx_child_processes(const struct apx_model *m);

#define APX_RULE_DECL(name)                                                                    \
	enum apx_rule_status apx_rule_##name(const struct apx_model *m, struct apx_findings *out, \
					     char *why, size_t why_len)

APX_RULE_DECL(pageable_copy);
APX_RULE_DECL(sync_copy);
APX_RULE_DECL(sync_frequency);
APX_RULE_DECL(gpu_starvation);
APX_RULE_DECL(launch_bound);
APX_RULE_DECL(copy_overlap);
APX_RULE_DECL(unified_memory);
APX_RULE_DECL(memory_capacity);
APX_RULE_DECL(repeated_copy);
APX_RULE_DECL(fp32_matmul);
APX_RULE_DECL(small_copies);
APX_RULE_DECL(input_pipeline);
APX_RULE_DECL(allocator_churn);
APX_RULE_DECL(redundant_replication);
APX_RULE_DECL(graph_recapture);
APX_RULE_DECL(optimizer_foreach);
APX_RULE_DECL(zero_grad_memset);
APX_RULE_DECL(dataloader_workers);
APX_RULE_DECL(l2_persistence);
APX_RULE_DECL(exposed_communication);
APX_RULE_DECL(straggler);
APX_RULE_DECL(unbalanced_memory);
APX_RULE_DECL(small_collectives);
APX_RULE_DECL(network_bound);

#endif
