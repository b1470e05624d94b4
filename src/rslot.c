#include "flowslot/rslot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>

#include "flowslot/fstime.h"
#include "flowslot/key.h"
#include "flowslot/log.h"
#include "flowslot/ncache.h"
#include "flowslot/str.h"
#include "slot_lua.h" /* RSLOT_SCRIPT and RSLOT_SCRIPT_SHA1, made from src/slot.lua */

#define RSLOT_POSITION_MAX INT64_C(1000000000)
#define RSLOT_REPLY_MAX 65536 /* bytes read from one server; real replies are under 200 */
#define RSLOT_REDIRECTS_MAX 3
/* A decision through sentinels or redirects takes at most this many timeouts in all. */
#define RSLOT_BUDGET_TIMEOUTS 4
/* How long a master found through the sentinels is used without asking them again: bounds how
   long a host can stay with a master the sentinels have left (a partition). */
#define RSLOT_MASTER_CACHE_S 60

/* One login's exchanges with the servers, one connection at a time. */
struct rslot_call {
	const pam_handle_t *pamh;
	const struct opt *o;
	const char *key;
	redisContext *c;
	int64_t budget_end_us; /* for the whole decision */
	int64_t deadline_us;   /* for the current connection */
	size_t received;       /* bytes read on the current connection */
	int redirects;	       /* MOVED and ASK followed */
	char where[OPT_HOST_MAX + 32];
};

/* Where one attempt at the script goes, and how. */
struct rslot_target {
	const struct opt_node *node; /* NULL: the url's own host or socket */
	bool check_role; /* Sentinel: ROLE ahead of the script, and only a master will do */
	bool asking;	 /* Cluster: ASKING ahead of the script, after an ASK */
};

/* What one attempt came to. */
enum rslot_step {
	RSLOT_DONE,	/* the script answered */
	RSLOT_FAILED,	/* no connection, an error, a replica: logged */
	RSLOT_REDIRECT, /* MOVED or ASK, to the node in the hop */
};

/* Where a cluster node sends us. */
struct rslot_hop {
	struct opt_node node;
	bool ask; /* ASK: for this one command; MOVED: from now on */
};

/* Waits until fd is ready for events, or the call's deadline passes. */
static int rslot_poll(const struct rslot_call *call, short events, const char **why)
{
	for (;;) {
		int64_t left_us = call->deadline_us - fstime_mono_us();
		struct pollfd p = { .fd = call->c->fd, .events = events };
		int n;

		if (left_us <= 0) {
			*why = "timed out";
			return -1;
		}
		n = poll(&p, 1, (int)((left_us + 999) / 1000));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR) {
			*why = "poll failed";
			return -1;
		}
	}
}

/* Sends one command. Not hiredis's own write: without MSG_NOSIGNAL, a server that hangs up
   first (as a full maxclients does) raises SIGPIPE and kills the host process. Commands sent
   one after another without reading are still one round trip. */
static int rslot_send(struct rslot_call *call, int argc, const char **argv, const char **why)
{
	char *cmd = NULL;
	long long len = redisFormatCommandArgv(&cmd, argc, argv, NULL);
	size_t off = 0;
	int rc = 0;

	if (len < 0) {
		*why = "out of memory";
		return -1;
	}
	while (rc == 0 && off < (size_t)len) {
		ssize_t n;

		if (rslot_poll(call, POLLOUT, why) != 0) {
			rc = -1;
			break;
		}
		n = send(call->c->fd, cmd + off, (size_t)len - off, MSG_NOSIGNAL);
		if (n >= 0) {
			off += (size_t)n;
		} else if (errno != EINTR && errno != EAGAIN) {
			*why = errno == EPIPE ? "the server closed the connection" : "send failed";
			rc = -1;
		}
	}
	redisFreeCommand(cmd);
	return rc;
}

/* Reads the next reply. hiredis's own blocking read would bound each read(), not the reply:
   a server that drips bytes could hold the login far past the timeout. */
