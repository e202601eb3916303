/*
 * ctl_client.h - client side of the nvperfd control socket (include/apx/ctl_proto.h), and the
 * escaping shared with the daemon. Used by `apx status/top/history` and by nvperfd itself
 * (escape). Non-logging: returns -errno.
 */
#ifndef APX_DAEMON_CTL_CLIENT_H
#define APX_DAEMON_CTL_CLIENT_H

#include <stddef.h>
#include <stdio.h>

#include "base/json.h"	/* apx_json_str(), for the JSON of status/top/history */

/* Escape len bytes of src into dst (always NUL-terminated): backslash, tab, newline and bytes
 * outside 0x20..0x7e become "\xNN". Stops before overflowing dst. Returns the length written. */
size_t apx_ctl_escape(char *dst, size_t cap, const void *src, size_t len);
/* Undo apx_ctl_escape in place; returns the new length. */
size_t apx_ctl_unescape(char *s);

/* The socket path: $NVPERFD_SOCKET, else APX_CTL_SOCKET_DEFAULT. */
const char *apx_ctl_default_socket(void);

/* Connect to path, send "apx1 VERB\n", read the whole response (bounded by
 * APX_CTL_RESPONSE_MAX, 5 s timeout). On success *ret_buf holds the lines after "ok" (NUL-
 * terminated, caller frees). -ECONNREFUSED / -ENOENT: no daemon; -EPROTO: an "err" answer or
 * a malformed one (message in errbuf). */
int apx_ctl_request(const char *path, const char *verb, char **ret_buf, size_t *ret_len,
		    char *errbuf, size_t errcap);

/* Split one line (modified in place) at tabs and unescape each field. Returns the number of
 * fields (at most max). */
int apx_ctl_split(char *line, char **fields, int max);

/* For the apx CLI: print why a request failed ("nvperfd is not running..." for -ENOENT and
 * -ECONNREFUSED) as "apx CMD: ..." on stderr; returns 1 (the runtime-error exit status). */
int apx_ctl_fail(const char *cmd, const char *sock, int r, const char *err);


#endif
