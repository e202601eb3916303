/*
 * build_flame.c - the flame graphs' trees (flame.h) from the event store: every kernel's
 * duration added along its launch stack (root first: the outermost frame under the root,
 * the innermost at the leaf; kernels without a stack under "[no Python stack]"), and every
 * thread sample's period along thread > state > stack. Frames are merged by (file, function,
 * line), so one line of two processes is one node. The values of each stack are summed first
 * (kernels repeat their stacks), then each stack is added once. Children are sorted largest
 * first (ties by name), so the output does not depend on the order of the input. Called by
 * build_stacks.c; single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stacks.h"
#include "analysis/store.h"
#include "report/doc.h"
#include "report/flame.h"
#include "base/json.h"

#include "base/banned.h"

#define NONE UINT32_MAX

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t key_hash(uint32_t parent, uint32_t file, uint32_t func, uint32_t line)
{
	return mix(mix(mix(mix(0, parent), file), func), line);
}

static int ht_grow(struct apx_rflame *f)
{
	size_t cap = f->htcap ? f->htcap * 2 : 1024;
	uint32_t *ht = malloc(cap * sizeof(*ht));

	if (!ht)
		return -ENOMEM;
	memset(ht, 0xff, cap * sizeof(*ht));
	for (size_t i = 0; i < f->nn; i++) {
		const struct apx_rflame_node *n = &f->n[i];
		size_t j;

		if (n->parent == NONE)
			continue;
		j = key_hash(n->parent, n->file, n->func, n->line) & (cap - 1);
		while (ht[j] != NONE)
			j = (j + 1) & (cap - 1);
		ht[j] = (uint32_t)i;
	}
	free(f->ht);
	f->ht = ht;
	f->htcap = cap;
	return 0;
}

/* The child of parent with this key, made when missing; NONE at the node cap, -1 (as
 * UINT32_MAX - 1) when memory ran out. */
#define NOMEM (UINT32_MAX - 1)
static uint32_t child(struct apx_rflame *f, uint32_t parent, uint32_t file, uint32_t func,
		      uint32_t line, uint8_t kind, const char *label)
{
	struct apx_rflame_node *n;
	size_t j;

	if ((f->nn + 1) * 2 > f->htcap && ht_grow(f) < 0)
		return NOMEM;
	j = key_hash(parent, file, func, line) & (f->htcap - 1);
	for (; f->ht[j] != NONE; j = (j + 1) & (f->htcap - 1)) {
		n = &f->n[f->ht[j]];
		if (n->parent == parent && n->file == file && n->func == func && n->line == line)
			return f->ht[j];
	}
	if (f->nn >= APX_FLAME_NODES_MAX || f->n[parent].depth >= UINT16_MAX - 1)
		return NONE;
	if (f->nn == f->cap) {
		size_t cap = f->cap * 2;
		struct apx_rflame_node *p = realloc(f->n, cap * sizeof(*p));

		if (!p)
			return NOMEM;
		f->n = p;
		f->cap = cap;
	}
	n = &f->n[f->nn];
	*n = (struct apx_rflame_node){ .file = file, .func = func, .line = line, .label = label,
				       .parent = parent, .depth = (uint16_t)(f->n[parent].depth + 1),
				       .kind = kind, .state = f->n[parent].state };
	if (n->depth > f->max_depth)
		f->max_depth = n->depth;
	f->ht[j] = (uint32_t)f->nn;
	return (uint32_t)f->nn++;
}

static struct apx_rflame *tree_new(const struct apx_store *st, const char *key, const char *title,
				   const char *root)
{
	struct apx_rflame *f = calloc(1, sizeof(*f));

	if (!f || !(f->n = malloc(256 * sizeof(*f->n)))) {
		free(f);
		return NULL;
	}
	f->cap = 256;
	f->nn = 1;
	f->key = key;
	f->title = title;
	f->st = st;
	f->n[0] = (struct apx_rflame_node){ .file = NONE, .func = NONE, .line = NONE,
					    .label = root, .parent = NONE, .kind = APX_FK_ROOT };
	return f;
}

