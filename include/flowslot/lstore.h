/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-host schedule's store: the one sorted set that src/slot.lua keeps in a Redis key,
   kept in a file (src/lslot.c) and answered to the script as Redis answers it
   (src/lscript.c). Members are ordered by score, then by their bytes. */
#ifndef FLOWSLOT_LSTORE_H
#define FLOWSLOT_LSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What one file holds at most: the places of LSTORE_PLACES_MAX waiters (a place, its lease,
   its host's index) and the ghosts the script keeps (1,024, with two indexes each), and the
   head. A file past it, or a script that would write past it, is refused. */
#define LSTORE_PLACES_MAX 4096
#define LSTORE_MEMBERS_MAX (3 * LSTORE_PLACES_MAX + 3 * 1024 + 1)
/* The longest member: slot.lua's are under 120 bytes. */
#define LSTORE_MEMBER_MAX 255
/* A line's bytes besides its member, at most: the score, the pid, its namespace, the spaces. */
#define LSTORE_LINE_MORE 72
/* The file's first line: its format, then when the key expires (0: never), then the boot it
   was written in (/proc/sys/kernel/random/boot_id), which its CLOCK_MONOTONIC times are of. */
#define LSTORE_MAGIC "flowslot-store 1"
#define LSTORE_BOOT_MAX 64

struct lstore_member {
	double score;
	char *name; /* NUL-terminated: printable ASCII but the space */
	size_t len;
	pid_t pid; /* the process that last added it, 0 for none known */
	uint64_t pidns; /* the PID namespace pid is in (its inode number), 0 for none known */
};

struct lstore {
	struct lstore_member *m; /* sorted by score, then name */
	size_t n, cap;
	int64_t expires_us; /* on the store's clock; 0: the key has no expiry */
	int64_t now_us;	    /* the store's clock for this call: TIME */
	char boot[LSTORE_BOOT_MAX + 1]; /* this boot's id, "" if unknown (lstore_boot) */
	pid_t pid;	    /* the caller, recorded on what it adds */
	uint64_t pidns;	    /* the caller's PID namespace (lstore_pidns), recorded with pid */
	bool changed;	    /* what the file holds must be written */
	const char *repaired; /* what lstore_read mended in what it read, NULL for nothing */
};

/* The PID namespace of this process: the inode number of /proc/self/ns/pid, 0 if unknown. A
   pid is judged only within the namespace that recorded it. */
uint64_t lstore_pidns(void);

/* This boot's id, as the kernel gives it (/proc/sys/kernel/random/boot_id), into out of
   LSTORE_BOOT_MAX + 1 bytes; "" if it cannot be read. */
void lstore_boot(char *out);

/* Reads a file's text at now_us (an empty text is an empty set; a key whose expiry has come
   is gone). A text whose first line names another boot than this one is read as empty: its
   times are of that boot's clock; one that names none (this format's earlier files) is of
   this boot. A member's line is "SCORE MEMBER PID", or "SCORE MEMBER PID NS" with the PID
   namespace NS that PID is in; without NS, the namespace is unknown (0). A text written by an
   earlier version ("tat at interval burst" and its lines) is
   read for its head alone, as the schedule's next admission and settings (*old set).
   A member that stands twice is kept once, at its higher score (s->repaired says so).
   Returns 0; -1 with *why, the set empty, for a text that is not a store: a bad line, a
   member too long or out of order, a score that is not a number, too many members; -2, the
   set empty, when this process has not the memory to read it (its own limits: nothing is
   known of the store). */
int lstore_read(struct lstore *s, const char *text, int64_t now_us, bool *old, const char **why);

/* The set as lstore_read reads it, into a buffer to free. Returns its length, or -1. */
long lstore_write(const struct lstore *s, char **out);

/* Whether the key exists at now_us: it has members and its expiry has not come. */
bool lstore_live(const struct lstore *s, int64_t now_us);

/* Whether name can be a member of the file, as lstore_read reads it back: printable ASCII but
   the space, as slot.lua's are, and at most LSTORE_MEMBER_MAX bytes. */
bool lstore_name_ok(const char *name, size_t len);

/* The member's index, or -1. */
ssize_t lstore_find(const struct lstore *s, const char *name, size_t len);

/* Adds name at score, or moves it there; recorded as the caller's. Returns 1 for a new
   member, 0 for one moved, -1 when full or without memory. */
int lstore_add(struct lstore *s, double score, const char *name, size_t len);

/* Removes member i. */
void lstore_remove(struct lstore *s, size_t i);

/* Empties the set: the key is gone, and its expiry with it. */
void lstore_clear(struct lstore *s);

/* The first index whose score is >= min (> min when exclusive). */
size_t lstore_lower(const struct lstore *s, double min, bool exclusive);

void lstore_free(struct lstore *s);

#endif
