/*
 * outfile.c - outputs that never destroy (outfile.h): the checks before `apx report
 * -o` and `apx export -o` write, the temporary file beside a regular target renamed over it at
 * the end, streams into character devices and FIFOs, and stdout through a stream that keeps
 * the errno of its first failed write. Called from cmd_report.c, cmd_export.c and main.c, on
 * the main thread only.
 */
#include "cli/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/termsafe.h"

#include "base/banned.h"

/* ---- a file descriptor under stdio that remembers its first error ----------------------- */

static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t k = write(fd, buf, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

/* fopencookie's write: all of buf or 0 (an error; errno kept in the cookie). Once a write has
 * failed every later one fails too: the output never gets a hole in the middle. */
static ssize_t fd_write(void *cookie, const char *buf, size_t n)
{
	struct apx_outfile_fd *w = cookie;
	int r;

	if (w->err) {
		errno = w->err;
		return 0;
	}
	r = write_all(w->fd, buf, n);
	if (r < 0) {
		w->err = -r;
		errno = -r;
		return 0;
	}
	return (ssize_t)n;
}

static int fd_close(void *cookie)
{
	struct apx_outfile_fd *w = cookie;

	if (w->fd > STDERR_FILENO && close(w->fd) < 0 && errno != EINTR && !w->err)
		w->err = errno;
	w->fd = -1;
	if (w->err) {
		errno = w->err;
		return -1;
	}
	return 0;
}

static FILE *fd_stream(struct apx_outfile_fd *w)
{
	static const cookie_io_functions_t io = { .write = fd_write, .close = fd_close };

	return fopencookie(w, "w", io);
}

/* ---- stdout -------------------------------------------------------------------------------- */

/* stdout's cookie and whether its error was said: written by main.c's thread only (apx is
 * single-threaded where it writes stdout), read by apx_stdout_check(). */
static struct apx_outfile_fd g_stdout = { STDOUT_FILENO, 0 };
static int g_stdout_said;

static int stdout_close(void *cookie)
{
	(void)cookie;	/* fd 1 stays open */
	return 0;
}

void apx_stdout_init(void)
{
	static const cookie_io_functions_t io = { .write = fd_write, .close = stdout_close };
	FILE *f = fopencookie(&g_stdout, "w", io);

	if (!f)
		return;	/* ENOMEM: plain stdout; a failed write is then said as EIO */
	fflush(stdout);
	setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
	stdout = f;	/* glibc's stdout is a variable meant to be assignable */
}

int apx_stdout_check(const char *cmd)
{
	if (fflush(stdout) != 0 && !g_stdout.err)
		g_stdout.err = errno ? errno : EIO;
	if (!g_stdout.err && ferror(stdout))
		g_stdout.err = EIO;
	if (!g_stdout.err)
		return 0;
	if (!g_stdout_said) {
		g_stdout_said = 1;
		fprintf(stderr, "apx%s%s: cannot write to stdout: %s\n", cmd && *cmd ? " " : "",
			cmd ? cmd : "", strerror(g_stdout.err));
	}
	return -g_stdout.err;
}

/* ---- the output file ------------------------------------------------------------------- */

static int say(const struct apx_outfile *o, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int say(const struct apx_outfile *o, int r, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "apx %s: ", o->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return r;
}

static const char *kind_name(mode_t m)
{
	if (S_ISBLK(m))
		return "block device";
	if (S_ISSOCK(m))
		return "socket";
	return "special file";
}

/* The folder of o->path into buf ("." when it has none). */
static void dir_of(const char *path, char *buf, size_t cap)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(buf, cap, ".");
	else if (slash == path)
		snprintf(buf, cap, "/");
	else
		snprintf(buf, cap, "%.*s", (int)(slash - path), path);
}

/* A new regular file goes into its folder: it must exist and be writable. */
static int check_dir(struct apx_outfile *o)
{
	char dir[PATH_MAX];
	struct stat st;

	dir_of(o->path, dir, sizeof(dir));
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return say(o, -ENOENT, "cannot write '%s': its folder does not exist", o->safe);
	if (access(dir, W_OK | X_OK) < 0)
		return say(o, -errno, "cannot write '%s': %s", o->safe, strerror(errno));
	return 0;
}

int apx_outfile_init(struct apx_outfile *o, const char *cmd, const char *path, int force)
{
	struct stat st;

	memset(o, 0, sizeof(*o));
	o->cmd = cmd;
	o->fd = -1;
	o->w.fd = -1;
	if (!path || !strcmp(path, "-")) {
		o->kind = APX_OUTFILE_STDOUT;
		o->path = "-";
		snprintf(o->safe, sizeof(o->safe), "stdout");
		return 0;
	}
	o->path = path;
	apx_term_safe_str(o->safe, sizeof(o->safe), path);	/* names reach stderr escaped */
	if (!*path)
		return say(o, -EINVAL, "-o needs a file name");
	if (path[strlen(path) - 1] == '/')
		return say(o, -EISDIR, "-o '%s' names a folder: give a file name", o->safe);
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return say(o, -errno, "cannot write '%s': %s", o->safe, strerror(errno));
		o->kind = APX_OUTFILE_FILE;
		return check_dir(o);
	}
	if (S_ISLNK(st.st_mode))
		return say(o, -ELOOP, "'%s' is a symbolic link: apx does not write through links "
			   "(name the file itself, or remove the link)", o->safe);
	if (S_ISDIR(st.st_mode))
		return say(o, -EISDIR, "-o '%s' is a folder: give a file name", o->safe);
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
		struct stat now;

		/* written into, never replaced; a FIFO waits here for its reader */
		o->fd = open(path, O_WRONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
		if (o->fd < 0)
			return say(o, -errno, "cannot write '%s': %s", o->safe, strerror(errno));
		if (fstat(o->fd, &now) < 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
			close(o->fd);
			o->fd = -1;
			return say(o, -EAGAIN, "'%s' changed while it was opened; not written",
				   o->safe);
		}
		o->kind = APX_OUTFILE_STREAM;
		o->dev = st.st_dev;
		o->ino = st.st_ino;
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return say(o, -EINVAL, "'%s' is a %s: apx writes regular files, character devices "
			   "and FIFOs only", o->safe, kind_name(st.st_mode));
	if (!force)
		return say(o, -EEXIST, "'%s' exists; pass --force to replace it, or -o FILE",
			   o->safe);
	o->kind = APX_OUTFILE_FILE;
	o->exists = 1;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	return check_dir(o);
}

int apx_outfile_check_input(struct apx_outfile *o, const char *input)
{
	char name[PATH_MAX];
	struct stat st;

	if (o->kind == APX_OUTFILE_STDOUT || (o->kind == APX_OUTFILE_FILE && !o->exists))
		return 0;
	if (stat(input, &st) < 0 || st.st_dev != o->dev || st.st_ino != o->ino)
		return 0;
	if (!strcmp(input, o->path))
		return say(o, -EINVAL, "'%s' is one of its inputs: refusing to write over it "
			   "(--force or not)", o->safe);
	return say(o, -EINVAL, "'%s' is '%s', one of its inputs: refusing to write over it "
		   "(--force or not)", o->safe, apx_term_safe_str(name, sizeof(name), input));
}

/* A temporary name beside o->path (hidden, not matching FILE.<pid>) into o->tmp. */
static void tmp_name(struct apx_outfile *o, unsigned k)
{
	const char *slash = strrchr(o->path, '/');
	const char *base = slash ? slash + 1 : o->path;
	int dirlen = slash ? (int)(slash - o->path) + 1 : 0;

	snprintf(o->tmp, sizeof(o->tmp), "%.*s.%.180s.apx-tmp-%d-%u", dirlen, o->path, base,
		 (int)getpid(), k);
}

FILE *apx_outfile_open(struct apx_outfile *o)
{
	int fd = -1;

	if (o->kind == APX_OUTFILE_STDOUT)
		return stdout;
	if (o->kind == APX_OUTFILE_STREAM) {
		o->w.fd = o->fd;
		o->fd = -1;	/* the stream owns it now */
	} else {
		for (unsigned k = 0; fd < 0 && k < 100; k++) {
			tmp_name(o, k);
			fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
			if (fd < 0 && errno != EEXIST)
				break;
		}
		if (fd < 0) {
			int e = errno;

			o->tmp[0] = 0;
			say(o, -e, "cannot write '%s': %s", o->safe, strerror(e));
			return NULL;
		}
		o->w.fd = fd;
	}
	o->f = fd_stream(&o->w);
	if (!o->f) {
		say(o, -ENOMEM, "cannot write '%s': %s", o->safe, strerror(ENOMEM));
		apx_outfile_abort(o);
	}
	return o->f;
}

int apx_outfile_stage(struct apx_outfile *o, char *ret_path, size_t cap)
{
	if (o->kind == APX_OUTFILE_FILE) {
		struct stat st;
		unsigned k = 0;

		do
			tmp_name(o, k++);
		while (lstat(o->tmp, &st) == 0 && k < 100);
		snprintf(o->staged, sizeof(o->staged), "%s", o->tmp);
	} else {
		const char *td = getenv("TMPDIR");

		snprintf(o->stage_dir, sizeof(o->stage_dir), "%s/apx-%s-XXXXXX",
			 td && *td ? td : "/tmp", o->cmd);
		if (!mkdtemp(o->stage_dir)) {
			int e = errno;

			say(o, -e, "cannot make a temporary folder in %s: %s (set TMPDIR)",
			    td && *td ? td : "/tmp", strerror(e));
			o->stage_dir[0] = 0;
			return -e;
		}
		snprintf(o->staged, sizeof(o->staged), "%s/out", o->stage_dir);
	}
	snprintf(ret_path, cap, "%s", o->staged);
	return 0;
}

/* Copy the staged file into the stream (fd, or stdout): 0 or -errno of the failed write. */
static int copy_staged(struct apx_outfile *o, int *ret_read_err)
{
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	int in = open(o->staged, O_RDONLY | O_CLOEXEC), r = 0;

	*ret_read_err = 0;
	if (!buf || in < 0) {
		*ret_read_err = 1;
		r = !buf ? -ENOMEM : -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = read(in, buf, cap);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*ret_read_err = 1;
			r = -errno;
			break;
		}
		if (!n)
			break;
		if (o->kind == APX_OUTFILE_STDOUT) {
			if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) {
				r = apx_stdout_check(o->cmd);
				r = r < 0 ? r : -EIO;
				break;
			}
		} else if ((r = write_all(o->fd, buf, (size_t)n)) < 0) {
			break;
		}
		o->bytes += (unsigned long long)n;
	}
