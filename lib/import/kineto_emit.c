/*
 * kineto_emit.c - pass 2 of the Kineto importer: each traceEvents element becomes the .apx
 * record apx's own collector would have written (docs/report.md, "Kineto JSON traces"):
 * kernel -> KERNEL, gpu_memcpy -> MEMCPY, gpu_memset -> MEMSET, cuda_runtime/cuda_driver ->
 * API (and SYNC for the cudaXSynchronize calls when the trace has no cuda_sync records),
 * cuda_sync -> SYNC, user_annotation and ProfilerStep#N -> MARKER ranges; then one THREAD
 * record per CPU thread and a PROCESS record. Called by kineto_walk.c; writes through the
 * apx_writer of struct apx_ki.
 */
#include "import/kineto_int.h"

#include <errno.h>
#include <string.h>

#include "base/banned.h"

static int has(const struct apx_kev *ev, unsigned arg)
{
	return (ev->have >> arg) & 1;
}

static uint64_t arg_or(const struct apx_kev *ev, unsigned arg, uint64_t dflt)
{
	return has(ev, arg) ? (uint64_t)ev->arg[arg] : dflt;
}

/* Start and end on the trace clock: base + ts, checked. */
static int span(struct apx_ki *ki, const struct apx_kev *ev, uint64_t *start, uint64_t *end)
{
	int64_t s, dur = ev->has_dur ? ev->dur_ns : 0;

	if (dur < 0) {
		ki->negative_dur++;
		dur = 0;
	}
	if (__builtin_add_overflow(ki->base_ns, ev->ts_ns, &s) || s < 0 || s > INT64_MAX - dur)
		return apx_jp_fail(&ki->jp, ev->off, -EOVERFLOW, "ts of this event is out of range "
				   "(before 1970 or after 2262, with baseTimeNanoseconds)");
	*start = (uint64_t)s;
	*end = (uint64_t)(s + dur);
	return 0;
}

static int name_id(struct apx_ki *ki, const struct apx_kev *ev, uint64_t *ret)
{
	uint32_t id = 0;
	int r = apx_writer_intern(ki->w, ev->name, ev->name_len, &id);

	*ret = id;
	return r;
}

static uint64_t tid_of(const struct apx_kev *ev)
{
	return ev->tid_num && ev->tid > 0 ? (uint64_t)ev->tid : 0;
}

/* GPU rows: the device from args, else Kineto's pid of the row (the device ordinal). */
static uint64_t device_of(const struct apx_kev *ev)
{
	if (has(ev, APX_KARG_DEVICE) && ev->arg[APX_KARG_DEVICE] >= 0)
		return (uint64_t)ev->arg[APX_KARG_DEVICE];
	return ev->pid_num && ev->pid >= 0 && ev->pid < 1024 ? (uint64_t)ev->pid : 0;
}

static uint64_t stream_of(const struct apx_kev *ev)
{
	return arg_or(ev, APX_KARG_STREAM, ev->tid_num ? (uint64_t)ev->tid : 0);
}

/* Asynchronous copy or memset, from its API call (correlation); unknown counts as async. */
static uint64_t async_flag(struct apx_ki *ki, const struct apx_kev *ev)
{
	uint8_t f = has(ev, APX_KARG_CORRELATION)
		? apx_ki_corr_get(ki, (uint64_t)ev->arg[APX_KARG_CORRELATION]) : 0;

	if (!(f & APX_KI_CORR_USED)) {
		ki->async_unknown++;
		return 1;
	}
	return (f & APX_KI_CORR_ASYNC) ? 1 : 0;
}

/* Kernels, copies and memsets share their first six fields: start, end, device, context,
 * stream, correlation (include/apx/format.h). */
_Static_assert(APX_KERNEL_START_NS == 0 && APX_KERNEL_END_NS == 1 && APX_KERNEL_DEVICE == 2 &&
	       APX_KERNEL_CONTEXT == 3 && APX_KERNEL_STREAM == 4 && APX_KERNEL_CORRELATION == 5 &&
	       APX_MEMCPY_DEVICE == 2 && APX_MEMCPY_CONTEXT == 3 && APX_MEMCPY_STREAM == 4 &&
	       APX_MEMCPY_CORRELATION == 5 && APX_MEMSET_DEVICE == 2 && APX_MEMSET_CONTEXT == 3 &&
	       APX_MEMSET_STREAM == 4 && APX_MEMSET_CORRELATION == 5, "GPU records' common fields");

static int gpu_rec(struct apx_ki *ki, const struct apx_kev *ev, struct apx_rec *rec,
		   unsigned type)
{
	uint64_t *v = rec->v;

	apx_rec_init(rec, type);
	if (span(ki, ev, &v[APX_KERNEL_START_NS], &v[APX_KERNEL_END_NS]) < 0)
		return -EOVERFLOW;
	v[APX_KERNEL_DEVICE] = device_of(ev);
	v[APX_KERNEL_CONTEXT] = arg_or(ev, APX_KARG_CONTEXT, 0);
	v[APX_KERNEL_STREAM] = stream_of(ev);
	v[APX_KERNEL_CORRELATION] = arg_or(ev, APX_KARG_CORRELATION, 0);
	return 0;
}

