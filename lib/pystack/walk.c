/*
 * walk.c - one thread's Python frames, innermost first, as (code object, instruction offset)
 * pairs: by direct loads on the calling thread's own chain (a CUPTI callback: the thread is
 * inside our code, so its frames cannot change; a few ns a frame), or by copying reads for
 * any thread (the sampler). Also the list of the interpreter's thread states. No allocation,
 * no lock, no GIL; callers: src_pystack.c and src_pysampler.c (collector), tests/pystack.
 */
#include <errno.h>
#include <string.h>

#include "pystack/pystack.h"

#include "base/banned.h"

#define WALK_LIMIT 4096		/* frames visited, skipped ones included: a cycle ends here */

static inline uintptr_t ld(uintptr_t p)
{
	return *(const uintptr_t *)p;
}

static uintptr_t code_of(const struct apx_py_layout *L, uintptr_t raw)
{
	return L->tagged_code ? raw & ~(uintptr_t)3 : raw;
}

/* Byte offset of the current instruction from the frame's instruction field. */
static uint32_t lasti_of(const struct apx_py_layout *L, uintptr_t code, uintptr_t instr_field)
{
	if (L->frame_object) {
		int32_t lasti = (int32_t)(uint32_t)instr_field;

		return lasti < 0 ? 0 : (uint32_t)lasti * 2;
	}
	if (instr_field < code + L->code_adaptive)
		return 0;	/* before the first instruction (3.11-3.12 prev_instr) */
	return (uint32_t)(instr_field - (code + L->code_adaptive));
}

int apx_py_walk_own(const struct apx_py_runtime *rt, uintptr_t tstate,
		    struct apx_py_raw_frame *out, int max, int *ret_truncated)
{
	const struct apx_py_layout *L = &rt->L;
	uintptr_t f;
	int n = 0;

	*ret_truncated = 0;
	if (!tstate)
		return 0;
	f = ld(tstate + L->tstate_frame);
	if (L->cframe && f)
		f = ld(f + L->cframe_current_frame);
	for (int visited = 0; f && visited < WALK_LIMIT; visited++) {
		uintptr_t code, instr;

		if (L->skip_owner_min && *(const uint8_t *)(f + L->frame_owner) >= L->skip_owner_min) {
			f = ld(f + L->frame_previous);
			continue;
		}
		if (n == max) {
			*ret_truncated = 1;
			break;
		}
		code = code_of(L, ld(f + L->frame_code));
		instr = L->frame_object ? *(const uint32_t *)(f + L->frame_instr) :
			ld(f + L->frame_instr);
		out[n].code = code;
		out[n].lasti_bytes = lasti_of(L, code, instr);
		n++;
		f = ld(f + L->frame_previous);
	}
	return n;
}

int apx_py_current_frame(const struct apx_py_runtime *rt, uintptr_t tstate, uintptr_t *ret_frame)
{
	const struct apx_py_layout *L = &rt->L;
	uintptr_t f = 0;

	if (apx_py_read(tstate + L->tstate_frame, &f, sizeof(f)) < 0)
		return -EFAULT;
	if (L->cframe && f && apx_py_read(f + L->cframe_current_frame, &f, sizeof(f)) < 0)
		return -EFAULT;
	*ret_frame = f;
	return 0;
}

static inline uintptr_t at(const uint8_t *buf, unsigned off)
{
	uintptr_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

int apx_py_walk_copy(const struct apx_py_runtime *rt, uintptr_t tstate,
		     struct apx_py_raw_frame *out, int max, int *ret_truncated)
{
	const struct apx_py_layout *L = &rt->L;
	uint8_t fr[256];
	uintptr_t f;
	int n = 0;

	*ret_truncated = 0;
	if (!tstate)
		return 0;
	if (apx_py_current_frame(rt, tstate, &f) < 0)
		return -EFAULT;
	for (int visited = 0; f && visited < WALK_LIMIT; visited++) {
		uintptr_t code, instr, type;

		if (L->frame_size > sizeof(fr) || apx_py_read(f, fr, L->frame_size) < 0)
			return -EFAULT;
		if (L->skip_owner_min && fr[L->frame_owner] >= L->skip_owner_min) {
			f = at(fr, L->frame_previous);
			continue;
		}
		if (n == max) {
			*ret_truncated = 1;
			break;
		}
		code = code_of(L, at(fr, L->frame_code));
		if (apx_py_read(code + 8, &type, sizeof(type)) < 0)
			return -EFAULT;
		if (type != rt->code_type) {
			/* 3.13+: an executable that is not code (None while a frame is set up) */
			if (L->minor >= 13) {
				f = at(fr, L->frame_previous);
				continue;
			}
			return -EFAULT;
		}
		if (L->frame_object) {
			uint32_t v;

			memcpy(&v, fr + L->frame_instr, sizeof(v));
			instr = v;
		} else {
			instr = at(fr, L->frame_instr);
		}
		out[n].code = code;
		out[n].lasti_bytes = lasti_of(L, code, instr);
		n++;
		f = at(fr, L->frame_previous);
	}
	return n;
}

int apx_py_threads(const struct apx_py_runtime *rt, struct apx_py_thread *out, int max)
{
	const struct apx_py_layout *L = &rt->L;
	uintptr_t interp = 0, ts = 0;
	int n = 0;

	if (apx_py_read(rt->runtime + L->runtime_interp_head, &interp, sizeof(interp)) < 0 || !interp)
		return -EFAULT;
	if (apx_py_read(interp + L->interp_threads_head, &ts, sizeof(ts)) < 0)
		return -EFAULT;
	for (int visited = 0; ts && n < max && visited < 65536; visited++) {
		uintptr_t next = 0;
		uint64_t tid = 0;

		if (apx_py_read(ts + L->tstate_next, &next, sizeof(next)) < 0)
			return -EFAULT;
		if (L->tstate_native_tid &&
		    apx_py_read(ts + L->tstate_native_tid, &tid, sizeof(tid)) < 0)
			return -EFAULT;
		out[n].tstate = ts;
		out[n].tid = (pid_t)tid;
		n++;
		ts = next;
	}
	return n;
}
