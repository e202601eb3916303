/*
 * p2p.h - peer-to-peer copies (one GPU's memory to another's: CUPTI's MEMCPY2 records, which
 * name the source and the destination device) by (source device, destination device), with
 * their achieved bandwidth and the link between the two: NVLink when both devices have active
 * NVLinks, PCIe when either has none, unknown when the trace does not say. Devices are the
 * event store's, keyed by (host, UUID), so that the copies of several processes (ranks) onto
 * one GPU are one pair whatever ordinal each process gave it.
 *
 * load.c hands every MEMCPY record to apx_p2p_add_record() (the store's record hook);
 * apx_model_finish() (finish.c) builds m->p2p once the store knows every file's devices. Read
 * by the report's transfers section (lib/report/build_p2p.c). The link facts of a device
 * (its NVLink count, NVLink's and PCIe's speeds) are shared with the ranks' link (ranks.c).
 * docs/report.md "Peer-to-peer copies" says what each number means. Nothing here logs;
 * single-threaded.
 */
#ifndef APX_ANALYSIS_P2P_H
#define APX_ANALYSIS_P2P_H

#include <stddef.h>
#include <stdint.h>

#include <apx/format.h>

struct apx_model;
struct apx_an_device;

#define APX_P2P_LARGE_BYTES (1u << 20)	/* copies this large or larger: the per-copy median */

/* One peer copy as its record named it (load.c): device ordinals of the file's process. */
struct apx_an_p2p_copy {
	uint64_t bytes, dur_ns;
	uint32_t src, dst;			/* device ordinals (saturated) */
	uint16_t file;
};

/* The peer copies from one device to another, every process's. */
struct apx_p2p_pair {
	uint32_t src, dst;			/* store devices (host, UUID); UINT32_MAX:
						 * the file that named it holds no DEVICE
						 * record of it */
	uint32_t src_host, dst_host;		/* store hosts */
	uint32_t src_ord, dst_ord;		/* the store device's ordinal (its first file's),
						 * else the ordinal the copy's record gave */
	uint16_t file;				/* the file of its first copy */
	unsigned nfiles;			/* processes whose records hold its copies */
	uint8_t files_seen[32];			/* a bit per model file (APX_AN_MAX_FILES) */
	uint64_t copies, bytes, ns;		/* ns: the copies' durations summed */
	double bw_bps;				/* bytes / ns (0: no duration) */
	uint64_t large;				/* copies of APX_P2P_LARGE_BYTES or more
						 * with a duration */
	double large_median_bps;		/* their median bandwidth (the mean of the middle
						 * two for an even count); 0: none */
	int src_links, dst_links;		/* active NVLinks, -1: not recorded */
	const char *link;			/* "NVLink", "PCIe"; NULL: not known */
	double peak_bps;			/* the link's peak a direction; 0: not known */
	char why[160];				/* how the link and its peak were found,
						 * or why not */
};

/* The store's record hook (load.c): keeps r when it is a peer copy: of kind P2P, or D2D between
 * two devices its record names. A P2P copy whose record names one device only (a Kineto
 * trace's "PtoP") is counted in m->p2p_unnamed. 0 or -ENOMEM. */
int apx_p2p_add_record(struct apx_model *m, uint16_t file, const struct apx_rec *r);
/* The pairs (m->p2p: in the order their first copy is met, file by file, records in file
 * order), after the store is built. 0 or -ENOMEM. */
int apx_p2p_build(struct apx_model *m);

/* Link facts. Active NVLink links of store device es: a DEVICE record's nvlink_count, else the
 * collector's NVML reading (the nvml.nvlink_links series of any file naming it); -1 when
 * neither says. */
int apx_device_nvlinks(const struct apx_model *m, uint32_t es);
/* NVLink's speed a link and direction by architecture, GB/s (0: not known). */
double apx_nvlink_gbps(uint32_t cc_major, uint32_t cc_minor);
/* PCIe's rate a lane and direction, GB/s, of generation gen (0: not known). */
double apx_pcie_lane_gbps(uint32_t gen);

#endif
