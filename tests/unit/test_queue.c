/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/queue.c: a waiting login against a scripted backend (lslot_call and
   rslot_turn_call are wrapped) on a fake clock (fstime_mono_us and hangup_wait_until are
   wrapped): what each renewal is bounded by, a refusal on renewal, a slot past the limit that the
   backend did not refuse, renewals that fail and what the login then does. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <security/pam_ext.h>

#include "flowslot/fstime.h"
#include "flowslot/hangup.h"
#include "flowslot/log.h"
#include "flowslot/lslot.h"
#include "flowslot/queue.h"
#include "flowslot/rslot.h"

#define S INT64_C(1000000)
#define MS INT64_C(1000)
#define T0 (1000 * S) /* the reservation */
#define MAX_STEPS 16

static int fake_handle;
#define FAKE_PAMH ((pam_handle_t *)&fake_handle)

/* The clock: moved on by the waits and by each call's time. */
static int64_t clock_now;
static bool hang_up; /* the next wait sees the user go */

int64_t __wrap_fstime_mono_us(void);
int64_t __wrap_fstime_mono_us(void)
{
	return clock_now;
}

bool __wrap_hangup_wait_until(const struct hangup_watch *w, int64_t deadline_us);
bool __wrap_hangup_wait_until(const struct hangup_watch *w, int64_t deadline_us)
{
	(void)w;
	if (hang_up)
		return true;
	if (deadline_us == INT64_MAX)
		fail_msg("a wait with no end");
	if (deadline_us > clock_now)
		clock_now = deadline_us;
	return false;
}

/* The backend: the answers to give, in order, and the calls it got. */
struct step {
	enum slot_verdict verdict;
	int64_t wait_us; /* from the end of the call */
	int64_t position;
	int64_t took_us; /* the call's time */
};
/* Redis: the calls answer i made (res->tries), 2 or more when one was asked again; 0: 1. */
static int step_tries[MAX_STEPS];
/* Redis: answer i's decision had a try that timed out (res->timed_out). */
static bool step_timed_out[MAX_STEPS];
struct call {
	enum slot_op op;
	bool local;
	int64_t at_us;	  /* when it began */
	int64_t until_us; /* when it had to be over (Redis: rslot_turn.until_us), 0: no sooner than its
			     own bound */
	int64_t max_wait_us;
	int64_t interval_us;
	bool said; /* Redis: rslot_turn.said, the outage logged already */
};
static struct step steps[MAX_STEPS];
static size_t n_steps, next_step;
static struct call calls[MAX_STEPS];
static size_t n_calls;
static int64_t named_interval_us; /* the schedule's own, as every answer names it; 0: none */

static enum slot_verdict backend(enum slot_op op, bool local, const struct slot_params *p,
				 int64_t until_us, struct slot_result *res)
{
	struct step s = { .verdict = SLOT_ADMIT };

	if (n_calls == MAX_STEPS)
		fail_msg("more than %d calls", MAX_STEPS);
	calls[n_calls++] = (struct call){ .op = op, .local = local, .at_us = clock_now,
					  .until_us = until_us,
					  .max_wait_us = p->max_wait_us,
					  .interval_us = p->interval_us };
	if (op != SLOT_LEAVE) {
		if (next_step == n_steps)
			fail_msg("call %zu: no answer scripted", n_calls);
		s = steps[next_step++];
	}
	/* A call cut short at until_us fails there, as rslot's budget ends it. */
	if (until_us > 0 && clock_now + s.took_us > until_us) {
		clock_now = until_us;
		return SLOT_UNAVAILABLE;
	}
	clock_now += s.took_us;
	if (op != SLOT_LEAVE)
		res->tries = step_tries[next_step - 1] > 0 ? step_tries[next_step - 1] : 1;
	if (op != SLOT_LEAVE)
		res->timed_out = step_timed_out[next_step - 1];
	if (s.verdict == SLOT_UNAVAILABLE)
		return s.verdict;
	res->verdict = s.verdict;
	res->wait_us = s.wait_us;
	res->position = s.position;
	res->deadline_us = clock_now + s.wait_us;
	res->sched_interval_us = named_interval_us;
	return s.verdict;
}

enum slot_verdict __wrap_lslot_call(const pam_handle_t *pamh, const struct lslot_call *call,
				    struct slot_result *res);
