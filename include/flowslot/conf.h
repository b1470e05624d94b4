/* SPDX-License-Identifier: BSD-3-Clause */
/* The configuration file and the password file: opened safely and read. What a line means is
   for the caller, through a callback: conf knows nothing of the options. */
#ifndef FLOWSLOT_CONF_H
#define FLOWSLOT_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <security/pam_modules.h>

#define CONF_SIZE_MAX 65536
#define CONF_SECRET_MAX 511 /* a password's bytes */
/* "file:line" for a path of up to 255 bytes. */
#define CONF_WHERE_MAX (255 + 32)

/* Takes one "name=value" (or flag) line, blanks around its '=' removed; where is "file:line". */
typedef void conf_line_fn(void *ctx, const char *where, const char *line);

/* Hands each line of text (len bytes and a NUL, changed in place), read from the file name, to
   fn, passing over blank lines and comments. Returns how many problems it logged. */
int conf_parse(const pam_handle_t *pamh, const char *name, char *text, size_t len, conf_line_fn *fn,
	       void *ctx);

/* Reads path through conf_parse. A missing file is fine unless required. Returns how many
   lines had problems (logged), or -1 when the file could not be used (logged), errno EPERM or
   ELOOP if that was for its owner, mode, type or a symbolic link; and in *mode the file's mode
   (0 when it was not read). */
int conf_read(const pam_handle_t *pamh, const char *path, bool required, conf_line_fn *fn,
	      void *ctx, mode_t *mode);

/* Takes the password from the first line of text (n bytes, at most CONF_SECRET_MAX + 1, and a
   NUL) into buf. Returns 0, or -1 with *why. */
int conf_parse_secret(const char *text, size_t n, char *buf, size_t bufsz, const char **why);

/* Reads the password in the first line of path into buf. Returns 0, or -1 with *why, errno
   EPERM or ELOOP if the file was refused for its owner, mode, type or a symbolic link. */
int conf_read_secret(const char *path, char *buf, size_t bufsz, const char **why);

#endif
