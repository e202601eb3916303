/*
 * report_json.c - `apx report --format json`: one JSON document, schema "apx.report/2"
 * (docs/report-schema.md), its members in schema order: those of the sections whose JSON view
 * the report document holds through lib/report/emit_json.c, the start-up and idle members
 * still from the model here. Numbers are raw (ns, bytes); strings go through the one
 * JSON writer (base/json.c). Called by report_formats.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/unit.h"
#include "analysis/hwcounters.h"
#include "cli/report.h"
#include "collector/pm_sets.h"

#include "base/banned.h"

static void key(FILE *f, const char *k, int *first)
{
	fprintf(f, "%s\"%s\":", *first ? "" : ",", k);
	*first = 0;
}

static void kv_u(FILE *f, const char *k, uint64_t v, int *first)
{
	key(f, k, first);
	fprintf(f, "%" PRIu64, v);
}

static void kv_d(FILE *f, const char *k, double v, int *first)
{
	key(f, k, first);
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

/* A quantity the schema gives as an integer (ns, bytes/s) held as a double: rounded, never
 * printed in exponent form. */
static void kv_i(FILE *f, const char *k, double v, int *first)
{
	key(f, k, first);
	fprintf(f, "%" PRIu64, v > 0 && v < 1.8e19 ? (uint64_t)(v + 0.5) : (uint64_t)0);
}

static void kv_s(FILE *f, const char *k, const char *v, int *first)
{
	key(f, k, first);
	apx_json_str(f, v);
}

static void kv_b(FILE *f, const char *k, int v, int *first)
{
	key(f, k, first);
	fputs(v ? "true" : "false", f);
}

/* A finding's typed numbers: "metrics" [{key, value, unit}] and "evidence_table" ({columns
 * [{key, unit}], rows [[label, numbers...]]} or null). */
static void finding_metrics(FILE *f, const struct apx_finding *a)
{
	const struct apx_evidence *t = &a->table;

	fputs(",\"metrics\":[", f);
	for (unsigned i = 0; i < a->nmetrics; i++) {
		const struct apx_metric *mt = &a->metrics[i];

		fputs(i ? ",{\"key\":" : "{\"key\":", f);
		apx_json_str(f, mt->key);
		fputs(",\"value\":", f);
		apx_json_num(f, mt->value, apx_unit_is_integer(mt->unit));
		fputs(",\"unit\":", f);
		apx_json_str(f, apx_unit_name(mt->unit));
		fputc('}', f);
	}
	fputs("],\"evidence_table\":", f);
	if (!t->ncols) {
		fputs("null", f);
		return;
	}
	fputs("{\"columns\":[{\"key\":", f);
	apx_json_str(f, t->label_key);
	fputs(",\"unit\":\"text\"}", f);
	for (unsigned c = 0; c < t->ncols; c++) {
		fputs(",{\"key\":", f);
		apx_json_str(f, t->col[c].key);
		fputs(",\"unit\":", f);
		apx_json_str(f, apx_unit_name(t->col[c].unit));
		fputc('}', f);
	}
	fputs("],\"rows\":[", f);
	for (unsigned r = 0; r < t->nrows; r++) {
		fputs(r ? ",[" : "[", f);
		apx_json_str(f, t->row[r].label);
		for (unsigned c = 0; c < t->ncols; c++) {
			fputc(',', f);
			apx_json_num(f, t->row[r].v[c], apx_unit_is_integer(t->col[c].unit));
		}
		fputc(']', f);
	}
	fputs("]}", f);
}

static void finding_obj(FILE *f, const struct apx_finding *a, size_t rank)
{
	int first = 1;

	fputs("{", f);
	kv_u(f, "rank", rank, &first);
	kv_s(f, "rule", a->rule, &first);
	kv_s(f, "severity", a->severity == APX_SEV_CRITICAL ? "critical"
			    : a->severity == APX_SEV_WARNING ? "warning" : "info", &first);
	kv_s(f, "title", a->title, &first);
	kv_i(f, "saving_ns", a->saving_ns, &first);
	kv_d(f, "saving_pct", a->saving_pct, &first);
	kv_b(f, "saving_estimated", a->saving_estimated, &first);
	kv_b(f, "startup", a->startup, &first);
	kv_s(f, "saving_model", a->model, &first);
	kv_s(f, "evidence", a->evidence, &first);
	kv_s(f, "fix", a->fix, &first);
	kv_u(f, "confidence_pct", (uint64_t)a->confidence_pct, &first);
	finding_metrics(f, a);
	fputc('}', f);
}

/* The main list (steady state, and start-up when it dominates) or the start-up section's. */
static void finding_list(FILE *f, const struct apx_findings *fd, int main)
{
	size_t rank = 0;

	for (size_t i = 0; i < fd->n; i++)
		if (apx_finding_in_main(fd, &fd->f[i]) == main) {
			fputs(rank ? "," : "", f);
			finding_obj(f, &fd->f[i], ++rank);
		}
}

