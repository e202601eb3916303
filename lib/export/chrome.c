/*
 * chrome.c - `apx export --format chrome`: the event store as a Chrome trace in the shape
 * torch.profiler (Kineto) writes, so that chrome://tracing, Perfetto and Holistic Trace
 * Analysis read it: "traceEvents" of complete events (ph "X", ts and dur in microseconds with
 * ns decimals) with Kineto's categories (kernel, gpu_memcpy, gpu_memset, cuda_runtime,
 * cuda_driver, cuda_sync, user_annotation, gpu_user_annotation) and arguments (correlation,
 * External id, device, stream, bytes, memory bandwidth (GB/s), grid, block, registers per
 * thread, shared memory); flows "ac2g" from each launch to its GPU work; counters (ph "C");
 * process and thread names (ph "M"); "deviceProperties", "distributedInfo" (rank) and
 * "baseTimeNanoseconds". GPU events sit on pid = device, tid = stream as in Kineto. Tracks come
 * from walk.c, so events on one (pid, tid) never overlap partially. Called through the exporter
 * table (export.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "export/export.h"
#include "export/stacktext.h"
#include "export/walk.h"

#include "base/banned.h"

#define LANE_TID_SHIFT 40		/* further lanes of a track: tid + lane << 40 */
#define NVTX_TID_BIT (1ull << 48)	/* a thread's NVTX track: its own tid */
#define GPU_NVTX_TID (1ull << 49)	/* a device's NVTX (GPU) track */
#define COUNTER_TID (1ull << 50)

/* walk track id -> (pid, tid), open addressing */
struct slot {
	uint64_t uuid, pid, tid;
};

struct ch {
	struct apx_store *st;
	FILE *f;
	struct slot *map;
	size_t cap, n;
	int first;			/* no event written yet (no comma) */
	int err;
	struct apx_stacktext stx;	/* "Call stack" arguments */
};

static struct slot *lookup(struct ch *c, uint64_t uuid)
{
	size_t j = (uuid * 0x9e3779b97f4a7c15ull) & (c->cap - 1);

	while (c->map[j].uuid && c->map[j].uuid != uuid)
		j = (j + 1) & (c->cap - 1);
	return &c->map[j];
}

static int remember(struct ch *c, uint64_t uuid, uint64_t pid, uint64_t tid)
{
	struct slot *s;

	if ((c->n + 1) * 2 > c->cap) {
		struct slot *old = c->map;
		size_t ocap = c->cap;

		c->cap = c->cap ? c->cap * 2 : 1024;
		c->map = calloc(c->cap, sizeof(*c->map));
		if (!c->map)
			return -ENOMEM;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].uuid)
				*lookup(c, old[i].uuid) = old[i];
		free(old);
	}
	s = lookup(c, uuid);
	if (!s->uuid)
		c->n++;
	*s = (struct slot){ uuid, pid, tid };
	return 0;
}

static void sep(struct ch *c)
{
	fputs_unlocked(c->first ? "\n" : ",\n", c->f);
	c->first = 0;
}

/* The hot path writes without fprintf: 10 million kernels are ~100 million fields. */
static void put(FILE *f, const char *s)
{
	fputs_unlocked(s, f);
}

