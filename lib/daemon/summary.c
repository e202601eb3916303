/*
 * summary.c - the per-process summary file nvperfd leaves when a tracked process ends: an .apx
 * file (include/apx/format.h) with the header, the process, its threads, its /proc time series,
 * its findings and a few key/values (with a big problem, nvperfd.next: the `apx attach`
 * command that looks closer), in STATE_DIR/UID/, owned by that user, mode 0600. The
 * folder is bounded in count and bytes (oldest removed first) and nothing here follows a
 * symlink: the state folder and the user folder are opened O_NOFOLLOW and every file operation
 * is relative to that fd. Called by tracker.c on the event loop; non-logging.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <apx/format.h>
#include <apx/version.h>

#include "analysis/procobs.h"
#include "daemon/daemon.h"
#include "daemon/summary_index.h"

#include "base/banned.h"

#define REC_EST_BYTES 48		/* upper estimate of one encoded sample */
#define FIXED_EST_BYTES 16384		/* header, process, strings, findings, kv */

static gid_t user_gid(uid_t uid, char *name, size_t cap)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res) {
		if (name)
			snprintf(name, cap, "%s", res->pw_name);
		return res->pw_gid;
	}
	if (name)
		snprintf(name, cap, "%u", (unsigned)uid);
	return (gid_t)uid;
}