/* "idle": the steady window's GPU idle time by cause, summed over devices; explained is every
 * cause but unknown (docs/report-schema.md). */
static void idle_attribution(FILE *f, const struct apx_model *m)
{
	const struct apx_an_timeline *g = &m->gpu;
	uint64_t idle = 0;
	int first = 1;

	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		idle += g->idle_by_cause[c];
	fputs(",\"idle\":{", f);
	kv_u(f, "window_start_ns", m->steady_start_ns, &first);
	kv_u(f, "window_end_ns", m->steady_end_ns == UINT64_MAX ? m->run_end_ns : m->steady_end_ns,
	     &first);
	kv_u(f, "window_ns", g->window_ns, &first);
	kv_u(f, "busy_ns", g->window_ns > idle ? g->window_ns - idle : 0, &first);
	kv_u(f, "idle_ns", idle, &first);
	kv_u(f, "explained_ns", idle - g->idle_by_cause[APX_IDLE_UNKNOWN], &first);
	kv_u(f, "unexplained_ns", g->idle_by_cause[APX_IDLE_UNKNOWN], &first);
	if (m->steady.count && g->window_ns) {	/* a median step's share */
		double step = (double)m->steady.median_ns / (double)g->window_ns;

		kv_i(f, "idle_per_step_ns", (double)idle * step, &first);
		kv_i(f, "unexplained_per_step_ns", (double)g->idle_by_cause[APX_IDLE_UNKNOWN] * step,
		     &first);
	}
	kv_b(f, "copy_host_times", m->copy_host_times, &first);
	fputs(",\"by_cause\":{", f);
	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		fprintf(f, "%s\"%s\":{\"ns\":%" PRIu64 ",\"gaps\":%" PRIu64 "}", c ? "," : "",
			apx_idle_cause_key(c), g->idle_by_cause[c], g->gaps_by_cause[c]);
	fputs("}}", f);
}

/* "startup": the GPU's work before the steady window and its findings. */
static void startup(FILE *f, const struct apx_model *m, const struct apx_findings *fd)
{
	const struct apx_an_timeline *g = &m->gpu;
	int first = 1;

	fputs(",\"startup\":{", f);
	kv_u(f, "end_ns", m->steady_start_ns, &first);
	kv_u(f, "gpu_span_ns", g->startup_ns, &first);
	kv_u(f, "gpu_idle_ns", g->startup_idle_ns, &first);
	kv_u(f, "gpu_busy_ns", g->startup_ns > g->startup_idle_ns ? g->startup_ns - g->startup_idle_ns
								    : 0, &first);
	kv_b(f, "dominates", fd->startup_dominates, &first);
	fputs(",\"findings\":[", f);
	finding_list(f, fd, 0);
	fputs("]}", f);
}

static void timelines(FILE *f, const struct apx_model *m)
{
	fputs(",\"timelines\":[", f);
	for (size_t i = 0; i < m->timelines.n; i++) {
		const struct apx_an_timeline *t = APX_VEC_AT(&m->timelines, struct apx_an_timeline, i);
		int fi = 1;

		fputs(i ? ",{" : "{", f);
		kv_u(f, "device", t->device, &fi);
		kv_u(f, "first_ns", t->first_ns, &fi);
		kv_u(f, "last_ns", t->last_ns, &fi);
		kv_u(f, "busy_ns", t->busy_ns, &fi);
		kv_u(f, "kernel_busy_ns", t->kernel_busy_ns, &fi);
		kv_u(f, "copy_busy_ns", t->copy_busy_ns, &fi);
		kv_u(f, "copy_compute_overlap_ns", t->overlap_ns, &fi);
		kv_u(f, "copy_before_kernels_ns", t->copy_before_kernels_ns, &fi);
		kv_u(f, "concurrent_kernels_ns", t->concurrent_ns, &fi);
		kv_u(f, "idle_ns", t->idle_ns, &fi);
		kv_u(f, "before_first_ns", t->before_ns, &fi);
		kv_u(f, "after_last_ns", t->after_ns, &fi);
		kv_u(f, "gaps", t->gaps, &fi);
		kv_u(f, "steady_window_ns", t->window_ns, &fi);
		kv_u(f, "startup_ns", t->startup_ns, &fi);
		kv_u(f, "startup_idle_ns", t->startup_idle_ns, &fi);
		kv_u(f, "teardown_ns", t->teardown_ns, &fi);
		kv_u(f, "teardown_idle_ns", t->teardown_idle_ns, &fi);
		fputs(",\"idle_by_cause\":{", f);
		for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
			fprintf(f, "%s\"%s\":{\"ns\":%" PRIu64 ",\"gaps\":%" PRIu64 "}", c ? "," : "",
				apx_idle_cause_key(c), t->idle_by_cause[c], t->gaps_by_cause[c]);
		fputs("}}", f);
	}
	fputs("]", f);
}

