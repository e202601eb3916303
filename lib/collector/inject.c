/*
 * inject.c - libapx-inject.so: the CUPTI collector loaded into a CUDA program through
 * CUDA_INJECTION64_PATH (set by `apx analyze`, docs/collector.md). The CUDA driver calls
 * InitializeInjection() once, during cuInit, on the thread that first uses CUDA.
 *
 * This file holds the start-up and the exit: it reads the configuration (APX_LEVEL, APX_KINDS,
 * APX_OFF, the window, the flush period), opens the trace and writes its header, subscribes to
 * CUPTI and registers the CLOCK_MONOTONIC timestamp callback, then starts every source of the
 * table below (collector.h) and the writer thread (writer_thread.c). At exit an atexit handler
 * stops the sources (CUPTI's forced flush) and lets the writer close the file with an END
 * chunk. A forked child (pthread_atfork) never touches the parent's file. `apx attach` starts
 * the same collector in a running process through attach.c (apx_collector_start) and stops it
 * at its detach (apx_collector_finish(1)).
 *
 * Only InitializeInjection, apx attach's apx_attach_begin (attach.c) and the Python hooks'
 * apx_py_* (pyhook.c) are exported (version script exports.map). This file, the writer thread
 * and the sources' start() are the collector's only loggers: one "[apx] ..." stderr line per
 * distinct problem (under apx attach: a status-file line), never from a callback.
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <apx/version.h>

#include "base/parse.h"
#include "collector/collector.h"

#include "base/banned.h"

#define APX_EXPORT __attribute__((visibility("default")))

/* The collector's one global (STYLE §8.6, collector.h says who writes what). */
static struct apx_collector g_col = { .efd = -1, .crash_fd = -1,
				      .flush_lock = PTHREAD_MUTEX_INITIALIZER };

/* The sources, in start order: capture first (the activity source asks whether its kinds
 * wait for cudaProfilerStart), replay (the callbacks ask whether it wants launches),
 * callbacks before activity (the unified-memory configuration needs the context-creation
 * callback), then the CPU sampler and PM sampling. */
const struct apx_source *const apx_sources[] = {
	&apx_source_pystack,	/* first: its drain writes the stacks that later records name */
	&apx_source_capture,
	&apx_source_replay,
	&apx_source_callbacks,
	&apx_source_activity,
	&apx_source_cpu,
	&apx_source_pmsampling,
	&apx_source_self_cost,
	&apx_source_nvml,
	&apx_source_pysampler,
	&apx_source_nccl,
	&apx_source_pyhook,
	&apx_source_heap,	/* after pystack: its hook takes Python stacks */
	&apx_source_nic,	/* --nic-metrics: the host's NIC counters */
};
const size_t apx_nsources = sizeof(apx_sources) / sizeof(apx_sources[0]);

struct name_bit {
	const char *name;
	unsigned bit;
};

static const struct name_bit kind_names[] = {
	{ "kernel", APX_K_KERNEL }, { "memcpy", APX_K_MEMCPY }, { "p2p", APX_K_P2P },
	{ "memset", APX_K_MEMSET }, { "memory", APX_K_MEMORY }, { "sync", APX_K_SYNC },
	{ "uvm", APX_K_UVM }, { "nvtx", APX_K_MARKER }, { "graph", APX_K_GRAPH },
	{ "api", APX_K_API }, { "device", APX_K_DEVICE }, { "hostsync", APX_K_HOSTSYNC },
};

static const struct name_bit feature_names[] = {
	{ "clock", APX_F_CLOCK }, { "launch-attrs", APX_F_LAUNCH_ATTRS },
	{ "callbacks", APX_F_CALLBACKS }, { "decode", APX_F_DECODE }, { "cpu", APX_F_CPU },
	{ "self-cost", APX_F_SELF_COST }, { "nvml", APX_F_NVML },
};

/* ---- small helpers ------------------------------------------------------------------------- */

