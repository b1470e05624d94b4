/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/slot.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "flowslot/fstime.h"

void slot_place_id(struct slot_place *p)
{
	unsigned char rnd[16];
	size_t n = 0;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		uint64_t a = (uint64_t)getpid(), b = (uint64_t)fstime_mono_us();

		memcpy(rnd, &a, sizeof(a));
		memcpy(rnd + sizeof(a), &b, sizeof(b));
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		n += (size_t)snprintf(p->id + n, sizeof(p->id) - n, "%02x", rnd[i]);
}

int64_t slot_renew_us(int64_t wait_us, int64_t interval_us)
{
	int64_t renew_us = wait_us / 4;

	if (interval_us <= 0 || wait_us <= 2 * interval_us + SLOT_COMMIT_US ||
	    renew_us < SLOT_RENEW_US)
		return SLOT_RENEW_US;
	return renew_us < SLOT_RENEW_MAX_US ? renew_us : SLOT_RENEW_MAX_US;
}

int64_t slot_lease_us(int64_t wait_us, int64_t interval_us)
{
	return slot_renew_us(wait_us, interval_us) + SLOT_LEASE_US - SLOT_RENEW_US;
}

int64_t slot_commit_us(const struct slot_params *p)
{
	if (p->dry_run && p->max_wait_us > SLOT_COMMIT_US)
		return p->max_wait_us;
	return SLOT_COMMIT_US;
}

void slot_duration(int64_t us, char *buf, size_t bufsz)
{
	if (us % 1000000 == 0)
		snprintf(buf, bufsz, "%llds", (long long)(us / 1000000));
	else if (us % 1000 == 0)
		snprintf(buf, bufsz, "%lldms", (long long)(us / 1000));
	else
		snprintf(buf, bufsz, "%lld.%03lldms", (long long)(us / 1000),
			 (long long)(us % 1000));
}

bool slot_settings_differ(const struct slot_params *p, const struct slot_result *res, char *buf,
			  size_t bufsz)
{
	int64_t interval_us = res->sched_interval_us > 0 ? res->sched_interval_us : p->interval_us;
	int64_t burst = res->sched_burst > 0 ? res->sched_burst : p->burst;
	char theirs[32], ours[32];

	if (interval_us == p->interval_us && burst == p->burst)
		return false;
	slot_duration(interval_us, theirs, sizeof(theirs));
	slot_duration(p->interval_us, ours, sizeof(ours));
	snprintf(buf, bufsz,
		 "the schedule keeps interval=%s burst=%lld, not this stack's interval=%s "
		 "burst=%lld",
		 theirs, (long long)burst, ours, (long long)p->burst);
	return true;
}

/* The most a schedule's own settings can be (interval 60 min, burst 1000), and a position. */
#define SLOT_INTERVAL_MAX_US INT64_C(3600000000)
#define SLOT_BURST_MAX 1000
#define SLOT_POSITION_MAX INT64_C(1000000000)

const char *slot_answer_shape(enum slot_op op)
{
	if (op == SLOT_PEEK)
		return "not an array of five, seven or eight";
	return op == SLOT_RESET ? "not an array of five or seven"
				: "not an array of three, five or seven";
}

/* The answer's n integers, or n + 2 whose last two are the schedule's own interval and burst
   (0 when not given: a script before they were). */
static int slot_read_settings(const long long *v, size_t count, size_t n, enum slot_op op,
			      struct slot_result *res, const char **why)
{
	if (count != n && count != n + 2) {
		*why = slot_answer_shape(op);
		return -1;
	}
	res->sched_interval_us = res->sched_burst = 0;
	if (count == n)
		return 0;
	res->sched_interval_us = v[n];
	res->sched_burst = v[n + 1];
	if (res->sched_interval_us < 1 || res->sched_interval_us > SLOT_INTERVAL_MAX_US ||
	    res->sched_burst < 1 || res->sched_burst > SLOT_BURST_MAX) {
		*why = "the schedule's settings out of range";
		return -1;
	}
	return 0;
}

/* peek's and reset's {verdict, wait_us, position, waiting, since_us[, interval, burst]}, and
   peek's evicts after them (none from a script before it was). */
static int slot_read_view(const long long *v, size_t count, enum slot_op op,
			  struct slot_result *res, const char **why)
{
	static const enum slot_verdict verdicts[] = {
		[0] = SLOT_REFUSE,
		[1] = SLOT_ADMIT,
		[2] = SLOT_QUEUED,
	};

	res->evicts = false;
	if (op == SLOT_PEEK && count == 8) {
		if (v[7] != 0 && v[7] != 1) {
			*why = "values out of range";
			return -1;
		}
		res->evicts = v[7] == 1;
		count--;
	}
	if (slot_read_settings(v, count, 5, op, res, why) != 0)
		return -1;
	if (v[0] < 0 || v[0] > 2 || v[1] < 0 || v[1] > SLOT_HORIZON_MAX_US || v[2] < 1 ||
	    v[2] > SLOT_POSITION_MAX || v[3] < 0 || v[3] > SLOT_POSITION_MAX || v[4] < -1) {
		*why = "values out of range";
		return -1;
	}
	res->verdict = verdicts[v[0]];
	res->wait_us = v[1];
	res->position = v[2];
	res->waiting = v[3];
	res->since_us = v[4];
	return 0;
}

int slot_read_answer(const long long *v, size_t count, enum slot_op op,
		     const struct slot_params *p, struct slot_result *res, const char **why)
{
	static const enum slot_verdict verdicts[] = {
		[0] = SLOT_REFUSE,
		[1] = SLOT_ADMIT,
		[2] = SLOT_QUEUED,
		[3] = SLOT_REFUSE_HOST,
	};
	long long verdict, wait_us, position;
	bool ok;

	res->next_us = res->age_us = -1;
	if (op == SLOT_PEEK || op == SLOT_RESET)
		return slot_read_view(v, count, op, res, why);
	if (count == 7) {
		if (v[5] < 0 || v[5] > SLOT_HORIZON_MAX_US || v[6] < 0 ||
		    v[6] > SLOT_HORIZON_MAX_US || (v[6] != 0 && v[0] != 2)) {
			*why = "values out of range";
			return -1;
		}
		res->next_us = v[5];
		res->age_us = v[6];
		count -= 2;
	}
	if (slot_read_settings(v, count, 3, op, res, why) != 0)
		return -1;
	verdict = v[0];
	wait_us = v[1];
	position = v[2];
	/* A queue that others built may be longer than this login's own settings allow, but
	   never further ahead than the script lets any schedule be. A reservation, and a
	   renewal past what is left of max_wait, is refused; only a place within it waits. */
	switch (verdict) {
	case 0:
		ok = (op == SLOT_RESERVE || op == SLOT_RENEW) && wait_us > p->max_wait_us;
		break;
	case 1: /* admitted, to go in at most the commit window later; a leave is done */
		ok = op == SLOT_LEAVE ? wait_us == 0
				      : wait_us <= slot_commit_us(p) && wait_us <= p->max_wait_us;
		break;
	case 2:
		ok = op != SLOT_LEAVE && wait_us <= p->max_wait_us;
		break;
	case 3:
		ok = op == SLOT_RESERVE && wait_us == 0;
		break;
	default:
		ok = false;
		break;
	}
	if (!ok || wait_us < 0 || wait_us > SLOT_HORIZON_MAX_US || position < 1 ||
	    position > SLOT_POSITION_MAX) {
		*why = "values out of range";
		return -1;
	}
	res->verdict = verdicts[verdict];
	res->wait_us = wait_us;
	res->position = position;
	return 0;
}
