/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/rnode.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>

#include "flowslot/fstime.h"
#include "flowslot/log.h"
#include "flowslot/once.h"
#include "flowslot/tls.h"
#include "flowslot/url.h"
#include "slot_lua.h" /* RSLOT_SCRIPT and RSLOT_SCRIPT_SHA1, made from src/slot.lua */

#define RNODE_REPLY_MAX 65536 /* bytes read from one server; real replies are under 200 */

/* Waits until fd is ready for events, or the call's deadline passes. */
static int rnode_poll(const struct rnode_call *call, short events, const char **why)
{
	if (fstime_poll(call->c->fd, events, call->deadline_us) == 0)
		return 0;
	*why = errno == ETIMEDOUT ? "timed out" : "poll failed";
	return -1;
}

/* Why a send found the connection closed. A server that drops what it cannot parse without a
   word is most often a TLS port (a full maxclients says so first). */
static const char *rnode_hung_up(const struct rnode_call *call)
{
	char b;

	if (call->received == 0 && recv(call->c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
		return "the server closed the connection without a word (a TLS port? use "
		       "rediss://)";
	return "the server closed the connection";
}

/* Sends one command. Not hiredis's own write: without MSG_NOSIGNAL, a server that hangs up
   first (as a full maxclients does) raises SIGPIPE and kills the host process. Commands sent
   one after another without reading are still one round trip. */
static int rnode_send(struct rnode_call *call, int argc, const char **argv, const char **why)
{
	char *cmd = NULL;
	long long len = redisFormatCommandArgv(&cmd, argc, argv, NULL);
	size_t off = 0;
	int rc = 0;

	if (len < 0) {
		*why = "out of memory";
		return -1;
	}
	if (call->tls != NULL &&
	    tls_write(call->tls, cmd, (size_t)len, call->deadline_us, call->tls_why,
		      sizeof(call->tls_why)) != 0) {
		*why = call->tls_why;
		rc = -1;
	}
	while (call->tls == NULL && rc == 0 && off < (size_t)len) {
		ssize_t n;

		if (rnode_poll(call, POLLOUT, why) != 0) {
			rc = -1;
			break;
		}
		n = send(call->c->fd, cmd + off, (size_t)len - off, MSG_NOSIGNAL);
		if (n >= 0) {
			off += (size_t)n;
		} else if (errno != EINTR && errno != EAGAIN) {
			*why = errno == EPIPE || errno == ECONNRESET ? rnode_hung_up(call)
								     : "send failed";
			rc = -1;
		}
	}
	/* AUTH's holds a password: nothing of a command outlives its sending. */
	explicit_bzero(cmd, (size_t)len);
	redisFreeCommand(cmd);
	return rc;
}

/* Reads what the server sent next into the reader: hiredis's read on a plain connection, by
   way of TLS on the other. */
static int rnode_read_more(struct rnode_call *call, const char **why)
{
	char buf[16384];
	ssize_t n;

	if (call->tls == NULL) {
		if (rnode_poll(call, POLLIN, why) != 0)
			return -1;
		if (redisBufferRead(call->c) == REDIS_OK)
			return 0;
		*why = call->c->errstr;
		/* A TLS server drops what is not TLS without a word. */
		if (call->received == 0) {
			snprintf(call->tls_why, sizeof(call->tls_why),
				 "%s, without a word (a TLS port? use rediss://)", call->c->errstr);
			*why = call->tls_why;
		}
		return -1;
	}
	n = tls_read(call->tls, buf, sizeof(buf), call->deadline_us, call->tls_why,
		     sizeof(call->tls_why));
	if (n < 0) {
		*why = call->tls_why;
		return -1;
	}
	if (redisReaderFeed(call->c->reader, buf, (size_t)n) != REDIS_OK) {
		*why = call->c->reader->errstr;
		return -1;
	}
	return 0;
}

/* Reads the next reply. hiredis's own blocking read would bound each read(), not the reply:
   a server that drips bytes could hold the login far past the timeout. */
static int rnode_get_reply(struct rnode_call *call, redisReply **reply, const char **why)
{
	void *r = NULL;
	size_t before;

	for (;;) {
		if (redisGetReplyFromReader(call->c, &r) != REDIS_OK) {
			*why = call->cap.refused ? "reply too large: too many elements"
						 : call->c->errstr;
			return -1;
		}
		if (r != NULL) {
			*reply = r;
			return 0;
		}
		before = call->c->reader->len;
		if (rnode_read_more(call, why) != 0)
			return -1;
		/* hiredis takes replies of any size: a broken server could make the host process
		   allocate hundreds of MB within the timeout. Everything read counts, since hiredis
		   turns parsed data into reply objects and drops it from its buffer. */
		call->received += call->c->reader->len - before;
		if (call->received > RNODE_REPLY_MAX) {
			*why = "reply too large";
			return -1;
		}
	}
}

static void *rnode_capped_array(const redisReadTask *task, int elements)
{
	struct rnode_cap *cap = task->privdata;

	if (elements < 0 || elements > RNODE_ARRAY_MAX ||
	    cap->elements + elements > RNODE_ELEMENTS_MAX) {
		cap->refused = true;
		return NULL;
	}
	cap->elements += elements;
	return cap->create_array(task, elements);
}

void rnode_cap_reader(redisReader *r, struct rnode_cap *cap)
{
	cap->fn = *r->fn;
	cap->create_array = r->fn->createArray;
	cap->fn.createArray = rnode_capped_array;
	cap->elements = 0;
	cap->refused = false;
	r->fn = &cap->fn;
	r->privdata = cap;
}

void rnode_err(const struct rnode_call *call, const char *fmt, ...)
{
	const struct opt *o = call->o;
	char line[sizeof(call->where) + TLS_WHY_MAX + 256];
	uint64_t held = 0;
	va_list ap;

	if (call->said && !o->debug)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* debug: the errors said already are traced, so that a decision can be followed. */
	if (call->said) {
		log_msg(call->pamh, LOG_DEBUG, "%s (said already)", line);
		return;
	}
	/* flowslotctl (no PAM handle) says every error to whoever runs it. */
	if (call->pamh != NULL && !once_rate(o->state_dir, line, RNODE_ERR_PERIOD_US, &held))
		return;
	if (held > 0)
		log_msg(call->pamh, LOG_ERR, "%s (and %llu more since the last such line, not logged)",
			line, (unsigned long long)held);
	else
		log_msg(call->pamh, LOG_ERR, "%s", line);
}

void rnode_fail(const struct rnode_call *call, const char *what, const char *why)
{
	char shown[TLS_WHY_MAX + sizeof("...")]; /* a cause from TLS, whole */

	rnode_err(call, "%s: %s: %s", call->where, what, log_escape(why, shown, sizeof(shown)));
}

/* Checks a status reply: AUTH's, READWRITE's, ASKING's. */
static int rnode_expect_ok(struct rnode_call *call, const char *what)
{
	redisReply *r = NULL;
	const char *why;
	int rc = -1;

	if (rnode_get_reply(call, &r, &why) != 0)
		rnode_fail(call, what, why);
	else if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
		rc = 0;
	else if (r->type == REDIS_REPLY_ERROR)
		rnode_fail(call, what, r->str);
	else
		rnode_fail(call, what, "unexpected reply");
	freeReplyObject(r);
	return rc;
}

/* Opens the connection for rnode_connect. hiredis 0.14 gives up when a signal interrupts its
   wait for the connection (1.x waits on): SIGCHLD or SIGWINCH must not send the login to its
   fallback, so that is tried again while the deadline allows. */
static redisContext *rnode_open(const struct rnode_call *call, const struct url_node *node)
{
	const struct url *u = &call->o->url;

	for (;;) {
		struct timeval tv = fstime_timeval(call->deadline_us - fstime_mono_us());
		redisContext *c = node == NULL && u->backend == URL_BACKEND_UNIX
					  ? redisConnectUnixWithTimeout(u->socket, tv)
					  : redisConnectWithTimeout(node ? node->host : u->host,
								    node ? node->port : u->port, tv);
		bool interrupted = c != NULL && c->err == REDIS_ERR_IO && errno == EINTR;

		if (!interrupted || fstime_mono_us() >= call->deadline_us)
			return c;
		redisFree(c);
	}
}

static void rnode_disconnect(struct rnode_call *call)
{
	tls_close(call->tls);
	call->tls = NULL;
	redisFree(call->c);
	call->c = NULL;
}

/* TLS on the new connection, within its deadline. A sentinel is checked against its host in
   the url; the servers that hold the schedule against tls_server_name=, else their host. */
static int rnode_start_tls(struct rnode_call *call, const char *role, const struct url_node *node)
{
	const struct opt *o = call->o;
	const char *name = node ? node->host : o->url.host;

	if (strcmp(role, "sentinel") != 0 && o->tls.server_name[0] != '\0')
		name = o->tls.server_name;
	call->tls = tls_open(call->c->fd, &o->tls, name, call->deadline_us, call->tls_why,
			     sizeof(call->tls_why));
	if (call->tls == NULL) {
		rnode_fail(call, "TLS handshake", call->tls_why);
		return -1;
	}
	return 0;
}

/* Connects to node (NULL: the url's own host or socket), with a deadline of its own: timeout,
   or what is left of the decision's budget. */
static int rnode_connect(struct rnode_call *call, const char *role, const struct url_node *node)
{
	const struct url *u = &call->o->url;
	int64_t now_us = fstime_mono_us();
	struct timeval tv;
	redisContext *c;

	call->deadline_us = now_us + call->o->timeout_us;
	if (call->deadline_us > call->budget_end_us)
		call->deadline_us = call->budget_end_us;
	call->received = 0;
	tv = fstime_timeval(call->deadline_us - now_us);
	if (call->deadline_us <= now_us) {
		rnode_err(call, "%s: out of time before trying %s:%d", role,
			  node ? node->host : u->host, node ? node->port : u->port);
		return -1;
	}
	if (node == NULL && u->backend == URL_BACKEND_UNIX)
		snprintf(call->where, sizeof(call->where), "%s unix:%s", role, u->socket);
	else
		snprintf(call->where, sizeof(call->where), "%s %s:%d", role,
			 node ? node->host : u->host, node ? node->port : u->port);
	c = rnode_open(call, node);
	if (c == NULL || c->err) {
		rnode_fail(call, "cannot connect", c ? c->errstr : "out of memory");
		redisFree(c);
		return -1;
	}
	/* hiredis offers no SOCK_CLOEXEC: close the window as soon as we can. */
	if (fcntl(c->fd, F_SETFD, FD_CLOEXEC) != 0 || redisSetTimeout(c, tv) != REDIS_OK) {
		rnode_fail(call, "cannot set up the socket", strerror(errno));
		redisFree(c);
		return -1;
	}
	rnode_cap_reader(c->reader, &call->cap);
	call->c = c;
	if (u->tls && rnode_start_tls(call, role, node) != 0) {
		rnode_disconnect(call);
		return -1;
	}
	return 0;
}

static int rnode_send_auth(struct rnode_call *call, const char *user, const char *password,
			   const char **why)
{
	const char *auth[3] = { "AUTH" };
	int n = 1;

	if (user[0] != '\0')
		auth[n++] = user;
	auth[n++] = password;
	return rnode_send(call, n, auth, why);
}

/* Sends [ASKING] EVALSHA|EVAL [WAIT]. The database goes to the script as ARGV[5] rather than
   as a pipelined SELECT: a SELECT that failed (db out of range) would leave the script to
   reserve on database 0. */
static int rnode_send_script(struct rnode_call *call, bool by_sha, bool asking, const char **why)
{
	static const char *const ops[] = {
		[SLOT_RESERVE] = "reserve",
		[SLOT_RENEW] = "renew",
		[SLOT_LEAVE] = "leave",
		[SLOT_PEEK] = "peek",
		[SLOT_RESET] = "reset",
	};
	const struct opt *o = call->o;
	const struct slot_params *p = call->p;
	const struct slot_place *pl = call->place;
	char interval[24], burst[24], max_wait[24], db[16], per_host[16], lease[24];
	char commit[24], heard[24], age[24];
	char replicas[16], wait_ms[24];
	const char *argv[2 + 2 + 13] = { by_sha ? "EVALSHA" : "EVAL",
					 by_sha ? RSLOT_SCRIPT_SHA1 : RSLOT_SCRIPT, "1",
					 call->key };
	const char *args[] = { ops[call->op], interval, burst, max_wait, db,	pl->id, pl->who,
			       pl->host,      per_host, lease, commit,	 heard, age };
	const char *asking_argv[] = { "ASKING" };
	const char *wait_argv[] = { "WAIT", replicas, wait_ms };
	int64_t left_ms;

	memcpy(argv + 4, args, sizeof(args));
	snprintf(interval, sizeof(interval), "%" PRId64, p->interval_us);
	snprintf(burst, sizeof(burst), "%" PRId64, p->burst);
	snprintf(max_wait, sizeof(max_wait), "%" PRId64, call->max_wait_us);
	snprintf(db, sizeof(db), "%d", o->url.db);
	snprintf(per_host, sizeof(per_host), "%d", o->per_host);
	snprintf(lease, sizeof(lease), "%" PRId64, SLOT_LEASE_US);
	snprintf(commit, sizeof(commit), "%" PRId64, slot_commit_us(p));
	snprintf(heard, sizeof(heard), "%" PRId64, call->heard_us);
	snprintf(age, sizeof(age), "%" PRId64, p->age_us);
	if (asking && rnode_send(call, 1, asking_argv, why) != 0)
		return -1;
	if (rnode_send(call, (int)(sizeof(argv) / sizeof(argv[0])), argv, why) != 0)
		return -1;
	if (o->sync_replicas == 0)
		return 0;
	/* The server waits half of what is left: it notices a WAIT's timeout only on its next
	   tick (100 ms at the default hz 10), and its answer must still arrive in time. Never
	   0, which would be for ever. */
	snprintf(replicas, sizeof(replicas), "%d", o->sync_replicas);
	left_ms = (call->deadline_us - fstime_mono_us()) / 2000;
	snprintf(wait_ms, sizeof(wait_ms), "%" PRId64, left_ms > 0 ? left_ms : 1);
	return rnode_send(call, 3, wait_argv, why);
}

static bool rnode_is_error(const redisReply *r, const char *code)
{
	size_t n = strlen(code);

	return r->type == REDIS_REPLY_ERROR && strncmp(r->str, code, n) == 0 &&
	       (r->str[n] == ' ' || r->str[n] == '\0');
}

/* After sync_replicas=N, reads WAIT's answer to an admission: a reservation too few replicas
   hold could be lost in a failover, but it is made, so the login goes on. */
static int rnode_read_wait(struct rnode_call *call, const redisReply *script)
{
	/* Admitted, or holding a place: both were written. */
	bool admitted = script->type == REDIS_REPLY_ARRAY && script->elements >= 3 &&
			script->element[0]->type == REDIS_REPLY_INTEGER &&
			(script->element[0]->integer == 1 || script->element[0]->integer == 2);
	redisReply *r = NULL;
	const char *why;
	char shown[160];
	int rc = 0;

	if (rnode_get_reply(call, &r, &why) != 0) {
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

/* Reads what rnode_send_script sent for. */
static int rnode_read_script(struct rnode_call *call, bool asking, redisReply **reply)
{
	const char *why;

	if (asking && rnode_expect_ok(call, "ASKING") != 0)
		return -1;
	if (rnode_get_reply(call, reply, &why) != 0) {
		rnode_fail(call, "script", why);
		return -1;
	}
	/* The slot's wait counts from here: a slow WAIT must not push the login later. */
	call->replied_us = fstime_mono_us();
	/* A NOSCRIPT answer is sent again on this connection: WAIT's reply must be out of the
	   way first. */
	if (call->o->sync_replicas > 0 && rnode_read_wait(call, *reply) != 0 &&
	    rnode_is_error(*reply, "NOSCRIPT")) {
		freeReplyObject(*reply);
		*reply = NULL;
		return -1;
	}
	return 0;
}

/* Reads "MOVED 3999 host:port" or "ASK 3999 host:port" into hop. An empty host (":port") is
   the node that answered; an IPv6 address comes without brackets ("::1:7000"). */
static int rnode_read_hop(const struct url_node *from, const redisReply *r, struct rnode_hop *hop)
{
	const char *p = strchr(r->str, ' ');
	char endpoint[URL_HOST_MAX + 8];
	size_t digits;

	hop->ask = rnode_is_error(r, "ASK");
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
	return url_parse_endpoint(p, strlen(p), &hop->node);
}

/* Reads ROLE's answer: 0 for a master, else -1, logged. */
static int rnode_read_role(struct rnode_call *call)
{
	redisReply *r = NULL;
	const char *why;
	int rc = -1;

	if (rnode_get_reply(call, &r, &why) != 0)
		rnode_fail(call, "ROLE", why);
	else if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
		 r->element[0]->type == REDIS_REPLY_STRING &&
		 strcmp(r->element[0]->str, "master") == 0)
		rc = 0;
	else if (r->type == REDIS_REPLY_ERROR) /* an ACL user without ROLE, say */
		rnode_fail(call, "ROLE", r->str);
	else
		log_msg(call->pamh, LOG_NOTICE, "%s: not a master", call->where);
	freeReplyObject(r);
	return rc;
}

/* Notes, after an attempt failed, whether it sent the script and ran out of its connection's
   time for the answer: a server slow or stopped, which may yet carry it out (rslot asks it
   again). One that timed out before (connecting, the TLS handshake) made nothing. */
static void rnode_note_timeout(struct rnode_call *call)
{
	if (call->script_sent && fstime_mono_us() >= call->deadline_us)
		call->timed_out = true;
}

enum rnode_step rnode_attempt(struct rnode_call *call, const struct rnode_target *t,
			      redisReply **reply, struct rnode_hop *hop)
{
	const char *role_argv[] = { "ROLE" };
	const char *readwrite_argv[] = { "READWRITE" };
	const struct url *u = &call->o->url;
	bool cluster = u->backend == URL_BACKEND_CLUSTER;
	enum rnode_step step = RNODE_FAILED;
	redisReply *r = NULL;
	const char *why = NULL;

	call->script_sent = false;
	if (rnode_connect(call, "redis", t->node) != 0)
		return RNODE_FAILED;
	/* Only a cluster node accepts READWRITE: a server at a remembered or seed address that
	   is no cluster member (a standalone Redis) fails like any node, and its answer to the
	   script is never taken. (One that lacks the script gets no EVAL.) */
	if ((u->has_password && rnode_send_auth(call, u->user, u->password, &why) != 0) ||
	    (cluster && rnode_send(call, 1, readwrite_argv, &why) != 0) ||
	    (t->check_role && rnode_send(call, 1, role_argv, &why) != 0) ||
	    rnode_send_script(call, true, t->asking, &why) != 0) {
		rnode_fail(call, "sending", why);
		goto out;
	}
	call->script_sent = true;
	if (u->has_password && rnode_expect_ok(call, "AUTH") != 0)
		goto out;
	if (cluster && rnode_expect_ok(call, "READWRITE") != 0)
		goto out;
	if (t->check_role && rnode_read_role(call) != 0)
		goto out;
	if (rnode_read_script(call, t->asking, &r) != 0)
		goto out;
	if (rnode_is_error(r, "NOSCRIPT")) {
		freeReplyObject(r);
		r = NULL;
		if (rnode_send_script(call, false, t->asking, &why) != 0) {
			rnode_fail(call, "loading the script", why);
			goto out;
		}
		if (rnode_read_script(call, t->asking, &r) != 0)
			goto out;
	}
	if (r->type != REDIS_REPLY_ERROR) {
		step = RNODE_DONE;
		*reply = r;
		r = NULL;
	} else if ((rnode_is_error(r, "MOVED") || rnode_is_error(r, "ASK")) &&
		   u->backend == URL_BACKEND_CLUSTER) {
		if (rnode_read_hop(t->node, r, hop) == 0)
			step = RNODE_REDIRECT;
		else
			rnode_fail(call, "bad redirect", r->str);
	} else {
		rnode_fail(call, "script failed", r->str);
	}
out:
	if (step == RNODE_FAILED)
		rnode_note_timeout(call);
	freeReplyObject(r);
	rnode_disconnect(call);
	return step;
}

bool rnode_same(const struct url_node *a, const struct url_node *b)
{
	return a->port == b->port && strcmp(a->host, b->host) == 0;
}

int rnode_ask_sentinel(struct rnode_call *call, const struct url_node *sentinel,
		       struct url_node *master)
{
	const struct opt *o = call->o;
	const char *argv[] = { "SENTINEL", "get-master-addr-by-name", o->url.master };
	char endpoint[URL_HOST_MAX + 16];
	redisReply *r = NULL;
	const char *why = NULL;
	int rc = -1;

	if (rnode_connect(call, "sentinel", sentinel) != 0)
		return -1;
	if ((o->has_sentinel_password &&
	     rnode_send_auth(call, "", o->sentinel_password, &why) != 0) ||
	    rnode_send(call, 3, argv, &why) != 0) {
		rnode_fail(call, "sending", why);
		goto out;
	}
	if (o->has_sentinel_password && rnode_expect_ok(call, "AUTH") != 0)
		goto out;
	if (rnode_get_reply(call, &r, &why) != 0)
		rnode_fail(call, "get-master-addr-by-name", why);
	else if (r->type == REDIS_REPLY_NIL)
		rnode_err(call, "%s: get-master-addr-by-name: no master named \"%s\"", call->where,
			  o->url.master);
	else if (r->type == REDIS_REPLY_ERROR)
		rnode_fail(call, "get-master-addr-by-name", r->str);
	else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		 r->element[0]->type != REDIS_REPLY_STRING ||
		 r->element[1]->type != REDIS_REPLY_STRING ||
		 snprintf(endpoint, sizeof(endpoint), "%s:%s", r->element[0]->str,
			  r->element[1]->str) >= (int)sizeof(endpoint) ||
		 url_parse_endpoint(endpoint, strlen(endpoint), master) != 0)
		rnode_fail(call, "get-master-addr-by-name", "not an IP address and port");
	else
		rc = 0;
out:
	freeReplyObject(r);
	rnode_disconnect(call);
	return rc;
}