void apx_say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	memcpy(buf, "[apx] ", 6);
	va_start(ap, fmt);
	n = vsnprintf(buf + 6, sizeof(buf) - 7, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n += 6;
	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	buf[n++] = '\n';
	if (apx_attached())
		apx_attach_say(buf, (size_t)n);
	else
		(void)!write(STDERR_FILENO, buf, (size_t)n);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t CUPTIAPI timestamp_cb(void)
{
	return apx_mono_ns();
}

uint64_t apx_env_u64(const char *name, uint64_t def, uint64_t max)
{
	const char *s = apx_getenv(name);
	uint64_t v;

	if (!s || !*s || apx_parse_u64(s, max, &v) < 0)
		return def;
	return v;
}

/* ---- configuration ---------------------------------------------------------------------- */

/* "a,-b,+c": each name of the table sets (+ or nothing) or clears (-) its bit; unknown names
 * are ignored. */
static unsigned parse_names(const struct name_bit *t, size_t n, unsigned bits, const char *spec)
{
	const char *p = spec;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int remove = *p == '-';

		if (remove || *p == '+') {
			p++;
			len--;
		}
		for (size_t i = 0; i < n; i++)
			if (strlen(t[i].name) == len && !strncmp(p, t[i].name, len))
				bits = remove ? bits & ~t[i].bit : bits | t[i].bit;
		p = end ? end + 1 : NULL;
	}
	return bits;
}

/* The names of the bits set, comma-separated. */
static void names_text(const struct name_bit *t, size_t n, unsigned bits, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		int w;

		if (!(bits & t[i].bit))
			continue;
		w = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", t[i].name);
		if (w < 0 || (size_t)w >= cap - len)
			break;
		len += (size_t)w;
	}
}

#define NAMES(t) t, sizeof(t) / sizeof(t[0])

static void configure(void)
{
	const char *level = apx_getenv("APX_LEVEL");
	const char *nvtx = apx_getenv("NVTX_INJECTION64_PATH");

	g_col.owner_pid = getpid();
	g_col.debug = apx_getenv("APX_DEBUG") != NULL;
	if (g_col.debug) {
		void *frames[4];

		(void)backtrace(frames, 4);	/* loads libgcc now, not in the handler */
	}
	g_col.api_level = level && !strcmp(level, "api");
	g_col.kinds = APX_LIGHT_KINDS | (g_col.api_level ? APX_K_API : 0);
	if (nvtx && (strstr(nvtx, "cupti") || strstr(nvtx, "apx-watch")))
		g_col.kinds |= APX_K_MARKER;
	g_col.kinds = parse_names(NAMES(kind_names), g_col.kinds, apx_getenv("APX_KINDS"));
	g_col.off = parse_names(NAMES(feature_names), 0, apx_getenv("APX_OFF"));
	g_col.period_ns = apx_env_u64("APX_FLUSH_MS", 1000, 3600000) * 1000000ull;
	if (g_col.period_ns < 10000000)
		g_col.period_ns = 10000000;
	g_col.win_start_ns = apx_env_u64("APX_WINDOW_START_NS", 0, UINT64_MAX);
	g_col.win_end_ns = apx_env_u64("APX_WINDOW_END_NS", 0, UINT64_MAX);
	g_col.launch_cost_ns = apx_env_u64("APX_LAUNCH_COST_NS", 0, 1000000);
}

/* ---- start-up --------------------------------------------------------------------------------- */

static size_t read_cmdline(char *buf, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	close(fd);
	return len;
}

/* Open the trace file for this process and write its header. */
static int open_trace(struct apx_rec *hdr)
{
	const char *out = apx_getenv("APX_OUTPUT");
	uint64_t root = apx_env_u64("APX_ROOT_PID", 0, UINT32_MAX);
	uint64_t rank = apx_env_u64("RANK", UINT64_MAX, INT32_MAX);
	pid_t pid = getpid();
	int fd;

	if (!out || !*out)
		snprintf(g_col.path, sizeof(g_col.path), "apx-%d.apx", (int)pid);
	else if (root == (uint64_t)pid)
		snprintf(g_col.path, sizeof(g_col.path), "%s", out);
	else if (rank != UINT64_MAX)	/* a rank of torchrun & co: its rank in the name */
		snprintf(g_col.path, sizeof(g_col.path), "%s.rank%llu.%d", out,
			 (unsigned long long)rank, (int)pid);
	else
		snprintf(g_col.path, sizeof(g_col.path), "%s.%d", out, (int)pid);
	fd = open(g_col.path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 && errno == EEXIST && out && *out) {
		snprintf(g_col.path, sizeof(g_col.path), "%s.%d", out, (int)pid);
		fd = open(g_col.path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
			  0644);
	}
	if (fd < 0)
		return -errno;
	g_col.crash_fd = fd;
	return apx_writer_open_fd(fd, hdr, NULL, &g_col.w);
}

