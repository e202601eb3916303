/*
 * metrics_text.h - the text of nvperfd's Prometheus endpoint (metrics_text.c): the exposition
 * written into a connection's buffer, bounded, line by line. Internal to the endpoint: its one
 * caller is metrics_http.c, which owns the buffers and the user-name cache and puts the HTTP
 * status line and headers in front. Non-logging.
 */
#ifndef APX_DAEMON_METRICS_TEXT_H
#define APX_DAEMON_METRICS_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct apx_daemon;

#define APX_MTEXT_USERS_MAX 64		/* uid -> name cache entries */

/* A connection's answer buffer: grown by apx_mtext_grow to at most APX_METRICS_RESPONSE_MAX;
 * the caller frees data. Zeroed = none yet. */
struct apx_mtext_buf {
	char *data;
	size_t cap;
};

struct apx_mtext_user {
	uid_t uid;
	char name[64];
};

/* uid -> user name, emptied every minute; zeroed = empty. */
struct apx_mtext_users {
	struct apx_mtext_user e[APX_MTEXT_USERS_MAX];
	size_t n;
	uint64_t emptied_ns;		/* when it was last emptied */
};

/* Writing into b->data from len on: lines that fit or are left out whole. Start with b and len
 * set, the rest zero. */
struct apx_mtext {
	struct apx_mtext_buf *b;
	size_t len;			/* bytes of b->data in use (the caller's room + text so far) */
	int full;			/* APX_METRICS_RESPONSE_MAX reached: later lines left out */
	int tail;			/* writing into the room kept at the end */
	const char *fam, *fam_type, *fam_help;	/* current family */
	int fam_said;			/* its # HELP and # TYPE lines are out */
};

/* Grow b: its first buffer, else twice as large, at most APX_METRICS_RESPONSE_MAX. 0, -ENOSPC
 * (at the most already) or -ENOMEM (b unchanged). */
int apx_mtext_grow(struct apx_mtext_buf *b);
/* Add a line (or lines) formatted as printf's, whole or not at all: once one does not fit even
 * in a grown buffer, o->full is set and every later one is left out too. */
void apx_mtext_add(struct apx_mtext *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The whole exposition of what d holds (nconns: metrics connections open now, this one
 * included; users: the endpoint's cache), ending with nvperfd_metrics_truncated, which says
 * whether lines were left out. */
void apx_mtext_render(struct apx_mtext *o, struct apx_daemon *d, struct apx_mtext_users *users,
		      size_t nconns);

#endif
