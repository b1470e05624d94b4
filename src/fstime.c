/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/fstime.h"

#include <errno.h>
#include <time.h>

int64_t fstime_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void fstime_sleep_until(int64_t deadline_us)
{
	struct timespec ts = {
		.tv_sec = deadline_us / 1000000,
		.tv_nsec = (deadline_us % 1000000) * 1000,
	};

	/* An absolute deadline makes a resumed sleep end on time, however often it is woken. */
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

struct timeval fstime_timeval(int64_t us)
{
	struct timeval tv = { .tv_sec = us / 1000000, .tv_usec = us % 1000000 };

	return tv;
}
