/*
 * lines.c - the source lines that cause a finding (stacks.h, struct apx_finding_line): a rule
 * weighs the events behind its finding (syncs, copies, kernels, idle samples of the main
 * thread) by their stacks' lines, and the heaviest lines go into the finding: its typed list,
 * a line of evidence each, the top one in the title. Called by the rules (rules/rule_*.c) on
 * a finished model; allocates per call; no globals.
 */
#include "analysis/stacks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/findings.h"
#include "analysis/store.h"
#include "analysis/views.h"

#include "base/banned.h"

int apx_line_tally_init(struct apx_line_tally *t, const struct apx_model *m)
{
	memset(t, 0, sizeof(*t));
	t->m = m;
	if (!m->has_stacks || !m->lines.n)
		return 0;
	t->count = calloc(m->lines.n, sizeof(*t->count));
	t->ns = calloc(m->lines.n, sizeof(*t->ns));
	if (!t->count || !t->ns) {
		apx_line_tally_release(t);
		return -ENOMEM;
	}
	t->n = m->lines.n;
	return 0;
}

void apx_line_tally_add(struct apx_line_tally *t, uint32_t stack, double count, double ns)
{
	uint32_t l = t->n ? apx_stack_line(t->m, stack) : UINT32_MAX;

	if (l >= t->n)
		return;
	t->count[l] += count;
	t->ns[l] += ns;
	t->added++;
}

void apx_line_tally_release(struct apx_line_tally *t)
{
	free(t->count);
	free(t->ns);
	t->count = t->ns = NULL;
	t->n = 0;
}

/* The last component of a path (the title's short name). */
static void base_name(const char *p, uint32_t len, const char **ret, uint32_t *ret_len)
{
	uint32_t i = len;

	while (i && p[i - 1] != '/')
		i--;
	*ret = p + i;
	*ret_len = len - i;
}

static void title_suffix(const struct apx_line_tally *t, struct apx_finding *f, const char *what,
			 int per_step)
{
	const struct apx_finding_line *l = &f->lines[0];
	const char *b;
	uint32_t blen;
	char n1[32], tail[96];
	size_t len = strlen(f->title);

	base_name(l->file, l->file_len, &b, &blen);
	if (per_step && t->m->steady_steps)
		snprintf(tail, sizeof(tail), "%s a step",
			 apx_fmt_ns(n1, sizeof(n1), l->ns / (double)t->m->steady_steps));
	else if (l->ns > 0)
		snprintf(tail, sizeof(tail), "%.0f %s, %s", l->count, what,
			 apx_fmt_ns(n1, sizeof(n1), l->ns));
	else
		snprintf(tail, sizeof(tail), "%.0f %s", l->count, what);
	snprintf(f->title + len, sizeof(f->title) - len, "; top line `%.*s` in %.*s:%u, %s",
		 (int)(l->func_len > 48 ? 48 : l->func_len), l->func,
		 (int)(blen > 48 ? 48 : blen), b, l->line, tail);
}

