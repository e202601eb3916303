/*
 * tracegen.c - synthetic traces for analysis tests (see tracegen.h).
 */
#include "unit/tracegen.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/model.h"

#include "base/banned.h"

/* A scratch file with a HEADER of producer (pid, argv and host or NULL, start) and the writer
 * on it. */
static int open_as(struct tg *t, const char *producer, uint64_t pid, const char *argv,
		   const char *host, uint64_t start_ns)
{
	struct apx_rec h;
	int fd;

	memset(t, 0, sizeof(*t));
	memcpy(t->path, "/tmp/apx-tg-XXXXXX", 19);
	fd = mkstemp(t->path);
	if (fd < 0)
		return -1;
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, producer);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER_VERSION, "test");
	if (argv)
		apx_rec_set_str(&h, APX_HEADER_ARGV, argv);
	if (host)
		apx_rec_set_str(&h, APX_HEADER_HOSTNAME, host);
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = pid;
	h.v[APX_HEADER_START_NS] = start_ns;
	apx_rec_set_i64(&h, APX_HEADER_RANK, -1);
	return apx_writer_open_fd(fd, &h, NULL, &t->w);
}

int tg_open(struct tg *t)
{
	struct apx_rec d;

	if (open_as(t, "apx-inject", 100, NULL, NULL, 1000) < 0)
		return -1;
	apx_rec_init(&d, APX_REC_DEVICE);
	apx_rec_set_str(&d, APX_DEVICE_NAME, "NVIDIA H200");
	d.v[APX_DEVICE_CC_MAJOR] = 9;
	d.v[APX_DEVICE_SM_COUNT] = 132;
	d.v[APX_DEVICE_MEM_BYTES] = 100000000000ull;
	d.v[APX_DEVICE_L2_BYTES] = 60u << 20;
	d.v[APX_DEVICE_PERSIST_L2_MAX_BYTES] = 45u << 20;
	d.v[APX_DEVICE_PCIE_GEN] = 5;
	d.v[APX_DEVICE_PCIE_WIDTH] = 16;
	d.v[APX_DEVICE_MAX_THREADS_PER_SM] = 2048;
	d.v[APX_DEVICE_REGS_PER_SM] = 65536;
	d.v[APX_DEVICE_SMEM_PER_SM] = 233472;
	d.v[APX_DEVICE_MAX_BLOCKS_PER_SM] = 32;
	d.v[APX_DEVICE_WARP_SIZE] = 32;
	return apx_writer_add(t->w, &d);
}

int tg_open_proc(struct tg *t, const char *host, uint64_t pid, const uint8_t *uuid)
{
	struct apx_rec d;

	if (open_as(t, "apx-inject", pid, NULL, host, 1000000) < 0)
		return -1;
	apx_rec_init(&d, APX_REC_DEVICE);
	apx_rec_set_str(&d, APX_DEVICE_NAME, "NVIDIA H200");
	apx_rec_set_bytes(&d, APX_DEVICE_UUID, uuid, 16);
	return apx_writer_add(t->w, &d);
}

static void seen(struct tg *t, uint64_t end);

int tg_open_rank(struct tg *t, const char *host, const uint8_t *uuid, int rank, int world)
{
	struct apx_rec h, d;
	int fd;

	memset(t, 0, sizeof(*t));
	memcpy(t->path, "/tmp/apx-tg-XXXXXX", 19);
	fd = mkstemp(t->path);
	if (fd < 0)
		return -1;
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "apx-inject");
	apx_rec_set_str(&h, APX_HEADER_HOSTNAME, host);
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = 1000 + (uint64_t)rank;
	h.v[APX_HEADER_START_NS] = 1000;
	apx_rec_set_i64(&h, APX_HEADER_RANK, rank);
	h.v[APX_HEADER_WORLD_SIZE] = (uint64_t)world;
	apx_rec_set_i64(&h, APX_HEADER_LOCAL_RANK, rank);
	if (apx_writer_open_fd(fd, &h, NULL, &t->w) < 0)
		return -1;
	apx_rec_init(&d, APX_REC_DEVICE);
	apx_rec_set_str(&d, APX_DEVICE_NAME, "NVIDIA H100");
	apx_rec_set_bytes(&d, APX_DEVICE_UUID, uuid, 16);
	return apx_writer_add(t->w, &d);
}

