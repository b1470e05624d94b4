/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: what the module makes of a server's reply. The input is RESP, read by a
   hiredis reader under the caps rnode.c puts on every connection (rnode_cap_reader); every
   reply, and every reply nested in one, goes to rslot_read_reply as the answer to each op
   (reserve, renew, leave) under a few fixed schedules, and its text through log_escape as
   rnode_fail shows it. Each reply is tried with every op rather than one taken from the
   input, so that the seeds stay plain RESP and no op goes untried for a reply. */
#include <hiredis/hiredis.h>

#include "flowslot/log.h"
#include "flowslot/rnode.h"
#include "flowslot/rslot.h"
#include "flowslot/slot.h"
#include "fuzz.h"

#define US_PER_S INT64_C(1000000)
#define POSITION_MAX INT64_C(1000000000) /* RSLOT_POSITION_MAX in rslot.c */
#define DEADLINE_UNTOUCHED INT64_C(-4242)

/* The defaults, the smallest and largest settings, and the man page's burst example. */
static const struct slot_params params[] = {
	{ .interval_us = 7 * US_PER_S, .max_wait_us = 60 * US_PER_S, .burst = 1 },
	{ .interval_us = 1000, .max_wait_us = 0, .burst = 1 },
	{ .interval_us = 3600 * US_PER_S, .max_wait_us = 3600 * US_PER_S, .burst = 1000 },
	{ .interval_us = 2 * US_PER_S, .max_wait_us = 30 * US_PER_S, .burst = 3 },
};

/* log_escape, written out again: printable ASCII but '\' as is, the rest as \xNN, and "..."
   in place of what does not fit. */
static void ref_escape(const char *in, char *out, size_t outsz)
{
	size_t o = 0;

	if (outsz < 8) {
		out[0] = '\0';
		return;
	}
	for (const unsigned char *p = (const unsigned char *)in; *p != '\0'; p++) {
		int printable = *p >= 0x20 && *p < 0x7f && *p != '\\';
		size_t need = printable ? 1 : 4;

		if (o + need + 4 > outsz) {
			strcpy(out + o, "...");
			return;
		}
		if (printable)
			out[o++] = (char)*p;
		else
			o += (size_t)sprintf(out + o, "\\x%02x", *p);
	}
	out[o] = '\0';
}

static void check_escape(const char *in)
{
	/* rnode_fail's and opt_set's buffers, and the smallest around the cut-off. */
	static const size_t sizes[] = { 160, 128, 12, 9, 8, 7, 1 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *out = malloc(sizes[i]); /* exact size: ASan sees a byte past it */
		char ref[160];
		const char *shown;

		if (out == NULL)
			abort();
		ref_escape(in, ref, sizes[i]);
		shown = log_escape(in, out, sizes[i]);
		FUZZ_CHECK(shown != NULL);
		FUZZ_CHECK(strlen(shown) < sizes[i]);
		FUZZ_CHECK(strcmp(shown, ref) == 0);
		for (const char *p = shown; *p != '\0'; p++)
			FUZZ_CHECK(*p >= 0x20 && *p < 0x7f);
		free(out);
	}
}

static const enum slot_op ops[] = { SLOT_RESERVE, SLOT_RENEW, SLOT_LEAVE };

/* rslot.h's rules, written out again: whether the script may answer op with {verdict,
   wait_us, position}. Only a reservation is refused, past max_wait, or for per_host at once;
   only a login that holds a place waits, a reservation within max_wait, a renewal up to the
   horizon; an admission is now. */
