/* SPDX-License-Identifier: BSD-3-Clause */
/* The queue of live waiters of one per-host schedule: what src/slot.lua keeps on Redis, kept
   in memory between reading and writing the schedule's file (src/lslot.c), on CLOCK_MONOTONIC.
   A waiter is alive while its lease runs and its process exists. */
#ifndef FLOWSLOT_LQUEUE_H
#define FLOWSLOT_LQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "flowslot/slot.h"

/* Waiters one schedule file holds at most: past that, a login is refused as if over
   max_wait. Places given up (ghosts) are kept at most LQUEUE_GHOSTS_MAX per schedule and
   LQUEUE_HOST_GHOSTS_MAX per remote host (pam_flowslot(8), "Ghosts"); past that, none is made. */
#define LQUEUE_MAX 4096
#define LQUEUE_GHOSTS_MAX 1024
#define LQUEUE_HOST_GHOSTS_MAX 16
/* A ghost lasts this long from when its place was given up. */
#define LQUEUE_GHOST_US INT64_C(60000000)

struct lqueue_waiter {
	char id[33];
	char who[17];
	char host[17];
	int64_t arrival_us;
	int64_t lease_us; /* end of the lease */
	pid_t pid;
	bool taken_back; /* taken back from a ghost: leaves none when given up */
};

struct lqueue_ghost {
	char who[17];
	char host[17];
	int64_t arrival_us;
	int64_t left_us; /* given up then; forgotten LQUEUE_GHOST_US later */
};

struct lqueue {
	int64_t tat_us;	     /* the next admission, as stored */
	int64_t at_us;	     /* when it was stored */
	int64_t interval_us; /* "The schedule's own settings", 0: none stored */
	int64_t burst;
	struct lqueue_waiter *waiters;
	size_t n_waiters;
	struct lqueue_ghost *ghosts;
	size_t n_ghosts;
	bool line;   /* the pressure hold's line: decided by its caller's settings, none kept */
	int changed; /* the file must be written */
};

/* Reads a schedule file's text: "tat at interval burst" (or "tat at", or a bare tat), then
   "w ID WHO HOST ARRIVAL LEASE PID [t]" (t: taken back) and "g WHO HOST ARRIVAL LEFT" (or
   an earlier version's "g WHO ARRIVAL END") lines. What cannot be read is dropped, as
   slot.lua drops garbage; past LQUEUE_GHOSTS_MAX ghosts, the latest are kept. Returns 0, or
   -1 without memory. */
int lqueue_read(struct lqueue *q, const char *text);

/* Writes q as lqueue_read reads it, into a buffer to free. Returns its length, or -1. */
long lqueue_write(const struct lqueue *q, char **out);

/* One step of the queue at now_us, as slot.lua's op: reserve, renew or leave for place, held
   by process pid. Fills res (deadline_us included) and returns the verdict, as rslot_call.
   window_us: how near its slot a login first in line is admitted (SLOT_COMMIT_US). SLOT_PEEK
   and SLOT_RESET fill res as slot.lua's peek does; reset empties q. Keeps the rules of
   pam_flowslot(8), "The queue's promises": p->max_wait_us of a renewal is what is left of it; the
   decision is made by the schedule's own settings, which res names. */
enum slot_verdict lqueue_step(struct lqueue *q, const struct slot_params *p, int per_host,
			      enum slot_op op, const struct slot_place *place, pid_t pid,
			      int64_t now_us, int64_t window_us, struct slot_result *res);

/* Whether the schedule says nothing any more at now_us, so that its file may go: no live
   waiter, no ghost, and its time passed (once its lapsed waiters are dropped as lqueue_step
   drops them, which may change q). */
bool lqueue_idle(struct lqueue *q, int64_t now_us);

void lqueue_free(struct lqueue *q);

#endif
