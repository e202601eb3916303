/*
 * cmd_analyze.c - `apx analyze [options] script.py [args]` and `apx analyze [options] --
 * COMMAND [args]`: runs the program with the CUPTI collector (libapx-inject.so) injected
 * through CUDA_INJECTION64_PATH, waits for it, and prints a summary of at most ~10 lines on
 * stderr computed from the trace it wrote. The target's stdin/stdout/stderr pass through and
 * apx exits with its status (128+signal when it was killed). Called from cli/main.c.
 *
 * Files of one run: the process apx starts writes FILE (default data.apx); every other
 * process of the run that initialises CUDA (exec'd children: torchrun ranks, subprocesses)
 * writes FILE.<pid>. When the started process never initialised CUDA (or the collector is not
 * built), apx itself writes FILE: a header, the process's CPU facts from wait4(2), and
 * cuda_used = "no". docs/collector.md describes the environment variables passed on.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <apx/format.h>
#include <apx/version.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/termsafe.h"
#include "cli/analyze_nccl.h"
#include "cli/analyze_pyhooks.h"
#include "cli/cli.h"
#include "cli/run_files.h"
#include "collector/pm_sets.h"

#include "base/banned.h"

const char apx_cmd_analyze_usage[] =
	"usage: apx analyze [options] script.py [args...]\n"
	"       apx analyze [options] -- COMMAND [args...]\n"
	"\n"
	"Run a Python script (or any command, e.g. torchrun) with the apx CUPTI collector\n"
	"injected, write the trace, and print a short summary on stderr. The program's input\n"
	"and output pass through; apx exits with the program's exit status (128+N when it was\n"
	"killed by signal N).\n"
	"\n"
	"  -o, --output FILE   trace file (default data.apx); other processes of the run that\n"
	"                      use CUDA write FILE.<pid> beside it. Checked before the program\n"
	"                      starts: a missing or unwritable folder, a folder, or a FILE that\n"
	"                      is not a regular file (a link, a device, a FIFO) exits 1\n"
	"  -f, --force         replace FILE, and the FILE.<pid> traces of its own run (the same\n"
	"                      run id); other files named FILE.<pid> are kept, and said so (all\n"
	"                      of them when FILE is missing or not a trace)\n"
	"  -l, --level LEVEL   light (default): kernels, copies, memsets, allocations,\n"
	"                      synchronizations, unified memory, L2 settings, power and\n"
	"                      clocks (NVML, every 50 ms);\n"
	"                      api: also every CUDA runtime and driver API call\n"
	"      --delay S       start collecting S seconds after the program starts\n"
	"      --duration S    stop collecting S seconds after collection started\n"
	"      --capture-range=cudaProfilerApi  collect only between the program's\n"
	"                      cudaProfilerStart() and cudaProfilerStop() calls (torch:\n"
	"                      torch.cuda.profiler.start()/stop()), any number of ranges;\n"
	"                      none (default): the whole run\n"
	"      --python PATH   Python interpreter for script.py (default: $APX_PYTHON or python3)\n"
	"      --metrics[=SET] device metrics by PM sampling, every device the program uses:\n"
	"                      SET summary (default: SM/GR active, warp occupancy, tensor pipe,\n"
	"                      DRAM and PCIe bytes) or throughput; --metrics help lists the\n"
	"                      sets and this GPU's metrics\n"
	"      --metrics-list M,...  your own metrics (CUPTI names, one pass together)\n"
	"      --metrics-frequency HZ  samples per second (default 1000, at most 10000)\n"
	"      --replay        per-kernel counters (occupancy, throughput, hit rates, DRAM\n"
	"                      bytes, warp stalls) by replaying a sample of launches of each\n"
	"                      kernel: the first N, then launches 2N, 4N, ... (slow for those);\n"
	"                      the DRAM bytes and L2 hits come from the next 3 launches of each\n"
	"                      replayed kernel (same shape, right after a plain launch),\n"
	"                      measured in one pass\n"
	"      --kernels REGEX replay only kernels whose symbol name matches (extended regex)\n"
	"      --replay-max N  N of --replay (default 5)\n"
	"      --replay-flush  those DRAM bytes and L2 hits as after a cache flush (as ncu\n"
	"                      flushes them): apx reads 3 x L2 bytes of its own buffer on the\n"
	"                      launch's stream before it\n"
	"      --python-backtrace launch|none  the Python stack of every kernel launch,\n"
	"                      copy, memset, host sync and allocation call, read from the\n"
	"                      calling thread without the GIL (default launch; none: off)\n"
	"      --python-backward nvtx|none  give backward kernels (launched by autograd's\n"
	"                      threads, without Python frames) the forward line that created\n"
	"                      them: turns on PyTorch's emit_nvtx once CUDA is initialised and\n"
	"                      joins its op ranges' sequence numbers (default none; costs a few\n"
	"                      us an op: docs/collector.md, \"Backward kernels\")\n"
	"      --ranks LIST    collect only these ranks of a distributed run (torchrun's RANK):\n"
	"                      numbers and ranges, 0,3,8-15; the others run as without apx\n"
	"                      (no trace, NCCL's profiler plugin inert)\n"
	"      --trace-libs LIST  time the calls of these libraries as ranges on their threads,\n"
	"                      shown with the NVTX ranges (domains cuBLAS, cuDNN): cublas,\n"
	"                      cudnn (default both) or none; from libapx-watch.so, preloaded\n"
	"      --python-sampling HZ  sample every thread's Python stack, state, system call\n"
	"                      and CPU time HZ times a second (default 200, 0 = off), from a\n"
	"                      thread of apx's that never stops the program\n"
	"      --trace-functions module:func[,module:Class.method,...] | @FILE.json\n"
	"                      record each call of these Python functions as a range (shown\n"
	"                      with the NVTX ranges, with the GPU time under it), without\n"
	"                      changing the program; FILE.json: [{\"module\": M, \"function\": F,\n"
	"                      \"domain\": D}, ...] (\"functions\": [F, ...] too)\n"
	"      --trace-functions-threshold US  only calls of at least US microseconds\n"
	"                      (default 0: every call)\n"
	"      --memory-sampling HZ  once torch has initialised CUDA, sample its allocated,\n"
	"                      reserved and peak bytes per device, pinned host bytes and the\n"
	"                      process RSS HZ times a second (default 10, 0 = off)\n"
	"      --heap-sampling-bytes N  sample host heap allocations (malloc, new) about once\n"
	"                      every N bytes allocated, with their native and Python stacks,\n"
	"                      and their frees (libapx-heap.so preloaded; default off, 0 = off;\n"
	"                      apx report's heap section, --heap-leak)\n"
	"      --heap-large-bytes N  record every host allocation of N bytes or more and its\n"
	"                      free, so that the report knows which host buffers copied to\n"
	"                      the GPU were kept (default 1048576; 0 = off: then\n"
	"                      libapx-heap.so is not preloaded without --heap-sampling-bytes)\n"
	"      --nic-metrics   sample the host's NIC counters (receive/transmit bytes and\n"
	"                      packets; InfiniBand ports' data, send wait and congestion\n"
	"                      counters) from sysfs, in the process with LOCAL_RANK 0 or none\n"
	"                      (default off)\n"
	"      --nic-metrics-frequency HZ  samples per second (default 100, at most 1000)\n"
	"      --nic-device-include REGEX  only NIC devices whose name matches (extended\n"
	"                      regex; default every device but lo)\n"
	"  -q, --quiet         no summary\n"
	"  -h, --help          show this help\n"
	"\n"
	"A script that does not exist, or a command that cannot be started, leaves no trace\n"
	"(exit 1 and 127). --delay and --duration take plain decimal seconds (e.g. 1.5).\n"
	"\n"
	"Environment: APX_INJECT_LIB overrides where libapx-inject.so is looked for (default:\n"
	"beside the apx binary, then ../lib/apx/); APX_CALIBRATE=0 skips measuring the\n"
	"collector's cost per launch (cached in ~/.cache/apx/launch-cost; without it launch gaps\n"
	"are not corrected for it); APX_KINDS and APX_OFF (docs/collector.md) pass through.\n"
	"The Python hooks (--trace-functions, --memory-sampling, --python-backward) come from a\n"
	"sitecustomize.py apx puts first on PYTHONPATH in a temp folder, removed after the run;\n"
	"it imports the program's own sitecustomize too (docs/collector.md, \"Python hooks\").\n"
	"Then run `apx report FILE`.\n";

/* -------------------------------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* Absolute form of path (its folder must exist). */
static int absolute_path(const char *path, char *out, size_t cap)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	int n;

	if (!*base)
		return -EINVAL;
	if (slash) {
		size_t len = (size_t)(slash - path);

		if (len >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, path, len);
		dir[len] = 0;
		if (!len)
			memcpy(dir, "/", 2);
	} else {
		memcpy(dir, ".", 2);
	}
	if (!realpath(dir, real))
		return -errno;
	n = snprintf(out, cap, "%s/%s", strcmp(real, "/") ? real : "", base);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int apx_find_inject_lib(char *out, size_t cap)
{
	const char *env = getenv("APX_INJECT_LIB");
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n;
	char *slash;

	if (env && *env) {
		if (access(env, R_OK) < 0 || !realpath(env, out))
			return -ENOENT;
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	snprintf(cand, sizeof(cand), "%s/libapx-inject.so", exe);
	if (access(cand, R_OK) < 0)
		snprintf(cand, sizeof(cand), "%s/../lib/apx/libapx-inject.so", exe);
	if (access(cand, R_OK) < 0 || strlen(cand) >= cap || !realpath(cand, out))
		return -ENOENT;
	(void)cap;
	return 0;
}

/* Preload libapx-watch.so (beside the collector) so that a tool that loses CUPTI to apx
 * (torch.profiler started by the script) is noticed, and name it as the NVTX injection so that
 * NVTX ranges reach CUPTI; without it both go missing. */
static void preload_watch(const char *inject_lib)
{
	char watch[PATH_MAX], val[2 * PATH_MAX];
	const char *prev = getenv("LD_PRELOAD"), *slash = strrchr(inject_lib, '/');
	int n;

	if (!slash)
		return;
	n = snprintf(watch, sizeof(watch), "%.*s/libapx-watch.so", (int)(slash - inject_lib), inject_lib);
	if (n < 0 || (size_t)n >= sizeof(watch) || access(watch, R_OK) < 0)
		return;
	n = snprintf(val, sizeof(val), "%s%s%s", watch, prev && *prev ? ":" : "", prev ? prev : "");
	if (n > 0 && (size_t)n < sizeof(val))
		setenv("LD_PRELOAD", val, 1);
	/* NVTX ranges reach CUPTI through the same library (unless the user chose an injection) */
	if (!getenv("NVTX_INJECTION64_PATH"))
		setenv("NVTX_INJECTION64_PATH", watch, 1);
}

static int set_env_u64(const char *name, uint64_t v);

/* --trace-libs: "none", or a comma-separated list of cublas and cudnn. */
static int trace_libs_check(const char *v)
{
	if (!*v)
		return -EINVAL;
	if (!strcmp(v, "none"))
		return 0;
	while (*v) {
		size_t n = strcspn(v, ",");

		if (!((n == 6 && !strncmp(v, "cublas", 6)) || (n == 5 && !strncmp(v, "cudnn", 5))))
			return -EINVAL;
		v += n + (v[n] == ',');
	}
	return 0;
}

#define APX_HEAP_BYTES_MAX (1ull << 40)

/* --heap-sampling-bytes N and --heap-large-bytes L: libapx-heap.so (beside the collector)
 * first in LD_PRELOAD, so that its malloc wraps whichever the program would call (the user's
 * preloaded allocator too: it finds the next one with dlsym(RTLD_NEXT)), and
 * APX_HEAP_SAMPLING_BYTES=N, APX_HEAP_LARGE_BYTES=L for it and the collector; after the user's
 * when that holds a sanitizer's runtime, which must come first (then it has malloc, and the
 * library says it samples nothing). Both 0: neither (stale variables are removed). Only the
 * sampling the user asked for is warned about: the large allocations are a default. */
static void preload_heap(const char *inject_lib, uint64_t bytes, uint64_t large)
{
	char heap[PATH_MAX], val[3 * PATH_MAX];
	const char *prev = getenv("LD_PRELOAD"), *slash = inject_lib ? strrchr(inject_lib, '/') : NULL;
	int n;

	unsetenv("APX_HEAP_SAMPLING_BYTES");
	unsetenv("APX_HEAP_LARGE_BYTES");
	if (!bytes && !large)
		return;
	if (!inject_lib || !slash) {
		if (bytes)
			apx_log_warn("--heap-sampling-bytes needs the collector (libapx-inject.so): "
				     "no heap samples");
		return;
	}
	n = snprintf(heap, sizeof(heap), "%.*s/libapx-heap.so", (int)(slash - inject_lib),
		     inject_lib);
	if (n < 0 || (size_t)n >= sizeof(heap) || access(heap, R_OK) < 0) {
		if (bytes)
			apx_log_warn("libapx-heap.so is not beside the collector: no heap samples");
		return;
	}
	if (prev && (strstr(prev, "libasan") || strstr(prev, "libtsan") ||
		     strstr(prev, "libhwasan")))	/* a sanitizer's runtime must come first */
		n = snprintf(val, sizeof(val), "%s:%s", prev, heap);
	else
		n = snprintf(val, sizeof(val), "%s%s%s", heap, prev && *prev ? ":" : "",
			     prev ? prev : "");
	if (n < 0 || (size_t)n >= sizeof(val)) {
		apx_log_warn("LD_PRELOAD is too long to add libapx-heap.so: no heap samples");
		return;
	}
	setenv("LD_PRELOAD", val, 1);
	if (bytes)
		set_env_u64("APX_HEAP_SAMPLING_BYTES", bytes);
	if (large)
		set_env_u64("APX_HEAP_LARGE_BYTES", large);
}

/* The collector's cost per launch, for the analysis to take off launch gaps (APX_CALIBRATE=0:
 * skip; a failure only means launch gaps are not corrected). */
static void calibrate(const char *lib, const char *level)
{
	const char *want = getenv("APX_CALIBRATE");
	uint64_t ns = 0;
	int r;

	if (want && !strcmp(want, "0"))
		return;
	r = apx_analyze_calibrate(lib, level, &ns);
	if (r == -ENODEV)	/* no GPU: the program will not launch kernels either */
		return;
	if (r < 0) {
		apx_log_warn("the collector's cost per launch was not measured (%s); launch "
			     "gaps in the report are not corrected for it",
			     r == -ERANGE ? "it did not show above the noise between processes; the "
			     "next run measures again" : strerror(-r));
		return;
	}
	set_env_u64("APX_LAUNCH_COST_NS", ns);
}

/* Calls fn(dir, name) for every FILE.<pid> beside path; returns how many. */
static int for_child_files(const char *path, void (*fn)(const char *full, void *arg), void *arg)
{
	char dir[PATH_MAX], full[PATH_MAX * 2];
	const char *slash = strrchr(path, '/');
	const char *base = slash + 1;
	struct dirent *de;
	DIR *d;
	int count = 0;

	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = 0;
	d = opendir(slash == path ? "/" : dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (!apx_run_is_child_name(de->d_name, base))
			continue;
		snprintf(full, sizeof(full), "%s/%s", dir, de->d_name);
		if (fn)
			fn(full, arg);
		count++;
	}
	closedir(d);
	return count;
}

/* --force: remove FILE.<pid> only when it is an apx trace of FILE's own run (the same run id
 * in its header as in the FILE being replaced). When FILE is missing, is not a trace or has no
 * run id, nothing matches: every FILE.<pid> is another run's, or not a trace, and is kept. What
 * is kept is said, its name escaped (base/termsafe.h). */
static void unlink_run_file(const char *full, void *arg)
{
	const char *want = arg;
	char got[128], name[PATH_MAX * 4], why[sizeof(((struct apx_diag *)0)->msg) * 4];
	struct apx_diag d = { 0 };

	apx_term_safe_str(name, sizeof(name), full);
	if (apx_run_id_of(full, got, sizeof(got), &d) < 0)
		apx_log_warn("kept '%s': not an apx trace (%s)", name,
			     apx_term_safe_str(why, sizeof(why), d.msg));
	else if (!want[0] || !got[0] || strcmp(got, want))
		apx_log_warn("kept '%s': not a trace of the run being replaced", name);
	else if (unlink(full) < 0)
		apx_log_errno(-errno, "cannot remove '%s'", name);
}

/* The trace's folder must take a new file before the program starts (no permission, a
 * read-only file system): a probe file is made there and removed. 0 or -errno. */
static int check_writable(const char *path)
{
	char probe[PATH_MAX + 64];
	const char *slash = strrchr(path, '/');	/* path is absolute (output_path) */
	int fd;

	snprintf(probe, sizeof(probe), "%.*s/.apx-probe-%d", (int)(slash - path), path,
		 (int)getpid());
	fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)	/* a stale probe of an earlier apx with our pid */
		return unlink(probe) < 0 ? -errno : check_writable(path);
	if (fd < 0)
		return -errno;
	close(fd);
	(void)unlink(probe);
	return 0;
}

