/*
 * test-summary-index.c - unit test of nvperfd's summary folder index (lib/daemon/summary_index.c)
 * on scratch folders, without a daemon: the first write of a uid lists the folder, later ones
 * do not; a file added or removed by someone else makes the next write list it again; pruning
 * keeps max_summaries files and max_state_bytes bytes, oldest first, never the newest; a file
 * the index holds but its user deleted is dropped without error and not counted as removed;
 * dot files, symlinks, folders and non-.apx names are not summaries; more uids than the index
 * holds evict the least recently used (listed again at their next write); a folder stuffed
 * with files is listed a step a loop turn and pruned to the cap whole. Run by ctest
 * (label daemon).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/summary_index.h"

#include "apx-test.h"

#include "base/banned.h"

static struct apx_daemon d;	/* only conf, st and the index fields are used */
static char root[64];

/* a scratch folder for uid: fd, created empty */
static int folder(unsigned uid)
{
	char path[128];

	if (!root[0]) {
		snprintf(root, sizeof(root), "/tmp/apx-sumidx.XXXXXX");
		if (!mkdtemp(root))
			return -errno;
	}
	snprintf(path, sizeof(path), "%s/%u", root, uid);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* a file of bytes bytes, its mtime t seconds after 2000-01-01 */
static int put(int dfd, const char *name, size_t bytes, long t)
{
	struct timespec ts[2] = { { 946684800 + t, 0 }, { 946684800 + t, 0 } };
	char buf[4096] = { 0 };
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	while (bytes) {
		size_t n = bytes < sizeof(buf) ? bytes : sizeof(buf);

		if (write(fd, buf, n) != (ssize_t)n) {
			close(fd);
			return -EIO;
		}
		bytes -= n;
	}
	close(fd);
	return utimensat(dfd, name, ts, 0) < 0 ? -errno : 0;
}

static int exists(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* what nvperfd does for one summary: begin, write the file, commit */
static int write_one(unsigned uid, int dfd, const char *name, size_t bytes, long t,
		     uint64_t *ret_removed)
{
	int r = apx_summary_index_begin(&d, uid, dfd);

	if (r < 0)
		return r;
	r = put(dfd, name, bytes, t);
	if (r < 0)
		return r;
	return apx_summary_index_commit(&d, uid, dfd, name, bytes,
					(uint64_t)(946684800 + t) * 1000000000ull, ret_removed);
}

static void reset(uint64_t max, uint64_t max_bytes)
{
	apx_summary_index_forget(&d);
	free(d.sumidx);
	d.sumidx = NULL;
	memset(&d.st, 0, sizeof(d.st));
	d.conf.max_summaries = max;
	d.conf.max_state_bytes = max_bytes;
}

APX_TEST(listed_once_then_on_change)
{
	uint64_t removed = 0;
	int dfd = folder(1000);

	APX_ASSERT_OK(dfd);
	reset(3, 1u << 30);
	APX_ASSERT_OK(put(dfd, "a.apx", 10, 1));
	APX_ASSERT_OK(write_one(1000, dfd, "b.apx", 10, 2, &removed));
	APX_ASSERT_EQ(d.st.summary_rescans, 1);
	APX_ASSERT_OK(write_one(1000, dfd, "c.apx", 10, 3, &removed));
	APX_ASSERT_OK(write_one(1000, dfd, "d.apx", 10, 4, &removed));
	APX_ASSERT_EQ(d.st.summary_rescans, 1);		/* no listing for these */
	APX_ASSERT_EQ(removed, 1);
	APX_ASSERT(!exists(dfd, "a.apx") && exists(dfd, "b.apx") && exists(dfd, "d.apx"));
	/* someone else adds an older file: the folder is listed again and it goes first */
	usleep(20000);	/* a later mtime for the folder, whatever the clock's granularity */
	APX_ASSERT_OK(put(dfd, "0-old.apx", 10, 0));
	APX_ASSERT_OK(write_one(1000, dfd, "e.apx", 10, 5, &removed));
	APX_ASSERT_EQ(d.st.summary_rescans, 2);
	/* 0-old.apx (past the cap as the listing saw it) and b.apx (at the write) */
	APX_ASSERT_EQ(d.st.summaries_pruned, 1);
	APX_ASSERT_EQ(removed, 1);
	APX_ASSERT(!exists(dfd, "0-old.apx") && !exists(dfd, "b.apx"));
	APX_ASSERT(exists(dfd, "c.apx") && exists(dfd, "d.apx") && exists(dfd, "e.apx"));
	close(dfd);
	return 0;
}

APX_TEST(bytes_limit_never_the_newest)
{
	uint64_t removed = 0;
	int dfd = folder(1001);

	APX_ASSERT_OK(dfd);
	reset(100, 100000);
	APX_ASSERT_OK(write_one(1001, dfd, "a.apx", 40000, 1, &removed));
	APX_ASSERT_OK(write_one(1001, dfd, "b.apx", 40000, 2, &removed));
	APX_ASSERT_EQ(removed, 0);
	APX_ASSERT_OK(write_one(1001, dfd, "c.apx", 40000, 3, &removed));
	APX_ASSERT_EQ(removed, 1);			/* 120000 > 100000: a goes */
	APX_ASSERT(!exists(dfd, "a.apx") && exists(dfd, "b.apx"));
	/* one file over the limit by itself: the others go, it stays */
	APX_ASSERT_OK(write_one(1001, dfd, "big.apx", 200000, 4, &removed));
	APX_ASSERT_EQ(removed, 2);
	APX_ASSERT(exists(dfd, "big.apx") && !exists(dfd, "b.apx") && !exists(dfd, "c.apx"));
	close(dfd);
	return 0;
}

APX_TEST(user_deleted_and_not_summaries)
{
	uint64_t removed = 0;
	int dfd = folder(1002);

	APX_ASSERT_OK(dfd);
	reset(2, 1u << 30);
	APX_ASSERT_OK(put(dfd, ".5.part", 10, 0));		/* in progress */
	APX_ASSERT_OK(put(dfd, "notes.txt", 10, 0));
	APX_ASSERT(mkdirat(dfd, "dir.apx", 0700) == 0);
	APX_ASSERT(symlinkat("/etc/passwd", dfd, "link.apx") == 0);
	APX_ASSERT_OK(write_one(1002, dfd, "a.apx", 10, 1, &removed));
	APX_ASSERT_OK(write_one(1002, dfd, "b.apx", 10, 2, &removed));
	APX_ASSERT_EQ(removed, 0);	/* only a and b are summaries */
	/* its user deletes a and puts the folder's mtime back, so the index still holds a: its
	 * turn comes, it is dropped quietly, not counted, and b is kept (2 files after c) */
	{
		struct stat st;
		struct timespec ts[2];

		APX_ASSERT(fstat(dfd, &st) == 0);
		APX_ASSERT(unlinkat(dfd, "a.apx", 0) == 0);
		ts[0] = st.st_atim;
		ts[1] = st.st_mtim;
		APX_ASSERT(futimens(dfd, ts) == 0);
	}
	APX_ASSERT_OK(write_one(1002, dfd, "c.apx", 10, 3, &removed));
	APX_ASSERT_EQ(d.st.summary_rescans, 1);	/* the change was not seen: no listing */
	APX_ASSERT_EQ(removed, 0);
	APX_ASSERT(exists(dfd, "b.apx") && exists(dfd, "c.apx"));
	APX_ASSERT(exists(dfd, ".5.part") && exists(dfd, "notes.txt") && exists(dfd, "link.apx"));
	APX_ASSERT(exists(dfd, "dir.apx"));
	close(dfd);
	return 0;
}

APX_TEST(more_users_than_slots)
{
	uint64_t removed = 0;
	int fds[APX_SUMIDX_USERS + 1];

	reset(10, 1u << 30);
	for (unsigned i = 0; i <= APX_SUMIDX_USERS; i++) {
		fds[i] = folder(2000 + i);
		APX_ASSERT_OK(fds[i]);
		APX_ASSERT_OK(write_one(2000 + i, fds[i], "a.apx", 10, 1, &removed));
	}
	APX_ASSERT_EQ(d.st.summary_rescans, APX_SUMIDX_USERS + 1);
	/* uid 2000 was the least recently used: evicted, so listed again; the newest is not */
	APX_ASSERT_OK(write_one(2000 + APX_SUMIDX_USERS, fds[APX_SUMIDX_USERS], "b.apx", 10, 2,
				&removed));
	APX_ASSERT_EQ(d.st.summary_rescans, APX_SUMIDX_USERS + 1);
	APX_ASSERT_OK(write_one(2000, fds[0], "b.apx", 10, 2, &removed));
	APX_ASSERT_EQ(d.st.summary_rescans, APX_SUMIDX_USERS + 2);
	for (unsigned i = 0; i <= APX_SUMIDX_USERS; i++)
		close(fds[i]);
	/* a commit without a begin (the listing failed) prunes nothing and says so */
	APX_ASSERT(apx_summary_index_commit(&d, 9999, -1, "x.apx", 1, 1, &removed) == -ENOENT);
	reset(1, 1);
	return 0;
}

/* a folder its user stuffed with files is listed APX_SUMIDX_STEP entries a loop
 * turn, not at once; every file past max_summaries goes as it is seen (however many there
 * are), the newest stay; a summary written during the listing joins the index at its end */
APX_TEST(stuffed_folder_listed_in_steps)
{
	enum { FILES = 5 * APX_SUMIDX_STEP + 100 };
	uint64_t removed = 0;
	int dfd = folder(1003), turns = 0, left = 0;
	char name[32];

	APX_ASSERT_OK(dfd);
	reset(10, 1ull << 40);
	for (int i = 0; i < FILES; i++) {
		snprintf(name, sizeof(name), "f%05d.apx", i);
		APX_ASSERT_OK(put(dfd, name, 0, 10 + i));
	}
	APX_ASSERT_OK(apx_summary_index_begin(&d, 1003, dfd));
	APX_ASSERT(apx_summary_index_busy(&d));		/* not listed at once */
	APX_ASSERT_OK(put(dfd, "new.apx", 10, 100000));
	APX_ASSERT_OK(apx_summary_index_commit(&d, 1003, dfd, "new.apx", 10,
					       (uint64_t)(946684800 + 100000) * 1000000000ull,
					       &removed));
	APX_ASSERT_EQ(removed, 0);			/* waits for the listing */
	while (apx_summary_index_step(&d))
		turns++;
	APX_ASSERT(turns >= 4 && turns <= 6);
	APX_ASSERT_EQ(d.st.summary_rescans, 1);
	/* the 10 newest are left: new.apx and the 9 newest planted ones */
	for (int i = 0; i < FILES; i++) {
		snprintf(name, sizeof(name), "f%05d.apx", i);
		left += exists(dfd, name);
		APX_ASSERT(exists(dfd, name) == (i >= FILES - 9));
	}
	APX_ASSERT_EQ(left, 9);
	APX_ASSERT(exists(dfd, "new.apx"));
	APX_ASSERT_EQ(d.st.summaries_pruned, FILES - 9);
	/* the index is current: the next write lists nothing, prunes the oldest one */
	APX_ASSERT_OK(write_one(1003, dfd, "newer.apx", 10, 100001, &removed));
	APX_ASSERT_EQ(d.st.summary_rescans, 1);
	APX_ASSERT_EQ(removed, 1);
	APX_ASSERT(!exists(dfd, "f05211.apx") && exists(dfd, "f05212.apx") && exists(dfd, "newer.apx"));
	close(dfd);
	return 0;
}

APX_TEST(cleanup)
{
	char cmd[128];

	if (root[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		APX_ASSERT(system(cmd) == 0);
	}
	return 0;
}

APX_TEST_MAIN()
