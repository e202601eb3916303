/*
 * pystacks.c - Python stacks in the collector: the table of stacks both producers share, and
 * the writer side that turns them into FRAME and STACK records (docs/collector.md, "Python
 * stacks").
 *
 * Producers (lock-free, no allocation after start):
 *   - application threads in CUPTI enter callbacks (src_pystack.c): a launch, copy, memset
 *     or sync walks its own thread's frames by direct loads (pystack.h) and calls
 *     apx_pystacks_intern();
 *   - the sampler thread (src_pysampler.c), with frames read by copying reads.
 * A stack is keyed by a 64-bit hash of its (code object, instruction offset) pairs. The first
 * thread that inserts a key decodes each code object (copying reads, once per code object:
 * file, qualified name, first line; a reused address is told apart by its name objects) and
 * each line, and hands the definition to the writer through a ring. The writer gives every
 * (code object, line) a frame id, writes a FRAME record the first time and a STACK record per
 * definition, before it encodes the records that name the stack (it drains this ring first).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "collector/collector.h"
#include "collector/pystacks.h"

#include "base/banned.h"

#define STACK_SLOTS (1u << 16)
#define CODE_SLOTS (1u << 13)
#define DEF_SLOTS 4096u
#define FRAME_MAP (1u << 17)
#define CORR_SLOTS (1u << 20)
#define UNREADABLE UINT32_MAX	/* a frame whose code object could not be read */

struct code_slot {
	_Atomic uintptr_t code;		/* 0 = free */
	_Atomic int state;		/* 0 filling, 1 ready, 2 not a code object */
	uintptr_t filename_obj, qualname_obj;
	struct apx_py_code dec;
};

struct stack_slot {
	_Atomic uint64_t key;		/* hash, 0 = free */
	_Atomic uint32_t id;		/* 0 until the inserting thread assigned it */
};

struct stack_def {
	_Atomic uint64_t seq;		/* ring position + 1 once complete */
	uint32_t id;
	uint16_t n;
	uint8_t truncated;
	struct { uint32_t code; int32_t line; } f[APX_PYSTACK_DEPTH];
};

static struct {
	struct apx_py_runtime rt;
	struct code_slot *codes;
	struct stack_slot *stacks;
	struct stack_def *defs;
	_Atomic uint64_t def_head;
	_Atomic uint32_t next_id;
	_Atomic uint32_t other_ids;	/* of those, ids of native stacks (apx_pystacks_new_stack_id) */
	_Atomic uint64_t full, lost_defs, bad_code;
	_Atomic uint64_t *by_corr;	/* corr << 32 | stack id */
	_Atomic uint32_t *tid_by_corr;
	_Atomic uint64_t *ts_by_corr;	/* launch enter time (CLOCK_MONOTONIC), only with
					 * APX_PY_BACKWARD (--python-backward nvtx), else NULL */
	_Atomic uint32_t *pth_by_corr;	/* with it: the thread as CUPTI names it in NVTX ranges */
	/* writer thread only */
	uint64_t def_tail;
	uint64_t *frame_key;		/* (code slot + 1) << 32 | line */
	uint32_t *frame_id;
	uint32_t next_frame;
	uint32_t unreadable_fid;	/* the FRAME of unreadable code objects, 0 until needed */
	int ready;
} g;

int apx_pystacks_init(const struct apx_py_runtime *rt)
{
	g.rt = *rt;
	g.codes = calloc(CODE_SLOTS, sizeof(*g.codes));
	g.stacks = calloc(STACK_SLOTS, sizeof(*g.stacks));
	g.defs = calloc(DEF_SLOTS, sizeof(*g.defs));
	g.frame_key = calloc(FRAME_MAP, sizeof(*g.frame_key));
	g.frame_id = calloc(FRAME_MAP, sizeof(*g.frame_id));
	g.by_corr = calloc(CORR_SLOTS, sizeof(*g.by_corr));
	g.tid_by_corr = calloc(CORR_SLOTS, sizeof(*g.tid_by_corr));
	if (!g.codes || !g.stacks || !g.defs || !g.frame_key || !g.frame_id || !g.by_corr ||
	    !g.tid_by_corr)
		return -1;
	g.ready = 1;
	return 0;
}

