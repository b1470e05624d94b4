/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/countdown.c: the wording of waits, the schedule of step messages, and
   what a waiting login is told as its place moves, through a fake conversation and a fake
   clock (fstime_mono_us is wrapped). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <security/pam_ext.h>

#include "flowslot/countdown.h"

#define S INT64_C(1000000)
#define MS INT64_C(1000)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_MARKS 64
#define MAX_TOLD 32

/* The fake conversation: pam_info is pam_prompt(PAM_TEXT_INFO); this definition takes the
   place of libpam's for src/countdown.c. Every message must be of want_style. */
static char told[MAX_TOLD][128];
static size_t n_told;
static int want_style;
static int conv_rc; /* what the conversation answers */
static int fake_handle;
#define FAKE_PAMH ((pam_handle_t *)&fake_handle)

int pam_prompt(pam_handle_t *pamh, int style, char **response, const char *fmt, ...)
{
	va_list ap;

	assert_ptr_equal(pamh, FAKE_PAMH);
	assert_int_equal(style, want_style);
	assert_null(response);
	if (n_told == MAX_TOLD)
		fail_msg("more than %d messages", MAX_TOLD);
	va_start(ap, fmt);
	vsnprintf(told[n_told++], sizeof(told[0]), fmt, ap);
	va_end(ap);
	return conv_rc;
}

/* The fake clock: each reading moves it on by clock_step (by default well past
   COUNTDOWN_GAP_US, so that no message waits for the gap unless a test says so). */
static int64_t clock_now;
static int64_t clock_step;

int64_t __wrap_fstime_mono_us(void);
int64_t __wrap_fstime_mono_us(void)
{
	int64_t t = clock_now;

	clock_now += clock_step;
	return t;
}

static int reset_told(void **state)
{
	(void)state;
	n_told = 0;
	want_style = PAM_TEXT_INFO;
	conv_rc = PAM_SUCCESS;
	clock_now = 1 * S; /* below every deadline the tests use */
	clock_step = 10 * S;
	return 0;
}

