/*
 * fuzz-kineto-report.c - libFuzzer target over a torch.profiler (Kineto) JSON trace through the
 * whole report: the importer (lib/import) converts the input into an .apx trace in memory, which
 * is read into the analysis model, run through every rule and rendered as text and JSON; then
 * every report invariant is checked (tests/props/report_props.h: busy <= span <= wall, savings
 * <= wall, percentages 0-100, text and JSON agree, valid JSON, no control byte on the
 * terminal). A broken invariant aborts (a finding), as do ASan/UBSan reports (the
 * writer's memcpy to NULL for a kernel without "name" was found this way). Built with
 * -fsanitize=fuzzer when APX_FUZZ=ON; otherwise linked with replay.c so ctest replays the
 * committed corpus (tests/fuzz/corpus/kineto-report) and the Kineto fixtures.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/kineto.h"
#include "props/report_props.h"

#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input converted to .apx bytes (malloc'ed), or NULL when the importer refused it. */
static uint8_t *convert(const uint8_t *data, size_t size, size_t *ret_len)
{
	struct apx_diag d = { 0 };
	uint8_t *buf = NULL;
	struct stat st;
	int fd = memfd_create("fuzz-kineto-report", MFD_CLOEXEC), wfd;

	if (fd < 0)
		return NULL;
	wfd = dup(fd);
	if (wfd < 0 || apx_kineto_import_mem((const char *)data, size, wfd, &d) < 0)
		goto out;	/* the importer takes wfd */
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (64 << 20) ||
	    !(buf = malloc((size_t)st.st_size)))
		goto out;
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		buf = NULL;
		goto out;
	}
	*ret_len = (size_t)st.st_size;
out:
	close(fd);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct apx_findings *fd;
	struct apx_model *m;
	uint8_t *trace;
	size_t len = 0;
	char why[512];

	if (size > (1u << 20) || !(trace = convert(data, size, &len)))
		return 0;
	fd = calloc(1, sizeof(*fd));
	if (fd && apx_props_model(trace, len, &m, fd) == 0) {
		if (apx_props_check(m, fd, why, sizeof(why)) < 0) {
			fprintf(stderr, "fuzz-kineto-report: invariant broken: %s\n", why);
			abort();
		}
		apx_model_free(m);
	}
	free(fd);
	free(trace);
	return 0;
}