enum slot_verdict __wrap_lslot_call(const pam_handle_t *pamh, const struct lslot_call *call,
				    struct slot_result *res)
{
	assert_ptr_equal(pamh, FAKE_PAMH);
	return backend(call->op, true, call->p, call->until_us, res);
}

enum slot_verdict __wrap_rslot_turn_call(const pam_handle_t *pamh, const struct opt *o,
					 const struct rslot_turn *turn, enum slot_op op,
					 const char *key, const struct slot_place *place,
					 struct slot_result *res);
enum slot_verdict __wrap_rslot_turn_call(const pam_handle_t *pamh, const struct opt *o,
					 const struct rslot_turn *turn, enum slot_op op,
					 const char *key, const struct slot_place *place,
					 struct slot_result *res)
{
	enum slot_verdict v;

	(void)o, (void)key, (void)place;
	assert_ptr_equal(pamh, FAKE_PAMH);
	assert_non_null(turn);
	v = backend(op, false, &turn->p, turn->until_us, res);
	calls[n_calls - 1].said = turn->said;
	return v;
}

/* What a login gone in blind told the host of the schedule's next slot (rslot_heard_at_least):
   the last, and how many times. */
static int64_t heard_us;
static int n_heard;

void __wrap_rslot_heard_at_least(const struct opt *opt, const char *key, int64_t next_us);
void __wrap_rslot_heard_at_least(const struct opt *opt, const char *key, int64_t next_us)
{
	(void)opt;
	assert_string_equal(key, "k");
	heard_us = next_us;
	n_heard++;
}

/* The failed calls counted (stats_record_error), each. */
static int n_errors;

int __wrap_stats_record_error(const pam_handle_t *pamh, const char *state_dir, const char *tmpl,
			      bool dry_run);
int __wrap_stats_record_error(const pam_handle_t *pamh, const char *state_dir, const char *tmpl,
			      bool dry_run)
{
	(void)state_dir, (void)tmpl, (void)dry_run;
	assert_ptr_equal(pamh, FAKE_PAMH);
	n_errors++;
	return 0;
}

/* The log and the conversation. */
static char logged[MAX_STEPS][256];
static int logged_prio[MAX_STEPS];
static size_t n_logged;
static char told[MAX_STEPS][160];
static size_t n_told;

void __wrap_log_msg(const pam_handle_t *pamh, int prio, const char *fmt, ...);
void __wrap_log_msg(const pam_handle_t *pamh, int prio, const char *fmt, ...)
{
	va_list ap;

	(void)pamh;
	if (n_logged == MAX_STEPS)
		fail_msg("more than %d log lines", MAX_STEPS);
	logged_prio[n_logged] = prio;
	va_start(ap, fmt);
	vsnprintf(logged[n_logged++], sizeof(logged[0]), fmt, ap);
	va_end(ap);
}

int pam_prompt(pam_handle_t *pamh, int style, char **response, const char *fmt, ...)
{
	va_list ap;

	assert_ptr_equal(pamh, FAKE_PAMH);
	assert_int_equal(style, PAM_TEXT_INFO);
	(void)response;
	if (n_told == MAX_STEPS)
		fail_msg("more than %d messages", MAX_STEPS);
	va_start(ap, fmt);
	vsnprintf(told[n_told++], sizeof(told[0]), fmt, ap);
	va_end(ap);
	return PAM_SUCCESS;
}

static size_t warnings_with(const char *text)
{
	size_t n = 0;

	for (size_t i = 0; i < n_logged; i++)
		if (logged_prio[i] == LOG_WARNING && strstr(logged[i], text) != NULL)
			n++;
	return n;
}

static size_t warnings(void)
{
	return warnings_with("");
}

static size_t notices_with(const char *text)
{
	size_t n = 0;

	for (size_t i = 0; i < n_logged; i++)
		if (logged_prio[i] == LOG_NOTICE && strstr(logged[i], text) != NULL)
			n++;
	return n;
}

/* One login: interval 6 s, max_wait 12 s, reserved at T0 with a place whose slot is wait_us
   away, position 2 unless said (the clock is at T0 when it starts to wait). */
static struct opt o;
static int64_t position;
static const char *who; /* the login as the log names it; NULL: none */
static const struct slot_place place = { .id = "0123456789abcdef0123456789abcdef",
					 .who = "0123456789abcdef" };

