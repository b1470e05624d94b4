/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/waiters.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowslot/hash.h"
#include "flowslot/log.h"
#include "flowslot/trust.h"

#define WAITERS_MAGIC UINT32_C(0x31575346) /* "FSW1" */
/* The check that tells a whole record from one read while it was being written. */
#define WAITERS_CHECK UINT64_C(0x9e3779b97f4a7c15)

/* A slot of the table: the locks are on its first two bytes, the record is the slot. */
struct waiters_entry {
	uint32_t magic;
	/* The waiter's slot on a shared schedule, in ms after begun_us; 0: none. Outside the
	   check, which an earlier version computes without it: written alone as it moves. */
	uint32_t slot_ms;
	uint64_t key_hash;
	int64_t begun_us;
	uint64_t check;
};

enum waiters_byte {
	WAITERS_CLAIM, /* locked: the slot is taken */
	WAITERS_READY, /* locked: and its record is written */
};

static off_t waiters_offset(int slot)
{
	return (off_t)slot * (off_t)sizeof(struct waiters_entry);
}

static struct flock waiters_range(int slot, enum waiters_byte b, short type)
{
	return (struct flock){ .l_type = type,
			       .l_whence = SEEK_SET,
			       .l_start = waiters_offset(slot) + (off_t)b,
			       .l_len = 1 };
}

static uint64_t waiters_check(const struct waiters_entry *e)
{
	return (e->key_hash ^ (uint64_t)e->begun_us ^ e->magic) * WAITERS_CHECK;
}

/* Opens the table in state_dir, checked: a regular file of ours, 0600, one link; for
   reading, or (create) for writing too, made as needed. */
