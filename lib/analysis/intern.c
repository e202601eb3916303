/*
 * intern.c - kernel names and streams interned across a model's files (see intern.h): open
 * addressing hash tables of index+1 into m->names and m->streams, grown at half full. Called
 * by load.c; single-threaded.
 */
#include "analysis/intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/banned.h"

static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t hash_name(const struct apx_an_name *nm)
{
	return hash_bytes(nm->text, nm->len);
}

static uint64_t hash_stream(uint32_t device, uint64_t id)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ull ^ ((uint64_t)device << 32 | device);

	return h ^ (h >> 29);
}

/* Rebuild a table of index+1 at twice its size; hash(i) gives the hash of entry i. */
static int table_grow(uint32_t **tab, size_t *cap, size_t n,
		      uint64_t (*hash)(const struct apx_model *, size_t), const struct apx_model *m)
{
	size_t nc = *cap ? *cap * 2 : 1024;
	uint32_t *t = calloc(nc, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t j = hash(m, i) & (nc - 1);

		while (t[j])
			j = (j + 1) & (nc - 1);
		t[j] = (uint32_t)i + 1;
	}
	free(*tab);
	*tab = t;
	*cap = nc;
	return 0;
}

static uint64_t name_at(const struct apx_model *m, size_t i)
{
	return hash_name(APX_VEC_AT(&m->names, struct apx_an_name, i));
}

static uint64_t stream_at(const struct apx_model *m, size_t i)
{
	const struct apx_an_stream *s = APX_VEC_AT(&m->streams, struct apx_an_stream, i);

	return hash_stream(s->device, s->id);
}

int apx_intern_name(struct apx_model *m, const char *text, size_t len, uint32_t *ret)
{
	struct apx_an_name nm = { 0 };
	size_t j;
	int r;

	if (!text) {
		text = "(unknown kernel)";
		len = strlen(text);
	}
	if ((m->names.n + 1) * 2 > m->name_hash_cap &&
	    (r = table_grow(&m->name_hash, &m->name_hash_cap, m->names.n, name_at, m)) < 0)
		return r;
	nm.text = text;
	nm.len = (uint32_t)len;
	for (j = hash_name(&nm) & (m->name_hash_cap - 1); m->name_hash[j];
	     j = (j + 1) & (m->name_hash_cap - 1)) {
		const struct apx_an_name *o = APX_VEC_AT(&m->names, struct apx_an_name,
							 m->name_hash[j] - 1);

		if (o->len == len && !memcmp(o->text, text, len)) {
			*ret = m->name_hash[j] - 1;
			return 0;
		}
	}
	nm.min_ns = UINT64_MAX;
	nm.occupancy = -1;
	r = apx_vec_push(&m->names, &nm);
	if (r < 0)
		return r;
	m->name_hash[j] = (uint32_t)m->names.n;
	*ret = (uint32_t)m->names.n - 1;
	return 0;
}

/* Slot of (device, id) in the stream table: its entry, or the empty slot where it goes. */
static size_t stream_slot(const struct apx_model *m, uint32_t device, uint64_t id)
{
	size_t mask = m->stream_hash_cap - 1, j = hash_stream(device, id) & mask;

	for (; m->stream_hash[j]; j = (j + 1) & mask) {
		const struct apx_an_stream *o = APX_VEC_AT(&m->streams, struct apx_an_stream,
							   m->stream_hash[j] - 1);

		if (o->device == device && o->id == id)
			break;
	}
	return j;
}

uint16_t apx_intern_stream(struct apx_model *m, uint32_t device, uint64_t id)
{
	struct apx_an_stream s = { device, id, 0, 0, 0 };
	int room = 1;
	size_t j;

	/* the table stops growing with the streams (65535); it is then under half full */
	if (m->streams.n < UINT16_MAX && (m->streams.n + 1) * 2 > m->stream_hash_cap)
		room = table_grow(&m->stream_hash, &m->stream_hash_cap, m->streams.n, stream_at,
				  m) == 0;
	if (!m->stream_hash_cap)
		return 0;
	j = stream_slot(m, device, id);
	if (m->stream_hash[j])
		return (uint16_t)(m->stream_hash[j] - 1);
	/* beyond 65535 streams (or out of memory), new ones share the first slot */
	if (!room || m->streams.n >= UINT16_MAX || apx_vec_push(&m->streams, &s) < 0)
		return 0;
	m->stream_hash[j] = (uint32_t)m->streams.n;
	return (uint16_t)(m->streams.n - 1);
}
