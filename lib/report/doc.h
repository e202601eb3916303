/*
 * doc.h - the report document of `apx report`: built once from the analysis model and the
 * ranked findings (build.c, build_gpu.c, build_series.c; the text and JSON views:
 * build_view*.c), then handed to an emitter (text, JSON, HTML, CSV: the table in
 * cli/report_formats.c). A document is sections (enum apx_report_section, the `--section`
 * names); a section holds typed tables and short notes; the findings section also holds the
 * findings, each with its typed metrics and evidence table.
 *
 * A table is columns {key, title, unit} and rows of cells, the way perf's perf_hpp_fmt columns
 * describe their entries: an emitter never knows what a table means, it formats cells by
 * their column's unit (base/unit.h). A table may carry a plot hint (what to draw it as); the
 * HTML emitter draws it, the CSV emitter prints the table, the others skip it. Each section
 * also holds its text view (blocks: prose lines, tables laid out by per-column text hints,
 * wrapped and labelled text), and the document its JSON view (members, each of a section, in
 * the schema's order: tables named and nested by per-column JSON paths); the tables only
 * those views show are marked so (APX_VIEW_*), and the CSV and HTML emitters skip them.
 *
 * apx diff's comparison is a document of the same kind (build_diff.c): its own sections'
 * titles, JSON schema and HTML heading, the same emitters.
 *
 * The document owns every string it holds (copied from the trace); trace text is raw bytes:
 * each emitter escapes it for its output (JSON, HTML, CSV, terminal). Single-threaded.
 */
#ifndef APX_REPORT_DOC_H
#define APX_REPORT_DOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/findings.h"
#include "analysis/model.h"
#include "base/unit.h"

struct apx_store;

enum apx_report_section {
	APX_SEC_SUMMARY,
	APX_SEC_FINDINGS,
	APX_SEC_STARTUP,
	APX_SEC_RANKS,		/* several ranks: only with NCCL collectives */
	APX_SEC_COLLECTIVES,
	APX_SEC_HOTSPOTS,
	APX_SEC_IDLE_STACKS,
	APX_SEC_NVPERFD,
	APX_SEC_KERNELS,
	APX_SEC_TRANSFERS,
	APX_SEC_SYNC,
	APX_SEC_IDLE,
	APX_SEC_METRICS,
	APX_SEC_MEMORY,
	APX_SEC_STREAMS,
	APX_SEC_NVTX,
	APX_SEC_L2,
	APX_SEC_UVM,
	APX_SEC_CPU,
	APX_SEC_THREADS,
	APX_SEC_HEAP,		/* host heap samples (--heap-sampling-bytes): only with them */
	APX_SEC_CHECKS,
	APX_SEC_METHOD,
	APX_SEC__COUNT,
};

/* "summary", "findings", ... ("?" out of range); the index of a name, or -1. */
const char *apx_report_section_name(unsigned s);
int apx_report_section_parse(const char *name);
/* The section's heading ("GPU kernels (by total time)"). */
const char *apx_report_section_title(unsigned s);

/* How a table is drawn (HTML). Columns are the table's, by index. */
enum apx_plot {
	APX_PLOT_NONE,
	APX_PLOT_BARS,		/* one bar per row: label column x, value column y */
	APX_PLOT_LINE,		/* y over x (time), one point per row */
	APX_PLOT_SCATTER,	/* a dot per row at (x, y), both on log scales */
	APX_PLOT_STACKED,	/* one bar per row (label x), segments: columns y..ncols-1 */
	APX_PLOT_TIMELINE,	/* lanes (column x), a box per row: start y, duration y+1, name y+2 */
	APX_PLOT_LINES,		/* y, y+1, ... ncols-1 over x (time), a line each, one legend */
};

#define APX_RTABLE_COLS 40

/* How the JSON emitter writes a number cell (a text cell is always a string). */
enum apx_jfmt {
	APX_JF_UNIT,		/* integer units: the exact integer; others: 6 significant digits */
	APX_JF_INT,		/* rounded to an integer, never in exponent form */
	APX_JF_F4,		/* 4 decimals */
	APX_JF_G15,		/* 15 significant digits */
	APX_JF_BOOL,		/* true when not 0, else false */
	APX_JF_ROWS,		/* the cell's table (apx_rtable_sub) as an array of objects */
	APX_JF_KV,		/* the cell's table as one object: names from its column 0, string
				 * values from its column 1 (key/values from the trace) */
	APX_JF_OBJ,		/* the cell's table's first row as one object ({} without a
				 * row) */
};

