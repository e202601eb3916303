/*
 * daemon.h - nvperfd's internal objects, shared by the files of the daemon (main.c event loop,
 * tracker.c, procfs.c, proc_connector.c, summary.c, ctl_server.c, dlog.c, metrics_http.c,
 * metrics_text.c).
 * Everything runs on the one thread of the epoll loop; nothing here is thread-safe.
 */
#ifndef APX_DAEMON_DAEMON_H
#define APX_DAEMON_DAEMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/finding.h"
#include "analysis/procobs.h"
#include "daemon/config.h"

struct apx_daemon;
struct apx_proc;

#define APX_COMM_MAX 16
#define APX_ARGV_MAX 4096		/* bytes of argv kept per process */
#define APX_CWD_MAX 512
#define APX_FINDINGS_RECENT 64		/* findings remembered for `apx status` */
#define APX_USERS_MAX 256		/* per-user configs cached */

/* ---- /proc readings (procfs.c) ------------------------------------------------------------ */

struct apx_pstat {			/* /proc/PID/stat (+ status for the process) */
	char comm[APX_COMM_MAX];
	char state;
	pid_t ppid;
	uint64_t utime_ns, stime_ns;
	uint64_t minflt, majflt;
	uint64_t threads;
	uint64_t start_ticks;		/* since boot */
	uint64_t rss_bytes;
	uint64_t rss_peak_bytes;	/* VmHWM */
	uint64_t vsize_bytes;		/* virtual memory size */
	uint64_t vol_csw, invol_csw;	/* of this task only */
	uint32_t tty_nr;
	uid_t uid;
};

int apx_procfs_stat(pid_t pid, pid_t tid, struct apx_pstat *ret, int with_status);
int apx_procfs_comm(pid_t pid, char comm[APX_COMM_MAX]);
/* 1 when /proc/PID/exe is a Python interpreter, 0 if not, -errno. */
int apx_procfs_exe_is_python(pid_t pid);
/* 1 when the process maps libcuda or has /dev/nvidia* open, 0 if not, -errno. */
int apx_procfs_uses_cuda(pid_t pid);
/* Path of the libcuda.so the process maps (as written in its maps): 1 found, 0 not, -errno. */
int apx_procfs_libcuda_path(pid_t pid, char *buf, size_t cap);
/* argv (NUL-separated) into buf; returns its length or -errno. */
ssize_t apx_procfs_cmdline(pid_t pid, char *buf, size_t cap);
int apx_procfs_cwd(pid_t pid, char *buf, size_t cap);
int apx_comm_is_python(const char *comm);
uint64_t apx_procfs_ticks_ns(void);	/* ns per clock tick */

/* ---- NVML (nvml.c): every value carries a validity bit; unsupported is not 0 ---------------- */

#define APX_GPU_MAX 64			/* devices followed */
#define APX_GPM_METRICS 12		/* GPM metrics sampled per device */

enum apx_gpu_field {			/* bits of apx_gpu_dev.valid */
	APX_GPU_UTIL = 1u << 0,		/* util_gpu_pct, util_mem_pct */
	APX_GPU_MEM = 1u << 1,		/* mem_used/total_bytes */
	APX_GPU_PCIE = 1u << 2,		/* pcie_tx/rx_kbps */
	APX_GPU_CLOCKS = 1u << 3,	/* sm_clock_mhz, mem_clock_mhz */
	APX_GPU_POWER = 1u << 4,	/* power_mw */
	APX_GPU_GPM = 1u << 5,		/* gpm[] (each with its own bit in gpm_valid) */
	APX_GPU_TEMP = 1u << 6,		/* temp_c */
	APX_GPU_ENERGY = 1u << 7,	/* energy_mj */
	APX_GPU_THROTTLE = 1u << 8,	/* throttle_reasons */
};

#define APX_GPU_XIDS_MAX 16		/* distinct XIDs counted per device (the rest: xid_other) */

struct apx_gpu_xid {
	uint32_t xid;
	uint64_t count;
};