void tg_collective(struct tg *t, uint64_t enq, uint64_t start, uint64_t end, unsigned func,
		   uint64_t bytes, uint64_t comm, uint64_t seq, int rank, int nranks)
{
	tg_collective_dt(t, enq, start, end, func, bytes, comm, seq, rank, nranks, APX_DT_BFLOAT16);
}

void tg_collective_dt(struct tg *t, uint64_t enq, uint64_t start, uint64_t end, unsigned func,
		      uint64_t bytes, uint64_t comm, uint64_t seq, int rank, int nranks,
		      unsigned dtype)
{
	unsigned size = apx_nccl_dtype_bytes(dtype);
	struct apx_rec c;

	apx_rec_init(&c, APX_REC_COLLECTIVE);
	c.v[APX_COLLECTIVE_ENQUEUE_NS] = enq;
	c.v[APX_COLLECTIVE_ENQUEUE_END_NS] = enq + 1000;
	c.v[APX_COLLECTIVE_START_NS] = start;
	c.v[APX_COLLECTIVE_END_NS] = end;
	c.v[APX_COLLECTIVE_FUNC] = func;
	c.v[APX_COLLECTIVE_DATATYPE] = dtype;
	c.v[APX_COLLECTIVE_COUNT] = bytes / (size ? size : 1);
	c.v[APX_COLLECTIVE_BYTES] = bytes;
	c.v[APX_COLLECTIVE_ALGO] = APX_ALGO_RING;
	c.v[APX_COLLECTIVE_PROTO] = APX_PROTO_SIMPLE;
	c.v[APX_COLLECTIVE_CHANNELS] = 4;
	apx_rec_set_i64(&c, APX_COLLECTIVE_PEER, -1);
	c.v[APX_COLLECTIVE_COMM] = comm;
	apx_rec_set_i64(&c, APX_COLLECTIVE_RANK, rank);
	c.v[APX_COLLECTIVE_NRANKS] = (uint64_t)nranks;
	c.v[APX_COLLECTIVE_SEQ] = seq;
	apx_rec_set_i64(&c, APX_COLLECTIVE_DEVICE, 0);
	c.v[APX_COLLECTIVE_FLAGS] = APX_COLL_F_GPU_TIMES;
	apx_writer_add(t->w, &c);
	seen(t, end);
}

int tg_open_nvperfd(struct tg *t, uint64_t pid)
{
	return open_as(t, "nvperfd", pid, "python3 train.py", NULL, 1000);
}

static void seen(struct tg *t, uint64_t end)
{
	if (end > t->end_ns)
		t->end_ns = end;
}

void tg_kernel_cfg(struct tg *t, uint64_t start, uint64_t dur, const char *name, uint32_t block,
		   uint32_t regs, uint32_t smem)
{
	struct apx_rec k;
	uint32_t id;

	apx_rec_init(&k, APX_REC_KERNEL);
	k.v[APX_KERNEL_STACK] = t->stack;
	apx_writer_intern(t->w, name, strlen(name), &id);
	k.v[APX_KERNEL_START_NS] = start;
	k.v[APX_KERNEL_END_NS] = start + dur;
	k.v[APX_KERNEL_STREAM] = 7;
	k.v[APX_KERNEL_CORRELATION] = ++t->corr;
	k.v[APX_KERNEL_NAME] = id;
	k.v[APX_KERNEL_GRID_X] = 132;
	k.v[APX_KERNEL_GRID_Y] = k.v[APX_KERNEL_GRID_Z] = 1;
	k.v[APX_KERNEL_BLOCK_X] = block;
	k.v[APX_KERNEL_BLOCK_Y] = k.v[APX_KERNEL_BLOCK_Z] = 1;
	k.v[APX_KERNEL_REGISTERS] = regs;
	k.v[APX_KERNEL_STATIC_SMEM] = smem;
	apx_writer_add(t->w, &k);
	seen(t, start + dur);
}

