/*
 * fmt.h - numbers for humans in reports and summaries: durations ("1.23 ms"), sizes
 * ("4.5 GB", decimal units) and rates ("12.3 GB/s"). Each writes into the caller's buffer and
 * returns it, so several can appear in one printf. Any thread.
 */
#ifndef APX_BASE_FMT_H
#define APX_BASE_FMT_H

#include <stddef.h>

const char *apx_fmt_ns(char *buf, size_t cap, double ns);
const char *apx_fmt_size(char *buf, size_t cap, double bytes);
/* bytes moved in ns, as GB/s; "n/a" when ns is 0 */
const char *apx_fmt_rate(char *buf, size_t cap, double bytes, double ns);

#endif