static int rslot_get_reply(struct rslot_call *call, redisReply **reply, const char **why)
{
	void *r = NULL;
	size_t before;

	for (;;) {
		if (redisGetReplyFromReader(call->c, &r) != REDIS_OK) {
			*why = call->c->errstr;
			return -1;
		}
		if (r != NULL) {
			*reply = r;
			return 0;
		}
		if (rslot_poll(call, POLLIN, why) != 0)
			return -1;
		before = call->c->reader->len;
		if (redisBufferRead(call->c) != REDIS_OK) {
			*why = call->c->errstr;
			return -1;
		}
		/* hiredis takes replies of any size: a broken server could make the host process
		   allocate hundreds of MB within the timeout. Everything read counts, since hiredis
		   turns parsed data into reply objects and drops it from its buffer. */
		call->received += call->c->reader->len - before;
		if (call->received > RSLOT_REPLY_MAX) {
			*why = "reply too large";
			return -1;
		}
	}
}

static void rslot_fail(const struct rslot_call *call, const char *what, const char *why)
{
	char shown[160];

	log_msg(call->pamh, LOG_ERR, "%s: %s: %s", call->where, what,
		log_escape(why, shown, sizeof(shown)));
}

/* Checks a status reply: AUTH's, ASKING's. */
static int rslot_expect_ok(struct rslot_call *call, const char *what)
{
	redisReply *r = NULL;
	const char *why;
	int rc = -1;

	if (rslot_get_reply(call, &r, &why) != 0)
		rslot_fail(call, what, why);
	else if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
		rc = 0;
	else if (r->type == REDIS_REPLY_ERROR)
		rslot_fail(call, what, r->str);
	else
		rslot_fail(call, what, "unexpected reply");
	freeReplyObject(r);
	return rc;
}

/* Connects to node (NULL: the url's own host or socket), with a deadline of its own: timeout,
   or what is left of the decision's budget. */
static int rslot_connect(struct rslot_call *call, const char *role, const struct opt_node *node)
{
	const struct opt_url *u = &call->o->url;
	int64_t now_us = fstime_mono_us();
	struct timeval tv;
	redisContext *c;

	call->deadline_us = now_us + call->o->timeout_us;
	if (call->deadline_us > call->budget_end_us)
		call->deadline_us = call->budget_end_us;
	call->received = 0;
	tv = fstime_timeval(call->deadline_us - now_us);
	if (call->deadline_us <= now_us) {
		log_msg(call->pamh, LOG_ERR, "%s: out of time (%d timeouts) before trying %s:%d",
			role, RSLOT_BUDGET_TIMEOUTS, node ? node->host : u->host,
			node ? node->port : u->port);
		return -1;
	}
	if (node == NULL && u->backend == OPT_BACKEND_UNIX) {
		snprintf(call->where, sizeof(call->where), "%s unix:%s", role, u->socket);
		c = redisConnectUnixWithTimeout(u->socket, tv);
	} else {
		const char *host = node ? node->host : u->host;
		int port = node ? node->port : u->port;

		snprintf(call->where, sizeof(call->where), "%s %s:%d", role, host, port);
		c = redisConnectWithTimeout(host, port, tv);
	}
	if (c == NULL || c->err) {
		rslot_fail(call, "cannot connect", c ? c->errstr : "out of memory");
		redisFree(c);
		return -1;
	}
	/* hiredis offers no SOCK_CLOEXEC: close the window as soon as we can. */
	if (fcntl(c->fd, F_SETFD, FD_CLOEXEC) != 0 || redisSetTimeout(c, tv) != REDIS_OK) {
		rslot_fail(call, "cannot set up the socket", strerror(errno));
		redisFree(c);
		return -1;
	}
	call->c = c;
	return 0;
}

static void rslot_disconnect(struct rslot_call *call)
{
	redisFree(call->c);
	call->c = NULL;
}

static int rslot_send_auth(struct rslot_call *call, const char *user, const char *password,
			   const char **why)
{
	const char *auth[3] = { "AUTH" };
	int n = 1;

	if (user[0] != '\0')
		auth[n++] = user;
	auth[n++] = password;
	return rslot_send(call, n, auth, why);
}

/* Sends [ASKING] EVALSHA|EVAL [WAIT]. The database goes to the script as ARGV[4] rather than
   as a pipelined SELECT: a SELECT that failed (db out of range) would leave the script to
   reserve on database 0. */
