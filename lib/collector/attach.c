/*
 * attach.c - the collector in a program that is already running: `apx attach PID` makes the
 * process dlopen a private copy of libapx-inject.so and call apx_attach_begin() (exported) on
 * one of its Python threads (cli/attach_inject.c, docs/attach.md). This file holds that entry,
 * the request's configuration (apx_getenv), the session thread that ends the collection after
 * the requested time, and the detach: the trace closed, then CUPTI finalized at the exit of the
 * program's next CUDA call (NVIDIA's recommended place for cuptiFinalize: nothing of CUPTI
 * stays active in the process), and a status file that the attaching apx reads.
 *
 * Each attach loads a fresh copy of the library (a new file name), so every static of the
 * collector starts at zero; this copy serves one session only.
 *
 * APX_ATTACH_PROBE (a request key, for tests/gpu/attach/check.py's diagnosis of what an attach
 * leaves behind): "load" starts nothing (the library loaded, a session thread, no CUPTI);
 * "subscribe" subscribes to CUPTI with no callback domain and no activity, then finalizes as
 * a full session does. Neither writes a trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/parse.h"
#include "collector/collector.h"
#include "collector/pm_host.h"

#include "base/banned.h"

#define APX_EXPORT __attribute__((visibility("default")))

#define CFG_BYTES 8192		/* the request: KEY=VALUE lines */
#define CFG_KEYS 48
#define FINALIZE_WAIT_S 5	/* for the program's next CUDA call */

enum { FIN_NONE, FIN_WANTED, FIN_RUNNING, FIN_DONE };
enum { PROBE_NONE, PROBE_LOAD, PROBE_SUBSCRIBE };

