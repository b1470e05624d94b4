/* SPDX-License-Identifier: BSD-3-Clause */
/* The host's own waiters: a table in state_dir with one slot per login waiting on the host,
   whatever the schedule it waits on and whether that schedule answers. A login holds its slot
   with open file description locks on two of its bytes for as long as it waits: the first
   claims the slot, the second says its record is written. The kernel drops such locks when
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
};

/* Takes the first free slot of state_dir's table (created 0600 as needed) for a login
   waiting on schedule key since begun_us (CLOCK_MONOTONIC). A table that cannot be used, or
   is full, leaves w->fd -1, with a LOG_WARNING: the login waits all the same. */
void waiter_join(const pam_handle_t *pamh, const char *state_dir, const char *key,
		 int64_t begun_us, struct waiter *w);

/* Gives the slot back (w->fd -1 or not). */
void waiter_leave(struct waiter *w);

/* What the table says of one schedule's waiters on this host. */
struct waiters_view {
	int64_t count;
	int64_t longest_us; /* how long the longest of them has waited; -1: none waits */
};

/* Reads state_dir's table for schedule key, at now_us (CLOCK_MONOTONIC): an empty view when
   there is no table yet. Returns 0, or -1 with *why (errno set). */
int waiters_read(const char *state_dir, const char *key, int64_t now_us, struct waiters_view *v,
		 const char **why);

#endif
