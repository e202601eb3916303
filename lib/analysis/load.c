/*
 * load.c - the model's side of reading .apx files (model.h): apx_model_add_file() takes each
 * file's header and hands its reader to the event store (store.h); while the store reads the
 * records into its columns (apx_model_finish), the record hook here collects what the store has
 * no column for: devices' properties, memory, configuration and access-policy windows, unified
 * memory, CPU samples, findings, losses, key/values (capture ranges: capture.c), nvperfd's
 * series (observed.c) and peer copies' devices (p2p.c), and each file's record count, span
 * and damage. Called by apx report; single-threaded.
 */
#include "analysis/hwcounters.h"
#include "analysis/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap.h"
#include "analysis/observed.h"
#include "analysis/p2p.h"
#include "analysis/ranks.h"
#include "analysis/store.h"
#include "analysis/views.h"
#include "analysis/whatif/whatif.h"
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
	m->whatif_savings = 1;	/* the default: apx report --savings whatif */
	m->names.size = sizeof(struct apx_an_name);
	m->streams.size = sizeof(struct apx_an_stream);
	m->copies.size = sizeof(struct apx_an_copy);
	m->memsets.size = sizeof(struct apx_an_memset);
	m->syncs.size = sizeof(struct apx_an_sync);
	m->mem_events.size = sizeof(struct apx_an_mem_event);
	m->allocs.size = m->allocs_failed.size = sizeof(struct apx_an_alloc);
	m->configs.size = sizeof(struct apx_an_config);
	m->uvm.size = sizeof(struct apx_an_uvm);
	m->cpu.size = sizeof(struct apx_an_cpu);
	m->markers.size = sizeof(struct apx_an_marker);
	m->api.size = sizeof(struct apx_an_api);
	m->recorded.size = sizeof(struct apx_an_recorded);
	m->kvs.size = sizeof(struct apx_an_kv);
	m->series.size = sizeof(struct apx_an_series);
	m->pm.size = sizeof(struct apx_an_pm);
	m->counters.size = sizeof(struct apx_an_counter);
	m->colls.size = sizeof(struct apx_an_coll);
	m->kc.size = sizeof(struct apx_an_kc);
	m->observed.size = sizeof(struct apx_an_observed);
	m->procs.size = sizeof(struct apx_an_proc);
	m->graphs.size = sizeof(struct apx_an_graph);
	m->lines.size = sizeof(struct apx_an_line);
	m->hotspots.size = sizeof(struct apx_an_hotspot);
	m->threads.size = sizeof(struct apx_an_thread);
	m->idle_stacks.size = sizeof(struct apx_an_idle_stack);
	m->oswaits.size = sizeof(struct apx_an_oswait);
	m->oswait_lines.size = sizeof(struct apx_an_oswait_line);
	m->gaps.size = sizeof(struct apx_an_gap);
	m->timelines.size = sizeof(struct apx_an_timeline);
	m->ranges.size = sizeof(struct apx_an_range);
	m->captures.size = sizeof(struct apx_an_capture);
	m->collected.size = sizeof(struct apx_an_collected);
	m->p2p_copies.size = sizeof(struct apx_an_p2p_copy);
	m->p2p.size = sizeof(struct apx_p2p_pair);
	m->run_start_ns = UINT64_MAX;
	return m;
}

static int on_record(void *ctx, uint16_t fi, const struct apx_rec *r);
static void on_chunk(void *ctx, uint16_t fi, size_t chunk, int err, const struct apx_diag *d,
		     uint32_t lost);

/* The event store the files go to: every file's clock kept as recorded (apx report has always
 * shown each file's own times). */
int apx_model_store_get(struct apx_model *m)
{
	struct apx_store_opts o = { .keep_clocks = 1, .on_record = on_record,
				    .on_chunk = on_chunk, .ctx = m, .borrow_readers = m->twin };

	if (!m->store)
		m->store = apx_store_new(&o);
	return m->store ? 0 : -ENOMEM;
}

