/*
 * random_stacks.c - random traces with Python stacks for the report's invariants
 * (random_stacks.h): FRAME records (program and library paths, markup, control bytes and
 * invalid UTF-8 in names), STACK records (valid lists, and some that name undefined frames, do
 * not decode, are too deep, or repeat an id), kernels, copies, memsets and syncs whose stack
 * fields name defined, undefined and no stacks, and thread samples in every state. Each trace
 * is checked with apx_props_check (hotspot GPU time <= kernel time, ...) and exported in every
 * format the build has (the exporters must stay valid on it: ASan and UBSan watch). Called by
 * test-report-props.c.
 */
#include "props/random_stacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <apx/format.h>

#include "analysis/model.h"
#include "export/export.h"
#include "props/report_props.h"

#include "base/banned.h"

#define T0 1000000000ull

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint32_t str(struct apx_writer *w, const char *s, size_t n)
{
	uint32_t id = 0;

	apx_writer_intern(w, s, n, &id);
	return id;
}

/* Write one random trace to path; 0 or -1. */
static int write_trace(const char *path, uint64_t *seed)
{
	static const char *const files[] = {
		"/home/u/train.py", "/home/u/model.py",
		"/usr/lib/python3/dist-packages/torch/nn/modules/module.py",
		"/usr/lib/python3.12/threading.py", "<frozen importlib._bootstrap>", "data.py",
	};
	static const char *const funcs[] = {
		"train", "Model.forward", "_call_impl", "run", "<module>", "tokenize",
		"<script>x</script>&'\"", "\x1b[31mred\x1b[0m", "\xff\xfe bad utf-8", "",
	};
	struct apx_writer *w;
	struct apx_rec h, r;
	unsigned nframes = 1 + rnd(seed) % 40, nstacks = 1 + rnd(seed) % 30;
	uint64_t ts = 1000;

	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "apx-inject");
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = 100;
	h.v[APX_HEADER_START_NS] = T0;
	if (apx_writer_open(path, 1, &h, NULL, &w) < 0)
		return -1;
	apx_rec_init(&r, APX_REC_DEVICE);
	apx_rec_set_str(&r, APX_DEVICE_NAME, "GPU");
	r.v[APX_DEVICE_SM_COUNT] = 132;
	apx_writer_add(w, &r);
	for (unsigned f = 1; f <= nframes; f++) {
		const char *fn = funcs[rnd(seed) % 10], *file = files[rnd(seed) % 6];

		apx_rec_init(&r, APX_REC_FRAME);
		r.v[APX_FRAME_ID] = rnd(seed) % 50 ? f : rnd(seed) % 3;	/* a few 0, dups */
		r.v[APX_FRAME_KIND] = 1 + rnd(seed) % 3;
		r.v[APX_FRAME_FILE] = str(w, file, strlen(file));
		r.v[APX_FRAME_FUNC] = str(w, fn, strlen(fn));
		r.v[APX_FRAME_LINE] = rnd(seed) % 500;
		apx_writer_add(w, &r);
	}
	for (unsigned s = 1; s <= nstacks; s++) {
		uint8_t buf[600];
		size_t len = 0;
		unsigned depth = 1 + rnd(seed) % 12, kind = rnd(seed) % 20;

		if (kind == 0)
			depth = 300;		/* too deep */
		for (unsigned j = 0; j < depth && len + 2 <= sizeof(buf); j++) {
			uint64_t fid = 1 + rnd(seed) % (nframes + (kind == 1 ? 20 : 0));

			buf[len++] = (uint8_t)(fid & 0x7f) | (fid > 0x7f ? 0x80 : 0);
			if (fid > 0x7f)
				buf[len++] = (uint8_t)(fid >> 7);
		}
		if (kind == 2 && len)
			buf[len - 1] |= 0x80;	/* a cut varint */
		apx_rec_init(&r, APX_REC_STACK);
		r.v[APX_STACK_ID] = kind == 3 ? s - 1 : s;	/* id 0 or a repeat */
		apx_rec_set_bytes(&r, APX_STACK_FRAMES, buf, len);
		r.v[APX_STACK_TRUNCATED] = kind == 4;
		apx_writer_add(w, &r);
	}
	for (unsigned i = 0, n = rnd(seed) % 200; i < n; i++) {
		uint64_t dur = 1 + rnd(seed) % 200000, stack = rnd(seed) % (nstacks + 4);
		unsigned what = rnd(seed) % 8;

		ts += rnd(seed) % 50000;
		if (what < 5) {
			apx_rec_init(&r, APX_REC_KERNEL);
			r.v[APX_KERNEL_START_NS] = T0 + ts;
			r.v[APX_KERNEL_END_NS] = T0 + ts + dur;
			r.v[APX_KERNEL_STREAM] = 7 + rnd(seed) % 2;
			r.v[APX_KERNEL_CORRELATION] = i + 1;
			r.v[APX_KERNEL_NAME] = str(w, what ? "gemm" : "reduce", what ? 4 : 6);
			r.v[APX_KERNEL_GRID_X] = r.v[APX_KERNEL_BLOCK_X] = 1;
			r.v[APX_KERNEL_STACK] = stack;
		} else if (what == 5) {
			apx_rec_init(&r, APX_REC_MEMCPY);
			r.v[APX_MEMCPY_START_NS] = T0 + ts;
			r.v[APX_MEMCPY_END_NS] = T0 + ts + dur;
			r.v[APX_MEMCPY_STREAM] = 7;
			r.v[APX_MEMCPY_CORRELATION] = i + 1;
			r.v[APX_MEMCPY_COPY_KIND] = APX_COPY_H2D;
			r.v[APX_MEMCPY_SRC_KIND] = APX_MEM_PAGEABLE;
			r.v[APX_MEMCPY_DST_KIND] = APX_MEM_DEVICE;
			r.v[APX_MEMCPY_BYTES] = 1 + rnd(seed) % (1 << 22);
			r.v[APX_MEMCPY_STACK] = stack;
		} else if (what == 6) {
			apx_rec_init(&r, APX_REC_MEMSET);
			r.v[APX_MEMSET_START_NS] = T0 + ts;
			r.v[APX_MEMSET_END_NS] = T0 + ts + dur;
			r.v[APX_MEMSET_STREAM] = 7;
			r.v[APX_MEMSET_BYTES] = 4096;
			r.v[APX_MEMSET_STACK] = stack;
		} else {
			apx_rec_init(&r, APX_REC_SYNC);
			r.v[APX_SYNC_START_NS] = T0 + ts;
			r.v[APX_SYNC_END_NS] = T0 + ts + dur;
			r.v[APX_SYNC_KIND] = APX_SYNC_KIND_DEVICE;
			r.v[APX_SYNC_TID] = 100;
			r.v[APX_SYNC_STACK] = stack;
		}
		apx_writer_add(w, &r);
	}
	for (unsigned i = 0, n = rnd(seed) % 300; i < n; i++) {
		apx_rec_init(&r, APX_REC_SAMPLE);
		r.v[APX_SAMPLE_TS_NS] = T0 + 1000 + (uint64_t)i * 5000;
		r.v[APX_SAMPLE_TID] = rnd(seed) % 4 ? 100 : 100 + rnd(seed) % 5;
		r.v[APX_SAMPLE_STACK] = rnd(seed) % (nstacks + 4);
		r.v[APX_SAMPLE_STATE] = rnd(seed) % 7;
		apx_rec_set_i64(&r, APX_SAMPLE_SYSCALL, rnd(seed) % 3 ? -1 : (int64_t)(rnd(seed) % 500));
		r.v[APX_SAMPLE_CPU_NS] = (uint64_t)i * 3000;
		r.v[APX_SAMPLE_PERIOD_NS] = rnd(seed) % 10 ? 5000 : rnd(seed);
		apx_writer_add(w, &r);
	}
	return apx_writer_close(w, T0 + ts + 1000000, 0) < 0 ? -1 : 0;
}