/* ---- the fallback trace (the process never initialised CUDA) ------------------------------- */

struct run_info {
	char **argv;
	int argc;
	pid_t pid;
	int status;
	uint64_t start_ns, end_ns;	/* CLOCK_MONOTONIC */
	struct rusage ru;
	const char *run_id;
	int have_collector;
	uint64_t heap_bytes;		/* --heap-sampling-bytes (0: off) */
};

static int write_fallback(const char *path, const struct run_info *ri)
{
	struct apx_writer *w;
	struct apx_rec h, rec;
	char cwd[PATH_MAX], *argv_buf;
	struct apx_cli_host host;
	size_t argv_len = 0;
	uint64_t mono = apx_clock_ns(CLOCK_MONOTONIC);
	const char *comm;
	int r;

	for (int i = 0; i < ri->argc; i++)
		argv_len += strlen(ri->argv[i]) + 1;
	argv_buf = malloc(argv_len + 1);
	if (!argv_buf)
		return -ENOMEM;
	argv_len = 0;
	for (int i = 0; i < ri->argc; i++) {
		size_t n = strlen(ri->argv[i]) + 1;

		memcpy(argv_buf + argv_len, ri->argv[i], n);
		argv_len += n;
	}
	apx_cli_header_init(&h, "apx-analyze", &host);
	h.v[APX_HEADER_PID] = (uint64_t)ri->pid;
	h.v[APX_HEADER_PPID] = (uint64_t)getpid();
	apx_rec_set_bytes(&h, APX_HEADER_ARGV, argv_buf, argv_len);
	if (getcwd(cwd, sizeof(cwd)))
		apx_rec_set_str(&h, APX_HEADER_CWD, cwd);
	h.v[APX_HEADER_UID] = (uint64_t)getuid();
	apx_rec_set_str(&h, APX_HEADER_USER, getenv("USER"));
	apx_rec_set_str(&h, APX_HEADER_RUN_ID, ri->run_id);
	apx_rec_set_i64(&h, APX_HEADER_RANK, -1);
	h.v[APX_HEADER_START_NS] = ri->start_ns;
	r = apx_writer_open(path, 0, &h, NULL, &w);
	if (r < 0)
		goto out;

	apx_rec_init(&rec, APX_REC_KV);
	apx_rec_set_str(&rec, APX_KV_KEY, "cuda_used");
	apx_rec_set_str(&rec, APX_KV_VALUE, "no");
	(void)apx_writer_add(w, &rec);
	apx_rec_init(&rec, APX_REC_KV);
	apx_rec_set_str(&rec, APX_KV_KEY, "collector");
	apx_rec_set_str(&rec, APX_KV_VALUE,
			ri->have_collector ? "not initialised: the process never used CUDA"
					   : "not available: apx was built without CUDA/CUPTI");
	(void)apx_writer_add(w, &rec);

	comm = strrchr(ri->argv[0], '/');
	comm = comm ? comm + 1 : ri->argv[0];
	apx_rec_init(&rec, APX_REC_PROCESS);
	rec.v[APX_PROCESS_PID] = (uint64_t)ri->pid;
	rec.v[APX_PROCESS_PPID] = (uint64_t)getpid();
	rec.v[APX_PROCESS_START_NS] = ri->start_ns;
	rec.v[APX_PROCESS_END_NS] = ri->end_ns;
	apx_rec_set_str(&rec, APX_PROCESS_COMM, comm);
	apx_rec_set_bytes(&rec, APX_PROCESS_ARGV, argv_buf, argv_len);
	rec.v[APX_PROCESS_UID] = (uint64_t)getuid();
	apx_rec_set_i64(&rec, APX_PROCESS_EXIT_STATUS,
			WIFEXITED(ri->status) ? WEXITSTATUS(ri->status)
					      : -(int64_t)WTERMSIG(ri->status));
	rec.v[APX_PROCESS_USES_CUDA] = 0;
	(void)apx_writer_add(w, &rec);

	apx_rec_init(&rec, APX_REC_CPU);
	rec.v[APX_CPU_TS_NS] = ri->end_ns;
	rec.v[APX_CPU_PID] = (uint64_t)ri->pid;
	rec.v[APX_CPU_UTIME_NS] = (uint64_t)ri->ru.ru_utime.tv_sec * 1000000000ull +
				  (uint64_t)ri->ru.ru_utime.tv_usec * 1000ull;
	rec.v[APX_CPU_STIME_NS] = (uint64_t)ri->ru.ru_stime.tv_sec * 1000000000ull +
				  (uint64_t)ri->ru.ru_stime.tv_usec * 1000ull;
	rec.v[APX_CPU_VOL_CSW] = (uint64_t)ri->ru.ru_nvcsw;
	rec.v[APX_CPU_INVOL_CSW] = (uint64_t)ri->ru.ru_nivcsw;
	rec.v[APX_CPU_RSS_PEAK_BYTES] = (uint64_t)ri->ru.ru_maxrss * 1024ull;
	rec.v[APX_CPU_MINFLT] = (uint64_t)ri->ru.ru_minflt;
	rec.v[APX_CPU_MAJFLT] = (uint64_t)ri->ru.ru_majflt;
	(void)apx_writer_add(w, &rec);
	r = apx_writer_close(w, mono, 0);
out:
	free(argv_buf);
	return r;
}

