/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/slot.c: the GCRA step shared by the local backend and slot.lua. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flowslot/slot.h"

#define S INT64_C(1000000)
#define NOW (INT64_C(123456) * S + 789) /* a CLOCK_MONOTONIC-like time */
#define T (7 * S)

/* One decision, with the invariants that hold for every decision checked. */
static int64_t decide(const struct slot_params *p, int64_t now, int64_t tat,
		      struct slot_result *res)
{
	int64_t next;

	res->verdict = SLOT_UNAVAILABLE;
	res->wait_us = res->position = res->deadline_us = -1;
	next = slot_decide(p, now, tat, res);
	assert_true(res->wait_us >= 0);
	assert_int_equal(res->deadline_us, now + res->wait_us);
	assert_int_equal(res->position, res->wait_us / p->interval_us + 1);
	assert_int_equal(res->verdict, res->wait_us > p->max_wait_us ? SLOT_REFUSE : SLOT_ADMIT);
	return next;
}

static void test_empty_schedule(void **state)
{
	const struct slot_params p = { .interval_us = T, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;

	(void)state;
	assert_int_equal(decide(&p, NOW, NOW, &res), NOW + T);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(res.position, 1);
	assert_int_equal(res.deadline_us, NOW);
}

static void test_burst_one(void **state)
{
	const struct slot_params p = { .interval_us = T, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	int64_t tat = NOW;

	(void)state;
	for (int64_t i = 0; i < 5; i++) {
		tat = decide(&p, NOW, tat, &res);
		assert_int_equal(res.verdict, SLOT_ADMIT);
		assert_int_equal(res.wait_us, i * T);
		assert_int_equal(res.position, i + 1);
		assert_int_equal(res.deadline_us, NOW + i * T);
		assert_int_equal(tat, NOW + (i + 1) * T);
	}

	/* Later on the schedule moves up: 10 s on, the sixth login waits 5 * 7 - 10 = 25 s. */
	tat = decide(&p, NOW + 10 * S, tat, &res);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 25 * S);
	assert_int_equal(res.position, 4);
	assert_int_equal(res.deadline_us, NOW + 35 * S);
	assert_int_equal(tat, NOW + 6 * T);
}

static void test_burst_three(void **state)
{
	const struct slot_params p = { .interval_us = T, .max_wait_us = 60 * S, .burst = 3 };
	struct slot_result res;
	int64_t tat = NOW;

	(void)state;
	for (int i = 0; i < 3; i++) {
		tat = decide(&p, NOW, tat, &res);
		assert_int_equal(res.verdict, SLOT_ADMIT);
		assert_int_equal(res.wait_us, 0);
		assert_int_equal(res.position, 1);
	}
	tat = decide(&p, NOW, tat, &res);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, T);
	assert_int_equal(res.position, 2);
	tat = decide(&p, NOW, tat, &res);
	assert_int_equal(res.wait_us, 2 * T);
	assert_int_equal(res.position, 3);

	/* After a quiet spell the whole burst is back. */
	tat = decide(&p, NOW + 100 * S, tat, &res);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(tat, NOW + 100 * S + T);
}

