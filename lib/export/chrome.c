/*
 * chrome.c - `apx export --format chrome`: the event store as a Chrome trace in the shape
 * torch.profiler (Kineto) writes, so that chrome://tracing, Perfetto and Holistic Trace
 * Analysis read it: "traceEvents" of complete events (ph "X", ts and dur in microseconds with
 * ns decimals) with Kineto's categories (kernel, gpu_memcpy, gpu_memset, cuda_runtime,
 * cuda_driver, cuda_sync, user_annotation, gpu_user_annotation) and arguments (correlation,
 * External id, device, stream, bytes, memory bandwidth (GB/s), grid, block, registers per
 * thread, shared memory; apx's "range id" joining an NVTX range to its gpu_user_annotations,
 * "end trimmed (ns)", "name cut (bytes)"); flows "ac2g" from each launch to its GPU work, and
 * flows "stream_wait" (name "stream wait") from the end of a GPU operation to the operation of
 * another stream that waited for it (walk.h; apx report's cross-stream waits);
 * counters (ph "C"); process and thread names (ph "M"); "deviceProperties", "distributedInfo"
 * (backend, rank, world size, process groups, as Kineto writes it, at the top so that Holistic
 * Trace Analysis's rank scan finds it on an early line; rank 0 of 1 for a trace without a
 * rank) and "baseTimeNanoseconds"; after the events, "apx_names_cut" and
 * "apx_gpu_ends_trimmed" when the walk cut or trimmed any. GPU events sit on pid = device,
 * tid = stream as in Kineto, and so do the gpu_user_annotations over them (HTA attributes a
 * kernel to the annotations of its own pid and tid); host threads on their OS tid where the
 * trace pairs CUPTI's id with it (walk.h). Tracks come from walk.c, so events on one (pid,
 * tid) never overlap partially. NCCL collectives (the store's COLLECTIVE column, nccl.c):
 * their arguments as Kineto's ("Collective name", "In msg nelems", "Group size", "dtype",
 * "Process Group Name", "Rank", "Seq", ...) on the NCCL kernel CUPTI recorded for them; a
 * "record_param_comms" cpu_op per collective on an "NCCL (host)" track of its process (NCCL's
 * enqueue span); and, for a collective with GPU times that no CUPTI kernel covers, a "kernel"
 * event "nccl:<func>" on an "NCCL" track of its GPU (docs/export.md, "Several ranks"). Called
 * through the exporter table (export.c).
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
#define COUNTER_TID (1ull << 50)
#define NCCL_GPU_TID (1ull << 51)	/* a file's collectives on its GPU: + file << 32 + lane */
#define NCCL_HOST_TID (1ull << 52)	/* a file's collectives on the host: + file << 32 + lane */
#define NCCL_LANES 64
#define PG_MAX 4096			/* communicators listed in pg_config (apx_export_dist too) */
#define HANDLES_MAX 256			/* NCCL stream handles whose CUPTI stream is known */

/* walk track id -> (pid, tid), open addressing */
struct slot {
	uint64_t uuid, pid, tid;
	char *name;			/* counter tracks: the name of their "C" events */
};