static int kernel(struct apx_ki *ki, const struct apx_kev *ev, struct apx_rec *rec)
{
	uint64_t *v = rec->v;

	if (gpu_rec(ki, ev, rec, APX_REC_KERNEL) < 0)
		return -EOVERFLOW;
	for (int i = 0; i < 3; i++) {	/* 0: not in the trace */
		v[APX_KERNEL_GRID_X + i] = has(ev, APX_KARG_GRID) ? (uint64_t)ev->arg[APX_KARG_GRID + i] : 0;
		v[APX_KERNEL_BLOCK_X + i] = has(ev, APX_KARG_BLOCK) ? (uint64_t)ev->arg[APX_KARG_BLOCK + i]
								 : 0;
	}
	v[APX_KERNEL_REGISTERS] = arg_or(ev, APX_KARG_REGISTERS, 0);
	v[APX_KERNEL_STATIC_SMEM] = arg_or(ev, APX_KARG_SMEM, 0);	/* static + dynamic */
	ki->kernels++;
	return name_id(ki, ev, &v[APX_KERNEL_NAME]);
}

static int memcpy_rec(struct apx_ki *ki, const struct apx_kev *ev, struct apx_rec *rec)
{
	uint64_t *v = rec->v;
	unsigned kind, src, dst;

	if (gpu_rec(ki, ev, rec, APX_REC_MEMCPY) < 0)
		return -EOVERFLOW;
	apx_kname_memcpy(ev->name, &kind, &src, &dst);
	v[APX_MEMCPY_COPY_KIND] = kind;
	v[APX_MEMCPY_SRC_KIND] = src;
	v[APX_MEMCPY_DST_KIND] = dst;
	v[APX_MEMCPY_BYTES] = arg_or(ev, APX_KARG_BYTES, 0);
	v[APX_MEMCPY_FLAGS] = async_flag(ki, ev);
	if ((kind == APX_COPY_H2D && !src) || (kind == APX_COPY_D2H && !dst) || !kind)
		ki->copies_no_host_kind++;
	ki->copies++;
	return 0;
}

static int memset_rec(struct apx_ki *ki, const struct apx_kev *ev, struct apx_rec *rec)
{
	uint64_t *v = rec->v;

	if (gpu_rec(ki, ev, rec, APX_REC_MEMSET) < 0)
		return -EOVERFLOW;
	v[APX_MEMSET_BYTES] = arg_or(ev, APX_KARG_BYTES, 0);
	v[APX_MEMSET_MEM_KIND] = apx_kname_mem_kind(ev->name);
	v[APX_MEMSET_FLAGS] = async_flag(ki, ev);
	ki->memsets++;
	return 0;
}

static int sync_rec(struct apx_ki *ki, const struct apx_kev *ev, unsigned kind, uint64_t stream,
		    uint64_t tid)
{
	struct apx_rec rec;
	uint64_t *v = rec.v;

	apx_rec_init(&rec, APX_REC_SYNC);
	if (span(ki, ev, &v[APX_SYNC_START_NS], &v[APX_SYNC_END_NS]) < 0)
		return -EOVERFLOW;
	v[APX_SYNC_KIND] = kind;
	v[APX_SYNC_CONTEXT] = arg_or(ev, APX_KARG_CONTEXT, 0);
	v[APX_SYNC_STREAM] = stream;
	v[APX_SYNC_CORRELATION] = arg_or(ev, APX_KARG_CORRELATION, 0);
	v[APX_SYNC_TID] = tid;
	return apx_writer_add(ki->w, &rec);
}

static int api(struct apx_ki *ki, const struct apx_kev *ev, struct apx_rec *rec)
{
	uint64_t *v = rec->v;
	unsigned sync;
	int r;

	apx_rec_init(rec, APX_REC_API);
	if (span(ki, ev, &v[APX_API_START_NS], &v[APX_API_END_NS]) < 0)
		return -EOVERFLOW;
	v[APX_API_DOMAIN] = ev->cat == APX_KCAT_DRIVER ? APX_API_DRIVER : APX_API_RUNTIME;
	v[APX_API_CBID] = arg_or(ev, APX_KARG_CBID, 0);
	v[APX_API_CORRELATION] = arg_or(ev, APX_KARG_CORRELATION, 0);
	v[APX_API_TID] = tid_of(ev);
	ki->api++;
	if ((r = name_id(ki, ev, &v[APX_API_NAME])) < 0)
		return r;
	if (ki->cupti_syncs || !(sync = apx_kname_api_sync(ev->name)))
		return 0;
	ki->api_syncs++;
	return sync_rec(ki, ev, sync, 0, tid_of(ev));
}