struct apx_rcol {
	const char *key;			/* CSV header, a literal: "total_ns" */
	const char *title;			/* for people: "total" */
	unsigned unit;				/* enum apx_unit */
};

/* How the text and JSON views lay a column out (struct apx_rtable's hint[]). */
struct apx_rhint {
	/* text (emit_text.c): */
	int tw;					/* width, < 0 left-aligned, 0 as wide as the cell */
	unsigned tgap;				/* spaces before it beyond the one between columns */
	unsigned tmax;				/* text: at most this many bytes (0: all) */
	unsigned tfix;				/* PCT, RATIO: 1 + the decimals of a fixed-point
						 * number ("%5.1f%%"); 0: the unit's format */
	const char *ttitle;			/* its header; NULL: title */
	const char *tna;			/* what a cell without a value shows; NULL: "n/a" */
	const char *tsuffix;			/* printed after the cell (" gaps"); NULL: none */
	int tplus;				/* a number over 0 gets a '+' (a change) */
	/* JSON (emit_json.c): */
	const char *jkey;			/* member path, '/' between levels, a number for
						 * an array index ("grid/0"); NULL: key */
	unsigned jfmt;				/* enum apx_jfmt */
	int jomit;				/* a cell without a value is left out */
};

/* A column with its hints, for the view builders' static tables (designated initializers). */
struct apx_rvcol {
	const char *key, *title;
	unsigned unit;
	struct apx_rhint h;
};

/* Which emitters show a table (a bit each). */
enum {
	APX_VIEW_DATA = 1,			/* CSV and HTML: every table of the document */
	APX_VIEW_TEXT = 2,			/* in the text report, placed by a block */
	APX_VIEW_JSON = 4,			/* a member of the JSON report (struct apx_rjson) */
};

struct apx_rcell {
	int na;					/* no value (the report writes "n/a") */
	uint64_t u;				/* integer units: the exact value */
	double v;				/* every number (u as a double for integer units) */
	const char *s;				/* APX_UNIT_TEXT: owned by the document, len bytes */
	size_t len;
	const struct apx_rtable *sub;		/* APX_JF_ROWS, APX_JF_KV: a table of its own */
};

struct apx_rtable {
	const char *key;			/* within its section: "kernels", "idle_by_cause" */
	const char *title;
	struct apx_rcol col[APX_RTABLE_COLS];
	struct apx_rhint hint[APX_RTABLE_COLS];	/* all 0 but in the views' tables */
	unsigned ncols;
	struct apx_rcell *cells;		/* nrows x ncols */
	size_t nrows, cap;
	unsigned plot;				/* enum apx_plot */
	unsigned plot_x, plot_y;		/* columns, as enum apx_plot says */
	int plot_only;				/* for the plot or for machines: the HTML shows
						 * no table (its plot, if it has one) */
	const char *note;			/* one line under it ("" none), owned */
	unsigned views;				/* APX_VIEW_* (apx_rdoc_table: DATA) */
	/* the text view: */
	unsigned tindent;			/* spaces before each line (2) */
	int theader;				/* a line of column headers first */
};

/* The text report of a section is blocks, in order (emit_text.c prints them under the
 * section's heading): lines of prose, tables, wrapped and labelled text. */
enum apx_rblk_kind {
	APX_RB_LINE,		/* text, whole */
	APX_RB_TABLE,		/* t, laid out by its columns' text hints */
	APX_RB_HEADER,		/* t's line of column headers alone */
	APX_RB_ROWS,		/* rows row0 .. row0 + nrows - 1 of t, without the headers */
	APX_RB_WRAP,		/* head, then text wrapped (at spaces) within APX_REPORT_W columns,
				 * further lines from column windent */
	APX_RB_LABEL,		/* "    %-10s " head, then text: each of its lines cut at a space to
				 * fit (the findings' model/evidence/fix) */
	APX_RB_SEV,		/* head, the severity word of sev in colour (padded to sevpad
				 * columns), mid, then text: whole, or wrapped as APX_RB_WRAP's
				 * when windent is not 0 */
};

