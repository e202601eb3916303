/*
 * nccl_plugin.c - the NCCL profiler plugin (nccl_plugin.h): NCCL's v4 and v5 function tables
 * on NCCL's threads, and the drain into COLLECTIVE records on the collector's writer thread.
 *
 * Threads: init/startEvent/stopEvent for collectives and point-to-point operations run on the
 * application thread that enqueues them (inside ncclGroupEnd); proxy-op and kernel-channel
 * events run on NCCL's proxy thread; finalize on the thread that destroys the communicator.
 * Nothing here allocates, locks or makes a system call on those paths: operation slots come
 * from a lock-free queue of free indices (cq.h) and go to a queue of finished ones.
 *
 * One operation's life: Coll/P2p start takes a slot (refs = 1) and stores NCCL's descriptor;
 * its stop means *enqueued* (refs - 1). Each kernel-channel or proxy-op child takes a
 * reference at its start and gives it back at its stop; the kernel channel's GPU timers (the
 * descriptor's pTimer at the start, the KernelChStop state's at the end) widen the slot's
 * [first start, last stop]. The thread that drops the last reference of a stopped operation
 * whose channels have all stopped publishes it (a compare-and-swap, so once). Operations that
 * never see their channels (no kernel-channel events from this NCCL) are closed by the
 * writer's stale check or at the end, flagged partial.
 *
 * Global state (STYLE §8.6 exception, like src_pysampler.c's): g_nccl, written by
 * apx_nccl_enable once before NCCL can call in, then only through atomics by NCCL's threads
 * and by the writer thread for the fields marked "writer".
 */
#include "collector/nccl_plugin.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/cq.h"

#include "base/banned.h"

#define EXPORT __attribute__((visibility("default")))

enum handle_kind { H_COLL = 0xC1, H_CH = 0xC2, H_PROXY = 0xC3, H_API = 0xC4 };

struct nccl_comm {
	uint8_t kind;				/* nonzero once used */
	_Atomic int announced;			/* writer: KV written */
	uint64_t id;
	int rank, nranks, nnodes, device;
	_Atomic uint64_t p2p_seq;
	char name[64];
};

struct nccl_ch {
	uint8_t kind;				/* H_CH */
	uint32_t slot;
};

struct nccl_op {
	uint8_t kind;				/* H_COLL (collectives and p2p alike) */
	uint32_t idx;
	_Atomic int refs;
	_Atomic int stopped, published, partial;
	struct nccl_comm *comm;
	uint64_t enq_ns;
	_Atomic uint64_t enq_end_ns;
	uint64_t seq, count, stream;
	int32_t peer;
	uint8_t func, dtype, algo, proto, channels, p2p, graph;
	_Atomic uint64_t tmin, tmax;		/* GPU globaltimer, first start and last stop */
	_Atomic uint32_t ch_started, ch_stopped;
	struct nccl_ch ch[APX_NCCL_CHANNELS];
	struct nccl_ch proxy;			/* the handle of every proxy op of this op */
};

struct nccl_api {
	uint8_t kind;				/* H_API */
	void *stream;
	uint8_t graph;
};

#define API_SLOTS 1024u

static struct {
	_Atomic int enabled;
	struct apx_nccl_opts o;
	pid_t pid;
	struct nccl_op *ops;
	size_t nops;
	struct apx_cq free_q, done_q;
	struct nccl_api api[API_SLOTS];
	_Atomic uint32_t api_next;
	struct nccl_comm comms[APX_NCCL_COMMS_MAX];
	_Atomic uint32_t ncomms;
	_Atomic int version;
	_Atomic uint64_t ops_started, written, partial, pool_full, foreign, unknown_parent;
	_Atomic size_t undrained;		/* published, not yet drained */
} g_nccl;

/* ---- NCCL's strings ----------------------------------------------------------------------- */

/* s lower-cased without non-alphanumerics and a leading "nccl", into buf. */
static const char *norm(const char *s, char *buf, size_t cap)
{
	size_t n = 0;

	if (!s)
		return "";
	if (!strncmp(s, "nccl", 4))
		s += 4;
	for (; *s && n + 1 < cap; s++) {
		char c = *s;

		if (c >= 'A' && c <= 'Z')
			buf[n++] = (char)(c - 'A' + 'a');
		else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			buf[n++] = c;
	}
	buf[n] = 0;
	return buf;
}

