/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/once.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/lslot.h"
#include "flowslot/trust.h"

/* A stamp's lock is held for a stat and a short write. */
#define ONCE_LOCK_WAIT_US INT64_C(100000)
/* What a stamp holds: its message's name, cut to this. */
#define ONCE_TEXT_MAX 512

void once_name(const char *what, char *out)
{
	snprintf(out, ONCE_NAME_MAX, "once.%016" PRIx64, lslot_hash(LSLOT_HASH_START, what));
}

/* Whether a stamp set at mtime is at most period_s old; a second's grace for file times finer
   than time()'s, as ncache.c allows. */
static bool once_recent(time_t mtime, int period_s)
{
	time_t age = time(NULL) - mtime;

	return age >= -1 && age < period_s;
}

/* Sets the stamp of fd (locked, of ours) to now, with what in it for whoever looks. Returns
   whether it could. */
static bool once_stamp(int fd, const char *what)
{
	char line[ONCE_TEXT_MAX];
	int len = snprintf(line, sizeof(line), "%s\n", what);

	if (len < 0 || len >= (int)sizeof(line))
		len = (int)sizeof(line) - 1;
	/* An empty stamp is one just made, whose mtime says nothing: one left empty, or as it
	   was, by a failure stays due. */
	return ftruncate(fd, 0) == 0 && write(fd, line, (size_t)len) == len;
}

bool once_due(const char *dir, const char *what, int period_s)
{
	char name[ONCE_NAME_MAX];
	struct stat st;
	const char *why; /* unused: a stamp that cannot be kept only makes the message due */
	bool due = true;
	int dfd = trust_open_dir(dir, true, &why), fd = -1;

	once_name(what, name);
	if (dfd >= 0)
		fd =
		    openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd >= 0 && trust_lock(fd, LOCK_EX, ONCE_LOCK_WAIT_US) == 0 && fstat(fd, &st) == 0 &&
	    trust_own_file(&st, 077)) {
		if (st.st_size > 0 && once_recent(st.st_mtime, period_s))
			due = false;
		else
			once_stamp(fd, what);
	}
	if (fd >= 0)
		close(fd); /* and with it the lock */
	if (dfd >= 0)
		close(dfd);
	return due;
}
