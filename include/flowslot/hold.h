/* SPDX-License-Identifier: BSD-3-Clause */
/* The pressure hold: a login whose turn has come waits further while the host is under
   pressure, in a line of this host's held logins (a file in state_dir), released one at a
   time at least interval apart. */
#ifndef FLOWSLOT_HOLD_H
#define FLOWSLOT_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include <security/pam_modules.h>

#include "flowslot/hangup.h"
#include "flowslot/opt.h"
#include "flowslot/slot.h"

/* Pressure is measured again this often while a login is held. */
#define HOLD_REREAD_US INT64_C(400000)

/* A login at the hold. */
struct hold_login {
	pam_handle_t *pamh;
	const struct opt *o;
	const char *key; /* the schedule's, expanded */
	const struct slot_place *place;
	bool talk;	     /* tell the user why they wait */
	int style;	     /* in messages of this style (countdown_start's) */
	int64_t begun_us;    /* when the login's whole wait began */
	int64_t deadline_us; /* when max_wait ends it */
	int64_t interval_us; /* between releases: the schedule's own interval; 0: o's */
};

enum hold_end {
	HOLD_IN,	/* no pressure, or it fell: go in */
	HOLD_TIMEOUT,	/* still held at max_wait */
	HOLD_ABANDONED, /* the user went away; the place in line was given back */
};

struct hold_result {
	enum hold_end end;
	int64_t held_us; /* 0: not held */
	int res;	 /* the resource that held it last (enum pressure_res); -1: only the line */
};

/* Holds the login while any resource of o->pressure is at or above its limit, and behind
   the host's logins held before it; w ends the hold early when the user goes. A login that
   meets no pressure and no line is delayed at most by one measurement (PRESSURE_GAP_US). */
void hold_wait(const struct hold_login *h, const struct hangup_watch *w, struct hold_result *r);

#endif
