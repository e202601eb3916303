/*
 * metrics_http.c - nvperfd's Prometheus endpoint, the server: with metrics_listen set, a TCP
 * listener that answers "GET /metrics" (or HEAD) with the exposition text that metrics_text.c
 * renders, and other requests with an error status.
 *
 * HTTP/1.0, one request per connection, then close. Opened and closed by main.c (start,
 * reload), served from main.c's epoll loop on its one thread; every socket is non-blocking.
 * Bounds: APX_METRICS_CONN_MAX connections; when they are all taken, a new one takes the slot
 * of one that is done (draining), else of the oldest silent one (idle connections renewed in
 * a loop cannot lock scrapes out), else of the oldest partial or slow one older than
 * APX_METRICS_EVICT_AGE_NS, and only when there is none gets a 503; APX_METRICS_REQUEST_MAX bytes of request (431 beyond); APX_METRICS_IDLE_NS to send
 * a whole request (408 after) and APX_METRICS_TIMEOUT_NS for the whole life of a connection (a
 * timerfd armed at the earliest deadline closes late ones). Every answer, 503 included, ends
 * with shutdown(SHUT_WR) and the connection is read (and what comes discarded) until the client
 * closes or APX_METRICS_DRAIN_NS, so that close() never resets an answer away. And the
 * answer built into its slot's buffer behind the room kept for the status line and headers
 * (metrics_text.c grows it to at most APX_METRICS_RESPONSE_MAX and cuts the text at a line
 * beyond), kept for the slot's next connection, then written as the socket takes it
 * (EPOLLOUT). Non-logging: counters in d->st; main.c logs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/metrics_http.h"
#include "daemon/metrics_text.h"

#include "base/banned.h"

#define NS 1000000000ull
#define HDR_ROOM 256			/* bytes before the body: status line and headers */
#define OUT_KEEP (1u << 20)		/* a larger buffer is freed when its connection ends */
#define ACCEPT_BURST 64			/* connections accepted per listener event */
#define CONN_SNDBUF (64 << 10)		/* kernel send buffer per connection (the kernel doubles
					 * it): what a client that does not read can hold there */
#define PAUSE_NS NS			/* listener off this long after accept failed (EMFILE) */

#define LINGER_MAX 48			/* slots of refused (503) connections being drained */
#define BACKLOG 1024			/* connections the kernel holds while all slots are taken
					 * (listen(2); capped by net.core.somaxconn) */
#define SLOTS (APX_METRICS_CONN_MAX + LINGER_MAX)

enum conn_state { CONN_FREE = 0, CONN_READ, CONN_WRITE, CONN_DRAIN };

struct conn {
	int fd;
	int state;			/* enum conn_state */
	uint32_t gen;			/* in the epoll tag: bumped at each accept */
	uint8_t slow;			/* needed EPOLLOUT (counted once) */
	uint64_t accepted_ns;
	uint64_t deadline_ns;		/* of its state: request, answer, drain */
	struct apx_mtext_buf out;	/* HDR_ROOM, then the body; kept for the slot's next use */
	size_t outoff, outlen;
	size_t inlen;
	char in[APX_METRICS_REQUEST_MAX + 1];
};

struct apx_metrics {
	int lfd, tfd;
	int paused;			/* accept failed: listener off until resume_ns */
	int full;			/* every slot taken: listener off until one frees */
	uint64_t resume_ns;
	uint64_t timer_at;		/* the timerfd is armed for this; 0 = disarmed */
	size_t nconns;			/* of the first APX_METRICS_CONN_MAX slots */
	char addr[80];
	struct apx_mtext_users users;	/* uid -> name, for metrics_text.c */
	struct conn conns[SLOTS];	/* [APX_METRICS_CONN_MAX..]: refused ones, draining */
};

/* ---- the listener --------------------------------------------------------------------------- */

static void format_addr(const struct sockaddr_storage *sa, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		(void)inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, cap, "[%s]:%u", host, (unsigned)ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)sa;

		(void)inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(buf, cap, "%s:%u", host, (unsigned)ntohs(s4->sin_port));
	}
}

