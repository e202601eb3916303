/*
 * syscalls.c - names of the x86-64 syscalls threads mostly wait in (futex, poll, read...), for
 * the threads view (threads.c) and the report's threads section; the SAMPLE record carries
 * the number the collector read from /proc/self/task/TID/syscall. Others stay numbers
 * ("syscall 123", said by the caller). Pure lookup; any thread.
 */
#include "analysis/stacks.h"

#include "base/banned.h"

const char *apx_syscall_name(int32_t nr)
{
	static const struct {
		int32_t nr;
		const char *name;
	} names[] = {
		{ 0, "read" }, { 1, "write" }, { 7, "poll" }, { 17, "pread64" }, { 19, "readv" },
		{ 23, "select" }, { 24, "sched_yield" }, { 35, "nanosleep" }, { 42, "connect" },
		{ 45, "recvfrom" }, { 47, "recvmsg" }, { 61, "wait4" }, { 16, "ioctl" },
		{ 202, "futex" }, { 232, "epoll_wait" }, { 230, "clock_nanosleep" },
		{ 270, "pselect6" }, { 271, "ppoll" }, { 281, "epoll_pwait" }, { 288, "accept4" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].nr == nr)
			return names[i].name;
	return NULL;
}
