/* SPDX-License-Identifier: BSD-3-Clause */
/* What the waiting user is told, and when. */
#ifndef FLOWSLOT_COUNTDOWN_H
#define FLOWSLOT_COUNTDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <security/pam_modules.h>

#include "flowslot/slot.h"

/* Where the countdown's lines go instead of pam_info (flowslotctl wait): one line of text
   and what kind it is: a full telling, a step, or the turn. */
enum countdown_kind {
	COUNTDOWN_TELL,
	COUNTDOWN_STEP,
	COUNTDOWN_TURN,
};
typedef void countdown_say_fn(void *arg, enum countdown_kind kind, const char *text);

/* No two lines to the conversation closer than this (GDM shows each for about 2 s, and piles
   them up): a move found by countdown_update waits for the next answer after it, and a step
   waits for it (and gives way to such a move, that long at most). */
#define COUNTDOWN_GAP_US INT64_C(2000000)
/* The turn, due this little before the gap is over (the lag of the line before it behind its
   own mark), is told all the same; any sooner, it goes untold. */
#define COUNTDOWN_TURN_SLACK_US INT64_C(50000)
/* A slot that moved later than the one told by more than this is told again. */
#define COUNTDOWN_LATER_US INT64_C(1000000)

/* How a telling in full came about. */
enum countdown_move {
	COUNTDOWN_NONE,
	COUNTDOWN_FIRST, /* the first message */
	COUNTDOWN_UP,	 /* a better place */
	COUNTDOWN_BACK,	 /* a slot later than the one told */
};

/* What one waiting login has told its user so far. */
struct countdown {
	pam_handle_t *pamh;
	countdown_say_fn *say; /* NULL: the conversation on pamh, in style */
	void *say_arg;
	int style;		  /* PAM_TEXT_INFO, or PAM_ERROR_MSG where info is dropped */
	int64_t step_us;	  /* between step messages; 0: none */
	bool talk;		  /* false: tell nothing */
	int64_t position;	  /* the place last told */
	int64_t told_us;	  /* the wait last told in full (first message, or a move up) */
	int64_t next_mark_us;	  /* the time before the slot of the next step message; 0: none */
	int64_t told_deadline_us; /* the slot last told in full (CLOCK_MONOTONIC) */
	int64_t said_us;	  /* when the last line was due (said, or its own time if earlier:
				     the reservation, a step's mark); 0: none yet */
	enum countdown_move pending; /* a move found within COUNTDOWN_GAP_US of the last line,
					told by the first answer after it, never later from this
					answer: its position would be stale by then */
	int64_t pending_us;	     /* when that move was found */
};

/* The time before the slot (remaining_us) of the step message that follows the one sent at
   prev_us before it: the largest multiple of step_us below prev_us, skipping any less than
   half a step after the first message (sent wait_us before the slot). 0: no more steps. */
int64_t countdown_next(int64_t wait_us, int64_t step_us, int64_t prev_us);

/* Writes a wait for people: "0.4 s" below 10 s, whole seconds above; always rounded up. */
void countdown_format(int64_t us, char *buf, size_t bufsz);

/* Tells the user where they stand: "you are number P; your turn in about N s", each line a
   message of style (PAM_TEXT_INFO; PAM_ERROR_MSG for a front end that drops info). With talk
   false it tells nothing, now or later. A missing or failing conversation is ignored. */
void countdown_start(struct countdown *c, pam_handle_t *pamh, int style, int64_t step_us,
		     bool talk, const struct slot_result *res);

/* countdown_start, telling through say(say_arg, ...) rather than the conversation. */
void countdown_start_say(struct countdown *c, countdown_say_fn *say, void *say_arg, int64_t step_us,
			 bool talk, const struct slot_result *res);

/* The CLOCK_MONOTONIC time of the next step message for a slot at deadline_us, or INT64_MAX
   when none is due. To the conversation, a step is told only COUNTDOWN_GAP_US (less
   COUNTDOWN_TURN_SLACK_US) or more before the slot, so that the turn can be told. */
int64_t countdown_due(const struct countdown *c, int64_t deadline_us);

/* Sends the step message due at now_us for a slot at deadline_us, if any. */
void countdown_tick(struct countdown *c, int64_t deadline_us, int64_t now_us);

/* After a renewal that held or admitted the place: says so when the place has improved ("you
   are now number P"), or when the slot is later than the one told by more than
   COUNTDOWN_LATER_US ("your turn was put back"), with res's position and wait, both of now.
   Within COUNTDOWN_GAP_US of the last line, the move is told by the first answer after the
   gap (an admission is the last answer: a move it finds within the gap goes untold). */
void countdown_update(struct countdown *c, const struct slot_result *res);

/* Says the turn has come; to the conversation, only COUNTDOWN_GAP_US (less
   COUNTDOWN_TURN_SLACK_US) after the line before it, else not at all. Never waits. */
void countdown_turn(struct countdown *c);

/* Where messages cannot be live (sshd), the one line sent after the wait instead of the
   countdown: "Login queue: you waited N s (you were number P).", a message of style. */
void countdown_summary(pam_handle_t *pamh, int style, int64_t waited_us, int64_t position);

#endif