static void put_u64(FILE *f, uint64_t v)
{
	char b[24];
	int n = 0;

	do {
		b[sizeof(b) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite_unlocked(b + sizeof(b) - n, 1, (size_t)n, f);
}

/* ns as microseconds with three decimals: exact */
static void us(FILE *f, uint64_t ns)
{
	char frac[5] = { '.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
			 (char)('0' + ns % 10), 0 };

	put_u64(f, ns / 1000);
	put(f, frac);
}

static void meta(struct ch *c, const char *what, uint64_t pid, uint64_t tid, int with_tid,
		 const char *name)
{
	sep(c);
	fprintf(c->f, "{\"name\": \"%s\", \"ph\": \"M\", \"pid\": %" PRIu64, what, pid);
	if (with_tid)
		fprintf(c->f, ", \"tid\": %" PRIu64, tid);
	fputs(", \"args\": {\"name\": ", c->f);
	apx_json_str(c->f, name);
	fputs("}}", c->f);
}

static int ch_track(void *ctx, const struct apx_wk_track *t)
{
	struct ch *c = ctx;
	const struct apx_store *st = c->st;
	uint64_t pid = 0, tid = 0, lane = (uint64_t)t->lane << LANE_TID_SHIFT;

	switch (t->kind) {
	case APX_WK_PROCESS:
		meta(c, "process_name", t->pid, 0, 0, t->name);
		return remember(c, t->uuid, t->pid, 0);
	case APX_WK_DEVICE:
		meta(c, "process_name", t->device, 0, 0, t->name);
		return remember(c, t->uuid, t->device, 0);
	case APX_WK_THREAD:
		pid = t->pid;
		tid = t->tid + lane;
		break;
	case APX_WK_THREAD_NVTX:
		pid = t->pid;
		tid = (t->tid | NVTX_TID_BIT) + lane;
		break;
	case APX_WK_STREAM:
		/* stream ids repeat across processes: later files get their own range of tids */
		pid = t->device;
		tid = t->tid + ((uint64_t)t->file << 32) + lane;
		break;
	case APX_WK_GPU_NVTX:
		pid = t->device;
		tid = GPU_NVTX_TID + lane;
		break;
	default:	/* APX_WK_COUNTER: counters are named per event, on their device or process */
		pid = t->device < st->ndevices ? t->device : st->files[t->file].pid;
		tid = COUNTER_TID;
		if (remember(c, t->uuid, pid, tid) < 0)
			return -ENOMEM;
		return 0;
	}
	meta(c, "thread_name", pid, tid, 1, t->name);
	return remember(c, t->uuid, pid, tid);
}

static void arg_u(struct ch *c, const char *key, uint64_t v, int *first)
{
	put(c->f, *first ? "\"" : ", \"");
	put(c->f, key);
	put(c->f, "\": ");
	put_u64(c->f, v);
	*first = 0;
}

/* The Python stack of a kernel, copy, memset, sync or (through its GPU work) API call as
 * torch.profiler's with_stack argument "Call stack": "path(line): func;..." innermost first. */
static void call_stack(struct ch *c, const struct apx_wk_slice *s, int first)
{
	uint32_t stack = apx_stacktext_slice_stack(c->st, s);
	const char *text;

	if (!(text = apx_stacktext(&c->stx, stack)))
		return;
	put(c->f, first ? "\"Call stack\": " : ", \"Call stack\": ");
	apx_json_str(c->f, text);
}

static void args(struct ch *c, const struct apx_wk_slice *s)
{
	const struct apx_store *st = c->st;
	int first = 1;
	size_t i = s->index;

	fputs(", \"args\": {", c->f);
	switch (s->type) {
	case APX_ES_KERNEL: {
		const struct apx_es_launch *l = &st->launches[st->k.launch[i]];
		const struct apx_es_stream *sm = &st->streams[st->k.stream[i]];

		arg_u(c, "External id", st->k.corr[i], &first);
		arg_u(c, "device", st->devices[sm->device].ordinal, &first);
		arg_u(c, "stream", sm->id, &first);
		arg_u(c, "correlation", st->k.corr[i], &first);
		arg_u(c, "registers per thread", l->regs, &first);
		arg_u(c, "shared memory", (uint64_t)l->smem_static + l->smem_dynamic, &first);
		put(c->f, ", \"grid\": [");
		for (int d = 0; d < 3; d++) {
			put_u64(c->f, l->grid[d]);
			put(c->f, d < 2 ? ", " : "], \"block\": [");
		}
		for (int d = 0; d < 3; d++) {
			put_u64(c->f, l->block[d]);
			put(c->f, d < 2 ? ", " : "]");
		}
		break;
	}
	case APX_ES_COPY:
	case APX_ES_MEMSET: {
		int copy = s->type == APX_ES_COPY;
		const struct apx_es_stream *sm = &st->streams[copy ? st->c.stream[i] : st->s.stream[i]];
		uint64_t bytes = copy ? st->c.bytes[i] : st->s.bytes[i];
		uint64_t d = s->end - s->start;

		arg_u(c, "External id", copy ? st->c.corr[i] : st->s.corr[i], &first);
		arg_u(c, "device", st->devices[sm->device].ordinal, &first);
		arg_u(c, "stream", sm->id, &first);
		arg_u(c, "correlation", copy ? st->c.corr[i] : st->s.corr[i], &first);
		arg_u(c, "bytes", bytes, &first);
		fprintf(c->f, ", \"memory bandwidth (GB/s)\": %.6g", d ? (double)bytes / (double)d : 0.0);
		break;
	}
	case APX_ES_API:
		arg_u(c, "External id", st->a.corr[i], &first);
		arg_u(c, "correlation", st->a.corr[i], &first);
		break;
	default:
		break;
	}
	call_stack(c, s, first);
	fputs("}", c->f);
}

static void flow(struct ch *c, const char *ph, uint64_t id, const struct slot *t, uint64_t ts)
{
	sep(c);
	fprintf(c->f, "{\"ph\": \"%s\", \"id\": %" PRIu64 ", \"pid\": %" PRIu64 ", \"tid\": %" PRIu64
		", \"ts\": ", ph, id, t->pid, t->tid);
	us(c->f, ts);
	fprintf(c->f, ", \"cat\": \"ac2g\", \"name\": \"ac2g\"%s}", ph[0] == 'f' ? ", \"bp\": \"e\"" : "");
}

static int ch_slice(void *ctx, const struct apx_wk_slice *s)
{
	struct ch *c = ctx;
	struct slot *t = lookup(c, s->track);

	sep(c);
	put(c->f, s->instant ? "{\"ph\": \"i\", \"cat\": \"" : "{\"ph\": \"X\", \"cat\": \"");
	put(c->f, s->category);
	put(c->f, "\", \"name\": ");
	apx_json_str(c->f, s->name);
	put(c->f, ", \"pid\": ");
	put_u64(c->f, t->pid);
	put(c->f, ", \"tid\": ");
	put_u64(c->f, t->tid);
	put(c->f, ", \"ts\": ");
	us(c->f, s->start);
	if (s->instant) {
		fputs(", \"s\": \"t\"", c->f);
	} else {
		fputs(", \"dur\": ", c->f);
		us(c->f, s->end - s->start);
	}
	args(c, s);
	fputs("}", c->f);
	if (s->flow_out)
		flow(c, "s", s->flow_out, t, s->start);
	if (s->flow_in)
		flow(c, "f", s->flow_in, t, s->start);
	return ferror(c->f) ? -EIO : 0;
}

static int ch_counter(void *ctx, uint64_t track, uint64_t ts, double value)
{
	struct ch *c = ctx;
	const struct slot *t = lookup(c, track);
	const struct apx_es_series *se = &c->st->series[apx_wk_track_index(track)];

	char name[300];

	snprintf(name, sizeof(name), "%.*s (pid %" PRIu64 ")", (int)se->name.len, se->name.p,
		 c->st->files[se->file].pid);
	sep(c);
	fputs("{\"ph\": \"C\", \"name\": ", c->f);
	apx_json_str(c->f, name);
	fprintf(c->f, ", \"pid\": %" PRIu64 ", \"ts\": ", t->pid);
	us(c->f, ts);
	fputs(", \"args\": {", c->f);
	apx_json_strn(c->f, se->unit.len ? se->unit.p : "value", se->unit.len ? se->unit.len : 5);
	fprintf(c->f, ": %.17g}}", value);
	return ferror(c->f) ? -EIO : 0;
}

static void header(struct ch *c)
{
	const struct apx_store *st = c->st;
	int64_t rank = -1, ranks = 0, utc;
	char name[1024];

	fputs("{\n\"schemaVersion\": 1,\n\"traceName\": ", c->f);
	apx_json_str(c->f, st->files[0].path);
	fputs(",\n\"displayTimeUnit\": \"ms\",\n", c->f);
	if (apx_export_utc_start_ns(st, &utc) == 0)
		fprintf(c->f, "\"baseTimeNanoseconds\": %" PRId64 ",\n", utc);
	else	/* never a negative or wrapped wall-clock time */
		fputs("\"apx_note\": \"baseTimeNanoseconds left out: the trace's start on the wall "
		      "clock is out of range (a damaged header?)\",\n", c->f);
	for (size_t i = 0; i < st->nfiles; i++)
		if (st->files[i].rank >= 0) {
			if (rank < 0)
				rank = st->files[i].rank;
			ranks++;
		}
	if (rank >= 0)
		fprintf(c->f, "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %" PRId64
			", \"world_size\": %" PRId64 "},\n", rank, ranks);
	fputs("\"deviceProperties\": [", c->f);
	for (size_t d = 0; d < st->ndevices; d++) {
		const struct apx_es_device *dv = &st->devices[d];

		fprintf(c->f, "%s\n  {\"id\": %u, \"name\": ", d ? "," : "", dv->ordinal);
		apx_json_str(c->f, apx_export_text(dv->name, name, sizeof(name)));	/* NUL escaped */
		fprintf(c->f, ", \"totalGlobalMem\": %" PRIu64 ", \"computeMajor\": %u, "
			"\"computeMinor\": %u, \"numSms\": %u, \"l2CacheSize\": %" PRIu64,
			dv->mem_bytes, dv->cc_major, dv->cc_minor, dv->sm_count, dv->l2_bytes);
		if (dv->has_uuid) {
			fputs(", \"uuid\": \"", c->f);
			for (int b = 0; b < 16; b++)
				fprintf(c->f, "%02x", dv->uuid[b]);
			fputs("\"", c->f);
		}
		fputs("}", c->f);
	}
	fputs("\n],\n\"traceEvents\": [", c->f);
}

static int chrome_write(struct apx_store *st, const char *path, struct apx_diag *diag)
{
	struct ch c = { .st = st, .first = 1 };
	struct apx_wk_ops ops = { &c, ch_track, ch_slice, ch_counter, NULL };
	int r = apx_export_fopen(path, &c.f, diag);

	if (r < 0)
		return r;
	apx_stacktext_init(&c.stx, st, APX_STACKTEXT_KINETO);
	setvbuf(c.f, NULL, _IOFBF, 1 << 20);
	header(&c);
	r = apx_walk(st, &ops);
	if (r >= 0 && c.stx.err)
		r = c.stx.err;
	fputs("\n]\n}\n", c.f);
	if (r < 0 && diag && !diag->msg[0])
		snprintf(diag->msg, sizeof(diag->msg), "%s", r == -EIO ? "write failed (disk full?)"
								: strerror(-r));
	if (apx_export_fclose(c.f, path, diag) < 0 && r >= 0)
		r = -EIO;
	free(c.map);
	apx_stacktext_release(&c.stx);
	return r;
}

/* Measured: ~360 bytes a kernel (names are written out each time), ~300 a copy or memset,
 * ~200 an API call, sync or range, ~90 a counter sample. */
static uint64_t chrome_estimate(const struct apx_store *st)
{
	return st->k.n * 360 + (st->c.n + st->s.n) * 300 + (st->a.n + st->mk.n + st->y.n) * 200 +
	       st->ct.n * 90 + 4096;
}

const struct apx_exporter apx_export_chrome = {
	.name = "chrome",
	.ext = ".json",
	.summary = "Chrome trace / Kineto JSON (chrome://tracing, Perfetto, Holistic Trace Analysis)",
	.estimate = chrome_estimate,
	.write = chrome_write,
};
