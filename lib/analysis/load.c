/*
 * load.c - reads .apx files into the analysis model (model.h): one pass over every chunk of
 * each file, records appended to the model's arrays, kernel names and streams interned across
 * files (intern.c).
 * Called by apx report through apx_model_add_file(); single-threaded.
 */
#include "analysis/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/intern.h"
#include "analysis/observed.h"
#include "base/parse.h"

#include "base/banned.h"

int apx_vec_push(struct apx_vec *v, const void *item)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		void *d = reallocarray(v->data, cap, v->size);

		if (!d)
			return -ENOMEM;
		v->data = d;
		v->cap = cap;
	}
	memcpy((char *)v->data + v->n * v->size, item, v->size);
	v->n++;
	return 0;
}

struct apx_model *apx_model_new(void)
{
	struct apx_model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->names.size = sizeof(struct apx_an_name);
	m->streams.size = sizeof(struct apx_an_stream);
	m->copies.size = sizeof(struct apx_an_copy);
	m->memsets.size = sizeof(struct apx_an_memset);
	m->syncs.size = sizeof(struct apx_an_sync);
	m->mem_events.size = sizeof(struct apx_an_mem_event);
	m->configs.size = sizeof(struct apx_an_config);
	m->uvm.size = sizeof(struct apx_an_uvm);
	m->cpu.size = sizeof(struct apx_an_cpu);
	m->markers.size = sizeof(struct apx_an_marker);
	m->api.size = sizeof(struct apx_an_api);
	m->recorded.size = sizeof(struct apx_an_recorded);
	m->kvs.size = sizeof(struct apx_an_kv);
	m->series.size = sizeof(struct apx_an_series);
	m->observed.size = sizeof(struct apx_an_observed);
	m->gaps.size = sizeof(struct apx_an_gap);
	m->timelines.size = sizeof(struct apx_an_timeline);
	m->ranges.size = sizeof(struct apx_an_range);
	m->run_start_ns = UINT64_MAX;
	return m;
}

void apx_model_free(struct apx_model *m)
{
	struct apx_vec *vecs[] = { &m->names, &m->streams, &m->copies, &m->memsets, &m->syncs,
				   &m->mem_events, &m->configs, &m->uvm, &m->cpu, &m->markers,
				   &m->api, &m->gaps, &m->timelines, &m->ranges, &m->recorded,
				   &m->kvs, &m->series, &m->observed };

	if (!m)
		return;
	for (size_t i = 0; i < m->nfiles; i++) {
		apx_reader_close(m->files[i].reader);
		free(m->files[i].path);
	}
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++)
		free(vecs[i]->data);
	free(m->k.start);
	free(m->k.dur);
	free(m->k.name);
	free(m->k.stream);
	free(m->name_hash);
	free(m->stream_hash);
	apx_sidmap_free(&m->sid_name);
	free(m);
}

const struct apx_an_device *apx_model_device(const struct apx_model *m, uint32_t id)
{
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].id == id)
			return &m->devices[i];
	return NULL;
}

static struct apx_an_device *device_get(struct apx_model *m, uint32_t id)
{
	struct apx_an_device *d;

	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].id == id)
			return &m->devices[i];
	if (m->ndevices == APX_AN_MAX_DEVICES)
		return NULL;
	d = &m->devices[m->ndevices++];
	memset(d, 0, sizeof(*d));
	d->id = id;
	return d;
}

static int kernels_grow(struct apx_an_kernels *k, size_t cap)
{
	void *a, *b, *c, *d;

	a = reallocarray(k->start, cap, sizeof(*k->start));
	if (a)
		k->start = a;
	b = reallocarray(k->dur, cap, sizeof(*k->dur));
	if (b)
		k->dur = b;
	c = reallocarray(k->name, cap, sizeof(*k->name));
	if (c)
		k->name = c;
	d = reallocarray(k->stream, cap, sizeof(*k->stream));
	if (d)
		k->stream = d;
	if (!a || !b || !c || !d)
		return -ENOMEM;
	k->cap = cap;
	return 0;
}