static void test_format(void **state)
{
	static const struct {
		int64_t us;
		const char *want;
	} cases[] = {
		{ 1, "0.1 s" },
		{ 100000, "0.1 s" },
		{ 100001, "0.2 s" },
		{ 400000, "0.4 s" },
		{ 999999, "1 s" },
		{ 1000000, "1 s" },
		{ 1000001, "1.1 s" },
		{ 1500000, "1.5 s" },
		{ 1900001, "2 s" },
		{ 2000000, "2 s" },
		{ 9900000, "9.9 s" },
		{ 9800001, "9.9 s" },
		{ 9900001, "10 s" },
		{ 9950000, "10 s" }, /* 99.5 tenths, up to 100: whole seconds */
		{ 10000000, "10 s" },
		{ 10000001, "11 s" },
		{ 14200000, "15 s" },
		{ 60000000, "60 s" },
		{ 60000001, "61 s" },
		{ 3600 * S, "3600 s" },
		{ 0, "0 s" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char buf[32];

		memset(buf, '#', sizeof(buf));
		countdown_format(cases[i].us, buf, sizeof(buf));
		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("%lld us: \"%s\", want \"%s\"", (long long)cases[i].us, buf,
				 cases[i].want);
	}
}

static void test_format_small_buffer(void **state)
{
	char buf[8];

	(void)state;
	memset(buf, '#', sizeof(buf));
	countdown_format(1500000, buf, 4);
	assert_string_equal(buf, "1.5");
	assert_int_equal(buf[4], '#');
}

/* The marks countdown_tick announces, in order; returns how many. */
static size_t marks_of(int64_t wait, int64_t step, int64_t *marks)
{
	size_t n = 0;

	for (int64_t m = countdown_next(wait, step, wait); m > 0;
	     m = countdown_next(wait, step, m)) {
		if (n == MAX_MARKS)
			fail_msg("wait %lld step %lld: more than %d marks", (long long)wait,
				 (long long)step, MAX_MARKS);
		marks[n++] = m;
	}
	return n;
}

static void expect_marks(int64_t wait, int64_t step, const int64_t *want, size_t nwant)
{
	int64_t got[MAX_MARKS];
	size_t n = marks_of(wait, step, got);
	char shown[512] = "";
	size_t o = 0;

	for (size_t i = 0; i < n && o < sizeof(shown) - 32; i++)
		o += (size_t)snprintf(shown + o, sizeof(shown) - o, " %lld", (long long)got[i]);
	if (n != nwant)
		fail_msg("wait %lld step %lld: %zu marks (%s), want %zu", (long long)wait,
			 (long long)step, n, shown, nwant);
	for (size_t i = 0; i < n; i++) {
		if (got[i] != want[i])
			fail_msg("wait %lld step %lld: marks%s; mark %zu should be %lld",
				 (long long)wait, (long long)step, shown, i, (long long)want[i]);
	}
}

#define EXPECT_MARKS(wait, step, ...)                                                    \
	do {                                                                             \
		static const int64_t want_[] = { __VA_ARGS__ };                          \
		expect_marks((wait), (step), want_ + 1, ARRAY_SIZE(want_) - 1);          \
	} while (0)

static void test_schedule(void **state)
{
	(void)state;
	/* Each list starts with a 0 that is not a mark. */
	EXPECT_MARKS(60 * S, 15 * S, 0, 45 * S, 30 * S, 15 * S);
	/* 15 s is only 0.2 s after the first message: skipped. */
	EXPECT_MARKS(15200 * MS, 15 * S, 0);
	/* 10 s is 6 s after the first message, at least half a step (5 s). */
	EXPECT_MARKS(16 * S, 10 * S, 0, 10 * S);
	/* 4 s after it: less than half a step. */
	EXPECT_MARKS(14 * S, 10 * S, 0);
	/* Exactly half a step after it is kept. */
	EXPECT_MARKS(15 * S, 10 * S, 0, 10 * S);
	EXPECT_MARKS(15 * S - 1, 10 * S, 0);
	EXPECT_MARKS(30 * S, 15 * S, 0, 15 * S);
	EXPECT_MARKS(45500 * MS, 15 * S, 0, 30 * S, 15 * S);
	EXPECT_MARKS(61 * S, 15 * S, 0, 45 * S, 30 * S, 15 * S);
	EXPECT_MARKS(67500 * MS, 15 * S, 0, 60 * S, 45 * S, 30 * S, 15 * S);
	EXPECT_MARKS(100 * S, 30 * S, 0, 60 * S, 30 * S);
	EXPECT_MARKS(7 * S, 15 * S, 0);
	EXPECT_MARKS(1 * S, 100 * MS, 0, 900 * MS, 800 * MS, 700 * MS, 600 * MS, 500 * MS,
		     400 * MS, 300 * MS, 200 * MS, 100 * MS);
	/* No steps at all. */
	EXPECT_MARKS(60 * S, 0, 0);
	EXPECT_MARKS(60 * S, -15 * S, 0);
	EXPECT_MARKS(0, 15 * S, 0);
	EXPECT_MARKS(-5 * S, 15 * S, 0);
	assert_int_equal(countdown_next(60 * S, 15 * S, 0), 0);
	assert_int_equal(countdown_next(60 * S, 15 * S, 15 * S), 0);
	assert_int_equal(countdown_next(60 * S, 15 * S, 15 * S + 1), 15 * S);
}

/* Against the rule itself, for many waits: the marks are exactly the multiples of the step
   below the wait that come at least half a step after the first message, in order. */
static void test_schedule_rule(void **state)
{
	static const int64_t steps[] = { 100 * MS, 1 * S, 10 * S, 15 * S, 30 * S };

	(void)state;
	for (size_t si = 0; si < ARRAY_SIZE(steps); si++) {
		int64_t step = steps[si];

		for (int64_t wait = 1; wait <= 6 * step; wait += step / 40 + 7) {
			int64_t got[MAX_MARKS];
			size_t n = marks_of(wait, step, got), k = 0;

			for (int64_t m = (wait - 1) / step * step; m > 0; m -= step) {
				if (wait - m < step / 2)
					continue;
				if (k >= n || got[k] != m)
					fail_msg("wait %lld step %lld: mark %lld missing",
						 (long long)wait, (long long)step, (long long)m);
				k++;
			}
			if (k != n)
				fail_msg("wait %lld step %lld: %zu marks, want %zu",
					 (long long)wait, (long long)step, n, k);
		}
	}
}

static void test_message_count(void **state)
{
	int64_t marks[MAX_MARKS];
	size_t n;

	(void)state;
	/* The first message, the steps, and "your turn now". */
	n = marks_of(60 * S, 15 * S, marks);
	assert_true(1 + n + 1 <= 5);
	/* For any wait up to the default max_wait, with the default step. */
	for (int64_t wait = 1 * MS; wait <= 60 * S; wait += 1 * MS) {
		n = marks_of(wait, 15 * S, marks);
		if (1 + n + 1 > 5)
			fail_msg("wait %lld: %zu messages", (long long)wait, 1 + n + 1);
		/* No step message crowds the first one. */
		if (n > 0 && wait - marks[0] < 15 * S / 2)
			fail_msg("wait %lld: first step %lld", (long long)wait,
				 (long long)marks[0]);
	}
}

static void expect_told(size_t i, const char *want)
{
	if (i >= n_told)
		fail_msg("message %zu not sent; want \"%s\"", i, want);
	if (strcmp(told[i], want) != 0)
		fail_msg("message %zu: \"%s\", want \"%s\"", i, told[i], want);
}

static struct slot_result queued(int64_t wait_us, int64_t position)
{
	struct slot_result r = { .verdict = SLOT_QUEUED, .wait_us = wait_us, .position = position };

	return r;
}

/* The first message: the place and the whole wait; "next" for the first in line. */
static void test_start(void **state)
{
	struct countdown c;
	struct slot_result r = queued(60 * S, 3);

	(void)state;
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
	r = queued(4200 * MS, 1);
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
	assert_int_equal(n_told, 2);
	expect_told(0, "Login queue: you are number 3; your turn in about 60 s.");
	expect_told(1, "Login queue: you are next; your turn in about 4.2 s.");
	countdown_turn(&c);
	expect_told(2, "Login queue: your turn now.");
}

/* quiet, or a login that must not talk: nothing, now or later, and no step is ever due. */
static void test_silent(void **state)
{
	struct countdown c;
	struct slot_result r = queued(60 * S, 3);
	const int64_t deadline = 1000 * S;

	(void)state;
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, false, &r);
	assert_true(countdown_due(&c, deadline) == INT64_MAX);
	for (int64_t now = deadline - 60 * S; now <= deadline; now += 1 * S)
		countdown_tick(&c, deadline, now);
	r = queued(10 * S, 1);
	countdown_update(&c, &r);
	countdown_turn(&c);
	assert_int_equal(n_told, 0);
}

