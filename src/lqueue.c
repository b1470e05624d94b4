/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/lqueue.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* As slot.lua: a place given up is remembered this long for a retry of the same login. */
#define LQUEUE_GHOST_US INT64_C(60000000)

static bool lqueue_token(const char *s, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n < max && strspn(s, "0123456789abcdef") == n;
}

int lqueue_read(struct lqueue *q, const char *text)
{
	const char *line = text;

	memset(q, 0, sizeof(*q));
	q->waiters = calloc(LQUEUE_MAX, sizeof(*q->waiters));
	q->ghosts = calloc(LQUEUE_MAX, sizeof(*q->ghosts));
	if (q->waiters == NULL || q->ghosts == NULL) {
		lqueue_free(q);
		return -1;
	}
	if (sscanf(line, "%" SCNd64 " %" SCNd64, &q->tat_us, &q->at_us) < 1)
		q->tat_us = q->at_us = 0;
	for (line = strchr(line, '\n'); line != NULL; line = strchr(line, '\n')) {
		struct lqueue_waiter w = { .pid = 0 };
		struct lqueue_ghost g = { .arrival_us = 0 };
		char end;
		long pid;

		line++;
		if (sscanf(line, "w %32s %16s %16s %" SCNd64 " %" SCNd64 " %ld%c", w.id, w.who,
			   w.host, &w.arrival_us, &w.lease_us, &pid, &end) == 7 &&
		    end == '\n' && lqueue_token(w.id, sizeof(w.id)) &&
		    (lqueue_token(w.who, sizeof(w.who)) || strcmp(w.who, "-") == 0) &&
		    strspn(w.host, "0123456789abcdef-") ==
		    strlen(w.host) && pid > 0 && q->n_waiters < LQUEUE_MAX) {
			if (strcmp(w.host, "-") == 0)
				w.host[0] = '\0';
			if (strcmp(w.who, "-") == 0)
				w.who[0] = '\0';
			w.pid = (pid_t)pid;
			q->waiters[q->n_waiters++] = w;
		} else if (sscanf(line, "g %16s %" SCNd64 " %" SCNd64 "%c", g.who, &g.arrival_us,
				  &g.end_us, &end) == 4 &&
			   end == '\n' && lqueue_token(g.who, sizeof(g.who)) &&
			   q->n_ghosts < LQUEUE_MAX) {
			q->ghosts[q->n_ghosts++] = g;
		}
	}
	return 0;
}

long lqueue_write(const struct lqueue *q, char **out)
{
	size_t cap = 64 + q->n_waiters * 128 + q->n_ghosts * 64, len = 0;
	char *buf = malloc(cap);

	if (buf == NULL)
		return -1;
	len += (size_t)snprintf(buf, cap, "%" PRId64 " %" PRId64 "\n", q->tat_us, q->at_us);
	for (size_t i = 0; i < q->n_waiters; i++) {
		const struct lqueue_waiter *w = &q->waiters[i];

		len += (size_t)snprintf(buf + len, cap - len,
					"w %s %s %s %" PRId64 " %" PRId64 " %ld\n", w->id,
					w->who[0] != '\0' ? w->who : "-",
					w->host[0] != '\0' ? w->host : "-", w->arrival_us,
					w->lease_us, (long)w->pid);
	}
	for (size_t i = 0; i < q->n_ghosts; i++) {
		const struct lqueue_ghost *g = &q->ghosts[i];

		len += (size_t)snprintf(buf + len, cap - len, "g %s %" PRId64 " %" PRId64 "\n",
					g->who, g->arrival_us, g->end_us);
	}
	*out = buf;
	return (long)len;
}

void lqueue_free(struct lqueue *q)
{
	free(q->waiters);
	free(q->ghosts);
	q->waiters = NULL;
	q->ghosts = NULL;
	q->n_waiters = q->n_ghosts = 0;
}

/* A waiter is alive while its lease runs and its process exists (no signal is sent). */
static bool lqueue_alive(const struct lqueue_waiter *w, int64_t now_us)
{
	return w->lease_us > now_us && !(kill(w->pid, 0) != 0 && errno == ESRCH);
}

static void lqueue_forget_ghost(struct lqueue *q, size_t i)
{
	q->ghosts[i] = q->ghosts[--q->n_ghosts];
	q->changed = 1;
}

