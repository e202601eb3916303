/*
 * emit_json.c - the JSON emitter of the report document (doc.h): the whole report, schema
 * "apx.report/2" (apx diff's document: its own, "apx.diff/1"), as the document's members in the order the view builders added them (the
 * schema's), those of the sections asked for. Each member is a table written as an array of
 * objects (a row each) or as one object, member names and nesting from its columns' JSON
 * paths ("grid/0" makes "grid":[...], "by_cause/uvm/ns" nested objects). Strings go through
 * the project's one JSON writer (base/json.c). It decides nothing: names, order and which
 * rows are the builders' (build*.c). Registered as the json format in cli/report_formats.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "report/doc.h"
#include "report/flame.h"

#include "base/banned.h"

#define DEPTH 8

static void number(FILE *f, const struct apx_rcol *col, const struct apx_rhint *h,
		   const struct apx_rcell *x)
{
	if (x->na) {
		fputs("null", f);
		return;
	}
	switch (h->jfmt) {
	case APX_JF_INT:
		if (x->v < 0)
			fprintf(f, "%.0f", x->v);	/* a change: signed */
		else
			fprintf(f, "%" PRIu64, x->u);
		return;
	case APX_JF_F4:
		fprintf(f, "%.4f", x->v);
		return;
	case APX_JF_BOOL:
		fputs(x->u ? "true" : "false", f);
		return;
	case APX_JF_G15:
		if (isfinite(x->v))
			fprintf(f, "%.15g", x->v);
		else
			fputs("null", f);
		return;
	default:
		if (apx_unit_is_integer(col->unit) && x->v < 0)
			fprintf(f, "%.0f", x->v);	/* a change: signed */
		else if (apx_unit_is_integer(col->unit))
			fprintf(f, "%" PRIu64, x->u);
		else if (isfinite(x->v))
			fprintf(f, "%.6g", x->v);
		else
			fputs("null", f);
	}
}

static void row(FILE *f, const struct apx_rtable *t, size_t r);

/* A table in a cell: an array of objects, one object of its key/values (APX_JF_KV), or its
 * first row as one object (APX_JF_OBJ). */
static void sub_table(FILE *f, const struct apx_rtable *t, unsigned jfmt)
{
	if (jfmt == APX_JF_OBJ) {
		if (t->nrows)
			row(f, t, 0);
		else
			fputs("{}", f);
		return;
	}
	fputc(jfmt == APX_JF_KV ? '{' : '[', f);
	for (size_t r = 0; r < t->nrows; r++) {
		if (r)
			fputc(',', f);
		if (jfmt != APX_JF_KV) {
			row(f, t, r);
			continue;
		}
		for (unsigned c = 0; c < 2 && c < t->ncols; c++) {
			const struct apx_rcell *x = apx_rtable_cell(t, r, c);

			if (c)
				fputc(':', f);
			apx_json_strn(f, x->na ? "" : x->s, x->na ? 0 : x->len);
		}
	}
	fputc(jfmt == APX_JF_KV ? '}' : ']', f);
}

static void value(FILE *f, const struct apx_rtable *t, size_t r, unsigned c)
{
	const struct apx_rcell *x = apx_rtable_cell(t, r, c);

	if (t->hint[c].jfmt == APX_JF_ROWS || t->hint[c].jfmt == APX_JF_KV ||
	    t->hint[c].jfmt == APX_JF_OBJ) {
		if (x->sub)
			sub_table(f, x->sub, t->hint[c].jfmt);
		else
			fputs(t->hint[c].jfmt == APX_JF_ROWS ? "[]" : "{}", f);
		return;
	}
	if (t->col[c].unit != APX_UNIT_TEXT)
		number(f, &t->col[c], &t->hint[c], x);
	else if (x->na)
		fputs("null", f);
	else
		apx_json_strn(f, x->s, x->len);
}

/* A member's name and its colon, through the one JSON writer. */
static void name(FILE *f, const char *s, size_t len)
{
	apx_json_strn(f, s, len);
	fputc(':', f);
}

/* The segments of a column's path: seg[i] starts at p[off[i]], len[i] bytes. */
struct path {
	const char *p;
	unsigned n, off[DEPTH], len[DEPTH];
};

static void split(struct path *ph, const char *p)
{
	unsigned i = 0;

	ph->p = p;
	ph->n = 0;
	while (ph->n < DEPTH) {
		unsigned j = i;

		while (p[j] && p[j] != '/')
			j++;
		ph->off[ph->n] = i;
		ph->len[ph->n++] = j - i;
		if (!p[j])
			break;
		i = j + 1;
	}
}

static int same_seg(const struct path *a, const struct path *b, unsigned i)
{
	return a->len[i] == b->len[i] && !memcmp(a->p + a->off[i], b->p + b->off[i], a->len[i]);
}

static int is_index(const struct path *ph, unsigned i)
{
	return ph->len[i] && ph->p[ph->off[i]] >= '0' && ph->p[ph->off[i]] <= '9';
}

