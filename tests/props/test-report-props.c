/*
 * test-report-props.c - the report's invariants (report_props.h) on every committed real
 * trace (each .apx in tests/fixtures/real, each with its run's FILE.<pid>), on the sample, and on
 * deterministic mutations of each: bytes flipped in one chunk then every checksum recomputed
 * (so the damage reaches the decoders and the report), and cuts at chunk-inner offsets; and
 * on 60 random traces with Python stacks (random_stacks.c), exported in every format too; and
 * the regression of host step ranges the GPU lags on nvtx_ranges.apx (check_nvtx_lag).
 * Usage: test-report-props FIXTURES_DIR [MUTATIONS_PER_TRACE]. Called by ctest.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "props/random_stacks.h"
#include "props/report_props.h"

#include "base/banned.h"

static uint8_t *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *buf;

	if (!f || fstat(fileno(f), &st) < 0 || !(buf = malloc((size_t)st.st_size + 1)) ||
	    fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		if (f)
			fclose(f);
		return NULL;
	}
	fclose(f);
	*ret_len = (size_t)st.st_size;
	return buf;
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Check the report of one trace (buf, len); 1 when it broke an invariant. */
static int check_one(const char *what, const uint8_t *buf, size_t len, unsigned *ret_models)
{
	struct apx_findings *fd = calloc(1, sizeof(*fd));
	struct apx_model *m;
	char why[512];
	int bad = 0;

	if (fd && apx_props_model(buf, len, &m, fd) == 0) {
		(*ret_models)++;
		if (apx_props_check(m, fd, why, sizeof(why)) < 0) {
			fprintf(stderr, "FAIL: %s: %s\n", what, why);
			bad = 1;
		}
		apx_model_free(m);
	}
	free(fd);
	return bad;
}

/* The real traces of a run together (FILE and FILE.<pid>), through the file path. */
static int check_run(const char *path, unsigned *ret_models)
{
	struct apx_findings *fd = calloc(1, sizeof(*fd));
	struct apx_model *m = apx_model_new();
	struct apx_diag d = { 0 };
	char child[8192 + 8], why[512];
	struct stat st;
	int bad = 0;

	if (!fd || !m || apx_model_add_file(m, path, &d) < 0) {
		fprintf(stderr, "FAIL: %s: cannot read: %s\n", path, d.msg);
		bad = 1;
		goto out;
	}
	snprintf(child, sizeof(child), "%s.979", path);	/* fork_and_subprocess's child */
	if (stat(child, &st) == 0 && apx_model_add_file(m, child, &d) < 0)
		bad = 1;
	if (apx_model_finish(m) < 0) {
		bad = 1;
		goto out;
	}
	apx_rules_run(m, fd);
	(*ret_models)++;
	if (apx_props_check(m, fd, why, sizeof(why)) < 0) {
		fprintf(stderr, "FAIL: %s: %s\n", path, why);
		bad = 1;
	}
out:
	apx_model_free(m);
	free(fd);
	return bad;
}

/* nvtx_ranges.py's "step" ranges only launch (139 us on the host) while
 * the GPU works through its queue behind them: they are refused, the steps come from the
 * kernel sequence, and fp32-matmul saves at most 1 - 1/speedup of the GEMM time a step has
 * (it claimed 177.9 us a step, 100 % of step time, with the GPU busy 0 % of a step). 1 on a
 * failure. */
