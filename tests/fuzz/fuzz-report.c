/*
 * fuzz-report.c - libFuzzer target over the whole report path: the input is read as a trace,
 * built into the analysis model, run through every rule and rendered as text (through the
 * terminal filter) and JSON; then every report invariant is checked (tests/props/
 * report_props.h: busy <= span <= wall, savings <= wall, percentages 0-100, text and JSON
 * agree, valid JSON, no control byte on the terminal). A broken invariant aborts (a finding),
 * as do ASan/UBSan reports. Inputs starting with "R" have every chunk checksum recomputed
 * first, so mutated bytes reach the decoders and the rules. Built with -fsanitize=fuzzer
 * when APX_FUZZ=ON; otherwise linked with replay.c so ctest replays the committed corpus.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "props/report_props.h"

#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct apx_findings *fd;
	struct apx_model *m;
	uint8_t *buf;
	char why[512];

	if (size > (4u << 20) || !(buf = malloc(size + 1)))
		return 0;
	memcpy(buf, data, size);
	if (size && buf[0] == 'R') {	/* "R" + a trace: resealed */
		memmove(buf, buf + 1, --size);
		apx_props_reseal(buf, size);
	}
	fd = calloc(1, sizeof(*fd));
	if (fd && apx_props_model(buf, size, &m, fd) == 0) {
		if (apx_props_check(m, fd, why, sizeof(why)) < 0) {
			fprintf(stderr, "fuzz-report: invariant broken: %s\n", why);
			abort();
		}
		apx_model_free(m);
	}
	free(fd);
	free(buf);
	return 0;
}
