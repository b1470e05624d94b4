/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/slot.c: what both backends share besides the script (its rules live in
   src/slot.lua alone, tested through tests/suites/script.sh and tests/model). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "flowslot/slot.h"

#define S INT64_C(1000000)

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
				 "interval=3s burst=4");
	res.sched_interval_us = 0; /* not said: the caller's */
	assert_true(slot_settings_differ(&p, &res, buf, sizeof(buf)));
	assert_string_equal(buf, "the schedule keeps interval=3s burst=1, not this stack's "
				 "interval=3s burst=4");
	res.sched_interval_us = 4500 * 1000;
	res.sched_burst = 0;
	assert_true(slot_settings_differ(&p, &res, buf, sizeof(buf)));
	assert_string_equal(buf, "the schedule keeps interval=4500ms burst=4, not this stack's "
				 "interval=3s burst=4");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_settings_differ),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
