/*
 * saving.c - what the rules ask the what-if simulator (whatif.h): the simulated steady window
 * after a transformation, the unchanged graph against the recorded window (the fidelity
 * check), and a fix's saving (simulated before - after, both without the collector's own cost
 * per launch). Called by the rules (rules/rule_*.c) and the tests; reads model->whatif, which
 * apx_model_finish built.
 */
#include "analysis/whatif/whatif.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model.h"

#include "base/banned.h"

int apx_whatif_simulate(const struct apx_model *m, const struct apx_wi_params *p,
			struct apx_wi_result *ret)
{
	const struct apx_whatif *w = m ? m->whatif : NULL;
	struct apx_wi_task *t = NULL;
	struct apx_wi_result res = { 0 };
	uint32_t ns;
	int r;

	if (!w || !w->n)
		return -ENOENT;
	if ((r = apx_whatif_transform(m, w, p, &t, &ns, &res.changed)) < 0)
		return r;
	r = apx_whatif_run(w, t, w->n, ns, &res.sim_ns);
	for (size_t i = 0; r == 0 && i < w->n; i++)
		if ((w->t[i].kind == APX_WI_COPY || w->t[i].kind == APX_WI_KERNEL) &&
		    memcmp(&w->t[i], &t[i], sizeof(*t))) {
			res.changed_ops++;
			res.changed_inferred += !!(w->t[i].flags & APX_WI_F_INFERRED);
		}
	free(t);
	if (r < 0)
		return r;
	res.window_ns = w->rec_end_ns > w->start_ns ? w->rec_end_ns - w->start_ns : 0;
	*ret = res;
	return 0;
}

int apx_whatif_fidelity(const struct apx_model *m, struct apx_wi_result *ret)
{
	struct apx_wi_params p = { .xform = APX_WI_X_NONE, .keep_collector = 1 };

	return apx_whatif_simulate(m, &p, ret);
}

int apx_whatif_saving(const struct apx_model *m, const struct apx_wi_params *p,
		      double *ret_saving_ns)
{
	struct apx_wi_params base = *p, after = *p;
	struct apx_wi_result b, a;
	int r;

	base.xform = APX_WI_X_NONE;
	base.keep_collector = after.keep_collector = 0;
	if ((r = apx_whatif_simulate(m, &base, &b)) < 0 || (r = apx_whatif_simulate(m, &after, &a)) < 0)
		return r;
	if (!a.changed)
		return -ENOENT;
	/* copies and kernels without recorded host times (copies: a trace without the copy
	 * callbacks' times, an import; kernels: no Python stacks, so no launch times) were placed
	 * as late as the GPU allowed: how far the host would run ahead once they are faster is
	 * not in the trace, so the simulator has no saving for the fixes that change them */
	if (a.changed_inferred == a.changed_ops &&
	    (p->xform == APX_WI_X_PIN_COPIES || p->xform == APX_WI_X_COPY_STREAM ||
	     p->xform == APX_WI_X_ASYNC_COPIES || p->xform == APX_WI_X_KERNEL_SPEEDUP))
		return -ENOENT;
	*ret_saving_ns = b.sim_ns > a.sim_ns ? (double)(b.sim_ns - a.sim_ns) : 0;
	return 0;
}

const char *apx_wi_xform_name(enum apx_wi_xform x)
{
	static const char *const names[APX_WI_X__COUNT] = {
		[APX_WI_X_NONE] = "none",
		[APX_WI_X_REMOVE_SYNCS] = "remove-syncs",
		[APX_WI_X_PIN_COPIES] = "pin-copies",
		[APX_WI_X_COPY_STREAM] = "copy-stream",
		[APX_WI_X_CUDA_GRAPH] = "cuda-graph",
		[APX_WI_X_ASYNC_COPIES] = "async-copies",
		[APX_WI_X_KERNEL_SPEEDUP] = "kernel-speedup",
		[APX_WI_X_NO_ALLOC] = "no-alloc",
	};

	return (unsigned)x < APX_WI_X__COUNT ? names[x] : "?";
}

const char *apx_wi_xform_text(enum apx_wi_xform x)
{
	static const char *const text[APX_WI_X__COUNT] = {
		[APX_WI_X_NONE] = "unchanged",
		[APX_WI_X_REMOVE_SYNCS] = "the host syncs and their reads back removed, the host "
					  "running ahead up to the launch queue's depth",
		[APX_WI_X_PIN_COPIES] = "the pageable copies pinned: at the pinned rate, non-blocking",
		[APX_WI_X_COPY_STREAM] = "the copies moved to a side stream, issued a copy ahead",
		[APX_WI_X_CUDA_GRAPH] = "the launches replayed from a CUDA graph: no host work "
					"between them, ~1 us gaps",
		[APX_WI_X_ASYNC_COPIES] = "the blocking copies and memsets non-blocking, copies to "
					  "pageable memory at the pinned rate",
		[APX_WI_X_KERNEL_SPEEDUP] = "the kernels sped up",
		[APX_WI_X_NO_ALLOC] = "the allocator calls removed",
	};

	return (unsigned)x < APX_WI_X__COUNT ? text[x] : "?";
}
