/*
 * nic_sysfs.h - the NIC counters of one host, from the kernel's sysfs (apx analyze
 * --nic-metrics): which devices and counter files there are, opened once, and one read of a
 * counter. Used by src_nic.c (the collector's NIC source) and tests/unit/test-nic.c; nothing
 * here needs CUDA.
 *
 * Counters and their METRIC names (docs/collector.md, "NIC metrics"): every value is the
 * kernel's cumulative counter at the sample's time, not a rate (apx report takes rates from
 * successive values):
 *   nic.DEV.rx_bytes, tx_bytes, rx_packets, tx_packets      /sys/class/net/DEV/statistics
 *   ib.DEV.PORT.port_rcv_data, port_xmit_data (bytes: the kernel counts 4-byte words, the
 *     value written is that count x 4), port_rcv_packets, port_xmit_packets, port_xmit_wait
 *     (ticks with data to send and no credit)            /sys/class/infiniband/DEV/ports/PORT/counters
 *   ib.DEV.PORT.np_cnp_sent, rp_cnp_handled, np_ecn_marked_roce_packets (where the driver
 *     has them)                                          .../ports/PORT/hw_counters
 * and once, the line rate of each link that is up, in bits per second (unit "bit/s"):
 *   nic.DEV.line_rate     /sys/class/net/DEV/speed (Mb/s) of a physical device (one with a
 *                         `device` link: no lo, bridge, veth or bond) whose operstate is "up"
 *   ib.DEV.PORT.line_rate /sys/class/infiniband/DEV/ports/PORT/rate ("200 Gb/sec (4X HDR)")
 *                         of a port whose state is ACTIVE
 */
#ifndef APX_COLLECTOR_NIC_SYSFS_H
#define APX_COLLECTOR_NIC_SYSFS_H

#include <stddef.h>
#include <stdint.h>

#define APX_NIC_MAX_COUNTERS 256
#define APX_NIC_NAME_MAX 112
#define APX_NIC_MAX_LINKS 64

struct apx_nic_counter {
	int fd;				/* the counter file, O_RDONLY | O_CLOEXEC */
	uint32_t scale;			/* the value is the counter x scale (4: IB data words) */
	const char *unit;		/* static: "bytes", "packets", "ticks" */
	char name[APX_NIC_NAME_MAX];	/* the METRIC name, e.g. "nic.eth0.rx_bytes" */
};

/* A link's line rate, read once when the set is opened. */
struct apx_nic_link {
	uint64_t bps;			/* bits per second */
	char name[APX_NIC_NAME_MAX];	/* the METRIC name, e.g. "ib.mlx5_0.1.line_rate" */
};

struct apx_nic_set {
	struct apx_nic_counter c[APX_NIC_MAX_COUNTERS];
	unsigned n;			/* counters open */
	struct apx_nic_link link[APX_NIC_MAX_LINKS];
	unsigned nlinks;		/* links up with a known rate */
	unsigned nnet, nib;		/* net devices and InfiniBand ports listed */
	unsigned skipped;		/* counters left out: the table was full */
};

/* List the devices under root ("/sys" when NULL or empty): every net device but lo, or those
 * whose name matches include (a POSIX extended regex; lo too then), and every InfiniBand port
 * whose device name matches it, and open their counter files. 0 (maybe with no counter), or
 * -EINVAL when include is not a valid regex. Allocates nothing that outlives the call. */
int apx_nic_open(struct apx_nic_set *s, const char *root, const char *include);
void apx_nic_close(struct apx_nic_set *s);

/* One read of a counter (pread at offset 0, no allocation): 0 and *ret (already scaled), or
 * -1 when the file cannot be read or holds no decimal number. */
int apx_nic_read(const struct apx_nic_counter *c, uint64_t *ret);

/* The decimal number at the start of buf[0..n) (sysfs counters end in a newline): 0 and
 * *ret, or -1. */
int apx_nic_parse(const char *buf, size_t n, uint64_t *ret);
/* An InfiniBand port's rate file, "200 Gb/sec (4X HDR)" or "2.5 Gb/sec (1X SDR)": 0 and
 * *ret_bps (bits per second), or -1 when buf[0..n) is not one. */
int apx_nic_parse_ib_rate(const char *buf, size_t n, uint64_t *ret_bps);

#endif
