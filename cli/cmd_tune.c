/*
 * cmd_tune.c - `apx tune [options] script.py [args]` / `apx tune [options] -- COMMAND [args]`:
 * measure what each finding's fix saves in the user's own program
 * instead of trusting the estimate. A baseline run under `apx analyze` gives the findings; for
 * each of the top ones whose fix apx can apply from outside the program (tune_fixes.c's table:
 * environment variables, and apx_site.py's hooks chosen by APX_TUNE_FIXES, never an edit of the
 * user's files), runs without and with the fix, interleaved (A B B A A B ...), each under
 * `apx analyze` into the work folder; each run's steady-state step time is the median of its
 * steps (analysis/diff.h), the measured saving the difference of the two sides' medians of
 * their runs, with a bootstrap 95 % interval over the runs. It prints, per finding, the fix,
 * the estimate, the measured saving and interval, the verdict, whether the work a step stayed
 * the same (apx diff's check on the first pair) and whether the program's printed loss values
 * moved more than between two runs without the fix; findings without an automatic fix get
 * their code change. It ends with the changelog: every environment variable set, every file
 * made (the traces and outputs in the work folder; the hooks in apx analyze's private temp
 * folder, removed after each run; --keep copies them into the work folder), and that the
 * user's files were not touched. Ctrl-C stops the run in progress and the tune. Called from
 * cli/main.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/diff.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/tune.h"
#include "report/doc.h"

#include "base/banned.h"

const char apx_cmd_tune_usage[] =
	"usage: apx tune [--runs N] [--top K] [--fix NAME,...] [--dir DIR] [--keep]\n"
	"                [--steps N] [--time S] [--python PATH]\n"
	"                script.py [args] | -- COMMAND [args]\n"
	"\n"
	"Measure what fixing the top findings saves, in your own program. A first run under\n"
	"apx analyze gives the findings; for each of the top K whose fix apx can apply from\n"
	"outside the program (through the environment and apx analyze's Python hooks: never by\n"
	"editing your files), the program runs N times without and N times with the fix,\n"
	"interleaved (A B B A A B ...), each under apx analyze. Printed per finding: the fix,\n"
	"the estimated saving a step, the measured one (the difference of the two sides' median\n"
	"step times) with a bootstrap 95% interval over the runs, each side's fastest and\n"
	"slowest run (and a warning when they differ by more than the saving, another when a\n"
	"run's p95 step took over 1.75x its median: its steps had not settled), the verdict,\n"
	"whether the work a step stayed the same, and whether the loss values the program\n"
	"printed moved more than between two runs without the fix. Findings apx cannot fix\n"
	"from outside are listed with their code change. The end lists every change made for\n"
	"the runs.\n"
	"\n"
	"Fixes (--fix names; docs/tune.md):\n"
	"  tf32            fp32 matmuls and convolutions on TF32 tensor cores (fp32-matmul)\n"
	"  pin_memory      DataLoader(pin_memory=True), pinned batches copied non_blocking\n"
	"                  (pageable-copy)\n"
	"  workers         DataLoader(num_workers=0) given worker processes (dataloader-workers,\n"
	"                  input-pipeline)\n"
	"  foreach         torch.optim optimizers with fused=True (Adam, AdamW, SGD on CUDA),\n"
	"                  else foreach=True (optimizer-foreach)\n"
	"  set_to_none     zero_grad(set_to_none=True) (zero-grad-memset)\n"
	"  no_empty_cache  torch.cuda.empty_cache() does nothing, expandable segments on\n"
	"                  (allocator-churn)\n"
	"\n"
	"  -r, --runs N         runs a side for each fix, at least 3 (default 3)\n"
	"  -k, --top K          fixes tried, from the top finding down (default 3)\n"
	"      --fix LIST       try only these fixes (comma-separated names above)\n"
	"  -d, --dir DIR        the work folder for the runs' traces and outputs (made; default\n"
	"                       apx-tune.XXXXXX in the current folder); kept after the tune\n"
	"      --keep           also keep a copy of the Python hooks the runs used in DIR/hooks\n"
	"      --steps N        end each run after N optimizer steps of the program (the hooks\n"
	"                       count torch.optim steps and exit the program cleanly there)\n"
	"      --time S         end each run after S seconds (SIGINT to the program, then\n"
	"                       SIGTERM 10 s later, SIGKILL 10 s after that); a run ended so is\n"
	"                       measured like any other, one without steps is reported\n"
	"      --python PATH    Python interpreter for script.py (passed to apx analyze)\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 the tune ran (whatever the verdicts); 1 the baseline run failed or had no\n"
	"steady state to measure, or the work folder could not be made; 2 usage error; 130\n"
	"interrupted (the fix being tried is measured on its complete runs when each side has\n"
	"2 or more).\n";

static volatile sig_atomic_t interrupted;
static volatile pid_t running;

static void on_signal(int sig)
{
	interrupted = 1;
	if (running > 0)	/* its process group: apx analyze and the program */
		kill(-running, sig);
}

