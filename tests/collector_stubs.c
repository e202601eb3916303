/*
 * collector_stubs.c - what inject.c and attach.c give the collector's sources (collector.h:
 * apx_say, apx_env_u64, apx_getenv, apx_attached, apx_add_kv, apx_degraded), for the harnesses that run sources without CUDA or
 * the injected library: tests/pystack/harness.c, tests/heap/heap_harness.c,
 * tests/nic/nic_harness.c. Key/values and degraded notes go straight into the source's
 * writer; messages to stderr with the collector's "[apx] " prefix. apx_stub_collector_open
 * opens a harness's trace (collector_stubs.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "collector_stubs.h"

#include "base/banned.h"

void apx_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("[apx] ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

const char *apx_getenv(const char *name)
{
	return getenv(name);	/* never attached here */
}

int apx_attached(void)
{
	return 0;
}

uint64_t apx_env_u64(const char *name, uint64_t def, uint64_t max)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 10);
	return errno || *end || v > max ? def : v;
}

void apx_add_kv(struct apx_collector *c, const char *key, const char *value)
{
	struct apx_rec rec;

	apx_rec_init(&rec, APX_REC_KV);
	apx_rec_set_str(&rec, APX_KV_KEY, key);
	apx_rec_set_str(&rec, APX_KV_VALUE, value);
	(void)apx_writer_add(c->w, &rec);
}

void apx_degraded(struct apx_collector *c, const char *what, int err)
{
	(void)err;
	apx_add_kv(c, "degraded", what);
}

int apx_stub_collector_open(struct apx_collector *c, struct apx_enc *e, const char *path,
			    const char *version)
{
	struct apx_rec h;
	int r;

	apx_rec_init(&h, APX_REC_HEADER);
	apx_rec_set_str(&h, APX_HEADER_PRODUCER, "apx-inject");
	apx_rec_set_str(&h, APX_HEADER_PRODUCER_VERSION, version);
	h.v[APX_HEADER_CLOCK] = APX_CLOCK_MONOTONIC;
	h.v[APX_HEADER_PID] = (uint64_t)getpid();
	h.v[APX_HEADER_START_NS] = apx_mono_ns();
	apx_rec_set_i64(&h, APX_HEADER_RANK, -1);
	if ((r = apx_writer_open(path, 1, &h, NULL, &c->w)) < 0)
		return r;
	e->w = c->w;
	c->enc = e;
	atomic_store(&c->enabled, 1);
	return 0;
}
