/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "flowslot/fstime.h"

/* A lock refused is asked for again 1 ms later, then twice as long each time up to 20 ms:
   a burst's short holds are caught soon, and a long wait costs about 50 calls a second (and
   an fstat each, when the holder is watched), not the 780 of a 1 ms poll. Longer
   pauses would slow a burst down: as its callers thin out, the lock lies free longer between
   them. */
#define TRUST_POLL_FIRST_US 1000
#define TRUST_POLL_MAX_US 20000
/* While a lock is refused, the file's size and times are looked at every poll; its holders in
   /proc/locks at the first poll, then only once the file has stood unchanged for an eighth of
   stuck_us, and before the wait ends as stuck. Holders that write (logins) are so told from a
   stuck one by the file alone: each read of /proc/locks takes the kernel's lock of every file
   lock for writing, which every flock and fcntl lock on the host then waits for. */
#define TRUST_HOLDERS_AFTER(stuck_us) ((stuck_us) / 8)
/* Bytes of /proc/locks read at once: some 1,300 locks on the host (trust_lock_holders). */
#define TRUST_LOCKS_READ 65536

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

/* Opens path read-only, and checks what trust_open_root_file promises of it; a directory when
   dir, else a regular file. O_NONBLOCK: a FIFO is refused, never waited on for a writer. */
static int trust_open_root(const char *path, bool dir, bool secret, struct stat *st,
			   const char **why)
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
	if (fstat(fd, st) != 0 || (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))) {
		*why = dir ? "not a directory" : "not a regular file";
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

int trust_open_root_file(const char *path, bool secret, struct stat *st, const char **why)
{
	return trust_open_root(path, false, secret, st, why);
}

int trust_open_root_dir(const char *path, struct stat *st, const char **why)
{
	return trust_open_root(path, true, false, st, why);
}

/* What can be seen of who holds a file's lock without taking it: the FLOCK holders of its
   inode in /proc/locks (how many, the lowest and highest pid), and the file's size and times,
   which any holder that writes changes. */
struct trust_holder {
	int n;
	pid_t low, high;
	off_t size;
	struct timespec mtim, ctim;
};

/* One line of /proc/locks, "1: FLOCK  ADVISORY  WRITE 4242 fe:00:10953192 0 EOF" ("1: ->
   FLOCK ..." for a process blocked on it, which holds nothing), counted into h if it is a
   holder of the inode at dev_major:dev_minor:ino. */
static void trust_lock_line(char *line, const struct stat *st, struct trust_holder *h)
{
	char *field[6], *save = NULL, *end;
	unsigned long maj, min;
	unsigned long long ino;
	long pid;
	int n = 0;

	for (char *t = strtok_r(line, " ", &save); t != NULL && n < 6;
	     t = strtok_r(NULL, " ", &save))
		field[n++] = t;
	if (n < 6 || strcmp(field[1], "FLOCK") != 0)
		return;
	errno = 0;
	pid = strtol(field[4], &end, 10);
	if (errno != 0 || *end != '\0' || pid <= 0 || pid > INT_MAX)
		return;
	maj = strtoul(field[5], &end, 16);
	if (*end != ':')
		return;
	min = strtoul(end + 1, &end, 16);
	if (*end != ':')
		return;
	ino = strtoull(end + 1, &end, 10);
	if (errno != 0 || *end != '\0' || maj != major(st->st_dev) || min != minor(st->st_dev) ||
	    ino != (unsigned long long)st->st_ino)
		return;
	/* The same holder twice: a file read in pieces (trust_lock_holders) repeated its line. */
	if (h->n > 0 && (pid == h->low || pid == h->high))
		return;
	if (h->n == 0 || pid < h->low)
		h->low = (pid_t)pid;
	if (h->n == 0 || pid > h->high)
		h->high = (pid_t)pid;
	h->n++;
}

/* Reads /proc/locks for the holders of st's inode; none where it cannot be read. The kernel
   makes each read() of it under the locks' own lock, so a read that takes the whole file sees
   one moment; read by the page, a file that outgrows one (a host with a few hundred locks
   held) comes in pieces of different moments, which can leave out or repeat a holder that
   never moved. */
static void trust_lock_holders(const struct stat *st, struct trust_holder *h)
{
	char *buf;
	size_t have = 0;
	ssize_t r;
	int fd = open("/proc/locks", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if ((buf = malloc(TRUST_LOCKS_READ)) == NULL) {
		close(fd);
		return;
	}
	while ((r = read(fd, buf + have, TRUST_LOCKS_READ - 1 - have)) != 0) {
		char *line = buf, *nl;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		have += (size_t)r;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf))) != NULL) {
			*nl = '\0';
			trust_lock_line(line, st, h);
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == TRUST_LOCKS_READ - 1) /* no lock line is that long */
			have = 0;
	}
	free(buf);
	close(fd);
}

