/*
 * kineto_event.c - parses one element of a Kineto trace's traceEvents into struct apx_kev:
 * ph, cat, name, ts/dur (microseconds -> nanoseconds, exactly), pid/tid and the args the
 * importer maps. Members it does not know are skipped whole; a member it knows with the wrong
 * type, or a number out of range, is an error naming the member and its place. Called by
 * kineto_walk.c in both passes.
 */
#include "import/kineto_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/banned.h"

#define US_MAX (INT64_MAX / 1000 / 4)	/* ts and dur: beyond ~73 years in us is garbage */

static int wrong_type(struct apx_ki *ki, const struct apx_jp_tok *tok, const char *what,
		      const char *want)
{
	return apx_jp_fail(&ki->jp, tok->off, -EBADMSG, "%s: %s expected, found %s", what, want,
			   apx_jp_type_name(tok->type));
}

int apx_ki_int(struct apx_ki *ki, const struct apx_jp_tok *tok, const char *what, int64_t lo,
	       int64_t hi, int64_t *ret_v)
{
	int64_t v;

	if (tok->type != APX_JP_NUMBER)
		return wrong_type(ki, tok, what, "a number");
	if (apx_jp_scaled(tok, 0, &v) < 0 || v < lo || v > hi)
		return apx_jp_fail(&ki->jp, tok->off, -EOVERFLOW, "%s: %.*s is out of range", what,
				   (int)tok->n, tok->p);
	*ret_v = v;
	return 0;
}

/* A time in microseconds (ts, dur) as nanoseconds. */
static int micros(struct apx_ki *ki, const struct apx_jp_tok *tok, const char *what,
		  int64_t *ret_ns)
{
	int64_t ns;

	if (tok->type != APX_JP_NUMBER)
		return wrong_type(ki, tok, what, "a number (microseconds)");
	if (apx_jp_scaled(tok, 3, &ns) < 0 || ns > US_MAX * 1000 || ns < -US_MAX * 1000)
		return apx_jp_fail(&ki->jp, tok->off, -EOVERFLOW, "%s: %.*s us is out of range", what,
				   (int)tok->n, tok->p);
	*ret_ns = ns;
	return 0;
}

static int text(struct apx_ki *ki, const struct apx_jp_tok *tok, const char *what, char *buf,
		size_t cap, size_t *ret_len)
{
	size_t n;

	if (tok->type != APX_JP_STRING)
		return wrong_type(ki, tok, what, "a string");
	n = apx_jp_string(tok, buf, cap);
	if (ret_len)
		*ret_len = n;
	return 0;
}

/* pid and tid: numbers on CPU and GPU rows, text on Kineto's own rows ("Spans"). */
static int row_id(struct apx_ki *ki, const struct apx_jp_tok *tok, const char *what, int *ret_num,
		  int64_t *ret_v)
{
	*ret_num = 0;
	if (tok->type == APX_JP_STRING)
		return 0;
	*ret_num = 1;
	return apx_ki_int(ki, tok, what, INT64_MIN / 2, INT64_MAX / 2, ret_v);
}

/* A known arg that cannot be read: remembered, and an error only if the event is mapped
 * (CPU-side events carry args of their own under the same names, e.g. Triton's "grid"). */
static int bad_arg(struct apx_kev *ev, const struct apx_jp_tok *v, unsigned arg,
		   const char *what, const char *why)
{
	if (!(ev->bad_args & 1u << arg)) {	/* the first problem of each arg is said */
		size_t cap = sizeof(ev->bad[arg]), w = strnlen(what, cap / 2);

		/* the arg's name first, then as much of the reason as fits */
		memcpy(ev->bad[arg], what, w);
		snprintf(ev->bad[arg] + w, cap - w, ": %s", why);
		ev->bad_off[arg] = v->off;
		ev->bad_args |= 1u << arg;
	}
	return 0;
}

/* "grid": [x, y, z] (fewer values leave the rest 1). */
static int dims(struct apx_ki *ki, struct apx_kev *ev, const struct apx_jp_tok *open,
		const char *what, unsigned first)
{
	struct apx_jp_tok t;
	unsigned i = 0;
	int r;

	if (open->type != APX_JP_ARRAY)
		return bad_arg(ev, open, first, what, "an array expected") + apx_jp_skip(&ki->jp, open);
	for (;;) {
		int64_t v;

		if ((r = apx_jp_next(&ki->jp, &t)) <= 0)
			return r < 0 ? r : -EBADMSG;
		if (t.type == APX_JP_CLOSE)
			break;
		if (t.type != APX_JP_NUMBER || apx_jp_scaled(&t, 0, &v) < 0 || v < 0 ||
		    v > UINT32_MAX) {
			bad_arg(ev, &t, first, what, "numbers from 0 to 4294967295 expected");
			if ((r = apx_jp_skip(&ki->jp, &t)) < 0)
				return r;
			continue;
		}
		if (i < 3)
			ev->arg[first + i++] = v;
	}
	for (; i < 3; i++)
		ev->arg[first + i] = 1;
	ev->have |= 1u << first;
	return 0;
}

