/*
 * writer_thread.c - the collector's writer thread, the only thread that touches the .apx
 * writer once collection runs. It sleeps on the eventfd that full activity buffers ring (or
 * 100 ms), then drains the event ring and every source; once per flush period (APX_FLUSH_MS,
 * 1 s) it runs the sources' periodic work (CUPTI flush, CPU sample), writes LOSS records and
 * flushes the file, so the file on disk is always a readable prefix. It also opens and closes
 * the --delay/--duration window. Started by inject.c; stops when `stop` is set at exit.
 */
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collector/collector.h"

#include "base/banned.h"

void apx_writer_wake(const struct apx_collector *c)
{
	uint64_t one = 1;

	if (c && c->efd >= 0)
		(void)!write(c->efd, &one, sizeof(one));
}

void apx_add_kv(struct apx_collector *c, const char *key, const char *value)
{
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_KV);
	apx_rec_set_str(&rec, APX_KV_KEY, key);
	apx_rec_set_str(&rec, APX_KV_VALUE, value);
	(void)apx_writer_add(c->w, &rec);
}

static void add_loss(struct apx_collector *c, unsigned source, uint64_t count, const char *reason,
		     uint64_t now)
{
	(void)apx_writer_add_loss(c->w, now, source, count, reason);
}

static void emit_losses(struct apx_collector *c, uint64_t now)
{
	uint64_t d;

	d = atomic_exchange(&c->cupti_dropped, 0);
	if (d)
		add_loss(c, APX_LOSS_CUPTI, d, "records dropped by CUPTI", now);
	d = atomic_exchange(&c->declined, 0);
	if (d)
		add_loss(c, APX_LOSS_POOL_EMPTY, d, "buffers declined: pool empty (count is buffers)",
			 now);
	if (c->ev_lost) {
		add_loss(c, APX_LOSS_OTHER, c->ev_lost, "events lost: ring overrun", now);
		c->ev_lost = 0;
	}
}

/* Another CUPTI activity user in this process (torch.profiler's Kineto enables RUNTIME,
 * EXTERNAL_CORRELATION, OVERHEAD; it also replaces the timestamp callback), or a tool that
 * tried to subscribe after apx and lost (counted by libapx-watch.so when apx analyze preloads
 * it): say it once. */
static void check_foreign(struct apx_collector *c)
{
	static int said_kinds, said_clock, said_lost, looked;
	static unsigned long (*watch_lost)(void);

	if (!looked) {
		looked = 1;
		watch_lost = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "apx_watch_lost");
	}
	if (watch_lost && !said_lost && watch_lost()) {
		said_lost = 1;
		apx_add_kv(c, "degraded", "cupti-lost-by-other: another tool (torch.profiler?) tried to "
			   "start CUPTI after apx had it; one CUPTI client per process on CUDA 13.0, "
			   "so that tool recorded no GPU events (apx's trace is complete)");
		apx_say("another tool (torch.profiler?) tried to use CUPTI after apx took it: it "
			"records no GPU events in this process; apx's trace is complete");
	}
	if (c->enc->foreign && !said_kinds) {
		said_kinds = 1;
		apx_add_kv(c, "degraded", "cupti-shared: another CUPTI user (torch.profiler?) enabled "
			   "activity kinds in this process; one CUPTI client per process on CUDA "
			   "13.0, so its GPU events are lost or mixed with apx's");
	}
	if (c->enc->foreign_clock && !said_clock) {
		said_clock = 1;
		apx_add_kv(c, "degraded", "cupti-clock: CUPTI's timestamp callback was replaced by "
			   "another tool (torch.profiler started after apx?): later records may be "
			   "lost or on its clock");
	}
}

static void drain_all(struct apx_collector *c, uint64_t now, int periodic)
{
	for (size_t i = 0; i < apx_nsources; i++)
		if (apx_sources[i]->drain)
			apx_sources[i]->drain(c, now, periodic);
	apx_ring_drain(c);
}

static void window(struct apx_collector *c, uint64_t now, uint64_t *next)
{
	if (c->win_start_ns && !atomic_load(&c->enabled) && now >= c->win_start_ns &&
	    (!c->win_end_ns || now < c->win_end_ns)) {
		apx_activity_set_kinds(c, 1, 0);
		apx_add_kv(c, "window", "collection started");
	}
	if (c->win_end_ns && atomic_load(&c->enabled) && now >= c->win_end_ns) {
		apx_activity_set_kinds(c, 0, 0);
		apx_add_kv(c, "window", "collection stopped");
		c->win_start_ns = 0;	/* no restart */
		*next = now;
	}
}

void *apx_writer_main(void *collector)
{
	struct apx_collector *c = collector;
	uint64_t next = apx_mono_ns() + c->period_ns;
	uint64_t now;
	char num[32];
	int r;

	{	/* faults of this thread must reach the handler (they cannot be blocked) */
		sigset_t sync;

		sigemptyset(&sync);
		sigaddset(&sync, SIGSEGV);
		sigaddset(&sync, SIGBUS);
		sigaddset(&sync, SIGILL);
		sigaddset(&sync, SIGFPE);
		pthread_sigmask(SIG_UNBLOCK, &sync, NULL);
	}
	for (;;) {
		struct pollfd pfd = { .fd = c->efd, .events = POLLIN };
		uint64_t v;

		if (poll(&pfd, 1, 100) > 0 && (pfd.revents & POLLIN))
			(void)!read(c->efd, &v, sizeof(v));
		now = apx_mono_ns();
		drain_all(c, now, 0);
		if (atomic_load(&c->stop))
			break;
		window(c, now, &next);
		if (now >= next) {
			drain_all(c, now, 1);
			emit_losses(c, now);
			check_foreign(c);
			(void)apx_writer_flush(c->w);
			next = now + c->period_ns;
		}
	}
	now = apx_mono_ns();
	drain_all(c, now, 0);
	for (size_t i = 0; i < apx_nsources; i++)
		if (apx_sources[i]->finish)
			apx_sources[i]->finish(c, now);
	emit_losses(c, now);
	check_foreign(c);
	if (c->enc->untimed) {
		char text[200];

		snprintf(text, sizeof(text), "%llu kernels, copies or memsets came without times (in "
			 "flight when the collection ended, flushed incomplete): left out",
			 (unsigned long long)c->enc->untimed);
		apx_add_kv(c, "activities_untimed", text);
	}
	snprintf(num, sizeof(num), "%llu", (unsigned long long)c->enc->hostptr_joined);
	apx_add_kv(c, "host_addresses_joined", num);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)c->enc->host_fps_joined);
	apx_add_kv(c, "copy_fingerprints_joined", num);
	c->crash_fd = -1;	/* the signal path must not write into a closed fd */
	r = apx_writer_close(c->w, now, 0);
	c->w = NULL;
	if (r < 0)
		apx_say("cannot finish '%s': %s", c->path, strerror(-r));
	return NULL;
}
