/*
 * tracegen.h - builds small synthetic traces for analysis tests: a file with an H200-like
 * device and the kernels, copies, syncs, allocations and UVM events a test adds, or an nvperfd
 * summary with its key/values, METRIC samples, findings and L2 windows; tg_model() builds the
 * analysis model of them. Times in ns.
 */
#ifndef APX_TEST_TRACEGEN_H
#define APX_TEST_TRACEGEN_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

struct tg {
	struct apx_writer *w;
	char path[64];
	uint64_t corr, end_ns;
	uint64_t stack;			/* the stack id the next kernel, copy, memset or sync
					 * records carry (0: none) */
};

int tg_open(struct tg *t);	/* a new temporary file with header + device 0 */
void tg_kernel(struct tg *t, uint64_t start, uint64_t dur, const char *name, uint64_t stream);
void tg_kernel_cfg(struct tg *t, uint64_t start, uint64_t dur, const char *name, uint32_t block,
		   uint32_t regs, uint32_t smem);
/* A kernel that ran as a node of CUDA graph graph_id (stream 7). */
void tg_kernel_graph(struct tg *t, uint64_t start, uint64_t dur, const char *name,
		     uint64_t graph_id);
void tg_copy(struct tg *t, uint64_t start, uint64_t dur, unsigned kind, unsigned host_kind,
	     uint64_t bytes, int async, uint64_t host_addr, uint64_t stream);
/* An asynchronous host->device copy on stream 7 from host_addr whose source had content
 * fingerprint fp at the call (the collector's host_fp field). */
void tg_copy_fp(struct tg *t, uint64_t start, uint64_t dur, unsigned host_kind, uint64_t bytes,
		uint64_t host_addr, uint64_t fp);
/* A peer-to-peer copy (CUPTI's MEMCPY2 record) on stream 7 from device src to device dst (the
 * process's ordinals), kind P2P. */
void tg_p2p(struct tg *t, uint64_t start, uint64_t dur, uint32_t src, uint32_t dst,
	    uint64_t bytes);
/* A DEVICE record of device id (an H100: sm_90) with uuid (NULL: none), its active NVLinks
 * (nvlink_count; 0: not recorded) and PCIe generation and width (0: not recorded). */
void tg_device(struct tg *t, uint32_t id, const uint8_t *uuid, unsigned nvlinks,
	       unsigned pcie_gen, unsigned pcie_width);
/* A synchronous copy on stream 0 whose call on the host ran enter..exit (the collector's
 * api_enter_ns/api_exit_ns fields). */
void tg_copy_call(struct tg *t, uint64_t start, uint64_t dur, unsigned kind, unsigned host_kind,
		  uint64_t bytes, uint64_t enter, uint64_t exit);
void tg_memset(struct tg *t, uint64_t start, uint64_t dur, int async);
void tg_sync(struct tg *t, uint64_t start, uint64_t end, unsigned kind);
/* A host sync whose call came right after the previous record's (the next correlation id: a
 * sync after tg_copy_call is PyTorch's memcpy_and_sync, a cudaMemcpyAsync then a
 * cudaStreamSynchronize); skip: correlation ids left out between them (other calls). */
void tg_sync_call(struct tg *t, uint64_t start, uint64_t end, unsigned kind, uint64_t skip);
void tg_mem(struct tg *t, uint64_t ts, unsigned op, unsigned kind, uint64_t bytes);
/* An allocation or free at a given address, of device 0. */
void tg_mem_at(struct tg *t, uint64_t ts, unsigned op, unsigned kind, uint64_t bytes,
	       uint64_t addr);
/* A HEAP record of a large host allocation (apx analyze --heap-large-bytes; op ALLOC, bytes)
 * or of its free (op FREE, bytes 0). */
void tg_heap_large(struct tg *t, uint64_t ts, unsigned op, uint64_t addr, uint64_t bytes);
/* The same with the Python stack id of the line that made it. */
void tg_heap_large_at(struct tg *t, uint64_t ts, unsigned op, uint64_t addr, uint64_t bytes,
		      uint64_t stack);
/* A process-wide CPU sample of process 100 with its resident set. */
void tg_cpu(struct tg *t, uint64_t ts, uint64_t rss);
/* A thread's own CPU sample (the sampler's, about once a second): its cumulative voluntary
 * and involuntary context switches. */