static int rslot_send_script(struct rslot_call *call, bool by_sha, bool asking, const char **why)
{
	const struct opt *o = call->o;
	const struct slot_params *p = &o->slot;
	char interval[24], burst[24], max_wait[24], db[16], replicas[16], wait_ms[24];
	const char *argv[] = { by_sha ? "EVALSHA" : "EVAL",
			       by_sha ? RSLOT_SCRIPT_SHA1 : RSLOT_SCRIPT,
			       "1",
			       call->key,
			       interval,
			       burst,
			       max_wait,
			       db };
	const char *asking_argv[] = { "ASKING" };
	const char *wait_argv[] = { "WAIT", replicas, wait_ms };
	int argc = (int)(sizeof(argv) / sizeof(argv[0]));
	int64_t left_ms;

	snprintf(interval, sizeof(interval), "%" PRId64, p->interval_us);
	snprintf(burst, sizeof(burst), "%" PRId64, p->burst);
	snprintf(max_wait, sizeof(max_wait), "%" PRId64, p->max_wait_us);
	snprintf(db, sizeof(db), "%d", o->url.db);
	if (asking && rslot_send(call, 1, asking_argv, why) != 0)
		return -1;
	if (rslot_send(call, o->url.db != 0 ? argc : argc - 1, argv, why) != 0)
		return -1;
	if (o->sync_replicas == 0)
		return 0;
	/* The server waits half of what is left: it notices a WAIT's timeout only on its next
	   tick (100 ms at the default hz 10), and its answer must still arrive in time. Never
	   0, which would be for ever. */
	snprintf(replicas, sizeof(replicas), "%d", o->sync_replicas);
	left_ms = (call->deadline_us - fstime_mono_us()) / 2000;
	snprintf(wait_ms, sizeof(wait_ms), "%" PRId64, left_ms > 0 ? left_ms : 1);
	return rslot_send(call, 3, wait_argv, why);
}

static bool rslot_is_error(const redisReply *r, const char *code)
{
	size_t n = strlen(code);

	return r->type == REDIS_REPLY_ERROR && strncmp(r->str, code, n) == 0 &&
	       (r->str[n] == ' ' || r->str[n] == '\0');
}

/* After sync_replicas=N, reads WAIT's answer to an admission: a reservation too few replicas
   hold could be lost in a failover, but it is made, so the login goes on. */
static int rslot_read_wait(struct rslot_call *call, const redisReply *script)
{
	bool admitted = script->type == REDIS_REPLY_ARRAY && script->elements == 3 &&
			script->element[0]->type == REDIS_REPLY_INTEGER &&
			script->element[0]->integer == 1;
	redisReply *r = NULL;
	const char *why;
	char shown[160];
	int rc = 0;

	if (rslot_get_reply(call, &r, &why) != 0) {
		log_msg(call->pamh, LOG_WARNING, "%s: sync_replicas: no answer to WAIT: %s",
			call->where, log_escape(why, shown, sizeof(shown)));
		rc = -1;
	} else if (r->type == REDIS_REPLY_ERROR) {
		log_msg(call->pamh, LOG_WARNING, "%s: sync_replicas: WAIT failed: %s", call->where,
			log_escape(r->str, shown, sizeof(shown)));
	} else if (admitted &&
		   (r->type != REDIS_REPLY_INTEGER || r->integer < call->o->sync_replicas)) {
		log_msg(call->pamh, LOG_WARNING,
			"%s: sync_replicas: %lld of %d replicas hold the reservation: a failover "
			"now could lose it",
			call->where, r->type == REDIS_REPLY_INTEGER ? (long long)r->integer : 0LL,
			call->o->sync_replicas);
	}
	freeReplyObject(r);
	return rc;
}

/* Reads what rslot_send_script sent for. */
static int rslot_read_script(struct rslot_call *call, bool asking, redisReply **reply)
{
	const char *why;

	if (asking && rslot_expect_ok(call, "ASKING") != 0)
		return -1;
	if (rslot_get_reply(call, reply, &why) != 0) {
		rslot_fail(call, "script", why);
		return -1;
	}
	/* A NOSCRIPT answer is sent again on this connection: WAIT's reply must be out of the
	   way first. */
	if (call->o->sync_replicas > 0 && rslot_read_wait(call, *reply) != 0 &&
	    rslot_is_error(*reply, "NOSCRIPT")) {
		freeReplyObject(*reply);
		*reply = NULL;
		return -1;
	}
	return 0;
}

