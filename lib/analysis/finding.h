/*
 * finding.h - the rule engine's record and registration, shared by apx report and nvperfd: a
 * finding (rule id, severity, title, typed metrics {key, value, unit}, optional evidence table,
 * estimated saving, fix, confidence), the result of each rule that ran, and the registration
 * struct of a rule with its inputs: a trace (struct apx_model, apx report: findings.h, rules.c)
 * and/or a process nvperfd watched from outside (struct apx_procobs: procobs.h, procobs.c). A
 * rule that reads both (pageable-copy, memory-capacity, l2-persistence) is one id, one severity
 * policy and one record whichever input it ran on. Needs lib/base and lib/format
 * (libapx_rules.a, which nvperfd links without the rest of lib/analysis). Never prints; any
 * thread, no globals.
 */
#ifndef APX_ANALYSIS_FINDING_H
#define APX_ANALYSIS_FINDING_H

#include <stddef.h>
#include <stdint.h>

#include "base/unit.h"

struct apx_model;
struct apx_procobs;

#define APX_FINDINGS_MAX 64
#define APX_RULES_MAX 32		/* rules in a table (rules.c and procobs.c check it) */

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

/* A source line that causes a finding (from the Python stacks of the events behind it,
 * lib/analysis/lines.c): file and function borrowed from the trace (the model's event store,
 * not NUL-terminated, raw bytes: escape them to print), the events from it and their ns; where
 * the rule says them (sync-frequency), what the events were, as a word (cause_key, a literal:
 * "item"; NULL none) and in words (cause: ".item() (a 4-byte read back)"), and how many a
 * steady-state step has. */
#define APX_FINDING_LINES_MAX 5

struct apx_finding_line {
	const char *file, *func;
	uint32_t file_len, func_len;
	uint32_t line;				/* 0 = unknown */
	double count, ns;
	const char *cause_key;
	char cause[96];
	double per_step;			/* valid when has_per_step */
	int has_per_step;
};

struct apx_finding {
	const char *rule;		/* rule id, e.g. "pageable-copy" */
	char title[200];
	int severity;			/* enum apx_severity */
	double saving_ns;		/* estimated, >= 0 */
	double saving_pct;		/* of the run's wall time */
	int saving_estimated;		/* 0: a finding whose producer estimated no saving
					 * (saving_ns 0 means "not estimated", not "nothing") */
	const char *recorded_by;	/* recorded findings: the producer (nvperfd), else NULL */
	unsigned order;			/* order of addition: ties rank in it */
	char model[240];		/* one line: how the saving was estimated */
	char evidence[1600];		/* lines of numbers and top offenders */
	char fix[1200];			/* what to change, with PyTorch code */
	int confidence_pct;
	double kernel_ns;		/* the part of saving_ns that is kernel time: kernels made
					 * shorter (fp32-matmul) or kernel time that would hide
					 * copies (copy-overlap); the steady findings' together never
					 * pass the GPU's kernel busy time (rules.c) */
	double copy_ns;			/* the part that is host<->device copy time: copies not
					 * made (repeated-copy) or hidden (copy-overlap); together
					 * never past the copies' busy time (rules.c) */
	struct apx_metric metrics[APX_FINDING_METRICS_MAX];	/* typed numbers of the finding */
	unsigned nmetrics;
	struct apx_evidence table;		/* optional typed evidence (table.ncols 0: none) */
	struct apx_finding_line lines[APX_FINDING_LINES_MAX];	/* the lines that cause it,
						 * heaviest first (none without stacks) */
	unsigned nlines;
	int startup;			/* about the work before the steady state: shown in the
					 * start-up section, ranked under the steady state's
					 * findings unless start-up dominates the run (rules.c) */
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

/* A rule: its id and title, and what it runs on. Each input adds 0..n findings to out and
 * returns APX_RULE_* (NOT_MEASURED fills why). run: on a trace (apx report's table, rules.c);
 * observe: on what nvperfd saw of a process that ended (procobs.c's table). A rule with both is
 * registered in both tables with the same id, title and functions (test-rules checks it). */
struct apx_rule {
	const char *id;
	const char *title;
	enum apx_rule_status (*run)(const struct apx_model *m, struct apx_findings *out, char *why,
				    size_t why_len);
	enum apx_rule_status (*observe)(const struct apx_procobs *o, struct apx_findings *out,
					char *why, size_t why_len);
};

/* A new finding in out (NULL when full), marked estimated: saving_ns clamped to [0, wall_ns]
 * (wall_ns: the run's wall time; nothing saves more than the run took), saving_pct of it; the
 * rest zeroed. */
struct apx_finding *apx_finding_new(struct apx_findings *out, const char *rule, int severity,
				    double saving_ns, uint64_t wall_ns, int confidence_pct);
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
void apx_text_append(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- shared by the two inputs of a rule ------------------------------------------------- */

/* pageable-copy: the severity of a saving that is pct % of the run's wall time (over 10 %
 * critical, over 2 % warning, else info); a saving nobody could estimate (nvperfd without
 * uprobe_copy_time) is a warning. */
int apx_pageable_copy_severity(double saving_pct, int estimated);
/* The host link's bandwidth when nothing better is known: PCIe gen3 x16 in practice, the floor
 * of any GPU host (bytes/s). */
#define APX_LINK_FLOOR_BPS 12e9
/* Pinned copies under 1 MiB in all, or under 256 KiB the largest (nvperfd: the mean), are
 * dominated by latency: too small to measure the bandwidth pinned memory reaches. */
#define APX_PINNED_RATE_MIN_BYTES (1u << 20)
#define APX_PINNED_RATE_MIN_COPY (256u << 10)
extern const char apx_pageable_copy_fix[];
/* memory-capacity: what to do when device memory nears capacity */
extern const char apx_memory_capacity_fix[];

#endif
