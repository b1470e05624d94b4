#include "flowslot/countdown.h"

#include <stdio.h>

#include <security/pam_ext.h>

#include "flowslot/fstime.h"

int64_t countdown_next(int64_t wait_us, int64_t step_us, int64_t prev_us)
{
	int64_t mark;

	if (step_us <= 0 || prev_us <= 0)
		return 0;
	mark = (prev_us - 1) / step_us * step_us;
	while (mark > 0 && wait_us - mark < step_us / 2)
		mark -= step_us;
	return mark > 0 ? mark : 0;
}

void countdown_format(int64_t us, char *buf, size_t bufsz)
{
	int64_t tenths = (us + 99999) / 100000;

	if (tenths < 100 && tenths % 10 != 0)
		snprintf(buf, bufsz, "%lld.%lld s", (long long)(tenths / 10),
			 (long long)(tenths % 10));
	else
		snprintf(buf, bufsz, "%lld s", (long long)((us + 999999) / 1000000));
}

void countdown_wait(pam_handle_t *pamh, const struct slot_result *res, int64_t step_us, bool talk)
{
	int64_t wait = res->wait_us;
	char left[32];

	if (talk) {
		countdown_format(wait, left, sizeof(left));
		if (res->position <= 1)
			pam_info(pamh, "Login queue: you are next; your turn in about %s.", left);
		else
			pam_info(pamh, "Login queue: you are number %lld; your turn in about %s.",
				 (long long)res->position, left);
		for (int64_t mark = countdown_next(wait, step_us, wait); mark > 0;
		     mark = countdown_next(wait, step_us, mark)) {
			fstime_sleep_until(res->deadline_us - mark);
			countdown_format(mark, left, sizeof(left));
			pam_info(pamh, "Login queue: about %s to go.", left);
		}
	}
	fstime_sleep_until(res->deadline_us);
	if (talk)
		pam_info(pamh, "Login queue: your turn now.");
}
