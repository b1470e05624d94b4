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
	assert_int_equal(res->verdict,
			 res->wait_us > p->max_wait_us ? SLOT_REFUSE : SLOT_ADMIT);
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

static void test_stale_future(void **state)
{
	const struct slot_params p = { .interval_us = T, .max_wait_us = 60 * S, .burst = 2 };
	/* The furthest tat an admission can leave: now + max_wait + burst * interval. */
	const int64_t bound = NOW + p.max_wait_us + p.burst * p.interval_us;
	struct slot_result res;

	(void)state;
	assert_int_equal(decide(&p, NOW, NOW + 86400 * S, &res), NOW + T);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(res.position, 1);
	assert_int_equal(res.deadline_us, NOW);

	/* At the bound the schedule is real (and full); one past it is stale. */
	decide(&p, NOW, bound, &res);
	assert_int_equal(res.verdict, SLOT_REFUSE);
	assert_int_equal(res.wait_us, bound - (p.burst - 1) * T - NOW);
	assert_int_equal(decide(&p, NOW, bound + 1, &res), NOW + T);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_schedule),
		cmocka_unit_test(test_burst_one),
		cmocka_unit_test(test_burst_three),
		cmocka_unit_test(test_max_wait),
		cmocka_unit_test(test_stale_past),
		cmocka_unit_test(test_stale_future),
		cmocka_unit_test(test_fill_never_stale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
