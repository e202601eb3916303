/*
 * findings.h - what the rules of apx report produce: findings with evidence, an estimated
 * saving (and the one-line model behind it), the fix in PyTorch terms, and a confidence; and,
 * for every rule, whether it ran, found nothing, or could not measure (and why). Rules live
 * one per file in rules/rule_<id>.c; rules.c holds their table and ranks the findings.
 */
#ifndef APX_ANALYSIS_FINDINGS_H
#define APX_ANALYSIS_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/model.h"
#include "base/fmt.h"
#include "base/unit.h"

#define APX_FINDINGS_MAX 64
#define APX_RULES_MAX 32		/* rules in the table (rules.c checks at compile time) */

enum apx_severity { APX_SEV_INFO = 1, APX_SEV_WARNING = 2, APX_SEV_CRITICAL = 3 };

#define APX_FINDING_METRICS_MAX 12
#define APX_EVIDENCE_COLS 4		/* numbers a row of the evidence table */
#define APX_EVIDENCE_ROWS 8

/* A typed number of a finding: key (a literal: "saving_ns", "bytes", "copies"...), value,
 * unit (enum apx_unit). JSON carries these as numbers; the text and HTML reports format them. */
struct apx_metric {
	const char *key;
	double value;
	unsigned unit;
};

/* A finding's evidence as a table: a text label per row (the offender: a kernel, a copy
 * direction) and up to APX_EVIDENCE_COLS typed numbers. ncols 0: no table. */
struct apx_evidence {
	const char *label_key;			/* the label column's key, e.g. "kernel" */
	struct {
		const char *key;
		unsigned unit;
	} col[APX_EVIDENCE_COLS];
	unsigned ncols, nrows;
	struct {
		char label[96];
		double v[APX_EVIDENCE_COLS];
	} row[APX_EVIDENCE_ROWS];
};

struct apx_finding {
	const char *rule;		/* rule id, e.g. "pageable-copy" */
	char title[200];
	int severity;			/* enum apx_severity */
	double saving_ns;		/* estimated, >= 0 */
	double saving_pct;		/* of the run's wall time */
	int saving_estimated;		/* 0: a recorded finding whose producer estimated no saving
					 * (saving_ns 0 means "not estimated", not "nothing") */
	const char *recorded_by;	/* recorded findings: the producer (nvperfd), else NULL */
	unsigned order;			/* order of addition: ties rank in it */
	char model[240];		/* one line: how the saving was estimated */
	char evidence[1200];		/* lines of numbers and top offenders */
	char fix[1200];			/* what to change, with PyTorch code */
	int confidence_pct;
	double kernel_ns;		/* the part of saving_ns that is kernel time: kernels made
					 * shorter (fp32-matmul) or kernel time that would hide
					 * copies (copy-overlap); the steady findings' together never
					 * pass the GPU's kernel busy time (rules.c) */
	struct apx_metric metrics[APX_FINDING_METRICS_MAX];	/* typed numbers of the finding */
	unsigned nmetrics;
	struct apx_evidence table;		/* optional typed evidence (table.ncols 0: none) */
	int startup;			/* about the work before the steady state: shown in the
					 * start-up section, ranked under the steady state's findings
					 * unless start-up dominates the run (rules.c) */
};

/* MINOR: the rule found something that would save under 1 % of a step (under 1 ms when no
 * step was found): it is a check, not a finding (rules.c). */
/* STARTUP: every finding of the rule is about start-up (the start-up section), and start-up
 * does not dominate the run. */
enum apx_rule_status { APX_RULE_CLEAN, APX_RULE_FIRED, APX_RULE_NOT_MEASURED, APX_RULE_MINOR,
		       APX_RULE_STARTUP };

struct apx_rule_result {
	const char *rule;
	const char *title;
	enum apx_rule_status status;
	char why[200];			/* for NOT_MEASURED: what data it needs */
};

struct apx_findings {
	struct apx_finding f[APX_FINDINGS_MAX];
	size_t n;
	struct apx_rule_result results[APX_RULES_MAX];
	size_t nresults;
	size_t recorded_dropped;	/* recorded findings left out: no room after the rules' */
	int startup_dominates;		/* start-up's GPU busy time exceeds the steady state's:
					 * its findings rank with the steady state's */
	double steady_budget_ns;	/* the steady window (summed over devices): the findings'
					 * savings together never pass it (rules.c) */
};

/* Whether a finding belongs in the main list (else only in the start-up section). */
int apx_finding_in_main(const struct apx_findings *fd, const struct apx_finding *f);

struct apx_rule {
	const char *id;
	const char *title;
	/* Adds 0..n findings; returns APX_RULE_* (NOT_MEASURED fills why). */
	enum apx_rule_status (*run)(const struct apx_model *m, struct apx_findings *out, char *why,
				    size_t why_len);
};

/* Run every rule and sort the findings by estimated saving (largest first), then findings
 * without an estimate (recorded by nvperfd) by severity. When the run holds no GPU trace
 * (model->no_gpu_trace: nvperfd summaries only) no rule runs: each is NOT_MEASURED, saying so. */
void apx_rules_run(const struct apx_model *m, struct apx_findings *out);
const struct apx_rule *apx_rules(size_t *ret_n);

/* For rules: a new finding (NULL when full), saving set from ns and the model's wall time. */
struct apx_finding *apx_finding_add(struct apx_findings *out, const struct apx_model *m,
				    const char *rule, int severity, double saving_ns,
				    int confidence_pct);
/* Add a typed metric to a finding (ignored past APX_FINDING_METRICS_MAX or when f is NULL);
 * key must outlive the findings (a literal). */
void apx_finding_metric(struct apx_finding *f, const char *key, double value, unsigned unit);
/* The evidence table: its label column and number columns (keys are literals), then rows
 * (ignored past APX_EVIDENCE_ROWS); apx_evidence_row returns the row's numbers (ncols of
 * them) or NULL. */
void apx_evidence_cols(struct apx_finding *f, const char *label_key, unsigned ncols,
		       const char *const *keys, const unsigned *units);
double *apx_evidence_row(struct apx_finding *f, const char *label, size_t label_len);
/* Append a formatted line to a finding text field (evidence, fix). */
void apx_text_append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
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
 * the host link's peak of the run's first copying device (*ret_peak 1), or 12 GB/s (PCIe
 * gen3 x16 in practice, the floor of any GPU host; *ret_peak 1). ret_peak may be NULL. */
double apx_pinned_or_link_bps(const struct apx_model *m, unsigned copy_kind, int *ret_peak);
/* Whether the n bytes at s (a kernel name: not NUL-terminated) contain needle. */
int apx_text_has(const char *s, size_t n, const char *needle);
int apx_name_has(const struct apx_an_name *nm, const char *needle);
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
APX_RULE_DECL(redundant_replication);
APX_RULE_DECL(graph_recapture);
APX_RULE_DECL(optimizer_foreach);
APX_RULE_DECL(zero_grad_memset);
APX_RULE_DECL(dataloader_workers);
APX_RULE_DECL(l2_persistence);

#endif
