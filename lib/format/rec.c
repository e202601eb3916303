/*
 * rec.c - helpers to fill and read struct apx_rec fields of special kinds (byte strings,
 * signed, f64), and the human names of record types and enumerations. Any thread.
 */
#include <apx/format.h>

#include <stdio.h>
#include <string.h>

#include "base/banned.h"

void apx_rec_init(struct apx_rec *rec, unsigned type)
{
	memset(rec, 0, sizeof(*rec));
	rec->type = (uint16_t)type;
}

void apx_rec_set_bytes(struct apx_rec *rec, unsigned field, const void *p, size_t len)
{
	if (field >= APX_REC_FIELDS_MAX)
		return;
	rec->bytes[field] = len ? p : NULL;
	rec->v[field] = p ? len : 0;
}

void apx_rec_set_str(struct apx_rec *rec, unsigned field, const char *s)
{
	apx_rec_set_bytes(rec, field, s, s ? strlen(s) : 0);
}

void apx_rec_set_f64(struct apx_rec *rec, unsigned field, double value)
{
	uint64_t bits;

	memcpy(&bits, &value, sizeof(bits));
	if (field < APX_REC_FIELDS_MAX)
		rec->v[field] = bits;
}

double apx_rec_f64(const struct apx_rec *rec, unsigned field)
{
	double d;

	memcpy(&d, &rec->v[field], sizeof(d));
	return d;
}

void apx_rec_set_i64(struct apx_rec *rec, unsigned field, int64_t value)
{
	if (field < APX_REC_FIELDS_MAX)
		rec->v[field] = (uint64_t)value;
}

int64_t apx_rec_i64(const struct apx_rec *rec, unsigned field)
{
	return (int64_t)rec->v[field];
}

const char *apx_rec_type_name(unsigned type)
{
	static const char *const unknown[] = { "unknown" };
	const struct apx_rec_schema *s = apx_schema(type);

	return s ? s->name : unknown[0];
}

#define NAME_OF(table, i) ((i) < sizeof(table) / sizeof(table[0]) && table[i] ? table[i] : "unknown")

const char *apx_mem_kind_name(unsigned kind)
{
	static const char *const names[] = {
		[APX_MEM_UNKNOWN] = "unknown", [APX_MEM_PAGEABLE] = "pageable",
		[APX_MEM_PINNED] = "pinned", [APX_MEM_DEVICE] = "device", [APX_MEM_ARRAY] = "array",
		[APX_MEM_MANAGED] = "managed", [APX_MEM_DEVICE_STATIC] = "device-static",
		[APX_MEM_MANAGED_STATIC] = "managed-static",
	};
	return NAME_OF(names, kind);
}

const char *apx_copy_kind_name(unsigned kind)
{
	static const char *const names[] = {
		[APX_COPY_UNKNOWN] = "unknown", [APX_COPY_H2D] = "H2D", [APX_COPY_D2H] = "D2H",
		[APX_COPY_D2D] = "D2D", [APX_COPY_H2H] = "H2H", [APX_COPY_P2P] = "P2P",
		[APX_COPY_OTHER] = "other",
	};
	return NAME_OF(names, kind);
}

const char *apx_sync_kind_name(unsigned kind)
{
	static const char *const names[] = {
		[APX_SYNC_KIND_UNKNOWN] = "unknown", [APX_SYNC_KIND_EVENT] = "event",
		[APX_SYNC_KIND_STREAM_WAIT_EVENT] = "stream-wait-event",
		[APX_SYNC_KIND_STREAM] = "stream", [APX_SYNC_KIND_DEVICE] = "device",
	};
	return NAME_OF(names, kind);
}
