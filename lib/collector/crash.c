/*
 * crash.c - the collector's fatal-signal path. At start-up (inject.c) it encodes, once, a KV
 * chunk "crash" = signal name for every fatal signal, so that the handler only has to write(2)
 * bytes (async-signal-safe: no malloc, stdio, locks or CUPTI). The handler appends that chunk
 * to the trace's O_APPEND fd, restores the previous handler and re-raises (Python's
 * faulthandler still runs). SIGTERM is handled only when the program left it at SIG_DFL.
 */
#include <errno.h>
#include <execinfo.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/collector.h"

#include "base/banned.h"

static const int fatal_signals[APX_NFATAL] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM };

/* signal handlers carry no user pointer: the collector, set once by apx_crash_install() */
static struct apx_collector *col;

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	int i;

	(void)uc;
	if (!col)
		return;
	if (col->debug) {
		void *frames[32];
		int n = backtrace(frames, 32);

		(void)!write(STDERR_FILENO, "[apx] fatal signal, backtrace:\n", 31);
		backtrace_symbols_fd(frames, n, STDERR_FILENO);
	}
	for (i = 0; i < APX_NFATAL; i++)
		if (fatal_signals[i] == sig)
			break;
	if (i == APX_NFATAL)
		return;
	if (!atomic_load(&col->forked) && col->crash_fd >= 0 && col->crash_len[i] &&
	    !atomic_exchange(&col->crashed, 1))
		(void)!write(col->crash_fd, col->crash_chunk[i], col->crash_len[i]);
	sigaction(sig, &col->old_sa[i], NULL);
	errno = saved;
	/* A fault re-executes the faulting instruction and meets the previous handler; a signal
	 * that was sent (kill, abort) must be raised again. */
	if (si->si_code <= 0 || sig == SIGABRT || sig == SIGTERM)
		raise(sig);
}

/* Uses a writer over a memfd and keeps the bytes it appended. */
void apx_crash_prepare(struct apx_collector *c, const struct apx_rec *header)
{
	for (int i = 0; i < APX_NFATAL; i++) {
		int fd = memfd_create("apx-crash", MFD_CLOEXEC);
		struct apx_writer *w;
		struct apx_rec kv;
		uint64_t before, after;
		char val[48];
		ssize_t n;

		if (fd < 0)
			return;
		if (apx_writer_open_fd(fd, header, NULL, &w) < 0)
			return;		/* the writer closed fd */
		before = apx_writer_bytes(w);
		snprintf(val, sizeof(val), "signal %d (%s)", fatal_signals[i],
			 sigabbrev_np(fatal_signals[i]) ? sigabbrev_np(fatal_signals[i]) : "?");
		apx_rec_init(&kv, APX_REC_KV);
		apx_rec_set_str(&kv, APX_KV_KEY, "crash");
		apx_rec_set_str(&kv, APX_KV_VALUE, val);
		if (apx_writer_add(w, &kv) == 0 && apx_writer_flush(w) == 0) {
			after = apx_writer_bytes(w);
			if (after > before && after - before <= sizeof(c->crash_chunk[i])) {
				n = pread(fd, c->crash_chunk[i], (size_t)(after - before), (off_t)before);
				if (n == (ssize_t)(after - before))
					c->crash_len[i] = (size_t)n;
			}
		}
		apx_writer_abandon(w);
	}
}

void apx_crash_install(struct apx_collector *c)
{
	col = c;
	for (int i = 0; i < APX_NFATAL; i++) {
		struct sigaction sa;

		if (sigaction(fatal_signals[i], NULL, &c->old_sa[i]) < 0)
			continue;
		if (fatal_signals[i] == SIGTERM && c->old_sa[i].sa_handler != SIG_DFL)
			continue;	/* the program handles SIGTERM itself */
		if (!(c->old_sa[i].sa_flags & SA_SIGINFO) && c->old_sa[i].sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fatal;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(fatal_signals[i], &sa, NULL) == 0)
			c->sa_installed[i] = 1;
	}
}