int rslot_read_reply(const redisReply *r, const struct slot_params *p, struct slot_result *res,
		     const char **why)
{
	long long admitted, wait_us, position;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
		*why = "not an array of three";
		return -1;
	}
	for (size_t i = 0; i < 3; i++) {
		if (r->element[i]->type != REDIS_REPLY_INTEGER) {
			*why = "not an array of integers";
			return -1;
		}
	}
	admitted = r->element[0]->integer;
	wait_us = r->element[1]->integer;
	position = r->element[2]->integer;
	/* No schedule the script keeps can ask for more than max_wait + burst * interval. */
	if ((admitted != 0 && admitted != 1) || wait_us < 0 ||
	    wait_us > p->max_wait_us + p->burst * p->interval_us || position < 1 ||
	    position > RSLOT_POSITION_MAX || (admitted == 1 && wait_us > p->max_wait_us) ||
	    (admitted == 0 && wait_us <= p->max_wait_us)) {
		*why = "values out of range";
		return -1;
	}
	res->verdict = admitted ? SLOT_ADMIT : SLOT_REFUSE;
	res->wait_us = wait_us;
	res->position = position;
	return 0;
}

/* Reads "MOVED 3999 host:port" or "ASK 3999 host:port" into hop. An empty host (":port") is
   the node that answered; an IPv6 address comes without brackets ("::1:7000"). */
static int rslot_read_hop(const struct opt_node *from, const redisReply *r, struct rslot_hop *hop)
{
	const char *p = strchr(r->str, ' ');
	char endpoint[OPT_HOST_MAX + 8];
	size_t digits;

	hop->ask = rslot_is_error(r, "ASK");
	if (p == NULL)
		return -1;
	digits = strspn(++p, "0123456789");
	if (digits == 0 || p[digits] != ' ')
		return -1;
	p += digits + 1;
	if (p[0] == ':' && strchr(p + 1, ':') == NULL) {
		if (snprintf(endpoint, sizeof(endpoint), "%s%s", from->host, p) >=
		    (int)sizeof(endpoint))
			return -1;
		p = endpoint;
	}
	return opt_parse_endpoint(p, strlen(p), &hop->node);
}

/* Reads ROLE's answer: 0 for a master, else -1, logged. */
static int rslot_read_role(struct rslot_call *call)
{
	redisReply *r = NULL;
	const char *why;
	int rc = -1;

	if (rslot_get_reply(call, &r, &why) != 0)
		rslot_fail(call, "ROLE", why);
	else if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
		 r->element[0]->type == REDIS_REPLY_STRING &&
		 strcmp(r->element[0]->str, "master") == 0)
		rc = 0;
	else if (r->type == REDIS_REPLY_ERROR) /* an ACL user without ROLE, say */
		rslot_fail(call, "ROLE", r->str);
	else
		log_msg(call->pamh, LOG_NOTICE, "%s: not a master", call->where);
	freeReplyObject(r);
	return rc;
}

/* One attempt: connects to the target, sends [AUTH] [ROLE] [ASKING] EVALSHA [WAIT] in one
   go, and reads the answers into res; a server that lost the script gets EVAL once. */
static enum rslot_step rslot_attempt(struct rslot_call *call, const struct rslot_target *t,
				     struct slot_result *res, struct rslot_hop *hop)
{
	const char *role_argv[] = { "ROLE" };
	const struct opt_url *u = &call->o->url;
	enum rslot_step step = RSLOT_FAILED;
	redisReply *r = NULL;
	const char *why = NULL;