static void fill_header(struct apx_rec *h, char *argv, size_t argv_len, char *cwd, size_t cwd_cap,
			struct utsname *un, char *kern, size_t kern_cap, char *run_id, size_t run_cap)
{
	uint64_t mono = clock_ns(CLOCK_MONOTONIC);
	uint64_t wall = clock_ns(CLOCK_REALTIME);
	uint64_t boot = clock_ns(CLOCK_BOOTTIME);
	const char *user = apx_getenv("USER");
	const char *rank = apx_getenv("RANK");
	const char *rid = apx_getenv("APX_RUN_ID");
	uint64_t rv;

	apx_rec_init(h, APX_REC_HEADER);
	apx_rec_set_str(h, APX_HEADER_PRODUCER, "apx-inject");
	apx_rec_set_str(h, APX_HEADER_PRODUCER_VERSION, APX_VERSION);
	h->v[APX_HEADER_CREATED_NS] = wall;
	if (uname(un) == 0) {
		apx_rec_set_str(h, APX_HEADER_HOSTNAME, un->nodename);
		snprintf(kern, kern_cap, "%s %s %s %s", un->sysname, un->release, un->version,
			 un->machine);
		apx_rec_set_str(h, APX_HEADER_KERNEL, kern);
	}
	h->v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	apx_rec_set_i64(h, APX_HEADER_REALTIME_OFFSET_NS, (int64_t)(wall - mono));
	apx_rec_set_i64(h, APX_HEADER_BOOTTIME_OFFSET_NS, (int64_t)(boot - mono));
	h->v[APX_HEADER_PID] = (uint64_t)getpid();
	h->v[APX_HEADER_PPID] = (uint64_t)getppid();
	apx_rec_set_bytes(h, APX_HEADER_ARGV, argv, argv_len);
	if (getcwd(cwd, cwd_cap))
		apx_rec_set_str(h, APX_HEADER_CWD, cwd);
	h->v[APX_HEADER_UID] = (uint64_t)getuid();
	if (!user)
		user = apx_getenv("LOGNAME");
	apx_rec_set_str(h, APX_HEADER_USER, user);
	if (rid && *rid)
		snprintf(run_id, run_cap, "%s", rid);
	else
		snprintf(run_id, run_cap, "%d-%llu", (int)getpid(), (unsigned long long)wall);
	apx_rec_set_str(h, APX_HEADER_RUN_ID, run_id);
	if (rank && apx_parse_u64(rank, INT32_MAX, &rv) == 0)
		apx_rec_set_i64(h, APX_HEADER_RANK, (int64_t)rv);
	else
		apx_rec_set_i64(h, APX_HEADER_RANK, -1);
	apx_rec_set_i64(h, APX_HEADER_LOCAL_RANK, -1);
	if (apx_parse_u64(apx_getenv("WORLD_SIZE") ?: "", INT32_MAX, &rv) == 0) {
		h->v[APX_HEADER_WORLD_SIZE] = rv;
		if (apx_parse_u64(apx_getenv("LOCAL_RANK") ?: "", INT32_MAX, &rv) == 0)
			apx_rec_set_i64(h, APX_HEADER_LOCAL_RANK, (int64_t)rv);
	}
	h->v[APX_HEADER_START_NS] = mono;
}

/* The side table, the event ring, the encoder and the writer's eventfd. */
static int alloc_state(void)
{
	g_col.hp = calloc(APX_HOSTPTR_SLOTS, sizeof(*g_col.hp));
	g_col.ev = calloc(APX_EVENT_SLOTS, sizeof(*g_col.ev));
	g_col.enc = calloc(1, sizeof(*g_col.enc));
	if (!g_col.hp || !g_col.ev || !g_col.enc)
		return -ENOMEM;
	g_col.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g_col.efd < 0)
		return -errno;
	g_col.enc->w = g_col.w;
	g_col.enc->api_level = g_col.api_level;
	g_col.enc->hp = g_col.hp;
	g_col.enc->hp_mask = APX_HOSTPTR_SLOTS - 1;
	return 0;
}

void CUPTIAPI apx_on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
			      const void *data);

