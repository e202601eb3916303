/*
 * export.c - the table of exporters (export.h) and what they share: names for humans,
 * labels, safe output files, and the cross-stream waits of the store's files (apx report's
 * model and what-if graph, matched back to the store's events for the "stream wait" flows).
 * Called by cli/cmd_export.c and by the exporters; single-threaded.
 */
#include "export/export.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/demangle.h"
#include "analysis/model.h"
#include "analysis/whatif/whatif.h"
#include "base/utf8.h"

#include "base/banned.h"

extern const struct apx_exporter apx_export_perfetto, apx_export_chrome;
#ifdef APX_HAVE_SQLITE
extern const struct apx_exporter apx_export_sqlite;
#endif

static const struct apx_exporter *const table[] = {
	&apx_export_perfetto,
	&apx_export_chrome,
#ifdef APX_HAVE_SQLITE
	&apx_export_sqlite,
#endif
};

const struct apx_exporter *apx_exporter_find(const char *name)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i]->name, name))
			return table[i];
	return NULL;
}

const struct apx_exporter *const *apx_exporters(size_t *ret_n)
{
	*ret_n = sizeof(table) / sizeof(table[0]);
	return table;
}

const char *apx_export_kernel_name(const struct apx_store *st, uint32_t name, char *buf,
				   size_t cap)
{
	struct apx_es_text t = apx_store_string(st, name);

	return apx_demangle(t.p, t.len, buf, cap);
}

const char *apx_export_text(struct apx_es_text t, char *buf, size_t cap)
{
	return apx_utf8_sanitize(buf, cap, t.p, t.len);
}

const char *apx_export_device_label(const struct apx_store *st, uint32_t dev, char *buf,
				    size_t cap)
{
	const struct apx_es_device *d = dev < st->ndevices ? &st->devices[dev] : NULL;

	if (!d)
		snprintf(buf, cap, "GPU ?");
	else if (d->name.len)
		snprintf(buf, cap, "GPU %u (%.*s)", d->ordinal, (int)d->name.len, d->name.p);
	else
		snprintf(buf, cap, "GPU %u", d->ordinal);
	return buf;
}

int apx_export_utc_start_ns(const struct apx_store *st, int64_t *ret_ns)
{
	int64_t off, v;

	if (!st->nfiles || st->run_start_ns > INT64_MAX)
		return -EOVERFLOW;
	off = apx_rec_i64(apx_reader_header(st->files[0].r), APX_HEADER_REALTIME_OFFSET_NS);
	if (__builtin_add_overflow((int64_t)st->run_start_ns, off, &v) || v < 0)
		return -EOVERFLOW;
	*ret_ns = v;
	return 0;
}

/* The exporters' files: stdio over a descriptor whose first failed write keeps its errno
 * (stdio forgets it), so a full disk is said as "No space left on device", not EIO. Every
 * write after a failed one fails too: no hole in the middle of the file. */
struct wfd {
	int fd;
	int err;
};

static ssize_t wfd_write(void *cookie, const char *buf, size_t n)
{
	struct wfd *w = cookie;
	size_t left = n;

	while (!w->err && left) {
		ssize_t k = write(w->fd, buf, left);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			w->err = k < 0 ? errno : EIO;
		else
			buf += k, left -= (size_t)k;
	}
	if (w->err) {
		errno = w->err;
		return 0;	/* fopencookie: 0 is an error */
	}
	return (ssize_t)n;
}