/* ---- the summary ------------------------------------------------------------------------------ */

struct interval {
	uint64_t a, b;
};

struct summary {
	int files, incomplete, cuda_files;
	uint64_t kernels, kernel_ns, dropped, declined;
	uint64_t xfer_bytes[2][2], xfer_ns[2][2];	/* [h2d,d2h][pageable,pinned] */
	uint64_t uvm_h2d, uvm_d2h, sync_ns, syncs;
	struct interval *iv;
	size_t niv, civ;
	char degraded[256];
	char crash[64];
	char replay[256], metrics[256];		/* the collector's kv: what replay and PM sampling
						 * did and cost (the first file's) */
	uint64_t capture_ranges, collected_ns;	/* --capture-range: kv capture edges, all files */
	uint64_t heap_samples;			/* HEAP records of sampled allocations, all files */
};

static void add_interval(struct summary *s, uint64_t a, uint64_t b)
{
	if (b <= a)
		return;
	if (s->niv == s->civ) {
		size_t nc = s->civ ? s->civ * 2 : 4096;
		struct interval *p = realloc(s->iv, nc * sizeof(*p));

		if (!p)
			return;
		s->iv = p;
		s->civ = nc;
	}
	s->iv[s->niv++] = (struct interval){ a, b };
}

static int cmp_interval(const void *x, const void *y)
{
	const struct interval *a = x, *b = y;

	return a->a < b->a ? -1 : a->a > b->a;
}