void apx_line_tally_put(struct apx_line_tally *t, struct apx_finding *f, const char *what,
			int per_step)
{
	const struct apx_store *st = t->m->store;
	uint8_t *used;
	char n1[32];

	if (!f || !t->n || !t->added || !(used = calloc(t->n, 1)))
		return;
	f->nlines = 0;
	while (f->nlines < APX_FINDING_LINES_MAX) {
		size_t best = t->n;

		for (size_t i = 0; i < t->n; i++) {
			if (used[i] || (!t->count[i] && !t->ns[i]))
				continue;
			if (best == t->n || t->ns[i] > t->ns[best] ||
			    (t->ns[i] == t->ns[best] && t->count[i] > t->count[best]))
				best = i;
		}
		if (best == t->n)
			break;
		used[best] = 1;
		const struct apx_an_line *ln = APX_VEC_AT(&t->m->lines, struct apx_an_line, best);
		struct apx_es_text file = apx_store_string(st, ln->file);
		struct apx_es_text func = apx_store_string(st, ln->func);

		f->lines[f->nlines] = (struct apx_finding_line){ file.p, func.p, file.len,
			func.len, ln->line, t->count[best], t->ns[best], NULL, "", 0, 0 };
		if (t->cause)
			t->cause(t->cause_ctx, (uint32_t)best, &f->lines[f->nlines]);
		f->nlines++;
	}
	free(used);
	if (!f->nlines)
		return;
	apx_text_append(f->evidence, sizeof(f->evidence), "lines (Python stacks):\n");
	for (unsigned i = 0; i < f->nlines; i++) {
		const struct apx_finding_line *l = &f->lines[i];
		char rate[48] = "";

		if (l->has_per_step)
			snprintf(rate, sizeof(rate), " (%.1f a step)", l->per_step);
		apx_text_append(f->evidence, sizeof(f->evidence),
				"  `%.*s` in %.*s:%u: %.0f %s%s, %s%s%s\n",
				(int)(l->func_len > 60 ? 60 : l->func_len), l->func,
				(int)(l->file_len > 120 ? 120 : l->file_len), l->file, l->line,
				l->count, what, rate, apx_fmt_ns(n1, sizeof(n1), l->ns),
				l->cause[0] ? ": " : "", l->cause);
	}
	title_suffix(t, f, what, per_step);
}

static int in_steady(const struct apx_model *m, uint64_t ts)
{
	if (m->steady_end_ns <= m->steady_start_ns)
		return 1;	/* no steady window: the whole run */
	return ts >= m->steady_start_ns && ts < m->steady_end_ns;
}

void apx_lines_of_kernels(const struct apx_model *m, struct apx_finding *f,
			  int (*keep)(const void *ctx, const struct apx_an_name *nm), const void *ctx)
{
	const struct apx_store *st = m->store;
	struct apx_line_tally t;
	uint8_t *take = NULL;

	if (!f || !m->has_stacks || apx_line_tally_init(&t, m) < 0)
		return;
	if (keep && (take = calloc(m->names.n ? m->names.n : 1, 1)))
		for (size_t i = 0; i < m->names.n; i++)
			take[i] = (uint8_t)!!keep(ctx, APX_VEC_AT(&m->names, struct apx_an_name, i));
	for (size_t i = 0; i < st->k.n && (take || !keep); i++) {
		uint32_t nm;

		if (!st->k.stack[i] || !in_steady(m, st->k.start[i]))
			continue;
		nm = apx_view_kname(st, i);
		if (!take || (nm < m->names.n && take[nm]))
			apx_line_tally_add(&t, st->k.stack[i], 1, st->k.dur[i]);
	}
	free(take);
	apx_line_tally_put(&t, f, "launches", 0);
	apx_line_tally_release(&t);
}

void apx_lines_of_copies(const struct apx_model *m, struct apx_finding *f,
			 int (*keep)(const struct apx_model *m, size_t i))
{
	const struct apx_store *st = m->store;
	struct apx_line_tally t;

	if (!f || !m->has_stacks || apx_line_tally_init(&t, m) < 0)
		return;
	for (size_t i = 0; i < st->c.n && i < m->copies.n; i++)
		if (st->c.stack[i] && keep(m, i))
			apx_line_tally_add(&t, st->c.stack[i], 1,
					   apx_view_dur(st->c.start[i], st->c.end[i]));
	apx_line_tally_put(&t, f, "copies", 0);
	apx_line_tally_release(&t);
}

static void add_idle(void *ctx, uint32_t stack, uint64_t ns, unsigned state)
{
	(void)state;
	apx_line_tally_add(ctx, stack, 1, (double)ns);
}

void apx_lines_of_idle(const struct apx_model *m, struct apx_finding *f, unsigned causes)
{
	struct apx_line_tally t;

	if (!f || !m->has_stacks || apx_line_tally_init(&t, m) < 0)
		return;
	if (apx_idle_samples(m, causes, add_idle, &t) == 0)
		apx_line_tally_put(&t, f, "samples", 1);
	apx_line_tally_release(&t);
}