struct apx_rblk {
	unsigned kind;				/* enum apx_rblk_kind */
	unsigned indent;			/* spaces before head or text */
	const char *head, *text;		/* owned */
	unsigned windent;
	int sev;				/* APX_RB_SEV: enum apx_severity */
	unsigned sevpad;
	const char *mid;			/* APX_RB_SEV: a literal ("" or NULL: none) */
	const struct apx_rtable *t;
	size_t row0, nrows;			/* APX_RB_ROWS */
};

/* The JSON report is members of the document, in the schema's order (docs/report-schema.md:
 * the view builders add them in that order, build_view.c), each of one section: a table as an
 * array of objects (a row each) or as one object (its first row), member names from its
 * columns. emit_json.c writes them all, in order. */
enum {
	APX_RJ_ARRAY,
	APX_RJ_OBJECT,
	APX_RJ_FINDINGS,	/* an array, a row a finding: its members, then "metrics" and
				 * "evidence_table" from rf[row] (the same rank) */
	APX_RJ_FLAME,		/* {"gpu": tree, "host": tree} from flames (flame.h), t NULL */
};

struct apx_rfinding;
struct apx_rflame;

struct apx_rjson {
	const char *name;			/* the member's name */
	const struct apx_rtable *t;
	unsigned shape;				/* APX_RJ_* */
	int inside;				/* written inside the previous member's object, as
						 * its last member */
	unsigned section;			/* enum apx_report_section */
	const struct apx_rfinding *rf;		/* APX_RJ_FINDINGS: a finding a row */
	size_t nrf;
	struct apx_rflame *const *flames;	/* APX_RJ_FLAME: the document's two */
};

#define APX_RDOC_JSON 48

#define APX_RSECTION_TABLES 16
#define APX_RSECTION_NOTES 16

struct apx_rsection {
	int present;				/* asked for (--section) and built */
	struct apx_rtable *t[APX_RSECTION_TABLES];
	unsigned ntables;
	const char *note[APX_RSECTION_NOTES];	/* lines of prose, owned */
	unsigned nnotes;
	int has_findings;			/* the document's findings belong here */
	/* the text view: blocks */
	struct apx_rblk *blk;
	size_t nblk, blkcap;
	int text_untitled;			/* nothing to say: not even the heading */
	const char *text_title;			/* its heading if not the section's title */
	const char *title;			/* its heading in every format when it is not the
						 * section's (another command's document: apx
						 * diff); text_title still comes first in text */
};

/* One finding as the emitters see it: the prose of findings.h plus its typed numbers as
 * tables (metrics: one row, a column per metric; evidence: the rule's evidence table). */
struct apx_rfinding {
	const struct apx_finding *f;
	unsigned rank;
	const char *severity;			/* "critical", "warning", "info" */
	struct apx_rtable *metrics;		/* NULL when the finding has none */
	struct apx_rtable *evidence;		/* NULL when the rule gave no table */
	int per_step;				/* a steady finding with steps found: */
	double step_ns, step_pct;		/* its saving a step, and as % of the median step */
};

struct apx_rdoc {
	const struct apx_model *m;		/* what it was built from (the builders) */
	const struct apx_findings *fd;
	unsigned sections;			/* bit per enum apx_report_section */
	unsigned top;				/* rows of the long tables */
	const char *command, *trace;		/* the first file's command and path (its title;
						 * NULL: no file), owned */
	const char *schema;			/* the JSON's "schema" (NULL: "apx.report/2") */
	const char *heading;			/* the HTML page's heading (NULL: "apx report") */
	struct apx_rsection sec[APX_SEC__COUNT];
	struct apx_rfinding *findings;		/* the main list (the findings section) */
	size_t nfindings;
	struct apx_rfinding *sfindings;		/* start-up's own (it does not dominate) */
	size_t nsfindings;
	struct apx_rjson json[APX_RDOC_JSON];	/* the JSON view, in schema order */
	unsigned njson;
	void *arena;				/* the strings (doc.c) */
	struct apx_rtable **sub;		/* the tables in cells (apx_rdoc_sub_table) */
	size_t nsub, subcap;
	/* the flame graphs (flame.h; NULL without stacks): GPU time (hotspots section), host
	 * samples (threads section) */
	struct apx_rflame *flame[2];
};

