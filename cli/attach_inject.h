/*
 * attach_inject.h - loading a library into a running CPython process and calling one of its
 * functions, from outside, with ptrace (x86_64 Linux, glibc): apx attach PID (cli/cmd_attach.c)
 * loads the collector this way; tests/attach drives it directly. How and why: attach_inject.c.
 */
#ifndef APX_CLI_ATTACH_INJECT_H
#define APX_CLI_ATTACH_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Make process `pid` run dlopen(lib_path, RTLD_NOW) and then `func`(arg) (func: a symbol
 * exported by that library, signature int func(const char *arg)) on one of its threads, at a
 * safe point. timeout_ms bounds the wait for the safe point. Returns 0 and *ret_value = func's
 * return value, or a negative errno with a one-line reason in why (no trailing newline, no
 * raw bytes from the target: the reason may be printed to a terminal). The process keeps
 * running as before whatever happens (every thread detached, the original code restored).
 *
 * The safe point is the entry of CPython's PyEval_SaveThread (a thread about to release the
 * GIL). Errors: -ESRCH (no such process, or it ended), -EPERM (another user's process, or the
 * ptrace policy), -EBUSY (already traced, or a breakpoint already there), -ENOENT (not CPython),
 * -ENOTSUP (not x86_64, no dynamic glibc with dlopen), -ETIMEDOUT (no thread released the GIL in
 * timeout_ms; or the call did not return within 120 s), -ENOEXEC (dlopen or dlsym failed: the
 * target's dlerror() in why), -EINTR (SIGINT or SIGTERM came first). SIGINT and SIGTERM are
 * blocked meanwhile (from this thread); one that came is raised again once the target is
 * restored and detached. *paused_us (may be NULL): how long the borrowed thread was held, from
 * its stop at the int3 to its detach (0 if none stopped there). Uses waitpid(-1): the caller
 * must not wait for children of its own at the same time. */
int apx_attach_inject(pid_t pid, const char *lib_path, const char *func, const char *arg,
		      int timeout_ms, int *ret_value, int64_t *paused_us, char *why, size_t why_cap);

#endif
