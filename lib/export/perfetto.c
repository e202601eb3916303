/*
 * perfetto.c - `apx export --format perfetto`: the event store as Perfetto's native protobuf
 * trace (a `Trace` of `TracePacket`s with TrackDescriptors and TrackEvents, field numbers of
 * protos/perfetto/trace/perfetto_trace.proto), laid out on tracks by walk.c: a process track
 * per file with its thread tracks (ThreadDescriptors with OS tids where the trace has them), a
 * GPU track per device with a track per stream (kernels and the NVTX ranges projected onto it),
 * counter tracks with their unit (CounterDescriptor.unit, else unit_name); slices as
 * SLICE_BEGIN/SLICE_END pairs in time order, flows from each launch to its GPU work and from a
 * GPU operation to the operation of another stream that waited for it (walk.h: flow_ids on the
 * awaited slice, terminating_flow_ids on the waiting one; a slice may carry several), kernel and
 * annotation names interned on the one sequence. Every track's parent is described before it.
 * Times are ns since the run's start. Called through the exporter table (export.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/pb.h"
#include "export/stacktext.h"
#include "export/walk.h"

#include "base/banned.h"

/* field numbers (perfetto_trace.proto) */
enum {
	TRACE_PACKET = 1,
	TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11, TP_INTERNED = 12, TP_SEQ_FLAGS = 13,
	TP_TRACK_DESCRIPTOR = 60, TP_PERF_SAMPLE = 66,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
	PD_PID = 1, PD_NAME = 6,
	THD_PID = 1, THD_TID = 2, THD_NAME = 5,
	CD_UNIT = 3, CD_UNIT_NAME = 6,
	CD_UNIT_TIME_NS = 1, CD_UNIT_COUNT = 2, CD_UNIT_SIZE_BYTES = 3,
	TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11, TE_CATEGORIES = 22, TE_NAME = 23,
	TE_DOUBLE_COUNTER = 44, TE_FLOW = 47, TE_FLOW_END = 48,
	TE_BEGIN = 1, TE_END = 2, TE_INSTANT = 3, TE_COUNTER = 4,
	DA_NAME_IID = 1, DA_UINT = 3, DA_DOUBLE = 5, DA_STRING = 6,
	ID_EVENT_NAMES = 2, ID_ANNOTATION_NAMES = 3, EN_IID = 1, EN_NAME = 2,
	SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2,
	SEQ_ID = 1,
	/* Python stacks as Perfetto callstacks (profile_common.proto, interned_data.proto,
	 * profile_packet.proto's PerfSample) */
	ID_FUNCTION_NAMES = 5, ID_FRAMES = 6, ID_CALLSTACKS = 7, ID_BUILD_IDS = 16,
	ID_MAPPING_PATHS = 17, ID_MAPPINGS = 19,
	IS_IID = 1, IS_STR = 2,
	MAP_IID = 1, MAP_BUILD_ID = 2, MAP_START = 4, MAP_END = 5, MAP_PATH_IDS = 7,
	FR_IID = 1, FR_FUNCTION_NAME_ID = 2, FR_MAPPING_ID = 3, FR_REL_PC = 4,
	CS_IID = 1, CS_FRAME_IDS = 2,
	PS_PID = 2, PS_TID = 3, PS_CALLSTACK_IID = 4, PS_CPU_MODE = 5, CPU_MODE_USER = 2,
};

/* debug annotation names, interned once in the first packet (iid = index + 1) */
enum { AN_CORRELATION, AN_STREAM, AN_GRID, AN_BLOCK, AN_REGISTERS, AN_SMEM, AN_BYTES, AN_BW,
       AN_STACK, AN_TRIMMED, AN_NAME_CUT, AN__COUNT };
static const char *const annotation_names[AN__COUNT] = {
	"correlation", "stream", "grid", "block", "registers per thread", "shared memory", "bytes",
	"memory bandwidth (GB/s)", "stack", "end trimmed (ns)", "name cut (bytes)",
};

