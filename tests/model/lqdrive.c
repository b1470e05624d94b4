/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-host file's queue for tests/model: one call a line on stdin,
     OP NOW_US INTERVAL_US BURST MAX_WAIT_US ID WHO HOST PER_HOST
   (WHO and HOST "-" for none), each answered on one line as slot.lua answers,
     VERDICT WAIT_US POSITION INTERVAL_US BURST WAITING [ID LEASE_END]...
   followed by every place the file holds after the call, and the end of its lease.
   The file's text is kept between calls and goes through lqueue_read, lqueue_step and
   lqueue_write as src/lslot.c does, on the caller's clock. Every place belongs to this
   process, so a waiter lives while its lease runs. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowslot/lqueue.h"

static const char *const drive_ops[] = {
	[SLOT_RESERVE] = "reserve", [SLOT_RENEW] = "renew", [SLOT_LEAVE] = "leave",
	[SLOT_PEEK] = "peek",	    [SLOT_RESET] = "reset",
};
/* The script's verdicts. */
static const int drive_verdicts[] = {
	[SLOT_ADMIT] = 1, [SLOT_QUEUED] = 2, [SLOT_REFUSE] = 0, [SLOT_REFUSE_HOST] = 3,
	[SLOT_UNAVAILABLE] = -1,
};

static int drive_op(const char *name)
{
	for (size_t i = 0; i < sizeof(drive_ops) / sizeof(drive_ops[0]); i++) {
		if (strcmp(name, drive_ops[i]) == 0)
			return (int)i;
	}
	return -1;
}

static void drive_field(char *s)
{
	if (strcmp(s, "-") == 0)
		s[0] = '\0';
}

/* One call on the schedule whose text is *text: the text is replaced by what lslot.c would
   write back. Returns 0, or -1 on a line that cannot be read. */
static int drive_call(const char *line, char **text)
{
	struct slot_params p = { 0 };
	struct slot_place pl = { 0 };
	struct slot_result res = { 0 };
	struct lqueue q;
	char opname[16], *out = NULL;
	int64_t now_us;
	int per_host, op;
	enum slot_verdict v;

	if (sscanf(line, "%15s %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %32s %16s %16s %d",
		   opname, &now_us, &p.interval_us, &p.burst, &p.max_wait_us, pl.id, pl.who,
		   pl.host, &per_host) != 9 ||
	    (op = drive_op(opname)) < 0 || lqueue_read(&q, *text) != 0)
		return -1;
	drive_field(pl.who);
	drive_field(pl.host);
	v = lqueue_step(&q, &p, per_host, (enum slot_op)op, &pl, getpid(), now_us,
			slot_commit_us(&p), &res);
	if (q.changed && lqueue_write(&q, &out) >= 0) {
		free(*text);
		*text = out;
	}
	printf("%d %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64, drive_verdicts[v],
	       res.wait_us, res.position, res.sched_interval_us, res.sched_burst, res.waiting);
	for (size_t i = 0; i < q.n_waiters; i++)
		printf(" %s %" PRId64, q.waiters[i].id, q.waiters[i].lease_us);
	printf("\n");
	lqueue_free(&q);
	return fflush(stdout);
}

int main(void)
{
	char line[512], *text = strdup("");

	while (text != NULL && fgets(line, sizeof(line), stdin) != NULL) {
		if (drive_call(line, &text) != 0) {
			fprintf(stderr, "lqdrive: cannot read: %s", line);
			free(text);
			return 1;
		}
	}
	if (text == NULL)
		return 1;
	free(text);
	return 0;
}