struct name_val {
	const char *name;
	unsigned val;
};

static unsigned lookup(const struct name_val *t, size_t n, const char *s, unsigned def)
{
	char buf[32];
	const char *k = norm(s, buf, sizeof(buf));

	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, k))
			return t[i].val;
	return def;
}

#define LOOKUP(t, s, def) lookup(t, sizeof(t) / sizeof(t[0]), s, def)

unsigned apx_nccl_func_of(const char *s)
{
	static const struct name_val t[] = {
		{ "allreduce", APX_COLL_ALL_REDUCE }, { "allgather", APX_COLL_ALL_GATHER },
		{ "reducescatter", APX_COLL_REDUCE_SCATTER }, { "broadcast", APX_COLL_BROADCAST },
		{ "reduce", APX_COLL_REDUCE }, { "alltoall", APX_COLL_ALL_TO_ALL },
		{ "send", APX_COLL_SEND }, { "recv", APX_COLL_RECV }, { "gather", APX_COLL_GATHER },
		{ "scatter", APX_COLL_SCATTER },
	};
	return LOOKUP(t, s, APX_COLL_UNKNOWN);
}

unsigned apx_nccl_dtype_of(const char *s)
{
	static const struct name_val t[] = {
		{ "int8", APX_DT_INT8 }, { "char", APX_DT_INT8 }, { "uint8", APX_DT_UINT8 },
		{ "int32", APX_DT_INT32 }, { "int", APX_DT_INT32 }, { "uint32", APX_DT_UINT32 },
		{ "int64", APX_DT_INT64 }, { "uint64", APX_DT_UINT64 },
		{ "float16", APX_DT_FLOAT16 }, { "half", APX_DT_FLOAT16 },
		{ "float32", APX_DT_FLOAT32 }, { "float", APX_DT_FLOAT32 },
		{ "float64", APX_DT_FLOAT64 }, { "double", APX_DT_FLOAT64 },
		{ "bfloat16", APX_DT_BFLOAT16 }, { "float8e4m3", APX_DT_FP8_E4M3 },
		{ "float8e5m2", APX_DT_FP8_E5M2 },
	};
	return LOOKUP(t, s, APX_DT_UNKNOWN);
}

unsigned apx_nccl_algo_of(const char *s)
{
	static const struct name_val t[] = {
		{ "tree", APX_ALGO_TREE }, { "ring", APX_ALGO_RING },
		{ "collnetdirect", APX_ALGO_COLLNET_DIRECT }, { "collnetchain", APX_ALGO_COLLNET_CHAIN },
		{ "nvls", APX_ALGO_NVLS }, { "nvlstree", APX_ALGO_NVLS_TREE }, { "pat", APX_ALGO_PAT },
	};
	return LOOKUP(t, s, APX_ALGO_UNKNOWN);
}

unsigned apx_nccl_proto_of(const char *s)
{
	static const struct name_val t[] = {
		{ "ll", APX_PROTO_LL }, { "ll128", APX_PROTO_LL128 }, { "simple", APX_PROTO_SIMPLE },
	};
	return LOOKUP(t, s, APX_PROTO_UNKNOWN);
}

/* ---- slots -------------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	if (g_nccl.o.now_ns)
		return g_nccl.o.now_ns();
	clock_gettime(CLOCK_MONOTONIC, &ts);	/* vDSO: no system call */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct nccl_op *op_of(void *p)
{
	uintptr_t a = (uintptr_t)p, base = (uintptr_t)g_nccl.ops;

	if (!g_nccl.ops || a < base || a >= base + g_nccl.nops * sizeof(struct nccl_op) ||
	    (a - base) % sizeof(struct nccl_op))
		return NULL;
	return (struct nccl_op *)p;
}

static struct nccl_api *api_of(void *p)
{
	uintptr_t a = (uintptr_t)p, base = (uintptr_t)g_nccl.api;

	if (a < base || a >= base + sizeof(g_nccl.api) || (a - base) % sizeof(struct nccl_api))
		return NULL;
	return (struct nccl_api *)p;
}

