/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for src/lqueue.c: the per-host schedule's queue of live waiters, in memory, on a
   made-up clock. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flowslot/lqueue.h"

#define S INT64_C(1000000)
#define MS INT64_C(1000)
#define NOW (INT64_C(123456) * S + 789) /* a CLOCK_MONOTONIC-like time */
#define T (5 * S)

static const struct slot_params P = { .interval_us = T, .max_wait_us = 60 * S, .burst = 1 };

/* The place numbered n, of who and host ("" for none). */
static struct slot_place place(unsigned n, const char *who, const char *host)
{
	struct slot_place pl;

	memset(&pl, 0, sizeof(pl));
	snprintf(pl.id, sizeof(pl.id), "%032x", n);
	snprintf(pl.who, sizeof(pl.who), "%s", who);
	snprintf(pl.host, sizeof(pl.host), "%s", host);
	return pl;
}

static void load(struct lqueue *q, const char *text)
{
	assert_int_equal(lqueue_read(q, text), 0);
	assert_int_equal(q->changed, 0);
}

/* q as written, to free. */
static char *text_of(const struct lqueue *q)
{
	char *out = NULL;
	long len = lqueue_write(q, &out);

	assert_true(len >= 0);
	assert_int_equal((size_t)len, strlen(out));
	return out;
}

/* One step, with what every answer keeps: the deadline is the wait from now, an admission
   goes in within the commit window, a place is held only for a wait. */
static enum slot_verdict step_as(struct lqueue *q, const struct slot_params *p, int per_host,
				 enum slot_op op, const struct slot_place *pl, pid_t pid,
				 int64_t now, struct slot_result *res)
{
	enum slot_verdict v;

	res->verdict = SLOT_UNAVAILABLE;
	res->wait_us = res->position = res->deadline_us = -1;
	v = lqueue_step(q, p, per_host, op, pl, pid, now, SLOT_COMMIT_US, res);
	assert_int_equal(res->verdict, v);
	assert_int_equal(res->deadline_us, now + res->wait_us);
	assert_true(res->position >= 1);
	if (v == SLOT_ADMIT)
		assert_true(res->wait_us >= 0 && res->wait_us <= SLOT_COMMIT_US);
	if (v == SLOT_QUEUED)
		assert_true(res->wait_us > 0);
	return v;
}

/* A step with the default settings, by this (live) process. */
static enum slot_verdict step(struct lqueue *q, enum slot_op op, const struct slot_place *pl,
			      int64_t now, struct slot_result *res)
{
	return step_as(q, &P, 0, op, pl, getpid(), now, res);
}

static ssize_t find(const struct lqueue *q, const struct slot_place *pl)
{
	for (size_t i = 0; i < q->n_waiters; i++) {
		if (strcmp(q->waiters[i].id, pl->id) == 0)
			return (ssize_t)i;
	}
	return -1;
}

/* The arrival of WHO's ghost, or -1. */
static int64_t ghost_of(const struct lqueue *q, const char *who)
{
	for (size_t i = 0; i < q->n_ghosts; i++) {
		if (strcmp(q->ghosts[i].who, who) == 0)
			return q->ghosts[i].arrival_us;
	}
	return -1;
}

/* A pid that no process has: a child's, reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return pid;
}

static void test_round_trip(void **state)
{
	static const char text[] =
	    "123456789 123000000 5000000 2\n"
	    "w 0123456789abcdef0123456789abcdef 00000000000000aa 00000000000000bb 800 2000 "
	    "4242\n"
	    "w 01 0c - 850 2100 1 t\n"
	    "g 0d - 700 60000\n"
	    "g 0e 00000000000000bb 750 61000\n";
	struct lqueue q, q2;
	char *out, *out2;

	(void)state;
	load(&q, text);
	assert_int_equal(q.tat_us, 123456789);
	assert_int_equal(q.at_us, 123000000);
	assert_int_equal(q.interval_us, 5000000);
	assert_int_equal(q.burst, 2);
	assert_int_equal(q.n_waiters, 2);
	assert_false(q.waiters[0].taken_back);
	assert_true(q.waiters[1].taken_back);
	assert_string_equal(q.waiters[0].id, "0123456789abcdef0123456789abcdef");
	assert_string_equal(q.waiters[0].who, "00000000000000aa");
	assert_string_equal(q.waiters[0].host, "00000000000000bb");
	assert_int_equal(q.waiters[0].arrival_us, 800);
	assert_int_equal(q.waiters[0].lease_us, 2000);
	assert_int_equal(q.waiters[0].pid, 4242);
	assert_string_equal(q.waiters[1].host, ""); /* "-": none */
	assert_int_equal(q.n_ghosts, 2);
	assert_string_equal(q.ghosts[1].who, "0e");
	assert_int_equal(q.ghosts[1].arrival_us, 750);
	assert_string_equal(q.ghosts[1].host, "00000000000000bb");
	assert_int_equal(q.ghosts[1].left_us, 61000);
	out = text_of(&q);
	assert_string_equal(out, text);
	load(&q2, out);
	out2 = text_of(&q2);
	assert_string_equal(out2, text);
	free(out);
	free(out2);
	lqueue_free(&q);
	lqueue_free(&q2);

	/* An earlier version's file: "tat at", seven fields a waiter, "g WHO ARRIVAL END". */
	load(&q, "123456789 123000000\nw 01 0c - 850 2100 1\ng 0d 700 60000700\n");
	assert_int_equal(q.interval_us, 0);
	assert_int_equal(q.n_waiters, 1);
	assert_false(q.waiters[0].taken_back);
	assert_int_equal(q.n_ghosts, 1);
	assert_string_equal(q.ghosts[0].host, "");
	assert_int_equal(q.ghosts[0].arrival_us, 700);
	assert_int_equal(q.ghosts[0].left_us, 700);
	lqueue_free(&q);

	/* Nothing at all: an empty schedule. */
	load(&q, "");
	assert_int_equal(q.n_waiters + q.n_ghosts, 0);
	out = text_of(&q);
	assert_string_equal(out, "0 0\n");
	free(out);
	lqueue_free(&q);
}

/* What cannot be read is dropped, line by line; the rest is kept. */
static void test_garbage_lines(void **state)
{
	static const char text[] = "x y\n"
				   "w 0a 0b - 1 2 3\n"
				   "w 0A 0b - 1 2 3\n"
				   "w 0a 0b - 1 2 0\n"
				   "w 0a 0b - 1 2 -3\n"
				   "w 0a 0b - 1 2 3 4\n"
				   "w 0a 0b - 1 2 3 x\n"
				   "w 0a 0b zz 1 2 3\n"
				   "w 0a  - 1 2 3\n"
				   "w 0123456789abcdef0123456789abcdef0 0b - 1 2 3\n"
				   "w 0a 00000000000000000 - 1 2 3\n"
				   "w 0a 0b - 1 2\n"
				   "x 0a 0b - 1 2 3\n"
				   "\n"
				   "g 0c 5 6\n"
				   "g -- 5 6\n"
				   "g 0c - 5 6 7\n"
				   "g 0c 0z 5 6\n"
				   "g 0c 5\n"
				   "g 0c 5 6";
	struct lqueue q;
	char *out;

	(void)state;
	load(&q, text);
	out = text_of(&q);
	assert_string_equal(out, "0 0\nw 0a 0b - 1 2 3\ng 0c - 5 -59999994\n");
	free(out);
	lqueue_free(&q);
}

