/*
 * proc_connector.c - the netlink process-events connector (fork, exec, comm, exit of every
 * process on the machine). Opened once by main.c at start (needs CAP_NET_ADMIN); drained from
 * the epoll loop. An overrun (ENOBUFS: the kernel dropped events) is returned to the caller,
 * which counts it and rescans /proc.
 */
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/daemon.h"

#include "base/banned.h"

int apx_nl_open(int rcvbuf)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	struct {
		struct nlmsghdr nl;
		struct cn_msg cn;
		enum proc_cn_mcast_op op;
	} __attribute__((packed)) msg;
	int fd;

	fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (fd < 0)
		return -errno;
	sa.nl_pid = 0;	/* let the kernel pick */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	/* a large buffer makes overruns rare under exec storms (root may exceed rmem_max) */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	memset(&msg, 0, sizeof(msg));
	msg.nl.nlmsg_len = sizeof(msg);
	msg.nl.nlmsg_type = NLMSG_DONE;
	msg.nl.nlmsg_pid = 0;
	msg.cn.id.idx = CN_IDX_PROC;
	msg.cn.id.val = CN_VAL_PROC;
	msg.cn.len = sizeof(enum proc_cn_mcast_op);
	msg.op = PROC_CN_MCAST_LISTEN;
	if (send(fd, &msg, sizeof(msg), 0) < 0)
		goto fail;
	return fd;
fail:
	{
		int r = -errno;

		close(fd);
		return r;
	}
}

static void dispatch(struct apx_daemon *d, const struct proc_event *ev)
{
	d->st.events++;
	switch (ev->what) {
	case PROC_EVENT_FORK:
		d->st.forks++;
		/* thread creation is a fork event too; only new processes matter */
		if (ev->event_data.fork.child_pid == ev->event_data.fork.child_tgid)
			apx_tracker_fork(d, ev->event_data.fork.parent_tgid,
					 ev->event_data.fork.child_tgid);
		break;
	case PROC_EVENT_EXEC:
		d->st.execs++;
		apx_tracker_consider(d, ev->event_data.exec.process_tgid, APX_WHY_EXEC);
		break;
	case PROC_EVENT_COMM:
		d->st.comms++;
		{
			char comm[APX_COMM_MAX];

			memcpy(comm, ev->event_data.comm.comm, sizeof(comm) - 1);
			comm[sizeof(comm) - 1] = 0;
			apx_tracker_comm(d, ev->event_data.comm.process_tgid,
					 ev->event_data.comm.process_pid, comm);
		}
		break;
	case PROC_EVENT_EXIT:
		if (ev->event_data.exit.process_pid == ev->event_data.exit.process_tgid) {
			d->st.exits++;
			apx_tracker_exit(d, ev->event_data.exit.process_tgid,
					 (int)ev->event_data.exit.exit_code, 1);
		}
		break;
	default:
		break;
	}
}

static void parse(struct apx_daemon *d, const char *buf, size_t n)
{
	const struct nlmsghdr *nh;
	int left = (int)n;

	for (nh = (const struct nlmsghdr *)buf; NLMSG_OK(nh, left); nh = NLMSG_NEXT(nh, left)) {
		struct cn_msg cn_hdr;
		struct proc_event ev;
		const uint8_t *data = NLMSG_DATA(nh);

		if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_type == NLMSG_NOOP)
			continue;
		if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(struct proc_event)))
			continue;
		/* the event is only 4-aligned in the buffer: copy it out */
		memcpy(&cn_hdr, data, sizeof(cn_hdr));
		if (cn_hdr.id.idx != CN_IDX_PROC || cn_hdr.id.val != CN_VAL_PROC)
			continue;
		if (cn_hdr.len < sizeof(struct proc_event))
			continue;
		memcpy(&ev, data + sizeof(cn_hdr), sizeof(ev));
		dispatch(d, &ev);
	}
}

#define BATCH 64
#define SLOT 512	/* one proc event datagram is ~100 bytes */

int apx_nl_drain(struct apx_daemon *d)
{
	/* one recvmmsg takes up to BATCH events: an exec storm costs a syscall per batch */
	static char bufs[BATCH][SLOT] __attribute__((aligned(8)));
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_nl from[BATCH];
	int overrun = 0;

	for (;;) {
		int n;

		for (int i = 0; i < BATCH; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = SLOT;
			memset(&msgs[i], 0, sizeof(msgs[i]));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &from[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		n = recvmmsg(d->nlfd, msgs, BATCH, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				overrun = 1;
				continue;	/* keep draining what is left */
			}
			if (errno == EAGAIN)
				break;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			if (from[i].nl_pid != 0 || (msgs[i].msg_hdr.msg_flags & MSG_TRUNC))
				continue;	/* only the kernel speaks here */
			parse(d, bufs[i], msgs[i].msg_len);
		}
		if (n < BATCH)
			break;
	}
	return overrun ? -ENOBUFS : 0;
}