/* The operation is finished: hand it to the writer, once. */
static void publish(struct nccl_op *op, int partial)
{
	int zero = 0;
	size_t waiting;

	if (!atomic_compare_exchange_strong(&op->published, &zero, 1))
		return;
	if (partial)
		atomic_store(&op->partial, 1);
	/* counted before the push, so that the drain's decrement never comes first */
	waiting = atomic_fetch_add_explicit(&g_nccl.undrained, 1, memory_order_relaxed) + 1;
	if (!apx_cq_push(&g_nccl.done_q, op->idx)) {	/* cannot happen: done_q holds every slot */
		atomic_fetch_sub_explicit(&g_nccl.undrained, 1, memory_order_relaxed);
		atomic_fetch_add(&g_nccl.pool_full, 1);
		return;
	}
	/* a quarter of the pool waits for the writer, which wakes every 100 ms by itself: a tight
	 * loop of small operations (tens of thousands a second) would empty the pool before */
	if (waiting == g_nccl.nops / 4 && g_nccl.o.wake)
		g_nccl.o.wake();
}

/* NCCL starts no kernel-channel event on a one-rank communicator: it copies a collective there
 * without telling plugins, and a send to itself gets no profiler proxy op (seen with NCCL
 * 2.28.9 on an H100, tests/fixtures/nccl). Such an operation is whole at its stop; waiting for
 * channels would hold its slot until the 5 s stale sweep, and a loop of them fills the pool. */
static int no_channels_expected(const struct nccl_op *op)
{
	return op->comm && op->comm->nranks == 1;
}

static int complete(struct nccl_op *op)
{
	return atomic_load(&op->stopped) &&
	       (no_channels_expected(op) ||
		atomic_load(&op->ch_stopped) >= (op->channels ? op->channels : 1));
}

static void put_ref(struct nccl_op *op)
{
	if (atomic_fetch_sub(&op->refs, 1) == 1 && complete(op))
		publish(op, 0);
}

static void atomic_min_u64(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);

	while ((cur == 0 || v < cur) &&
	       !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

static void atomic_max_u64(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);

	while (v > cur && !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed,
								  memory_order_relaxed))
		;
}

static struct nccl_op *take_slot(struct nccl_comm *comm)
{
	uint32_t i;
	struct nccl_op *op;

	if (!apx_cq_pop(&g_nccl.free_q, &i)) {
		atomic_fetch_add_explicit(&g_nccl.pool_full, 1, memory_order_relaxed);
		return NULL;
	}
	op = &g_nccl.ops[i];
	op->comm = comm;
	op->enq_ns = now_ns();
	atomic_store_explicit(&op->enq_end_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&op->tmin, 0, memory_order_relaxed);
	atomic_store_explicit(&op->tmax, 0, memory_order_relaxed);
	atomic_store_explicit(&op->ch_started, 0, memory_order_relaxed);
	atomic_store_explicit(&op->ch_stopped, 0, memory_order_relaxed);
	atomic_store_explicit(&op->stopped, 0, memory_order_relaxed);
	atomic_store_explicit(&op->partial, 0, memory_order_relaxed);
	op->stream = 0;
	op->graph = 0;
	op->peer = -1;
	/* refs before published: the writer's stale check sees an unpublished slot only with
	 * its new reference */
	atomic_store_explicit(&op->refs, 1, memory_order_release);
	atomic_store_explicit(&op->published, 0, memory_order_release);
	atomic_fetch_add_explicit(&g_nccl.ops_started, 1, memory_order_relaxed);
	return op;
}

/* ---- the event functions, shared by v4 and v5 --------------------------------------------- */