/* A kernel record of one block of 256 threads, in CUDA graph graph_id (0 none). */
static void kernel_rec(struct tg *t, uint64_t start, uint64_t dur, const char *name,
		       uint64_t stream, uint64_t graph_id)
{
	struct apx_rec k;
	uint32_t id;

	apx_rec_init(&k, APX_REC_KERNEL);
	k.v[APX_KERNEL_STACK] = t->stack;
	apx_writer_intern(t->w, name, strlen(name), &id);
	k.v[APX_KERNEL_START_NS] = start;
	k.v[APX_KERNEL_END_NS] = start + dur;
	k.v[APX_KERNEL_STREAM] = stream;
	k.v[APX_KERNEL_CORRELATION] = ++t->corr;
	k.v[APX_KERNEL_NAME] = id;
	k.v[APX_KERNEL_BLOCK_X] = 256;
	k.v[APX_KERNEL_BLOCK_Y] = k.v[APX_KERNEL_BLOCK_Z] = 1;
	k.v[APX_KERNEL_GRID_X] = k.v[APX_KERNEL_GRID_Y] = k.v[APX_KERNEL_GRID_Z] = 1;
	k.v[APX_KERNEL_REGISTERS] = 32;
	k.v[APX_KERNEL_GRAPH_ID] = graph_id;
	k.v[APX_KERNEL_GRAPH_NODE_ID] = graph_id ? t->corr : 0;
	apx_writer_add(t->w, &k);
	seen(t, start + dur);
}

void tg_kernel(struct tg *t, uint64_t start, uint64_t dur, const char *name, uint64_t stream)
{
	kernel_rec(t, start, dur, name, stream, 0);
}

/* A MEMCPY record of a host<->device (or other) copy, the rest of its fields 0. */
static void copy_rec(struct tg *t, struct apx_rec *c, uint64_t start, uint64_t dur, unsigned kind,
		     unsigned host_kind, uint64_t bytes)
{
	apx_rec_init(c, APX_REC_MEMCPY);
	c->v[APX_MEMCPY_STACK] = t->stack;
	c->v[APX_MEMCPY_START_NS] = start;
	c->v[APX_MEMCPY_END_NS] = start + dur;
	c->v[APX_MEMCPY_CORRELATION] = ++t->corr;
	c->v[APX_MEMCPY_COPY_KIND] = kind;
	c->v[APX_MEMCPY_SRC_KIND] = kind == APX_COPY_H2D ? host_kind : APX_MEM_DEVICE;
	c->v[APX_MEMCPY_DST_KIND] = kind == APX_COPY_D2H ? host_kind : APX_MEM_DEVICE;
	c->v[APX_MEMCPY_BYTES] = bytes;
}

void tg_copy(struct tg *t, uint64_t start, uint64_t dur, unsigned kind, unsigned host_kind,
	     uint64_t bytes, int async, uint64_t host_addr, uint64_t stream)
{
	struct apx_rec c;

	copy_rec(t, &c, start, dur, kind, host_kind, bytes);
	c.v[APX_MEMCPY_STREAM] = stream;
	c.v[APX_MEMCPY_HOST_ADDR] = host_addr;
	c.v[APX_MEMCPY_FLAGS] = async ? 1 : 0;
	apx_writer_add(t->w, &c);
	seen(t, start + dur);
}