/* The model's vectors' storage (m not NULL). */
static void free_vecs(struct apx_model *m)
{
	struct apx_vec *vecs[] = { &m->names, &m->streams, &m->copies, &m->memsets, &m->syncs,
				   &m->mem_events, &m->allocs, &m->allocs_failed, &m->configs, &m->uvm, &m->cpu, &m->markers,
				   &m->api, &m->gaps, &m->timelines, &m->ranges, &m->recorded,
				   &m->kvs, &m->series, &m->observed, &m->procs, &m->graphs,
				   &m->pm, &m->counters, &m->kc, &m->captures, &m->collected, &m->colls,
				   &m->lines, &m->hotspots, &m->threads, &m->idle_stacks,
				   &m->oswaits, &m->oswait_lines, &m->p2p_copies, &m->p2p };

	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++)
		free(vecs[i]->data);
}

void apx_model_free(struct apx_model *m)
{
	if (!m)
		return;
	if (!m->store || m->k.dur != m->store->k.dur)
		free(m->k.dur);		/* else the store's column */
	apx_store_free(m->store);	/* closes the readers */
	apx_whatif_free(m->whatif);
	apx_ranks_free(m->ranks);
	apx_heap_free(m);
	for (size_t i = 0; i < m->nfiles; i++)
		free(m->files[i].path);
	free_vecs(m);
	free(m->k.start);
	free(m->k.name);
	free(m->k.stream);
	free(m->stream_of_es);
	free(m->stack_line);
	free(m->bwd.kernel_line);
	free(m->steady.bounds);
	free(m->unknown_per_step);
	free(m->step_host_per_step);
	free(m);
}

const struct apx_an_device *apx_model_device(const struct apx_model *m, uint32_t id)
{
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].id == id)
			return &m->devices[i];
	return NULL;
}

const struct apx_an_device *apx_model_device_es(const struct apx_model *m, uint32_t es)
{
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].es_device == es && m->devices[i].known)
			return &m->devices[i];
	return NULL;
}

/* The model's entry of the store device a file's DEVICE record named (host, UUID): two
 * processes of one GPU share it, two hosts' GPU 0 do not. */
static struct apx_an_device *device_get(struct apx_model *m, uint16_t fi, uint32_t id)
{
	uint32_t es = apx_store_device_of(m->store, fi, id);
	struct apx_an_device *d;

	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].es_device == es)
			return &m->devices[i];
	if (m->ndevices == APX_AN_MAX_DEVICES)
		return NULL;
	d = &m->devices[m->ndevices++];
	memset(d, 0, sizeof(*d));
	d->id = id;
	d->es_device = es;
	return d;
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

/* A kernel that ran under an access-policy window: one configuration entry per distinct
 * (stream, window), the kernels under it counted in its value. */
static int add_kernel_window(struct apx_model *m, const struct apx_rec *r)
{
	const uint64_t *v = r->v;
	struct apx_an_config c = {
		.ts = v[APX_KERNEL_START_NS], .kind = 0, .device = (uint32_t)v[APX_KERNEL_DEVICE],
		.stream = v[APX_KERNEL_STREAM], .base = v[APX_KERNEL_APW_BASE],
		.bytes = v[APX_KERNEL_APW_BYTES], .hit_ppm = (uint32_t)v[APX_KERNEL_APW_HIT_PPM],
		.hit_prop = (uint8_t)(v[APX_KERNEL_APW_PROPS] & 15),
		.miss_prop = (uint8_t)(v[APX_KERNEL_APW_PROPS] >> 4 & 15), .target = 1,
	};

	for (size_t i = m->configs.n; i-- > 0;) {
		struct apx_an_config *o = APX_VEC_AT(&m->configs, struct apx_an_config, i);

		if (o->kind == 0 && o->stream == c.stream && o->base == c.base && o->bytes == c.bytes) {
			o->value++;
			return 0;
		}
	}
	c.value = 1;
	return apx_vec_push(&m->configs, &c);
}

/* The graph (fi, id), made when new. NULL on no memory. */
static struct apx_an_graph *graph_get(struct apx_model *m, uint16_t fi, uint64_t id, uint64_t ts)
{
	struct apx_an_graph g = { .id = id, .file = fi, .first_ns = ts, .last_ns = ts };
	struct apx_an_graph *h;