static int setup(void **state)
{
	(void)state;
	opt_parse(&o, NULL, 0, NULL);
	o.slot.interval_us = 6 * S;
	o.slot.max_wait_us = 12 * S;
	o.countdown_us = 0;
	clock_now = T0;
	n_errors = 0;
	heard_us = n_heard = 0;
	position = 2;
	who = NULL;
	memset(step_tries, 0, sizeof(step_tries));
	memset(step_timed_out, 0, sizeof(step_timed_out));
	hang_up = false;
	n_steps = next_step = n_calls = n_logged = n_told = 0;
	named_interval_us = 0;
	return 0;
}

#define SCRIPT(...)                                                                      \
	do {                                                                             \
		static const struct step s_[] = { __VA_ARGS__ };                         \
		memcpy(steps, s_, sizeof(s_));                                           \
		n_steps = sizeof(s_) / sizeof(s_[0]);                                    \
	} while (0)

static enum queue_end wait_from(bool local, int64_t wait_us, int64_t limit_us,
				struct slot_result *res, bool talk)
{
	const struct queue_login l = { .pamh = FAKE_PAMH, .o = &o, .key = "k", .place = &place,
				       .local = local, .limit_us = limit_us, .who = who };
	struct hangup_watch w = { .n = 0 };
	struct countdown cd;

	*res = (struct slot_result){ .verdict = SLOT_QUEUED, .wait_us = wait_us, .position = position,
				     .deadline_us = clock_now + wait_us,
				     .sched_interval_us = res->sched_interval_us };
	countdown_start(&cd, FAKE_PAMH, PAM_TEXT_INFO, o.countdown_us, talk, res);
	return queue_wait(&l, res, &w, &cd);
}

/* Every renewal passes what is left of max_wait (limit - now) on either backend, with the
   login's own interval; the last, within a second of the slot, goes in at it. */
static void test_renewal_passes_what_is_left(void **state)
{
	for (int local = 0; local <= 1; local++) {
		struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

		setup(state);
		SCRIPT({ SLOT_QUEUED, 5 * S, 2, 0 }, { SLOT_QUEUED, 3 * S, 1, 0 },
		       { SLOT_ADMIT, 1 * S, 1, 0 });
		assert_int_equal(wait_from(local, 7 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
		assert_int_equal(n_calls, 3);
		for (size_t i = 0; i < 3; i++) {
			assert_int_equal(calls[i].op, SLOT_RENEW);
			assert_int_equal(calls[i].local, local);
			assert_int_equal(calls[i].interval_us, 6 * S);
			assert_int_equal(calls[i].at_us, T0 + 2 * S * (int64_t)(i + 1));
			assert_int_equal(calls[i].max_wait_us, 12 * S - 2 * S * (int64_t)(i + 1));
		}
		assert_int_equal(clock_now, T0 + 7 * S);
		assert_int_equal(warnings(), 0);
	}
}

/* Past the limit, a renewal passes 0, never less; with no limit (flowslotctl), max_wait. */
static void test_renewal_floor_and_no_limit(void **state)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	SCRIPT({ SLOT_ADMIT, 0, 1, 0 });
	assert_int_equal(wait_from(true, 2 * S, T0 + 1 * S, &res, false), QUEUE_TURN);
	assert_int_equal(calls[0].max_wait_us, 0);
	setup(state);
	SCRIPT({ SLOT_ADMIT, 0, 1, 0 });
	assert_int_equal(wait_from(false, 2 * S, 0, &res, false), QUEUE_TURN);
	assert_int_equal(calls[0].max_wait_us, 12 * S);
}

/* A renewal refused (its slot further off than what is left): the login is refused at once,
   res says the wait it would have had, and nothing is given back (the place is gone). */
static void test_refused_on_renewal(void **state)
{
	for (int local = 0; local <= 1; local++) {
		struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

		setup(state);
		SCRIPT({ SLOT_QUEUED, 4 * S, 2, 0 }, { SLOT_REFUSE, 14 * S, 3, 0 });
		assert_int_equal(wait_from(local, 6 * S, T0 + 12 * S, &res, false),
				 QUEUE_REFUSED);
		assert_int_equal(res.verdict, SLOT_REFUSE);
		assert_int_equal(res.wait_us, 14 * S);
		assert_int_equal(res.position, 3);
		assert_int_equal(n_calls, 2);
		assert_int_equal(clock_now, T0 + 4 * S);
	}
}

/* A backend that does not check: a renewal answers a place, or a fixed slot, past the limit.
   The module refuses it all the same, giving the place back; a fixed slot has nothing to give
   back. It never sleeps past the limit. */
static void test_slot_past_the_limit(void **state)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	SCRIPT({ SLOT_QUEUED, 11 * S, 2, 0 });
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_REFUSED);
	assert_int_equal(calls[0].max_wait_us, 10 * S);
	assert_int_equal(res.verdict, SLOT_REFUSE);
	assert_int_equal(res.wait_us, 11 * S);
	assert_int_equal(n_calls, 2);
	assert_int_equal(calls[1].op, SLOT_LEAVE);
	assert_true(clock_now <= T0 + 12 * S);

	setup(state);
	SCRIPT({ SLOT_QUEUED, 4 * S, 1, 0 }, { SLOT_QUEUED, 2 * S, 1, 0 },
	       { SLOT_ADMIT, 2500 * MS, 1, 0 });
	assert_int_equal(wait_from(true, 6 * S, T0 + 7 * S, &res, false), QUEUE_REFUSED);
	assert_int_equal(n_calls, 3);
	assert_int_equal(calls[2].at_us, T0 + 5 * S); /* the file's bound, 1 s, before the slot */
	assert_int_equal(calls[2].max_wait_us, 2 * S);
	assert_true(clock_now <= T0 + 7 * S);
}

