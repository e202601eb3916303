/*
 * sock_drain.c - the end of a served connection without a reset: after the answer, nvperfd
 * shuts its sending side and reads (discarding) what the client still sends until it closes,
 * because closing a socket with unread bytes resets the connection and the client may lose the
 * answer (TCP RST; ECONNRESET on a Unix socket). Used by metrics_http.c and ctl_server.c on the
 * event loop; non-blocking, bounded per call. Non-logging.
 */
#include <errno.h>
#include <sys/socket.h>

#include "daemon/daemon.h"

#include "base/banned.h"

int apx_sock_discard(int fd)
{
	char scratch[2048];

	for (int i = 0; i < 16; i++) {
		ssize_t n = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno != EAGAIN && errno != EWOULDBLOCK;
		if (n == 0)
			return 1;
	}
	return 0;	/* more keeps coming: the caller waits for EPOLLIN or its deadline */
}