static apx_ncclResult_t do_init(void **context, int *mask, const char *name, uint64_t id,
				int nnodes, int nranks, int rank, int version)
{
	uint32_t i;
	struct nccl_comm *c;
	int dev;

	*context = NULL;
	*mask = 0;
	if (!atomic_load(&g_nccl.enabled))
		return 0;			/* inert: apx does not collect in this process */
	i = atomic_fetch_add(&g_nccl.ncomms, 1);
	if (i >= APX_NCCL_COMMS_MAX) {
		atomic_fetch_sub(&g_nccl.ncomms, 1);
		atomic_fetch_add(&g_nccl.foreign, 1);
		return 0;			/* too many communicators: this one is not traced */
	}
	c = &g_nccl.comms[i];
	c->id = id;
	c->rank = rank;
	c->nranks = nranks;
	c->nnodes = nnodes;
	dev = g_nccl.o.current_device ? g_nccl.o.current_device() : -1;
	c->device = dev >= 0 ? dev : g_nccl.o.device;
	snprintf(c->name, sizeof(c->name), "%s", name ? name : "");
	atomic_store(&c->p2p_seq, 0);
	c->kind = 1;
	atomic_store(&g_nccl.version, version);
	*context = c;
	*mask = APX_NCCL_EV_COLL | APX_NCCL_EV_P2P | APX_NCCL_EV_PROXY_OP | APX_NCCL_EV_KERNEL_CH;
	if (version >= 5)
		*mask |= APX_NCCL_EV_COLL_API | APX_NCCL_EV_P2P_API;
	return 0;
}

static void start_coll(struct nccl_comm *comm, void **h, void *parent,
		       const struct apx_nccl_coll_descr *d)
{
	struct nccl_op *op = take_slot(comm);
	struct nccl_api *api = api_of(parent);
	unsigned f = apx_nccl_func_of(d->func);

	if (!op)
		return;
	op->p2p = 0;
	op->func = (uint8_t)f;
	op->seq = d->seqNumber;
	op->count = d->count;
	op->dtype = (uint8_t)apx_nccl_dtype_of(d->datatype);
	op->algo = (uint8_t)apx_nccl_algo_of(d->algo);
	op->proto = (uint8_t)apx_nccl_proto_of(d->proto);
	op->channels = d->nChannels;
	if (f == APX_COLL_BROADCAST || f == APX_COLL_REDUCE || f == APX_COLL_GATHER ||
	    f == APX_COLL_SCATTER)
		op->peer = d->root;
	if (api) {
		op->stream = (uint64_t)(uintptr_t)api->stream;
		op->graph = api->graph;
	}
	*h = op;
}

static void start_p2p(struct nccl_comm *comm, void **h, void *parent,
		      const struct apx_nccl_p2p_descr *d)
{
	struct nccl_op *op = take_slot(comm);
	struct nccl_api *api = api_of(parent);

	if (!op)
		return;
	op->p2p = 1;
	op->func = (uint8_t)apx_nccl_func_of(d->func);
	op->seq = atomic_fetch_add_explicit(&comm->p2p_seq, 1, memory_order_relaxed);
	op->count = d->count;
	op->dtype = (uint8_t)apx_nccl_dtype_of(d->datatype);
	op->algo = APX_ALGO_UNKNOWN;
	op->proto = APX_PROTO_UNKNOWN;
	op->channels = d->nChannels;
	op->peer = d->peer;
	if (api) {
		op->stream = (uint64_t)(uintptr_t)api->stream;
		op->graph = api->graph;
	}
	*h = op;
}

static void start_api(void **h, void *stream, bool graph)
{
	uint32_t i = atomic_fetch_add_explicit(&g_nccl.api_next, 1, memory_order_relaxed);
	struct nccl_api *a = &g_nccl.api[i & (API_SLOTS - 1)];

	/* a ring, overwritten after API_SLOTS calls: an operation enqueued that much later
	 * than its API call could read a newer call's stream (a wrong stream, never a fault) */
	a->stream = stream;
	a->graph = graph ? 1 : 0;
	*h = a;
}

static void start_kernel_ch(void **h, void *parent, const struct apx_nccl_kernel_ch_descr *d)
{
	struct nccl_op *op = op_of(parent);
	struct nccl_ch *ch;

	/* a child after its operation was written (the stale sweep, or a one-rank operation of
	 * an NCCL that does send channel events there) is counted, never attached */
	if (!op || atomic_load(&op->published)) {
		atomic_fetch_add_explicit(&g_nccl.unknown_parent, 1, memory_order_relaxed);
		return;
	}
	ch = &op->ch[d->channelId % APX_NCCL_CHANNELS];
	ch->kind = H_CH;
	ch->slot = op->idx;
	atomic_fetch_add(&op->refs, 1);
	atomic_fetch_add(&op->ch_started, 1);
	if (d->pTimer)
		atomic_min_u64(&op->tmin, d->pTimer);
	*h = ch;
}