/* A slot moved later by a renewal is told (an info message), within the limit. */
static void test_put_back_is_told(void **state)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	(void)state;
	SCRIPT({ SLOT_QUEUED, 8 * S, 2, 0 }, { SLOT_QUEUED, 6 * S, 2, 0 },
	       { SLOT_QUEUED, 4 * S, 2, 0 }, { SLOT_QUEUED, 2 * S, 2, 0 },
	       { SLOT_ADMIT, 0, 2, 0 });
	assert_int_equal(wait_from(true, 6 * S, T0 + 12 * S, &res, true), QUEUE_TURN);
	assert_int_equal(clock_now, T0 + 10 * S);
	assert_int_equal(n_told, 2);
	assert_string_equal(told[1], "Login queue: your turn was put back; you are number 2; "
				     "your turn in about 8 s.");
}

/* Each line tells the place and the wait of one answer (issue 30: the demo's 6th login was
   told "you are now number 3; your turn in about 1 s", a renewal's place with the wait left
   after a later one admitted it). A move found within 2 s of a step waits for the next
   answer, here the admission; that one comes within 2 s of the slot, and gives way to the
   turn (told by the caller). */
static void test_lines_from_one_answer(void **state)
{
	struct slot_result res = { .sched_interval_us = 1 * S };

	(void)state;
	o.countdown_us = 1 * S;
	named_interval_us = 1 * S;
	position = 5;
	SCRIPT({ SLOT_QUEUED, 1 * S, 2, 0 }, { SLOT_ADMIT, 500 * MS, 1, 0 });
	assert_int_equal(wait_from(false, 12 * S, T0 + 12 * S, &res, true), QUEUE_TURN);
	assert_int_equal(n_calls, 2);
	assert_int_equal(calls[0].at_us, T0 + 3 * S); /* a quarter of 12 s */
	assert_int_equal(calls[1].at_us, T0 + 4 * S); /* at its slot */
	assert_int_equal(n_told, 2);
	assert_string_equal(told[0], "Login queue: you are number 5; your turn in about 12 s.");
	assert_string_equal(told[1], "Login queue: about 10 s to go.");
}

/* One renewal fails (Redis restarting): the login keeps renewing and goes in through the
   schedule, logging one warning and not going in blind. */
static void test_one_failed_renewal(void **state)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	(void)state;
	SCRIPT({ SLOT_UNAVAILABLE, 0, 0, 300 * MS }, { SLOT_QUEUED, 2 * S, 1, 0 },
	       { SLOT_ADMIT, 500 * MS, 1, 0 });
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 3);
	assert_int_equal(calls[1].at_us, T0 + 4300 * MS);
	assert_int_equal(calls[2].op, SLOT_RENEW);
	assert_int_equal(clock_now, T0 + 6300 * MS);
	assert_int_equal(warnings(), 1);
	assert_int_equal(warnings_with("cannot be renewed"), 1);
	assert_int_equal(warnings_with("blind"), 0);
	/* The outage said once as it starts (its errors logged), once as it ends; counted. */
	assert_false(calls[0].said);
	assert_true(calls[1].said);
	assert_false(calls[2].said);
	assert_int_equal(notices_with("answers again, after 1 failed call over 2.3 s"), 1);
	assert_int_equal(n_errors, 1);
}

