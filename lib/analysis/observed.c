/*
 * observed.c - nvperfd's view of a process from outside (see observed.h): keeps each file's
 * "nvperfd.*" key/values (bounded, the last one wins when a key repeats) and its METRIC time
 * series as count/min/max/mean per name x device x pid, then parses the values nvperfd writes
 * (decimal numbers, or "n/a (why)" text) into struct apx_an_observed and sums the processes
 * for the summary. Called by load.c while reading and by apx_model_finish(); single-threaded.
 */
#include "analysis/observed.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

#define GPM_PREFIX "nvperfd.gpm."

/* The observed entry of file, created on its first key/value or sample (files load in order,
 * so it is the last entry or none). NULL on ENOMEM. */
static struct apx_an_observed *observed_of(struct apx_model *m, uint16_t file)
{
	struct apx_an_observed o = { 0 };

	if (m->observed.n) {
		struct apx_an_observed *last =
			APX_VEC_AT(&m->observed, struct apx_an_observed, m->observed.n - 1);

		if (last->file == file)
			return last;
	}
	o.file = file;
	o.kv_first = m->kvs.n;
	o.series_first = m->series.n;
	if (apx_vec_push(&m->observed, &o) < 0)
		return NULL;
	return APX_VEC_AT(&m->observed, struct apx_an_observed, m->observed.n - 1);
}

int apx_observed_add_kv(struct apx_model *m, uint16_t file, const struct apx_rec *r)
{
	struct apx_an_observed *o = observed_of(m, file);
	struct apx_an_kv kv = {
		.key = (const char *)r->bytes[APX_KV_KEY], .val = (const char *)r->bytes[APX_KV_VALUE],
		.key_len = r->bytes[APX_KV_KEY] ? (uint32_t)r->v[APX_KV_KEY] : 0,
		.val_len = r->bytes[APX_KV_VALUE] ? (uint32_t)r->v[APX_KV_VALUE] : 0, .file = file,
	};
	int e;

	if (!o)
		return -ENOMEM;
	if (!kv.val)
		kv.val = "";
	for (size_t i = o->kv_first; i < o->kv_first + o->nkv; i++) {
		struct apx_an_kv *old = APX_VEC_AT(&m->kvs, struct apx_an_kv, i);

		if (old->key_len == kv.key_len && !memcmp(old->key, kv.key, kv.key_len)) {
			*old = kv;	/* a repeated key: the last value counts */
			return 0;
		}
	}
	if (o->nkv == APX_AN_OBS_KVS_MAX) {
		o->kvs_dropped++;
		return 0;
	}
	if ((e = apx_vec_push(&m->kvs, &kv)) < 0)
		return e;
	o->nkv++;
	return 0;
}

int apx_observed_add_metric(struct apx_model *m, struct apx_reader *rd, uint16_t file,
			    const struct apx_rec *r)
{
	struct apx_an_observed *o = observed_of(m, file);
	uint64_t name = r->v[APX_METRIC_NAME], unit = r->v[APX_METRIC_UNIT];
	uint64_t pid = r->v[APX_METRIC_PID], ts = r->v[APX_METRIC_TS_NS];
	uint32_t device = (uint32_t)r->v[APX_METRIC_DEVICE];
	double v = apx_rec_f64(r, APX_METRIC_VALUE);
	struct apx_an_series s = { 0 }, *hit = NULL;
	size_t len = 0;
	int e;

	if (!o)
		return -ENOMEM;
	for (size_t i = o->series_first + o->nseries; i-- > o->series_first;) {
		struct apx_an_series *x = APX_VEC_AT(&m->series, struct apx_an_series, i);

		if (x->name_id == name && x->unit_id == unit && x->device == device && x->pid == pid) {
			hit = x;
			break;
		}
	}
	if (!hit) {
		if (o->nseries == APX_AN_OBS_SERIES_MAX) {
			o->series_dropped++;
			return 0;
		}
		s.name_id = name;
		s.unit_id = unit;
		s.name = apx_reader_string(rd, name, &len);
		s.name_len = s.name ? (uint32_t)len : 0;
		s.unit = apx_reader_string(rd, unit, &len);
		s.unit_len = s.unit ? (uint32_t)len : 0;
		s.device = device;
		s.pid = pid;
		s.file = file;
		if ((e = apx_vec_push(&m->series, &s)) < 0)
			return e;
		o->nseries++;
		hit = APX_VEC_AT(&m->series, struct apx_an_series, m->series.n - 1);
	}
	if (!isfinite(v))
		return 0;	/* not a value: left out, never counted as 0 */
	if (!hit->count || v < hit->min)
		hit->min = v;
	if (!hit->count || v > hit->max)
		hit->max = v;
	if (!hit->count || ts < hit->first_ns)
		hit->first_ns = ts;
	if (ts > hit->last_ns)
		hit->last_ns = ts;
	hit->sum += v;
	hit->count++;
	return 0;
}

