/*
 * export.c - the table of exporters (export.h) and what they share: names for humans,
 * labels, and safe output files. Called by cli/cmd_export.c and by the exporters.
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
