#include "flowslot/slot.h"

int64_t slot_decide(const struct slot_params *p, int64_t now_us, int64_t tat_us,
		    struct slot_result *res)
{
	int64_t start_us;

	/* As in slot.lua: a tat further ahead than any reservation could leave is stale. */
	if (tat_us < now_us || tat_us > now_us + p->max_wait_us + p->burst * p->interval_us)
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