out:
	if (in >= 0)
		close(in);
	free(buf);
	return r;
}

int apx_outfile_commit(struct apx_outfile *o)
{
	int r = 0;

	if (o->f) {
		if (fflush(o->f) != 0 && !o->w.err)
			o->w.err = errno ? errno : EIO;
		if (fclose(o->f) != 0 && !o->w.err)
			o->w.err = errno ? errno : EIO;
		o->f = NULL;
		r = -o->w.err;
	}
	if (!r && o->staged[0] && o->kind != APX_OUTFILE_FILE) {
		int rerr;

		r = copy_staged(o, &rerr);
		if (r < 0 && rerr) {
			say(o, r, "cannot read back the temporary '%s': %s", o->staged,
			    strerror(-r));
			apx_outfile_abort(o);
			return r;
		}
	}
	if (o->kind == APX_OUTFILE_STDOUT) {
		int s = apx_stdout_check(o->cmd);	/* says it, once */

		apx_outfile_abort(o);
		return s < 0 ? s : r;
	}
	if (!r && o->kind == APX_OUTFILE_STREAM && o->fd >= 0 && close(o->fd) < 0 &&
	    errno != EINTR)
		r = -errno;
	o->fd = -1;
	if (r < 0) {
		say(o, r, "cannot write '%s': %s", o->safe, strerror(-r));
		apx_outfile_abort(o);
		return r;
	}
	if (o->kind == APX_OUTFILE_FILE) {
		struct stat st;

		/* what is at PATH now must still be what init saw: nothing, or that regular file */
		if (lstat(o->path, &st) == 0 &&
		    (!o->exists || !S_ISREG(st.st_mode) || st.st_ino != o->ino ||
		     st.st_dev != o->dev)) {
			say(o, -EEXIST, "'%s' appeared or changed while apx wrote; not replaced",
			    o->safe);
			apx_outfile_abort(o);
			return -EEXIST;
		}
		if (rename(o->tmp, o->path) < 0) {
			r = -errno;
			say(o, r, "cannot put '%s' in place: %s", o->safe, strerror(-r));
			apx_outfile_abort(o);
			return r;
		}
		o->tmp[0] = 0;
		o->staged[0] = 0;
	}
	apx_outfile_abort(o);	/* the staged copy and its folder */
	return 0;
}

int apx_outfile_fail(struct apx_outfile *o, int r)
{
	if (o->f) {
		(void)fflush(o->f);
		if (o->w.err)
			r = -o->w.err;
	}
	if (o->kind == APX_OUTFILE_STDOUT) {
		int s = apx_stdout_check(o->cmd);

		if (s < 0)
			r = s;
		else
			say(o, r, "cannot write to stdout: %s", strerror(-r));
	} else {
		say(o, r, "cannot write '%s': %s", o->safe, strerror(-r));
	}
	apx_outfile_abort(o);
	return r;
}

void apx_outfile_abort(struct apx_outfile *o)
{
	if (o->f) {
		fclose(o->f);	/* closes w.fd */
		o->f = NULL;
	}
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp[0])
		(void)unlink(o->tmp);
	if (o->staged[0] && strcmp(o->staged, o->tmp))
		(void)unlink(o->staged);
	o->tmp[0] = 0;
	o->staged[0] = 0;
	if (o->stage_dir[0])
		(void)rmdir(o->stage_dir);
	o->stage_dir[0] = 0;
}