static int check_exports(const char *trace, const char *what, char *dir)
{
	static const char *const formats[] = { "perfetto", "chrome", "sqlite" };
	int bad = 0;

	for (unsigned k = 0; k < 3; k++) {
		const struct apx_exporter *ex = apx_exporter_find(formats[k]);
		struct apx_store *st = NULL;
		struct apx_diag d = { 0 };
		char out[4200];
		int r;

		if (!ex)
			continue;	/* sqlite not built in */
		snprintf(out, sizeof(out), "%s/export.%s", dir, formats[k]);
		unlink(out);
		if (apx_store_open(&trace, 1, NULL, &st, &d) < 0)
			return 0;	/* not readable at all: nothing to export */
		r = ex->write(st, NULL, out, &d);
		if (r < 0) {
			fprintf(stderr, "FAIL: %s: export %s: %s\n", what, formats[k], d.msg);
			bad = 1;
		}
		apx_store_free(st);
		unlink(out);
	}
	return bad;
}

unsigned apx_props_random_stacks(unsigned n, unsigned *ret_models)
{
	char dir[] = "/tmp/apx-props-XXXXXX", path[4200], why[512], what[64];
	uint64_t seed = 0x2545f4914f6cdd1dull;
	unsigned fails = 0, with_stacks = 0;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/random.apx", dir);
	for (unsigned i = 0; i < n; i++) {
		struct apx_findings *fd = calloc(1, sizeof(*fd));
		struct apx_model *m = apx_model_new();

		snprintf(what, sizeof(what), "random stacks trace %u", i);
		unlink(path);
		if (!fd || !m || write_trace(path, &seed) < 0) {
			fprintf(stderr, "FAIL: %s: cannot write it\n", what);
			fails++;
		} else if (apx_model_add_file(m, path, NULL) == 0 && apx_model_finish(m) == 0) {
			apx_rules_run(m, fd);
			(*ret_models)++;
			if (apx_props_check(m, fd, why, sizeof(why)) < 0) {
				fprintf(stderr, "FAIL: %s: %s\n", what, why);
				fails++;
			}
			fails += (unsigned)check_exports(path, what, dir);
			with_stacks += m->has_stacks && m->hotspots.n;
		}
		apx_model_free(m);
		free(fd);
	}
	unlink(path);
	rmdir(dir);
	if (with_stacks < n / 2) {	/* the generator must reach the stacks' invariants */
		fprintf(stderr, "FAIL: only %u of %u random traces have hotspots\n", with_stacks, n);
		fails++;
	}
	return fails;
}
