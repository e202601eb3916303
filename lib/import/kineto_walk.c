/*
 * kineto_walk.c - one pass over a Kineto trace's top-level object: traceEvents (each element
 * parsed by kineto_event.c, then handed to the pass: kineto_scan.c or kineto_emit.c),
 * baseTimeNanoseconds, distributedInfo.rank and deviceProperties; every other
 * member is skipped; a top-level array is taken as the events alone (Chrome's array format).
 * Called twice by kineto.c.
 */
#include "import/kineto_int.h"

#include <errno.h>

#include "base/banned.h"

#define NS_MAX (INT64_MAX / 2)	/* baseTimeNanoseconds: year 2116 and beyond is garbage */

static int events(struct apx_ki *ki, const struct apx_jp_tok *open)
{
	struct apx_kev ev;
	struct apx_jp_tok t;
	int r;

	if (open->type != APX_JP_ARRAY)
		return apx_jp_fail(&ki->jp, open->off, -EBADMSG, "traceEvents: an array expected, "
				   "found %s", apx_jp_type_name(open->type));
	while ((r = apx_jp_next(&ki->jp, &t)) > 0 && t.type != APX_JP_CLOSE) {
		if ((r = apx_kev_parse(ki, &t, &ev)) < 0)
			return r;
		r = ki->pass == 1 ? apx_ki_scan(ki, &ev) : apx_ki_emit(ki, &ev);
		if (r < 0)
			return r;
	}
	return r < 0 ? r : 0;
}

static int distributed(struct apx_ki *ki, const struct apx_jp_tok *open)
{
	struct apx_jp_tok k, v;
	int r;

	if (open->type != APX_JP_OBJECT)
		return apx_jp_skip(&ki->jp, open);
	while ((r = apx_jp_next(&ki->jp, &k)) > 0 && k.type == APX_JP_KEY) {
		if ((r = apx_jp_next(&ki->jp, &v)) <= 0)
			return r < 0 ? r : -EBADMSG;
		if (apx_jp_is(&k, "rank") && v.type != APX_JP_NULL) {
			if ((r = apx_ki_int(ki, &v, "distributedInfo.rank", 0, INT32_MAX, &ki->rank)) < 0)
				return r;
			ki->has_rank = 1;
		} else if ((r = apx_jp_skip(&ki->jp, &v)) < 0) {
			return r;
		}
	}
	return r < 0 ? r : 0;
}

static int member(struct apx_ki *ki, const struct apx_jp_tok *k, const struct apx_jp_tok *v,
		  int *seen_events)
{
	int p1 = ki->pass == 1;

	if (apx_jp_is(k, "traceEvents")) {
		*seen_events = 1;
		return events(ki, v);
	}
	if (apx_jp_is(k, "deviceProperties")) {
		ki->has_devprops = 1;
		return p1 ? apx_jp_skip(&ki->jp, v) : apx_ki_devices(ki, v);
	}
	if (p1 && apx_jp_is(k, "baseTimeNanoseconds") && v->type != APX_JP_NULL) {
		ki->has_base = 1;
		return apx_ki_int(ki, v, "baseTimeNanoseconds", 0, NS_MAX, &ki->base_ns);
	}
	if (p1 && apx_jp_is(k, "distributedInfo"))
		return distributed(ki, v);
	return apx_jp_skip(&ki->jp, v);
}

int apx_ki_walk(struct apx_ki *ki, const char *json, size_t len)
{
	struct apx_jp_tok k, v;
	int r, seen_events = 0;

	apx_jp_init(&ki->jp, json, len, ki->diag);
	if ((r = apx_jp_next(&ki->jp, &v)) <= 0)
		return r < 0 ? r : apx_jp_fail(&ki->jp, 0, -EBADMSG, "empty file");
	if (v.type == APX_JP_ARRAY) {	/* Chrome's "JSON array format": the events alone */
		if ((r = events(ki, &v)) < 0)
			return r;
		return apx_jp_next(&ki->jp, &k) < 0 ? -EBADMSG : 0;
	}
	if (v.type != APX_JP_OBJECT)
		return apx_jp_fail(&ki->jp, v.off, -EBADMSG, "a Kineto trace is a JSON object "
				   "({\"traceEvents\": [...]}), found %s", apx_jp_type_name(v.type));
	while ((r = apx_jp_next(&ki->jp, &k)) > 0 && k.type == APX_JP_KEY) {
		if ((r = apx_jp_next(&ki->jp, &v)) <= 0)
			return r < 0 ? r : -EBADMSG;
		if ((r = member(ki, &k, &v, &seen_events)) < 0)
			return r;
	}
	if (r < 0 || (r = apx_jp_next(&ki->jp, &k)) < 0)
		return r;
	if (!seen_events)
		return apx_jp_fail(&ki->jp, 0, -EBADMSG, "no \"traceEvents\" array: not a Kineto "
				   "(torch.profiler) trace");
	return 0;
}
