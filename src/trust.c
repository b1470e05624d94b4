/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

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

bool trust_own_file(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && st->st_nlink <= 1 &&
	       (st->st_mode & 077) == 0;
}
