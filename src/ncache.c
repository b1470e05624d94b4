/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/ncache.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/fstime.h"
#include "flowslot/hash.h"
#include "flowslot/lstore.h"
#include "flowslot/slot.h"
#include "flowslot/trust.h"
#include "flowslot/url.h"

#define NCACHE_FILE_MAX 300 /* "host:port\n" */

void ncache_name(const struct url *u, const char *what, char *out, size_t outsz)
{
	char port[16];
	uint64_t hash = hash_str(HASH_START,
				   u->backend == URL_BACKEND_SENTINEL ? "sentinel" : "cluster");

	/* Two stacks that name other servers must not share entries. */
	for (int i = 0; i < u->n_nodes; i++) {
		snprintf(port, sizeof(port), ",%d", u->nodes[i].port);
		hash = hash_str(hash_str(hash, u->nodes[i].host), port);
	}
	hash = hash_str(hash, u->master);
	snprintf(out, outsz, "node.%016" PRIx64 ".%s", hash, what);
}

/* Whether an entry written at mtime is at most max_age_s old. One written later than now
   (the clock was stepped back since) has no age to trust: taken, it would outlive max_age by
   the size of the step. A second's grace, for file times finer than time()'s. */
static bool ncache_fresh(time_t mtime, int max_age_s)
{
	time_t age = time(NULL) - mtime;

	return age >= -1 && age <= max_age_s;
}

/* Reads the entry name under dir into buf (bufsz bytes, NUL-terminated), if it was written
   in the last max_age_s seconds (0: whenever) and is one line. Returns its length without the
   newline, or -1. */
static ssize_t ncache_read(const char *dir, const char *name, int max_age_s, char *buf,
			   size_t bufsz)
{
	struct stat st;
	const char *why; /* unused: a hint that cannot be trusted is no hint */
	ssize_t n = -1;
	int dfd = trust_open_dir(dir, false, &why), fd = -1;

	if (dfd >= 0)
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && trust_own_file(&st, 022) &&
	    st.st_size < (off_t)bufsz && (max_age_s == 0 || ncache_fresh(st.st_mtime, max_age_s)))
		n = read(fd, buf, bufsz - 1);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (n <= 1 || buf[n - 1] != '\n')
		return -1;
	buf[n - 1] = '\0';
	return n - 1;
}

int ncache_get(const char *dir, const char *name, int max_age_s, struct url_node *node)
{
	char buf[NCACHE_FILE_MAX + 1];
	ssize_t n = ncache_read(dir, name, max_age_s, buf, sizeof(buf));

	return n < 0 ? -1 : url_parse_endpoint(buf, (size_t)n, node);
}

/* Stores len bytes of buf as the entry name under dir (created 0700 when missing). */
static int ncache_write(const char *dir, const char *name, const char *buf, int len)
{
	char tmp[NCACHE_NAME_MAX + 48];
	const char *why; /* unused, as in ncache_read */
	int dfd = trust_open_dir(dir, true, &why), fd = -1;
	unsigned rnd = 0;
	bool stored = false;

	if (dfd < 0)
		return -1;
	/* Written whole under a name of its own, then renamed over the entry: a reader sees the
	   old node or the new one, never half of either. */
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (unsigned)gettid();
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%08x", name, (long)getpid(), rnd);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		bool written = write(fd, buf, (size_t)len) == len;

		stored = close(fd) == 0 && written && renameat(dfd, tmp, dfd, name) == 0;
		if (!stored)
			unlinkat(dfd, tmp, 0);
	}
	close(dfd);
	return stored ? 0 : -1;
}

int ncache_put(const char *dir, const char *name, const struct url_node *node)
{
	char buf[NCACHE_FILE_MAX + 1];
	int len = snprintf(buf, sizeof(buf), "%s:%d\n", node->host, node->port);

	return len > 0 && len < (int)sizeof(buf) ? ncache_write(dir, name, buf, len) : -1;
}

void ncache_heard_name(const struct url *u, const char *key, char *out, size_t outsz)
{
	char node[NCACHE_NAME_MAX], where[16];
	uint64_t hash;

	/* The nodes (Sentinel, Cluster), and the server of a direct url, its database and key. */
	ncache_name(u, "heard", node, sizeof(node));
	snprintf(where, sizeof(where), ",%d,%d,", u->port, u->db);
	hash = hash_str(hash_str(HASH_START, node), u->host);
	hash = hash_str(hash_str(hash_str(hash, u->socket), where), key);
	snprintf(out, outsz, "heard.%016" PRIx64, hash);
}

/* An entry of the heard table. Readers take no lock: a record read while it was written
   fails its check, and is read again. A writer holds an open file description's lock on the
   first byte of the one entry it writes, never waited for: a writer stopped there pins that
   entry alone, and the others write elsewhere; one killed lets it go with its process. */
struct ncache_heard_entry {
	uint64_t key;	 /* the hash of the entry's name */
	uint64_t boot;	 /* the hash of the boot's id: next_us is on that boot's CLOCK_MONOTONIC */
	int64_t next_us; /* the next slot heard */
	uint64_t check;	 /* of the three above */
};

