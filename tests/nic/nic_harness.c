/*
 * nic_harness.c - apx-nic-harness: the collector's NIC source (src_nic.c) without CUDA, as the
 * collector would run it with --nic-metrics --nic-device-include '^lo$': started on this
 * thread, drained as the writer thread drains it, while this program sends bytes over
 * loopback; writes a real .apx (argv[1]) that tests/nic/check.sh reads with apx report. The
 * collector's helpers that need CUPTI are stubbed here. `apx-nic-harness OUT rates-only ROOT`:
 * a rank of a multi-process job without --nic-metrics (WORLD_SIZE=2), the sysfs tree under
 * ROOT: the line rates only; exit 3 when the source samples. Test code only.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "collector/collector.h"
#include "collector_stubs.h"

#include "base/banned.h"

static struct apx_collector g_c;
static struct apx_enc g_e;

uint64_t apx_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	char buf[8192] = { 0 };
	uint64_t sent = 0, t0;
	int r, w;

	if (argc < 2)
		return 2;
	if (argc == 4 && !strcmp(argv[2], "rates-only")) {
		setenv("WORLD_SIZE", "2", 1);
		setenv("APX_NIC_SYSFS_ROOT", argv[3], 1);
		unsetenv("APX_NIC_METRICS");
		unsetenv("LOCAL_RANK");
		if (apx_stub_collector_open(&g_c, &g_e, argv[1], "nic-harness") < 0 ||
		    apx_source_nic.start(&g_c) < 0)
			return 1;
		usleep(20000);
		apx_source_nic.drain(&g_c, apx_mono_ns(), 0);
		apx_source_nic.stop(&g_c);
		apx_source_nic.finish(&g_c, apx_mono_ns());
		return apx_writer_close(g_c.w, apx_mono_ns(), 0) < 0;
	}
	setenv("APX_NIC_METRICS", "1", 1);
	setenv("APX_NIC_HZ", "1000", 1);
	setenv("APX_NIC_INCLUDE", "^lo$", 1);
	unsetenv("LOCAL_RANK");
	if (apx_stub_collector_open(&g_c, &g_e, argv[1], "nic-harness") < 0)
		return 1;
	if (apx_source_nic.start(&g_c) < 0)
		return 77;	/* no lo counters here */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r = socket(AF_INET, SOCK_DGRAM, 0);
	w = socket(AF_INET, SOCK_DGRAM, 0);
	if (r < 0 || w < 0 || bind(r, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(r, (struct sockaddr *)&a, &al))
		return 1;
	t0 = apx_mono_ns();
	while (apx_mono_ns() - t0 < 300000000ull) {	/* 0.3 s of traffic */
		ssize_t n = sendto(w, buf, sizeof(buf), 0, (struct sockaddr *)&a, sizeof(a));

		if (n > 0)
			sent += (uint64_t)n;
		(void)!recv(r, buf, sizeof(buf), 0);
		apx_source_nic.drain(&g_c, apx_mono_ns(), 0);
	}
	usleep(20000);
	apx_source_nic.stop(&g_c);
	apx_source_nic.finish(&g_c, apx_mono_ns());
	printf("%llu\n", (unsigned long long)sent);
	return apx_writer_close(g_c.w, apx_mono_ns(), 0) < 0;
}