void tg_p2p(struct tg *t, uint64_t start, uint64_t dur, uint32_t src, uint32_t dst,
	    uint64_t bytes)
{
	struct apx_rec c;

	copy_rec(t, &c, start, dur, APX_COPY_P2P, APX_MEM_DEVICE, bytes);
	c.v[APX_MEMCPY_DEVICE] = src;
	c.v[APX_MEMCPY_STREAM] = 7;
	c.v[APX_MEMCPY_SRC_DEVICE] = src;
	c.v[APX_MEMCPY_DST_DEVICE] = dst;
	c.v[APX_MEMCPY_FLAGS] = 1;
	apx_writer_add(t->w, &c);
	seen(t, start + dur);
}

void tg_device(struct tg *t, uint32_t id, const uint8_t *uuid, unsigned nvlinks,
	       unsigned pcie_gen, unsigned pcie_width)
{
	struct apx_rec d;

	apx_rec_init(&d, APX_REC_DEVICE);
	d.v[APX_DEVICE_ID] = id;
	apx_rec_set_str(&d, APX_DEVICE_NAME, "NVIDIA H100");
	if (uuid)
		apx_rec_set_bytes(&d, APX_DEVICE_UUID, uuid, 16);
	d.v[APX_DEVICE_CC_MAJOR] = 9;
	d.v[APX_DEVICE_SM_COUNT] = 132;
	d.v[APX_DEVICE_NVLINK_COUNT] = nvlinks;
	d.v[APX_DEVICE_PCIE_GEN] = pcie_gen;
	d.v[APX_DEVICE_PCIE_WIDTH] = pcie_width;
	apx_writer_add(t->w, &d);
}

void tg_copy_fp(struct tg *t, uint64_t start, uint64_t dur, unsigned host_kind, uint64_t bytes,
		uint64_t host_addr, uint64_t fp)
{
	struct apx_rec c;

	copy_rec(t, &c, start, dur, APX_COPY_H2D, host_kind, bytes);
	c.v[APX_MEMCPY_STREAM] = 7;
	c.v[APX_MEMCPY_HOST_ADDR] = host_addr;
	c.v[APX_MEMCPY_FLAGS] = 1;
	c.v[APX_MEMCPY_HOST_FP] = fp;
	apx_writer_add(t->w, &c);
	seen(t, start + dur);
}

void tg_copy_call(struct tg *t, uint64_t start, uint64_t dur, unsigned kind, unsigned host_kind,
		  uint64_t bytes, uint64_t enter, uint64_t exit)
{
	struct apx_rec c;

	copy_rec(t, &c, start, dur, kind, host_kind, bytes);
	c.v[APX_MEMCPY_API_ENTER_NS] = enter;
	c.v[APX_MEMCPY_API_EXIT_NS] = exit;
	apx_writer_add(t->w, &c);
	seen(t, start + dur > exit ? start + dur : exit);
}

void tg_memset(struct tg *t, uint64_t start, uint64_t dur, int async)
{
	struct apx_rec s;

	apx_rec_init(&s, APX_REC_MEMSET);
	s.v[APX_MEMSET_STACK] = t->stack;
	s.v[APX_MEMSET_START_NS] = start;
	s.v[APX_MEMSET_END_NS] = start + dur;
	s.v[APX_MEMSET_STREAM] = 7;
	s.v[APX_MEMSET_BYTES] = 4096;
	s.v[APX_MEMSET_MEM_KIND] = APX_MEM_DEVICE;
	s.v[APX_MEMSET_FLAGS] = async ? 1 : 0;
	apx_writer_add(t->w, &s);
	seen(t, start + dur);
}

void tg_sync(struct tg *t, uint64_t start, uint64_t end, unsigned kind)
{
	struct apx_rec s;

	apx_rec_init(&s, APX_REC_SYNC);
	s.v[APX_SYNC_STACK] = t->stack;
	s.v[APX_SYNC_START_NS] = start;
	s.v[APX_SYNC_END_NS] = end;
	s.v[APX_SYNC_KIND] = kind;
	s.v[APX_SYNC_STREAM] = 7;
	apx_writer_add(t->w, &s);
	seen(t, end);
}