static void lqueue_add_ghost(struct lqueue *q, const char *who, int64_t arrival_us,
			     int64_t now_us)
{
	for (size_t i = 0; i < q->n_ghosts; i++) {
		if (strcmp(q->ghosts[i].who, who) == 0)
			lqueue_forget_ghost(q, i);
	}
	if (who[0] == '\0' || q->n_ghosts == LQUEUE_MAX)
		return;
	strcpy(q->ghosts[q->n_ghosts].who, who);
	q->ghosts[q->n_ghosts].arrival_us = arrival_us;
	q->ghosts[q->n_ghosts++].end_us = now_us + LQUEUE_GHOST_US;
	q->changed = 1;
}

/* Removes waiter i, remembering its place for a retry when give_up. */
static void lqueue_drop(struct lqueue *q, size_t i, bool give_up, int64_t now_us)
{
	struct lqueue_waiter w = q->waiters[i];

	memmove(&q->waiters[i], &q->waiters[i + 1], (q->n_waiters - i - 1) * sizeof(w));
	q->n_waiters--;
	q->changed = 1;
	if (give_up)
		lqueue_add_ghost(q, w.who, w.arrival_us, now_us);
}

static void lqueue_purge(struct lqueue *q, int64_t now_us)
{
	for (size_t i = q->n_waiters; i-- > 0;) {
		if (!lqueue_alive(&q->waiters[i], now_us))
			lqueue_drop(q, i, true, now_us);
	}
	for (size_t i = q->n_ghosts; i-- > 0;) {
		if (q->ghosts[i].end_us <= now_us)
			lqueue_forget_ghost(q, i);
	}
}

/* WHO's place given up, taken back: its arrival, or -1. */
static int64_t lqueue_take_ghost(struct lqueue *q, const char *who)
{
	for (size_t i = 0; who[0] != '\0' && i < q->n_ghosts; i++) {
		if (strcmp(q->ghosts[i].who, who) == 0) {
			int64_t arrival_us = q->ghosts[i].arrival_us;

			lqueue_forget_ghost(q, i);
			return arrival_us;
		}
	}
	return -1;
}

static size_t lqueue_rank(const struct lqueue *q, int64_t arrival_us)
{
	size_t rank = 0;

	for (size_t i = 0; i < q->n_waiters; i++)
		rank += q->waiters[i].arrival_us < arrival_us;
	return rank;
}

static ssize_t lqueue_find(const struct lqueue *q, const char *id)
{
	for (size_t i = 0; i < q->n_waiters; i++) {
		if (strcmp(q->waiters[i].id, id) == 0)
			return (ssize_t)i;
	}
	return -1;
}

static int lqueue_hold(struct lqueue *q, const struct slot_place *pl, pid_t pid,
		       int64_t arrival_us, int64_t now_us)
{
	struct lqueue_waiter *w;

	if (q->n_waiters == LQUEUE_MAX)
		return -1;
	w = &q->waiters[q->n_waiters++];
	strcpy(w->id, pl->id);
	strcpy(w->who, pl->who);
	strcpy(w->host, pl->host);
	w->arrival_us = arrival_us;
	w->lease_us = now_us + SLOT_LEASE_US;
	w->pid = pid;
	q->changed = 1;
	return 0;
}

static int lqueue_places_of(const struct lqueue *q, const char *host)
{
	int n = 0;

	for (size_t i = 0; i < q->n_waiters; i++)
		n += strcmp(q->waiters[i].host, host) == 0;
	return n;
}

/* The schedule's arithmetic, as slot.lua's start_of, position and admit. */
struct lqueue_clock {
	const struct slot_params *p;
	int64_t tat_us, now_us;
};

static int64_t lqueue_start(const struct lqueue_clock *c, size_t rank)
{
	int64_t start_us = c->tat_us + ((int64_t)rank - c->p->burst + 1) * c->p->interval_us;

	return start_us < c->now_us ? c->now_us : start_us;
}

static int64_t lqueue_position(const struct lqueue_clock *c, size_t rank)
{
	int64_t first_us = lqueue_start(c, 0), pending = 0;

	if (first_us > c->now_us)
		pending = (first_us - c->now_us + c->p->interval_us - 1) / c->p->interval_us - 1;
	return (int64_t)rank + 1 + pending;
}

static enum slot_verdict lqueue_answer(struct slot_result *res, enum slot_verdict v,
				       int64_t wait_us, int64_t position, int64_t now_us)
{
	res->verdict = v;
	res->wait_us = wait_us;
	res->position = position;
	res->deadline_us = now_us + wait_us;
	return v;
}

/* peek and reset, as slot.lua's: what a login now would get, holding nothing, and the live
   waiters. reset then empties the queue; its waiters hold places anew at their renewal. */
static enum slot_verdict lqueue_view(struct lqueue *q, const struct lqueue_clock *c,
				     enum slot_op op, int64_t window_us, struct slot_result *res)
{
	int64_t start_us = lqueue_start(c, q->n_waiters);
	enum slot_verdict v = SLOT_QUEUED;

