/*
 * cmd_attach.c - `apx attach PID [--python-only]`. With --python-only it samples a running
 * Python process's stacks from outside, as py-spy does, and writes them to a trace: the
 * process is never stopped, nothing is loaded into it, nothing in it changes. lib/pystack
 * finds its interpreter from /proc/PID/maps and the ELF symbols (remote.c) and reads its
 * thread states, frames and code objects with copying reads (process_vm_readv on PID). Every
 * tick writes one SAMPLE record per Python thread (its stack, its state, system call and CPU
 * time from /proc/PID/task), with the FRAME and STACK records the stacks name written before
 * it, as the collector's sampler does (src_pysampler.c), so apx report shows them under
 * hotspots and threads.
 * At the end, nvperfd's view of the process (its CUDA use, uprobe copy counters and NVML
 * readings: attach_nvperfd.c) goes into the trace as nvperfd.* key/values when nvperfd runs.
 * Refusals (nothing written, exit 1): no such process, not allowed to read it, not a Python
 * process, a CPython apx does not know. Without --python-only the collector is loaded into
 * the process instead (attach_gpu.c). docs/attach.md; called from cli/main.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <apx/format.h>
#include <apx/version.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/procfs.h"
#include "base/termsafe.h"
#include "cli/attach_name.h"
#include "cli/attach_nvperfd.h"
#include "cli/cli.h"
#include "pystack/pystack.h"

#include "base/banned.h"

#define DEPTH 96			/* frames kept per stack, innermost first (as the collector) */
#define MAX_PY_THREADS 512
#define STACK_SLOTS (1u << 16)
#define CODE_SLOTS (1u << 13)
#define FRAME_SLOTS (1u << 16)

const char apx_cmd_attach_usage[] =
	"usage: apx attach PID|NAME [--duration S] [-o FILE] [--force]\n"
	"       apx attach PID|NAME --python-only [--duration S] [--rate HZ] [-o FILE] [--force]\n"
	"\n"
	"Profile running process PID for S seconds, then leave it as it was. NAME instead of\n"
	"PID: the one process of yours (root: anyone's) that goes by that name, as apx status\n"
	"shows it: its program or script (train.py for python3 train.py, serve for python -m\n"
	"serve) or its process name; several of them: apx lists their pids and attaches to none.\n"
	"\n"
	"By default apx loads its CUPTI collector into the process: one of its Python threads,\n"
	"stopped with ptrace where it releases the GIL, opens a copy of libapx-inject.so. The\n"
	"collector records what apx analyze records (kernels, copies, synchronizations, Python\n"
	"stacks), closes the trace after S seconds, then takes CUPTI out of the process\n"
	"(cuptiFinalize): the program runs on with no CUPTI client left in it, and a later\n"
	"attach works. The process must use CUDA already, and hold no other CUPTI client\n"
	"(torch.profiler used in it, Nsight): apx refuses then, saying why, and changes\n"
	"nothing.\n"
	"\n"
	"With --python-only apx samples the Python stacks from outside, as py-spy does: the\n"
	"memory is read with process_vm_readv, the process is never stopped and nothing in it\n"
	"changes (one sample per Python thread per tick: its stack, state and CPU time).\n"
	"When nvperfd runs, its view of the process (CUDA use, copy counters from its uprobes,\n"
	"NVML readings) is added at the end. apx report FILE shows either trace.\n"
	"\n"
	"  -p, --python-only   sample the Python stacks from outside (no CUPTI; nvperfd's view)\n"
	"  -d, --duration S    how long to collect, in seconds (default 10; Ctrl-C stops early)\n"
	"  -r, --rate HZ       --python-only: samples per second, 1 to 1000 (default 100)\n"
	"  -o, --output FILE   trace file (default attach-PID.apx)\n"
	"  -f, --force         replace FILE when it exists\n"
	"  -h, --help          show this help\n"
	"\n"
	"Needs the right to trace PID (to load the collector) or to read its memory\n"
	"(--python-only): the same user with kernel.yama.ptrace_scope 0, or root. CPython 3.10\n"
	"to 3.14 on x86_64 Linux with glibc.\n"
	"\n"
	"Exit status: 0 the trace was written; 1 apx could not attach (no such process, no\n"
	"permission, not a Python process, no CUDA context yet, CUPTI held by another tool, an\n"
	"unknown CPython or C library: the message says which) or could not write FILE; 2 usage\n"
	"error.\n";

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

