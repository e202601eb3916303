/*
 * summary_index.h - an in-memory index of each user's summary folder (STATE_DIR/UID): its .apx
 * files, oldest first, and their bytes, so that writing a summary prunes the folder to
 * max_summaries / max_state_bytes without listing it again. The folder is listed only the
 * first time a uid is seen, when the folder is not the one indexed (re-created), or when
 * something else changed it since nvperfd's last write (its mtime moved). Used by summary.c on
 * the event loop; main.c drops the index at a reload and at stop. Non-logging.
 */
#ifndef APX_DAEMON_SUMMARY_INDEX_H
#define APX_DAEMON_SUMMARY_INDEX_H

#include <stdint.h>
#include <sys/types.h>

struct apx_daemon;

#define APX_SUMIDX_USERS 64		/* folders indexed at once; the least recently used goes */
#define APX_SUMIDX_SCAN_MAX 65536	/* entries read from a folder stuffed by its user */

struct apx_sumidx;

/* Make the index of uid's folder (fd dfd) current before nvperfd writes into it: list the
 * folder when needed (counted in d->st.summary_rescans). 0 or -errno. */
int apx_summary_index_begin(struct apx_daemon *d, uid_t uid, int dfd);
/* The summary name (bytes, mtime) was just renamed into uid's folder: add it, remove the
 * oldest files past the limits (never the newest), remember the folder's state. 0 or -errno;
 * *ret_removed: files removed. */
int apx_summary_index_commit(struct apx_daemon *d, uid_t uid, int dfd, const char *name,
			     uint64_t bytes, uint64_t mtime_ns, uint64_t *ret_removed);
/* Drop every folder's index (they are listed again at their next write). */
void apx_summary_index_forget(struct apx_daemon *d);

#endif
