/*
 * replay.c - runs a libFuzzer target over files without libFuzzer (gcc builds, ctest): each
 * argument is a file or a directory of files, fed once to LLVMFuzzerTestOneInput.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);	/* exact size for ASan, +1 for size 0 */
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size) {
		fprintf(stderr, "replay: %s: short read\n", path);
		return -1;
	}
	close(fd);
	LLVMFuzzerTestOneInput(buf, (size_t)st.st_size);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned n = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) < 0)
				return 1;
			n++;
			continue;
		}
		d = opendir(argv[i]);
		while (d && (e = readdir(d))) {
			char path[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				if (replay_file(path) < 0)
					return 1;
				n++;
			}
		}
		if (d)
			closedir(d);
	}
	printf("replay: %u inputs ran cleanly\n", n);
	return n ? 0 : 1;
}
