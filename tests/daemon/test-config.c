/*
 * test-config.c - unit test of the nvperfd config parser (lib/daemon/config.c): defaults, every
 * value type (the metrics_listen address included), and that each malformed line is rejected
 * with FILE:LINE:COLUMN and what was expected, leaving the config untouched; random and mutated
 * files; the control-socket escaping.
 * Run by ctest (label daemon).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config.h"
#include "daemon/ctl_client.h"

#include "base/banned.h"

static int failures;

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                     \
		}                                                                       \
	} while (0)

static void bad(const char *text, enum apx_conf_scope scope, const char *want)
{
	struct apx_conf c, before;
	struct apx_conf_error err = { 0 };
	int r;

	apx_conf_defaults(&c);
	before = c;
	r = apx_conf_parse(text, strlen(text), "f.conf", scope, &c, &err);
	if (r >= 0 || !strstr(err.msg, want) || memcmp(&c, &before, sizeof(c))) {
		fprintf(stderr, "input %s: r=%d msg '%s', wanted '%s'\n", text, r, err.msg, want);
		failures++;
	}
}

int main(int argc, char **argv)
{
	struct apx_conf c;
	struct apx_conf_error err = { 0 };
	const char *good =
		"# comment\n"
		"\n"
		"  state_dir = /var/tmp/x   \n"
		"sample_period = 250ms\n"
		"max_summary_bytes = 1M\n"
		"metrics = cpu, rss\n"
		"notice = tty\n"
		"threshold.rss_peak = 1.5G\n"
		"threshold.min_runtime = 2m\n"
		"track = no\r\n"
		"log_level = debug\n"
		"log_file = \"\"\n";
	char buf[64];

	apx_conf_defaults(&c);
	CHECK(c.sample_period_ns == 1000000000ull && c.metrics == APX_METRIC__ALL);
	CHECK(apx_conf_parse(good, strlen(good), "good", APX_CONF_MACHINE, &c, &err) == 0);
	CHECK(!strcmp(c.state_dir, "/var/tmp/x"));
	CHECK(c.sample_period_ns == 250000000ull);
	CHECK(c.max_summary_bytes == 1u << 20);
	CHECK(c.metrics == (APX_METRIC_CPU | APX_METRIC_RSS));
	CHECK(c.notice == APX_NOTICE_TTY);
	CHECK(c.th_rss_peak_bytes == 3ull << 29);
	CHECK(c.th_min_runtime_ns == 120000000000ull);
	CHECK(c.track == 0);
	CHECK(c.log_file[0] == 0);
	CHECK(c.log_level == 7);
	apx_conf_format(&c, apx_conf_key_find("metrics", 7), buf, sizeof(buf));
	CHECK(!strcmp(buf, "cpu,rss"));
	apx_conf_format(&c, apx_conf_key_find("sample_period", 13), buf, sizeof(buf));
	CHECK(!strcmp(buf, "250ms"));

	bad("sample_period = fast\n", APX_CONF_MACHINE, "f.conf:1:17: sample_period: expected a duration");
	bad("\n\nfoo = 1\n", APX_CONF_MACHINE, "f.conf:3:1: unknown key 'foo'");
	bad("state_dir /x\n", APX_CONF_MACHINE, "f.conf:1:11: expected '='");
	bad("= 3\n", APX_CONF_MACHINE, "f.conf:1:1: expected a key");
	bad("notice = loud\n", APX_CONF_USER, "f.conf:1:10: notice: expected one of: none, log, tty");
	bad("metrics = cpu,gpu\n", APX_CONF_USER, "expected a comma-separated list");
	bad("state_dir = /x\n", APX_CONF_USER, "f.conf:1:1: 'state_dir' can only be set in");
	bad("state_dir = relative\n", APX_CONF_MACHINE, "expected an absolute path");
	bad("max_tracked = 0\n", APX_CONF_MACHINE, "expected a whole number between 1 and 65536");
	bad("max_tracked = 99999999999999999999999\n", APX_CONF_MACHINE, "expected a whole number");
	bad("track = maybe\n", APX_CONF_USER, "f.conf:1:9: track: expected yes or no");
	bad("threshold.rss_peak = 12X\n", APX_CONF_USER, "expected a size");
	bad("sample_period = 0.001\n", APX_CONF_MACHINE, "expected a duration between");
	bad("a = 1\x01\n", APX_CONF_MACHINE, "f.conf:1:6: expected text, found a control byte");
	bad("log_level = chatty\n", APX_CONF_MACHINE, "f.conf:1:13: log_level: expected one of: error");
	bad("netlink_buffer = 1K\n", APX_CONF_MACHINE, "netlink_buffer: expected a size between 4096");
	bad("live_check_every = 0\n", APX_CONF_USER,
	    "f.conf:1:20: live_check_every: expected a duration between 1 s and 86400 s");
	bad("live_check = 2d\n", APX_CONF_USER, "live_check: expected a duration between 0 s");

	/* live_check: per-user, 60 s then every 300 s by default, 0 = off */
	{
		const char *live = "live_check = 0\nlive_check_every = 5m\n";

		apx_conf_defaults(&c);
		CHECK(c.live_check_ns == 60000000000ull &&
		      c.live_check_every_ns == 300000000000ull);
		CHECK(apx_conf_parse(live, strlen(live), "u", APX_CONF_USER, &c, &err) == 0);
		CHECK(c.live_check_ns == 0 && c.live_check_every_ns == 300000000000ull);
		apx_conf_format(&c, apx_conf_key_find("live_check_every", 16), buf, sizeof(buf));
		CHECK(!strcmp(buf, "300s"));
	}

	/* metrics_listen: numeric IPv4 or bracketed IPv6 with a port; machine file only */
	{
		static const char *const bad_addrs[] = {
			"localhost:9470", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
			"127.0.0.1:94x", "127.0.0.1:+80", "127.1:9470", "256.0.0.1:9470", ":9470",
			"::1:9470", "[::1]", "[::1]9470", "[::1:9470", "[]:9470", "[127.0.0.1]:9470",
			"127.0.0.1:9470 extra", "[fe80::1%eth0]:9470",
		};
		struct sockaddr_storage sa;
		socklen_t sl;
		char text[128];

		for (size_t i = 0; i < sizeof(bad_addrs) / sizeof(bad_addrs[0]); i++) {
			snprintf(text, sizeof(text), "# x\nmetrics_listen = %s\n", bad_addrs[i]);
			bad(text, APX_CONF_MACHINE, "f.conf:2:18: metrics_listen: expected a numeric TCP "
			    "address IPV4:PORT or [IPV6]:PORT");
			CHECK(apx_conf_listen_addr(bad_addrs[i], &sa, &sl) == -EINVAL);
		}
		bad("metrics_listen = 127.0.0.1:9470\n", APX_CONF_USER,
		    "f.conf:1:1: 'metrics_listen' can only be set in");
		bad("metrics_listen = 127.0.0.1:9470:1\n", APX_CONF_MACHINE, "f.conf:1:18: metrics_listen");

		apx_conf_defaults(&c);
		CHECK(c.metrics_listen[0] == 0);	/* off by default */
		snprintf(text, sizeof(text), "metrics_listen = 127.0.0.1:9470\n");
		CHECK(apx_conf_parse(text, strlen(text), "m", APX_CONF_MACHINE, &c, &err) == 0 &&
		      !strcmp(c.metrics_listen, "127.0.0.1:9470"));
		apx_conf_format(&c, apx_conf_key_find("metrics_listen", 14), buf, sizeof(buf));
		CHECK(!strcmp(buf, "127.0.0.1:9470"));
		CHECK(apx_conf_listen_addr(c.metrics_listen, &sa, &sl) == 0 && sa.ss_family == AF_INET &&
		      sl == sizeof(struct sockaddr_in) &&
		      ntohs(((struct sockaddr_in *)&sa)->sin_port) == 9470 &&
		      ntohl(((struct sockaddr_in *)&sa)->sin_addr.s_addr) == 0x7f000001);
		CHECK(apx_conf_listen_addr("[::1]:65535", &sa, &sl) == 0 && sa.ss_family == AF_INET6 &&
		      sl == sizeof(struct sockaddr_in6) &&
		      ntohs(((struct sockaddr_in6 *)&sa)->sin6_port) == 65535 &&
		      IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&sa)->sin6_addr));
		CHECK(apx_conf_listen_addr("0.0.0.0:1", &sa, &sl) == 0);
		CHECK(apx_conf_listen_addr("[::]:9470", &sa, &sl) == 0);
		{
			const char *two = "metrics_listen = \"[::1]:9470\"\nmetrics_listen = \"\"\n";

			CHECK(apx_conf_parse(two, strlen(two), "m", APX_CONF_MACHINE, &c, &err) == 0 &&
			      c.metrics_listen[0] == 0);	/* the last line wins; "" = off */
		}
	}

	/* the packaged example (packaging/nvperfd.conf) parses, and so does every commented-out
	 * "#key = value" line of it once uncommented: the documented defaults stay valid */
	if (argc > 1) {
		FILE *f = fopen(argv[1], "re");
		char line[512], all[16384];
		size_t n = 0;

		CHECK(f != NULL);
		while (f && fgets(line, sizeof(line), f)) {
			const char *l = line[0] == '#' && line[1] >= 'a' && line[1] <= 'z' ? line + 1 : line;
			size_t len = strlen(l);

			if (n + len < sizeof(all)) {
				memcpy(all + n, l, len);
				n += len;
			}
		}
		if (f)
			fclose(f);
		apx_conf_defaults(&c);
		if (apx_conf_parse(all, n, argv[1], APX_CONF_MACHINE, &c, &err) < 0) {
			fprintf(stderr, "packaged config: %s\n", err.msg);
			failures++;
		}
		CHECK(c.max_samples == 1024 && c.log_level == 6 && c.sample_period_ns == 1000000000ull);
		CHECK(c.live_check_ns == 60000000000ull &&
		      c.live_check_every_ns == 300000000000ull);
	}

	/* user path template */
	CHECK(apx_conf_user_path("~/.config/x", "/home/u", 5, buf, sizeof(buf)) == 0 &&
	      !strcmp(buf, "/home/u/.config/x"));
	CHECK(apx_conf_user_path("/etc/nv/%u.conf", NULL, 1000, buf, sizeof(buf)) == 0 &&
	      !strcmp(buf, "/etc/nv/1000.conf"));
	CHECK(apx_conf_user_path("~/x", NULL, 5, buf, sizeof(buf)) < 0);

	/* hostile input: random bytes and mutations of a good file never crash the parser (ASan
	 * and UBSan watch), and a rejected file leaves the config untouched */
	{
		uint64_t seed = 0x9e3779b97f4a7c15ull;
		char text[600];
		size_t glen = strlen(good);

		for (int iter = 0; iter < 20000; iter++) {
			struct apx_conf before;
			size_t len;

			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			if (iter & 1) {
				len = (size_t)(seed % sizeof(text));
				for (size_t i = 0; i < len; i++) {
					seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
					text[i] = (char)(seed & 0xff);
				}
			} else {
				memcpy(text, good, glen);
				len = glen;
				for (int m = 0; m < 4; m++) {
					seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
					text[seed % glen] = "=# \n.9azG\"~%"[(seed >> 32) % 13];
				}
			}
			apx_conf_defaults(&c);
			before = c;
			if (apx_conf_parse(text, len, "fuzz", iter % 3 ? APX_CONF_USER : APX_CONF_MACHINE,
					   &c, &err) < 0 && memcmp(&c, &before, sizeof(c))) {
				fprintf(stderr, "iteration %d: config changed by a rejected file\n", iter);
				failures++;
				break;
			}
		}
	}

	/* control-socket escaping: any bytes become one printable, tab-free field, and back */
	{
		uint64_t seed = 12345;

		for (int iter = 0; iter < 2000; iter++) {
			unsigned char raw[64];
			char esc[64 * 4 + 1], copy[64 * 4 + 1], *fields[4];
			size_t n = (size_t)(iter % 64), el;

			for (size_t i = 0; i < n; i++) {
				seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
				raw[i] = (unsigned char)seed;
			}
			el = apx_ctl_escape(esc, sizeof(esc), raw, n);
			for (size_t i = 0; i < el; i++)
				CHECK(esc[i] >= 0x20 && esc[i] < 0x7f);
			memcpy(copy, esc, el + 1);
			CHECK(apx_ctl_split(copy, fields, 4) == 1);
			CHECK(!memchr(raw, 0, n) ? strlen(fields[0]) == n && !memcmp(fields[0], raw, n) : 1);
		}
	}

	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	else
		printf("ok\n");
	return failures ? 1 : 0;
}
