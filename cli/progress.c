/*
 * progress.c - the progress line of progress.h. The state below is written by the main thread
 * with SIGALRM blocked and read by the handler (same thread), so a step change is never seen
 * half done; the record counters it follows are written by the reading loops and only read
 * here (a count one record old is fine). Formatting in the handler is by hand (no stdio, no
 * locale): async-signal-safe.
 */
#include "cli/progress.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <apx/format.h>

#include "base/termsafe.h"

#include "base/banned.h"

#define PG_FILES 256			/* followed (the model's APX_AN_MAX_FILES) */
#define PG_NAME 48			/* bytes of a name shown (its end when longer) */
#define PG_PERIOD_US 250000		/* at most four updates a second */

enum pg_phase { PG_NONE, PG_STEP, PG_READ, PG_WRITE };

struct pg_file {
	uint64_t bytes, total;		/* file size, records in its chunk table */
	const uint64_t *done;
	char name[PG_NAME + 8];
};

/* The one progress line: written by the main thread with SIGALRM blocked (pg_lock), read by
 * the handler. on/forced are set once by apx_progress_init. */
static struct {
	int on, forced, drawn, armed;
	char cmd[16];
	enum pg_phase phase;
	char what[32], name[PG_NAME + 8], after[32];
	struct pg_file files[PG_FILES];
	size_t nfiles;
	char path[PATH_MAX];		/* PG_WRITE: the file growing */
	uint64_t est;
	char line[256], last[256];	/* the handler's: drawn now, drawn before */
} g_pg;

static void pg_lock(sigset_t *old)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGALRM);
	sigprocmask(SIG_BLOCK, &s, old);
}

static void pg_unlock(const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* ---- async-signal-safe formatting -------------------------------------------------------- */

struct pg_buf {
	char *p;
	size_t n, cap;
};

static void put(struct pg_buf *b, const char *s)
{
	while (*s && b->n + 1 < b->cap)
		b->p[b->n++] = *s++;
	b->p[b->n] = 0;
}

static void put_u64(struct pg_buf *b, uint64_t v)
{
	char d[24];
	int i = (int)sizeof(d) - 1;

	d[i] = 0;
	do
		d[--i] = (char)('0' + v % 10);
	while ((v /= 10) && i > 0);
	put(b, d + i);
}

/* Decimal units as apx prints sizes elsewhere: "812 B", "412 MB", "2.1 GB". */
static void put_size(struct pg_buf *b, uint64_t v)
{
	static const char *const unit[] = { " B", " kB", " MB", " GB", " TB", " PB" };
	uint64_t scale = 1;
	unsigned u = 0;

	while (u + 1 < sizeof(unit) / sizeof(unit[0]) && v >= scale * 1000) {
		scale *= 1000;
		u++;
	}
	if (u && v / scale < 10) {	/* one decimal below 10 */
		uint64_t tenths = (v * 10 + scale / 2) / scale;

		if (tenths >= 100) {
			put_u64(b, tenths / 10);
		} else {
			put_u64(b, tenths / 10);
			put(b, ".");
			put_u64(b, tenths % 10);
		}
	} else {
		put_u64(b, (v + scale / 2) / scale);
	}
	put(b, unit[u]);
}

static void put_pct(struct pg_buf *b, uint64_t part, uint64_t whole)
{
	uint64_t pct = whole ? (part >= whole ? 100 : (uint64_t)((double)part * 100.0 / (double)whole))
			     : 0;

	put(b, " (");
	put_u64(b, pct);
	put(b, " %)");
}

static uint64_t done_of(const struct pg_file *f)
{
	uint64_t d = *(const volatile uint64_t *)f->done;

	return d < f->total ? d : f->total;
}

/* The line for the current step into g_pg.line; 0 when there is none. */
static size_t render(void)
{
	struct pg_buf b = { g_pg.line, 0, sizeof(g_pg.line) };

	g_pg.line[0] = 0;
	if (g_pg.phase == PG_NONE)
		return 0;
	put(&b, "\r\033[K");
	put(&b, "apx ");
	put(&b, g_pg.cmd);
	put(&b, ": ");
	if (g_pg.phase == PG_STEP) {
		put(&b, g_pg.what);
		if (g_pg.name[0]) {
			put(&b, " ");
			put(&b, g_pg.name);
		}
	} else if (g_pg.phase == PG_READ) {
		uint64_t bytes = 0, all = 0, recs = 0, recs_all = 0;
		size_t cur = g_pg.nfiles;

		for (size_t k = 0; k < g_pg.nfiles; k++) {
			const struct pg_file *f = &g_pg.files[k];
			uint64_t d = done_of(f);

			all += f->bytes;
			recs += d;
			recs_all += f->total;
			if (f->total)
				bytes += (uint64_t)((double)f->bytes * (double)d / (double)f->total);
			else
				bytes += f->bytes;
			if (cur == g_pg.nfiles && d < f->total)
				cur = k;
		}
		if (cur == g_pg.nfiles && g_pg.after[0]) {	/* every record read */
			put(&b, g_pg.after);
		} else {
			if (cur == g_pg.nfiles)
				cur = g_pg.nfiles - 1;
			put(&b, "reading ");
			put(&b, g_pg.files[cur].name);
			if (g_pg.nfiles > 1) {
				put(&b, " (file ");
				put_u64(&b, cur + 1);
				put(&b, " of ");
				put_u64(&b, g_pg.nfiles);
				put(&b, ")");
			}
			put(&b, " ");
			put_size(&b, bytes);
			put(&b, " of ");
			put_size(&b, all);
			put_pct(&b, recs, recs_all);
		}
	} else {	/* PG_WRITE */
		struct stat st;
		uint64_t n = stat(g_pg.path, &st) == 0 ? (uint64_t)st.st_size : 0;

		put(&b, "writing ");
		put(&b, g_pg.name);
		put(&b, " ");
		put_size(&b, n);
		if (g_pg.est) {
			put(&b, " of about ");
			put_size(&b, g_pg.est);
			put_pct(&b, n < g_pg.est ? n : g_pg.est * 99 / 100, g_pg.est);
		}
	}
	return b.n;
}

static void draw(void)
{
	size_t n = render();
	ssize_t w;

	if (!n || (g_pg.drawn && !strcmp(g_pg.line, g_pg.last)))
		return;	/* nothing, or nothing new */
	w = write(STDERR_FILENO, g_pg.line, n);
	if (w > 0) {
		g_pg.drawn = 1;
		memcpy(g_pg.last, g_pg.line, n + 1);
	}
}

static void on_alarm(int sig)
{
	int saved = errno;

	(void)sig;
	draw();
	errno = saved;
}

/* ---- the steps ------------------------------------------------------------------------- */

int apx_progress_init(const char *cmd)
{
	const char *env = getenv("APX_PROGRESS");

	memset(&g_pg, 0, sizeof(g_pg));
	if (env && !strcmp(env, "0"))
		return 0;
	g_pg.forced = env && !strcmp(env, "1");
	g_pg.on = g_pg.forced || isatty(STDERR_FILENO);
	apx_term_safe_str(g_pg.cmd, sizeof(g_pg.cmd), cmd);
	return g_pg.on;
}

/* Start the timer (once per step sequence) and, when forced, draw at once. Called locked. */
static void pg_begin(void)
{
	if (!g_pg.armed) {
		struct sigaction sa;
		struct itimerval it = { { 0, PG_PERIOD_US }, { 0, PG_PERIOD_US } };

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGALRM, &sa, NULL) < 0)
			return;
		setitimer(ITIMER_REAL, &it, NULL);
		g_pg.armed = 1;
	}
	if (g_pg.forced)
		draw();
}

