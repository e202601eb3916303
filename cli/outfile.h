/*
 * outfile.h - outputs that never destroy: where `apx report -o PATH` and `apx export
 * -o PATH` write, and stdout of every apx command. Used by cmd_report.c, cmd_export.c and
 * main.c (stdout); the rules are the ones docs/man/apx.1 ("OUTPUT FILES") states:
 *
 *   - "-" is stdout;
 *   - a character device or a FIFO (/dev/null, a named pipe) is opened and written into as a
 *     stream, never replaced;
 *   - a new name is created, and an existing regular file is replaced only with --force, never
 *     when it is one of the command's own inputs (same st_dev and st_ino), --force or not;
 *   - a symbolic link, a folder, a block device or a socket is refused (links are not followed:
 *     name the file itself);
 *   - a regular file is written under a temporary name beside it (same folder, so the same
 *     file system) and renamed over PATH at the end, so a failed write (a full disk) leaves the
 *     old file as it was and no temporary file behind;
 *   - every write is checked and a failure is said with the real errno ("No space left on
 *     device"), once.
 *
 * Only cli/ logs (STYLE.md 8.4): these functions say what went wrong themselves, as
 * "apx CMD: ...", and return negative errno.
 */
#ifndef APX_CLI_OUTFILE_H
#define APX_CLI_OUTFILE_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

enum apx_outfile_kind {
	APX_OUTFILE_STDOUT,	/* "-" (or no -o) */
	APX_OUTFILE_STREAM,	/* a character device or a FIFO: opened by init, written into */
	APX_OUTFILE_FILE,	/* a regular file: temporary name beside it, renamed at the end */
	APX_OUTFILE__COUNT
};

/* A file descriptor under a stdio stream that remembers the first write error (errno). */
struct apx_outfile_fd {
	int fd;
	int err;		/* errno of the first failed write, 0 if none */
};

struct apx_outfile {
	const char *cmd;		/* "report", "export": messages say "apx CMD: ..." */
	const char *path;		/* as given (borrowed) */
	char safe[PATH_MAX];		/* path escaped for the terminal (base/termsafe.h) */
	enum apx_outfile_kind kind;
	int exists;			/* FILE: a regular file is there now (--force given) */
	dev_t dev;			/* FILE or STREAM that exists: its identity */
	ino_t ino;
	int fd;				/* STREAM: opened by init; -1 */
	char tmp[PATH_MAX + 64];	/* FILE: the temporary name being written; "" */
	char stage_dir[PATH_MAX];	/* STREAM, STDOUT staged: mkdtemp folder; "" */
	char staged[PATH_MAX + 64];	/* the name apx_outfile_stage() handed out; "" */
	FILE *f;			/* apx_outfile_open()'s stream (not stdout) */
	struct apx_outfile_fd w;	/* under f */
	unsigned long long bytes;	/* bytes written into a stream by commit (staged) */
};

/* Decide how path (NULL or "-": stdout) is written, and refuse what must not be: an existing
 * regular file without force (-EEXIST), a link, a folder, a block device, a socket, a missing
 * or unwritable folder. A character device or FIFO is opened now (a FIFO waits for its reader,
 * as a shell's redirection does). Says why on failure: -EEXIST is a usage error (exit 2),
 * anything else a runtime error (exit 1). */
int apx_outfile_init(struct apx_outfile *o, const char *cmd, const char *path, int force);

/* -EINVAL (said) when input is the file o would replace or write into: same st_dev and
 * st_ino, whatever its name (a hard or symbolic link to it too). 0 otherwise (input missing
 * included: reading it says why). */
int apx_outfile_check_input(struct apx_outfile *o, const char *input);

/* The stream to write to: stdout itself (STDOUT), the device or FIFO, or a new temporary file
 * beside PATH. NULL when the temporary file cannot be made (said). */
FILE *apx_outfile_open(struct apx_outfile *o);

/* For writers that want a file name and create it themselves (the exporters: O_EXCL): a name
 * that does not exist yet, beside PATH (FILE) or in a private folder under $TMPDIR (STREAM,
 * STDOUT: commit copies it into the stream). 0, or -errno (said). */
int apx_outfile_stage(struct apx_outfile *o, char *ret_path, size_t cap);

/* Finish: flush and close what was written, check every write; FILE: rename the temporary
 * file over PATH; STREAM, STDOUT: copy a staged file into it. On any failure (said, with the
 * real errno) the old PATH is as it was and no temporary file is left. 0 or -errno. */
int apx_outfile_commit(struct apx_outfile *o);

/* The writer failed with r (negative errno; its message not said yet): says "cannot write
 * PATH: " with the real error of a failed write if there was one, else strerror(-r), and
 * aborts. Returns the negative errno said. */
int apx_outfile_fail(struct apx_outfile *o, int r);

/* Give up: close, remove the temporary and staged files. Nothing is said. Safe to call twice
 * and after commit. */
void apx_outfile_abort(struct apx_outfile *o);

/* ---- stdout of every command (main.c) --------------------------------------------------- */

/* Put stdout on fd 1 through a stream that remembers the first failed write's errno (stdio
 * forgets it). main.c, before the command runs. */
void apx_stdout_init(void);

/* Flush stdout; when a write to it failed, say "apx CMD: cannot write to stdout: ERROR" (the
 * first time only) and return its -errno; else 0. */
int apx_stdout_check(const char *cmd);

#endif
