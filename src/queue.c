/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/queue.h"

#include "flowslot/fstime.h"
#include "flowslot/log.h"
#include "flowslot/lslot.h"
#include "flowslot/rslot.h"
#include "flowslot/stats.h"

/* What a renewal leaves the wait to do. */
enum queue_next {
	QUEUE_HOLD, /* a place is still held (or thought held): renew it again */
	QUEUE_GO,   /* go in at res->deadline_us */
	QUEUE_OUT,  /* refused: no place is held */
};

/* Where one wait stands. */
struct queue_state {
	bool held;	  /* a place is held: renew it */
	bool failing;	  /* in an outage: a renewal failed, and that was logged; the calls that
			     fail after it log nothing until one is answered (once an outage) */
	bool lost;	  /* the last renewal failed */
	bool late;	  /* a renewal since the last answer timed out: Redis may carry it out late */
	int failed;	  /* the calls that failed in the outage */
	int64_t down_us;  /* when the first of them began */
	int64_t renew_us; /* the renewal the lease asks for (or a failure's retry) */
	int64_t next_us;  /* the next renewal: renew_us, or sooner to keep to the slot */
	int64_t lease_us; /* the end of the lease last taken, from its call's start (or answer) */
};

static int64_t queue_min(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* What is left of the login's max_wait at now_us, never below 0. */
static int64_t queue_left_us(const struct queue_login *l, int64_t now_us)
{
	if (l->limit_us <= 0)
		return l->o->slot.max_wait_us;
	return l->limit_us > now_us ? l->limit_us - now_us : 0;
}

/* One call about the place, bounded by max_wait_us, over by until_us if not 0, with the
   place's age_us (slot_params); on Redis with the options read afresh: the password is held
   only for the exchange, never through the wait.
   said: the login logged the outage it is in already, so the call's errors are not logged
   again; each failure on Redis is counted all the same (stats_record_error). */
static enum slot_verdict queue_call(const struct queue_login *l, enum slot_op op,
				    int64_t max_wait_us, int64_t until_us, int64_t age_us,
				    bool said, struct slot_result *res)
{
	struct rslot_turn turn = { .p = l->o->slot, .until_us = until_us, .said = said };
	struct opt fresh;
	enum slot_verdict v;

	turn.p.max_wait_us = max_wait_us;
	turn.p.age_us = age_us;
	if (l->local) {
		const struct lslot_call call = { .dir = l->o->state_dir, .key = l->key,
						 .p = &turn.p, .per_host = l->o->per_host,
						 .op = op, .place = l->place, .until_us = until_us };

		return lslot_call(l->pamh, &call, res);
	}
	opt_parse(&fresh, l->pamh, l->argc, l->argv);
	v = rslot_turn_call(l->pamh, &fresh, &turn, op, l->key, l->place, res);
	opt_wipe(&fresh);
	if (v == SLOT_UNAVAILABLE && l->pamh != NULL) /* a login's, not flowslotctl's */
		stats_record_error(l->pamh, l->o->state_dir, l->o->key, l->o->slot.dry_run);
	return v;
}

/* How long before the slot the try that keeps to it begins: one server's timeout (the file's
   lock wait). The try is over by the slot whatever nodes it asks, so that should it fail the
   login can still go in blind at its slot, never later. */
static int64_t queue_lead_us(const struct queue_login *l)
{
	return l->local ? LSLOT_LOCK_WAIT_US : l->o->timeout_us;
}

/* Whether the wait keeps to its slot: a login first in line (its next renewal admits it), or
   one whose last renewal failed. Waiters further back renew as they did, so that one whose
   slot keeps moving (a place ahead not given up yet) cannot call in a loop. */
static bool queue_keeps_slot(const struct slot_result *res, const struct queue_state *st)
{
	return st->lost || res->position == 1;
}

/* When to renew next, from now_us: when the lease asks (st->renew_us), or, keeping to the
   slot, no later than the lead before it. */
static int64_t queue_next_us(const struct queue_login *l, const struct slot_result *res,
			     const struct queue_state *st, int64_t now_us)
{
	int64_t next_us = st->renew_us, last_us = res->deadline_us - queue_lead_us(l);

	if (queue_keeps_slot(res, st) && last_us > now_us && last_us < next_us)
		next_us = last_us;
	return next_us;
}

/* Gives the place back; said as queue_call's. */
static void queue_leave_said(const struct queue_login *l, bool said)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	queue_call(l, SLOT_LEAVE, queue_left_us(l, fstime_mono_us()), 0, 0, said, &res);
}

void queue_leave(const struct queue_login *l)
{
	queue_leave_said(l, false);
}

/* Who the login is, ": service=S user=U rhost=R", ending the log lines about its place. */
static const char *queue_sep(const struct queue_login *l)
{
	return l->who != NULL ? ": " : "";
}

static const char *queue_who(const struct queue_login *l)
{
	return l->who != NULL ? l->who : "";
}

/* A call answered after some failed: the outage is over for this login, said once. A
   renewal that timed out and was answered when asked again (tries) is said too, naming
   whose place it kept. */
