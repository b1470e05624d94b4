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

#include "flowslot/fstime.h"
#include "flowslot/hash.h"
#include "flowslot/trust.h"

/* A stamp's lock is held for a stat and a short write. */
#define ONCE_LOCK_WAIT_US INT64_C(100000)
/* What a stamp holds: its message's name, cut to this. */
#define ONCE_TEXT_MAX 512

void once_name(const char *what, char *out)
{
	snprintf(out, ONCE_NAME_MAX, "once.%016" PRIx64, hash_str(HASH_START, what));
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

/* once_rate's table: one entry a message, by its hash. */
struct once_rate_entry {
	uint64_t hash; /* 0: unused */
	int64_t said_us;
	uint64_t held;
};

/* The entry of hash in t, or the one to give to it: unused, or said longest ago. */
static struct once_rate_entry *once_rate_find(struct once_rate_entry *t, uint64_t hash)
{
	struct once_rate_entry *oldest = &t[0];

	for (int i = 0; i < ONCE_RATE_MAX; i++) {
		if (t[i].hash == hash)
			return &t[i];
		if (t[i].hash == 0 || (oldest->hash != 0 && t[i].said_us < oldest->said_us))
			oldest = &t[i];
	}
	*oldest = (struct once_rate_entry){ .hash = hash, .said_us = INT64_MIN };
	return oldest;
}

bool once_rate(const char *dir, const char *what, int64_t period_us, uint64_t *held)
{
	struct once_rate_entry t[ONCE_RATE_MAX], *e;
	const uint64_t hash = hash_str(HASH_START, what) | 1; /* never 0 */
	const int64_t now_us = fstime_mono_us();
	struct stat st;
	const char *why; /* unused: a table that cannot be kept only makes the message due */
	bool due = true;
	int dfd = trust_open_dir(dir, true, &why), fd = -1;

	*held = 0;
	if (dfd >= 0)
		fd = openat(dfd, ONCE_RATE_FILE,
			    O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd >= 0 && trust_lock(fd, LOCK_EX, ONCE_LOCK_WAIT_US) == 0 && fstat(fd, &st) == 0 &&
	    trust_own_file(&st, 077)) {
		/* Anything but a whole table (a new file, a torn one) starts afresh. */
		if (pread(fd, t, sizeof(t), 0) != (ssize_t)sizeof(t))
			memset(t, 0, sizeof(t));
		e = once_rate_find(t, hash);
		if (e->said_us != INT64_MIN && e->said_us <= now_us &&
		    now_us - e->said_us < period_us) {
			due = false;
			e->held++;
		} else {
			*held = e->held;
			e->said_us = now_us;
			e->held = 0;
		}
		if (pwrite(fd, t, sizeof(t), 0) != (ssize_t)sizeof(t))
			due = true; /* not kept: said rather than lost */
	}
	if (fd >= 0)
		close(fd); /* and with it the lock */
	if (dfd >= 0)
		close(dfd);
	return due;
}
