/*
 * status_view.c - parse nvperfd's `status` answer and render it (see status_view.h). Used by
 * cli/cmd_status.c and cli/cmd_top.c.
 */
#include "daemon/status_view.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/utf8.h"
#include "daemon/ctl_client.h"

#include "base/banned.h"

/* which fields are strings, and their JSON names */
static const char *const proc_names[APX_CTL_PROC__COUNT] = {
	"pid", "ppid", "uid", "user", "start_unix_ms", "age_ms", "cpu_pct_x10", "utime_ms",
	"stime_ms", "rss_bytes", "rss_peak_bytes", "vol_csw", "invol_csw", "threads", "state",
	"uses_cuda", "comm", "argv", "uprobes", "h2d_pageable_bytes", "h2d_pinned_bytes",
	"gpu_mem_peak_bytes", "gpu_device", "gpu_count", "gpu_mem_bytes", "sm_util_pct",
	"gpu_samples", "gpu_idle_samples", "l2_persist_bytes", "l2_windows", "h2d_pageable_call_ns",
};
_Static_assert(APX_CTL_PROC__COUNT <= 64, "the proc field masks are 64-bit");
#define BIT(i) (1ull << (i))
/* numeric fields that may be "-" on the wire: null in JSON (unknown is not 0) */
static const uint64_t proc_nullable = BIT(APX_CTL_PROC_H2D_PAGEABLE_BYTES) |
				      BIT(APX_CTL_PROC_H2D_PINNED_BYTES) |
				      BIT(APX_CTL_PROC_GPU_MEM_BYTES) |
				      BIT(APX_CTL_PROC_GPU_DEVICE) |
				      BIT(APX_CTL_PROC_GPU_COUNT) |
				      BIT(APX_CTL_PROC_GPU_MEM_NOW_BYTES) |
				      BIT(APX_CTL_PROC_SM_UTIL_PCT) |
				      BIT(APX_CTL_PROC_GPU_SAMPLES) |
				      BIT(APX_CTL_PROC_GPU_IDLE_SAMPLES) |
				      BIT(APX_CTL_PROC_L2_PERSIST_BYTES) |
				      BIT(APX_CTL_PROC_L2_WINDOWS) |
				      BIT(APX_CTL_PROC_H2D_PAGEABLE_CALL_NS);
static const uint64_t proc_strings = BIT(APX_CTL_PROC_USER) | BIT(APX_CTL_PROC_STATE) |
				     BIT(APX_CTL_PROC_COMM) | BIT(APX_CTL_PROC_ARGV) |
				     BIT(APX_CTL_PROC_UPROBES);
static const char *const finding_names[APX_CTL_FINDING__COUNT] = {
	"pid", "uid", "unix_ms", "severity", "rule", "title", "comm",
};
static const uint64_t finding_strings = BIT(APX_CTL_FINDING_RULE) |
					BIT(APX_CTL_FINDING_TITLE) | BIT(APX_CTL_FINDING_COMM);
static const char *const gpu_names[APX_CTL_GPU__COUNT] = {
	"index", "name", "util_pct", "mem_used_bytes", "mem_total_bytes", "power_mw",
};
static const uint64_t gpu_strings = BIT(APX_CTL_GPU_NAME);

#define FIELDS_MAX 64			/* split at most this many (later ones are ignored) */

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

/* n fields of a line into s[] / v[]: numbers parsed unless a string field; fields past
 * the line (an older daemon) are "-" */
static void take(char **f, int n, int count, uint64_t strings, const char **s, uint64_t *v)
{
	for (int i = 0; i < count; i++) {
		s[i] = i < n ? f[i] : "-";
		v[i] = i < n && !(strings & BIT(i)) ? strtoull(f[i], NULL, 10) : 0;
	}
}