/* A renewal that timed out and was answered when asked again (rslot_turn_call) is said once, at
   LOG_NOTICE, naming the login, as are the lines of an outage: whose place is at risk. */
static void test_renewal_asked_again_named(void **state)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	(void)state;
	who = "service=sshd user=bob rhost=10.0.0.2";
	SCRIPT({ SLOT_QUEUED, 2 * S, 1, 700 * MS }, { SLOT_UNAVAILABLE, 0, 0, 0 },
	       { SLOT_ADMIT, 500 * MS, 1, 0 });
	step_tries[0] = 2;
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 3);
	assert_int_equal(notices_with("queue: the renewal that timed out was answered when asked "
				      "again (2 tries over 0.7 s): service=sshd user=bob "
				      "rhost=10.0.0.2"),
			 1);
	assert_int_equal(warnings_with("cannot be renewed: trying again until its slot, in "), 1);
	assert_int_equal(warnings_with(": service=sshd user=bob rhost=10.0.0.2"), 1);
	assert_int_equal(notices_with("answers again, after 1 failed call over "), 1);
	assert_int_equal(notices_with(": service=sshd user=bob rhost=10.0.0.2"), 2);
}

/* A renewal asked again answered with a place an interval or more past the one held: the try
   that timed out admitted the login late, and this is a second place. It is given back, and
   the login goes in at the slot it held, never later. */
static void test_renewal_asked_again_second_place(void **state)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	(void)state;
	who = "service=sshd user=bob rhost=10.0.0.2";
	SCRIPT({ SLOT_QUEUED, 10 * S, 3, 700 * MS });
	step_tries[0] = 2;
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 2);
	assert_int_equal(calls[0].op, SLOT_RENEW);
	assert_int_equal(calls[1].op, SLOT_LEAVE);
	assert_int_equal(clock_now, T0 + 6 * S);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(notices_with("answered with a second place: going in at its slot, in 3.3 s: "
				      "service=sshd user=bob rhost=10.0.0.2"),
			 1);
	/* So too when the renewal that timed out failed, and the next one, 2 s later, was
	   answered so. */
	setup(NULL);
	SCRIPT({ SLOT_UNAVAILABLE, 0, 0, 500 * MS }, { SLOT_QUEUED, 8 * S, 3, 0 });
	step_timed_out[0] = true;
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 3);
	assert_int_equal(calls[1].op, SLOT_RENEW);
	assert_int_equal(calls[2].op, SLOT_LEAVE);
	assert_int_equal(clock_now, T0 + 6 * S);
	assert_int_equal(notices_with("answered with a second place: going in at its slot"), 1);
	/* So too when the second place would have been past what is left of max_wait, and the
	   schedule refused it (the campaign's redis-stall saw it 5 times: told to try again,
	   their slot wasted): nothing held to give back. */
	setup(NULL);
	SCRIPT({ SLOT_REFUSE, 20 * S, 6, 700 * MS });
	step_tries[0] = 2;
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 1);
	assert_int_equal(clock_now, T0 + 6 * S);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(notices_with("answered with a refusal further back: going in at its slot, "
				      "in 3.3 s"),
			 1);
	/* Not so for a slot that moved less (a stricter interval, a clock step). */
	setup(NULL);
	SCRIPT({ SLOT_QUEUED, 5 * S, 2, 0 }, { SLOT_QUEUED, 2500 * MS, 1, 0 },
	       { SLOT_ADMIT, 500 * MS, 1, 0 });
	step_tries[0] = 2;
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(calls[1].op, SLOT_RENEW);
	assert_int_equal(notices_with("second place"), 0);
}

/* Every renewal fails, at once: tried every SLOT_RENEW_US, a timeout (500 ms) before the slot,
   and once more at it, one warning for them all, then one that it goes in blind, at the last
   slot given and no later. */