struct code_ent {
	uintptr_t code;			/* 0 = free */
	int ok;				/* decoded */
	struct apx_py_code dec;
};

struct sampler {
	pid_t pid;
	struct apx_py_runtime rt;
	struct apx_writer *w;
	uint64_t *stack_key;		/* hash of (code, offset) pairs, 0 = free */
	uint32_t *stack_id;
	struct code_ent *codes;
	uint64_t *frame_key;		/* (code slot + 1) << 32 | line */
	uint32_t *frame_id;
	uint32_t next_stack, next_frame, unreadable_fid;
	uint64_t samples, dropped, ticks, no_tid;
	long clk;
	pid_t named[MAX_PY_THREADS];	/* threads whose THREAD record is written */
	int nnamed;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static uint32_t str_id(struct sampler *s, const char *text)
{
	uint32_t id = 0;

	(void)apx_writer_intern(s->w, text, strlen(text), &id);
	return id;
}

/* The code object's slot, decoded the first time; -1 when the table is full. */
static int code_slot(struct sampler *s, uintptr_t code)
{
	uint32_t i = (uint32_t)(mix(0, code) & (CODE_SLOTS - 1));

	for (uint32_t probe = 0; probe < CODE_SLOTS; probe++, i = (i + 1) & (CODE_SLOTS - 1)) {
		struct code_ent *c = &s->codes[i];

		if (c->code == code)
			return (int)i;
		if (c->code)
			continue;
		c->code = code;
		c->ok = apx_py_code_decode(&s->rt, code, &c->dec) == 0;
		return (int)i;
	}
	return -1;
}

/* The FRAME of a (code object, line), written the first time. */
static uint32_t frame_of(struct sampler *s, const struct apx_py_raw_frame *f)
{
	int slot = code_slot(s, f->code);
	const struct code_ent *c;
	struct apx_rec rec;
	uint64_t key;
	int32_t line;
	uint32_t i;

	if (slot < 0 || !s->codes[slot].ok) {
		if (s->unreadable_fid)
			return s->unreadable_fid;
		s->unreadable_fid = ++s->next_frame;
		apx_rec_init(&rec, APX_REC_FRAME);
		rec.v[APX_FRAME_ID] = s->unreadable_fid;
		rec.v[APX_FRAME_KIND] = APX_FRAME_PYTHON;
		rec.v[APX_FRAME_FILE] = str_id(s, "<unreadable>");
		rec.v[APX_FRAME_FUNC] = str_id(s, "<unreadable code object>");
		(void)apx_writer_add(s->w, &rec);
		return s->unreadable_fid;
	}
	c = &s->codes[slot];
	line = apx_py_code_line(&s->rt, &c->dec, f->lasti_bytes);
	key = ((uint64_t)slot + 1) << 32 | (uint32_t)(line < 0 ? 0 : line);
	i = (uint32_t)(mix(0, key) & (FRAME_SLOTS - 1));
	for (uint32_t probe = 0; probe < FRAME_SLOTS; probe++, i = (i + 1) & (FRAME_SLOTS - 1)) {
		if (s->frame_key[i] == key)
			return s->frame_id[i];
		if (s->frame_key[i])
			continue;
		s->frame_key[i] = key;
		s->frame_id[i] = ++s->next_frame;
		apx_rec_init(&rec, APX_REC_FRAME);
		rec.v[APX_FRAME_ID] = s->frame_id[i];
		rec.v[APX_FRAME_KIND] = APX_FRAME_PYTHON;
		rec.v[APX_FRAME_FILE] = str_id(s, c->dec.file);
		rec.v[APX_FRAME_FUNC] = str_id(s, c->dec.func);
		rec.v[APX_FRAME_FIRST_LINE] = (uint64_t)c->dec.first_line;
		rec.v[APX_FRAME_LINE] = line < 0 ? 0 : (uint64_t)line;
		(void)apx_writer_add(s->w, &rec);
		return s->frame_id[i];
	}
	return 0;
}

/* The id of a walked stack, its FRAME and STACK records written the first time; 0 when the
 * table is full. */
static uint32_t stack_of(struct sampler *s, const struct apx_py_raw_frame *f, int n, int trunc)
{
	uint64_t key = mix(0, (uint64_t)n << 1 | (uint64_t)trunc);
	uint8_t buf[DEPTH * 5];
	struct apx_rec rec;
	size_t o = 0;
	uint32_t i;

	for (int k = 0; k < n; k++)
		key = mix(mix(key, f[k].code), f[k].lasti_bytes);
	key |= !key;
	i = (uint32_t)(key & (STACK_SLOTS - 1));
	for (uint32_t probe = 0;; probe++, i = (i + 1) & (STACK_SLOTS - 1)) {
		if (probe == STACK_SLOTS)
			return 0;
		if (s->stack_key[i] == key)
			return s->stack_id[i];
		if (!s->stack_key[i])
			break;
	}
	s->stack_key[i] = key;
	s->stack_id[i] = ++s->next_stack;
	for (int k = 0; k < n; k++) {
		uint32_t fid = frame_of(s, &f[k]);

		if (!fid)
			continue;
		do {
			uint8_t b = fid & 0x7f;

			fid >>= 7;
			buf[o++] = (uint8_t)(b | (fid ? 0x80 : 0));
		} while (fid);
	}
	apx_rec_init(&rec, APX_REC_STACK);
	rec.v[APX_STACK_ID] = s->stack_id[i];
	apx_rec_set_bytes(&rec, APX_STACK_FRAMES, buf, o);
	rec.v[APX_STACK_TRUNCATED] = (uint64_t)trunc;
	(void)apx_writer_add(s->w, &rec);
	return s->stack_id[i];
}

/* The thread's state, CPU time and system call from /proc/PID/task/TID into rec. */
static void thread_proc(const struct sampler *s, pid_t tid, struct apx_rec *rec)
{
	char path[96], buf[512], *p;
	unsigned long long ut = 0, st = 0;
	uint8_t state = APX_TSTATE_OTHER;

	apx_rec_set_i64(rec, APX_SAMPLE_SYSCALL, -1);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)s->pid, (int)tid);
	if (apx_read_small(path, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')) || p[1] != ' ')
		return;
	switch (p[2]) {
	case 'R': state = APX_TSTATE_RUNNING; break;
	case 'S': state = APX_TSTATE_SLEEPING; break;
	case 'D': state = APX_TSTATE_DISK; break;
	case 'T': case 't': state = APX_TSTATE_STOPPED; break;
	default: break;
	}
	rec->v[APX_SAMPLE_STATE] = state;
	if (sscanf(p + 4, "%*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
		rec->v[APX_SAMPLE_CPU_NS] = (ut + st) * (1000000000ull / (uint64_t)s->clk);
	if (state != APX_TSTATE_SLEEPING && state != APX_TSTATE_DISK)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)s->pid, (int)tid);
	if (apx_read_small(path, buf, 32) > 0 && buf[0] >= '0' && buf[0] <= '9')
		apx_rec_set_i64(rec, APX_SAMPLE_SYSCALL, strtol(buf, NULL, 10));
}

/* A THREAD record (its name from /proc/PID/task/TID/comm) the first time a thread is seen. */
static void thread_name(struct sampler *s, pid_t tid, uint64_t ts)
{
	char path[96], name[64];
	struct apx_rec rec;

	for (int i = 0; i < s->nnamed; i++)
		if (s->named[i] == tid)
			return;
	if (s->nnamed == MAX_PY_THREADS)
		return;
	s->named[s->nnamed++] = tid;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)s->pid, (int)tid);
	if (apx_read_small(path, name, sizeof(name)) <= 0)
		return;
	name[strcspn(name, "\n")] = '\0';
	apx_rec_init(&rec, APX_REC_THREAD);
	rec.v[APX_THREAD_PID] = (uint64_t)s->pid;
	rec.v[APX_THREAD_TID] = (uint64_t)tid;
	apx_rec_set_str(&rec, APX_THREAD_NAME, name);
	rec.v[APX_THREAD_START_NS] = ts;
	(void)apx_writer_add(s->w, &rec);
}