struct ch {
	struct apx_store *st;
	FILE *f;
	struct slot *map;
	size_t cap, n;
	int first;			/* no event written yet (no comma) */
	int err;
	struct apx_stacktext stx;	/* "Call stack" arguments */
	struct apx_export_nccl nm;	/* collectives matched to NCCL kernels */
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
	free(s->name);
	*s = (struct slot){ uuid, pid, tid, NULL };
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
	default:	/* APX_WK_COUNTER: counters are named per event, on their device or process */
		pid = t->device < st->ndevices ? t->device : st->files[t->file].pid;
		tid = COUNTER_TID;
		if (remember(c, t->uuid, pid, tid) < 0)
			return -ENOMEM;
		if (!(lookup(c, t->uuid)->name = strdup(t->name)))	/* its events' name */
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

/* A collective's arguments, with a comma before each, as Kineto puts the linked
 * record_param_comms op's on an NCCL kernel (libkineto output_json.cpp, appendCollectiveArgs:
 * "Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype", "Process Group
 * Name", "Dst Rank"/"Src Rank", "Seq"; "Rank" as c10d's record_param_comms has it), then apx's
 * own: NCCL's algorithm, protocol, channels and bytes. The process group is the NCCL
 * communicator, named by its id hash (the same on every rank of it). */
static void coll_args(struct ch *c, size_t i, int first)
{
	const struct apx_es_collectives *co = &c->st->coll;
	const char *dt = apx_export_nccl_torch_dtype(co->dtype[i]);
	uint64_t in, out;

	apx_export_nccl_nelems(co->func[i], co->count[i], co->nranks[i], &in, &out);
	fprintf(c->f, "%s\"Collective name\": \"%s\", \"In msg nelems\": %" PRIu64
		", \"Out msg nelems\": %" PRIu64 ", \"Group size\": %" PRIu32,
		first ? "" : ", ", apx_export_nccl_c10d_name(co->func[i]), in, out, co->nranks[i]);
	if (*dt)
		fprintf(c->f, ", \"dtype\": \"%s\"", dt);
	fprintf(c->f, ", \"Process Group Name\": \"%016" PRIx64 "\"", co->comm[i]);
	if (co->rank[i] >= 0)
		fprintf(c->f, ", \"Rank\": %" PRId32, co->rank[i]);
	if (co->peer[i] >= 0 && co->func[i] == APX_COLL_SEND)
		fprintf(c->f, ", \"Dst Rank\": %" PRId32, co->peer[i]);
	else if (co->peer[i] >= 0 && co->func[i] == APX_COLL_RECV)
		fprintf(c->f, ", \"Src Rank\": %" PRId32, co->peer[i]);
	else if (co->peer[i] >= 0)
		fprintf(c->f, ", \"Root\": %" PRId32, co->peer[i]);
	fprintf(c->f, ", \"Seq\": %" PRIu64 ", \"nccl algorithm\": \"%s\", \"nccl protocol\": "
		"\"%s\", \"nccl channels\": %u, \"nccl bytes\": %" PRIu64, co->seq[i],
		apx_nccl_algo_name(co->algo[i]), apx_nccl_proto_name(co->proto[i]),
		(unsigned)co->channels[i], co->bytes[i]);
}

static void coll_args_of_kernel(struct ch *c, size_t k)
{
	size_t first = 0, n = apx_export_nccl_of_kernel(&c->nm, k, &first);

	if (!n)
		return;
	coll_args(c, first, 0);
	if (n > 1)	/* a group of collectives in one kernel: the first one's arguments */
		fprintf(c->f, ", \"nccl collectives\": %zu", n);
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
		coll_args_of_kernel(c, i);
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
	case APX_ES_MARKER:
	case APX_ES__COUNT:	/* a range and its projections onto the streams: one id */
		arg_u(c, "range id", (uint64_t)i + 1, &first);
		break;
	default:
		break;
	}
	if (s->trimmed_ns)
		arg_u(c, "end trimmed (ns)", s->trimmed_ns, &first);
	if (s->name_len)
		arg_u(c, "name cut (bytes)", s->name_len, &first);
	call_stack(c, s, first);
	fputs("}", c->f);
}

/* A flow event on track t at ts: a start ("s") binds to the slice around ts, an end ("f",
 * binding point "e") to the slice around ts as well. */
static void flow(struct ch *c, const char *ph, const char *cat, const char *name, uint64_t id,
		 const struct slot *t, uint64_t ts)
{
	sep(c);
	fprintf(c->f, "{\"ph\": \"%s\", \"id\": %" PRIu64 ", \"pid\": %" PRIu64 ", \"tid\": %" PRIu64
		", \"ts\": ", ph, id, t->pid, t->tid);
	us(c->f, ts);
	fprintf(c->f, ", \"cat\": \"%s\", \"name\": \"%s\"%s}", cat, name,
		ph[0] == 'f' ? ", \"bp\": \"e\"" : "");
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
		flow(c, "s", "ac2g", "ac2g", s->flow_out, t, s->start);
	if (s->flow_in)
		flow(c, "f", "ac2g", "ac2g", s->flow_in, t, s->start);
	/* a stream wait starts where the awaited operation ends: 1 ns before, still inside it */
	for (uint32_t k = 0; k < s->nwait_out; k++)
		flow(c, "s", "stream_wait", "stream wait", s->wait_out + k, t,
		     s->end > s->start ? s->end - 1 : s->start);
	if (s->wait_in)
		flow(c, "f", "stream_wait", "stream wait", s->wait_in, t, s->start);
	return ferror(c->f) ? -EIO : 0;
}

