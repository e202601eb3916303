/*
 * doc.c - the report document's containers (see doc.h): sections and their names, tables of
 * typed cells, the string arena, and apx_rdoc_build(), which runs the builders (build.c,
 * build_series.c). Called by cli/cmd_report.c and the unit tests.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/doc.h"
#include "report/flame.h"

#include "base/banned.h"

static const char *const section_names[APX_SEC__COUNT] = {
	"summary", "findings", "startup", "ranks", "collectives", "hotspots", "idle-stacks",
	"nvperfd", "kernels",
	"transfers", "sync", "idle", "metrics", "memory", "streams", "nvtx", "l2", "uvm", "cpu",
	"threads", "heap", "checks", "method",
};

/* The sections' headings (the text report's, the HTML's). */
static const char *const section_titles[APX_SEC__COUNT] = {
	"Summary",
	"Findings (ranked by estimated saving)",
	"Start-up (before the steady state)",
	"Ranks (the processes of a distributed run)",
	"Collectives (NCCL; algbw and busbw as nccl-tests defines them)",
	"Hotspots (source lines, from Python stacks)",
	"Main thread while the GPU was idle (Python stacks)",
	"nvperfd (observed from outside)",
	"GPU kernels (by total time)",
	"Transfers (interconnect)",
	"Synchronization",
	"GPU idle time (between first and last activity, by cause)",
	"Device metrics (PM sampling)",
	"Memory",
	"Streams and overlap",
	"NVTX ranges (GPU kernel time executed inside each range)",
	"L2 persistence",
	"Unified memory",
	"CPU",
	"Threads (sampled)",
	"Host heap (sampled malloc and new)",
	"Checks",
	"How this was measured",
};

const char *apx_report_section_name(unsigned s)
{
	return s < APX_SEC__COUNT ? section_names[s] : "?";
}

const char *apx_report_section_title(unsigned s)
{
	return s < APX_SEC__COUNT ? section_titles[s] : "?";
}

int apx_report_section_parse(const char *name)
{
	for (int i = 0; i < APX_SEC__COUNT; i++)
		if (!strcmp(name, section_names[i]))
			return i;
	return -1;
}

/* ---- strings: a list of blocks ---- */
struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	char data[];
};

const char *apx_rdoc_strdup(struct apx_rdoc *d, const char *s, size_t len)
{
	struct arena_block *b = d->arena;
	char *p;

	if (!b || b->cap - b->used < len + 1) {
		size_t cap = len + 1 > 65536 ? len + 1 : 65536;
		struct arena_block *nb = malloc(sizeof(*nb) + cap);

		if (!nb)
			return "";
		nb->next = b;
		nb->used = 0;
		nb->cap = cap;
		d->arena = b = nb;
	}
	p = b->data + b->used;
	if (len)
		memcpy(p, s, len);
	p[len] = 0;
	b->used += len + 1;
	return p;
}

struct apx_rdoc *apx_rdoc_new(const struct apx_model *m, const struct apx_findings *fd,
			      unsigned sections, unsigned top)
{
	struct apx_rdoc *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->m = m;
	d->fd = fd;
	d->sections = sections ? sections : (1u << APX_SEC__COUNT) - 1;
	d->top = top ? top : 15;
	for (unsigned s = 0; s < APX_SEC__COUNT; s++)
		d->sec[s].present = !!(d->sections & 1u << s);
	/* the sections of several ranks only with NCCL collectives, unless asked for by name
	 * (then they say there are none): a single-process report does not change */
	if ((!m || !m->ranks) && !(sections && sections != (1u << APX_SEC__COUNT) - 1))
		d->sec[APX_SEC_RANKS].present = d->sec[APX_SEC_COLLECTIVES].present = 0;
	/* the heap section likewise only with heap samples (apx analyze --heap-sampling-bytes) */
	if ((!m || !m->heap.sampled) && !(sections && sections != (1u << APX_SEC__COUNT) - 1))
		d->sec[APX_SEC_HEAP].present = 0;
	if (m && m->nfiles) {
		d->command = apx_rdoc_strdup(d, m->files[0].argv, strlen(m->files[0].argv));
		d->trace = apx_rdoc_strdup(d, m->files[0].path ? m->files[0].path : "",
					   m->files[0].path ? strlen(m->files[0].path) : 0);
	}
	return d;
}

