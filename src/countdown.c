/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/countdown.h"

#include <stdarg.h>
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

/* One line to the user: the conversation, or the caller's say. */
__attribute__((format(printf, 3, 4))) static void
countdown_say(struct countdown *c, enum countdown_kind kind, const char *fmt, ...)
{
	char text[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	c->said_us = fstime_mono_us();
	if (c->say != NULL)
		c->say(c->say_arg, kind, text);
	else
		pam_prompt(c->pamh, c->style, NULL, "%s", text);
}

/* Tells the place and the wait in full, and counts the steps from there. */
static void countdown_tell(struct countdown *c, const struct slot_result *res,
			   enum countdown_move move)
{
	static const char *const how[] = {
		[COUNTDOWN_NONE] = "",
		[COUNTDOWN_FIRST] = "",
		[COUNTDOWN_UP] = "",
		[COUNTDOWN_BACK] = "your turn was put back; ",
	};
	const char *now = move == COUNTDOWN_UP ? "now " : "";
	char left[32];

	c->position = res->position;
	c->told_us = res->wait_us;
	c->told_deadline_us = res->deadline_us;
	c->next_mark_us = countdown_next(res->wait_us, c->step_us, res->wait_us);
	c->pending = COUNTDOWN_NONE;
	if (!c->talk)
		return;
	countdown_format(res->wait_us, left, sizeof(left));
	if (res->position <= 1)
		countdown_say(c, COUNTDOWN_TELL,
			      "Login queue: %syou are %snext; your turn in about %s.", how[move],
			      now, left);
	else
		countdown_say(c, COUNTDOWN_TELL,
			      "Login queue: %syou are %snumber %lld; your turn in about %s.",
			      how[move], now, (long long)res->position, left);
	/* The gap to the next line counts from the reservation (the marks and the slot do),
	   not from this line's lag behind it. */
	if (move == COUNTDOWN_FIRST && res->deadline_us > res->wait_us &&
	    res->deadline_us - res->wait_us < c->said_us)
		c->said_us = res->deadline_us - res->wait_us;
}

void countdown_start(struct countdown *c, pam_handle_t *pamh, int style, int64_t step_us,
		     bool talk, const struct slot_result *res)
{
	c->pamh = pamh;
	c->say = NULL;
	c->say_arg = NULL;
	c->style = style;
	c->step_us = step_us;
	c->talk = talk;
	c->said_us = 0;
	countdown_tell(c, res, COUNTDOWN_FIRST);
}

void countdown_start_say(struct countdown *c, countdown_say_fn *say, void *say_arg, int64_t step_us,
			 bool talk, const struct slot_result *res)
{
	c->pamh = NULL;
	c->say = say;
	c->say_arg = say_arg;
	c->style = PAM_TEXT_INFO;
	c->step_us = step_us;
	c->talk = talk;
	c->said_us = 0;
	countdown_tell(c, res, COUNTDOWN_FIRST);
}

/* Whether lines to the conversation must be COUNTDOWN_GAP_US apart (flowslotctl's own line,
   rewritten in place, need not). */
static bool countdown_spaced(const struct countdown *c)
{
	return c->say == NULL && c->said_us > 0;
}

/* Whether a line told left_us before the slot leaves the turn its gap. Within the gap
   before the slot only the turn is told: a step or a move there (a short countdown, a step
   pushed back by the gap, a renewal near the slot) would leave the turn untold. */
static bool countdown_leaves_turn(const struct countdown *c, int64_t left_us)
{
	return !countdown_spaced(c) || left_us + COUNTDOWN_TURN_SLACK_US >= COUNTDOWN_GAP_US;
}

int64_t countdown_due(const struct countdown *c, int64_t deadline_us)
{
	int64_t due = c->talk && c->next_mark_us > 0 ? deadline_us - c->next_mark_us : INT64_MAX;

	/* A step due within the gap waits for its end. */
	if (due != INT64_MAX && countdown_spaced(c) && due < c->said_us + COUNTDOWN_GAP_US)
		due = c->said_us + COUNTDOWN_GAP_US;

	/* A step gives way to a move waiting for the next answer: near its turn that answer
	   comes within the gap, and the step would put it off again. */
	if (due != INT64_MAX && c->pending != COUNTDOWN_NONE &&
	    due < c->pending_us + COUNTDOWN_GAP_US)
		due = c->pending_us + COUNTDOWN_GAP_US;
	if (due != INT64_MAX && !countdown_leaves_turn(c, deadline_us - due))
		due = INT64_MAX;
	return due;
}

void countdown_tick(struct countdown *c, int64_t deadline_us, int64_t now_us)
{
	int64_t left_us = deadline_us - now_us, due_us = countdown_due(c, deadline_us);
	char left[32];

	if (c->next_mark_us <= 0 || left_us > c->next_mark_us)
		return;
	if (c->talk && countdown_spaced(c) && now_us < c->said_us + COUNTDOWN_GAP_US)
		return;
	if (c->pending != COUNTDOWN_NONE && now_us < c->pending_us + COUNTDOWN_GAP_US)
		return;
	if (c->talk && !countdown_leaves_turn(c, left_us)) {
		c->next_mark_us = 0; /* every later mark is closer still */
		return;
	}
	/* A slot that moved up may have skipped marks: tell the one it is at. */
	while (c->next_mark_us > 0 && left_us <= c->next_mark_us - c->step_us)
		c->next_mark_us = countdown_next(c->told_us, c->step_us, c->next_mark_us);
	if (c->talk && c->next_mark_us > 0) {
		countdown_format(left_us < c->next_mark_us ? left_us : c->next_mark_us, left,
				 sizeof(left));
		countdown_say(c, COUNTDOWN_STEP, "Login queue: about %s to go.", left);
		/* Likewise from the step's own time, not its lag. */
		if (due_us < c->said_us)
			c->said_us = due_us;
	}
	c->next_mark_us = countdown_next(c->told_us, c->step_us, c->next_mark_us);
}

void countdown_update(struct countdown *c, const struct slot_result *res)
{
	enum countdown_move move = COUNTDOWN_NONE;
	int64_t now_us;

	if (res->position < c->position)
		move = COUNTDOWN_UP;
	else if (res->deadline_us - c->told_deadline_us > COUNTDOWN_LATER_US)
		move = COUNTDOWN_BACK;
	c->pending = COUNTDOWN_NONE;
	if (move == COUNTDOWN_NONE)
		return;
	now_us = fstime_mono_us();
	/* Near the slot a move gives way to the turn, as a step does. */
	if (c->talk && !countdown_leaves_turn(c, res->wait_us))
		return;
	/* Within the gap, the move waits for a fresh answer: told later from this one, its
	   position would be of the past, and the wait of now. No answer follows an admission. */
	if (c->talk && c->said_us > 0 && now_us - c->said_us < COUNTDOWN_GAP_US) {
		if (res->verdict != SLOT_ADMIT) {
			c->pending = move;
			c->pending_us = now_us;
		}
		return;
	}
	countdown_tell(c, res, move);
}

void countdown_turn(struct countdown *c)
{
	int64_t early_us;

	if (!c->talk)
		return;
	/* Within the gap, the turn goes untold: the login is never held back for a line. Short
	   of it by no more than the lag of the line before (told a little after its mark, which
	   was 2 s or more before the slot), it is told. */
	early_us = countdown_spaced(c) ? c->said_us + COUNTDOWN_GAP_US - fstime_mono_us() : 0;
	if (early_us > COUNTDOWN_TURN_SLACK_US)
		return;
	countdown_say(c, COUNTDOWN_TURN, "Login queue: your turn now.");
}

void countdown_summary(pam_handle_t *pamh, int style, int64_t waited_us, int64_t position)
{
	char waited[32];

	countdown_format(waited_us, waited, sizeof(waited));
	if (position <= 1)
		pam_prompt(pamh, style, NULL, "Login queue: you waited %s (you were next).", waited);
	else
		pam_prompt(pamh, style, NULL, "Login queue: you waited %s (you were number %lld).",
			   waited, (long long)position);
}
