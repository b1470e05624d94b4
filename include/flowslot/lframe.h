/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-host schedule file's frame. Its first LFRAME_HEAD bytes name where in the file the
   store's text lies, and its hash. A write puts the new text beside the old one, then
   replaces the header in one write of one page: a writer killed at any instruction leaves
   the old text or the new one whole, never a mix. A file without the frame (an earlier
   version's, or one written by hand) is its text up to its first NUL byte. */
#ifndef FLOWSLOT_LFRAME_H
#define FLOWSLOT_LFRAME_H

#include <stddef.h>
#include <sys/types.h>

#define LFRAME_MAGIC "flowslot-file 1"
#define LFRAME_HEAD 64

/* The bytes of the file that hold its text: what a write must leave alone until its header
   names the new text. */
struct lframe {
	off_t off;
	off_t len;
};

/* Reads fd's text, at most max bytes, into a NUL-terminated buffer to free (*text), and where
   it lies. Returns 0; 1 for a frame that does not check (a header that names no text of the
   file, or a hash that does not match: *text NULL, *why says which); -1 with errno (ENOMEM:
   this process's own limits). */
int lframe_read(int fd, size_t max, char **text, struct lframe *where, const char **why);

/* Writes len bytes of text into fd beside the text at cur, then the header that names them,
   then lets the old text's bytes go. Returns 0, or -1 with errno: EFBIG when the file would
   pass this process's RLIMIT_FSIZE, before anything is written (the kernel would stop the
   process mid-write with SIGXFSZ). */
int lframe_write(int fd, const char *text, size_t len, const struct lframe *cur);

#endif