int apx_sv_parse(char *buf, struct apx_sv *ret)
{
	struct apx_sv sv = { .buf = buf };
	size_t pcap = 0, fcap = 0, gcap = 0;
	char *line, *next;

	for (line = sv.buf; line && *line; line = next) {
		char *f[FIELDS_MAX];
		int n;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		n = apx_ctl_split(line, f, FIELDS_MAX) - 1;
		if (!strcmp(f[0], "proc") && n >= APX_CTL_PROC__MIN) {
			struct apx_sv_proc *p;

			if (grow((void **)&sv.procs, sv.nprocs, &pcap, sizeof(*p)) < 0)
				goto nomem;
			p = &sv.procs[sv.nprocs++];
			take(f + 1, n, APX_CTL_PROC__COUNT, proc_strings, p->s, p->n);
			p->nfields = n < APX_CTL_PROC__COUNT ? n : APX_CTL_PROC__COUNT;
		} else if (!strcmp(f[0], "finding") && n >= APX_CTL_FINDING__COUNT) {
			struct apx_sv_finding *fd;

			if (grow((void **)&sv.findings, sv.nfindings, &fcap, sizeof(*fd)) < 0)
				goto nomem;
			fd = &sv.findings[sv.nfindings++];
			take(f + 1, n, APX_CTL_FINDING__COUNT, finding_strings, fd->s, fd->n);
		} else if (!strcmp(f[0], "gpu") && n >= APX_CTL_GPU__COUNT) {
			struct apx_sv_gpu *g;

			if (grow((void **)&sv.gpus, sv.ngpus, &gcap, sizeof(*g)) < 0)
				goto nomem;
			g = &sv.gpus[sv.ngpus++];
			take(f + 1, n, APX_CTL_GPU__COUNT, gpu_strings, g->s, g->n);
		}
	}
	*ret = sv;
	return 0;
nomem:
	apx_sv_release(&sv);
	return -ENOMEM;
}

int apx_sv_fetch(const char *sock, struct apx_sv *ret, char *errbuf, size_t errcap)
{
	char *buf;
	size_t len;
	int r;

	r = apx_ctl_request(sock, "status", &buf, &len, errbuf, errcap);
	if (r < 0)
		return r;
	return apx_sv_parse(buf, ret);
}

void apx_sv_release(struct apx_sv *sv)
{
	free(sv->buf);
	free(sv->procs);
	free(sv->findings);
	free(sv->gpus);
	memset(sv, 0, sizeof(*sv));
}

/* the daemon sent field i of p, and knows it (not "-") */
static int known(const struct apx_sv_proc *p, int i)
{
	return i < p->nfields && strcmp(p->s[i], "-") != 0;
}

static enum apx_sv_sort sort_key;

static int cmp_proc(const void *a, const void *b)
{
	const struct apx_sv_proc *x = a, *y = b;
	uint64_t vx, vy;
	int kx, ky;

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
	case APX_SV_SORT_GPU:	/* not known sorts below a known 0 */
		kx = known(x, APX_CTL_PROC_GPU_MEM_NOW_BYTES);
		ky = known(y, APX_CTL_PROC_GPU_MEM_NOW_BYTES);
		if (kx != ky)
			return kx ? -1 : 1;
		vx = x->n[APX_CTL_PROC_GPU_MEM_NOW_BYTES];
		vy = y->n[APX_CTL_PROC_GPU_MEM_NOW_BYTES];
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

enum align { RIGHT, LEFT, CLIP };

/* Columns a character takes on a terminal: 2 for the wide East Asian ranges and emoji, 0 for
 * combining marks, else 1 (a small wcwidth: apx runs in whatever locale it was given). */
static unsigned cp_width(uint32_t cp)
{
	if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) ||
	    (cp >= 0xfe00 && cp <= 0xfe0f))
		return 0;
	if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf && cp != 0x303f) ||
	    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
	    (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
	    (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
	    (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd))
		return 2;
	return 1;
}

/* The unit of text at s (n bytes left) as shown: a valid printable UTF-8 character as it is,
 * a control character (C0, DEL, C1) or a byte that is not UTF-8 as an escape ("\x1b",
 * "\u009b", "\xff"), the way termsafe.h writes them. Its bytes in the input (*ret_in), its
 * text in out (NUL-terminated) and its columns (*ret_cols). */