static int ep_add(struct apx_daemon *d, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int apx_metrics_open(struct apx_daemon *d, const char *addr, struct apx_metrics **ret)
{
	struct sockaddr_storage sa;
	socklen_t sl;
	struct apx_metrics *m;
	uint32_t gen0 = (uint32_t)apx_now_ns();	/* tags of a previous listener never match */
	int one = 1, r;

	if (apx_conf_listen_addr(addr, &sa, &sl) < 0)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < SLOTS; i++) {
		m->conns[i].fd = -1;
		m->conns[i].gen = gen0;
	}
	m->tfd = -1;
	m->lfd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0)
		goto fail;
	/* a restart must not wait for the previous run's connections in TIME_WAIT */
	(void)setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(m->lfd, (struct sockaddr *)&sa, sl) < 0 || listen(m->lfd, BACKLOG) < 0)
		goto fail;
	sl = sizeof(sa);
	if (getsockname(m->lfd, (struct sockaddr *)&sa, &sl) < 0)
		goto fail;
	format_addr(&sa, m->addr, sizeof(m->addr));
	m->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (m->tfd < 0)
		goto fail;
	if ((r = ep_add(d, m->lfd, EPOLLIN, APX_EP_METRICS)) < 0 ||
	    (r = ep_add(d, m->tfd, EPOLLIN, APX_EP_METRICS_TIMER)) < 0) {
		errno = -r;
		goto fail;
	}
	*ret = m;
	return 0;
fail:
	r = -errno;
	if (m->tfd >= 0)
		close(m->tfd);	/* closing also takes them out of the epoll set */
	if (m->lfd >= 0)
		close(m->lfd);
	free(m);
	return r;
}

const char *apx_metrics_addr(const struct apx_metrics *m)
{
	return m ? m->addr : "";
}

static void timer_arm(struct apx_metrics *m, uint64_t at_ns)
{
	struct itimerspec its = { 0 };

	its.it_value.tv_sec = (time_t)(at_ns / NS);
	its.it_value.tv_nsec = (long)(at_ns % NS);
	(void)timerfd_settime(m->tfd, TFD_TIMER_ABSTIME, &its, NULL);	/* 0 disarms */
	m->timer_at = at_ns;
}

/* The listener on or off (while every slot is taken, or after accept failed). */
static void listen_on(struct apx_daemon *d, struct apx_metrics *m, int on)
{
	struct epoll_event ev = { .events = on ? EPOLLIN : 0, .data.u64 = APX_EP_METRICS };

	(void)epoll_ctl(d->epfd, EPOLL_CTL_MOD, m->lfd, &ev);
}

/* The slot c is free again (its fd closed, or handed to a linger slot). */
static void slot_free(struct apx_daemon *d, struct apx_metrics *m, struct conn *c)
{
	c->fd = -1;
	c->state = CONN_FREE;
	if (c < m->conns + APX_METRICS_CONN_MAX)
		m->nconns--;
	if (c->out.cap > OUT_KEEP) {
		free(c->out.data);
		c->out.data = NULL;
		c->out.cap = 0;
	}
	if (m->full) {		/* the connections waiting in the backlog may come */
		m->full = 0;
		if (!m->paused)
			listen_on(d, m, 1);
	}
}

static void conn_close(struct apx_daemon *d, struct apx_metrics *m, struct conn *c)
{
	(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	slot_free(d, m, c);
}

void apx_metrics_close(struct apx_daemon *d, struct apx_metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < SLOTS; i++) {
		if (m->conns[i].state != CONN_FREE)
			conn_close(d, m, &m->conns[i]);
		free(m->conns[i].out.data);
	}
	(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, m->lfd, NULL);
	(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, m->tfd, NULL);
	close(m->lfd);
	close(m->tfd);
	free(m);
}

/* ---- HTTP ----------------------------------------------------------------------------------- */

/* Put the status line and headers in front of the body (in HDR_ROOM) and start writing. */
static void answer(struct conn *c, const struct apx_mtext *o, int code, const char *reason,
		   const char *ctype, const char *extra, int head)
{
	char h[HDR_ROOM];
	int n;

	n = snprintf(h, sizeof(h), "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "%sConnection: close\r\n\r\n", code, reason, ctype, o->len - HDR_ROOM,
		     extra ? extra : "");
	if (n < 0 || (size_t)n >= sizeof(h))
		n = 0;	/* cannot happen: the fixed strings are short */
	memcpy(c->out.data + HDR_ROOM - n, h, (size_t)n);
	c->outoff = HDR_ROOM - (size_t)n;
	c->outlen = head ? HDR_ROOM : o->len;
	c->state = CONN_WRITE;
}

static void answer_error(struct apx_daemon *d, struct conn *c, struct apx_mtext *o, int code,
			 const char *reason, const char *extra, const char *msg, int head)
{
	d->st.metrics_bad++;
	apx_mtext_add(o, "%s\n", msg);
	answer(c, o, code, reason, "text/plain; charset=utf-8", extra, head);
}

