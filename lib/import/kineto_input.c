/*
 * kineto_input.c - reads a Kineto trace file into memory for the importer: regular files only
 * (a FIFO, device or directory is refused without blocking), at most APX_KINETO_INPUT_MAX
 * bytes, gunzipped (every gzip member) when it starts with the gzip magic and apx was built
 * with zlib (APX_HAVE_ZLIB), a decompression bomb refused early (is_bomb()). Called by kineto.c.
 */
#include "import/kineto_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef APX_HAVE_ZLIB
#include <zlib.h>
#endif

#include "import/kineto.h"

#include "base/banned.h"

static int fail(struct apx_diag *diag, int err, const char *msg)
{
	diag->err = err;
	diag->offset = 0;
	diag->chunk = -1;
	snprintf(diag->msg, sizeof(diag->msg), "%s", msg);
	return err;
}

static const char *kind_of(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
		: S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a file";
}

static int read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* shrank while read */
		got += (size_t)n;
	}
	return 0;
}

#ifdef APX_HAVE_ZLIB
/* A gzip bomb is refused while it inflates, not at APX_KINETO_INPUT_MAX: past BOMB_FLOOR
 * bytes out, more than BOMB_RATIO bytes out per compressed byte read (Kineto JSON compresses
 * 8-20 times; deflate at most 1032) is not a trace. A 13 MB bomb stops at 64 MiB. */
#define BOMB_FLOOR (64u << 20)
#define BOMB_RATIO 250

static int is_bomb(size_t out, size_t in)
{
	return out > BOMB_FLOOR && out / BOMB_RATIO > in;
}

static int gunzip(const char *in, size_t in_len, char **ret_buf, size_t *ret_len,
		  struct apx_diag *diag)
{
	size_t cap = in_len < APX_KINETO_INPUT_MAX / 4 ? in_len * 4 + 4096 : APX_KINETO_INPUT_MAX;
	size_t len = 0;
	char *out = malloc(cap), msg[200];
	z_stream z = { 0 };
	int zr = Z_OK;

	if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(out);
		return fail(diag, -ENOMEM, "out of memory for gunzip");
	}
	z.next_in = (Bytef *)(uintptr_t)in;
	for (;;) {
		size_t in_left = in_len - (size_t)((const char *)z.next_in - in);

		z.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
		if (zr == Z_STREAM_END) {
			if (!z.avail_in)
				break;
			inflateReset(&z);	/* another gzip member follows */
		}
		if (len == cap) {
			char *o;

			if (cap >= APX_KINETO_INPUT_MAX) {
				snprintf(msg, sizeof(msg), "gunzipped, larger than %llu MiB: not read",
					 (unsigned long long)(APX_KINETO_INPUT_MAX >> 20));
				zr = Z_MEM_ERROR;
				goto err;
			}
			cap = cap * 2 > APX_KINETO_INPUT_MAX ? APX_KINETO_INPUT_MAX : cap * 2;
			if (!(o = realloc(out, cap))) {
				snprintf(msg, sizeof(msg), "out of memory for gunzip");
				goto err;
			}
			out = o;
		}
		z.next_out = (Bytef *)out + len;
		/* 8 MiB a step: the bomb check below sees the size as it grows */
		z.avail_out = cap - len > (8u << 20) ? (8u << 20) : (uInt)(cap - len);
		zr = inflate(&z, Z_NO_FLUSH);
		len = (size_t)((char *)z.next_out - out);
		if (is_bomb(len, (size_t)((const char *)z.next_in - in))) {
			snprintf(msg, sizeof(msg), "gunzipped, more than %d times its compressed size "
				 "(%zu MiB from %zu kB): a decompression bomb? not read",
				 BOMB_RATIO, len >> 20, (size_t)((const char *)z.next_in - in) >> 10);
			zr = Z_MEM_ERROR;
			goto err;
		}
		if (zr == Z_STREAM_END)
			continue;
		if (zr == Z_BUF_ERROR && !z.avail_in) {
			snprintf(msg, sizeof(msg), "gzip data cut short after %zu compressed bytes "
				 "(truncated?)", in_len);
			goto err;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			snprintf(msg, sizeof(msg), "gzip data damaged at compressed byte %zu: %s",
				 (size_t)((const char *)z.next_in - in), z.msg ? z.msg : "inflate failed");
			goto err;
		}
	}
	inflateEnd(&z);
	*ret_buf = out;
	*ret_len = len;
	return 0;
err:
	inflateEnd(&z);
	free(out);
	return fail(diag, zr == Z_MEM_ERROR ? -EFBIG : -EBADMSG, msg);
}
#endif

int apx_ki_read_file(const char *path, char **ret_buf, size_t *ret_len, struct apx_diag *diag)
{
	struct stat st;
	char *buf, msg[200];
	int fd, r;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fail(diag, -errno, strerror(errno));
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return fail(diag, r, strerror(-r));
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(msg, sizeof(msg), "not a regular file (%s): traces are read from regular "
			 "files only", kind_of(st.st_mode));
		close(fd);
		return fail(diag, -EINVAL, msg);
	}
	if ((uint64_t)st.st_size > APX_KINETO_INPUT_MAX) {
		snprintf(msg, sizeof(msg), "larger than %llu MiB: not read",
			 (unsigned long long)(APX_KINETO_INPUT_MAX >> 20));
		close(fd);
		return fail(diag, -EFBIG, msg);
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return fail(diag, -ENOMEM, "out of memory");
	}
	r = read_all(fd, buf, (size_t)st.st_size);
	close(fd);
	if (r < 0) {
		free(buf);
		return fail(diag, r, r == -EIO ? "file shrank while read" : strerror(-r));
	}
	if (st.st_size >= 2 && (uint8_t)buf[0] == 0x1f && (uint8_t)buf[1] == 0x8b) {
#ifdef APX_HAVE_ZLIB
		char *out;
		size_t len;

		r = gunzip(buf, (size_t)st.st_size, &out, &len, diag);
		free(buf);
		if (r < 0)
			return r;
		*ret_buf = out;
		*ret_len = len;
		return 1;
#else
		free(buf);
		return fail(diag, -ENOTSUP, "gzip-compressed, and this apx was built without zlib: "
					    "gunzip it first");
#endif
	}
	*ret_buf = buf;
	*ret_len = (size_t)st.st_size;
	return 0;
}
