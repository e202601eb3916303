/*
 * sample.c - deterministic sample traces for tests (see sample.h).
 */
#include "unit/sample.h"

#include <stdio.h>
#include <string.h>

#include "base/hash.h"

#include "base/banned.h"

void apx_sample_header(struct apx_rec *h)
{
	static const char argv[] = "python3\0train.py\0--epochs\0001\0";

	apx_rec_init(h, APX_REC_HEADER);
	apx_rec_set_str(h, APX_HEADER_PRODUCER, "apx-test");
	apx_rec_set_str(h, APX_HEADER_PRODUCER_VERSION, "0.1.0");
	h->v[APX_HEADER_CREATED_NS] = 1764511414000000000ull;
	apx_rec_set_str(h, APX_HEADER_HOSTNAME, "testhost");
	apx_rec_set_str(h, APX_HEADER_KERNEL, "Linux 6.1.0 x86_64");
	h->v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	apx_rec_set_i64(h, APX_HEADER_REALTIME_OFFSET_NS, 1764500000000000000ll);
	apx_rec_set_i64(h, APX_HEADER_BOOTTIME_OFFSET_NS, -12345);
	h->v[APX_HEADER_PID] = 4242;
	h->v[APX_HEADER_PPID] = 1;
	apx_rec_set_bytes(h, APX_HEADER_ARGV, argv, sizeof(argv) - 1);
	apx_rec_set_str(h, APX_HEADER_CWD, "/home/user/project");
	h->v[APX_HEADER_UID] = 1000;
	apx_rec_set_str(h, APX_HEADER_USER, "user");
	apx_rec_set_str(h, APX_HEADER_RUN_ID, "run-1");
	apx_rec_set_i64(h, APX_HEADER_RANK, -1);
	h->v[APX_HEADER_START_NS] = 1000000000ull;
}

void apx_sample_rec(struct apx_rec *rec, unsigned type, uint64_t i, uint64_t seed, char *text)
{
	const struct apx_rec_schema *s = apx_schema(type);
	uint64_t base = 1000000000ull + i * 1500;

	apx_rec_init(rec, type);
	for (unsigned f = 0; f < s->nfields; f++) {
		uint64_t r = apx_fmix64(seed ^ (i * 131 + f * 7 + type * 100003));

		switch (s->fields[f].kind) {
		case APX_FK_DELTA:	/* timestamps and ids: mostly growing, sometimes back */
			rec->v[f] = base + (r % 4000) + f;
			break;
		case APX_FK_SPAN:
			rec->v[f] = rec->v[0] + r % 100000;
			break;
		case APX_FK_SINT:
			rec->v[f] = (uint64_t)((int64_t)(r % 2000001) - 1000000);
			break;
		case APX_FK_F64:
			apx_rec_set_f64(rec, f, (double)(int64_t)(r % 1000000) / 7.0);
			break;
		case APX_FK_BYTES: {
			char *t = text + f * 4096;
			size_t n = r % 5 == 0 ? 0 : r % 7 == 0 ? 3000 : r % 40;

			for (size_t k = 0; k < n; k++)
				t[k] = (char)('a' + apx_fmix64(r + k) % 26);
			apx_rec_set_bytes(rec, f, t, n);
			break;
		}
		default:	/* small enums most of the time, now and then a huge value */
			rec->v[f] = r % 9 == 0 ? r : (r % 3 == 0 ? i % 4 : r % 300);
			break;
		}
	}
	if (type == APX_REC_STRINGS)
		rec->v[APX_STRINGS_ID] = i + 1;
}

int apx_sample_write(int fd, unsigned n, uint64_t seed, uint32_t chunk_bytes, int close_it)
{
	static char text[APX_REC_FIELDS_MAX * 4096];
	struct apx_writer_opts opts = { .chunk_bytes = chunk_bytes };
	struct apx_writer *w;
	struct apx_rec rec;
	uint32_t id;
	int r;

	apx_sample_header(&rec);
	r = apx_writer_open_fd(fd, &rec, &opts, &w);
	if (r < 0)
		return r;
	for (uint64_t i = 0; i < n; i++) {
		for (unsigned t = APX_REC_DEVICE; t <= APX_REC_TYPE__LAST; t++) {
			apx_sample_rec(&rec, t, i, seed, text);
			if (t == APX_REC_KERNEL) {
				char name[64];
				int len = snprintf(name, sizeof(name), "kernel_%u", (unsigned)(i % 7));

				r = apx_writer_intern(w, name, (size_t)len, &id);
				if (r < 0)
					goto fail;
				rec.v[APX_KERNEL_NAME] = id;
			}
			r = apx_writer_add(w, &rec);
			if (r < 0)
				goto fail;
		}
		if (i % 16 == 15) {
			r = apx_writer_flush(w);
			if (r < 0)
				goto fail;
		}
	}
	if (close_it)
		return apx_writer_close(w, 2000000000ull, 0);
	r = apx_writer_flush(w);
fail:
	apx_writer_abandon(w);
	return r;
}
