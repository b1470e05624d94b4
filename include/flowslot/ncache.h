/* SPDX-License-Identifier: BSD-3-Clause */
/* Which node last served a schedule (a cluster hash slot, a Sentinel master), remembered
   between logins in a small file under state_dir. Only a hint: a missing, garbled or unsafe
   entry costs a redirect, or a question to a sentinel, never a wrong answer. */
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

/* The next slot of schedule key on u (its database included) as this host last heard of it,
   in an entry of its own, "heard." and a hash, named into out (NCACHE_NAME_MAX bytes). A
   schedule that is lost is made again with it (src/slot.lua, ARGV[12]). */
void ncache_heard_name(const struct url *u, const char *key, char *out, size_t outsz);

/* How far off that next slot is now, in microseconds: 0 when it is past, or there is no
   entry to trust (none, garbled, unsafe, or another boot's). */
int64_t ncache_heard_get(const char *dir, const char *name);

/* Stores the next slot as at next_us (CLOCK_MONOTONIC) with this boot's id, as ncache_put:
   the last answer heard wins. */
int ncache_heard_put(const char *dir, const char *name, int64_t next_us);

#endif