static void unit_at(const char *s, size_t n, char out[8], size_t *ret_in, unsigned *ret_cols)
{
	const uint8_t *p = (const uint8_t *)s;
	uint32_t cp = 0;
	size_t len = p[0] < 0x80 ? 1 : apx_utf8_decode(p, n, &cp);

	if (p[0] < 0x80)
		cp = p[0];
	if (!len || cp < 0x20 || cp == 0x7f) {	/* control byte, or not UTF-8 */
		snprintf(out, 8, "\\x%02x", p[0]);
		*ret_in = 1;
		*ret_cols = 4;
		return;
	}
	if (cp >= 0x80 && cp <= 0x9f) {		/* C1 control */
		snprintf(out, 8, "\\u%04x", (unsigned)cp);
		*ret_in = len;
		*ret_cols = 6;
		return;
	}
	memcpy(out, s, len);
	out[len] = 0;
	*ret_in = len;
	*ret_cols = cp_width(cp);
}

/* s in w columns: RIGHT (numbers: one that does not fit shows as "###", never cut into a
 * smaller number), LEFT (padded), CLIP (cut, no trailing blanks: the last column). Names and
 * argv are the process's own text: valid UTF-8 is shown as it is (café), counted in columns,
 * never cut inside a character; control characters and bytes that are not UTF-8 as escapes
 * ("\x1b"), counted in the width too. */
static void put_cell(FILE *f, const char *s, size_t w, enum align a)
{
	size_t n = strlen(s), cols = 0, i = 0, end = 0, endcols = 0;
	char u[8];

	/* how much fits: [0, end) in endcols columns, blanks at the end left out for CLIP */
	while (i < n) {
		size_t in;
		unsigned c;

		unit_at(s + i, n - i, u, &in, &c);
		if (cols + c > w)
			break;
		cols += c;
		i += in;
		if (a != CLIP || s[i - 1] != ' ' || in != 1) {
			end = i;
			endcols = cols;
		}
	}
	if (a == RIGHT && i < n) {
		for (size_t k = 0; k < w; k++)
			fputc('#', f);
		return;
	}
	if (a != CLIP) {
		end = i;
		endcols = cols;
	}
	for (size_t k = endcols; a == RIGHT && k < w; k++)
		fputc(' ', f);
	for (i = 0; i < end;) {
		size_t in;
		unsigned c;

		unit_at(s + i, n - i, u, &in, &c);
		fputs(u, f);
		i += in;
	}
	for (size_t k = endcols; a == LEFT && k < w; k++)
		fputc(' ', f);
}

static void put_line(FILE *f, const char *s, unsigned width)
{
	put_cell(f, s, width, CLIP);
	fputc('\n', f);
}

/*
 * The table's columns between USER and COMMAND, in display order. When the width is short,
 * they are kept in the order of keep_order[] (a prefix of it), the rest dropped: CPU and
 * memory, then the GPU columns (the GPU's idle share before the copies, L2 persistence after
 * them), then age and context switches; the process state, CUDA (which the GPU column mostly
 * tells), threads and peak RSS go first. PID, USER and at least CMD_MIN columns of COMMAND
 * are always there. The pageable copy rate has no column (JSON only): it needs
 * uprobe_copy_time, off by default, and would push age and context switches out at 120.
 */
enum col { COL_AGE, COL_CPU, COL_RSS, COL_PEAK, COL_CSW, COL_THR, COL_STATE, COL_CUDA,
	   COL_GPU, COL_GMEM, COL_SM, COL_IDLE, COL_H2D, COL_L2, COL__COUNT };

static const struct { const char *head; unsigned w; } cols[COL__COUNT] = {
	[COL_AGE] = { "AGE", 7 },	[COL_CPU] = { "CPU%", 6 },
	[COL_RSS] = { "RSS", 5 },	[COL_PEAK] = { "PEAK", 5 },
	[COL_CSW] = { "CSW vol/inv", 11 }, [COL_THR] = { "THR", 4 },
	[COL_STATE] = { "S", 1 },	[COL_CUDA] = { "CUDA", 4 },
	[COL_GPU] = { "GPU", 3 },	[COL_GMEM] = { "GMEM", 5 },
	[COL_SM] = { "SM%", 4 },	[COL_IDLE] = { "IDLE%", 5 },
	[COL_H2D] = { "H2D", 12 },	[COL_L2] = { "L2", 8 },
};
static const enum col keep_order[COL__COUNT] = {
	COL_CPU, COL_RSS, COL_GPU, COL_GMEM, COL_SM, COL_IDLE, COL_H2D, COL_L2, COL_AGE, COL_CSW,
	COL_PEAK, COL_THR, COL_CUDA, COL_STATE,
};