static void table_free(struct apx_rtable *t)
{
	if (t) {
		free(t->cells);
		free(t);
	}
}

void apx_rdoc_free(struct apx_rdoc *d)
{
	struct arena_block *b, *next;

	if (!d)
		return;
	for (unsigned s = 0; s < APX_SEC__COUNT; s++) {
		for (unsigned i = 0; i < d->sec[s].ntables; i++)
			table_free(d->sec[s].t[i]);
		free(d->sec[s].blk);
	}
	for (size_t i = 0; i < d->nfindings; i++) {
		table_free(d->findings[i].metrics);
		table_free(d->findings[i].evidence);
	}
	free(d->findings);
	for (size_t i = 0; i < d->nsfindings; i++) {
		table_free(d->sfindings[i].metrics);
		table_free(d->sfindings[i].evidence);
	}
	free(d->sfindings);
	for (size_t i = 0; i < d->nsub; i++)
		table_free(d->sub[i]);
	free(d->sub);
	apx_rflame_free(d->flame[0]);
	apx_rflame_free(d->flame[1]);
	for (b = d->arena; b; b = next) {
		next = b->next;
		free(b);
	}
	free(d);
}

struct apx_rtable *apx_rdoc_table(struct apx_rdoc *d, unsigned s, const char *key,
				  const char *title)
{
	struct apx_rsection *sec;
	struct apx_rtable *t;

	if (s >= APX_SEC__COUNT || d->sec[s].ntables >= APX_RSECTION_TABLES)
		return NULL;
	sec = &d->sec[s];
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->key = key;
	t->title = title;
	t->note = "";
	t->views = APX_VIEW_DATA;
	t->tindent = 2;
	t->theader = 1;
	sec->t[sec->ntables++] = t;
	return t;
}

struct apx_rtable *apx_rdoc_view_table(struct apx_rdoc *d, unsigned s, const char *key,
				       unsigned views)
{
	struct apx_rtable *t = apx_rdoc_table(d, s, key, key);

	if (t)
		t->views = views;
	return t;
}

static struct apx_rcell *last_cell(struct apx_rtable *t, unsigned col);

struct apx_rtable *apx_rdoc_sub_table(struct apx_rdoc *d, const char *key)
{
	struct apx_rtable *t;

	if (d->nsub == d->subcap) {
		size_t cap = d->subcap ? 2 * d->subcap : 16;
		struct apx_rtable **p = reallocarray(d->sub, cap, sizeof(*p));

		if (!p)
			return NULL;
		d->sub = p;
		d->subcap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->key = t->title = key;
	t->note = "";
	t->views = APX_VIEW_JSON;
	d->sub[d->nsub++] = t;
	return t;
}

void apx_rtable_sub(struct apx_rtable *t, unsigned col, const struct apx_rtable *sub)
{
	struct apx_rcell *c = last_cell(t, col);

	if (c && sub) {
		c->na = 0;
		c->sub = sub;
	}
}

void apx_rdoc_blk(struct apx_rdoc *d, unsigned s, const struct apx_rblk *b)
{
	struct apx_rsection *sec;
	struct apx_rblk *nb;

	if (s >= APX_SEC__COUNT)
		return;
	sec = &d->sec[s];
	if (sec->nblk == sec->blkcap) {
		size_t cap = sec->blkcap ? 2 * sec->blkcap : 16;
		struct apx_rblk *p = reallocarray(sec->blk, cap, sizeof(*p));

		if (!p)
			return;
		sec->blk = p;
		sec->blkcap = cap;
	}
	nb = &sec->blk[sec->nblk++];
	*nb = *b;
	nb->head = b->head ? apx_rdoc_strdup(d, b->head, strlen(b->head)) : "";
	nb->text = b->text ? apx_rdoc_strdup(d, b->text, strlen(b->text)) : "";
}

void apx_rdoc_line(struct apx_rdoc *d, unsigned s, unsigned indent, const char *fmt, ...)
{
	char buf[1024], *line = buf;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf)) {	/* a long path: the whole line, never cut */
		line = malloc((size_t)n + 1);
		if (!line)
			return;
		va_start(ap, fmt);
		vsnprintf(line, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_LINE, .indent = indent, .text = line });
	if (line != buf)
		free(line);
}