static int kernels_reserve(struct apx_an_kernels *k)
{
	return k->n < k->cap ? 0 : kernels_grow(k, k->cap ? k->cap * 2 : 4096);
}

/* Size the kernel and copy arrays once from the chunk table: no doubling (peak memory,
 * bench/report). */
static int kernels_presize(struct apx_model *m, const struct apx_reader *rd)
{
	size_t want = m->k.n;

	for (size_t c = 0; c < apx_reader_chunk_count(rd); c++)
		if (apx_reader_chunk(rd, c)->type == APX_REC_KERNEL)
			want += apx_reader_chunk(rd, c)->records;
	if (want > m->k.cap && kernels_grow(&m->k, want) < 0)
		return -ENOMEM;
	want = m->copies.n;
	for (size_t c = 0; c < apx_reader_chunk_count(rd); c++)
		if (apx_reader_chunk(rd, c)->type == APX_REC_MEMCPY)
			want += apx_reader_chunk(rd, c)->records;
	if (want > m->copies.cap) {
		void *d = reallocarray(m->copies.data, want, m->copies.size);

		if (!d)
			return -ENOMEM;
		m->copies.data = d;
		m->copies.cap = want;
	}
	return 0;
}

/* ---- per record type --------------------------------------------------------------------- */

static void copy_bytes(char *dst, size_t cap, const struct apx_rec *r, unsigned f, char nul_as)
{
	size_t n = r->bytes[f] ? r->v[f] : 0, o = 0;

	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		char c = (char)r->bytes[f][i];

		if (c == 0) {
			if (i + 1 == n)
				break;
			c = nul_as;
		}
		dst[o++] = c;	/* kept as is: every output escapes it (json.c, termsafe.c) */
	}
	dst[o] = 0;
}

static uint32_t sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The name index of a kernel name string id of file fi. Kernel names repeat millions of times:
 * each id of the file being read is interned once and remembered. */
static int kernel_name(struct apx_model *m, uint16_t fi, struct apx_reader *rd, uint64_t id,
		       uint32_t *ret)
{
	size_t len = 0;
	const char *text;
	int e;

	if (m->sid_file != (size_t)fi + 1) {	/* another file: its ids mean other strings */
		apx_sidmap_clear(&m->sid_name);
		m->sid_file = (size_t)fi + 1;
	}
	if (apx_sidmap_get(&m->sid_name, id, ret))
		return 0;
	text = apx_reader_string(rd, id, &len);
	if ((e = apx_intern_name(m, text, len, ret)) < 0)
		return e;
	apx_sidmap_put(&m->sid_name, id, *ret);
	return 0;
}

