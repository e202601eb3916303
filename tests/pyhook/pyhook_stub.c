/*
 * pyhook_stub.c - libapx-pyhook-stub.so, the collector's stand-in for the Python hooks' tests
 * (test_apx_site.py): it exports the same apx_py_* functions as libapx-inject.so, from the
 * same ring (lib/collector/pyhook.c), and is found by apx_site.py the same way (its path in
 * CUDA_INJECTION64_PATH). Loading it plays the part of CUDA's initialisation: its constructor
 * publishes the ring; at exit its destructor drains the ring into a real trace,
 * $APX_PYHOOK_STUB_OUT, which apx report then reads. No writer thread: one drain at the end
 * (the ring holds 16384 slots, more than the tests put in it).
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "collector/pyhook.h"

#include "base/banned.h"

static struct apx_pyhook *hook;
static uint64_t loaded_ns;	/* the trace's start: when the stub was loaded */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((constructor)) static void stub_start(void)
{
	loaded_ns = mono_ns();
	hook = apx_pyhook_new();
	apx_pyhook_publish(hook);
}

__attribute__((destructor)) static void stub_finish(void)
{
	const char *out = getenv("APX_PYHOOK_STUB_OUT");
	struct apx_writer *w;
	struct apx_rec h;
	uint64_t now = mono_ns();

	if (!hook || !out || !*out)
		return;
	apx_pyhook_publish(NULL);
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "apx-pyhook-stub");
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = (uint64_t)getpid();
	h.v[APX_HEADER_START_NS] = loaded_ns;
	if (apx_writer_open(out, 1, &h, NULL, &w) < 0)
		return;
	apx_pyhook_drain(hook, w, now, 1);
	(void)apx_writer_close(w, now, 0);
}
