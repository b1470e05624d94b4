/* SPDX-License-Identifier: BSD-3-Clause */
/* A message said at most once a period on a host, whatever the number of logins: a stamp file
   per message under state_dir, whose mtime is when it was last said. */
#ifndef FLOWSLOT_ONCE_H
#define FLOWSLOT_ONCE_H

#include <stdbool.h>

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

#endif
