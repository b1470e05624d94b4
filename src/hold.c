/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/hold.h"

#include <security/pam_ext.h>

#include "flowslot/countdown.h"
#include "flowslot/fstime.h"
#include "flowslot/log.h"
#include "flowslot/lslot.h"
#include "flowslot/pressure.h"

#define HOLD_PREFIX "hold."

static int64_t hold_min(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* One step of the line, in the file HOLD_PREFIX + key in state_dir. */
static enum slot_verdict hold_line(const struct hold_login *h, const struct slot_params *p,
				   enum slot_op op, enum lslot_admit admit)
{
	const struct lslot_call call = { .dir = h->o->state_dir,
					 .key = h->key,
					 .p = p,
					 .op = op,
					 .place = h->place,
					 .prefix = HOLD_PREFIX,
					 .admit = admit };
	struct slot_result res;

	return lslot_call(h->pamh, &call, &res);
}

static void hold_tell(const struct hold_login *h, int64_t now_us)
{
	char waited[32];

	if (!h->talk)
		return;
	countdown_format(now_us - h->begun_us, waited, sizeof(waited));
	pam_prompt(h->pamh, h->style, NULL,
		   "Login queue: the server is busy; you go in when it settles (waiting %s so far).",
		   waited);
}

/* The first look: pressure under every limit and no one held goes in at once, without
   spacing (the schedule spaced it already) and without touching the line, unless the last
   release from the line was under interval ago. Returns whether the login is now in the line. */
static bool hold_join(const struct hold_login *h, const struct slot_params *p, int over)
{
	if (over >= 0)
		return hold_line(h, p, SLOT_RESERVE, LSLOT_ADMIT_NEVER) == SLOT_QUEUED;
	if (hold_line(h, p, SLOT_PEEK, LSLOT_ADMIT_DUE) != SLOT_QUEUED)
		return false;
	return hold_line(h, p, SLOT_RESERVE, LSLOT_ADMIT_DUE) == SLOT_QUEUED;
}

void hold_wait(const struct hold_login *h, const struct hangup_watch *w, struct hold_result *r)
{
	const struct opt *o = h->o;
	struct pressure_gauge g = { .pamh = h->pamh,
				    .dir = o->pressure.dir,
				    .state_dir = o->state_dir,
				    .limit_ppm = o->pressure.limit_ppm };
	/* Burst and max_wait mean nothing to the line: held logins go one by one, and
	   max_wait is kept here. */
	struct slot_params p = { .interval_us =
				     h->interval_us > 0 ? h->interval_us : o->slot.interval_us,
				 .max_wait_us = SLOT_HORIZON_MAX_US,
				 .burst = 1 };
	int64_t share_ppm[PRESSURE_RES_N], start_us, tell_us, read_us;
	int over;

	r->end = HOLD_IN;
	r->held_us = 0;
	pressure_measure(&g, share_ppm);
	over = r->res = pressure_over(o->pressure.limit_ppm, share_ppm);
	start_us = fstime_mono_us();
	if (!hold_join(h, &p, over))
		return;
	tell_us = start_us;
	read_us = start_us + HOLD_REREAD_US;
	for (;;) {
		int64_t now_us = fstime_mono_us(), wake_us;

		r->held_us = now_us - start_us;
		if (now_us >= tell_us) {
			hold_tell(h, now_us);
			tell_us = o->countdown_us > 0 ? now_us + o->countdown_us : INT64_MAX;
		}
		if (now_us >= h->deadline_us) {
			hold_line(h, &p, SLOT_LEAVE, LSLOT_ADMIT_NEVER);
			r->end = HOLD_TIMEOUT;
			return;
		}
		wake_us = hold_min(hold_min(read_us, tell_us), h->deadline_us);
		if (hangup_wait_until(w, wake_us)) {
			hold_line(h, &p, SLOT_LEAVE, LSLOT_ADMIT_NEVER);
			r->end = HOLD_ABANDONED;
			r->held_us = fstime_mono_us() - start_us;
			return;
		}
		if (fstime_mono_us() < read_us)
			continue;
		pressure_measure(&g, share_ppm);
		over = pressure_over(o->pressure.limit_ppm, share_ppm);
		if (over >= 0)
			r->res = over;
		read_us = fstime_mono_us() + HOLD_REREAD_US;
		/* A line that cannot be used holds no one: lslot_call said why. */
		if (hold_line(h, &p, SLOT_RENEW, over >= 0 ? LSLOT_ADMIT_NEVER : LSLOT_ADMIT_DUE) !=
		    SLOT_QUEUED) {
			r->held_us = fstime_mono_us() - start_us;
			return;
		}
	}
}
