/* What the waiting user is told, and when. */
#ifndef FLOWSLOT_COUNTDOWN_H
#define FLOWSLOT_COUNTDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <security/pam_modules.h>

#include "flowslot/slot.h"

/* The time before the slot (remaining_us) of the step message that follows the one sent at
   prev_us before it: the largest multiple of step_us below prev_us, skipping any less than
   half a step after the first message (sent wait_us before the slot). 0: no more steps. */
int64_t countdown_next(int64_t wait_us, int64_t step_us, int64_t prev_us);

/* Writes a wait for people: "0.4 s" below 10 s, whole seconds above; always rounded up. */
void countdown_format(int64_t us, char *buf, size_t bufsz);

/* Tells the user where they stand, sleeps until res->deadline_us with a message every step_us
   (0: none), and says the turn has come just before returning. With talk false it only
   sleeps. A missing or failing conversation does not stop the wait. */
void countdown_wait(pam_handle_t *pamh, const struct slot_result *res, int64_t step_us, bool talk);

#endif