static int add_kernel(struct apx_model *m, uint16_t fi, struct apx_reader *rd,
		      const struct apx_rec *r)
{
	const uint64_t *v = r->v;
	struct apx_an_kernels *k = &m->k;
	uint32_t name;
	struct apx_an_name *nm;
	int e;

	if ((e = kernels_reserve(k)) < 0 || (e = kernel_name(m, fi, rd, v[APX_KERNEL_NAME], &name)) < 0)
		return e;
	k->start[k->n] = v[APX_KERNEL_START_NS];
	k->dur[k->n] = sat32(v[APX_KERNEL_END_NS] >= v[APX_KERNEL_START_NS]
				     ? v[APX_KERNEL_END_NS] - v[APX_KERNEL_START_NS] : 0);
	k->name[k->n] = name;
	k->stream[k->n] = apx_intern_stream(m, (uint32_t)v[APX_KERNEL_DEVICE],
					    v[APX_KERNEL_STREAM]);
	k->n++;
	nm = APX_VEC_AT(&m->names, struct apx_an_name, name);
	if (!nm->count++) {	/* launch configuration of the first launch */
		nm->device = (uint32_t)v[APX_KERNEL_DEVICE];
		for (int i = 0; i < 3; i++) {
			nm->grid[i] = (uint32_t)v[APX_KERNEL_GRID_X + i];
			nm->block[i] = (uint32_t)v[APX_KERNEL_BLOCK_X + i];
		}
		nm->regs = (uint32_t)v[APX_KERNEL_REGISTERS];
		nm->smem_static = (uint32_t)v[APX_KERNEL_STATIC_SMEM];
		nm->smem_dynamic = (uint32_t)v[APX_KERNEL_DYNAMIC_SMEM];
	}
	if (v[APX_KERNEL_APW_BYTES]) {	/* a kernel ran under an access-policy window */
		struct apx_an_config c = {
			.ts = v[APX_KERNEL_START_NS], .kind = 0, .device = (uint32_t)v[APX_KERNEL_DEVICE],
			.stream = v[APX_KERNEL_STREAM], .base = v[APX_KERNEL_APW_BASE],
			.bytes = v[APX_KERNEL_APW_BYTES], .hit_ppm = (uint32_t)v[APX_KERNEL_APW_HIT_PPM],
			.hit_prop = (uint8_t)(v[APX_KERNEL_APW_PROPS] & 15),
			.miss_prop = (uint8_t)(v[APX_KERNEL_APW_PROPS] >> 4 & 15), .target = 1,
		};
		/* one entry per distinct (stream, window): kernels under it are counted in value */
		for (size_t i = m->configs.n; i-- > 0;) {
			struct apx_an_config *o = APX_VEC_AT(&m->configs, struct apx_an_config, i);

			if (o->kind == 0 && o->stream == c.stream && o->base == c.base &&
			    o->bytes == c.bytes) {
				o->value++;
				return 0;
			}
		}
		c.value = 1;
		return apx_vec_push(&m->configs, &c);
	}
	return 0;
}

