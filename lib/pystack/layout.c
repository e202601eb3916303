/*
 * layout.c - where CPython keeps threads, frames and code objects, per version: built-in
 * tables for 3.10-3.12 (offsetof measured against each version's internal headers, x86-64 and
 * aarch64 alike: LP64, no field depends on the architecture), and a parser of the
 * _Py_DebugOffsets table CPython 3.13+ puts at the start of _PyRuntime. Called once, by
 * apx_py_runtime_find (runtime.c); pure functions, any thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pystack/pystack.h"

#include "base/banned.h"

/* The fields every version shares (PyObject, bytes and str headers of GIL builds). */
static void common_objects(struct apx_py_layout *L, int wstr)
{
	L->unicode_state = 32;
	L->unicode_length = 16;
	L->unicode_ascii_size = wstr ? 48 : 40;		/* 3.10-3.11 still have wstr */
	L->unicode_compact_size = wstr ? 72 : 56;
	L->bytes_size = 16;
	L->bytes_sval = 32;
}

int apx_py_layout_builtin(uint32_t version_hex, struct apx_py_layout *ret_layout)
{
	struct apx_py_layout L = { 0 };
	unsigned minor = (version_hex >> 16) & 0xff;

	if ((version_hex >> 24) != 3)
		return -ENOTSUP;
	L.version_hex = version_hex;
	L.minor = (uint8_t)minor;
	switch (minor) {
	case 10:
		L.frame_object = 1;
		L.runtime_interp_head = 32;
		L.interp_threads_head = 8;
		L.tstate_next = 8;
		L.tstate_frame = 24;
		L.frame_previous = 24;		/* f_back */
		L.frame_code = 32;
		L.frame_instr = 96;		/* f_lasti, in code units */
		L.frame_size = 104;
		L.code_filename = 104;
		L.code_name = 112;
		L.code_firstlineno = 40;
		L.code_linetable = 120;
		L.code_size = 128;
		common_objects(&L, 1);
		break;
	case 11:
		L.cframe = 1;
		L.runtime_interp_head = 40;
		L.interp_threads_head = 16;
		L.tstate_next = 8;
		L.tstate_native_tid = 160;
		L.tstate_frame = 56;
		L.cframe_current_frame = 8;
		L.frame_previous = 48;
		L.frame_code = 32;
		L.frame_instr = 56;		/* prev_instr */
		L.frame_owner = 69;		/* no C-stack owner in 3.11: nothing skipped */
		L.frame_size = 80;
		L.code_filename = 112;
		L.code_name = 120;
		L.code_qualname = 128;
		L.code_firstlineno = 72;
		L.code_linetable = 136;
		L.code_adaptive = 184;
		L.code_size = 192;
		common_objects(&L, 1);
		break;
	case 12:
		L.cframe = 1;
		L.runtime_interp_head = 40;
		L.interp_threads_head = 72;
		L.tstate_next = 8;
		L.tstate_native_tid = 144;
		L.tstate_frame = 56;
		L.cframe_current_frame = 0;
		L.frame_previous = 8;
		L.frame_code = 0;
		L.frame_instr = 56;		/* prev_instr */
		L.frame_owner = 70;
		L.skip_owner_min = 3;		/* FRAME_OWNED_BY_CSTACK: the entry shim */
		L.frame_size = 80;
		L.code_filename = 112;
		L.code_name = 120;
		L.code_qualname = 128;
		L.code_firstlineno = 68;
		L.code_linetable = 136;
		L.code_adaptive = 192;
		L.code_size = 200;
		common_objects(&L, 0);
		break;
	default:
		return -ENOTSUP;
	}
	*ret_layout = L;
	return 0;
}

/* Sections of _Py_DebugOffsets are arrays of uint64; some grew between versions (3.14 added
 * fields inside the interpreter, frame and code sections), so the shape is found by trying
 * the field counts seen so far and keeping the one whose values make sense. */
#define W(i) (w[(i)])

