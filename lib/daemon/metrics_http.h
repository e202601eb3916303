/*
 * metrics_http.h - nvperfd's Prometheus endpoint (metrics_http.c): a small HTTP/1.0 server on
 * the TCP address of the metrics_listen key, served from main.c's epoll loop (no thread).
 * main.c opens it at start and re-opens or closes it when a reload changes the key; it logs
 * what happened (this part never logs). Metric names: docs/nvperfd-metrics.md.
 */
#ifndef APX_DAEMON_METRICS_HTTP_H
#define APX_DAEMON_METRICS_HTTP_H

#include <stdint.h>

struct apx_daemon;
struct apx_metrics;

#define APX_METRICS_CONN_MAX 16			/* connections at once (then eviction, 503) */
#define APX_METRICS_REQUEST_MAX 4096		/* request line + headers; more gets 431 */
#define APX_METRICS_RESPONSE_MAX (4u << 20)	/* answer cut (at a line) beyond this */
#define APX_METRICS_TIMEOUT_NS (5ull * 1000000000ull)	/* a connection's whole life */
#define APX_METRICS_IDLE_NS (2ull * 1000000000ull)	/* to send a whole request (408) */
#define APX_METRICS_EVICT_AGE_NS 250000000ull	/* a partial or slow one older than this
						 * gives its slot to a new connection when all are
						 * taken (a silent one: at any age) */
#define APX_METRICS_DRAIN_NS 1000000000ull	/* reading after the answer, until the client
						 * closes (no reset) */

/* epoll tag of a connection: this bit, the slot in bits 0-7 and its generation in 8-39 (an
 * event left over from a closed connection never reaches the slot's next one). Heap pointers
 * (the control socket's tags) never have bit 63 set. */
#define APX_EP_METRICS_CONN (1ull << 63)

/* Bind and listen on addr (a checked metrics_listen value), register the listener and a
 * timerfd with d->epfd (tags APX_EP_METRICS, APX_EP_METRICS_TIMER). 0 or -errno. */
int apx_metrics_open(struct apx_daemon *d, const char *addr, struct apx_metrics **ret);
/* Close the listener, the timer and every connection; NULL is a no-op. */
void apx_metrics_close(struct apx_daemon *d, struct apx_metrics *m);
/* The address actually listened on, "127.0.0.1:9470" or "[::1]:9470". */
const char *apx_metrics_addr(const struct apx_metrics *m);
/* An epoll event whose tag is APX_EP_METRICS, APX_EP_METRICS_TIMER or has APX_EP_METRICS_CONN. */
void apx_metrics_event(struct apx_daemon *d, uint64_t tag, uint32_t events);

#endif
