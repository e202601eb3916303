/*
 * metrics_text.c - the text of nvperfd's Prometheus endpoint: the exposition format 0.0.4 of
 * what the daemon holds: its own counters, each GPU's NVML and GPM readings (only those the
 * driver gave: validity bits, never a 0 for "unsupported"), and each tracked process (CPU,
 * memory, GPU memory and idle share, copy bytes and the pageable rate, L2 persistence from the
 * uprobes), and nvperfd's own process_* metrics as Prometheus's client libraries write them.
 * Names, labels and units: docs/nvperfd-metrics.md (Prometheus conventions, as `promtool check
 * metrics` checks them: base units, counters end in _total, snake_case names and labels, no
 * type name in a metric name; a _ratio twin beside each _percent gauge; dcgm-exporter's GPU
 * labels gpu, UUID, pci_bus_id, device, its modelName as model_name).
 *
 * Called by metrics_http.c, on main.c's one thread, for each scrape (and for the one-line body
 * of an error answer). The text goes into the connection's buffer after the room the caller
 * keeps for its headers, the buffer grown to at most APX_METRICS_RESPONSE_MAX; a line that
 * does not fit is left out whole (the answer ends at a line) and every later one too, and
 * nvperfd_metrics_truncated, in room kept at the end for it, says so. User names come from a
 * small uid cache the caller holds. Non-logging.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <apx/version.h>

#include "daemon/daemon.h"
#include "daemon/metrics_http.h"
#include "daemon/metrics_text.h"

#include "base/banned.h"

#define TAIL_ROOM 256			/* bytes kept after the text: the truncation gauge */
#define OUT_FIRST (64u << 10)		/* first buffer of a slot */
#define USERS_TTL_NS (60 * 1000000000ull)	/* the uid -> name cache is emptied this often */

/* ---- the buffer: bounded, lines that fit or are left out whole ------------------------- */

int apx_mtext_grow(struct apx_mtext_buf *b)
{
	size_t nc = b->cap ? b->cap * 2 : OUT_FIRST;
	char *nb;

	if (b->cap >= APX_METRICS_RESPONSE_MAX)
		return -ENOSPC;
	if (nc > APX_METRICS_RESPONSE_MAX)
		nc = APX_METRICS_RESPONSE_MAX;
	nb = realloc(b->data, nc);
	if (!nb)
		return -ENOMEM;
	b->data = nb;
	b->cap = nc;
	return 0;
}

void apx_mtext_add(struct apx_mtext *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	for (;;) {
		size_t room = o->b->cap - o->len - (o->tail ? 0 : TAIL_ROOM);

		va_start(ap, fmt);
		n = vsnprintf(o->b->data + o->len, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			o->len += (size_t)n;
			return;
		}
		if (o->tail || apx_mtext_grow(o->b) < 0) {
			o->full = 1;	/* the line is left out whole: the answer ends at a line */
			return;
		}
	}
}

static void family(struct apx_mtext *o, const char *name, const char *type, const char *help)
{
	o->fam = name;
	o->fam_type = type;
	o->fam_help = help;
	o->fam_said = 0;
}

/* One sample of the current family; # HELP and # TYPE go before its first sample only, so a
 * family without any value (no GPU, no uprobes) is not in the answer at all. */
static void put_s(struct apx_mtext *o, const char *labels, const char *value)
{
	if (!o->fam_said) {
		apx_mtext_add(o, "# HELP %s %s\n# TYPE %s %s\n", o->fam, o->fam_help, o->fam,
			      o->fam_type);
		o->fam_said = 1;
	}
	if (labels && labels[0])
		apx_mtext_add(o, "%s{%s} %s\n", o->fam, labels, value);
	else
		apx_mtext_add(o, "%s %s\n", o->fam, value);
}

static void put_u(struct apx_mtext *o, const char *labels, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	put_s(o, labels, num);
}

static void put_f(struct apx_mtext *o, const char *labels, double v)
{
	char num[32];

	if (v >= 0 && v < 9007199254740992.0 && v == (double)(uint64_t)v)
		snprintf(num, sizeof(num), "%" PRIu64, (uint64_t)v);	/* whole: every digit */
	else
		snprintf(num, sizeof(num), "%.15g", v);
	put_s(o, labels, num);
}

/* A label value as the exposition format wants it: backslash, double quote and newline
 * escaped (\\ \" \n); any other byte outside 0x20..0x7e written as the four characters \xNN
 * (their backslash escaped too), so the answer stays ASCII whatever a process calls itself.
 * Stops before an escape that does not fit; always NUL-terminated. */
