/* The slot on Redis: which node decides (the server, the Sentinel master, the cluster node of
   the key's slot), and what its answer means. The exchange itself is src/rnode.c's. */
#ifndef FLOWSLOT_RSLOT_H
#define FLOWSLOT_RSLOT_H

#include <hiredis/hiredis.h>
#include <security/pam_modules.h>

#include "flowslot/opt.h"
#include "flowslot/slot.h"

/* Reserves a slot on the schedule key at o->url. Returns SLOT_ADMIT or SLOT_REFUSE with res
   filled in, or SLOT_UNAVAILABLE, with the reason logged, when Redis could not decide. */
enum slot_verdict rslot_reserve(const pam_handle_t *pamh, const struct opt *o, const char *key,
				struct slot_result *res);

/* Reads the script's reply {admitted, wait_us, position} into res (not deadline_us). Returns
   0, or -1 with *why saying what is wrong with it. */
int rslot_read_reply(const redisReply *r, const struct slot_params *p, struct slot_result *res,
		     const char **why);

#endif
