/*
 * capture.c - the capture-range source (`apx analyze --capture-range=cudaProfilerApi`, as in
 * nsys): with APX_CAPTURE=cudaProfilerApi nothing is collected until the program calls
 * cudaProfilerStart() (torch.cuda.profiler.start()), and collection pauses again at
 * cudaProfilerStop(); a program may open any number of ranges.
 *
 * Who runs what: start() (InitializeInjection's thread) enables the two driver callbacks and
 * leaves the activity kinds off (src_activity.c asks apx_capture_mode()); the callbacks run
 * on the application thread that calls start or stop, inside that call: they switch the
 * activity kinds on or off at once (the NVIDIA sample's pattern, CUPTI.md §1.1), put a
 * CAPTURE event with the time into the ring (encode.c writes kv "capture" = "start <ns>" or
 * "stop <ns>", which the analysis reads as the collected intervals), remember the edge for
 * apx_capture_collected() (the PM sampling source keeps only the samples that overlap a range,
 * src_pmsampling.c) and wake the writer. Start and
 * stop are rare calls, so a mutex orders two threads racing to flip the state. Kernels still
 * running when cudaProfilerStop is called may be missing from the trace (CUPTI drops the
 * records of a kind that is off when they complete): synchronize first when that matters.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/collector.h"

#include "base/banned.h"

#define EDGES_MAX 4096u	/* edges remembered for apx_capture_collected(); later ones: all kept */

static pthread_mutex_t flip_lock = PTHREAD_MUTEX_INITIALIZER;
static int mode;	/* set by start(), read-only afterwards */
/* the edges' times, in order: written under flip_lock, published by edges_n (release) */
static uint64_t edge_ns[EDGES_MAX];
static _Atomic uint32_t edges_n;

int apx_capture_mode(void)
{
	return mode;
}

/* Whether [t0, t1] (trace clock) overlaps a capture range: collection is on at t0, or an edge
 * falls inside. Edges alternate start, stop, ... from "off". Lock-free (the writer's PM
 * sampling source asks it for every sample); past EDGES_MAX edges everything is kept. */
int apx_capture_collected(uint64_t t0, uint64_t t1)
{
	uint32_t n = atomic_load_explicit(&edges_n, memory_order_acquire), before = 0;

	if (!mode || n >= EDGES_MAX)
		return 1;
	for (uint32_t k = 0; k < n; k++) {
		if (edge_ns[k] > t0)
			return (before & 1) || edge_ns[k] <= t1;
		before++;
	}
	return before & 1;
}

/* under flip_lock: the edge's time, for apx_capture_collected() */
static void remember_edge(uint64_t t)
{
	uint32_t n = atomic_load_explicit(&edges_n, memory_order_relaxed);

	if (n < EDGES_MAX) {
		edge_ns[n] = t;
		atomic_store_explicit(&edges_n, n + 1, memory_order_release);
	}
}

static void flip(struct apx_collector *c, int on)
{
	struct apx_event *ev;
	uint64_t pos, t;

	pthread_mutex_lock(&flip_lock);
	if (atomic_load(&c->enabled) == on || atomic_load(&c->exiting)) {
		pthread_mutex_unlock(&flip_lock);
		return;		/* a second start, or a stop while stopped: nothing to do */
	}
	/* the edge: a range ends when the program asks (before the kinds are off), and starts
	 * once they are on */
	t = on ? 0 : apx_mono_ns();
	apx_activity_set_kinds(c, on, 0);
	if (on)
		t = apx_mono_ns();
	remember_edge(t);
	ev = apx_ring_begin(c, &pos);
	ev->kind = APX_EV_CAPTURE;
	ev->ts_ns = t;
	ev->value = (uint64_t)on;
	apx_ring_commit(ev, pos);
	pthread_mutex_unlock(&flip_lock);
	apx_writer_wake(c);
}

void apx_capture_callback(struct apx_collector *c, CUpti_CallbackId cbid,
			  const CUpti_CallbackData *cb)
{
	if (!mode)
		return;
	/* a range starts once cuProfilerStart has returned and ends before cuProfilerStop runs */
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart && cb->callbackSite == CUPTI_API_EXIT)
		flip(c, 1);
	else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop &&
		 cb->callbackSite == CUPTI_API_ENTER)
		flip(c, 0);
}

static int capture_start(struct apx_collector *c)
{
	const char *want = apx_getenv("APX_CAPTURE");
	CUptiResult r;

	if (!want || !*want || !strcmp(want, "none"))
		return 0;
	if (strcmp(want, "cudaProfilerApi")) {
		char shown[65];
		size_t i;

		for (i = 0; want[i] && i < sizeof(shown) - 1; i++)	/* printable, short */
			shown[i] = want[i] >= 0x20 && want[i] < 0x7f ? want[i] : '?';
		shown[i] = 0;
		apx_say("APX_CAPTURE='%s' is not a capture range (cudaProfilerApi or none): "
			"collecting the whole run", shown);
		apx_degraded(c, "capture: APX_CAPTURE is not cudaProfilerApi or none, the whole run "
			     "is collected", 0);
		return -1;
	}
	r = cuptiEnableCallback(1, c->sub, CUPTI_CB_DOMAIN_DRIVER_API,
				CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
	if (r == CUPTI_SUCCESS)
		r = cuptiEnableCallback(1, c->sub, CUPTI_CB_DOMAIN_DRIVER_API,
					CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
	if (r != CUPTI_SUCCESS) {
		apx_degraded(c, "capture: cudaProfilerStart/Stop callbacks refused, the whole run is "
			     "collected", r);
		return -1;
	}
	mode = 1;
	apx_add_kv(c, "capture_mode", "cudaProfilerApi");	/* the writer is not running yet */
	return 0;
}

/* At the end (writer): what switching the kinds cost the program at each start or stop. */
static void capture_finish(struct apx_collector *c, uint64_t now_ns)
{
	char text[512];

	(void)now_ns;
	apx_activity_switch_costs(text, sizeof(text));
	if (text[0])
		apx_add_kv(c, "capture_switch_max", text);
}

const struct apx_source apx_source_capture = {
	.name = "capture",
	.start = capture_start,
	.finish = capture_finish,
};
