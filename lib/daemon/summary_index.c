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
 *
 * Listing is incremental: a folder its user stuffed with 65,536 files took 0.64 s to
 * list, on the loop every user's events wait on. A listing reads at most APX_SUMIDX_STEP
 * entries a loop turn (apx_summary_index_step), keeping only the newest max_summaries files
 * (a min-heap by age): an older one is removed as soon as it is seen, so every file past the
 * cap goes, however many there are, and memory stays at max_summaries entries. A pass that
 * removed files is followed by another (reading a folder while it changes may skip entries),
 * until one removes nothing. Summaries written meanwhile wait in a short list and join the
 * index when the listing ends; then the bytes limit is applied.
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

#define PENDING_MAX 32		/* summaries written while the folder is being listed */

struct apx_sumidx {
	int used;
	uid_t uid;
	uint64_t last_use;		/* LRU among APX_SUMIDX_USERS */
	dev_t dev;			/* the folder as nvperfd left it */
	ino_t ino;
	struct timespec mtime;
	struct sum_entry *v;		/* oldest first; while listing: a min-heap by age */
	size_t n, cap;
	uint64_t total_bytes;
	DIR *scan;			/* a listing in progress (its own fd of the folder) */
	int restale;			/* pending overflowed: list again at the next write */
	uint64_t pass_removed;		/* files this pass of the listing removed */
	struct sum_entry pending[PENDING_MAX];
	size_t npending;
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
	if (x->scan)
		closedir(x->scan);
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

/* ---- the min-heap of the newest files while listing (v[0]: the oldest kept) ---------------- */

static void heap_swap(struct sum_entry *a, struct sum_entry *b)
{
	struct sum_entry t = *a;

	*a = *b;
	*b = t;
}

static void heap_down(struct apx_sumidx *x, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < x->n && cmp_entry(&x->v[l], &x->v[m]) < 0)
			m = l;
		if (r < x->n && cmp_entry(&x->v[r], &x->v[m]) < 0)
			m = r;
		if (m == i)
			return;
		heap_swap(&x->v[i], &x->v[m]);
		i = m;
	}
}

