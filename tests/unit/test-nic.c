/*
 * test-nic.c - unit tests of the collector's NIC counter listing and reads (lib/collector/
 * nic_sysfs.c, apx analyze --nic-metrics): a fake sysfs tree with two net devices, lo and an
 * InfiniBand port (counters and hw_counters), the regex filter, the x4 of IB data counters,
 * the line rates of the links that are up (a physical net device's speed, an ACTIVE port's
 * rate; not a virtual device's, a down one's),
 * and the real /sys/class/net/lo's rx_bytes against bytes sent over loopback. Run by ctest
 * (unit-nic).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apx-test.h"
#include "collector/nic_sysfs.h"

#include "base/banned.h"

static char g_root[256];

static void put(const char *rel, const char *text)
{
	char path[1024], dir[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", g_root, rel);
	for (char *p = path + strlen(g_root) + 1; *p; p++)
		if (*p == '/') {
			snprintf(dir, sizeof(dir), "%.*s", (int)(p - path), path);
			mkdir(dir, 0755);
		}
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void fake_tree(void)
{
	snprintf(g_root, sizeof(g_root), "/tmp/apx-nic-XXXXXX");
	if (!mkdtemp(g_root))
		abort();
	put("class/net/eth0/statistics/rx_bytes", "1000\n");
	put("class/net/eth0/statistics/tx_bytes", "2000\n");
	put("class/net/eth0/statistics/rx_packets", "10\n");
	put("class/net/eth0/statistics/tx_packets", "20\n");
	put("class/net/bond0/statistics/rx_bytes", "5\n");
	put("class/net/lo/statistics/rx_bytes", "7\n");
	put("class/net/lo/statistics/tx_bytes", "7\n");
	put("class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "250\n");
	put("class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "100\n");
	put("class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait", "3\n");
	put("class/infiniband/mlx5_0/ports/1/counters/port_rcv_packets", "not a number\n");
	put("class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "42\n");
	/* line rates: eth0 (physical, up) and mlx5_0 port 1 (ACTIVE) count; bond0 is virtual
	 * (no device link), eth2 down, mlx5_1's port DOWN */
	put("class/net/eth0/device/vendor", "0x15b3\n");
	put("class/net/eth0/operstate", "up\n");
	put("class/net/eth0/speed", "100000\n");
	put("class/net/bond0/operstate", "up\n");
	put("class/net/bond0/speed", "200000\n");
	put("class/net/eth2/device/vendor", "0x8086\n");
	put("class/net/eth2/operstate", "down\n");
	put("class/net/eth2/speed", "25000\n");
	put("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	put("class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n");
	put("class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
	put("class/infiniband/mlx5_1/ports/1/rate", "100 Gb/sec (4X EDR)\n");
}

static uint64_t link_bps(const struct apx_nic_set *s, const char *name)
{
	for (unsigned i = 0; i < s->nlinks; i++)
		if (!strcmp(s->link[i].name, name))
			return s->link[i].bps;
	return 0;
}

static const struct apx_nic_counter *find(const struct apx_nic_set *s, const char *name)
{
	for (unsigned i = 0; i < s->n; i++)
		if (!strcmp(s->c[i].name, name))
			return &s->c[i];
	return NULL;
}

APX_TEST(parse)
{
	uint64_t v = 0;

	APX_ASSERT_EQ(apx_nic_parse("123\n", 4, &v), 0);
	APX_ASSERT_EQ(v, 123);
	APX_ASSERT_EQ(apx_nic_parse("18446744073709551615\n", 21, &v), 0);
	APX_ASSERT_EQ(v, UINT64_MAX);
	APX_ASSERT_EQ(apx_nic_parse("18446744073709551616\n", 21, &v), -1);
	APX_ASSERT_EQ(apx_nic_parse("", 0, &v), -1);
	APX_ASSERT_EQ(apx_nic_parse("x1\n", 3, &v), -1);
	APX_ASSERT_EQ(apx_nic_parse("12x\n", 4, &v), -1);
	APX_ASSERT_EQ(apx_nic_parse("-1\n", 3, &v), -1);	/* a net device's unknown speed */
	APX_ASSERT_EQ(apx_nic_parse_ib_rate("200 Gb/sec (4X HDR)\n", 20, &v), 0);
	APX_ASSERT_EQ(v, 200000000000ull);
	APX_ASSERT_EQ(apx_nic_parse_ib_rate("2.5 Gb/sec (1X SDR)\n", 20, &v), 0);
	APX_ASSERT_EQ(v, 2500000000ull);
	APX_ASSERT_EQ(apx_nic_parse_ib_rate("14.0625 Gb/sec (1X FDR)", 23, &v), 0);
	APX_ASSERT_EQ(v, 14062500000ull);
	APX_ASSERT_EQ(apx_nic_parse_ib_rate("100 Mb/sec", 10, &v), -1);
	APX_ASSERT_EQ(apx_nic_parse_ib_rate("Gb/sec", 6, &v), -1);
	APX_ASSERT_EQ(apx_nic_parse_ib_rate("", 0, &v), -1);
	return 0;
}

APX_TEST(fake_sysfs)
{
	static struct apx_nic_set s;
	const struct apx_nic_counter *c;
	uint64_t v = 0;
	char cmd[600];

	fake_tree();
	APX_ASSERT_EQ(apx_nic_open(&s, g_root, NULL), 0);
	APX_ASSERT_EQ(s.nnet, 2);	/* eth0, bond0; not lo */
	APX_ASSERT_EQ(s.nib, 1);
	APX_ASSERT(find(&s, "nic.eth0.rx_bytes") && find(&s, "nic.eth0.tx_packets"));
	APX_ASSERT(find(&s, "nic.bond0.rx_bytes"));
	APX_ASSERT(!find(&s, "nic.lo.rx_bytes"));
	APX_ASSERT(!find(&s, "ib.mlx5_0.1.port_rcv_packets"));	/* not a number: left out */
	c = find(&s, "ib.mlx5_0.1.port_rcv_data");
	APX_ASSERT(c);
	APX_ASSERT_EQ(apx_nic_read(c, &v), 0);
	APX_ASSERT_EQ(v, 1000);		/* 4-byte words */
	APX_ASSERT_STREQ(c->unit, "bytes");
	c = find(&s, "ib.mlx5_0.1.np_cnp_sent");
	APX_ASSERT(c && apx_nic_read(c, &v) == 0 && v == 42);
	c = find(&s, "ib.mlx5_0.1.port_xmit_wait");
	APX_ASSERT(c && !strcmp(c->unit, "ticks"));
	c = find(&s, "nic.eth0.rx_bytes");
	APX_ASSERT(c && apx_nic_read(c, &v) == 0 && v == 1000);
	put("class/net/eth0/statistics/rx_bytes", "123456\n");	/* the kept fd reads anew */
	APX_ASSERT(apx_nic_read(c, &v) == 0 && v == 123456);
	APX_ASSERT_EQ(s.n, 4 + 1 + 4);	/* eth0 4, bond0 1, ib 4 */
	APX_ASSERT_EQ(s.nlinks, 2);	/* eth0, mlx5_0 port 1 */
	APX_ASSERT_EQ(link_bps(&s, "nic.eth0.line_rate"), 100000000000ull);
	APX_ASSERT_EQ(link_bps(&s, "ib.mlx5_0.1.line_rate"), 200000000000ull);
	apx_nic_close(&s);

	APX_ASSERT_EQ(apx_nic_open(&s, g_root, "^lo$"), 0);	/* named: lo too, only lo */
	APX_ASSERT_EQ(s.nnet, 1);
	APX_ASSERT_EQ(s.nib, 0);
	APX_ASSERT(find(&s, "nic.lo.tx_bytes"));
	APX_ASSERT_EQ(s.nlinks, 0);	/* lo: no device, no line rate */
	apx_nic_close(&s);
	APX_ASSERT_EQ(apx_nic_open(&s, g_root, "bond|mlx"), 0);
	APX_ASSERT_EQ(s.nnet, 1);
	APX_ASSERT_EQ(s.nib, 1);
	apx_nic_close(&s);
	APX_ASSERT_EQ(apx_nic_open(&s, g_root, "("), -EINVAL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_root);
	APX_ASSERT_EQ(system(cmd), 0);
	return 0;
}

/* The real loopback device: its rx_bytes grow by at least the bytes sent over it. */
APX_TEST(loopback_traffic)
{
	static struct apx_nic_set s;
	const struct apx_nic_counter *rx;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	uint64_t before, after, sent = 0;
	char buf[8192] = { 0 };
	int r, w;

	if (apx_nic_open(&s, NULL, "^lo$") < 0 || !(rx = find(&s, "nic.lo.rx_bytes")))
		return APX_TEST_SKIP;	/* no /sys/class/net/lo here */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r = socket(AF_INET, SOCK_DGRAM, 0);
	w = socket(AF_INET, SOCK_DGRAM, 0);
	APX_ASSERT(r >= 0 && w >= 0);
	APX_ASSERT_EQ(bind(r, (struct sockaddr *)&a, sizeof(a)), 0);
	APX_ASSERT_EQ(getsockname(r, (struct sockaddr *)&a, &al), 0);
	APX_ASSERT_EQ(apx_nic_read(rx, &before), 0);
	for (int i = 0; i < 64; i++) {
		ssize_t n = sendto(w, buf, sizeof(buf), 0, (struct sockaddr *)&a, sizeof(a));

		if (n > 0)
			sent += (uint64_t)n;
		(void)!recv(r, buf, sizeof(buf), 0);
	}
	APX_ASSERT_EQ(apx_nic_read(rx, &after), 0);
	fprintf(stderr, "lo rx_bytes +%llu for %llu bytes sent\n",
		(unsigned long long)(after - before), (unsigned long long)sent);
	APX_ASSERT(sent > 0 && after - before >= sent);
	close(r);
	close(w);
	apx_nic_close(&s);
	return 0;
}

APX_TEST_MAIN()