	if (m->graph_hint < m->graphs.n) {	/* a graph's kernels mostly come one after another */
		h = APX_VEC_AT(&m->graphs, struct apx_an_graph, m->graph_hint);
		if (h->id == id && h->file == fi)
			return h;
	}
	for (size_t i = m->graphs.n; i-- > 0;) {
		h = APX_VEC_AT(&m->graphs, struct apx_an_graph, i);
		if (h->id == id && h->file == fi) {
			m->graph_hint = i;
			return h;
		}
	}
	if (apx_vec_push(&m->graphs, &g) < 0)
		return NULL;
	m->graph_hint = m->graphs.n - 1;
	return APX_VEC_AT(&m->graphs, struct apx_an_graph, m->graph_hint);
}

/* Two kernels of a graph this close ran in one replay (their gap: the GPU's between nodes). */
#define GRAPH_REPLAY_GAP_NS 20000u

/* A kernel that ran as a node of a graph joins the graph's aggregate; the graph's signature
 * sums a hash of each kernel's name (FNV-1a of its text: the same in every file); its gap
 * after the graph's previous kernel, when one replay's, joins model->graph_gap_sum. */
static int graph_kernel(struct apx_model *m, const struct apx_an_file *f, uint16_t fi,
			const uint64_t *v)
{
	struct apx_an_graph *g = graph_get(m, fi, v[APX_KERNEL_GRAPH_ID], v[APX_KERNEL_START_NS]);
	size_t len = 0;
	const char *text = apx_reader_string(f->reader, v[APX_KERNEL_NAME], &len);
	uint64_t h = 0xcbf29ce484222325ull;

	if (!g)
		return -ENOMEM;
	for (size_t i = 0; text && i < len; i++)
		h = (h ^ (uint8_t)text[i]) * 0x100000001b3ull;
	g->kernels++;
	g->kernel_ns += v[APX_KERNEL_END_NS] > v[APX_KERNEL_START_NS]
				? v[APX_KERNEL_END_NS] - v[APX_KERNEL_START_NS] : 0;
	if (g->prev_end && v[APX_KERNEL_START_NS] > g->prev_end &&
	    v[APX_KERNEL_START_NS] - g->prev_end < GRAPH_REPLAY_GAP_NS) {
		m->graph_gap_sum += v[APX_KERNEL_START_NS] - g->prev_end;
		m->graph_gaps++;
	}
	if (v[APX_KERNEL_END_NS] > g->prev_end)
		g->prev_end = v[APX_KERNEL_END_NS];
	g->sig += h ^ (h >> 29);	/* a sum: the order the records come in does not matter */
	if (v[APX_KERNEL_START_NS] < g->first_ns)
		g->first_ns = v[APX_KERNEL_START_NS];
	if (v[APX_KERNEL_END_NS] > g->last_ns)
		g->last_ns = v[APX_KERNEL_END_NS];
	return 0;
}

