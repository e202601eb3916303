/*
 * apx_dump.c - test helper: prints every record of a .apx trace as one JSON object per line
 * ({"type":"kernel","start_ns":...,"name":"..."}), string ids of name-like fields resolved,
 * preceded by a "_file" line with the reader status. The GPU tests (tests/gpu, Python) and the
 * CPU-only analyze test read traces through it. Usage: apx-dump FILE. Exit 1 if unreadable.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <apx/format.h>

#include "base/banned.h"

static void put_json_str(const uint8_t *p, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static int is_string_id(const char *name)
{
	return !strcmp(name, "name") || !strcmp(name, "source") || !strcmp(name, "domain") ||
	       !strcmp(name, "unit");
}

int main(int argc, char **argv)
{
	static const char *const st[] = { "complete", "truncated", "damaged" };
	struct apx_reader *r;
	struct apx_diag d = { 0 };

	if (argc != 2) {
		fprintf(stderr, "usage: apx-dump FILE\n");
		return 2;
	}
	if (apx_reader_open(argv[1], &r, &d) < 0) {
		fprintf(stderr, "apx-dump: %s: %s\n", argv[1], d.msg);
		return 1;
	}
	printf("{\"type\":\"_file\",\"status\":\"%s\",\"chunks\":%zu}\n", st[apx_reader_status(r)],
	       apx_reader_chunk_count(r));
	{
		const struct apx_rec *h = apx_reader_header(r);
		const struct apx_rec_schema *s = apx_schema(APX_REC_HEADER);

		printf("{\"type\":\"header\"");
		for (unsigned f = 0; f < s->nfields; f++) {
			printf(",\"%s\":", s->fields[f].name);
			if (s->fields[f].kind == APX_FK_BYTES)
				put_json_str(h->bytes[f] ? h->bytes[f] : (const uint8_t *)"",
					     h->bytes[f] ? h->v[f] : 0);
			else if (s->fields[f].kind == APX_FK_SINT)
				printf("%" PRId64, (int64_t)h->v[f]);
			else
				printf("%" PRIu64, h->v[f]);
		}
		printf("}\n");
	}
	for (size_t i = 0; i < apx_reader_chunk_count(r); i++) {
		struct apx_chunk_iter it;
		const struct apx_rec_schema *s;

		if (apx_chunk_iter_init(&it, r, i, &d) < 0)
			continue;
		s = apx_schema(apx_reader_chunk(r, i)->type);
		if (!s || apx_reader_chunk(r, i)->type == APX_REC_STRINGS ||
		    apx_reader_chunk(r, i)->type == APX_REC_HEADER)
			continue;
		while (apx_chunk_iter_next(&it, &d) > 0) {
			printf("{\"type\":\"%s\"", apx_rec_type_name(it.rec.type));
			for (unsigned f = 0; f < s->nfields; f++) {
				const char *fn = s->fields[f].name;
				uint64_t v = it.rec.v[f];

				printf(",\"%s\":", fn);
				switch (s->fields[f].kind) {
				case APX_FK_BYTES:
					put_json_str(it.rec.bytes[f] ? it.rec.bytes[f] : (const uint8_t *)"",
						     it.rec.bytes[f] ? v : 0);
					break;
				case APX_FK_SINT:
					printf("%" PRId64, (int64_t)v);
					break;
				case APX_FK_F64:
					if (isfinite(apx_rec_f64(&it.rec, f)))
						printf("%.17g", apx_rec_f64(&it.rec, f));
					else	/* JSON has no NaN or infinity */
						printf("null");
					break;
				default:
					if (is_string_id(fn)) {
						size_t len = 0;
						const char *t = v ? apx_reader_string(r, v, &len) : NULL;

						put_json_str((const uint8_t *)(t ? t : ""), t ? len : 0);
					} else {
						printf("%" PRIu64, v);
					}
				}
			}
			printf("}\n");
		}
	}
	apx_reader_close(r);
	return 0;
}