static uint64_t union_ns(struct summary *s)
{
	uint64_t total = 0, ca = 0, cb = 0;

	if (!s->niv)
		return 0;
	qsort(s->iv, s->niv, sizeof(*s->iv), cmp_interval);
	ca = s->iv[0].a;
	cb = s->iv[0].b;
	for (size_t i = 1; i < s->niv; i++) {
		if (s->iv[i].a > cb) {
			total += cb - ca;
			ca = s->iv[i].a;
			cb = s->iv[i].b;
		} else if (s->iv[i].b > cb) {
			cb = s->iv[i].b;
		}
	}
	return total + (cb - ca);
}

static int kv_is(const struct apx_rec *rec, unsigned f, const char *s)
{
	size_t n = strlen(s);

	return rec->v[f] == n && rec->bytes[f] && !memcmp(rec->bytes[f], s, n);
}

static void copy_kv(char *dst, size_t cap, const struct apx_rec *rec, unsigned f)
{
	size_t n = rec->v[f] < cap - 1 ? rec->v[f] : cap - 1;

	if (dst[0] || !rec->bytes[f])
		return;		/* keep the first */
	memcpy(dst, rec->bytes[f], n);
	dst[n] = 0;
}

/* A kv capture edge ("start <ns>" / "stop <ns>", capture.c): a range opens or closes. */
static void capture_edge(struct summary *s, const struct apx_rec *rec, uint64_t *open)
{
	char val[48];
	size_t n = rec->v[APX_KV_VALUE] < sizeof(val) - 1 ? rec->v[APX_KV_VALUE] : sizeof(val) - 1;
	uint64_t ns;

	if (!rec->bytes[APX_KV_VALUE])
		return;
	memcpy(val, rec->bytes[APX_KV_VALUE], n);
	val[n] = 0;
	if (!strncmp(val, "start ", 6) && !*open && apx_parse_u64(val + 6, UINT64_MAX, &ns) == 0) {
		*open = ns;
	} else if (!strncmp(val, "stop ", 5) && *open &&
		   apx_parse_u64(val + 5, UINT64_MAX, &ns) == 0 && ns >= *open) {
		s->collected_ns += ns - *open;
		s->capture_ranges++;
		*open = 0;
	}
}