struct tune_opts {
	unsigned runs, top;
	const char *only;		/* --fix LIST, NULL: all */
	const char *python;
	char dir[PATH_MAX];
	int keep;
	uint64_t steps;			/* --steps N: APX_TUNE_STEPS, 0 none */
	uint64_t time_ns;		/* --time S, 0 none */
	char **prog;			/* the program's argv (after "--" when given) */
	int dashdash;
};

#define GRACE_NS (10ull * 1000000000ull)	/* --time: SIGINT, then SIGTERM, then SIGKILL */

/* Wait for the run pid (its own process group); with --time, end it at the limit: SIGINT to
 * the group (Python unwinds, its atexit handlers run, the collector closes the trace), SIGTERM
 * GRACE_NS later, SIGKILL after as long again. *stopped: 1 when the limit ended it. */
static int wait_run(const struct tune_opts *o, pid_t pid, int *st, int *stopped)
{
	const struct timespec tick = { 0, 50 * 1000000L };
	uint64_t t0 = apx_clock_ns(CLOCK_MONOTONIC), sent = 0;
	static const int sigs[] = { SIGINT, SIGTERM, SIGKILL };

	*stopped = 0;
	for (;;) {
		pid_t r = waitpid(pid, st, o->time_ns ? WNOHANG : 0);
		uint64_t t;

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (!o->time_ns)
			continue;
		t = apx_clock_ns(CLOCK_MONOTONIC) - t0;
		if (!interrupted && sent < 3 && t >= o->time_ns + sent * GRACE_NS) {
			kill(-pid, sigs[sent++]);
			*stopped = 1;
		}
		nanosleep(&tick, NULL);
	}
}

/* One run: apx analyze of the program into DIR/NAME.apx, its stdout and stderr into
 * DIR/NAME.out and .err, with fixes (NULL: none) in APX_TUNE_FIXES, in a process group of its
 * own (stdin /dev/null). The exit status of apx analyze (the program's), or -1 when it could
 * not run; *stopped: 1 when --time ended it. */
static int run_once(const struct tune_opts *o, const char *name, const struct apx_tune_fix *fx,
		    int *stopped)
{
	char trace[PATH_MAX + 16], out[PATH_MAX + 16], err[PATH_MAX + 16], rep[PATH_MAX + 16];
	char a_apx[] = "apx", a_an[] = "analyze", a_q[] = "-q", a_force[] = "--force";
	char a_o[] = "-o", a_py[] = "--python", a_dd[] = "--", python[PATH_MAX];
	char *argv[512];
	int n = 0, st;
	pid_t pid;

	snprintf(trace, sizeof(trace), "%s/%s.apx", o->dir, name);
	snprintf(out, sizeof(out), "%s/%s.out", o->dir, name);
	snprintf(err, sizeof(err), "%s/%s.err", o->dir, name);
	snprintf(rep, sizeof(rep), "%s/%s.fixes.json", o->dir, name);
	(void)unlink(rep);	/* the hooks add to an existing report: a fresh one a run */
	argv[n++] = a_apx;
	argv[n++] = a_an;
	argv[n++] = a_q;
	argv[n++] = a_force;
	argv[n++] = a_o;
	argv[n++] = trace;
	if (o->python) {
		snprintf(python, sizeof(python), "%s", o->python);
		argv[n++] = a_py;
		argv[n++] = python;
	}
	if (o->dashdash)
		argv[n++] = a_dd;
	for (size_t i = 0; o->prog[i] && n < 511; i++)
		argv[n++] = o->prog[i];
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int fi = open("/dev/null", O_RDONLY | O_CLOEXEC);

		(void)setpgid(0, 0);	/* --time and Ctrl-C reach the program through it */
		if (fo < 0 || fe < 0 || fi < 0 || dup2(fo, STDOUT_FILENO) < 0 ||
		    dup2(fe, STDERR_FILENO) < 0 || dup2(fi, STDIN_FILENO) < 0)
			_exit(127);
		if (o->steps) {
			char v[32];

			snprintf(v, sizeof(v), "%llu", (unsigned long long)o->steps);
			setenv("APX_TUNE_STEPS", v, 1);
		}
		if (fx) {
			setenv("APX_TUNE_FIXES", fx->hook, 1);
			setenv("APX_TUNE_REPORT", rep, 1);
			if (fx->env_name)
				setenv(fx->env_name, fx->env_value, 1);
		} else {
			unsetenv("APX_TUNE_FIXES");
			unsetenv("APX_TUNE_REPORT");
		}
		/* APX_TUNE_ANALYZER: a stand-in for apx analyze (the tests' without a GPU:
		 * tests/integration/tune-check.sh), given the same arguments */
		if (getenv("APX_TUNE_ANALYZER"))
			execv(getenv("APX_TUNE_ANALYZER"), argv);
		else
			execv("/proc/self/exe", argv);
		_exit(127);
	}
	(void)setpgid(pid, pid);	/* as the child does: whichever runs first */
	running = pid;
	if (interrupted)		/* Ctrl-C before running was set: on_signal missed it */
		kill(-pid, SIGINT);
	if (wait_run(o, pid, &st, stopped) < 0) {
		running = 0;
		return -1;
	}
	running = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A run's trace read back: its model, findings and median step time (0 and why when it has no
 * steps to measure). */