void apx_rdoc_blk_table(struct apx_rdoc *d, unsigned s, const struct apx_rtable *t)
{
	if (t)
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_TABLE, .t = t });
}

void apx_rdoc_blk_rows(struct apx_rdoc *d, unsigned s, const struct apx_rtable *t, size_t row0,
		       size_t n)
{
	if (t)
		apx_rdoc_blk(d, s, &(struct apx_rblk){ .kind = APX_RB_ROWS, .t = t, .row0 = row0,
						      .nrows = n });
}

void apx_rdoc_json_findings(struct apx_rdoc *d, unsigned s, const char *name,
			    const struct apx_rtable *t, const struct apx_rfinding *rf, size_t n,
			    int inside)
{
	if (s >= APX_SEC__COUNT || !t || d->njson >= APX_RDOC_JSON)
		return;
	d->json[d->njson++] = (struct apx_rjson){ .name = name, .t = t, .shape = APX_RJ_FINDINGS,
						  .inside = inside, .section = s, .rf = rf,
						  .nrf = n };
}

void apx_rdoc_json(struct apx_rdoc *d, unsigned s, const char *name, const struct apx_rtable *t,
		   unsigned shape, int inside)
{
	if (s >= APX_SEC__COUNT || !t || d->njson >= APX_RDOC_JSON)
		return;
	d->json[d->njson++] = (struct apx_rjson){ .name = name, .t = t, .shape = shape,
						  .inside = inside, .section = s };
}

void apx_rtable_col(struct apx_rtable *t, const char *key, const char *title, unsigned unit)
{
	if (!t || t->ncols >= APX_RTABLE_COLS || t->nrows)
		return;
	t->col[t->ncols].key = key;
	t->col[t->ncols].title = title;
	t->col[t->ncols].unit = unit;
	t->ncols++;
}

void apx_rtable_cols(struct apx_rtable *t, const struct apx_rcol *cols, size_t n)
{
	for (size_t i = 0; i < n; i++)
		apx_rtable_col(t, cols[i].key, cols[i].title, cols[i].unit);
}

void apx_rtable_vcols(struct apx_rtable *t, const struct apx_rvcol *cols, size_t n)
{
	for (size_t i = 0; i < n && t && t->ncols < APX_RTABLE_COLS && !t->nrows; i++) {
		t->hint[t->ncols] = cols[i].h;
		apx_rtable_col(t, cols[i].key, cols[i].title, cols[i].unit);
	}
}

int apx_rtable_row(struct apx_rtable *t)
{
	struct apx_rcell *row;

	if (!t)
		return -EINVAL;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct apx_rcell *c = reallocarray(t->cells, cap * (t->ncols ? t->ncols : 1), sizeof(*c));

		if (!c)
			return -ENOMEM;
		t->cells = c;
		t->cap = cap;
	}
	row = t->cells + t->nrows * t->ncols;
	memset(row, 0, t->ncols * sizeof(*row));
	for (unsigned i = 0; i < t->ncols; i++)
		row[i].na = 1;
	t->nrows++;
	return 0;
}

static struct apx_rcell *last_cell(struct apx_rtable *t, unsigned col)
{
	if (!t || !t->nrows || col >= t->ncols)
		return NULL;
	return &t->cells[(t->nrows - 1) * t->ncols + col];
}

/* A number cell of the last row: u exact for integer units, v for every unit. */
static void set_num(struct apx_rtable *t, unsigned col, uint64_t u, double v)
{
	struct apx_rcell *c = last_cell(t, col);

	if (!c)
		return;
	c->na = 0;
	c->u = u;
	c->v = v;
}