_Static_assert(sizeof(struct ncache_heard_entry) == NCACHE_HEARD_ENTRY_SIZE,
	       "the heard table's entries are NCACHE_HEARD_ENTRY_SIZE bytes");

/* How often a table that holds a torn record is read again; how often a writer reads it again
   after finding the entry it chose written by another meanwhile. */
#define NCACHE_HEARD_READS 3
#define NCACHE_HEARD_TRIES 16

static uint64_t ncache_heard_check(const struct ncache_heard_entry *e)
{
	const unsigned char *b = (const unsigned char *)e;
	uint64_t hash = HASH_START;

	for (size_t i = 0; i < offsetof(struct ncache_heard_entry, check); i++)
		hash = (hash ^ b[i]) * UINT64_C(1099511628211);
	return hash;
}

/* This boot's id, hashed; 0 if it cannot be read. */
static uint64_t ncache_heard_boot(void)
{
	char boot[LSTORE_BOOT_MAX + 1];

	lstore_boot(boot);
	return boot[0] == '\0' ? 0 : hash_str(HASH_START, boot) | 1;
}

static bool ncache_heard_valid(const struct ncache_heard_entry *e, uint64_t boot)
{
	return e->check == ncache_heard_check(e) && e->boot == boot;
}

/* An entry that says nothing any more: garbled, another boot's, or its slot passed. */
static bool ncache_heard_free(const struct ncache_heard_entry *e, uint64_t boot, int64_t now_us)
{
	return !ncache_heard_valid(e, boot) || e->next_us <= now_us;
}

static bool ncache_heard_own(const struct ncache_heard_entry *e,
			     const struct ncache_heard_entry *mine)
{
	return ncache_heard_valid(e, mine->boot) && e->key == mine->key;
}

/* Removes the files of 0.11.0's entries, one a schedule (heard.HASH, and a temporary
   heard.HASH.tmp.*), which the table replaces. */
static void ncache_heard_forget_files(int dfd)
{
	static const char old[] = "heard.";
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	const struct dirent *e;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, old, sizeof(old) - 1) == 0)
			(void)unlinkat(dfd, e->d_name, 0);
	closedir(d);
}

/* Opens the table under dir, a file of ours; for writing too when create, dir (0700) and the
   table made as needed. */
static int ncache_heard_open(const char *dir, bool create)
{
	const int flags = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	const char *why; /* unused, as in ncache_read */
	struct stat st;
	int dfd = trust_open_dir(dir, create, &why), fd = -1;
	bool made = false;

	if (dfd < 0)
		return -1;
	if (create) {
		fd = openat(dfd, NCACHE_HEARD_FILE, O_RDWR | O_CREAT | O_EXCL | flags, 0600);
		made = fd >= 0;
	}
	if (fd < 0)
		fd = openat(dfd, NCACHE_HEARD_FILE, (create ? O_RDWR : O_RDONLY) | flags);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !trust_own_file(&st, 077))) {
		close(fd);
		fd = -1;
	}
	if (made && fd >= 0)
		ncache_heard_forget_files(dfd);
	close(dfd);
	return fd;
}

/* Reads the table into t; what the file lacks is free. */
static void ncache_heard_load(int fd, struct ncache_heard_entry *t)
{
	const struct ncache_heard_entry none = { 0 };
	const size_t size = NCACHE_HEARD_MAX * sizeof(*t);

	for (int reads = 0; reads < NCACHE_HEARD_READS; reads++) {
		ssize_t n = pread(fd, t, size, 0);
		bool torn = false;

		n = n > 0 ? n - n % (ssize_t)sizeof(*t) : 0;
		memset((char *)t + n, 0, size - (size_t)n);
		for (int i = 0; i < NCACHE_HEARD_MAX && !torn; i++)
			torn = t[i].check != ncache_heard_check(&t[i]) &&
			       memcmp(&t[i], &none, sizeof(none)) != 0;
		if (!torn)
			return;
	}
}

int64_t ncache_heard_get(const char *dir, const char *name)
{
	struct ncache_heard_entry t[NCACHE_HEARD_MAX];
	const uint64_t key = hash_str(HASH_START, name), boot = ncache_heard_boot();
	int64_t next_us = 0, now_us;
	int fd = boot != 0 ? ncache_heard_open(dir, false) : -1;

	if (fd < 0)
		return 0;
	ncache_heard_load(fd, t);
	close(fd);
	/* Two entries of one name (two logins wrote it at once): the later slot. */
	for (int i = 0; i < NCACHE_HEARD_MAX; i++)
		if (ncache_heard_valid(&t[i], boot) && t[i].key == key && t[i].next_us > next_us)
			next_us = t[i].next_us;
	now_us = fstime_mono_us();
	if (next_us <= now_us || next_us - now_us > SLOT_HORIZON_MAX_US)
		return 0;
	return next_us - now_us;
}

