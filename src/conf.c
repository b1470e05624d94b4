/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/conf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowslot/log.h"
#include "flowslot/trust.h"

/* Opens path as trust_open_root_file does, and refuses a file larger than CONF_SIZE_MAX. */
static int conf_open(const char *path, bool secret, struct stat *st, const char **why)
{
	int fd = trust_open_root_file(path, secret, st, why);

	if (fd >= 0 && st->st_size > CONF_SIZE_MAX) {
		close(fd);
		*why = "larger than 64 KiB";
		errno = EFBIG;
		return -1;
	}
	return fd;
}

/* Reads all of fd (at most CONF_SIZE_MAX bytes) into a NUL-terminated buffer to free. */
static char *conf_slurp(int fd, size_t *len)
{
	char *buf = malloc(CONF_SIZE_MAX + 1);
	size_t n = 0;

	if (buf == NULL)
		return NULL;
	while (n < CONF_SIZE_MAX) {
		ssize_t r = read(fd, buf + n, CONF_SIZE_MAX - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			explicit_bzero(buf, n);
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static char *conf_trim(char *s)
{
	char *end = s + strlen(s);

	while (*s == ' ' || *s == '\t')
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

static bool conf_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Turns a trimmed "name = value" into "name=value" in place, as faillock.conf allows blanks
   around the '='. Blanks inside the name are ambiguous ("inter val=7s"): returns -1. Those
   inside the value are left for its setter to judge. */
static int conf_join(char *line)
{
	char *eq = strchr(line, '='), *name_end, *value;

	if (eq == NULL)
		return 0;
	for (name_end = eq; name_end > line && conf_blank(name_end[-1]);)
		name_end--;
	if (strcspn(line, " \t") < (size_t)(name_end - line))
		return -1;
	for (value = eq + 1; conf_blank(*value);)
		value++;
	*name_end++ = '=';
	memmove(name_end, value, strlen(value) + 1);
	return 0;
}

int conf_parse(const pam_handle_t *pamh, const char *name, char *text, size_t len, conf_line_fn *fn,
	       void *ctx)
{
	char where[CONF_WHERE_MAX];
	int lineno = 0, problems = 0;

	if (strlen(text) != len) {
		log_msg(pamh, LOG_ERR, "conf: %s holds a NUL byte", name);
		return 1;
	}
	for (char *line = text, *next; line != NULL; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		lineno++;
		line = conf_trim(line);
		if (line[0] == '\0' || line[0] == '#')
			continue;
		snprintf(where, sizeof(where), "%s:%d", name, lineno);
		if (conf_join(line) != 0) {
			/* Not shown: the line may hold a password. */
			problems++;
			log_msg(pamh, LOG_ERR, "%s: a blank inside an option name", where);
			continue;
		}
		fn(ctx, where, line);
	}
	return problems;
}

int conf_read(const pam_handle_t *pamh, const char *path, bool required, conf_line_fn *fn,
	      void *ctx, mode_t *mode)
{
	struct stat st;
	const char *why = NULL;
	size_t len = 0;
	char *text;
	int problems, saved, fd = conf_open(path, false, &st, &why);

	*mode = 0;
	if (fd < 0) {
		if (errno == ENOENT && !required)
			return 0;
		saved = errno;
		log_msg(pamh, LOG_ERR, "conf: cannot use %s: %s", path, why);
		errno = saved;
		return -1;
	}
	text = conf_slurp(fd, &len);
	close(fd);
	if (text == NULL) {
		log_msg(pamh, LOG_ERR, "conf: cannot read %s", path);
		errno = EIO;
		return -1;
	}
	*mode = st.st_mode;
	problems = conf_parse(pamh, path, text, len, fn, ctx);
	explicit_bzero(text, len);
	free(text);
	return problems;
}

int conf_parse_secret(const char *text, size_t n, char *buf, size_t bufsz, const char **why)
{
	size_t end = strcspn(text, "\r\n");

	/* A first line that fills all that was read may go on past it. */
	if (end == 0 || end >= bufsz || memchr(text, '\0', n) != NULL ||
	    (text[end] == '\0' && n == CONF_SECRET_MAX + 1)) {
		*why = "the first line must hold the password, up to 511 bytes";
		return -1;
	}
	memcpy(buf, text, end);
	buf[end] = '\0';
	return 0;
}

int conf_read_secret(const char *path, char *buf, size_t bufsz, const char **why)
{
	struct stat st;
	char line[CONF_SECRET_MAX + 2];
	ssize_t n;
	int rc, fd = conf_open(path, true, &st, why);

	if (fd < 0)
		return -1;
	do
		n = read(fd, line, sizeof(line) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0) {
		*why = "cannot read it";
		errno = EIO;
		return -1;
	}
	line[n] = '\0';
	rc = conf_parse_secret(line, (size_t)n, buf, bufsz, why);
	explicit_bzero(line, sizeof(line));
	if (rc != 0)
		errno = EINVAL;
	return rc;
}
