/*
 * kineto.c - the Kineto importer's entry points (kineto.h): tells a JSON trace from an .apx
 * file, reads it (kineto_input.c), runs pass 1 to learn the header's facts, opens an
 * apx_writer on the caller's fd with that header, runs pass 2 to write the records, then the
 * threads and the facts, and closes the writer. Called by cli/import_trace.c, tests/unit/test-import.c and
 * tests/fuzz/fuzz-kineto.c.
 */
#include "import/kineto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/kineto_int.h"

#include "base/banned.h"

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

int apx_kineto_detect(const char *path)
{
	unsigned char b[64];
	struct stat st;
	ssize_t n;
	int fd;

	if (ends_with(path, ".json") || ends_with(path, ".json.gz"))
		return 1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	n = read(fd, b, sizeof(b));
	close(fd);
	if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
		return 1;
	for (ssize_t i = 0; i < n; i++)
		if (b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r')
			return b[i] == '{';
	return 0;
}

static void header(const struct apx_ki *ki, struct apx_rec *h)
{
	int64_t start;

	apx_rec_init(h, APX_REC_HEADER);
	/* the report's "written by torch.profiler (Kineto JSON)" */
	apx_rec_set_str(h, APX_HEADER_PRODUCER, "torch.profiler");
	apx_rec_set_str(h, APX_HEADER_PRODUCER_VERSION, "(Kineto JSON)");
	/* Kineto's ts are wall-clock microseconds (since baseTimeNanoseconds when present) */
	h->v[APX_HEADER_CLOCK] = APX_CLOCK_REALTIME;
	h->v[APX_HEADER_PID] = ki->has_pid ? (uint64_t)ki->pid : 0;
	apx_rec_set_i64(h, APX_HEADER_RANK, ki->has_rank ? ki->rank : -1);
	if (ki->has_span && !__builtin_add_overflow(ki->base_ns, ki->first_ts, &start) && start > 0)
		h->v[APX_HEADER_START_NS] = (uint64_t)start;
	if (ki->has_base)
		h->v[APX_HEADER_CREATED_NS] = (uint64_t)ki->base_ns;
}

int apx_kineto_import_mem(const char *json, size_t len, int fd, struct apx_diag *diag)
{
	struct apx_ki *ki = calloc(1, sizeof(*ki));
	struct apx_rec h;
	int64_t end = 0;
	int r;

	if (!ki) {
		close(fd);
		return -ENOMEM;
	}
	diag->msg[0] = 0;
	ki->diag = diag;
	ki->pass = 1;
	r = apx_ki_walk(ki, json, len);
	if (r < 0) {
		close(fd);
		goto out;
	}
	header(ki, &h);
	r = apx_writer_open_fd(fd, &h, NULL, &ki->w);
	if (r < 0) {
		if (r == -ENOMEM || r == -EINVAL)
			close(fd);	/* failed before taking it (a write error closes it) */
		snprintf(diag->msg, sizeof(diag->msg), "cannot write the converted trace: %s",
			 strerror(-r));
		goto out;
	}
	ki->pass = 2;
	if ((r = apx_ki_walk(ki, json, len)) < 0 || (r = apx_ki_emit_threads(ki)) < 0 ||
	    (r = apx_ki_facts(ki)) < 0) {
		if (!diag->msg[0])
			snprintf(diag->msg, sizeof(diag->msg), "cannot write the converted trace: %s",
				 strerror(-r));
		apx_writer_abandon(ki->w);
		goto out;
	}
	if (ki->has_span)
		(void)__builtin_add_overflow(ki->base_ns, ki->last_ts, &end);
	r = apx_writer_close(ki->w, end > 0 ? (uint64_t)end : 0, 0);
	if (r < 0)
		snprintf(diag->msg, sizeof(diag->msg), "cannot write the converted trace: %s",
			 strerror(-r));
out:
	free(ki->corr);
	free(ki);
	return r < 0 ? r : 0;
}

int apx_kineto_import(const char *path, int fd, struct apx_diag *diag)
{
	char *json = NULL;
	size_t len = 0;
	int gz, r;

	diag->msg[0] = 0;
	gz = apx_ki_read_file(path, &json, &len, diag);
	if (gz < 0) {
		close(fd);
		return gz;
	}
	r = apx_kineto_import_mem(json, len, fd, diag);
	free(json);
	if (r < 0 && gz) {
		static const char tail[] = " (in the gunzipped JSON)";
		size_t n = strnlen(diag->msg, sizeof(diag->msg) - sizeof(tail));

		memcpy(diag->msg + n, tail, sizeof(tail));
	}
	return r;
}
