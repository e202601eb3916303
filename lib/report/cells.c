/*
 * cells.c - the cells of the things the report document shows in several tables (the run, its
 * steady state, a device, a trace file, a class of transfers, a kernel, the kinds of
 * synchronization and of unified-memory events, a rule's check, a stream, an NVTX range, a
 * process's CPU use), each set once by its column key for every table that shows it: the CSV
 * and HTML data tables (build.c, build_gpu.c) and the text and JSON views (build_view*.c).
 * A table takes the keys it has and skips the others (apx_rtable_k*, doc.c); a key means one
 * value wherever it stands. Each function fills the last row of t; its caller adds the row.
 */
#include <stdio.h>
#include <string.h>

#include "report/build.h"

#include "base/banned.h"

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

void apx_rdoc_run_cells(struct apx_rdoc *d, struct apx_rtable *t)
{
	const struct apx_model *m = d->m;

	apx_rtable_ku64(t, "files", m->nfiles);
	apx_rtable_ku64(t, "pid", m->nfiles ? m->files[0].pid : 0);
	apx_rtable_ku64(t, "start_ns", m->run_start_ns);
	apx_rtable_ku64(t, "end_ns", m->run_end_ns);
	apx_rtable_ku64(t, "wall_ns", m->wall_ns);
	apx_rtable_ku64(t, "gpu_busy_ns", m->gpu.busy_ns);
	apx_rtable_ku64(t, "warmup_end_ns", m->warmup_end_ns);
	apx_rtable_ku64(t, "steady_ns", m->steady_ns);
	apx_rtable_knum(t, "gpu_busy_pct", apx_gpu_time_pct(m, m->gpu.busy_ns));
	apx_rtable_ku64(t, "kernels", m->k.n + m->untimed_launches);
	apx_rtable_ku64(t, "kernel_time_ns", m->kernel_total_ns);
	apx_rtable_ku64(t, "distinct_kernels", m->names.n);
	if (m->untimed_launches) {	/* replayed launches: CUPTI gave them no times */
		apx_rtable_ku64(t, "replayed_untimed", m->untimed_launches);
		apx_rtable_ku64(t, "replayed_untimed_no_duration", m->untimed_nodur);
	}
	if (m->nfiles) {
		apx_rtable_kstr(d, t, "host", m->files[0].host);
		apx_rtable_kstr(d, t, "command", m->files[0].argv);
	}
	if (m->capture) {	/* collection limited to capture ranges (cudaProfilerStart/Stop) */
		apx_rtable_ku64(t, "capture_ranges", m->collected.n);
		apx_rtable_ku64(t, "collected_ns", m->collected_ns);
		apx_rtable_ku64(t, "capture_run_ns", m->wall_ns);
		apx_rtable_ku64(t, "capture_edges_ignored", m->capture_bad);
		apx_rtable_ku64(t, "capture_steps_left_out", m->steady.uncollected);
	}
}

/* The step's numbers only when a step was found (the JSON has their columns only then). */
void apx_rdoc_steady_cells(struct apx_rdoc *d, struct apx_rtable *t)
{
	const struct apx_an_steps *st = &d->m->steady;

	apx_rtable_kstr(d, t, "source", apx_step_source_name(st->source));
	apx_rtable_ku64(t, "steps", st->count);
	if (st->source == APX_STEPS_NONE)
		return;
	if (st->source == APX_STEPS_KERNELS)
		apx_rtable_ku64(t, "kernels_per_step", st->period);
	if (st->name[0])
		apx_rtable_kstr(d, t, "range_name", st->name);
	apx_rtable_ku64(t, "first_step_ns", st->first_ns);
	apx_rtable_ku64(t, "last_step_end_ns", st->last_ns);
	apx_rtable_ku64(t, "step_median_ns", st->median_ns);
	apx_rtable_ku64(t, "step_p95_ns", st->p95_ns);
	apx_rtable_ku64(t, "step_min_ns", st->min_ns);
	apx_rtable_ku64(t, "step_max_ns", st->max_ns);
	apx_rtable_knum(t, "gpu_busy_per_step_pct", st->busy_pct);
	apx_rtable_ku64(t, "startup_ns", st->setup_ns);
	apx_rtable_ku64(t, "teardown_ns", st->teardown_ns);
}

