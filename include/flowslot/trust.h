/* SPDX-License-Identifier: BSD-3-Clause */
/* Whom the module trusts with a file: every owner, mode and symbolic-link check it makes. Its
   own files in state_dir, opened only where no one else can write; root's files that configure
   it. */
#ifndef FLOWSLOT_TRUST_H
#define FLOWSLOT_TRUST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Opens dir (a directory, not a symlink) if it is owned by the effective uid and writable by
   no one else; creates it 0700 first when create. Returns an O_CLOEXEC descriptor, or -1
   with *why saying what failed ("cannot create", "cannot open": errno is set; "is not a
   directory owned by this uid and writable by no one else"). */
int trust_open_dir(const char *dir, bool create, const char **why);

/* Whether st is a file of ours: regular, owned by the effective uid, at most one link (none:
   unlinked since it was opened), and none of the permission bits in forbidden (077: none for
   group or others). */
bool trust_own_file(const struct stat *st, mode_t forbidden);

/* Opens path read-only if root keeps it for us (cf. pam-u2f open_safely): an absolute path,
   not a symbolic link, a regular file owned by root and writable by no one else; when secret,
   readable by no one else either. Returns an O_CLOEXEC descriptor and its stat, or -1 with
   *why; errno is ENOENT for a missing file, EPERM for one refused. */
int trust_open_root_file(const char *path, bool secret, struct stat *st, const char **why);

/* Opens the directory path read-only under the same rules: an absolute path, not a symbolic
   link, a directory owned by root and writable by no one else. Returns an O_CLOEXEC
   descriptor and its stat, or -1 with *why; errno as trust_open_root_file's. */
int trust_open_root_dir(const char *path, struct stat *st, const char **why);

/* Takes fd's flock (op: LOCK_EX or LOCK_SH), waiting at most wait_us: a holder that is
   stopped, or a hung file system, must not hold every login with it. Returns 0, or -1 with
   errno (ETIMEDOUT when the wait ran out). */
int trust_lock(int fd, int op, int64_t wait_us);

/* How a wait for a file's lock ended (trust_lock_watch). */
enum trust_lock_end {
	TRUST_LOCKED,	   /* the lock is ours */
	TRUST_LOCK_BUSY,   /* the wait ran out while the lock went from holder to holder */
	TRUST_LOCK_STUCK,  /* one holder kept it stuck_us, the file unchanged (or all of a
			      shorter wait, of stuck_us / 4 at least): it is stuck */
	TRUST_LOCK_FAILED, /* flock failed otherwise: errno says why */
	TRUST_LOCK_MOVED,  /* the file was marked end_mode: its lock no longer matters */
};

/* A wait for a file's lock: how long it may take, and what it saw of the holders. */
struct trust_lock_wait {
	int64_t wait_us;   /* at most this long in all */
	int64_t stuck_us;  /* a holder seen this long, the file unchanged, is stuck; 0: never */
	mode_t end_mode;   /* mode bits that, once set on the file, end the wait (with stuck_us) */
	pid_t holder;	   /* out: the holder last seen (/proc/locks), 0 if none could be */
	int64_t held_us;   /* out: how long that holder was seen holding, the file unchanged */
	int64_t waited_us; /* out: the whole wait */
	unsigned tries;	   /* out: flock calls made, the wait's cost */
	unsigned looks;	   /* out: reads of /proc/locks, its cost to the host's other locks */
};

/* Takes fd's flock as trust_lock does, telling a stuck holder from a busy file: polled from
   1 ms apart up to 20 ms apart, and, when w->stuck_us, each time the lock is refused, whether
   the file changed, and who holds it (the FLOCK lines of fd's inode in /proc/locks) at the
   first refusal, before ending stuck, and while the file has stood unchanged for an eighth of
   w->stuck_us. A holder kept for w->stuck_us with the file unchanged ends the wait at once
   (TRUST_LOCK_STUCK), as does one kept through the whole of a shorter wait, if that is a
   quarter of w->stuck_us at least; holders that come and go are waited out until w->wait_us
   (TRUST_LOCK_BUSY). A file given one of w->end_mode's bits meanwhile ends it at the next
   poll (TRUST_LOCK_MOVED). */
enum trust_lock_end trust_lock_watch(int fd, int op, struct trust_lock_wait *w);

#endif