	if (start_us - c->now_us > c->p->max_wait_us)
		v = SLOT_REFUSE;
	else if (start_us - c->now_us <= window_us && (q->n_waiters == 0 || start_us == c->now_us))
		v = SLOT_ADMIT;
	res->waiting = (int64_t)q->n_waiters;
	res->since_us = q->at_us > 0 && q->at_us <= c->now_us ? c->now_us - q->at_us : -1;
	lqueue_answer(res, v, start_us - c->now_us, lqueue_position(c, q->n_waiters), c->now_us);
	if (op == SLOT_RESET) {
		q->n_waiters = q->n_ghosts = 0;
		q->tat_us = q->at_us = 0;
		q->changed = 1;
	}
	return v;
}

enum slot_verdict lqueue_step(struct lqueue *q, const struct slot_params *p, int per_host,
			      enum slot_op op, const struct slot_place *place, pid_t pid,
			      int64_t now_us, int64_t window_us, struct slot_result *res)
{
	struct lqueue_clock c = { .p = p, .now_us = now_us };
	int64_t arrival_us, start_us;
	ssize_t self;
	size_t rank;

	/* A bare tat (no at), as versions before 0.2 wrote it, reads as written now. */
	c.tat_us = slot_recover(now_us, q->tat_us, q->at_us > 0 ? q->at_us : now_us);
	/* A clock that went back: the schedule moved back as far is kept, or every renewal would
	   find the same wait until the clock caught up. */
	if (q->at_us > now_us) {
		q->tat_us = c.tat_us;
		q->at_us = now_us;
		q->changed = 1;
	}
	lqueue_purge(q, now_us);
	if (op == SLOT_PEEK || op == SLOT_RESET)
		return lqueue_view(q, &c, op, window_us, res);
	self = lqueue_find(q, place->id);
	if (op == SLOT_LEAVE) {
		if (self >= 0)
			lqueue_drop(q, (size_t)self, true, now_us);
		return lqueue_answer(res, SLOT_ADMIT, 0, 1, now_us);
	}
	if (op == SLOT_RESERVE) {
		if (per_host > 0 && place->host[0] != '\0' &&
		    lqueue_places_of(q, place->host) >= per_host)
			return lqueue_answer(res, SLOT_REFUSE_HOST, 0,
					     lqueue_position(&c, q->n_waiters), now_us);
		arrival_us = -1;
		for (size_t i = 0; place->who[0] != '\0' && i < q->n_ghosts; i++) {
			if (strcmp(q->ghosts[i].who, place->who) == 0)
				arrival_us = q->ghosts[i].arrival_us;
		}
		if (arrival_us < 0)
			arrival_us = now_us;
		rank = lqueue_rank(q, arrival_us);
		start_us = lqueue_start(&c, rank);
		if (start_us - now_us > p->max_wait_us || q->n_waiters == LQUEUE_MAX)
			return lqueue_answer(res, SLOT_REFUSE, start_us - now_us,
					     lqueue_position(&c, rank), now_us);
		lqueue_take_ghost(q, place->who);
	} else if (self < 0) {
		/* Its lease ran out while it lived on: back at its place, or at the back. */
		arrival_us = lqueue_take_ghost(q, place->who);
		if (arrival_us < 0)
			arrival_us = now_us;
		if (lqueue_hold(q, place, pid, arrival_us, now_us) != 0)
			return lqueue_answer(res, SLOT_ADMIT, 0, 1, now_us);
		self = (ssize_t)q->n_waiters - 1;
	} else {
		arrival_us = q->waiters[self].arrival_us;
		q->waiters[self].lease_us = now_us + SLOT_LEASE_US;
		q->changed = 1;
	}
	rank = lqueue_rank(q, arrival_us);
	start_us = lqueue_start(&c, rank);
	if (start_us - now_us <= window_us && (rank == 0 || start_us == now_us)) {
		if (self >= 0)
			lqueue_drop(q, (size_t)self, false, now_us);
		q->tat_us = c.tat_us + p->interval_us;
		q->at_us = now_us;
		q->changed = 1;
		return lqueue_answer(res, SLOT_ADMIT, start_us - now_us, lqueue_position(&c, rank),
				     now_us);
	}
	if (op == SLOT_RESERVE && lqueue_hold(q, place, pid, arrival_us, now_us) != 0)
		return lqueue_answer(res, SLOT_REFUSE, start_us - now_us,
				     lqueue_position(&c, rank), now_us);
	return lqueue_answer(res, SLOT_QUEUED, start_us - now_us, lqueue_position(&c, rank),
			     now_us);
}