static size_t label_esc(char *out, size_t cap, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (size_t i = 0; i < len && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];
		char e[6];
		size_t el = 0;

		if (ch == '\\' || ch == '"') {
			e[el++] = '\\';
			e[el++] = (char)ch;
		} else if (ch == '\n') {
			e[el++] = '\\';
			e[el++] = 'n';
		} else if (ch < 0x20 || ch > 0x7e) {
			e[el++] = '\\';
			e[el++] = '\\';
			e[el++] = 'x';
			e[el++] = hex[ch >> 4];
			e[el++] = hex[ch & 15];
		} else {
			e[el++] = (char)ch;
		}
		if (n + el >= cap)
			break;
		memcpy(out + n, e, el);
		n += el;
	}
	if (cap)
		out[n] = 0;
	return n;
}

/* ---- what is exported ------------------------------------------------------------------- */

static const struct {
	const char *name, *help;
	size_t off;			/* in struct apx_stats */
} daemon_counters[] = {
	{ "nvperfd_process_events_total", "Process events read from the netlink connector "
	  "(fork, exec, comm, exit).", offsetof(struct apx_stats, events) },
	{ "nvperfd_process_event_overruns_total", "Overruns of the netlink connector's buffer "
	  "(events lost; each is followed by a /proc rescan).", offsetof(struct apx_stats, enobufs) },
	{ "nvperfd_rescans_total", "Scans of /proc for Python processes (start, after overruns).",
	  offsetof(struct apx_stats, rescans) },
	{ "nvperfd_processes_tracked_total", "Python processes tracked since nvperfd started.",
	  offsetof(struct apx_stats, tracked_total) },
	{ "nvperfd_untracked_cap_total", "Python processes left untracked because max_tracked "
	  "processes were tracked already.", offsetof(struct apx_stats, untracked_cap) },
	{ "nvperfd_untracked_user_cap_total", "Python processes left untracked because their "
	  "user had max_tracked_per_user processes tracked already.",
	  offsetof(struct apx_stats, untracked_user_cap) },
	{ "nvperfd_samples_total", "/proc samples taken of tracked processes.",
	  offsetof(struct apx_stats, samples) },
	{ "nvperfd_summaries_total", "Summary files written.", offsetof(struct apx_stats, summaries) },
	{ "nvperfd_summaries_failed_total", "Summary files that could not be written.",
	  offsetof(struct apx_stats, summary_errors) },
	{ "nvperfd_summaries_pruned_total", "Old summary files removed (max_summaries, "
	  "max_state_bytes).", offsetof(struct apx_stats, summaries_pruned) },
	{ "nvperfd_summaries_folder_rescans_total", "Listings of a user's summary folder (the first "
	  "summary of a uid, or the folder changed by someone else).",
	  offsetof(struct apx_stats, summary_rescans) },
	{ "nvperfd_notices_total", "Notices of crossed thresholds (log, terminal).",
	  offsetof(struct apx_stats, notices) },
	{ "nvperfd_live_notices_total", "Notices of a big problem given while the process ran "
	  "(live_check; log, terminal).", offsetof(struct apx_stats, live_notices) },
	{ "nvperfd_config_reloads_total", "Machine config files loaded after start.",
	  offsetof(struct apx_stats, config_reloads) },
	{ "nvperfd_config_errors_total", "Machine config files rejected after start (the previous "
	  "config stayed).", offsetof(struct apx_stats, config_errors) },
	{ "nvperfd_ctl_clients_accepted_total", "Control-socket clients accepted.",
	  offsetof(struct apx_stats, clients_total) },
	{ "nvperfd_ctl_clients_refused_total", "Control-socket clients refused (max_clients).",
	  offsetof(struct apx_stats, clients_refused) },
	{ "nvperfd_metrics_scrapes_total", "GET /metrics answered 200 (this one included).",
	  offsetof(struct apx_stats, metrics_scrapes) },
	{ "nvperfd_metrics_bad_requests_total", "Metrics requests answered 400, 404, 405 or 431.",
	  offsetof(struct apx_stats, metrics_bad) },
	{ "nvperfd_metrics_refused_total", "Metrics connections refused with 503 (16 open "
	  "already, none of them done, silent, or partial or slow for 250 ms).",
	  offsetof(struct apx_stats, metrics_refused) },
	{ "nvperfd_metrics_evicted_total", "Silent or slow metrics connections closed to give "
	  "their slot to a new one (16 open already).", offsetof(struct apx_stats, metrics_evicted) },
	{ "nvperfd_metrics_timeouts_total", "Metrics connections closed unfinished: no whole "
	  "request within 2 s (408), or no whole answer taken within 5 s.",
	  offsetof(struct apx_stats, metrics_timeouts) },
	{ "nvperfd_metrics_slow_writes_total", "Metrics answers that did not fit in the socket at "
	  "once (written over several EPOLLOUT events).", offsetof(struct apx_stats, metrics_slow) },
};

