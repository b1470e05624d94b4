/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/lframe.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowslot/str.h"

/* New text starts on a page of its own, past the old text and at least one NUL byte after it
   (which ends an unframed text). */
#define LFRAME_PAGE 4096

/* FNV-1a over len bytes: enough to tell a text from a mix of two (no one else can write the
   file). */
static uint64_t lframe_hash(const char *p, size_t len)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * UINT64_C(1099511628211);
	return h;
}

/* Reads len bytes at off into in, or, with in NULL, writes them from out, whole: -1 with
   errno, EIO for a file that ends short. */
static int lframe_io(int fd, char *in, const char *out, size_t len, off_t off)
{
	size_t n = 0;

	while (n < len) {
		ssize_t r = in != NULL ? pread(fd, in + n, len - n, off + (off_t)n)
				       : pwrite(fd, out + n, len - n, off + (off_t)n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			errno = r == 0 ? EIO : errno;
			return -1;
		}
		n += (size_t)r;
	}
	return 0;
}

static int lframe_pread(int fd, char *buf, size_t len, off_t off)
{
	return lframe_io(fd, buf, NULL, len, off);
}

static int lframe_pwrite(int fd, const char *buf, size_t len, off_t off)
{
	return lframe_io(fd, NULL, buf, len, off);
}

/* The header's "OFF LEN HASH", after the magic and a space, each field into field[i]. Returns
   0, or -1. */
static int lframe_fields(const char *head, char field[3][24])
{
	for (int i = 0; i < 3; i++) {
		size_t n = strcspn(head, " \n");

		if (n == 0 || n >= sizeof(field[i]) || (i < 2 && head[n] != ' '))
			return -1;
		memcpy(field[i], head, n);
		field[i][n] = '\0';
		head += n + 1;
	}
	return 0;
}

static int lframe_parse(const char *head, off_t size, size_t max, struct lframe *where,
			uint64_t *hash)
{
	char field[3][24];
	long long off, len;
	char *end;

	if (lframe_fields(head, field) != 0 ||
	    str_parse_int(field[0], LFRAME_HEAD, INT64_MAX, &off) != 0 ||
	    str_parse_int(field[1], 0, (long long)max, &len) != 0 || strlen(field[2]) != 16)
		return -1;
	errno = 0;
	*hash = strtoull(field[2], &end, 16);
	if (errno != 0 || *end != '\0' || off > size || len > size - off)
		return -1;
	where->off = (off_t)off;
	where->len = (off_t)len;
	return 0;
}

/* A file without the frame: its text up to its first NUL, the whole file its bytes. */
static int lframe_read_plain(int fd, off_t size, size_t max, char **text, struct lframe *where)
{
	size_t len = (size_t)size < max ? (size_t)size : max;
	char *buf = malloc(len + 1);

	if (buf == NULL)
		return -1;
	if (len > 0 && lframe_pread(fd, buf, len, 0) != 0) {
		free(buf);
		return -1;
	}
	buf[len] = '\0';
	*text = buf;
	where->off = 0;
	where->len = size;
	return 0;
}

int lframe_read(int fd, size_t max, char **text, struct lframe *where, const char **why)
{
	char head[LFRAME_HEAD + 1];
	const char *rest;
	struct stat st;
	uint64_t hash;
	char *buf;

	*text = NULL;
	if (fstat(fd, &st) != 0)
		return -1;
	if (st.st_size < LFRAME_HEAD || lframe_pread(fd, head, LFRAME_HEAD, 0) != 0 ||
	    (head[LFRAME_HEAD] = '\0', rest = str_skip_prefix(head, LFRAME_MAGIC " ")) == NULL)
		return lframe_read_plain(fd, st.st_size, max, text, where);
	if (lframe_parse(rest, st.st_size, max, where, &hash) != 0) {
		*why = "a header that names no text of the file";
		return 1;
	}
	if ((buf = malloc((size_t)where->len + 1)) == NULL)
		return -1;
	if (lframe_pread(fd, buf, (size_t)where->len, where->off) != 0) {
		free(buf);
		return -1;
	}
	buf[where->len] = '\0';
	if (lframe_hash(buf, (size_t)where->len) != hash || strlen(buf) != (size_t)where->len) {
		free(buf);
		*why = "a text that does not match its header's hash";
		return 1;
	}
	*text = buf;
	return 0;
}

/* Where the new text of len bytes goes: before the old one if it fits there, else on the
   first page past it. An empty file has no old text. */
static off_t lframe_place(const struct lframe *cur, size_t len)
{
	off_t end = cur->off + cur->len;

	if (cur->len == 0 || (off_t)len <= cur->off - LFRAME_HEAD)
		return LFRAME_HEAD;
	if (end < LFRAME_HEAD)
		end = LFRAME_HEAD;
	return (end / LFRAME_PAGE + 1) * LFRAME_PAGE;
}

int lframe_write(int fd, const char *text, size_t len, const struct lframe *cur)
{
	const off_t off = lframe_place(cur, len);
	char head[LFRAME_HEAD + 1];
	struct rlimit fsize;
	int n;

	if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)off + len > fsize.rlim_cur) {
		errno = EFBIG;
		return -1;
	}
	n = snprintf(head, sizeof(head), "%s %lld %zu %016" PRIx64, LFRAME_MAGIC, (long long)off,
		     len, lframe_hash(text, len));
	if (n < 0 || n >= LFRAME_HEAD - 1) { /* a text of some billion bytes: none is */
		errno = EFBIG;
		return -1;
	}
	memset(head + n, ' ', LFRAME_HEAD - 1 - (size_t)n);
	head[LFRAME_HEAD - 1] = '\n';
	if (lframe_pwrite(fd, text, len, off) != 0 || lframe_pwrite(fd, head, LFRAME_HEAD, 0) != 0)
		return -1;
	/* The old text is garbage now: cut off behind the new one, or its pages let go before
	   it (a file system that cannot leaves them, unread). */
	if (off == LFRAME_HEAD)
		return ftruncate(fd, off + (off_t)len);
	fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, LFRAME_HEAD, off - LFRAME_HEAD);
	return 0;
}