void apx_rflame_free(struct apx_rflame *f)
{
	if (!f)
		return;
	free(f->n);
	free(f->kid);
	free(f->ht);
	free(f);
}

/* Add ns along stack s (store stacks[] + 1) under node at; 0 or -ENOMEM. */
static int add_stack(struct apx_rflame *f, uint32_t at, uint32_t s, uint64_t ns)
{
	const struct apx_store *st = f->st;
	const struct apx_es_stack *sk = apx_store_stack(st, s);

	f->n[at].value += ns;
	if (!sk)
		return 0;
	for (uint32_t j = sk->depth; j-- > 0;) {	/* outermost first */
		const struct apx_es_frame *fr = &st->frames[st->stack_frames[sk->first + j]];
		struct apx_es_text path = apx_store_string(st, fr->file);
		uint8_t kind = apx_frame_is_library(path.p, path.len) ? APX_FK_LIBRARY : APX_FK_FRAME;
		uint32_t c = child(f, at, fr->file, fr->func, fr->line, kind, NULL);

		if (c == NOMEM)
			return -ENOMEM;
		if (c == NONE) {
			f->unplaced_ns += ns;
			return 0;
		}
		at = c;
		f->n[at].value += ns;
	}
	return 0;
}

const char *apx_rflame_name(const struct apx_rflame *f, const struct apx_rflame_node *nd,
			    char *buf, size_t cap)
{
	struct apx_es_text file, func;
	const char *base;
	uint32_t blen;

	if (nd->kind != APX_FK_FRAME && nd->kind != APX_FK_LIBRARY) {
		snprintf(buf, cap, "%s", nd->label ? nd->label : "?");
		return buf;
	}
	file = apx_store_string(f->st, nd->file);
	func = apx_store_string(f->st, nd->func);
	base = file.p;
	blen = file.len;
	for (uint32_t i = 0; i < file.len; i++)
		if (file.p[i] == '/') {
			base = file.p + i + 1;
			blen = file.len - i - 1;
		}
	snprintf(buf, cap, "%.*s (%.*s:%" PRIu32 ")", (int)(func.len > 300 ? 300 : func.len),
		 func.p, (int)(blen > 300 ? 300 : blen), base, nd->line);
	return buf;
}

/* Children sorted largest first, then by name: the same tree whatever the input's order. */
static const struct apx_rflame *sort_tree;

static int name_cmp(const struct apx_rflame_node *a, const struct apx_rflame_node *b)
{
	const struct apx_rflame *f = sort_tree;
	struct apx_es_text x, y;
	int c;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->label || b->label)
		return strcmp(a->label ? a->label : "", b->label ? b->label : "");
	x = apx_store_string(f->st, a->func);
	y = apx_store_string(f->st, b->func);
	c = memcmp(x.p, y.p, x.len < y.len ? x.len : y.len);
	if (c || x.len != y.len)
		return c ? c : x.len < y.len ? -1 : 1;
	x = apx_store_string(f->st, a->file);
	y = apx_store_string(f->st, b->file);
	c = memcmp(x.p, y.p, x.len < y.len ? x.len : y.len);
	if (c || x.len != y.len)
		return c ? c : x.len < y.len ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

static int kid_cmp(const void *pa, const void *pb)
{
	const struct apx_rflame_node *a = &sort_tree->n[*(const uint32_t *)pa];
	const struct apx_rflame_node *b = &sort_tree->n[*(const uint32_t *)pb];

	if (a->value != b->value)
		return a->value > b->value ? -1 : 1;
	return name_cmp(a, b);
}

