/*
 * pystack.h - reading CPython's frames without the GIL: the interpreter's layout for the
 * running version, a walk of one thread's frame chain, and the decoding of code objects
 * (file, qualified name, line of an instruction). Used by the collector (the launching thread
 * walks its own frames in a CUPTI callback; a sampler thread walks every thread), by tests
 * that load it into python3 (tests/pystack), and apx attach --python-only (another process:
 * apx_py_set_pid, apx_py_runtime_find_pid in remote.c).
 *
 * Nothing here allocates, locks or logs. Two ways to read memory:
 *   - direct loads, only on the calling thread's own frame chain, which cannot change while
 *     the thread is inside our code (apx_py_walk_own);
 *   - copying reads (apx_py_read: process_vm_readv on this process), which return -EFAULT
 *     instead of faulting, for everything else (other threads, code objects, strings).
 * Supported: CPython 3.10 to 3.14 on x86-64 and aarch64, GIL builds (not free-threaded).
 * Offsets: hard-coded for 3.10-3.12 (measured with offsetof against each version's internal
 * headers), from _Py_DebugOffsets at the start of _PyRuntime from 3.13 (checked against the
 * same measurement for 3.13). docs/collector.md, "Python stacks".
 */
#ifndef APX_PYSTACK_H
#define APX_PYSTACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where the fields are, for one CPython version. Offsets in bytes. */
struct apx_py_layout {
	uint32_t version_hex;		/* PY_VERSION_HEX of the running interpreter */
	uint8_t minor;			/* 3.minor */
	uint8_t frame_object;		/* 3.10: frames are PyFrameObject, f_lasti an index */
	uint8_t cframe;			/* 3.11-3.12: tstate->cframe->current_frame */
	uint8_t tagged_code;		/* 3.14: f_executable is a _PyStackRef (low bits tag) */
	uint8_t skip_owner_min;		/* skip frames whose owner >= this (0 = no owner field) */
	uint16_t runtime_interp_head;	/* _PyRuntime.interpreters.head */
	uint16_t interp_threads_head;	/* PyInterpreterState.threads.head */
	uint16_t tstate_next;
	uint16_t tstate_native_tid;	/* 0 when the version has none (3.10) */
	uint16_t tstate_frame;		/* current frame, or the cframe pointer (3.11-3.12) */
	uint16_t cframe_current_frame;
	uint16_t frame_previous;	/* f_back for 3.10 */
	uint16_t frame_code;		/* f_code / f_executable */
	uint16_t frame_instr;		/* prev_instr / instr_ptr; 3.10: f_lasti (int) */
	uint16_t frame_owner;
	uint16_t frame_size;		/* bytes to copy of one frame */
	uint16_t code_filename, code_name, code_qualname;	/* qualname 0 = none (3.10) */
	uint16_t code_firstlineno;	/* int */
	uint16_t code_linetable;	/* bytes object */
	uint16_t code_adaptive;		/* first instruction, inside the code object (3.11+) */
	uint16_t code_size;		/* bytes to copy of a code object's header */
	uint16_t unicode_state, unicode_length, unicode_ascii_size, unicode_compact_size;
	uint16_t bytes_size, bytes_sval;
};

/* The interpreter this process runs, found with dlsym: its layout and the addresses the walks
 * need. */
struct apx_py_runtime {
	struct apx_py_layout L;
	uintptr_t runtime;		/* &_PyRuntime */
	uintptr_t code_type;		/* &PyCode_Type: a frame's code object is one */
	void *(*this_thread_state)(void);	/* PyGILState_GetThisThreadState */
	int (*is_finalizing)(void);	/* Py_IsFinalizing / _Py_IsFinalizing, NULL if absent */
};

/* Find the running interpreter. 0, or -ENOENT (no Python in this process), -ENOTSUP (a
 * version or build apx does not know: why says which, NUL-terminated). Reads _PyRuntime's
 * debug offsets with copying reads. */
int apx_py_runtime_find(struct apx_py_runtime *ret_rt, char *why, size_t why_cap);

/* The layout of rt (runtime set) for version (PY_VERSION_HEX; exact: from Py_Version, so it
 * must agree with _Py_DebugOffsets; else only 3.minor is known): rt->L. 0 or -ENOTSUP. */
int apx_py_runtime_layout(struct apx_py_runtime *rt, uint32_t version, int exact, char *why,
			  size_t why_cap);
/* The layout for a version without debug offsets (3.10-3.12); -ENOTSUP for others. */
int apx_py_layout_builtin(uint32_t version_hex, struct apx_py_layout *ret_layout);
/* The layout from a copy of _Py_DebugOffsets (3.13+): n bytes from the start of _PyRuntime.
 * -ENOTSUP when the cookie, version, free-threading or the table's shape is not one apx
 * knows (why says which). */
int apx_py_layout_from_debug(const uint8_t *dbg, size_t n, struct apx_py_layout *ret_layout,
			     char *why, size_t why_cap);