/* One tick: a SAMPLE per Python thread. -ESRCH once the process is gone. */
static int tick(struct sampler *s, uint64_t period)
{
	struct apx_py_thread py[MAX_PY_THREADS];
	struct apx_py_raw_frame f[DEPTH];
	uint64_t ts = apx_clock_ns(CLOCK_MONOTONIC);
	int npy = apx_py_threads(&s->rt, py, MAX_PY_THREADS);

	s->ticks++;
	if (npy < 0) {
		if (kill(s->pid, 0) < 0 && errno == ESRCH)
			return -ESRCH;
		s->dropped++;	/* the list changed under the reader, or the interpreter ends */
		return 0;
	}
	for (int k = 0; k < npy; k++) {
		struct apx_rec rec;
		int n, trunc = 0;

		/* 3.10 keeps no OS thread id: only the main thread (the oldest thread
		 * state, last in the list) is known, as the process id */
		if (!py[k].tid && k != npy - 1) {
			s->no_tid++;
			continue;
		}
		apx_rec_init(&rec, APX_REC_SAMPLE);
		rec.v[APX_SAMPLE_TS_NS] = ts;
		rec.v[APX_SAMPLE_TID] = (uint64_t)(py[k].tid ? py[k].tid : s->pid);
		rec.v[APX_SAMPLE_PERIOD_NS] = period;
		n = apx_py_walk_copy(&s->rt, py[k].tstate, f, DEPTH, &trunc);
		if (n < 0) {
			s->dropped++;	/* the chain changed under the reader: no sample */
			continue;
		}
		rec.v[APX_SAMPLE_STACK] = n ? stack_of(s, f, n, trunc) : 0;
		thread_name(s, (pid_t)rec.v[APX_SAMPLE_TID], ts);
		thread_proc(s, (pid_t)rec.v[APX_SAMPLE_TID], &rec);
		(void)apx_writer_add(s->w, &rec);
		s->samples++;
	}
	return 0;
}