void tg_sync_call(struct tg *t, uint64_t start, uint64_t end, unsigned kind, uint64_t skip)
{
	struct apx_rec s;

	apx_rec_init(&s, APX_REC_SYNC);
	s.v[APX_SYNC_STACK] = t->stack;
	s.v[APX_SYNC_START_NS] = start;
	s.v[APX_SYNC_END_NS] = end;
	s.v[APX_SYNC_KIND] = kind;
	s.v[APX_SYNC_STREAM] = 7;
	t->corr += skip;
	s.v[APX_SYNC_CORRELATION] = ++t->corr;
	apx_writer_add(t->w, &s);
	seen(t, end);
}

void tg_kernel_graph(struct tg *t, uint64_t start, uint64_t dur, const char *name,
		     uint64_t graph_id)
{
	kernel_rec(t, start, dur, name, 7, graph_id);
}

void tg_mem_at(struct tg *t, uint64_t ts, unsigned op, unsigned kind, uint64_t bytes,
	       uint64_t addr)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_MEMORY);
	r.v[APX_MEMORY_TS_NS] = ts;
	r.v[APX_MEMORY_OP] = op;
	r.v[APX_MEMORY_MEM_KIND] = kind;
	r.v[APX_MEMORY_BYTES] = bytes;
	r.v[APX_MEMORY_ADDRESS] = addr;
	apx_writer_add(t->w, &r);
	seen(t, ts);
}

void tg_heap_large(struct tg *t, uint64_t ts, unsigned op, uint64_t addr, uint64_t bytes)
{
	tg_heap_large_at(t, ts, op, addr, bytes, 0);
}

void tg_heap_large_at(struct tg *t, uint64_t ts, unsigned op, uint64_t addr, uint64_t bytes,
		      uint64_t stack)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_HEAP);
	r.v[APX_HEAP_TS_NS] = ts;
	r.v[APX_HEAP_OP] = op;
	r.v[APX_HEAP_ADDRESS] = addr;
	r.v[APX_HEAP_BYTES] = op == APX_MEMOP_ALLOC ? bytes : 0;
	r.v[APX_HEAP_TID] = 100;
	r.v[APX_HEAP_FLAGS] = op == APX_MEMOP_ALLOC ? APX_HEAPF_LARGE | APX_HEAPF_ALIGNED : 0;
	r.v[APX_HEAP_STACK] = op == APX_MEMOP_ALLOC ? stack : 0;
	apx_writer_add(t->w, &r);
}

void tg_mem(struct tg *t, uint64_t ts, unsigned op, unsigned kind, uint64_t bytes)
{
	tg_mem_at(t, ts, op, kind, bytes, 0x7f0000000000ull + ts);
}

void tg_cpu(struct tg *t, uint64_t ts, uint64_t rss)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_CPU);
	r.v[APX_CPU_TS_NS] = ts;
	r.v[APX_CPU_PID] = 100;
	r.v[APX_CPU_UTIME_NS] = ts / 2;
	r.v[APX_CPU_RSS_BYTES] = rss;
	r.v[APX_CPU_RSS_PEAK_BYTES] = rss;
	r.v[APX_CPU_THREADS] = 8;
	apx_writer_add(t->w, &r);
}

void tg_cpu_thread(struct tg *t, uint64_t ts, uint64_t tid, uint64_t vol, uint64_t invol)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_CPU);
	r.v[APX_CPU_TS_NS] = ts;
	r.v[APX_CPU_PID] = 100;
	r.v[APX_CPU_TID] = tid;
	r.v[APX_CPU_UTIME_NS] = ts / 4;
	r.v[APX_CPU_VOL_CSW] = vol;
	r.v[APX_CPU_INVOL_CSW] = invol;
	apx_writer_add(t->w, &r);
}

void tg_process(struct tg *t, uint64_t ts, uint64_t pid, uint64_t ppid, const char *comm)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_PROCESS);
	r.v[APX_PROCESS_PID] = pid;
	r.v[APX_PROCESS_PPID] = ppid;
	r.v[APX_PROCESS_START_NS] = ts;
	apx_rec_set_str(&r, APX_PROCESS_COMM, comm);
	r.v[APX_PROCESS_USES_CUDA] = 2;
	apx_writer_add(t->w, &r);
	seen(t, ts);
}