void apx_rdoc_device_cells(struct apx_rdoc *d, struct apx_rtable *t,
			   const struct apx_an_device *dv)
{
	apx_rtable_ku64(t, "id", dv->id);
	apx_rtable_kstr(d, t, "name", dv->name);
	apx_rtable_ku64(t, "sm_count", dv->sm_count);
	apx_rtable_ku64(t, "cc_major", dv->cc_major);
	apx_rtable_ku64(t, "cc_minor", dv->cc_minor);
	apx_rtable_ku64(t, "memory_bytes", dv->mem_bytes);
	apx_rtable_ku64(t, "l2_bytes", dv->l2_bytes);
	apx_rtable_ku64(t, "persisting_l2_max_bytes", dv->persist_l2_max);
	apx_rtable_ku64(t, "memory_bandwidth_bps", dv->bw_bps);
	apx_rtable_knum(t, "link_peak_bps", apx_link_peak_bps(d->m, dv->id));
}

void apx_rdoc_file_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_file *f)
{
	uint64_t lost = 0;

	for (unsigned k = 0; k <= APX_LOSS_OTHER; k++)
		lost += f->lost[k];
	apx_rtable_kstr(d, t, "path", f->path);
	apx_rtable_ku64(t, "pid", f->pid);
	apx_rtable_ku64(t, "ppid", f->ppid);
	apx_rtable_kstr(d, t, "command", f->argv);
	apx_rtable_kstr(d, t, "host", f->host);
	apx_rtable_kstr(d, t, "producer", f->producer);
	apx_rtable_kstr(d, t, "producer_version", f->producer_version);
	apx_rtable_kstr(d, t, "level", f->level);
	apx_rtable_kstr(d, t, "status", f->status == APX_READ_COMPLETE ? "complete"
				 : f->status == APX_READ_TRUNCATED ? "truncated" : "damaged");
	apx_rtable_kstr(d, t, "damage", f->damage);
	apx_rtable_kstr(d, t, "degraded", f->degraded);
	apx_rtable_ku64(t, "records", f->records);
	apx_rtable_ku64(t, "records_lost", lost);
	apx_rtable_ku64(t, "records_unreadable", f->records_unreadable);
	apx_rtable_ku64(t, "kernels", f->kernels);
	apx_rtable_ku64(t, "kernel_time_ns", f->kernel_ns);
	apx_rtable_ku64(t, "copies", f->copies);
	apx_rtable_ku64(t, "copy_bytes", f->copy_bytes);
	apx_rtable_ku64(t, "copy_time_ns", f->copy_ns);
}

/* The copies of direction dir from or to host memory of kind k. host_memory is "(device)" for
 * device-to-device and peer copies; host_memory_kind (the JSON's "host_memory") the kind. */
void apx_rdoc_xfer_cells(struct apx_rdoc *d, struct apx_rtable *t, unsigned dir, unsigned k)
{
	const struct apx_model *m = d->m;
	const struct apx_an_xfer *x = &m->xfer[dir][k];
	const int host = dir == APX_COPY_H2D || dir == APX_COPY_D2H;
	const double peak = host && m->ndevices ? apx_link_peak_bps(m, m->devices[0].id) : 0;
	const double rate = x->dur_ns ? (double)x->bytes / (double)x->dur_ns * 1e9 : 0;

	apx_rtable_kstr(d, t, "direction", apx_copy_kind_name(dir));
	apx_rtable_kstr(d, t, "host_memory", dir == APX_COPY_D2D || dir == APX_COPY_P2P
					      ? "(device)" : apx_mem_kind_name(k));
	apx_rtable_kstr(d, t, "host_memory_kind", apx_mem_kind_name(k));
	apx_rtable_ku64(t, "count", x->count);
	apx_rtable_ku64(t, "bytes", x->bytes);
	apx_rtable_ku64(t, "min_bytes", x->min_bytes);
	apx_rtable_ku64(t, "max_bytes", x->max_bytes);
	apx_rtable_ku64(t, "time_ns", x->dur_ns);
	apx_rtable_knum(t, "mean_ns", (double)x->dur_ns / (double)x->count);
	if (x->dur_ns)
		apx_rtable_knum(t, "rate_bytes_per_s", rate);
	apx_rtable_knum(t, "gbps", x->dur_ns ? (double)x->bytes / (double)x->dur_ns : 0);
	if (peak > 0)
		apx_rtable_knum(t, "peak_pct", 100.0 * rate / peak);
	apx_rtable_ku64(t, "small_count", x->small);
	apx_rtable_ku64(t, "synchronous_count", x->sync_count);
}