static int marker(struct apx_ki *ki, const struct apx_kev *ev, struct apx_rec *rec)
{
	uint64_t *v = rec->v;

	apx_rec_init(rec, APX_REC_MARKER);
	if (span(ki, ev, &v[APX_MARKER_START_NS], &v[APX_MARKER_END_NS]) < 0)
		return -EOVERFLOW;
	v[APX_MARKER_ID] = ++ki->markers;
	v[APX_MARKER_TID] = tid_of(ev);
	v[APX_MARKER_KIND] = APX_MARKER_RANGE;
	return name_id(ki, ev, &v[APX_MARKER_NAME]);
}

/* The args each category's records take (an unreadable one is an error only there). */
static uint32_t args_used(enum apx_kcat cat)
{
	const uint32_t gpu = 1u << APX_KARG_DEVICE | 1u << APX_KARG_CONTEXT | 1u << APX_KARG_STREAM |
			     1u << APX_KARG_CORRELATION | 1u << APX_KARG_ARGS;

	switch (cat) {
	case APX_KCAT_KERNEL:
		return gpu | 1u << APX_KARG_REGISTERS | 1u << APX_KARG_SMEM | 1u << APX_KARG_GRID |
		       1u << APX_KARG_BLOCK;
	case APX_KCAT_MEMCPY:
	case APX_KCAT_MEMSET:
		return gpu | 1u << APX_KARG_BYTES;
	case APX_KCAT_SYNC:
		return gpu;
	case APX_KCAT_RUNTIME:
	case APX_KCAT_DRIVER:
		return 1u << APX_KARG_CORRELATION | 1u << APX_KARG_CBID | 1u << APX_KARG_ARGS;
	default:
		return 0;
	}
}

int apx_ki_emit(struct apx_ki *ki, const struct apx_kev *ev)
{
	struct apx_rec rec;
	int r;

	if (ev->ph != 'X')
		return 0;
	if (!ev->has_ts)
		return apx_jp_fail(&ki->jp, ev->off, -EBADMSG, "a complete (\"ph\": \"X\") event "
				   "without \"ts\"");
	if (ev->bad_args & args_used(ev->cat)) {
		unsigned a = (unsigned)__builtin_ctz(ev->bad_args & args_used(ev->cat));

		return apx_jp_fail(&ki->jp, ev->bad_off[a], -EBADMSG, "%s", ev->bad[a]);
	}
	if (ev->cat == APX_KCAT_SYNC) {
		unsigned kind = apx_kname_sync_kind(ev->sync_kind[0] ? ev->sync_kind : ev->name);
		int64_t s = has(ev, APX_KARG_STREAM) ? ev->arg[APX_KARG_STREAM] : 0;

		/* stream -1 / 0xffffffff: the wait was on no one stream (context, event) */
		return sync_rec(ki, ev, kind, s < 0 || s == UINT32_MAX ? 0 : (uint64_t)s, 0);
	}
	switch (ev->cat) {
	case APX_KCAT_KERNEL:
		r = kernel(ki, ev, &rec);
		break;
	case APX_KCAT_MEMCPY:
		r = memcpy_rec(ki, ev, &rec);
		break;
	case APX_KCAT_MEMSET:
		r = memset_rec(ki, ev, &rec);
		break;
	case APX_KCAT_RUNTIME:
	case APX_KCAT_DRIVER:
		r = api(ki, ev, &rec);
		break;
	default:
		if (ev->cat == APX_KCAT_ANNOTATION ||
		    (ev->pid_num && !strncmp(ev->name, "ProfilerStep#", 13))) {
			r = marker(ki, ev, &rec);
			break;
		}
		return 0;	/* cpu_op, python_function, flows...: not mapped */
	}
	return r < 0 ? r : apx_writer_add(ki->w, &rec);
}

int apx_ki_emit_threads(struct apx_ki *ki)
{
	struct apx_rec rec;
	int r;

	for (size_t i = 0; i < ki->nthreads; i++) {
		const struct apx_ki_thread *t = &ki->threads[i];

		apx_rec_init(&rec, APX_REC_THREAD);
		rec.v[APX_THREAD_PID] = (uint64_t)t->pid;
		rec.v[APX_THREAD_TID] = (uint64_t)t->tid;
		apx_rec_set_str(&rec, APX_THREAD_NAME, t->name[0] ? t->name : NULL);
		if ((r = apx_writer_add(ki->w, &rec)) < 0)
			return r;
	}
	if (!ki->has_pid)
		return 0;
	apx_rec_init(&rec, APX_REC_PROCESS);
	rec.v[APX_PROCESS_PID] = (uint64_t)ki->pid;
	apx_rec_set_str(&rec, APX_PROCESS_COMM, ki->process_name[0] ? ki->process_name : NULL);
	rec.v[APX_PROCESS_USES_CUDA] = ki->kernels || ki->copies || ki->api ? 1 : 2;
	return apx_writer_add(ki->w, &rec);
}
