/*
 * ctl_proto.h - the nvperfd control-socket protocol, shared by the daemon (lib/daemon/ctl_server.c)
 * and its clients (lib/daemon/ctl_client.c, used by `apx status/top/history`).
 *
 * Transport: a SOCK_STREAM Unix socket (default APX_CTL_SOCKET_DEFAULT). The daemon reads the
 * peer's credentials (SO_PEERCRED) on accept: a user is shown only processes, findings and
 * summaries of their own uid; root sees everything.
 *
 * Request: one line of at most APX_CTL_REQUEST_MAX bytes, "apx1 VERB\n", VERB one of
 *   status   tracked processes now + recent findings + the GPUs NVML sees
 *   history  the caller's summary files (root: every user's)
 *   stats    daemon counters
 *   ping     liveness
 * Response: lines of at most APX_CTL_LINE_MAX bytes, APX_CTL_RESPONSE_MAX bytes in all. Fields
 * are separated by '\t' and escaped (backslash, tab, newline and every byte outside 0x20..0x7e
 * written as "\xNN", so a process name cannot forge a line). The first line is "ok" or
 * "err\tMESSAGE"; the last line is "end". Every line in between starts with its kind
 * ("proc", "finding", "gpu", "summary", "stat") followed by the fields listed below, in order.
 * New fields are only ever appended, and new kinds added; clients ignore fields and kinds
 * they do not know, and take fields an older daemon did not send as not known. A numeric
 * field marked "-" below is "-" on the wire when the daemon does not know the value: never 0
 * for unknown.
 */
#ifndef APX_CTL_PROTO_H
#define APX_CTL_PROTO_H

#define APX_CTL_PROTO_MAGIC "apx1"
#define APX_CTL_SOCKET_DEFAULT "/run/nvperfd.sock"
#define APX_CTL_REQUEST_MAX 256
#define APX_CTL_LINE_MAX 8192
#define APX_CTL_RESPONSE_MAX (4u << 20)

/* "proc": one tracked process. Times in ms; cpu_pct_x10 is CPU % over the last sample period
 * times 10 (may exceed 1000 with several busy threads). */
enum apx_ctl_proc_field {
	APX_CTL_PROC_PID,
	APX_CTL_PROC_PPID,
	APX_CTL_PROC_UID,
	APX_CTL_PROC_USER,		/* string */
	APX_CTL_PROC_START_UNIX_MS,	/* wall clock of process start */
	APX_CTL_PROC_AGE_MS,
	APX_CTL_PROC_CPU_PCT_X10,
	APX_CTL_PROC_UTIME_MS,
	APX_CTL_PROC_STIME_MS,
	APX_CTL_PROC_RSS_BYTES,
	APX_CTL_PROC_RSS_PEAK_BYTES,
	APX_CTL_PROC_VOL_CSW,
	APX_CTL_PROC_INVOL_CSW,
	APX_CTL_PROC_THREADS,
	APX_CTL_PROC_STATE,		/* string: /proc state letter */
	APX_CTL_PROC_CUDA,		/* 0 no, 1 yes */
	APX_CTL_PROC_COMM,		/* string */
	APX_CTL_PROC_ARGV,		/* string: arguments joined by spaces */
	APX_CTL_PROC_UPROBES,		/* string: attached, detached, none, unavailable */
	APX_CTL_PROC_H2D_PAGEABLE_BYTES,	/* "-" = not known (no uprobes) */
	APX_CTL_PROC_H2D_PINNED_BYTES,		/* "-" = not known */
	APX_CTL_PROC_GPU_MEM_BYTES,	/* peak device memory from NVML; "-" = not known */
	/* at the last NVML sample (the sampling period); "-" = not known: no NVML, or the
	 * process is not on (or not visible on) a GPU at that sample */
	APX_CTL_PROC_GPU_DEVICE,	/* lowest index of the devices it is on; "-" */
	APX_CTL_PROC_GPU_COUNT,		/* devices it is on (0: none seen); "-" = no NVML */
	APX_CTL_PROC_GPU_MEM_NOW_BYTES,	/* device memory, summed over its devices; "-" */
	APX_CTL_PROC_SM_UTIL_PCT,	/* SM utilization, the highest of its devices; "-" */
	/* over its life so far (the quantity of the exit-time gpu-idle finding): NVML samples
	 * where it held a GPU whose utilization NVML gave, per device it was on; "-" = no NVML */
	APX_CTL_PROC_GPU_SAMPLES,
	APX_CTL_PROC_GPU_IDLE_SAMPLES,	/* ... of them, the device's utilization was 0; "-" */
	/* from the uprobes on its libcuda; "-" = not known (no uprobes on it) */
	APX_CTL_PROC_L2_PERSIST_BYTES,	/* the persisting-L2 limit it set last (0: none) */
	APX_CTL_PROC_L2_WINDOWS,	/* L2 access-policy windows it set on streams */
	APX_CTL_PROC_H2D_PAGEABLE_CALL_NS,	/* time in its pageable H2D copy calls; "-" also
						 * when copies are not timed (uprobe_copy_time) */
	APX_CTL_PROC__COUNT,
};
/* fields every daemon version sent (pid .. argv); the later ones may be absent */
#define APX_CTL_PROC__MIN (APX_CTL_PROC_ARGV + 1)

/* "finding": a threshold crossed by a process that has ended. */
enum apx_ctl_finding_field {
	APX_CTL_FINDING_PID,
	APX_CTL_FINDING_UID,
	APX_CTL_FINDING_UNIX_MS,
	APX_CTL_FINDING_SEVERITY,	/* 1 info, 2 warning, 3 critical */
	APX_CTL_FINDING_RULE,		/* string */
	APX_CTL_FINDING_TITLE,		/* string */
	APX_CTL_FINDING_COMM,		/* string */
	APX_CTL_FINDING__COUNT,
};

/* "gpu": one device NVML sees, at the last sample (device-wide: every process on it, the
 * caller's or not, as nvidia-smi shows to any user). Absent without NVML. */
enum apx_ctl_gpu_field {
	APX_CTL_GPU_INDEX,
	APX_CTL_GPU_NAME,		/* string: "NVIDIA H200" */
	APX_CTL_GPU_UTIL_PCT,		/* "-" = not known */
	APX_CTL_GPU_MEM_USED_BYTES,	/* "-" = not known */
	APX_CTL_GPU_MEM_TOTAL_BYTES,	/* "-" = not known */
	APX_CTL_GPU_POWER_MW,		/* "-" = not known */
	APX_CTL_GPU__COUNT,
};

/* "summary": a summary file in a user's state folder. */
enum apx_ctl_summary_field {
	APX_CTL_SUMMARY_UID,
	APX_CTL_SUMMARY_MTIME_UNIX_MS,
	APX_CTL_SUMMARY_BYTES,
	APX_CTL_SUMMARY_PATH,		/* string */
	APX_CTL_SUMMARY__COUNT,
};

/* "stat": a daemon counter. */
enum apx_ctl_stat_field {
	APX_CTL_STAT_KEY,		/* string */
	APX_CTL_STAT_VALUE,
	APX_CTL_STAT__COUNT,
};

#endif /* APX_CTL_PROTO_H */