#define PID_W 7
#define USER_W 8
#define CMD_MIN 12			/* columns of COMMAND at least */
#define WIDTH_MIN (PID_W + 1 + USER_W + 1 + CMD_MIN)

/* part of whole (> 0) in percent, rounded, but 0 and 100 only when exact */
static uint64_t share_pct(uint64_t part, uint64_t whole)
{
	uint64_t pct = (uint64_t)((double)part * 100.0 / (double)whole + 0.5);

	if (pct == 0 && part)
		pct = 1;
	if (pct >= 100 && part < whole)
		pct = 99;
	return pct;
}

/* H2D bytes and the pageable share: "1.2G 80%pg"; "-" when the uprobes did not say */
static void fmt_h2d(char *buf, size_t cap, const struct apx_sv_proc *p)
{
	uint64_t pg = p->n[APX_CTL_PROC_H2D_PAGEABLE_BYTES];
	uint64_t pin = p->n[APX_CTL_PROC_H2D_PINNED_BYTES];
	char b[16];

	if (!known(p, APX_CTL_PROC_H2D_PAGEABLE_BYTES) ||
	    !known(p, APX_CTL_PROC_H2D_PINNED_BYTES)) {
		snprintf(buf, cap, "-");
		return;
	}
	if (!pg && !pin) {
		snprintf(buf, cap, "0");
		return;
	}
	apx_fmt_bytes(b, sizeof(b), pg + pin);
	snprintf(buf, cap, "%s %" PRIu64 "%%pg", b, share_pct(pg, pg + pin));
}

/* 1 with the idle share's samples when p's GPU idle share is known: NVML gave its device's
 * utilization in at least one sample while p held it */
static int idle_known(const struct apx_sv_proc *p, uint64_t *ret_idle, uint64_t *ret_samples)
{
	if (!known(p, APX_CTL_PROC_GPU_SAMPLES) || !known(p, APX_CTL_PROC_GPU_IDLE_SAMPLES) ||
	    !p->n[APX_CTL_PROC_GPU_SAMPLES] ||
	    p->n[APX_CTL_PROC_GPU_IDLE_SAMPLES] > p->n[APX_CTL_PROC_GPU_SAMPLES])
		return 0;
	*ret_idle = p->n[APX_CTL_PROC_GPU_IDLE_SAMPLES];
	*ret_samples = p->n[APX_CTL_PROC_GPU_SAMPLES];
	return 1;
}

/* L2 persistence: "3M/1w" (persisting-L2 limit set last / access-policy windows set), "0/2w"
 * (windows without a limit: no effect), "no" (neither), "-" when the uprobes did not say */
static void fmt_l2(char *buf, size_t cap, const struct apx_sv_proc *p)
{
	uint64_t limit = p->n[APX_CTL_PROC_L2_PERSIST_BYTES], win = p->n[APX_CTL_PROC_L2_WINDOWS];
	char b[16] = "0", w[16];

	if (!known(p, APX_CTL_PROC_L2_PERSIST_BYTES) || !known(p, APX_CTL_PROC_L2_WINDOWS)) {
		snprintf(buf, cap, "-");
		return;
	}
	if (!limit && !win) {
		snprintf(buf, cap, "no");
		return;
	}
	if (limit)
		apx_fmt_bytes(b, sizeof(b), limit);
	fmt_count(w, sizeof(w), win);
	snprintf(buf, cap, "%s/%sw", b, w);
}

