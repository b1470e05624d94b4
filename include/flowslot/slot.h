/* What a slot reservation asks and what it answers, whatever the backend. */
#ifndef FLOWSLOT_SLOT_H
#define FLOWSLOT_SLOT_H

#include <stdint.h>

struct slot_params {
	int64_t interval_us;
	int64_t max_wait_us;
	int64_t burst;
};

enum slot_verdict {
	SLOT_ADMIT,	  /* a slot is reserved: wait until deadline_us */
	SLOT_REFUSE,	  /* the wait would exceed max_wait: nothing is reserved */
	SLOT_UNAVAILABLE, /* the backend could not decide; the reason has been logged */
};

struct slot_result {
	enum slot_verdict verdict;
	int64_t wait_us;     /* from the decision to the slot; for a refusal, the wait refused */
	int64_t position;    /* 1 + the logins to be admitted before this one */
	int64_t deadline_us; /* CLOCK_MONOTONIC time of the slot, when admitted */
};

/* The GCRA step that src/slot.lua runs on Redis, for the local backend: decides for a login
   at now_us on a schedule whose theoretical arrival time is tat_us (now_us when there is none),
   fills res, deadline_us included, and returns the tat to store when admitted. */
int64_t slot_decide(const struct slot_params *p, int64_t now_us, int64_t tat_us,
		    struct slot_result *res);

#endif