/* What can be seen now of fd's file (into h, and st for trust_lock_holders), the holders as
   last read (last). */
static void trust_lock_seen(int fd, struct trust_holder *h, struct stat *st,
			    const struct trust_holder *last)
{
	memset(h, 0, sizeof(*h));
	memset(st, 0, sizeof(*st));
	if (fstat(fd, st) == 0) {
		h->size = st->st_size;
		h->mtim = st->st_mtim;
		h->ctim = st->st_ctim;
	}
	h->n = last->n;
	h->low = last->low;
	h->high = last->high;
}

static bool trust_same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Whether the file is as it was between two looks. */
static bool trust_same_file(const struct trust_holder *a, const struct trust_holder *b)
{
	return a->size == b->size && trust_same_time(&a->mtim, &b->mtim) &&
	       trust_same_time(&a->ctim, &b->ctim);
}

/* Whether nothing moved between two looks: the same holders, the file as it was. */
static bool trust_same_holder(const struct trust_holder *a, const struct trust_holder *b)
{
	return a->n == b->n && a->low == b->low && a->high == b->high && trust_same_file(a, b);
}

enum trust_lock_end trust_lock_watch(int fd, int op, struct trust_lock_wait *w)
{
	const int64_t start_us = fstime_mono_us();
	int64_t pause_us = TRUST_POLL_FIRST_US, since_us = -1, first_us = -1, changed_us = -1;
	struct trust_holder seen = { 0 }, now;

	w->holder = 0;
	w->held_us = w->waited_us = 0;
	w->tries = w->looks = 0;
	for (;;) {
		int64_t now_us, left_us;

		w->tries++;
		if (flock(fd, op | LOCK_NB) == 0) {
			w->waited_us = fstime_mono_us() - start_us;
			return TRUST_LOCKED;
		}
		if (errno != EWOULDBLOCK && errno != EINTR)
			return TRUST_LOCK_FAILED;
		now_us = fstime_mono_us();
		w->waited_us = now_us - start_us;
		left_us = w->wait_us - w->waited_us;
		if (w->stuck_us > 0) {
			const bool ending = left_us <= 0 ||
					    (since_us >= 0 && now_us - since_us >= w->stuck_us);
			struct stat st;

			trust_lock_seen(fd, &now, &st, &seen);
			if ((st.st_mode & w->end_mode) != 0)
				return TRUST_LOCK_MOVED;
			if (changed_us < 0 || !trust_same_file(&seen, &now))
				changed_us = now_us;
			if (since_us < 0 || ending ||
			    now_us - changed_us >= TRUST_HOLDERS_AFTER(w->stuck_us)) {
				now.n = 0;
				now.low = now.high = 0;
				trust_lock_holders(&st, &now);
				/* No holder of a lock just refused: a read in pieces left it out
				   (trust_lock_holders). The holders stand as last seen. */
				if (now.n == 0) {
					now.n = seen.n;
					now.low = seen.low;
					now.high = seen.high;
				}
				w->looks++;
			}
			if (since_us < 0 || !trust_same_holder(&seen, &now)) {
				seen = now;
				since_us = now_us;
				if (first_us < 0)
					first_us = now_us;
			}
			w->holder = now.low;
			w->held_us = now_us - since_us;
			/* Stuck: one holder kept it, the file unchanged, for stuck_us; or, on a
			   shorter wait, through all of it and for a quarter of stuck_us at least. */
			if (w->held_us >= w->stuck_us ||
			    (left_us <= 0 && since_us == first_us && w->held_us >= w->stuck_us / 4))
				return TRUST_LOCK_STUCK;
		}
		if (left_us <= 0) {
			errno = ETIMEDOUT;
			return TRUST_LOCK_BUSY;
		}
		fstime_sleep_until(now_us + (pause_us < left_us ? pause_us : left_us));
		pause_us = pause_us * 2 < TRUST_POLL_MAX_US ? pause_us * 2 : TRUST_POLL_MAX_US;
	}
}

int trust_lock(int fd, int op, int64_t wait_us)
{
	struct trust_lock_wait w = { .wait_us = wait_us };

	switch (trust_lock_watch(fd, op, &w)) {
	case TRUST_LOCKED:
		return 0;
	case TRUST_LOCK_BUSY:
	case TRUST_LOCK_STUCK:
	case TRUST_LOCK_MOVED:
		errno = ETIMEDOUT;
		return -1;
	case TRUST_LOCK_FAILED:
	default:
		return -1;
	}
}
