/* SPDX-License-Identifier: BSD-3-Clause */
/* Time, in int64_t microseconds. */
#ifndef FLOWSLOT_FSTIME_H
#define FLOWSLOT_FSTIME_H

#include <stdint.h>
#include <sys/time.h>

/* Now on CLOCK_MONOTONIC. */
int64_t fstime_mono_us(void);

/* Sleeps until CLOCK_MONOTONIC reaches deadline_us, resuming after signals. */
void fstime_sleep_until(int64_t deadline_us);

struct timeval fstime_timeval(int64_t us);

/* Waits until fd is ready for events or CLOCK_MONOTONIC reaches deadline_us, resuming after
   signals. Returns 0 when ready; -1 with errno ETIMEDOUT once the deadline passed, or poll's
   errno. */
int fstime_poll(int fd, short events, int64_t deadline_us);

#endif