static int add_record(struct apx_model *m, struct apx_an_file *f, uint16_t fi,
		      const struct apx_rec *r)
{
	const uint64_t *v = r->v;

	switch (r->type) {
	case APX_REC_KERNEL:
		f->kernels++;
		if (v[APX_KERNEL_END_NS] > v[APX_KERNEL_START_NS])
			f->kernel_ns += v[APX_KERNEL_END_NS] - v[APX_KERNEL_START_NS];
		return add_kernel(m, fi, f->reader, r);
	case APX_REC_MEMCPY: {
		struct apx_an_copy c = {
			.start = v[APX_MEMCPY_START_NS], .bytes = v[APX_MEMCPY_BYTES],
			.host_addr = v[APX_MEMCPY_HOST_ADDR],
			.dur = sat32(v[APX_MEMCPY_END_NS] - v[APX_MEMCPY_START_NS]),
			.file = fi,
			.kind = (uint8_t)(v[APX_MEMCPY_COPY_KIND] < APX_COPY__COUNT ? v[APX_MEMCPY_COPY_KIND] : 0),
			.src = (uint8_t)(v[APX_MEMCPY_SRC_KIND] < APX_MEM__COUNT ? v[APX_MEMCPY_SRC_KIND] : 0),
			.dst = (uint8_t)(v[APX_MEMCPY_DST_KIND] < APX_MEM__COUNT ? v[APX_MEMCPY_DST_KIND] : 0),
			.async = (uint8_t)(v[APX_MEMCPY_FLAGS] & 1), .device = (uint16_t)v[APX_MEMCPY_DEVICE],
		};
		if (v[APX_MEMCPY_END_NS] < v[APX_MEMCPY_START_NS])
			c.dur = 0;
		if (v[APX_MEMCPY_API_ENTER_NS] && v[APX_MEMCPY_API_EXIT_NS] >= v[APX_MEMCPY_API_ENTER_NS]) {
			c.api_enter = v[APX_MEMCPY_API_ENTER_NS];	/* the copy call on the host */
			c.api_exit = v[APX_MEMCPY_API_EXIT_NS];
		}
		c.stream = apx_intern_stream(m, c.device, v[APX_MEMCPY_STREAM]);
		f->copies++;
		f->copy_bytes += c.bytes;
		f->copy_ns += c.dur;
		return apx_vec_push(&m->copies, &c);
	}
	case APX_REC_MEMSET: {
		struct apx_an_memset s = {
			.start = v[APX_MEMSET_START_NS], .bytes = v[APX_MEMSET_BYTES],
			.dur = v[APX_MEMSET_END_NS] >= v[APX_MEMSET_START_NS]
				       ? sat32(v[APX_MEMSET_END_NS] - v[APX_MEMSET_START_NS]) : 0,
			.kind = (uint8_t)(v[APX_MEMSET_MEM_KIND] & 0xff),
			.async = (uint8_t)(v[APX_MEMSET_FLAGS] & 1), .device = (uint32_t)v[APX_MEMSET_DEVICE],
		};
		s.stream = apx_intern_stream(m, s.device, v[APX_MEMSET_STREAM]);
		return apx_vec_push(&m->memsets, &s);
	}
	case APX_REC_SYNC: {
		struct apx_an_sync s = {
			.start = v[APX_SYNC_START_NS], .end = v[APX_SYNC_END_NS],
			.stream = v[APX_SYNC_STREAM], .tid = v[APX_SYNC_TID],
			.kind = (uint8_t)(v[APX_SYNC_KIND] < APX_SYNC_KIND__COUNT ? v[APX_SYNC_KIND] : 0),
			.file = fi,
		};
		f->has_sync = 1;
		return apx_vec_push(&m->syncs, &s);
	}
	case APX_REC_MEMORY: {
		struct apx_an_mem_event e = {
			.ts = v[APX_MEMORY_TS_NS], .addr = v[APX_MEMORY_ADDRESS], .bytes = v[APX_MEMORY_BYTES],
			.op = (uint8_t)v[APX_MEMORY_OP],
			.kind = (uint8_t)(v[APX_MEMORY_MEM_KIND] < APX_MEM__COUNT ? v[APX_MEMORY_MEM_KIND] : 0),
			.device = (uint32_t)v[APX_MEMORY_DEVICE], .file = fi,
		};
		return apx_vec_push(&m->mem_events, &e);
	}
	case APX_REC_CONFIG: {
		struct apx_an_config c = {
			.ts = v[APX_CONFIG_TS_NS], .value = v[APX_CONFIG_VALUE], .base = v[APX_CONFIG_APW_BASE],
			.bytes = v[APX_CONFIG_APW_BYTES], .stream = v[APX_CONFIG_STREAM],
			.target = v[APX_CONFIG_TARGET], .hit_ppm = (uint32_t)v[APX_CONFIG_APW_HIT_PPM],
			.device = (uint32_t)v[APX_CONFIG_DEVICE], .kind = (uint8_t)v[APX_CONFIG_KIND],
			.hit_prop = (uint8_t)v[APX_CONFIG_APW_HIT_PROP],
			.miss_prop = (uint8_t)v[APX_CONFIG_APW_MISS_PROP],
			/* nvperfd's uprobe sees the cuStreamSetAttribute argument: a CUstream */
			.stream_is_handle = !strcmp(f->producer, "nvperfd"),
		};
		return c.kind ? apx_vec_push(&m->configs, &c) : 0;
	}
	case APX_REC_UVM: {
		struct apx_an_uvm u = {
			.start = v[APX_UVM_START_NS], .end = v[APX_UVM_END_NS], .bytes = v[APX_UVM_BYTES],
			.value = v[APX_UVM_VALUE], .kind = (uint8_t)v[APX_UVM_KIND],
			.device = (uint32_t)v[APX_UVM_DEVICE],
		};
		return apx_vec_push(&m->uvm, &u);
	}
	case APX_REC_CPU: {
		struct apx_an_cpu c = {
			.ts = v[APX_CPU_TS_NS], .pid = v[APX_CPU_PID], .tid = v[APX_CPU_TID],
			.utime = v[APX_CPU_UTIME_NS], .stime = v[APX_CPU_STIME_NS], .vol = v[APX_CPU_VOL_CSW],
			.invol = v[APX_CPU_INVOL_CSW], .rss = v[APX_CPU_RSS_BYTES],
			.peak = v[APX_CPU_RSS_PEAK_BYTES], .threads = v[APX_CPU_THREADS], .file = fi,
		};
		return apx_vec_push(&m->cpu, &c);
	}
	case APX_REC_MARKER: {
		size_t len = 0;
		struct apx_an_marker mk = {
			.start = v[APX_MARKER_START_NS], .end = v[APX_MARKER_END_NS],
			.tid = v[APX_MARKER_TID], .kind = (uint8_t)v[APX_MARKER_KIND],
		};
		mk.name = apx_reader_string(f->reader, v[APX_MARKER_NAME], &len);
		mk.name_len = (uint32_t)len;
		return apx_vec_push(&m->markers, &mk);
	}
	case APX_REC_API: {
		size_t len = 0;
		struct apx_an_api a = {
			.start = v[APX_API_START_NS], .end = v[APX_API_END_NS], .tid = v[APX_API_TID],
			.corr = v[APX_API_CORRELATION], .cbid = (uint32_t)v[APX_API_CBID],
			.domain = (uint8_t)v[APX_API_DOMAIN],
		};
		a.name = apx_reader_string(f->reader, v[APX_API_NAME], &len);
		a.name_len = (uint32_t)len;
		f->has_api = 1;
		return apx_vec_push(&m->api, &a);
	}
	case APX_REC_DEVICE: {
		struct apx_an_device *d = device_get(m, (uint32_t)v[APX_DEVICE_ID]);

		if (!d)
			return 0;
		d->known = 1;
		copy_bytes(d->name, sizeof(d->name), r, APX_DEVICE_NAME, ' ');
		d->mem_bytes = v[APX_DEVICE_MEM_BYTES];
		d->l2_bytes = v[APX_DEVICE_L2_BYTES];
		d->bw_bps = v[APX_DEVICE_MEM_BW_BPS];
		d->persist_l2_max = v[APX_DEVICE_PERSIST_L2_MAX_BYTES];
		d->sm_count = (uint32_t)v[APX_DEVICE_SM_COUNT];
		d->cc_major = (uint32_t)v[APX_DEVICE_CC_MAJOR];
		d->cc_minor = (uint32_t)v[APX_DEVICE_CC_MINOR];
		d->max_threads_sm = (uint32_t)v[APX_DEVICE_MAX_THREADS_PER_SM];
		d->regs_sm = (uint32_t)v[APX_DEVICE_REGS_PER_SM];
		d->smem_sm = (uint32_t)v[APX_DEVICE_SMEM_PER_SM];
		d->max_blocks_sm = (uint32_t)v[APX_DEVICE_MAX_BLOCKS_PER_SM];
		d->warp_size = (uint32_t)v[APX_DEVICE_WARP_SIZE];
		d->pcie_gen = (uint32_t)v[APX_DEVICE_PCIE_GEN];
		d->pcie_width = (uint32_t)v[APX_DEVICE_PCIE_WIDTH];
		return 0;
	}
	case APX_REC_FINDING: {
		struct apx_an_recorded fd = {
			.rule = r->bytes[APX_FINDING_RULE], .title = r->bytes[APX_FINDING_TITLE],
			.evidence = r->bytes[APX_FINDING_EVIDENCE], .fix = r->bytes[APX_FINDING_FIX],
			.rule_len = (uint32_t)r->v[APX_FINDING_RULE],
			.title_len = (uint32_t)r->v[APX_FINDING_TITLE],
			.evidence_len = (uint32_t)r->v[APX_FINDING_EVIDENCE],
			.fix_len = (uint32_t)r->v[APX_FINDING_FIX],
			.saving_ns = v[APX_FINDING_SAVING_NS], .pid = v[APX_FINDING_PID], .file = fi,
			.severity = (uint8_t)(v[APX_FINDING_SEVERITY] <= 3 ? v[APX_FINDING_SEVERITY] : 3),
			.confidence_pct = (uint8_t)(v[APX_FINDING_CONFIDENCE_PCT] <= 100
							    ? v[APX_FINDING_CONFIDENCE_PCT] : 100),
		};
		return apx_vec_push(&m->recorded, &fd);
	}
	case APX_REC_LOSS:
		if (v[APX_LOSS_SOURCE] <= APX_LOSS_OTHER)
			f->lost[v[APX_LOSS_SOURCE]] += v[APX_LOSS_COUNT];
		return 0;
	case APX_REC_KV: {
		char key[64], val[256];

		copy_bytes(key, sizeof(key), r, APX_KV_KEY, ' ');
		copy_bytes(val, sizeof(val), r, APX_KV_VALUE, ' ');
		if (!strcmp(key, "degraded")) {
			size_t n = strlen(f->degraded);

			snprintf(f->degraded + n, sizeof(f->degraded) - n, "%s%s", n ? "; " : "", val);
		} else if (!strcmp(key, "level"))
			snprintf(f->level, sizeof(f->level), "%.31s", val);
		else if (!strcmp(key, "collector_launch_cost_ns")) {
			uint64_t ns = 0;

			if (apx_parse_u64(val, 1000000, &ns) == 0) {
				f->launch_cost_ns = ns;
				if (ns > m->launch_cost_ns)
					m->launch_cost_ns = ns;
			}
		} else if (!strcmp(key, "cuda_used"))
			f->cuda_used = !strcmp(val, "yes") || !strcmp(val, "1");
		else if (!strcmp(key, "nvperfd.cuda"))	/* "yes" or "not seen" (libcuda not mapped) */
			f->cuda_used = !strcmp(val, "yes");
		if (r->bytes[APX_KV_KEY] && r->v[APX_KV_KEY] > 8 &&
		    !memcmp(r->bytes[APX_KV_KEY], "nvperfd.", 8))
			return apx_observed_add_kv(m, fi, r);
		return 0;
	}
	case APX_REC_METRIC:
		return apx_observed_add_metric(m, f->reader, fi, r);
	default:
		return 0;
	}
}