static void queue_answered(const struct queue_login *l, struct queue_state *st, int tries,
			   int64_t began_us)
{
	char over[32];

	if (!st->failing) {
		if (tries < 2)
			return;
		countdown_format(fstime_mono_us() - began_us, over, sizeof(over));
		log_msg(l->pamh, LOG_NOTICE,
			"queue: the renewal that timed out was answered when asked again (%d tries "
			"over %s)%s%s",
			tries, over, queue_sep(l), queue_who(l));
		return;
	}
	countdown_format(fstime_mono_us() - st->down_us, over, sizeof(over));
	log_msg(l->pamh, LOG_NOTICE,
		"queue: the schedule answers again, after %d failed call%s over %s%s%s", st->failed,
		st->failed == 1 ? "" : "s", over, queue_sep(l), queue_who(l));
	st->failing = false;
	st->failed = 0;
}

/* A renewal that failed: tried again until the slot (said once); past it, the login goes in
   blind at the last slot given. */
static enum queue_next queue_renew_failed(const struct queue_login *l, struct slot_result *res,
					  struct queue_state *st)
{
	int64_t now_us = fstime_mono_us();
	char left[32];

	st->lost = true;
	st->failed++;
	if (now_us < res->deadline_us) {
		if (!st->failing) {
			countdown_format(res->deadline_us - now_us, left, sizeof(left));
			log_msg(l->pamh, LOG_WARNING,
				"queue: the place cannot be renewed: trying again until its slot, "
				"in %s%s%s",
				left, queue_sep(l), queue_who(l));
		}
		st->failing = true;
		return QUEUE_HOLD;
	}
	/* The schedule counts a place whose lease ran out at its slot as admitted; one that ran
	   out before its slot is given up, and that slot may go to another login. */
	log_msg(l->pamh, LOG_WARNING,
		"queue: the place could not be renewed at its slot either: going in blind at the "
		"last slot given%s%s%s",
		res->deadline_us > st->lease_us ? " (its lease ran out before it: the schedule "
						  "may give that slot again)"
						: "",
		queue_sep(l), queue_who(l));
	res->verdict = SLOT_ADMIT; /* a fixed slot now: nothing held to give back */
	/* Should the schedule be lost meanwhile (a restart without its data), the host makes it
	   again past this admission, which it alone knows of. */
	if (!l->local)
		rslot_heard_at_least(l->o, l->key,
				     res->deadline_us + (res->sched_interval_us > 0
							     ? res->sched_interval_us
							     : l->o->slot.interval_us));
	return QUEUE_GO;
}

/* A renewal that failed, tried again at the near cadence, within the lease taken. */
static enum queue_next queue_renew_failed_now(const struct queue_login *l, struct slot_result *res,
					      struct queue_state *st)
{
	st->renew_us = fstime_mono_us() + SLOT_RENEW_US;
	return queue_renew_failed(l, res, st);
}

/* After a call that began at began_us and answered res, a place held: its next renewal and
   the end of its lease, as the schedule granted it from the wait it answered (L1, L2). The
   schedule's own interval decides; where the backend did not name it, the near cadence. */
static void queue_lease(struct queue_state *st, const struct slot_result *res, int64_t began_us)
{
	st->renew_us = began_us + slot_renew_us(res->wait_us, res->sched_interval_us);
	st->lease_us = began_us + slot_lease_us(res->wait_us, res->sched_interval_us);
}

/* When a renewal from now_us must be over, asked again or not: by the slot, or one server's
   timeout from now (not the several a Sentinel or Cluster decision may take) at or past it.
   A failure to reach the schedule then costs the login at most a timeout past its slot. The
   try that keeps to the slot begins a timeout before it, and is over by it. A waiter further
   back does not renew early (its slot may move), so it has a timeout at the least. */
static int64_t queue_until_us(const struct queue_login *l, const struct slot_result *res,
			      const struct queue_state *st, int64_t now_us)
{
	int64_t lead_end_us = now_us + queue_lead_us(l);

	if (res->deadline_us <= now_us)
		return lead_end_us;
	if (queue_keeps_slot(res, st))
		return res->deadline_us;
	return res->deadline_us > lead_end_us ? res->deadline_us : lead_end_us;
}

/* Whether a renewal after one that timed out (asked again, or tried again later) was answered
   with a second place: a slot half an interval or more past the one held. The try that timed
   out was carried out late, and admitted the login (the schedule drops an admitted place, so
   the next renewal found none, and queued anew at the back, or refused a place that far back
   for what is left of max_wait). The login goes in at the slot it held, as the schedule
   counted it, and gives the second place back: never later than its slot. */
static bool queue_second_place(const struct queue_login *l, const struct slot_result *res,
			       const struct slot_result *now, const struct queue_state *st,
			       enum slot_verdict v)
{
	int64_t interval_us =
	    res->sched_interval_us > 0 ? res->sched_interval_us : l->o->slot.interval_us;
	char in[32];

