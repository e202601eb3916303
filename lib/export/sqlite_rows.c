/*
 * sqlite_rows.c - batched inserts for the SQLite exporter (sqlite.h): a table's rows wait in
 * an array of cells and go in APX_SQ_BATCH at a time through one prepared "INSERT ... VALUES
 * (...), (...), ..."; the rows left at the end go one by one through a one-row INSERT.
 * TEXT is made valid UTF-8 when bound (bind_text). Called by sqlite.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#include "export/sqlite.h"

#include "base/banned.h"

static int prepare(sqlite3 *db, const char *table, int ncols, int rows, sqlite3_stmt **ret)
{
	size_t cap = 64 + (size_t)rows * ((size_t)ncols * 3 + 4), n;
	char *sql = malloc(cap);
	int rc;

	if (!sql)
		return SQLITE_NOMEM;
	n = (size_t)snprintf(sql, cap, "INSERT INTO %s VALUES ", table);
	for (int r = 0; r < rows; r++) {
		n += (size_t)snprintf(sql + n, cap - n, "%s(?", r ? ", " : "");
		for (int c = 1; c < ncols; c++)
			n += (size_t)snprintf(sql + n, cap - n, ", ?");
		n += (size_t)snprintf(sql + n, cap - n, ")");
	}
	rc = sqlite3_prepare_v2(db, sql, -1, ret, NULL);
	free(sql);
	return rc;
}

int apx_sq_tab_open(sqlite3 *db, struct apx_sq_tab *t, const char *table, int ncols)
{
	int rc;

	t->ncols = ncols;
	t->n = 0;
	t->cells = calloc((size_t)APX_SQ_BATCH * (size_t)ncols, sizeof(*t->cells));
	if (!t->cells)
		return SQLITE_NOMEM;
	if ((rc = prepare(db, table, ncols, 1, &t->one)) != SQLITE_OK)
		return rc;
	return prepare(db, table, ncols, APX_SQ_BATCH, &t->many);
}

void apx_sq_tab_close(struct apx_sq_tab *t)
{
	sqlite3_finalize(t->one);
	sqlite3_finalize(t->many);
	free(t->cells);
	t->one = t->many = NULL;
	t->cells = NULL;
}

void apx_sq_put_ints(struct apx_sq_tab *t, int first, int n, const int64_t *v, uint32_t nulls)
{
	for (int i = 0; i < n; i++) {
		if (nulls >> i & 1)
			apx_sq_put_null(t, first + i);
		else
			apx_sq_put_i(t, first + i, v[i]);
	}
}

/* A TEXT cell: SQLite takes it as UTF-8 and its readers (Python's sqlite3, pandas) refuse a
 * value that is not, failing the whole query; so bytes that are not UTF-8 become U+FFFD and a
 * NUL byte "\x00" (apx_utf8_sanitize, the replacement the Chrome export's JSON makes). */
static void bind_text(sqlite3_stmt *s, int i, const char *p, int len)
{
	size_t cap = (size_t)len * 4 + 1;
	char *buf;

	if (apx_utf8_clean(p, (size_t)len)) {
		sqlite3_bind_text(s, i, p, len, SQLITE_STATIC);
		return;
	}
	buf = malloc(cap);
	if (!buf) {
		sqlite3_bind_text(s, i, "\xef\xbf\xbd", 3, SQLITE_STATIC);	/* out of memory */
		return;
	}
	apx_utf8_sanitize(buf, cap, p, (size_t)len);
	sqlite3_bind_text(s, i, buf, (int)strlen(buf), free);
}

/* Bind rows cells[from, from + rows) to s and run it. */
static int insert(struct apx_sq_tab *t, sqlite3_stmt *s, int from, int rows)
{
	const struct apx_sq_cell *c = &t->cells[from * t->ncols];
	int rc;

	for (int i = 0; i < rows * t->ncols; i++) {
		switch (c[i].kind) {
		case SQLITE_INTEGER:
			sqlite3_bind_int64(s, i + 1, c[i].u.i);
			break;
		case SQLITE_FLOAT:
			sqlite3_bind_double(s, i + 1, c[i].u.d);
			break;
		case SQLITE_TEXT:
			bind_text(s, i + 1, c[i].u.p, c[i].len);
			break;
		default:
			sqlite3_bind_null(s, i + 1);
			break;
		}
	}
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int apx_sq_row(struct apx_sq_tab *t)
{
	if (++t->n < APX_SQ_BATCH)
		return SQLITE_OK;
	t->n = 0;
	return insert(t, t->many, 0, APX_SQ_BATCH);
}

int apx_sq_flush(struct apx_sq_tab *t)
{
	int rc = SQLITE_OK;

	for (int r = 0; r < t->n && rc == SQLITE_OK; r++)
		rc = insert(t, t->one, r, 1);
	t->n = 0;
	return rc;
}