struct apx_gpu_dev {
	char name[96];
	char uuid[96];
	uint32_t valid;			/* enum apx_gpu_field */
	uint32_t gpm_valid;		/* bit i: gpm[i] */
	uint8_t mig;			/* MIG mode on: per-process utilization unsupported */
	uint8_t gpm_supported;
	uint32_t util_gpu_pct, util_mem_pct;
	uint64_t mem_used_bytes, mem_total_bytes;
	uint32_t pcie_tx_kbps, pcie_rx_kbps;
	uint32_t sm_clock_mhz, mem_clock_mhz;
	uint32_t power_mw;
	double gpm[APX_GPM_METRICS];
	uint32_t nprocs;		/* compute processes seen at the last sample */
	uint32_t temp_c;		/* GPU core temperature, degrees Celsius */
	uint64_t energy_mj;		/* energy since the driver loaded, millijoules */
	uint64_t throttle_reasons;	/* nvmlClocksEventReason* bits now */
	/* fixed at open: "" / -1 when NVML did not say */
	char pci_bus_id[32];		/* "00000000:3B:00.0", as nvidia-smi and dcgm-exporter */
	int32_t minor;			/* /dev/nvidiaN */
	/* XID errors (critical XID events, polled at each sample) */
	uint8_t xid_events;		/* registered for them: the counts below are known */
	uint32_t xid_last;		/* the last XID seen, 0 = none since nvperfd started */
	uint32_t nxids;
	struct apx_gpu_xid xids[APX_GPU_XIDS_MAX];
	uint64_t xid_other;		/* events of XIDs beyond the APX_GPU_XIDS_MAX first */
};

#define APX_GPU_SERIES_MAX 256		/* GPU samples kept per process (thinned by half) */

struct apx_gpu_sample {			/* one NVML sample of a process (METRIC records) */
	uint64_t ts_ns;
	uint32_t valid;			/* APX_GPU_UTIL: dev_util; APX_GPU_MEM: mem; APX_GPU_GPM */
	uint8_t sm_valid;		/* sm_util_pct is from this sample */
	uint32_t dev_util_pct, sm_util_pct;
	uint64_t mem_bytes;
	float gpm_sm_util, gpm_dram_util;	/* device-wide, only when alone on it */
};

struct apx_gpu_proc {			/* per tracked process, accumulated over its life */
	uint32_t valid;			/* APX_GPU_UTIL: util sums; APX_GPU_MEM: mem peak */
	int32_t device;			/* last device it ran on, -1 = none seen */
	uint64_t mem_peak_bytes;
	uint64_t sm_util_sum, util_samples;
	uint64_t gpu_seen_samples;	/* samples where it held a GPU (per device it was on) */
	uint64_t gpu_util_samples;	/* ... and NVML gave that device's utilization */
	uint64_t gpu_idle_samples;	/* ... and it was 0 (idle share: idle / util samples) */
	uint32_t sole_samples;		/* it was the only process on its device (GPM is ours) */
	double gpm_sum[APX_GPM_METRICS];
	uint32_t gpm_samples;
	uint32_t dev_mem_peak_permille;	/* highest device memory use seen, of its total */
	uint8_t dev_mem_valid;
	/* at the last sample only (cleared at each): what `apx status/top` show */
	uint32_t now_valid;		/* APX_GPU_MEM: mem_now_bytes; _UTIL: sm_now_pct */
	uint64_t now_devs;		/* bit i: it is on device i (APX_GPU_MAX is 64) */
	uint64_t mem_now_bytes;		/* summed over them */
	uint32_t sm_now_pct;		/* the highest of them */
	struct apx_gpu_sample *series;	/* time series, APX_GPU_SERIES_MAX at most */
	uint32_t nseries, stride, skip;	/* keep one sample in stride */
};

