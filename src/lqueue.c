/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/lqueue.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool lqueue_token(const char *s, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n < max && strspn(s, "0123456789abcdef") == n;
}

/* A WHO or HOST as written: "-" for none. */
static bool lqueue_field(char *s, size_t max)
{
	if (strcmp(s, "-") == 0) {
		s[0] = '\0';
		return true;
	}
	return lqueue_token(s, max);
}

/* What separates the fields of a line: white space, but its end. */
static bool lqueue_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* The next field of the line at *at, after any blanks: its start in *field and its length,
   *at moved past it; 0 at the line's end ('\n' or '\0'), *at left where it was. Nothing is
   read past the line, so a file is parsed in one pass whatever its size. */
static size_t lqueue_next(const char **at, const char **field)
{
	const char *p = *at;
	size_t n = 0;

	while (lqueue_blank(*p))
		p++;
	while (p[n] != '\0' && p[n] != '\n' && !lqueue_blank(p[n]))
		n++;
	if (n > 0) {
		*field = p;
		*at = p + n;
	}
	return n;
}

/* The next field into buf, NUL-terminated: one of 1 to bufsz - 1 bytes. */
static bool lqueue_next_copy(const char **at, char *buf, size_t bufsz)
{
	const char *f;
	size_t n = lqueue_next(at, &f);

	if (n == 0 || n >= bufsz)
		return false;
	memcpy(buf, f, n);
	buf[n] = '\0';
	return true;
}

/* The number that field of n bytes starts with, in base 10, and how many bytes it takes (0
   for none, or one out of range). */
static size_t lqueue_number(const char *f, size_t n, int64_t *v)
{
	char *end;
	long long x;

	if (n == 0 || !(isdigit((unsigned char)f[0]) ||
			((f[0] == '-' || f[0] == '+') && n > 1 && isdigit((unsigned char)f[1]))))
		return 0;
	errno = 0;
	x = strtoll(f, &end, 10); /* stops at the field's end: a blank, '\n' or '\0' */
	if (errno != 0)
		return 0;
	*v = (int64_t)x;
	return (size_t)(end - f);
}

/* The next field, which must be a number and nothing else. */
static bool lqueue_next_number(const char **at, int64_t *v)
{
	const char *f;
	size_t n = lqueue_next(at, &f);

	return n > 0 && lqueue_number(f, n, v) == n;
}

/* "w ID WHO HOST ARRIVAL LEASE PID", and " t" when taken back; the line's last field is
   followed by its newline at once. */
static bool lqueue_read_waiter(const char *line, struct lqueue_waiter *w)
{
	const char *at = line + 1;
	int64_t pid;

	memset(w, 0, sizeof(*w));
	if (!lqueue_blank(*at) || !lqueue_next_copy(&at, w->id, sizeof(w->id)) ||
	    !lqueue_next_copy(&at, w->who, sizeof(w->who)) ||
	    !lqueue_next_copy(&at, w->host, sizeof(w->host)) ||
	    !lqueue_next_number(&at, &w->arrival_us) || !lqueue_next_number(&at, &w->lease_us) ||
	    !lqueue_next_number(&at, &pid) || pid <= 0 || pid > INT_MAX ||
	    !lqueue_token(w->id, sizeof(w->id)) || !lqueue_field(w->who, sizeof(w->who)) ||
	    strspn(w->host, "0123456789abcdef-") != strlen(w->host))
		return false;
	w->pid = (pid_t)pid;
	if (strcmp(w->host, "-") == 0)
		w->host[0] = '\0';
	w->taken_back = strncmp(at, " t\n", 3) == 0;
	return w->taken_back || *at == '\n';
}

/* "g WHO HOST ARRIVAL LEFT", or an earlier version's "g WHO ARRIVAL END"; the last field is
   followed by the line's newline at once. */
