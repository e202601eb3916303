/*
 * nic_sysfs.c - lists a host's NIC counters in sysfs and reads them (nic_sysfs.h): net devices'
 * statistics and InfiniBand ports' counters and hw_counters, each file opened once, and the
 * line rate of each link that is up, read once. Called by
 * src_nic.c at the source's start (listing) and from its sampler thread (reads), and by
 * tests/unit/test-nic.c against a fake sysfs tree.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/nic_sysfs.h"

#include "base/banned.h"

static const struct { const char *file, *unit; } net_counters[] = {
	{ "rx_bytes", "bytes" }, { "tx_bytes", "bytes" },
	{ "rx_packets", "packets" }, { "tx_packets", "packets" },
};

static const struct { const char *dir, *file, *unit; uint32_t scale; } ib_counters[] = {
	{ "counters", "port_rcv_data", "bytes", 4 },	/* 4-byte words */
	{ "counters", "port_xmit_data", "bytes", 4 },
	{ "counters", "port_rcv_packets", "packets", 1 },
	{ "counters", "port_xmit_packets", "packets", 1 },
	{ "counters", "port_xmit_wait", "ticks", 1 },
	{ "hw_counters", "np_cnp_sent", "packets", 1 },
	{ "hw_counters", "rp_cnp_handled", "packets", 1 },
	{ "hw_counters", "np_ecn_marked_roce_packets", "packets", 1 },
};

