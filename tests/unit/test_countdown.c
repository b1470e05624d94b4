/* Unit tests for src/countdown.c: the wording of waits and the schedule of step messages. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "flowslot/countdown.h"

#define S INT64_C(1000000)
#define MS INT64_C(1000)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_MARKS 64

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

/* The marks countdown_wait would announce, in order; returns how many. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_small_buffer),
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_schedule_rule),
		cmocka_unit_test(test_message_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
