/*
 * log.h - diagnostics for the top layers (cli/, daemon main, collector inject.c). Libraries
 * never call these above debug level: they return -errno and fill a struct apx_diag.
 * Messages go to stderr as "PROG: message"; apx_log_errno appends strerror.
 */
#ifndef APX_BASE_LOG_H
#define APX_BASE_LOG_H

void apx_log_set_prog(const char *prog);
void apx_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void apx_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Log "PROG: message: strerror(-err)" and return err (negative errno). */
int apx_log_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
