/*
 * src_nic.c - the NIC source (apx analyze --nic-metrics; APX_NIC_METRICS=1, APX_NIC_HZ default
 * 100, at most 1000, APX_NIC_INCLUDE = a regex of device names): the host's NIC counters
 * (nic_sysfs.h: net devices' byte and packet counts; InfiniBand ports' data, packets, send
 * wait and congestion counters) read from sysfs at a fixed rate, written as METRIC records of
 * the counters' cumulative values on the trace's clock (CLOCK_MONOTONIC, the collectives'
 * timeline); apx report takes per-second rates and mean packet sizes from them
 * (lib/report/build_nic.c). A value that did not change since the last one written is not
 * written again, except the last sample before it changes (a flat stretch stays flat). The
 * line rate of each link that is up (nic.DEV.line_rate, ib.DEV.PORT.line_rate, bit/s), read
 * at start, is written once, at the start's time, by the first drain (the report's
 * network-bound rule compares the collectives' bus bandwidth with it). Without --nic-metrics, a
 * rank of a multi-process job (WORLD_SIZE > 1) still records the line rates, once, and
 * samples nothing (no thread): the rule needs them, reading them costs one sysfs pass.
 *
 * Who runs what: start() (the thread that initialised CUDA) lists the devices, opens every
 * counter file once, and starts a sampler thread of its own (every signal blocked;
 * clock_nanosleep to absolute times; pread on the kept fds; nothing allocated per sample)
 * that fills a single-producer ring; drain() (writer thread) turns the ring into METRIC
 * records; stop() (the exiting thread) joins the sampler; finish() (writer) writes the last
 * values and kv "nic_metrics": devices, samples and the sampler's CPU time. Only one process
 * per host samples: the one with LOCAL_RANK unset or 0 (torchrun's ranks all load the
 * collector). APX_NIC_SYSFS_ROOT (tests only) replaces /sys.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/collector.h"
#include "collector/nic_sysfs.h"

#include "base/banned.h"

#define NIC_SLOTS 2048u			/* samples the ring holds (2 s at 1 kHz) */

static struct {
	struct apx_collector *c;
	struct apx_nic_set set;
	uint64_t period_ns;
	uint64_t *ring;			/* NIC_SLOTS x (1 + n): time, then each counter */
	_Atomic uint64_t head;		/* sampler only */
	uint64_t tail;			/* writer only */
	pthread_t thread;
	int started;
	_Atomic int stop;
	_Atomic uint64_t samples, failed_reads, lapped, late;
	_Atomic uint64_t cpu_ns;	/* the sampler thread's own CPU time, at its end */
	/* writer side: per counter, the last value written and the last one seen */
	uint32_t *ids;			/* name string ids, 0 = not yet */
	uint32_t *unit_ids;
	uint64_t *wr_ts, *wr_v, *seen_ts, *seen_v;
	uint8_t *have;			/* bit 0 written once, bit 1 seen once */
	uint64_t start_ns;		/* when the line rates were read */
	int rates_written;
	int rates_only;			/* no --nic-metrics: the line rates, no sampling */
} nic;

static void *sampler_main(void *arg)
{
	uint64_t next = apx_mono_ns(), stride = nic.set.n + 1;
	struct timespec cpu;
	sigset_t all;

	(void)arg;
	sigfillset(&all);	/* the program's signals never land here */
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!atomic_load_explicit(&nic.stop, memory_order_relaxed)) {
		struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };
		uint64_t h, *slot, now;

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (atomic_load_explicit(&nic.stop, memory_order_relaxed))
			break;
		next += nic.period_ns;
		now = apx_mono_ns();
		if (next < now) {	/* fell behind (a stopped or starved process): skip ahead */
			atomic_fetch_add_explicit(&nic.late, 1, memory_order_relaxed);
			next = now + nic.period_ns;
		}
		if (!atomic_load_explicit(&nic.c->enabled, memory_order_relaxed))
			continue;	/* outside the --delay/--duration window */
		h = atomic_load_explicit(&nic.head, memory_order_relaxed);
		slot = &nic.ring[(h & (NIC_SLOTS - 1)) * stride];
		slot[0] = now;
		for (unsigned i = 0; i < nic.set.n; i++)
			if (apx_nic_read(&nic.set.c[i], &slot[1 + i])) {
				slot[1 + i] = UINT64_MAX;	/* not read this time */
				atomic_fetch_add_explicit(&nic.failed_reads, 1, memory_order_relaxed);
			}
		atomic_store_explicit(&nic.head, h + 1, memory_order_release);
		atomic_fetch_add_explicit(&nic.samples, 1, memory_order_relaxed);
	}
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		atomic_store(&nic.cpu_ns, (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec);
	return NULL;
}

