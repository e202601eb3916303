/*
 * run_files.h - the files of one `apx analyze` run: FILE, written by the process it started,
 * and FILE.<pid>, written by the run's other processes, all with the run's id in their
 * header. Used by cmd_analyze.c (--force removes an earlier run's files), cmd_report.c and
 * cmd_export.c (FILE brings its FILE.<pid> along; a file named twice is read once).
 */
#ifndef APX_CLI_RUN_FILES_H
#define APX_CLI_RUN_FILES_H

#include <stddef.h>
#include <sys/types.h>

#include <apx/format.h>

/* Whether name is "<base>.<digits>". */
int apx_run_is_child_name(const char *name, const char *base);
/* The run id in the header of the trace at path into buf ("" when it has none); -errno when
 * the file cannot be read as a trace (d says why: not a regular file, not an apx file...). */
int apx_run_id_of(const char *path, char *buf, size_t cap, struct apx_diag *d);

/* The files already taken, by identity (st_dev, st_ino): naming a run's FILE.<pid> beside FILE
 * (as a shell glob does) must not count it twice. */
#define APX_RUN_SEEN_MAX 4096
struct apx_run_seen {
	dev_t dev[APX_RUN_SEEN_MAX];
	ino_t ino[APX_RUN_SEEN_MAX];
	size_t n;
};
/* 1 when path is a file taken before (nothing is added), else 0 (and it is noted). */
int apx_run_seen_before(struct apx_run_seen *s, const char *path);

/* When path itself does not exist (under torchrun the launcher uses no GPU, and writes no FILE:
 * only its ranks write FILE.rank<R>.<pid>): the run id of the newest (by modification time) of
 * the traces named FILE.<pid> or FILE.rank<R>.<pid> beside it, into run_id; returns how many of
 * them have that run id (0: none), and in *ret_others how many are of other runs. */
size_t apx_run_without_file(const char *path, char *run_id, size_t cap, size_t *ret_others);

/* Call fn(full path, ctx) for every FILE.<pid> beside path whose header has run id run_id,
 * and err(full path, why, ctx) for one named like it that is not a readable trace (a FIFO,
 * ...). Stops when fn returns nonzero. */
void apx_run_children(const char *path, const char *run_id,
		      int (*fn)(const char *full, void *ctx),
		      void (*err)(const char *full, const char *why, void *ctx), void *ctx);

#endif