static void test_all_renewals_fail(void **state)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	(void)state;
	SCRIPT({ SLOT_UNAVAILABLE, 0, 0, 0 }, { SLOT_UNAVAILABLE, 0, 0, 0 },
	       { SLOT_UNAVAILABLE, 0, 0, 0 }, { SLOT_UNAVAILABLE, 0, 0, 0 });
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 4);
	assert_int_equal(calls[0].at_us, T0 + 2 * S);
	assert_int_equal(calls[1].at_us, T0 + 4 * S);
	assert_int_equal(calls[2].at_us, T0 + 5500 * MS);
	assert_int_equal(calls[2].until_us, T0 + 6 * S);
	assert_int_equal(calls[3].at_us, T0 + 6 * S);
	assert_int_equal(calls[3].until_us, T0 + 6500 * MS);
	assert_int_equal(clock_now, T0 + 6 * S);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(warnings(), 2);
	assert_int_equal(warnings_with("cannot be renewed"), 1);
	assert_int_equal(warnings_with("going in blind"), 1);
	/* The host heard that the schedule moves on an interval past that slot (the login's own:
	   no answer named the schedule's), for a schedule lost meanwhile. */
	assert_int_equal(n_heard, 1);
	assert_int_equal(heard_us, T0 + 6 * S + o.slot.interval_us);
	/* Only the first call's errors are logged; every failure is counted. */
	assert_false(calls[0].said);
	for (size_t i = 1; i < n_calls; i++)
		assert_true(calls[i].said);
	assert_int_equal(notices_with("answers again"), 0);
	assert_int_equal(n_errors, 4);
}

/* A failure near the slot: the next try is a timeout (500 ms) before the slot, not
   SLOT_RENEW_US later, and one that fails before the slot is tried once more at it; a call
   that would run past the slot is cut short at it, and the login goes in at once. */
static void test_failure_near_the_slot(void **state)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	SCRIPT({ SLOT_QUEUED, 4 * S, 1, 0 }, { SLOT_UNAVAILABLE, 0, 0, 1 * S },
	       { SLOT_UNAVAILABLE, 0, 0, 200 * MS }, { SLOT_UNAVAILABLE, 0, 0, 0 });
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 4);
	assert_int_equal(calls[1].at_us, T0 + 4 * S);
	assert_int_equal(calls[2].at_us, T0 + 5500 * MS);
	assert_int_equal(calls[3].at_us, T0 + 6 * S);
	assert_int_equal(clock_now, T0 + 6 * S);

	setup(state);
	SCRIPT({ SLOT_QUEUED, 3 * S, 1, 0 }, { SLOT_UNAVAILABLE, 0, 0, 1500 * MS });
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 2);
	assert_int_equal(calls[1].until_us, T0 + 5 * S);
	assert_int_equal(clock_now, T0 + 5 * S);
	assert_int_equal(warnings_with("going in blind"), 1);
}

/* L2: the login renews when the lease its last answer granted asks (slot_renew_us), from the
   wait and the schedule's own interval (6 s: near within 14 s): a quarter of the wait far
   back, every 2 s near its turn, and, first in line, a timeout before its slot; a failure is
   tried again 2 s later. */
