/* SPDX-License-Identifier: BSD-3-Clause */
/* The host's own waiters: a table in state_dir with one slot per login waiting on the host,
   whatever the schedule it waits on and whether that schedule answers. A login holds its slot
   with open file description read locks on two of its bytes, on a descriptor for reading
   only, for as long as it waits: the first claims the slot (claims are made one at a time,
   under the table's flock), the second says its record is written. The kernel drops such locks when
   the last descriptor of them closes, which the end of a process does however it ends
   (LoginGraceTime's _exit, SIGKILL): a slot counts only while its second byte is locked, so
   no record outlives its waiter, and nobody has to clean up after a dead one. */
#ifndef FLOWSLOT_WAITERS_H
#define FLOWSLOT_WAITERS_H

#include <stdint.h>

#include <security/pam_modules.h>

#define WAITERS_FILE "waiters"
/* Slots in the table: a login that finds them all taken waits unrecorded. */
#define WAITERS_MAX 4096

/* One login's slot; fd -1: none. */
struct waiter {
	int fd;
	int slot;
	int64_t begun_us;
	uint32_t slot_ms; /* as its record has it */
};

/* Takes the first free slot of state_dir's table (created 0600 as needed) for a login
   waiting on schedule key since begun_us (CLOCK_MONOTONIC), its slot at slot_us on a shared
   schedule (Redis), which the host's own schedule keeps clear of when it is taken as the
   fallback; 0 for a place on the host's own schedule, which counts it already. A table that
   cannot be used, or is full, leaves w->fd -1, with a LOG_WARNING: the login waits all the
   same. */
void waiter_join(const pam_handle_t *pamh, const char *state_dir, const char *key,
		 int64_t begun_us, int64_t slot_us, struct waiter *w);

/* Keeps w's slot on its shared schedule at slot_us, as the schedule's last answer moved it
   (w NULL, or its fd -1: nothing to do). A record that cannot be written keeps the slot it
   had. */
void waiter_slot(struct waiter *w, int64_t slot_us);

/* Gives the slot back (w->fd -1 or not). */
void waiter_leave(struct waiter *w);

/* What the table says of one schedule's waiters on this host. */
struct waiters_view {
	int64_t count;
	int64_t longest_us; /* how long the longest of them has waited; -1: none waits */
	int64_t last_slot_us; /* the latest slot on a shared schedule of them; -1: none */
};

/* Reads state_dir's table for schedule key, at now_us (CLOCK_MONOTONIC): an empty view when
   there is no table yet. Returns 0, or -1 with *why (errno set). */
int waiters_read(const char *state_dir, const char *key, int64_t now_us, struct waiters_view *v,
		 const char **why);

#endif