static void heap_up(struct apx_sumidx *x, size_t i)
{
	while (i && cmp_entry(&x->v[i], &x->v[(i - 1) / 2]) < 0) {
		heap_swap(&x->v[i], &x->v[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
}

/* A file the listing found: kept among the newest max_summaries, else (it, or the oldest kept)
 * removed now. 0 or -ENOMEM. */
static int heap_offer(struct apx_daemon *d, struct apx_sumidx *x, const struct sum_entry *e)
{
	int dfd = dirfd(x->scan);
	int r;

	if (x->n < d->conf.max_summaries) {
		r = push(x, e->name, e->mtime_ns, e->bytes);
		if (r == 0)
			heap_up(x, x->n - 1);
		return r;
	}
	if (x->n && cmp_entry(e, &x->v[0]) > 0) {	/* newer than the oldest kept: that goes */
		if (unlinkat(dfd, x->v[0].name, 0) == 0) {
			d->st.summaries_pruned++;
			x->pass_removed++;
		}
		x->total_bytes -= x->v[0].bytes;
		x->total_bytes += e->bytes;
		x->v[0] = *e;
		heap_down(x, 0);
	} else if (unlinkat(dfd, e->name, 0) == 0) {
		d->st.summaries_pruned++;
		x->pass_removed++;
	}
	return 0;
}

static int is_pending(const struct apx_sumidx *x, const char *name)
{
	for (size_t i = 0; i < x->npending; i++)
		if (!strcmp(x->pending[i].name, name))
			return 1;
	return 0;
}

/* The oldest files past the limits removed (never the last one, the newest write). */
static uint64_t prune(struct apx_daemon *d, struct apx_sumidx *x, int dfd)
{
	uint64_t removed = 0;
	size_t i = 0;

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
	return removed;
}

static void remember(struct apx_sumidx *x, int dfd)
{
	struct stat st;

	if (x->restale) {	/* writes went unindexed: list again next time */
		memset(&x->mtime, 0, sizeof(x->mtime));
		x->restale = 0;
		return;
	}
	if (fstat(dfd, &st) == 0) {
		x->dev = st.st_dev;
		x->ino = st.st_ino;
		x->mtime = st.st_mtim;
	}
}

/* Up to budget entries of the listing in progress: its regular *.apx files (not dot files:
 * the .PID.part in progress). At its end the index is sorted, the summaries written meanwhile
 * join it, the limits are applied and the folder's state remembered. 1 when it ended, 0 when
 * more is left, -errno (the index is dropped). */
static int scan_step(struct apx_daemon *d, struct apx_sumidx *x, size_t budget)
{
	int dfd = dirfd(x->scan);
	struct dirent *de = NULL;
	int r = 0;

	for (;;) {
		while (budget) {
			struct sum_entry e;
			struct stat st;
			size_t len;

			budget--;
			de = readdir(x->scan);
			if (!de)
				break;
			len = strlen(de->d_name);
			if (len < 5 || len >= sizeof(e.name) || strcmp(de->d_name + len - 4, ".apx") ||
			    de->d_name[0] == '.' || is_pending(x, de->d_name))
				continue;
			if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode))
				continue;
			memcpy(e.name, de->d_name, len + 1);
			e.mtime_ns = ts_ns(&st.st_mtim);
			e.bytes = (uint64_t)st.st_size;
			r = heap_offer(d, x, &e);
			if (r < 0)
				return r;
		}
		if (de || !budget)
			return 0;	/* the budget ran out: the next loop turn goes on */
		if (x->pass_removed) {
			/* a folder changed while it is read may have entries the reading
			 * skipped (seen on tmpfs: 1,737 of 70,000 left): read it again until
			 * a pass removes nothing */
			x->pass_removed = 0;
			x->n = 0;
			x->total_bytes = 0;
			rewinddir(x->scan);
			continue;
		}
		break;
	}
	if (x->n)
		qsort(x->v, x->n, sizeof(*x->v), cmp_entry);
	for (size_t i = 0; i < x->npending && r == 0; i++)
		r = push(x, x->pending[i].name, x->pending[i].mtime_ns, x->pending[i].bytes);
	x->npending = 0;
	if (r < 0)
		return r;
	d->st.summaries_pruned += prune(d, x, dfd);
	remember(x, dfd);
	closedir(x->scan);
	x->scan = NULL;
	return 1;
}

/* Start listing the folder dfd into x (the listing has its own fd). 0 or -errno. */
static int scan_start(struct apx_sumidx *x, int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (x->scan)
		closedir(x->scan);
	x->scan = NULL;
	x->n = 0;
	x->total_bytes = 0;
	x->npending = 0;
	x->pass_removed = 0;
	if (fd < 0)
		return -errno;
	x->scan = fdopendir(fd);
	if (!x->scan) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
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
	if (x->scan)
		return 0;	/* being listed: this write joins it at its end */
	d->st.summary_rescans++;
	r = scan_start(x, dfd);
	if (r == 0)
		r = scan_step(d, x, APX_SUMIDX_STEP);	/* a small folder: listed at once */
	if (r < 0) {
		idx_release(x);
		return r;
	}
	return 0;
}

int apx_summary_index_busy(const struct apx_daemon *d)
{
	for (size_t i = 0; d->sumidx && i < APX_SUMIDX_USERS; i++)
		if (d->sumidx[i].used && d->sumidx[i].scan)
			return 1;
	return 0;
}

int apx_summary_index_step(struct apx_daemon *d)
{
	size_t budget = APX_SUMIDX_STEP;

	for (size_t i = 0; d->sumidx && i < APX_SUMIDX_USERS && budget; i++) {
		struct apx_sumidx *x = &d->sumidx[i];

		if (!x->used || !x->scan)
			continue;
		if (scan_step(d, x, budget) < 0)
			idx_release(x);
		budget = 0;	/* one folder a turn */
	}
	return apx_summary_index_busy(d);
}

int apx_summary_index_commit(struct apx_daemon *d, uid_t uid, int dfd, const char *name,
			     uint64_t bytes, uint64_t mtime_ns, uint64_t *ret_removed)
{
	struct apx_sumidx *x = NULL;
	uint64_t removed = 0;
	int r;

	for (size_t k = 0; d->sumidx && k < APX_SUMIDX_USERS && !x; k++)
		if (d->sumidx[k].used && d->sumidx[k].uid == uid)
			x = &d->sumidx[k];
	if (!x)
		return -ENOENT;	/* begin failed: nothing pruned this time */
	if (x->scan) {		/* being listed: joins the index when the listing ends */
		size_t len = strlen(name);

		if (x->npending < PENDING_MAX && len < sizeof(x->pending[0].name)) {
			struct sum_entry *e = &x->pending[x->npending++];

			memcpy(e->name, name, len + 1);
			e->mtime_ns = mtime_ns;
			e->bytes = bytes;
		} else {
			x->restale = 1;
		}
		*ret_removed = 0;
		return 0;
	}
	r = push(x, name, mtime_ns, bytes);
	if (r < 0) {
		idx_release(x);
		return r;
	}
	/* the oldest first, never the newest (the one just written) */
	removed = prune(d, x, dfd);
	remember(x, dfd);
	*ret_removed = removed;
	return 0;
}
