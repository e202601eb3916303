/*
 * build.h - the section builders of the report document (private to lib/report): build.c
 * calls one per section asked for; each adds its tables and notes to d->sec[section].
 */
#ifndef APX_REPORT_BUILD_H
#define APX_REPORT_BUILD_H

#include "report/doc.h"

/* cells.c: a thing's cells by column key, for every table that shows it (the last row of t) */
void apx_rdoc_run_cells(struct apx_rdoc *d, struct apx_rtable *t);
void apx_rdoc_steady_cells(struct apx_rdoc *d, struct apx_rtable *t);
void apx_rdoc_device_cells(struct apx_rdoc *d, struct apx_rtable *t,
			   const struct apx_an_device *dv);
void apx_rdoc_file_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_file *f);
void apx_rdoc_xfer_cells(struct apx_rdoc *d, struct apx_rtable *t, unsigned dir, unsigned k);
void apx_rdoc_kernel_cells(struct apx_rdoc *d, struct apx_rtable *t,
			   const struct apx_an_name *nm);
void apx_rdoc_sync_rows(struct apx_rdoc *d, struct apx_rtable *t);	/* adds the rows */
void apx_rdoc_uvm_rows(struct apx_rdoc *d, struct apx_rtable *t);	/* adds the rows */
void apx_rdoc_check_cells(struct apx_rdoc *d, struct apx_rtable *t,
			  const struct apx_rule_result *r);
void apx_rdoc_stream_cells(struct apx_rtable *t, const struct apx_an_stream *s);
void apx_rdoc_range_cells(struct apx_rdoc *d, struct apx_rtable *t, const struct apx_an_range *r);
void apx_rdoc_cpu_cells(struct apx_rtable *t, const struct apx_an_file *f);

/* build_gpu.c */
void apx_rdoc_build_kernels(struct apx_rdoc *d);
void apx_rdoc_build_transfers(struct apx_rdoc *d);
void apx_rdoc_build_sync(struct apx_rdoc *d);
void apx_rdoc_build_idle(struct apx_rdoc *d);
void apx_rdoc_build_memory(struct apx_rdoc *d);
void apx_rdoc_build_streams(struct apx_rdoc *d);
void apx_rdoc_build_nvtx(struct apx_rdoc *d);
void apx_rdoc_build_l2(struct apx_rdoc *d);
void apx_rdoc_build_uvm(struct apx_rdoc *d);
void apx_rdoc_build_cpu(struct apx_rdoc *d);
/* build_metrics.c */
void apx_rdoc_build_metrics(struct apx_rdoc *d);
/* build_nic.c: the metrics section's "nic" table (apx analyze --nic-metrics), called by it */
void apx_rdoc_build_nic(struct apx_rdoc *d);
void apx_rdoc_nic_json(struct apx_rdoc *d);
void apx_rdoc_nic_text(struct apx_rdoc *d);
const struct apx_rtable *apx_rdoc_nic_table(const struct apx_rdoc *d);

/* build_view_gpu.c: the text and JSON views of the GPU sections */
void apx_rdoc_view_kernels(struct apx_rdoc *d);
void apx_rdoc_view_transfers(struct apx_rdoc *d);
void apx_rdoc_view_sync(struct apx_rdoc *d);
void apx_rdoc_view_metrics(struct apx_rdoc *d);
void apx_rdoc_view_memory(struct apx_rdoc *d);
void apx_rdoc_view_streams(struct apx_rdoc *d);
void apx_rdoc_view_nvtx(struct apx_rdoc *d);
void apx_rdoc_view_l2(struct apx_rdoc *d);
void apx_rdoc_view_uvm(struct apx_rdoc *d);
void apx_rdoc_view_cpu(struct apx_rdoc *d);

/* build_view_idle.c: the idle section's text, its JSON "idle" and "timelines" */
void apx_rdoc_view_idle(struct apx_rdoc *d);
void apx_rdoc_view_timelines(struct apx_rdoc *d);

/* build_stacks.c: the sections from the Python stacks (views of every format), and the line
 * saying what the store dropped of the stack records (none: nothing) */
void apx_rdoc_view_hotspots(struct apx_rdoc *d);
void apx_rdoc_view_idle_stacks(struct apx_rdoc *d);
void apx_rdoc_view_threads(struct apx_rdoc *d);
void apx_rdoc_stack_loss_line(struct apx_rdoc *d, unsigned s, unsigned indent);
/* "data.py:12 tokenize": a line of m->lines for text cells (the emitters escape it) */
void apx_rdoc_line_label(const struct apx_model *m, uint32_t line, char *buf, size_t cap);
/* build_oswaits.c: the threads section's OS waits (JSON "os_waits", "os_long_waits") */
void apx_rdoc_view_oswaits(struct apx_rdoc *d);

/* build_ranks.c: the sections of several ranks (analysis/ranks.h), every format's */
void apx_rdoc_view_ranks(struct apx_rdoc *d);
void apx_rdoc_view_collectives(struct apx_rdoc *d);

/* build_p2p.c: the transfers section's peer-to-peer copies by device pair (analysis/p2p.h),
 * every format's; nothing without them */
void apx_rdoc_view_p2p(struct apx_rdoc *d);

/* build_heap.c: the heap section (analysis/heap.h), every format's */
void apx_rdoc_view_heap(struct apx_rdoc *d);

/* build_view.c: the text and JSON views of every section asked for */
void apx_rdoc_build_views(struct apx_rdoc *d);
/* build_view_nvperfd.c: its section's text, and its "GPU (observed)" lines in section s */
void apx_rdoc_view_nvperfd(struct apx_rdoc *d);
void apx_rdoc_nvperfd_summary(struct apx_rdoc *d, unsigned s);

/* build_allocs.c: the memory section's largest and failed allocations with their lines
 * (allocs.c): the tables of every format and the JSON members memory.largest_allocations,
 * memory.failed_allocations (inside "memory", after over_time); the text lines */
void apx_rdoc_allocs_json(struct apx_rdoc *d);
void apx_rdoc_allocs_text(struct apx_rdoc *d);

/* build_pymem.c: the memory section's samples from apx analyze's Python hooks (torch.* and
 * process.* METRIC series): JSON memory.over_time (after the "memory" member), the text lines,
 * the HTML plots (build_series.c); apx_rdoc_pymem_is: a series of theirs (not a device metric) */
struct apx_es_text;
int apx_rdoc_pymem_is(const struct apx_es_text *name);
void apx_rdoc_pymem_json(struct apx_rdoc *d);
void apx_rdoc_pymem_text(struct apx_rdoc *d);
void apx_rdoc_pymem_series(struct apx_rdoc *d, const struct apx_store *st);

/* qsort order of kernel names (const struct apx_an_name *): by total time, largest first,
 * ties by name (build_gpu.c; the top-kernels plot and the kernels table). */
int apx_rb_cmp_kernel_total(const void *a, const void *b);

#endif
