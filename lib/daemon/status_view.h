/*
 * status_view.h - the client's model of a `status` answer from nvperfd (tracked processes and
 * recent findings), with sorting and the two renderings shared by `apx status` and `apx top`:
 * a table that fits the terminal width, and JSON (schema version 1, docs/nvperfd.md).
 * Non-logging.
 */
#ifndef APX_DAEMON_STATUS_VIEW_H
#define APX_DAEMON_STATUS_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <apx/ctl_proto.h>

struct apx_sv_proc {
	uint64_t n[APX_CTL_PROC__COUNT];	/* numeric fields */
	const char *s[APX_CTL_PROC__COUNT];	/* string fields (into apx_sv.buf) */
};

struct apx_sv_finding {
	uint64_t n[APX_CTL_FINDING__COUNT];
	const char *s[APX_CTL_FINDING__COUNT];
};

struct apx_sv {
	char *buf;
	struct apx_sv_proc *procs;
	size_t nprocs;
	struct apx_sv_finding *findings;
	size_t nfindings;
};

enum apx_sv_sort { APX_SV_SORT_CPU, APX_SV_SORT_RSS, APX_SV_SORT_PID, APX_SV_SORT_AGE,
		   APX_SV_SORT_CSW };

/* Ask the daemon at sock for its status. -errno; errbuf says why on -EPROTO. */
int apx_sv_fetch(const char *sock, struct apx_sv *ret, char *errbuf, size_t errcap);
void apx_sv_release(struct apx_sv *sv);
void apx_sv_sort(struct apx_sv *sv, enum apx_sv_sort key);
/* "cpu", "rss", "pid", "age", "csw" -> enum apx_sv_sort; -1 when unknown. */
int apx_sv_sort_parse(const char *s);
/* Table with a header line; at most max_rows processes (0 = all); width = columns. */
void apx_sv_print_table(FILE *f, const struct apx_sv *sv, unsigned width, size_t max_rows);
void apx_sv_print_json(FILE *f, const struct apx_sv *sv);
/* "1.5 GiB" style */
void apx_fmt_bytes(char *buf, size_t cap, uint64_t b);
/* "3h04m" style */
void apx_fmt_age(char *buf, size_t cap, uint64_t ms);

#endif