static bool lqueue_read_ghost(const char *line, struct lqueue_ghost *g)
{
	const char *at = line + 1, *next;
	int64_t end_us;

	memset(g, 0, sizeof(*g));
	if (!lqueue_blank(*at) || !lqueue_next_copy(&at, g->who, sizeof(g->who)) ||
	    !lqueue_token(g->who, sizeof(g->who)))
		return false;
	next = at;
	if (lqueue_next_copy(&next, g->host, sizeof(g->host)) &&
	    lqueue_field(g->host, sizeof(g->host)) && lqueue_next_number(&next, &g->arrival_us) &&
	    lqueue_next_number(&next, &g->left_us) && *next == '\n')
		return true;
	g->host[0] = '\0';
	if (!lqueue_next_number(&at, &g->arrival_us) || !lqueue_next_number(&at, &end_us) ||
	    *at != '\n' || end_us < INT64_MIN + LQUEUE_GHOST_US)
		return false;
	g->left_us = end_us - LQUEUE_GHOST_US;
	return true;
}

/* "tat at interval burst", "tat at" or a bare tat, on the first line: as many numbers as
   begin it; settings that cannot be read are none. */
static void lqueue_read_head(struct lqueue *q, const char *text)
{
	int64_t v[4] = { 0 };
	const char *at = text, *f;
	size_t n, len;
	int got = 0;

	while (got < 4 && (n = lqueue_next(&at, &f)) > 0 &&
	       (len = lqueue_number(f, n, &v[got])) > 0) {
		got++;
		if (len < n) /* a number that more follows, as in "12x" */
			break;
	}
	q->tat_us = got >= 1 ? v[0] : 0;
	q->at_us = got >= 2 ? v[1] : 0;
	q->interval_us = q->burst = 0;
	if (got == 4 && v[2] > 0 && v[3] > 0) {
		q->interval_us = v[2];
		q->burst = v[3];
	}
}

/* Keeps the latest LQUEUE_GHOSTS_MAX ghosts: one past that replaces the oldest read. */
static void lqueue_keep_ghost(struct lqueue *q, const struct lqueue_ghost *g, size_t seen)
{
	if (q->n_ghosts < LQUEUE_GHOSTS_MAX) {
		q->ghosts[q->n_ghosts++] = *g;
		return;
	}
	q->ghosts[seen % LQUEUE_GHOSTS_MAX] = *g;
	q->changed = 1;
}

int lqueue_read(struct lqueue *q, const char *text)
{
	size_t ghosts_seen = 0;

	memset(q, 0, sizeof(*q));
	q->waiters = calloc(LQUEUE_MAX, sizeof(*q->waiters));
	q->ghosts = calloc(LQUEUE_GHOSTS_MAX, sizeof(*q->ghosts));
	if (q->waiters == NULL || q->ghosts == NULL) {
		lqueue_free(q);
		return -1;
	}
	lqueue_read_head(q, text);
	for (const char *line = strchr(text, '\n'); line != NULL; line = strchr(line, '\n')) {
		struct lqueue_waiter w;
		struct lqueue_ghost g;

		line++;
		if (line[0] == 'w' && lqueue_read_waiter(line, &w) && q->n_waiters < LQUEUE_MAX)
			q->waiters[q->n_waiters++] = w;
		else if (line[0] == 'g' && lqueue_read_ghost(line, &g))
			lqueue_keep_ghost(q, &g, ghosts_seen++);
	}
	return 0;
}