static int add_record(struct apx_model *m, struct apx_an_file *f, uint16_t fi,
		      const struct apx_rec *r)
{
	const uint64_t *v = r->v;

	switch (r->type) {
	case APX_REC_KERNEL: {	/* kernels, copies, memsets, syncs, ranges, API calls: the store's */
		int e = v[APX_KERNEL_GRAPH_ID] ? graph_kernel(m, f, fi, v) : 0;

		return e < 0 ? e : v[APX_KERNEL_APW_BYTES] ? add_kernel_window(m, r) : 0;
	}
	case APX_REC_SYNC:
		f->has_sync = 1;
		return 0;
	case APX_REC_API:
		f->has_api = 1;
		return 0;
	case APX_REC_MEMCPY:	/* the store's, but for a peer copy's devices (p2p.c) */
		return apx_p2p_add_record(m, fi, r);
	case APX_REC_MEMORY: {
		struct apx_an_mem_event e = {
			.ts = v[APX_MEMORY_TS_NS], .addr = v[APX_MEMORY_ADDRESS], .bytes = v[APX_MEMORY_BYTES],
			.op = (uint8_t)(v[APX_MEMORY_OP] <= APX_MEMOP_ALLOC_FAILED ? v[APX_MEMORY_OP] : 0),
			.kind = (uint8_t)(v[APX_MEMORY_MEM_KIND] < APX_MEM__COUNT ? v[APX_MEMORY_MEM_KIND] : 0),
			.device = (uint32_t)v[APX_MEMORY_DEVICE], .file = fi,
			/* files before these fields read 0: no stack, no thread */
			.tid = v[APX_MEMORY_TID],
			.stack = v[APX_MEMORY_STACK] < UINT32_MAX ? (uint32_t)v[APX_MEMORY_STACK] : 0,
			.error = (uint32_t)v[APX_MEMORY_ERROR],
		};

		if (e.op == APX_MEMOP_ALLOC_FAILED)	/* it allocated nothing: bytes 0 */
			e.bytes = v[APX_MEMORY_REQUESTED_BYTES];
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
	case APX_REC_DEVICE: {
		struct apx_an_device *d = device_get(m, fi, (uint32_t)v[APX_DEVICE_ID]);

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
		d->nvlinks = (uint32_t)(v[APX_DEVICE_NVLINK_COUNT] > 1024 ? 1024
					: v[APX_DEVICE_NVLINK_COUNT]);
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
	case APX_REC_PROCESS: {
		struct apx_an_proc p = {
			.pid = v[APX_PROCESS_PID], .ppid = v[APX_PROCESS_PPID],
			.start_ns = v[APX_PROCESS_START_NS], .file = fi,
		};

		copy_bytes(p.comm, sizeof(p.comm), r, APX_PROCESS_COMM, ' ');
		if (p.pid == f->pid && !strcmp(f->producer, "apx-inject"))
			f->has_proc_tree = 1;	/* the collector lists children (proc.c); others
						 * (nvperfd, the Kineto import) name the process only */
		return apx_vec_push(&m->procs, &p);
	}
	case APX_REC_GRAPH: {
		struct apx_an_graph *g;

		if (v[APX_GRAPH_KIND] != APX_GRAPH_LAUNCH || !v[APX_GRAPH_GRAPH_ID])
			return 0;
		g = graph_get(m, fi, v[APX_GRAPH_GRAPH_ID], v[APX_GRAPH_START_NS]);
		if (!g)
			return -ENOMEM;
		g->launches++;
		return 0;
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
		else if (!strcmp(key, "attached")) {
			uint64_t ms = 0;

			f->attached_ms = apx_parse_u64(val, UINT64_MAX / 2, &ms) == 0 && ms ? ms : 1;
		} else if (!strcmp(key, "start_cost")) {
			/* "101.5 ms: ...": the number read as seconds, so its ns are the ms x 1e9 */
			char num[24];
			size_t k = strcspn(val, " ");
			uint64_t x = 0;

			if (k < sizeof(num)) {
				memcpy(num, val, k);
				num[k] = 0;
				if (apx_parse_seconds_ns(num, &x) == 0)
					f->start_cost_us = x / 1000000;
			}
		}
		else if (!strcmp(key, "collector_launch_cost_ns") ||
			 !strcmp(key, "collector_launch_cost_self_ns")) {
			int self = !strcmp(key, "collector_launch_cost_self_ns");
			uint64_t ns = 0;

			/* the cost measured inside the traced process (self_cost.c) over
			 * apx-calibrate's, measured in processes of its own before it */
			if (apx_parse_u64(val, 1000000, &ns) == 0 && (self || !f->launch_cost_self)) {
				f->launch_cost_ns = ns;
				f->launch_cost_self |= self;
			}
		} else if (!strcmp(key, "replay_dram"))
			m->replay_dram |= !strcmp(val, "program-order") ? APX_REPLAY_DRAM_PROGRAM
					  : APX_REPLAY_DRAM_SWEEP;
		else if (!strcmp(key, "cuda_used"))
			f->cuda_used = !strcmp(val, "yes") || !strcmp(val, "1");
		else if (!strcmp(key, "nvperfd.cuda"))	/* "yes" or "not seen" (libcuda not mapped) */
			f->cuda_used = !strcmp(val, "yes");
		else if (!strcmp(key, "capture") || !strcmp(key, "capture_mode"))
			return apx_capture_kv(m, fi, key, val);	/* capture.c */
		if (r->bytes[APX_KV_KEY] && r->v[APX_KV_KEY] > 8 &&
		    !memcmp(r->bytes[APX_KV_KEY], "nvperfd.", 8))
			return apx_observed_add_kv(m, fi, r);
		return 0;
	}
	case APX_REC_METRIC:
		return apx_observed_add_metric(m, f->reader, fi, r);
	case APX_REC_COLLECTIVE: {	/* NCCL's: the ranks' analysis, ranks.c */
		struct apx_an_coll c = {
			.enq = v[APX_COLLECTIVE_ENQUEUE_NS], .start = v[APX_COLLECTIVE_START_NS],
			.end = v[APX_COLLECTIVE_END_NS], .bytes = v[APX_COLLECTIVE_BYTES],
			.comm = v[APX_COLLECTIVE_COMM], .seq = v[APX_COLLECTIVE_SEQ],
			.nranks = (uint32_t)(v[APX_COLLECTIVE_NRANKS] > 1u << 20 ? 1u << 20
					     : v[APX_COLLECTIVE_NRANKS]),
			.rank = (int32_t)apx_rec_i64(r, APX_COLLECTIVE_RANK),
			.device = (int32_t)apx_rec_i64(r, APX_COLLECTIVE_DEVICE),
			.file = fi,
			.func = (uint8_t)(v[APX_COLLECTIVE_FUNC] < APX_COLL__COUNT
					  ? v[APX_COLLECTIVE_FUNC] : APX_COLL_UNKNOWN),
			.algo = (uint8_t)(v[APX_COLLECTIVE_ALGO] < APX_ALGO__COUNT
					  ? v[APX_COLLECTIVE_ALGO] : APX_ALGO_UNKNOWN),
			.proto = (uint8_t)(v[APX_COLLECTIVE_PROTO] < APX_PROTO__COUNT
					   ? v[APX_COLLECTIVE_PROTO] : APX_PROTO_UNKNOWN),
			.flags = (uint8_t)v[APX_COLLECTIVE_FLAGS],
			.dtype = (uint8_t)(v[APX_COLLECTIVE_DATATYPE] < APX_DT__COUNT
					   ? v[APX_COLLECTIVE_DATATYPE] : APX_DT_UNKNOWN),
		};

		if (c.end <= c.start)	/* no GPU times (or nonsense): the enqueue only */
			c.start = c.end = 0;
		if (apx_rec_i64(r, APX_COLLECTIVE_RANK) < -1 ||
		    apx_rec_i64(r, APX_COLLECTIVE_RANK) > 1 << 20)
			c.rank = -1;
		if (apx_rec_i64(r, APX_COLLECTIVE_DEVICE) < -1 ||
		    apx_rec_i64(r, APX_COLLECTIVE_DEVICE) > 1 << 20)
			c.device = -1;
		return apx_vec_push(&m->colls, &c);
	}
	case APX_REC_HEAP:	/* host heap samples: heap.c */
		return apx_heap_add_record(m, fi, r);
	case APX_REC_COUNTER: {	/* a replayed launch's counter: joined to its kernel later */
		size_t len = 0;
		const char *name = apx_reader_string(f->reader, v[APX_COUNTER_NAME], &len);
		struct apx_an_counter c = {
			.corr = v[APX_COUNTER_CORRELATION], .value = apx_rec_f64(r, APX_COUNTER_VALUE),
			.file = fi, .metric = (int16_t)(name ? apx_kc_index(name, len) : -1),
			.passes = (uint16_t)(v[APX_COUNTER_PASSES] > UINT16_MAX ? UINT16_MAX
										: v[APX_COUNTER_PASSES]),
		};

		return c.metric < 0 ? 0 : apx_vec_push(&m->counters, &c);
	}
	default:
		return 0;
	}
}

/* First and last timestamp of a record, for spans; 0 when the type has none: field 0 is a time
 * when it is a delta named *_ns (a COUNTER's is a correlation id, a FRAME's or STACK's an id). */
static void record_span(const struct apx_rec *r, uint64_t *lo, uint64_t *hi)
{
	const struct apx_rec_schema *s = apx_schema(r->type);
	size_t n = s ? strlen(s->fields[0].name) : 0;
	uint64_t a, b;

	if (!s || s->fields[0].kind != APX_FK_DELTA || n < 3 ||
	    strcmp(s->fields[0].name + n - 3, "_ns") || r->type == APX_REC_CPU ||
	    r->type == APX_REC_HEAP)	/* heap samples start before CUDA: not the GPU run's */
		return;
	/* no time: a thread or process whose start is not known, a replayed kernel (the store's
	 * untimed ones); any other record at 0 is on the timelines at 0, so in the run too */
	if (!r->v[0] && (r->type == APX_REC_THREAD || r->type == APX_REC_PROCESS ||
			 (r->type == APX_REC_KERNEL && !r->v[APX_KERNEL_END_NS]) ||
			 (r->type == APX_REC_MEMSET && !r->v[APX_MEMSET_END_NS])))
		return;		/* (a memset without times: in flight at a forced flush) */
	a = r->v[0];
	if (a == UINT64_MAX)	/* an activity CUPTI flushed before it began (older collectors) */
		return;
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
 * its damage message when the reader found none), and they count as unreadable. A newer
 * writer's chunk is skipped whole. */
static void on_chunk(void *ctx, uint16_t fi, size_t chunk, int err, const struct apx_diag *d,
		     uint32_t lost)
{
	struct apx_an_file *f = &((struct apx_model *)ctx)->files[fi];

	(void)chunk;
	if (err == -ENOTSUP) {
		f->skipped_chunks++;
		return;
	}
	f->records_unreadable += lost;
	if (f->damage[0])
		return;
	f->status = APX_READ_DAMAGED;
	snprintf(f->damage, sizeof(f->damage), "%s", d->msg);
}

static int on_record(void *ctx, uint16_t fi, const struct apx_rec *r)
{
	struct apx_model *m = ctx;
	struct apx_an_file *f = &m->files[fi];

	f->records++;
	record_span(r, &f->first_ns, &f->last_ns);
	if (r->type == APX_REC_CPU && r->v[APX_CPU_TS_NS] > f->last_ns)
		f->last_ns = r->v[APX_CPU_TS_NS];
	return add_record(m, f, fi, r);
}

static int add_error(struct apx_diag *diag, int err)
{
	if (diag) {
		snprintf(diag->msg, sizeof(diag->msg), err == -E2BIG ? "more than %d files"
			 : "out of memory", APX_AN_MAX_FILES);
		diag->err = err;
	}
	return err;
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

	if (m->nfiles == APX_AN_MAX_FILES || apx_model_store_get(m) < 0) {
		if (!m->twin)
			apx_reader_close(rd);
		return add_error(diag, m->store ? -E2BIG : -ENOMEM);
	}
	f = &m->files[m->nfiles];
	memset(f, 0, sizeof(*f));
	f->path = strdup(name);
	if (!f->path) {
		if (!m->twin)
			apx_reader_close(rd);
		return add_error(diag, -ENOMEM);
	}
	f->reader = rd;
	f->status = apx_reader_status(rd);
	if (apx_reader_damage(rd))
		snprintf(f->damage, sizeof(f->damage), "%s", apx_reader_damage(rd)->msg);
	read_header(f);
	/* the store reads the records in apx_model_finish(), through on_record(); its file
	 * indices are the model's */
	if (apx_store_add_reader(m->store, f->path, rd, diag) < 0) {
		free(f->path);
		return add_error(diag, -ENOMEM);
	}
	m->nfiles++;
	return 0;
}