/* Driven as queue_wait drives it, waking at each countdown_due: the step messages come at
   the marks countdown_next gives, each telling its mark, but for those within the gap before
   the slot, and then none is due. */
static void test_steps_by_tick(void **state)
{
	static const int64_t waits[] = { 60 * S, 61 * S, 45500 * MS, 16 * S, 14 * S, 1 * S };
	static const int64_t steps[] = { 15 * S, 15 * S, 15 * S, 10 * S, 10 * S, 100 * MS };
	const int64_t deadline = 5000 * S;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(waits); i++) {
		struct countdown c;
		struct slot_result r = queued(waits[i], 2);
		int64_t marks[MAX_MARKS], due;
		size_t n = marks_of(waits[i], steps[i], marks);

		/* Those within the gap before the slot give way to the turn. */
		while (n > 0 && marks[n - 1] + COUNTDOWN_TURN_SLACK_US < COUNTDOWN_GAP_US)
			n--;

		n_told = 0;
		countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, steps[i], true, &r);
		for (size_t k = 0; k < n; k++) {
			char want[64], left[32];

			due = countdown_due(&c, deadline);
			assert_true(due == deadline - marks[k]);
			/* Woken early: nothing yet. */
			countdown_tick(&c, deadline, due - 1);
			assert_int_equal(n_told, 1 + k);
			countdown_tick(&c, deadline, due);
			countdown_format(marks[k], left, sizeof(left));
			snprintf(want, sizeof(want), "Login queue: about %s to go.", left);
			expect_told(1 + k, want);
		}
		assert_int_equal(n_told, 1 + n);
		assert_true(countdown_due(&c, deadline) == INT64_MAX);
		countdown_tick(&c, deadline, deadline);
		assert_int_equal(n_told, 1 + n);
	}
	/* A step told late (the wake-up came after the mark) tells what is left. */
	{
		struct countdown c;
		struct slot_result r = queued(60 * S, 2);

		n_told = 0;
		countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
		countdown_tick(&c, deadline, deadline - 44 * S);
		expect_told(1, "Login queue: about 44 s to go.");
		assert_true(countdown_due(&c, deadline) == deadline - 30 * S);
	}
}

