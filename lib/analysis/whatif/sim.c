/*
 * sim.c - simulates a what-if graph's tasks (whatif.h): one pass in host order. The host does
 * each task's own work, launches, waits in blocking calls and syncs for the GPU end they await,
 * and holds at most APX_WI_QUEUE_DEPTH unfinished launches; each GPU operation starts at the
 * earliest time its launch, its stream's previous operation (+ its minimum gap), its engine
 * (when it serializes) and its cross-stream dependency allow, plus its recorded delay.
 * Called by saving.c; pure computation, no globals.
 */
#include "analysis/whatif/whatif.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

int apx_whatif_run(const struct apx_whatif *w, const struct apx_wi_task *t, size_t n,
		   uint32_t nstreams, uint64_t *ret_sim_ns)
{
	size_t neng = (size_t)w->ndevices * APX_WI_ENG__COUNT;
	uint64_t *sfree = calloc(nstreams + 1, sizeof(*sfree));
	uint64_t *slaunch = calloc(nstreams + 1, sizeof(*slaunch));	/* + 1: none yet */
	uint64_t *efree = calloc(neng + 1, sizeof(*efree));
	uint64_t *end = calloc(n + 1, sizeof(*end));
	uint32_t *ring = malloc(APX_WI_QUEUE_DEPTH * sizeof(*ring));
	uint64_t h = w->start_ns, last = w->start_ns;
	size_t launched = 0;
	int r = -ENOMEM;

	if (!sfree || !slaunch || !efree || !end || !ring)
		goto out;
	for (uint32_t s = 0; s < nstreams && s < w->nstreams; s++)
		sfree[s] = w->streams[s].free0;
	memcpy(efree, w->eng_free0, neng * sizeof(*efree));
	for (size_t i = 0; i < n; i++) {
		const struct apx_wi_task *k = &t[i];
		uint64_t launch, s, e;

		h += k->pre_ns;
		if (k->flags & APX_WI_F_REMOVED)
			continue;
		if (k->kind == APX_WI_SYNC || k->kind == APX_WI_ALLOC || k->stream >= nstreams ||
		    k->device >= w->ndevices) {
			if (k->await != APX_WI_NONE && k->await < i)
				h = max64(h + k->call_ns, end[k->await]) + k->ret_ns;
			else
				h += k->call_ns + k->ret_ns;
			last = max64(last, h);
			continue;
		}
		if (launched >= APX_WI_QUEUE_DEPTH)	/* the launch queue is full */
			h = max64(h, end[ring[launched % APX_WI_QUEUE_DEPTH]]);
		launch = h;
		if (k->flags & APX_WI_F_EARLY) {	/* issued when the previous one was */
			if (slaunch[k->stream] && slaunch[k->stream] - 1 < launch)
				launch = slaunch[k->stream] - 1;
			slaunch[k->stream] = h + 1;
		}
		s = max64(launch, sfree[k->stream] + k->min_gap_ns);
		if (k->dep != APX_WI_NONE && k->dep < i)
			s = max64(s, end[k->dep]);
		if (k->flags & APX_WI_F_SERIAL)
			s = max64(s, efree[(size_t)k->device * APX_WI_ENG__COUNT + k->engine]);
		s += k->delay_ns;
		e = s + k->dur_ns;
		end[i] = e;
		sfree[k->stream] = e;
		if (k->flags & APX_WI_F_SERIAL) {
			uint64_t *ef = &efree[(size_t)k->device * APX_WI_ENG__COUNT + k->engine];

			*ef = max64(*ef, e);
		}
		ring[launched++ % APX_WI_QUEUE_DEPTH] = (uint32_t)i;
		if (k->flags & APX_WI_F_BLOCKING)
			h = max64(h + k->call_ns, e) + k->ret_ns;
		else
			h += k->call_ns;
		last = max64(last, max64(h, e));
	}
	*ret_sim_ns = last - w->start_ns;
	r = 0;
out:
	free(sfree);
	free(slaunch);
	free(efree);
	free(end);
	free(ring);
	return r;
}
