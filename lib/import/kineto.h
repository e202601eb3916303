/*
 * kineto.h - reads a torch.profiler (Kineto) JSON trace (.json, or .json.gz when built with
 * zlib) and writes the same events as an .apx trace, so that apx report explains it with its
 * normal model and rules (docs/report.md, "Kineto JSON traces"). What the JSON cannot say
 * (host addresses of copies, unified memory, ...) is written as `degraded` key/values, which
 * the report prints. Called by cli/import_trace.c; nothing here logs.
 */
#ifndef APX_IMPORT_KINETO_H
#define APX_IMPORT_KINETO_H

#include <stddef.h>

#include <apx/format.h>

#define APX_KINETO_INPUT_MAX (2ull << 30)	/* JSON bytes (after gunzip) read at most */

/* 1 when path is to be read as Kineto JSON: its name ends in .json or .json.gz, or it is a
 * regular file whose first byte (after white space) is '{' or that starts with the gzip
 * magic; else 0. Never blocks (a FIFO is not opened for reading). */
int apx_kineto_detect(const char *path);

/* Convert the trace at path into an .apx trace written on fd (which it takes and closes).
 * 0, or negative errno with diag->msg saying what and where ("line L, column C (byte O):
 * ..."; for a .json.gz the place is in the decompressed text). */
int apx_kineto_import(const char *path, int fd, struct apx_diag *diag);
/* The same over JSON text in memory (tests, the fuzzer). */
int apx_kineto_import_mem(const char *json, size_t len, int fd, struct apx_diag *diag);

#endif /* APX_IMPORT_KINETO_H */
