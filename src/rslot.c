/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/rslot.h"

#include <stdio.h>
#include <string.h>

#include "flowslot/countdown.h"
#include "flowslot/fstime.h"
#include "flowslot/key.h"
#include "flowslot/log.h"
#include "flowslot/ncache.h"
#include "flowslot/rnode.h"

#define RSLOT_REDIRECTS_MAX 3
/* A decision through sentinels or redirects takes at most this many timeouts in all. */
#define RSLOT_BUDGET_TIMEOUTS 4
/* How long a master found through the sentinels is used without asking them again: bounds how
   long a host can stay with a master the sentinels have left (a partition). */
#define RSLOT_MASTER_CACHE_S 60
/* Likewise for the node remembered for a cluster hash slot: after a failover or a reshard,
   a host comes back to the seeds within a minute, at the cost of one redirect a minute. */
#define RSLOT_SLOT_CACHE_S 60

int rslot_read_reply(const redisReply *r, enum slot_op op, const struct slot_params *p,
		     struct slot_result *res, const char **why)
{
	long long v[SLOT_ANSWER_MAX];

	if (r->type != REDIS_REPLY_ARRAY || r->elements > SLOT_ANSWER_MAX) {
		*why = slot_answer_shape(op);
		return -1;
	}
	for (size_t i = 0; i < r->elements; i++) {
		if (r->element[i]->type != REDIS_REPLY_INTEGER) {
			*why = "not an array of integers";
			return -1;
		}
		v[i] = r->element[i]->integer;
	}
	return slot_read_answer(v, r->elements, op, p, res, why);
}

/* One attempt on one node, its answer checked against what the script was given (a
   reservation asked again gives what is left of max_wait): a garbage reply fails the node like
   any other error. */
static enum rnode_step rslot_try(struct rnode_call *call, const struct rnode_target *t,
				 struct slot_result *res, struct rnode_hop *hop)
{
	redisReply *r = NULL;
	const char *why;
	enum rnode_step step = rnode_attempt(call, t, &r, hop);
	struct slot_params given = *call->p;

	given.max_wait_us = call->max_wait_us;
	if (step == RNODE_DONE && rslot_read_reply(r, call->op, &given, res, &why) != 0) {
		rnode_fail(call, "garbage reply to the script", why);
		step = RNODE_FAILED;
	}
	freeReplyObject(r);
	return step;
}

/* Remembers node in the node cache; only a hint, so a failure is only traced. */
static void rslot_remember(const struct rnode_call *call, const char *name,
			   const struct url_node *node)
{
	if (ncache_put(call->o->state_dir, name, node) != 0 && call->o->debug)
		log_msg(call->pamh, LOG_DEBUG, "node cache: cannot write %s/%s: %m",
			call->o->state_dir, name);
}

/* The nodes that failed this login, so that none is tried twice. */
struct rslot_failed {
	struct url_node nodes[URL_NODES_MAX + RSLOT_REDIRECTS_MAX + 1];
	int n;
};

static bool rslot_has_failed(const struct rslot_failed *f, const struct url_node *node)
{
	for (int i = 0; i < f->n; i++)
		if (rnode_same(&f->nodes[i], node))
			return true;
	return false;
}

static void rslot_add_failed(struct rslot_failed *f, const struct url_node *node)
{
	if (f->n < (int)(sizeof(f->nodes) / sizeof(f->nodes[0])))
		f->nodes[f->n++] = *node;
}

/* Sentinel: the master this host used in the last RSLOT_MASTER_CACHE_S, if ROLE still says
   master; else the sentinels, in order, each answer checked with ROLE. A node that failed is
   not tried again. */
static enum rnode_step rslot_reserve_sentinel(struct rnode_call *call, struct slot_result *res)
{
	const struct opt *o = call->o;
	struct rnode_target t = { .check_role = true };
	struct rslot_failed failed = { .n = 0 };
	struct url_node cached, master;
	char name[NCACHE_NAME_MAX];

