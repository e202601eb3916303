/*
 * src_pyhook.c - the Python hooks as a source of the collector (collector.h's table): function
 * ranges of `apx analyze --trace-functions` and PyTorch memory samples (--memory-sampling),
 * put into pyhook.c's ring by apx_site.py (the sitecustomize apx analyze puts on PYTHONPATH)
 * through the exported apx_py_* functions; and the cuBLAS and cuDNN calls libapx-watch.so
 * times (libcalls.c, APX_LIBCALLS), through the same functions.
 *
 * Who runs what: start() (the thread that initialised CUDA) allocates the ring and the name
 * table when apx analyze asked for the hooks (APX_PY_HOOKS=1) and publishes them, from then on
 * apx_py_* accept; drain() (writer thread) encodes the ring into MARKER/METRIC records on
 * every wake-up and writes LOSS records once per period; finish() (writer thread, last) drains
 * once more and writes the kv "python_hooks" (what was recorded and lost). Nothing here runs
 * on the program's threads; the hot path is pyhook.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/collector.h"
#include "collector/pyhook.h"

#include "base/banned.h"

/* the hooks of this process: written by start() before publishing, read by the writer */
static struct apx_pyhook *hook;

static int pyhook_start(struct apx_collector *c)
{
	const char *on = apx_getenv("APX_PY_HOOKS"), *libs = apx_getenv("APX_LIBCALLS");

	/* the Python hooks, or libapx-watch.so's cuBLAS/cuDNN calls (libcalls.c) */
	if ((!on || strcmp(on, "1")) && (!libs || !*libs || !strcmp(libs, "none")))
		return 0;
	hook = apx_pyhook_new();
	if (!hook) {
		apx_degraded(c, "python-hooks: out of memory for the ring; function ranges and "
			     "PyTorch memory samples not recorded", 0);
		return -1;
	}
	apx_pyhook_publish(hook);
	return 0;
}

static void pyhook_drain(struct apx_collector *c, uint64_t now_ns, int periodic)
{
	apx_pyhook_drain(hook, c->w, now_ns, periodic);
}

static void pyhook_finish(struct apx_collector *c, uint64_t now_ns)
{
	struct apx_pyhook_stats st;
	char text[192];

	if (!hook)
		return;
	apx_pyhook_drain(hook, c->w, now_ns, 1);
	apx_pyhook_stats(hook, &st);
	snprintf(text, sizeof(text), "ranges %llu, samples %llu, names %u, lost %llu",
		 (unsigned long long)st.ranges, (unsigned long long)st.metrics, st.names,
		 (unsigned long long)(st.lost_ring + st.lost_python));
	apx_add_kv(c, "python_hooks", text);
	apx_pyhook_publish(NULL);	/* late calls (atexit of the program) are dropped */
}

const struct apx_source apx_source_pyhook = {
	.name = "pyhook",
	.start = pyhook_start,
	.drain = pyhook_drain,
	.finish = pyhook_finish,
};