static void start_proxy_op(void **h, void *parent, const struct apx_nccl_proxy_op_descr *d)
{
	struct nccl_op *op;

	if (d->pid != g_nccl.pid) {		/* PXN: another process's operation */
		atomic_fetch_add_explicit(&g_nccl.foreign, 1, memory_order_relaxed);
		return;
	}
	op = op_of(parent);
	if (!op || atomic_load(&op->published)) {
		atomic_fetch_add_explicit(&g_nccl.unknown_parent, 1, memory_order_relaxed);
		return;
	}
	op->proxy.kind = H_PROXY;
	op->proxy.slot = op->idx;
	atomic_fetch_add(&op->refs, 1);
	*h = &op->proxy;
}

static apx_ncclResult_t do_start(void *context, void **h, uint64_t type, void *parent,
				 union apx_nccl_descr_u *u)
{
	struct nccl_comm *comm = context;

	*h = NULL;
	if (!comm || !atomic_load_explicit(&g_nccl.enabled, memory_order_relaxed))
		return 0;
	switch (type) {
	case APX_NCCL_EV_COLL:
		start_coll(comm, h, parent, &u->coll);
		break;
	case APX_NCCL_EV_P2P:
		start_p2p(comm, h, parent, &u->p2p);
		break;
	case APX_NCCL_EV_COLL_API:
		start_api(h, u->collApi.stream, u->collApi.graphCaptured);
		break;
	case APX_NCCL_EV_P2P_API:
		start_api(h, u->p2pApi.stream, u->p2pApi.graphCaptured);
		break;
	case APX_NCCL_EV_KERNEL_CH:
		start_kernel_ch(h, parent, &u->kernelCh);
		break;
	case APX_NCCL_EV_PROXY_OP:
		start_proxy_op(h, parent, &u->proxyOp);
		break;
	default:
		break;
	}
	return 0;
}

static apx_ncclResult_t do_stop(void *h)
{
	uint8_t kind = h ? *(const uint8_t *)h : 0;
	struct nccl_op *op;

	switch (kind) {
	case H_COLL:
		op = h;
		atomic_store(&op->enq_end_ns, now_ns());
		atomic_store(&op->stopped, 1);
		put_ref(op);
		break;
	case H_CH:
		op = &g_nccl.ops[((struct nccl_ch *)h)->slot];
		atomic_fetch_add(&op->ch_stopped, 1);
		put_ref(op);
		break;
	case H_PROXY:
		op = &g_nccl.ops[((struct nccl_ch *)h)->slot];
		put_ref(op);
		break;
	default:				/* API events, NULL handles */
		break;
	}
	return 0;
}

static apx_ncclResult_t do_state(void *h, int state, union apx_nccl_state_args *args)
{
	if (!h || !args || *(const uint8_t *)h != H_CH || state != APX_NCCL_STATE_KERNEL_CH_STOP)
		return 0;
	if (args->kernelCh.pTimer)
		atomic_max_u64(&g_nccl.ops[((struct nccl_ch *)h)->slot].tmax,
			       args->kernelCh.pTimer);
	return 0;
}

static apx_ncclResult_t do_finalize(void *context)
{
	(void)context;				/* the communicator's records stay until the end */
	return 0;
}

/* ---- the tables ----------------------------------------------------------------------------- */

static apx_ncclResult_t v4_init(void **ctx, int *mask, const char *name, uint64_t hash,
				int nnodes, int nranks, int rank, apx_ncclDebugLogger_t logfn)
{
	(void)logfn;
	return do_init(ctx, mask, name, hash, nnodes, nranks, rank, 4);
}

static apx_ncclResult_t v4_start(void *ctx, void **h, struct apx_nccl_descr_v4 *d)
{
	if (!h)
		return 0;
	*h = NULL;
	return d ? do_start(ctx, h, d->type, d->parentObj, &d->u) : 0;
}

static apx_ncclResult_t v5_init(void **ctx, uint64_t id, int *mask, const char *name,
				int nnodes, int nranks, int rank, apx_ncclDebugLogger_t logfn)
{
	(void)logfn;
	return do_init(ctx, mask, name, id, nnodes, nranks, rank, 5);
}

static apx_ncclResult_t v5_start(void *ctx, void **h, struct apx_nccl_descr_v5 *d)
{
	if (!h)
		return 0;
	*h = NULL;
	return d ? do_start(ctx, h, d->type, d->parentObj, &d->u) : 0;
}

