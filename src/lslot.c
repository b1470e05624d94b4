/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/lslot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/fstime.h"
#include "flowslot/hash.h"
#include "flowslot/lframe.h"
#include "flowslot/log.h"
#include "flowslot/lscript.h"
#include "flowslot/lstore.h"
#include "flowslot/trust.h"

#define LSLOT_PREFIX "slot."
#define LSLOT_EMPTY_S 10
/* A file pruned between its open and its lock is opened again: at least this many times, and
   for as long as the lock may be waited for, since each removal is another caller's progress. */
#define LSLOT_OPEN_TRIES 4
/* The longest the script may run on one call, the file locked: ten thousand times its work, so
   that a slow process (valgrind, a loaded machine) is not stopped; the instruction cap bounds its
   CPU. */
#define LSLOT_SCRIPT_US INT64_C(10000000)
/* A file taken over (its lock's holder stuck) is marked so (the sticky bit, which means
   nothing else on a file), and its schedule goes on in "next.INO", INO its inode number, made
   whole before it is linked there (linkat fails if another caller made it first). */
#define LSLOT_TAKEN S_ISVTX
#define LSLOT_NEXT_PREFIX "next."
/* The most files a schedule goes on through: one taken over per holder stuck on it. */
#define LSLOT_CHAIN_MAX 16

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
		snprintf(out + o, outsz - o, "~%016" PRIx64, hash_str(HASH_START, key));
}

/* Opens dir, creating it when create, and checks that only we can write there. A directory
   missing and not to be created is not logged: -1 with errno ENOENT; nor is one this process
   has no descriptor left for: EMFILE, its own limits (lslot_own). */
static int lslot_open_dir(const pam_handle_t *pamh, const char *dir, bool create)
{
	const char *why;
	int dfd = trust_open_dir(dir, create, &why);

	if (dfd < 0 && ((!create && errno == ENOENT) || errno == EMFILE))
		return -1;
	if (dfd < 0 && errno == EPERM)
		log_msg(pamh, LOG_ERR, "local slot: %s %s (uid %u)", dir, why, (unsigned)geteuid());
	else if (dfd < 0)
		log_msg(pamh, LOG_ERR, "local slot: %s %s: %m", why, dir);
	return dfd;
}

/* The most a schedule file's text can be: as many members as a store holds, each as long as
   it can be. */
#define LSLOT_TEXT_MAX (64 + (size_t)LSTORE_MEMBERS_MAX * (LSTORE_MEMBER_MAX + LSTORE_LINE_MORE))

/* Whether the locked fd is still the file that dir names name: a pruner may have removed
   it between our open and our lock, and a decision on a removed file binds no one. */