/* Each line is read on its own, each field whole: no line is read on into the next, no field
   cut in two or run into the next one, and a number out of range is garbage, not its limit. */
static void test_lines_on_their_own(void **state)
{
	static const char text[] = "7\n"
				   "8 9\n"			   /* not the first line's "at" */
				   "g 0c 5 6\n"		   /* an old ghost, the next line a number */
				   "12 t\n"
				   "w 0a 0b -\n"		   /* the rest of it on the next line */
				   "1 2 3\n"
				   "w0d 0b - 1 2 3\n"		   /* no blank after w */
				   "w 0a 0123456789abcdef0 - 1 2 3\n" /* WHO of 17: not 16 + 1 */
				   "g 0e 0123456789abcdef5 6\n"	   /* HOST of 17 */
				   "g 0f 99999999999999999999 6\n"   /* out of range */
				   "w 0a 0b - 1 2 4294967297\n"	   /* no pid */
				   "w 0a 0b - 1-2 3\n"		   /* one field, not two numbers */
				   "g 10 -9223372036854775808 -9223372036854775808\n";
	struct lqueue q;
	char *out;

	(void)state;
	load(&q, text);
	out = text_of(&q);
	assert_string_equal(out, "7 0\ng 0c - 5 -59999994\n");
	free(out);
	lqueue_free(&q);

	/* The head's numbers are read as far as they go, on its own line only. */
	load(&q, "5 6 7\n8\n");
	assert_int_equal(q.tat_us, 5);
	assert_int_equal(q.at_us, 6);
	assert_int_equal(q.interval_us, 0);
	lqueue_free(&q);
	load(&q, "5 99999999999999999999 7 8\n");
	assert_int_equal(q.tat_us, 5);
	assert_int_equal(q.at_us, 0);
	lqueue_free(&q);
}

static void test_reserve_empty(void **state)
{
	const struct slot_place a = place(1, "0a", "");
	struct slot_result res;
	struct lqueue q;
	char *out, want[64];

	(void)state;
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(res.position, 1);
	assert_int_equal(res.deadline_us, NOW);
	assert_int_equal(q.changed, 1);
	assert_int_equal(q.n_waiters, 0);
	out = text_of(&q);
	snprintf(want, sizeof(want), "%" PRId64 " %" PRId64 " %" PRId64 " 1\n", NOW + T, NOW, T);
	assert_string_equal(out, want);
	free(out);
	lqueue_free(&q);
}

/* L1: the lease granted at now to a place told res, on a schedule of interval_us: 5 s near
   its turn (its slot within two intervals and the commit window), else longer, and over
   before its slot; and what slot_lease_us says, the one formula. */
static void lease_fits(int64_t lease_end, int64_t now, const struct slot_result *res,
		       int64_t interval_us)
{
	if (res->wait_us <= 2 * interval_us + SLOT_COMMIT_US) {
		assert_int_equal(lease_end, now + SLOT_LEASE_US);
	} else {
		assert_true(lease_end > now + SLOT_LEASE_US);
		assert_true(lease_end < res->deadline_us);
		assert_true(lease_end <= now + SLOT_RENEW_MAX_US + SLOT_LEASE_US - SLOT_RENEW_US);
	}
	assert_int_equal(lease_end, now + slot_lease_us(res->wait_us, interval_us));
}

/* An empty queue, then: A admitted at NOW; B, 1.5 s before its slot (NOW + T), admitted to
   go in then; C, D and E queued behind, at NOW + 2T, 3T, 4T. */