static void summarise_file(const char *path, void *arg)
{
	struct summary *s = arg;
	struct apx_reader *r;
	struct apx_diag d;
	int cuda = 0;
	uint64_t open = 0, last = 0;	/* an open capture range's start; the file's last end */
	size_t first_iv = s->niv;

	if (apx_reader_open(path, &r, &d) < 0) {
		s->incomplete++;
		return;
	}
	s->files++;
	if (apx_reader_status(r) != APX_READ_COMPLETE)
		s->incomplete++;
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {
		struct apx_chunk_iter it;
		const struct apx_rec *rec = &it.rec;

		if (apx_chunk_iter_init(&it, r, i, &d) < 0)
			continue;
		while (apx_chunk_iter_next(&it, &d) > 0) {
			switch (rec->type) {
			case APX_REC_KERNEL:
				s->kernels++;
				s->kernel_ns += rec->v[APX_KERNEL_END_NS] - rec->v[APX_KERNEL_START_NS];
				add_interval(s, rec->v[APX_KERNEL_START_NS], rec->v[APX_KERNEL_END_NS]);
				break;
			case APX_REC_MEMCPY: {
				unsigned ck = (unsigned)rec->v[APX_MEMCPY_COPY_KIND];
				unsigned hk = (unsigned)(ck == APX_COPY_H2D ? rec->v[APX_MEMCPY_SRC_KIND]
									    : rec->v[APX_MEMCPY_DST_KIND]);

				add_interval(s, rec->v[APX_MEMCPY_START_NS], rec->v[APX_MEMCPY_END_NS]);
				if ((ck == APX_COPY_H2D || ck == APX_COPY_D2H) &&
				    (hk == APX_MEM_PAGEABLE || hk == APX_MEM_PINNED)) {
					s->xfer_bytes[ck == APX_COPY_D2H][hk == APX_MEM_PINNED] +=
						rec->v[APX_MEMCPY_BYTES];
					s->xfer_ns[ck == APX_COPY_D2H][hk == APX_MEM_PINNED] +=
						rec->v[APX_MEMCPY_END_NS] - rec->v[APX_MEMCPY_START_NS];
				}
				break;
			}
			case APX_REC_MEMSET:
				add_interval(s, rec->v[APX_MEMSET_START_NS], rec->v[APX_MEMSET_END_NS]);
				break;
			case APX_REC_HEAP:
				s->heap_samples += rec->v[APX_HEAP_OP] == APX_MEMOP_ALLOC &&
						   !(rec->v[APX_HEAP_FLAGS] & APX_HEAPF_LARGE);
				break;
			case APX_REC_SYNC:
				s->syncs++;
				s->sync_ns += rec->v[APX_SYNC_END_NS] - rec->v[APX_SYNC_START_NS];
				break;
			case APX_REC_UVM:
				if (rec->v[APX_UVM_KIND] == APX_UVM_MIGRATE_H2D)
					s->uvm_h2d += rec->v[APX_UVM_BYTES];
				else if (rec->v[APX_UVM_KIND] == APX_UVM_MIGRATE_D2H)
					s->uvm_d2h += rec->v[APX_UVM_BYTES];
				break;
			case APX_REC_LOSS:
				if (rec->v[APX_LOSS_SOURCE] == APX_LOSS_POOL_EMPTY)
					s->declined += rec->v[APX_LOSS_COUNT];
				else
					s->dropped += rec->v[APX_LOSS_COUNT];
				break;
			case APX_REC_KV:
				if (kv_is(rec, APX_KV_KEY, "cuda_used") && kv_is(rec, APX_KV_VALUE, "yes"))
					cuda = 1;
				else if (kv_is(rec, APX_KV_KEY, "degraded"))
					copy_kv(s->degraded, sizeof(s->degraded), rec, APX_KV_VALUE);
				else if (kv_is(rec, APX_KV_KEY, "crash"))
					copy_kv(s->crash, sizeof(s->crash), rec, APX_KV_VALUE);
				else if (kv_is(rec, APX_KV_KEY, "replay"))
					copy_kv(s->replay, sizeof(s->replay), rec, APX_KV_VALUE);
				else if (kv_is(rec, APX_KV_KEY, "metrics"))
					copy_kv(s->metrics, sizeof(s->metrics), rec, APX_KV_VALUE);
				else if (kv_is(rec, APX_KV_KEY, "capture"))
					capture_edge(s, rec, &open);
				break;
			default:
				break;
			}
		}
	}
	s->cuda_files += cuda;
	for (size_t i = first_iv; i < s->niv; i++)
		last = s->iv[i].b > last ? s->iv[i].b : last;
	if (open) {		/* a range left open at exit ends with the file's activity */
		s->collected_ns += last > open ? last - open : 0;
		s->capture_ranges++;
	}
	apx_reader_close(r);
}

static void fmt_bytes(char *buf, size_t cap, uint64_t b)
{
	if (b >= 1000000000ull)
		snprintf(buf, cap, "%.2f GB", (double)b / 1e9);
	else if (b >= 1000000ull)
		snprintf(buf, cap, "%.1f MB", (double)b / 1e6);
	else if (b >= 1000ull)
		snprintf(buf, cap, "%.1f kB", (double)b / 1e3);
	else
		snprintf(buf, cap, "%" PRIu64 " B", b);
}

static void print_xfer(const struct summary *s, int dir)
{
	static const char *const names[2] = { "host->device", "device->host" };
	char line[256], b[32];
	int len = snprintf(line, sizeof(line), "apx: %s", names[dir]);
	int first = 1;

	for (int k = 0; k < 2; k++) {
		uint64_t bytes = s->xfer_bytes[dir][k], ns = s->xfer_ns[dir][k];

		if (!bytes)
			continue;
		fmt_bytes(b, sizeof(b), bytes);
		len += snprintf(line + len, sizeof(line) - (size_t)len, "%s %s %s at %.1f GB/s",
				first ? "" : ",", b, k ? "pinned" : "pageable",
				ns ? (double)bytes / (double)ns : 0.0);
		first = 0;
	}
	fprintf(stderr, "%s\n", line);
}

static void print_summary(const char *path, const struct run_info *ri, int nchild)
{
	struct summary s = { 0 };
	char safe[4 * PATH_MAX + 1];	/* a path or a kv, escaped (4 bytes a byte at worst) */
	double wall = (double)(ri->end_ns - ri->start_ns) / 1e9;
	const char *rel = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	summarise_file(path, &s);
	for_child_files(path, summarise_file, &s);
	fprintf(stderr, "\napx: ran %.2f s; ", wall);
	if (WIFSIGNALED(ri->status))
		fprintf(stderr, "killed by signal %d (%s)\n", WTERMSIG(ri->status),
			strsignal(WTERMSIG(ri->status)));
	else
		fprintf(stderr, "exit status %d\n", WEXITSTATUS(ri->status));
	if (!s.cuda_files) {
		fprintf(stderr, "apx: the program never used CUDA: the trace holds its CPU facts only\n");
	} else {
		double span = s.capture_ranges ? (double)s.collected_ns / 1e9 : wall;
		double busy = span > 0 ? (double)union_ns(&s) / 1e9 / span * 100.0 : 0.0;

		if (s.capture_ranges)
			fprintf(stderr, "apx: collected in %" PRIu64 " capture range%s "
				"(cudaProfilerStart/Stop): %.2f s of the run\n", s.capture_ranges,
				s.capture_ranges > 1 ? "s" : "", span);
		fprintf(stderr, "apx: GPU busy %.1f%% of the %s; %" PRIu64 " kernels, %.3f s of "
			"kernel time\n", busy > 100 ? 100.0 : busy,
			s.capture_ranges ? "collected time" : "run", s.kernels,
			(double)s.kernel_ns / 1e9);
		if (s.xfer_bytes[0][0] || s.xfer_bytes[0][1] || s.xfer_bytes[1][0] ||
		    s.xfer_bytes[1][1]) {
			if (s.xfer_bytes[0][0] || s.xfer_bytes[0][1])
				print_xfer(&s, 0);
			if (s.xfer_bytes[1][0] || s.xfer_bytes[1][1])
				print_xfer(&s, 1);
		} else {
			fprintf(stderr, "apx: no host<->device transfers\n");
		}
		if (s.uvm_h2d || s.uvm_d2h) {
			char a[32], b[32];

			fmt_bytes(a, sizeof(a), s.uvm_h2d);
			fmt_bytes(b, sizeof(b), s.uvm_d2h);
			fprintf(stderr, "apx: unified memory migrated %s to the GPU, %s back\n", a, b);
		}
		fprintf(stderr, "apx: records dropped: %" PRIu64 "%s\n", s.dropped,
			s.declined ? " (and some CUPTI buffers declined: pool empty)" : "");
	}
	{
		double user = (double)ri->ru.ru_utime.tv_sec + (double)ri->ru.ru_utime.tv_usec / 1e6;
		double sys = (double)ri->ru.ru_stime.tv_sec + (double)ri->ru.ru_stime.tv_usec / 1e6;
		char rss[32];

		fmt_bytes(rss, sizeof(rss), (uint64_t)ri->ru.ru_maxrss * 1024u);
		fprintf(stderr, "apx: CPU %.2f s user + %.2f s system (%.1f cores on average), "
			"peak RSS %s\n", user, sys, wall > 0 ? (user + sys) / wall : 0.0, rss);
	}
	/* what the traces say is escaped: the program wrote them */
	if (s.replay[0])
		fprintf(stderr, "apx: replayed: %s\n", apx_term_safe_str(safe, sizeof(safe), s.replay));
	if (s.metrics[0])
		fprintf(stderr, "apx: metrics: %s\n", apx_term_safe_str(safe, sizeof(safe), s.metrics));
	if (s.heap_samples)
		fprintf(stderr, "apx: heap: %" PRIu64 " sampled host allocations (apx report --section "
			"heap)\n", s.heap_samples);
	else if (ri->heap_bytes)	/* the collector writes them: a process without CUDA has none */
		fprintf(stderr, "apx: heap: no samples in the trace%s\n", s.cuda_files ? "" :
			" (they are written by the collector, which starts with CUDA)");
	if (s.degraded[0])
		fprintf(stderr, "apx: degraded: %s\n",
			apx_term_safe_str(safe, sizeof(safe), s.degraded));
	if (s.crash[0])
		fprintf(stderr, "apx: the program crashed (%s); the trace is kept up to then\n",
			apx_term_safe_str(safe, sizeof(safe), s.crash));
	fprintf(stderr, "apx: trace %s", apx_term_safe_str(safe, sizeof(safe), path));
	if (nchild)
		fprintf(stderr, " (+%d file%s %s.<pid> from child processes)", nchild,
			nchild > 1 ? "s" : "", apx_term_safe_str(safe, sizeof(safe), rel));
	if (s.incomplete)
		fprintf(stderr, "; %d file%s not closed cleanly", s.incomplete,
			s.incomplete > 1 ? "s" : "");
	fprintf(stderr, "\napx: run `apx report %s`\n", apx_term_safe_str(safe, sizeof(safe), rel));
	free(s.iv);
}