struct tune_run {
	struct apx_model *m;
	struct apx_findings *fd;
	double median_ns;
	double p95_ns;			/* its slowest steps: p95 of the steady steps */
	int status;
};

static void run_free(struct tune_run *r)
{
	if (r->m)
		apx_model_free(r->m);
	free(r->fd);
	memset(r, 0, sizeof(*r));
}

static int run_load(const struct tune_opts *o, const char *name, struct tune_run *r,
		    char *why, size_t cap)
{
	char trace[PATH_MAX + 16];
	struct apx_diag dg = { 0 };
	double *x = NULL;
	size_t n = 0;
	int k;

	snprintf(trace, sizeof(trace), "%s/%s.apx", o->dir, name);
	r->m = apx_model_new();
	r->fd = calloc(1, sizeof(*r->fd));
	if (!r->m || !r->fd) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	if ((k = apx_model_add_file(r->m, trace, &dg)) < 0 ||
	    (r->m->whatif_savings = 1, k = apx_model_finish(r->m)) < 0) {
		snprintf(why, cap, "%s", dg.msg[0] ? dg.msg : strerror(-k));
		return k;
	}
	apx_rules_run(r->m, r->fd);
	if ((k = apx_diff_step_times(r->m, &x, &n)) < 0) {
		if (apx_diff_steps_check(r->m, why, cap) == 0)
			snprintf(why, cap, "%s", strerror(-k));
		return k;
	}
	r->median_ns = x[n / 2];
	r->p95_ns = x[n - 1 - n / 20];
	free(x);
	return 0;
}

/* The numbers on the lines of a run's stdout that name a loss, into v (at most cap). */
static size_t loss_values(const struct tune_opts *o, const char *name, double *v, size_t cap)
{
	char path[PATH_MAX + 16], line[4096];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.out", o->dir, name);
	if (!(f = fopen(path, "r")))
		return 0;
	while (n < cap && fgets(line, sizeof(line), f)) {
		char *p = strcasestr(line, "loss");

		while (p && *p && n < cap) {
			char *end;
			double d;

			if ((*p >= '0' && *p <= '9') || ((*p == '-' || *p == '.') && p[1] >= '0' &&
							 p[1] <= '9')) {
				d = strtod(p, &end);
				if (end > p && isfinite(d))
					v[n++] = d;
				p = end > p ? end : p + 1;
			} else {
				p++;
			}
		}
	}
	fclose(f);
	return n;
}

/* The largest relative difference of two runs' loss values; -1 when their counts differ or
 * there are none. */
static double loss_gap(const double *a, size_t na, const double *b, size_t nb)
{
	double most = 0;

	if (!na || na != nb)
		return -1;
	for (size_t i = 0; i < na; i++) {
		double s = fabs(a[i]) > fabs(b[i]) ? fabs(a[i]) : fabs(b[i]);
		double d = s > 0 ? fabs(a[i] - b[i]) / s : 0;

		most = d > most ? d : most;
	}
	return most;
}

