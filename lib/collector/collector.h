/*
 * collector.h - internal to libapx-inject.so: the structures shared by inject.c (CUPTI set-up,
 * callbacks, exit/fork/signal paths), encode.c (CUPTI activity records -> .apx records, on
 * the writer thread) and proc.c (process CPU facts, on the writer thread).
 *
 * Two side tables are written by API callbacks on application threads and read by the writer
 * thread, both preallocated and lock-free:
 *   - the host-pointer table, indexed by correlation id, holds the host address of each
 *     host<->device copy (joined with the MEMCPY activity record by correlation id);
 *   - the event ring holds rare configuration events (L2 set-aside, access-policy windows,
 *     degraded features) until the writer thread turns them into records.
 */
#ifndef APX_COLLECTOR_H
#define APX_COLLECTOR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

/* One host<->device copy seen by an API callback. corr is 0 while the slot is being written. */
struct apx_hostptr_slot {
	_Atomic uint64_t corr;
	_Atomic uint64_t src;
	_Atomic uint64_t dst;
	_Atomic uint64_t bytes;
};

enum apx_ev_kind {
	APX_EV_CONFIG = 1,	/* fields below describe an APX_REC_CONFIG record */
	APX_EV_DEGRADED = 2,	/* text (static storage) + err */
};

/* One event of the ring; seq = ring position + 1 once complete. */
struct apx_event {
	_Atomic uint64_t seq;
	uint32_t kind;		/* enum apx_ev_kind */
	uint32_t cfg_kind;	/* enum apx_config_kind */
	uint64_t ts_ns, corr, tid, device, context, stream, target, value;
	uint64_t apw_base, apw_bytes, apw_hit_ppm;
	uint32_t apw_hit, apw_miss;
	int32_t err;
	const char *text;
};

/* Writer-thread state of the encoder (encode.c). */
struct apx_enc {
	struct apx_writer *w;
	const struct apx_hostptr_slot *hp;
	size_t hp_mask;
	uint32_t api_name[2][1024];	/* string ids per (domain, cbid), 0 = not yet */
	uint64_t kernels, memcpys, others, hostptr_joined;
	uint64_t foreign;		/* records of kinds apx did not enable */
	uint64_t foreign_clock;		/* timestamps far from CLOCK_MONOTONIC */
	uint64_t clock_limit;		/* a timestamp past this is not CLOCK_MONOTONIC */
	int api_level;
	uint64_t last_ts;		/* newest timestamp seen in a record */
	int err;			/* first writer error */
	struct apx_marker_open {
		uint64_t id, start_ns, tid;
		uint32_t name, domain;
	} markers[1024];
};

/* Encode every record of one CUPTI buffer. Returns the records seen. */
size_t apx_enc_buffer(struct apx_enc *e, uint8_t *buf, size_t valid);
/* Encode one ring event. */
void apx_enc_event(struct apx_enc *e, const struct apx_event *ev);

/* proc.c: a process-wide CPU sample (getrusage + /proc/self/status), and at exit one THREAD
 * record per live thread with its name. */
void apx_proc_sample(struct apx_writer *w, uint64_t ts_ns);
void apx_proc_threads(struct apx_writer *w, uint64_t ts_ns);

uint64_t apx_mono_ns(void);

#endif