/* A renewal tells a better place: "you are now number P", with the wait in full, and the
   steps count from that wait. The same place, or a worse one whose slot has not moved, is
   not told. */
static void test_update_when_improved(void **state)
{
	struct countdown c;
	struct slot_result r = queued(60 * S, 5);
	const int64_t deadline = 1000 * S;

	(void)state;
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
	r = queued(58 * S, 5);
	countdown_update(&c, &r);
	r = queued(70 * S, 6);
	countdown_update(&c, &r);
	assert_int_equal(n_told, 1);
	r = queued(40 * S, 3);
	countdown_update(&c, &r);
	expect_told(1, "Login queue: you are now number 3; your turn in about 40 s.");
	/* Steps from the 40 s told: 30 s (10 s after it, at least half a step), then 15 s. */
	assert_true(countdown_due(&c, deadline) == deadline - 30 * S);
	r = queued(40 * S, 3);
	countdown_update(&c, &r);
	assert_int_equal(n_told, 2);
	r = queued(25 * S, 1);
	countdown_update(&c, &r);
	expect_told(2, "Login queue: you are now next; your turn in about 25 s.");
	assert_true(countdown_due(&c, deadline) == deadline - 15 * S);
	/* Having told a place, a worse one later is still not told. */
	r = queued(30 * S, 2);
	countdown_update(&c, &r);
	assert_int_equal(n_told, 3);
}

/* A slot that moved up (the wait now shorter than the marks ahead) skips the marks already
   passed: one message, telling what is left, not one for each mark, and the next due is the
   mark below. */
static void test_tick_skips_passed_marks(void **state)
{
	struct countdown c;
	struct slot_result r = queued(60 * S, 4);
	const int64_t deadline = 1000 * S;

	(void)state;
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
	assert_true(countdown_due(&c, deadline) == deadline - 45 * S);
	/* 20 s to go: the mark at 45 s has passed unseen, the one at 30 s too. */
	countdown_tick(&c, deadline, deadline - 20 * S);
	assert_int_equal(n_told, 2);
	expect_told(1, "Login queue: about 20 s to go.");
	assert_true(countdown_due(&c, deadline) == deadline - 15 * S);
	/* Past every mark at once: one message, and none due after it. */
	n_told = 0;
	r = queued(60 * S, 4);
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
	countdown_tick(&c, deadline, deadline - 3 * S);
	assert_int_equal(n_told, 2);
	expect_told(1, "Login queue: about 3 s to go.");
	assert_true(countdown_due(&c, deadline) == INT64_MAX);
	countdown_tick(&c, deadline, deadline);
	assert_int_equal(n_told, 2);
	/* Woken within the gap before the slot: the turn comes next, and nothing before it. */
	n_told = 0;
	r = queued(60 * S, 4);
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
	countdown_tick(&c, deadline, deadline - 1 * S);
	assert_int_equal(n_told, 1);
	assert_true(countdown_due(&c, deadline) == INT64_MAX);
}

/* Steps to the conversation never come within COUNTDOWN_GAP_US of the line before: a step of
   1 s waits for the gap; the turn, short of it, goes untold, but for a lag of milliseconds. */
static void test_steps_spaced(void **state)
{
	struct countdown c;
	struct slot_result r = queued(5 * S, 2);
	const int64_t deadline = 1 * S + 5 * S;

	(void)state;
	clock_step = 0; /* the clock moves only when the test says */
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 1 * S, true, &r); /* told at 1 s */
	assert_true(countdown_due(&c, deadline) == 3 * S);
	clock_now = 2 * S;
	countdown_tick(&c, deadline, 2 * S);
	assert_int_equal(n_told, 1);
	clock_now = 3 * S;
	countdown_tick(&c, deadline, 3 * S);
	expect_told(1, "Login queue: about 3 s to go.");
	clock_now = 4 * S;
	countdown_turn(&c); /* 1 s after the step: untold */
	assert_int_equal(n_told, 2);
	clock_now = 5 * S - 100 * MS;
	countdown_turn(&c); /* 100 ms short: untold */
	assert_int_equal(n_told, 2);
	clock_now = 5 * S - 20 * MS;
	countdown_turn(&c); /* 20 ms short, the lag of the step behind its mark: told */
	expect_told(2, "Login queue: your turn now.");
}