/* The fix's own entry in a run's hooks report (apx_site.py's APX_TUNE_REPORT file:
 * {"fixes": {"NAME": {"applied": true, "KEY": N, ...}}}, entries flat), read into buf and cut
 * at the entry's end; NULL when the file or the entry is not there. */
static char *fix_entry(const struct tune_opts *o, const char *name, const struct apx_tune_fix *fx,
		       char *buf, size_t cap)
{
	char path[PATH_MAX + 128], key[96];
	size_t n;
	char *p, *end;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.fixes.json", o->dir, name);
	if (!(f = fopen(path, "r")))
		return NULL;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = 0;
	snprintf(key, sizeof(key), "\"%s\"", fx->hook);
	if (!(p = strstr(buf, key)))
		return NULL;
	if ((end = strchr(p, '}')))
		*end = 0;
	return p;
}

/* Whether a run's hooks said the fix took effect ("applied": true in its entry). */
static int fix_applied(const struct tune_opts *o, const char *name, const struct apx_tune_fix *fx)
{
	char buf[4096];
	char *p = fix_entry(o, name, fx, buf, sizeof(buf));

	if (!p || !(p = strstr(p, "\"applied\"")))
		return 0;
	p = strchr(p, ':');
	while (p && (*p == ':' || *p == ' '))
		p++;
	return p && !strncmp(p, "true", 4);
}

/* A count in a run's hooks report, in the fix's entry: {"fixes": {"tf32": {"KEY": N, ...}}}
 * (apx_site.py writes the entries flat, one object each); 0 when absent or unreadable. tf32
 * counts its overrides by the API the program used: overrides_allow_tf32 (the flags,
 * set_float32_matmul_precision) and overrides_fp32_precision (torch 2.9+). */