/* A kernel (its launches under one name). mean_ns is the mean rounded, mean_floor_ns (the
 * JSON's "mean_ns") rounded down; occupancy (0-1) and occupancy_pct only when computed. */
void apx_rdoc_kernel_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_name *nm)
{
	static const char *const grid[3] = { "grid_x", "grid_y", "grid_z" };
	static const char *const block[3] = { "block_x", "block_y", "block_z" };
	uint64_t timed = nm->count - nm->untimed_nodur;
	char name[4096], b[48];

	apx_rtable_kstr(d, t, "name", apx_kernel_display_name(nm, name, sizeof(name)));
	apx_rtable_ktext(d, t, "mangled", nm->text, nm->len);
	apx_rtable_ku64(t, "count", nm->count);
	apx_rtable_ku64(t, "total_ns", nm->total_ns);
	apx_rtable_knum(t, "share_pct", pct((double)nm->total_ns, (double)d->m->kernel_total_ns));
	/* over the launches with a duration: a replayed one without its counter has none */
	apx_rtable_knum(t, "mean_ns", timed ? (double)nm->total_ns / (double)timed : 0);
	apx_rtable_ku64(t, "mean_floor_ns", timed ? nm->total_ns / timed : 0);
	apx_rtable_ku64(t, "min_ns", nm->min_ns);
	apx_rtable_ku64(t, "max_ns", nm->max_ns);
	apx_rtable_ku64(t, "p50_ns", nm->p50_ns);
	apx_rtable_ku64(t, "p95_ns", nm->p95_ns);
	snprintf(b, sizeof(b), "%ux%ux%u", nm->grid[0], nm->grid[1], nm->grid[2]);
	apx_rtable_kstr(d, t, "grid", b);
	snprintf(b, sizeof(b), "%ux%ux%u", nm->block[0], nm->block[1], nm->block[2]);
	apx_rtable_kstr(d, t, "block", b);
	for (unsigned k = 0; k < 3; k++) {
		apx_rtable_ku64(t, grid[k], nm->grid[k]);
		apx_rtable_ku64(t, block[k], nm->block[k]);
	}
	apx_rtable_ku64(t, "registers", nm->regs);
	apx_rtable_ku64(t, "static_smem_bytes", nm->smem_static);
	apx_rtable_ku64(t, "dynamic_smem_bytes", nm->smem_dynamic);
	if (nm->occupancy >= 0) {
		apx_rtable_knum(t, "occupancy", nm->occupancy);
		apx_rtable_knum(t, "occupancy_pct", 100 * nm->occupancy);
	}
}

/* The synchronization kinds, a row each, the implicit syncs of synchronous copies first; a
 * GPU-side wait (stream wait event) has no host-blocked time. */
void apx_rdoc_sync_rows(struct apx_rdoc *d, struct apx_rtable *t)
{
	const struct apx_model *m = d->m;

	if (m->sync_implicit_count && apx_rtable_row(t) == 0) {
		apx_rtable_kstr(d, t, "kind", "implicit (sync copy)");
		apx_rtable_ku64(t, "count", m->sync_implicit_count);
		apx_rtable_ku64(t, "host_blocked_ns", m->sync_implicit_ns);
		apx_rtable_knum(t, "mean_ns", (double)m->sync_implicit_ns /
					      (double)m->sync_implicit_count);
	}
	for (unsigned k = 0; k < APX_SYNC_KIND__COUNT; k++) {
		if (!m->sync_count[k] || apx_rtable_row(t) < 0)
			continue;
		apx_rtable_kstr(d, t, "kind", apx_sync_kind_name(k));
		apx_rtable_ku64(t, "count", m->sync_count[k]);
		if (k != APX_SYNC_KIND_STREAM_WAIT_EVENT)
			apx_rtable_ku64(t, "host_blocked_ns", m->sync_ns[k]);
		apx_rtable_knum(t, "mean_ns", (double)m->sync_ns[k] / (double)m->sync_count[k]);
	}
}