/* At any countdown and any arrival, the turn is told, and no two lines are closer than the
   gap: a step that would leave the turn less than the gap gives way to it. The wait loop is
   queue.c's: wake at the next step or the slot, whichever is first, tick, and at the slot
   tell the turn; each wake-up lags by lag. */
static void test_turn_told_at_any_arrival(void **state)
{
	static const int64_t steps[] = { 2 * S, 3 * S, 100 * MS, 1 * S, 15 * S };
	static const int64_t lags[] = { 0, 1 * MS, 30 * MS };
	const int64_t t0 = 10 * S;

	(void)state;
	clock_step = 0;
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++)
		for (size_t l = 0; l < ARRAY_SIZE(lags); l++)
			for (int64_t wait = 2 * S; wait <= 40 * S; wait += 37 * MS) {
				struct countdown c;
				struct slot_result r = queued(wait, 3);
				const int64_t deadline = t0 + wait;
				int64_t at[MAX_TOLD], due;
				size_t n = 0;

				n_told = 0;
				clock_now = t0;
				r.deadline_us = deadline;
				countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, steps[i], true, &r);
				at[n++] = t0;
				while ((due = countdown_due(&c, deadline)) < deadline) {
					assert_true(due >= clock_now);
					clock_now = due + lags[l];
					countdown_tick(&c, deadline, clock_now);
					if (n_told > n)
						at[n++] = clock_now;
				}
				clock_now = deadline + lags[l];
				countdown_turn(&c);
				if (strcmp(told[n_told - 1], "Login queue: your turn now.") != 0)
					fail_msg("countdown %lld ms, wait %lld ms, lag %lld ms: the "
						 "turn went untold after \"%s\"",
						 (long long)(steps[i] / MS), (long long)(wait / MS),
						 (long long)(lags[l] / MS), told[n_told - 1]);
				at[n++] = clock_now;
				for (size_t k = 1; k < n; k++)
					assert_true(at[k] - at[k - 1] >=
						    COUNTDOWN_GAP_US - COUNTDOWN_TURN_SLACK_US);
			}
}

/* A conversation that fails changes nothing of the schedule. */
static void test_conversation_fails(void **state)
{
	struct countdown c;
	struct slot_result r = queued(60 * S, 2);
	const int64_t deadline = 1000 * S;

	(void)state;
	conv_rc = PAM_CONV_ERR;
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
	countdown_tick(&c, deadline, deadline - 45 * S);
	assert_true(countdown_due(&c, deadline) == deadline - 30 * S);
	assert_int_equal(n_told, 2);
}

/* A front end that drops info messages (su's session): every line, the summary too, is an
   error message; the same lines. */
static void test_style_error(void **state)
{
	struct countdown c;
	struct slot_result r = queued(30 * S, 1);
	const int64_t deadline = 1000 * S;

	(void)state;
	want_style = PAM_ERROR_MSG;
	countdown_start(&c, FAKE_PAMH, PAM_ERROR_MSG, 15 * S, true, &r);
	countdown_tick(&c, deadline, deadline - 15 * S);
	countdown_turn(&c);
	countdown_summary(FAKE_PAMH, PAM_ERROR_MSG, 30 * S, 1);
	assert_int_equal(n_told, 4);
	expect_told(0, "Login queue: you are next; your turn in about 30 s.");
	expect_told(1, "Login queue: about 15 s to go.");
	expect_told(2, "Login queue: your turn now.");
	expect_told(3, "Login queue: you waited 30 s (you were next).");
}

static struct slot_result queued_at(int64_t deadline_us, int64_t now_us, int64_t position)
{
	struct slot_result r = queued(deadline_us - now_us, position);

	r.deadline_us = deadline_us;
	return r;
}

/* A renewal whose slot is later than the one told by more than a second is told, as an
   info message ("your turn was put back"), and the steps count from the new wait; a slip of
   a second or less is not, nor is a slot that moved earlier without a better place. */