static void five_logins(struct lqueue *q, struct slot_place pl[5])
{
	static const char *const who[5] = { "0a", "0b", "0c", "0d", "0e" };
	struct slot_result res;

	for (unsigned i = 0; i < 5; i++)
		pl[i] = place(i + 1, who[i], "");
	load(q, "");
	assert_int_equal(step(q, SLOT_RESERVE, &pl[0], NOW, &res), SLOT_ADMIT);
	assert_int_equal(step(q, SLOT_RESERVE, &pl[1], NOW + 3500 * MS, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 1500 * MS);
	assert_int_equal(res.deadline_us, NOW + T);
	assert_int_equal(res.position, 1);
	assert_int_equal(q->n_waiters, 0);
	assert_int_equal(q->tat_us, NOW + 2 * T);
	for (unsigned i = 2; i < 5; i++) {
		const int64_t now = NOW + 3500 * MS + i * 100 * MS;

		assert_int_equal(step(q, SLOT_RESERVE, &pl[i], now, &res), SLOT_QUEUED);
		assert_int_equal(res.deadline_us, NOW + i * T);
		/* B, admitted to go in later, counts ahead. */
		assert_int_equal(res.position, i);
		assert_int_equal(q->n_waiters, i - 1);
		assert_int_equal(q->waiters[i - 2].arrival_us, now);
		lease_fits(q->waiters[i - 2].lease_us, now, &res, T);
		assert_int_equal(q->waiters[i - 2].pid, getpid());
	}
	assert_int_equal(q->tat_us, NOW + 2 * T); /* a place held moves no schedule */
}

/* peek reads without changing; reset empties, and the old waiters hold places anew, in the
   order they renew, behind a login that came after the reset. */
static void test_peek_reset(void **state)
{
	struct slot_place pl[5], late = place(9, "0f", "");
	struct slot_result res;
	struct lqueue q;
	char *before, *after;

	(void)state;
	five_logins(&q, pl);
	q.changed = 0;
	before = text_of(&q);
	res.waiting = res.since_us = -2;
	assert_int_equal(
	    lqueue_step(&q, &P, 0, SLOT_PEEK, &late, getpid(), NOW + 4 * S, SLOT_COMMIT_US, &res),
	    SLOT_QUEUED);
	/* "Waiting counts everyone": every login not gone in yet, B (admitted to go in later) with
	   C, D, E. */
	assert_int_equal(res.waiting, 4);
	assert_int_equal(res.wait_us, 5 * T - 4 * S); /* behind B (admitted) and C, D, E */
	assert_int_equal(res.position, 5);
	assert_int_equal(res.since_us, 500 * MS);
	after = text_of(&q);
	assert_string_equal(after, before);
	assert_int_equal(q.n_waiters, 3);
	free(after);
	free(before);

	assert_int_equal(
	    lqueue_step(&q, &P, 0, SLOT_RESET, &late, getpid(), NOW + 4 * S, SLOT_COMMIT_US, &res),
	    SLOT_QUEUED);
	assert_int_equal(res.waiting, 4); /* what it held */
	assert_int_equal(q.n_waiters, 0);
	assert_int_equal(q.changed, 1);
	/* A login after the reset is not held by the old queue. */
	assert_int_equal(step(&q, SLOT_RESERVE, &late, NOW + 4100 * MS, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	/* The old waiters come back at the back, in the order they renew. */
	assert_int_equal(step(&q, SLOT_RENEW, &pl[4], NOW + 5 * S, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 1);
	assert_int_equal(res.deadline_us, NOW + 4100 * MS + T);
	assert_int_equal(step(&q, SLOT_RENEW, &pl[2], NOW + 5500 * MS, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 2);
	assert_int_equal(res.deadline_us, NOW + 4100 * MS + 2 * T);
	lqueue_free(&q);
}

static void test_commit_window(void **state)
{
	struct slot_place pl[5];
	struct slot_result res;
	struct lqueue q;

	(void)state;
	five_logins(&q, pl);
	lqueue_free(&q);

	/* Exactly SLOT_COMMIT_US before its slot is near enough; a microsecond more is not. */
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &pl[0], NOW, &res), SLOT_ADMIT);
	assert_int_equal(step(&q, SLOT_RESERVE, &pl[1], NOW + T - SLOT_COMMIT_US - 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(step(&q, SLOT_RENEW, &pl[1], NOW + T - SLOT_COMMIT_US, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, SLOT_COMMIT_US);
	lqueue_free(&q);
}

static void test_renew(void **state)
{
	struct slot_place pl[5];
	struct slot_result res;
	struct lqueue q;

	(void)state;
	five_logins(&q, pl);
	/* Before its slot: the place kept, a shorter wait; B has gone in. */
	for (unsigned i = 2; i < 5; i++) {
		assert_int_equal(step(&q, SLOT_RENEW, &pl[i], NOW + 6 * S, &res), SLOT_QUEUED);
		assert_int_equal(res.deadline_us, NOW + i * T);
		assert_int_equal(res.wait_us, i * T - 6 * S);
		assert_int_equal(res.position, i - 1);
		lease_fits(q.waiters[find(&q, &pl[i])].lease_us, NOW + 6 * S, &res, T);
	}
	assert_int_equal(q.n_waiters, 3);

	/* C, first in line within the commit window: admitted to go in at its slot. */
	assert_int_equal(step(&q, SLOT_RENEW, &pl[2], NOW + 8500 * MS, &res), SLOT_ADMIT);
	assert_int_equal(res.deadline_us, NOW + 2 * T);
	assert_int_equal(res.position, 1);
	assert_int_equal(q.n_waiters, 2);
	assert_int_equal(find(&q, &pl[2]), -1);
	assert_int_equal(q.n_ghosts, 0); /* admitted: nothing to take back */
	assert_int_equal(q.tat_us, NOW + 3 * T);
	assert_int_equal(q.at_us, NOW + 8500 * MS);

	/* D's slot follows C's, not the time C renewed; C counts ahead until it goes in. */
	assert_int_equal(step(&q, SLOT_RENEW, &pl[3], NOW + 9 * S, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 3 * T);
	assert_int_equal(res.position, 2);
	assert_int_equal(step(&q, SLOT_RENEW, &pl[4], NOW + 9 * S, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 3);
	assert_int_equal(step(&q, SLOT_RENEW, &pl[3], NOW + 12 * S, &res), SLOT_QUEUED);
	assert_int_equal(step(&q, SLOT_RENEW, &pl[4], NOW + 12 * S, &res), SLOT_QUEUED);

	/* At its slot: admitted, no wait; E's slot comes next. */
	assert_int_equal(step(&q, SLOT_RENEW, &pl[3], NOW + 3 * T, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(res.position, 1);
	assert_int_equal(step(&q, SLOT_RENEW, &pl[4], NOW + 3 * T + 500 * MS, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 4 * T);
	assert_int_equal(res.position, 1);
	assert_int_equal(q.n_waiters, 1);
	lqueue_free(&q);
}

static void test_leave(void **state)
{
	const struct slot_place nobody = place(99, "09", "");
	struct slot_place pl[5];
	struct slot_result res;
	struct lqueue q;
	char *before, *after;

	(void)state;
	five_logins(&q, pl);
	/* D gives its place up: remembered for a retry, and E moves up. */
	assert_int_equal(step(&q, SLOT_LEAVE, &pl[3], NOW + 4 * S, &res), SLOT_ADMIT);
	assert_int_equal(q.n_waiters, 2);
	assert_int_equal(find(&q, &pl[3]), -1);
	assert_int_equal(q.n_ghosts, 1);
	assert_string_equal(q.ghosts[0].who, "0d");
	assert_int_equal(q.ghosts[0].arrival_us, NOW + 3800 * MS);
	assert_int_equal(q.ghosts[0].left_us, NOW + 4 * S);
	assert_int_equal(step(&q, SLOT_RENEW, &pl[4], NOW + 4500 * MS, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 3 * T);
	assert_int_equal(res.position, 3);
	assert_int_equal(step(&q, SLOT_RENEW, &pl[2], NOW + 4500 * MS, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 2 * T);

	/* A place nobody holds: nothing changes. */
	before = text_of(&q);
	q.changed = 0;
	assert_int_equal(step(&q, SLOT_LEAVE, &nobody, NOW + 4500 * MS, &res), SLOT_ADMIT);
	assert_int_equal(q.changed, 0);
	after = text_of(&q);
	assert_string_equal(after, before);
	free(before);
	free(after);
	lqueue_free(&q);
}

/* A waiter whose process is gone is dropped at the next step, remembered as a ghost; a
   retry of the same login takes its place back, ahead of those who came after it. */
static void test_dead_pid(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", ""),
				c = place(3, "0c", ""), b2 = place(4, "0b", "");
	const pid_t gone = dead_pid();
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &P, 0, SLOT_RESERVE, &b, gone, NOW + 100 * MS, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + T);
	assert_int_equal(q.n_waiters, 1);

	/* At the next step, B is dropped: C is first in line. */
	q.changed = 0;
	assert_int_equal(step(&q, SLOT_RESERVE, &c, NOW + 1 * S, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + T);
	assert_int_equal(res.position, 1);
	assert_int_equal(q.n_waiters, 1);
	assert_int_equal(find(&q, &b), -1);
	assert_int_equal(q.n_ghosts, 1);
	assert_string_equal(q.ghosts[0].who, "0b");
	assert_int_equal(q.ghosts[0].arrival_us, NOW + 100 * MS);
	assert_int_equal(q.ghosts[0].left_us, NOW + 1 * S);
	assert_int_equal(q.changed, 1);

	/* B tried again, by a live process: C queued while B was away ("Ghosts"), so B goes to the
	   back, its ghost consumed and its place marked taken back. */
	assert_int_equal(step(&q, SLOT_RESERVE, &b2, NOW + 1500 * MS, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 2 * T);
	assert_int_equal(res.position, 2);
	assert_int_equal(q.waiters[find(&q, &b2)].arrival_us, NOW + 1500 * MS);
	assert_true(q.waiters[find(&q, &b2)].taken_back);
	assert_int_equal(q.n_ghosts, 0);
	assert_int_equal(step(&q, SLOT_RENEW, &c, NOW + 1500 * MS, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + T);
	assert_int_equal(res.position, 1);
	lqueue_free(&q);
}

/* A waiter whose lease ran out is dropped likewise; renewing late, it takes its place back. */
static void test_lease_out(void **state)
{
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 60 * S, .burst = 1 };
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", ""),
				c = place(3, "0c", ""), b2 = place(4, "0b", ""),
				d = place(5, "0d", ""); /* never held */
	const int64_t b_lease = NOW + 100 * MS + SLOT_LEASE_US;
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &a, getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &b, getpid(), NOW + 100 * MS, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &c, getpid(), NOW + 200 * MS, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 20 * S);

	/* Just before its end, B's lease holds. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &c, getpid(), b_lease - 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 20 * S);
	assert_int_equal(q.n_waiters, 2);
	/* At its end, it is given up; C moves up. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &c, getpid(), b_lease, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 10 * S);
	assert_int_equal(res.position, 1);
	assert_int_equal(q.n_waiters, 1);
	assert_int_equal(q.n_ghosts, 1);
	assert_int_equal(q.ghosts[0].arrival_us, NOW + 100 * MS);
	assert_int_equal(q.ghosts[0].left_us, b_lease);

	/* B itself renews, late but alive: it holds its place again, ahead of C. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &b, getpid(), b_lease + S, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 10 * S);
	assert_int_equal(res.position, 1);
	assert_int_equal(q.n_ghosts, 0);
	assert_int_equal(q.waiters[find(&q, &b)].arrival_us, NOW + 100 * MS);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &c, getpid(), b_lease + S, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 20 * S);

	/* B, taken back once, leaves no ghost when it leaves ("Ghosts"): a retry (B2) is at the
	   back. */
	assert_true(q.waiters[find(&q, &b)].taken_back);
	assert_int_equal(step_as(&q, &p, 0, SLOT_LEAVE, &b, getpid(), b_lease + S, &res),
			 SLOT_ADMIT);
	assert_int_equal(ghost_of(&q, "0b"), -1);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &b2, getpid(), b_lease + 2 * S, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 20 * S);
	assert_int_equal(res.position, 2);

	/* B2 given up: its ghost is kept 60 s, then forgotten. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_LEAVE, &b2, getpid(), b_lease + 2 * S, &res),
			 SLOT_ADMIT);
	assert_int_equal(ghost_of(&q, "0b"), b_lease + 2 * S);
	assert_int_equal(step_as(&q, &p, 0, SLOT_LEAVE, &d, getpid(), b_lease + 62 * S - 1, &res),
			 SLOT_ADMIT);
	assert_int_equal(ghost_of(&q, "0b"), b_lease + 2 * S);
	/* C's lease ran out meanwhile, first in line and its slot come ("A lapsed place at its slot
	   counts as admitted"): admitted. */
	assert_int_equal(ghost_of(&q, "0c"), -1);
	assert_int_equal(q.tat_us, NOW + 20 * S);
	assert_int_equal(step_as(&q, &p, 0, SLOT_LEAVE, &d, getpid(), b_lease + 62 * S, &res),
			 SLOT_ADMIT);
	assert_int_equal(ghost_of(&q, "0b"), -1);
	assert_int_equal(q.n_waiters, 0);
	lqueue_free(&q);
}

/* Two live places of the same login (two terminals) are both kept. */
static void test_same_who_twice(void **state)
{
	const struct slot_place a = place(1, "0a", ""), x1 = place(2, "0f", ""),
				x2 = place(3, "0f", "");
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(step(&q, SLOT_RESERVE, &x1, NOW + 100 * MS, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 1);
	assert_int_equal(step(&q, SLOT_RESERVE, &x2, NOW + 200 * MS, &res), SLOT_QUEUED);
	assert_int_equal(res.position, 2);
	assert_int_equal(res.deadline_us, NOW + 2 * T);
	assert_int_equal(step(&q, SLOT_RENEW, &x1, NOW + 1 * S, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + T);
	assert_int_equal(q.n_waiters, 2);
	lqueue_free(&q);
}

/* per_host bounds the places of one remote host, not another's, nor those of no host. */
static void test_per_host(void **state)
{
	const struct slot_place a = place(1, "0a", "aa"), b = place(2, "0b", "aa"),
				c = place(3, "0c", "aa"), d = place(4, "0d", "aa"),
				e = place(5, "0e", "bb"), f = place(6, "0f", "");
	struct slot_place b2;
	struct slot_result res;
	struct lqueue q;
	char *before, *after;

	(void)state;
	load(&q, "");
	assert_int_equal(step_as(&q, &P, 2, SLOT_RESERVE, &a, getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &P, 2, SLOT_RESERVE, &b, getpid(), NOW + 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &P, 2, SLOT_RESERVE, &c, getpid(), NOW + 2, &res),
			 SLOT_QUEUED);
	before = text_of(&q);
	q.changed = 0;
	assert_int_equal(step_as(&q, &P, 2, SLOT_RESERVE, &d, getpid(), NOW + 3, &res),
			 SLOT_REFUSE_HOST);
	assert_int_equal(res.position, 3);
	assert_int_equal(q.changed, 0);
	after = text_of(&q);
	assert_string_equal(after, before);
	free(before);
	free(after);
	assert_int_equal(step_as(&q, &P, 2, SLOT_RESERVE, &e, getpid(), NOW + 4, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &P, 2, SLOT_RESERVE, &f, getpid(), NOW + 5, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &P, 0, SLOT_RESERVE, &d, getpid(), NOW + 6, &res),
			 SLOT_QUEUED); /* no limit */
	assert_int_equal(q.n_waiters, 5);
	/* One of the host's places given up: its ghost still counts ("Ghosts"), but for its own
	   WHO, which takes it back. */
	assert_int_equal(step_as(&q, &P, 3, SLOT_LEAVE, &b, getpid(), NOW + 7, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &P, 3, SLOT_RESERVE, &d, getpid(), NOW + 8, &res),
			 SLOT_REFUSE_HOST);
	b2 = place(7, "0b", "aa");
	assert_int_equal(step_as(&q, &P, 3, SLOT_RESERVE, &b2, getpid(), NOW + 9, &res),
			 SLOT_QUEUED);
	lqueue_free(&q);
}

/* A wait past max_wait is refused and changes nothing, a ghost's claim included. */
static void test_refusal_changes_nothing(void **state)
{
	const struct slot_params p = { .interval_us = T, .max_wait_us = 10 * S, .burst = 1 };
	struct slot_place pl[4];
	struct slot_result res;
	struct lqueue q;
	char *before, *after;

	(void)state;
	load(&q, "");
	for (unsigned i = 0; i < 4; i++)
		pl[i] = place(i + 1, i == 3 ? "0d" : "0a", "");
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &pl[0], getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &pl[1], getpid(), NOW + 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &pl[2], getpid(), NOW + 2, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.wait_us, 10 * S - 2);
	before = text_of(&q);
	q.changed = 0;
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &pl[3], getpid(), NOW + 3, &res),
			 SLOT_REFUSE);
	assert_int_equal(res.wait_us, 15 * S - 3);
	assert_int_equal(res.position, 3);
	assert_int_equal(q.changed, 0);
	after = text_of(&q);
	assert_string_equal(after, before);
	free(before);
	free(after);
	lqueue_free(&q);
}

/* At most LQUEUE_MAX waiters and LQUEUE_GHOSTS_MAX ghosts (the latest) are read; a full
   queue refuses a new place. */
static void test_max(void **state)
{
	const struct slot_params p = { .interval_us = 1 * MS, .max_wait_us = 3600 * S, .burst = 1 };
	const struct slot_place x = place(LQUEUE_MAX + 10, "0f", "");
	const size_t n = LQUEUE_MAX + 3, line = 128;
	char *text = malloc((n * 2 + 1) * line), *out;
	struct slot_result res;
	struct lqueue q;
	size_t len;

	(void)state;
	assert_non_null(text);
	len = (size_t)sprintf(text, "%" PRId64 " %" PRId64 " %" PRId64 " 1\n", NOW, NOW, p.interval_us);
	for (size_t i = 0; i < n; i++)
		len +=
		    (size_t)sprintf(text + len, "w %032zx %016zx - %" PRId64 " %" PRId64 " %ld\n",
				    i + 1, i + 1, NOW - S + (int64_t)i, NOW + S, (long)getpid());
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "g %016zx %" PRId64 " %" PRId64 "\n", i + 1,
				       NOW - 2 * S, NOW + 60 * S);
	assert_int_equal(lqueue_read(&q, text), 0);
	assert_int_equal(q.changed, 1); /* ghosts dropped: to be written */
	q.changed = 0;
	assert_int_equal(q.n_waiters, LQUEUE_MAX);
	assert_int_equal(q.n_ghosts, LQUEUE_GHOSTS_MAX);
	for (size_t i = 0; i < q.n_ghosts; i++)
		assert_true(strtoull(q.ghosts[i].who, NULL, 16) > n - LQUEUE_GHOSTS_MAX);
	assert_string_equal(q.waiters[LQUEUE_MAX - 1].id + 16, "0000000000001000");

	/* A wait within max_wait, but no room. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &x, getpid(), NOW, &res), SLOT_REFUSE);
	assert_true(res.wait_us <= p.max_wait_us);
	assert_int_equal(q.changed, 0);
	assert_int_equal(q.n_waiters, LQUEUE_MAX);

	/* Written and read again whole. */
	out = text_of(&q);
	lqueue_free(&q);
	load(&q, out);
	assert_int_equal(q.n_waiters, LQUEUE_MAX);
	assert_int_equal(q.n_ghosts, LQUEUE_GHOSTS_MAX);
	free(out);

	/* A place given up makes room. */
	{
		const struct slot_place first = place(1, "0000000000000001", "");

		assert_int_equal(step_as(&q, &p, 0, SLOT_LEAVE, &first, getpid(), NOW, &res),
				 SLOT_ADMIT);
		assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &x, getpid(), NOW, &res),
				 SLOT_QUEUED);
		assert_int_equal(q.n_waiters, LQUEUE_MAX);
	}
	free(text);
	lqueue_free(&q);
}

/* Stored by a clock 100 s ahead of ours (a reboot with a kept state_dir): the queue keeps
   its length rather than holding logins for 100 s more. */
static void test_clock_step(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", "");
	struct slot_result res;
	struct lqueue q;
	char text[64];

	(void)state;
	snprintf(text, sizeof(text), "%" PRId64 " %" PRId64 "\n", NOW + 101500 * MS, NOW + 100 * S);
	load(&q, text);
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 1500 * MS);
	assert_int_equal(q.tat_us, NOW + 1500 * MS + T);
	assert_int_equal(q.at_us, NOW);
	assert_int_equal(step(&q, SLOT_RESERVE, &b, NOW + 1, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 1500 * MS + T);
	assert_int_equal(res.position, 2);
	lqueue_free(&q);

	/* A bare tat, as versions before 0.2 wrote it: written now. */
	snprintf(text, sizeof(text), "%" PRId64 "\n", NOW + 1500 * MS);
	load(&q, text);
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 1500 * MS);
	assert_int_equal(q.tat_us, NOW + 1500 * MS + T);
	lqueue_free(&q);

	/* 7 s of queue: a place held for 7 s. */
	snprintf(text, sizeof(text), "%" PRId64 " %" PRId64 "\n", NOW + 107 * S, NOW + 100 * S);
	load(&q, text);
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 7 * S);
	assert_int_equal(res.position, 2);
	lqueue_free(&q);
}

/* After a clock step, the queue moves on: a login held for 7 s is admitted 7 s later, not
   held as long as the clock takes to catch up with the stored one. FAILS: the recovered tat is
   never stored until an admission, so each renewal reads the same 7 s from now (slot.lua
   does the same on Redis). */
static void test_clock_step_moves_on(void **state)
{
	const struct slot_place a = place(1, "0a", "");
	struct slot_result res;
	struct lqueue q;
	char text[64];

	(void)state;
	snprintf(text, sizeof(text), "%" PRId64 " %" PRId64 "\n", NOW + 107 * S, NOW + 100 * S);
	load(&q, text);
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 7 * S);
	assert_int_equal(step(&q, SLOT_RENEW, &a, NOW + 2 * S, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 7 * S);
	assert_int_equal(step(&q, SLOT_RENEW, &a, NOW + 5500 * MS, &res), SLOT_ADMIT);
	assert_int_equal(res.deadline_us, NOW + 7 * S);
	lqueue_free(&q);
}

/* A place of no WHO (slot.lua takes "") is kept in the file like any other. FAILS: it is
   written "w ID  HOST ...", which lqueue_read drops. */
static void test_empty_who(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "", "");
	struct slot_result res;
	struct lqueue q, q2;
	char *out;

	(void)state;
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(step(&q, SLOT_RESERVE, &b, NOW + 1, &res), SLOT_QUEUED);
	assert_int_equal(q.n_waiters, 1);
	out = text_of(&q);
	assert_int_equal(lqueue_read(&q2, out), 0);
	free(out);
	assert_int_equal(q2.n_waiters, 1);
	assert_string_equal(q2.waiters[0].id, b.id);
	assert_string_equal(q2.waiters[0].who, "");
	lqueue_free(&q2);
	lqueue_free(&q);
}

/* "max_wait bounds the whole wait": a renewal whose slot is further off than what is left of
   max_wait is refused, with the wait it would have had; its place goes, and no ghost is left for a
   retry. */
static void test_renew_past_max_wait(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", ""),
				c = place(3, "0c", "");
	struct slot_params left = P;
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(step(&q, SLOT_RESERVE, &b, NOW + 1, &res), SLOT_QUEUED);
	assert_int_equal(step(&q, SLOT_RESERVE, &c, NOW + 2, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 2 * T);
	/* C has 8 s of its max_wait left, and its slot is 10 s off. */
	left.max_wait_us = 8 * S;
	assert_int_equal(step_as(&q, &left, 0, SLOT_RENEW, &c, getpid(), NOW, &res), SLOT_REFUSE);
	assert_int_equal(res.wait_us, 2 * T);
	assert_int_equal(find(&q, &c), -1);
	assert_int_equal(ghost_of(&q, "0c"), -1);
	/* Just enough left: kept. */
	left.max_wait_us = T;
	assert_int_equal(step_as(&q, &left, 0, SLOT_RENEW, &b, getpid(), NOW, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + T);
	lqueue_free(&q);
}

/* "Ghosts": a ghost records WHO, HOST, ARRIVAL and LEFT; a reserve takes its arrival back when
   nobody queued since LEFT, and marks the place taken back, which then leaves no ghost. */
static void test_ghost_taken_back_once(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", "bb"),
				b2 = place(3, "0b", "bb"), b3 = place(4, "0b", "bb"),
				c = place(5, "0c", "");
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(step(&q, SLOT_RESERVE, &c, NOW + 1, &res), SLOT_QUEUED);
	assert_int_equal(step(&q, SLOT_RESERVE, &b, NOW + 2, &res), SLOT_QUEUED);
	assert_int_equal(step(&q, SLOT_LEAVE, &b, NOW + S, &res), SLOT_ADMIT);
	assert_int_equal(q.n_ghosts, 1);
	assert_string_equal(q.ghosts[0].host, "bb");
	assert_int_equal(q.ghosts[0].arrival_us, NOW + 2);
	assert_int_equal(q.ghosts[0].left_us, NOW + S);
	/* Nobody came since: B2 takes B's arrival back, behind C as B was. */
	assert_int_equal(step(&q, SLOT_RESERVE, &b2, NOW + 2 * S, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 2 * T);
	assert_int_equal(q.waiters[find(&q, &b2)].arrival_us, NOW + 2);
	assert_true(q.waiters[find(&q, &b2)].taken_back);
	assert_int_equal(q.n_ghosts, 0);
	/* Taken back once: given up again, it leaves nothing, and B3 starts at the back. */
	assert_int_equal(step(&q, SLOT_LEAVE, &b2, NOW + 3 * S, &res), SLOT_ADMIT);
	assert_int_equal(q.n_ghosts, 0);
	assert_int_equal(step(&q, SLOT_RESERVE, &b3, NOW + 4 * S, &res), SLOT_QUEUED);
	assert_int_equal(q.waiters[find(&q, &b3)].arrival_us, NOW + 4 * S);
	assert_false(q.waiters[find(&q, &b3)].taken_back);
	lqueue_free(&q);
}

/* "Ghosts": a live place that arrived at or after the ghost's LEFT sends the retry to the back,
   the ghost consumed all the same. */
static void test_ghost_after_newcomer(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", ""),
				b2 = place(3, "0b", ""), d = place(4, "0d", "");
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(step(&q, SLOT_RESERVE, &b, NOW + 1, &res), SLOT_QUEUED);
	assert_int_equal(step(&q, SLOT_LEAVE, &b, NOW + S, &res), SLOT_ADMIT);
	assert_int_equal(step(&q, SLOT_RESERVE, &d, NOW + S, &res), SLOT_QUEUED); /* at LEFT */
	assert_int_equal(step(&q, SLOT_RESERVE, &b2, NOW + 2 * S, &res), SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 2 * T);
	assert_int_equal(res.position, 2);
	assert_true(q.waiters[find(&q, &b2)].taken_back);
	assert_int_equal(ghost_of(&q, "0b"), -1);
	lqueue_free(&q);
}

/* "Ghosts": a renewal of a place whose lease ran out while its login lived takes WHO's ghost's
   arrival back as a retry would (not ahead of those who queued since), marked taken back. */
static void test_renew_lapsed_takes_back(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", ""),
				c = place(3, "0c", ""), d = place(4, "0d", "");
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 60 * S, .burst = 1 };
	const int64_t lapse = NOW + 2 + SLOT_LEASE_US;
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &a, getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &c, getpid(), NOW + 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &b, getpid(), NOW + 2, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &c, getpid(), NOW + 4 * S, &res),
			 SLOT_QUEUED);
	/* B's lease runs out (not first in line: a ghost); D comes after. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &d, getpid(), lapse, &res), SLOT_QUEUED);
	assert_int_equal(ghost_of(&q, "0b"), NOW + 2);
	assert_int_equal(q.ghosts[0].left_us, lapse);
	/* B's renewal takes its ghost as a retry would: D queued since B left, so B goes
	   behind D, which keeps the slot it was given. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &b, getpid(), lapse + S, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 30 * S);
	assert_int_equal(res.position, 3);
	assert_true(q.waiters[find(&q, &b)].taken_back);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &d, getpid(), lapse + S, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 20 * S);
	lqueue_free(&q);
}

/* "A lapsed place at its slot counts as admitted" spares the caller: a place whose lease ran out,
   first in line with its slot come, that renews now is alive and goes in at once; it was not
   admitted blind. */
static void test_renew_own_lapse(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", "");
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &a, getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &b, getpid(), NOW + 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &b, getpid(), NOW + 11 * S, &res),
			 SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(q.tat_us, NOW + 21 * S);
	lqueue_free(&q);
}

/* "Ghosts": per_host counts the host's ghosts, but for the reserving WHO's own. */
static void test_per_host_counts_ghosts(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", "bb"),
				c = place(3, "0c", "bb"), b2 = place(4, "0b", "bb");
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step_as(&q, &P, 1, SLOT_RESERVE, &a, getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &P, 1, SLOT_RESERVE, &b, getpid(), NOW + 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &P, 1, SLOT_LEAVE, &b, getpid(), NOW + 2, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &P, 1, SLOT_RESERVE, &c, getpid(), NOW + 3, &res),
			 SLOT_REFUSE_HOST);
	assert_int_equal(step_as(&q, &P, 1, SLOT_RESERVE, &b2, getpid(), NOW + 4, &res),
			 SLOT_QUEUED);
	lqueue_free(&q);
}

/* "Ghosts": at most LQUEUE_HOST_GHOSTS_MAX ghosts per host, LQUEUE_GHOSTS_MAX per schedule. */
static void test_ghost_caps(void **state)
{
	const struct slot_params p = { .interval_us = 1 * S, .max_wait_us = 3600 * S, .burst = 1 };
	struct slot_result res;
	struct lqueue q;
	char who[17], host[17];
	int64_t now = NOW;

	(void)state;
	load(&q, "");
	for (unsigned i = 0; i < 3 * LQUEUE_GHOSTS_MAX; i++) {
		struct slot_place pl;

		snprintf(who, sizeof(who), "%016x", i + 1);
		/* 20 places from host aa, the rest from hosts of their own */
		snprintf(host, sizeof(host), "%016x", i < 20 ? 0xaa : i + 0x100);
		pl = place(i + 1, who, host);
		step_as(&q, &p, 0, SLOT_RESERVE, &pl, getpid(), now, &res);
		assert_int_equal(step_as(&q, &p, 0, SLOT_LEAVE, &pl, getpid(), now, &res),
				 SLOT_ADMIT);
		now += 10;
	}
	assert_int_equal(q.n_ghosts, LQUEUE_GHOSTS_MAX);
	{
		int aa = 0;

		for (size_t i = 0; i < q.n_ghosts; i++)
			aa += strcmp(q.ghosts[i].host, "00000000000000aa") == 0;
		assert_int_equal(aa, LQUEUE_HOST_GHOSTS_MAX);
	}
	lqueue_free(&q);
}

/* "A lapsed place at its slot counts as admitted": a place first in line whose lease runs out once
   its slot has come may have gone in blind: it counts as admitted (the schedule moves on one
   interval), and leaves no ghost. One that lapses before its slot leaves a ghost, and moves
   nothing. */
static void test_lapsed_first_admitted(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", ""),
				c = place(3, "0c", "");
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(step(&q, SLOT_RESERVE, &b, NOW + 1, &res), SLOT_QUEUED);
	assert_int_equal(step(&q, SLOT_RESERVE, &c, NOW + 2, &res), SLOT_QUEUED);
	/* B renews 1 s before its slot (outside no window: 2 s), then is heard of no more. */
	assert_int_equal(step(&q, SLOT_RENEW, &b, NOW + T - 2 * S - 1, &res), SLOT_QUEUED);
	assert_int_equal(step(&q, SLOT_RENEW, &c, NOW + 6 * S, &res), SLOT_QUEUED);
	/* Its lease out at NOW + 8 s: C, now first, goes in an interval after B's slot. */
	assert_int_equal(step(&q, SLOT_RENEW, &c, NOW + T + 4 * S, &res), SLOT_ADMIT);
	assert_int_equal(ghost_of(&q, "0b"), -1);
	assert_int_equal(res.deadline_us, NOW + 2 * T);
	assert_int_equal(q.tat_us, NOW + 3 * T);
	lqueue_free(&q);

	/* Lapsed before its slot (10 s off, its lease 5 s): a ghost; C gets B's slot. */
	load(&q, "");
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &a, getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &b, getpid(), NOW + 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &c, getpid(), NOW + 2, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &c, getpid(), NOW + 4 * S, &res),
			 SLOT_QUEUED);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &c, getpid(), NOW + 1 + SLOT_LEASE_US, &res),
			 SLOT_QUEUED);
	assert_int_equal(ghost_of(&q, "0b"), NOW + 1);
	assert_int_equal(q.tat_us, NOW + 10 * S);
	assert_int_equal(res.deadline_us, NOW + 10 * S);
	lqueue_free(&q);
}

