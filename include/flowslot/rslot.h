/* SPDX-License-Identifier: BSD-3-Clause */
/* The slot on Redis: which node decides (the server, the Sentinel master, the cluster node of
   the key's slot), and what its answer means. The exchange itself is src/rnode.c's. */
#ifndef FLOWSLOT_RSLOT_H
#define FLOWSLOT_RSLOT_H

#include <stddef.h>

#include <hiredis/hiredis.h>
#include <security/pam_modules.h>

#include "flowslot/opt.h"
#include "flowslot/slot.h"

/* What a login's wait brings to one call, apart from its options: the schedule's settings with
   what is left of max_wait and the place's age; when the call must be over at the latest
   (CLOCK_MONOTONIC; 0: its own bound), the wait's try before a slot; and whether the login
   logged the outage this call is in already, so that its errors are not logged again. */
struct rslot_turn {
	struct slot_params p;
	int64_t until_us;
	bool said;
};

/* Asks the queue of schedule key at o->url for op, on behalf of place, with the options' own
   settings, no bound but its own, nothing said yet. Returns SLOT_ADMIT
   (go in at res->deadline_us, now or within SLOT_COMMIT_US), SLOT_QUEUED (a place is held:
   renew it before its lease ends, slot_renew_us of the wait after the call began, and again
   at res->deadline_us), SLOT_REFUSE or SLOT_REFUSE_HOST with res filled in, or
   SLOT_UNAVAILABLE, with the reason logged, when Redis could not decide. SLOT_LEAVE answers
   SLOT_ADMIT. A reservation or renewal whose call timed out once the script was sent is
   asked again for the same place within 4 x timeout; res->tries says how many calls the
   decision made. */
enum slot_verdict rslot_call(const pam_handle_t *pamh, const struct opt *o, enum slot_op op,
			     const char *key, const struct slot_place *place,
			     struct slot_result *res);

/* rslot_call for a login's wait: with turn's settings, never past turn->until_us, and its
   errors not logged if turn->said. */
enum slot_verdict rslot_turn_call(const pam_handle_t *pamh, const struct opt *o,
				  const struct rslot_turn *turn, enum slot_op op, const char *key,
				  const struct slot_place *place, struct slot_result *res);

/* rslot_call, and the node that answered (or failed last) into where: "master 10.0.0.5:6379",
   as the log names it. */
enum slot_verdict rslot_call_at(const pam_handle_t *pamh, const struct opt *o, enum slot_op op,
				const char *key, const struct slot_place *place,
				struct slot_result *res, char *where, size_t wheresz);

/* Tells this host that schedule key on o->url moves on no sooner than next_us
   (CLOCK_MONOTONIC), which no answer said: a login went in blind at its slot. Kept as the
   next slot heard (src/ncache.c), unless a later one was heard already, so that a schedule
   lost meanwhile is made again past that admission. */
void rslot_heard_at_least(const struct opt *o, const char *key, int64_t next_us);

/* Reads the script's reply {verdict, wait_us, position} to op into res (not deadline_us).
   Returns 0, or -1 with *why saying what is wrong with it. */
int rslot_read_reply(const redisReply *r, enum slot_op op, const struct slot_params *p,
		     struct slot_result *res, const char **why);

#endif
