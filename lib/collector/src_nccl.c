/*
 * src_nccl.c - the collector source of NCCL collectives: enables the NCCL profiler plugin
 * (nccl_plugin.c, whose ncclProfiler_v4/_v5 tables libapx-inject.so exports) at start-up, and
 * drains its finished operations into COLLECTIVE records on the writer thread. Started from
 * inject.c's source table on the thread that initialised CUDA, which is before NCCL can create
 * a communicator (NCCL needs CUDA); a process where the collector is off keeps the plugin
 * inert (NCCL gets an empty activation mask). APX_NCCL=0 turns it off; APX_NCCL_SLOTS sizes
 * the pool of operations in flight (docs/collector.md, "NCCL").
 */
#include <stdio.h>
#include <time.h>

#include "collector/collector.h"
#include "collector/nccl_plugin.h"

#include "base/banned.h"

#define STALE_NS 5000000000ull		/* an enqueued operation without child events for 5 s */

typedef int (*ctx_get_device_fn)(int *dev);	/* cuCtxGetDevice */

static const struct apx_collector *g_col;	/* whose writer the plugin wakes */

/* NCCL's thread: a quarter of the plugin's pool waits to be drained. */
static void wake_writer(void)
{
	apx_writer_wake(g_col);
}

/* NCCL's thread at communicator init has the communicator's device current. */
static int current_device(void)
{
	ctx_get_device_fn fn = (ctx_get_device_fn)apx_cuda_sym("cuCtxGetDevice");
	int dev = -1;

	if (!fn || fn(&dev) != 0)
		return -1;
	return dev;
}

static int nccl_start(struct apx_collector *c)
{
	struct timespec m, r;
	struct apx_nccl_opts o = { .device = -1, .current_device = current_device,
				   .wake = wake_writer };
	int k;

	if (!apx_env_u64("APX_NCCL", 1, 1))
		return -1;
	/* The kernel-channel timers are the GPU's globaltimer, which the driver keeps on the
	 * host's wall clock: trace ns = globaltimer - (wall - monotonic). Checked against the
	 * NCCL kernels' CUPTI records on a GPU (docs/collector.md, "NCCL"). */
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	o.gpu_offset_ns = ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000000ll +
			  ((int64_t)r.tv_nsec - (int64_t)m.tv_nsec);
	g_col = c;
	o.slots = apx_env_u64("APX_NCCL_SLOTS", APX_NCCL_SLOTS_DEFAULT, 1u << 20);
	k = apx_nccl_enable(&o);
	if (k < 0) {
		apx_degraded(c, "nccl: cannot allocate the operation pool", k);
		return -1;
	}
	return 0;
}

static void nccl_drain(struct apx_collector *c, uint64_t now_ns, int periodic)
{
	apx_nccl_drain(c->w, periodic ? now_ns : 0, STALE_NS);
}

static void nccl_finish(struct apx_collector *c, uint64_t now_ns)
{
	struct apx_nccl_stats s;
	char text[256];

	apx_nccl_flush(c->w);
	apx_nccl_stats(&s);
	if (!s.comms)
		return;
	snprintf(text, sizeof(text), "plugin v%d; %llu communicators, %llu operations, %llu "
		 "written (%llu partial), %llu not recorded (pool full), %llu child events of "
		 "other processes, %llu of unknown operations", s.version,
		 (unsigned long long)s.comms, (unsigned long long)s.ops,
		 (unsigned long long)s.written, (unsigned long long)s.partial,
		 (unsigned long long)s.pool_full, (unsigned long long)s.foreign,
		 (unsigned long long)s.unknown_parent);
	apx_add_kv(c, "nccl", text);
	if (s.pool_full)		/* said once, at the end: the pool was full s.pool_full times */
		(void)apx_writer_add_loss(c->w, now_ns, APX_LOSS_POOL_EMPTY, s.pool_full,
					  "nccl: operation pool full (APX_NCCL_SLOTS)");
}

const struct apx_source apx_source_nccl = {
	.name = "nccl",
	.start = nccl_start,
	.drain = nccl_drain,
	.finish = nccl_finish,
};