static bool lslot_still_named(int dfd, const char *name, int fd)
{
	struct stat held, named;

	return fstat(fd, &held) == 0 && held.st_nlink != 0 &&
	       fstatat(dfd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
	       held.st_ino == named.st_ino && held.st_dev == named.st_dev;
}

/* The name of the file the schedule of inode ino goes on in once ino is taken over. */
static void lslot_next_name(ino_t ino, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s%llx", LSLOT_NEXT_PREFIX, (unsigned long long)ino);
}

/* Whether fd is the schedule's file now: linked (not pruned), and not taken over. */
static bool lslot_current(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_nlink != 0 && (st.st_mode & LSLOT_TAKEN) == 0;
}

/* Makes the file that fd's schedule goes on in (next.INO, made by a takeover) the one head
   names, if head still names fd: a takeover's chain is one link long, and gone at once.
   Renamed over the old one, it is never missing; a caller that still holds the old file
   finds it unlinked and looks again. */
static void lslot_swing(int dfd, const char *head, int fd)
{
	char next[sizeof(LSLOT_NEXT_PREFIX) + 20];
	struct stat st;

	if (head == NULL || fstat(fd, &st) != 0 || !lslot_still_named(dfd, head, fd))
		return;
	lslot_next_name(st.st_ino, next, sizeof(next));
	renameat(dfd, next, dfd, head);
}

/* The file fd's schedule goes on in: fd itself, or the last of the files it was taken over
   by, the others closed; each, while head names it, put in its place (lslot_swing). A file
   taken over whose next one is not made yet is returned, for the caller to take over. -1
   with errno (ELOOP: past LSLOT_CHAIN_MAX). */
static int lslot_follow(int dfd, const char *head, int fd)
{
	for (int hops = 0;; hops++) {
		char next[sizeof(LSLOT_NEXT_PREFIX) + 20];
		struct stat st;
		int nfd;

		if (fstat(fd, &st) != 0 || (st.st_mode & LSLOT_TAKEN) == 0)
			return fd;
		lslot_next_name(st.st_ino, next, sizeof(next));
		nfd = openat(dfd, next, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT)
			return fd;
		if (nfd >= 0)
			lslot_swing(dfd, head, fd);
		close(fd);
		if (nfd >= 0 && hops == LSLOT_CHAIN_MAX) {
			close(nfd);
			errno = ELOOP;
			return -1;
		}
		if (nfd < 0)
			return -1;
		if (fstat(nfd, &st) != 0 || !trust_own_file(&st, 077)) {
			close(nfd);
			errno = EPERM;
			return -1;
		}
		fd = nfd;
	}
}

/* Whether the schedule in fd says nothing any more: its key is gone, as Redis lets it expire
   once its last slot, lease and ghost have passed. What cannot be read is not idle: it is left
   alone, for the next call on it to say why. */
static bool lslot_idle(int fd)
{
	struct lframe where;
	struct lstore st;
	const char *why;
	char *text;
	bool idle = false, old;

	if (lframe_read(fd, LSLOT_TEXT_MAX, &text, &where, &why) == 0 &&
	    lstore_read(&st, text, fstime_mono_us(), &old, &why) == 0) {
		idle = !lstore_live(&st, st.now_us);
		lstore_free(&st);
	}
	free(text);
	return idle;
}

/* Removes the schedule file name if it is idle (a schedule that says nothing any more, as
   Redis lets its key expire), unless someone holds it or a file it was taken over by. An empty
   file is one its maker has yet to lock and write, unless it is older than LSLOT_EMPTY_S.
   Returns whether it did. */
static bool lslot_prune_one(int dfd, const char *name)
{
	int fd[LSLOT_CHAIN_MAX + 2];
	ino_t ino[LSLOT_CHAIN_MAX + 2];
	struct stat st = { 0 };
	bool gone = false, held;
	int n = 0;

	fd[0] = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd[0] < 0)
		return false;
	held = fstat(fd[0], &st) == 0 && trust_own_file(&st, 0) &&
	       (st.st_size > 0 || st.st_mtime < time(NULL) - LSLOT_EMPTY_S) &&
	       flock(fd[0], LOCK_EX | LOCK_NB) == 0 && lslot_still_named(dfd, name, fd[0]);
	ino[n++] = st.st_ino;
	/* Each file it was taken over by, locked in turn: the last one holds the schedule. */
	while (held && (st.st_mode & LSLOT_TAKEN) != 0 && n < (int)(sizeof(fd) / sizeof(fd[0]))) {
		char next[sizeof(LSLOT_NEXT_PREFIX) + 20];

		lslot_next_name(st.st_ino, next, sizeof(next));
		fd[n] = openat(dfd, next, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd[n] < 0)
			break; /* not made yet: its maker is under way */
		held = fstat(fd[n], &st) == 0 && trust_own_file(&st, 077) &&
		       flock(fd[n], LOCK_EX | LOCK_NB) == 0;
		ino[n++] = st.st_ino;
	}
	if (held && (st.st_mode & LSLOT_TAKEN) == 0 && lslot_idle(fd[n - 1])) {
		gone = unlinkat(dfd, name, 0) == 0;
		/* The next files go with it, while we hold them: no inode number is reused. */
		for (int i = 0; gone && i + 1 < n; i++) {
			char next[sizeof(LSLOT_NEXT_PREFIX) + 20];

			lslot_next_name(ino[i], next, sizeof(next));
			unlinkat(dfd, next, 0);
		}
	}
	for (int i = 0; i < n; i++)
		close(fd[i]); /* and with them the locks */
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

/* The shared schedule key goes to when it cannot have a file of its own. */
static void lslot_shared_name(const char *prefix, const char *key, char *name, size_t namesz)
{
	snprintf(name, namesz, "%s~shared.%02u", prefix,
		 (unsigned)(hash_str(HASH_START, key) % LSLOT_SHARED));
}

/* Before a new schedule file is made: prunes when there are many, and turns name into one
   of the shared schedules when too many are still live, so that the directory stays
   bounded whatever the number of keys. */
static void lslot_make_room(int dfd, const char *prefix, const char *key, char *name, size_t namesz)
{
	int n = lslot_scan(dfd, prefix, false);

	if (n >= LSLOT_PRUNE_AT)
		n = lslot_scan(dfd, prefix, true);
	if (n >= LSLOT_FILES_MAX)
		lslot_shared_name(prefix, key, name, namesz);
}

/* Whether dfd's file name holds a schedule that is not idle: read without its lock, as a
   hint (a decision is made under the lock, on whichever file is chosen). */
static bool lslot_live(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	bool live;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0 || !trust_own_file(&st, 077)) {
		close(fd);
		return false;
	}
	if ((fd = lslot_follow(dfd, NULL, fd)) < 0)
		return false;
	live = !lslot_idle(fd);
	close(fd);
	return live;
}

/* The file for a key that has none of its own (name): the shared one it hashes to while that
   one is live, for its logins may be waiting there; else, when make, its own, or a shared
   one if too many are live (lslot_make_room). */