struct pf {
	struct apx_store *st;
	FILE *f;
	struct apx_pb b;
	uint8_t *interned;		/* per store string: its name iid was emitted */
	int first;
	/* Python stacks: the "stack" argument, and thread samples as PerfSamples */
	struct apx_stacktext stx;
	size_t next_sample;		/* store samples before it are written */
	uint8_t *frame_done, *stack_done;	/* per store frame / stack: interned */
	int mapping_done;
};

/* Write the packet built in b, then empty b. */
static int flush_packet(struct pf *p)
{
	uint8_t hdr[16];
	size_t n = 0, len = p->b.n;

	if (p->b.err)
		return p->b.err;
	hdr[n++] = TRACE_PACKET << 3 | 2;
	do {
		hdr[n++] = (uint8_t)((len & 0x7f) | (len >= 0x80 ? 0x80 : 0));
		len >>= 7;
	} while (len);
	if (fwrite_unlocked(hdr, 1, n, p->f) != n ||
	    fwrite_unlocked(p->b.p, 1, p->b.n, p->f) != p->b.n)
		return -EIO;
	apx_pb_reset(&p->b);
	return 0;
}

/* interned: the packet refers to interned names (kernel names, annotation names) */
static void packet_start(struct pf *p, uint64_t ts, int interned)
{
	if (ts != UINT64_MAX)
		apx_pb_uint(&p->b, TP_TIMESTAMP, ts);
	apx_pb_uint(&p->b, TP_SEQ_ID, SEQ_ID);
	if (p->first) {		/* interned names start afresh on this sequence */
		apx_pb_uint(&p->b, TP_SEQ_FLAGS, SEQ_CLEARED | SEQ_NEEDS_STATE);
		apx_pb_begin(&p->b, TP_INTERNED);
		for (unsigned i = 0; i < AN__COUNT; i++) {
			if (i == AN_STACK && !p->st->nstacks)
				continue;	/* traces without stacks: as before them */
			apx_pb_begin(&p->b, ID_ANNOTATION_NAMES);
			apx_pb_uint(&p->b, EN_IID, i + 1);
			apx_pb_string(&p->b, EN_NAME, annotation_names[i], strlen(annotation_names[i]));
			apx_pb_end(&p->b);
		}
		apx_pb_end(&p->b);
		p->first = 0;
	} else if (interned) {
		apx_pb_uint(&p->b, TP_SEQ_FLAGS, SEQ_NEEDS_STATE);
	}
}

/* ---- thread samples as PerfSamples with interned callstacks ---- */

static void interned_string(struct apx_pb *b, unsigned field, uint64_t iid, const char *s,
			    size_t len)
{
	apx_pb_begin(b, field);
	apx_pb_uint(b, IS_IID, iid);
	apx_pb_string(b, IS_STR, s, len);
	apx_pb_end(b);
}

/* The frames and the callstack of store stack s (stacks[] + 1), interned on the sequence in
 * the packet being built: frame iid = store frame + 1, named "func (file:line)" (the file's
 * last component; trace_processor shows function names only), all in one mapping "python"
 * (trace_processor needs a frame's mapping); callstack iid = s, outermost frame first (its
 * frame_ids are root first: depth 0 is the first). */
