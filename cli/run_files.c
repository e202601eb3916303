/*
 * run_files.c - naming and identifying the files of one apx analyze run (see run_files.h).
 * Called by cmd_analyze.c, cmd_report.c and cmd_export.c.
 */
#include "cli/run_files.h"

#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/banned.h"

int apx_run_is_child_name(const char *name, const char *base)
{
	size_t n = strlen(base);
	const char *p = name + n + 1;

	size_t k;

	if (strncmp(name, base, n) || name[n] != '.' || !*p)
		return 0;
	if (!strncmp(p, "rank", 4)) {	/* FILE.rank<R>.<pid>: a distributed rank's process */
		k = strspn(p + 4, "0123456789");
		if (!k || p[4 + k] != '.' || !p[5 + k])
			return 0;
		p += 5 + k;
	}
	return strspn(p, "0123456789") == strlen(p);
}

int apx_run_id_of(const char *path, char *buf, size_t cap, struct apx_diag *d)
{
	struct apx_reader *r;
	const struct apx_rec *h;
	int k;

	buf[0] = 0;
	k = apx_reader_open(path, &r, d);
	if (k < 0)
		return k;
	h = apx_reader_header(r);
	if (h->bytes[APX_HEADER_RUN_ID])
		snprintf(buf, cap, "%.*s", (int)h->v[APX_HEADER_RUN_ID],
			 (const char *)h->bytes[APX_HEADER_RUN_ID]);
	apx_reader_close(r);
	return 0;
}

int apx_run_seen_before(struct apx_run_seen *s, const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return 0;	/* opening it says why */
	for (size_t i = 0; i < s->n; i++)
		if (s->dev[i] == st.st_dev && s->ino[i] == st.st_ino)
			return 1;
	if (s->n < APX_RUN_SEEN_MAX) {
		s->dev[s->n] = st.st_dev;
		s->ino[s->n++] = st.st_ino;
	}
	return 0;
}

size_t apx_run_without_file(const char *path, char *run_id, size_t cap, size_t *ret_others)
{
	char dirbuf[4096], basebuf[4096], got[128], full[8192];
	const char *dir, *base;
	struct timespec newest = { 0, 0 };
	struct dirent *e;
	size_t all = 0, mine = 0;
	DIR *d;

	run_id[0] = 0;
	*ret_others = 0;
	snprintf(dirbuf, sizeof(dirbuf), "%s", path);
	snprintf(basebuf, sizeof(basebuf), "%s", path);
	dir = dirname(dirbuf);
	base = basename(basebuf);
	if (!(d = opendir(dir)))
		return 0;
	while ((e = readdir(d))) {	/* the newest trace's run */
		struct stat st;

		if (!apx_run_is_child_name(e->d_name, base))
			continue;
		snprintf(full, sizeof(full), "%s/%s", dir, e->d_name);
		if (stat(full, &st) < 0 || !S_ISREG(st.st_mode) ||
		    apx_run_id_of(full, got, sizeof(got), NULL) < 0 || !got[0])
			continue;
		all++;
		if (st.st_mtim.tv_sec > newest.tv_sec ||
		    (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec > newest.tv_nsec)) {
			newest = st.st_mtim;
			snprintf(run_id, cap, "%s", got);
		}
	}
	rewinddir(d);
	while (run_id[0] && (e = readdir(d))) {	/* its files */
		if (!apx_run_is_child_name(e->d_name, base))
			continue;
		snprintf(full, sizeof(full), "%s/%s", dir, e->d_name);
		if (apx_run_id_of(full, got, sizeof(got), NULL) == 0 && !strcmp(got, run_id))
			mine++;
	}
	closedir(d);
	*ret_others = all - (mine < all ? mine : all);
	return mine;
}

void apx_run_children(const char *path, const char *run_id,
		      int (*fn)(const char *full, void *ctx),
		      void (*err)(const char *full, const char *why, void *ctx), void *ctx)
{
	char dirbuf[4096], basebuf[4096], got[128], full[8192];
	const char *dir, *base;
	struct dirent *e;
	DIR *d;

	snprintf(dirbuf, sizeof(dirbuf), "%s", path);
	snprintf(basebuf, sizeof(basebuf), "%s", path);
	dir = dirname(dirbuf);
	base = basename(basebuf);
	if (!run_id[0] || !(d = opendir(dir)))
		return;
	while ((e = readdir(d))) {
		struct apx_diag dg = { 0 };

		if (!apx_run_is_child_name(e->d_name, base))
			continue;
		snprintf(full, sizeof(full), "%s/%s", dir, e->d_name);
		if (apx_run_id_of(full, got, sizeof(got), &dg) < 0) {
			if (err)	/* named like one of the run's files, but not a trace */
				err(full, dg.msg, ctx);
			continue;
		}
		if (!strcmp(got, run_id) && fn(full, ctx))
			break;
	}
	closedir(d);
}