/* Subscribe and set the clock. Returns 0, or -EBUSY when another tool holds CUPTI. */
static int subscribe(char *holder, size_t holder_cap)
{
	CUpti_SubscriberParams sp;
	CUptiResult r;

	memset(&sp, 0, sizeof(sp));
	sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	sp.subscriberName = "apx";
	sp.oldSubscriberName = holder;
	sp.oldSubscriberSize = holder_cap;
	r = cuptiSubscribe_v2(&g_col.sub, apx_on_callback, &g_col, &sp);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		return -EBUSY;
	if (r != CUPTI_SUCCESS)
		return -EIO;
	/* the clock first: every record must use it */
	if (!(g_col.off & APX_F_CLOCK)) {
		r = cuptiActivityRegisterTimestampCallback(timestamp_cb);
		if (r != CUPTI_SUCCESS)
			apx_degraded(&g_col, "clock: CLOCK_MONOTONIC timestamp callback refused, "
				     "records use CUPTI's clock", r);
	}
	return 0;
}

static void facts(void)
{
	char text[256];

	apx_add_kv(&g_col, "cuda_used", "yes");
	apx_add_kv(&g_col, "level", g_col.api_level ? "api" : "light");
	names_text(NAMES(kind_names), g_col.kinds, text, sizeof(text));
	apx_add_kv(&g_col, "kinds", text);
	if (g_col.off) {
		names_text(NAMES(feature_names), g_col.off, text, sizeof(text));
		apx_add_kv(&g_col, "features_off", text);
	}
	if (apx_attached()) {
		const char *ms = apx_getenv("APX_ATTACH_DURATION_MS");

		apx_add_kv(&g_col, "attached", ms && *ms ? ms : "10000");
	}
	if (g_col.launch_cost_ns) {
		snprintf(text, sizeof(text), "%llu", (unsigned long long)g_col.launch_cost_ns);
		apx_add_kv(&g_col, "collector_launch_cost_ns", text);
	}
}

void apx_collector_finish(int detach)
{
	struct timespec deadline;

	if (atomic_load(&g_col.forked) || !g_col.writer_started || atomic_exchange(&g_col.exiting, 1))
		return;
	if (detach) {
		/* the program goes on: nothing more is recorded from here */
		apx_activity_set_kinds(&g_col, 0, 0);
		atomic_store(&g_col.quiet, 1);
	}
	for (size_t i = 0; i < apx_nsources; i++)
		if (apx_sources[i]->stop)
			apx_sources[i]->stop(&g_col);
	atomic_store(&g_col.stop, 1);
	apx_writer_wake(&g_col);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	if (pthread_timedjoin_np(g_col.writer, NULL, &deadline) != 0)
		apx_say("trace writer did not finish in 10 s; '%s' is readable up to its last flush",
			g_col.path);
}

CUpti_SubscriberHandle apx_collector_subscriber(void)
{
	return g_col.sub;
}

static void at_exit(void)
{
	apx_collector_finish(0);
}

static void at_fork_child(void)
{
	atomic_store(&g_col.forked, 1);
	g_col.crash_fd = -1;
}

/* kv start_cost: how long the start took on the thread that ran it (the program's first
 * cuInit, or under apx attach the borrowed Python thread): the trace and buffers, the CUPTI
 * subscription, and each source's start of 0.1 ms or more. */
static void start_cost(uint64_t t0, uint64_t t_sub, uint64_t t_src, const uint64_t *src_ns)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	char text[600];
	size_t n, k = 0;

	n = (size_t)snprintf(text, sizeof(text), "%.1f ms: trace and buffers %.1f, CUPTI "
			     "subscription %.1f, sources %.1f", (double)(now - t0) / 1e6,
			     (double)(t_sub - t0) / 1e6, (double)(t_src - t_sub) / 1e6,
			     (double)(now - t_src) / 1e6);
	for (size_t i = 0; i < apx_nsources && n < sizeof(text) - 1; i++)
		if (src_ns[i] >= 100000)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s %.1f",
					      k++ ? ", " : " (", apx_sources[i]->name,
					      (double)src_ns[i] / 1e6);
	if (k && n < sizeof(text) - 1)
		snprintf(text + n, sizeof(text) - n, ")");
	apx_add_kv(&g_col, "start_cost", text);
}