/* Open descriptors of this process: the entries of /proc/self/fd, read with getdents64 into a
 * buffer on the stack (no allocation, unlike opendir), less the one that reads them. */
static int open_fds(uint64_t *ret)
{
	char buf[4096] __attribute__((aligned(8)));
	uint64_t cnt = 0;
	ssize_t n;
	int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			const struct dirent64 *e = (const struct dirent64 *)(const void *)(buf + off);

			if (e->d_name[0] != '.')
				cnt++;
			off += e->d_reclen;
		}
	}
	close(fd);
	if (n < 0 || !cnt)
		return n < 0 ? -EIO : -ENOENT;
	*ret = cnt - 1;
	return 0;
}

/* nvperfd's own process_* metrics, named, typed and in the units of Prometheus's client
 * libraries (client_golang's process collector), so that dashboards for any exporter's
 * process show nvperfd too. */
static void render_self(struct apx_daemon *d, const struct rusage *ru,
			const struct apx_pstat *ps, struct apx_mtext *o)
{
	struct rlimit rl;
	uint64_t fds;

	if (ru) {
		family(o, "process_cpu_seconds_total", "counter", "Total user and system CPU time "
		       "spent in seconds.");
		put_f(o, NULL, (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
		      (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6);
	}
	if (open_fds(&fds) == 0) {
		family(o, "process_open_fds", "gauge", "Number of open file descriptors.");
		put_u(o, NULL, fds);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		family(o, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
		put_f(o, NULL, (double)rl.rlim_cur);
	}
	if (ps) {
		uint64_t start = ps->start_ticks * apx_procfs_ticks_ns() -
				 (uint64_t)d->boot_minus_mono_ns + (apx_wall_ns() - apx_now_ns());

		family(o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
		put_u(o, NULL, ps->vsize_bytes);
		family(o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
		put_u(o, NULL, ps->rss_bytes);
		family(o, "process_start_time_seconds", "gauge", "Start time of the process since "
		       "unix epoch in seconds.");
		put_f(o, NULL, (double)(start / 1000000) / 1e3);
	}
}

static void render_daemon(struct apx_daemon *d, size_t nconns, struct apx_mtext *o)
{
	struct rusage ru;
	struct apx_pstat ps;
	int have_ru, have_ps;

	family(o, "nvperfd_info", "gauge", "Always 1; the version label is nvperfd's version.");
	put_u(o, "version=\"" APX_VERSION "\"", 1);
	family(o, "nvperfd_uptime_seconds", "gauge", "Seconds since nvperfd started.");
	put_f(o, NULL, (double)(apx_now_ns() - d->start_ns) / 1e9);
	family(o, "nvperfd_tracked_processes", "gauge", "Python processes tracked now.");
	put_u(o, NULL, d->nprocs);
	for (size_t i = 0; i < sizeof(daemon_counters) / sizeof(daemon_counters[0]); i++) {
		uint64_t v;

		memcpy(&v, (const char *)&d->st + daemon_counters[i].off, sizeof(v));
		family(o, daemon_counters[i].name, "counter", daemon_counters[i].help);
		put_u(o, NULL, v);
	}
	family(o, "nvperfd_findings_total", "counter", "Findings (crossed thresholds) of processes "
	       "that ended; a process's findings are made when it ends.");
	put_u(o, NULL, d->nfindings);
	family(o, "nvperfd_ctl_clients", "gauge", "Control-socket clients connected now.");
	put_u(o, NULL, d->nclients);
	family(o, "nvperfd_metrics_connections", "gauge", "Metrics connections open now (this "
	       "one included).");
	put_u(o, NULL, nconns);
	family(o, "nvperfd_nvml_available", "gauge", "1 when NVML is in use, 0 when not (off in "
	       "the config, no libnvidia-ml, no GPU).");
	put_u(o, NULL, d->nvml != NULL);
	family(o, "nvperfd_uprobes_available", "gauge", "1 when the eBPF uprobes are in use, 0 "
	       "when not (off in the config, no BPF).");
	put_u(o, NULL, d->up != NULL);
	have_ru = getrusage(RUSAGE_SELF, &ru) == 0;
	if (have_ru) {
		family(o, "nvperfd_cpu_seconds_total", "counter", "CPU time used by nvperfd "
		       "(user + system); the same as process_cpu_seconds_total.");
		put_f(o, NULL, (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
	/* read once: process_resident_memory_bytes is the same reading (a second read of
	 * /proc/self/stat could see the RSS the rendering itself moved) */
	have_ps = apx_procfs_stat(d->self, 0, &ps, 0) == 0;
	if (have_ps) {
		family(o, "nvperfd_resident_memory_bytes", "gauge", "Resident set size of nvperfd; "
		       "the same as process_resident_memory_bytes.");
		put_u(o, NULL, ps.rss_bytes);
	}
	render_self(d, have_ru ? &ru : NULL, have_ps ? &ps : NULL, o);
}

enum dev_metric {
	DM_UTIL, DM_MEM_UTIL, DM_MEM_USED, DM_MEM_TOTAL, DM_PCIE_TX, DM_PCIE_RX, DM_SM_CLOCK,
	DM_MEM_CLOCK, DM_POWER, DM_TEMP, DM_ENERGY, DM__COUNT
};

static const struct { const char *name, *help, *type; } dev_metrics[DM__COUNT] = {
	[DM_UTIL] = { "nvperfd_gpu_utilization_percent", "Percent of the last sample period in "
		      "which a kernel ran on the GPU (NVML)." },
	[DM_MEM_UTIL] = { "nvperfd_gpu_memory_utilization_percent", "Percent of the last sample "
			  "period in which device memory was read or written (NVML)." },
	[DM_MEM_USED] = { "nvperfd_gpu_memory_used_bytes", "Device memory in use (NVML)." },
	[DM_MEM_TOTAL] = { "nvperfd_gpu_memory_total_bytes", "Device memory in all (NVML)." },
	[DM_PCIE_TX] = { "nvperfd_gpu_pcie_tx_bytes_per_second", "PCIe bytes per second sent by "
			 "the GPU (GPM when supported, else NVML's 20 ms counter)." },
	[DM_PCIE_RX] = { "nvperfd_gpu_pcie_rx_bytes_per_second", "PCIe bytes per second received "
			 "by the GPU (GPM when supported, else NVML's 20 ms counter)." },
	[DM_SM_CLOCK] = { "nvperfd_gpu_sm_clock_hertz", "SM clock (NVML)." },
	[DM_MEM_CLOCK] = { "nvperfd_gpu_memory_clock_hertz", "Memory clock (NVML)." },
	[DM_POWER] = { "nvperfd_gpu_power_watts", "Power draw (NVML)." },
	[DM_TEMP] = { "nvperfd_gpu_temperature_celsius", "GPU core temperature (NVML)." },
	[DM_ENERGY] = { "nvperfd_gpu_energy_joules_total", "Energy used by the GPU since the "
			"driver was loaded (NVML; Volta and later).", "counter" },
};

/* NVML's clock throttle ("clocks event") reasons: nvmlClocksEventReason* bits, label values */
static const struct { uint64_t bit; const char *name; } throttle_reasons[] = {
	{ 0x1, "gpu_idle" }, { 0x2, "applications_clocks_setting" }, { 0x4, "sw_power_cap" },
	{ 0x8, "hw_slowdown" }, { 0x10, "sync_boost" }, { 0x20, "sw_thermal_slowdown" },
	{ 0x40, "hw_thermal_slowdown" }, { 0x80, "hw_power_brake_slowdown" },
	{ 0x100, "display_clock_setting" },
};

static int dev_value(const struct apx_gpu_dev *g, enum dev_metric w, double *v)
{
	switch (w) {
	case DM_UTIL:
		*v = g->util_gpu_pct;
		return !!(g->valid & APX_GPU_UTIL);
	case DM_MEM_UTIL:
		*v = g->util_mem_pct;
		return !!(g->valid & APX_GPU_UTIL);
	case DM_MEM_USED:
		*v = (double)g->mem_used_bytes;
		return !!(g->valid & APX_GPU_MEM);
	case DM_MEM_TOTAL:
		*v = (double)g->mem_total_bytes;
		return !!(g->valid & APX_GPU_MEM);
	case DM_PCIE_TX:
		*v = (double)g->pcie_tx_kbps * 1024.0;
		return !!(g->valid & APX_GPU_PCIE);
	case DM_PCIE_RX:
		*v = (double)g->pcie_rx_kbps * 1024.0;
		return !!(g->valid & APX_GPU_PCIE);
	case DM_SM_CLOCK:
		*v = (double)g->sm_clock_mhz * 1e6;
		return !!(g->valid & APX_GPU_CLOCKS);
	case DM_MEM_CLOCK:
		*v = (double)g->mem_clock_mhz * 1e6;
		return !!(g->valid & APX_GPU_CLOCKS);
	case DM_POWER:
		*v = (double)g->power_mw / 1000.0;
		return !!(g->valid & APX_GPU_POWER);
	case DM_TEMP:
		*v = g->temp_c;
		return !!(g->valid & APX_GPU_TEMP);
	case DM_ENERGY:
		*v = (double)g->energy_mj / 1000.0;
		return !!(g->valid & APX_GPU_ENERGY);
	default:
		return 0;
	}
}

/* GPM metrics (nvml.c's names) and how they are exported; the PCIe pair feeds
 * nvperfd_gpu_pcie_*_bytes_per_second above and is not repeated. */
static const struct {
	const char *gpm, *name, *help;
	double scale;
} gpm_export[] = {
	{ "graphics_util", "nvperfd_gpu_gpm_graphics_util_percent", "GPM: graphics or compute "
	  "engine active, percent of the time.", 1 },
	{ "sm_util", "nvperfd_gpu_gpm_sm_util_percent", "GPM: SM utilization, percent.", 1 },
	{ "sm_occupancy", "nvperfd_gpu_gpm_sm_occupancy_percent", "GPM: SM occupancy (warps "
	  "resident of the maximum), percent.", 1 },
	{ "tensor_util", "nvperfd_gpu_gpm_tensor_util_percent", "GPM: tensor core pipes active, "
	  "percent.", 1 },
	{ "dram_bw_util", "nvperfd_gpu_gpm_dram_bw_util_percent", "GPM: DRAM bandwidth used, "
	  "percent of the peak.", 1 },
	{ "fp64_util", "nvperfd_gpu_gpm_fp64_util_percent", "GPM: FP64 pipe active, percent.", 1 },
	{ "fp32_util", "nvperfd_gpu_gpm_fp32_util_percent", "GPM: FP32 pipe active, percent.", 1 },
	{ "fp16_util", "nvperfd_gpu_gpm_fp16_util_percent", "GPM: FP16 pipe active, percent.", 1 },
	{ "nvlink_rx_mib_s", "nvperfd_gpu_nvlink_rx_bytes_per_second", "GPM: NVLink bytes per "
	  "second received.", 1048576.0 },
	{ "nvlink_tx_mib_s", "nvperfd_gpu_nvlink_tx_bytes_per_second", "GPM: NVLink bytes per "
	  "second sent.", 1048576.0 },
};

/* dcgm-exporter's labels (gpu, UUID, pci_bus_id, device; its modelName as model_name, since
 * Prometheus wants snake_case label names), so that dashboards and alerts written for
 * dcgm-exporter's series join with these; UUID, pci_bus_id and device are left out when NVML
 * did not give them. */
static void dev_labels(const struct apx_gpu_dev *g, size_t i, char *buf, size_t cap)
{
	char uuid[sizeof(g->uuid) * 5], name[sizeof(g->name) * 5];
	char bus[sizeof(g->pci_bus_id) * 5], dev[24] = "";

	label_esc(uuid, sizeof(uuid), g->uuid, sizeof(g->uuid));
	label_esc(name, sizeof(name), g->name, sizeof(g->name));
	label_esc(bus, sizeof(bus), g->pci_bus_id, sizeof(g->pci_bus_id));
	if (g->minor >= 0)
		snprintf(dev, sizeof(dev), "nvidia%d", (int)g->minor);
	snprintf(buf, cap, "gpu=\"%zu\"%s%s%s%s%s%s%s%s%s,model_name=\"%s\"", i,
		 uuid[0] ? ",UUID=\"" : "", uuid, uuid[0] ? "\"" : "",
		 bus[0] ? ",pci_bus_id=\"" : "", bus, bus[0] ? "\"" : "",
		 dev[0] ? ",device=\"" : "", dev, dev[0] ? "\"" : "", name);
}

/* Prometheus wants ratios 0-1: each _percent gauge has a _ratio twin (the percent / 100),
 * written right after it. 1 and the twin's name and help when name ends in _percent. */
struct twin {
	char name[96], help[160];
};

static int ratio_twin(const char *name, struct twin *t)
{
	size_t n = strlen(name);

	if (n < 8 || strcmp(name + n - 8, "_percent"))
		return 0;
	snprintf(t->name, sizeof(t->name), "%.*s_ratio", (int)(n - 8), name);
	snprintf(t->help, sizeof(t->help), "%s as a ratio (the percent / 100).", name);
	return 1;
}

static void render_gpus(struct apx_daemon *d, struct apx_mtext *o)
{
	const struct apx_gpu_dev *g;
	size_t n = apx_nvml_devices(d->nvml, &g);
	char lbl[1536], all[sizeof(lbl) + 48];	/* every label escaped at its longest */
	struct twin tw;
	double v;

	if (!n)
		return;
	family(o, "nvperfd_gpu_info", "gauge", "Always 1, one per GPU that NVML shows (labels gpu, "
	       "UUID, pci_bus_id, device as dcgm-exporter's, model_name its modelName).");
	for (size_t i = 0; i < n; i++) {
		dev_labels(&g[i], i, lbl, sizeof(lbl));
		put_u(o, lbl, 1);
	}
	for (int w = 0; w < DM__COUNT; w++) {
		int twins = ratio_twin(dev_metrics[w].name, &tw);

		for (int r = 0; r <= twins; r++) {
			family(o, r ? tw.name : dev_metrics[w].name,
			       dev_metrics[w].type ? dev_metrics[w].type : "gauge",
			       r ? tw.help : dev_metrics[w].help);
			for (size_t i = 0; i < n; i++) {
				if (!dev_value(&g[i], (enum dev_metric)w, &v))
					continue;
				dev_labels(&g[i], i, lbl, sizeof(lbl));
				put_f(o, lbl, r ? v / 100.0 : v);
			}
		}
	}
	family(o, "nvperfd_gpu_clock_throttle_reason", "gauge", "1 while this reason holds the "
	       "clocks down (NVML's clocks event reasons; gpu_idle is not a slowdown), 0 if not.");
	for (size_t i = 0; i < n; i++) {
		if (!(g[i].valid & APX_GPU_THROTTLE))
			continue;
		dev_labels(&g[i], i, lbl, sizeof(lbl));
		for (size_t k = 0; k < sizeof(throttle_reasons) / sizeof(throttle_reasons[0]); k++) {
			snprintf(all, sizeof(all), "%s,reason=\"%s\"", lbl, throttle_reasons[k].name);
			put_u(o, all, !!(g[i].throttle_reasons & throttle_reasons[k].bit));
		}
	}
	family(o, "nvperfd_gpu_last_xid", "gauge", "The last critical XID error of the GPU since "
	       "nvperfd started, 0 when none (as dcgm-exporter's DCGM_FI_DEV_XID_ERRORS).");
	for (size_t i = 0; i < n; i++) {
		if (!g[i].xid_events)
			continue;
		dev_labels(&g[i], i, lbl, sizeof(lbl));
		put_u(o, lbl, g[i].xid_last);
	}
	family(o, "nvperfd_gpu_xid_errors_total", "counter", "Critical XID errors of the GPU since "
	       "nvperfd started, by XID (NVML events; xid=\"other\" past 16 distinct XIDs).");
	for (size_t i = 0; i < n; i++) {
		if (!g[i].xid_events)
			continue;
		dev_labels(&g[i], i, lbl, sizeof(lbl));
		for (uint32_t k = 0; k < g[i].nxids; k++) {
			snprintf(all, sizeof(all), "%s,xid=\"%" PRIu32 "\"", lbl, g[i].xids[k].xid);
			put_u(o, all, g[i].xids[k].count);
		}
		if (g[i].xid_other) {
			snprintf(all, sizeof(all), "%s,xid=\"other\"", lbl);
			put_u(o, all, g[i].xid_other);
		}
	}
	for (size_t e = 0; e < sizeof(gpm_export) / sizeof(gpm_export[0]); e++) {
		size_t k;

		for (k = 0; k < APX_GPM_METRICS; k++)
			if (!strcmp(apx_gpm_metric_name(k), gpm_export[e].gpm))
				break;
		if (k == APX_GPM_METRICS)
			continue;
		for (int r = 0; r <= ratio_twin(gpm_export[e].name, &tw); r++) {
			family(o, r ? tw.name : gpm_export[e].name, "gauge",
			       r ? tw.help : gpm_export[e].help);
			for (size_t i = 0; i < n; i++) {
				if (!(g[i].valid & APX_GPU_GPM) || !(g[i].gpm_valid & (1u << k)))
					continue;
				dev_labels(&g[i], i, lbl, sizeof(lbl));
				v = g[i].gpm[k] * gpm_export[e].scale;
				put_f(o, lbl, r ? v / 100.0 : v);
			}
		}
	}
}

/* The user name of uid (its number when it has none), from a small cache: a scrape does not
 * ask NSS again for every process of the same user. */
static const char *user_of(struct apx_mtext_users *users, uid_t uid, uint64_t now)
{
	struct passwd pw, *res = NULL;
	char tmp[2048];
	struct apx_mtext_user *u;

	if (now - users->emptied_ns > USERS_TTL_NS) {
		users->n = 0;
		users->emptied_ns = now;
	}
	for (size_t i = 0; i < users->n; i++)
		if (users->e[i].uid == uid)
			return users->e[i].name;
	if (users->n == APX_MTEXT_USERS_MAX)
		users->n = 0;
	u = &users->e[users->n++];
	u->uid = uid;
	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res)
		snprintf(u->name, sizeof(u->name), "%s", res->pw_name);
	else
		snprintf(u->name, sizeof(u->name), "%u", (unsigned)uid);
	return u->name;
}

static void proc_labels(struct apx_mtext_users *users, const struct apx_proc *p, uint64_t now,
			char *buf, size_t cap)
{
	const char *user = user_of(users, p->uid, now);
	char euser[sizeof(users->e[0].name) * 5], ecomm[APX_COMM_MAX * 5];

	label_esc(euser, sizeof(euser), user, strlen(user));
	label_esc(ecomm, sizeof(ecomm), p->comm, sizeof(p->comm));
	snprintf(buf, cap, "pid=\"%d\",user=\"%s\",comm=\"%s\"", (int)p->pid, euser, ecomm);
}

enum proc_metric {
	PM_CPU_PCT, PM_CPU_SECONDS, PM_RSS, PM_RSS_PEAK, PM_THREADS, PM_START, PM_CUDA,
	PM_GPU_MEM, PM_GPU_MEM_PEAK, PM_GPU_SM, PM_GPU_SM_MEAN, PM_GPU_IDLE, PM_L2_LIMIT,
	PM_L2_WINDOWS, PM_H2D_PAGEABLE_RATE, PM__COUNT
};

static const struct { const char *name, *type, *help; } proc_metrics[PM__COUNT] = {
	[PM_CPU_PCT] = { "nvperfd_process_cpu_percent", "gauge", "CPU use over the last sample "
			 "period, percent of one core (above 100 with several busy threads)." },
	[PM_CPU_SECONDS] = { "nvperfd_process_cpu_seconds_total", "counter", "CPU time used "
			     "(user + system) at the last sample." },
	[PM_RSS] = { "nvperfd_process_resident_memory_bytes", "gauge", "Resident set size at the "
		     "last sample." },
	[PM_RSS_PEAK] = { "nvperfd_process_resident_memory_peak_bytes", "gauge", "Highest "
			  "resident set size (VmHWM)." },
	[PM_THREADS] = { "nvperfd_process_threads", "gauge", "Threads at the last sample." },
	[PM_START] = { "nvperfd_process_start_time_seconds", "gauge", "Start of the process, "
		       "seconds since the Unix epoch." },
	[PM_CUDA] = { "nvperfd_process_cuda", "gauge", "1 once the process was seen using CUDA "
		      "(libcuda mapped or /dev/nvidia* open), 0 before." },
	[PM_GPU_MEM] = { "nvperfd_process_gpu_memory_bytes", "gauge", "Device memory of the "
			 "process at the last NVML sample, summed over the GPUs it is on." },
	[PM_GPU_MEM_PEAK] = { "nvperfd_process_gpu_memory_peak_bytes", "gauge", "Highest device "
			      "memory NVML reported for the process." },
	[PM_GPU_SM] = { "nvperfd_process_gpu_sm_util_percent", "gauge", "SM utilization of the "
			"process at the last NVML sample, the highest over the GPUs it is on." },
	[PM_GPU_SM_MEAN] = { "nvperfd_process_gpu_sm_util_mean_percent", "gauge", "Mean of the "
			     "process's SM utilization samples from NVML, percent." },
	[PM_GPU_IDLE] = { "nvperfd_process_gpu_idle_percent", "gauge", "Share of the NVML samples "
			  "while the process held a GPU where that GPU's utilization was 0, over "
			  "its life so far, percent (the gpu-idle finding's quantity)." },
	[PM_L2_LIMIT] = { "nvperfd_process_l2_persisting_limit_bytes", "gauge", "Persisting-L2 "
			  "limit the process set last (cuCtxSetLimit), 0 when none; from the "
			  "uprobes." },
	[PM_L2_WINDOWS] = { "nvperfd_process_l2_access_policy_windows_total", "counter", "L2 "
			    "access-policy windows the process set on streams "
			    "(cuStreamSetAttribute); from the uprobes." },
	[PM_H2D_PAGEABLE_RATE] = { "nvperfd_process_h2d_pageable_bytes_per_second", "gauge",
				   "Bytes of pageable host-to-device copies per second of time in "
				   "their calls, over its life so far (uprobe_copy_time = yes)." },
};

static int proc_value(const struct apx_proc *p, enum proc_metric w, uint64_t wall_off_ns,
		      double *v)
{
	int sampled = p->last.ts_ns != 0;	/* /proc figures exist from the first sample */

	switch (w) {
	case PM_CPU_PCT:
		*v = (double)p->cpu_pct_x10 / 10.0;
		return sampled;
	case PM_CPU_SECONDS:
		*v = (double)(p->last.utime_ns + p->last.stime_ns) / 1e9;
		return sampled;
	case PM_RSS:
		*v = (double)p->last.rss_bytes;
		return sampled;
	case PM_RSS_PEAK:
		*v = (double)p->peak_rss;
		return sampled;
	case PM_THREADS:
		*v = p->last.threads;
		return sampled;
	case PM_START:
		*v = (double)(p->start_ns + wall_off_ns) / 1e9;
		return 1;
	case PM_CUDA:
		*v = p->cuda;
		return 1;
	case PM_GPU_MEM:
		*v = (double)p->gpu.mem_now_bytes;
		return !!(p->gpu.now_valid & APX_GPU_MEM);
	case PM_GPU_SM:
		*v = p->gpu.sm_now_pct;
		return !!(p->gpu.now_valid & APX_GPU_UTIL);
	case PM_GPU_MEM_PEAK:
		*v = (double)p->gpu.mem_peak_bytes;
		return !!(p->gpu.valid & APX_GPU_MEM);
	case PM_GPU_SM_MEAN:
		if (!(p->gpu.valid & APX_GPU_UTIL) || !p->gpu.util_samples)
			return 0;
		*v = (double)p->gpu.sm_util_sum / (double)p->gpu.util_samples;
		return 1;
	case PM_GPU_IDLE:	/* not known without a sample of its GPU's utilization */
		if (!p->gpu.gpu_util_samples)
			return 0;
		*v = (double)p->gpu.gpu_idle_samples * 100.0 / (double)p->gpu.gpu_util_samples;
		return 1;
	case PM_L2_LIMIT:
		*v = p->up ? (double)p->up->l2_limit_bytes : 0;
		return p->up != NULL;
	case PM_L2_WINDOWS:
		*v = p->up ? (double)p->up->apw_windows : 0;
		return p->up != NULL;
	case PM_H2D_PAGEABLE_RATE:	/* copies timed, and some made */
		if (!p->up || !p->up->copy_time || !p->up->h2d_ns[0])
			return 0;
		*v = (double)p->up->h2d_bytes[0] * 1e9 / (double)p->up->h2d_ns[0];
		return 1;
	default:
		return 0;
	}
}

static void render_procs(struct apx_daemon *d, struct apx_mtext_users *users,
			 struct apx_mtext *o)
{
	static const char *const dir[2] = { "h2d", "d2h" }, *const mem[2] = { "pageable", "pinned" };
	uint64_t now = apx_now_ns(), wall_off = apx_wall_ns() - now;
	char lbl[640], all[sizeof(lbl) + 48];
	double v;

	for (int w = 0; w < PM__COUNT; w++) {
		struct twin tw;
		int twins = ratio_twin(proc_metrics[w].name, &tw);

		for (int r = 0; r <= twins; r++) {
			family(o, r ? tw.name : proc_metrics[w].name, proc_metrics[w].type,
			       r ? tw.help : proc_metrics[w].help);
			for (const struct apx_proc *p = d->procs; p && !o->full; p = p->next) {
				if (!proc_value(p, (enum proc_metric)w, wall_off, &v))
					continue;
				proc_labels(users, p, now, lbl, sizeof(lbl));
				put_f(o, lbl, r ? v / 100.0 : v);
			}
		}
	}
	/* from the eBPF uprobes on its libcuda: only processes they were attached to */
	for (int k = 0; k < 2; k++) {
		family(o, k ? "nvperfd_process_copy_calls_total" : "nvperfd_process_copy_bytes_total",
		       "counter", k ? "cudaMemcpy-family calls between host and device seen by "
		       "the uprobes, by direction and host memory kind." :
		       "Bytes copied between host and device seen by the uprobes, by direction "
		       "and host memory kind (pageable or pinned).");
		for (const struct apx_proc *p = d->procs; p && !o->full; p = p->next) {
			const struct apx_up_proc_state *u = p->up;

			if (!u)
				continue;
			proc_labels(users, p, now, lbl, sizeof(lbl));
			for (int di = 0; di < 2; di++) {
				for (int mi = 0; mi < 2; mi++) {
					const uint64_t *src = k ? (di ? u->d2h_calls : u->h2d_calls) :
								  (di ? u->d2h_bytes : u->h2d_bytes);

					snprintf(all, sizeof(all), "%s,direction=\"%s\",memory=\"%s\"",
						 lbl, dir[di], mem[mi]);
					put_u(o, all, src[mi]);
				}
			}
		}
	}
}

/* The families in a fixed order; the truncation gauge last, into TAIL_ROOM. */
void apx_mtext_render(struct apx_mtext *o, struct apx_daemon *d, struct apx_mtext_users *users,
		      size_t nconns)
{
	int truncated;

	render_daemon(d, nconns, o);
	render_gpus(d, o);
	render_procs(d, users, o);
	truncated = o->full;
	o->full = 0;
	o->tail = 1;		/* TAIL_ROOM was kept for this */
	family(o, "nvperfd_metrics_truncated", "gauge", "1 when this answer was cut at "
	       "4 MiB: some series are missing.");
	put_u(o, NULL, (uint64_t)truncated);
}