static int check_nvtx_lag(const char *fixtures)
{
	struct apx_findings *fd = calloc(1, sizeof(*fd));
	struct apx_model *m = apx_model_new();
	struct apx_diag d = { 0 };
	const struct apx_finding *f = NULL;
	double gemm_step = 0, kbusy, speedup = 0;
	char path[4096];
	int bad = 1;

	snprintf(path, sizeof(path), "%s/real/nvtx_ranges.apx", fixtures);
	if (!fd || !m || apx_model_add_file(m, path, &d) < 0 || apx_model_finish(m) < 0) {
		fprintf(stderr, "FAIL: %s: cannot read: %s\n", path, d.msg);
		goto out;
	}
	apx_rules_run(m, fd);
	for (size_t i = 0; i < fd->n; i++)
		if (!strcmp(fd->f[i].rule, "fp32-matmul"))
			f = &fd->f[i];
	for (size_t i = 0; i < m->names.n; i++) {
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, i);

		if (nm->len > 12 && memmem(nm->text, nm->len, "simt_sgemm", 10) && m->steady.count)
			gemm_step += (double)nm->steady_ns / (double)m->steady.count;
	}
	kbusy = apx_rules_steady_kernel_busy(m);
	for (unsigned i = 0; f && i < f->nmetrics; i++)	/* the TF32 speedup it assumed */
		if (!strcmp(f->metrics[i].key, "speedup"))
			speedup = f->metrics[i].value;
	if (m->steady.source != APX_STEPS_KERNELS || m->steady.refused != 20 ||
	    m->steady.busy_pct < 90 || m->steady.median_ns < 300000) {
		fprintf(stderr, "FAIL: %s: steps %s (%llu refused), median %llu ns, busy %.1f%%\n",
			path, apx_step_source_name(m->steady.source),
			(unsigned long long)m->steady.refused,
			(unsigned long long)m->steady.median_ns, m->steady.busy_pct);
		goto out;
	}
	if (!f || !gemm_step || speedup < 1 ||
	    f->saving_ns / (double)m->steady.count > gemm_step * (1 - 1 / speedup) + 1 ||
	    f->saving_ns > kbusy || f->saving_ns >= 0.75 * (double)m->gpu.window_ns) {
		fprintf(stderr, "FAIL: %s: fp32-matmul saves %.0f ns (%.0f a step; GEMMs %.0f a step, "
			"kernels %.0f, window %llu)\n", path, f ? f->saving_ns : -1,
			f ? f->saving_ns / (double)m->steady.count : -1, gemm_step, kbusy,
			(unsigned long long)m->gpu.window_ns);
		goto out;
	}
	bad = 0;
out:
	apx_model_free(m);
	free(fd);
	return bad;
}

int main(int argc, char **argv)
{
	unsigned mutations = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 12, models = 0;
	unsigned traces = 0, fails = 0;
	char dir[4096], path[8192], what[8400];
	struct dirent **ents;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int n;

	if (argc < 2) {
		fprintf(stderr, "usage: test-report-props FIXTURES_DIR [MUTATIONS]\n");
		return 2;
	}
	fails += check_nvtx_lag(argv[1]);
	snprintf(dir, sizeof(dir), "%s/real", argv[1]);
	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0) {
		perror(dir);
		return 1;
	}
	for (int i = -1; i < n; i++) {
		const char *name = i < 0 ? "sample.apx" : ents[i]->d_name;
		size_t len, nl = strlen(name);
		uint8_t *orig, *buf;

		if (nl < 5 || strcmp(name + nl - 4, ".apx"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", i < 0 ? argv[1] : dir, name);
		if (!(orig = slurp(path, &len)) || !(buf = malloc(len))) {
			fprintf(stderr, "FAIL: cannot read %s\n", path);
			return 1;
		}
		traces++;
		if (i >= 0)	/* the committed real traces: their run as apx report reads it */
			fails += check_run(path, &models);
		else		/* the synthetic sample: 9 devices, odd values */
			fails += check_one(name, orig, len, &models);
		for (unsigned k = 0; k < mutations; k++) {
			size_t cut = len, at = 16 + rng(&seed) % (len - 16);
			unsigned flips = 1 + rng(&seed) % 8;

			memcpy(buf, orig, len);
			if (k % 4 == 3) {
				cut = 16 + rng(&seed) % (len - 16);	/* a cut, resealed up to it */
			} else {
				for (unsigned b = 0; b < flips; b++)
					buf[(at + rng(&seed) % 64) % len] ^= (uint8_t)(1u << rng(&seed) % 8);
			}
			apx_props_reseal(buf, cut);
			snprintf(what, sizeof(what), "%s mutation %u (%s at %zu)", name, k,
				 k % 4 == 3 ? "cut" : "bit flips", k % 4 == 3 ? cut : at);
			fails += check_one(what, buf, cut, &models);
		}
		free(orig);
		free(buf);
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	fails += apx_props_random_stacks(60, &models);	/* Python stacks, valid and not */
	printf("report-props: %u traces, %u reports checked (%u mutations each), %u failed\n",
	       traces, models, mutations, fails);
	return fails || traces < 20 ? 1 : 0;
}