/* The target's command line (NUL-separated, as APX_HEADER_ARGV) and comm. */
static size_t target_argv(pid_t pid, char *argv, size_t cap, char *comm, size_t comm_cap)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (apx_read_small(path, comm, comm_cap) <= 0)
		comm[0] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, argv, cap);
	close(fd);
	if (n <= 0)
		return 0;
	if ((size_t)n == cap)
		argv[--n] = '\0';	/* cut: keep it NUL-terminated */
	return argv[n - 1] ? (argv[n] = '\0', (size_t)n + 1) : (size_t)n;
}

static int open_trace(struct sampler *s, const char *path, int force, uint64_t start)
{
	char argv[4096], comm[64], cwd_link[64], cwd[4096];
	struct apx_cli_host host;
	struct apx_rec h, rec;
	struct stat st;
	size_t argv_len = target_argv(s->pid, argv, sizeof(argv) - 1, comm, sizeof(comm));
	ssize_t n;
	int r;

	apx_cli_header_init(&h, "apx-attach", &host);
	h.v[APX_HEADER_PID] = (uint64_t)s->pid;
	apx_rec_set_bytes(&h, APX_HEADER_ARGV, argv, argv_len);
	snprintf(cwd_link, sizeof(cwd_link), "/proc/%d/cwd", (int)s->pid);
	n = readlink(cwd_link, cwd, sizeof(cwd) - 1);
	if (n > 0) {
		cwd[n] = '\0';
		apx_rec_set_str(&h, APX_HEADER_CWD, cwd);
	}
	snprintf(cwd_link, sizeof(cwd_link), "/proc/%d", (int)s->pid);
	if (stat(cwd_link, &st) == 0)
		h.v[APX_HEADER_UID] = st.st_uid;
	apx_rec_set_i64(&h, APX_HEADER_RANK, -1);
	h.v[APX_HEADER_START_NS] = start;
	r = apx_writer_open(path, force, &h, NULL, &s->w);
	if (r < 0)
		return r;
	apx_rec_init(&rec, APX_REC_KV);
	apx_rec_set_str(&rec, APX_KV_KEY, "collector");
	apx_rec_set_str(&rec, APX_KV_VALUE, "none: apx attach --python-only (Python stacks read "
			"from outside; no GPU data)");
	(void)apx_writer_add(s->w, &rec);
	apx_rec_init(&rec, APX_REC_PROCESS);
	rec.v[APX_PROCESS_PID] = (uint64_t)s->pid;
	rec.v[APX_PROCESS_START_NS] = start;
	apx_rec_set_str(&rec, APX_PROCESS_COMM, comm);
	apx_rec_set_bytes(&rec, APX_PROCESS_ARGV, argv, argv_len);
	rec.v[APX_PROCESS_UID] = h.v[APX_HEADER_UID];
	rec.v[APX_PROCESS_USES_CUDA] = 2;
	(void)apx_writer_add(s->w, &rec);
	return 0;
}