/* The unified-memory events, a row a kind that happened. */
void apx_rdoc_uvm_rows(struct apx_rdoc *d, struct apx_rtable *t)
{
	static const char *const kinds[] = { "", "CPU page faults", "GPU page faults",
					     "migrations host->device", "migrations device->host",
					     "migrations device->device", "thrashing", "throttling",
					     "remote maps" };
	const struct apx_model *m = d->m;

	for (unsigned k = 1; k <= APX_UVM_REMOTE_MAP; k++) {
		if (!m->uvm_count[k] || apx_rtable_row(t) < 0)
			continue;
		apx_rtable_kstr(d, t, "kind", kinds[k]);
		apx_rtable_ku64(t, "count", m->uvm_count[k]);
		apx_rtable_ku64(t, "bytes", m->uvm_bytes[k]);
	}
}

/* A rule's check: its status as the JSON schema words it (docs/report-schema.md, "check"). */
void apx_rdoc_check_cells(struct apx_rdoc *d, struct apx_rtable *t,
			  const struct apx_rule_result *r)
{
	apx_rtable_kstr(d, t, "rule", r->rule);
	apx_rtable_kstr(d, t, "title", r->title);
	apx_rtable_kstr(d, t, "status", r->status == APX_RULE_FIRED ? "finding"
				 : r->status == APX_RULE_CLEAN ? "ok"
				 : r->status == APX_RULE_MINOR ? "minor"
				 : r->status == APX_RULE_STARTUP ? "startup" : "not_measured");
	apx_rtable_kstr(d, t, "why", r->why);
}

void apx_rdoc_stream_cells(struct apx_rtable *t, const struct apx_an_stream *s)
{
	apx_rtable_ku64(t, "device", s->device);
	apx_rtable_ku64(t, "stream", s->id);
	apx_rtable_ku64(t, "kernels", s->kernels);
	apx_rtable_ku64(t, "copies", s->copies);
	apx_rtable_ku64(t, "busy_ns", s->busy_ns);
}

void apx_rdoc_range_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_range *r)
{
	apx_rtable_ktext(d, t, "name", r->name, r->name_len);
	apx_rtable_ku64(t, "count", r->count);
	apx_rtable_ku64(t, "wall_ns", r->wall_ns);
	apx_rtable_ku64(t, "gpu_ns", r->gpu_ns);
	apx_rtable_knum(t, "gpu_pct", pct((double)r->gpu_ns, (double)r->wall_ns));
}

/* A process's CPU use from its last sample: only the pid without samples (the rest n/a). */
void apx_rdoc_cpu_cells(struct apx_rtable *t, const struct apx_an_file *f)
{
	const struct apx_an_cpu *last = &f->cpu_last;
	double wall;

	apx_rtable_ku64(t, "pid", f->pid);
	if (!f->has_cpu)
		return;
	wall = (double)(last->ts - (f->first_ns != UINT64_MAX ? f->first_ns : last->ts));
	apx_rtable_knum(t, "wall_ns", wall);
	apx_rtable_ku64(t, "user_ns", last->utime);
	apx_rtable_ku64(t, "system_ns", last->stime);
	apx_rtable_knum(t, "cpu_pct", pct((double)(last->utime + last->stime), wall));
	apx_rtable_ku64(t, "voluntary_switches", last->vol);
	apx_rtable_ku64(t, "involuntary_switches", last->invol);
	apx_rtable_ku64(t, "threads_max", f->threads_max);
	apx_rtable_ku64(t, "peak_rss_bytes", last->peak);
}
