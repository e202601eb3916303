/*
 * report_json.c - `apx report --format json`: every table and finding of the report, and what
 * nvperfd observed, as one JSON document, schema "apx.report/1" (docs/report-schema.md).
 * Numbers are raw (ns, bytes); strings are escaped. Called by cmd_report.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/unit.h"
#include "cli/report.h"

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

static void kv_s(FILE *f, const char *k, const char *v, int *first)
{
	key(f, k, first);
	apx_json_str(f, v);
}

/* A number nvperfd wrote, or null (its text, "n/a (why)", is in the file's kvs). */
static void kv_obs(FILE *f, const char *k, const struct apx_an_obs_val *v, int *first)
{
	key(f, k, first);
	if (v->has)
		fprintf(f, "%" PRIu64, v->u);
	else
		fputs("null", f);
}

static void kv_g(FILE *f, const char *k, double v, int *first)
{
	key(f, k, first);
	if (isfinite(v))
		fprintf(f, "%.15g", v);
	else
		fputs("null", f);
}

/* What nvperfd observed of each process (docs/report-schema.md, "nvperfd"). */
static void nvperfd(FILE *f, const struct apx_model *m)
{
	static const char *const dir[2] = { "H2D", "D2H" }, *const kind[2] = { "pageable", "pinned" };

	fputs(",\"nvperfd\":[", f);
	for (size_t i = 0; i < m->observed.n; i++) {
		const struct apx_an_observed *o = APX_VEC_AT(&m->observed, struct apx_an_observed, i);
		int first = 1, n = 0;

		fputs(i ? ",{" : "{", f);
		kv_s(f, "path", m->files[o->file].path, &first);
		kv_u(f, "pid", m->files[o->file].pid, &first);
		fputs(",\"kvs\":{", f);
		for (size_t k = o->kv_first; k < o->kv_first + o->nkv; k++) {
			const struct apx_an_kv *kv = APX_VEC_AT(&m->kvs, struct apx_an_kv, k);

			if (k > o->kv_first)
				fputc(',', f);
			apx_json_strn(f, kv->key, kv->key_len);
			fputc(':', f);
			apx_json_strn(f, kv->val, kv->val_len);
		}
		fputs("}", f);
		kv_u(f, "kvs_dropped", o->kvs_dropped, &first);
		fputs(",\"copies\":[", f);
		for (int d = 0; d < 2; d++) {
			for (int k = 0; k < 2; k++) {
				const struct apx_an_obs_copy *c = &o->copy[d][k];
				int fi = 1;

				if (!c->calls.text && !c->bytes.text)
					continue;
				fputs(n++ ? ",{" : "{", f);
				kv_s(f, "direction", dir[d], &fi);
				kv_s(f, "host_memory", kind[k], &fi);
				kv_obs(f, "calls", &c->calls, &fi);
				kv_obs(f, "bytes", &c->bytes, &fi);
				kv_obs(f, "call_ns", &c->call_ns, &fi);
				key(f, "gbps", &fi);
				if (c->call_ns.has && c->bytes.has && c->call_ns.v > 0)
					fprintf(f, "%.6g", c->bytes.v / c->call_ns.v);
				else
					fputs("null", f);
				key(f, "why", &fi);
				if (c->call_ns.has || !c->call_ns.text)
					apx_json_str(f, c->call_ns.has ? ""
							: "call time not in the summary");
				else
					apx_json_strn(f, c->call_ns.text, c->call_ns.len);
				fputc('}', f);
			}
		}
		fputs("],\"series\":[", f);
		for (size_t k = o->series_first; k < o->series_first + o->nseries; k++) {
			const struct apx_an_series *s = APX_VEC_AT(&m->series, struct apx_an_series, k);
			int fi = 1;

			fputs(k > o->series_first ? ",{" : "{", f);
			key(f, "name", &fi);
			apx_json_strn(f, s->name ? s->name : "", s->name_len);
			key(f, "unit", &fi);
			apx_json_strn(f, s->unit ? s->unit : "", s->unit_len);
			kv_u(f, "device", s->device, &fi);
			kv_u(f, "pid", s->pid, &fi);
			kv_u(f, "samples", s->count, &fi);
			if (s->count) {
				kv_g(f, "min", s->min, &fi);
				kv_g(f, "mean", s->mean, &fi);
				kv_g(f, "max", s->max, &fi);
			} else {
				fputs(",\"min\":null,\"mean\":null,\"max\":null", f);
			}
			kv_u(f, "first_ns", s->first_ns, &fi);
			kv_u(f, "last_ns", s->last_ns, &fi);
			fputc('}', f);
		}
		fputs("]", f);
		kv_u(f, "series_dropped", o->series_dropped, &first);
		fputc('}', f);
	}
	fputs("]", f);
}

/* The members in schema order, each with the --section it belongs to. */
static const struct {
	unsigned section;
	void (*model)(FILE *f, const struct apx_model *m);
	void (*findings)(FILE *f, const struct apx_findings *fd);
} members[] = {
	{ APX_SEC_METHOD, NULL, NULL },	{ APX_SEC_SUMMARY, NULL, NULL },
	{ APX_SEC_FINDINGS, NULL, NULL },	{ APX_SEC_CHECKS, NULL, NULL },
	{ APX_SEC_KERNELS, NULL, NULL },	{ APX_SEC_TRANSFERS, NULL, NULL },
	{ APX_SEC_SYNC, NULL, NULL },		{ APX_SEC_IDLE, NULL, NULL },
	{ APX_SEC_MEMORY, NULL, NULL },	{ APX_SEC_STREAMS, NULL, NULL },
	{ APX_SEC_NVTX, NULL, NULL },		{ APX_SEC_L2, NULL, NULL },
	{ APX_SEC_UVM, NULL, NULL },		{ APX_SEC_CPU, NULL, NULL },
	{ APX_SEC_NVPERFD, nvperfd, NULL },
};

void apx_report_json(FILE *f, const struct apx_rdoc *d, const struct apx_report_opts *o)
{
	fputs("{\"schema\":\"apx.report/1\"", f);
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		unsigned s = members[i].section;

		if (!(o->sections & 1u << s))
			continue;	/* --section: only the members of the sections asked for */
		if (d->sec[s].json_built)
			apx_report_emit_json_section(f, d, s);
		else if (members[i].model)
			members[i].model(f, d->m);
		else
			members[i].findings(f, d->fd);
	}
	fputs("}\n", f);
}