/* Copying read of len bytes at addr of this process: 0 or -EFAULT (unmapped, or the
 * kernel refused: -EPERM, -ENOSYS). Never faults. */
int apx_py_read(uintptr_t addr, void *dst, size_t len);
/* Point the copying reads (apx_py_read, apx_py_readv, and every walk and decode that uses
 * them) at process pid; 0 = this process again (the default). Not thread-safe: set once
 * before the reads start. */
void apx_py_set_pid(pid_t pid);
/* Find the interpreter of another process from outside (remote.c): the python executable or
 * libpython mapped in /proc/PID/maps, its ELF symbols (_PyRuntime, PyCode_Type, Py_Version)
 * plus the load bias, the version from Py_Version read remotely (3.11+) or the file's name
 * (python3.X, libpython3.X), then the layout. Sets apx_py_set_pid(pid). 0, or -ESRCH (no such
 * process), -EPERM (not allowed to read it: another user's, or ptrace policy), -ENOENT (no
 * Python in it), -ENOTSUP (a version or build apx does not know); why says which.
 * this_thread_state and is_finalizing stay NULL (not callable in another process). */
int apx_py_runtime_find_pid(pid_t pid, struct apx_py_runtime *ret_rt, char *why, size_t why_cap);
/* The address of symbol name (PyEval_SaveThread...) in process pid's CPython: the first python
 * executable or libpython mapped in /proc/PID/maps (libpython first) whose .symtab or .dynsym
 * defines it (remote.c). 0, -ENOENT (no Python mapped, or none defines it), or the negative
 * errno of reading /proc/PID/maps (-EACCES: another user's process). */
int apx_py_symbol_find_pid(pid_t pid, const char *name, uintptr_t *ret_addr);
/* Several copying reads in one system call: each of n (addr, dst, len) triples; 0 when every
 * byte was read, else -EFAULT (the caller retries the ones it needs one by one). */
struct apx_py_iov {
	uintptr_t addr;
	void *dst;
	size_t len;
};
int apx_py_readv(const struct apx_py_iov *v, size_t n);

/* One raw frame: the code object's address and the instruction's byte offset in it. */
struct apx_py_raw_frame {
	uintptr_t code;
	uint32_t lasti_bytes;		/* byte offset of the current instruction */
};

/* The calling thread's own frames, innermost first, by direct loads (tstate is the calling
 * thread's, from rt->this_thread_state()). Returns the number written (<= max); sets
 * *ret_truncated when the chain had more. Only for a layout already checked with
 * apx_py_walk_copy on this thread (apx_py_check_own). */
int apx_py_walk_own(const struct apx_py_runtime *rt, uintptr_t tstate,
		    struct apx_py_raw_frame *out, int max, int *ret_truncated);
/* The same by copying reads, for any thread; -EFAULT when a read failed (a chain that changed
 * under the reader: drop the sample), else the count. Checks every code object's type. */
int apx_py_walk_copy(const struct apx_py_runtime *rt, uintptr_t tstate,
		     struct apx_py_raw_frame *out, int max, int *ret_truncated);
/* The first frame pointer of a thread state, by copying reads (0 = none). */
int apx_py_current_frame(const struct apx_py_runtime *rt, uintptr_t tstate, uintptr_t *ret_frame);

/* A decoded code object. */
struct apx_py_code {
	char file[256];
	char func[192];			/* co_qualname (co_name on 3.10) */
	int32_t first_line;
	uintptr_t linetable;		/* the bytes object, for apx_py_code_line */
	uintptr_t filename_obj, qualname_obj;	/* identity, to tell a reused address */
};

/* Decode the code object at code by copying reads: 0, -EFAULT, or -EBADMSG (not a code
 * object, or fields out of range). Names longer than the buffers are cut on a UTF-8
 * boundary; bytes that are not valid text are replaced by '?'. */
int apx_py_code_decode(const struct apx_py_runtime *rt, uintptr_t code, struct apx_py_code *ret);
/* The line of the instruction at byte offset lasti_bytes (copying reads of the line table):
 * the line (>= 0), or -1 when the table has none for it or cannot be read. */
int apx_py_code_line(const struct apx_py_runtime *rt, const struct apx_py_code *code,
		     uint32_t lasti_bytes);
/* The line-table decoders themselves, on a copy of the table (linetable.c; unit-tested). */
int apx_py_line_310(const uint8_t *tab, size_t n, int first_line, uint32_t lasti_bytes);
int apx_py_line_311(const uint8_t *tab, size_t n, int first_line, uint32_t lasti_bytes);

/* Walk the interpreter's thread states (copying reads): up to max (tstate address, native
 * thread id) pairs; the count, or -EFAULT. */
struct apx_py_thread {
	uintptr_t tstate;
	pid_t tid;			/* 0 when the version does not record it */
};
int apx_py_threads(const struct apx_py_runtime *rt, struct apx_py_thread *out, int max);

#endif