static void intern_stack(struct pf *p, uint32_t s)
{
	const struct apx_store *st = p->st;
	const struct apx_es_stack *sk = apx_store_stack(st, s);
	struct apx_pb *b = &p->b;
	char name[1100];

	apx_pb_begin(b, TP_INTERNED);
	if (!p->mapping_done) {
		p->mapping_done = 1;
		interned_string(b, ID_BUILD_IDS, 1, "", 0);
		interned_string(b, ID_MAPPING_PATHS, 1, "python", 6);
		apx_pb_begin(b, ID_MAPPINGS);
		apx_pb_uint(b, MAP_IID, 1);
		apx_pb_uint(b, MAP_BUILD_ID, 1);
		apx_pb_uint(b, MAP_START, 0);
		apx_pb_uint(b, MAP_END, UINT64_MAX);
		apx_pb_uint(b, MAP_PATH_IDS, 1);
		apx_pb_end(b);
	}
	for (uint16_t j = 0; j < sk->depth; j++) {
		uint32_t fi = st->stack_frames[sk->first + j];
		const struct apx_es_frame *f = &st->frames[fi];
		struct apx_es_text file = apx_store_string(st, f->file);
		struct apx_es_text func = apx_store_string(st, f->func);
		uint32_t base = file.len;
		int n;

		if (p->frame_done[fi])
			continue;
		p->frame_done[fi] = 1;
		while (base && file.p[base - 1] != '/')
			base--;
		n = snprintf(name, sizeof(name), "%.*s (%.*s:%u)", (int)(func.len > 512 ? 512 : func.len),
			     func.p, (int)(file.len - base > 512 ? 512 : file.len - base),
			     file.p + base, f->line);
		interned_string(b, ID_FUNCTION_NAMES, (uint64_t)fi + 1, name,
				n < 0 ? 0 : (size_t)n < sizeof(name) ? (size_t)n : sizeof(name) - 1);
		apx_pb_begin(b, ID_FRAMES);
		apx_pb_uint(b, FR_IID, (uint64_t)fi + 1);
		apx_pb_uint(b, FR_FUNCTION_NAME_ID, (uint64_t)fi + 1);
		apx_pb_uint(b, FR_MAPPING_ID, 1);
		apx_pb_uint(b, FR_REL_PC, (uint64_t)fi + 1);
		apx_pb_end(b);
	}
	apx_pb_begin(b, ID_CALLSTACKS);
	apx_pb_uint(b, CS_IID, s);
	for (uint16_t j = sk->depth; j-- > 0;)	/* not packed: trace_processor reads them one
						 * by one */
		apx_pb_uint(b, CS_FRAME_IDS, (uint64_t)st->stack_frames[sk->first + j] + 1);
	apx_pb_end(b);
	apx_pb_end(b);
	p->stack_done[s - 1] = 1;
}

/* Write the samples (store.h: sorted by time) up to rel_ts (ns since the run's start), in
 * time order with the track events: a PerfSample of (pid, tid, callstack) each; samples
 * without a Python stack carry no callstack and are left out. */
static int samples_until(struct pf *p, uint64_t rel_ts)
{
	const struct apx_store *st = p->st;
	int r;

	while (p->next_sample < st->smp.n) {
		size_t i = p->next_sample;
		uint64_t ts = apx_export_rel_ns(st, st->smp.ts[i]);
		uint32_t s = st->smp.stack[i];
		const struct apx_es_thread *t;

		if (ts > rel_ts)
			break;
		p->next_sample++;
		if (!apx_store_stack(st, s) || st->smp.thread[i] >= st->nthreads)
			continue;
		if (p->first) {		/* the sequence's first packet clears its state alone */
			packet_start(p, ts, 0);
			if ((r = flush_packet(p)) < 0)
				return r;
		}
		t = &st->threads[st->smp.thread[i]];
		packet_start(p, ts, 1);
		if (!p->stack_done[s - 1])
			intern_stack(p, s);
		apx_pb_begin(&p->b, TP_PERF_SAMPLE);
		apx_pb_uint(&p->b, PS_PID, (uint32_t)st->files[t->file].pid);
		apx_pb_uint(&p->b, PS_TID, (uint32_t)t->tid);
		apx_pb_uint(&p->b, PS_CALLSTACK_IID, s);
		apx_pb_uint(&p->b, PS_CPU_MODE, CPU_MODE_USER);
		apx_pb_end(&p->b);
		if ((r = flush_packet(p)) < 0)
			return r;
	}
	return 0;
}

/* A counter track's CounterDescriptor: Perfetto's unit where it has one (bytes, ns, count),
 * else the trace's own word as unit_name ("%", "W", "MHz", "B/s"). */
