/*
 * runtime.c - finding the CPython interpreter of this process: its version (Py_Version, or
 * Py_GetVersion's text on 3.10), _PyRuntime, PyCode_Type and PyGILState_GetThisThreadState,
 * all with dlsym (apx never links libpython), then the layout (layout.c). Called once by the
 * collector's Python-stack source, off the hot path; any thread.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pystack/pystack.h"

#include "base/banned.h"

static uint32_t version_from_text(const char *v)
{
	unsigned major = 0, minor = 0, micro = 0;

	if (!v || sscanf(v, "%u.%u.%u", &major, &minor, &micro) < 2)
		return 0;
	return (major << 24) | (minor << 16) | (micro << 8) | 0xf0;
}

int apx_py_runtime_layout(struct apx_py_runtime *rt, uint32_t version, int exact, char *why,
			  size_t why_cap)
{
	int r;

	if (((version >> 16) & 0xff) >= 13) {
		uint8_t dbg[768];

		if (apx_py_read(rt->runtime, dbg, sizeof(dbg)) < 0) {
			snprintf(why, why_cap, "cannot read _PyRuntime (process_vm_readv refused)");
			return -ENOTSUP;
		}
		r = apx_py_layout_from_debug(dbg, sizeof(dbg), &rt->L, why, why_cap);
		if (r < 0)
			return r;
		if (rt->L.version_hex != version && exact) {
			snprintf(why, why_cap, "Py_Version 0x%x and _Py_DebugOffsets 0x%x disagree",
				 version, rt->L.version_hex);
			return -ENOTSUP;
		}
		return 0;
	}
	r = apx_py_layout_builtin(version, &rt->L);
	if (r < 0)
		snprintf(why, why_cap, "CPython %u.%u is not supported (3.10 to 3.14 are)",
			 version >> 24, (version >> 16) & 0xff);
	return r;
}

int apx_py_runtime_find(struct apx_py_runtime *ret_rt, char *why, size_t why_cap)
{
	struct apx_py_runtime rt = { 0 };
	const unsigned long *py_version = dlsym(RTLD_DEFAULT, "Py_Version");
	const char *(*get_version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	uint32_t version;
	int r;

	rt.runtime = (uintptr_t)dlsym(RTLD_DEFAULT, "_PyRuntime");
	rt.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	rt.this_thread_state = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	rt.is_finalizing = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
	if (!rt.is_finalizing)
		rt.is_finalizing = (int (*)(void))dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
	if (!get_version && !py_version) {
		snprintf(why, why_cap, "no Python interpreter in this process");
		return -ENOENT;
	}
	if (!rt.runtime || !rt.code_type || !rt.this_thread_state) {
		snprintf(why, why_cap, "the Python interpreter does not export %s",
			 !rt.runtime ? "_PyRuntime" : !rt.code_type ? "PyCode_Type" :
			 "PyGILState_GetThisThreadState");
		return -ENOTSUP;
	}
	version = py_version ? (uint32_t)*py_version : version_from_text(get_version());
	r = apx_py_runtime_layout(&rt, version, py_version != NULL, why, why_cap);
	if (r < 0)
		return r;
	*ret_rt = rt;
	return 0;
}