/* A name for the line: escaped, its end when it is long (cut at a character's start). */
static void pg_name(char *out, size_t cap, const char *name)
{
	char safe[4096];
	size_t len;
	const char *p;

	apx_term_safe_str(safe, sizeof(safe), name ? name : "");
	len = strlen(safe);
	p = safe;
	if (len > PG_NAME) {
		p = safe + len - (PG_NAME - 3);
		while ((unsigned char)*p >= 0x80 && (unsigned char)*p < 0xc0)
			p++;
		snprintf(out, cap, "...%s", p);
		return;
	}
	snprintf(out, cap, "%s", p);
}

void apx_progress_step(const char *what, const char *name)
{
	sigset_t old;

	if (!g_pg.on)
		return;
	pg_lock(&old);
	snprintf(g_pg.what, sizeof(g_pg.what), "%s", what);
	pg_name(g_pg.name, sizeof(g_pg.name), name);
	if (!name)
		g_pg.name[0] = 0;
	g_pg.phase = PG_STEP;
	pg_begin();
	pg_unlock(&old);
}

void apx_progress_reading(size_t n, const char *const *names, struct apx_reader *const *rds,
			  const uint64_t *const *done, const char *after)
{
	sigset_t old;

	if (!g_pg.on || !n)
		return;
	pg_lock(&old);
	g_pg.nfiles = n < PG_FILES ? n : PG_FILES;
	for (size_t k = 0; k < g_pg.nfiles; k++) {
		struct pg_file *f = &g_pg.files[k];
		struct stat st;

		f->total = 0;
		for (size_t c = 0; rds[k] && c < apx_reader_chunk_count(rds[k]); c++)
			f->total += apx_reader_chunk(rds[k], c)->records;
		f->bytes = stat(names[k], &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
		f->done = done[k];
		pg_name(f->name, sizeof(f->name), names[k]);
	}
	snprintf(g_pg.after, sizeof(g_pg.after), "%s", after ? after : "");
	g_pg.phase = PG_READ;
	pg_begin();
	pg_unlock(&old);
}

void apx_progress_writing(const char *path, const char *name, uint64_t est)
{
	sigset_t old;

	if (!g_pg.on)
		return;
	pg_lock(&old);
	snprintf(g_pg.path, sizeof(g_pg.path), "%s", path);
	pg_name(g_pg.name, sizeof(g_pg.name), name);
	g_pg.est = est;
	g_pg.phase = PG_WRITE;
	pg_begin();
	pg_unlock(&old);
}

void apx_progress_stop(void)
{
	static const char erase[] = "\r\033[K";
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	sigset_t old;

	if (!g_pg.on)
		return;
	pg_lock(&old);
	if (g_pg.armed) {	/* the handler stays: one still pending finds nothing to draw */
		setitimer(ITIMER_REAL, &off, NULL);
		g_pg.armed = 0;
	}
	g_pg.phase = PG_NONE;
	if (g_pg.drawn && write(STDERR_FILENO, erase, sizeof(erase) - 1) > 0)
		g_pg.drawn = 0;
	pg_unlock(&old);
}