static void test_update_when_put_back(void **state)
{
	struct countdown c;
	int64_t now = 1000 * S;
	struct slot_result r = queued_at(now + 20 * S, now, 3);

	(void)state;
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
	r = queued_at(now + 21 * S, now + 2 * S, 3); /* one second later: not told */
	countdown_update(&c, &r);
	r = queued_at(now + 18 * S, now + 4 * S, 3); /* earlier, same place: not told */
	countdown_update(&c, &r);
	assert_int_equal(n_told, 1);
	r = queued_at(now + 32 * S, now + 6 * S, 3);
	countdown_update(&c, &r);
	expect_told(1, "Login queue: your turn was put back; you are number 3; your turn in "
		       "about 26 s.");
	assert_true(countdown_due(&c, now + 32 * S) == now + 32 * S - 15 * S);
	/* Told from the slot last told: 32 s, not the 20 s of the first message. */
	r = queued_at(now + 33 * S, now + 8 * S, 3);
	countdown_update(&c, &r);
	assert_int_equal(n_told, 2);
	r = queued_at(now + 40 * S, now + 10 * S, 1);
	countdown_update(&c, &r);
	expect_told(2, "Login queue: you are now next; your turn in about 30 s.");
	r = queued_at(now + 45 * S, now + 12 * S, 1);
	countdown_update(&c, &r);
	expect_told(3, "Login queue: your turn was put back; you are next; your turn in about "
		       "33 s.");
	assert_int_equal(n_told, 4);
}

/* GDM's rule: no two lines less than COUNTDOWN_GAP_US apart. A move found sooner after the
   last line is told by the first answer after the gap, with that answer's place and wait, never
   later from the answer that found it (its place would be stale by then, its wait of now); a
   move undone meanwhile is not told. */
static void test_update_keeps_the_gap(void **state)
{
	struct countdown c;
	const int64_t t0 = 1000 * S, deadline = t0 + 60 * S;
	struct slot_result r = queued_at(deadline - 30 * S, t0, 4);

	(void)state;
	clock_step = 0;
	clock_now = t0;
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 15 * S, true, &r);
	assert_true(countdown_due(&c, deadline - 30 * S) == deadline - 30 * S - 15 * S);
	clock_now = t0 + 500 * MS;
	r = queued_at(deadline, clock_now, 4);
	countdown_update(&c, &r);
	assert_int_equal(n_told, 1);
	/* Nothing is due for the move itself: the next answer tells it. */
	assert_true(countdown_due(&c, deadline) == deadline - 15 * S);
	clock_now = t0 + COUNTDOWN_GAP_US;
	countdown_tick(&c, deadline, clock_now);
	assert_int_equal(n_told, 1);
	clock_now = t0 + 2500 * MS;
	r = queued_at(deadline, clock_now, 4);
	countdown_update(&c, &r);
	expect_told(1, "Login queue: your turn was put back; you are number 4; your turn in "
		       "about 58 s.");
	assert_true(countdown_due(&c, deadline) == deadline - 45 * S);
	/* A better place 1 s later waits too; undone by the next answer, it is never told. */
	clock_now += 1 * S;
	r = queued_at(deadline - 10 * S, clock_now, 2);
	countdown_update(&c, &r);
	clock_now += 2 * S;
	r = queued_at(deadline, clock_now, 4);
	countdown_update(&c, &r);
	assert_int_equal(n_told, 2);
	/* A better place 2 s after the last line is told at once. */
	clock_now = t0 + 2500 * MS + COUNTDOWN_GAP_US + 2 * S;
	r = queued_at(deadline - 20 * S, clock_now, 2);
	countdown_update(&c, &r);
	expect_told(2, "Login queue: you are now number 2; your turn in about 34 s.");
}

/* A renewal just after a step moves the login from number 5 to number 3. The step due at the
   end of the gap gives way to the next answer, an admission as next, which is told as it
   says, not "now number 3"; near the slot, the turn is told instead. */
