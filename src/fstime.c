/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/fstime.h"

#include <errno.h>
#include <poll.h>
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

int fstime_poll(int fd, short events, int64_t deadline_us)
{
	for (;;) {
		int64_t left_us = deadline_us - fstime_mono_us();
		struct pollfd p = { .fd = fd, .events = events };
		int n;

		if (left_us <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = poll(&p, 1, (int)((left_us + 999) / 1000));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}