	ncache_name(&o->url, "master", name, sizeof(name));
	if (ncache_get(o->state_dir, name, RSLOT_MASTER_CACHE_S, &cached) == 0) {
		t.node = &cached;
		if (rslot_try(call, &t, res, NULL) == RNODE_DONE)
			return RNODE_DONE;
		rslot_add_failed(&failed, &cached);
	}
	for (int i = 0; i < o->url.n_nodes; i++) {
		if (rnode_ask_sentinel(call, &o->url.nodes[i], &master) != 0 ||
		    rslot_has_failed(&failed, &master))
			continue;
		t.node = &master;
		if (rslot_try(call, &t, res, NULL) == RNODE_DONE) {
			rslot_remember(call, name, &master);
			return RNODE_DONE;
		}
		rslot_add_failed(&failed, &master);
	}
	rnode_err(call, "sentinel: no master to use: %s",
		  failed.n > 0 ? "every one named failed" : "no sentinel named one");
	return RNODE_FAILED;
}

/* Cluster: the node this host saw serve the key's slot in the last RSLOT_SLOT_CACHE_S, else
   the seeds in order; MOVED and ASK are followed, up to RSLOT_REDIRECTS_MAX. A node that
   fails is replaced by the next seed not yet tried. */
static enum rnode_step rslot_reserve_cluster(struct rnode_call *call, struct slot_result *res,
					     int *redirects)
{
	const struct opt *o = call->o;
	struct rnode_target t = { 0 };
	struct rslot_failed failed = { .n = 0 };
	struct url_node cached, hop_node, owner;
	struct rnode_hop hop;
	char name[NCACHE_NAME_MAX], slot[8];
	bool have, owner_known = false;
	int seed = 0;

	snprintf(slot, sizeof(slot), "%d", key_hash_slot(call->key));
	ncache_name(&o->url, slot, name, sizeof(name));
	have = ncache_get(o->state_dir, name, RSLOT_SLOT_CACHE_S, &cached) == 0;
	t.node = have ? &cached : &o->url.nodes[seed++];
	for (;;) {
		switch (rslot_try(call, &t, res, &hop)) {
		case RNODE_DONE:
			/* The slot's owner: this node, or after an ASK the one MOVED named. */
			if (!t.asking) {
				owner = *t.node;
				owner_known = true;
			}
			if (owner_known && (!have || !rnode_same(&owner, &cached)))
				rslot_remember(call, name, &owner);
			return RNODE_DONE;
		case RNODE_REDIRECT:
			if (rslot_has_failed(&failed, &hop.node)) {
				rnode_fail(call, "redirect", "to a node that failed already");
				break;
			}
			if (++*redirects > RSLOT_REDIRECTS_MAX) {
				rnode_fail(call, "redirect", "more than 3 redirects: giving up");
				return RNODE_FAILED;
			}
			if (!hop.ask) {
				owner = hop.node;
				owner_known = true;
			}
			hop_node = hop.node;
			t.node = &hop_node;
			t.asking = hop.ask;
			continue;
		default:
			rslot_add_failed(&failed, t.node);
			break;
		}
		while (seed < o->url.n_nodes && rslot_has_failed(&failed, &o->url.nodes[seed]))
			seed++;
		if (seed == o->url.n_nodes)
			return RNODE_FAILED;
		t.node = &o->url.nodes[seed++];
		t.asking = false;
	}
}

/* One decision as the url's backend makes it. */
static enum rnode_step rslot_decide(struct rnode_call *call, struct slot_result *res,
				    int *redirects)
{
	const struct rnode_target direct = { 0 };

	switch (call->o->url.backend) {
	case URL_BACKEND_SENTINEL:
		return rslot_reserve_sentinel(call, res);
	case URL_BACKEND_CLUSTER:
		return rslot_reserve_cluster(call, res, redirects);
	default:
		return rslot_try(call, &direct, res, NULL);
	}
}

static enum slot_verdict rslot_turn_at(const pam_handle_t *pamh, const struct opt *o,
				       const struct rslot_turn *turn, enum slot_op op,
				       const char *key, const struct slot_place *place,
				       struct slot_result *res, char *where, size_t wheresz);

enum slot_verdict rslot_call(const pam_handle_t *pamh, const struct opt *o, enum slot_op op,
			     const char *key, const struct slot_place *place,
			     struct slot_result *res)
{
	return rslot_call_at(pamh, o, op, key, place, res, NULL, 0);
}

