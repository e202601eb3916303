/*
 * status_view.c - parse nvperfd's `status` answer and render it (see status_view.h). Used by
 * cli/cmd_status.c and cli/cmd_top.c.
 */
#include "daemon/status_view.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/ctl_client.h"

#include "base/banned.h"

/* which fields are strings, and their JSON names */
static const char *const proc_names[APX_CTL_PROC__COUNT] = {
	"pid", "ppid", "uid", "user", "start_unix_ms", "age_ms", "cpu_pct_x10", "utime_ms",
	"stime_ms", "rss_bytes", "rss_peak_bytes", "vol_csw", "invol_csw", "threads", "state",
	"uses_cuda", "comm", "argv", "uprobes", "h2d_pageable_bytes", "h2d_pinned_bytes",
	"gpu_mem_peak_bytes",
};
/* numeric fields that may be "-" on the wire: null in JSON (unknown is not 0) */
static const uint32_t proc_nullable = 1u << APX_CTL_PROC_H2D_PAGEABLE_BYTES |
				      1u << APX_CTL_PROC_H2D_PINNED_BYTES |
				      1u << APX_CTL_PROC_GPU_MEM_BYTES;
static const uint32_t proc_strings = 1u << APX_CTL_PROC_USER | 1u << APX_CTL_PROC_STATE |
				     1u << APX_CTL_PROC_COMM | 1u << APX_CTL_PROC_ARGV |
				     1u << APX_CTL_PROC_UPROBES;
static const char *const finding_names[APX_CTL_FINDING__COUNT] = {
	"pid", "uid", "unix_ms", "severity", "rule", "title", "comm",
};
static const uint32_t finding_strings = 1u << APX_CTL_FINDING_RULE |
					1u << APX_CTL_FINDING_TITLE | 1u << APX_CTL_FINDING_COMM;

static int grow(void **v, size_t n, size_t *cap, size_t sz)
{
	void *nv;

	if (n < *cap)
		return 0;
	nv = reallocarray(*v, *cap ? *cap * 2 : 16, sz);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = *cap ? *cap * 2 : 16;
	return 0;
}

int apx_sv_fetch(const char *sock, struct apx_sv *ret, char *errbuf, size_t errcap)
{
	struct apx_sv sv = { 0 };
	size_t len, pcap = 0, fcap = 0;
	char *line, *next;
	int r;

	r = apx_ctl_request(sock, "status", &sv.buf, &len, errbuf, errcap);
	if (r < 0)
		return r;
	for (line = sv.buf; line && *line; line = next) {
		char *f[32];
		int n;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		n = apx_ctl_split(line, f, 32);
		if (!strcmp(f[0], "proc") && n >= 1 + APX_CTL_PROC__COUNT) {
			struct apx_sv_proc *p;

			if (grow((void **)&sv.procs, sv.nprocs, &pcap, sizeof(*p)) < 0)
				goto nomem;
			p = &sv.procs[sv.nprocs++];
			memset(p, 0, sizeof(*p));
			for (int i = 0; i < APX_CTL_PROC__COUNT; i++) {
				p->s[i] = f[i + 1];
				if (!(proc_strings & (1u << i)))
					p->n[i] = strtoull(f[i + 1], NULL, 10);
			}
		} else if (!strcmp(f[0], "finding") && n >= 1 + APX_CTL_FINDING__COUNT) {
			struct apx_sv_finding *fd;

			if (grow((void **)&sv.findings, sv.nfindings, &fcap, sizeof(*fd)) < 0)
				goto nomem;
			fd = &sv.findings[sv.nfindings++];
			memset(fd, 0, sizeof(*fd));
			for (int i = 0; i < APX_CTL_FINDING__COUNT; i++) {
				fd->s[i] = f[i + 1];
				if (!(finding_strings & (1u << i)))
					fd->n[i] = strtoull(f[i + 1], NULL, 10);
			}
		}
	}
	*ret = sv;
	return 0;
nomem:
	apx_sv_release(&sv);
	return -ENOMEM;
}

void apx_sv_release(struct apx_sv *sv)
{
	free(sv->buf);
	free(sv->procs);
	free(sv->findings);
	memset(sv, 0, sizeof(*sv));
}

static enum apx_sv_sort sort_key;