const struct apx_an_kv *apx_observed_kv(const struct apx_model *m, const struct apx_an_observed *o,
					const char *key)
{
	size_t n = strlen(key);

	for (size_t i = o->kv_first; i < o->kv_first + o->nkv; i++) {
		const struct apx_an_kv *kv = APX_VEC_AT(&m->kvs, struct apx_an_kv, i);

		if (kv->key_len == n && !memcmp(kv->key, key, n))
			return kv;
	}
	return NULL;
}

/* A value as nvperfd writes it: a non-negative decimal number, else text saying why not. */
static struct apx_an_obs_val val_of(const struct apx_model *m, const struct apx_an_observed *o,
				    const char *key)
{
	const struct apx_an_kv *kv = apx_observed_kv(m, o, key);
	struct apx_an_obs_val v = { 0 };
	char buf[64], *end;
	double d;

	if (!kv)
		return v;
	v.text = kv->val;
	v.len = kv->val_len;
	if (!kv->val_len || kv->val_len >= sizeof(buf) || !isdigit((unsigned char)kv->val[0]))
		return v;
	memcpy(buf, kv->val, kv->val_len);
	buf[kv->val_len] = 0;
	errno = 0;
	d = strtod(buf, &end);
	if (*end || errno == ERANGE || !isfinite(d))
		return v;
	v.has = 1;
	v.v = d;
	v.u = d >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)d;
	return v;
}

static void parse(const struct apx_model *m, struct apx_an_observed *o)
{
	static const char *const dir[2] = { "h2d", "d2h" }, *const kind[2] = { "pageable", "pinned" };
	char key[64];

	o->cuda = val_of(m, o, "nvperfd.cuda");
	o->uprobes = val_of(m, o, "nvperfd.uprobes");
	o->libcuda = val_of(m, o, "nvperfd.uprobes.libcuda");
	o->uprobe_calls = val_of(m, o, "nvperfd.uprobes.calls");
	o->uprobe_lost = val_of(m, o, "nvperfd.uprobes.lost");
	for (int d = 0; d < 2; d++) {
		for (int k = 0; k < 2; k++) {
			snprintf(key, sizeof(key), "nvperfd.%s.%s.calls", dir[d], kind[k]);
			o->copy[d][k].calls = val_of(m, o, key);
			snprintf(key, sizeof(key), "nvperfd.%s.%s.bytes", dir[d], kind[k]);
			o->copy[d][k].bytes = val_of(m, o, key);
			snprintf(key, sizeof(key), "nvperfd.%s.%s.call_ns", dir[d], kind[k]);
			o->copy[d][k].call_ns = val_of(m, o, key);
		}
	}
	o->pin_calls = val_of(m, o, "nvperfd.pinned.calls");
	o->pin_bytes = val_of(m, o, "nvperfd.pinned.bytes");
	o->pin_failed = val_of(m, o, "nvperfd.pinned.failed");
	o->nvml = val_of(m, o, "nvperfd.nvml");
	o->device = val_of(m, o, "nvperfd.gpu.device");
	o->samples = val_of(m, o, "nvperfd.gpu.samples");
	o->idle_samples = val_of(m, o, "nvperfd.gpu.idle_samples");
	o->sm_util_pct = val_of(m, o, "nvperfd.gpu.sm_util_pct");
	o->mem_peak_bytes = val_of(m, o, "nvperfd.gpu.mem_peak_bytes");
	o->gpm = val_of(m, o, "nvperfd.gpm");
	o->ngpm = 0;
	for (size_t i = o->kv_first; i < o->kv_first + o->nkv && o->ngpm < APX_AN_OBS_GPM_MAX; i++) {
		const struct apx_an_kv *kv = APX_VEC_AT(&m->kvs, struct apx_an_kv, i);

		if (kv->key_len > strlen(GPM_PREFIX) && !memcmp(kv->key, GPM_PREFIX, strlen(GPM_PREFIX)))
			o->gpm_kv[o->ngpm++] = (uint32_t)i;
	}
}