static void answer_metrics(struct apx_daemon *d, struct apx_metrics *m, struct conn *c,
			   struct apx_mtext *o, int head)
{
	d->st.metrics_scrapes++;	/* before the text: it counts this scrape */
	apx_mtext_render(o, d, &m->users, m->nconns);
	answer(c, o, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", NULL, head);
}

static int is_token(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s <= 0x20 || *s >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", *s))
			return 0;
	return 1;
}

/* The request (line and headers) is in c->in: answer it. */
static void handle(struct apx_daemon *d, struct apx_metrics *m, struct conn *c, int complete)
{
	struct apx_mtext o = { .b = &c->out, .len = HDR_ROOM };
	char *line = c->in, *eol, *target, *version, *sp, *q;
	int head;

	if (!c->out.data && apx_mtext_grow(&c->out) < 0) {
		conn_close(d, m, c);
		return;
	}
	if (!complete) {
		answer_error(d, c, &o, 431, "Request Header Fields Too Large", NULL,
			     "request larger than 4096 bytes", 0);
		return;
	}
	if (memchr(c->in, 0, c->inlen)) {
		answer_error(d, c, &o, 400, "Bad Request", NULL, "NUL byte in the request", 0);
		return;
	}
	eol = strchr(line, '\n');
	*eol = 0;
	if (eol > line && eol[-1] == '\r')
		eol[-1] = 0;
	/* METHOD SP TARGET SP HTTP/1.x */
	sp = strchr(line, ' ');
	target = sp ? sp + 1 : NULL;
	if (sp)
		*sp = 0;
	sp = target ? strchr(target, ' ') : NULL;
	version = sp ? sp + 1 : NULL;
	if (sp)
		*sp = 0;
	if (!version || !is_token(line) || target[0] != '/' || strncmp(version, "HTTP/1.", 7) ||
	    version[7] < '0' || version[7] > '9' || version[8]) {
		answer_error(d, c, &o, 400, "Bad Request", NULL,
			     "expected a request line \"GET /metrics HTTP/1.1\"", 0);
		return;
	}
	head = !strcmp(line, "HEAD");
	if (strcmp(line, "GET") && !head) {
		answer_error(d, c, &o, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n",
			     "only GET and HEAD are served", 0);
		return;
	}
	q = strchr(target, '?');
	if (q)
		*q = 0;		/* parameters are ignored */
	if (strcmp(target, "/metrics")) {
		answer_error(d, c, &o, 404, "Not Found", NULL,
			     "not found; the metrics are at /metrics", head);
		return;
	}
	answer_metrics(d, m, c, &o, head);
}

static int head_complete(const struct conn *c)
{
	return memmem(c->in, c->inlen, "\r\n\r\n", 4) || memmem(c->in, c->inlen, "\n\n", 2);
}

static uint64_t conn_tag(const struct apx_metrics *m, const struct conn *c)
{
	return APX_EP_METRICS_CONN | ((uint64_t)c->gen << 8) | (uint64_t)(c - m->conns);
}

static void deadline(struct apx_metrics *m, struct conn *c, uint64_t at_ns)
{
	c->deadline_ns = at_ns;
	if (!m->timer_at || m->timer_at > at_ns)
		timer_arm(m, at_ns);
}

/* The answer is out: send FIN, then read until the client closes (its request may still be
 * arriving: closing with unread bytes would reset the connection, and the client could lose
 * the answer), at most APX_METRICS_DRAIN_NS. */
static void conn_drain(struct apx_daemon *d, struct apx_metrics *m, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = conn_tag(m, c) };

	(void)shutdown(c->fd, SHUT_WR);
	if (apx_sock_discard(c->fd) || epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
		conn_close(d, m, c);
		return;
	}
	c->state = CONN_DRAIN;
	deadline(m, c, apx_now_ns() + APX_METRICS_DRAIN_NS);
}

/* Write what the socket takes; done: drain, then close. */
static void conn_write(struct apx_daemon *d, struct apx_metrics *m, struct conn *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out.data + c->outoff, c->outlen - c->outoff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!c->slow) {	/* the rest at the next EPOLLOUT events */
				struct epoll_event ev = { .events = EPOLLOUT,
							  .data.u64 = conn_tag(m, c) };

				c->slow = 1;
				d->st.metrics_slow++;
				if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
					conn_close(d, m, c);
			}
			return;
		}
		if (n <= 0) {
			conn_close(d, m, c);
			return;
		}
		c->outoff += (size_t)n;
	}
	conn_drain(d, m, c);
}