/* Two waiters in a row cut off before their slots, each going in blind at it within its lease
   (found by tests/model): both count as admitted, and a newcomer waits behind both. The
   first one's admission must not make the second one's slot read as now, past its lease. */
static void test_lapsed_two_in_a_row(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", ""),
				c = place(3, "0c", ""), d = place(4, "0d", "");
	const struct slot_params p = { .interval_us = 3 * S, .max_wait_us = 12 * S, .burst = 1 };
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &a, getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &b, getpid(), NOW + 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 3 * S);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &c, getpid(), NOW + S + 2, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 6 * S);
	/* B's lease ran out at NOW + 5 s + 1, C's at NOW + 6 s + 2, each after its slot. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &d, getpid(), NOW + 6 * S + 3, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 9 * S);
	assert_int_equal(ghost_of(&q, "0b"), -1);
	assert_int_equal(ghost_of(&q, "0c"), -1);
	lqueue_free(&q);
}

/* "The schedule's own settings": the schedule keeps the strictest settings seen since it was made,
   decides by them and names them; made afresh, once idle, by the next caller's. */
static void test_schedule_settings(void **state)
{
	const struct slot_params lax = { .interval_us = 2 * S, .max_wait_us = 60 * S, .burst = 3 };
	const struct slot_params strict = { .interval_us = 4 * S, .max_wait_us = 60 * S,
					    .burst = 2 };
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", ""),
				c = place(3, "0c", ""), d = place(4, "0d", "");
	struct slot_result res;
	struct lqueue q;
	char *out, want[96];

	(void)state;
	load(&q, "");
	assert_int_equal(step_as(&q, &lax, 0, SLOT_RESERVE, &a, getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(res.sched_interval_us, 2 * S);
	assert_int_equal(res.sched_burst, 3);
	assert_int_equal(step_as(&q, &strict, 0, SLOT_RESERVE, &b, getpid(), NOW, &res),
			 SLOT_ADMIT);
	assert_int_equal(res.sched_interval_us, 4 * S);
	assert_int_equal(res.sched_burst, 2);
	/* A lax caller now: decided by 4 s and 2 (tat NOW + 2 s + 4 s: C waits 2 s). */
	assert_int_equal(step_as(&q, &lax, 0, SLOT_RESERVE, &c, getpid(), NOW, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 2 * S);
	assert_int_equal(res.sched_interval_us, 4 * S);
	assert_int_equal(res.sched_burst, 2);
	out = text_of(&q);
	snprintf(want, sizeof(want), "%" PRId64 " %" PRId64 " %" PRId64 " 2\n", NOW + 10 * S, NOW,
		 4 * S);
	assert_string_equal(out, want);
	free(out);
	/* Idle and passed: made afresh by the next caller's. */
	assert_int_equal(step_as(&q, &lax, 0, SLOT_RESERVE, &d, getpid(), NOW + 20 * S, &res),
			 SLOT_ADMIT);
	assert_int_equal(res.sched_interval_us, 2 * S);
	assert_int_equal(res.sched_burst, 3);
	assert_int_equal(q.interval_us, 2 * S);
	/* peek names them too. */
	assert_int_equal(step_as(&q, &strict, 0, SLOT_PEEK, &d, getpid(), NOW + 20 * S, &res),
			 SLOT_ADMIT);
	assert_int_equal(res.sched_interval_us, 4 * S);
	lqueue_free(&q);
}

/* "Waiting counts everyone": peek's waiting counts a login admitted to go in later, with no place
   held. */
static void test_peek_counts_admitted(void **state)
{
	const struct slot_place a = place(1, "0a", ""), b = place(2, "0b", "");
	struct slot_result res;
	struct lqueue q;

	(void)state;
	load(&q, "");
	assert_int_equal(step(&q, SLOT_RESERVE, &a, NOW, &res), SLOT_ADMIT);
	assert_int_equal(step(&q, SLOT_RESERVE, &b, NOW + T - S, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, S);
	assert_int_equal(q.n_waiters, 0);
	assert_int_equal(step(&q, SLOT_PEEK, &b, NOW + T - S, &res), SLOT_QUEUED);
	assert_int_equal(res.waiting, 1);
	assert_int_equal(res.position, 2);
	lqueue_free(&q);
}

/* A schedule file whose next slot is ahead_us after NOW (as if a queue had gone in before),
   at interval_us and burst 1. */
static void load_ahead(struct lqueue *q, int64_t ahead_us, int64_t interval_us)
{
	char text[128];

	snprintf(text, sizeof(text), "%" PRId64 " %" PRId64 " %" PRId64 " 1\n", NOW + ahead_us, NOW,
		 interval_us);
	load(q, text);
}

/* L1 on the file: near its turn a place holds 5 s; further back its lease ends before its
   slot, at most 63 s; a place not renewed is dropped at its lease end, long before its slot,
   and the one behind it moves up: it delayed nobody. */
static void test_lease_fits_the_wait(void **state)
{
	const struct slot_params p = { .interval_us = 10 * S, .max_wait_us = 600 * S, .burst = 1 };
	const struct slot_place near = place(1, "0a", ""), x = place(2, "0b", ""),
				y = place(3, "0c", "");
	const int64_t lease_max = SLOT_RENEW_MAX_US + SLOT_LEASE_US - SLOT_RENEW_US;
	struct slot_result res;
	struct lqueue q;
	int64_t x_lease, y_position;

	(void)state;
	/* Near: 15 s off, within two intervals and the commit window. */
	load_ahead(&q, 15 * S, p.interval_us);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &near, getpid(), NOW, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.wait_us, 15 * S);
	assert_int_equal(q.waiters[find(&q, &near)].lease_us, NOW + SLOT_LEASE_US);
	lqueue_free(&q);

	/* Far: X 300 s off (a quarter of it is past the longest renewal), Y behind it. */
	load_ahead(&q, 300 * S, p.interval_us);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &x, getpid(), NOW, &res), SLOT_QUEUED);
	x_lease = q.waiters[find(&q, &x)].lease_us;
	assert_int_equal(x_lease, NOW + lease_max);
	assert_true(x_lease < res.deadline_us);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &y, getpid(), NOW + 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 310 * S);
	lease_fits(q.waiters[find(&q, &y)].lease_us, NOW + 1, &res, p.interval_us);
	/* Y renews on time: X's lease still runs (a live place), then it has run out: X is
	   dropped, a ghost, and Y moves up to X's slot, which has not come. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &y, getpid(), x_lease - 1, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.deadline_us, NOW + 310 * S);
	y_position = res.position;
	assert_int_equal(step_as(&q, &p, 0, SLOT_RENEW, &y, getpid(), x_lease, &res), SLOT_QUEUED);
	assert_int_equal(res.position, y_position - 1);
	assert_int_equal(res.deadline_us, NOW + 300 * S);
	assert_int_equal(find(&q, &x), -1);
	assert_int_equal(ghost_of(&q, "0b"), NOW);
	lqueue_free(&q);
}

/* L3: the places ahead of a dead one given up after its last renewal bring its slot before
   its lease ends: it holds the one behind it (which renews at the near cadence) until then,
   counts as admitted at its slot (no ghost), and the next goes in within a near renewal of
   its lease's end. */
static void test_lease_slot_moved_earlier(void **state)
{
	const struct slot_params p = { .interval_us = 2 * S, .max_wait_us = 60 * S, .burst = 1 };
	struct slot_place ahead[10], x = place(20, "1a", ""), y = place(21, "1b", "");
	struct slot_result res;
	struct lqueue q;
	int64_t x_lease, now;
	char who[17];

	(void)state;
	load_ahead(&q, 4 * S, p.interval_us);
	for (unsigned i = 0; i < 10; i++) {
		snprintf(who, sizeof(who), "%x", i + 1);
		ahead[i] = place(i + 1, who, "");
		assert_int_equal(
		    step_as(&q, &p, 0, SLOT_RESERVE, &ahead[i], getpid(), NOW + i, &res),
		    SLOT_QUEUED);
	}
	/* X: 24 s off, far (past 2 intervals and the commit window): a lease of 24 / 4 + 3 s. */
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &x, getpid(), NOW + 10, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.wait_us, 24 * S - 10);
	x_lease = q.waiters[find(&q, &x)].lease_us;
	assert_int_equal(x_lease, NOW + 10 + (24 * S - 10) / 4 + 3 * S);
	assert_int_equal(step_as(&q, &p, 0, SLOT_RESERVE, &y, getpid(), NOW + 11, &res),
			 SLOT_QUEUED);
	/* The ten ahead of X hang up; X, dead, no longer renews: its slot is NOW + 4 s. */
	for (unsigned i = 0; i < 10; i++)
		assert_int_equal(
		    step_as(&q, &p, 0, SLOT_LEAVE, &ahead[i], getpid(), NOW + 1 * S, &res),
		    SLOT_ADMIT);
	/* Y renews as the module does: held behind X while X's lease runs, then admitted. */
	now = NOW + 1 * S;
	for (;;) {
		assert_true(now <= x_lease + SLOT_RENEW_US);
		if (step_as(&q, &p, 0, SLOT_RENEW, &y, getpid(), now, &res) == SLOT_ADMIT)
			break;
		assert_true(find(&q, &x) >= 0); /* X's lease runs: Y waits behind it */
		assert_true(now < x_lease);
		now += slot_renew_us(res.wait_us, p.interval_us);
		if (now > res.deadline_us)
			now = res.deadline_us;
	}
	assert_true(now >= x_lease);
	assert_int_equal(find(&q, &x), -1);
	assert_int_equal(ghost_of(&q, "1a"), -1); /* counted as admitted at its slot */
	lqueue_free(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_garbage_lines),
		cmocka_unit_test(test_lines_on_their_own),
		cmocka_unit_test(test_reserve_empty),
		cmocka_unit_test(test_peek_reset),
		cmocka_unit_test(test_commit_window),
		cmocka_unit_test(test_renew),
		cmocka_unit_test(test_leave),
		cmocka_unit_test(test_dead_pid),
		cmocka_unit_test(test_lease_out),
		cmocka_unit_test(test_lease_fits_the_wait),
		cmocka_unit_test(test_lease_slot_moved_earlier),
		cmocka_unit_test(test_same_who_twice),
		cmocka_unit_test(test_per_host),
		cmocka_unit_test(test_refusal_changes_nothing),
		cmocka_unit_test(test_max),
		cmocka_unit_test(test_clock_step),
		cmocka_unit_test(test_clock_step_moves_on),
		cmocka_unit_test(test_empty_who),
		cmocka_unit_test(test_renew_past_max_wait),
		cmocka_unit_test(test_ghost_taken_back_once),
		cmocka_unit_test(test_ghost_after_newcomer),
		cmocka_unit_test(test_renew_lapsed_takes_back),
		cmocka_unit_test(test_renew_own_lapse),
		cmocka_unit_test(test_per_host_counts_ghosts),
		cmocka_unit_test(test_ghost_caps),
		cmocka_unit_test(test_lapsed_first_admitted),
		cmocka_unit_test(test_lapsed_two_in_a_row),
		cmocka_unit_test(test_schedule_settings),
		cmocka_unit_test(test_peek_counts_admitted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
