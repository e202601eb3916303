/*
 * summary_index.c - the per-user index of summary folders (summary_index.h): what is in
 * STATE_DIR/UID, oldest first, and its bytes, kept across summary writes so that pruning the
 * folder (max_summaries, max_state_bytes) costs no listing. Called by summary.c and main.c on
 * the event loop; non-logging. Every file operation is relative to the folder's fd, nothing
 * follows a symlink.
 *
 * Staleness: after each write the folder's (dev, inode, mtime) is kept; the next write lists
 * the folder again only when they differ (the user added or removed files, the folder was
 * re-created). A file the index holds but that is gone is dropped from it when its turn to be
 * removed comes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/summary_index.h"

#include "base/banned.h"

struct sum_entry {
	char name[80];			/* our names are about 50 bytes; longer ones are not ours */
	uint64_t mtime_ns, bytes;
};

struct apx_sumidx {
	int used;
	uid_t uid;
	uint64_t last_use;		/* LRU among APX_SUMIDX_USERS */
	dev_t dev;			/* the folder as nvperfd left it */
	ino_t ino;
	struct timespec mtime;
	struct sum_entry *v;		/* oldest first */
	size_t n, cap;
	uint64_t total_bytes;
};

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct sum_entry *x = a, *y = b;

	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void idx_release(struct apx_sumidx *x)
{
	free(x->v);
	memset(x, 0, sizeof(*x));
}

void apx_summary_index_forget(struct apx_daemon *d)
{
	if (!d->sumidx)
		return;
	for (size_t i = 0; i < APX_SUMIDX_USERS; i++)
		idx_release(&d->sumidx[i]);
}

static int push(struct apx_sumidx *x, const char *name, uint64_t mtime_ns, uint64_t bytes)
{
	size_t len = strlen(name);

	if (len >= sizeof(x->v[0].name))
		return 0;
	if (x->n == x->cap) {
		size_t nc = x->cap ? x->cap * 2 : 64;
		struct sum_entry *nv = reallocarray(x->v, nc, sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		x->v = nv;
		x->cap = nc;
	}
	memcpy(x->v[x->n].name, name, len + 1);
	x->v[x->n].mtime_ns = mtime_ns;
	x->v[x->n].bytes = bytes;
	x->n++;
	x->total_bytes += bytes;
	return 0;
}

/* List the folder: its regular *.apx files (not dot files: the .PID.part in progress). */
static int scan(struct apx_sumidx *x, int dfd)
{
	int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0), r = 0;
	struct dirent *de;
	DIR *dir;

	x->n = 0;
	x->total_bytes = 0;
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -ENOMEM;
	}
	rewinddir(dir);
	while ((de = readdir(dir)) && x->n < APX_SUMIDX_SCAN_MAX) {
		size_t len = strlen(de->d_name);
		struct stat st;

		if (len < 5 || strcmp(de->d_name + len - 4, ".apx") || de->d_name[0] == '.')
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		r = push(x, de->d_name, ts_ns(&st.st_mtim), (uint64_t)st.st_size);
		if (r < 0)
			break;
	}
	closedir(dir);
	if (x->n)
		qsort(x->v, x->n, sizeof(*x->v), cmp_entry);
	return r;
}

static struct apx_sumidx *slot(struct apx_daemon *d, uid_t uid, int *ret_new)
{
	struct apx_sumidx *lru = NULL;

	if (!d->sumidx) {
		d->sumidx = calloc(APX_SUMIDX_USERS, sizeof(*d->sumidx));
		if (!d->sumidx)
			return NULL;
	}
	for (size_t i = 0; i < APX_SUMIDX_USERS; i++) {
		struct apx_sumidx *x = &d->sumidx[i];

		if (x->used && x->uid == uid) {
			*ret_new = 0;
			return x;
		}
		if (!lru || !x->used || (lru->used && x->last_use < lru->last_use))
			lru = x;
	}
	idx_release(lru);
	lru->used = 1;
	lru->uid = uid;
	*ret_new = 1;
	return lru;
}

int apx_summary_index_begin(struct apx_daemon *d, uid_t uid, int dfd)
{
	struct apx_sumidx *x;
	struct stat st;
	int fresh, r;

	x = slot(d, uid, &fresh);
	if (!x)
		return -ENOMEM;
	x->last_use = ++d->sumidx_clock;
	if (fstat(dfd, &st) < 0)
		return -errno;
	if (!fresh && st.st_dev == x->dev && st.st_ino == x->ino &&
	    ts_ns(&st.st_mtim) == ts_ns(&x->mtime))
		return 0;
	d->st.summary_rescans++;
	r = scan(x, dfd);
	if (r < 0) {
		idx_release(x);
		return r;
	}
	x->dev = st.st_dev;
	x->ino = st.st_ino;
	x->mtime = st.st_mtim;
	return 0;
}

int apx_summary_index_commit(struct apx_daemon *d, uid_t uid, int dfd, const char *name,
			     uint64_t bytes, uint64_t mtime_ns, uint64_t *ret_removed)
{
	struct apx_sumidx *x = NULL;
	struct stat st;
	uint64_t removed = 0;
	size_t i = 0;
	int r;

	for (size_t k = 0; d->sumidx && k < APX_SUMIDX_USERS && !x; k++)
		if (d->sumidx[k].used && d->sumidx[k].uid == uid)
			x = &d->sumidx[k];
	if (!x)
		return -ENOENT;	/* begin failed: nothing pruned this time */
	r = push(x, name, mtime_ns, bytes);
	if (r < 0) {
		idx_release(x);
		return r;
	}
	/* the oldest first, never the newest (the one just written) */
	while (i + 1 < x->n && (x->n - i > d->conf.max_summaries ||
				x->total_bytes > d->conf.max_state_bytes)) {
		if (unlinkat(dfd, x->v[i].name, 0) == 0)
			removed++;
		x->total_bytes -= x->v[i].bytes;	/* gone either way (ENOENT: by its user) */
		i++;
	}
	if (i) {
		memmove(x->v, x->v + i, (x->n - i) * sizeof(*x->v));
		x->n -= i;
	}
	if (fstat(dfd, &st) == 0) {
		x->dev = st.st_dev;
		x->ino = st.st_ino;
		x->mtime = st.st_mtim;
	}
	*ret_removed = removed;
	return 0;
}