/* The entry for mine in t, skipping those in skip: its own, else a free one (from the one its
   hash points at, so that writers at once seldom meet), else the one whose slot comes first;
   -1 if none is left. */
static int ncache_heard_pick(const struct ncache_heard_entry *t,
			     const struct ncache_heard_entry *mine, const bool *skip,
			     int64_t now_us)
{
	const int home = (int)(mine->key % NCACHE_HEARD_MAX);
	int free_at = -1, first = -1;

	for (int n = 0; n < NCACHE_HEARD_MAX; n++) {
		int i = (home + n) % NCACHE_HEARD_MAX;

		if (skip[i])
			continue;
		if (ncache_heard_own(&t[i], mine))
			return i;
		if (ncache_heard_free(&t[i], mine->boot, now_us)) {
			if (free_at < 0)
				free_at = i;
		} else if (first < 0 || t[i].next_us < t[first].next_us) {
			first = i;
		}
	}
	return free_at >= 0 ? free_at : first;
}

static bool ncache_heard_lock(int fd, int slot, short type)
{
	struct flock l = { .l_type = type,
			   .l_whence = SEEK_SET,
			   .l_start = (off_t)slot * (off_t)NCACHE_HEARD_ENTRY_SIZE,
			   .l_len = 1 };

	return fcntl(fd, F_OFD_SETLK, &l) == 0;
}

enum ncache_heard_end {
	NCACHE_HEARD_WRITTEN,
	NCACHE_HEARD_BUSY,    /* locked by another writer (perhaps stopped there) */
	NCACHE_HEARD_CHANGED, /* written by another since it was read */
	NCACHE_HEARD_FAILED,
};

/* Writes e over entry slot under its lock, if it still holds what seen held, or mine's name,
   or nothing that counts (another writer may have taken it since it was read); with e NULL,
   clears it if it holds mine's name. */
static enum ncache_heard_end ncache_heard_write(int fd, int slot,
						const struct ncache_heard_entry *seen,
						const struct ncache_heard_entry *mine,
						const struct ncache_heard_entry *e, int64_t now_us)
{
	const struct ncache_heard_entry none = { 0 }, *put = NULL;
	const off_t at = (off_t)slot * (off_t)sizeof(none);
	struct ncache_heard_entry held = { 0 };
	enum ncache_heard_end end = NCACHE_HEARD_CHANGED;
	bool ours;

	if (!ncache_heard_lock(fd, slot, F_WRLCK))
		return NCACHE_HEARD_BUSY;
	if (pread(fd, &held, sizeof(held), at) != (ssize_t)sizeof(held))
		held = none;
	ours = ncache_heard_own(&held, mine);
	if (e == NULL)
		put = ours ? &none : NULL;
	else if (ours || ncache_heard_free(&held, mine->boot, now_us) ||
		 memcmp(&held, seen, sizeof(held)) == 0)
		put = e;
	if (put != NULL)
		end = pwrite(fd, put, sizeof(*put), at) == (ssize_t)sizeof(*put)
			  ? NCACHE_HEARD_WRITTEN
			  : NCACHE_HEARD_FAILED;
	(void)ncache_heard_lock(fd, slot, F_UNLCK);
	return end;
}

int ncache_heard_put(const char *dir, const char *name, int64_t next_us)
{
	struct ncache_heard_entry t[NCACHE_HEARD_MAX],
	    e = { .key = hash_str(HASH_START, name),
		  .boot = ncache_heard_boot(),
		  .next_us = next_us };
	bool skip[NCACHE_HEARD_MAX] = { false };
	enum ncache_heard_end end = NCACHE_HEARD_BUSY;
	int fd = e.boot != 0 ? ncache_heard_open(dir, true) : -1, slot = -1, reads = 1;

	if (fd < 0)
		return -1;
	e.check = ncache_heard_check(&e);
	ncache_heard_load(fd, t);
	/* Each entry tried once at most: one held (its writer stopped there) costs a lock's try,
	   one written since it was read a reading of the table. */
	while (end == NCACHE_HEARD_BUSY || end == NCACHE_HEARD_CHANGED) {
		int64_t now_us = fstime_mono_us();

		if ((slot = ncache_heard_pick(t, &e, skip, now_us)) < 0)
			break;
		end = ncache_heard_write(fd, slot, &t[slot], &e, &e, now_us);
		skip[slot] = true;
		if (end == NCACHE_HEARD_CHANGED) {
			if (reads++ == NCACHE_HEARD_TRIES)
				break;
			ncache_heard_load(fd, t);
		}
	}
	/* Another entry of the name (written at once by another login) is cleared: this one is
	   the last heard. */
	for (int i = 0; end == NCACHE_HEARD_WRITTEN && i < NCACHE_HEARD_MAX; i++)
		if (i != slot && ncache_heard_own(&t[i], &e))
			(void)ncache_heard_write(fd, i, &t[i], &e, NULL, 0);
	close(fd);
	return end == NCACHE_HEARD_WRITTEN ? 0 : -1;
}
