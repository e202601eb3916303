/*
 * conf_watch.c - which inotify events on a config file mean "read it again". Called by main.c
 * (the machine file) and tracker.c (users' files) for each event on a watched config folder, on
 * the event loop. Non-logging.
 */
#include <sys/inotify.h>
#include <sys/stat.h>

#include "daemon/daemon.h"

#include "base/banned.h"

int apx_conf_event_rereads(uint32_t mask, const char *path)
{
	struct stat st;

	if (mask & (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB))
		return 1;
	if (!(mask & IN_CREATE))
		return 0;
	/* A regular file being written sends IN_CLOSE_WRITE when done: wait for it. A symlink, a
	 * FIFO or a hard link never does: read now, so that it is refused and said at once. */
	if (lstat(path, &st) < 0)
		return 1;
	return !S_ISREG(st.st_mode) || st.st_nlink > 1;
}