/* First and last timestamp of a record, for spans; 0 when the type has none. */
static void record_span(const struct apx_rec *r, uint64_t *lo, uint64_t *hi)
{
	const struct apx_rec_schema *s = apx_schema(r->type);
	uint64_t a, b;

	if (!s || s->fields[0].kind != APX_FK_DELTA || r->type == APX_REC_STRINGS ||
	    r->type == APX_REC_CPU || !r->v[0])
		return;
	a = r->v[0];
	b = s->nfields > 1 && s->fields[1].kind == APX_FK_SPAN ? r->v[1] : a;
	if (b < a)	/* an end before its start: the record is an instant (the timelines' view) */
		b = a;
	if (a < *lo)
		*lo = a;
	if (b > *hi)
		*hi = b;
}

static void read_header(struct apx_an_file *f)
{
	const struct apx_rec *h = apx_reader_header(f->reader);

	f->pid = h->v[APX_HEADER_PID];
	f->ppid = h->v[APX_HEADER_PPID];
	f->uid = h->v[APX_HEADER_UID];
	f->rank = apx_rec_i64(h, APX_HEADER_RANK);
	f->clock = h->v[APX_HEADER_CLOCK];
	f->realtime_offset_ns = apx_rec_i64(h, APX_HEADER_REALTIME_OFFSET_NS);
	copy_bytes(f->producer, sizeof(f->producer), h, APX_HEADER_PRODUCER, ' ');
	copy_bytes(f->producer_version, sizeof(f->producer_version), h, APX_HEADER_PRODUCER_VERSION, ' ');
	copy_bytes(f->host, sizeof(f->host), h, APX_HEADER_HOSTNAME, ' ');
	copy_bytes(f->user, sizeof(f->user), h, APX_HEADER_USER, ' ');
	copy_bytes(f->argv, sizeof(f->argv), h, APX_HEADER_ARGV, ' ');
	copy_bytes(f->run_id, sizeof(f->run_id), h, APX_HEADER_RUN_ID, ' ');
	f->first_ns = h->v[APX_HEADER_START_NS] ? h->v[APX_HEADER_START_NS] : UINT64_MAX;
	f->cuda_used = -1;
}