	if ((now->tries < 2 && !now->timed_out && !st->late) ||
	    (v != SLOT_ADMIT && v != SLOT_QUEUED && v != SLOT_REFUSE) ||
	    now->deadline_us - res->deadline_us < interval_us / 2)
		return false;
	if (v == SLOT_QUEUED)
		queue_leave(l);
	countdown_format(res->deadline_us - fstime_mono_us(), in, sizeof(in));
	log_msg(l->pamh, LOG_NOTICE,
		"queue: a renewal that timed out was carried out late and admitted the place; "
		"answered with %s: going in at its slot, in %s%s%s",
		v == SLOT_REFUSE ? "a refusal further back" : "a second place", in, queue_sep(l),
		queue_who(l));
	return true;
}

/* Renews the place, with what is left of max_wait: its slot, its refusal, or a failure. */
static enum queue_next queue_renew(const struct queue_login *l, struct slot_result *res,
				   struct countdown *cd, struct queue_state *st)
{
	struct slot_result now = { .verdict = SLOT_UNAVAILABLE };
	int64_t began_us = fstime_mono_us(), left_us = queue_left_us(l, began_us);
	/* The place's age: as its last answer said, and the time since (0 where it said none). */
	int64_t age_us =
	    res->age_us >= 0 ? res->age_us + began_us - (res->deadline_us - res->wait_us) : 0;
	enum slot_verdict v =
	    queue_call(l, SLOT_RENEW, left_us, queue_until_us(l, res, st, began_us), age_us,
		       st->failing, &now);

	if (v == SLOT_UNAVAILABLE && !st->failing)
		st->down_us = began_us;
	else if (v != SLOT_UNAVAILABLE)
		queue_answered(l, st, now.tries, began_us);
	if (queue_second_place(l, res, &now, st, v)) {
		res->verdict = SLOT_ADMIT; /* a fixed slot now: nothing held to give back */
		return QUEUE_GO;
	}
	st->late = v == SLOT_UNAVAILABLE && (st->late || now.timed_out);
	/* A slot past the limit that the schedule did not refuse (one that does not check):
	   refused here, the place given back. */
	if ((v == SLOT_ADMIT || v == SLOT_QUEUED) && now.wait_us > left_us) {
		if (v == SLOT_QUEUED)
			queue_leave(l);
		v = SLOT_REFUSE;
	}
	/* debug: each answer, so that a wait can be followed from the log (tests/campaign). */
	if (l->o->debug && (v == SLOT_ADMIT || v == SLOT_QUEUED || v == SLOT_REFUSE))
		log_msg(l->pamh, LOG_DEBUG, "renewed: %s wait_ms=%lld position=%lld",
			v == SLOT_ADMIT ? "admitted" : v == SLOT_QUEUED ? "queued" : "refused",
			(long long)(now.wait_us / 1000), (long long)now.position);
	switch (v) {
	case SLOT_ADMIT: /* to go in at its slot, now or shortly */
		*res = now;
		countdown_update(cd, res);
		return QUEUE_GO;
	case SLOT_QUEUED:
		*res = now;
		st->lost = false;
		queue_lease(st, res, began_us);
		countdown_update(cd, res);
		return QUEUE_HOLD;
	case SLOT_REFUSE: /* the place is gone */
		*res = now;
		res->verdict = SLOT_REFUSE;
		return QUEUE_OUT;
	case SLOT_UNAVAILABLE:
		if (!now.own_limits)
			return queue_renew_failed_now(l, res, st);
		/* Its own limits stopped it: this login alone is out, its place given back if it
		   can be. */
		queue_leave(l);
		*res = now;
		return QUEUE_OUT;
	default:
		return queue_renew_failed_now(l, res, st);
	}
}

enum queue_end queue_wait(const struct queue_login *l, struct slot_result *res,
			  const struct hangup_watch *w, struct countdown *cd)
{
	struct queue_state st = { .held = res->verdict == SLOT_QUEUED };

	/* The reservation's answer came at its deadline less its wait. */
	queue_lease(&st, res, res->deadline_us - res->wait_us);

	st.next_us = queue_next_us(l, res, &st, fstime_mono_us());

	for (;;) {
		int64_t now_us = fstime_mono_us(), wake_us;

		if (st.held && (now_us >= res->deadline_us || now_us >= st.next_us)) {
			enum queue_next next = queue_renew(l, res, cd, &st);

			if (next == QUEUE_OUT)
				return QUEUE_REFUSED;
			st.held = next == QUEUE_HOLD;
			st.next_us = queue_next_us(l, res, &st, fstime_mono_us());
			if (!l->local)
				waiter_slot(l->waiter, res->deadline_us);
			continue;
		}
		if (!st.held && now_us >= res->deadline_us)
			return QUEUE_TURN;
		wake_us = queue_min(res->deadline_us, countdown_due(cd, res->deadline_us));
		if (st.held)
			wake_us = queue_min(wake_us, st.next_us);
		if (hangup_wait_until(w, wake_us)) {
			if (st.held)
				queue_leave_said(l, st.failing);
			return QUEUE_ABANDONED;
		}
		countdown_tick(cd, res->deadline_us, fstime_mono_us());
	}
}