static void test_max_wait(void **state)
{
	const struct slot_params p = { .interval_us = T, .max_wait_us = 2 * T, .burst = 1 };
	struct slot_result res;
	int64_t tat = NOW;

	(void)state;
	/* Waits 0, T and 2T == max_wait are admitted. */
	for (int64_t i = 0; i < 3; i++) {
		tat = decide(&p, NOW, tat, &res);
		assert_int_equal(res.verdict, SLOT_ADMIT);
		assert_int_equal(res.wait_us, i * T);
	}
	/* 3T is refused; nothing is stored, so the next one is refused the same way. */
	for (int i = 0; i < 3; i++) {
		decide(&p, NOW, tat, &res);
		assert_int_equal(res.verdict, SLOT_REFUSE);
		assert_int_equal(res.wait_us, 3 * T);
		assert_int_equal(res.position, 4);
	}
	/* One microsecond later the wait is max_wait again: admitted. */
	decide(&p, NOW + T - 1, tat, &res);
	assert_int_equal(res.verdict, SLOT_REFUSE);
	assert_int_equal(res.wait_us, 2 * T + 1);
	decide(&p, NOW + T, tat, &res);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 2 * T);

	/* max_wait 0: only an immediate slot. */
	{
		const struct slot_params p0 = { .interval_us = T, .max_wait_us = 0, .burst = 2 };

		tat = decide(&p0, NOW, NOW, &res);
		assert_int_equal(res.verdict, SLOT_ADMIT);
		tat = decide(&p0, NOW, tat, &res);
		assert_int_equal(res.verdict, SLOT_ADMIT);
		assert_int_equal(res.wait_us, 0);
		decide(&p0, NOW, tat, &res);
		assert_int_equal(res.verdict, SLOT_REFUSE);
		assert_int_equal(res.wait_us, T);
	}
}

static void test_stale_past(void **state)
{
	const struct slot_params p = { .interval_us = T, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;

	(void)state;
	/* A tat in the past gives no credit: the next slot is now + T, not tat + T. */
	assert_int_equal(decide(&p, NOW, NOW - 100 * S, &res), NOW + T);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(res.position, 1);
	assert_int_equal(decide(&p, NOW, NOW - 1, &res), NOW + T);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(decide(&p, NOW, 0, &res), NOW + T);
	assert_int_equal(res.wait_us, 0);
}

/* Staleness is read from the stored schedule alone. */
static void test_recover(void **state)
{
	const int64_t at = NOW - 2 * S;

	(void)state;
	/* A queue 63 s long stays whatever any login's settings are. */
	assert_int_equal(slot_recover(NOW, NOW + 63 * S, at), NOW + 63 * S);
	/* A clock that went back 10 s moves the schedule back as far: the queue keeps its
	   length, 63 + 2 - 2 s from the time it was written. */
	assert_int_equal(slot_recover(at - 10 * S, NOW + 63 * S, at), NOW + 53 * S);
	/* ... however far back: a day. */
	assert_int_equal(slot_recover(NOW - 86400 * S, NOW + 63 * S, NOW), NOW - 86337 * S);
	/* Passed, garbled, or further ahead than any settings allow. */
	assert_int_equal(slot_recover(NOW, NOW - 1, at), NOW);
	assert_int_equal(slot_recover(NOW, NOW + S, 0), NOW);
	assert_int_equal(slot_recover(NOW, NOW + S, -5), NOW);
	assert_int_equal(slot_recover(NOW, at - 1, at), NOW);
	assert_int_equal(slot_recover(NOW, NOW + SLOT_HORIZON_MAX_US, NOW),
			 NOW + SLOT_HORIZON_MAX_US);
	assert_int_equal(slot_recover(NOW, NOW + SLOT_HORIZON_MAX_US + 1, NOW), NOW);
}

/* A login's own max_wait never resets or jumps a queue that others built: nine logins at
   max_wait=60s queue 63 s; one at max_wait=45s, then one at 50 s, are refused and leave it. */
static void test_mixed_settings(void **state)
{
	const struct slot_params p60 = { .interval_us = T, .max_wait_us = 60 * S, .burst = 1 };
	const struct slot_params p45 = { .interval_us = T, .max_wait_us = 45 * S, .burst = 1 };
	const struct slot_params p50 = { .interval_us = T, .max_wait_us = 50 * S, .burst = 1 };
	struct slot_result res;
	int64_t tat = NOW, at = 0;

	(void)state;
	for (int i = 0; i < 9; i++) {
		tat = decide(&p60, NOW, slot_recover(NOW, tat, at), &res);
		at = NOW;
		assert_int_equal(res.verdict, SLOT_ADMIT);
	}
	assert_int_equal(tat, NOW + 63 * S);
	for (int64_t later = 0; later <= 10 * S; later += S) {
		decide(&p45, NOW + later, slot_recover(NOW + later, tat, at), &res);
		assert_int_equal(res.verdict, SLOT_REFUSE);
		assert_int_equal(res.wait_us, 63 * S - later);
		decide(&p50, NOW + later, slot_recover(NOW + later, tat, at), &res);
		assert_int_equal(res.verdict, SLOT_REFUSE);
	}
	/* Once the queue is shorter than max_wait, the login joins its end. */
	decide(&p45, NOW + 18 * S, slot_recover(NOW + 18 * S, tat, at), &res);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 45 * S);
}