static int finish(struct apx_rflame *f)
{
	uint32_t *pos;

	free(f->ht);
	f->ht = NULL;
	f->htcap = 0;
	f->kid = malloc((f->nn + 1) * sizeof(*f->kid));
	pos = calloc(f->nn + 1, sizeof(*pos));
	if (!f->kid || !pos) {
		free(pos);
		return -ENOMEM;
	}
	for (size_t i = 1; i < f->nn; i++)
		f->n[f->n[i].parent].nkids++;
	for (size_t i = 0, at = 0; i < f->nn; i++) {
		f->n[i].kids = (uint32_t)at;
		pos[i] = (uint32_t)at;
		at += f->n[i].nkids;
	}
	for (size_t i = 1; i < f->nn; i++)
		f->kid[pos[f->n[i].parent]++] = (uint32_t)i;
	free(pos);
	sort_tree = f;
	for (size_t i = 0; i < f->nn; i++)
		if (f->n[i].nkids > 1)
			qsort(f->kid + f->n[i].kids, f->n[i].nkids, sizeof(*f->kid), kid_cmp);
	sort_tree = NULL;
	return 0;
}

static struct apx_rflame *done(struct apx_rflame *f, uint64_t *per_stack, int e)
{
	free(per_stack);
	if (e < 0 || finish(f) < 0 || !f->n[0].value) {
		apx_rflame_free(f);
		return NULL;
	}
	return f;
}

struct apx_rflame *apx_rflame_gpu(struct apx_rdoc *d)
{
	const struct apx_store *st = d->m ? d->m->store : NULL;
	struct apx_rflame *f;
	uint64_t *per_stack, none_ns = 0;
	int any = 0, e = 0;

	if (!st || !st->nstacks || !st->k.n)
		return NULL;
	per_stack = calloc(st->nstacks, sizeof(*per_stack));
	f = tree_new(st, "gpu", "GPU time by Python stack (kernels under their launch stacks)",
		     "all kernels");
	if (!per_stack || !f)
		return done(f, per_stack, -ENOMEM);
	for (size_t i = 0; i < st->k.n; i++) {
		uint64_t ns = apx_store_end(st, APX_ES_KERNEL, i) - st->k.start[i];
		uint32_t s = st->k.stack[i];

		if (s && s <= st->nstacks) {
			per_stack[s - 1] += ns;
			any = 1;
		} else {
			none_ns += ns;
		}
	}
	if (!any)
		return done(f, per_stack, -ENOENT);
	for (uint32_t s = 0; s < st->nstacks && e == 0; s++)
		if (per_stack[s])
			e = add_stack(f, 0, s + 1, per_stack[s]);
	if (none_ns && e == 0) {
		uint32_t c = child(f, 0, NONE, 0, 0, APX_FK_NONE, "[no Python stack]");

		if (c == NOMEM)
			e = -ENOMEM;
		else if (c != NONE)
			f->n[c].value += none_ns;
		f->n[0].value += none_ns;
	}
	return done(f, per_stack, e);
}

static const char *const state_label[] = { "", "running", "waiting", "other" };

static uint8_t state_of(uint8_t s)
{
	switch (s) {
	case APX_TSTATE_RUNNING:
		return APX_FS_RUNNING;
	case APX_TSTATE_SLEEPING:
	case APX_TSTATE_DISK:
	case APX_TSTATE_STOPPED:
		return APX_FS_WAITING;
	default:
		return APX_FS_OTHER;
	}
}

struct apx_rflame *apx_rflame_host(struct apx_rdoc *d)
{
	const struct apx_store *st = d->m ? d->m->store : NULL;
	struct apx_rflame *f;
	uint64_t *per;		/* per (thread, state, stack + 1): summed first */
	size_t nper;
	int e = 0;

	size_t with_stack = 0;