/* errno = the first error (a write's, else close's) when it returns -1 */
static int wfd_close(void *cookie)
{
	struct wfd *w = cookie;
	int e = w->err;

	if (close(w->fd) < 0 && !e && errno != EINTR)
		e = errno;
	free(w);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

int apx_export_fopen(const char *path, FILE **ret_f, struct apx_diag *diag)
{
	static const cookie_io_functions_t io = { .write = wfd_write, .close = wfd_close };
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	struct wfd *w;
	FILE *f;
	int e;

	if (fd < 0)
		goto fail;
	w = calloc(1, sizeof(*w));
	if (!w) {
		close(fd);
		errno = ENOMEM;
		goto fail;
	}
	w->fd = fd;
	f = fopencookie(w, "w", io);
	if (!f) {
		close(fd);
		free(w);
		errno = ENOMEM;
		goto fail;
	}
	*ret_f = f;
	return 0;
fail:
	e = errno;
	if (diag) {
		diag->err = -e;
		snprintf(diag->msg, sizeof(diag->msg), "cannot create it: %s", strerror(e));
	}
	return -e;
}

int apx_export_fclose(FILE *f, const char *path, struct apx_diag *diag)
{
	int bad = ferror(f), e = 0;

	(void)path;
	errno = 0;
	if (fflush(f) != 0)
		e = errno;
	errno = 0;
	if (fclose(f) != 0 && !e)	/* the first failed write's errno (wfd_close) */
		e = errno;
	if (bad && !e)
		e = EIO;
	if (e) {
		if (diag) {
			diag->err = -e;
			snprintf(diag->msg, sizeof(diag->msg), "write failed: %s", strerror(e));
		}
		return -e;
	}
	return 0;
}

/* ---- cross-stream waits -------------------------------------------------------------------- */

static enum apx_es_type es_type_of(uint8_t kind)
{
	return kind == APX_WI_KERNEL ? APX_ES_KERNEL : kind == APX_WI_COPY ? APX_ES_COPY
									   : APX_ES_MEMSET;
}

static const uint32_t *es_stream_col(const struct apx_store *st, enum apx_es_type type)
{
	return type == APX_ES_KERNEL ? st->k.stream : type == APX_ES_COPY ? st->c.stream
									   : st->s.stream;
}

/* The event of st that is event (type, i) of the model's store ms (the same files, in the same
 * order): same file, CUDA stream and start on the file's own clock. 0 and *ret_j, or -ENOENT
 * when st left it out. */
static int match_event(const struct apx_store *st, const struct apx_store *ms,
		       enum apx_es_type type, size_t i, size_t *ret_j)
{
	const uint32_t *mcol = es_stream_col(ms, type), *col = es_stream_col(st, type);
	const struct apx_es_stream *mstr;
	uint16_t file;
	uint64_t at;
	size_t lo = 0, hi = apx_store_count(st, type);

	if (i >= apx_store_count(ms, type) || mcol[i] >= ms->nstreams)
		return -ENOENT;
	mstr = &ms->streams[mcol[i]];
	file = mstr->file;
	if (file >= st->nfiles || file >= ms->nfiles || strcmp(st->files[file].path,
								 ms->files[file].path))
		return -ENOENT;
	/* the start on the file's clock, then on st's (which may move other hosts' files) */
	at = (uint64_t)((int64_t)apx_store_start(ms, type, i) - ms->files[file].shift_ns +
			st->files[file].shift_ns);
	while (lo < hi) {	/* columns are in start order (store_sort.c) */
		size_t mid = lo + (hi - lo) / 2;

		if (apx_store_start(st, type, mid) < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < apx_store_count(st, type) && apx_store_start(st, type, lo) == at; lo++) {
		const struct apx_es_stream *s = &st->streams[col[lo]];

		if (s->file == file && s->id == mstr->id) {
			*ret_j = lo;
			return 0;
		}
	}
	return -ENOENT;
}

static int cmp_wait(const void *a, const void *b)
{
	const struct apx_export_wait *x = a, *y = b;

	if (x->awaited != y->awaited)
		return x->awaited < y->awaited ? -1 : 1;
	return x->waiting < y->waiting ? -1 : x->waiting > y->waiting;
}

/* The waits of the finished model m (its store the twin of st) matched to st's events. 0 or
 * -ENOMEM; *ret untouched when there is none. */
static int waits_of(const struct apx_store *st, struct apx_model *m, struct apx_export_waits *ret)
{
	struct apx_wi_dep_pair *pairs = NULL;
	struct apx_export_wait *w = NULL;
	size_t np = apx_whatif_dep_pairs(m, NULL, 0), n = 0;

	if (!np)
		return 0;
	pairs = calloc(np, sizeof(*pairs));
	w = calloc(np, sizeof(*w));
	if (!pairs || !w) {
		free(pairs);
		free(w);
		return -ENOMEM;
	}
	np = apx_whatif_dep_pairs(m, pairs, np);
	for (size_t k = 0; k < np; k++) {
		enum apx_es_type ta = es_type_of(pairs[k].awaited_kind);
		enum apx_es_type tw = es_type_of(pairs[k].waiting_kind);
		size_t a, b;

		if (match_event(st, m->store, ta, pairs[k].awaited, &a) < 0 ||
		    match_event(st, m->store, tw, pairs[k].waiting, &b) < 0)
			continue;	/* outside --from/--to, under --min-dur */
		w[n++] = (struct apx_export_wait){ APX_EXPORT_WAIT_KEY(ta, a),
						   APX_EXPORT_WAIT_KEY(tw, b) };
	}
	free(pairs);
	if (!n) {
		free(w);
		return 0;
	}
	qsort(w, n, sizeof(*w), cmp_wait);
	ret->w = w;
	ret->n = n;
	return 0;
}

int apx_export_open(const char *const *paths, size_t npaths, const struct apx_store_opts *opts,
		    int (*open_file)(const char *path, struct apx_reader **ret,
				     struct apx_diag *diag),
		    struct apx_export_waits *ret_waits, struct apx_store **ret_store,
		    struct apx_diag *diag)
{
	struct apx_model *m = NULL;
	struct apx_store *st;
	int r = -ENOMEM;

	if (ret_waits)
		*ret_waits = (struct apx_export_waits){ NULL, 0 };
	if (!npaths || npaths > APX_STORE_MAX_FILES)
		return -EINVAL;
	st = apx_store_new(opts);
	if (!st)
		return -ENOMEM;
	if (ret_waits && npaths <= APX_AN_MAX_FILES) {
		if (!(m = apx_model_new()))
			goto fail;
		m->twin = 1;	/* its store reads st's readers in st's pass */
	}
	for (size_t i = 0; i < npaths; i++) {
		struct apx_reader *rd;

		if ((r = open_file(paths[i], &rd, diag)) < 0 ||
		    (r = apx_store_add_reader(st, paths[i], rd, diag)) < 0)
			goto fail;
		/* a file the model refuses (not a trace it reads): no waits, as before */
		if (m && (r = apx_model_add_reader(m, paths[i], rd, NULL)) < 0) {
			if (r == -ENOMEM)
				goto fail;
			apx_model_free(m);	/* it borrows the readers: st keeps them */
			m = NULL;
		}
	}
	r = m ? apx_store_build_twin(st, m->store, diag) : apx_store_build(st, diag);
	if (r < 0)
		goto fail;
	/* a model that cannot be finished (no steady window...): no waits, said nowhere */
	if (m && (r = apx_model_finish(m)) == -ENOMEM)
		goto fail;
	if (m && r >= 0 && (r = waits_of(st, m, ret_waits)) < 0)
		goto fail;
	apx_model_free(m);	/* before st: it borrows st's readers */
	*ret_store = st;
	return 0;
fail:
	apx_model_free(m);
	apx_store_free(st);
	return r;
}