int apx_pystacks_launch_times(void)
{
	/* backward attribution (docs/collector.md, "Backward kernels") joins launches to the
	 * launching thread's NVTX ranges by host time: 12 MiB more, only when asked for */
	_Atomic uint32_t *pth = calloc(CORR_SLOTS, sizeof(*pth));
	_Atomic uint64_t *ts = calloc(CORR_SLOTS, sizeof(*ts));

	if (!g.ready || !pth || !ts) {
		free(pth);
		free(ts);
		return -1;
	}
	g.pth_by_corr = pth;
	g.ts_by_corr = ts;	/* before any launch callback runs (start-up thread) */
	return 0;
}

const struct apx_py_runtime *apx_pystacks_runtime(void)
{
	return g.ready ? &g.rt : NULL;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* The code slot of a code object, decoding it the first time (copying reads). -1: not a code
 * object or the table is full. */
static int code_slot(uintptr_t code)
{
	uint32_t i = (uint32_t)(mix(0, code) & (CODE_SLOTS - 1));
	uintptr_t fn = 0, qn = 0;
	int have_ids = 0;

	for (uint32_t probe = 0; probe < 64; probe++, i = (i + 1) & (CODE_SLOTS - 1)) {
		struct code_slot *s = &g.codes[i];
		uintptr_t k = atomic_load_explicit(&s->code, memory_order_acquire);

		if (k == code) {
			int st;

			for (int spin = 0; (st = atomic_load_explicit(&s->state, memory_order_acquire)) == 0 &&
			     spin < 100000; spin++)
				;
			if (st != 1)
				continue;	/* not a code object (then), or still being decoded */
			/* the same address may hold a newer code object: compare its name objects */
			if (!have_ids) {
				const struct apx_py_layout *L = &g.rt.L;

				if (apx_py_read(code + L->code_filename, &fn, sizeof(fn)) < 0 ||
				    apx_py_read(code + (L->code_qualname ? L->code_qualname : L->code_name),
						&qn, sizeof(qn)) < 0)
					return -1;
				have_ids = 1;
			}
			if (fn == s->filename_obj && qn == s->qualname_obj)
				return (int)i;
			continue;
		}
		if (k == 0) {
			uintptr_t zero = 0;

			if (!atomic_compare_exchange_strong(&s->code, &zero, code)) {
				i = (i - 1) & (CODE_SLOTS - 1);	/* look at this slot again */
				probe--;
				continue;
			}
			if (apx_py_code_decode(&g.rt, code, &s->dec) < 0) {
				atomic_fetch_add(&g.bad_code, 1);
				atomic_store_explicit(&s->state, 2, memory_order_release);
				return -1;
			}
			s->filename_obj = s->dec.filename_obj;
			s->qualname_obj = s->dec.qualname_obj;
			atomic_store_explicit(&s->state, 1, memory_order_release);
			return (int)i;
		}
	}
	return -1;
}

static void define(uint32_t id, const struct apx_py_raw_frame *f, int n, int truncated)
{
	uint64_t pos = atomic_fetch_add_explicit(&g.def_head, 1, memory_order_relaxed);
	struct stack_def *d = &g.defs[pos & (DEF_SLOTS - 1)];
	int k = 0;

	atomic_store_explicit(&d->seq, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (int i = 0; i < n && k < APX_PYSTACK_DEPTH; i++) {
		int slot = code_slot(f[i].code);

		if (slot < 0) {		/* kept as "<unreadable>": the stack's depth stays honest */
			d->f[k].code = UNREADABLE;
			d->f[k].line = -1;
			k++;
			continue;
		}
		d->f[k].code = (uint32_t)slot;
		d->f[k].line = apx_py_code_line(&g.rt, &g.codes[slot].dec, f[i].lasti_bytes);
		k++;
	}
	d->id = id;
	d->n = (uint16_t)k;
	d->truncated = (uint8_t)truncated;
	atomic_store_explicit(&d->seq, pos + 1, memory_order_release);
}

uint32_t apx_pystacks_intern(const struct apx_py_raw_frame *f, int n, int truncated)
{
	uint64_t h = 0x5bd1e995u;
	uint32_t i;

	if (!g.ready || n <= 0)
		return 0;
	for (int k = 0; k < n; k++)
		h = mix(h, (uint64_t)f[k].code ^ ((uint64_t)f[k].lasti_bytes << 48));
	if (!h)
		h = 1;
	i = (uint32_t)(h & (STACK_SLOTS - 1));
	for (uint32_t probe = 0; probe < 64; probe++, i = (i + 1) & (STACK_SLOTS - 1)) {
		struct stack_slot *s = &g.stacks[i];
		uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);

		if (k == h)
			return atomic_load_explicit(&s->id, memory_order_acquire);
		if (k == 0) {
			uint64_t zero = 0;
			uint32_t id;

			if (!atomic_compare_exchange_strong(&s->key, &zero, h)) {
				if (zero == h)
					return atomic_load_explicit(&s->id, memory_order_acquire);
				continue;
			}
			id = atomic_fetch_add(&g.next_id, 1) + 1;
			define(id, f, n > APX_PYSTACK_DEPTH ? APX_PYSTACK_DEPTH : n,
			       truncated || n > APX_PYSTACK_DEPTH);
			atomic_store_explicit(&s->id, id, memory_order_release);
			return id;
		}
	}
	atomic_fetch_add_explicit(&g.full, 1, memory_order_relaxed);
	return 0;
}

void apx_pystacks_set_corr(uint32_t corr, uint32_t stack, uint32_t tid)
{
	if (!g.ready || !corr)
		return;
	atomic_store_explicit(&g.tid_by_corr[corr & (CORR_SLOTS - 1)], tid, memory_order_relaxed);
	if (g.ts_by_corr) {
		pthread_t self = pthread_self();

		atomic_store_explicit(&g.ts_by_corr[corr & (CORR_SLOTS - 1)], apx_mono_ns(),
				      memory_order_relaxed);
		atomic_store_explicit(&g.pth_by_corr[corr & (CORR_SLOTS - 1)], (uint32_t)self,
				      memory_order_relaxed);
	}
	atomic_store_explicit(&g.by_corr[corr & (CORR_SLOTS - 1)], (uint64_t)corr << 32 | stack,
			      memory_order_release);
}

uint32_t apx_pystacks_new_stack_id(void)
{
	atomic_fetch_add_explicit(&g.other_ids, 1, memory_order_relaxed);
	return atomic_fetch_add(&g.next_id, 1) + 1;
}

/* ---- writer side ---------------------------------------------------------------------------- */

uint32_t apx_pystacks_new_frame_id(void)
{
	return ++g.next_frame;
}

uint32_t apx_pystack_of_corr(uint32_t corr, uint32_t *ret_tid)
{
	uint64_t v;

	*ret_tid = 0;
	if (!g.ready || !corr)
		return 0;
	v = atomic_load_explicit(&g.by_corr[corr & (CORR_SLOTS - 1)], memory_order_acquire);
	if ((uint32_t)(v >> 32) != corr)
		return 0;
	*ret_tid = atomic_load_explicit(&g.tid_by_corr[corr & (CORR_SLOTS - 1)],
					memory_order_relaxed);
	return (uint32_t)v;
}

uint64_t apx_pystack_launch_ns(uint32_t corr, uint32_t *ret_thread)
{
	uint64_t v;

	*ret_thread = 0;
	if (!g.ready || !g.ts_by_corr || !corr)
		return 0;
	v = atomic_load_explicit(&g.by_corr[corr & (CORR_SLOTS - 1)], memory_order_acquire);
	if ((uint32_t)(v >> 32) != corr)
		return 0;
	*ret_thread = atomic_load_explicit(&g.pth_by_corr[corr & (CORR_SLOTS - 1)],
					   memory_order_relaxed);
	return atomic_load_explicit(&g.ts_by_corr[corr & (CORR_SLOTS - 1)], memory_order_relaxed);
}

static uint32_t frame_of(struct apx_enc *e, uint32_t code, int32_t line)
{
	uint64_t key = ((uint64_t)code + 1) << 32 | (uint32_t)(line < 0 ? 0 : line);
	uint32_t i = (uint32_t)(mix(0, key) & (FRAME_MAP - 1));

	for (uint32_t probe = 0; probe < FRAME_MAP; probe++, i = (i + 1) & (FRAME_MAP - 1)) {
		const struct code_slot *s = &g.codes[code];
		struct apx_rec rec;
		uint32_t fid;

		if (g.frame_key[i] == key)
			return g.frame_id[i];
		if (g.frame_key[i])
			continue;
		fid = ++g.next_frame;
		g.frame_key[i] = key;
		g.frame_id[i] = fid;
		apx_rec_init(&rec, APX_REC_FRAME);
		rec.v[APX_FRAME_ID] = fid;
		rec.v[APX_FRAME_KIND] = APX_FRAME_PYTHON;
		if (atomic_load_explicit(&s->state, memory_order_acquire) == 1) {
			uint32_t sid = 0;

			(void)apx_writer_intern(e->w, s->dec.file, strlen(s->dec.file), &sid);
			rec.v[APX_FRAME_FILE] = sid;
			sid = 0;
			(void)apx_writer_intern(e->w, s->dec.func, strlen(s->dec.func), &sid);
			rec.v[APX_FRAME_FUNC] = sid;
			rec.v[APX_FRAME_FIRST_LINE] = (uint64_t)s->dec.first_line;
		}
		rec.v[APX_FRAME_LINE] = line < 0 ? 0 : (uint64_t)line;
		(void)apx_writer_add(e->w, &rec);
		return fid;
	}
	return 0;
}

/* One FRAME for every code object that could not be read (freed under the reader, or not a
 * code object): "<unreadable code object>" in "<unreadable>", folded as a library frame by the
 * report, so a stack keeps its depth and no line is named wrongly. */
static uint32_t unreadable_frame(struct apx_enc *e)
{
	struct apx_rec rec;
	uint32_t sid = 0;

	if (g.unreadable_fid)
		return g.unreadable_fid;
	g.unreadable_fid = ++g.next_frame;
	apx_rec_init(&rec, APX_REC_FRAME);
	rec.v[APX_FRAME_ID] = g.unreadable_fid;
	rec.v[APX_FRAME_KIND] = APX_FRAME_PYTHON;
	(void)apx_writer_intern(e->w, "<unreadable>", 12, &sid);
	rec.v[APX_FRAME_FILE] = sid;
	sid = 0;
	(void)apx_writer_intern(e->w, "<unreadable code object>", 24, &sid);
	rec.v[APX_FRAME_FUNC] = sid;
	(void)apx_writer_add(e->w, &rec);
	return g.unreadable_fid;
}

void apx_pystacks_drain(struct apx_enc *e)
{
	if (!g.ready)
		return;
	for (;;) {
		struct stack_def *d = &g.defs[g.def_tail & (DEF_SLOTS - 1)], copy;
		uint64_t s = atomic_load_explicit(&d->seq, memory_order_acquire);
		uint8_t buf[APX_PYSTACK_DEPTH * 5];
		struct apx_rec rec;
		size_t o = 0;

		if (s > g.def_tail + 1) {
			atomic_fetch_add(&g.lost_defs, s - 1 - g.def_tail);	/* lapped */
			g.def_tail = s - 1;
			continue;
		}
		if (s != g.def_tail + 1)
			break;
		memcpy(&copy, d, sizeof(copy));	/* a producer may lap the slot while we read */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&d->seq, memory_order_relaxed) != s) {
			atomic_fetch_add(&g.lost_defs, 1);
			g.def_tail++;
			continue;
		}
		d = &copy;
		for (unsigned k = 0; k < d->n && k < APX_PYSTACK_DEPTH; k++) {
			uint32_t fid = d->f[k].code == UNREADABLE ? unreadable_frame(e) :
				       d->f[k].code < CODE_SLOTS ?
				       frame_of(e, d->f[k].code, d->f[k].line) : 0;

			if (!fid)
				continue;

			do {
				uint8_t b = fid & 0x7f;

				fid >>= 7;
				buf[o++] = (uint8_t)(b | (fid ? 0x80 : 0));
			} while (fid);
		}
		apx_rec_init(&rec, APX_REC_STACK);
		rec.v[APX_STACK_ID] = d->id;
		apx_rec_set_bytes(&rec, APX_STACK_FRAMES, buf, o);
		rec.v[APX_STACK_TRUNCATED] = d->truncated;
		(void)apx_writer_add(e->w, &rec);
		g.def_tail++;
	}
}

void apx_pystacks_stats(uint64_t *ret_stacks, uint64_t *ret_full, uint64_t *ret_lost,
			uint64_t *ret_bad_code)
{
	*ret_stacks = atomic_load(&g.next_id) - atomic_load(&g.other_ids);
	*ret_full = atomic_load(&g.full);
	*ret_lost = atomic_load(&g.lost_defs);
	*ret_bad_code = atomic_load(&g.bad_code);
}