void tg_cpu_thread(struct tg *t, uint64_t ts, uint64_t tid, uint64_t vol, uint64_t invol);
/* A PROCESS record (the collector's process tree). */
void tg_process(struct tg *t, uint64_t ts, uint64_t pid, uint64_t ppid, const char *comm);
void tg_uvm(struct tg *t, uint64_t start, uint64_t end, unsigned kind, uint64_t bytes);
void tg_marker(struct tg *t, uint64_t start, uint64_t end, const char *name);
/* A runtime API call of thread tid with correlation id corr (level api). */
void tg_api(struct tg *t, uint64_t start, uint64_t end, uint64_t corr, uint64_t tid,
	    const char *name);
/* A trace of process pid on host, starting at 1 ms, with device 0 named by uuid (16 bytes):
 * for tests of the keys (host, UUID) and (file, stream). */
int tg_open_proc(struct tg *t, const char *host, uint64_t pid, const uint8_t *uuid);
/* An nvperfd summary instead (producer "nvperfd", no device record), of process pid. */
int tg_open_nvperfd(struct tg *t, uint64_t pid);
void tg_kv(struct tg *t, const char *key, const char *value);
void tg_metric(struct tg *t, uint64_t ts, const char *name, const char *unit, uint32_t device,
	       uint64_t pid, double value);
/* A replayed launch's counter (COUNTER record) for the kernel of correlation id corr (t->corr
 * after its tg_kernel). */
void tg_counter(struct tg *t, uint64_t corr, const char *metric, double value, uint64_t passes);
/* A PM-sampling sample: value over [start, end) of device (apx analyze --metrics). */
void tg_metric_span(struct tg *t, uint64_t start, uint64_t end, const char *name, const char *unit,
		    uint32_t device, double value);
void tg_finding(struct tg *t, const char *rule, unsigned severity, uint64_t saving_ns,
		const char *title);
void tg_apw(struct tg *t, uint64_t ts, uint64_t stream, uint64_t base, uint64_t bytes);
/* cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes) at ts. */
void tg_l2_limit(struct tg *t, uint64_t ts, uint64_t bytes);
/* Python stacks: a FRAME record (Python, file:line in func), a STACK record of frame
 * ids (innermost first; tg_stack_bytes: the frame list's bytes as given, for hostile input),
 * a SAMPLE of thread tid (state enum apx_thread_state, syscall -1 none), a THREAD name. */
void tg_frame(struct tg *t, uint64_t id, const char *file, const char *func, uint64_t line);
void tg_stack(struct tg *t, uint64_t id, const uint64_t *frames, size_t n);
void tg_stack_bytes(struct tg *t, uint64_t id, const uint8_t *frames, size_t len);
void tg_sample(struct tg *t, uint64_t ts, uint64_t tid, uint64_t stack, unsigned state,
	       int64_t syscall, uint64_t cpu_ns, uint64_t period_ns);
void tg_thread(struct tg *t, uint64_t tid, const char *name);
/* Backward attribution (apx analyze --python-backward nvtx): a kernel whose
 * launch has a host time, CUPTI's thread id (thread) and the OS tid (tid; 0 none), carrying
 * t->stack; an NVTX range on thread tid named as given (PyTorch's "op, seq = N" names parsed
 * by the reader); one as the collector writes PyTorch's (name cut to op, seq + 1 and flags
 * in fields; seq UINT64_MAX: none). */
void tg_kernel_launch(struct tg *t, uint64_t start, uint64_t dur, const char *name,
		      uint64_t launch_ns, uint64_t thread, uint64_t tid);
void tg_marker_on(struct tg *t, uint64_t start, uint64_t end, const char *name, uint64_t tid);
void tg_marker_op(struct tg *t, uint64_t start, uint64_t end, const char *op, uint64_t tid,
		  uint64_t seq);
/* Close the trace; the caller loads t->path and unlinks it. */
/* Several ranks: a rank's trace (header rank, world size, host, device 0 by uuid) and its NCCL
 * operations (a COLLECTIVE record: enqueued at enq, on the GPU start..end, of comm/seq). */
int tg_open_rank(struct tg *t, const char *host, const uint8_t *uuid, int rank, int world);
void tg_collective(struct tg *t, uint64_t enq, uint64_t start, uint64_t end, unsigned func,
		   uint64_t bytes, uint64_t comm, uint64_t seq, int rank, int nranks);
/* The same with its datatype (enum apx_nccl_dtype; tg_collective's is bf16). */
void tg_collective_dt(struct tg *t, uint64_t enq, uint64_t start, uint64_t end, unsigned func,
		      uint64_t bytes, uint64_t comm, uint64_t seq, int rank, int nranks,
		      unsigned dtype);
int tg_close(struct tg *t);
/* Close n traces and build one model of them (a run's files; the files are unlinked). NULL on
 * failure. */
struct apx_model *tg_model(struct tg *t, size_t n);

#endif
