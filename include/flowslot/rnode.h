/* SPDX-License-Identifier: BSD-3-Clause */
/* One exchange with one Redis node for one login: a connection with a deadline of its own,
   the commands pipelined in one round trip, and their replies read within bounds. */
#ifndef FLOWSLOT_RNODE_H
#define FLOWSLOT_RNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <security/pam_modules.h>

#include "flowslot/opt.h"
#include "flowslot/slot.h"
#include "flowslot/tls.h"
#include "flowslot/url.h"

/* hiredis 0.14 callocs whatever element count an array header declares: seven
   "*2147483647\r\n" (98 bytes) cost 16 GB each and, freed, some 40 s of CPU. The module's
   real replies have a few elements; the largest is a master's ROLE, an entry per replica. So
   an array may declare at most RNODE_ARRAY_MAX elements, and all the arrays read on one
   connection RNODE_ELEMENTS_MAX between them (a ROLE with RNODE_ARRAY_MAX replicas). */
#define RNODE_ARRAY_MAX 1024
#define RNODE_ELEMENTS_MAX (4 * RNODE_ARRAY_MAX + 16)

/* A reader's reply functions with the caps above, and what the reader has declared so far. */
struct rnode_cap {
	redisReplyObjectFunctions fn;
	void *(*create_array)(const redisReadTask *task, int elements); /* the reader's own */
	long long elements;
	bool refused;
};

/* Puts the caps on reader r, which must not outlive cap; r's own functions do the rest. An
   array past them fails the reader as out of memory, with cap->refused set. */
void rnode_cap_reader(redisReader *r, struct rnode_cap *cap);

/* One login's exchanges with the servers, one connection at a time. */
struct rnode_call {
	const pam_handle_t *pamh;
	const struct opt *o;
	const char *key; /* the schedule */
	enum slot_op op;
	const struct slot_place *place;
	const struct slot_params *p; /* the schedule's settings for this call (rslot_turn) */
	redisContext *c;
	struct tls_conn *tls; /* on c's socket, for the rediss schemes */
	int64_t budget_end_us; /* for the whole decision */
	int64_t deadline_us;   /* for the current connection */
	size_t received;       /* bytes read on the current connection */
	int64_t replied_us;    /* when the script's last reply was read */
	struct rnode_cap cap;  /* on the current connection's reader */
	int64_t max_wait_us;   /* given to the script, and its answer checked against */
	int64_t heard_us;      /* the next slot this host last heard of, from now (ncache) */
	bool script_sent;      /* the current connection sent the script */
	bool timed_out;	       /* an attempt sent the script and ran out of time for its answer */
	bool said;	       /* the decision's errors were logged: log no more */
	char where[URL_HOST_MAX + 32];
	char tls_why[TLS_WHY_MAX]; /* what TLS last failed on */
};

/* Where one attempt at the script goes, and how. */
struct rnode_target {
	const struct url_node *node; /* NULL: the url's own host or socket */
	bool check_role; /* Sentinel: ROLE ahead of the script, and only a master will do */
	bool asking;	 /* Cluster: ASKING ahead of the script, after an ASK */
};

/* What one attempt came to. */
enum rnode_step {
	RNODE_DONE,	/* the script answered */
	RNODE_FAILED,	/* no connection, an error, a replica: logged */
	RNODE_REDIRECT, /* MOVED or ASK, to the node in the hop */
};

/* Where a cluster node sends us. */
struct rnode_hop {
	struct url_node node;
	bool ask; /* ASK: for this one command; MOVED: from now on */
};

/* One attempt at the script: connects to the target, sends [AUTH] [READWRITE] [ROLE]
   [ASKING] EVALSHA [WAIT] in one go (READWRITE to a cluster node), and reads the answers; a
   server that lost the script gets EVAL once. RNODE_DONE leaves the script's reply, not an
   error, in *reply for the caller to free, and call->replied_us when it came. */
enum rnode_step rnode_attempt(struct rnode_call *call, const struct rnode_target *t,
			      redisReply **reply, struct rnode_hop *hop);

/* Asks one sentinel where the master is. Returns 0, or -1 with the reason logged. */
int rnode_ask_sentinel(struct rnode_call *call, const struct url_node *sentinel,
		       struct url_node *master);

/* Errors of one cause (one line's text) are logged at most this often on a host. */
#define RNODE_ERR_PERIOD_US INT64_C(1000000)

/* Logs an error of the exchange at LOG_ERR: unless the login said its outage already
   (o->errors_said) or the decision its errors (call->said), which debug traces at LOG_DEBUG,
   and, for a login (a PAM handle),
   at most once in RNODE_ERR_PERIOD_US on the host for the same text (once_rate, in
   o->state_dir), the next one that is logged saying how many were not. */
void rnode_err(const struct rnode_call *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* rnode_err of "WHERE: what: why", why escaped. */
void rnode_fail(const struct rnode_call *call, const char *what, const char *why);

/* True when a and b are the same address and port. */
bool rnode_same(const struct url_node *a, const struct url_node *b);

#endif