static int ch_counter(void *ctx, uint64_t track, uint64_t ts, double value)
{
	struct ch *c = ctx;
	const struct slot *t = lookup(c, track);
	const struct apx_es_series *se = &c->st->series[apx_wk_track_index(track)];

	sep(c);
	fputs("{\"ph\": \"C\", \"name\": ", c->f);
	apx_json_str(c->f, t->name ? t->name : "");
	fprintf(c->f, ", \"pid\": %" PRIu64 ", \"ts\": ", t->pid);
	us(c->f, ts);
	fputs(", \"args\": {", c->f);
	apx_json_strn(c->f, se->unit.len ? se->unit.p : "value", se->unit.len ? se->unit.len : 5);
	fprintf(c->f, ": %.17g}}", value);
	return ferror(c->f) ? -EIO : 0;
}

/* "distributedInfo" in the shape torch.profiler writes (profiler.py _get_distributed_info,
 * Kineto's addOnDemandDistMetadata): backend, rank, world_size, pg_count, pg_config (one per
 * NCCL communicator: pg_name its id hash, pg_size its ranks; the global ranks of a
 * communicator are not recorded, so no "ranks"), nccl_version ("unknown": the trace does not
 * say, as Kineto writes it then); local_rank when known. On one line: Holistic Trace Analysis
 * finds the rank with a regular expression over the file's lines (trace_file.py), and without
 * one reads the whole file looking for it: a trace without a rank says rank 0 of 1 (what HTA
 * assumes then), with "apx_note" saying so. */
static void distributed_info(struct ch *c)
{
	const struct apx_store *st = c->st;
	const struct apx_es_collectives *co = &st->coll;
	struct apx_export_dist d;
	uint64_t pg[PG_MAX];
	size_t npg = 0;

	apx_export_dist_info(st, &d);
	if (d.rank < 0) {
		fputs("\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, "
		      "\"world_size\": 1, \"pg_count\": 0, \"pg_config\": [], "
		      "\"nccl_version\": \"unknown\", \"apx_note\": \"no rank in the trace "
		      "(not a distributed run): rank 0 of 1\"},\n", c->f);
		return;
	}
	fprintf(c->f, "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %" PRId64
		", \"world_size\": %" PRIu64, d.rank, d.world);
	if (d.local_rank >= 0)
		fprintf(c->f, ", \"local_rank\": %" PRId64, d.local_rank);
	fprintf(c->f, ", \"pg_count\": %zu, \"pg_config\": [", d.ncomms);
	for (size_t i = 0; i < co->n && npg < d.ncomms && npg < PG_MAX; i++) {
		size_t j;

		for (j = 0; j < npg && pg[j] != co->comm[i]; j++)
			;
		if (j < npg)	/* its communicator is out already */
			continue;
		pg[npg] = co->comm[i];
		fprintf(c->f, "%s{\"pg_name\": \"%016" PRIx64 "\", \"pg_desc\": \"nccl communicator\", "
			"\"backend_config\": \"cuda:nccl\", \"pg_size\": %" PRIu32 "}", npg++ ? ", " : "",
			co->comm[i], co->nranks[i]);
	}
	fputs("], \"nccl_version\": \"unknown\"}", c->f);
	if (d.several)
		fputs(", \"apx_ranks_note\": \"the files of several ranks in one export (--merge-ranks): "
		      "distributedInfo names the lowest; Holistic Trace Analysis reads one rank per "
		      "file\"", c->f);
	fputs(",\n", c->f);
}