static int cmp_proc(const void *a, const void *b)
{
	const struct apx_sv_proc *x = a, *y = b;
	uint64_t vx, vy;

	switch (sort_key) {
	case APX_SV_SORT_RSS:
		vx = x->n[APX_CTL_PROC_RSS_BYTES];
		vy = y->n[APX_CTL_PROC_RSS_BYTES];
		break;
	case APX_SV_SORT_PID:	/* ascending */
		vx = y->n[APX_CTL_PROC_PID];
		vy = x->n[APX_CTL_PROC_PID];
		break;
	case APX_SV_SORT_AGE:
		vx = x->n[APX_CTL_PROC_AGE_MS];
		vy = y->n[APX_CTL_PROC_AGE_MS];
		break;
	case APX_SV_SORT_CSW:
		vx = x->n[APX_CTL_PROC_INVOL_CSW] + x->n[APX_CTL_PROC_VOL_CSW];
		vy = y->n[APX_CTL_PROC_INVOL_CSW] + y->n[APX_CTL_PROC_VOL_CSW];
		break;
	default:
		vx = x->n[APX_CTL_PROC_CPU_PCT_X10];
		vy = y->n[APX_CTL_PROC_CPU_PCT_X10];
		break;
	}
	if (vx != vy)
		return vx > vy ? -1 : 1;	/* largest first */
	return x->n[APX_CTL_PROC_PID] < y->n[APX_CTL_PROC_PID] ? -1 : 1;
}

void apx_sv_sort(struct apx_sv *sv, enum apx_sv_sort key)
{
	sort_key = key;
	if (sv->nprocs)
		qsort(sv->procs, sv->nprocs, sizeof(*sv->procs), cmp_proc);
}