static void conn_read(struct apx_daemon *d, struct apx_metrics *m, struct conn *c)
{
	int complete = 0;

	while (c->inlen < APX_METRICS_REQUEST_MAX) {
		ssize_t n = recv(c->fd, c->in + c->inlen, APX_METRICS_REQUEST_MAX - c->inlen,
				 MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {	/* gone before a whole request */
			conn_close(d, m, c);
			return;
		}
		c->inlen += (size_t)n;
		c->in[c->inlen] = 0;
		complete = head_complete(c);
		if (complete)
			break;
	}
	if (!complete && c->inlen < APX_METRICS_REQUEST_MAX)
		return;		/* wait for the rest */
	handle(d, m, c, complete);
	if (c->state == CONN_WRITE) {
		c->deadline_ns = c->accepted_ns + APX_METRICS_TIMEOUT_NS;	/* later: no re-arm */
		conn_write(d, m, c);
	}
}

/* Nothing read from it and nothing waiting: a connection that has not said a word. */
static int silent(const struct conn *c)
{
	int waiting = 0;

	return c->state == CONN_READ && c->inlen == 0 &&
	       ioctl(c->fd, FIONREAD, &waiting) == 0 && waiting == 0;
}

static struct conn *free_slot(struct apx_metrics *m, size_t from, size_t to);

/* All slots are taken: the one a new connection may have. A done (draining) one; else, when a
 * linger slot is free for its 503, the oldest silent one (16 idle connections renewed in a
 * loop cannot lock scrapes out) or the oldest with a partial request, if older than
 * APX_METRICS_EVICT_AGE_NS (a burst of new connections cannot push each other out); else the
 * oldest slow reader that old. None: the caller answers 503, or waits for a slot. */
static struct conn *victim(struct apx_metrics *m, uint64_t now)
{
	int linger = free_slot(m, APX_METRICS_CONN_MAX, SLOTS) != NULL;

	struct conn *quiet = NULL, *slow = NULL;

	for (size_t i = 0; i < APX_METRICS_CONN_MAX; i++) {
		struct conn *c = &m->conns[i];

		if (c->state == CONN_DRAIN)
			return c;
		if (silent(c)) {
			if (linger && (!quiet || c->accepted_ns < quiet->accepted_ns))
				quiet = c;
		} else if (((c->state == CONN_READ && linger) || (c->state == CONN_WRITE && c->slow)) &&
			   now - c->accepted_ns >= APX_METRICS_EVICT_AGE_NS &&
			   (!slow || c->accepted_ns < slow->accepted_ns)) {
			slow = c;
		}
	}
	return quiet ? quiet : slow;
}

static struct conn *free_slot(struct apx_metrics *m, size_t from, size_t to)
{
	for (size_t k = from; k < to; k++)
		if (m->conns[k].state == CONN_FREE)
			return &m->conns[k];
	return NULL;
}

static int conn_start(struct apx_daemon *d, struct apx_metrics *m, struct conn *c, int fd,
		      uint64_t now)
{
	int sndbuf = CONN_SNDBUF;

	c->fd = fd;
	c->state = CONN_READ;
	c->gen++;
	c->slow = 0;
	c->inlen = c->outoff = c->outlen = 0;
	c->accepted_ns = now;
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (ep_add(d, fd, EPOLLIN, conn_tag(m, c)) < 0) {
		c->fd = -1;
		c->state = CONN_FREE;
		return -1;
	}
	if (c < m->conns + APX_METRICS_CONN_MAX)
		m->nconns++;
	deadline(m, c, now + APX_METRICS_IDLE_NS);
	return 0;
}

/* No slot: a 503, then drained in a linger slot like any answer (the caller made sure one is
 * free; closed at once only if it cannot be watched). */
static void refuse(struct apx_daemon *d, struct apx_metrics *m, int fd, uint64_t now)
{
	static const char busy[] = "HTTP/1.0 503 Service Unavailable\r\n"
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\n"
		"Retry-After: 1\r\nConnection: close\r\n\r\ntoo many connections\n";
	struct conn *c = free_slot(m, APX_METRICS_CONN_MAX, SLOTS);

	d->st.metrics_refused++;
	(void)apx_sock_discard(fd);
	(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (!c || conn_start(d, m, c, fd, now) < 0) {
		(void)shutdown(fd, SHUT_WR);
		close(fd);
		return;
	}
	conn_drain(d, m, c);
}

/* Whether a connection accepted now would get an answer: a free slot, one to take, or a
 * linger slot for its 503. When not, the listener waits (off) until a slot frees: the kernel
 * holds the connections meanwhile (BACKLOG), none is closed without an answer (before the
 * fix, 23 of 500 simultaneous scrapes got none). */
static int room(struct apx_metrics *m, uint64_t now)
{
	return free_slot(m, 0, SLOTS) || victim(m, now);
}

static void on_accept(struct apx_daemon *d, struct apx_metrics *m)
{
	for (int i = 0; i < ACCEPT_BURST; i++) {
		uint64_t now = apx_now_ns();
		struct conn *c;
		int fd;

		if (!room(m, now)) {
			m->full = 1;
			listen_on(d, m, 0);
			return;
		}
		fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				/* EMFILE, ENOBUFS...: the pending connection would wake the loop
				 * at once again; stop listening for a while instead */
				struct epoll_event ev = { .events = 0, .data.u64 = APX_EP_METRICS };

				(void)epoll_ctl(d->epfd, EPOLL_CTL_MOD, m->lfd, &ev);
				m->paused = 1;
				m->resume_ns = apx_now_ns() + PAUSE_NS;
				if (!m->timer_at || m->timer_at > m->resume_ns)
					timer_arm(m, m->resume_ns);
			}
			return;
		}
		c = free_slot(m, 0, APX_METRICS_CONN_MAX);
		if (!c && (c = victim(m, now))) {
			d->st.metrics_evicted++;
			if (c->state == CONN_READ) {	/* it gets its answer too: a 503 */
				int vfd = c->fd;

				(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, vfd, NULL);
				slot_free(d, m, c);
				refuse(d, m, vfd, now);
			} else {
				conn_close(d, m, c);
			}
		}
		if (!c) {
			refuse(d, m, fd, now);
			continue;
		}
		if (conn_start(d, m, c, fd, now) < 0)
			close(fd);
	}
}