static void fmt_cell(char *buf, size_t cap, enum col c, const struct apx_sv_proc *p)
{
	char v[16], iv[16];
	uint64_t idle, samples;

	switch (c) {
	case COL_AGE:
		apx_fmt_age(buf, cap, p->n[APX_CTL_PROC_AGE_MS]);
		break;
	case COL_CPU:	/* "1600" for many busy threads: the decimal is noise there */
		snprintf(buf, cap, p->n[APX_CTL_PROC_CPU_PCT_X10] >= 10000 ? "%.0f" : "%.1f",
			 (double)p->n[APX_CTL_PROC_CPU_PCT_X10] / 10.0);
		break;
	case COL_RSS:
		apx_fmt_bytes(buf, cap, p->n[APX_CTL_PROC_RSS_BYTES]);
		break;
	case COL_PEAK:
		apx_fmt_bytes(buf, cap, p->n[APX_CTL_PROC_RSS_PEAK_BYTES]);
		break;
	case COL_CSW:
		fmt_count(v, sizeof(v), p->n[APX_CTL_PROC_VOL_CSW]);
		fmt_count(iv, sizeof(iv), p->n[APX_CTL_PROC_INVOL_CSW]);
		snprintf(buf, cap, "%s/%s", v, iv);
		break;
	case COL_THR:
		snprintf(buf, cap, "%" PRIu64, p->n[APX_CTL_PROC_THREADS]);
		break;
	case COL_STATE:
		snprintf(buf, cap, "%s", p->s[APX_CTL_PROC_STATE]);
		break;
	case COL_CUDA:
		snprintf(buf, cap, "%s", p->n[APX_CTL_PROC_CUDA] ? "yes" : "no");
		break;
	case COL_GPU:	/* "0", "2+" when on several devices */
		if (known(p, APX_CTL_PROC_GPU_DEVICE))
			snprintf(buf, cap, "%" PRIu64 "%s", p->n[APX_CTL_PROC_GPU_DEVICE],
				 known(p, APX_CTL_PROC_GPU_COUNT) &&
				 p->n[APX_CTL_PROC_GPU_COUNT] > 1 ? "+" : "");
		else
			snprintf(buf, cap, "-");
		break;
	case COL_GMEM:
		if (known(p, APX_CTL_PROC_GPU_MEM_NOW_BYTES))
			apx_fmt_bytes(buf, cap, p->n[APX_CTL_PROC_GPU_MEM_NOW_BYTES]);
		else
			snprintf(buf, cap, "-");
		break;
	case COL_SM:
		if (known(p, APX_CTL_PROC_SM_UTIL_PCT))
			snprintf(buf, cap, "%" PRIu64, p->n[APX_CTL_PROC_SM_UTIL_PCT]);
		else
			snprintf(buf, cap, "-");
		break;
	case COL_IDLE:
		if (idle_known(p, &idle, &samples))
			snprintf(buf, cap, "%" PRIu64, share_pct(idle, samples));
		else
			snprintf(buf, cap, "-");
		break;
	case COL_H2D:
		fmt_h2d(buf, cap, p);
		break;
	case COL_L2:
		fmt_l2(buf, cap, p);
		break;
	default:
		snprintf(buf, cap, "?");
		break;
	}
}

/* "GPU0 NVIDIA H200  util 87%  mem 40.1/139.8 GiB  power 312 W", "-" for what is not known */
static void fmt_gpu(char *buf, size_t cap, const struct apx_sv_gpu *g)
{
	char util[16] = "-", mem[48] = "-", power[24] = "-";

	if (strcmp(g->s[APX_CTL_GPU_UTIL_PCT], "-"))
		snprintf(util, sizeof(util), "%" PRIu64 "%%", g->n[APX_CTL_GPU_UTIL_PCT]);
	if (strcmp(g->s[APX_CTL_GPU_MEM_USED_BYTES], "-") &&
	    strcmp(g->s[APX_CTL_GPU_MEM_TOTAL_BYTES], "-"))
		snprintf(mem, sizeof(mem), "%.1f/%.1f GiB",
			 (double)g->n[APX_CTL_GPU_MEM_USED_BYTES] / (double)(1ull << 30),
			 (double)g->n[APX_CTL_GPU_MEM_TOTAL_BYTES] / (double)(1ull << 30));
	if (strcmp(g->s[APX_CTL_GPU_POWER_MW], "-"))
		snprintf(power, sizeof(power), "%.0f W",
			 (double)g->n[APX_CTL_GPU_POWER_MW] / 1000.0);
	snprintf(buf, cap, "GPU%" PRIu64 " %s  util %s  mem %s  power %s", g->n[APX_CTL_GPU_INDEX],
		 g->s[APX_CTL_GPU_NAME], util, mem, power);
}