/* Only one process per host: torchrun's launcher has no CUDA, its ranks have LOCAL_RANK. */
static int first_local_process(void)
{
	const char *lr = apx_getenv("LOCAL_RANK");

	return !lr || !*lr || strcmp(lr, "0") == 0;
}

/* No --nic-metrics: a rank of a multi-process job keeps its host's line rates (one sysfs
 * pass at start), for the network-bound rule; anything else records nothing. */
static int rates_only_start(struct apx_collector *c, const char *root, const char *inc)
{
	if (apx_env_u64("WORLD_SIZE", 0, 1u << 24) < 2 || !first_local_process())
		return -1;
	nic.start_ns = apx_mono_ns();
	if (apx_nic_open(&nic.set, root, inc) < 0) {
		apx_nic_close(&nic.set);
		return -1;
	}
	apx_nic_close(&nic.set);	/* the counters' files: not read; the rates stay */
	if (!nic.set.nlinks)
		return -1;
	nic.rates_only = 1;
	(void)c;
	return 0;
}

static int nic_start(struct apx_collector *c)
{
	const char *inc = apx_getenv("APX_NIC_INCLUDE"), *root = apx_getenv("APX_NIC_SYSFS_ROOT");
	uint64_t hz = apx_env_u64("APX_NIC_HZ", 100, 1000);
	size_t n;

	nic.c = c;
	if (apx_env_u64("APX_NIC_METRICS", 0, 1) != 1)
		return rates_only_start(c, root, inc);
	if (!first_local_process()) {
		apx_add_kv(c, "nic_metrics", "not sampled in this process: LOCAL_RANK 0 samples "
			   "the host's NICs");
		return -1;
	}
	if (!hz)
		hz = 100;
	nic.period_ns = 1000000000ull / hz;
	nic.start_ns = apx_mono_ns();
	if (apx_nic_open(&nic.set, root, inc) < 0) {
		apx_degraded(c, "nic-metrics: --nic-device-include is not a valid regular "
			     "expression; NIC counters not sampled", -EINVAL);
		return -1;
	}
	if (!nic.set.n) {
		apx_degraded(c, "nic-metrics: no NIC counter readable in /sys/class/net or "
			     "/sys/class/infiniband (or none matched --nic-device-include)", 0);
		return -1;
	}
	n = nic.set.n;
	nic.ring = calloc((size_t)NIC_SLOTS * (n + 1), sizeof(*nic.ring));
	nic.ids = calloc(n, sizeof(*nic.ids));
	nic.unit_ids = calloc(n, sizeof(*nic.unit_ids));
	nic.wr_ts = calloc(n * 4, sizeof(*nic.wr_ts));
	nic.have = calloc(n, 1);
	if (!nic.ring || !nic.ids || !nic.unit_ids || !nic.wr_ts || !nic.have) {
		apx_degraded(c, "nic-metrics: out of memory; NIC counters not sampled", -ENOMEM);
		apx_nic_close(&nic.set);
		return -1;
	}
	nic.wr_v = nic.wr_ts + n;
	nic.seen_ts = nic.wr_ts + 2 * n;
	nic.seen_v = nic.wr_ts + 3 * n;
	{
		sigset_t all, old;
		int r;

		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		r = pthread_create(&nic.thread, NULL, sampler_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (r) {
			apx_degraded(c, "nic-metrics: no sampler thread; NIC counters not sampled",
				     -r);
			apx_nic_close(&nic.set);
			return -1;
		}
	}
	pthread_setname_np(nic.thread, "apx-nic");
	nic.started = 1;
	return 0;
}

static void write_value(struct apx_collector *c, unsigned i, uint64_t ts, uint64_t v)
{
	struct apx_rec rec;
	const struct apx_nic_counter *k = &nic.set.c[i];

	if (!nic.ids[i]) {
		(void)apx_writer_intern(c->w, k->name, strlen(k->name), &nic.ids[i]);
		(void)apx_writer_intern(c->w, k->unit, strlen(k->unit), &nic.unit_ids[i]);
	}
	apx_rec_init(&rec, APX_REC_METRIC);
	rec.v[APX_METRIC_TS_NS] = ts;
	rec.v[APX_METRIC_NAME] = nic.ids[i];
	rec.v[APX_METRIC_UNIT] = nic.unit_ids[i];
	apx_rec_set_f64(&rec, APX_METRIC_VALUE, (double)v);
	(void)apx_writer_add(c->w, &rec);
	nic.wr_ts[i] = ts;
	nic.wr_v[i] = v;
	nic.have[i] |= 1;
}

/* One counter's sample: written when it changed (after the last unchanged one). */
static void one_value(struct apx_collector *c, unsigned i, uint64_t ts, uint64_t v)
{
	if (v == UINT64_MAX)
		return;
	if (!(nic.have[i] & 1) || v != nic.wr_v[i]) {
		if ((nic.have[i] & 2) && (nic.have[i] & 1) && nic.seen_ts[i] != nic.wr_ts[i])
			write_value(c, i, nic.seen_ts[i], nic.seen_v[i]);
		write_value(c, i, ts, v);
	}
	nic.seen_ts[i] = ts;
	nic.seen_v[i] = v;
	nic.have[i] |= 2;
}

/* The links' line rates, once (writer thread: the writer is not shared with start()). */
static void write_rates(struct apx_collector *c)
{
	uint32_t unit = 0;

	nic.rates_written = 1;
	if (nic.set.nlinks)
		(void)apx_writer_intern(c->w, "bit/s", 5, &unit);
	for (unsigned i = 0; i < nic.set.nlinks; i++) {
		const struct apx_nic_link *l = &nic.set.link[i];
		struct apx_rec rec;
		uint32_t id = 0;

		(void)apx_writer_intern(c->w, l->name, strlen(l->name), &id);
		apx_rec_init(&rec, APX_REC_METRIC);
		rec.v[APX_METRIC_TS_NS] = nic.start_ns;
		rec.v[APX_METRIC_NAME] = id;
		rec.v[APX_METRIC_UNIT] = unit;
		apx_rec_set_f64(&rec, APX_METRIC_VALUE, (double)l->bps);
		(void)apx_writer_add(c->w, &rec);
	}
}

static void nic_drain(struct apx_collector *c, uint64_t now_ns, int periodic)
{
	uint64_t head, stride = nic.set.n + 1;

	(void)now_ns;
	(void)periodic;
	if (!nic.ring && !nic.rates_only)
		return;
	if (!nic.rates_written)
		write_rates(c);
	if (nic.rates_only)
		return;
	head = atomic_load_explicit(&nic.head, memory_order_acquire);
	if (head - nic.tail > NIC_SLOTS) {
		atomic_fetch_add(&nic.lapped, head - nic.tail - NIC_SLOTS);
		nic.tail = head - NIC_SLOTS;
	}
	for (; nic.tail < head; nic.tail++) {
		const uint64_t *slot = &nic.ring[(nic.tail & (NIC_SLOTS - 1)) * stride];

		for (unsigned i = 0; i < nic.set.n; i++)
			one_value(c, i, slot[0], slot[1 + i]);
	}
}

static void nic_stop(struct apx_collector *c)
{
	if (!nic.started || atomic_load(&c->forked))
		return;
	atomic_store(&nic.stop, 1);
	pthread_join(nic.thread, NULL);
	nic.started = 0;
}

static void nic_finish(struct apx_collector *c, uint64_t now_ns)
{
	uint64_t n, cpu;
	char text[400];

	if (nic.rates_only) {
		nic_drain(c, now_ns, 0);
		snprintf(text, sizeof(text), "line rates only (%u link%s; a rank of a "
			 "multi-process job): --nic-metrics samples the counters", nic.set.nlinks,
			 nic.set.nlinks == 1 ? "" : "s");
		apx_add_kv(c, "nic_metrics", text);
		nic.rates_only = 0;
		return;
	}
	if (!nic.ring)
		return;
	nic_stop(c);
	nic_drain(c, now_ns, 0);
	for (unsigned i = 0; i < nic.set.n; i++)	/* the flat end of every counter */
		if ((nic.have[i] & 3) == 3 && nic.seen_ts[i] != nic.wr_ts[i])
			write_value(c, i, nic.seen_ts[i], nic.seen_v[i]);
	n = atomic_load(&nic.samples);
	cpu = atomic_load(&nic.cpu_ns);
	snprintf(text, sizeof(text), "%u net devices, %u InfiniBand ports%s, %u counters, %u "
		 "line rates; %.0f Hz asked; %llu samples, %.1f us CPU a sample on the sampler "
		 "thread (%.3f s in all), %llu reads failed, %llu samples lost (writer lapped), "
		 "%llu late wake-ups%s", nic.set.nnet, nic.set.nib,
		 nic.set.nib ? "" : " (no RDMA NIC on this host)", nic.set.n, nic.set.nlinks,
		 1e9 / (double)nic.period_ns, (unsigned long long)n,
		 n ? (double)cpu / (double)n / 1e3 : 0.0, (double)cpu / 1e9,
		 (unsigned long long)atomic_load(&nic.failed_reads),
		 (unsigned long long)atomic_load(&nic.lapped),
		 (unsigned long long)atomic_load(&nic.late),
		 nic.set.skipped ? "; some counters left out (more than the table holds)" : "");
	apx_add_kv(c, "nic_metrics", text);
	apx_nic_close(&nic.set);
	free(nic.ring);
	nic.ring = NULL;
}

const struct apx_source apx_source_nic = {
	.name = "nic",
	.start = nic_start,
	.drain = nic_drain,
	.stop = nic_stop,
	.finish = nic_finish,
};
