/*
 * run_files.h - the files of one `apx analyze` run: FILE, written by the process it started,
 * and FILE.<pid>, written by the run's other processes, all with the run's id in their
 * header. Used by cmd_analyze.c (--force removes an earlier run's files) and cmd_report.c
 * (FILE brings its FILE.<pid> along).
 */
#ifndef APX_CLI_RUN_FILES_H
#define APX_CLI_RUN_FILES_H

#include <stddef.h>

#include <apx/format.h>

/* Whether name is "<base>.<digits>". */
int apx_run_is_child_name(const char *name, const char *base);
/* The run id in the header of the trace at path into buf ("" when it has none); -errno when
 * the file cannot be read as a trace (d says why: not a regular file, not an apx file...). */
int apx_run_id_of(const char *path, char *buf, size_t cap, struct apx_diag *d);

#endif