static const struct {
	const char *key;
	unsigned arg;
	int64_t lo, hi;
} num_args[] = {
	{ "device", APX_KARG_DEVICE, -1, UINT32_MAX },
	{ "context", APX_KARG_CONTEXT, -1, INT64_MAX },
	{ "stream", APX_KARG_STREAM, INT64_MIN, INT64_MAX },
	{ "correlation", APX_KARG_CORRELATION, INT64_MIN, INT64_MAX },
	{ "bytes", APX_KARG_BYTES, 0, INT64_MAX },
	{ "registers per thread", APX_KARG_REGISTERS, 0, UINT32_MAX },
	{ "shared memory", APX_KARG_SMEM, 0, UINT32_MAX },
	{ "cbid", APX_KARG_CBID, 0, UINT32_MAX },
};

static int num_arg(struct apx_ki *ki, struct apx_kev *ev, const struct apx_jp_tok *v,
		   const char *what, unsigned i)
{
	int64_t x;

	if (v->type != APX_JP_NUMBER)
		return bad_arg(ev, v, num_args[i].arg, what, "a number expected") + apx_jp_skip(&ki->jp, v);
	if (apx_jp_scaled(v, 0, &x) < 0 || x < num_args[i].lo || x > num_args[i].hi)
		return bad_arg(ev, v, num_args[i].arg, what, "out of range");
	ev->arg[num_args[i].arg] = x;
	ev->have |= 1u << num_args[i].arg;
	return 0;
}

static int parse_args(struct apx_ki *ki, struct apx_kev *ev, const struct apx_jp_tok *open)
{
	struct apx_jp_tok k, v;
	char what[64];
	int r;

	if (open->type != APX_JP_OBJECT)
		return bad_arg(ev, open, APX_KARG_ARGS, "args", "an object expected") + apx_jp_skip(&ki->jp, open);
	while ((r = apx_jp_next(&ki->jp, &k)) > 0 && k.type == APX_JP_KEY) {
		size_t i;

		if ((r = apx_jp_next(&ki->jp, &v)) <= 0)
			return r < 0 ? r : -EBADMSG;
		if (v.type == APX_JP_NULL)
			continue;
		for (i = 0; i < sizeof(num_args) / sizeof(num_args[0]); i++)
			if (apx_jp_is(&k, num_args[i].key))
				break;
		snprintf(what, sizeof(what), "args.%.*s", (int)(k.n < 40 ? k.n : 40), k.p);
		if (i < sizeof(num_args) / sizeof(num_args[0])) {
			r = num_arg(ki, ev, &v, what, (unsigned)i);
		} else if (apx_jp_is(&k, "grid") || apx_jp_is(&k, "block")) {
			r = dims(ki, ev, &v, what, apx_jp_is(&k, "grid") ? APX_KARG_GRID : APX_KARG_BLOCK);
		} else if (apx_jp_is(&k, "cuda_sync_kind") && v.type == APX_JP_STRING) {
			r = text(ki, &v, what, ev->sync_kind, sizeof(ev->sync_kind), NULL);
		} else if (apx_jp_is(&k, "name") && v.type == APX_JP_STRING) {
			r = text(ki, &v, what, ev->meta_name, sizeof(ev->meta_name), NULL);
		} else {
			r = apx_jp_skip(&ki->jp, &v);
		}
		if (r < 0)
			return r;
	}
	return r < 0 ? r : 0;
}

int apx_kev_parse(struct apx_ki *ki, const struct apx_jp_tok *tok, struct apx_kev *ev)
{
	struct apx_jp_tok k, v;
	int r;

	memset(ev, 0, offsetof(struct apx_kev, name));
	ev->name[0] = ev->sync_kind[0] = ev->meta_name[0] = 0;
	ev->name_len = 0;
	ev->has_ts = ev->has_dur = ev->pid_num = ev->tid_num = 0;
	ev->have = 0;
	ev->bad_args = 0;
	ev->off = tok->off;
	if (tok->type != APX_JP_OBJECT)
		return wrong_type(ki, tok, "traceEvents element", "an object");
	while ((r = apx_jp_next(&ki->jp, &k)) > 0 && k.type == APX_JP_KEY) {
		if ((r = apx_jp_next(&ki->jp, &v)) <= 0)
			return r < 0 ? r : -EBADMSG;
		if (v.type == APX_JP_NULL)
			continue;
		if (apx_jp_is(&k, "ph")) {
			char ph[4];

			r = text(ki, &v, "ph", ph, sizeof(ph), NULL);
			ev->ph = ph[0];
		} else if (apx_jp_is(&k, "cat")) {
			r = text(ki, &v, "cat", ev->cat_text, sizeof(ev->cat_text), NULL);
			ev->cat = apx_kcat_of(ev->cat_text);
		} else if (apx_jp_is(&k, "name")) {
			r = text(ki, &v, "name", ev->name, sizeof(ev->name), &ev->name_len);
		} else if (apx_jp_is(&k, "ts")) {
			r = micros(ki, &v, "ts", &ev->ts_ns);
			ev->has_ts = 1;
		} else if (apx_jp_is(&k, "dur")) {
			r = micros(ki, &v, "dur", &ev->dur_ns);
			ev->has_dur = 1;
		} else if (apx_jp_is(&k, "pid")) {
			r = row_id(ki, &v, "pid", &ev->pid_num, &ev->pid);
		} else if (apx_jp_is(&k, "tid")) {
			r = row_id(ki, &v, "tid", &ev->tid_num, &ev->tid);
		} else if (apx_jp_is(&k, "args")) {
			r = parse_args(ki, ev, &v);
		} else {
			r = apx_jp_skip(&ki->jp, &v);
		}
		if (r < 0)
			return r;
	}
	return r < 0 ? r : 0;
}
