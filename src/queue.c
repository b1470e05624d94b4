/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/queue.h"

#include "flowslot/fstime.h"
#include "flowslot/log.h"
#include "flowslot/lslot.h"
#include "flowslot/rslot.h"

static int64_t queue_min(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* One call about the place, with the options read afresh: the password is held only for the
   exchange, never through the wait. */
static enum slot_verdict queue_call(const struct queue_login *l, enum slot_op op,
				    struct slot_result *res)
{
	struct opt fresh;
	enum slot_verdict v;

	if (l->local) {
		const struct lslot_call call = { .dir = l->o->state_dir, .key = l->key,
						 .p = &l->o->slot, .per_host = l->o->per_host,
						 .op = op, .place = l->place };

		return lslot_call(l->pamh, &call, res);
	}
	opt_parse(&fresh, l->pamh, l->argc, l->argv);
	fresh.slot = l->o->slot;
	v = rslot_call(l->pamh, &fresh, op, l->key, l->place, res);
	opt_wipe(&fresh);
	return v;
}

void queue_leave(const struct queue_login *l)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	queue_call(l, SLOT_LEAVE, &res);
}

/* Renews the place: true while it is still held (res updated), false when the login may go
   in (admitted, or Redis lost: at the last slot it gave). */
static bool queue_renew(const struct queue_login *l, struct slot_result *res,
			struct countdown *cd)
{
	struct slot_result now = { .verdict = SLOT_UNAVAILABLE };
	char left[32];

	switch (queue_call(l, SLOT_RENEW, &now)) {
	case SLOT_ADMIT: /* to go in at its slot, now or shortly */
		*res = now;
		return false;
	case SLOT_QUEUED:
		*res = now;
		countdown_update(cd, res);
		return true;
	default:
		countdown_format(res->deadline_us - fstime_mono_us(), left, sizeof(left));
		log_msg(l->pamh, LOG_WARNING,
			"queue: the place cannot be renewed: going in at the last slot given, in %s",
			left);
		res->verdict = SLOT_ADMIT; /* a fixed slot now: nothing held to give back */
		return false;
	}
}

enum queue_end queue_wait(const struct queue_login *l, struct slot_result *res,
			  const struct hangup_watch *w, struct countdown *cd)
{
	bool held = res->verdict == SLOT_QUEUED;
	int64_t renew_us = fstime_mono_us() + SLOT_RENEW_US;

	for (;;) {
		int64_t now_us = fstime_mono_us(), wake_us;

		if (held && (now_us >= res->deadline_us || now_us >= renew_us)) {
			held = queue_renew(l, res, cd);
			renew_us = fstime_mono_us() + SLOT_RENEW_US;
			continue;
		}
		if (!held && now_us >= res->deadline_us)
			return QUEUE_TURN;
		wake_us = queue_min(res->deadline_us, countdown_due(cd, res->deadline_us));
		if (held)
			wake_us = queue_min(wake_us, renew_us);
		if (hangup_wait_until(w, wake_us)) {
			struct slot_result gone = { .verdict = SLOT_UNAVAILABLE };

			if (held)
				queue_call(l, SLOT_LEAVE, &gone);
			return QUEUE_ABANDONED;
		}
		countdown_tick(cd, res->deadline_us, fstime_mono_us());
	}
}