static int sample(struct sampler *s, uint64_t duration_ns, uint64_t hz)
{
	uint64_t period = 1000000000ull / hz, start = apx_clock_ns(CLOCK_MONOTONIC), next = start;
	int ended = 0;

	while (!g_stop) {
		struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };

		if (next - start >= duration_ns)
			break;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (g_stop)
			break;
		if (tick(s, period) == -ESRCH) {
			ended = 1;
			break;
		}
		next += period;
		if (next < apx_clock_ns(CLOCK_MONOTONIC))
			next = apx_clock_ns(CLOCK_MONOTONIC) + period;	/* late: skip, do not burst */
	}
	return ended;
}

/* A KV record into the trace; ctx: the sampler (an apx_attach_kv_fn, for attach_nvperfd.c). */
static void add_kv(void *ctx, const char *key, const char *value)
{
	struct sampler *s = ctx;
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_KV);
	apx_rec_set_str(&rec, APX_KV_KEY, key);
	apx_rec_set_str(&rec, APX_KV_VALUE, value);
	(void)apx_writer_add(s->w, &rec);
}

int apx_cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "python-only", no_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "rate", required_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sampler s = { 0 };
	struct sigaction sa = { 0 };
	uint64_t duration_ns = 10000000000ull, hz = 100, pid = 0;
	const char *output = NULL;
	char why[512], path_buf[64], safe[512], text[320];
	int python_only = 0, force = 0, c, r, ended;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":pd:r:o:fh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			python_only = 1;
			break;
		case 'd':
			if (apx_parse_seconds_ns(optarg, &duration_ns) < 0 || !duration_ns)
				return apx_cli_usage_error("attach", "--duration '%s': give seconds "
							   "above 0 (e.g. 10 or 2.5)",
							   apx_term_safe_str(safe, sizeof(safe),
									     optarg));
			break;
		case 'r':
			if (apx_parse_u64(optarg, 1000, &hz) < 0 || !hz)
				return apx_cli_usage_error("attach", "--rate '%s': give samples per "
							   "second, 1 to 1000",
							   apx_term_safe_str(safe, sizeof(safe),
									     optarg));
			break;
		case 'o':
			output = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'h':
			fputs(apx_cmd_attach_usage, stdout);
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("attach", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return apx_cli_unknown_option("attach", opts, argv[optind - 1]);
		}
	}
	/* options may come before or after PID (getopt_long moves PID to the end) */
	if (optind == argc)
		return apx_cli_usage_error("attach", "no PID given");
	if (apx_parse_u64(argv[optind], 4194304, &pid) < 0 || !pid) {
		pid_t named;

		if (argv[optind][strspn(argv[optind], "0123456789")] == 0)	/* 0, too large */
			return apx_cli_usage_error("attach", "'%s' is not a process id",
						   apx_term_safe_str(safe, sizeof(safe),
								     argv[optind]));
		r = apx_attach_find_name(argv[optind], &named, why, sizeof(why));
		if (r == -EINVAL)
			return apx_cli_usage_error("attach", "%s", why);
		if (r < 0) {
			apx_log_error("%s", why);
			return APX_EXIT_FAIL;
		}
		pid = (uint64_t)named;
	}
	optind++;
	if (optind < argc)
		return apx_cli_usage_error("attach", "unexpected argument '%s'",
					   apx_term_safe_str(safe, sizeof(safe), argv[optind]));
	s.pid = (pid_t)pid;
	if (!output) {
		snprintf(path_buf, sizeof(path_buf), "attach-%d.apx", (int)s.pid);
		output = path_buf;
	}
	apx_term_safe_str(safe, sizeof(safe), output);
	if (!force && access(output, F_OK) == 0) {
		apx_log_error("'%s' exists: --force replaces it, -o names another file", safe);
		return APX_EXIT_FAIL;
	}
	if (!python_only)
		return apx_attach_gpu(s.pid, duration_ns, output, force);
	r = apx_py_runtime_find_pid(s.pid, &s.rt, why, sizeof(why));
	if (r < 0) {
		apx_log_error("cannot attach to process %d: %s", (int)s.pid, why);
		return APX_EXIT_FAIL;
	}
	s.clk = sysconf(_SC_CLK_TCK);
	if (s.clk <= 0)
		s.clk = 100;
	s.stack_key = calloc(STACK_SLOTS, sizeof(*s.stack_key));
	s.stack_id = calloc(STACK_SLOTS, sizeof(*s.stack_id));
	s.codes = calloc(CODE_SLOTS, sizeof(*s.codes));
	s.frame_key = calloc(FRAME_SLOTS, sizeof(*s.frame_key));
	s.frame_id = calloc(FRAME_SLOTS, sizeof(*s.frame_id));
	if (!s.stack_key || !s.stack_id || !s.codes || !s.frame_key || !s.frame_id) {
		r = apx_log_errno(-ENOMEM, "cannot allocate the stack tables");
		goto out;
	}
	r = open_trace(&s, output, force, apx_clock_ns(CLOCK_MONOTONIC));
	if (r < 0) {
		apx_log_errno(r, "cannot create '%s'", safe);
		goto out;
	}
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "apx attach: sampling the Python stacks of process %d (CPython %u.%u) at "
		"%llu Hz for %.3g s; Ctrl-C stops early\n", (int)s.pid, s.rt.L.version_hex >> 24,
		(s.rt.L.version_hex >> 16) & 0xff, (unsigned long long)hz, (double)duration_ns / 1e9);
	ended = sample(&s, duration_ns, hz);
	snprintf(text, sizeof(text), "%llu Hz asked; %llu ticks, %llu samples, %llu dropped "
		 "(frames changed under the reader), %llu of threads without an OS id (CPython "
		 "3.10, not the main thread); from outside (apx attach)",
		 (unsigned long long)hz, (unsigned long long)s.ticks,
		 (unsigned long long)s.samples, (unsigned long long)s.dropped,
		 (unsigned long long)s.no_tid);
	add_kv(&s, "python_sampling", text);
	if (ended)
		add_kv(&s, "attach_end", "the process ended while apx sampled it");
	r = ended ? 0 : apx_attach_nvperfd(s.pid, add_kv, &s);
	if (!ended && r == 0)
		fprintf(stderr, "apx attach: nvperfd's view of process %d (CUDA use, copies, NVML) "
			"added to the trace\n", (int)s.pid);
	else if (r == -ENOENT || r == -ECONNREFUSED)
		fprintf(stderr, "apx attach: nvperfd is not running: the trace has the stacks only "
			"(apx init starts it: CUDA use, copies and NVML readings beside them)\n");
	else if (r == -ESRCH)
		fprintf(stderr, "apx attach: nvperfd does not track process %d: the trace has the "
			"stacks only\n", (int)s.pid);
	r = apx_writer_close(s.w, apx_clock_ns(CLOCK_MONOTONIC), 0);
	if (r < 0) {
		apx_log_errno(r, "cannot write '%s'", safe);
		goto out;
	}
	fprintf(stderr, "apx attach: %llu samples of process %d in '%s'%s\n",
		(unsigned long long)s.samples, (int)s.pid, safe,
		ended ? " (the process ended)" : "");
out:
	free(s.stack_key);
	free(s.stack_id);
	free(s.codes);
	free(s.frame_key);
	free(s.frame_id);
	return r < 0 ? APX_EXIT_FAIL : APX_EXIT_OK;
}
