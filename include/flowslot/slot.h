/* SPDX-License-Identifier: BSD-3-Clause */
/* What a slot reservation asks and what it answers, whatever the backend. */
#ifndef FLOWSLOT_SLOT_H
#define FLOWSLOT_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct slot_params {
	int64_t interval_us;
	int64_t max_wait_us;
	int64_t burst;
	bool dry_run; /* every admission is committed as a fixed slot: nobody waits */
	/* SLOT_RENEW: how long ago the place arrived, by its last answer (0: not known), so that
	   a schedule that was lost (evicted, a restart without its data) and is made again holds
	   it again at its arrival. */
	int64_t age_us;
};

enum slot_verdict {
	SLOT_ADMIT,	  /* a slot is reserved: wait until deadline_us (0 on Redis) */
	SLOT_QUEUED,	  /* a place is held: renew it, and at deadline_us ask to go in */
	SLOT_REFUSE,	  /* the wait would exceed max_wait: nothing is reserved */
	SLOT_REFUSE_HOST, /* the remote host holds per_host places already */
	SLOT_UNAVAILABLE, /* the backend could not decide; the reason has been logged */
};

/* Near its turn a waiting login renews its place this often, and a place not renewed for
   SLOT_LEASE_US is given up: a login that died there leaves the queue within 5 s. Further back
   the lease fits the wait (slot_lease_us); a renewal that fails is tried again this often. */
#define SLOT_RENEW_US INT64_C(2000000)
#define SLOT_LEASE_US INT64_C(5000000)
/* The longest between two renewals: a dead place far back is dropped within a minute. */
#define SLOT_RENEW_MAX_US INT64_C(60000000)
/* A login first in line whose slot is at most this far off is admitted at once, to go in at
   its slot without another call: its place becomes a fixed slot for its last stretch, and the
   next one's slot follows from it exactly. */
#define SLOT_COMMIT_US SLOT_RENEW_US

/* When to renew a place whose slot is wait_us off (as the call that held or kept it
   answered), on a schedule of interval_us (its own; 0 when not known), counted from when that
   call began: SLOT_RENEW_US near its turn (within two intervals and SLOT_COMMIT_US), else a
   quarter of the wait, within SLOT_RENEW_US and SLOT_RENEW_MAX_US (pam_flowslot(7), "Leases
   that fit the wait"; src/slot.lua's lease_for). */
int64_t slot_renew_us(int64_t wait_us, int64_t interval_us);

/* The lease a call grants that place: its renewal and the margin of the near lease over the
   near renewal (3 s), so that it ends before its slot unless that is at most 5 s off. */
int64_t slot_lease_us(int64_t wait_us, int64_t interval_us);

/* The commit window for p: SLOT_COMMIT_US, or in a dry run max_wait (no less), so that every
   login the queue does not refuse is admitted at once as a fixed slot, and the schedule moves
   on as if it had waited, with no place to renew. */
int64_t slot_commit_us(const struct slot_params *p);

/* What a login asks of the queue on Redis (src/slot.lua). */
enum slot_op {
	SLOT_RESERVE, /* a slot now, or a place in the queue */
	SLOT_RENEW,   /* keep the place; go in if its slot has come. Its max_wait_us is what is
			 left of the login's max_wait: a slot further off refuses it (SLOT_REFUSE)
			 and its place goes, leaving nothing to take back */
	SLOT_LEAVE,   /* give the place up, for a retry of the same login to take back */
	SLOT_PEEK,    /* read the schedule, changing nothing (flowslotctl status, check) */
	SLOT_RESET,   /* empty the schedule; answers what it held, as SLOT_PEEK */
};

/* A login's place in the queue: who holds it, as the script keys it. */
struct slot_place {
	char id[33];   /* 128 random bits in hex: this attempt */
	char who[17];  /* a hash of service, user and remote host: the same login tried again */
	char host[17]; /* a hash of the remote host, "" for none: for per_host */
};

/* Fills p->id with 128 random bits for a new attempt (with no entropy yet, at early boot, the
   pid and the time, which still tell attempts apart). */
void slot_place_id(struct slot_place *p);

struct slot_result {
	enum slot_verdict verdict;
	int64_t wait_us;     /* from the decision to the slot; for a refusal, the wait refused */
	int64_t position;    /* 1 + the logins to be admitted before this one */
	int64_t deadline_us; /* CLOCK_MONOTONIC time of the slot, when admitted or queued */
	/* The settings the schedule decided by (its own: the strictest asked for in the last
	   minute), which may differ from the caller's; 0 when the backend did not say. */
	int64_t sched_interval_us;
	int64_t sched_burst;
	/* SLOT_RESERVE, SLOT_RENEW, SLOT_LEAVE: how far off the schedule's next slot is, and how
	   long ago the place held arrived (0 for none), at the answer; -1 when not said. */
	int64_t next_us;
	int64_t age_us;
	/* SLOT_PEEK and SLOT_RESET only, whose verdict, wait and position are what a login
	   arriving now would get, holding nothing: */
	int64_t waiting;  /* logins not gone in yet: live places, and those admitted to go in
			     later (within the commit window) */
	int64_t since_us; /* since the schedule was last written (an admission); -1: never */
	bool evicts;	  /* SLOT_PEEK: the server may evict keys, the schedule's among them */
	/* A refusal for want of the per-host file's lock within max_wait, its holders coming and
	   going: how much sooner the login would have had to come cannot be told. */
	bool lock_busy;
	/* The per-host store: a refusal because the schedule is full (or too heavy to decide
	   on), how much sooner the login would have had to come not told. */
	bool full;
	/* The per-host store: the call was stopped by this process's own limits (its memory,
	   its file size, its time): this login is refused, whatever the failure policy, and
	   nothing was changed. */
	bool own_limits;
	/* Redis: the calls the decision made, more than 1 when one that timed out was asked
	   again for the same place (0: the per-host store, which asks no server). */
	int tries;
	/* Redis: a try sent the script and ran out of time for its answer: the server may carry
	   it out late. */
	bool timed_out;
};

/* A duration of us microseconds as an option is written, "7s", "1500ms", into buf. */
void slot_duration(int64_t us, char *buf, size_t bufsz);

/* When the schedule decides by settings other than p's (res->sched_interval_us and
   sched_burst, where the backend said), writes them and p's into buf for the log, "the
   schedule keeps interval=7s burst=1, not this stack's interval=3s burst=4", and returns true;
   else false, buf untouched. */
bool slot_settings_differ(const struct slot_params *p, const struct slot_result *res, char *buf,
			  size_t bufsz);

/* The most integers a script's answer holds (peek's eight), and what it may hold. */
#define SLOT_ANSWER_MAX 8

/* What is wrong with an answer to op of the wrong length: "not an array of three, five or
   seven". */
const char *slot_answer_shape(enum slot_op op);

/* Reads the script's answer to op, count integers in v, into res (deadline_us aside): its
   verdict, wait, position, and the schedule's own settings, each checked against what op may
   be answered for p. Returns 0, or -1 with *why. Both backends' answers go through it. */
int slot_read_answer(const long long *v, size_t count, enum slot_op op,
		     const struct slot_params *p, struct slot_result *res, const char **why);

/* The furthest ahead any settings can leave a schedule: max_wait (60 min) + burst (1000) *
   interval (60 min). A stored tat further ahead was not written by us. */
#define SLOT_HORIZON_MAX_US (INT64_C(3600000000) * 1001)

#endif
