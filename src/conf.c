/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/conf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowslot/log.h"

/* Opens path if it is safe to trust (cf. pam-u2f open_safely): an absolute path, not a
   symbolic link, a regular file owned by root, writable by no one else, of bounded size.
   Returns the fd and its stat, or -1 with *why; errno is ENOENT for a missing file. */
static int conf_open_safely(const char *path, struct stat *st, const char **why)
{
	int fd;

	if (path[0] != '/') {
		*why = "not an absolute path";
		errno = EINVAL;
		return -1;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		*why = errno == ELOOP ? "a symbolic link" : strerror(errno);
		return -1;
	}
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		*why = "not a regular file";
	} else if (st->st_uid != 0) {
		*why = "not owned by root";
	} else if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0) {
		*why = "writable by group or others";
	} else if (st->st_size > CONF_SIZE_MAX) {
		*why = "larger than 64 KiB";
	} else {
		return fd;
	}
	close(fd);
	errno = EPERM;
	return -1;
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

static void conf_apply(struct opt *o, const pam_handle_t *pamh, const char *path, char *text,
		       size_t len)
{
	char where[OPT_DIR_MAX + 32];
	int lineno = 0;

	if (strlen(text) != len) {
		o->errors++;
		log_msg(pamh, LOG_ERR, "conf: %s holds a NUL byte", path);
		return;
	}
	for (char *line = text, *next; line != NULL; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		lineno++;
		line = conf_trim(line);
		if (line[0] == '\0' || line[0] == '#')
			continue;
		snprintf(where, sizeof(where), "%s:%d", path, lineno);
		if (conf_join(line) != 0) {
			/* Not shown: the line may hold a password. */
			o->errors++;
			log_msg(pamh, LOG_ERR, "%s: a blank inside an option name", where);
			continue;
		}
		o->origin = where;
		opt_set(o, pamh, line);
		o->origin = NULL;
	}
}

void conf_read(struct opt *o, const pam_handle_t *pamh, const char *path, bool required)
{
	struct stat st;
	const char *why = NULL;
	bool had_password = o->url.has_password || o->has_sentinel_password;
	size_t len = 0;
	char *text;
	int fd = conf_open_safely(path, &st, &why);

	if (fd < 0) {
		if (errno == ENOENT && !required)
			return;
		o->errors++;
		log_msg(pamh, LOG_ERR, "conf: cannot use %s: %s", path, why);
		return;
	}
	text = conf_slurp(fd, &len);
	close(fd);
	if (text == NULL) {
		o->errors++;
		log_msg(pamh, LOG_ERR, "conf: cannot read %s", path);
		return;
	}
	conf_apply(o, pamh, path, text, len);
	explicit_bzero(text, len);
	free(text);
	if (!had_password && (o->url.has_password || o->has_sentinel_password) &&
	    (st.st_mode & S_IROTH) != 0) {
		o->errors++;
		opt_wipe(o);
		o->url.has_password = false;
		o->has_sentinel_password = false;
		log_msg(pamh, LOG_ERR,
			"conf: %s holds a password but is readable by others (mode %04o): not "
			"using it; chmod o-r",
			path, (unsigned)(st.st_mode & 07777));
	}
}

int conf_read_secret(const char *path, char *buf, size_t bufsz, const char **why)
{
	struct stat st;
	char line[OPT_PASSWORD_MAX + 2];
	ssize_t n;
	size_t end;
	int fd = conf_open_safely(path, &st, why);

	if (fd < 0)
		return -1;
	if ((st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
		close(fd);
		*why = "readable by group or others (chmod 0600)";
		return -1;
	}
	do
		n = read(fd, line, sizeof(line) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0) {
		*why = "cannot read it";
		return -1;
	}
	line[n] = '\0';
	end = strcspn(line, "\r\n");
	if (end == 0 || end >= bufsz || memchr(line, '\0', (size_t)n) != NULL ||
	    (line[end] == '\0' && (size_t)n == sizeof(line) - 1)) {
		explicit_bzero(line, sizeof(line));
		*why = "the first line must hold the password, up to 511 bytes";
		return -1;
	}
	memcpy(buf, line, end);
	buf[end] = '\0';
	explicit_bzero(line, sizeof(line));
	return 0;
}