EXPORT struct apx_nccl_profiler_v4 ncclProfiler_v4 = {
	"apx", v4_init, v4_start, do_stop, do_state, do_finalize,
};

EXPORT struct apx_nccl_profiler_v5 ncclProfiler_v5 = {
	"apx", v5_init, v5_start, do_stop, do_state, do_finalize,
};

/* ---- apx's side ----------------------------------------------------------------------------- */

int apx_nccl_enable(const struct apx_nccl_opts *opts)
{
	size_t n = opts && opts->slots ? opts->slots : APX_NCCL_SLOTS_DEFAULT;
	size_t p = 2;

	if (atomic_load(&g_nccl.enabled))
		return 0;
	while (p < n)
		p <<= 1;
	if (p > (1u << 20))
		return -EINVAL;
	if (opts)
		g_nccl.o = *opts;
	g_nccl.pid = getpid();
	g_nccl.ops = calloc(p, sizeof(*g_nccl.ops));
	if (!g_nccl.ops)
		return -ENOMEM;
	g_nccl.nops = p;
	if (apx_cq_init(&g_nccl.free_q, p) < 0 || apx_cq_init(&g_nccl.done_q, p) < 0) {
		apx_nccl_disable();
		return -ENOMEM;
	}
	for (size_t i = 0; i < p; i++) {
		g_nccl.ops[i].kind = H_COLL;
		g_nccl.ops[i].idx = (uint32_t)i;
		g_nccl.ops[i].proxy.kind = H_PROXY;
		g_nccl.ops[i].proxy.slot = (uint32_t)i;
		atomic_store(&g_nccl.ops[i].published, 1);	/* free: not in flight */
		apx_cq_push(&g_nccl.free_q, (uint32_t)i);
	}
	for (size_t i = 0; i < API_SLOTS; i++)
		g_nccl.api[i].kind = H_API;
	atomic_store(&g_nccl.enabled, 1);
	return 0;
}

void apx_nccl_disable(void)
{
	atomic_store(&g_nccl.enabled, 0);
	apx_cq_release(&g_nccl.free_q);
	apx_cq_release(&g_nccl.done_q);
	free(g_nccl.ops);
	memset(&g_nccl, 0, sizeof(g_nccl));
}

static void write_comm(struct apx_writer *w, struct nccl_comm *c)
{
	char text[256];
	struct apx_rec kv;

	snprintf(text, sizeof(text), "comm=%016llx rank=%d nranks=%d nodes=%d device=%d name=%s",
		 (unsigned long long)c->id, c->rank, c->nranks, c->nnodes, c->device, c->name);
	apx_rec_init(&kv, APX_REC_KV);
	apx_rec_set_str(&kv, APX_KV_KEY, "nccl_comm");
	apx_rec_set_str(&kv, APX_KV_VALUE, text);
	(void)apx_writer_add(w, &kv);
}

static uint64_t to_trace(uint64_t gpu)
{
	int64_t t = (int64_t)gpu - g_nccl.o.gpu_offset_ns;

	return gpu && t > 0 ? (uint64_t)t : 0;
}

