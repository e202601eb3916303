/*
 * finding.c - making a finding (finding.h): a new record in a findings list, its typed metrics
 * {key, value, unit}, its evidence table and text, and the pieces a rule's two inputs share
 * (pageable-copy's severity and fix, memory-capacity's fix). Called by the rules on a trace
 * (rules/rule_*.c, apx report) and on a process nvperfd watched (rules/obs_*.c); the report's
 * emitters (lib/report) read the records. Any thread; no allocation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/finding.h"

#include "base/banned.h"

struct apx_finding *apx_finding_new(struct apx_findings *out, const char *rule, int severity,
				    double saving_ns, uint64_t wall_ns, int confidence_pct)
{
	struct apx_finding *f;

	if (out->n == APX_FINDINGS_MAX)
		return NULL;
	f = &out->f[out->n++];
	memset(f, 0, sizeof(*f));
	f->rule = rule;
	f->order = (unsigned)(out->n - 1);
	f->saving_estimated = 1;
	f->severity = severity;
	f->saving_ns = saving_ns > 0 ? saving_ns : 0;
	if (f->saving_ns > (double)wall_ns)	/* nothing saves more than the run took */
		f->saving_ns = (double)wall_ns;
	f->saving_pct = wall_ns ? 100.0 * f->saving_ns / (double)wall_ns : 0;
	f->confidence_pct = confidence_pct;
	return f;
}

void apx_finding_metric(struct apx_finding *f, const char *key, double value, unsigned unit)
{
	if (!f || f->nmetrics >= APX_FINDING_METRICS_MAX)
		return;
	f->metrics[f->nmetrics].key = key;
	f->metrics[f->nmetrics].value = value;
	f->metrics[f->nmetrics].unit = unit;
	f->nmetrics++;
}

void apx_evidence_cols(struct apx_finding *f, const char *label_key, unsigned ncols,
		       const char *const *keys, const unsigned *units)
{
	if (!f)
		return;
	if (ncols > APX_EVIDENCE_COLS)
		ncols = APX_EVIDENCE_COLS;
	f->table.label_key = label_key;
	for (unsigned i = 0; i < ncols; i++) {
		f->table.col[i].key = keys[i];
		f->table.col[i].unit = units[i];
	}
	f->table.ncols = ncols;
	f->table.nrows = 0;
}

double *apx_evidence_row(struct apx_finding *f, const char *label, size_t label_len)
{
	struct apx_evidence *t;

	if (!f || !f->table.ncols || f->table.nrows >= APX_EVIDENCE_ROWS)
		return NULL;
	t = &f->table;
	if (label_len >= sizeof(t->row[0].label)) {	/* cut, not inside a UTF-8 character */
		label_len = sizeof(t->row[0].label) - 1;
		while (label_len && ((unsigned char)label[label_len] & 0xc0) == 0x80)
			label_len--;
	}
	snprintf(t->row[t->nrows].label, sizeof(t->row[0].label), "%.*s", (int)label_len, label);
	memset(t->row[t->nrows].v, 0, sizeof(t->row[0].v));
	return t->row[t->nrows++].v;
}

void apx_text_append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strnlen(buf, cap);
	va_list ap;

	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

int apx_pageable_copy_severity(double saving_pct, int estimated)
{
	if (!estimated)
		return APX_SEV_WARNING;
	return saving_pct > 10 ? APX_SEV_CRITICAL : saving_pct > 2 ? APX_SEV_WARNING : APX_SEV_INFO;
}

const char apx_pageable_copy_fix[] =
	"Copy from page-locked (pinned) memory, asynchronously:\n"
	"  loader = DataLoader(ds, batch_size=..., pin_memory=True)\n"
	"  x = x.to('cuda', non_blocking=True)\n"
	"or pin a tensor you reuse once: buf = torch.empty(shape).pin_memory()";

const char apx_memory_capacity_fix[] =
	"Lower peak memory: torch.autocast('cuda', dtype=torch.bfloat16), activation\n"
	"checkpointing (torch.utils.checkpoint), a smaller batch with gradient\n"
	"accumulation, or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.";