void tg_uvm(struct tg *t, uint64_t start, uint64_t end, unsigned kind, uint64_t bytes)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_UVM);
	r.v[APX_UVM_START_NS] = start;
	r.v[APX_UVM_END_NS] = end;
	r.v[APX_UVM_KIND] = kind;
	r.v[APX_UVM_BYTES] = bytes;
	apx_writer_add(t->w, &r);
	seen(t, end);
}

void tg_marker(struct tg *t, uint64_t start, uint64_t end, const char *name)
{
	struct apx_rec r;
	uint32_t id;

	apx_rec_init(&r, APX_REC_MARKER);
	apx_writer_intern(t->w, name, strlen(name), &id);
	r.v[APX_MARKER_START_NS] = start;
	r.v[APX_MARKER_END_NS] = end;
	r.v[APX_MARKER_NAME] = id;
	r.v[APX_MARKER_KIND] = APX_MARKER_RANGE;
	apx_writer_add(t->w, &r);
	seen(t, end);
}

void tg_api(struct tg *t, uint64_t start, uint64_t end, uint64_t corr, uint64_t tid,
	    const char *name)
{
	struct apx_rec a;
	uint32_t id;

	apx_rec_init(&a, APX_REC_API);
	apx_writer_intern(t->w, name, strlen(name), &id);
	a.v[APX_API_START_NS] = start;
	a.v[APX_API_END_NS] = end;
	a.v[APX_API_DOMAIN] = APX_API_RUNTIME;
	a.v[APX_API_CORRELATION] = corr;
	a.v[APX_API_TID] = tid;
	a.v[APX_API_NAME] = id;
	apx_writer_add(t->w, &a);
	seen(t, end);
}

void tg_kv(struct tg *t, const char *key, const char *value)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_KV);
	apx_rec_set_str(&r, APX_KV_KEY, key);
	apx_rec_set_str(&r, APX_KV_VALUE, value);
	apx_writer_add(t->w, &r);
}

static void metric_rec(struct tg *t, uint64_t ts, uint64_t end, const char *name,
		       const char *unit, uint32_t device, uint64_t pid, double value)
{
	struct apx_rec r;
	uint32_t nid, uid;

	apx_rec_init(&r, APX_REC_METRIC);
	apx_writer_intern(t->w, name, strlen(name), &nid);
	apx_writer_intern(t->w, unit, strlen(unit), &uid);
	r.v[APX_METRIC_TS_NS] = ts;
	r.v[APX_METRIC_END_NS] = end;
	r.v[APX_METRIC_NAME] = nid;
	r.v[APX_METRIC_UNIT] = uid;
	r.v[APX_METRIC_DEVICE] = device;
	r.v[APX_METRIC_PID] = pid;
	apx_rec_set_f64(&r, APX_METRIC_VALUE, value);
	apx_writer_add(t->w, &r);
	seen(t, end > ts ? end : ts);
}

void tg_counter(struct tg *t, uint64_t corr, const char *metric, double value, uint64_t passes)
{
	struct apx_rec r;
	uint32_t id;

	apx_rec_init(&r, APX_REC_COUNTER);
	apx_writer_intern(t->w, metric, strlen(metric), &id);
	r.v[APX_COUNTER_CORRELATION] = corr;
	r.v[APX_COUNTER_NAME] = id;
	r.v[APX_COUNTER_PASSES] = passes;
	apx_rec_set_f64(&r, APX_COUNTER_VALUE, value);
	apx_writer_add(t->w, &r);
}

void tg_metric(struct tg *t, uint64_t ts, const char *name, const char *unit, uint32_t device,
	       uint64_t pid, double value)
{
	metric_rec(t, ts, 0, name, unit, device, pid, value);
}