/* A chunk's records that cannot be read: the file is damaged there (the first such place is
 * its damage message when the reader found none), and they count as unreadable. */
static void chunk_damaged(struct apx_an_file *f, const struct apx_diag *d, uint32_t lost)
{
	f->records_unreadable += lost;
	if (f->damage[0])
		return;
	f->status = APX_READ_DAMAGED;
	snprintf(f->damage, sizeof(f->damage), "%s", d->msg);
}

static int oom(struct apx_diag *diag, const struct apx_an_file *f, size_t chunk)
{
	const struct apx_chunk_info *ci = apx_reader_chunk(f->reader, chunk);

	snprintf(diag->msg, sizeof(diag->msg), "out of memory at chunk %zu (%s) at offset %llu",
		 chunk, ci ? apx_rec_type_name(ci->type) : "?",
		 ci ? (unsigned long long)ci->offset : 0ull);
	diag->chunk = (int64_t)chunk;
	diag->offset = ci ? ci->offset : 0;
	return diag->err = -ENOMEM;
}

int apx_model_add_file(struct apx_model *m, const char *path, struct apx_diag *diag)
{
	struct apx_reader *rd;
	int r;

	r = apx_reader_open(path, &rd, diag);
	if (r < 0)
		return r;
	return apx_model_add_reader(m, path, rd, diag);
}