struct apx_nvml;
/* dlopen libnvidia-ml; NULL with why[] filled when NVML cannot be used (no library, init). */
struct apx_nvml *apx_nvml_open(char *why, size_t cap);
void apx_nvml_close(struct apx_nvml *n);
/* Sample every device and the tracked processes on them (on the sampling tick). */
void apx_nvml_sample(struct apx_nvml *n, struct apx_daemon *d, uint64_t now_ns);
size_t apx_nvml_devices(const struct apx_nvml *n, const struct apx_gpu_dev **ret);
/* 1 when NVML's process ids belong to another PID namespace (nvperfd in a container) */
int apx_nvml_foreign_pids(const struct apx_nvml *n);
const char *apx_gpm_metric_name(size_t i);	/* "sm_util" ... of gpm[i] */

/* ---- eBPF uprobes (bpf/uprobes.c; bpf/uprobes_none.c when built without BPF) --------------- */

#define APX_UP_CONFIG_MAX 64		/* L2 limit / APW events kept per process */
#define APX_UP_PINS_MAX 4096		/* pinned ranges followed per process */

enum apx_up_state { APX_UPS_OFF = 0, APX_UPS_ATTACHED = 1, APX_UPS_DETACHED_RATE = 2 };

struct apx_up_cfg_event {		/* becomes an APX_REC_CONFIG record */
	uint64_t ts_ns;
	uint32_t kind;			/* enum apx_config_kind */
	uint32_t tid;
	uint64_t value, base, bytes, stream;
	uint32_t hit_ppm, hit_prop, miss_prop;
};

struct apx_up_range { uint64_t base, bytes; };

struct apx_up_proc_state {
	void *links;			/* uprobes.c's attachment */
	int state;			/* enum apx_up_state */
	char path[APX_CWD_MAX];		/* the libcuda attached to, as the process maps it */
	uint32_t symbols;		/* functions probed */
	uint8_t copy_time;		/* copies timed (return probes; uprobe_copy_time) */
	uint64_t calls, lost, over_rate_calls, detached_ns;
	/* [0] pageable, [1] pinned */
	uint64_t h2d_calls[2], h2d_bytes[2], h2d_ns[2];
	uint64_t d2h_calls[2], d2h_bytes[2], d2h_ns[2];
	uint64_t pin_calls, pin_bytes, pin_failed, unpin_calls;
	/* live, and whole when cfg[] is full: the persisting-L2 limit set last (0: none), the
	 * access-policy windows set */
	uint64_t l2_limit_bytes, apw_windows;
	struct apx_up_cfg_event cfg[APX_UP_CONFIG_MAX];
	size_t ncfg;
	uint64_t cfg_dropped;
	struct apx_up_range *pins;	/* sorted by base */
	size_t npins, cap_pins;
	uint64_t pins_dropped;
};

struct apx_uprobes;
/* Load the BPF programs; NULL with why[] filled when BPF cannot be used here. */
struct apx_uprobes *apx_uprobes_open(char *why, size_t cap);
void apx_uprobes_close(struct apx_uprobes *u);
int apx_uprobes_fd(struct apx_uprobes *u);	/* epoll-able ring buffer fd */
/* Attach to the libcuda p maps (path as in its maps). 0, or -errno with why[] filled. */
int apx_uprobes_attach(struct apx_uprobes *u, struct apx_proc *p, const char *path,
		       uint64_t max_rate, int copy_time, char *why, size_t cap);
void apx_uprobes_detach(struct apx_uprobes *u, struct apx_proc *p);	/* keeps the counts */
void apx_uprobes_forget(struct apx_uprobes *u, struct apx_proc *p);	/* detach + free */
/* Consume the ring buffer; calls apx_tracker_up_over_rate for processes over the cap. */
int apx_uprobes_drain(struct apx_uprobes *u, struct apx_daemon *d);
int apx_uprobes_compiled(void);		/* 1 when this build has BPF */

/* ---- tracked processes (tracker.c) -------------------------------------------------------- */

struct apx_sample {
	uint64_t ts_ns;			/* CLOCK_MONOTONIC */
	uint64_t utime_ns, stime_ns, vol_csw, invol_csw, rss_bytes, rss_peak_bytes;
	uint64_t minflt, majflt;
	uint32_t threads;
	char state;
};