void tg_metric_span(struct tg *t, uint64_t start, uint64_t end, const char *name, const char *unit,
		    uint32_t device, double value)
{
	metric_rec(t, start, end, name, unit, device, 0, value);
}

void tg_finding(struct tg *t, const char *rule, unsigned severity, uint64_t saving_ns,
		const char *title)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_FINDING);
	r.v[APX_FINDING_TS_NS] = t->end_ns ? t->end_ns : 2000;
	apx_rec_set_str(&r, APX_FINDING_RULE, rule);
	r.v[APX_FINDING_SEVERITY] = severity;
	r.v[APX_FINDING_SAVING_NS] = saving_ns;
	r.v[APX_FINDING_CONFIDENCE_PCT] = 100;
	apx_rec_set_str(&r, APX_FINDING_TITLE, title);
	apx_writer_add(t->w, &r);
}

void tg_apw(struct tg *t, uint64_t ts, uint64_t stream, uint64_t base, uint64_t bytes)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_CONFIG);
	r.v[APX_CONFIG_TS_NS] = ts;
	r.v[APX_CONFIG_KIND] = APX_CONFIG_APW_STREAM;
	r.v[APX_CONFIG_STREAM] = stream;
	r.v[APX_CONFIG_APW_BASE] = base;
	r.v[APX_CONFIG_APW_BYTES] = bytes;
	r.v[APX_CONFIG_APW_HIT_PPM] = 500000;
	r.v[APX_CONFIG_APW_HIT_PROP] = APX_ACCESS_PERSISTING;
	r.v[APX_CONFIG_APW_MISS_PROP] = APX_ACCESS_STREAMING;
	apx_writer_add(t->w, &r);
	seen(t, ts);
}

void tg_l2_limit(struct tg *t, uint64_t ts, uint64_t bytes)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_CONFIG);
	r.v[APX_CONFIG_TS_NS] = ts;
	r.v[APX_CONFIG_KIND] = APX_CONFIG_L2_PERSIST_LIMIT;
	r.v[APX_CONFIG_VALUE] = bytes;
	apx_writer_add(t->w, &r);
	seen(t, ts);
}

int tg_close(struct tg *t)
{
	return apx_writer_close(t->w, t->end_ns, 0);
}

struct apx_model *tg_model(struct tg *t, size_t n)
{
	struct apx_model *m = apx_model_new();
	struct apx_diag d;
	int bad = !m;

	for (size_t i = 0; i < n; i++) {
		bad |= tg_close(&t[i]) < 0 || (m && apx_model_add_file(m, t[i].path, &d) < 0);
		unlink(t[i].path);
	}
	if (bad || apx_model_finish(m) < 0) {
		apx_model_free(m);
		return NULL;
	}
	return m;
}

void tg_frame(struct tg *t, uint64_t id, const char *file, const char *func, uint64_t line)
{
	struct apx_rec r;
	uint32_t fid, nid;

	apx_rec_init(&r, APX_REC_FRAME);
	apx_writer_intern(t->w, file, strlen(file), &fid);
	apx_writer_intern(t->w, func, strlen(func), &nid);
	r.v[APX_FRAME_ID] = id;
	r.v[APX_FRAME_KIND] = APX_FRAME_PYTHON;
	r.v[APX_FRAME_FILE] = fid;
	r.v[APX_FRAME_FUNC] = nid;
	r.v[APX_FRAME_LINE] = line;
	apx_writer_add(t->w, &r);
}

void tg_stack_bytes(struct tg *t, uint64_t id, const uint8_t *frames, size_t len)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_STACK);
	r.v[APX_STACK_ID] = id;
	apx_rec_set_bytes(&r, APX_STACK_FRAMES, frames, len);
	apx_writer_add(t->w, &r);
}