/* ---- running the target ----------------------------------------------------------------------- */

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static int set_env_u64(const char *name, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return setenv(name, buf, 1);
}

/* --delay / --duration: a plain decimal number of seconds; a message naming what is wrong. */
static int seconds_opt(const char *opt, const char *arg, int positive, uint64_t *ret_ns)
{
	int r = apx_parse_seconds_ns(arg, ret_ns);

	if (r == -ERANGE)
		apx_cli_usage_error("analyze", "%s takes at most %d seconds, not '%s'", opt,
				    APX_SECONDS_MAX, arg);
	else if (r < 0)
		apx_cli_usage_error("analyze", "%s takes seconds as a decimal number (e.g. 1.5), "
				    "not '%s'", opt, arg);
	else if (positive && !*ret_ns)
		apx_cli_usage_error("analyze", "%s must be more than 0 seconds, not '%s'", opt,
				    arg);
	else
		return 0;
	return -EINVAL;
}

/* Where the trace goes: an absolute path whose folder exists and which is not a folder;
 * otherwise says why. */
static int output_path(const char *output, char *path, size_t cap)
{
	char safe[PATH_MAX * 4];
	struct stat st;
	int r = absolute_path(output, path, cap);

	apx_term_safe_str(safe, sizeof(safe), output);	/* names reach the terminal escaped */
	if (r == -EINVAL)
		apx_log_error("-o '%s' names a folder: give a file name "
			      "(e.g. -o %sdata.apx)", safe, safe);
	else if (r == -ENOENT || r == -ENOTDIR)
		apx_log_error("cannot write '%s': its folder does not exist", safe);
	else if (r < 0)
		apx_log_errno(r, "cannot write '%s'", safe);
	else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		apx_log_error("-o '%s' is a folder: give a file name "
			      "(e.g. -o %s/data.apx)", safe, safe);
	else
		return 0;
	return -EINVAL;
}

/* The script apx analyze runs must be there before anything starts: a typo must not leave a
 * trace behind (nor start Python to say so). */
static int check_script(const char *script)
{
	struct stat st;

	if (stat(script, &st) < 0) {
		apx_log_errno(-errno, "cannot run '%s'", script);
		return -ENOENT;
	}
	if (S_ISDIR(st.st_mode)) {
		apx_log_error("cannot run '%s': it is a folder", script);
		return -EISDIR;
	}
	return 0;
}