void apx_rtable_num(struct apx_rtable *t, unsigned col, double v)
{
	set_num(t, col, v > 0 && v < 1.8e19 ? (uint64_t)(v + 0.5) : 0, v);
}

void apx_rtable_u64(struct apx_rtable *t, unsigned col, uint64_t v)
{
	set_num(t, col, v, (double)v);
}

void apx_rtable_text(struct apx_rdoc *d, struct apx_rtable *t, unsigned col, const char *s,
		     size_t len)
{
	struct apx_rcell *c = last_cell(t, col);

	if (!c)
		return;
	s = s ? s : "";
	len = strnlen(s, len);
	c->na = 0;
	c->s = apx_rdoc_strdup(d, s, len);
	c->len = strlen(c->s);
}

void apx_rtable_str(struct apx_rdoc *d, struct apx_rtable *t, unsigned col, const char *s)
{
	apx_rtable_text(d, t, col, s, s ? strlen(s) : 0);
}

const struct apx_rcell *apx_rtable_cell(const struct apx_rtable *t, size_t row, unsigned col)
{
	static const struct apx_rcell na = { .na = 1 };

	if (!t || row >= t->nrows || col >= t->ncols)
		return &na;
	return &t->cells[row * t->ncols + col];
}

int apx_rtable_col_of(const struct apx_rtable *t, const char *key)
{
	for (unsigned c = 0; t && c < t->ncols; c++)
		if (!strcmp(t->col[c].key, key))
			return (int)c;
	return -1;
}

void apx_rtable_knum(struct apx_rtable *t, const char *key, double v)
{
	int c = apx_rtable_col_of(t, key);

	if (c >= 0)
		apx_rtable_num(t, (unsigned)c, v);
}

void apx_rtable_ku64(struct apx_rtable *t, const char *key, uint64_t v)
{
	int c = apx_rtable_col_of(t, key);

	if (c >= 0)
		apx_rtable_u64(t, (unsigned)c, v);
}

void apx_rtable_ktext(struct apx_rdoc *d, struct apx_rtable *t, const char *key, const char *s,
		      size_t len)
{
	int c = apx_rtable_col_of(t, key);

	if (c >= 0)
		apx_rtable_text(d, t, (unsigned)c, s, len);
}

void apx_rtable_kstr(struct apx_rdoc *d, struct apx_rtable *t, const char *key, const char *s)
{
	apx_rtable_ktext(d, t, key, s, s ? strlen(s) : 0);
}

/* A text cell's bytes into buf: a NUL among them (a trace's name may hold one) is written as
 * the four characters \x00, not a stop; cut to cap - 1 bytes. */
static void text_cell(char *buf, size_t cap, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; s && i < len && o + 1 < cap; i++) {
		if (s[i]) {
			buf[o++] = s[i];
		} else if (o + 5 <= cap) {
			memcpy(buf + o, "\\x00", 4);
			o += 4;
		} else {
			break;
		}
	}
	if (cap)
		buf[o] = '\0';
}

const char *apx_rcell_fmt(char *buf, size_t cap, const struct apx_rtable *t, size_t row,
			  unsigned col)
{
	const struct apx_rcell *c = apx_rtable_cell(t, row, col);
	unsigned unit = col < t->ncols ? t->col[col].unit : APX_UNIT_TEXT;

	if (c->na)
		snprintf(buf, cap, "n/a");
	else if (unit == APX_UNIT_TEXT)
		text_cell(buf, cap, c->s, c->len);
	else if (unit == APX_UNIT_COUNT || unit == APX_UNIT_ID)
		snprintf(buf, cap, "%llu", (unsigned long long)c->u);
	else
		apx_unit_fmt(buf, cap, unit, c->v);
	return buf;
}

void apx_rdoc_note(struct apx_rdoc *d, unsigned s, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (s >= APX_SEC__COUNT || d->sec[s].nnotes >= APX_RSECTION_NOTES)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	d->sec[s].note[d->sec[s].nnotes++] = apx_rdoc_strdup(d, line, strlen(line));
}