struct apx_rdoc_opts {
	unsigned sections;			/* bit per enum apx_report_section; 0 = all */
	unsigned top;				/* rows of the long tables (kernels, streams...) */
	/* The run's events, for the time series (GPU busy per step, device memory, metric
	 * timelines, one step's timeline); NULL leaves those tables out. */
	const struct apx_store *store;
};

/* Build the document; NULL only for ENOMEM. m and fd must outlive it. */
struct apx_rdoc *apx_rdoc_build(const struct apx_model *m, const struct apx_findings *fd,
				const struct apx_rdoc_opts *o);
void apx_rdoc_free(struct apx_rdoc *d);

/* The document of `apx diff` (build_diff.c) from two runs compared (analysis/diff.h), built on
 * the same containers and emitted by the same emitters: sections summary (the step times, the
 * program check, the work a step), findings (BEFORE's estimates beside the measured change),
 * kernels (the top largest changes a step, the rest summed), idle (by cause, a step) and
 * method, with their own titles; JSON schema "apx.diff/1" (docs/diff.md). top: kernels listed
 * (0: 10); forced: compared although they look like different programs (--force-compare, a
 * warning line). df must outlive the document. NULL only for ENOMEM. */
struct apx_diff;
struct apx_rdoc *apx_rdoc_build_diff(const struct apx_diff *df, unsigned top, int forced);

/* ---- for the builders (build.c, build_series.c) and the unit tests ---- */
struct apx_rdoc *apx_rdoc_new(const struct apx_model *m, const struct apx_findings *fd,
			      unsigned sections, unsigned top);
/* A new table in section s (NULL: ENOMEM or the section is full); columns follow. */
struct apx_rtable *apx_rdoc_table(struct apx_rdoc *d, unsigned s, const char *key,
				  const char *title);
void apx_rtable_col(struct apx_rtable *t, const char *key, const char *title, unsigned unit);
/* Columns from a static table of them. */
void apx_rtable_cols(struct apx_rtable *t, const struct apx_rcol *cols, size_t n);
#define APX_RTABLE_SET_COLS(t, cols) apx_rtable_cols(t, cols, sizeof(cols) / sizeof(cols[0]))
/* Columns with their text and JSON hints. */
void apx_rtable_vcols(struct apx_rtable *t, const struct apx_rvcol *cols, size_t n);
#define APX_RTABLE_SET_VCOLS(t, cols) apx_rtable_vcols(t, cols, sizeof(cols) / sizeof(cols[0]))
/* A new row (all cells n/a); -ENOMEM. Then set its cells by column index. */
int apx_rtable_row(struct apx_rtable *t);
void apx_rtable_num(struct apx_rtable *t, unsigned col, double v);
void apx_rtable_u64(struct apx_rtable *t, unsigned col, uint64_t v);
void apx_rtable_text(struct apx_rdoc *d, struct apx_rtable *t, unsigned col, const char *s,
		     size_t len);
void apx_rtable_str(struct apx_rdoc *d, struct apx_rtable *t, unsigned col, const char *s);
const struct apx_rcell *apx_rtable_cell(const struct apx_rtable *t, size_t row, unsigned col);
/* A cell of the last row by its column's key: a key t does not have is skipped, so that one
 * function fills the row of a thing in every table that shows it (cells.c). The index of a
 * key, or -1. */
int apx_rtable_col_of(const struct apx_rtable *t, const char *key);
void apx_rtable_knum(struct apx_rtable *t, const char *key, double v);
void apx_rtable_ku64(struct apx_rtable *t, const char *key, uint64_t v);
void apx_rtable_kstr(struct apx_rdoc *d, struct apx_rtable *t, const char *key, const char *s);
void apx_rtable_ktext(struct apx_rdoc *d, struct apx_rtable *t, const char *key, const char *s,
		      size_t len);