static void write_op(struct apx_writer *w, struct nccl_op *op)
{
	struct apx_rec r;
	struct nccl_comm *c = op->comm;
	uint64_t t0 = atomic_load(&op->tmin), t1 = atomic_load(&op->tmax);
	uint64_t end = atomic_load(&op->enq_end_ns);
	unsigned flags = 0;

	apx_rec_init(&r, APX_REC_COLLECTIVE);
	r.v[APX_COLLECTIVE_ENQUEUE_NS] = op->enq_ns;
	r.v[APX_COLLECTIVE_ENQUEUE_END_NS] = end >= op->enq_ns ? end : op->enq_ns;
	if (t0 && t1 >= t0) {
		r.v[APX_COLLECTIVE_START_NS] = to_trace(t0);
		r.v[APX_COLLECTIVE_END_NS] = to_trace(t1);
		r.v[APX_COLLECTIVE_GPU_TIMER_START] = t0;
		r.v[APX_COLLECTIVE_GPU_TIMER_END] = t1;
		flags |= APX_COLL_F_GPU_TIMES;
	}
	r.v[APX_COLLECTIVE_FUNC] = op->func;
	r.v[APX_COLLECTIVE_COUNT] = op->count;
	r.v[APX_COLLECTIVE_DATATYPE] = op->dtype;
	r.v[APX_COLLECTIVE_BYTES] = op->count * apx_nccl_dtype_bytes(op->dtype);
	r.v[APX_COLLECTIVE_ALGO] = op->algo;
	r.v[APX_COLLECTIVE_PROTO] = op->proto;
	r.v[APX_COLLECTIVE_CHANNELS] = op->channels;
	apx_rec_set_i64(&r, APX_COLLECTIVE_PEER, op->peer);
	r.v[APX_COLLECTIVE_COMM] = c ? c->id : 0;
	apx_rec_set_i64(&r, APX_COLLECTIVE_RANK, c ? c->rank : -1);
	r.v[APX_COLLECTIVE_NRANKS] = c && c->nranks > 0 ? (uint64_t)c->nranks : 0;
	r.v[APX_COLLECTIVE_SEQ] = op->seq;
	r.v[APX_COLLECTIVE_STREAM] = op->stream;
	apx_rec_set_i64(&r, APX_COLLECTIVE_DEVICE, c ? c->device : -1);
	if (op->p2p)
		flags |= APX_COLL_F_P2P;
	if (op->graph)
		flags |= APX_COLL_F_GRAPH;
	if (atomic_load(&op->partial) ||
	    (!no_channels_expected(op) && atomic_load(&op->ch_stopped) < op->channels))
		flags |= APX_COLL_F_PARTIAL;
	r.v[APX_COLLECTIVE_FLAGS] = flags;
	(void)apx_writer_add(w, &r);
	atomic_fetch_add_explicit(&g_nccl.written, 1, memory_order_relaxed);
	if (flags & APX_COLL_F_PARTIAL)
		atomic_fetch_add_explicit(&g_nccl.partial, 1, memory_order_relaxed);
}

size_t apx_nccl_drain(struct apx_writer *w, uint64_t now, uint64_t stale_ns)
{
	uint32_t n = atomic_load(&g_nccl.ncomms), i;
	size_t k = 0;

	if (!g_nccl.ops)
		return 0;
	for (uint32_t j = 0; j < n && j < APX_NCCL_COMMS_MAX; j++) {
		struct nccl_comm *c = &g_nccl.comms[j];

		if (c->kind && !atomic_exchange(&c->announced, 1))
			write_comm(w, c);
	}
	if (now && stale_ns) {
		for (size_t s = 0; s < g_nccl.nops; s++) {
			struct nccl_op *op = &g_nccl.ops[s];
			uint64_t end = atomic_load(&op->enq_end_ns);

			if (!atomic_load(&op->published) && atomic_load(&op->stopped) &&
			    atomic_load(&op->refs) == 0 && end && now > end + stale_ns)
				publish(op, 1);
		}
	}
	while (apx_cq_pop(&g_nccl.done_q, &i)) {
		atomic_fetch_sub_explicit(&g_nccl.undrained, 1, memory_order_relaxed);
		write_op(w, &g_nccl.ops[i]);
		apx_cq_push(&g_nccl.free_q, i);
		k++;
	}
	return k;
}

size_t apx_nccl_flush(struct apx_writer *w)
{
	size_t k = apx_nccl_drain(w, 0, 0);

	if (!g_nccl.ops)
		return k;
	for (size_t s = 0; s < g_nccl.nops; s++)
		if (!atomic_load(&g_nccl.ops[s].published))
			publish(&g_nccl.ops[s], 1);
	return k + apx_nccl_drain(w, 0, 0);
}

void apx_nccl_stats(struct apx_nccl_stats *ret)
{
	struct apx_nccl_stats s = {
		.comms = atomic_load(&g_nccl.ncomms),
		.ops = atomic_load(&g_nccl.ops_started),
		.written = atomic_load(&g_nccl.written),
		.partial = atomic_load(&g_nccl.partial),
		.pool_full = atomic_load(&g_nccl.pool_full),
		.foreign = atomic_load(&g_nccl.foreign),
		.unknown_parent = atomic_load(&g_nccl.unknown_parent),
		.version = atomic_load(&g_nccl.version),
	};
	*ret = s;
}
