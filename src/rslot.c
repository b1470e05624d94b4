#include "flowslot/rslot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>

#include "flowslot/fstime.h"
#include "flowslot/log.h"
#include "flowslot/str.h"
#include "slot_lua.h" /* RSLOT_SCRIPT and RSLOT_SCRIPT_SHA1, made from src/slot.lua */

#define RSLOT_POSITION_MAX INT64_C(1000000000)
#define RSLOT_REPLY_MAX 65536 /* bytes read in one call; real replies are under 200 */

/* One login's exchange with the server. */
struct rslot_call {
	const pam_handle_t *pamh;
	const struct opt *o;
	redisContext *c;
	int64_t deadline_us;
	size_t received; /* bytes read from the server */
	char where[OPT_HOST_MAX + 16];
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

	log_msg(call->pamh, LOG_ERR, "redis %s: %s: %s", call->where, what,
		log_escape(why, shown, sizeof(shown)));
}

/* Checks the status reply of AUTH. */
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

/* The database goes to the script as ARGV[4] rather than as a pipelined SELECT: a SELECT that
   failed (db out of range) would leave the script to reserve on database 0. */
static int rslot_send_script(struct rslot_call *call, bool by_sha, const char *key,
			     const char **why)
{
	const struct slot_params *p = &call->o->slot;
	char interval[24], burst[24], max_wait[24], db[16];
	const char *argv[] = { by_sha ? "EVALSHA" : "EVAL",
			       by_sha ? RSLOT_SCRIPT_SHA1 : RSLOT_SCRIPT,
			       "1",
			       key,
			       interval,
			       burst,
			       max_wait,
			       db };
	int argc = (int)(sizeof(argv) / sizeof(argv[0]));

	snprintf(interval, sizeof(interval), "%" PRId64, p->interval_us);
	snprintf(burst, sizeof(burst), "%" PRId64, p->burst);
	snprintf(max_wait, sizeof(max_wait), "%" PRId64, p->max_wait_us);
	snprintf(db, sizeof(db), "%d", call->o->url.db);
	return rslot_send(call, call->o->url.db != 0 ? argc : argc - 1, argv, why);
}

/* Pipelines AUTH and EVALSHA, and falls back to EVAL once if the server has lost the
   script. Returns the script's reply, or NULL with the reason logged. */
static redisReply *rslot_exchange(struct rslot_call *call, const char *key)
{
	const struct opt_url *u = &call->o->url;
	redisReply *r = NULL;
	const char *why = NULL;
	int sent = 0;

	if (u->has_password) {
		const char *auth[3] = { "AUTH" };
		int n = 1;

		if (u->user[0] != '\0')
			auth[n++] = u->user;
		auth[n++] = u->password;
		sent = rslot_send(call, n, auth, &why);
	}
	if (sent == 0)
		sent = rslot_send_script(call, true, key, &why);
	if (sent != 0) {
		rslot_fail(call, "sending", why);
		return NULL;
	}
	if (u->has_password && rslot_expect_ok(call, "AUTH") != 0)
		return NULL;
	if (rslot_get_reply(call, &r, &why) != 0) {
		rslot_fail(call, "script", why);
		return NULL;
	}
	if (r->type == REDIS_REPLY_ERROR && str_skip_prefix(r->str, "NOSCRIPT") != NULL) {
		freeReplyObject(r);
		r = NULL;
		if (rslot_send_script(call, false, key, &why) == 0 &&
		    rslot_get_reply(call, &r, &why) == 0)
			why = NULL;
		if (why != NULL) {
			rslot_fail(call, "loading the script", why);
			return NULL;
		}
	}
	if (r->type == REDIS_REPLY_ERROR) {
		rslot_fail(call, "script failed", r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
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

static redisContext *rslot_connect(struct rslot_call *call)
{
	const struct opt_url *u = &call->o->url;
	struct timeval tv = fstime_timeval(call->o->timeout_us);
	redisContext *c;

	if (u->backend == OPT_BACKEND_UNIX) {
		snprintf(call->where, sizeof(call->where), "unix:%s", u->socket);
		c = redisConnectUnixWithTimeout(u->socket, tv);
	} else {
		snprintf(call->where, sizeof(call->where), "%s:%d", u->host, u->port);
		c = redisConnectWithTimeout(u->host, u->port, tv);
	}
	if (c == NULL || c->err) {
		rslot_fail(call, "cannot connect", c ? c->errstr : "out of memory");
		redisFree(c);
		return NULL;
	}
	/* hiredis offers no SOCK_CLOEXEC: close the window as soon as we can. */
	if (fcntl(c->fd, F_SETFD, FD_CLOEXEC) != 0 || redisSetTimeout(c, tv) != REDIS_OK) {
		rslot_fail(call, "cannot set up the socket", strerror(errno));
		redisFree(c);
		return NULL;
	}
	return c;
}

enum slot_verdict rslot_reserve(const pam_handle_t *pamh, const struct opt *o, const char *key,
				struct slot_result *res)
{
	struct rslot_call call = { .pamh = pamh, .o = o };
	redisReply *r = NULL;
	const char *why;
	enum slot_verdict verdict = SLOT_UNAVAILABLE;

	/* One deadline for the whole decision: the connect, then what is left for the exchange. */
	call.deadline_us = fstime_mono_us() + o->timeout_us;
	call.c = rslot_connect(&call);
	if (call.c == NULL)
		return SLOT_UNAVAILABLE;
	r = rslot_exchange(&call, key);
	if (r != NULL) {
		if (rslot_read_reply(r, &o->slot, res, &why) != 0) {
			rslot_fail(&call, "garbage reply to the script", why);
		} else {
			res->deadline_us = fstime_mono_us() + res->wait_us;
			verdict = res->verdict;
		}
	}
	freeReplyObject(r);
	redisFree(call.c);
	return verdict;
}