/* A copy of s owned by the document ("" on ENOMEM). */
const char *apx_rdoc_strdup(struct apx_rdoc *d, const char *s, size_t len);
/* A line of prose under section s (printf format). */
void apx_rdoc_note(struct apx_rdoc *d, unsigned s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A table only the text and/or JSON views show (views: APX_VIEW_TEXT | APX_VIEW_JSON). */
struct apx_rtable *apx_rdoc_view_table(struct apx_rdoc *d, unsigned s, const char *key,
				       unsigned views);
/* A table held in a cell of another (JSON: a nested array or object); NULL for ENOMEM. */
struct apx_rtable *apx_rdoc_sub_table(struct apx_rdoc *d, const char *key);
void apx_rtable_sub(struct apx_rtable *t, unsigned col, const struct apx_rtable *sub);
/* Text blocks of section s. The strings are copied. */
void apx_rdoc_line(struct apx_rdoc *d, unsigned s, unsigned indent, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void apx_rdoc_blk(struct apx_rdoc *d, unsigned s, const struct apx_rblk *b);
void apx_rdoc_blk_table(struct apx_rdoc *d, unsigned s, const struct apx_rtable *t);
/* Rows row0 .. row0 + n - 1 of t (no headers). */
void apx_rdoc_blk_rows(struct apx_rdoc *d, unsigned s, const struct apx_rtable *t, size_t row0,
		       size_t n);
/* The next JSON member, of section s (APX_RJ_ARRAY or APX_RJ_OBJECT). */
void apx_rdoc_json(struct apx_rdoc *d, unsigned s, const char *name, const struct apx_rtable *t,
		   unsigned shape, int inside);
/* The next JSON member, an APX_RJ_FINDINGS: t's rows, each with rf[row]'s typed tables. */
void apx_rdoc_json_findings(struct apx_rdoc *d, unsigned s, const char *name,
			    const struct apx_rtable *t, const struct apx_rfinding *rf, size_t n,
			    int inside);
/* The time series tables from the store (build_series.c). */
void apx_rdoc_build_series(struct apx_rdoc *d, const struct apx_store *st);

/* ---- emitters ---- */
struct apx_report_opts;

/* A cell for people ("1.23 ms", "n/a"; text cells: their bytes, unescaped). */
const char *apx_rcell_fmt(char *buf, size_t cap, const struct apx_rtable *t, size_t row,
			  unsigned col);

/* Text (emit_text.c): the blocks of each section under its heading; colour sequences (bold
 * headings, severity words) go to color_out when color is set, everything else to out. */
struct apx_text_out {
	FILE *f;
	int color;
	FILE *color_out;
};
#define APX_REPORT_W 100		/* every line of the text report fits this many columns */
void apx_report_emit_text_section(const struct apx_text_out *o, const struct apx_rdoc *d,
				  unsigned s);
/* Every section of the document, in order; 0 or -EIO. */
int apx_report_emit_text(const struct apx_text_out *o, const struct apx_rdoc *d);
void apx_text_heading_to(const struct apx_text_out *o, const char *title);
/* Print text from column col (the caller printed what comes before it), wrapped at spaces
 * (or '\n') so that no line passes APX_REPORT_W; further lines start at column indent. */
void apx_text_wrap(FILE *out, int col, int indent, const char *text);
/* JSON (emit_json.c): the whole document, schema "apx.report/2", its members in order (only
 * the sections asked for are built); 0 or -EIO. */
int apx_report_emit_json(FILE *out, const struct apx_rdoc *d);

/* CSV (emit_csv.c): every table of the document's sections, RFC 4180 quoting, raw numbers
 * (ns, bytes); several tables are separated by a blank line and a "# section/table" line. */
int apx_report_emit_csv(FILE *out, const struct apx_rdoc *d);
/* HTML (emit_html.c): one self-contained page, inline CSS and SVG plots, no script, no
 * network; everything from the trace HTML-escaped. */
int apx_report_emit_html(FILE *out, const struct apx_rdoc *d);
/* Write len bytes of s HTML-escaped (& < > " '; control characters and invalid UTF-8 as
 * U+FFFD or character references). */
void apx_html_text(FILE *out, const char *s, size_t len);

#endif
