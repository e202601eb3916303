/*
 * ctl_client.c - connect to nvperfd's control socket and fetch one response; escaping helpers
 * (see ctl_client.h). Called by the apx CLI (status, top, history) and by the daemon (escape).
 */
#include "daemon/ctl_client.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <apx/ctl_proto.h>

#include "base/banned.h"

size_t apx_ctl_escape(char *dst, size_t cap, const void *src, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = src;
	size_t n = 0;

	if (!cap)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			if (n + 1 >= cap)
				break;
			dst[n++] = (char)c;
		} else {
			if (n + 4 >= cap)
				break;
			dst[n++] = '\\';
			dst[n++] = 'x';
			dst[n++] = hex[c >> 4];
			dst[n++] = hex[c & 15];
		}
	}
	dst[n] = 0;
	return n;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t apx_ctl_unescape(char *s)
{
	size_t i = 0, o = 0;

	while (s[i]) {
		if (s[i] == '\\' && s[i + 1] == 'x' && hexval(s[i + 2]) >= 0 && hexval(s[i + 3]) >= 0) {
			s[o++] = (char)(hexval(s[i + 2]) << 4 | hexval(s[i + 3]));
			i += 4;
		} else {
			s[o++] = s[i++];
		}
	}
	s[o] = 0;
	return o;
}

const char *apx_ctl_default_socket(void)
{
	const char *e = getenv("NVPERFD_SOCKET");

	return e && *e ? e : APX_CTL_SOCKET_DEFAULT;
}

int apx_ctl_request(const char *path, const char *verb, char **ret_buf, size_t *ret_len,
		    char *errbuf, size_t errcap)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[APX_CTL_REQUEST_MAX];
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, r, n;

	if (errcap)
		errbuf[0] = 0;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	n = snprintf(req, sizeof(req), APX_CTL_PROTO_MAGIC " %s\n", verb);
	if (n < 0 || (size_t)n >= sizeof(req))
		return -EINVAL;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		goto out;
	}
	/* a refused client (too many) is answered and closed before it sends: read that answer */
	(void)send(fd, req, (size_t)n, MSG_NOSIGNAL);
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t got;

		r = poll(&p, 1, 5000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			r = r == 0 ? -ETIMEDOUT : -errno;
			goto out;
		}
		if (cap - len < 65536) {
			char *nb;

			if (cap >= APX_CTL_RESPONSE_MAX + 65536) {
				r = -EMSGSIZE;
				goto out;
			}
			nb = realloc(buf, cap + 131072);
			if (!nb) {
				r = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap += 131072;
		}
		got = read(fd, buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
		if (len >= 4 && !memcmp(buf + len - 4, "end\n", 4) &&
		    (len == 4 || buf[len - 5] == '\n'))
			break;
	}
	if (!buf || len < 4) {
		snprintf(errbuf, errcap, "the daemon closed the connection without an answer");
		r = -EPROTO;
		goto out;
	}
	buf[len] = 0;
	if (!strncmp(buf, "err\t", 4)) {
		char *e = strchr(buf, '\n');

		if (e)
			*e = 0;
		apx_ctl_unescape(buf + 4);
		snprintf(errbuf, errcap, "%s", buf + 4);
		r = -EPROTO;
		goto out;
	}
	if (strncmp(buf, "ok\n", 3) || len < 7 || memcmp(buf + len - 4, "end\n", 4)) {
		snprintf(errbuf, errcap, "malformed answer from the daemon");
		r = -EPROTO;
		goto out;
	}
	len -= 3 + 4;
	memmove(buf, buf + 3, len);
	buf[len] = 0;
	*ret_buf = buf;
	*ret_len = len;
	buf = NULL;
	r = 0;
out:
	free(buf);
	close(fd);
	return r;
}

int apx_ctl_split(char *line, char **fields, int max)
{
	int n = 0;
	char *p = line;

	while (n < max) {
		char *t = strchr(p, '\t');

		fields[n++] = p;
		if (!t)
			break;
		*t = 0;
		p = t + 1;
	}
	for (int i = 0; i < n; i++)
		apx_ctl_unescape(fields[i]);
	return n;
}

int apx_ctl_fail(const char *cmd, const char *sock, int r, const char *err)
{
	if (r == -ENOENT || r == -ECONNREFUSED)
		fprintf(stderr, "apx %s: nvperfd is not running (nothing listens on '%s'); start it "
			"with 'sudo apx init' or 'systemctl start nvperfd'\n", cmd, sock);
	else if (r == -EPROTO && err && err[0])
		fprintf(stderr, "apx %s: nvperfd: %s\n", cmd, err);
	else
		fprintf(stderr, "apx %s: cannot talk to nvperfd on '%s': %s\n", cmd, sock,
			strerror(-r));
	return 1;
}
