/* SPDX-License-Identifier: BSD-3-Clause */
/* The wait of one login for its slot: renewing its place, telling the user, watching them. */
#ifndef FLOWSLOT_QUEUE_H
#define FLOWSLOT_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include <security/pam_modules.h>

#include "flowslot/countdown.h"
#include "flowslot/hangup.h"
#include "flowslot/opt.h"
#include "flowslot/slot.h"
#include "flowslot/waiters.h"

/* The waiting login: what queue_wait needs to speak for it. */
struct queue_login {
	pam_handle_t *pamh;
	const struct opt *o; /* as the reservation used them; its secrets may be wiped */
	int argc;	     /* the module arguments, read afresh for each call on Redis */
	const char **argv;
	const char *key;
	const struct slot_place *place;
	bool local; /* the place is on the per-host schedule, not on Redis */
	/* The login as the log names it, "service=S user=U rhost=R" (escaped), so that a line
	   about its place says whose it is; NULL: nobody to name (flowslotctl). */
	const char *who;
	/* CLOCK_MONOTONIC time past which the login is held by no one: its reservation time
	   + max_wait. 0: none, each renewal passes max_wait whole. */
	int64_t limit_us;
	/* The login's record among the host's waiters (src/waiters.c), which keeps its slot on
	   Redis as it moves; NULL: none. */
	struct waiter *waiter;
};

enum queue_end {
	QUEUE_TURN,	 /* the slot has come: go in */
	QUEUE_ABANDONED, /* the user went away; the place was given back */
	QUEUE_REFUSED,	 /* the slot moved past limit_us: no place is held any more */
};

/* Gives the place l holds back, as a waiter that leaves does. */
void queue_leave(const struct queue_login *l);

/* Waits for the slot that res describes. For a place held (SLOT_QUEUED) it renews the place
   when the lease the last answer granted asks (slot_renew_us of its wait, counted from when
   that call began), passing what is left of max_wait, follows it as it moves, and asks to go
   in at its slot. A login first in line, or whose last renewal failed, also tries a timeout
   before its slot (LSLOT_LOCK_WAIT_US on the file), over by the slot whatever nodes it asks,
   the file's lock included. A renewal on Redis that timed out is asked again at once for the
   same place, within the decision's budget and never past that slot (rslot_call). A
   renewal that fails is tried again every SLOT_RENEW_US, and if the last try failed before
   the slot, once more at the slot within a timeout; only if that fails too does it go in
   blind at the last slot given (at it, or a timeout after it at most), and it does not queue
   elsewhere. A slot past limit_us (refused by the schedule, or given by
   one that did not check) ends it with QUEUE_REFUSED, a place still held given back, and res
   the refusal: SLOT_REFUSE, wait_us the wait it would have had. It tells the user as cd says,
   and ends early when w sees them go, giving the place back. res is left as the place stood:
   after QUEUE_ABANDONED, verdict SLOT_QUEUED when a held place was given back, SLOT_ADMIT
   when there was only a fixed slot, which stays taken. */
enum queue_end queue_wait(const struct queue_login *l, struct slot_result *res,
			  const struct hangup_watch *w, struct countdown *cd);

#endif