/* The members of one row's object (nested objects and arrays from the columns' paths). */
static void row_members(FILE *f, const struct apx_rtable *t, size_t r)
{
	struct path prev = { "", 0, { 0 }, { 0 } }, cur;
	int first[DEPTH + 1] = { 1 };
	unsigned open = 0;		/* containers open below the row's object */

	for (unsigned c = 0; c < t->ncols; c++) {
		unsigned common = 0;

		if (t->hint[c].jomit && apx_rtable_cell(t, r, c)->na)
			continue;	/* a member the schema has only with a value */
		split(&cur, t->hint[c].jkey ? t->hint[c].jkey : t->col[c].key);
		while (common < open && common + 1 < cur.n && same_seg(&prev, &cur, common))
			common++;
		for (; open > common; open--)
			fputc(is_index(&prev, open) ? ']' : '}', f);
		for (unsigned i = 0; i + 1 < cur.n; i++) {
			if (i < open)
				continue;
			if (!first[i])
				fputc(',', f);
			first[i] = 0;
			if (!is_index(&cur, i))
				name(f, cur.p + cur.off[i], cur.len[i]);
			fputc(is_index(&cur, i + 1) ? '[' : '{', f);
			first[i + 1] = 1;
			open = i + 1;
		}
		if (!first[cur.n - 1])
			fputc(',', f);
		first[cur.n - 1] = 0;
		if (!is_index(&cur, cur.n - 1))
			name(f, cur.p + cur.off[cur.n - 1], cur.len[cur.n - 1]);
		value(f, t, r, c);
		prev = cur;
	}
	for (; open > 0; open--)
		fputc(is_index(&prev, open) ? ']' : '}', f);
}

static void row(FILE *f, const struct apx_rtable *t, size_t r)
{
	fputc('{', f);
	row_members(f, t, r);
	fputc('}', f);
}

/* A finding's typed numbers: "metrics" [{key, value, unit}] and "evidence_table" ({columns
 * [{key, unit}], rows [[label, numbers...]]} or null). */
static void finding_tables(FILE *f, const struct apx_rfinding *rf)
{
	const struct apx_rtable *m = rf->metrics, *t = rf->evidence;

	fputs(",\"metrics\":[", f);
	for (unsigned c = 0; m && m->nrows && c < m->ncols; c++) {
		fputs(c ? ",{\"key\":" : "{\"key\":", f);
		apx_json_str(f, m->col[c].key);
		fputs(",\"value\":", f);
		apx_json_num(f, apx_rtable_cell(m, 0, c)->v, apx_unit_is_integer(m->col[c].unit));
		fputs(",\"unit\":", f);
		apx_json_str(f, apx_unit_name(m->col[c].unit));
		fputc('}', f);
	}
	fputs("],\"evidence_table\":", f);
	if (!t) {
		fputs("null", f);
		return;
	}
	fputs("{\"columns\":[", f);
	for (unsigned c = 0; c < t->ncols; c++) {
		fputs(c ? ",{\"key\":" : "{\"key\":", f);
		apx_json_str(f, t->hint[c].jkey ? t->hint[c].jkey : t->col[c].key);
		fputs(",\"unit\":", f);
		apx_json_str(f, apx_unit_name(t->col[c].unit));
		fputc('}', f);
	}
	fputs("],\"rows\":[", f);
	for (size_t r = 0; r < t->nrows; r++) {
		fputs(r ? ",[" : "[", f);
		for (unsigned c = 0; c < t->ncols; c++) {
			const struct apx_rcell *x = apx_rtable_cell(t, r, c);

			if (c)
				fputc(',', f);
			if (t->col[c].unit == APX_UNIT_TEXT)
				apx_json_strn(f, x->na ? "" : x->s, x->na ? 0 : x->len);
			else
				apx_json_num(f, x->v, apx_unit_is_integer(t->col[c].unit));
		}
		fputc(']', f);
	}
	fputs("]}", f);
}

static void findings(FILE *f, const struct apx_rjson *j)
{
	fputc('[', f);
	for (size_t r = 0; r < j->t->nrows; r++) {
		fputs(r ? ",{" : "{", f);
		row_members(f, j->t, r);
		if (r < j->nrf)
			finding_tables(f, &j->rf[r]);
		fputc('}', f);
	}
	fputc(']', f);
}

static void member_value(FILE *f, const struct apx_rjson *j)
{
	if (j->shape == APX_RJ_FLAME) {
		fputs("{\"gpu\":", f);
		apx_rflame_json(f, j->flames[0]);
		fputs(",\"host\":", f);
		apx_rflame_json(f, j->flames[1]);
		fputc('}', f);
		return;
	}
	if (j->shape == APX_RJ_FINDINGS) {
		findings(f, j);
		return;
	}
	if (j->shape == APX_RJ_OBJECT) {
		if (j->t->nrows)
			row(f, j->t, 0);
		else
			fputs("{}", f);
		return;
	}
	fputc('[', f);
	for (size_t r = 0; r < j->t->nrows; r++) {
		if (r)
			fputc(',', f);
		row(f, j->t, r);
	}
	fputc(']', f);
}

int apx_report_emit_json(FILE *out, const struct apx_rdoc *d)
{
	fputs("{\"schema\":", out);
	apx_json_str(out, d->schema ? d->schema : "apx.report/2");
	for (unsigned i = 0; i < d->njson; i++) {
		const struct apx_rjson *j = &d->json[i];
		int any;

		if (!d->sec[j->section].present)
			continue;	/* --section: only the members of the sections asked for */
		fputc(',', out);
		name(out, j->name, strlen(j->name));
		if (j->shape != APX_RJ_OBJECT || i + 1 >= d->njson || !d->json[i + 1].inside) {
			member_value(out, j);
			continue;
		}
		/* members inside this object: its row's, then theirs, then its closing brace */
		fputc('{', out);
		any = j->t->nrows && j->t->ncols;
		if (j->t->nrows)
			row_members(out, j->t, 0);
		for (; i + 1 < d->njson && d->json[i + 1].inside; i++) {
			if (any)
				fputc(',', out);
			name(out, d->json[i + 1].name, strlen(d->json[i + 1].name));
			member_value(out, &d->json[i + 1]);
			any = 1;
		}
		fputc('}', out);
	}
	fputs("}\n", out);
	return ferror(out) ? -EIO : 0;
}
