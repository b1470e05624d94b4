/* SPDX-License-Identifier: BSD-3-Clause */
/* A message said at most once a period on a host, whatever the number of logins: a stamp file
   per message under state_dir, whose mtime is when it was last said. */
#ifndef FLOWSLOT_ONCE_H
#define FLOWSLOT_ONCE_H

#include <stdbool.h>
#include <stdint.h>

/* The stamp's file name: "once." and 16 hex digits of the message's hash. */
#define ONCE_NAME_MAX 32

/* The stamp's file name for what, in out (ONCE_NAME_MAX bytes). */
void once_name(const char *what, char *out);

/* Whether the message what is due: not said on this host in the last period_s seconds, by its
   stamp under dir (created 0700 when missing). If so, the stamp is set to now under its lock,
   so that of logins at once only one says it. A stamp dated later than now (the clock was
   stepped back) is not trusted; a dir or stamp that cannot be used makes it due every time:
   said too often rather than never. */
bool once_due(const char *dir, const char *what, int period_s);

/* The file of once_rate's table, in the state directory. */
#define ONCE_RATE_FILE "lograte"
/* The messages it tells apart: past them, the one said longest ago gives its place up. */
#define ONCE_RATE_MAX 64

/* Whether the message what (a whole log line: one cause) is due: not said on this host in the
   last period_us (CLOCK_MONOTONIC). If so, it is noted as said now, and *held is how many
   times it was not since it was last said; if not, that count grows. One table of
   ONCE_RATE_MAX messages under dir (created 0700 when missing), file ONCE_RATE_FILE, taken
   under its lock. As once_due: a time later than now is not trusted, and a dir or table that
   cannot be used makes the message due every time (*held 0). */
bool once_rate(const char *dir, const char *what, int64_t period_us, uint64_t *held);

#endif
