/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-host slot: the same schedule kept in a file, on CLOCK_MONOTONIC. */
#ifndef FLOWSLOT_LSLOT_H
#define FLOWSLOT_LSLOT_H

#include <stddef.h>
#include <stdint.h>

#include <security/pam_modules.h>

#include "flowslot/slot.h"

/* The directory stays bounded: before a new schedule file is made, when LSLOT_PRUNE_AT or
   more are there, those whose time has passed are removed; if LSLOT_FILES_MAX or more are
   still live, the new key shares one of LSLOT_SHARED schedules (slot.~shared.NN) instead. */
#define LSLOT_PRUNE_AT 64
#define LSLOT_FILES_MAX 256
#define LSLOT_SHARED 16

/* A holder that keeps a schedule file's lock this long, the file unchanged, is stuck, and the
   call that found it so takes the file over: the schedule goes on in a new file. A call holds the lock for its own reading,
   deciding and writing: about a millisecond, 20 ms at worst under a burst of 100 logins on a
   file of 1,024 ghosts on a loaded 2-core machine (400 ms before the file was read in one
   pass). So this is a hundred times any call's work, yet short next to a login's wait; a wait
   shorter than it (a leave, flowslotctl, the try at a slot) finds a holder stuck that kept the
   lock through all of it, half a second at least: still 25 times any call's work. */
#define LSLOT_STUCK_US INT64_C(2000000)
/* The longest a call other than a login's reservation or renewal waits for the file's lock:
   past it, the file counts as unusable. Also how long before its slot a login first in line
   tries to keep to it (queue.c), that try over by the slot. */
#define LSLOT_LOCK_WAIT_US INT64_C(1000000)

/* How near its time a login first in line is admitted: within SLOT_COMMIT_US (a schedule),
   only once its time has come (the pressure hold's line), or not at all (a place kept). */
enum lslot_admit {
	LSLOT_ADMIT_NEAR,
	LSLOT_ADMIT_DUE,
	LSLOT_ADMIT_NEVER,
};

/* What one call on a per-host schedule asks: as rslot_call, on the file for key in dir. */
struct lslot_call {
	const char *dir;
	const char *key;
	const struct slot_params *p;
	int per_host;
	enum slot_op op;
	const struct slot_place *place;
	const char *prefix; /* of the file's name, as long as "slot.": NULL for "slot." */
	enum lslot_admit admit;
	int64_t until_us; /* a login's call is over by then (CLOCK_MONOTONIC), if not 0 */
	/* A reservation's next slot is at least this far off (slot.lua's ARGV[14]): what this
	   host knows of the shared schedule it falls back from; 0: none. */
	int64_t floor_us;
};

/* Asks the queue of the schedule kept in a file under dir (created 0700 when missing), as
   rslot_call asks Redis's: the same verdicts, on this host's CLOCK_MONOTONIC; a waiter is
   alive while its lease runs and its process exists. Returns SLOT_UNAVAILABLE, with the
   reason logged, when the directory or file cannot be used safely; a file whose lock's
   holder is stuck (LSLOT_STUCK_US) is taken over, its schedule going on in a new file; a
   reservation that could not have the lock within its max_wait, its holders coming and
   going, is refused (SLOT_REFUSE, res->lock_busy). */
enum slot_verdict lslot_call(const pam_handle_t *pamh, const struct lslot_call *call,
			     struct slot_result *res);

/* Where a call on key in dir finds its schedule now, as "dir/name": its own file, or the
   shared one it hashes to while that one is live (flowslotctl names what it reads). */
void lslot_where(const char *dir, const char *key, char *out, size_t outsz);

/* The file name for key, in out of NAME_MAX + 1 bytes: the key itself where it fits, never a
   path. */
void lslot_file_name(const char *key, char *out, size_t outsz);

#endif