static void lslot_elsewhere(int dfd, const struct lslot_call *call, char *name, size_t namesz,
			    bool make)
{
	char shared[NAME_MAX + 1];

	lslot_shared_name(call->prefix, call->key, shared, sizeof(shared));
	if (strcmp(shared, name) != 0 && lslot_live(dfd, shared))
		snprintf(name, namesz, "%s", shared);
	else if (make)
		lslot_make_room(dfd, call->prefix, call->key, name, namesz);
}

/* What lslot_call opens: the key's own file name, the one opened (own or shared), and how
   long it waited for its lock. */
struct lslot_file {
	const struct lslot_call *call;
	int dfd;
	char own[NAME_MAX + 1];
	char name[NAME_MAX + 1];
	int64_t start_us; /* when the call began, its tries again included */
	int64_t waited_us;
	bool busy; /* the lock went from holder to holder for all of lslot_lock_wait_us */
	bool take; /* the file is stuck (or taken over, its next one not made): take it over */
	bool limited; /* a descriptor this process's limit (RLIMIT_NOFILE) refused */
};

/* Opens the schedule file for the key into f->name (see lslot_elsewhere). */
static int lslot_open_file(const pam_handle_t *pamh, struct lslot_file *f, bool peek)
{
	const int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (peek ? 0 : O_CREAT);
	struct stat st;
	int fd;

	snprintf(f->name, sizeof(f->name), "%s", f->own);
	fd = openat(f->dfd, f->name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		lslot_elsewhere(f->dfd, f->call, f->name, sizeof(f->name), !peek);
		fd = openat(f->dfd, f->name, flags, 0600);
	}
	/* peek creates nothing: a schedule with no file is an empty one. */
	if (fd < 0 && errno == ENOENT && peek)
		return -1;
	if (fd < 0 && errno == EMFILE) {
		f->limited = true; /* said by lslot_call */
		return -1;
	}
	if (fd < 0) {
		log_msg(pamh, LOG_ERR, "local slot: cannot open %s/%s: %m", f->call->dir, f->name);
		return -1;
	}
	/* No link at all: pruned since the open, which the caller sees after locking. */
	if (fstat(fd, &st) != 0 || !trust_own_file(&st, 077)) {
		log_msg(pamh, LOG_ERR,
			"local slot: %s/%s must be a regular file of uid %u, mode 0600, one link",
			f->call->dir, f->name, (unsigned)geteuid());
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether the call is a login's reserve or renew on a schedule: its wait for the lock is
   part of its wait, bounded by its max_wait, and refused past it. */
static bool lslot_login(const struct lslot_call *call)
{
	return (call->op == SLOT_RESERVE || call->op == SLOT_RENEW) &&
	       strcmp(call->prefix, LSLOT_PREFIX) == 0;
}

/* How long a call from start_us waits for the file's lock while its holders come and go: a
   login's reservation or renewal as long as the login may still wait (its max_wait, or what is
   left of it), and at least LSLOT_STUCK_US, so that a stuck holder is told from a busy file,
   but never past its until_us (the try that keeps to the slot is over by the slot: *cut); any
   other call (leave, peek, reset, the pressure hold's line) LSLOT_LOCK_WAIT_US. */
static int64_t lslot_lock_wait_us(const struct lslot_call *call, int64_t start_us, bool *cut)
{
	int64_t wait_us = LSLOT_LOCK_WAIT_US;

	*cut = false;
	if (lslot_login(call)) {
		wait_us = call->p->max_wait_us > LSLOT_STUCK_US ? call->p->max_wait_us
								: LSLOT_STUCK_US;
		*cut = call->until_us != 0 && call->until_us - start_us < wait_us;
		if (*cut)
			wait_us = call->until_us > start_us ? call->until_us - start_us : 0;
	}
	return wait_us;
}

/* Says why the lock on f was not had: a renewal cut short by its slot (cut) as a renewal that
   failed, which the wait logs too, not as a file that cannot be used. */
static void lslot_lock_failed(const pam_handle_t *pamh, const struct lslot_file *f,
			      enum trust_lock_end end, const struct trust_lock_wait *w, bool cut)
{
	const char *dir = f->call->dir, *name = f->name;

	if (end == TRUST_LOCK_BUSY && cut)
		log_msg(pamh, LOG_WARNING,
			"local slot: %s/%s was busy until the slot, %" PRId64
			" ms: the place is not renewed",
			dir, name, w->waited_us / 1000);
	else if (end == TRUST_LOCK_STUCK && w->holder > 0)
		log_msg(pamh, LOG_ERR,
			"local slot: %s/%s is stuck: pid %ld has held its lock for %" PRId64
			" ms, changing nothing: the schedule goes on without it",
			dir, name, (long)w->holder, w->held_us / 1000);
	else if (end == TRUST_LOCK_STUCK)
		log_msg(pamh, LOG_ERR,
			"local slot: %s/%s is stuck: its lock has been held for %" PRId64
			" ms, changing nothing (the holder is not in /proc/locks): the schedule goes"
			" on without it",
			dir, name, w->held_us / 1000);
	else if (end == TRUST_LOCK_BUSY)
		log_msg(pamh, LOG_ERR,
			"local slot: cannot lock %s/%s within %" PRId64
			" ms: busy, its holders coming and going",
			dir, name, w->waited_us / 1000);
	else
		log_msg(pamh, LOG_ERR, "local slot: cannot lock %s/%s: %m", dir, name);
}

/* Whether fd is taken over, its next file not made yet (lslot_follow): linked, and marked. */
static bool lslot_taken(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_nlink != 0 && (st.st_mode & LSLOT_TAKEN) != 0;
}

/* Opens the key's schedule file (lslot_open_file) and the file it goes on in (lslot_follow). */
static int lslot_open_current(const pam_handle_t *pamh, struct lslot_file *f, bool peek)
{
	int fd = lslot_open_file(pamh, f, peek);

	if (fd < 0 || (fd = lslot_follow(f->dfd, f->name, fd)) >= 0)
		return fd;
	f->busy = errno == ELOOP;
	f->limited = errno == EMFILE; /* said by lslot_call */
	if (!f->limited)
		log_msg(pamh, LOG_ERR, "local slot: cannot follow %s/%s to the file it goes on in: %s",
			f->call->dir, f->name,
			errno == ELOOP ? "taken over too many times" : strerror(errno));
	return fd;
}

/* Opens and locks the schedule file for the key, the one its schedule is in once locked; -1
   if none, logged. A holder stuck on it makes the call take it over (f->take), at once;
   holders that come and go are waited out until lslot_lock_wait_us (f->busy). */
static int lslot_open_locked(const pam_handle_t *pamh, struct lslot_file *f, bool peek)
{
	const int64_t start_us = f->start_us;
	bool cut;
	const int64_t wait_us = lslot_lock_wait_us(f->call, start_us, &cut);
	int tries;

	for (tries = 0; tries < LSLOT_OPEN_TRIES || fstime_mono_us() - start_us < wait_us;
	     tries++) {
		struct trust_lock_wait w = { .wait_us = start_us + wait_us - fstime_mono_us(),
					     .stuck_us = LSLOT_STUCK_US,
					     .end_mode = LSLOT_TAKEN };
		int fd = lslot_open_current(pamh, f, peek);
		enum trust_lock_end end;

		if (fd < 0)
			return -1;
		if (lslot_taken(fd)) {
			f->take = true;
			return fd;
		}
		end = trust_lock_watch(fd, LOCK_EX, &w);
		f->waited_us = fstime_mono_us() - start_us;
		if (end == TRUST_LOCK_MOVED) {
			close(fd);
			continue;
		}
		if (end == TRUST_LOCK_STUCK) {
			lslot_lock_failed(pamh, f, end, &w, cut);
			f->take = true;
			return fd;
		}
		if (end != TRUST_LOCKED) {
			int err = end == TRUST_LOCK_FAILED ? errno : ETIMEDOUT;

			f->busy = end == TRUST_LOCK_BUSY;
			lslot_lock_failed(pamh, f, end, &w, cut);
			close(fd);
			errno = err; /* never ENOENT, which would make a peek an empty schedule */
			return -1;
		}
		if (lslot_current(fd))
			return fd;
		close(fd);
	}
	log_msg(pamh, LOG_ERR,
		"local slot: %s/%s was removed %d times in %" PRId64 " ms while opening it",
		f->call->dir, f->name, tries, (fstime_mono_us() - start_us) / 1000);
	return -1;
}

/* What a call has to say of the file, logged once its lock is let go (the log may block). */
struct lslot_notes {
	char line[3][320];
	int n;
};

static void lslot_note(struct lslot_notes *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void lslot_note(struct lslot_notes *n, const char *fmt, ...)
{
	va_list ap;

	if (n->n == (int)(sizeof(n->line) / sizeof(n->line[0])))
		return;
	va_start(ap, fmt);
	vsnprintf(n->line[n->n++], sizeof(n->line[0]), fmt, ap);
	va_end(ap);
}

static void lslot_say(const pam_handle_t *pamh, const struct lslot_notes *n)
{
	for (int i = 0; i < n->n; i++)
		log_msg(pamh, LOG_ERR, "%s", n->line[i]);
}

/* ARGV for slot.lua, as src/rnode.c sends it to Redis. */
struct lslot_argv {
	char interval[24], burst[24], max_wait[24], per_host[16], lease[24], window[24];
	char age[24], floor[24];
	const char *v[14];
};

static void lslot_argv(const struct lslot_call *call, const struct slot_params *p,
		       struct lslot_argv *a)
{
	static const char *const ops[] = {
		[SLOT_RESERVE] = "reserve", [SLOT_RENEW] = "renew", [SLOT_LEAVE] = "leave",
		[SLOT_PEEK] = "peek",	    [SLOT_RESET] = "reset",
	};
	/* A login first in line is admitted within the commit window (a schedule), once its
	   slot has come (the pressure hold's line), or never (-1: the line under pressure). */
	const int64_t window_us[] = {
		[LSLOT_ADMIT_NEAR] = slot_commit_us(p),
		[LSLOT_ADMIT_DUE] = 0,
		[LSLOT_ADMIT_NEVER] = -1,
	};

	snprintf(a->interval, sizeof(a->interval), "%" PRId64, p->interval_us);
	snprintf(a->burst, sizeof(a->burst), "%" PRId64, p->burst);
	snprintf(a->max_wait, sizeof(a->max_wait), "%" PRId64, p->max_wait_us);
	snprintf(a->per_host, sizeof(a->per_host), "%d", call->per_host);
	snprintf(a->lease, sizeof(a->lease), "%" PRId64, SLOT_LEASE_US);
	snprintf(a->window, sizeof(a->window), "%" PRId64, window_us[call->admit]);
	snprintf(a->age, sizeof(a->age), "%" PRId64, p->age_us);
	snprintf(a->floor, sizeof(a->floor), "%" PRId64, call->floor_us > 0 ? call->floor_us : 0);
	a->v[0] = ops[call->op];
	a->v[1] = a->interval;
	a->v[2] = a->burst;
	a->v[3] = a->max_wait;
	a->v[4] = "0";
	a->v[5] = call->place->id;
	a->v[6] = call->place->who;
	a->v[7] = call->place->host;
	a->v[8] = a->per_host;
	a->v[9] = a->lease;
	a->v[10] = a->window;
	a->v[11] = "0"; /* the file's own schedule: its host hears of nothing else */
	a->v[12] = a->age;
	a->v[13] = a->floor;
}

/* A call this process's own limits stopped (its memory, its file size, its time): it refuses
   this login alone, and the store is left as it was (res->own_limits). */
static enum slot_verdict lslot_own(struct lslot_notes *notes, const struct lslot_file *f,
				   const char *what, struct slot_result *res)
{
	lslot_note(notes,
		   "local slot: %s/%s: %s: this login's own limits: it is refused, the schedule "
		   "left as it was",
		   f->call->dir, f->name, what);
	memset(res, 0, sizeof(*res));
	res->verdict = SLOT_UNAVAILABLE;
	res->own_limits = true;
	return SLOT_UNAVAILABLE;
}

/* A store too full or too heavy to decide on: a reservation is refused, as a full queue
   refuses, how much sooner it would have had to come not told (res->full); any other call
   cannot be decided. Nothing is written. */
static enum slot_verdict lslot_full(struct lslot_notes *notes, const struct lslot_file *f,
				    const struct lstore *st, const char *what,
				    struct slot_result *res)
{
	lslot_note(notes, "local slot: %s/%s is %s (%zu members): nothing changed", f->call->dir,
		   f->name, what, st->n);
	memset(res, 0, sizeof(*res));
	if (f->call->op != SLOT_RESERVE)
		return res->verdict = SLOT_UNAVAILABLE;
	res->verdict = SLOT_REFUSE;
	res->position = 1;
	res->deadline_us = fstime_mono_us();
	res->full = true;
	return SLOT_REFUSE;
}

/* Runs slot.lua on the store for p, its answer read into res. What stopped the script decides
   what follows: this process's own limits (lslot_own), its time, or a store too full or heavy
   (lslot_full) leave the store as it was; only an error of the script's on what the store holds (a file
   written by hand) makes it start afresh, and the script run again on the empty store, as
   slot.lua makes garbage in Redis start afresh. Returns the verdict, SLOT_UNAVAILABLE when it
   cannot decide. */
static enum slot_verdict lslot_run(struct lslot_notes *notes, const struct lslot_file *f,
				   struct lstore *st, const struct slot_params *p,
				   struct slot_result *res)
{
	const struct lslot_call *call = f->call;
	struct lslot_argv a;
	struct lscript_out out;
	char err[200], shown[160];
	const char *why = err;

	int64_t deadline_us = st->now_us + LSLOT_SCRIPT_US;

	if (call->until_us != 0 && call->until_us < deadline_us)
		deadline_us = call->until_us;
	lslot_argv(call, p, &a);
	for (int tries = 0; tries < 2; tries++) {
		if (lscript_run(st, call->key, a.v, 14, deadline_us, &out, err, sizeof(err)) == 0 &&
		    slot_read_answer(out.v, out.n, call->op, p, res, &why) == 0) {
			res->deadline_us = st->now_us + res->wait_us;
			return res->verdict;
		}
		log_escape(why, shown, sizeof(shown));
		/* Late on a reservation: its own time (10 s) ran out, and it is refused; late on
		   any other call: its bound (the slot) came first, a call that failed. */
		if (out.fault == LSCRIPT_FAULT_OWN ||
		    (out.fault == LSCRIPT_FAULT_LATE && call->op == SLOT_RESERVE))
			return lslot_own(notes, f, shown, res);
		if (out.fault == LSCRIPT_FAULT_LATE) {
			lslot_note(notes, "local slot: %s/%s: %s", call->dir, f->name, shown);
			return SLOT_UNAVAILABLE;
		}
		if (out.fault == LSCRIPT_FAULT_FULL)
			return lslot_full(notes, f, st, "full", res);
		if (out.fault == LSCRIPT_FAULT_HEAVY)
			return lslot_full(notes, f, st, "too heavy to decide on", res);
		lslot_note(notes, "local slot: %s/%s: the script failed: %s%s", call->dir, f->name,
			   shown, tries == 0 && st->n > 0 ? ": the schedule starts afresh" : "");
		if (st->n == 0)
			break;
		lstore_clear(st);
		st->changed = true;
		why = err;
	}
	return SLOT_UNAVAILABLE;
}

/* Reads the store of the file in: its text, and where that lies in the file (*where). A text
   that is not a store, or a frame that does not check (a file written by hand), is logged,
   and starts afresh; one mended is logged. Returns 0, 1 when this process's own memory ran
   out (nothing read), or -1, each logged. */
static int lslot_load(struct lslot_notes *notes, const struct lslot_file *f, int in,
		      struct lstore *st, struct lframe *where)
{
	const struct lslot_call *call = f->call;
	const char *why = "";
	char *text;
	bool old, framed;
	int r = lframe_read(in, LSLOT_TEXT_MAX, &text, where, &why);

	if (r < 0 && errno == ENOMEM)
		return 1;
	if (r < 0) {
		lslot_note(notes, "local slot: cannot read %s/%s: %m", call->dir, f->name);
		return -1;
	}
	framed = r == 0;
	r = lstore_read(st, framed ? text : "", fstime_mono_us(), &old, &why);
	free(text);
	if (r == -2)
		return 1;
	if (r != 0 || !framed) {
		lslot_note(notes, "local slot: %s/%s is not a schedule (%s): it starts afresh",
			   call->dir, f->name, why);
		st->changed = true;
	} else if (st->repaired != NULL) {
		lslot_note(notes, "local slot: %s/%s held %s: mended", call->dir, f->name,
			   st->repaired);
	}
	st->pid = getpid();
	st->pidns = lstore_pidns();
	return 0;
}

/* Writes st to out, its text at where: 0, 1 when this process's own limits stop it (its
   memory, its file size: nothing written), or -1 with errno. */
static int lslot_save(const struct lstore *st, int out, const struct lframe *where)
{
	char *buf = NULL;
	long len = lstore_write(st, &buf);
	int r;

	if (len < 0)
		return 1;
	r = lframe_write(out, buf, (size_t)len, where);
	free(buf);
	return r == 0 ? 0 : errno == EFBIG || errno == ENOMEM ? 1 : -1;
}

/* One call of the file's schedule, read from in (locked, or stuck) and written to out (in
   itself, a new file, or -1 for none); a login's max_wait less the time it waited for the
   lock. Written in place, the file must be the schedule's before the write and after it: one
   taken over or pruned meanwhile (the holder stopped) may have been read without this call,
   which is made again (*again, harmless: a call asked again holds no second place). */
static enum slot_verdict lslot_step(struct lslot_notes *notes, const struct lslot_file *f,
				    int in, int out, struct slot_result *res, bool *again)
{
	const struct lslot_call *call = f->call;
	struct slot_params p = *call->p;
	struct lframe where = { 0, 0 };
	struct lstore st;
	enum slot_verdict v;
	int r = lslot_load(notes, f, in, &st, &where);

	if (r > 0)
		return lslot_own(notes, f, "out of memory reading it", res);
	if (r < 0)
		return SLOT_UNAVAILABLE;
	if (out != in)
		where = (struct lframe){ 0, 0 }; /* a new file: nothing in it to keep */
	if (lslot_login(call))
		p.max_wait_us = p.max_wait_us > f->waited_us ? p.max_wait_us - f->waited_us : 0;
	v = lslot_run(notes, f, &st, &p, res);
	if (v == SLOT_UNAVAILABLE || res->full || call->op == SLOT_PEEK || out < 0 ||
	    (out == in && !st.changed)) {
		/* nothing to write */
	} else if (out == in && !lslot_current(in)) {
		*again = true;
	} else if ((r = lslot_save(&st, out, &where)) > 0) {
		v = lslot_own(notes, f, "cannot write it within its memory or file size", res);
	} else if (r < 0) {
		lslot_note(notes, "local slot: cannot write %s/%s: %m", call->dir, f->name);
		v = SLOT_UNAVAILABLE;
	} else if (out == in && !lslot_current(in)) {
		*again = true;
	}
	lstore_free(&st);
	return v;
}

/* Whether fd's file is as before (its size and times): no write between two looks. */
static bool lslot_unchanged(int fd, const struct stat *before)
{
	struct stat now;

	return fstat(fd, &now) == 0 && now.st_size == before->st_size &&
	       now.st_mtim.tv_sec == before->st_mtim.tv_sec &&
	       now.st_mtim.tv_nsec == before->st_mtim.tv_nsec;
}

/* The inode number of dfd's file name, 0 for none. */
static ino_t lslot_ino_of(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_ino : 0;
}

/* Whether nfd, linked as next (fd's successor), is where calls on head find the schedule:
   head names it, or head names fd and next names it. */
static bool lslot_reached(int dfd, const char *head, int fd, const char *next, int nfd)
{
	struct stat old, made;
	ino_t at_head;

	if (fstat(fd, &old) != 0 || fstat(nfd, &made) != 0)
		return false;
	at_head = lslot_ino_of(dfd, head);
	return at_head == made.st_ino ||
	       (at_head == old.st_ino && lslot_ino_of(dfd, next) == made.st_ino);
}

/* Removes name if it is fd's file. */
static void lslot_unlink_own(int dfd, const char *name, int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && lslot_ino_of(dfd, name) == st.st_ino)
		unlinkat(dfd, name, 0);
}

/* The call on a file whose lock's holder is stuck (fd): its schedule, read as it stands,
   goes on in a new file made whole, then linked as next.INO, INO fd's inode number (linkat
   fails if another made it first), and renamed over fd (lslot_swing). fd is marked taken
   over first, so that its holder, should it resume, finds its write may be lost and makes
   its call again. Two that take it over at once: the one whose linkat comes second makes its
   call again (*again), as does one that saw the holder write while it read. A peek only
   reads. */
static enum slot_verdict lslot_take(struct lslot_notes *notes, struct lslot_file *f, int fd,
				    struct slot_result *res, bool *again)
{
	char next[sizeof(LSLOT_NEXT_PREFIX) + 20], self[40];
	enum slot_verdict v;
	struct stat st;
	int nfd;

	if (f->call->op == SLOT_PEEK)
		return lslot_step(notes, f, fd, -1, res, again);
	if (fstat(fd, &st) != 0 || fchmod(fd, (st.st_mode & 07777) | LSLOT_TAKEN) != 0 ||
	    fstat(fd, &st) != 0) {
		lslot_note(notes, "local slot: cannot mark %s/%s taken over: %m", f->call->dir,
			   f->name);
		return SLOT_UNAVAILABLE;
	}
	nfd = openat(f->dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (nfd < 0 && errno == EMFILE) {
		f->limited = true;
		return SLOT_UNAVAILABLE;
	}
	if (nfd < 0) {
		lslot_note(notes, "local slot: cannot make a file in %s to take %s over: %m",
			   f->call->dir, f->name);
		return SLOT_UNAVAILABLE;
	}
	/* Locked before anyone can open it: the next caller waits for it to be made. */
	flock(nfd, LOCK_EX);
	v = lslot_step(notes, f, fd, nfd, res, again);
	lslot_next_name(st.st_ino, next, sizeof(next));
	snprintf(self, sizeof(self), "/proc/self/fd/%d", nfd);
	if (v == SLOT_UNAVAILABLE || res->full) {
		/* nothing made (logged): the file stays marked, for the next caller to take over */
	} else if (!lslot_unchanged(fd, &st)) {
		*again = true;
	} else if (linkat(AT_FDCWD, self, f->dfd, next, AT_SYMLINK_FOLLOW) != 0 &&
		   errno == EEXIST) {
		*again = true;
	} else if (errno = 0, faccessat(f->dfd, next, F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
		lslot_note(notes, "local slot: cannot link %s/%s to take %s over: %m",
			   f->call->dir, next, f->name);
		v = SLOT_UNAVAILABLE;
	} else if (!lslot_reached(f->dfd, f->name, fd, next, nfd)) {
		/* Linked after another took fd over and put its file in fd's place: a file no
		   call reaches, made of what fd held before. */
		lslot_unlink_own(f->dfd, next, nfd);
		*again = true;
	} else {
		lslot_swing(f->dfd, f->name, fd);
	}
	close(nfd);
	return v;
}

/* peek on a schedule that has no file (nor directory): an empty store. */
static enum slot_verdict lslot_peek_empty(struct lslot_notes *notes, const struct lslot_file *f,
					  struct slot_result *res)
{
	struct lstore st;
	const char *why;
	bool old;
	enum slot_verdict v;

	lstore_read(&st, "", fstime_mono_us(), &old, &why);
	st.pid = getpid();
	st.pidns = lstore_pidns();
	v = lslot_run(notes, f, &st, f->call->p, res);
	lstore_free(&st);
	return v;
}

/* A login that could not have the lock within its max_wait, its holders coming and going:
   refused, as a wait past it is, never let in without one; how much sooner it would have had
   to come cannot be told (res->lock_busy). */
static enum slot_verdict lslot_refuse_locked(const struct lslot_file *f, struct slot_result *res)
{
	memset(res, 0, sizeof(*res));
	res->verdict = SLOT_REFUSE;
	res->wait_us = f->waited_us;
	res->position = 1;
	res->deadline_us = fstime_mono_us();
	res->lock_busy = true;
	return SLOT_REFUSE;
}

/* The call, with its defaults; f->own its file's own name. */
static void lslot_prepare(const struct lslot_call *given, struct lslot_call *c,
			  struct lslot_file *f)
{
	*c = *given;
	memset(f, 0, sizeof(*f));
	f->call = c;
	f->dfd = -1;
	lslot_file_name(c->key, f->own, sizeof(f->own));
	if (c->prefix == NULL)
		c->prefix = LSLOT_PREFIX;
	else /* the same length as LSLOT_PREFIX, so the name fits as it did */
		memcpy(f->own, c->prefix, sizeof(LSLOT_PREFIX) - 1);
}

/* One try of the call on f: opened, locked (or taken over) and run. */
static enum slot_verdict lslot_try(const pam_handle_t *pamh, struct lslot_file *f,
				   struct lslot_notes *notes, struct slot_result *res, bool *again)
{
	const bool peek = f->call->op == SLOT_PEEK;
	enum slot_verdict verdict = SLOT_UNAVAILABLE;
	int fd = lslot_open_locked(pamh, f, peek);

	if (fd < 0 && peek && errno == ENOENT)
		verdict = lslot_peek_empty(notes, f, res);
	else if (fd < 0 && f->busy && lslot_login(f->call) && f->call->op == SLOT_RESERVE)
		verdict = lslot_refuse_locked(f, res);
	if (fd >= 0 && f->take)
		verdict = lslot_take(notes, f, fd, res, again);
	else if (fd >= 0)
		verdict = lslot_step(notes, f, fd, fd, res, again);
	if (fd >= 0)
		close(fd); /* and with it the lock, before anything is logged */
	return verdict;
}

enum slot_verdict lslot_call(const pam_handle_t *pamh, const struct lslot_call *given,
			     struct slot_result *res)
{
	enum slot_verdict verdict = SLOT_UNAVAILABLE;
	struct lslot_call c;
	struct lslot_file f;
	struct lslot_notes notes = { .n = 0 };
	bool again = true;

	memset(res, 0, sizeof(*res));
	res->verdict = SLOT_UNAVAILABLE;
	lslot_prepare(given, &c, &f);
	f.start_us = fstime_mono_us();
	f.dfd = lslot_open_dir(pamh, c.dir, given->op != SLOT_PEEK);
	if (f.dfd < 0) {
		f.limited = errno == EMFILE;
		again = false;
		if (c.op == SLOT_PEEK && errno == ENOENT)
			verdict = lslot_peek_empty(&notes, &f, res);
	}
	/* Made again while the file it was made on was taken over under it, or another took it
	   over first: each time another caller's progress. */
	for (int tries = 0; f.dfd >= 0 && again && tries < LSLOT_OPEN_TRIES; tries++) {
		again = false;
		f.take = f.busy = false;
		verdict = lslot_try(pamh, &f, &notes, res, &again);
	}
	if (again) {
		lslot_note(&notes, "local slot: %s/%s was taken over %d times under the call",
			   c.dir, f.name, LSLOT_OPEN_TRIES);
		verdict = SLOT_UNAVAILABLE;
	}
	if (verdict == SLOT_UNAVAILABLE && f.limited && !res->own_limits)
		verdict = lslot_own(&notes, &f, "no file descriptor left (RLIMIT_NOFILE)", res);
	lslot_say(pamh, &notes);
	if (f.dfd >= 0)
		close(f.dfd);
	return verdict;
}

void lslot_where(const char *dir, const char *key, char *out, size_t outsz)
{
	const struct lslot_call call = { .dir = dir, .key = key, .prefix = LSLOT_PREFIX };
	char name[NAME_MAX + 1];
	const char *why;
	int dfd = trust_open_dir(dir, false, &why);

	lslot_file_name(key, name, sizeof(name));
	if (dfd >= 0 && faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) != 0)
		lslot_elsewhere(dfd, &call, name, sizeof(name), false);
	if (dfd >= 0)
		close(dfd);
	snprintf(out, outsz, "%s/%s", dir, name);
}