int apx_cmd_analyze(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "level", required_argument, NULL, 'l' },
		{ "delay", required_argument, NULL, 'D' },
		{ "duration", required_argument, NULL, 'U' },
		{ "capture-range", required_argument, NULL, 'C' },
		{ "python", required_argument, NULL, 'P' },
		{ "metrics", optional_argument, NULL, 'M' },
		{ "metrics-list", required_argument, NULL, 'L' },
		{ "metrics-frequency", required_argument, NULL, 'F' },
		{ "replay", no_argument, NULL, 'R' },
		{ "kernels", required_argument, NULL, 'K' },
		{ "replay-max", required_argument, NULL, 'N' },
		{ "replay-flush", no_argument, NULL, 'X' },
		{ "trace-functions", required_argument, NULL, 'T' },
		{ "trace-functions-threshold", required_argument, NULL, 'H' },
		{ "memory-sampling", required_argument, NULL, 'S' },
		{ "python-sampling", required_argument, NULL, 'Y' },
		{ "python-backtrace", required_argument, NULL, 'B' },
		{ "trace-libs", required_argument, NULL, 'J' },
		{ "ranks", required_argument, NULL, 'Q' },
		{ "python-backward", required_argument, NULL, 'W' },
		{ "heap-sampling-bytes", required_argument, NULL, 'G' },
		{ "heap-large-bytes", required_argument, NULL, 'g' },
		{ "nic-metrics", no_argument, NULL, 'n' },
		{ "nic-metrics-frequency", required_argument, NULL, 'z' },
		{ "nic-device-include", required_argument, NULL, 'i' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *output = "data.apx", *level = "light", *python = getenv("APX_PYTHON");
	uint64_t delay_ns = 0, duration_ns = 0, hz;
	const char *capture = NULL, *py_backtrace = "1", *trace_libs = "cublas,cudnn";
	const char *ranks = NULL;
	uint64_t py_hz = 200, heap_bytes = 0, heap_large = 1ull << 20, nic_hz = 0;
	const char *nic_include = NULL;
	int nic = 0;
	struct apx_metrics_opts metrics = { 0 };
	struct apx_pyhooks_opts pyhooks = APX_PYHOOKS_OPTS_DEFAULT;
	char pydir[PATH_MAX];
	int force = 0, quiet = 0, c, nchild, replace = 0, wr;
	char path[PATH_MAX], lib[PATH_MAX], run_id[96], old_run[128], safe[PATH_MAX * 4];
	struct run_info ri = { 0 };
	struct sigaction sa, old_int, old_quit, old_term, old_hup;
	struct stat st;
	char **targv;
	int targc, have_lib, command_mode, exec_pipe[2], exec_errno = 0;
	ssize_t n;
	pid_t pid;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:o:fl:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'l':
			if (strcmp(optarg, "light") && strcmp(optarg, "api"))
				return apx_cli_usage_error("analyze", "--level must be light or api, "
							   "not '%s'", optarg);
			level = optarg;
			break;
		case 'D':
			if (seconds_opt("--delay", optarg, 0, &delay_ns) < 0)
				return APX_EXIT_USAGE;
			break;
		case 'U':
			if (seconds_opt("--duration", optarg, 1, &duration_ns) < 0)
				return APX_EXIT_USAGE;
			break;
		case 'C':
			if (strcmp(optarg, "cudaProfilerApi") && strcmp(optarg, "none"))
				return apx_cli_usage_error("analyze", "--capture-range must be "
							   "cudaProfilerApi or none, not '%s'",
							   optarg);
			capture = strcmp(optarg, "none") ? optarg : NULL;
			break;
		case 'P':
			python = optarg;
			break;
		case 'Y':
			if (apx_parse_u64(optarg, 10000, &py_hz) < 0)
				return apx_cli_usage_error("analyze", "--python-sampling takes a whole "
							   "number of Hz from 0 (off) to 10000, not "
							   "'%s'", optarg);
			break;
		case 'G':
		case 'g':
			if (apx_parse_u64(optarg, APX_HEAP_BYTES_MAX,
					  c == 'G' ? &heap_bytes : &heap_large) < 0)
				return apx_cli_usage_error("analyze", "--heap-%s-bytes takes a whole "
							   "number of bytes from 0 (off) to %llu, not "
							   "'%s'", c == 'G' ? "sampling" : "large",
							   (unsigned long long)APX_HEAP_BYTES_MAX,
							   optarg);
			break;
		case 'n':
			nic = 1;
			break;
		case 'z':
			if (apx_parse_u64(optarg, 1000, &nic_hz) < 0 || !nic_hz)
				return apx_cli_usage_error("analyze", "--nic-metrics-frequency takes a "
							   "whole number of Hz from 1 to 1000, not "
							   "'%s'", optarg);
			break;
		case 'i': {
			regex_t re;

			if (!*optarg || regcomp(&re, optarg, REG_EXTENDED | REG_NOSUB) != 0)
				return apx_cli_usage_error("analyze", "--nic-device-include takes an "
							   "extended regular expression, not '%s'",
							   optarg);
			regfree(&re);
			nic_include = optarg;
			break;
		}
		case 'Q':
			if (apx_parse_list_has(optarg, INT32_MAX, UINT64_MAX) < 0)
				return apx_cli_usage_error("analyze", "--ranks takes rank numbers and ranges "
							   "like 0,3,8-15, not '%s'", optarg);
			ranks = optarg;
			break;
		case 'J':
			if (trace_libs_check(optarg) < 0)
				return apx_cli_usage_error("analyze", "--trace-libs takes cublas, cudnn "
							   "(comma-separated) or none, not '%s'", optarg);
			trace_libs = optarg;
			break;
		case 'B':
			if (strcmp(optarg, "launch") && strcmp(optarg, "none"))
				return apx_cli_usage_error("analyze", "--python-backtrace must be launch "
							   "or none, not '%s'", optarg);
			py_backtrace = strcmp(optarg, "none") ? "1" : "0";
			break;
		case 'M':	/* --metrics, --metrics=SET, and --metrics help */
			metrics.spec = optarg ? optarg : "summary";
			if (!optarg && optind < argc && !strcmp(argv[optind], "help"))
				metrics.spec = argv[optind++];
			break;
		case 'L':
			metrics.spec = optarg;
			break;
		case 'F':
			if (apx_parse_u64(optarg, APX_PM_HZ_MAX, &hz) < 0 || !hz)
				return apx_cli_usage_error("analyze", "--metrics-frequency takes a whole "
							   "number of Hz from 1 to %u, not '%s'",
							   APX_PM_HZ_MAX, optarg);
			metrics.hz = (unsigned)hz;
			break;
		case 'R':
			metrics.replay = 1;
			break;
		case 'K':
			metrics.kernels = optarg;
			break;
		case 'X':
			metrics.replay_flush = 1;
			break;
		case 'N':
			if (apx_parse_u64(optarg, 1000000, &hz) < 0 || !hz)
				return apx_cli_usage_error("analyze", "--replay-max takes a whole number "
							   "from 1 to 1000000, not '%s'", optarg);
			metrics.replay_max = (unsigned)hz;
			break;
		case 'T':
		case 'H':
		case 'S':
		case 'W':
			if (apx_pyhooks_opt(&pyhooks, c, optarg))
				return APX_EXIT_USAGE;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(apx_cmd_analyze_usage, stdout);
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("analyze", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return apx_cli_unknown_option("analyze", opts, argv[optind - 1]);
		}
	}
	if (capture && (delay_ns || duration_ns))
		return apx_cli_usage_error("analyze", "--capture-range and --delay/--duration both "
					   "say when to collect: give one of them");
	if (pyhooks.backward && !strcmp(py_backtrace, "0"))
		return apx_cli_usage_error("analyze", "--python-backward nvtx gives backward kernels "
					   "the forward line's Python stack: it needs "
					   "--python-backtrace launch");
	if ((nic_hz || nic_include) && !nic)
		return apx_cli_usage_error("analyze", "--nic-metrics-frequency and "
					   "--nic-device-include need --nic-metrics");
	if (metrics.hz && !metrics.spec)
		return apx_cli_usage_error("analyze", "--metrics-frequency needs --metrics or "
					   "--metrics-list");
	if (metrics.spec && !strcmp(metrics.spec, "help") && !metrics.replay) {
		int stop;

		have_lib = apx_find_inject_lib(lib, sizeof(lib)) == 0;
		return apx_analyze_metrics(have_lib ? lib : NULL, &metrics, &stop);
	}
	if (optind >= argc)
		return apx_cli_usage_error("analyze", "no script or command given");
	command_mode = !strcmp(argv[optind - 1], "--") || !ends_with(argv[optind], ".py");
	if (!python || !*python)
		python = "python3";

	if (output_path(output, path, sizeof(path)) < 0 ||
	    (!command_mode && check_script(argv[optind]) < 0))
		return APX_EXIT_FAIL;
	old_run[0] = 0;
	apx_term_safe_str(safe, sizeof(safe), output);	/* names reach the terminal escaped */
	if (lstat(path, &st) == 0) {
		struct apx_diag d;

		if (!S_ISREG(st.st_mode)) {	/* a link, a device, a FIFO: never replaced */
			apx_log_error("'%s' is not a regular file (a link, a device, a FIFO...): apx analyze "
				      "writes a new file, or replaces a regular one with --force",
				      safe);
			return APX_EXIT_FAIL;
		}
		if (!force) {
			apx_log_error("'%s' exists; pass --force to replace it, or -o FILE",
				      safe);
			return APX_EXIT_USAGE;
		}
		(void)apx_run_id_of(path, old_run, sizeof(old_run), &d);	/* "" if none */
		replace = 1;
	}
	/* checked before the program starts: it must not run for a trace that cannot be */
	if ((wr = check_writable(path)) < 0) {
		apx_log_errno(wr, "cannot write '%s'", safe);
		return APX_EXIT_FAIL;
	}
	if (replace && unlink(path) < 0 && errno != ENOENT) {
		apx_log_errno(-errno, "cannot remove '%s'", safe);
		return APX_EXIT_FAIL;
	}
	if (force)
		for_child_files(path, unlink_run_file, old_run);

	targc = argc - optind + (command_mode ? 0 : 1);
	targv = calloc((size_t)targc + 1, sizeof(*targv));
	if (!targv)
		return APX_EXIT_FAIL;
	if (command_mode) {
		memcpy(targv, argv + optind, (size_t)targc * sizeof(*targv));
	} else {
		static char python_buf[PATH_MAX];

		snprintf(python_buf, sizeof(python_buf), "%s", python);
		targv[0] = python_buf;
		memcpy(targv + 1, argv + optind, (size_t)(targc - 1) * sizeof(*targv));
	}

	have_lib = apx_find_inject_lib(lib, sizeof(lib)) == 0;
	if (have_lib) {
		const char *prev = getenv("CUDA_INJECTION64_PATH");

		if (prev && *prev && strcmp(prev, lib) && strcmp(prev, "none"))
			apx_log_warn("replacing CUDA_INJECTION64_PATH='%s' by apx's collector",
				     prev);
		int stop, rc = apx_analyze_metrics(lib, &metrics, &stop);

		if (stop) {
			free(targv);
			return rc;
		}
		setenv("CUDA_INJECTION64_PATH", lib, 1);
		apx_analyze_nccl_env(lib);
		preload_watch(lib);
		calibrate(lib, level);
		apx_pyhooks_setup(lib, &pyhooks, pydir, sizeof(pydir));
	} else {
		apx_analyze_nccl_env(NULL);	/* multicast stays off all the same */
		pydir[0] = 0;
		if (pyhooks.trace)
			apx_log_warn("without the collector, --trace-functions records "
				     "nothing");
		apx_log_warn("the collector libapx-inject.so was not found (set "
			     "APX_INJECT_LIB); GPU activity is not recorded");
	}
	snprintf(run_id, sizeof(run_id), "%d-%" PRIu64, (int)getpid(), apx_clock_ns(CLOCK_REALTIME));
	setenv("APX_OUTPUT", path, 1);
	setenv("APX_LEVEL", level, 1);
	setenv("APX_RUN_ID", run_id, 1);
	ri.start_ns = apx_clock_ns(CLOCK_MONOTONIC);
	if (delay_ns)
		set_env_u64("APX_WINDOW_START_NS", ri.start_ns + delay_ns);
	if (duration_ns)
		set_env_u64("APX_WINDOW_END_NS", ri.start_ns + delay_ns + duration_ns);
	if (capture)
		setenv("APX_CAPTURE", capture, 1);
	else
		unsetenv("APX_CAPTURE");
	setenv("APX_PY_BACKTRACE", py_backtrace, 1);
	set_env_u64("APX_PY_SAMPLING_HZ", py_hz);
	setenv("APX_LIBCALLS", trace_libs, 1);	/* libapx-watch.so's libcalls.c */
	if (ranks)	/* read by the collector at cuInit (inject.c) */
		setenv("APX_RANKS", ranks, 1);
	else
		unsetenv("APX_RANKS");
	unsetenv("APX_NIC_INCLUDE");	/* the NIC source (src_nic.c) */
	setenv("APX_NIC_METRICS", nic ? "1" : "0", 1);
	if (nic) {
		set_env_u64("APX_NIC_HZ", nic_hz ? nic_hz : 100);
		if (nic_include)
			setenv("APX_NIC_INCLUDE", nic_include, 1);
	}
	preload_heap(have_lib ? lib : NULL, heap_bytes, heap_large);
	ri.heap_bytes = heap_bytes;

	/* like system(3): the terminal's ^C and ^\ go to the program; apx waits and reports */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGQUIT, &sa, &old_quit);
	sa.sa_handler = forward_signal;
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	fflush(NULL);
	/* exec_pipe: closed by a successful exec (O_CLOEXEC); a failed one writes its errno */
	if (pipe2(exec_pipe, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		apx_log_errno(-errno, "cannot start the program");
		apx_pyhooks_cleanup(pydir);
		free(targv);
		return APX_EXIT_FAIL;
	}
	if (pid == 0) {
		int e;

		close(exec_pipe[0]);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGHUP, &old_hup, NULL);
		set_env_u64("APX_ROOT_PID", (uint64_t)getpid());
		execvp(targv[0], targv);
		e = errno;
		(void)!write(exec_pipe[1], &e, sizeof(e));
		_exit(127);
	}
	close(exec_pipe[1]);
	while ((n = read(exec_pipe[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR)
		;
	close(exec_pipe[0]);
	child_pid = pid;
	while (wait4(pid, &ri.status, 0, &ri.ru) < 0) {
		if (errno != EINTR) {
			apx_log_errno(-errno, "waiting for pid %d", (int)pid);
			apx_pyhooks_cleanup(pydir);
			free(targv);
			return APX_EXIT_FAIL;
		}
	}
	child_pid = 0;
	ri.end_ns = apx_clock_ns(CLOCK_MONOTONIC);
	apx_pyhooks_cleanup(pydir);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);

	if (n == (ssize_t)sizeof(exec_errno)) {
		/* the program never started: no trace (a fallback would make the next run
		 * refuse with "exists") and no summary */
		apx_log_errno(-exec_errno, "cannot run '%s'", targv[0]);
		free(targv);
		return 127;
	}
	ri.argv = targv;
	ri.argc = targc;
	ri.pid = pid;
	ri.run_id = run_id;
	ri.have_collector = have_lib;
	if (access(path, F_OK) < 0 && (wr = write_fallback(path, &ri)) < 0) {
		/* no trace: no summary naming one, and not a success */
		apx_log_errno(wr, "cannot write '%s'", safe);
		free(targv);
		if (WIFSIGNALED(ri.status))
			return 128 + WTERMSIG(ri.status);
		return WEXITSTATUS(ri.status) ? WEXITSTATUS(ri.status) : APX_EXIT_FAIL;
	}
	nchild = for_child_files(path, NULL, NULL);
	if (!quiet)
		print_summary(path, &ri, nchild);
	free(targv);
	if (WIFSIGNALED(ri.status))
		return 128 + WTERMSIG(ri.status);
	return WEXITSTATUS(ri.status);
}