enum slot_verdict rslot_turn_call(const pam_handle_t *pamh, const struct opt *o,
				  const struct rslot_turn *turn, enum slot_op op, const char *key,
				  const struct slot_place *place, struct slot_result *res)
{
	return rslot_turn_at(pamh, o, turn, op, key, place, res, NULL, 0);
}

enum slot_verdict rslot_call_at(const pam_handle_t *pamh, const struct opt *o, enum slot_op op,
				const char *key, const struct slot_place *place,
				struct slot_result *res, char *where, size_t wheresz)
{
	const struct rslot_turn own = { .p = o->slot };

	return rslot_turn_at(pamh, o, &own, op, key, place, res, where, wheresz);
}

void rslot_heard_at_least(const struct opt *o, const char *key, int64_t next_us)
{
	char heard[NCACHE_NAME_MAX];

	ncache_heard_name(&o->url, key, heard, sizeof(heard));
	if (fstime_mono_us() + ncache_heard_get(o->state_dir, heard) < next_us)
		(void)ncache_heard_put(o->state_dir, heard, next_us); /* a hint, as every entry */
}

/* The decision for turn; the node that answered into where, if not NULL. */
static enum slot_verdict rslot_turn_at(const pam_handle_t *pamh, const struct opt *o,
				       const struct rslot_turn *turn, enum slot_op op,
				       const char *key, const struct slot_place *place,
				       struct slot_result *res, char *where, size_t wheresz)
{
	struct rnode_call call = { .pamh = pamh,
				   .o = o,
				   .key = key,
				   .op = op,
				   .place = place,
				   .p = &turn->p,
				   .max_wait_us = turn->p.max_wait_us,
				   .said = turn->said };
	enum rnode_step step;
	int redirects = 0, tries = 1;
	int64_t began_us = fstime_mono_us();
	char heard[NCACHE_NAME_MAX];

	/* The next slot this host last heard of, for a schedule found lost (slot.lua, ARGV[12]),
	   and what this answer says of it, for the next login. */
	ncache_heard_name(&o->url, key, heard, sizeof(heard));
	if (op == SLOT_RESERVE || op == SLOT_RENEW)
		call.heard_us = ncache_heard_get(o->state_dir, heard);

	call.budget_end_us = began_us + RSLOT_BUDGET_TIMEOUTS * o->timeout_us;
	if (turn->until_us > 0 && turn->until_us < call.budget_end_us)
		call.budget_end_us = turn->until_us;

	/* A reservation or renewal that timed out (a server slow or stopped, which may carry it
	   out once it goes on) is asked again with the same place id while the budget lasts
	   (never past until_us), with what is left of max_wait: the script answers the place it
	   holds, and makes no second one. Its failures are logged once. */
	while ((step = rslot_decide(&call, res, &redirects)) != RNODE_DONE &&
	       (op == SLOT_RESERVE || op == SLOT_RENEW) && call.timed_out &&
	       fstime_mono_us() < call.budget_end_us) {
		call.timed_out = false;
		call.said = true;
		call.max_wait_us = turn->p.max_wait_us - (fstime_mono_us() - began_us);
		call.max_wait_us = call.max_wait_us > 0 ? call.max_wait_us : 0;
		tries++;
	}
	if (where != NULL)
		snprintf(where, wheresz, "%s", call.where);
	res->tries = tries;
	res->timed_out = call.timed_out;
	if (step != RNODE_DONE)
		return SLOT_UNAVAILABLE;
	/* A renewal's is said by the wait, which knows whose place it is. */
	if (tries > 1 && op == SLOT_RESERVE && !turn->said) {
		char after[32];

		countdown_format(call.replied_us - began_us, after, sizeof(after));
		log_msg(pamh, LOG_NOTICE,
			"%s: the reservation was answered when asked again with the same place "
			"(%d tries over %s)",
			call.where, tries, after);
	}
	res->deadline_us = call.replied_us + res->wait_us;
	if (res->next_us >= 0 &&
	    ncache_heard_put(o->state_dir, heard, call.replied_us + res->next_us) != 0 && o->debug)
		log_msg(pamh, LOG_DEBUG, "heard: cannot keep %s in %s/%s: %m", heard, o->state_dir,
			NCACHE_HEARD_FILE);
	if (o->debug)
		log_msg(pamh, LOG_DEBUG, "%s: decided after %d redirects", call.where, redirects);
	return res->verdict;
}