void apx_sv_print_table(FILE *f, const struct apx_sv *sv, unsigned width, size_t max_rows)
{
	size_t rows = max_rows && max_rows < sv->nprocs ? max_rows : sv->nprocs;
	int shown[COL__COUNT] = { 0 };
	unsigned used = PID_W + 1 + USER_W, cmdw;	/* each further column: ' ' + its width */
	char line[600];

	if (width < WIDTH_MIN)
		width = WIDTH_MIN;
	for (int k = 0; k < COL__COUNT; k++) {
		enum col c = keep_order[k];

		if (used + 1 + cols[c].w + 1 + CMD_MIN > width)
			break;
		shown[c] = 1;
		used += 1 + cols[c].w;
	}
	cmdw = width - used - 1;
	for (size_t i = 0; i < sv->ngpus; i++) {
		fmt_gpu(line, sizeof(line), &sv->gpus[i]);
		put_line(f, line, width);
	}
	put_cell(f, "PID", PID_W, RIGHT);
	fputc(' ', f);
	put_cell(f, "USER", USER_W, LEFT);
	for (int c = 0; c < COL__COUNT; c++) {
		if (!shown[c])
			continue;
		fputc(' ', f);
		put_cell(f, cols[c].head, cols[c].w, RIGHT);
	}
	fputs(" COMMAND\n", f);
	for (size_t i = 0; i < rows; i++) {
		const struct apx_sv_proc *p = &sv->procs[i];
		const char *cmd = p->s[APX_CTL_PROC_ARGV][0] ? p->s[APX_CTL_PROC_ARGV] :
				  p->s[APX_CTL_PROC_COMM];
		const char *sp = strchr(cmd, ' '), *sl;
		char v[32];

		/* "/usr/bin/python3 -c ..." -> "python3 -c ...": the folder rarely matters here */
		for (sl = cmd; (sl = memchr(sl, '/', sp ? (size_t)(sp - sl) : strlen(sl)));)
			cmd = ++sl;
		snprintf(v, sizeof(v), "%" PRIu64, p->n[APX_CTL_PROC_PID]);
		put_cell(f, v, PID_W, RIGHT);
		fputc(' ', f);
		put_cell(f, p->s[APX_CTL_PROC_USER], USER_W, LEFT);
		for (int c = 0; c < COL__COUNT; c++) {
			if (!shown[c])
				continue;
			fmt_cell(v, sizeof(v), (enum col)c, p);
			fputc(' ', f);
			put_cell(f, v, cols[c].w, RIGHT);
		}
		fputc(' ', f);
		put_cell(f, cmd, cmdw, CLIP);
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
			snprintf(line, sizeof(line), "  %s pid %" PRIu64 " (%s) %s: %s", when,
				 fd->n[APX_CTL_FINDING_PID], fd->s[APX_CTL_FINDING_COMM],
				 fd->s[APX_CTL_FINDING_RULE], fd->s[APX_CTL_FINDING_TITLE]);
			put_line(f, line, width);
		}
	}
}

/* a number, or null when the daemon did not send it or sent "-" */
static void json_num(FILE *f, const char *s, uint64_t v, int nullable)
{
	if (!s || (nullable && !strcmp(s, "-")))
		fputs("null", f);
	else
		fprintf(f, "%" PRIu64, v);
}

/* Values computed from p's fields, null when one of them is not known: the GPU's idle share
 * in percent, and the pageable H2D rate in bytes per second of call time. */