/* "kernel_counters": each replayed kernel's counters (medians of its replayed launches), what
 * bounds it and its top stall reasons (apx analyze --replay). */
static void kernel_counters(FILE *f, const struct apx_model *m)
{
	const struct apx_pm_set *set = apx_pm_replay_set();
	char name[4096];

	fputs(",\"kernel_counters\":[", f);
	for (size_t i = 0; i < m->kc.n; i++) {
		const struct apx_an_kc *kc = APX_VEC_AT(&m->kc, struct apx_an_kc, i);
		struct apx_kc_values k = { .have = kc->have, .launches = kc->launches };
		unsigned st[3];
		size_t ns;
		int first = 1, fc = 1;

		memcpy(k.v, kc->v, sizeof(k.v));
		fputs(i ? ",{" : "{", f);
		kv_s(f, "kernel", apx_kernel_display_name(APX_VEC_AT(&m->names, struct apx_an_name,
								     kc->name), name, sizeof(name)), &first);
		kv_u(f, "launches", kc->launches, &first);
		kv_u(f, "passes", kc->passes, &first);
		kv_s(f, "bound", apx_bound_name(apx_kc_bound(&k)), &first);
		fputs(",\"counters\":{", f);
		for (size_t c = 0; c < set->n && c < APX_KC__COUNT; c++)
			if (kc->have >> c & 1)
				kv_d(f, set->metrics[c].name, kc->v[c], &fc);
		fputs("},\"stalls\":[", f);
		ns = apx_kc_top_stalls(&k, st, 3);
		for (size_t s = 0; s < ns; s++) {
			int fs = 1;

			fputs(s ? ",{" : "{", f);
			kv_s(f, "metric", set->metrics[APX_KC_STALL_FIRST + st[s]].name, &fs);
			kv_d(f, "cycles_per_inst", k.v[APX_KC_STALL_FIRST + st[s]], &fs);
			kv_s(f, "reason", apx_stall_words(st[s]), &fs);
			kv_s(f, "try", apx_stall_try(st[s]), &fs);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("]", f);
}

/* The members in schema order, each with the --section it belongs to: NULL functions are
 * the sections whose JSON view the report document holds (lib/report/emit_json.c); the
 * others (start-up, idle: they came after the move) still render from the model. */
static const struct {
	unsigned section;
	void (*model)(FILE *f, const struct apx_model *m);
	void (*findings)(FILE *f, const struct apx_findings *fd);
	void (*both)(FILE *f, const struct apx_model *m, const struct apx_findings *fd);
} members[] = {
	{ APX_SEC_METHOD, NULL, NULL, NULL },		{ APX_SEC_SUMMARY, NULL, NULL, NULL },
	{ APX_SEC_FINDINGS, NULL, NULL, NULL },	{ APX_SEC_CHECKS, NULL, NULL, NULL },
	{ APX_SEC_STARTUP, NULL, NULL, startup },	{ APX_SEC_IDLE, idle_attribution, NULL, NULL },
	{ APX_SEC_KERNELS, NULL, NULL, NULL },		{ APX_SEC_TRANSFERS, NULL, NULL, NULL },
	{ APX_SEC_SYNC, NULL, NULL, NULL },		{ APX_SEC_IDLE, timelines, NULL, NULL },
	{ APX_SEC_METRICS, NULL, NULL, NULL },	{ APX_SEC_METRICS, kernel_counters, NULL, NULL },
	{ APX_SEC_MEMORY, NULL, NULL, NULL },		{ APX_SEC_STREAMS, NULL, NULL, NULL },
	{ APX_SEC_NVTX, NULL, NULL, NULL },		{ APX_SEC_L2, NULL, NULL, NULL },
	{ APX_SEC_UVM, NULL, NULL, NULL },		{ APX_SEC_CPU, NULL, NULL, NULL },
	{ APX_SEC_NVPERFD, NULL, NULL, NULL },
};

void apx_report_json(FILE *f, const struct apx_rdoc *d, const struct apx_report_opts *o)
{
	fputs("{\"schema\":\"apx.report/2\"", f);
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		if (!(o->sections & 1u << members[i].section))
			continue;	/* --section: only the members of the sections asked for */
		if (members[i].model)
			members[i].model(f, d->m);
		else if (members[i].findings)
			members[i].findings(f, d->fd);
		else if (members[i].both)
			members[i].both(f, d->m, d->fd);
		else
			apx_report_emit_json_section(f, d, members[i].section);
	}
	fputs("}\n", f);
}