struct apx_thread {
	pid_t tid;
	char name[APX_COMM_MAX];
	uint64_t first_ns, last_ns;
	uint64_t utime_ns, stime_ns, vol_csw, invol_csw;
	uint32_t seen;			/* tick generation when last seen */
	uint8_t gone;
};

struct apx_proc {
	struct apx_proc *hnext;		/* hash chain */
	struct apx_proc *next, *prev;	/* list of all tracked */
	pid_t pid, ppid;
	uid_t uid;
	char comm[APX_COMM_MAX];
	char *argv;			/* NUL-separated, argv_len bytes */
	size_t argv_len;
	char cwd[APX_CWD_MAX];
	uint64_t start_ns;		/* CLOCK_MONOTONIC */
	uint64_t tracked_ns;		/* when the daemon started tracking */
	uint32_t tty_nr;
	uint8_t cuda;			/* 0 no / not yet, 1 yes */
	uint8_t torch;			/* comm was pt_main_thread */
	uint64_t cuda_next_ns, cuda_backoff_ns;
	struct apx_conf cfg;		/* the user's config when the process started */
	struct apx_sample last;		/* latest sample (also the final totals) */
	uint64_t prev_cpu_ns, prev_ts_ns;	/* for the CPU % of the last period */
	uint32_t cpu_pct_x10;
	uint64_t peak_rss;
	struct apx_sample *samples;	/* time series, thinned by half when full */
	size_t nsamples, cap_samples;
	uint32_t stride, skip;		/* keep one sample in stride */
	struct apx_thread *threads;
	size_t nthreads, cap_threads;
	uint32_t gen;
	uint64_t sample_errors;
	struct apx_up_proc_state *up;	/* eBPF uprobes on its libcuda (uprobes.c), NULL = none */
	uint8_t up_tried;		/* an attach was tried (once per process) */
	uint64_t up_next_ns;		/* next look for its libcuda (not mapped yet) */
	struct apx_gpu_proc gpu;	/* NVML per-process readings (nvml.c) */
	uint64_t live_next_ns;		/* next live check (live_check; 0: none made yet) */
	uint32_t live_told;		/* bit i: rule i of apx_procobs_rules() got its live
					 * notice (tracker.c), said once per process */
};

/* A finding of a process that ended, for `apx status`: the rule engine's record
 * (analysis/finding.h, made by the rules of analysis/procobs.h) and whose it was. */
struct apx_proc_finding {
	struct apx_finding f;
	pid_t pid;
	uid_t uid;
	uint64_t unix_ms;
	char comm[APX_COMM_MAX];
};

struct apx_user_conf {
	uid_t uid;
	int used;
	int wd;				/* inotify watch on the folder of the file, -1 = none */
	char path[APX_CONF_PATH_MAX];
	char name[64];			/* file name inside the watched folder */
	int loaded;			/* cfg holds the file's values */
	uint64_t err_logged_ns;		/* last rejection logged (rate limit: a user must not
					 * be able to flood the log by rewriting a bad file) */
	uint64_t err_suppressed;
	struct apx_conf cfg;
};

struct apx_stats {
	uint64_t events, forks, execs, comms, exits;
	uint64_t enobufs, rescans, tracked_total, untracked_cap, summaries, summary_errors;
	uint64_t summaries_pruned, clients_total, clients_refused, notices, config_reloads;
	uint64_t config_errors, samples, cuda_checks, batch_periods;
	uint64_t summary_rescans;	/* summary folders listed (summary_index.c) */
	uint64_t untracked_user_cap;	/* not tracked: max_tracked_per_user (tracker.c) */
	uint64_t live_notices;		/* notices of a big problem while the process ran
					 * (live_check, tracker.c); `notices` are those at exit */
	/* Prometheus endpoint (metrics_http.c) */
	uint64_t metrics_scrapes, metrics_bad, metrics_refused, metrics_timeouts, metrics_slow;
	uint64_t metrics_evicted;	/* silent/slow connections closed for a new one */
};

