/*
 * export.c - the table of exporters (export.h) and what they share: names for humans,
 * labels, and safe output files. Called by cli/cmd_export.c and by the exporters.
 */
#include "export/export.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/demangle.h"

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
	snprintf(buf, cap, "%.*s", (int)t.len, t.p);
	return buf;
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

int apx_export_fopen(const char *path, FILE **ret_f, struct apx_diag *diag)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	FILE *f;

	if (fd < 0)
		goto fail;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		goto fail;
	}
	*ret_f = f;
	return 0;
fail:
	if (diag) {
		diag->err = -errno;
		snprintf(diag->msg, sizeof(diag->msg), "cannot create it: %s", strerror(errno));
	}
	return -errno;
}

int apx_export_fclose(FILE *f, const char *path, struct apx_diag *diag)
{
	int bad = ferror(f);

	(void)path;
	if (fclose(f) != 0 || bad) {
		if (diag) {
			diag->err = -EIO;
			snprintf(diag->msg, sizeof(diag->msg), "write failed (disk full?)");
		}
		return -EIO;
	}
	return 0;
}