/* The earliest deadline passed: close the late connections (408 to those still sending a
 * request), listen again after a pause, and re-arm for what comes next. */
static void on_timer(struct apx_daemon *d, struct apx_metrics *m)
{
	static const char late[] = "HTTP/1.0 408 Request Timeout\r\n"
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 17\r\n"
		"Connection: close\r\n\r\nrequest too slow\n";
	uint64_t exp, now = apx_now_ns(), next = 0;

	(void)!read(m->tfd, &exp, sizeof(exp));
	m->timer_at = 0;
	if (m->paused && now >= m->resume_ns) {
		m->paused = 0;
		if (!m->full)
			listen_on(d, m, 1);
	}
	for (size_t i = 0; i < SLOTS; i++) {
		struct conn *c = &m->conns[i];

		if (c->state == CONN_FREE)
			continue;
		if (c->deadline_ns <= now) {
			if (c->state == CONN_READ) {
				d->st.metrics_timeouts++;
				(void)!send(c->fd, late, sizeof(late) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
				conn_drain(d, m, c);
				if (c->state == CONN_DRAIN)
					c->deadline_ns = now + APX_METRICS_DRAIN_NS;
			} else {
				if (c->state == CONN_WRITE)
					d->st.metrics_timeouts++;
				conn_close(d, m, c);
				continue;
			}
			if (c->state == CONN_FREE)
				continue;
		}
		if (!next || c->deadline_ns < next)
			next = c->deadline_ns;
	}
	if (m->paused && (!next || m->resume_ns < next))
		next = m->resume_ns;
	if (next)
		timer_arm(m, next);
}

void apx_metrics_event(struct apx_daemon *d, uint64_t tag, uint32_t events)
{
	struct apx_metrics *m = d->metrics;
	struct conn *c;

	(void)events;	/* recv/send say what happened, EPOLLHUP/ERR included */
	if (!m)
		return;
	if (tag == APX_EP_METRICS) {
		on_accept(d, m);
		return;
	}
	if (tag == APX_EP_METRICS_TIMER) {
		on_timer(d, m);
		return;
	}
	if ((tag & 0xff) >= SLOTS)
		return;
	c = &m->conns[tag & 0xff];
	if (c->state == CONN_FREE || c->gen != (uint32_t)(tag >> 8))
		return;		/* left over from a connection closed earlier in this batch */
	if (c->state == CONN_READ)
		conn_read(d, m, c);
	else if (c->state == CONN_WRITE)
		conn_write(d, m, c);
	else if (apx_sock_discard(c->fd))
		conn_close(d, m, c);	/* the client closed: done */
}