struct apx_daemon {
	struct apx_conf conf;		/* machine config in force */
	char conf_path[APX_CONF_PATH_MAX];
	int epfd, nlfd, sigfd, timerfd, inofd, ctlfd, lockfd;
	int nlbatchfd;			/* timerfd: drains the connector while batching */
	int batching;			/* 1: event storm, connector read every APX_NL_BATCH_NS */
	uint64_t win_start_ns, win_events;	/* event-rate window */
	uint64_t last_rescan_ns;
	int rescan_pending;		/* an overrun asked for a rescan (at most one per 100 ms) */
	int conf_wd;
	int conf_present;		/* the machine file was there at the last load */
	int conf_from_file;		/* the config in force is a file's (else: the defaults) */
	int foreground;
	pid_t self;			/* getpid(), cached */
	int stopping;
	uint64_t start_ns;
	uint64_t ticks_ns;
	int64_t boot_minus_mono_ns;	/* CLOCK_BOOTTIME - CLOCK_MONOTONIC at start */
	int64_t real_minus_mono_ns;
	struct apx_proc **htab;		/* hash by pid */
	size_t hsize;
	struct apx_proc *procs;		/* list head */
	size_t nprocs;
	struct apx_proc_finding findings[APX_FINDINGS_RECENT];
	size_t nfindings;		/* total ever; ring index = n % size */
	struct apx_findings exit_findings;	/* the rules' output at an exit or a live check
						 * (tracker.c, one at a time): here, not on the
						 * stack (~280 KiB), made once */
	struct apx_user_conf users[APX_USERS_MAX];
	struct apx_client *clients;
	size_t nclients;
	size_t nctl_refused;		/* refused clients being drained (ctl_server.c) */
	int ctl_paused;			/* control socket not accepting: REFUSED_MAX refused
					 * clients draining (ctl_server.c) */
	struct apx_stats st;
	struct apx_uprobes *up;		/* NULL: BPF unavailable (said once at start) */
	struct apx_nvml *nvml;		/* NULL: NVML unavailable (said once at start) */
	struct apx_metrics *metrics;	/* Prometheus endpoint; NULL: off or bind failed */
	struct apx_sumidx *sumidx;	/* summary folder index (summary_index.c), lazily */
	uint64_t sumidx_clock;
	char up_why[200], nvml_why[200];
};

uint64_t apx_now_ns(void);		/* CLOCK_MONOTONIC */
uint64_t apx_wall_ns(void);		/* CLOCK_REALTIME */

int apx_tracker_init(struct apx_daemon *d);
void apx_tracker_free(struct apx_daemon *d);
/* A process exec'd, changed comm or was found by a scan: track it if it is Python. */
void apx_tracker_consider(struct apx_daemon *d, pid_t pid, int why);
/* A thread renamed itself (comm from the event): cheap unless it looks like Python. */
void apx_tracker_comm(struct apx_daemon *d, pid_t pid, pid_t tid, const char *comm);
void apx_tracker_fork(struct apx_daemon *d, pid_t parent, pid_t child);
void apx_tracker_exit(struct apx_daemon *d, pid_t pid, int exit_code, int have_code);
void apx_tracker_tick(struct apx_daemon *d);
void apx_tracker_rescan(struct apx_daemon *d);
struct apx_proc *apx_tracker_find(struct apx_daemon *d, pid_t pid);
/* Config of a uid (machine defaults + its file), loading it on first use. */
const struct apx_conf *apx_user_conf(struct apx_daemon *d, uid_t uid);
/* An inotify event (mask) on entry name of the folder watched as wd: re-read what it names. */
void apx_user_conf_changed(struct apx_daemon *d, int wd, const char *name, uint32_t mask);

/* The probes of p were over its rate cap and are now detached (called by uprobes.c). */
void apx_tracker_up_over_rate(struct apx_daemon *d, struct apx_proc *p, uint64_t calls);