	if (rslot_connect(call, "redis", t->node) != 0)
		return RSLOT_FAILED;
	if ((u->has_password && rslot_send_auth(call, u->user, u->password, &why) != 0) ||
	    (t->check_role && rslot_send(call, 1, role_argv, &why) != 0) ||
	    rslot_send_script(call, true, t->asking, &why) != 0) {
		rslot_fail(call, "sending", why);
		goto out;
	}
	if (u->has_password && rslot_expect_ok(call, "AUTH") != 0)
		goto out;
	if (t->check_role && rslot_read_role(call) != 0)
		goto out;
	if (rslot_read_script(call, t->asking, &r) != 0)
		goto out;
	if (rslot_is_error(r, "NOSCRIPT")) {
		freeReplyObject(r);
		r = NULL;
		if (rslot_send_script(call, false, t->asking, &why) != 0) {
			rslot_fail(call, "loading the script", why);
			goto out;
		}
		if (rslot_read_script(call, t->asking, &r) != 0)
			goto out;
	}
	if (r->type != REDIS_REPLY_ERROR) {
		if (rslot_read_reply(r, &call->o->slot, res, &why) == 0)
			step = RSLOT_DONE;
		else
			rslot_fail(call, "garbage reply to the script", why);
	} else if ((rslot_is_error(r, "MOVED") || rslot_is_error(r, "ASK")) &&
		   u->backend == OPT_BACKEND_CLUSTER) {
		if (rslot_read_hop(t->node, r, hop) == 0)
			step = RSLOT_REDIRECT;
		else
			rslot_fail(call, "bad redirect", r->str);
	} else {
		rslot_fail(call, "script failed", r->str);
	}
out:
	freeReplyObject(r);
	rslot_disconnect(call);
	return step;
}

static bool rslot_same_node(const struct opt_node *a, const struct opt_node *b)
{
	return a->port == b->port && strcmp(a->host, b->host) == 0;
}

/* Asks one sentinel where the master is. */
static int rslot_ask_sentinel(struct rslot_call *call, const struct opt_node *sentinel,
			      struct opt_node *master)
{
	const struct opt *o = call->o;
	const char *argv[] = { "SENTINEL", "get-master-addr-by-name", o->url.master };
	char endpoint[OPT_HOST_MAX + 16];
	redisReply *r = NULL;
	const char *why = NULL;
	int rc = -1;

	if (rslot_connect(call, "sentinel", sentinel) != 0)
		return -1;
	if ((o->has_sentinel_password &&
	     rslot_send_auth(call, "", o->sentinel_password, &why) != 0) ||
	    rslot_send(call, 3, argv, &why) != 0) {
		rslot_fail(call, "sending", why);
		goto out;
	}
	if (o->has_sentinel_password && rslot_expect_ok(call, "AUTH") != 0)
		goto out;
	if (rslot_get_reply(call, &r, &why) != 0)
		rslot_fail(call, "get-master-addr-by-name", why);
	else if (r->type == REDIS_REPLY_NIL)
		log_msg(call->pamh, LOG_ERR, "%s: get-master-addr-by-name: no master named \"%s\"",
			call->where, o->url.master);
	else if (r->type == REDIS_REPLY_ERROR)
		rslot_fail(call, "get-master-addr-by-name", r->str);
	else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		 r->element[0]->type != REDIS_REPLY_STRING ||
		 r->element[1]->type != REDIS_REPLY_STRING ||
		 snprintf(endpoint, sizeof(endpoint), "%s:%s", r->element[0]->str,
			  r->element[1]->str) >= (int)sizeof(endpoint) ||
		 opt_parse_endpoint(endpoint, strlen(endpoint), master) != 0)
		rslot_fail(call, "get-master-addr-by-name", "not an IP address and port");
	else
		rc = 0;
out:
	freeReplyObject(r);
	rslot_disconnect(call);
	return rc;
}

/* Remembers node in the node cache; only a hint, so a failure is only traced. */
static void rslot_remember(const struct rslot_call *call, const char *name,
			   const struct opt_node *node)
{
	if (ncache_put(call->o->state_dir, name, node) != 0 && call->o->debug)
		log_msg(call->pamh, LOG_DEBUG, "node cache: cannot write %s/%s: %m",
			call->o->state_dir, name);
}

/* The nodes that failed this login, so that none is tried twice. */
struct rslot_failed {
	struct opt_node nodes[OPT_NODES_MAX + RSLOT_REDIRECTS_MAX + 1];
	int n;
};

static bool rslot_has_failed(const struct rslot_failed *f, const struct opt_node *node)
{
	for (int i = 0; i < f->n; i++)
		if (rslot_same_node(&f->nodes[i], node))
			return true;
	return false;
}

static void rslot_add_failed(struct rslot_failed *f, const struct opt_node *node)
{
	if (f->n < (int)(sizeof(f->nodes) / sizeof(f->nodes[0])))
		f->nodes[f->n++] = *node;
}

/* Sentinel: the master this host used in the last RSLOT_MASTER_CACHE_S, if ROLE still says
   master; else the sentinels, in order, each answer checked with ROLE. A node that failed is
   not tried again. */