void apx_fmt_bytes(char *buf, size_t cap, uint64_t b)
{
	if (b >= (10ull << 30))
		snprintf(buf, cap, "%.0fG", (double)b / (double)(1ull << 30));
	else if (b >= (1ull << 30))
		snprintf(buf, cap, "%.1fG", (double)b / (double)(1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, cap, "%.0fM", (double)b / (double)(1ull << 20));
	else
		snprintf(buf, cap, "%.0fK", (double)b / 1024.0);
}

void apx_fmt_age(char *buf, size_t cap, uint64_t ms)
{
	uint64_t s = ms / 1000;

	if (s < 60)
		snprintf(buf, cap, "%" PRIu64 ".%" PRIu64 "s", s, ms % 1000 / 100);
	else if (s < 3600)
		snprintf(buf, cap, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, cap, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
	else
		snprintf(buf, cap, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s / 3600 % 24);
}

static void fmt_count(char *buf, size_t cap, uint64_t v)
{
	if (v >= 10000000)
		snprintf(buf, cap, "%" PRIu64 "M", v / 1000000);
	else if (v >= 10000)
		snprintf(buf, cap, "%" PRIu64 "k", v / 1000);
	else
		snprintf(buf, cap, "%" PRIu64, v);
}

void apx_sv_print_table(FILE *f, const struct apx_sv *sv, unsigned width, size_t max_rows)
{
	size_t rows = max_rows && max_rows < sv->nprocs ? max_rows : sv->nprocs;
	int cmdw;

	if (width < 60)
		width = 60;
	/* fixed part: 7+1+8+1+7+1+6+1+6+1+6+1+13+1+4+1+1+1+4+1 = 73 */
	cmdw = (int)width - 74;
	fprintf(f, "%7s %-8s %7s %6s %6s %6s %13s %4s %1s %4s %s\n", "PID", "USER", "AGE", "CPU%",
		"RSS", "PEAK", "CSW vol/inv", "THR", "S", "CUDA", "COMMAND");
	for (size_t i = 0; i < rows; i++) {
		const struct apx_sv_proc *p = &sv->procs[i];
		char age[16], rss[16], peak[16], v[16], iv[16], csw[32];
		const char *cmd = p->s[APX_CTL_PROC_ARGV][0] ? p->s[APX_CTL_PROC_ARGV] :
				  p->s[APX_CTL_PROC_COMM];
		const char *sp = strchr(cmd, ' '), *sl;

		/* "/usr/bin/python3 -c ..." -> "python3 -c ...": the folder rarely matters here */
		for (sl = cmd; (sl = memchr(sl, '/', sp ? (size_t)(sp - sl) : strlen(sl)));)
			cmd = ++sl;

		apx_fmt_age(age, sizeof(age), p->n[APX_CTL_PROC_AGE_MS]);
		apx_fmt_bytes(rss, sizeof(rss), p->n[APX_CTL_PROC_RSS_BYTES]);
		apx_fmt_bytes(peak, sizeof(peak), p->n[APX_CTL_PROC_RSS_PEAK_BYTES]);
		fmt_count(v, sizeof(v), p->n[APX_CTL_PROC_VOL_CSW]);
		fmt_count(iv, sizeof(iv), p->n[APX_CTL_PROC_INVOL_CSW]);
		snprintf(csw, sizeof(csw), "%s/%s", v, iv);
		fprintf(f, "%7" PRIu64 " %-8.8s %7s %6.1f %6s %6s %13s %4" PRIu64 " %1.1s %4s ",
			p->n[APX_CTL_PROC_PID], p->s[APX_CTL_PROC_USER], age,
			(double)p->n[APX_CTL_PROC_CPU_PCT_X10] / 10.0, rss, peak, csw,
			p->n[APX_CTL_PROC_THREADS], p->s[APX_CTL_PROC_STATE],
			p->n[APX_CTL_PROC_CUDA] ? "yes" : "-");
		/* untrusted text: only printable bytes reach the terminal */
		for (int k = 0; cmd[k] && k < cmdw; k++)
			fputc((unsigned char)cmd[k] >= 0x20 && (unsigned char)cmd[k] < 0x7f ? cmd[k] : '?', f);
		fputc('\n', f);
	}
	if (rows < sv->nprocs)
		fprintf(f, "... %zu more\n", sv->nprocs - rows);
	if (!sv->nprocs)
		fprintf(f, "(no Python process tracked now)\n");
	if (sv->nfindings) {
		fprintf(f, "\nrecent findings:\n");
		for (size_t i = 0; i < sv->nfindings && i < 10; i++) {
			const struct apx_sv_finding *fd = &sv->findings[i];
			time_t t = (time_t)(fd->n[APX_CTL_FINDING_UNIX_MS] / 1000);
			struct tm tm;
			char when[32] = "?";

			if (localtime_r(&t, &tm))
				strftime(when, sizeof(when), "%m-%d %H:%M", &tm);
			fprintf(f, "  %s pid %" PRIu64 " (%s) %s: %s\n", when,
				fd->n[APX_CTL_FINDING_PID], fd->s[APX_CTL_FINDING_COMM],
				fd->s[APX_CTL_FINDING_RULE], fd->s[APX_CTL_FINDING_TITLE]);
		}
	}
}

void apx_sv_print_json(FILE *f, const struct apx_sv *sv)
{
	fprintf(f, "{\"version\":1,\"processes\":[");
	for (size_t i = 0; i < sv->nprocs; i++) {
		const struct apx_sv_proc *p = &sv->procs[i];

		fprintf(f, "%s{", i ? "," : "");
		for (int k = 0; k < APX_CTL_PROC__COUNT; k++) {
			fprintf(f, "%s\"%s\":", k ? "," : "", proc_names[k]);
			if (proc_strings & (1u << k))
				apx_json_str(f, p->s[k]);
			else if ((proc_nullable & (1u << k)) && p->s[k] && !strcmp(p->s[k], "-"))
				fputs("null", f);
			else
				fprintf(f, "%" PRIu64, p->n[k]);
		}
		fprintf(f, ",\"cpu_pct\":%.1f}", (double)p->n[APX_CTL_PROC_CPU_PCT_X10] / 10.0);
	}
	fprintf(f, "],\"findings\":[");
	for (size_t i = 0; i < sv->nfindings; i++) {
		const struct apx_sv_finding *fd = &sv->findings[i];

		fprintf(f, "%s{", i ? "," : "");
		for (int k = 0; k < APX_CTL_FINDING__COUNT; k++) {
			fprintf(f, "%s\"%s\":", k ? "," : "", finding_names[k]);
			if (finding_strings & (1u << k))
				apx_json_str(f, fd->s[k]);
			else
				fprintf(f, "%" PRIu64, fd->n[k]);
		}
		fputc('}', f);
	}
	fprintf(f, "]}\n");
}

int apx_sv_sort_parse(const char *s)
{
	static const char *const names[] = { "cpu", "rss", "pid", "age", "csw" };

	for (int i = 0; i < 5; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}
