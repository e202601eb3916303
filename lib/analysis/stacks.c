/*
 * stacks.c - which source line each Python stack of the event store stands for (stacks.h):
 * library frames folded into the user line that called them, or the innermost frame with
 * model->frames_all; the lines interned by (file, function, line). Also the steps inside the
 * steady window, the divisor of every "a step" number of the stack views. Called by
 * apx_model_finish() (finish.c) before hotspots.c, threads.c and idle_stacks.c.
 */
#include "analysis/stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/findings.h"
#include "analysis/store.h"

#include "base/banned.h"

int apx_frame_is_library(const char *path, size_t len)
{
	if (!len)
		return 0;
	if (path[0] == '<')
		return 1;
	return apx_text_has(path, len, "/site-packages/") ||
	       apx_text_has(path, len, "/dist-packages/") ||
	       apx_text_has(path, len, "/lib/python3.");
}

static int frame_is_user(const struct apx_store *st, const struct apx_es_frame *f)
{
	struct apx_es_text t = apx_store_string(st, f->file);

	return f->kind != APX_FRAME_NATIVE && !apx_frame_is_library(t.p, t.len);
}

/* The frame a stack stands for (a store frame index), UINT32_MAX for an empty stack. */
static uint32_t key_frame(const struct apx_store *st, const struct apx_es_stack *s, int all)
{
	if (!s->depth)
		return UINT32_MAX;
	for (uint16_t j = 0; !all && j < s->depth; j++)
		if (frame_is_user(st, &st->frames[st->stack_frames[s->first + j]]))
			return st->stack_frames[s->first + j];
	return st->stack_frames[s->first];
}

struct line_table {
	uint32_t *slot;				/* line index + 1, 0 empty */
	size_t cap;
};

static uint64_t line_hash(uint32_t file, uint32_t func, uint32_t line)
{
	uint64_t h = ((uint64_t)file << 32 | func) * 0x9e3779b97f4a7c15ull;

	return (h ^ line) * 0xff51afd7ed558ccdull;
}

/* The line of frame f, added when new. */
static int line_of(struct apx_model *m, struct line_table *t, const struct apx_store *st,
		   const struct apx_es_frame *f, uint32_t *ret)
{
	struct apx_an_line l = { f->file, f->func, f->line, (uint8_t)frame_is_user(st, f) };
	size_t j = line_hash(l.file, l.func, l.line) & (t->cap - 1);
	int r;

	for (; t->slot[j]; j = (j + 1) & (t->cap - 1)) {
		const struct apx_an_line *o = APX_VEC_AT(&m->lines, struct apx_an_line, t->slot[j] - 1);

		if (o->file == l.file && o->func == l.func && o->line == l.line) {
			*ret = t->slot[j] - 1;
			return 0;
		}
	}
	if ((r = apx_vec_push(&m->lines, &l)) < 0)
		return r;
	t->slot[j] = (uint32_t)m->lines.n;
	*ret = (uint32_t)m->lines.n - 1;
	return 0;
}

static uint64_t steady_steps(const struct apx_model *m)
{
	const struct apx_an_steps *s = &m->steady;
	uint64_t n = 0;

	if (s->source == APX_STEPS_NONE || !s->bounds)
		return 0;
	for (uint64_t i = 0; i < s->count; i++)
		n += s->bounds[i] >= m->steady_start_ns && s->bounds[i + 1] <= m->steady_end_ns;
	return n;
}

static int any_stack(const struct apx_store *st)
{
	const uint32_t *cols[] = { st->k.stack, st->c.stack, st->s.stack, st->y.stack,
				   st->smp.stack };
	const size_t ns[] = { st->k.n, st->c.n, st->s.n, st->y.n, st->smp.n };

	for (size_t c = 0; c < sizeof(ns) / sizeof(ns[0]); c++)
		for (size_t i = 0; i < ns[c]; i++)
			if (cols[c][i])
				return 1;
	return 0;
}

int apx_stacks_build(struct apx_model *m)
{
	const struct apx_store *st = m->store;
	struct line_table t = { 0 };
	int r = 0;

	m->steady_steps = steady_steps(m);
	if (!st || !st->nstacks)
		return 0;
	m->has_stacks = any_stack(st);
	m->stack_line = malloc(st->nstacks * sizeof(*m->stack_line));
	for (t.cap = 16; t.cap < 2 * st->nstacks; t.cap *= 2)
		;
	t.slot = calloc(t.cap, sizeof(*t.slot));
	if (!m->stack_line || !t.slot) {
		free(t.slot);
		return -ENOMEM;
	}
	for (size_t i = 0; i < st->nstacks && r == 0; i++) {
		uint32_t f = key_frame(st, &st->stacks[i], m->frames_all);

		m->stack_line[i] = UINT32_MAX;
		if (f != UINT32_MAX)
			r = line_of(m, &t, st, &st->frames[f], &m->stack_line[i]);
	}
	free(t.slot);
	return r;
}
