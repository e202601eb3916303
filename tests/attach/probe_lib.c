/*
 * probe_lib.c - libapx-attachprobe.so, the library tests/attach/inject_check.py makes a running
 * python3 load with apx_attach_inject() (cli/attach_inject.c). apx_attach_probe(arg) appends
 * "pid PID call N" to the file named arg (N counts the calls into this one copy of the
 * library: a second injection that reuses the loaded library writes call 2) and returns 42.
 * Runs on the borrowed thread of the target, holding the GIL; built without sanitizers.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/banned.h"

int apx_attach_probe(const char *arg);

int apx_attach_probe(const char *arg)
{
	static int calls;
	char line[64];
	int fd, n;

	n = snprintf(line, sizeof(line), "pid %d call %d\n", (int)getpid(), ++calls);
	fd = open(arg, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, line, (size_t)n) != n) {
		close(fd);
		return -2;
	}
	close(fd);
	return 42;
}