static uint64_t fix_report_count(const struct tune_opts *o, const char *name,
				 const struct apx_tune_fix *fx, const char *key)
{
	char buf[4096], k[96], num[24];
	char *p = fix_entry(o, name, fx, buf, sizeof(buf));
	uint64_t v = 0;
	size_t len;

	snprintf(k, sizeof(k), "\"%s\"", key);
	if (!p || !(p = strstr(p, k)) || !(p = strchr(p + strlen(k), ':')))
		return 0;
	p += strspn(p + 1, " ") + 1;
	len = strspn(p, "0123456789");
	if (!len || len >= sizeof(num))
		return 0;
	memcpy(num, p, len);
	num[len] = 0;
	return apx_parse_u64(num, UINT64_MAX, &v) < 0 ? 0 : v;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fmt_ms(char *b, size_t cap, double ns)
{
	snprintf(b, cap, "%.3f ms", ns / 1e6);
}

#define LOSS_MAX 4096
/* A run whose p95 step is this many times its median step has not settled: the development
 * suite's 60-step traces stay under 1.6 (host-bound ones with their outliers), apx tune's
 * 30-step runs of the loader program, a young process loading and pinning every batch on its
 * main thread, went 1.9-2.7 (tests/fixtures/tune) */
#define UNSTEADY_P95 1.75

/* One fix tried: N runs a side, interleaved; its line printed. */
static int try_fix(const struct tune_opts *o, const struct apx_finding *f,
		   const struct apx_tune_fix *fx, double estimate_ns, FILE *out)
{
	double a[64], b[64], lo = 0, hi = 0, saving, base_gap = -1, fix_gap = -1;
	double unsteady[2] = { 0, 0 };	/* each side's largest p95 / median step of a run */
	static double la[LOSS_MAX], lb[LOSS_MAX], l0[LOSS_MAX];
	size_t na = 0, nb = 0, nl0 = 0, nla = 0, nlb = 0;
	struct tune_run first[2] = { { 0 } };
	char name[96], why[256], b1[32], b2[32], b3[32], b4[32], title[256];
	unsigned failed[2] = { 0, 0 }, applied = 0;
	uint64_t ov_legacy = 0, ov_new = 0;	/* tf32: the program's 'off's overridden, by API */
	int work = -1, stopped;

	fprintf(stderr, "apx tune: %s: %u runs without and %u with the fix\n", fx->name, o->runs,
		o->runs);
	for (unsigned i = 0; i < 2 * o->runs && !interrupted; i++) {
		/* A B B A A B ...: side of run i */
		int side = (i % 4 == 1 || i % 4 == 2), status;
		struct tune_run r = { 0 };

		snprintf(name, sizeof(name), "%s-%s-%u", fx->name, side ? "fix" : "base", i / 2);
		status = run_once(o, name, side ? fx : NULL, &stopped);
		if (interrupted)	/* Ctrl-C ended this run: the ones before it are measured */
			break;
		if (stopped && status != 0)	/* ended by --time: measured if it has steps */
			status = 0;
		if (status != 0 || run_load(o, name, &r, why, sizeof(why)) < 0) {
			failed[side]++;
			apx_term_safe_str(title, sizeof(title), why);	/* may name a file */
			fprintf(stderr, "apx tune: %s: run %s: %s\n", fx->name, name,
				status ? "the program failed (its output is in the .err file)"
				       : title);
			run_free(&r);
			continue;
		}
		applied += side && fix_applied(o, name, fx);
		if (side && !strcmp(fx->hook, "tf32")) {
			ov_legacy += fix_report_count(o, name, fx, "overrides_allow_tf32");
			ov_new += fix_report_count(o, name, fx, "overrides_fp32_precision");
		}
		if (side)
			b[nb++] = r.median_ns;
		else
			a[na++] = r.median_ns;
		if (r.median_ns > 0 && r.p95_ns / r.median_ns > unsteady[side])
			unsteady[side] = r.p95_ns / r.median_ns;
		if (side ? !nlb : !nla) {	/* the first loss values of each side */
			if (side)
				nlb = loss_values(o, name, lb, LOSS_MAX);
			else
				nla = loss_values(o, name, la, LOSS_MAX);
		} else if (!side && !nl0) {	/* a second run without: the noise */
			nl0 = loss_values(o, name, l0, LOSS_MAX);
		}
		if (!first[side].m)
			first[side] = r;
		else
			run_free(&r);
	}
	apx_term_safe_str(title, sizeof(title), f->title);
	fprintf(out, "\n%s: ", f->rule);
	apx_text_wrap(out, (int)strlen(f->rule) + 2, 2, title);
	fputs("  fix        ", out);
	apx_text_wrap(out, 13, 13, fx->what);
	if (na < 2 || nb < 2) {
		if (interrupted)
			fprintf(out, "  verdict    not measured: interrupted after %zu complete runs "
				"without and %zu with the fix (2 a side at least)\n", na, nb);
		else
			fprintf(out, "  verdict    not measured: %u of %u runs without and %u of %u "
				"with the fix failed\n", failed[0], o->runs, failed[1], o->runs);
		goto out;
	}
	if (interrupted)
		fprintf(out, "  stopped    interrupted after %zu of %u runs without and %zu of %u "
			"with the fix: measured on those\n", na, o->runs, nb, o->runs);
	saving = median_of(a, na) - median_of(b, nb);
	/* apx_diff_median_diff_ci gives median(b) - median(a): the saving is its negative */
	if (apx_diff_median_diff_ci(a, na, b, nb, APX_DIFF_RESAMPLES, APX_DIFF_SEED, &lo,
				    &hi) < 0)
		lo = hi = -saving;
	fmt_ms(b1, sizeof(b1), median_of(a, na));
	fmt_ms(b2, sizeof(b2), median_of(b, nb));
	fprintf(out, "  step       %s without, %s with (medians of %zu and %zu runs)\n", b1, b2,
		na, nb);
	fmt_ms(b1, sizeof(b1), a[0]);	/* median_of sorted both sides */
	fmt_ms(b2, sizeof(b2), a[na - 1]);
	fmt_ms(b3, sizeof(b3), b[0]);
	fmt_ms(b4, sizeof(b4), b[nb - 1]);
	fprintf(out, "  runs       without %s to %s, with %s to %s (each run's median step)\n", b1,
		b2, b3, b4);
	if (a[na - 1] - a[0] > fabs(saving) || b[nb - 1] - b[0] > fabs(saving))
		fprintf(out, "  spread     the runs of one side differ by more than the saving: "
			"the program's speed\n             varies from process to process here; "
			"more runs (--runs) make the interval\n             trustworthy\n");
	if (unsteady[0] > UNSTEADY_P95 || unsteady[1] > UNSTEADY_P95)
		fprintf(out, "  unsteady   a run's p95 step took %.1fx its median step (%s): its steps "
			"had not\n             settled; short runs measure the program's start-up, "
			"more steps (--steps)\n             its settled speed\n",
			fmax(unsteady[0], unsteady[1]),
			unsteady[0] >= unsteady[1] ? "without the fix" : "with the fix");
	fmt_ms(b1, sizeof(b1), estimate_ns);
	fmt_ms(b2, sizeof(b2), saving);
	fmt_ms(b3, sizeof(b3), -hi);
	fmt_ms(b4, sizeof(b4), -lo);
	fprintf(out, "  saving     estimated %s a step; measured %s, 95%% interval [%s, %s]\n", b1,
		b2, b3, b4);
	if (saving > 0 && estimate_ns > 0)
		fprintf(out, "  estimate   %.2fx the measured saving\n", estimate_ns / saving);
	if (applied < nb)
		fprintf(out, "  applied    in %u of the %zu runs with the fix (the others did not "
			"reach what it changes)\n", applied, nb);
	if (ov_legacy || ov_new)	/* the program turned TF32 off: through which API */
		fprintf(out, "  overrode   the program's TF32 'off' in the %zu runs with the fix: "
			"%llu through allow_tf32 / set_float32_matmul_precision, %llu through "
			"fp32_precision (torch 2.9+)\n", nb, (unsigned long long)ov_legacy,
			(unsigned long long)ov_new);
	fprintf(out, "  verdict    %s\n", -hi > 0 ? "saves time (the interval leaves 0 out)"
					     : -lo < 0 ? "slower with the fix"
						       : "no change outside the noise");
	if (first[0].m && first[1].m) {
		static struct apx_diff df;

		if (apx_diff_compute(first[0].m, first[0].fd, first[1].m, first[1].fd, 200, &df) ==
		    0) {
			work = (int)df.work_differs;
			apx_diff_release(&df);
		}
	}
	if (work == 0)
		fprintf(out, "  work       the same a step (kernels, copies, bytes copied within "
			"10%%)\n");
	else if (work == APX_DIFF_WORK_KERNELS && fx->fewer_kernels)
		fprintf(out, "  work       the same copies and bytes a step; the kernels differ, as "
			"this fix intends (fewer launches for the same update)\n");
	else if (work > 0)
		fprintf(out, "  work       differs a step (%s%s%s%s%s): a faster step that does "
			"less is no saving\n", work & APX_DIFF_WORK_KERNELS ? "kernels" : "",
			(work & APX_DIFF_WORK_KERNELS) && (work & ~APX_DIFF_WORK_KERNELS) ? ", " : "",
			work & APX_DIFF_WORK_COPIES ? "copies" : "",
			(work & APX_DIFF_WORK_COPIES) && (work & APX_DIFF_WORK_BYTES) ? ", " : "",
			work & APX_DIFF_WORK_BYTES ? "bytes copied" : "");
	base_gap = loss_gap(la, nla, l0, nl0);
	fix_gap = loss_gap(la, nla, lb, nlb);
	if (!nla)
		fprintf(out, "  results    not compared: the program printed no loss values\n");
	else if (fix_gap < 0)
		fprintf(out, "  results    differ: %zu loss values without the fix, %zu with\n", nla,
			nlb);
	else if (fix_gap <= (base_gap > 0 ? 2 * base_gap : 0) + fx->tolerance)
		fprintf(out, "  results    loss values within %.2g relative (runs without the fix: "
			"%.2g apart)\n", fix_gap, base_gap > 0 ? base_gap : 0);
	else
		fprintf(out, "  results    CHANGED: loss values %.2g apart (runs without the fix: "
			"%.2g; the fix allows %.2g)\n", fix_gap, base_gap > 0 ? base_gap : 0,
			fx->tolerance);
out:
	run_free(&first[0]);
	run_free(&first[1]);
	return 0;
}

static int make_dir(struct tune_opts *o)
{
	if (o->dir[0]) {
		if (mkdir(o->dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	}
	snprintf(o->dir, sizeof(o->dir), "apx-tune.XXXXXX");
	return mkdtemp(o->dir) ? 0 : -errno;
}

/* --keep: the hooks the runs used, copied from beside the collector into DIR/hooks. */
static void keep_hooks(const struct tune_opts *o, FILE *out)
{
	char src[PATH_MAX + 32], dst[PATH_MAX + 32], self[PATH_MAX], buf[8192];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	FILE *in, *to;
	size_t k;

	if (n <= 0)
		return;
	self[n] = 0;
	if (!(slash = strrchr(self, '/')))
		return;
	*slash = 0;
	snprintf(src, sizeof(src), "%s/apx_site.py", self);
	if (access(src, R_OK) < 0)
		snprintf(src, sizeof(src), "%s/../lib/apx/apx_site.py", self);
	snprintf(dst, sizeof(dst), "%s/hooks", o->dir);
	(void)mkdir(dst, 0755);
	snprintf(dst, sizeof(dst), "%s/hooks/sitecustomize.py", o->dir);
	if (!(in = fopen(src, "r")))
		return;
	if ((to = fopen(dst, "w"))) {
		while ((k = fread(buf, 1, sizeof(buf), in)) > 0)
			fwrite(buf, 1, k, to);
		fclose(to);
		fprintf(out, "  %s: a copy of the hooks the runs used (--keep)\n", dst);
	}
	fclose(in);
}

static void changelog(const struct tune_opts *o, const char *const *tried, size_t ntried,
		      FILE *out)
{
	char dir[PATH_MAX * 2];

	apx_term_safe_str(dir, sizeof(dir), o->dir);
	fprintf(out, "\nChanges made for the runs\n");
	fprintf(out, "  your files: none changed; no file of the program was edited\n");
	fprintf(out, "  environment of the runs with a fix: APX_TUNE_FIXES=<the fix's name>,\n"
		"    APX_TUNE_REPORT=<its run's .fixes.json>\n");
	if (o->steps)
		fprintf(out, "  environment of every run: APX_TUNE_STEPS=%llu (--steps: the hooks end "
			"the program\n    after that many optimizer steps)\n",
			(unsigned long long)o->steps);
	if (o->time_ns)
		fprintf(out, "  every run ended after %.1f s at most (--time: SIGINT to its process "
			"group)\n", (double)o->time_ns / 1e9);
	for (size_t i = 0; i < ntried; i++) {
		const struct apx_tune_fix *fx = apx_tune_fix_find(tried[i]);

		if (fx && fx->env_name)
			fprintf(out, "    %s=%s (%s)\n", fx->env_name, fx->env_value, fx->name);
	}
	fprintf(out, "  the hooks: apx analyze copies apx_site.py as sitecustomize.py into a "
		"private temp folder\n    first on PYTHONPATH (chaining to your own "
		"sitecustomize) and removes it after each run\n");
	fprintf(out, "  %s/: every run's trace (.apx), output (.out, .err) and the fixes its\n"
		"    hooks applied (.fixes.json); kept\n", dir);
	if (o->keep)
		keep_hooks(o, out);
}

int apx_cmd_tune(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' }, { "top", required_argument, NULL, 'k' },
		{ "fix", required_argument, NULL, 'F' }, { "dir", required_argument, NULL, 'd' },
		{ "keep", no_argument, NULL, 'K' }, { "python", required_argument, NULL, 'P' },
		{ "steps", required_argument, NULL, 'S' }, { "time", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct tune_opts o = { .runs = 3, .top = 3 };
	struct tune_run base = { 0 };
	const char *tried[APX_FINDINGS_MAX];
	size_t ntried = 0;
	char why[256], b1[32], dir[PATH_MAX * 2];
	struct sigaction sa = { .sa_handler = on_signal };
	int c, status, ended;
	FILE *out;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:r:k:d:h", opts, NULL)) != -1) {
		uint64_t v;

		switch (c) {
		case 'r':
			if (apx_parse_u64(optarg, 32, &v) < 0 || v < 3)
				return apx_cli_usage_error("tune", "--runs takes a number from 3 to "
							   "32, not '%s'", optarg);
			o.runs = (unsigned)v;
			break;
		case 'k':
			if (apx_parse_u64(optarg, 16, &v) < 0 || !v)
				return apx_cli_usage_error("tune", "--top takes a number from 1 to "
							   "16, not '%s'", optarg);
			o.top = (unsigned)v;
			break;
		case 'F':
			if (apx_tune_fix_list_check(optarg, why, sizeof(why)) < 0)
				return apx_cli_usage_error("tune", "--fix: %s", why);
			o.only = optarg;
			break;
		case 'd':
			if (strlen(optarg) >= sizeof(o.dir))
				return apx_cli_usage_error("tune", "--dir: the path is too long");
			snprintf(o.dir, sizeof(o.dir), "%s", optarg);
			break;
		case 'K':
			o.keep = 1;
			break;
		case 'P':
			o.python = optarg;
			break;
		case 'S':
			if (apx_parse_u64(optarg, 100000000, &v) < 0 || !v)
				return apx_cli_usage_error("tune", "--steps takes a number of steps "
							   "from 1, not '%s'", optarg);
			o.steps = v;
			break;
		case 'T':
			if (apx_parse_seconds_ns(optarg, &o.time_ns) < 0 || !o.time_ns)
				return apx_cli_usage_error("tune", "--time takes seconds above 0 as "
							   "a decimal number (e.g. 90), not '%s'",
							   optarg);
			break;
		case 'h':
			fputs(apx_cmd_tune_usage, stdout);
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("tune", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return apx_cli_unknown_option("tune", opts, argv[optind - 1]);
		}
	}
	o.dashdash = optind > 1 && !strcmp(argv[optind - 1], "--");
	if (optind >= argc)
		return apx_cli_usage_error("tune", "give the program: script.py [args] or -- "
					   "COMMAND [args]");
	o.prog = argv + optind;
	if (make_dir(&o) < 0) {
		apx_term_safe_str(dir, sizeof(dir), o.dir);
		apx_log_errno(-errno, "cannot make the work folder '%s'", dir);
		return APX_EXIT_FAIL;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	out = apx_cli_term_open();
	fprintf(stderr, "apx tune: baseline run\n");
	status = run_once(&o, "baseline", NULL, &ended);
	if (interrupted)
		goto stopped;
	if (status != 0 && !ended) {
		apx_term_safe_str(dir, sizeof(dir), o.dir);
		apx_log_error("the baseline run failed (exit status %d); its output is in "
			      "%s/baseline.err", status, dir);
		apx_cli_term_close(out);
		return APX_EXIT_FAIL;
	}
	if (run_load(&o, "baseline", &base, why, sizeof(why)) < 0) {
		apx_term_safe_str(dir, sizeof(dir), why);	/* may name a file */
		apx_log_error("the baseline run has nothing to measure: %s", dir);
		run_free(&base);
		apx_cli_term_close(out);
		return APX_EXIT_FAIL;
	}
	fmt_ms(b1, sizeof(b1), base.median_ns);
	fprintf(out, "Baseline: %s a step (median of the steady state's steps); %zu finding%s\n",
		b1, base.fd->n, base.fd->n == 1 ? "" : "s");
	for (size_t i = 0; i < base.fd->n && ntried < o.top && !interrupted; i++) {
		const struct apx_finding *f = &base.fd->f[i];
		const struct apx_tune_fix *fx = apx_tune_fix_for(f);
		double est = base.m->steady.count ? f->saving_ns / (double)base.m->steady.count : 0;
		char title[256], fix[1300];

		if (!f->rule || !apx_finding_in_main(base.fd, f) || f->startup)
			continue;
		if (!fx || (o.only && !apx_tune_fix_in_list(o.only, fx->name))) {
			apx_term_safe_str(title, sizeof(title), f->title);
			apx_term_safe_str(fix, sizeof(fix), f->fix);
			fprintf(out, "\n%s: ", f->rule);
			apx_text_wrap(out, (int)strlen(f->rule) + 2, 2, title);
			fprintf(out, "  fix        not applied from outside the program (a code "
				"change):\n");
			for (char *p = fix, *nl; p && *p; p = nl ? nl + 1 : NULL) {
				nl = strchr(p, '\n');
				fprintf(out, "             %.*s\n", nl ? (int)(nl - p) : (int)strlen(p),
					p);
			}
			continue;
		}
		tried[ntried++] = fx->name;
		try_fix(&o, f, fx, est, out);
	}
	if (!ntried)
		fprintf(out, "\nNo finding has a fix apx can apply from outside the program.\n");
	changelog(&o, tried, ntried, out);
	run_free(&base);
	apx_cli_term_close(out);
	if (interrupted)
		apx_log_error("interrupted; the runs' files are in the work folder");
	return interrupted ? 130 : APX_EXIT_OK;
stopped:
	apx_log_error("interrupted; the runs' files are in the work folder");
	apx_cli_term_close(out);
	return 130;
}