	if (!st || !st->smp.n || !st->nstacks ||
	    st->nthreads > (SIZE_MAX / 8) / 4 / (st->nstacks + 1))
		return NULL;
	for (size_t i = 0; i < st->smp.n && !with_stack; i++)
		with_stack = st->smp.stack[i] && st->smp.stack[i] <= st->nstacks;
	if (!with_stack)	/* no Python frame in any sample: the threads table says it all */
		return NULL;
	f = tree_new(st, "host", "Host samples by thread, state and Python stack", "all samples");
	if (!f)
		return NULL;
	/* a dense table when it is small, else one pass adding each sample directly */
	nper = st->nthreads * 4 * (st->nstacks + 1);
	per = nper <= (1u << 22) ? calloc(nper, sizeof(*per)) : NULL;
	for (size_t i = 0; i < st->smp.n && e == 0; i++) {
		uint32_t th = st->smp.thread[i], s = st->smp.stack[i];
		uint8_t state = state_of(st->smp.state[i]);

		if (th >= st->nthreads)
			continue;
		if (s > st->nstacks)
			s = 0;
		if (per) {
			per[((size_t)th * 4 + state) * (st->nstacks + 1) + s] += st->smp.period[i];
			continue;
		}
		{
			uint32_t tn, sn;

			tn = child(f, 0, NONE, 1, th, APX_FK_THREAD, NULL);
			sn = tn < NOMEM ? child(f, tn, NONE, 2, state, APX_FK_STATE, NULL) : tn;
			if (tn == NOMEM || sn == NOMEM) {
				e = -ENOMEM;
				break;
			}
			f->n[0].value += st->smp.period[i];
			if (tn == NONE || sn == NONE)
				continue;
			f->n[tn].value += st->smp.period[i];
			f->n[sn].state = state;
			e = add_stack(f, sn, s, st->smp.period[i]);
		}
	}
	for (size_t k = 0; per && k < nper && e == 0; k++) {
		size_t th = k / (4 * (st->nstacks + 1));
		uint8_t state = (uint8_t)(k / (st->nstacks + 1) % 4);
		uint32_t s = (uint32_t)(k % (st->nstacks + 1)), tn, sn;

		if (!per[k])
			continue;
		tn = child(f, 0, NONE, 1, (uint32_t)th, APX_FK_THREAD, NULL);
		sn = tn < NOMEM ? child(f, tn, NONE, 2, state, APX_FK_STATE, NULL) : tn;
		if (tn == NOMEM || sn == NOMEM) {
			e = -ENOMEM;
			break;
		}
		f->n[0].value += per[k];
		if (tn == NONE || sn == NONE)
			continue;
		f->n[tn].value += per[k];
		f->n[sn].state = state;
		e = add_stack(f, sn, s, per[k]);
	}
	/* labels of the thread and state nodes; frames below a state inherit its state */
	for (size_t i = 1; i < f->nn && e == 0; i++) {
		struct apx_rflame_node *n = &f->n[i];
		char label[200];

		if (n->kind == APX_FK_THREAD) {
			const struct apx_es_thread *t = &st->threads[n->line];
			uint64_t pid = st->files[t->file].pid;

			if (t->name.len)
				snprintf(label, sizeof(label), "%.*s (tid %" PRIu64 ", pid %" PRIu64 ")",
					 (int)(t->name.len > 100 ? 100 : t->name.len), t->name.p,
					 t->tid, pid);
			else
				snprintf(label, sizeof(label), "thread %" PRIu64 " (pid %" PRIu64 ")",
					 t->tid, pid);
			n->label = apx_rdoc_strdup(d, label, strlen(label));
		} else if (n->kind == APX_FK_STATE) {
			n->label = state_label[n->line < 4 ? n->line : 3];
			n->state = (uint8_t)n->line;
		} else if (n->parent != NONE) {
			n->state = f->n[n->parent].state;
		}
	}
	return done(f, per, e);
}

/* ---- the text view: top paths ---- */
static uint64_t self_value(const struct apx_rflame *f, uint32_t i)
{
	uint64_t v = f->n[i].value;

	for (uint32_t k = 0; k < f->n[i].nkids; k++)
		v -= f->n[f->kid[f->n[i].kids + k]].value;
	return v;
}