static void counter_unit(struct apx_pb *b, const struct apx_wk_track *t)
{
	static const struct {
		const char *word;
		unsigned unit;
	} builtin[] = {
		{ "bytes", CD_UNIT_SIZE_BYTES }, { "B", CD_UNIT_SIZE_BYTES },
		{ "byte", CD_UNIT_SIZE_BYTES }, { "ns", CD_UNIT_TIME_NS },
		{ "count", CD_UNIT_COUNT },
	};
	const char *u = t->unit ? t->unit : "";
	unsigned unit = t->is_bytes ? CD_UNIT_SIZE_BYTES : 0;

	for (size_t i = 0; !unit && i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (!strcmp(u, builtin[i].word))
			unit = builtin[i].unit;
	apx_pb_begin(b, TD_COUNTER);
	if (unit)
		apx_pb_uint(b, CD_UNIT, unit);
	else if (*u)
		apx_pb_string(b, CD_UNIT_NAME, u, strlen(u));
	apx_pb_end(b);
}

static int pf_track(void *ctx, const struct apx_wk_track *t)
{
	struct pf *p = ctx;

	packet_start(p, UINT64_MAX, 0);
	apx_pb_begin(&p->b, TP_TRACK_DESCRIPTOR);
	apx_pb_uint(&p->b, TD_UUID, t->uuid);
	if (t->parent)
		apx_pb_uint(&p->b, TD_PARENT, t->parent);
	switch (t->kind) {
	case APX_WK_PROCESS:
		apx_pb_begin(&p->b, TD_PROCESS);
		apx_pb_int(&p->b, PD_PID, (int64_t)(int32_t)t->pid);
		apx_pb_string(&p->b, PD_NAME, t->name, strlen(t->name));
		apx_pb_end(&p->b);
		break;
	case APX_WK_THREAD:
		if (t->lane == 0 && t->tid) {	/* tid 0: not recorded, a named track instead */
			apx_pb_begin(&p->b, TD_THREAD);
			apx_pb_int(&p->b, THD_PID, (int64_t)(int32_t)t->pid);
			apx_pb_int(&p->b, THD_TID, (int64_t)t->tid);
			apx_pb_string(&p->b, THD_NAME, t->name, strlen(t->name));
			apx_pb_end(&p->b);
			break;
		}
		/* further lanes are named child tracks, as below */
		__attribute__((fallthrough));
	default:
		apx_pb_string(&p->b, TD_NAME, t->name, strlen(t->name));
		if (t->kind == APX_WK_COUNTER)
			counter_unit(&p->b, t);
		break;
	}
	apx_pb_end(&p->b);
	return flush_packet(p);
}

static void annotation_uint(struct apx_pb *b, unsigned name, uint64_t v)
{
	apx_pb_begin(b, TE_DEBUG);
	apx_pb_uint(b, DA_NAME_IID, name + 1);
	apx_pb_uint(b, DA_UINT, v);
	apx_pb_end(b);
}

static void annotation_str(struct apx_pb *b, unsigned name, const char *v)
{
	apx_pb_begin(b, TE_DEBUG);
	apx_pb_uint(b, DA_NAME_IID, name + 1);
	apx_pb_string(b, DA_STRING, v, strlen(v));
	apx_pb_end(b);
}

/* "[132, 1, 1]" without snprintf (two a kernel) */
static const char *dims(char *buf, const uint32_t d[3])
{
	char *o = buf;

	*o++ = '[';
	for (int i = 0; i < 3; i++) {
		char t[12];
		int n = 0;
		uint32_t v = d[i];

		do {
			t[n++] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		while (n)
			*o++ = t[--n];
		if (i < 2) {
			*o++ = ',';
			*o++ = ' ';
		}
	}
	*o++ = ']';
	*o = 0;
	return buf;
}

/* The Python stack of a kernel, copy, memset, sync or (through its GPU work) API call, as a
 * "stack" argument: "file:line func; ..." innermost first (stacktext.h). */
static void stack_annotation(struct pf *p, const struct apx_wk_slice *s)
{
	uint32_t stack = apx_stacktext_slice_stack(p->st, s);
	const char *text;

	if ((text = apx_stacktext(&p->stx, stack)))
		annotation_str(&p->b, AN_STACK, text);
}

static void annotations(struct pf *p, const struct apx_wk_slice *s)
{
	const struct apx_store *st = p->st;
	struct apx_pb *b = &p->b;
	char buf[64];

	switch (s->type) {
	case APX_ES_KERNEL: {
		const struct apx_es_launch *l = &st->launches[st->k.launch[s->index]];

		annotation_uint(b, AN_CORRELATION, st->k.corr[s->index]);
		annotation_uint(b, AN_STREAM, st->streams[st->k.stream[s->index]].id);
		annotation_str(b, AN_GRID, dims(buf, l->grid));
		annotation_str(b, AN_BLOCK, dims(buf, l->block));
		annotation_uint(b, AN_REGISTERS, l->regs);
		annotation_uint(b, AN_SMEM, (uint64_t)l->smem_static + l->smem_dynamic);
		break;
	}
	case APX_ES_COPY: {
		uint64_t d = s->end - s->start;

		annotation_uint(b, AN_CORRELATION, st->c.corr[s->index]);
		annotation_uint(b, AN_BYTES, st->c.bytes[s->index]);
		if (d) {
			apx_pb_begin(b, TE_DEBUG);
			apx_pb_uint(b, DA_NAME_IID, AN_BW + 1);
			apx_pb_double(b, DA_DOUBLE, (double)st->c.bytes[s->index] / (double)d);
			apx_pb_end(b);
		}
		break;
	}
	case APX_ES_MEMSET:
		annotation_uint(b, AN_CORRELATION, st->s.corr[s->index]);
		annotation_uint(b, AN_BYTES, st->s.bytes[s->index]);
		break;
	case APX_ES_API:
		annotation_uint(b, AN_CORRELATION, st->a.corr[s->index]);
		break;
	default:
		break;
	}
	if (s->trimmed_ns)
		annotation_uint(b, AN_TRIMMED, s->trimmed_ns);
	if (s->name_len)
		annotation_uint(b, AN_NAME_CUT, s->name_len);
	stack_annotation(p, s);
}

/* The event's name: interned for kernels (their names repeat), inline for the rest. */
static void event_name(struct pf *p, const struct apx_wk_slice *s)
{
	if (s->type == APX_ES_KERNEL) {
		uint32_t id = p->st->k.name[s->index];

		apx_pb_uint(&p->b, TE_NAME_IID, (uint64_t)id + 1);
		return;
	}
	apx_pb_string(&p->b, TE_NAME, s->name, strlen(s->name));
}

static int pf_slice(void *ctx, const struct apx_wk_slice *s)
{
	struct pf *p = ctx;
	int r;

	if ((r = samples_until(p, s->start)) < 0)
		return r;

	packet_start(p, s->start, 1);
	if (s->type == APX_ES_KERNEL && !p->interned[p->st->k.name[s->index]]) {
		uint32_t id = p->st->k.name[s->index];

		p->interned[id] = 1;
		apx_pb_begin(&p->b, TP_INTERNED);
		apx_pb_begin(&p->b, ID_EVENT_NAMES);
		apx_pb_uint(&p->b, EN_IID, (uint64_t)id + 1);
		apx_pb_string(&p->b, EN_NAME, s->name, strlen(s->name));
		apx_pb_end(&p->b);
		apx_pb_end(&p->b);
	}
	apx_pb_begin(&p->b, TP_TRACK_EVENT);
	apx_pb_uint(&p->b, TE_TYPE, s->instant ? TE_INSTANT : TE_BEGIN);
	apx_pb_uint(&p->b, TE_TRACK, s->track);
	apx_pb_string(&p->b, TE_CATEGORIES, s->category, strlen(s->category));
	event_name(p, s);
	annotations(p, s);
	if (s->flow_out)
		apx_pb_fixed64(&p->b, TE_FLOW, s->flow_out);
	if (s->flow_in)
		apx_pb_fixed64(&p->b, TE_FLOW_END, s->flow_in);
	for (uint32_t k = 0; k < s->nwait_out; k++)
		apx_pb_fixed64(&p->b, TE_FLOW, s->wait_out + k);
	if (s->wait_in)
		apx_pb_fixed64(&p->b, TE_FLOW_END, s->wait_in);
	apx_pb_end(&p->b);
	return flush_packet(p);
}

static int pf_end(void *ctx, uint64_t track, uint64_t ts)
{
	struct pf *p = ctx;
	int r;

	if ((r = samples_until(p, ts)) < 0)
		return r;

	packet_start(p, ts, 0);
	apx_pb_begin(&p->b, TP_TRACK_EVENT);
	apx_pb_uint(&p->b, TE_TYPE, TE_END);
	apx_pb_uint(&p->b, TE_TRACK, track);
	apx_pb_end(&p->b);
	return flush_packet(p);
}

static int pf_counter(void *ctx, uint64_t track, uint64_t ts, double value)
{
	struct pf *p = ctx;
	int r;

	if ((r = samples_until(p, ts)) < 0)
		return r;

	packet_start(p, ts, 0);
	apx_pb_begin(&p->b, TP_TRACK_EVENT);
	apx_pb_uint(&p->b, TE_TYPE, TE_COUNTER);
	apx_pb_uint(&p->b, TE_TRACK, track);
	apx_pb_double(&p->b, TE_DOUBLE_COUNTER, value);
	apx_pb_end(&p->b);
	return flush_packet(p);
}

static int perfetto_write(struct apx_store *st, const struct apx_export_waits *waits,
			  const char *path, struct apx_diag *diag)
{
	struct pf p = { .st = st, .first = 1 };
	struct apx_wk_ops ops = { &p, pf_track, pf_slice, pf_counter, pf_end };
	int r;

	p.interned = calloc(st->nstrings + 1, 1);
	p.frame_done = calloc(st->nframes + 1, 1);
	p.stack_done = calloc(st->nstacks + 1, 1);
	apx_stacktext_init(&p.stx, st, APX_STACKTEXT_PERFETTO);
	if (!p.interned || !p.frame_done || !p.stack_done) {
		r = -ENOMEM;
		goto out;
	}
	r = apx_export_fopen(path, &p.f, diag);
	if (r < 0)
		goto out;
	setvbuf(p.f, NULL, _IOFBF, 1 << 20);
	r = apx_walk(st, waits, &ops, NULL);
	if (r >= 0)
		r = samples_until(&p, UINT64_MAX);
	if (r >= 0 && p.stx.err)
		r = p.stx.err;
	if (r < 0 && diag && !diag->msg[0])
		snprintf(diag->msg, sizeof(diag->msg), "%s", r == -EIO ? "write failed (disk full?)"
								: strerror(-r));
	if (apx_export_fclose(p.f, path, diag) < 0 && r >= 0)
		r = -EIO;
out:
	apx_pb_free(&p.b);
	apx_stacktext_release(&p.stx);
	free(p.frame_done);
	free(p.stack_done);
	free(p.interned);
	return r;
}

/* Measured on the committed real traces and a generated 10 M-kernel trace: ~130 bytes a
 * kernel (begin with annotations + end), ~110 a copy or memset, ~60 an API call or sync, ~80
 * an NVTX range (and its projection), ~20 a counter sample. */
static uint64_t stack_bytes(const struct apx_store *st, const uint32_t *stack, size_t n)
{
	uint64_t b = 0;

	for (size_t i = 0; stack && st->nstacks && i < n; i++)
		if (stack[i] && stack[i] <= st->nstacks)
			b += (uint64_t)st->stacks[stack[i] - 1].depth * 60 + 8;
	return b;
}

/* ... plus ~60 bytes a frame of a "stack" argument, ~40 a thread sample */
static uint64_t perfetto_estimate(const struct apx_store *st)
{
	return stack_bytes(st, st->k.stack, st->k.n) + stack_bytes(st, st->c.stack, st->c.n) +
	       stack_bytes(st, st->s.stack, st->s.n) + stack_bytes(st, st->y.stack, st->y.n) +
	       st->smp.n * 40 + st->k.n * 130 + (st->c.n + st->s.n) * 110 + (st->a.n + st->y.n) * 60 +
	       st->mk.n * 80 + st->ct.n * 20 + st->nstrings * 120 + 4096;
}

const struct apx_exporter apx_export_perfetto = {
	.name = "perfetto",
	.ext = ".perfetto-trace",
	.summary = "Perfetto protobuf trace (ui.perfetto.dev, trace_processor)",
	.estimate = perfetto_estimate,
	.write = perfetto_write,
};