static void test_move_told_from_a_fresh_answer(void **state)
{
	struct countdown c;
	const int64_t t0 = 1000 * S, deadline = t0 + 7 * S;
	struct slot_result r = queued_at(deadline, t0, 5);

	(void)state;
	clock_step = 0;
	clock_now = t0;
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 1 * S, true, &r);
	assert_true(countdown_due(&c, deadline) == t0 + COUNTDOWN_GAP_US);
	clock_now = t0 + COUNTDOWN_GAP_US;
	countdown_tick(&c, deadline, clock_now);
	expect_told(1, "Login queue: about 5 s to go.");
	clock_now += 50 * MS;
	r = queued_at(deadline, clock_now, 3);
	countdown_update(&c, &r);
	assert_int_equal(n_told, 2);
	/* The step at 4 s to go (due at the gap's end) waits as long for the next answer. */
	assert_true(countdown_due(&c, deadline) == t0 + 2050 * MS + COUNTDOWN_GAP_US);
	clock_now = t0 + 2 * COUNTDOWN_GAP_US;
	countdown_tick(&c, deadline, clock_now);
	assert_int_equal(n_told, 2);
	clock_now = t0 + 4020 * MS;
	r = queued_at(deadline, clock_now, 1);
	r.verdict = SLOT_ADMIT;
	countdown_update(&c, &r);
	expect_told(2, "Login queue: you are now next; your turn in about 3 s.");
	countdown_tick(&c, deadline, t0 + 4500 * MS);
	assert_int_equal(n_told, 3);
	/* The step at 2 s to go would come within the gap of both lines: it gives way. */
	assert_true(countdown_due(&c, deadline) == INT64_MAX);
	clock_now = deadline;
	countdown_turn(&c);
	expect_told(3, "Login queue: your turn now.");

	/* No fresh answer comes (the renewal failed): the step gives way for the gap, no more. */
	n_told = 0;
	clock_now = t0;
	r = queued_at(deadline, t0, 5);
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 1 * S, true, &r);
	clock_now = t0 + COUNTDOWN_GAP_US;
	countdown_tick(&c, deadline, clock_now);
	clock_now += 50 * MS;
	r = queued_at(deadline, clock_now, 3);
	countdown_update(&c, &r);
	clock_now = t0 + 4050 * MS;
	countdown_tick(&c, deadline, clock_now);
	expect_told(2, "Login queue: about 3 s to go.");

	/* An admission is the last answer: a move it finds within the gap goes untold, and no
	   step waits for another. */
	n_told = 0;
	clock_now = t0;
	r = queued_at(deadline, t0, 5);
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 1 * S, true, &r);
	clock_now = t0 + COUNTDOWN_GAP_US;
	countdown_tick(&c, deadline, clock_now);
	clock_now += 50 * MS;
	r = queued_at(deadline, clock_now, 1);
	r.verdict = SLOT_ADMIT;
	countdown_update(&c, &r);
	assert_int_equal(n_told, 2);
	assert_true(countdown_due(&c, deadline) == t0 + 2 * COUNTDOWN_GAP_US);
}

/* The demo's 6th login (issue 30), told number 5 and 5 s: the same moves 2 s before its slot.
   The admission's "now next; about 1 s" would leave the turn untold: the turn is told. */
static void test_turn_told_over_a_late_move(void **state)
{
	struct countdown c;
	const int64_t t0 = 1000 * S, deadline = t0 + 5 * S;
	struct slot_result r = queued_at(deadline, t0, 5);

	(void)state;
	clock_step = 0;
	clock_now = t0;
	countdown_start(&c, FAKE_PAMH, PAM_TEXT_INFO, 1 * S, true, &r);
	clock_now = t0 + COUNTDOWN_GAP_US;
	countdown_tick(&c, deadline, clock_now);
	expect_told(1, "Login queue: about 3 s to go.");
	clock_now += 50 * MS;
	r = queued_at(deadline, clock_now, 3);
	countdown_update(&c, &r);
	assert_true(countdown_due(&c, deadline) == INT64_MAX);
	clock_now = t0 + 4020 * MS;
	r = queued_at(deadline, clock_now, 1);
	r.verdict = SLOT_ADMIT;
	countdown_update(&c, &r);
	assert_int_equal(n_told, 2);
	clock_now = deadline;
	countdown_turn(&c);
	expect_told(2, "Login queue: your turn now.");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_small_buffer),
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_schedule_rule),
		cmocka_unit_test(test_message_count),
		cmocka_unit_test_setup(test_start, reset_told),
		cmocka_unit_test_setup(test_silent, reset_told),
		cmocka_unit_test_setup(test_steps_by_tick, reset_told),
		cmocka_unit_test_setup(test_update_when_improved, reset_told),
		cmocka_unit_test_setup(test_steps_spaced, reset_told),
		cmocka_unit_test_setup(test_turn_told_at_any_arrival, reset_told),
		cmocka_unit_test_setup(test_update_when_put_back, reset_told),
		cmocka_unit_test_setup(test_update_keeps_the_gap, reset_told),
		cmocka_unit_test_setup(test_move_told_from_a_fresh_answer, reset_told),
		cmocka_unit_test_setup(test_turn_told_over_a_late_move, reset_told),
		cmocka_unit_test_setup(test_tick_skips_passed_marks, reset_told),
		cmocka_unit_test_setup(test_conversation_fails, reset_told),
		cmocka_unit_test_setup(test_style_error, reset_told),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