static struct {
	_Atomic int on;			/* this copy was started by apx attach */
	char buf[CFG_BYTES];
	const char *key[CFG_KEYS], *val[CFG_KEYS];
	int n;
	int status_fd;
	uint64_t duration_ms;
	char stop_path[4096];
	_Atomic int fin;		/* FIN_* */
	CUptiResult fin_rc;		/* cuptiFinalize's, once FIN_DONE */
	int probe;			/* PROBE_* */
	CUpti_SubscriberHandle sub;	/* the collector's, or the subscribe probe's */
	pthread_mutex_t lock;
	pthread_cond_t cond;
} att = { .status_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

int apx_attached(void)
{
	return atomic_load_explicit(&att.on, memory_order_relaxed);
}

const char *apx_getenv(const char *name)
{
	if (!apx_attached() || strncmp(name, "APX_", 4))
		return getenv(name);
	for (int i = 0; i < att.n; i++)
		if (!strcmp(att.key[i], name))
			return att.val[i];
	return NULL;	/* the process's own APX_* (an earlier apx analyze?) are not ours */
}

/* One line to the status file (O_APPEND: whole lines). */
static void status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void status(const char *fmt, ...)
{
	char line[640];
	va_list ap;
	int n;

	if (att.status_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(att.status_fd, line, (size_t)n);
}

void apx_attach_say(const char *line, size_t len)
{
	char buf[600];

	if (len > sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	while (len && buf[len - 1] == '\n')
		len--;
	buf[len] = 0;
	status("say %s", buf);
}

/* KEY=VALUE lines, copied; -EINVAL on a line without '=' or too many, -E2BIG when too long. */
static int parse_request(const char *req)
{
	size_t len = strnlen(req, CFG_BYTES);
	char *p;

	if (len >= CFG_BYTES)
		return -E2BIG;
	memcpy(att.buf, req, len + 1);
	for (p = att.buf; *p;) {
		char *nl = strchr(p, '\n'), *eq;

		if (nl)
			*nl = 0;
		if (*p) {
			eq = strchr(p, '=');
			if (!eq || eq == p || att.n == CFG_KEYS)
				return -EINVAL;
			*eq = 0;
			att.key[att.n] = p;
			att.val[att.n++] = eq + 1;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

/* Called at every callback once the trace is closed (c->quiet): the first runtime or driver
 * API exit finalizes CUPTI, on the program's thread, as NVIDIA's samples do. */
void apx_attach_on_callback(CUpti_CallbackDomain dom, const void *data)
{
	const CUpti_CallbackData *cb = data;
	int want = FIN_WANTED;

	if ((dom != CUPTI_CB_DOMAIN_RUNTIME_API && dom != CUPTI_CB_DOMAIN_DRIVER_API) ||
	    cb->callbackSite != CUPTI_API_EXIT ||
	    !atomic_compare_exchange_strong(&att.fin, &want, FIN_RUNNING))
		return;
	att.fin_rc = cuptiFinalize();
	pthread_mutex_lock(&att.lock);
	atomic_store(&att.fin, FIN_DONE);
	pthread_cond_broadcast(&att.cond);
	pthread_mutex_unlock(&att.lock);
}

/* The subscribe probe's callback: nothing but the finalize. */
static void CUPTIAPI probe_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
				   const void *data)
{
	(void)ud;
	(void)cbid;
	apx_attach_on_callback(dom, data);
}

/* After the trace is closed: CUPTI out of the process. Returns 1 when finalized, 0 when the
 * program made no CUDA call in FINALIZE_WAIT_S, -1 when cuptiFinalize failed (att.fin_rc);
 * in both of the latter only unsubscribed, every domain off. */
static int finalize(void)
{
	CUpti_SubscriberHandle sub = att.sub;
	struct timespec until;
	int want = FIN_WANTED;

	atomic_store(&att.fin, FIN_WANTED);
	(void)cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
	(void)cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += FINALIZE_WAIT_S;
	pthread_mutex_lock(&att.lock);
	while (atomic_load(&att.fin) == FIN_WANTED &&
	       pthread_cond_timedwait(&att.cond, &att.lock, &until) == 0)
		;
	pthread_mutex_unlock(&att.lock);
	if (atomic_compare_exchange_strong(&att.fin, &want, FIN_NONE)) {
		(void)cuptiEnableAllDomains(0, sub);
		(void)cuptiUnsubscribe(sub);
		return 0;
	}
	pthread_mutex_lock(&att.lock);	/* a callback is finalizing now */
	while (atomic_load(&att.fin) != FIN_DONE)
		pthread_cond_wait(&att.cond, &att.lock);
	pthread_mutex_unlock(&att.lock);
	if (att.fin_rc == CUPTI_SUCCESS)
		return 1;
	(void)cuptiEnableAllDomains(0, sub);	/* else the two API domains stayed on */
	(void)cuptiUnsubscribe(sub);
	return -1;
}

/* The session: wait for the duration (or the stop file apx creates on Ctrl-C), then detach. */
static void *session_main(void *arg)
{
	uint64_t end = apx_mono_ns() + att.duration_ms * 1000000ull;
	struct timespec tick = { 0, 100 * 1000000L };
	int fin;

	(void)arg;
	while (apx_mono_ns() < end && (!att.stop_path[0] || access(att.stop_path, F_OK) != 0))
		nanosleep(&tick, NULL);
	if (att.probe == PROBE_NONE)
		apx_collector_finish(1);
	status("closed");
	fin = att.probe == PROBE_LOAD ? 2 : finalize();
	if (fin == 2)
		status("detached probe: nothing was started");
	else if (fin == 1)
		status(att.probe ? "detached probe: finalized" : "detached finalized");
	else if (fin == 0)
		status("detached unsubscribed (no CUDA call in %d s to finalize CUPTI at)",
		       FINALIZE_WAIT_S);
	else
		status("detached unsubscribed (cuptiFinalize failed: %s)",
		       apx_pm_result_name(att.fin_rc));
	close(att.status_fd);
	att.status_fd = -1;
	return NULL;
}

/* The probes' start in place of the collector's: 0, -EBUSY (CUPTI held: holder named) or
 * -EINVAL (an unknown probe). */
static int probe_start(const char *probe, char *holder, size_t holder_cap)
{
	CUpti_SubscriberParams sp;
	CUptiResult r;

	if (!strcmp(probe, "load")) {
		att.probe = PROBE_LOAD;
		return 0;
	}
	if (strcmp(probe, "subscribe"))
		return -EINVAL;
	att.probe = PROBE_SUBSCRIBE;
	memset(&sp, 0, sizeof(sp));
	sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	sp.subscriberName = "apx";
	sp.oldSubscriberName = holder;
	sp.oldSubscriberSize = holder_cap;
	r = cuptiSubscribe_v2(&att.sub, probe_callback, NULL, &sp);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		return -EBUSY;
	return r == CUPTI_SUCCESS ? 0 : -EIO;
}

APX_EXPORT int apx_attach_begin(const char *request);

/*
 * The entry `apx attach` calls in the target (on a Python thread at PyEval_SaveThread's entry,
 * holding the GIL). request: KEY=VALUE lines: the APX_* variables apx analyze would set
 * (APX_OUTPUT, APX_LEVEL, ...), APX_ATTACH_STATUS (the status file to create),
 * APX_ATTACH_DURATION_MS and APX_ATTACH_STOP (a file whose existence ends the session).
 * Returns 0 once collecting, or -errno (-EBUSY: CUPTI held by another tool, -EALREADY: this
 * copy served a session already); the status file says the details.
 */
int apx_attach_begin(const char *request)
{
	static _Atomic int used;
	char holder[256] = "";
	const char *st, *stop, *probe;
	pthread_attr_t pa;
	pthread_t t;
	uint64_t v;
	int r;

	if (!request || atomic_exchange(&used, 1))
		return -EALREADY;
	r = parse_request(request);
	if (r < 0)
		return r;
	atomic_store(&att.on, 1);
	st = apx_getenv("APX_ATTACH_STATUS");
	if (st && *st)
		att.status_fd = open(st, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC |
				     O_NOFOLLOW, 0600);
	stop = apx_getenv("APX_ATTACH_STOP");
	if (stop)
		snprintf(att.stop_path, sizeof(att.stop_path), "%s", stop);
	att.duration_ms = 10000;
	if (apx_parse_u64(apx_getenv("APX_ATTACH_DURATION_MS") ?: "", 7 * 86400000ull, &v) == 0)
		att.duration_ms = v;
	probe = apx_getenv("APX_ATTACH_PROBE");
	r = probe && *probe ? probe_start(probe, holder, sizeof(holder))
			    : apx_collector_start(holder, sizeof(holder));
	if (att.probe == PROBE_NONE)
		att.sub = apx_collector_subscriber();	/* (a probe set its own) */
	if (r < 0) {
		for (char *p = holder; *p; p++)	/* a name from another tool: printable only */
			if (*p < 0x20 || *p > 0x7e)
				*p = '?';
		status("refused %d %s", -r, holder[0] ? holder : "-");
		close(att.status_fd);
		att.status_fd = -1;
		return r;
	}
	pthread_attr_init(&pa);
	pthread_attr_setdetachstate(&pa, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &pa, session_main, NULL);
	pthread_attr_destroy(&pa);
	if (r < 0) {
		if (att.probe == PROBE_NONE)
			apx_collector_finish(1);
		else if (att.probe == PROBE_SUBSCRIBE)
			(void)cuptiUnsubscribe(att.sub);
		status("refused %d no thread for the session", -r);
		return r;
	}
	status("started %d", (int)getpid());
	return 0;
}
