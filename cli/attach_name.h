/*
 * attach_name.h - `apx attach NAME`: the process a name stands for (cli/attach_name.c).
 */
#ifndef APX_CLI_ATTACH_NAME_H
#define APX_CLI_ATTACH_NAME_H

#include <stddef.h>
#include <sys/types.h>

/* The one process of the caller's (root: anyone's) that goes by name: its comm, or the last
 * path part of its program or of one of its first two arguments. 0 and *ret; or -ESRCH (none),
 * -EEXIST (several: why lists up to 8 as "PID  COMMAND" lines), -EINVAL, with a reason in why
 * (printable: nothing raw from the processes). */
int apx_attach_find_name(const char *name, pid_t *ret, char *why, size_t cap);

#endif