int apx_model_add_reader(struct apx_model *m, const char *name, struct apx_reader *rd,
			 struct apx_diag *diag)
{
	struct apx_an_file *f;
	uint16_t fi;
	int r;

	if (m->nfiles == APX_AN_MAX_FILES) {
		apx_reader_close(rd);
		snprintf(diag->msg, sizeof(diag->msg), "more than %d files", APX_AN_MAX_FILES);
		return diag->err = -E2BIG;
	}
	fi = (uint16_t)m->nfiles;
	f = &m->files[m->nfiles++];
	memset(f, 0, sizeof(*f));
	f->path = strdup(name);
	f->reader = rd;
	if (!f->path)
		return oom(diag, f, 0);
	f->status = apx_reader_status(rd);
	if (apx_reader_damage(rd))
		snprintf(f->damage, sizeof(f->damage), "%s", apx_reader_damage(rd)->msg);
	read_header(f);
	r = kernels_presize(m, rd);
	if (r < 0)
		return oom(diag, f, 0);
	for (size_t c = 0; c < apx_reader_chunk_count(rd); c++) {
		struct apx_chunk_iter it;
		struct apx_diag d;
		uint32_t done = 0;
		int k;

		if ((k = apx_chunk_iter_init(&it, rd, c, &d)) < 0) {
			if (k == -ENOTSUP)
				f->skipped_chunks++;	/* a newer writer's: skipped whole */
			else
				chunk_damaged(f, &d, apx_reader_chunk(rd, c)->records);
			continue;
		}
		while ((k = apx_chunk_iter_next(&it, &d)) > 0) {
			done++;
			f->records++;
			record_span(&it.rec, &f->first_ns, &f->last_ns);
			if (it.rec.type == APX_REC_CPU && it.rec.v[APX_CPU_TS_NS] > f->last_ns)
				f->last_ns = it.rec.v[APX_CPU_TS_NS];
			r = add_record(m, f, fi, &it.rec);
			if (r < 0)
				return oom(diag, f, c);
		}
		if (k < 0)
			chunk_damaged(f, &d, apx_reader_chunk(rd, c)->records - done);
		apx_reader_release(rd, c);	/* chunks with strings are kept by the reader */
	}
	if (f->cuda_used < 0 && (m->k.n || m->copies.n))
		f->cuda_used = 1;
	if (f->first_ns < m->run_start_ns)
		m->run_start_ns = f->first_ns;
	if (f->last_ns > m->run_end_ns)
		m->run_end_ns = f->last_ns;
	return 0;
}