static void json_derived(FILE *f, const struct apx_sv_proc *p)
{
	uint64_t idle, samples, ns = p->n[APX_CTL_PROC_H2D_PAGEABLE_CALL_NS];
	uint64_t pageable = p->n[APX_CTL_PROC_H2D_PAGEABLE_BYTES];

	fputs(",\"gpu_idle_pct\":", f);
	if (idle_known(p, &idle, &samples))
		fprintf(f, "%.1f", (double)idle * 100.0 / (double)samples);
	else
		fputs("null", f);
	fputs(",\"h2d_pageable_bytes_per_s\":", f);
	if (known(p, APX_CTL_PROC_H2D_PAGEABLE_BYTES) &&
	    known(p, APX_CTL_PROC_H2D_PAGEABLE_CALL_NS) && ns)
		fprintf(f, "%.0f", (double)pageable * 1e9 / (double)ns);
	else
		fputs("null", f);
}

void apx_sv_print_json(FILE *f, const struct apx_sv *sv)
{
	fprintf(f, "{\"version\":1,\"processes\":[");
	for (size_t i = 0; i < sv->nprocs; i++) {
		const struct apx_sv_proc *p = &sv->procs[i];

		fprintf(f, "%s{", i ? "," : "");
		for (int k = 0; k < APX_CTL_PROC__COUNT; k++) {
			fprintf(f, "%s\"%s\":", k ? "," : "", proc_names[k]);
			if (k >= p->nfields)
				fputs("null", f);	/* an older daemon */
			else if (proc_strings & BIT(k))
				apx_json_str(f, p->s[k]);
			else
				json_num(f, p->s[k], p->n[k], !!(proc_nullable & BIT(k)));
		}
		fprintf(f, ",\"cpu_pct\":%.1f", (double)p->n[APX_CTL_PROC_CPU_PCT_X10] / 10.0);
		json_derived(f, p);
		fputc('}', f);
	}
	fprintf(f, "],\"findings\":[");
	for (size_t i = 0; i < sv->nfindings; i++) {
		const struct apx_sv_finding *fd = &sv->findings[i];

		fprintf(f, "%s{", i ? "," : "");
		for (int k = 0; k < APX_CTL_FINDING__COUNT; k++) {
			fprintf(f, "%s\"%s\":", k ? "," : "", finding_names[k]);
			if (finding_strings & BIT(k))
				apx_json_str(f, fd->s[k]);
			else
				fprintf(f, "%" PRIu64, fd->n[k]);
		}
		fputc('}', f);
	}
	fprintf(f, "],\"gpus\":[");
	for (size_t i = 0; i < sv->ngpus; i++) {
		const struct apx_sv_gpu *g = &sv->gpus[i];

		fprintf(f, "%s{", i ? "," : "");
		for (int k = 0; k < APX_CTL_GPU__COUNT; k++) {
			fprintf(f, "%s\"%s\":", k ? "," : "", gpu_names[k]);
			if (gpu_strings & BIT(k))
				apx_json_str(f, g->s[k]);
			else
				json_num(f, g->s[k], g->n[k], k != APX_CTL_GPU_INDEX);
		}
		fputc('}', f);
	}
	fprintf(f, "]}\n");
}

static const char *const sort_names[APX_SV_SORT__COUNT] = {
	[APX_SV_SORT_CPU] = "cpu", [APX_SV_SORT_RSS] = "rss", [APX_SV_SORT_PID] = "pid",
	[APX_SV_SORT_AGE] = "age", [APX_SV_SORT_CSW] = "csw", [APX_SV_SORT_GPU] = "gpu",
};

int apx_sv_sort_parse(const char *s)
{
	for (int i = 0; i < APX_SV_SORT__COUNT; i++)
		if (!strcmp(s, sort_names[i]))
			return i;
	return -1;
}

const char *apx_sv_sort_name(enum apx_sv_sort key)
{
	return (unsigned)key < APX_SV_SORT__COUNT ? sort_names[key] : "?";
}

unsigned apx_sv_width(int fd)
{
	struct winsize ws;
	const char *e = getenv("COLUMNS");
	uint64_t v;

	if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		return ws.ws_col;
	if (e && apx_parse_u64(e, 10000, &v) == 0 && v)
		return (unsigned)v;
	return 100;
}