int apx_nic_parse(const char *buf, size_t n, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < n && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	if (i == n || buf[i] < '0' || buf[i] > '9')
		return -1;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) {
		if (v > (UINT64_MAX - (uint64_t)(buf[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(buf[i] - '0');
	}
	if (i < n && buf[i] != '\n' && buf[i] != ' ' && buf[i] != '\0')
		return -1;
	*ret = v;
	return 0;
}

int apx_nic_parse_ib_rate(const char *buf, size_t n, uint64_t *ret_bps)
{
	static const char unit[] = "Gb/sec";
	uint64_t whole = 0, frac = 0, scale = 1000000000ull;
	size_t i = 0;

	while (i < n && buf[i] == ' ')
		i++;
	if (i == n || buf[i] < '0' || buf[i] > '9')
		return -1;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) {
		if (whole > 1000000)		/* a Pb/s port: not a rate file */
			return -1;
		whole = whole * 10 + (uint64_t)(buf[i] - '0');
	}
	if (i < n && buf[i] == '.')
		for (i++; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
			if (scale >= 10) {
				scale /= 10;
				frac += (uint64_t)(buf[i] - '0') * scale;
			}
	while (i < n && buf[i] == ' ')
		i++;
	if (n - i < sizeof(unit) - 1 || memcmp(buf + i, unit, sizeof(unit) - 1))
		return -1;
	*ret_bps = whole * 1000000000ull + frac;
	return 0;
}

int apx_nic_read(const struct apx_nic_counter *c, uint64_t *ret)
{
	char buf[32];
	ssize_t n = pread(c->fd, buf, sizeof(buf), 0);
	uint64_t v;

	if (n <= 0 || apx_nic_parse(buf, (size_t)n, &v))
		return -1;
	*ret = v * c->scale;
	return 0;
}

/* Open path as counter name of the set; 0, or -1 when it cannot be opened or read. */
static int add(struct apx_nic_set *s, const char *path, const char *name, const char *unit,
	       uint32_t scale)
{
	struct apx_nic_counter *c;
	uint64_t v;
	int fd;

	if (s->n >= APX_NIC_MAX_COUNTERS) {
		s->skipped++;
		return -1;
	}
	if (strlen(name) >= APX_NIC_NAME_MAX)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -1;
	c = &s->c[s->n];
	c->fd = fd;
	c->scale = scale;
	c->unit = unit;
	snprintf(c->name, sizeof(c->name), "%s", name);
	if (apx_nic_read(c, &v)) {	/* not a counter (or not readable): left out */
		close(fd);
		return -1;
	}
	s->n++;
	return 0;
}

/* The text of a small sysfs file (NUL-terminated); its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

static void add_link(struct apx_nic_set *s, const char *name, uint64_t bps)
{
	if (s->nlinks >= APX_NIC_MAX_LINKS || !bps || strlen(name) >= APX_NIC_NAME_MAX)
		return;
	s->link[s->nlinks].bps = bps;
	snprintf(s->link[s->nlinks].name, sizeof(s->link[0].name), "%s", name);
	s->nlinks++;
}

/* snprintf's result: the text fitted cap. */
static int fits(int r, size_t cap)
{
	return r >= 0 && (size_t)r < cap;
}

/* A net device's line rate: a physical device (a `device` link) that is up, its speed in Mb/s
 * (unknown: "-1", or the read fails while the link is down). */
static void net_link(struct apx_nic_set *s, const char *dir, const char *dev)
{
	char path[4096], name[APX_NIC_NAME_MAX + 32], buf[64];
	struct stat st;
	uint64_t mbps;
	ssize_t n;

	if (!fits(snprintf(path, sizeof(path), "%s/%s/device", dir, dev), sizeof(path)) ||
	    stat(path, &st) < 0)
		return;		/* virtual: lo, bridge, veth, bond (its slaves count) */
	if (!fits(snprintf(path, sizeof(path), "%s/%s/operstate", dir, dev), sizeof(path)) ||
	    read_small(path, buf, sizeof(buf)) < 2 || strncmp(buf, "up", 2))
		return;
	if (!fits(snprintf(path, sizeof(path), "%s/%s/speed", dir, dev), sizeof(path)) ||
	    (n = read_small(path, buf, sizeof(buf))) <= 0 || apx_nic_parse(buf, (size_t)n, &mbps) ||
	    !mbps || mbps >= UINT32_MAX)
		return;
	if (fits(snprintf(name, sizeof(name), "nic.%s.line_rate", dev), sizeof(name)))
		add_link(s, name, mbps * 1000000ull);
}

/* An InfiniBand (or RoCE) port's line rate, when its state is ACTIVE. */
static void ib_link(struct apx_nic_set *s, const char *pdir, const char *dev, const char *port)
{
	char path[4096], name[APX_NIC_NAME_MAX + 32], buf[64];
	uint64_t bps;
	ssize_t n;

	if (!fits(snprintf(path, sizeof(path), "%s/%s/state", pdir, port), sizeof(path)) ||
	    read_small(path, buf, sizeof(buf)) <= 0 || !strstr(buf, "ACTIVE"))
		return;
	if (!fits(snprintf(path, sizeof(path), "%s/%s/rate", pdir, port), sizeof(path)) ||
	    (n = read_small(path, buf, sizeof(buf))) <= 0 ||
	    apx_nic_parse_ib_rate(buf, (size_t)n, &bps))
		return;
	if (fits(snprintf(name, sizeof(name), "ib.%s.%s.line_rate", dev, port), sizeof(name)))
		add_link(s, name, bps);
}

static int wanted(const char *name, const regex_t *re)
{
	if (re)
		return regexec(re, name, 0, NULL, 0) == 0;
	return strcmp(name, "lo") != 0;
}

static int is_entry(const struct dirent *de)
{
	return de->d_name[0] != '.';
}

static void list_net(struct apx_nic_set *s, const char *root, const regex_t *re)
{
	char dir[4096], path[4096], name[APX_NIC_NAME_MAX + 32];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/class/net", root);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		int any = 0;

		if (!is_entry(de) || !wanted(de->d_name, re))
			continue;
		for (size_t i = 0; i < sizeof(net_counters) / sizeof(net_counters[0]); i++) {
			int a = snprintf(path, sizeof(path), "%s/%s/statistics/%s", dir, de->d_name,
					 net_counters[i].file);
			int b = snprintf(name, sizeof(name), "nic.%s.%s", de->d_name,
					 net_counters[i].file);

			if (a < 0 || (size_t)a >= sizeof(path) || b < 0 || (size_t)b >= sizeof(name))
				continue;
			any |= add(s, path, name, net_counters[i].unit, 1) == 0;
		}
		s->nnet += any;
		net_link(s, dir, de->d_name);
	}
	closedir(d);
}

static void list_ib(struct apx_nic_set *s, const char *root, const regex_t *re)
{
	char dir[4096], pdir[4096], path[4096], name[APX_NIC_NAME_MAX + 32];
	struct dirent *de, *pe;
	DIR *d, *p;

	snprintf(dir, sizeof(dir), "%s/class/infiniband", root);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!is_entry(de) || (re && regexec(re, de->d_name, 0, NULL, 0) != 0))
			continue;
		int a = snprintf(pdir, sizeof(pdir), "%s/%s/ports", dir, de->d_name);

		if (a < 0 || (size_t)a >= sizeof(pdir))
			continue;
		p = opendir(pdir);
		if (!p)
			continue;
		while ((pe = readdir(p))) {
			int any = 0;

			if (!is_entry(pe))
				continue;
			for (size_t i = 0; i < sizeof(ib_counters) / sizeof(ib_counters[0]); i++) {
				int b = snprintf(path, sizeof(path), "%s/%s/%s/%s", pdir, pe->d_name,
						 ib_counters[i].dir, ib_counters[i].file);
				int n = snprintf(name, sizeof(name), "ib.%s.%s.%s", de->d_name,
						 pe->d_name, ib_counters[i].file);

				if (b < 0 || (size_t)b >= sizeof(path) || n < 0 ||
				    (size_t)n >= sizeof(name))
					continue;
				any |= add(s, path, name, ib_counters[i].unit,
					   ib_counters[i].scale) == 0;
			}
			s->nib += any;
			ib_link(s, pdir, de->d_name, pe->d_name);
		}
		closedir(p);
	}
	closedir(d);
}

int apx_nic_open(struct apx_nic_set *s, const char *root, const char *include)
{
	regex_t re;
	int have_re = include && *include;

	memset(s, 0, sizeof(*s));
	if (!root || !*root)
		root = "/sys";
	if (have_re && regcomp(&re, include, REG_EXTENDED | REG_NOSUB) != 0)
		return -EINVAL;
	list_ib(s, root, have_re ? &re : NULL);
	list_net(s, root, have_re ? &re : NULL);
	if (have_re)
		regfree(&re);
	return 0;
}

void apx_nic_close(struct apx_nic_set *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->c[i].fd >= 0)
			close(s->c[i].fd);
	s->n = 0;
}
