/* SPDX-License-Identifier: BSD-3-Clause */
/* Which node last served a schedule (a cluster hash slot, a Sentinel master), remembered
   between logins in a small file under state_dir. Only a hint: a missing, garbled or unsafe
   entry costs a redirect, or a question to a sentinel, never a wrong answer. And the next slot
   this host last heard of, per schedule, in one table of fixed size. */
#ifndef FLOWSLOT_NCACHE_H
#define FLOWSLOT_NCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "flowslot/url.h"

#define NCACHE_NAME_MAX 48

/* The entry's file name for url u and what (a hash slot, or "master"), in out. */
void ncache_name(const struct url *u, const char *what, char *out, size_t outsz);

/* Reads the entry name under dir into node, if it was written in the last max_age_s seconds
   (0: whenever). Returns 0, or -1 when there is none to trust. */
int ncache_get(const char *dir, const char *name, int max_age_s, struct url_node *node);

/* Stores node as the entry name under dir (created 0700 when missing), atomically. Returns 0,
   or -1: the entry is only a hint, so the caller need not say more. */
int ncache_put(const char *dir, const char *name, const struct url_node *node);

/* The heard table: one file in state_dir of NCACHE_HEARD_MAX entries of
   NCACHE_HEARD_ENTRY_SIZE bytes, whatever the number of schedules and user names. An entry
   matters while its next slot is to come: one whose slot has passed (or of another boot) is
   free. Past NCACHE_HEARD_MAX schedules whose slot is to come, the one whose slot comes first
   gives its place. */
#define NCACHE_HEARD_FILE "heard"
#define NCACHE_HEARD_MAX 256
#define NCACHE_HEARD_ENTRY_SIZE 32

/* The name of the heard table's entry for schedule key on u (its database included),
   "heard." and a hash, into out (NCACHE_NAME_MAX bytes): the next slot this host last heard
   of, with which a schedule that is lost is made again (src/slot.lua, ARGV[12]). */
void ncache_heard_name(const struct url *u, const char *key, char *out, size_t outsz);

/* How far off that next slot is now, in microseconds: 0 when it is past, or there is no
   entry to trust (none, garbled, unsafe, or another boot's). Takes no lock. */
int64_t ncache_heard_get(const char *dir, const char *name);

/* Stores the next slot as at next_us (CLOCK_MONOTONIC) with this boot's id: the last answer
   heard wins. The entry's own, else a free one, else the one whose slot comes first; each
   locked only while it is written, never waited for. Makes the table (0600, dir 0700) when
   missing, and then removes the files of one entry each of 0.11.0 (heard.HASH). Returns 0,
   or -1 (not kept: an entry is only a hint). */
int ncache_heard_put(const char *dir, const char *name, int64_t next_us);

#endif
