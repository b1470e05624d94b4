/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/lslot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/fstime.h"
#include "flowslot/log.h"
#include "flowslot/lqueue.h"
#include "flowslot/trust.h"

#define LSLOT_PREFIX "slot."
#define LSLOT_LOCK_WAIT_US 1000000
#define LSLOT_OPEN_TRIES 4

uint64_t lslot_hash(uint64_t hash, const char *s)
{
	for (; *s != '\0'; s++)
		hash = (hash ^ (unsigned char)*s) * UINT64_C(1099511628211);
	return hash;
}

void lslot_file_name(const char *key, char *out, size_t outsz)
{
	/* Room left for a cut name's "~" and 16 hex digits. */
	const size_t readable_max = outsz - 1 - 17;
	size_t o = (size_t)snprintf(out, outsz, "%s", LSLOT_PREFIX);
	bool cut = false;

	for (const char *p = key; *p != '\0'; p++) {
		if (cut || o + (*p == '/' ? 3 : 1) > readable_max) {
			cut = true;
		} else if (*p == '/') {
			memcpy(out + o, "%2F", 3);
			o += 3;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
	if (cut)
		snprintf(out + o, outsz - o, "~%016" PRIx64, lslot_hash(LSLOT_HASH_START, key));
}

/* Opens dir, creating it when create, and checks that only we can write there. A directory
   missing and not to be created is not logged: -1 with errno ENOENT. */
static int lslot_open_dir(const pam_handle_t *pamh, const char *dir, bool create)
{
	const char *why;
	int dfd = trust_open_dir(dir, create, &why);

	if (dfd < 0 && !create && errno == ENOENT)
		return -1;
	if (dfd < 0 && errno == EPERM)
		log_msg(pamh, LOG_ERR, "local slot: %s %s (uid %u)", dir, why,
			(unsigned)geteuid());
	else if (dfd < 0)
		log_msg(pamh, LOG_ERR, "local slot: %s %s: %m", why, dir);
	return dfd;
}

/* Reads the stored schedule, "tat at" (a bare tat reads as written now), recovered as
   slot_recover says; a missing or garbled one reads as now_us. */
static int64_t lslot_read_tat(int fd, int64_t now_us)
{
	char buf[48];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *end;
	long long tat, at = now_us;

	if (n <= 0)
		return now_us;
	buf[n] = '\0';
	errno = 0;
	tat = strtoll(buf, &end, 10);
	if (errno == 0 && end != buf && *end == ' ' && end[1] >= '0' && end[1] <= '9')
		at = strtoll(end + 1, &end, 10);
	if (errno != 0 || end == buf || (*end != '\n' && *end != '\0') || tat < 0)
		return now_us;
	/* Waiters hold places in it (src/lqueue.c): it is live whatever its time. */
	if (*end == '\n' && end + 1 < buf + n)
		return INT64_MAX;
	return slot_recover(now_us, tat, at);
}

/* Whether the locked fd is still the file that dir names name: a pruner may have removed
   it between our open and our lock, and a decision on a removed file binds no one. */
static bool lslot_still_named(int dfd, const char *name, int fd)
{
	struct stat held, named;

	return fstat(fd, &held) == 0 && held.st_nlink != 0 &&
	       fstatat(dfd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
	       held.st_ino == named.st_ino && held.st_dev == named.st_dev;
}

/* Removes the schedule file name if its time has passed (a schedule that says nothing any
   more, as Redis lets its key expire), unless someone holds it. Returns whether it did. */
static bool lslot_prune_one(int dfd, const char *name)
{
	struct stat st;
	bool gone = false;
	int64_t now_us = fstime_mono_us();
	int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return false;
	/* A live schedule, the common case, is seen without locking; it is read again under
	   the lock before it goes. */
	if (fstat(fd, &st) == 0 && trust_own_file(&st, 0) && lslot_read_tat(fd, now_us) <= now_us &&
	    flock(fd, LOCK_EX | LOCK_NB) == 0 && lslot_still_named(dfd, name, fd) &&
	    lslot_read_tat(fd, now_us) <= now_us)
		gone = unlinkat(dfd, name, 0) == 0;
	close(fd); /* and with it the lock */
	return gone;
}

/* Counts the schedule files in dfd, after removing those whose time has passed if prune;
   -1 if the directory cannot be read. Other files (node.* of ncache.c) are not touched. */
static int lslot_scan(int dfd, const char *prefix, bool prune)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	const struct dirent *e;
	int n = 0;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		if (!prune || !lslot_prune_one(dfd, e->d_name))
			n++;
	}
	closedir(d);
	return n;
}

/* Before a new schedule file is made: prunes when there are many, and turns name into one
   of the shared schedules when too many are still live, so that the directory stays
   bounded whatever the number of keys. */
static void lslot_make_room(int dfd, const char *prefix, const char *key, char *name,
			    size_t namesz)
{
	int n = lslot_scan(dfd, prefix, false);

	if (n >= LSLOT_PRUNE_AT)
		n = lslot_scan(dfd, prefix, true);
	if (n >= LSLOT_FILES_MAX)
		snprintf(name, namesz, "%s~shared.%02u", prefix,
			 (unsigned)(lslot_hash(LSLOT_HASH_START, key) % LSLOT_SHARED));
}

/* Opens the schedule file for key, named name (or a shared one, see lslot_make_room). */
static int lslot_open_file(const pam_handle_t *pamh, int dfd, const struct lslot_call *call,
			   char *name, size_t namesz, bool peek)
{
	struct stat st;
	int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	/* peek creates nothing: a schedule with no file is an empty one. */
	if (fd < 0 && errno == ENOENT && peek)
		return -1;
	if (fd < 0 && errno == ENOENT) {
		lslot_make_room(dfd, call->prefix, call->key, name, namesz);
		fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		log_msg(pamh, LOG_ERR, "local slot: cannot open %s/%s: %m", call->dir, name);
		return -1;
	}
	/* No link at all: pruned since the open, which the caller sees after locking. */
	if (fstat(fd, &st) != 0 || !trust_own_file(&st, 077)) {
		log_msg(pamh, LOG_ERR,
			"local slot: %s/%s must be a regular file of uid %u, mode 0600, one link",
			call->dir, name, (unsigned)geteuid());
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads the whole schedule file, bounded: its queue can hold LQUEUE_MAX waiters. */
static char *lslot_read_all(int fd)
{
	size_t max = 64 + (size_t)LQUEUE_MAX * 2 * 128, n = 0;
	struct stat st;
	char *buf;
	ssize_t r;

	/* As large as the file is now (it is locked), within the bound. */
	if (fstat(fd, &st) == 0 && (size_t)st.st_size < max)
		max = (size_t)st.st_size;
	buf = malloc(max + 1);
	if (buf == NULL)
		return NULL;
	while (n < max && (r = pread(fd, buf + n, max - n, (off_t)n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return NULL;
		}
		n += (size_t)r;
	}
	buf[n] = '\0';
	return buf;
}

static int lslot_write_all(int fd, const char *text, size_t len)
{
	if (pwrite(fd, text, len, 0) != (ssize_t)len || ftruncate(fd, (off_t)len) != 0)
		return -1;
	return 0;
}

/* Opens and locks the schedule file for key, the one dir names once locked; -1 if none,
   logged. */
static int lslot_open_locked(const pam_handle_t *pamh, int dfd, const struct lslot_call *call,
			     char *name, size_t namesz, bool peek)
{
	const char *dir = call->dir;

	for (int tries = 0; tries < LSLOT_OPEN_TRIES; tries++) {
		int fd = lslot_open_file(pamh, dfd, call, name, namesz, peek);

		if (fd < 0)
			return -1;
		if (trust_lock(fd, LOCK_EX, LSLOT_LOCK_WAIT_US) != 0) {
			log_msg(pamh, LOG_ERR, "local slot: cannot lock %s/%s: %m", dir, name);
			close(fd);
			return -1;
		}
		if (lslot_still_named(dfd, name, fd))
			return fd;
		close(fd);
	}
	log_msg(pamh, LOG_ERR, "local slot: %s/%s was removed %d times while opening it", dir, name,
		LSLOT_OPEN_TRIES);
	return -1;
}

/* One step of the file's queue, the file locked. */
static enum slot_verdict lslot_step(const struct lslot_call *call, int fd, struct slot_result *res)
{
	struct lqueue q;
	enum slot_verdict v = SLOT_UNAVAILABLE;
	char *text = lslot_read_all(fd), *out = NULL;
	long len;

	if (text == NULL || lqueue_read(&q, text) != 0) {
		free(text);
		return SLOT_UNAVAILABLE;
	}
	free(text);
	const int64_t window_us[] = {
		[LSLOT_ADMIT_NEAR] = slot_commit_us(call->p),
		[LSLOT_ADMIT_DUE] = 0,
		[LSLOT_ADMIT_NEVER] = -1, /* a slot is never before now */
	};

	v = lqueue_step(&q, call->p, call->per_host, call->op, call->place, getpid(),
			fstime_mono_us(), window_us[call->admit], res);
	if (call->op != SLOT_PEEK && q.changed &&
	    ((len = lqueue_write(&q, &out)) < 0 || lslot_write_all(fd, out, (size_t)len) != 0))
		v = SLOT_UNAVAILABLE;
	free(out);
	lqueue_free(&q);
	return v;
}

/* peek on a schedule that has no file (nor directory): an empty queue. */
static enum slot_verdict lslot_peek_empty(const struct lslot_call *call, struct slot_result *res)
{
	struct lqueue q;
	enum slot_verdict v;

	if (lqueue_read(&q, "") != 0)
		return SLOT_UNAVAILABLE;
	v = lqueue_step(&q, call->p, call->per_host, SLOT_PEEK, call->place, getpid(),
			fstime_mono_us(), slot_commit_us(call->p), res);
	lqueue_free(&q);
	return v;
}

enum slot_verdict lslot_call(const pam_handle_t *pamh, const struct lslot_call *given,
			     struct slot_result *res)
{
	enum slot_verdict verdict = SLOT_UNAVAILABLE;
	struct lslot_call c = *given;
	const struct lslot_call *call = &c;
	const bool peek = call->op == SLOT_PEEK;
	char name[NAME_MAX + 1];
	int dfd, fd = -1;

	lslot_file_name(call->key, name, sizeof(name));
	if (c.prefix == NULL)
		c.prefix = LSLOT_PREFIX;
	else /* the same length as LSLOT_PREFIX, so the name fits as it did */
		memcpy(name, c.prefix, sizeof(LSLOT_PREFIX) - 1);
	dfd = lslot_open_dir(pamh, call->dir, !peek);
	if (dfd >= 0)
		fd = lslot_open_locked(pamh, dfd, call, name, sizeof(name), peek);
	if (fd < 0 && peek && errno == ENOENT) {
		if (dfd >= 0)
			close(dfd);
		return lslot_peek_empty(call, res);
	}
	if (fd >= 0) {
		verdict = lslot_step(call, fd, res);
		if (verdict == SLOT_UNAVAILABLE)
			log_msg(pamh, LOG_ERR, "local slot: cannot read or write %s/%s: %m",
				call->dir, name);
		close(fd); /* and with it the lock */
	}
	if (dfd >= 0)
		close(dfd);
	return verdict;
}