int apx_collector_start(char *holder, size_t holder_cap)
{
	static char argv[65536], cwd[4096], kern[1024], run_id[256];
	static struct utsname un;
	uint64_t src_ns[32] = { 0 }, t0 = clock_ns(CLOCK_MONOTONIC), t_sub, t_src;
	struct apx_rec hdr;
	sigset_t all, old;
	int r;

	configure();
	fill_header(&hdr, argv, read_cmdline(argv, sizeof(argv)), cwd, sizeof(cwd), &un, kern,
		    sizeof(kern), run_id, sizeof(run_id));
	r = open_trace(&hdr);
	if (r < 0) {
		apx_say("cannot create the trace '%s': %s; this process is not profiled", g_col.path,
			strerror(-r));
		return r;
	}
	r = alloc_state();
	if (r < 0) {
		apx_say("out of memory for the trace buffers; this process is not profiled");
		goto fail;
	}
	facts();
	t_sub = clock_ns(CLOCK_MONOTONIC);
	r = subscribe(holder, holder_cap);
	if (r == -EBUSY) {
		char msg[320];

		snprintf(msg, sizeof(msg), "cupti-taken: CUPTI is already used by '%s'",
			 holder[0] ? holder : "another tool");
		apx_add_kv(&g_col, "degraded", msg);
		apx_say("CUPTI is already in use by '%s' (one CUPTI client per process on CUDA 13.0): "
			"apx records nothing in pid %d, the program runs untouched",
			holder[0] ? holder : "another tool", (int)getpid());
		g_col.crash_fd = -1;
		(void)apx_writer_close(g_col.w, clock_ns(CLOCK_MONOTONIC), 0);
		g_col.w = NULL;
		return r;
	}
	if (r < 0) {
		apx_say("CUPTI could not be initialised; this process is not profiled");
		goto fail;
	}
	t_src = clock_ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < apx_nsources; i++)
		if (apx_sources[i]->start) {
			uint64_t t = clock_ns(CLOCK_MONOTONIC);

			(void)apx_sources[i]->start(&g_col);
			if (i < sizeof(src_ns) / sizeof(src_ns[0]))
				src_ns[i] = clock_ns(CLOCK_MONOTONIC) - t;
		}
	start_cost(t0, t_sub, t_src, src_ns);
	apx_crash_prepare(&g_col, &hdr);
	apx_ring_drain(&g_col);		/* degraded features found during start-up */

	/* the writer thread takes no signals: handlers run on the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&g_col.writer, NULL, apx_writer_main, &g_col);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		apx_say("cannot start the trace writer thread; this process is not profiled");
		apx_activity_set_kinds(&g_col, 0, 0);
		(void)cuptiUnsubscribe(g_col.sub);
		goto fail;
	}
	g_col.writer_started = 1;
	atexit(at_exit);
	pthread_atfork(NULL, NULL, at_fork_child);
	if (!apx_attached())	/* attach: the program's own signal handlers stay untouched */
		apx_crash_install(&g_col);
	return 0;
fail:
	g_col.crash_fd = -1;
	if (g_col.w)
		(void)apx_writer_close(g_col.w, clock_ns(CLOCK_MONOTONIC), 0);
	g_col.w = NULL;
	return r;
}

APX_EXPORT int InitializeInjection(void);

int InitializeInjection(void)
{
	static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
	static int done;
	const char *off = apx_getenv("APX_DISABLE"), *ranks = apx_getenv("APX_RANKS");
	const char *rank = apx_getenv("RANK");
	uint64_t r;

	pthread_mutex_lock(&once_lock);
	if (done) {
		pthread_mutex_unlock(&once_lock);
		return 1;
	}
	done = 1;
	pthread_mutex_unlock(&once_lock);
	if (off && *off && strcmp(off, "0"))
		return 1;
	/* apx analyze --ranks LIST: a rank not in it collects nothing and writes no trace; its
	 * NCCL plugin stays inert (every communicator gets an empty event mask) */
	if (ranks && *ranks && rank && apx_parse_u64(rank, INT32_MAX, &r) == 0 &&
	    apx_parse_list_has(ranks, INT32_MAX, r) == 0)
		return 1;
	{
		char holder[256] = "";

		(void)apx_collector_start(holder, sizeof(holder));
	}
	return 1;	/* never fail the program's cuInit */
}
