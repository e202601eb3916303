/*
 * summary_index.h - an in-memory index of each user's summary folder (STATE_DIR/UID): its .apx
 * files, oldest first, and their bytes, so that writing a summary prunes the folder to
 * max_summaries / max_state_bytes without listing it again. The folder is listed only the
 * first time a uid is seen, when the folder is not the one indexed (re-created), or when
 * something else changed it since nvperfd's last write (its mtime moved); a listing does at
 * most APX_SUMIDX_STEP entries a loop turn (a folder of a million files does not stall the
 * loop). Used by summary.c on the event loop; main.c goes on with listings each loop turn and
 * drops the index at a reload and at stop. Non-logging.
 */
#ifndef APX_DAEMON_SUMMARY_INDEX_H
#define APX_DAEMON_SUMMARY_INDEX_H

#include <stdint.h>
#include <sys/types.h>

struct apx_daemon;

#define APX_SUMIDX_USERS 64		/* folders indexed at once; the least recently used goes */
#define APX_SUMIDX_STEP 1024		/* folder entries read (and removed) a loop turn */

struct apx_sumidx;

/* Make the index of uid's folder (fd dfd) current before nvperfd writes into it: list the
 * folder when needed (counted in d->st.summary_rescans): its first APX_SUMIDX_STEP entries now,
 * the rest by apx_summary_index_step; files past max_summaries are removed as they are seen.
 * 0 or -errno. */
int apx_summary_index_begin(struct apx_daemon *d, uid_t uid, int dfd);
/* Go on with a listing in progress, APX_SUMIDX_STEP entries at most (one loop turn's work).
 * 1 while listings are left (the loop must come back without waiting), else 0. */
int apx_summary_index_step(struct apx_daemon *d);
/* 1 while some folder is being listed. */
int apx_summary_index_busy(const struct apx_daemon *d);
/* The summary name (bytes, mtime) was just renamed into uid's folder: add it, remove the
 * oldest files past the limits (never the newest), remember the folder's state. 0 or -errno;
 * *ret_removed: files removed. */
int apx_summary_index_commit(struct apx_daemon *d, uid_t uid, int dfd, const char *name,
			     uint64_t bytes, uint64_t mtime_ns, uint64_t *ret_removed);
/* Drop every folder's index (they are listed again at their next write). */
void apx_summary_index_forget(struct apx_daemon *d);

#endif