void tg_stack(struct tg *t, uint64_t id, const uint64_t *frames, size_t n)
{
	uint8_t buf[10 * 300];
	size_t len = 0;

	for (size_t i = 0; i < n && len + 10 <= sizeof(buf); i++) {
		uint64_t v = frames[i];

		do {
			buf[len++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
			v >>= 7;
		} while (v);
	}
	tg_stack_bytes(t, id, buf, len);
}

void tg_sample(struct tg *t, uint64_t ts, uint64_t tid, uint64_t stack, unsigned state,
	       int64_t syscall, uint64_t cpu_ns, uint64_t period_ns)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_SAMPLE);
	r.v[APX_SAMPLE_TS_NS] = ts;
	r.v[APX_SAMPLE_TID] = tid;
	r.v[APX_SAMPLE_STACK] = stack;
	r.v[APX_SAMPLE_STATE] = state;
	apx_rec_set_i64(&r, APX_SAMPLE_SYSCALL, syscall);
	r.v[APX_SAMPLE_CPU_NS] = cpu_ns;
	r.v[APX_SAMPLE_PERIOD_NS] = period_ns;
	apx_writer_add(t->w, &r);
	seen(t, ts);
}

void tg_thread(struct tg *t, uint64_t tid, const char *name)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_THREAD);
	r.v[APX_THREAD_TID] = tid;
	apx_rec_set_str(&r, APX_THREAD_NAME, name);
	apx_writer_add(t->w, &r);
}

void tg_kernel_launch(struct tg *t, uint64_t start, uint64_t dur, const char *name,
		      uint64_t launch_ns, uint64_t thread, uint64_t tid)
{
	struct apx_rec k;
	uint32_t id;

	apx_rec_init(&k, APX_REC_KERNEL);
	k.v[APX_KERNEL_STACK] = t->stack;
	apx_writer_intern(t->w, name, strlen(name), &id);
	k.v[APX_KERNEL_START_NS] = start;
	k.v[APX_KERNEL_END_NS] = start + dur;
	k.v[APX_KERNEL_STREAM] = 7;
	k.v[APX_KERNEL_CORRELATION] = ++t->corr;
	k.v[APX_KERNEL_NAME] = id;
	k.v[APX_KERNEL_BLOCK_X] = 256;
	k.v[APX_KERNEL_BLOCK_Y] = k.v[APX_KERNEL_BLOCK_Z] = 1;
	k.v[APX_KERNEL_GRID_X] = k.v[APX_KERNEL_GRID_Y] = k.v[APX_KERNEL_GRID_Z] = 1;
	k.v[APX_KERNEL_TID] = tid;
	k.v[APX_KERNEL_LAUNCH_NS] = launch_ns;
	k.v[APX_KERNEL_LAUNCH_THREAD] = thread;
	apx_writer_add(t->w, &k);
	seen(t, start + dur);
}

static void marker_rec(struct tg *t, uint64_t start, uint64_t end, const char *name,
		       uint64_t tid, uint64_t seq1, uint64_t flags)
{
	struct apx_rec r;
	uint32_t id;

	apx_rec_init(&r, APX_REC_MARKER);
	apx_writer_intern(t->w, name, strlen(name), &id);
	r.v[APX_MARKER_START_NS] = start;
	r.v[APX_MARKER_END_NS] = end;
	r.v[APX_MARKER_NAME] = id;
	r.v[APX_MARKER_TID] = tid;
	r.v[APX_MARKER_KIND] = APX_MARKER_RANGE;
	r.v[APX_MARKER_SEQ] = seq1;
	r.v[APX_MARKER_FLAGS] = flags;
	apx_writer_add(t->w, &r);
	seen(t, end);
}

void tg_marker_on(struct tg *t, uint64_t start, uint64_t end, const char *name, uint64_t tid)
{
	marker_rec(t, start, end, name, tid, 0, 0);
}

void tg_marker_op(struct tg *t, uint64_t start, uint64_t end, const char *op, uint64_t tid,
		  uint64_t seq)
{
	marker_rec(t, start, end, op, tid, seq == UINT64_MAX ? 0 : seq + 1, 1);
}