static void header(struct ch *c)
{
	const struct apx_store *st = c->st;
	int64_t utc;
	char name[1024];

	fputs("{\n\"schemaVersion\": 1,\n", c->f);
	distributed_info(c);
	fputs("\"traceName\": ", c->f);
	apx_json_str(c->f, st->files[0].path);
	fputs(",\n\"displayTimeUnit\": \"ms\",\n", c->f);
	if (apx_export_utc_start_ns(st, &utc) == 0)
		fprintf(c->f, "\"baseTimeNanoseconds\": %" PRId64 ",\n", utc);
	else	/* never a negative or wrapped wall-clock time */
		fputs("\"apx_note\": \"baseTimeNanoseconds left out: the trace's start on the wall "
		      "clock is out of range (a damaged header?)\",\n", c->f);
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

/* ---- NCCL collectives' own events ------------------------------------------------------------ */

struct cev {				/* a collective to place: by file, then time */
	uint64_t t;
	uint32_t i;
	uint16_t file;
};

static int cmp_cev(const void *a, const void *b)
{
	const struct cev *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Lanes of one file's NCCL track: the first whose last event ended by start (events of one
 * lane never overlap); *ret_new when the lane is used for the first time. */
struct lanes {
	uint64_t end[NCCL_LANES];
	uint32_t n;
};

static uint32_t lane_for(struct lanes *l, uint64_t start, uint64_t end, int *ret_new)
{
	uint32_t i;

	for (i = 0; i < l->n && l->end[i] > start; i++)
		;
	*ret_new = i == l->n && l->n < NCCL_LANES;
	if (i == l->n) {
		if (l->n < NCCL_LANES)
			l->n++;
		else
			i = l->n - 1;	/* out of lanes: the last one */
	}
	l->end[i] = end > l->end[i] ? end : l->end[i];
	return i;
}

static void lane_name(struct ch *c, uint64_t pid, uint64_t tid, uint32_t lane, const char *base)
{
	char name[128];

	if (lane)
		snprintf(name, sizeof(name), "%s (%u)", base, lane + 1);
	else
		snprintf(name, sizeof(name), "%s", base);
	meta(c, "thread_name", pid, tid, 1, name);
}

static void complete(struct ch *c, const char *cat, const char *name, uint64_t pid, uint64_t tid,
		     uint64_t start, uint64_t end)
{
	sep(c);
	fprintf(c->f, "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %" PRIu64
		", \"tid\": %" PRIu64 ", \"ts\": ", cat, name, pid, tid);
	us(c->f, apx_export_rel_ns(c->st, start));
	fputs(", \"dur\": ", c->f);
	us(c->f, end > start ? end - start : 0);
}

/* What the matched collectives teach: the CUPTI stream of the kernels that ran a file's
 * collectives on NCCL's stream handle h. */
struct handle {
	uint64_t h, id;
	uint16_t file;
};

static size_t learn_handles(const struct ch *c, struct handle *map)
{
	const struct apx_store *st = c->st;
	const struct apx_es_collectives *co = &st->coll;
	size_t n = 0, j;

	for (size_t i = 0; i < co->n && n < HANDLES_MAX; i++) {
		if (!co->stream[i] || c->nm.kernel_of[i] == UINT32_MAX)
			continue;
		for (j = 0; j < n && (map[j].h != co->stream[i] || map[j].file != co->file[i]); j++)
			;
		if (j == n)
			map[n++] = (struct handle){ co->stream[i],
						    st->streams[st->k.stream[c->nm.kernel_of[i]]].id,
						    co->file[i] };
	}
	return n;
}

/* The CUPTI stream id for handle h of a file, else the handle itself, 0 none. */
static uint64_t stream_of_handle(const struct handle *map, size_t n, uint16_t file, uint64_t h)
{
	for (size_t j = 0; h && j < n; j++)
		if (map[j].h == h && map[j].file == file)
			return map[j].id;
	return h;
}

/* Each collective's enqueue on the host as Kineto's "record_param_comms" cpu_op (the record
 * carries no thread: an "NCCL (host)" track of its process), and each collective with GPU times
 * that no CUPTI kernel covers as a "kernel" event on an "NCCL" track of its GPU. */
static int nccl_events(struct ch *c)
{
	const struct apx_store *st = c->st;
	const struct apx_es_collectives *co = &st->coll;
	struct handle map[HANDLES_MAX];
	struct cev *v;
	struct lanes l;
	size_t n = 0, nmap;
	char name[64];

	if (!co->n)
		return 0;
	v = malloc(co->n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < co->n; i++)
		v[n++] = (struct cev){ co->enq[i], (uint32_t)i, co->file[i] };
	qsort(v, n, sizeof(*v), cmp_cev);
	for (size_t k = 0; k < n; k++) {
		size_t i = v[k].i;
		uint64_t pid = st->files[v[k].file].pid, tid;
		uint32_t lane;
		int fresh;

		if (!k || v[k].file != v[k - 1].file)
			memset(&l, 0, sizeof(l));
		lane = lane_for(&l, co->enq[i], co->enq_end[i], &fresh);
		tid = NCCL_HOST_TID + ((uint64_t)v[k].file << 32) + lane;
		if (fresh)
			lane_name(c, pid, tid, lane, "NCCL (host)");
		complete(c, "cpu_op", "record_param_comms", pid, tid, co->enq[i], co->enq_end[i]);
		fputs(", \"args\": {", c->f);
		coll_args(c, i, 1);
		fputs("}}", c->f);
	}
	n = 0;
	nmap = learn_handles(c, map);
	for (size_t i = 0; i < co->n; i++)
		if (co->start[i] && c->nm.kernel_of[i] == UINT32_MAX)
			v[n++] = (struct cev){ co->start[i], (uint32_t)i, co->file[i] };
	qsort(v, n, sizeof(*v), cmp_cev);
	for (size_t k = 0; k < n; k++) {
		size_t i = v[k].i;
		uint32_t dev = co->device[i] >= 0 ? apx_store_device_of(st, v[k].file,
									(uint64_t)co->device[i])
						  : UINT32_MAX;
		uint64_t pid, tid, sid = stream_of_handle(map, nmap, v[k].file, co->stream[i]);
		uint32_t lane;
		int fresh;

		if (dev == UINT32_MAX && st->ndevices == 1)
			dev = 0;
		pid = dev < st->ndevices ? dev : st->files[v[k].file].pid;
		if (!k || v[k].file != v[k - 1].file)
			memset(&l, 0, sizeof(l));
		lane = lane_for(&l, co->start[i], co->end[i], &fresh);
		tid = NCCL_GPU_TID + ((uint64_t)v[k].file << 32) + lane;
		if (fresh) {
			snprintf(name, sizeof(name), "NCCL (pid %" PRIu64 ")", st->files[v[k].file].pid);
			lane_name(c, pid, tid, lane, name);
		}
		snprintf(name, sizeof(name), "nccl:%s", apx_coll_func_name(co->func[i]));
		complete(c, "kernel", name, pid, tid, co->start[i], co->end[i]);
		fprintf(c->f, ", \"args\": {\"device\": %" PRId64, dev < st->ndevices
			? (int64_t)st->devices[dev].ordinal : (int64_t)co->device[i]);
		if (sid)
			fprintf(c->f, ", \"stream\": %" PRIu64, sid);
		coll_args(c, i, 0);	/* no correlation: no launch is known to be its */
		fputs(", \"apx\": \"from the NCCL profiler plugin: no CUPTI kernel covers it\"}}", c->f);
	}
	free(v);
	return ferror(c->f) ? -EIO : 0;
}

static int chrome_write(struct apx_store *st, const struct apx_export_waits *waits,
			const char *path, struct apx_diag *diag)
{
	struct ch c = { .st = st, .first = 1 };
	struct apx_wk_ops ops = { &c, ch_track, ch_slice, ch_counter, NULL };
	struct apx_wk_stats ws = { 0 };
	int r = apx_export_fopen(path, &c.f, diag);

	if (r < 0)
		return r;
	apx_stacktext_init(&c.stx, st, APX_STACKTEXT_KINETO);
	setvbuf(c.f, NULL, _IOFBF, 1 << 20);
	header(&c);
	r = apx_export_nccl_match(st, &c.nm);
	if (r >= 0)
		r = apx_walk(st, waits, &ops, &ws);
	if (r >= 0)
		r = nccl_events(&c);
	if (r >= 0 && c.stx.err)
		r = c.stx.err;
	fputs("\n]", c.f);
	if (ws.names_cut)	/* each says so too: " [... cut: N bytes]", "name cut (bytes)" */
		fprintf(c.f, ",\n\"apx_names_cut\": %" PRIu64, ws.names_cut);
	if (ws.ends_trimmed)	/* each one: "end trimmed (ns)" */
		fprintf(c.f, ",\n\"apx_gpu_ends_trimmed\": %" PRIu64, ws.ends_trimmed);
	fputs("\n}\n", c.f);
	if (r < 0 && diag && !diag->msg[0])
		snprintf(diag->msg, sizeof(diag->msg), "%s", r == -EIO ? "write failed (disk full?)"
								: strerror(-r));
	if (apx_export_fclose(c.f, path, diag) < 0 && r >= 0)
		r = -EIO;
	for (size_t i = 0; i < c.cap; i++)
		free(c.map[i].name);
	free(c.map);
	apx_stacktext_release(&c.stx);
	apx_export_nccl_release(&c.nm);
	return r;
}

/* Measured: ~360 bytes a kernel (names are written out each time), ~300 a copy or memset,
 * ~200 an API call, sync or range, ~90 a counter sample; ~900 a collective (its host event
 * and its arguments on the kernel: estimated, not measured). */
static uint64_t chrome_estimate(const struct apx_store *st)
{
	return st->k.n * 360 + (st->c.n + st->s.n) * 300 + (st->a.n + st->mk.n + st->y.n) * 200 +
	       st->ct.n * 90 + st->coll.n * 900 + 4096;
}

const struct apx_exporter apx_export_chrome = {
	.name = "chrome",
	.ext = ".json",
	.summary = "Chrome trace / Kineto JSON (chrome://tracing, Perfetto, Holistic Trace Analysis)",
	.estimate = chrome_estimate,
	.write = chrome_write,
};
