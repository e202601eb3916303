/*
 * trace_header.c - the part of a .apx header that apx writes itself the same way for every
 * trace it produces on this host (apx analyze's launcher header, apx attach's trace): producer
 * and version, creation time, host name and kernel, the clock and its offsets. The callers add
 * what is theirs (pid, argv, cwd). Called by cmd_analyze.c and cmd_attach.c.
 */
#include <stdio.h>
#include <sys/utsname.h>
#include <time.h>

#include <apx/format.h>
#include <apx/version.h>

#include "cli/cli.h"

#include "base/banned.h"

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void apx_cli_header_init(struct apx_rec *h, const char *producer, struct apx_cli_host *host)
{
	struct utsname un;

	apx_rec_init(h, APX_REC_HEADER);
	apx_rec_set_str(h, APX_HEADER_PRODUCER, producer);
	apx_rec_set_str(h, APX_HEADER_PRODUCER_VERSION, APX_VERSION);
	h->v[APX_HEADER_CREATED_NS] = now_ns(CLOCK_REALTIME);
	if (uname(&un) == 0) {	/* the record keeps pointers: copies in host, not un's */
		snprintf(host->name, sizeof(host->name), "%s", un.nodename);
		snprintf(host->kernel, sizeof(host->kernel), "%s %s %s %s", un.sysname, un.release,
			 un.version, un.machine);
		apx_rec_set_str(h, APX_HEADER_HOSTNAME, host->name);
		apx_rec_set_str(h, APX_HEADER_KERNEL, host->kernel);
	}
	h->v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	apx_rec_set_i64(h, APX_HEADER_REALTIME_OFFSET_NS,
			(int64_t)(now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC)));
	apx_rec_set_i64(h, APX_HEADER_BOOTTIME_OFFSET_NS,
			(int64_t)(now_ns(CLOCK_BOOTTIME) - now_ns(CLOCK_MONOTONIC)));
}
