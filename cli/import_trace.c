/*
 * import_trace.c - apx report's hook for traces of other profilers: a torch.profiler
 * (Kineto) JSON trace is converted by lib/import into an .apx trace in an anonymous memory
 * file (memfd), opened as /proc/self/fd/N and handed to the model (and so to its event store,
 * which reads it like any .apx file) under the JSON file's name. Called by cli/cmd_report.c for
 * each file on the command line, and by cli/cmd_export.c (its event store) the same way.
 */
#include "cli/import_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "import/kineto.h"

#include "base/banned.h"

int apx_cli_open_trace(const char *path, struct apx_reader **ret, struct apx_diag *d)
{
	char fdpath[64];
	int fd, wfd, r;

	if (!apx_kineto_detect(path))
		return apx_reader_open(path, ret, d);
	fd = memfd_create("apx-kineto", MFD_CLOEXEC);
	if (fd < 0 || (wfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		r = -errno;
		snprintf(d->msg, sizeof(d->msg), "cannot create the converted trace: %s",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return r;
	}
	r = apx_kineto_import(path, wfd, d);	/* takes wfd */
	if (r < 0) {
		close(fd);
		return r;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	r = apx_reader_open(fdpath, ret, d);
	close(fd);	/* the reader holds its own reference */
	return r;
}

int apx_cli_add_trace(struct apx_model *m, const char *path, struct apx_diag *d)
{
	struct apx_reader *rd;
	int r;

	if (!apx_kineto_detect(path))
		return apx_model_add_file(m, path, d);
	r = apx_cli_open_trace(path, &rd, d);
	if (r < 0)
		return r;
	/* named as the user named it (the model and its event store keep that name) */
	return apx_model_add_reader(m, path, rd, d);
}