static size_t lqueue_print(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static size_t lqueue_print(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return n < 0 ? 0 : (size_t)n;
}

long lqueue_write(const struct lqueue *q, char **out)
{
	size_t cap = 128 + q->n_waiters * 128 + q->n_ghosts * 96, len = 0;
	char *buf = malloc(cap);

	if (buf == NULL)
		return -1;
	len += lqueue_print(buf, cap, "%" PRId64 " %" PRId64, q->tat_us, q->at_us);
	if (q->interval_us > 0)
		len += lqueue_print(buf + len, cap - len, " %" PRId64 " %" PRId64, q->interval_us,
				    q->burst);
	len += lqueue_print(buf + len, cap - len, "\n");
	for (size_t i = 0; i < q->n_waiters; i++) {
		const struct lqueue_waiter *w = &q->waiters[i];

		len += lqueue_print(
		    buf + len, cap - len, "w %s %s %s %" PRId64 " %" PRId64 " %ld%s\n", w->id,
		    w->who[0] != '\0' ? w->who : "-", w->host[0] != '\0' ? w->host : "-",
		    w->arrival_us, w->lease_us, (long)w->pid, w->taken_back ? " t" : "");
	}
	for (size_t i = 0; i < q->n_ghosts; i++) {
		const struct lqueue_ghost *g = &q->ghosts[i];

		len +=
		    lqueue_print(buf + len, cap - len, "g %s %s %" PRId64 " %" PRId64 "\n", g->who,
				 g->host[0] != '\0' ? g->host : "-", g->arrival_us, g->left_us);
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

/* WHO's ghost, or -1. */
static ssize_t lqueue_ghost_of(const struct lqueue *q, const char *who)
{
	for (size_t i = 0; who[0] != '\0' && i < q->n_ghosts; i++) {
		if (strcmp(q->ghosts[i].who, who) == 0)
			return (ssize_t)i;
	}
	return -1;
}

/* HOST's ghosts, but for WHO's own (which it is about to take back). */
static int lqueue_ghosts_of(const struct lqueue *q, const char *host, const char *who)
{
	int n = 0;

	for (size_t i = 0; i < q->n_ghosts; i++)
		n += strcmp(q->ghosts[i].host, host) == 0 && strcmp(q->ghosts[i].who, who) != 0;
	return n;
}

/* Remembers w's place, given up at left_us, for a retry of the same login ("Ghosts"): not for a
   place itself taken back, nor past the caps. */
static void lqueue_add_ghost(struct lqueue *q, const struct lqueue_waiter *w, int64_t left_us)
{
	ssize_t old = lqueue_ghost_of(q, w->who);
	struct lqueue_ghost *g;

	if (w->who[0] == '\0' || w->taken_back)
		return;
	if (old >= 0)
		lqueue_forget_ghost(q, (size_t)old);
	if (q->n_ghosts == LQUEUE_GHOSTS_MAX ||
	    (w->host[0] != '\0' && lqueue_ghosts_of(q, w->host, "") >= LQUEUE_HOST_GHOSTS_MAX))
		return;
	g = &q->ghosts[q->n_ghosts++];
	strcpy(g->who, w->who);
	strcpy(g->host, w->host);
	g->arrival_us = w->arrival_us;
	g->left_us = left_us;
	q->changed = 1;
}

/* Removes waiter i; its place is remembered as a ghost, given up at left_us, when give_up. */
static void lqueue_drop(struct lqueue *q, size_t i, bool give_up, int64_t left_us)
{
	struct lqueue_waiter w = q->waiters[i];

	memmove(&q->waiters[i], &q->waiters[i + 1], (q->n_waiters - i - 1) * sizeof(w));
	q->n_waiters--;
	q->changed = 1;
	if (give_up)
		lqueue_add_ghost(q, &w, left_us);
}

/* The waiter first in line (the earliest arrival), or -1. */
static ssize_t lqueue_first(const struct lqueue *q)
{
	ssize_t first = -1;

	for (size_t i = 0; i < q->n_waiters; i++) {
		if (first < 0 || q->waiters[i].arrival_us < q->waiters[first].arrival_us)
			first = (ssize_t)i;
	}
	return first;
}

/* The stored tat, moved back as far as the clock went back, but not brought up to now: when
   a login left, its slot was reckoned from it. A garbled one is now. */
static int64_t lqueue_stored_tat(const struct lqueue *q, int64_t now_us)
{
	/* A bare tat (no at), as versions before 0.2 wrote it, reads as written now. */
	int64_t tat_us = q->tat_us, at_us = q->at_us > 0 ? q->at_us : now_us;

	if (tat_us < at_us || tat_us - at_us > SLOT_HORIZON_MAX_US)
		return now_us;
	return at_us > now_us ? tat_us - (at_us - now_us) : tat_us;
}

/* "A lapsed place at its slot counts as admitted": the waiter first in line that left (lease out,
   process dead) once its slot had come may have gone in blind at it: it counts as admitted there,
   and leaves no ghost. Returns whether it did. */
static bool lqueue_left_admitted(struct lqueue *q, const struct slot_params *s, size_t i,
				 int64_t now_us)
{
	int64_t tat_us = lqueue_stored_tat(q, now_us), left_us = q->waiters[i].lease_us;

	if (left_us > now_us)
		left_us = now_us;
	if (tat_us - (s->burst - 1) * s->interval_us > left_us)
		return false;
	q->tat_us = tat_us + s->interval_us;
	/* Never after tat: a tat behind its write reads as now, and would move the next lapsed
	   waiter's slot past its lease. */
	q->at_us = q->tat_us < now_us ? q->tat_us : now_us;
	lqueue_drop(q, i, false, now_us);
	return true;
}

/* Whether waiter i has left: its lease out or its process gone. The caller's own place
   (self_id) has not: it is renewing or leaving now. */
static bool lqueue_gone(const struct lqueue *q, size_t i, const char *self_id, int64_t now_us)
{
	return strcmp(q->waiters[i].id, self_id) != 0 && !lqueue_alive(&q->waiters[i], now_us);
}

/* Drops the waiters that left ("A lapsed place at its slot counts as admitted" for those first in
   line, ghosts for the others) and the ghosts whose time has passed. */
static void lqueue_purge(struct lqueue *q, const struct slot_params *s, const char *self_id,
			 int64_t now_us)
{
	ssize_t first;

	while ((first = lqueue_first(q)) >= 0 && lqueue_gone(q, (size_t)first, self_id, now_us)) {
		int64_t left_us = q->waiters[first].lease_us;

		if (q->line || !lqueue_left_admitted(q, s, (size_t)first, now_us))
			lqueue_drop(q, (size_t)first, true, left_us < now_us ? left_us : now_us);
	}
	for (size_t i = q->n_waiters; i-- > 0;) {
		int64_t left_us = q->waiters[i].lease_us;

		if (lqueue_gone(q, i, self_id, now_us))
			lqueue_drop(q, i, true, left_us < now_us ? left_us : now_us);
	}
	for (size_t i = q->n_ghosts; i-- > 0;) {
		if (q->ghosts[i].left_us + LQUEUE_GHOST_US <= now_us)
			lqueue_forget_ghost(q, i);
	}
}

static size_t lqueue_rank(const struct lqueue *q, int64_t arrival_us)
{
	size_t rank = 0;

	for (size_t i = 0; i < q->n_waiters; i++)
		rank += q->waiters[i].arrival_us < arrival_us;
	return rank;
}

/* Whether a live place arrived at or after since_us: someone queued while a ghost was away. */
static bool lqueue_arrived_since(const struct lqueue *q, int64_t since_us)
{
	for (size_t i = 0; i < q->n_waiters; i++) {
		if (q->waiters[i].arrival_us >= since_us)
			return true;
	}
	return false;
}

static ssize_t lqueue_find(const struct lqueue *q, const char *id)
{
	for (size_t i = 0; i < q->n_waiters; i++) {
		if (strcmp(q->waiters[i].id, id) == 0)
			return (ssize_t)i;
	}
	return -1;
}

/* A place to hold. */
struct lqueue_hold {
	const struct slot_place *pl;
	pid_t pid;
	int64_t arrival_us;
	bool taken_back;
};

/* Holds h's place until lease_us. */
static ssize_t lqueue_hold(struct lqueue *q, const struct lqueue_hold *h, int64_t lease_us)
{
	struct lqueue_waiter *w;

	if (q->n_waiters == LQUEUE_MAX)
		return -1;
	w = &q->waiters[q->n_waiters++];
	strcpy(w->id, h->pl->id);
	strcpy(w->who, h->pl->who);
	strcpy(w->host, h->pl->host);
	w->arrival_us = h->arrival_us;
	w->lease_us = lease_us;
	w->pid = h->pid;
	w->taken_back = h->taken_back;
	q->changed = 1;
	return (ssize_t)q->n_waiters - 1;
}

static int lqueue_places_of(const struct lqueue *q, const char *host)
{
	int n = 0;

	for (size_t i = 0; i < q->n_waiters; i++)
		n += strcmp(q->waiters[i].host, host) == 0;
	return n;
}

/* The schedule's arithmetic, as slot.lua's start_of, position and admit, by the settings in
   p (the schedule's own). */
struct lqueue_clock {
	const struct slot_params *p;
	int64_t tat_us, now_us, window_us;
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

/* The end of the lease granted now to a place whose slot is at start_us: it fits the wait
   (slot_lease_us, as slot.lua's lease_for); the pressure hold's line keeps SLOT_LEASE_US. */
static int64_t lqueue_lease_end(const struct lqueue *q, const struct lqueue_clock *c,
				int64_t start_us)
{
	if (q->line)
		return c->now_us + SLOT_LEASE_US;
	return c->now_us + slot_lease_us(start_us - c->now_us, c->p->interval_us);
}

/* Whether the login of this rank, whose slot is at start_us, is admitted now. */
static bool lqueue_due(const struct lqueue_clock *c, size_t rank, int64_t start_us)
{
	return start_us - c->now_us <= c->window_us && (rank == 0 || start_us == c->now_us);
}

static enum slot_verdict lqueue_answer(struct slot_result *res, enum slot_verdict v,
				       const struct lqueue_clock *c, int64_t start_us, size_t rank)
{
	res->verdict = v;
	res->wait_us = start_us - c->now_us;
	res->position = lqueue_position(c, rank);
	res->deadline_us = start_us;
	return v;
}

/* peek and reset, as slot.lua's: what a login now would get, holding nothing, and every login
   not gone in yet ("Waiting counts everyone"): the live waiters and those admitted to go in
   later. reset then empties the queue; its waiters hold places anew at their renewal. */
static enum slot_verdict lqueue_view(struct lqueue *q, const struct lqueue_clock *c,
				     enum slot_op op, struct slot_result *res)
{
	int64_t start_us = lqueue_start(c, q->n_waiters);
	enum slot_verdict v = SLOT_QUEUED;

	if (start_us - c->now_us > c->p->max_wait_us)
		v = SLOT_REFUSE;
	else if (lqueue_due(c, q->n_waiters, start_us))
		v = SLOT_ADMIT;
	res->since_us = q->at_us > 0 && q->at_us <= c->now_us ? c->now_us - q->at_us : -1;
	lqueue_answer(res, v, c, start_us, q->n_waiters);
	res->waiting = res->position - 1;
	if (op == SLOT_RESET) {
		q->n_waiters = q->n_ghosts = 0;
		q->tat_us = q->at_us = q->interval_us = q->burst = 0;
		q->changed = 1;
	}
	return v;
}

/* Admits the login of this rank at start_us: the schedule moves on by one interval, and its
   place (self, or -1 for none) goes. */
static enum slot_verdict lqueue_admit(struct lqueue *q, const struct lqueue_clock *c, ssize_t self,
				      size_t rank, struct slot_result *res)
{
	int64_t start_us = lqueue_start(c, rank);

	if (self >= 0)
		lqueue_drop(q, (size_t)self, false, c->now_us);
	q->tat_us = c->tat_us + c->p->interval_us;
	q->at_us = c->now_us;
	q->changed = 1;
	return lqueue_answer(res, SLOT_ADMIT, c, start_us, rank);
}

/* reserve ("Ghosts"): WHO's ghost is taken back at its arrival if nobody queued since it left,
   else at the back; either way the place is marked taken back, and the ghost consumed. A
   refusal changes nothing. */
static enum slot_verdict lqueue_reserve(struct lqueue *q, const struct lqueue_clock *c,
					const struct lqueue_hold *given, int per_host,
					struct slot_result *res)
{
	const struct slot_place *pl = given->pl;
	struct lqueue_hold h = *given;
	ssize_t ghost = lqueue_ghost_of(q, pl->who);
	size_t rank = lqueue_rank(q, c->now_us);
	int64_t start_us;

	if (per_host > 0 && pl->host[0] != '\0' &&
	    lqueue_places_of(q, pl->host) + lqueue_ghosts_of(q, pl->host, pl->who) >= per_host)
		return lqueue_answer(res, SLOT_REFUSE_HOST, c, c->now_us, rank);
	h.arrival_us = c->now_us;
	h.taken_back = ghost >= 0;
	if (ghost >= 0 && !lqueue_arrived_since(q, q->ghosts[ghost].left_us))
		h.arrival_us = q->ghosts[ghost].arrival_us;
	rank = lqueue_rank(q, h.arrival_us);
	start_us = lqueue_start(c, rank);
	if (start_us - c->now_us > c->p->max_wait_us || q->n_waiters == LQUEUE_MAX)
		return lqueue_answer(res, SLOT_REFUSE, c, start_us, rank);
	if (ghost >= 0)
		lqueue_forget_ghost(q, (size_t)ghost);
	if (lqueue_due(c, rank, start_us))
		return lqueue_admit(q, c, -1, rank, res);
	lqueue_hold(q, &h, lqueue_lease_end(q, c, start_us));
	return lqueue_answer(res, SLOT_QUEUED, c, start_us, rank);
}

/* The renewing login's place: kept (the caller grants its new lease, which fits its new
   wait); or, its lease out while it lived on, taken back from WHO's ghost as a retry would
   ("Ghosts": at its arrival if nobody queued since it left), or held anew at the back. -1 when the
   queue is full. */
static ssize_t lqueue_keep(struct lqueue *q, const struct lqueue_hold *given, int64_t now_us)
{
	ssize_t self = lqueue_find(q, given->pl->id), ghost;
	struct lqueue_hold h = *given;

	if (self >= 0) {
		q->changed = 1;
		return self;
	}
	ghost = lqueue_ghost_of(q, h.pl->who);
	h.arrival_us = now_us;
	h.taken_back = ghost >= 0;
	if (ghost >= 0) {
		if (!lqueue_arrived_since(q, q->ghosts[ghost].left_us))
			h.arrival_us = q->ghosts[ghost].arrival_us;
		lqueue_forget_ghost(q, (size_t)ghost);
	}
	return lqueue_hold(q, &h, now_us + SLOT_LEASE_US);
}

/* renew: admitted at its slot when near; refused, its place dropped and no ghost left, when
   that slot is further off than what is left of max_wait ("max_wait bounds the whole wait"). */
static enum slot_verdict lqueue_renew(struct lqueue *q, const struct lqueue_clock *c,
				      const struct lqueue_hold *h, struct slot_result *res)
{
	ssize_t self = lqueue_keep(q, h, c->now_us);
	size_t rank;
	int64_t start_us;

	if (self < 0) /* a full queue: it goes in, as before it held a place */
		return lqueue_answer(res, SLOT_ADMIT, c, c->now_us, 0);
	rank = lqueue_rank(q, q->waiters[self].arrival_us);
	start_us = lqueue_start(c, rank);
	if (start_us - c->now_us > c->p->max_wait_us) {
		lqueue_drop(q, (size_t)self, false, c->now_us);
		return lqueue_answer(res, SLOT_REFUSE, c, start_us, rank);
	}
	if (lqueue_due(c, rank, start_us))
		return lqueue_admit(q, c, self, rank, res);
	q->waiters[self].lease_us = lqueue_lease_end(q, c, start_us);
	return lqueue_answer(res, SLOT_QUEUED, c, start_us, rank);
}

/* The settings the schedule decides by ("The schedule's own settings"): the strictest seen since it
   was made (longest interval, smallest burst), with the caller's; the pressure hold's line keeps
   none. */
static void lqueue_settings(const struct lqueue *q, const struct slot_params *p,
			    struct slot_params *s)
{
	*s = *p;
	if (q->line || q->interval_us <= 0)
		return;
	if (q->interval_us > s->interval_us)
		s->interval_us = q->interval_us;
	if (q->burst < s->burst)
		s->burst = q->burst;
}

/* Whether the schedule holds nothing and its time has passed: made afresh by the next
   caller's settings. */
static bool lqueue_empty(const struct lqueue *q, int64_t now_us)
{
	return q->n_waiters == 0 && q->n_ghosts == 0 && lqueue_stored_tat(q, now_us) <= now_us;
}

bool lqueue_idle(struct lqueue *q, int64_t now_us)
{
	struct slot_params s = { .interval_us = 1, .burst = 1 };

	lqueue_settings(q, &s, &s);
	lqueue_purge(q, &s, "", now_us);
	return lqueue_empty(q, now_us);
}

/* Brings the stored schedule to now: a clock that went back moves it back as far (kept, or
   every renewal would find the same wait until the clock caught up); lapsed waiters and
   ghosts go; the settings to decide by are put in s, and stored when they change. */
static void lqueue_prepare(struct lqueue *q, const struct slot_params *p, const char *self_id,
			   int64_t now_us, struct slot_params *s)
{
	if (q->at_us > now_us) {
		q->tat_us = slot_recover(now_us, q->tat_us, q->at_us);
		q->at_us = now_us;
		q->changed = 1;
	}
	lqueue_settings(q, p, s);
	lqueue_purge(q, s, self_id, now_us);
	if (lqueue_empty(q, now_us))
		*s = *p;
	if (!q->line && (q->interval_us != s->interval_us || q->burst != s->burst)) {
		q->interval_us = s->interval_us;
		q->burst = s->burst;
		q->changed = 1;
	}
}

enum slot_verdict lqueue_step(struct lqueue *q, const struct slot_params *p, int per_host,
			      enum slot_op op, const struct slot_place *place, pid_t pid,
			      int64_t now_us, int64_t window_us, struct slot_result *res)
{
	struct slot_params s;
	struct lqueue_clock c = { .p = &s, .now_us = now_us, .window_us = window_us };
	const struct lqueue_hold h = { .pl = place, .pid = pid };
	ssize_t self;

	lqueue_prepare(q, p, op == SLOT_RESERVE ? "" : place->id, now_us, &s);
	/* A bare tat (no at), as versions before 0.2 wrote it, reads as written now. */
	c.tat_us = slot_recover(now_us, q->tat_us, q->at_us > 0 ? q->at_us : now_us);
	res->sched_interval_us = s.interval_us;
	res->sched_burst = s.burst;
	if (op == SLOT_PEEK || op == SLOT_RESET)
		return lqueue_view(q, &c, op, res);
	if (op == SLOT_RESERVE)
		return lqueue_reserve(q, &c, &h, per_host, res);
	if (op == SLOT_RENEW)
		return lqueue_renew(q, &c, &h, res);
	self = lqueue_find(q, place->id);
	if (self >= 0)
		lqueue_drop(q, (size_t)self, true, now_us);
	res->verdict = SLOT_ADMIT;
	res->wait_us = 0;
	res->position = 1;
	res->deadline_us = now_us;
	return SLOT_ADMIT;
}