/* Filling a schedule never leaves a tat that the next decision would call stale. */
static void test_fill_never_stale(void **state)
{
	const struct slot_params ps[] = {
		{ .interval_us = T, .max_wait_us = 60 * S, .burst = 1 },
		{ .interval_us = 1000, .max_wait_us = 0, .burst = 1 },
		{ .interval_us = 3 * S, .max_wait_us = 10 * S, .burst = 5 },
		{ .interval_us = 1 * S, .max_wait_us = 3600 * S, .burst = 1000 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		const struct slot_params *p = &ps[i];
		struct slot_result res;
		int64_t tat = NOW, admitted = 0, last_wait = -1;

		for (;;) {
			int64_t next = decide(p, NOW, tat, &res);

			if (res.verdict == SLOT_REFUSE)
				break;
			assert_true(res.wait_us >= last_wait);
			last_wait = res.wait_us;
			tat = next;
			admitted++;
			assert_true(admitted <= 10000);
		}
		/* burst at once, then one per interval up to max_wait. */
		assert_int_equal(admitted, p->burst + p->max_wait_us / p->interval_us);
		assert_int_equal(res.wait_us, last_wait + p->interval_us);
	}
}

/* The schedule's own settings, where the backend named them and they are not the caller's,
   are written for the log, both sides; settings not named (0) or the same are not. */
static void test_settings_differ(void **state)
{
	const struct slot_params p = { .interval_us = 3 * S, .max_wait_us = 60 * S, .burst = 4 };
	struct slot_result res = { .verdict = SLOT_QUEUED };
	char buf[200] = "untouched";

	(void)state;
	assert_false(slot_settings_differ(&p, &res, buf, sizeof(buf)));
	res.sched_interval_us = 3 * S;
	res.sched_burst = 4;
	assert_false(slot_settings_differ(&p, &res, buf, sizeof(buf)));
	assert_string_equal(buf, "untouched");
	res.sched_interval_us = 7 * S;
	res.sched_burst = 1;
	assert_true(slot_settings_differ(&p, &res, buf, sizeof(buf)));
	assert_string_equal(buf, "the schedule keeps interval=7s burst=1, not this stack's "
				 "interval=3s burst=4 (the strictest since it was made)");
	res.sched_interval_us = 0; /* not said: the caller's */
	assert_true(slot_settings_differ(&p, &res, buf, sizeof(buf)));
	assert_string_equal(buf, "the schedule keeps interval=3s burst=1, not this stack's "
				 "interval=3s burst=4 (the strictest since it was made)");
	res.sched_interval_us = 4500 * 1000;
	res.sched_burst = 0;
	assert_true(slot_settings_differ(&p, &res, buf, sizeof(buf)));
	assert_string_equal(buf, "the schedule keeps interval=4500ms burst=4, not this stack's "
				 "interval=3s burst=4 (the strictest since it was made)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_schedule), cmocka_unit_test(test_burst_one),
		cmocka_unit_test(test_burst_three),    cmocka_unit_test(test_max_wait),
		cmocka_unit_test(test_stale_past),     cmocka_unit_test(test_recover),
		cmocka_unit_test(test_mixed_settings), cmocka_unit_test(test_fill_never_stale),
		cmocka_unit_test(test_settings_differ),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