void apx_rflame_top_paths(const struct apx_rflame *f, unsigned n,
			  void (*fn)(void *ctx, const char *line), void *ctx)
{
	uint32_t top[8], path[64];
	uint64_t topv[8];
	unsigned k = 0;

	if (!f || !f->nn || !f->n[0].value)
		return;
	if (n > 8)
		n = 8;
	/* the nodes with the most time of their own (their leaves' stacks), largest first */
	for (uint32_t i = 1; i < f->nn; i++) {
		uint64_t v = self_value(f, i);
		unsigned at = k;

		if (!v || (k == n && v <= topv[n - 1]))
			continue;
		while (at > 0 && topv[at - 1] < v)
			at--;
		if (k < n)
			k++;
		memmove(top + at + 1, top + at, (k - 1 - at) * sizeof(*top));
		memmove(topv + at + 1, topv + at, (k - 1 - at) * sizeof(*topv));
		top[at] = i;
		topv[at] = v;
	}
	for (unsigned i = 0; i < k; i++) {
		char line[1200], name[700];
		unsigned depth = 0;

		for (uint32_t at = top[i]; at && at != NONE && depth < 64; at = f->n[at].parent)
			path[depth++] = at;
		snprintf(line, sizeof(line), "%5.1f%% ", 100.0 * (double)topv[i] / (double)f->n[0].value);
		for (unsigned j = depth; j-- > 0;) {
			size_t len = strlen(line);
			unsigned pos = depth - 1 - j;	/* 0 = outermost */

			if (depth > 5 && pos >= 2 && j >= 3) {
				if (pos == 2)
					snprintf(line + len, sizeof(line) - len, " > ...");
				continue;
			}
			apx_rflame_name(f, &f->n[path[j]], name, sizeof(name));
			snprintf(line + len, sizeof(line) - len, "%s%.80s", pos ? " > " : "", name);
		}
		fn(ctx, line);
	}
}

/* ---- the JSON view (emit_json.c writes it as the "flame" member) ---- */
static void json_node(FILE *out, const struct apx_rflame *f, uint32_t i, unsigned *budget)
{
	const struct apx_rflame_node *n = &f->n[i];
	uint64_t min = f->n[0].value / 200, other = 0;	/* 0.5 % of the root */
	unsigned nother = 0;
	int first = 1;

	(*budget)--;
	fputs("{\"name\":", out);
	if (n->kind == APX_FK_FRAME || n->kind == APX_FK_LIBRARY) {
		struct apx_es_text func = apx_store_string(f->st, n->func);
		struct apx_es_text file = apx_store_string(f->st, n->file);

		apx_json_strn(out, func.p, func.len);
		fputs(",\"file\":", out);
		apx_json_strn(out, file.p, file.len);
		fprintf(out, ",\"line\":%" PRIu32 ",\"library\":%s", n->line,
			n->kind == APX_FK_LIBRARY ? "true" : "false");
	} else {
		apx_json_str(out, n->label ? n->label : "");
		fputs(",\"file\":null,\"line\":null,\"library\":false", out);
	}
	fprintf(out, ",\"value\":%" PRIu64 ",\"children\":[", n->value);
	for (uint32_t k = 0; k < n->nkids; k++) {
		uint32_t c = f->kid[n->kids + k];

		if (f->n[c].value < min || n->depth >= 31 || *budget <= 1) {
			other += f->n[c].value;
			nother++;
			continue;
		}
		if (!first)
			fputc(',', out);
		first = 0;
		json_node(out, f, c, budget);
	}
	if (nother)
		fprintf(out, "%s{\"name\":\"(other: %u)\",\"file\":null,\"line\":null,"
			"\"library\":false,\"value\":%" PRIu64 ",\"children\":[]}", first ? "" : ",",
			nother, other);
	fputs("]}", out);
}

void apx_rflame_json(FILE *out, const struct apx_rflame *f)
{
	unsigned budget = APX_FLAME_JSON_NODES;

	if (!f || !f->nn) {
		fputs("null", out);
		return;
	}
	json_node(out, f, 0, &budget);
}