static bool ref_believable(enum slot_op op, long long verdict, long long wait_us,
			   long long position, const struct slot_params *p)
{
	bool ok;

	if (wait_us < 0 || wait_us > SLOT_HORIZON_MAX_US || position < 1 ||
	    position > POSITION_MAX)
		return false;
	switch (verdict) {
	case 0: /* a reservation, or a renewal past what is left of max_wait */
		ok = (op == SLOT_RESERVE || op == SLOT_RENEW) && wait_us > p->max_wait_us;
		break;
	case 1: /* to go in within the commit window; a leave is done at once */
		ok = op == SLOT_LEAVE ? wait_us == 0
				      : wait_us <= SLOT_COMMIT_US && wait_us <= p->max_wait_us;
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
	return ok;
}

static void check_read(const redisReply *r, enum slot_op op, const struct slot_params *p)
{
	static const enum slot_verdict verdicts[] = { SLOT_REFUSE, SLOT_ADMIT, SLOT_QUEUED,
						      SLOT_REFUSE_HOST };
	struct slot_result res = { .verdict = SLOT_UNAVAILABLE,
				   .wait_us = -1,
				   .position = -1,
				   .deadline_us = DEADLINE_UNTOUCHED };
	const char *why = NULL;
	int rc = rslot_read_reply(r, op, p, &res, &why);
	bool shaped = r->type == REDIS_REPLY_ARRAY &&
		      (r->elements == 3 || r->elements == 5 || r->elements == 7);
	bool heard = shaped && r->elements == 7;

	for (size_t i = 0; shaped && i < r->elements; i++)
		shaped = r->element[i]->type == REDIS_REPLY_INTEGER;
	/* The schedule's own interval and burst, when given, within what any settings allow. */
	if (shaped && r->elements >= 5)
		shaped = r->element[3]->integer >= 1 && r->element[3]->integer <= 3600000000LL &&
			 r->element[4]->integer >= 1 && r->element[4]->integer <= 1000;
	/* Then the schedule's next slot and the place's age, within the horizon; only a place
	   that waits has an age. */
	if (shaped && heard)
		shaped = r->element[5]->integer >= 0 &&
			 r->element[5]->integer <= SLOT_HORIZON_MAX_US &&
			 r->element[6]->integer >= 0 &&
			 r->element[6]->integer <= SLOT_HORIZON_MAX_US &&
			 (r->element[6]->integer == 0 || r->element[0]->integer == 2);
	/* Only an array of three integers (five with the schedule's settings, seven with its
	   next slot and the place's age) is read, and exactly those the rules allow. */
	FUZZ_CHECK(rc == 0 || rc == -1);
	FUZZ_CHECK((rc == 0) == (shaped && ref_believable(op, r->element[0]->integer,
							  r->element[1]->integer,
							  r->element[2]->integer, p)));
	if (rc != 0) {
		FUZZ_CHECK(why != NULL && why[0] != '\0');
		return;
	}
	/* What is read is what it said. */
	FUZZ_CHECK(r->element[0]->integer >= 0 && r->element[0]->integer <= 3);
	FUZZ_CHECK(res.verdict == verdicts[r->element[0]->integer]);
	FUZZ_CHECK(res.wait_us == r->element[1]->integer);
	FUZZ_CHECK(res.position == r->element[2]->integer);
	FUZZ_CHECK(res.deadline_us == DEADLINE_UNTOUCHED);
	FUZZ_CHECK(res.next_us == (heard ? r->element[5]->integer : -1));
	FUZZ_CHECK(res.age_us == (heard ? r->element[6]->integer : -1));
	/* rslot.h and the README: the bounds that make a reply believable, whatever the op. */
	FUZZ_CHECK(res.wait_us >= 0);
	FUZZ_CHECK(res.position >= 1 && res.position <= POSITION_MAX);
	/* A queue others built may be longer than this login's settings allow, never longer
	   than the script lets any schedule be. */
	FUZZ_CHECK(res.wait_us <= SLOT_HORIZON_MAX_US);
	switch (res.verdict) {
	case SLOT_ADMIT:
		FUZZ_CHECK(res.wait_us <= (op == SLOT_LEAVE ? 0 : SLOT_COMMIT_US));
		FUZZ_CHECK(op != SLOT_RESERVE || res.wait_us <= p->max_wait_us);
		break;
	case SLOT_QUEUED:
		FUZZ_CHECK(op != SLOT_LEAVE);
		FUZZ_CHECK(res.wait_us <= p->max_wait_us);
		break;
	case SLOT_REFUSE:
		FUZZ_CHECK((op == SLOT_RESERVE || op == SLOT_RENEW) && res.wait_us > p->max_wait_us);
		break;
	case SLOT_REFUSE_HOST:
		FUZZ_CHECK(op == SLOT_RESERVE && res.wait_us == 0);
		break;
	default:
		FUZZ_CHECK(!"an unknown verdict was read");
	}
	/* leave answers {1, 0, 1} and nothing else that means anything. */
	if (op == SLOT_LEAVE)
		FUZZ_CHECK(res.verdict == SLOT_ADMIT);
}

static void check_reply(const redisReply *r, int depth)
{
	FUZZ_CHECK(depth < 16);
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		for (size_t j = 0; j < sizeof(ops) / sizeof(ops[0]); j++)
			check_read(r, ops[j], &params[i]);
	switch (r->type) {
	case REDIS_REPLY_STRING:
	case REDIS_REPLY_STATUS:
	case REDIS_REPLY_ERROR:
		check_escape(r->str);
		break;
	case REDIS_REPLY_ARRAY:
		for (size_t i = 0; i < r->elements; i++)
			check_reply(r->element[i], depth + 1);
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rnode_cap cap;
	redisReader *rd = redisReaderCreate();
	void *reply = NULL;

	if (rd == NULL)
		abort();
	rnode_cap_reader(rd, &cap);
	if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK) {
		while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply != NULL) {
			check_reply(reply, 0);
			freeReplyObject(reply);
			reply = NULL;
		}
	}
	/* What the caps let through: never more than they allow. */
	FUZZ_CHECK(cap.elements <= RNODE_ELEMENTS_MAX);
	redisReaderFree(rd);
	return 0;
}
