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

int64_t slot_recover(int64_t now_us, int64_t tat_us, int64_t at_us)
{
	if (at_us <= 0 || tat_us < at_us)
		return now_us;
	if (now_us < at_us)
		tat_us -= at_us - now_us;
	if (tat_us < now_us || tat_us - now_us > SLOT_HORIZON_MAX_US)
		return now_us;
	return tat_us;
}

int64_t slot_decide(const struct slot_params *p, int64_t now_us, int64_t tat_us,
		    struct slot_result *res)
{
	int64_t start_us;

	if (tat_us < now_us)
		tat_us = now_us;
	start_us = tat_us - (p->burst - 1) * p->interval_us;
	if (start_us < now_us)
		start_us = now_us;
	res->wait_us = start_us - now_us;
	res->position = res->wait_us / p->interval_us + 1;
	res->verdict = res->wait_us > p->max_wait_us ? SLOT_REFUSE : SLOT_ADMIT;
	res->deadline_us = start_us;
	return tat_us + p->interval_us;
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

/* A duration as an option is written: "7s", "1500ms". */
static void slot_duration(int64_t us, char *buf, size_t bufsz)
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
		 "burst=%lld (the strictest since it was made)",
		 theirs, (long long)burst, ours, (long long)p->burst);
	return true;
}
