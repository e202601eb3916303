/*
 * fuzz-kineto.c - libFuzzer target over the Kineto JSON importer (lib/import): every token of
 * the input through the pull parser (strings unescaped, numbers scaled), then the whole
 * conversion into an .apx trace written to /dev/null. Anything but a clean return is a bug
 * (ASan/UBSan report it). Built with -fsanitize=fuzzer when APX_FUZZ=ON; otherwise linked
 * with replay.c so ctest replays the committed corpus (tests/fuzz/corpus/kineto) and the
 * Kineto fixtures on every build.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "import/jsonparse.h"
#include "import/kineto.h"

#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct apx_diag d = { 0 };
	struct apx_jp_tok t;
	struct apx_jp jp;
	volatile uint64_t sink = 0;
	char buf[64];
	int64_t v;
	int fd;

	apx_jp_init(&jp, data, size, &d);
	while (apx_jp_next(&jp, &t) > 0) {
		if (t.type == APX_JP_STRING || t.type == APX_JP_KEY)
			sink += apx_jp_string(&t, buf, sizeof(buf));
		else if (t.type == APX_JP_NUMBER && apx_jp_scaled(&t, 3, &v) == 0)
			sink += (uint64_t)v;
	}
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		(void)apx_kineto_import_mem((const char *)data, size, fd, &d);	/* takes fd */
	(void)sink;
	return 0;
}
