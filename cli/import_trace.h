/*
 * import_trace.h - apx report's and apx export's one way to open a named file: an .apx trace
 * as it is, a torch.profiler (Kineto) JSON trace converted first (lib/import/kineto.h).
 */
#ifndef APX_CLI_IMPORT_TRACE_H
#define APX_CLI_IMPORT_TRACE_H

#include "analysis/model.h"

/* A reader of path, or of the .apx conversion of path when it is Kineto JSON (an anonymous
 * memory file the reader keeps). 0 or negative errno, d->msg saying why. */
int apx_cli_open_trace(const char *path, struct apx_reader **ret, struct apx_diag *d);

/* apx_model_add_file() for path, or for the .apx conversion of path when it is Kineto JSON
 * (the model's file keeps the name path). 0 or negative errno, d->msg saying why. */
int apx_cli_add_trace(struct apx_model *m, const char *path, struct apx_diag *d);

#endif /* APX_CLI_IMPORT_TRACE_H */
