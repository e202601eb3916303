/*
 * rules.c - the table of report rules (one file each under rules/), running them, ranking
 * their findings by estimated saving, and the text helpers rules share. Called by apx report.
 * Findings about start-up (f->startup) rank under every steady-state finding unless start-up
 * dominates the run (its GPU busy time exceeds the steady window's); the steady findings'
 * savings together never pass the steady window, the start-up's never its span, and the part
 * of them that is kernel time (f->kernel_ns) never the GPU's kernel busy time: a kernel ns
 * hidden behind a copy cannot also be saved by a faster kernel (a finding that would is
 * capped, saying so). A finding whose fix another one's needs first ranks above it
 * (prerequisites_first: per-step syncs above launch-bound). An entry with an observe function is a rule nvperfd runs too, on what
 * it saw of a process (procobs.c's table holds the same entry). The rules of several ranks
 * (rank_rules) run only on traces with NCCL collectives.
 */
#include "analysis/findings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/procobs.h"
#include "analysis/views.h"

#include "base/banned.h"

/* TRACE: a rule on traces only; BOTH: also on what nvperfd saw of a process (obs_<name>.c) */
#define TRACE(id_, title_, name) { .id = id_, .title = title_, .run = apx_rule_##name }
#define BOTH(id_, title_, name)                                                                 \
	{ .id = id_, .title = title_, .run = apx_rule_##name, .observe = apx_obs_##name }

static const struct apx_rule rules[] = {
	BOTH("pageable-copy", "host<->device copies from pageable memory", pageable_copy),
	TRACE("sync-copy", "synchronous copies and memsets that block the host", sync_copy),
	TRACE("sync-frequency", "too many synchronizations", sync_frequency),
	TRACE("gpu-starvation", "GPU idle gaps", gpu_starvation),
	TRACE("launch-bound", "kernels shorter than the gaps between them", launch_bound),
	TRACE("copy-overlap", "copies not overlapped with compute", copy_overlap),
	TRACE("unified-memory", "unified-memory faults and migrations", unified_memory),
	BOTH("memory-capacity", "device memory near capacity, pinned memory", memory_capacity),
	TRACE("repeated-copy", "the same host buffer copied again and again", repeated_copy),
	TRACE("fp32-matmul", "float32 matrix work not on tensor cores", fp32_matmul),
	TRACE("small-copies", "many small copies", small_copies),
	TRACE("input-pipeline", "the input pipeline starving the GPU", input_pipeline),
	TRACE("redundant-replication", "the same data held in host and device memory",
	      redundant_replication),
	TRACE("graph-recapture", "a CUDA graph captured again every iteration", graph_recapture),
	TRACE("optimizer-foreach", "tensors updated one at a time, not by foreach/fused kernels",
	      optimizer_foreach),
	TRACE("zero-grad-memset", "gradients zeroed by kernels every step", zero_grad_memset),
	TRACE("allocator-churn", "the GPU idle while the host is in the CUDA allocator",
	      allocator_churn),
	TRACE("dataloader-workers", "no DataLoader worker processes while the GPU waits for data",
	      dataloader_workers),
	BOTH("l2-persistence", "L2 persistence: a window worth setting, or set too large",
	     l2_persistence),
};

/* The rules of several ranks (ranks.h): they run, and have a check, only when the
 * trace holds NCCL collectives (m->ranks), so that a single-process report is unchanged. */
static const struct apx_rule rank_rules[] = {
	TRACE("exposed-communication", "collectives no compute overlaps", exposed_communication),
	TRACE("straggler", "a rank that arrives last at the collectives", straggler),
	TRACE("small-collectives", "many small, latency-bound collectives", small_collectives),
	TRACE("unbalanced-memory", "one rank holding much more device memory than the others",
	      unbalanced_memory),
	TRACE("network-bound", "collectives across hosts at the NICs' line rate, exposed",
	      network_bound),
};

const struct apx_rule *apx_rules(size_t *ret_n)
{
	*ret_n = sizeof(rules) / sizeof(rules[0]);
	return rules;
}

const struct apx_rule *apx_rank_rules(size_t *ret_n)
{
	*ret_n = sizeof(rank_rules) / sizeof(rank_rules[0]);
	return rank_rules;
}

/* Estimated savings first, largest first; then findings without an estimate, by severity;
 * ties keep the order in which they were added (the output is the same on every run). */
static int cmp_saving(const void *a, const void *b)
{
	const struct apx_finding *x = a, *y = b;

	if (x->saving_estimated != y->saving_estimated)
		return x->saving_estimated ? -1 : 1;
	if (x->saving_ns != y->saving_ns)
		return x->saving_ns > y->saving_ns ? -1 : 1;
	if (x->severity != y->severity)
		return y->severity - x->severity;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* A fix that another one's needs first ranks above it: a step that synchronizes the host
 * (.item(), .cpu()) cannot be captured in a CUDA graph, which is launch-bound's fix, so a
 * sync-frequency finding whose syncs recur in most steps moves up to just above launch-bound,
 * and both say why. */
static void prerequisites_first(const struct apx_model *m, struct apx_findings *out)
{
	size_t lb = out->n, sf = out->n;

	for (size_t i = 0; i < out->n; i++) {
		if (!apx_finding_in_main(out, &out->f[i]) || out->f[i].startup)
			continue;
		if (!strcmp(out->f[i].rule, "launch-bound") && lb == out->n)
			lb = i;
		else if (!strcmp(out->f[i].rule, "sync-frequency") && sf == out->n)
			sf = i;
	}
	if (lb >= out->n || sf >= out->n || sf < lb || !m->steady.count ||
	    (double)m->gpu.gaps_by_cause[APX_IDLE_SYNC] < 0.8 * (double)m->steady.count)
		return;
	{
		struct apx_finding f = out->f[sf];

		memmove(&out->f[lb + 1], &out->f[lb], (sf - lb) * sizeof(out->f[0]));
		out->f[lb] = f;
	}
	apx_text_append(out->f[lb].model, sizeof(out->f[lb].model), "; ranked above launch-bound: "
			"a step that synchronizes cannot be captured in a CUDA graph, its fix");
	apx_text_append(out->f[lb + 1].fix, sizeof(out->f[lb + 1].fix), "\nFirst remove the host "
			"synchronizations from the step (sync-frequency): a graph cannot hold them.");
}

/* Findings the producer wrote (nvperfd's summaries) join the ranking as they are; a saving of
 * 0 is one the producer did not estimate (nvperfd's findings are thresholds it saw crossed).
 * They are added after the rules ran, into the room the rules left: a run of many summaries
 * cannot push a rule's finding out of the cap (the ones left out are counted). */
/* The engine's id for a rule id a producer wrote (the report's and nvperfd's tables, and the
 * ids older nvperfd summaries used); NULL when the id is none of them. */
static const char *known_rule_id(const char *id, size_t len)
{
	static const char *const renamed[][2] = { { "gpu-mem", "memory-capacity" },
						  { "l2-persist", "l2-persistence" } };
	const struct apx_rule *tab[3];
	size_t n[3];

	if (!id)
		return NULL;
	tab[0] = apx_rules(&n[0]);
	tab[1] = apx_procobs_rules(&n[1]);
	tab[2] = apx_rank_rules(&n[2]);
	for (size_t t = 0; t < 3; t++)
		for (size_t i = 0; i < n[t]; i++)
			if (strlen(tab[t][i].id) == len && !memcmp(tab[t][i].id, id, len))
				return tab[t][i].id;
	for (size_t i = 0; i < sizeof(renamed) / sizeof(renamed[0]); i++)
		if (strlen(renamed[i][0]) == len && !memcmp(renamed[i][0], id, len))
			return known_rule_id(renamed[i][1], strlen(renamed[i][1]));
	return NULL;
}

static void add_recorded(const struct apx_model *m, struct apx_findings *out)
{
	for (size_t i = 0; i < m->recorded.n; i++) {
		const struct apx_an_recorded *r = APX_VEC_AT(&m->recorded, struct apx_an_recorded, i);
		const char *producer = r->file < m->nfiles && m->files[r->file].producer[0]
					       ? m->files[r->file].producer : "the trace's producer";
		const char *id = known_rule_id((const char *)r->rule, r->rule_len);
		struct apx_finding *f = apx_finding_add(out, m, id ? id : "recorded",
							r->severity ? r->severity : 1,
							(double)r->saving_ns, r->confidence_pct);

		if (!f) {
			out->recorded_dropped = m->recorded.n - i;
			return;
		}
		f->recorded_by = producer;
		f->saving_estimated = r->saving_ns > 0;
		snprintf(f->title, sizeof(f->title), "%.*s", (int)r->title_len, r->title ? (const char *)r->title : "");
		snprintf(f->evidence, sizeof(f->evidence), "%.*s", (int)r->evidence_len,
			 r->evidence ? (const char *)r->evidence : "");
		snprintf(f->fix, sizeof(f->fix), "%.*s", (int)r->fix_len, r->fix ? (const char *)r->fix : "");
		if (id)
			snprintf(f->model, sizeof(f->model), "recorded by %s%s", producer,
				 f->saving_estimated ? "" : ", which estimates no saving");
		else
			snprintf(f->model, sizeof(f->model), "recorded by %s (rule %.*s)%s", producer,
				 (int)r->rule_len, r->rule ? (const char *)r->rule : "?",
				 f->saving_estimated ? "" : ", which estimates no saving");
	}
}

/* Why no rule can measure a run without a GPU trace ("" when it has one). */
static void untraced_why(const struct apx_model *m, char *buf, size_t cap)
{
	buf[0] = 0;
	if (m->no_gpu_trace)
		snprintf(buf, cap, "no GPU trace: %s (trace kernels and copies with `apx analyze`)",
			 m->nfiles > 1 ? "nvperfd summaries" : "an nvperfd summary");
}

#define MINOR_FLOOR_NS 1e6	/* a run without steps: findings under 1 ms are minor */

/* A finding whose estimated saving is under 1 % of a step (steps x 1 % of the median step
 * time, over the run) is taken out of the findings; its rule's check says what it would save
 * (when none of the rule's findings is left). A start-up finding, a one-off, is weighed
 * against the run: under 1 % of its collected time (or of a step's floor, the larger) it is
 * taken out too. Savings of 0 are kept: they are findings the rule does not estimate (memory
 * capacity); but not one the cap took to 0. */
static void demote_minor(const struct apx_model *m, struct apx_findings *out,
			 const uint8_t *capped)
{
	const struct apx_an_steps *st = &m->steady;
	double floor = st->count ? 0.01 * (double)st->median_ns * (double)st->count : MINOR_FLOOR_NS;
	double run_floor = 0.01 * (double)m->collected_ns;
	double demoted[APX_RULES_MAX];		/* by result: the largest saving taken out */
	uint8_t gone[APX_RULES_MAX] = { 0 };	/* ... and it was capped to nothing */
	uint8_t startup[APX_RULES_MAX] = { 0 };	/* ... and it was a start-up finding */
	size_t k = 0;

	for (size_t r = 0; r < APX_RULES_MAX; r++)
		demoted[r] = -1;	/* none */
	for (size_t i = 0; i < out->n; i++) {
		struct apx_finding *f = &out->f[i];
		double fl = f->startup && run_floor > floor ? run_floor : floor;

		if (!((f->saving_ns > 0 || capped[i]) && f->saving_ns < fl)) {
			out->f[k++] = *f;
			continue;
		}
		for (size_t r = 0; r < out->nresults; r++)
			if (!strcmp(out->results[r].rule, f->rule) && f->saving_ns > demoted[r]) {
				demoted[r] = f->saving_ns;
				gone[r] = capped[i] && f->saving_ns <= 0;
				startup[r] = f->startup && fl == run_floor;
			}
	}
	out->n = k;
	for (size_t r = 0; r < out->nresults; r++) {
		struct apx_rule_result *res = &out->results[r];
		char b1[32], b2[32];
		int left = 0;

		if (demoted[r] < 0 || res->status != APX_RULE_FIRED)
			continue;
		for (size_t i = 0; i < out->n && !left; i++)
			left = !strcmp(out->f[i].rule, res->rule);
		if (left)
			continue;
		res->status = APX_RULE_MINOR;
		if (gone[r])
			snprintf(res->why, sizeof(res->why), "its time is all claimed by larger findings");
		else if (startup[r])
			snprintf(res->why, sizeof(res->why), "would save %s at start-up, under 1%% of "
				 "the run (%s)", apx_fmt_ns(b1, sizeof(b1), demoted[r]),
				 apx_fmt_ns(b2, sizeof(b2), (double)m->collected_ns));
		else if (st->count)
			snprintf(res->why, sizeof(res->why), "would save %s a step, under 1%% of a "
				 "step (%s)", apx_fmt_ns(b1, sizeof(b1), demoted[r] / (double)st->count),
				 apx_fmt_ns(b2, sizeof(b2), (double)st->median_ns));
		else
			snprintf(res->why, sizeof(res->why), "would save %s, under %s",
				 apx_fmt_ns(b1, sizeof(b1), demoted[r]),
				 apx_fmt_ns(b2, sizeof(b2), MINOR_FLOOR_NS));
	}
}

/* Start-up dominates the run when the GPU did more work before the steady window than in it. */
static int startup_dominates(const struct apx_model *m)
{
	uint64_t idle = 0, up, steady;

	for (unsigned c = 0; c < APX_IDLE__COUNT; c++)
		idle += m->gpu.idle_by_cause[c];
	up = m->gpu.startup_ns - (m->gpu.startup_idle_ns < m->gpu.startup_ns ? m->gpu.startup_idle_ns
									 : m->gpu.startup_ns);
	steady = m->gpu.window_ns - (idle < m->gpu.window_ns ? idle : m->gpu.window_ns);
	return up > steady;
}

int apx_finding_in_main(const struct apx_findings *fd, const struct apx_finding *f)
{
	return !f->startup || fd->startup_dominates;
}

/* A rule whose findings are all about start-up (and start-up does not dominate) says so in
 * its check instead of "finding". */
static void mark_startup_only(struct apx_findings *out)
{
	for (size_t r = 0; r < out->nresults; r++) {
		struct apx_rule_result *res = &out->results[r];
		int main = 0, up = 0;

		if (res->status != APX_RULE_FIRED)
			continue;
		for (size_t i = 0; i < out->n; i++) {
			if (strcmp(out->f[i].rule, res->rule))
				continue;
			if (apx_finding_in_main(out, &out->f[i]))
				main = 1;
			else
				up = 1;
		}
		if (up && !main) {
			res->status = APX_RULE_STARTUP;
			snprintf(res->why, sizeof(res->why), "at start-up only (see the start-up section)");
		}
	}
}

/* The main list first (stable), then the start-up section's. */
static void main_first(struct apx_findings *out)
{
	struct apx_finding tmp[APX_FINDINGS_MAX];
	size_t k = 0;

	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < out->n; i++)
			if (apx_finding_in_main(out, &out->f[i]) == !pass)
				tmp[k++] = out->f[i];
	memcpy(out->f, tmp, k * sizeof(tmp[0]));
}

/* A steady finding's kernel time, in rank order, within what the findings above left of the
 * GPU's kernel busy time: copy-overlap hides copies behind kernel time, fp32-matmul shortens
 * kernels; with the copies hidden, faster kernels save only what the copies leave exposed
 * (both together save c + k - max(c, k/3), not min(c, k) + 2k/3). */
static void cap_kernel_time(struct apx_finding *f, double *kleft, uint8_t *capped)
{
	double claim = f->kernel_ns < f->saving_ns ? f->kernel_ns : f->saving_ns;

	if (claim <= 0)
		return;
	if (claim > *kleft) {
		f->saving_ns -= claim - (*kleft > 0 ? *kleft : 0);
		apx_text_append(f->model, sizeof(f->model), " (less the kernel time the findings "
				"above save)");
		*capped = 1;
		claim = *kleft > 0 ? *kleft : 0;
	}
	*kleft -= claim;
}

/* A steady finding's host<->device copy time, in rank order, within what the findings above
 * left of the copies' busy time after the first kernel (the copies before it are setup, which
 * neither rule counts): a copy that repeated-copy removes is not there for copy-overlap to
 * hide, and the reverse. */
static void cap_copy_time(struct apx_finding *f, double *cleft, uint8_t *capped)
{
	double claim = f->copy_ns < f->saving_ns ? f->copy_ns : f->saving_ns;

	if (claim <= 0)
		return;
	if (claim > *cleft) {
		f->saving_ns -= claim - (*cleft > 0 ? *cleft : 0);
		apx_text_append(f->model, sizeof(f->model), " (less the copy time the findings "
				"above save)");
		*capped = 1;
		claim = *cleft > 0 ? *cleft : 0;
	}
	*cleft -= claim;
}

double apx_rules_steady_kernel_busy(const struct apx_model *m)
{
	const struct apx_store *st = m->store;
	uint64_t *rs, *re, sum = 0;
	uint64_t ws = m->steady_start_ns, we = m->steady_end_ns;

	if (!st || !st->ndevices)
		return 0;
	rs = calloc(st->ndevices, sizeof(*rs));
	re = calloc(st->ndevices, sizeof(*re));
	if (!rs || !re) {
		free(rs);
		free(re);
		return (double)m->gpu.kernel_busy_ns;	/* the looser bound */
	}
	for (size_t i = 0; i < st->k.n; i++) {	/* in start order: one open run per device */
		uint64_t s = st->k.start[i], e = apx_view_kernel_end(st, i);
		uint32_t dv = st->k.stream[i] < st->nstreams ? st->streams[st->k.stream[i]].device
							       : 0;

		if (dv >= st->ndevices)
			dv = 0;
		s = s > ws ? s : ws;
		e = e < we ? e : we;
		if (e <= s)
			continue;
		if (re[dv] > rs[dv] && s <= re[dv]) {
			if (e > re[dv])
				re[dv] = e;
			continue;
		}
		sum += re[dv] - rs[dv];
		rs[dv] = s;
		re[dv] = e;
	}
	for (size_t d = 0; d < st->ndevices; d++)
		sum += re[d] - rs[d];
	free(rs);
	free(re);
	return (double)sum;
}

/* The estimated savings, in rank order, capped so that together they never pass the time they
 * come from: the steady window for the steady state's findings, the start-up span for the
 * start-up's, and the kernel busy time inside the steady window (the host<->device copy busy
 * time) for the steady findings' kernel (copy) time: a rule never saves more GPU time than
 * the steady state's kernels take (a step's saving at most its GPU work);
 * capped[i] says which were (they may then fall under the minor floor). */
static void cap_savings(const struct apx_model *m, struct apx_findings *out, uint8_t *capped)
{
	const double budget[2] = { out->steady_budget_ns, (double)m->gpu.startup_ns };
	double left[2] = { budget[0], budget[1] };
	double kleft = apx_rules_steady_kernel_busy(m);
	double cleft = (double)(m->gpu.hd_copy_busy_ns - (m->gpu.hd_before_kernels_ns <
							  m->gpu.hd_copy_busy_ns ?
							  m->gpu.hd_before_kernels_ns :
							  m->gpu.hd_copy_busy_ns));
	const double run = (double)m->collected_ns;	/* "of the run": its collected time */

	for (size_t i = 0; i < out->n; i++) {
		struct apx_finding *f = &out->f[i];
		double *l = &left[f->startup ? 1 : 0];

		if (f->recorded_by || !f->saving_estimated || !budget[f->startup ? 1 : 0])
			continue;	/* no such time measured (no GPU activity): nothing to cap by */
		if (!f->startup) {
			cap_kernel_time(f, &kleft, &capped[i]);
			cap_copy_time(f, &cleft, &capped[i]);
		}
		f->saving_pct = run > 0 ? 100.0 * f->saving_ns / run : 0;
		if (f->saving_ns > *l) {
			f->saving_ns = *l > 0 ? *l : 0;
			f->saving_pct = run > 0 ? 100.0 * f->saving_ns / run : 0;
			apx_text_append(f->model, sizeof(f->model), " (capped at what the findings "
					"above leave of the %s)", f->startup ? "start-up" : "steady state");
			capped[i] = 1;
		}
		*l -= f->saving_ns;
	}
}

void apx_rules_run(const struct apx_model *m, struct apx_findings *out)
{
	uint8_t capped[APX_FINDINGS_MAX] = { 0 };
	char untraced[200];

	size_t nrules;

	_Static_assert(sizeof(rules) / sizeof(rules[0]) + sizeof(rank_rules) / sizeof(rank_rules[0])
		       <= APX_RULES_MAX, "results[] too small");
	memset(out, 0, sizeof(*out));
	untraced_why(m, untraced, sizeof(untraced));
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]) + sizeof(rank_rules) /
			       sizeof(rank_rules[0]) && out->nresults < APX_RULES_MAX; i++) {
		const size_t nmain = sizeof(rules) / sizeof(rules[0]);
		const struct apx_rule *rl = i < nmain ? &rules[i] : &rank_rules[i - nmain];
		struct apx_rule_result *res;

		if (i >= nmain && !m->ranks)
			break;		/* no collectives: no check of theirs */
		res = &out->results[out->nresults++];
		res->rule = rl->id;
		res->title = rl->title;
		if (untraced[0]) {	/* no data at all: "ok" would be a false all-clear */
			res->status = APX_RULE_NOT_MEASURED;
			snprintf(res->why, sizeof(res->why), "%s", untraced);
			continue;
		}
		res->status = rl->run(m, out, res->why, sizeof(res->why));
	}
	out->startup_dominates = startup_dominates(m);
	out->steady_budget_ns = (double)m->gpu.window_ns;
	qsort(out->f, out->n, sizeof(out->f[0]), cmp_saving);	/* the cap goes in rank order */
	cap_savings(m, out, capped);
	demote_minor(m, out, capped);
	nrules = out->n;
	add_recorded(m, out);
	/* ties rank recorded findings first, in file order, then the rules' */
	for (size_t i = 0; i < out->n; i++)
		out->f[i].order = (unsigned)(i < nrules ? out->n - nrules + i : i - nrules);
	qsort(out->f, out->n, sizeof(out->f[0]), cmp_saving);
	main_first(out);
	prerequisites_first(m, out);
	mark_startup_only(out);
}

struct apx_finding *apx_finding_add(struct apx_findings *out, const struct apx_model *m,
				    const char *rule, int severity, double saving_ns,
				    int confidence_pct)
{
	return apx_finding_new(out, rule, severity, saving_ns, m->collected_ns, confidence_pct);
}

void apx_data_gaps_evidence(const struct apx_model *m, struct apx_finding *f)
{
	uint64_t idle = m->gpu.idle_by_cause[APX_IDLE_DATA], gaps = m->gpu.gaps_by_cause[APX_IDLE_DATA];
	char b1[32], b2[32];

	apx_text_append(f->evidence, sizeof(f->evidence),
			"%llu gaps ending in a host-to-device copy, %s in all (mean %s)\n",
			(unsigned long long)gaps, apx_fmt_ns(b1, sizeof(b1), (double)idle),
			apx_fmt_ns(b2, sizeof(b2), gaps ? (double)idle / (double)gaps : 0));
	apx_finding_metric(f, "gaps", (double)gaps, APX_UNIT_COUNT);
	apx_finding_metric(f, "idle_ns", (double)idle, APX_UNIT_NS);
}