static int waiters_open(const char *state_dir, bool create, const char **why)
{
	struct stat st;
	int dfd = trust_open_dir(state_dir, create, why), fd = -1;

	if (dfd < 0)
		return -1;
	fd = openat(dfd, WAITERS_FILE,
		    (create ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd < 0) {
		*why = "cannot open the table of waiters";
	} else if (fstat(fd, &st) != 0 || !trust_own_file(&st, 077)) {
		*why = "the table of waiters must be a regular file of this uid, mode 0600, one link";
		close(fd);
		fd = -1;
		errno = EPERM;
	}
	close(dfd);
	return fd;
}

/* A descriptor of wfd's file for reading only, which a waiter keeps: a file open for
   writing for as long as logins wait would stop its file system from being remounted
   read-only (EBUSY). */
static int waiters_reopen(int wfd, const char **why)
{
	char self[32];
	struct stat ws, rs;
	int fd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", wfd);
	fd = open(self, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && (fstat(wfd, &ws) != 0 || fstat(fd, &rs) != 0 || ws.st_dev != rs.st_dev ||
			ws.st_ino != rs.st_ino)) {
		close(fd);
		fd = -1;
		errno = ESTALE;
	}
	if (fd < 0)
		*why = "cannot open the table of waiters for reading";
	return fd;
}

/* The first slot of the table that no one holds, claimed by a read lock on rfd; -1 with *why
   when none could be. Claims are made one at a time (the caller holds the table's flock), so
   that two claimers never take one slot, as read locks do not exclude each other. */
static int waiters_claim(int rfd, const char **why)
{
	for (int slot = 0; slot < WAITERS_MAX; slot++) {
		struct flock held = waiters_range(slot, WAITERS_CLAIM, F_WRLCK),
			     claim = waiters_range(slot, WAITERS_CLAIM, F_RDLCK);

		if (fcntl(rfd, F_OFD_GETLK, &held) != 0) {
			*why = "cannot lock a slot of the table of waiters";
			return -1;
		}
		if (held.l_type != F_UNLCK)
			continue;
		if (fcntl(rfd, F_OFD_SETLK, &claim) == 0)
			return slot;
		*why = "cannot lock a slot of the table of waiters";
		return -1;
	}
	*why = "every slot of the table of waiters is taken";
	errno = ENOSPC;
	return -1;
}

/* slot_us as a record keeps it. */
static uint32_t waiters_slot_ms(int64_t begun_us, int64_t slot_us)
{
	int64_t ms;

	if (slot_us <= 0)
		return 0;
	ms = (slot_us - begun_us + 999) / 1000;
	return ms < 1 ? 1 : ms > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

void waiter_join(const pam_handle_t *pamh, const char *state_dir, const char *key,
		 int64_t begun_us, int64_t slot_us, struct waiter *w)
{
	struct waiters_entry e = { .magic = WAITERS_MAGIC,
				   .slot_ms = waiters_slot_ms(begun_us, slot_us),
				   .key_hash = hash_str(HASH_START, key),
				   .begun_us = begun_us };
	const char *why;
	int wfd = waiters_open(state_dir, true, &why), rfd = -1, slot = -1;

	w->fd = -1;
	e.check = waiters_check(&e);
	if (wfd >= 0)
		rfd = waiters_reopen(wfd, &why);
	if (rfd >= 0 && flock(wfd, LOCK_EX) != 0)
		why = "cannot lock the table of waiters";
	else if (rfd >= 0)
		slot = waiters_claim(rfd, &why);
	if (slot >= 0) {
		struct flock ready = waiters_range(slot, WAITERS_READY, F_RDLCK);

		/* Written before it is said to be: a reader never takes half a record for one. */
		if (pwrite(wfd, &e, sizeof(e), waiters_offset(slot)) == (ssize_t)sizeof(e) &&
		    fcntl(rfd, F_OFD_SETLK, &ready) == 0) {
			close(wfd); /* and with it the flock */
			w->fd = rfd;
			w->slot = slot;
			w->begun_us = begun_us;
			w->slot_ms = e.slot_ms;
			return;
		}
		why = "cannot write the table of waiters";
	}
	log_msg(pamh, LOG_WARNING, "waiters: %s in %s: %m: this wait is not counted as the host's",
		why, state_dir);
	if (rfd >= 0)
		close(rfd);
	if (wfd >= 0)
		close(wfd);
}

void waiter_slot(struct waiter *w, int64_t slot_us)
{
	uint32_t ms;
	char self[32];
	int fd;

	if (w == NULL || w->fd < 0 || (ms = waiters_slot_ms(w->begun_us, slot_us)) == w->slot_ms)
		return;
	/* For writing only while it writes (see waiters_reopen). */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", w->fd);
	fd = open(self, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (pwrite(fd, &ms, sizeof(ms),
		   waiters_offset(w->slot) + (off_t)offsetof(struct waiters_entry, slot_ms)) ==
	    (ssize_t)sizeof(ms))
		w->slot_ms = ms;
	close(fd);
}

void waiter_leave(struct waiter *w)
{
	/* The record may stay: a slot counts only while it is locked. */
	if (w->fd >= 0)
		close(w->fd); /* and with it the locks */
	w->fd = -1;
}

/* Whether fd's slot is a waiter's whose record is written, and if so that record, whole. */
static bool waiters_live(int fd, int slot, struct waiters_entry *e)
{
	struct flock ready = waiters_range(slot, WAITERS_READY, F_WRLCK);

	if (fcntl(fd, F_OFD_GETLK, &ready) != 0 || ready.l_type == F_UNLCK)
		return false;
	/* Its record was written before the lock was taken: only a slot given up and taken
	   again since could be read half written, and is then read again. */
	for (int tries = 0; tries < 3; tries++)
		if (pread(fd, e, sizeof(*e), waiters_offset(slot)) == (ssize_t)sizeof(*e) &&
		    e->magic == WAITERS_MAGIC && e->check == waiters_check(e))
			return true;
	return false;
}

int waiters_read(const char *state_dir, const char *key, int64_t now_us, struct waiters_view *v,
		 const char **why)
{
	const uint64_t key_hash = hash_str(HASH_START, key);
	struct waiters_entry e;
	struct stat st;
	int64_t waited_us;
	int fd = waiters_open(state_dir, false, why), slots;

	v->count = 0;
	v->longest_us = -1;
	v->last_slot_us = -1;
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) != 0) {
		*why = "cannot read the table of waiters";
		close(fd);
		return -1;
	}
	slots = st.st_size / (off_t)sizeof(e) < WAITERS_MAX ? (int)(st.st_size / (off_t)sizeof(e))
							    : WAITERS_MAX;
	for (int slot = 0; slot < slots; slot++) {
		if (!waiters_live(fd, slot, &e) || e.key_hash != key_hash)
			continue;
		v->count++;
		waited_us = now_us > e.begun_us ? now_us - e.begun_us : 0;
		if (waited_us > v->longest_us)
			v->longest_us = waited_us;
		if (e.slot_ms > 0 && e.begun_us + (int64_t)e.slot_ms * 1000 > v->last_slot_us)
			v->last_slot_us = e.begun_us + (int64_t)e.slot_ms * 1000;
	}
	close(fd);
	return 0;
}
