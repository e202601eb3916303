/*
 * sqlite.h - what the SQLite exporter (sqlite.c) shares with its two helpers: the schema it
 * creates (sqlite_schema.c: tables in the shape `nsys export --type sqlite` writes, apx's own
 * tables, the enum lookup tables, the indices; docs/export.md shows the same text) and the
 * kernel base names of the shortName column (kname.c). Internal to lib/export.
 */
#ifndef APX_EXPORT_SQLITE_H
#define APX_EXPORT_SQLITE_H

#include <stddef.h>

/* CREATE TABLE statements, in the order they are run; NULL-terminated. */
extern const char *const apx_sq_tables[];
/* INSERT statements that fill the ENUM_* lookup tables; NULL-terminated. */
extern const char *const apx_sq_enums[];
/* CREATE INDEX statements, run after the rows are in; NULL-terminated. */
extern const char *const apx_sq_indices[];

/* nsys's ids for apx's enums (ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND). */
unsigned apx_sq_copy_kind(unsigned apx_copy_kind);
unsigned apx_sq_mem_kind(unsigned apx_mem_kind);

/* The base name of a (demangled) kernel name, as nsys's shortName: no return type, scope,
 * template arguments or parameters ("void at::native::reduce_kernel<512, 1>(...)" ->
 * "reduce_kernel"). A name that is not C++ comes back whole. */
const char *apx_sq_short_name(const char *name, char *buf, size_t cap);

#endif