static void test_renewal_fits_the_wait(void **state)
{
	struct slot_result res = { .sched_interval_us = 6 * S };

	(void)state;
	o.slot.max_wait_us = 120 * S;
	named_interval_us = 6 * S;
	SCRIPT({ SLOT_QUEUED, 45 * S, 8, 0 }, { SLOT_UNAVAILABLE, 0, 0, 0 },
	       { SLOT_QUEUED, 20 * S, 4, 0 }, { SLOT_QUEUED, 12 * S, 2, 0 },
	       { SLOT_QUEUED, 1 * S, 1, 0 }, { SLOT_ADMIT, 500 * MS, 1, 0 });
	assert_int_equal(wait_from(false, 60 * S, T0 + 120 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 6);
	assert_int_equal(calls[0].at_us, T0 + 15 * S);		/* 60 s off: a quarter */
	assert_int_equal(calls[1].at_us, T0 + 26250 * MS);	/* 45 s off: fails */
	assert_int_equal(calls[2].at_us, T0 + 28250 * MS);	/* tried again 2 s later */
	assert_int_equal(calls[3].at_us, T0 + 33250 * MS);	/* 20 s off: 5 s */
	assert_int_equal(calls[4].at_us, T0 + 35250 * MS);	/* 12 s off, near: 2 s */
	/* first in line: a timeout (500 ms) before its slot, admitted to go in at it */
	assert_int_equal(calls[5].at_us, T0 + 35750 * MS);
	assert_int_equal(clock_now, T0 + 36250 * MS);
	assert_int_equal(warnings_with("cannot be renewed"), 1);
}

/* Cut off from the schedule, each call taking its whole bound (packets that vanish: timeout
   per node asked, up to 4 of them with Sentinel or a cluster; the file's lock wait): the last
   try begins a timeout before the slot and is over by it, so that the login goes in blind at
   its slot, not a call's time after it (the fault campaign's partition found it 300 ms late
   with timeout=300ms, the next login then following it by interval - 300 ms). */
static void test_last_try_ends_by_the_slot(void **state)
{
	static const struct {
		bool local;
		enum url_backend backend;
		int64_t timeout_us, took_us;
	} cases[] = {
		{ false, URL_BACKEND_TCP, 500 * MS, 500 * MS },
		{ false, URL_BACKEND_UNIX, 300 * MS, 300 * MS },
		{ false, URL_BACKEND_SENTINEL, 250 * MS, 1 * S },
		{ false, URL_BACKEND_CLUSTER, 500 * MS, 2 * S },
		{ true, URL_BACKEND_LOCAL, 500 * MS, 1 * S },
	};
	struct slot_result res;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setup(state);
		o.url.backend = cases[i].backend;
		o.timeout_us = cases[i].timeout_us;
		for (size_t k = 0; k < 4; k++)
			steps[k] = (struct step){ SLOT_UNAVAILABLE, 0, 0, cases[i].took_us };
		n_steps = 4;
		assert_int_equal(wait_from(cases[i].local, 6 * S, T0 + 12 * S, &res, false),
				 QUEUE_TURN);
		assert_int_equal(calls[0].at_us, T0 + 2 * S);
		assert_true(calls[n_calls - 1].at_us <=
			    T0 + 6 * S - (cases[i].local ? 1 * S : cases[i].timeout_us));
		/* The file's lock wait too (lslot.c ends it by until_us). */
		assert_int_equal(calls[n_calls - 1].until_us, T0 + 6 * S);
		assert_int_equal(clock_now, T0 + 6 * S);
		assert_int_equal(res.verdict, SLOT_ADMIT);
		assert_int_equal(warnings_with("going in blind"), 1);
		/* On Redis the host hears of it; the file is the host's own schedule. */
		assert_int_equal(n_heard, cases[i].local ? 0 : 1);
	}

	/* First in line, its slot 2.1 s off: the renewal that would admit it is not SLOT_RENEW_US
	   later, 100 ms before the slot, but a timeout before it, over by the slot (4 timeouts
	   would not be, with a cluster), and its failure sends the login in at its slot. */
	for (int cluster = 0; cluster <= 1; cluster++) {
		setup(state);
		position = 1;
		o.url.backend = cluster ? URL_BACKEND_CLUSTER : URL_BACKEND_TCP;
		SCRIPT({ SLOT_UNAVAILABLE, 0, 0, 2 * S });
		assert_int_equal(wait_from(false, 2100 * MS, T0 + 12 * S, &res, false), QUEUE_TURN);
		assert_int_equal(n_calls, 1);
		assert_int_equal(calls[0].at_us, T0 + 1600 * MS);
		assert_int_equal(calls[0].until_us, T0 + 2100 * MS);
		assert_int_equal(clock_now, T0 + 2100 * MS);
	}

	/* The same, the schedule refusing at once (restarting): tried once more at the slot,
	   within a timeout, and back by then, it admits the login there. */
	setup(state);
	position = 1;
	o.url.backend = URL_BACKEND_CLUSTER;
	SCRIPT({ SLOT_UNAVAILABLE, 0, 0, 0 }, { SLOT_ADMIT, 0, 1, 0 });
	assert_int_equal(wait_from(false, 2100 * MS, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 2);
	assert_int_equal(calls[1].at_us, T0 + 2100 * MS);
	assert_int_equal(calls[1].until_us, T0 + 2600 * MS);
	assert_int_equal(clock_now, T0 + 2100 * MS);
	assert_int_equal(warnings_with("cannot be renewed"), 1);
	assert_int_equal(warnings_with("blind"), 0);

	/* Further back, it renews SLOT_RENEW_US later, or at its slot, as it did, not a timeout
	   before it: its slot may keep moving (a place ahead not given up yet), and it must not
	   call in a loop. A renewal at the slot has one timeout. */
	setup(state);
	SCRIPT({ SLOT_QUEUED, 1200 * MS, 2, 0 }, { SLOT_QUEUED, 1200 * MS, 2, 0 },
	       { SLOT_ADMIT, 0, 1, 0 });
	assert_int_equal(wait_from(false, 1200 * MS, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 3);
	assert_int_equal(calls[0].at_us, T0 + 1200 * MS);
	assert_int_equal(calls[1].at_us, T0 + 2400 * MS);
	assert_int_equal(calls[2].at_us, T0 + 3600 * MS);
	assert_int_equal(calls[0].until_us, T0 + 1700 * MS);
}

/* Whatever its place, a renewal is over by the slot, or a timeout after it began, whichever
   is later: asked again (4 timeouts) it never runs on past the slot, and a login that cannot
   reach the schedule goes in blind by then. The campaign's redis-stop-long saw a second in
   line renew 0.9 s before its slot, answered 1.1 s past it, after the one behind it had gone
   in blind at its own. */
static void test_renewal_over_by_the_slot(void **state)
{
	struct slot_result res;

	/* Second in line, its slot at 6 s: the renewal at 4 s would be answered at 7 s. */
	setup(state);
	SCRIPT({ SLOT_QUEUED, 4 * S, 2, 0 }, { SLOT_ADMIT, 0, 1, 3 * S });
	assert_int_equal(wait_from(false, 6 * S, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(n_calls, 2);
	assert_int_equal(calls[1].at_us, T0 + 4 * S);
	assert_int_equal(calls[1].until_us, T0 + 6 * S);
	assert_int_equal(clock_now, T0 + 6 * S);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(warnings_with("going in blind"), 1);

	/* Far back, the slot a minute off: the renewal keeps its own bound (until_us past it). */
	setup(state);
	o.slot.max_wait_us = 120 * S;
	named_interval_us = res.sched_interval_us = 6 * S;
	SCRIPT({ SLOT_ADMIT, 0, 1, 0 });
	position = 9;
	assert_int_equal(wait_from(false, 60 * S, T0 + 120 * S, &res, false), QUEUE_TURN);
	assert_int_equal(calls[0].at_us, T0 + 15 * S);
	assert_int_equal(calls[0].until_us, T0 + 60 * S);

	/* Its lease renewal 100 ms before its slot: a timeout (500 ms) all the same. */
	setup(state);
	res.sched_interval_us = 0;
	SCRIPT({ SLOT_QUEUED, 1 * S, 2, 300 * MS }, { SLOT_ADMIT, 0, 1, 0 });
	assert_int_equal(wait_from(false, 2100 * MS, T0 + 12 * S, &res, false), QUEUE_TURN);
	assert_int_equal(calls[0].at_us, T0 + 2 * S);
	assert_int_equal(calls[0].until_us, T0 + 2500 * MS);
	assert_int_equal(clock_now, T0 + 3300 * MS);
}

/* A user who hangs up gives the place back. */
static void test_hang_up(void **state)
{
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE };

	(void)state;
	hang_up = true;
	assert_int_equal(wait_from(true, 6 * S, T0 + 12 * S, &res, false), QUEUE_ABANDONED);
	assert_int_equal(n_calls, 1);
	assert_int_equal(calls[0].op, SLOT_LEAVE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_renewal_passes_what_is_left, setup),
		cmocka_unit_test_setup(test_renewal_floor_and_no_limit, setup),
		cmocka_unit_test_setup(test_refused_on_renewal, setup),
		cmocka_unit_test_setup(test_slot_past_the_limit, setup),
		cmocka_unit_test_setup(test_put_back_is_told, setup),
		cmocka_unit_test_setup(test_lines_from_one_answer, setup),
		cmocka_unit_test_setup(test_one_failed_renewal, setup),
		cmocka_unit_test_setup(test_all_renewals_fail, setup),
		cmocka_unit_test_setup(test_failure_near_the_slot, setup),
		cmocka_unit_test_setup(test_renewal_fits_the_wait, setup),
		cmocka_unit_test_setup(test_last_try_ends_by_the_slot, setup),
		cmocka_unit_test_setup(test_renewal_over_by_the_slot, setup),
		cmocka_unit_test_setup(test_hang_up, setup),
		cmocka_unit_test_setup(test_renewal_asked_again_named, setup),
		cmocka_unit_test_setup(test_renewal_asked_again_second_place, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