int apx_state_dir_open(struct apx_daemon *d, uid_t uid, int create)
{
	char name[16];
	struct stat st;
	int base, fd, made = 0, r;

	base = open(d->conf.state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (base < 0 && errno == ENOENT && create) {
		if (mkdir(d->conf.state_dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		base = open(d->conf.state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (base < 0)
		return -errno;
	/* the state folder must be ours and not writable by others (no planted entries) */
	if (fstat(base, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 0022)) {
		close(base);
		return -EPERM;
	}
	snprintf(name, sizeof(name), "%u", (unsigned)uid);
	if (create) {
		if (mkdirat(base, name, 0700) == 0)
			made = 1;
		else if (errno != EEXIST) {
			r = -errno;
			close(base);
			return r;
		}
	}
	fd = openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = fd < 0 ? -errno : 0;
	close(base);
	if (fd < 0)
		return r;
	if (made) {
		if (fchown(fd, uid, user_gid(uid, NULL, 0)) < 0 || fchmod(fd, 0700) < 0) {
			r = -errno;
			close(fd);
			return r;
		}
	} else if (fstat(fd, &st) < 0 || st.st_uid != uid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static void set_kv(struct apx_writer *w, const char *k, const char *val)
{
	struct apx_rec r;

	apx_rec_init(&r, APX_REC_KV);
	apx_rec_set_str(&r, APX_KV_KEY, k);
	apx_rec_set_str(&r, APX_KV_VALUE, val);
	(void)apx_writer_add(w, &r);
}

static void set_kv_u64(struct apx_writer *w, const char *k, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	set_kv(w, k, buf);
}

/* What the uprobes and NVML saw: CONFIG records (L2 limit, access-policy windows) and
 * nvperfd.* key/values. A view that was not available says why instead of giving zeros. */
static int write_gpu(struct apx_daemon *d, struct apx_writer *w, struct apx_proc *p,
		     size_t max_series_recs)
{
	const struct apx_up_proc_state *u = p->up;
	const struct apx_gpu_proc *g = &p->gpu;
	struct apx_rec r;
	char buf[300];
	int rc;

	if (!d->up)
		snprintf(buf, sizeof(buf), "unavailable: %s", d->up_why);
	else if (!u)
		snprintf(buf, sizeof(buf), "%s", p->cuda ? "not attached (libcuda not mapped or "
			 "attach failed; see the log)" : "not attached (no CUDA seen)");
	else if (u->state == APX_UPS_DETACHED_RATE)
		snprintf(buf, sizeof(buf), "detached: %" PRIu64 " calls within 1 s, over "
			 "uprobe_max_rate %" PRIu64, u->over_rate_calls, p->cfg.uprobe_max_rate);
	else
		snprintf(buf, sizeof(buf), "attached");
	set_kv(w, "nvperfd.uprobes", buf);
	if (u) {
		static const char *const side[2] = { "pageable", "pinned" };

		set_kv(w, "nvperfd.uprobes.libcuda", u->path);
		set_kv_u64(w, "nvperfd.uprobes.calls", u->calls);
		set_kv_u64(w, "nvperfd.uprobes.lost", u->lost);
		if (u->state == APX_UPS_DETACHED_RATE)
			set_kv_u64(w, "nvperfd.uprobes.detached_ns", u->detached_ns);
		for (int i = 0; i < 2; i++) {
			char k[64];

			snprintf(k, sizeof(k), "nvperfd.h2d.%s.calls", side[i]);
			set_kv_u64(w, k, u->h2d_calls[i]);
			snprintf(k, sizeof(k), "nvperfd.h2d.%s.bytes", side[i]);
			set_kv_u64(w, k, u->h2d_bytes[i]);
			snprintf(k, sizeof(k), "nvperfd.h2d.%s.call_ns", side[i]);
			if (u->copy_time)
				set_kv_u64(w, k, u->h2d_ns[i]);
			else
				set_kv(w, k, "n/a (uprobe_copy_time = no)");
			snprintf(k, sizeof(k), "nvperfd.d2h.%s.calls", side[i]);
			set_kv_u64(w, k, u->d2h_calls[i]);
			snprintf(k, sizeof(k), "nvperfd.d2h.%s.bytes", side[i]);
			set_kv_u64(w, k, u->d2h_bytes[i]);
			snprintf(k, sizeof(k), "nvperfd.d2h.%s.call_ns", side[i]);
			if (u->copy_time)
				set_kv_u64(w, k, u->d2h_ns[i]);
			else
				set_kv(w, k, "n/a (uprobe_copy_time = no)");
		}
		set_kv_u64(w, "nvperfd.pinned.calls", u->pin_calls);
		set_kv_u64(w, "nvperfd.pinned.bytes", u->pin_bytes);
		set_kv_u64(w, "nvperfd.pinned.failed", u->pin_failed);
		set_kv_u64(w, "nvperfd.pinned.ranges_untracked", u->pins_dropped);
		set_kv_u64(w, "nvperfd.config.dropped", u->cfg_dropped);
		for (size_t i = 0; i < u->ncfg; i++) {
			const struct apx_up_cfg_event *e = &u->cfg[i];

			apx_rec_init(&r, APX_REC_CONFIG);
			r.v[APX_CONFIG_TS_NS] = e->ts_ns;
			r.v[APX_CONFIG_KIND] = e->kind;
			r.v[APX_CONFIG_TID] = e->tid;
			if (e->kind == APX_CONFIG_L2_PERSIST_LIMIT)
				r.v[APX_CONFIG_VALUE] = e->value;
			if (e->kind == APX_CONFIG_APW_STREAM) {
				r.v[APX_CONFIG_STREAM] = e->stream;
				r.v[APX_CONFIG_APW_BASE] = e->base;
				r.v[APX_CONFIG_APW_BYTES] = e->bytes;
				r.v[APX_CONFIG_APW_HIT_PPM] = e->hit_ppm;
				r.v[APX_CONFIG_APW_HIT_PROP] = e->hit_prop;
				r.v[APX_CONFIG_APW_MISS_PROP] = e->miss_prop;
			}
			if ((rc = apx_writer_add(w, &r)) < 0)
				return rc;
		}
	}
	if (!d->nvml) {
		snprintf(buf, sizeof(buf), "unavailable: %s", d->nvml_why);
		set_kv(w, "nvperfd.nvml", buf);
		return 0;
	}
	set_kv(w, "nvperfd.nvml", g->gpu_seen_samples ? "yes" : apx_nvml_foreign_pids(d->nvml) ?
	       "n/a (NVML's process ids are of another PID namespace: nvperfd in a container?)" :
	       "process not seen on a GPU");
	if (!g->gpu_seen_samples)
		return 0;
	/* the time series: METRIC records, only the values the driver gave */
	{
		static const char *const names[] = { "gpu.util_pct", "gpu.mem_bytes",
						      "gpu.sm_util_pct", "gpm.sm_util_pct",
						      "gpm.dram_bw_util_pct" };
		static const char *const units[] = { "%", "bytes", "%", "%", "%" };
		uint32_t nid[5], uid[5], gstep = 1;

		for (int k = 0; k < 5; k++)
			if ((rc = apx_writer_intern(w, names[k], strlen(names[k]), &nid[k])) < 0 ||
			    (rc = apx_writer_intern(w, units[k], strlen(units[k]), &uid[k])) < 0)
				return rc;
		if (!max_series_recs)
			gstep = g->nseries + 1;
		else if (5 * (size_t)g->nseries > max_series_recs)
			gstep = (uint32_t)((5 * (size_t)g->nseries + max_series_recs - 1) /
					   max_series_recs);
		for (uint32_t i = 0; i < g->nseries; i += gstep) {
			const struct apx_gpu_sample *s = &g->series[i];
			double v[5] = { s->dev_util_pct, (double)s->mem_bytes, s->sm_util_pct,
					s->gpm_sm_util, s->gpm_dram_util };
			int ok[5] = { !!(s->valid & APX_GPU_UTIL), !!(s->valid & APX_GPU_MEM),
				      s->sm_valid, !!(s->valid & APX_GPU_GPM),
				      !!(s->valid & APX_GPU_GPM) };

			for (int k = 0; k < 5; k++) {
				if (!ok[k])
					continue;
				apx_rec_init(&r, APX_REC_METRIC);
				r.v[APX_METRIC_TS_NS] = s->ts_ns;
				r.v[APX_METRIC_NAME] = nid[k];
				r.v[APX_METRIC_UNIT] = uid[k];
				r.v[APX_METRIC_DEVICE] = (uint64_t)g->device;
				r.v[APX_METRIC_PID] = k == 0 || k >= 3 ? 0 : (uint64_t)p->pid;
				apx_rec_set_f64(&r, APX_METRIC_VALUE, v[k]);
				if ((rc = apx_writer_add(w, &r)) < 0)
					return rc;
			}
		}
	}
	set_kv_u64(w, "nvperfd.gpu.device", (uint64_t)g->device);
	set_kv_u64(w, "nvperfd.gpu.samples", g->gpu_seen_samples);
	set_kv_u64(w, "nvperfd.gpu.util_samples", g->gpu_util_samples);	/* idle share: of these */
	set_kv_u64(w, "nvperfd.gpu.idle_samples", g->gpu_idle_samples);
	if (g->valid & APX_GPU_MEM)
		set_kv_u64(w, "nvperfd.gpu.mem_peak_bytes", g->mem_peak_bytes);
	else
		set_kv(w, "nvperfd.gpu.mem_peak_bytes", "n/a (not reported by the driver)");
	if (g->valid & APX_GPU_UTIL) {
		snprintf(buf, sizeof(buf), "%.1f", (double)g->sm_util_sum / (double)g->util_samples);
		set_kv(w, "nvperfd.gpu.sm_util_pct", buf);
	} else {
		set_kv(w, "nvperfd.gpu.sm_util_pct", "n/a (unsupported: MIG, or no samples)");
	}
	if (g->gpm_samples) {
		for (size_t i = 0; i < APX_GPM_METRICS; i++) {
			char k[64];

			snprintf(k, sizeof(k), "nvperfd.gpm.%s", apx_gpm_metric_name(i));
			snprintf(buf, sizeof(buf), "%.2f", g->gpm_sum[i] / (double)g->gpm_samples);
			set_kv(w, k, buf);
		}
		snprintf(buf, sizeof(buf), "device-wide, over %u samples where the process was the "
			 "only one on its GPU", g->sole_samples);
		set_kv(w, "nvperfd.gpm", buf);
	} else {
		set_kv(w, "nvperfd.gpm", "n/a (unsupported, or the process shared its GPU)");
	}
	return 0;
}

static int write_records(struct apx_daemon *d, struct apx_writer *w, struct apx_proc *p,
			 uint64_t end_ns, int exit_st, const struct apx_finding *f, size_t nf)
{
	const struct apx_conf *c = &p->cfg;
	uint64_t budget = c->max_summary_bytes > FIXED_EST_BYTES ?
			  c->max_summary_bytes - FIXED_EST_BYTES : 0;
	size_t max_recs = (size_t)(budget / REC_EST_BYTES), nthreads = p->nthreads, step = 1;
	size_t gpu_recs;
	struct apx_rec r;
	char buf[64], next[APX_NEXT_CMD_MAX];
	int rc;

	if (max_recs < 64)
		max_recs = 64;
	/* the GPU series (at most 5 x APX_GPU_SERIES_MAX records) gets at most half the budget */
	gpu_recs = 5 * (size_t)p->gpu.nseries;
	if (gpu_recs > max_recs / 2)
		gpu_recs = max_recs / 2;
	max_recs -= gpu_recs;
	if (nthreads > max_recs / 4)
		nthreads = max_recs / 4;
	if (p->nsamples > max_recs - 2 * nthreads)
		step = (p->nsamples + (max_recs - 2 * nthreads) - 1) / (max_recs - 2 * nthreads);

	apx_rec_init(&r, APX_REC_PROCESS);
	r.v[APX_PROCESS_PID] = (uint64_t)p->pid;
	r.v[APX_PROCESS_PPID] = (uint64_t)p->ppid;
	r.v[APX_PROCESS_START_NS] = p->start_ns;
	r.v[APX_PROCESS_END_NS] = end_ns;
	apx_rec_set_str(&r, APX_PROCESS_COMM, p->comm);
	apx_rec_set_bytes(&r, APX_PROCESS_ARGV, p->argv, p->argv_len);
	r.v[APX_PROCESS_UID] = p->uid;
	apx_rec_set_i64(&r, APX_PROCESS_EXIT_STATUS, exit_st);
	r.v[APX_PROCESS_USES_CUDA] = p->cuda ? 1 : 0;
	rc = apx_writer_add(w, &r);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < nthreads; i++) {
		const struct apx_thread *t = &p->threads[i];

		apx_rec_init(&r, APX_REC_THREAD);
		r.v[APX_THREAD_PID] = (uint64_t)p->pid;
		r.v[APX_THREAD_TID] = (uint64_t)t->tid;
		apx_rec_set_str(&r, APX_THREAD_NAME, t->name);
		r.v[APX_THREAD_START_NS] = t->first_ns;
		r.v[APX_THREAD_END_NS] = t->gone ? t->last_ns : end_ns;
		if ((rc = apx_writer_add(w, &r)) < 0)
			return rc;
	}
	for (size_t i = 0; i < p->nsamples; i += step) {
		const struct apx_sample *s = &p->samples[i];

		apx_rec_init(&r, APX_REC_CPU);
		r.v[APX_CPU_TS_NS] = s->ts_ns;
		r.v[APX_CPU_PID] = (uint64_t)p->pid;
		if (c->metrics & APX_METRIC_CPU) {
			r.v[APX_CPU_UTIME_NS] = s->utime_ns;
			r.v[APX_CPU_STIME_NS] = s->stime_ns;
		}
		if (c->metrics & APX_METRIC_CSW) {
			r.v[APX_CPU_VOL_CSW] = s->vol_csw;
			r.v[APX_CPU_INVOL_CSW] = s->invol_csw;
		}
		if (c->metrics & APX_METRIC_RSS) {
			r.v[APX_CPU_RSS_BYTES] = s->rss_bytes;
			r.v[APX_CPU_RSS_PEAK_BYTES] = s->rss_peak_bytes;
		}
		if (c->metrics & APX_METRIC_THREADS)
			r.v[APX_CPU_THREADS] = s->threads;
		if (c->metrics & APX_METRIC_STATE)
			r.v[APX_CPU_STATE] = (uint64_t)(unsigned char)s->state;
		if (c->metrics & APX_METRIC_FAULTS) {
			r.v[APX_CPU_MINFLT] = s->minflt;
			r.v[APX_CPU_MAJFLT] = s->majflt;
		}
		if ((rc = apx_writer_add(w, &r)) < 0)
			return rc;
	}
	/* per-thread totals: one CPU record per thread at its last sample */
	for (size_t i = 0; i < nthreads && (c->metrics & APX_METRIC_THREADS); i++) {
		const struct apx_thread *t = &p->threads[i];

		apx_rec_init(&r, APX_REC_CPU);
		r.v[APX_CPU_TS_NS] = t->last_ns;
		r.v[APX_CPU_PID] = (uint64_t)p->pid;
		r.v[APX_CPU_TID] = (uint64_t)t->tid;
		r.v[APX_CPU_UTIME_NS] = t->utime_ns;
		r.v[APX_CPU_STIME_NS] = t->stime_ns;
		r.v[APX_CPU_VOL_CSW] = t->vol_csw;
		r.v[APX_CPU_INVOL_CSW] = t->invol_csw;
		if ((rc = apx_writer_add(w, &r)) < 0)
			return rc;
	}
	for (size_t i = 0; i < nf; i++) {
		apx_rec_init(&r, APX_REC_FINDING);
		r.v[APX_FINDING_TS_NS] = end_ns;
		apx_rec_set_str(&r, APX_FINDING_RULE, f[i].rule);
		r.v[APX_FINDING_SEVERITY] = (uint64_t)f[i].severity;
		r.v[APX_FINDING_CONFIDENCE_PCT] = (uint64_t)f[i].confidence_pct;
		if (f[i].saving_estimated) {	/* only a rule that estimates one (pageable-copy) */
			r.v[APX_FINDING_SAVING_NS] = (uint64_t)f[i].saving_ns;
			r.v[APX_FINDING_SAVING_PPM] = (uint64_t)(f[i].saving_pct * 1e4);
		}
		apx_rec_set_str(&r, APX_FINDING_TITLE, f[i].title);
		if (f[i].evidence[0])
			apx_rec_set_str(&r, APX_FINDING_EVIDENCE, f[i].evidence);
		if (f[i].fix[0])
			apx_rec_set_str(&r, APX_FINDING_FIX, f[i].fix);
		r.v[APX_FINDING_PID] = (uint64_t)p->pid;
		if ((rc = apx_writer_add(w, &r)) < 0)
			return rc;
	}
	if ((rc = write_gpu(d, w, p, gpu_recs)) < 0)
		return rc;
	apx_conf_format(c, apx_conf_key_find("metrics", 7), buf, sizeof(buf));
	set_kv(w, "nvperfd.metrics", buf);
	snprintf(buf, sizeof(buf), "%" PRIu64, d->conf.sample_period_ns * p->stride * step);
	set_kv(w, "nvperfd.sample_period_ns", buf);
	snprintf(buf, sizeof(buf), "%" PRIu64, p->peak_rss);
	set_kv(w, "nvperfd.rss_peak_bytes", buf);
	snprintf(buf, sizeof(buf), "%zu", p->nthreads);
	set_kv(w, "nvperfd.threads_seen", buf);
	set_kv(w, "nvperfd.torch", p->torch ? "yes" : "unknown");
	set_kv(w, "nvperfd.cuda", p->cuda ? "yes" : "not seen");
	/* a big problem: the command that looks closer (only the pid in it) */
	if (apx_procobs_next_cmd(f, nf, (int)p->pid, p->cuda, next, sizeof(next)) > 0)
		set_kv(w, "nvperfd.next", next);
	return 0;
}

int apx_summary_write(struct apx_daemon *d, struct apx_proc *p, int exit_code, int have_code,
		      const struct apx_finding *f, size_t nf, char *ret_path, size_t cap)
{
	struct apx_rec h;
	struct apx_writer *w = NULL;
	struct utsname un;
	char user[64], host[256] = "", kern[512] = "", tmp[64], name[128], comm[APX_COMM_MAX];
	uint64_t wall = apx_wall_ns(), mono = apx_now_ns(), removed = 0;
	time_t t = (time_t)((p->start_ns + (uint64_t)(int64_t)(wall - mono)) / 1000000000ull);
	struct tm tm;
	gid_t gid = user_gid(p->uid, user, sizeof(user));
	int dfd, fd, r, exit_st;

	exit_st = !have_code ? 0 : (exit_code & 0x7f) ? -(exit_code & 0x7f) : (exit_code >> 8) & 0xff;
	dfd = apx_state_dir_open(d, p->uid, 1);
	if (dfd < 0)
		return dfd;
	/* before the .part file changes the folder: list it only when it is not as we left it */
	(void)apx_summary_index_begin(d, p->uid, dfd);
	/* a name safe to show: start time, pid, comm reduced to [A-Za-z0-9._-] */
	for (size_t i = 0; i < sizeof(comm); i++) {
		char ch = p->comm[i];

		comm[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_' || !ch ?
			  ch : '_';
		if (!ch)
			break;
	}
	comm[sizeof(comm) - 1] = 0;
	gmtime_r(&t, &tm);
	snprintf(name, sizeof(name), "%04d%02d%02dT%02d%02d%02dZ-%d-%s", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)p->pid, comm);
	snprintf(tmp, sizeof(tmp), ".%d.part", (int)p->pid);
	(void)unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (fchown(fd, p->uid, gid) < 0 || fchmod(fd, 0600) < 0) {
		r = -errno;
		close(fd);
		goto fail;
	}
	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "nvperfd");
	apx_rec_set_str(&h, APX_HEADER_PRODUCER_VERSION, APX_VERSION);
	h.v[APX_HEADER_CREATED_NS] = wall;
	(void)gethostname(host, sizeof(host) - 1);
	apx_rec_set_str(&h, APX_HEADER_HOSTNAME, host);
	if (uname(&un) == 0)
		snprintf(kern, sizeof(kern), "%s %s %s %s", un.sysname, un.release, un.version,
			 un.machine);
	apx_rec_set_str(&h, APX_HEADER_KERNEL, kern);
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	apx_rec_set_i64(&h, APX_HEADER_REALTIME_OFFSET_NS, (int64_t)(wall - mono));
	apx_rec_set_i64(&h, APX_HEADER_BOOTTIME_OFFSET_NS, d->boot_minus_mono_ns);
	h.v[APX_HEADER_PID] = (uint64_t)p->pid;
	h.v[APX_HEADER_PPID] = (uint64_t)p->ppid;
	apx_rec_set_bytes(&h, APX_HEADER_ARGV, p->argv, p->argv_len);
	apx_rec_set_str(&h, APX_HEADER_CWD, p->cwd);
	h.v[APX_HEADER_UID] = p->uid;
	apx_rec_set_str(&h, APX_HEADER_USER, user);
	apx_rec_set_i64(&h, APX_HEADER_RANK, -1);
	h.v[APX_HEADER_START_NS] = p->start_ns;
	r = apx_writer_open_fd(fd, &h, NULL, &w);	/* owns fd from here */
	if (r < 0)
		goto fail;
	r = write_records(d, w, p, mono, exit_st, f, nf);
	if (r < 0) {
		apx_writer_abandon(w);
		goto fail;
	}
	r = apx_writer_close(w, mono, 0);
	if (r < 0)
		goto fail;
	for (int i = 0; i < 100; i++) {
		char final[160];

		if (i)
			snprintf(final, sizeof(final), "%s-%d.apx", name, i);
		else
			snprintf(final, sizeof(final), "%s.apx", name);
		r = renameat2(dfd, tmp, dfd, final, RENAME_NOREPLACE);
		if (r == 0) {
			struct stat st;

			snprintf(ret_path, cap, "%s/%u/%s", d->conf.state_dir, (unsigned)p->uid, final);
			if (fstatat(dfd, final, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    apx_summary_index_commit(d, p->uid, dfd, final, (uint64_t)st.st_size,
						     (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
						     (uint64_t)st.st_mtim.tv_nsec, &removed) == 0)
				d->st.summaries_pruned += removed;
			break;
		}
		r = -errno;
		if (r != -EEXIST)
			goto fail;
	}
	if (r < 0)
		goto fail;
	goto out;
fail:
	(void)unlinkat(dfd, tmp, 0);
out:
	close(dfd);
	return r;
}
