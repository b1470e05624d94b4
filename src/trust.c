/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/fstime.h"

int trust_open_dir(const char *dir, bool create, const char **why)
{
	struct stat st;
	int dfd;

	if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
		*why = "cannot create";
		return -1;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		*why = "cannot open";
		return -1;
	}
	if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		*why = "is not a directory owned by this uid and writable by no one else";
		close(dfd);
		errno = EPERM;
		return -1;
	}
	return dfd;
}

bool trust_own_file(const struct stat *st, mode_t forbidden)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && st->st_nlink <= 1 &&
	       (st->st_mode & forbidden) == 0;
}

int trust_open_root_file(const char *path, bool secret, struct stat *st, const char **why)
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
	} else if (secret && (st->st_mode & (S_IRGRP | S_IROTH)) != 0) {
		*why = "readable by group or others (chmod 0600)";
	} else {
		return fd;
	}
	close(fd);
	errno = EPERM;
	return -1;
}

int trust_lock(int fd, int op, int64_t wait_us)
{
	const int64_t deadline_us = fstime_mono_us() + wait_us;
	const struct timespec pause = { .tv_nsec = 1000000 };

	while (flock(fd, op | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (fstime_mono_us() >= deadline_us) {
			errno = ETIMEDOUT;
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	return 0;
}
