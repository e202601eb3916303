/*
 * status_view.h - the client's model of a `status` answer from nvperfd (tracked processes,
 * recent findings, the GPUs NVML sees), with sorting and the two renderings shared by
 * `apx status` and `apx top`: a table that fits the terminal width (a device line per GPU
 * above it), and JSON (schema version 1, docs/nvperfd.md). Values the daemon does not know
 * (sent as "-", or not sent by an older daemon) print as "-" in the table and null in JSON.
 * Non-logging.
 */
#ifndef APX_DAEMON_STATUS_VIEW_H
#define APX_DAEMON_STATUS_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <apx/ctl_proto.h>

struct apx_sv_proc {
	uint64_t n[APX_CTL_PROC__COUNT];	/* numeric fields (0 when not known) */
	const char *s[APX_CTL_PROC__COUNT];	/* every field as sent (into apx_sv.buf); "-"
						 * for one the daemon did not send */
	int nfields;				/* fields the daemon sent (an older one: fewer) */
};

struct apx_sv_finding {
	uint64_t n[APX_CTL_FINDING__COUNT];
	const char *s[APX_CTL_FINDING__COUNT];
};

struct apx_sv_gpu {			/* a "gpu" line: one device, at the last sample */
	uint64_t n[APX_CTL_GPU__COUNT];
	const char *s[APX_CTL_GPU__COUNT];
};

struct apx_sv {
	char *buf;
	struct apx_sv_proc *procs;
	size_t nprocs;
	struct apx_sv_finding *findings;
	size_t nfindings;
	struct apx_sv_gpu *gpus;		/* none from a daemon without NVML, or older */
	size_t ngpus;
};

enum apx_sv_sort { APX_SV_SORT_CPU, APX_SV_SORT_RSS, APX_SV_SORT_PID, APX_SV_SORT_AGE,
		   APX_SV_SORT_CSW, APX_SV_SORT_GPU, APX_SV_SORT__COUNT };

/* Ask the daemon at sock for its status. -errno; errbuf says why on -EPROTO. */
int apx_sv_fetch(const char *sock, struct apx_sv *ret, char *errbuf, size_t errcap);
/* Parse the lines of a status answer (after "ok"); takes buf (malloc'ed) in all cases, and
 * points into it. 0 or -ENOMEM. */
int apx_sv_parse(char *buf, struct apx_sv *ret);
void apx_sv_release(struct apx_sv *sv);
/* Largest first (pid: smallest first); gpu = GPU memory now, processes without it last. */
void apx_sv_sort(struct apx_sv *sv, enum apx_sv_sort key);
/* "cpu", "rss", "pid", "age", "csw", "gpu" -> enum apx_sv_sort; -1 when unknown. */
int apx_sv_sort_parse(const char *s);
const char *apx_sv_sort_name(enum apx_sv_sort key);
/* Width for a table on fd: the terminal's, else $COLUMNS, else 100. */
unsigned apx_sv_width(int fd);
/* One line per GPU, then the table with its header line; at most max_rows processes (0 =
 * all). No line is wider than width (at least 30): columns drop in a fixed order (see
 * status_view.c), PID, USER and COMMAND stay. */
void apx_sv_print_table(FILE *f, const struct apx_sv *sv, unsigned width, size_t max_rows);
void apx_sv_print_json(FILE *f, const struct apx_sv *sv);
/* "1.5 GiB" style */
void apx_fmt_bytes(char *buf, size_t cap, uint64_t b);
/* "3h04m" style */
void apx_fmt_age(char *buf, size_t cap, uint64_t ms);

#endif
