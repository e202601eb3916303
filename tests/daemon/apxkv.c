/*
 * apxkv.c - test helper of tests/daemon: prints the key/values, CONFIG and FINDING records of
 * an nvperfd summary .apx file, one per line ("kv KEY=VALUE", "config kind=.. ...",
 * "finding RULE SEVERITY TITLE", "metric NAME DEVICE PID VALUE UNIT"), for the shell tests
 * to grep. Exit 1 when unreadable.
 */
#include <inttypes.h>
#include <stdio.h>

#include <apx/format.h>

#include "base/banned.h"

static void str(const struct apx_rec *r, unsigned f, char *buf, size_t cap)
{
	size_t n = (r->present & (1ull << f)) && r->bytes[f] ? (size_t)r->v[f] : 0;

	if (n >= cap)
		n = cap - 1;
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)r->bytes[f][i];
	buf[n] = 0;
}

int main(int argc, char **argv)
{
	struct apx_reader *rd;
	struct apx_diag dg = { 0 };
	char a[512], b[512];

	if (argc != 2 || apx_reader_open(argv[1], &rd, &dg) < 0) {
		fprintf(stderr, "usage: apxkv FILE.apx (%s)\n", dg.msg);
		return 1;
	}
	for (size_t i = 0; i < apx_reader_chunk_count(rd); i++) {
		struct apx_chunk_iter it;
		const struct apx_rec *r = &it.rec;

		if (apx_chunk_iter_init(&it, rd, i, &dg) < 0)
			continue;
		while (apx_chunk_iter_next(&it, &dg) == 1) {
			if (r->type == APX_REC_KV) {
				str(r, APX_KV_KEY, a, sizeof(a));
				str(r, APX_KV_VALUE, b, sizeof(b));
				printf("kv %s=%s\n", a, b);
			} else if (r->type == APX_REC_CONFIG) {
				printf("config kind=%" PRIu64 " value=%" PRIu64 " base=0x%" PRIx64
				       " bytes=%" PRIu64 " hit_ppm=%" PRIu64 " hit=%" PRIu64
				       " miss=%" PRIu64 " stream=0x%" PRIx64 "\n",
				       r->v[APX_CONFIG_KIND], r->v[APX_CONFIG_VALUE],
				       r->v[APX_CONFIG_APW_BASE], r->v[APX_CONFIG_APW_BYTES],
				       r->v[APX_CONFIG_APW_HIT_PPM], r->v[APX_CONFIG_APW_HIT_PROP],
				       r->v[APX_CONFIG_APW_MISS_PROP], r->v[APX_CONFIG_STREAM]);
			} else if (r->type == APX_REC_METRIC) {
				size_t ln = 0, lu = 0;
				const char *nm = apx_reader_string(rd, r->v[APX_METRIC_NAME], &ln);
				const char *un = apx_reader_string(rd, r->v[APX_METRIC_UNIT], &lu);

				printf("metric %.*s %" PRIu64 " %" PRIu64 " %.15g %.*s\n", (int)ln,
				       nm ? nm : "", r->v[APX_METRIC_DEVICE], r->v[APX_METRIC_PID],
				       apx_rec_f64(r, APX_METRIC_VALUE), (int)lu, un ? un : "");
			} else if (r->type == APX_REC_FINDING) {
				str(r, APX_FINDING_RULE, a, sizeof(a));
				str(r, APX_FINDING_TITLE, b, sizeof(b));
				printf("finding %s %" PRIu64 " %s\n", a, r->v[APX_FINDING_SEVERITY], b);
			}
		}
	}
	apx_reader_close(rd);
	return 0;
}