static enum rslot_step rslot_reserve_sentinel(struct rslot_call *call, struct slot_result *res)
{
	const struct opt *o = call->o;
	struct rslot_target t = { .check_role = true };
	struct rslot_failed failed = { .n = 0 };
	struct opt_node cached, master;
	char name[NCACHE_NAME_MAX];

	ncache_name(&o->url, "master", name, sizeof(name));
	if (ncache_get(o->state_dir, name, RSLOT_MASTER_CACHE_S, &cached) == 0) {
		t.node = &cached;
		if (rslot_attempt(call, &t, res, NULL) == RSLOT_DONE)
			return RSLOT_DONE;
		rslot_add_failed(&failed, &cached);
	}
	for (int i = 0; i < o->url.n_nodes; i++) {
		if (rslot_ask_sentinel(call, &o->url.nodes[i], &master) != 0 ||
		    rslot_has_failed(&failed, &master))
			continue;
		t.node = &master;
		if (rslot_attempt(call, &t, res, NULL) == RSLOT_DONE) {
			rslot_remember(call, name, &master);
			return RSLOT_DONE;
		}
		rslot_add_failed(&failed, &master);
	}
	log_msg(call->pamh, LOG_ERR, "sentinel: no master to use: %s",
		failed.n > 0 ? "every one named failed" : "no sentinel named one");
	return RSLOT_FAILED;
}

/* Cluster: the node this host last saw serve the key's slot, else the seeds in order;
   MOVED and ASK are followed, up to RSLOT_REDIRECTS_MAX. A node that fails is replaced by
   the next seed not yet tried. */
static enum rslot_step rslot_reserve_cluster(struct rslot_call *call, struct slot_result *res)
{
	const struct opt *o = call->o;
	struct rslot_target t = { 0 };
	struct rslot_failed failed = { .n = 0 };
	struct opt_node cached, hop_node, owner;
	struct rslot_hop hop;
	char name[NCACHE_NAME_MAX], slot[8];
	bool have, owner_known = false;
	int seed = 0;

	snprintf(slot, sizeof(slot), "%d", key_hash_slot(call->key));
	ncache_name(&o->url, slot, name, sizeof(name));
	have = ncache_get(o->state_dir, name, 0, &cached) == 0;
	t.node = have ? &cached : &o->url.nodes[seed++];
	for (;;) {
		switch (rslot_attempt(call, &t, res, &hop)) {
		case RSLOT_DONE:
			/* The slot's owner: this node, or after an ASK the one MOVED named. */
			if (!t.asking) {
				owner = *t.node;
				owner_known = true;
			}
			if (owner_known && (!have || !rslot_same_node(&owner, &cached)))
				rslot_remember(call, name, &owner);
			return RSLOT_DONE;
		case RSLOT_REDIRECT:
			if (++call->redirects > RSLOT_REDIRECTS_MAX) {
				rslot_fail(call, "redirect", "more than 3 redirects: giving up");
				return RSLOT_FAILED;
			}
			if (rslot_has_failed(&failed, &hop.node)) {
				rslot_fail(call, "redirect", "to a node that failed already");
				break;
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
			return RSLOT_FAILED;
		t.node = &o->url.nodes[seed++];
		t.asking = false;
	}
}

enum slot_verdict rslot_reserve(const pam_handle_t *pamh, const struct opt *o, const char *key,
				struct slot_result *res)
{
	struct rslot_call call = { .pamh = pamh, .o = o, .key = key };
	const struct rslot_target direct = { 0 };
	enum rslot_step step;

	call.budget_end_us = fstime_mono_us() + RSLOT_BUDGET_TIMEOUTS * o->timeout_us;

	switch (o->url.backend) {
	case OPT_BACKEND_SENTINEL:
		step = rslot_reserve_sentinel(&call, res);
		break;
	case OPT_BACKEND_CLUSTER:
		step = rslot_reserve_cluster(&call, res);
		break;
	default:
		step = rslot_attempt(&call, &direct, res, NULL);
		break;
	}
	if (step != RSLOT_DONE)
		return SLOT_UNAVAILABLE;
	res->deadline_us = fstime_mono_us() + res->wait_us;
	if (o->debug)
		log_msg(pamh, LOG_DEBUG, "%s: decided after %d redirects", call.where,
			call.redirects);
	return res->verdict;
}