void apx_observed_finish(struct apx_model *m)
{
	struct apx_an_observed_run *run = &m->obs;
	double sm_sum = 0, sm_weight = 0;
	int traced = 0;

	memset(run, 0, sizeof(*run));
	for (size_t i = 0; i < m->series.n; i++) {
		struct apx_an_series *s = APX_VEC_AT(&m->series, struct apx_an_series, i);

		s->mean = s->count ? s->sum / (double)s->count : 0;
	}
	/* a process was observed by nvperfd when its file has nvperfd.* key/values; METRIC
	 * samples alone do not make one */
	for (size_t i = 0, n = m->observed.n; i < n; i++) {
		struct apx_an_observed *o = APX_VEC_AT(&m->observed, struct apx_an_observed, i);

		if (o->nkv || o->kvs_dropped)
			*APX_VEC_AT(&m->observed, struct apx_an_observed, run->processes++) = *o;
	}
	m->observed.n = run->processes;
	run->processes = 0;
	for (size_t i = 0; i < m->observed.n; i++) {
		struct apx_an_observed *o = APX_VEC_AT(&m->observed, struct apx_an_observed, i);

		parse(m, o);
		run->processes++;
		for (int d = 0; d < 2; d++) {
			for (int k = 0; k < 2; k++) {
				const struct apx_an_obs_copy *c = &o->copy[d][k];

				if (!c->calls.has || !c->bytes.has)
					continue;
				run->copy_has[d][k] = 1;
				if (__builtin_add_overflow(run->copy_calls[d][k], c->calls.u,
							   &run->copy_calls[d][k]))
					run->copy_calls[d][k] = UINT64_MAX;
				if (__builtin_add_overflow(run->copy_bytes[d][k], c->bytes.u,
							   &run->copy_bytes[d][k]))
					run->copy_bytes[d][k] = UINT64_MAX;
			}
		}
		if (o->sm_util_pct.has) {
			double w = o->samples.has && o->samples.v > 0 ? o->samples.v : 1;

			sm_sum += w * o->sm_util_pct.v;
			sm_weight += w;
			run->sm_has = 1;
		}
		if (o->mem_peak_bytes.has && o->mem_peak_bytes.u > run->mem_peak_bytes)
			run->mem_peak_bytes = o->mem_peak_bytes.u;
		run->mem_has |= o->mem_peak_bytes.has;
	}
	if (sm_weight > 0)
		run->sm_util_pct = sm_sum / sm_weight;
	for (size_t i = 0; i < m->nfiles; i++)
		traced |= strcmp(m->files[i].producer, "nvperfd") != 0;
	m->no_gpu_trace = m->nfiles && !traced && !m->k.n && !m->copies.n && !m->memsets.n;
}
