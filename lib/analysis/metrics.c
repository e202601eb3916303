/*
 * metrics.c - the typed part of a finding (findings.h): metrics {key, value, unit} and the
 * evidence table. Called by the rules (rules/rule_*.c) when they fill a finding; read by the
 * report's emitters (lib/report).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/findings.h"

#include "base/banned.h"

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
