/*
 * threads.c - one id per host thread for the timeline exporters (walk.h). CUPTI names the
 * thread of an API or NVTX record by the low 32 bits of its pthread_self(), the collector's own
 * records (host syncs timed by its callbacks, thread samples, THREAD names) by the OS tid, so
 * one thread can be two store threads of a file. A CUPTI id is mapped to the OS tid of the
 * same thread where the trace pairs them:
 *
 *   - a host sync timed by the callbacks (OS tid) and CUPTI's API record of the same call
 *     (the same correlation id in the same file: CUPTI gives a call's callback and activity
 *     record one correlation id);
 *   - a kernel launch recorded with both ids (apx analyze --python-backward nvtx).
 *
 * Each CUPTI id takes the OS tid it is paired with most often. Kineto keeps the same map
 * (GenericActivityProfiler::resourceInfo_, keyed by (pid, low 32 bits of the pthread id),
 * filled when a thread records itself; its runtime events then carry the system tid). Called by
 * walk.c, once per export; single-threaded.
 */
#include "export/walk.h"

#include <errno.h>
#include <stdlib.h>

#include "base/banned.h"

struct call {
	uint64_t key;			/* file << 32 | correlation id */
	uint32_t thread;
};

struct pair {
	uint32_t from, to;		/* store threads: CUPTI's id, the OS tid's */
};

static int cmp_call(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->thread < y->thread ? -1 : x->thread > y->thread;
}

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

static int add_pair(struct pair **v, size_t *n, size_t *cap, uint32_t from, uint32_t to)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct pair *p = realloc(*v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = (struct pair){ from, to };
	return 0;
}

/* The calls of the syncs with an OS tid and a correlation id, and of the API records, sorted
 * by (file, correlation id); their pairs added to *v. */
static int pair_calls(const struct apx_store *st, struct pair **v, size_t *n, size_t *cap)
{
	struct call *sy = NULL, *api = NULL;
	size_t ns = 0, na = 0, i = 0, j = 0;
	int r = 0;

	if (!st->y.n || !st->a.n)
		return 0;
	sy = malloc(st->y.n * sizeof(*sy));
	api = malloc(st->a.n * sizeof(*api));
	if (!sy || !api) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < st->y.n; k++) {
		const struct apx_es_thread *t = &st->threads[st->y.thread[k]];

		if (st->y.corr[k] && t->tid)	/* CUPTI's own sync records name no thread */
			sy[ns++] = (struct call){ (uint64_t)t->file << 32 | st->y.corr[k],
						  st->y.thread[k] };
	}
	for (size_t k = 0; k < st->a.n; k++)
		api[na++] = (struct call){ (uint64_t)st->threads[st->a.thread[k]].file << 32 |
					   st->a.corr[k], st->a.thread[k] };
	qsort(sy, ns, sizeof(*sy), cmp_call);
	qsort(api, na, sizeof(*api), cmp_call);
	while (i < ns && j < na && r >= 0) {
		if (sy[i].key < api[j].key) {
			i++;
		} else if (sy[i].key > api[j].key) {
			j++;
		} else {
			/* the same thread under two ids; the same id: nothing to map */
			if (api[j].thread != sy[i].thread)
				r = add_pair(v, n, cap, api[j].thread, sy[i].thread);
			i++;
		}
	}
out:
	free(sy);
	free(api);
	return r;
}

int apx_wk_thread_map(const struct apx_store *st, uint32_t **ret_canon, size_t *ret_mapped)
{
	struct pair *v = NULL;
	size_t n = 0, cap = 0, mapped = 0;
	uint32_t *canon = malloc((st->nthreads + 1) * sizeof(*canon));
	int r;

	if (!canon)
		return -ENOMEM;
	for (size_t t = 0; t < st->nthreads; t++)
		canon[t] = (uint32_t)t;
	r = pair_calls(st, &v, &n, &cap);
	for (size_t k = 0; k < st->k.n && r >= 0; k++)
		if (st->k.lthread[k] != UINT32_MAX && st->k.othread[k] != UINT32_MAX &&
		    st->k.lthread[k] != st->k.othread[k])
			r = add_pair(&v, &n, &cap, st->k.lthread[k], st->k.othread[k]);
	if (r < 0) {
		free(v);
		free(canon);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_pair);
	for (size_t i = 0; i < n;) {
		size_t best = 0, best_n = 0, j = i;

		while (j < n && v[j].from == v[i].from) {	/* runs of (from, to) */
			size_t k = j;

			while (k < n && v[k].from == v[j].from && v[k].to == v[j].to)
				k++;
			if (k - j > best_n) {
				best_n = k - j;
				best = j;
			}
			j = k;
		}
		canon[v[i].from] = v[best].to;
		i = j;
	}
	for (size_t t = 0; t < st->nthreads; t++) {	/* an OS tid is never a CUPTI id too */
		if (canon[t] != t && canon[canon[t]] != canon[t])
			canon[t] = (uint32_t)t;
		mapped += canon[t] != t;
	}
	free(v);
	*ret_canon = canon;
	if (ret_mapped)
		*ret_mapped = mapped;
	return 0;
}