enum { APX_WHY_EXEC = 1, APX_WHY_COMM = 2, APX_WHY_SCAN = 3 };

/* ---- the rule engine's input (observe.c) ------------------------------------------------- */

/* What the daemon saw of p up to end_ns, with its thresholds: the input of the rules of
 * analysis/procobs.h. At its exit end_ns is the end of the run and p's last sample the final
 * totals; for a process still running (live_check) end_ns is now and the totals are those of
 * the last sample, so far. Copies counters p holds; no allocation, no syscall. */
void apx_proc_observe(const struct apx_proc *p, uint64_t end_ns, struct apx_procobs *ret);

/* ---- summary files (summary.c) ------------------------------------------------------------ */

/* Write the summary of p (which has ended); returns 0 or -errno; *ret_path gets the path. */
int apx_summary_write(struct apx_daemon *d, struct apx_proc *p, int exit_code, int have_code,
		      const struct apx_finding *f, size_t nf, char *ret_path, size_t cap);
/* Open STATE_DIR/UID (created owned by uid, 0700); returns an O_DIRECTORY fd or -errno. */
int apx_state_dir_open(struct apx_daemon *d, uid_t uid, int create);

/* ---- netlink proc connector (proc_connector.c) -------------------------------------------- */

int apx_nl_open(int rcvbuf_bytes);
/* Read every pending event and dispatch it; -ENOBUFS after an overrun (caller rescans). */
int apx_nl_drain(struct apx_daemon *d);

/* ---- control socket (ctl_server.c) -------------------------------------------------------- */

int apx_ctl_listen(struct apx_daemon *d);
void apx_ctl_accept(struct apx_daemon *d);
void apx_ctl_event(struct apx_daemon *d, struct apx_client *c, uint32_t events);
void apx_ctl_close_all(struct apx_daemon *d);
void apx_ctl_expire(struct apx_daemon *d);	/* drop clients older than 10 s */

/* inotify events watched on a config folder (IN_ATTRIB: owner or mode; IN_CREATE: a symlink,
 * FIFO or hard link planted as the file, which no IN_CLOSE_WRITE follows) */
#define APX_CONF_WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | \
			     IN_ATTRIB | IN_CREATE)
/* 1 when an event of that mask on the config file at path means "read it again" (conf_watch.c):
 * every event but IN_CREATE of a regular file, whose IN_CLOSE_WRITE follows (reading it at
 * IN_CREATE would take a half-written file). */
int apx_conf_event_rereads(uint32_t mask, const char *path);

/* epoll data tags: pointers to these identify the fd */
enum apx_ep_tag {
	APX_EP_NL = 1, APX_EP_SIG, APX_EP_TIMER, APX_EP_INOTIFY, APX_EP_CTL, APX_EP_NLBATCH, APX_EP_UPROBES,
	APX_EP_METRICS, APX_EP_METRICS_TIMER,	/* metrics_http.c (connections: APX_EP_METRICS_CONN) */
};

/* ---- ending connections (sock_drain.c) ---------------------------------------------------- */

/* Read and discard what the peer sends (at most 32 KiB a call): 1 when it closed its side or
 * the socket failed (close it now), 0 while more may come. */
int apx_sock_discard(int fd);

/* ---- logging (dlog.c) --------------------------------------------------------------------- */

enum { APX_LOG_ERR = 3, APX_LOG_WARNING = 4, APX_LOG_NOTICE = 5, APX_LOG_INFO = 6, APX_LOG_DEBUG = 7 };
/* or'ed into the level: also to syslog when the config says syslog = no (what an administrator
 * must not miss: the config file gone or rejected) */
#define APX_LOG_SYSLOG 0x100

int apx_dlog_open(const struct apx_conf *c, int to_stderr);
void apx_dlog_reopen(const struct apx_conf *c);
void apx_dlog_close(void);
void apx_dlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Escape untrusted text for a log line into buf (quoted by the caller). */
const char *apx_dlog_esc(char *buf, size_t cap, const char *s, size_t len);

#endif