static int shape_ok(const uint64_t *w, size_t nw, size_t T, size_t F, size_t C, size_t P)
{
	if (P + 2 > nw)
		return 0;
	if (W(T + 1) != 0 || W(T + 2) != 8)		/* thread: prev, next */
		return 0;
	if (W(T) < 64 || W(T) > 1 << 16 || W(T + 4) >= W(T) || W(T + 6) >= W(T) ||
	    W(T + 7) >= W(T))
		return 0;
	if (W(F) < 40 || W(F) > 256 || W(F + 1) >= W(F) || W(F + 2) >= W(F) ||
	    W(F + 3) >= W(F) || W(F + 5) >= W(F))
		return 0;
	if (W(C) < 96 || W(C) > 1024)
		return 0;
	for (size_t i = 1; i <= 5; i++)
		if (W(C + i) >= W(C))
			return 0;
	if (W(C + 9) > W(C))		/* co_code_adaptive: the first instruction, at the end */
		return 0;
	if (W(P) != 16 || W(P + 1) != 8)		/* PyObject: size, ob_type */
		return 0;
	return 1;
}

int apx_py_layout_from_debug(const uint8_t *dbg, size_t n, struct apx_py_layout *ret_layout,
			     char *why, size_t why_cap)
{
	uint64_t w[96];
	size_t nw = n / 8 < 96 ? n / 8 : 96;
	static const size_t ninterp[] = { 13, 14, 15, 16, 17 }, nframe[] = { 6, 7, 8, 9 },
			    ncode[] = { 10, 11, 12 };
	struct apx_py_layout L = { 0 };
	uint64_t version;

	memcpy(w, dbg, nw * 8);
	if (nw < 40 || memcmp(dbg, "xdebugpy", 8) != 0) {
		snprintf(why, why_cap, "no _Py_DebugOffsets at the start of _PyRuntime");
		return -ENOTSUP;
	}
	version = W(1);
	if ((version >> 24) != 3 || ((version >> 16) & 0xff) < 13) {
		snprintf(why, why_cap, "_Py_DebugOffsets of an unknown version 0x%llx",
			 (unsigned long long)version);
		return -ENOTSUP;
	}
	if (W(2)) {
		snprintf(why, why_cap, "a free-threaded CPython build (not supported)");
		return -ENOTSUP;
	}
	for (size_t a = 0; a < sizeof(ninterp) / sizeof(ninterp[0]); a++)
		for (size_t b = 0; b < sizeof(nframe) / sizeof(nframe[0]); b++)
			for (size_t c = 0; c < sizeof(ncode) / sizeof(ncode[0]); c++) {
				size_t I = 6, T = I + ninterp[a], F = T + 9, C = F + nframe[b];
				size_t P = C + ncode[c];

				if (!shape_ok(w, nw, T, F, C, P))
					continue;
				L.version_hex = (uint32_t)version;
				L.minor = (uint8_t)((version >> 16) & 0xff);
				L.tagged_code = L.minor >= 14;
				L.runtime_interp_head = (uint16_t)W(5);
				L.interp_threads_head = (uint16_t)W(I + 3);
				L.tstate_next = (uint16_t)W(T + 2);
				L.tstate_frame = (uint16_t)W(T + 4);
				L.tstate_native_tid = (uint16_t)W(T + 6);
				L.frame_size = (uint16_t)W(F);
				L.frame_previous = (uint16_t)W(F + 1);
				L.frame_code = (uint16_t)W(F + 2);
				L.frame_instr = (uint16_t)W(F + 3);
				L.frame_owner = (uint16_t)W(F + 5);
				L.skip_owner_min = 3;	/* C-stack / interpreter-owned entry frames */
				L.code_size = (uint16_t)(W(C) > 512 ? 512 : W(C));
				L.code_filename = (uint16_t)W(C + 1);
				L.code_name = (uint16_t)W(C + 2);
				L.code_qualname = (uint16_t)W(C + 3);
				L.code_linetable = (uint16_t)W(C + 4);
				L.code_firstlineno = (uint16_t)W(C + 5);
				L.code_adaptive = (uint16_t)W(C + 9);
				if (W(5) > 1 << 16 || W(I + 3) > 1 << 16)
					continue;
				common_objects(&L, 0);
				*ret_layout = L;
				return 0;
			}
	snprintf(why, why_cap, "_Py_DebugOffsets of CPython 0x%llx has a shape apx does not know",
		 (unsigned long long)version);
	return -ENOTSUP;
}
