/*
 * progress.h - one progress line on stderr for long work (apx report, export, diff): what is
 * being done, updated at most four times a second, erased ("\r\033[K") when it ends so nothing
 * is left on the terminal. Only when stderr is a terminal; APX_PROGRESS=1 forces it on (tests:
 * it then also draws at once at every step), APX_PROGRESS=0 turns it off. Nothing at all
 * otherwise: pipes and files get the same bytes as before.
 *
 * The line is drawn from a SIGALRM handler (setitimer, 250 ms; SA_RESTART), with write(2) of
 * text formatted there without stdio, from counters the reading loops already keep (the
 * model's per-file record counts, apx export's store hook): the hot loops pay nothing, not
 * even a clock read. Names (file names) are escaped for the terminal (termsafe.h) when a step
 * starts, never in the handler. A caller that prints to stderr calls apx_progress_stop() first;
 * the next step starts the line again. Main thread only.
 */
#ifndef APX_CLI_PROGRESS_H
#define APX_CLI_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

struct apx_reader;

/* Whether a progress line is wanted for cmd ("report"): APX_PROGRESS, else stderr a terminal.
 * Nothing else here does anything when this said no. */
int apx_progress_init(const char *cmd);

/* A step without a count: "apx CMD: WHAT NAME" (name escaped; NULL = none). */
void apx_progress_step(const char *what, const char *name);

/* Reading n traces: file k is names[k], its records counted in *done[k] as they are read (the
 * reader's chunk table gives how many there are, its size the bytes shown: "reading NAME 412 MB
 * of 2.1 GB (19 %)"). After the last record the line says `after` ("analysing"). The counters
 * must outlive the step. n larger than the model's 256 files: only the first are followed. */
void apx_progress_reading(size_t n, const char *const *names, struct apx_reader *const *rds,
			  const uint64_t *const *done, const char *after);

/* Writing path (a temporary name), shown as name, about est bytes when it is done (0: not
 * known): "writing NAME 120 MB of about 400 MB (30 %)". */
void apx_progress_writing(const char *path, const char *name, uint64_t est);

/* Erase the line (if drawn) and stop the timer. Safe to call when off or already stopped. */
void apx_progress_stop(void);

#endif
