/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/lscript.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <openssl/opensslv.h>
#include <openssl/sha.h>

#include "flowslot/fstime.h"
#include "slot_lua.h"

/* redis.sha1hex, as Redis computes it, from OpenSSL's libcrypto: opened for the call that
   needs it, as src/tls.c opens libssl, so that a module that never runs the script maps
   none of it. Its low-level SHA-1 (8 us), not SHA1(), which in OpenSSL 3 fetches the digest
   from a provider and so reads openssl.cnf and loads the default provider first (1 ms of CPU
   in a process that had not, such as login or pamtester: bench/lstorecost). Kept mapped once
   opened (RTLD_NODELETE), as OpenSSL keeps itself once initialised: mapping it again for
   each call would cost each 0.7 ms. */
#define LSCRIPT_LIBCRYPTO "libcrypto.so." OPENSSL_MSTR(OPENSSL_VERSION_MAJOR)
/* The most arguments one command of the script's takes (its ZADD: the head, a place, its
   lease and its host's index, as pairs). */
#define LSCRIPT_ARGS_MAX 32
/* The hook runs every so many VM instructions. */
#define LSCRIPT_HOOK_EVERY 1000

typedef int lscript_sha1_init_fn(SHA_CTX *);
typedef int lscript_sha1_update_fn(SHA_CTX *, const void *, size_t);
typedef int lscript_sha1_final_fn(unsigned char *, SHA_CTX *);

struct lscript_ctx {
	struct lstore *s;
	const char *key;
	size_t memory, memory_peak;
	long steps;
	int64_t deadline_us;
	enum lscript_fault fault; /* the first that stopped the run */
	void *crypto;
	lscript_sha1_init_fn *sha1_init;
	lscript_sha1_update_fn *sha1_update;
	lscript_sha1_final_fn *sha1_final;
	char err[200]; /* a command's error reply */
};

/* One call's arguments, the command's name first: strings that live on the Lua stack. */
struct lscript_args {
	const char *v[LSCRIPT_ARGS_MAX];
	size_t len[LSCRIPT_ARGS_MAX];
	int n;
};

/* Notes the first fault that stops the run; NULL, for lscript_alloc. */
static void *lscript_stop(struct lscript_ctx *c, enum lscript_fault fault)
{
	if (c->fault == LSCRIPT_FAULT_NONE)
		c->fault = fault;
	return NULL;
}

static void *lscript_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct lscript_ctx *c = ud;
	void *p;

	if (nsize == 0) {
		free(ptr);
		c->memory -= osize;
		return NULL;
	}
	if (nsize > osize && c->memory + (nsize - osize) > LSCRIPT_MEMORY_MAX)
		return lscript_stop(c, LSCRIPT_FAULT_HEAVY);
	if ((p = realloc(ptr, nsize)) == NULL)
		return lscript_stop(c, LSCRIPT_FAULT_OWN);
	c->memory = c->memory - osize + nsize;
	if (c->memory > c->memory_peak)
		c->memory_peak = c->memory;
	return p;
}

static struct lscript_ctx *lscript_of(lua_State *L)
{
	void *ud;

	lua_getallocf(L, &ud);
	return ud;
}

/* The instruction cap, and the call's deadline: a script that runs too long is stopped. */
static void lscript_hook(lua_State *L, lua_Debug *ar)
{
	struct lscript_ctx *c = lscript_of(L);

	(void)ar;
	c->steps += LSCRIPT_HOOK_EVERY;
	if (c->steps > LSCRIPT_STEPS_MAX) {
		lscript_stop(c, LSCRIPT_FAULT_HEAVY);
		luaL_error(L, "the script ran past %ld instructions", LSCRIPT_STEPS_MAX);
	}
	if (c->deadline_us != 0 && fstime_mono_us() > c->deadline_us) {
		lscript_stop(c, LSCRIPT_FAULT_LATE);
		luaL_error(L, "the script ran past the call's timeout");
	}
}

/* A command's error reply. */
static int lscript_fail(struct lscript_ctx *c, const char *msg)
{
	snprintf(c->err, sizeof(c->err), "%s", msg);
	return -1;
}

/* A score as Redis writes it in a reply. */
static void lscript_push_score(lua_State *L, double score)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.17g", score);
	lua_pushstring(L, buf);
}

static void lscript_push_int(lua_State *L, long long v)
{
	lua_pushnumber(L, (lua_Number)v);
}

static void lscript_push_status(lua_State *L, const char *status)
{
	lua_newtable(L);
	lua_pushstring(L, status);
	lua_setfield(L, -2, "ok");
}

/* A whole argument as Redis reads a float: nothing after the number, not NaN. */
static bool lscript_float(const char *s, double *d)
{
	char *end;

	if (*s == '\0' || *s == ' ')
		return false;
	*d = strtod(s, &end);
	return *end == '\0' && !isnan(*d);
}

static bool lscript_integer(const char *s, long long *v)
{
	char *end;

	if (*s == '\0' || *s == ' ')
		return false;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return *end == '\0' && errno == 0;
}

/* The store holds the script's one key: any other is an error, not another keyspace. */
static int lscript_key(struct lscript_ctx *c, const struct lscript_args *a, int i)
{
	if (strcmp(a->v[i], c->key) != 0)
		return lscript_fail(c, "ERR pam_flowslot store: a key that is not the script's");
	return 0;
}

/* A score range's end as ZRANGEBYSCORE reads it: "(" for an open end, inf allowed. */
static int lscript_range_end(struct lscript_ctx *c, const char *s, double *d, bool *open)
{
	*open = s[0] == '(';
	if (!lscript_float(s + *open, d))
		return lscript_fail(c, "ERR min or max is not a float");
	return 0;
}

/* The members with min <= score <= max (ends open as asked): [*from, *to). */
static void lscript_range(const struct lstore *s, double min, bool min_open, double max,
			  bool max_open, size_t *from, size_t *to)
{
	*from = lstore_lower(s, min, min_open);
	*to = lstore_lower(s, max, !max_open);
	if (*to < *from)
		*to = *from;
}

static void lscript_push_members(lua_State *L, const struct lstore *s, size_t from, size_t to,
				 bool rev, bool scores, long long offset, long long count)
{
	int k = 1;

	lua_newtable(L);
	if (offset < 0)
		return;
	for (size_t i = 0; i < to - from; i++) {
		const struct lstore_member *m = &s->m[rev ? to - 1 - i : from + i];

		if ((long long)i < offset)
			continue;
		if (count >= 0 && (long long)i - offset >= count)
			break;
		lua_pushlstring(L, m->name, m->len);
		lua_rawseti(L, -2, k++);
		if (scores) {
			lscript_push_score(L, m->score);
			lua_rawseti(L, -2, k++);
		}
	}
}

/* WITHSCORES and LIMIT OFFSET COUNT, in any order, from argument i on. */
static int lscript_range_opts(struct lscript_ctx *c, const struct lscript_args *a, int i,
			      bool limit_ok, bool *scores, long long *offset, long long *count)
{
	*scores = false;
	*offset = 0;
	*count = -1;
	while (i < a->n) {
		if (strcasecmp(a->v[i], "WITHSCORES") == 0) {
			*scores = true;
			i++;
		} else if (limit_ok && strcasecmp(a->v[i], "LIMIT") == 0 && i + 2 < a->n) {
			if (!lscript_integer(a->v[i + 1], offset) ||
			    !lscript_integer(a->v[i + 2], count))
				return lscript_fail(c, "ERR value is not an integer or out of range");
			i += 3;
		} else {
			return lscript_fail(c, "ERR syntax error");
		}
	}
	return 0;
}

/* ZRANGEBYSCORE key min max and ZREVRANGEBYSCORE key max min, with their options. */
static int lscript_by_score(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a,
			    bool rev)
{
	double min, max;
	bool min_open, max_open, scores;
	long long offset, count;
	size_t from, to;

	if (lscript_key(c, a, 1) != 0 ||
	    lscript_range_end(c, a->v[rev ? 3 : 2], &min, &min_open) != 0 ||
	    lscript_range_end(c, a->v[rev ? 2 : 3], &max, &max_open) != 0 ||
	    lscript_range_opts(c, a, 4, true, &scores, &offset, &count) != 0)
		return -1;
	lscript_range(c->s, min, min_open, max, max_open, &from, &to);
	lscript_push_members(L, c->s, from, to, rev, scores, offset, count);
	return 0;
}

static int lscript_zrangebyscore(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	return lscript_by_score(c, L, a, false);
}

static int lscript_zrevrangebyscore(struct lscript_ctx *c, lua_State *L,
				    const struct lscript_args *a)
{
	return lscript_by_score(c, L, a, true);
}

/* ZREVRANGE key start stop [WITHSCORES]: by rank from the highest score. */
static int lscript_zrevrange(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	long long start, stop, offset, count, n = (long long)c->s->n;
	bool scores;

	if (lscript_key(c, a, 1) != 0)
		return -1;
	if (!lscript_integer(a->v[2], &start) || !lscript_integer(a->v[3], &stop))
		return lscript_fail(c, "ERR value is not an integer or out of range");
	if (lscript_range_opts(c, a, 4, false, &scores, &offset, &count) != 0)
		return -1;
	if (start < 0)
		start += n;
	if (stop < 0)
		stop += n;
	if (start < 0)
		start = 0;
	if (stop >= n)
		stop = n - 1;
	if (start > stop || start >= n) {
		lua_newtable(L);
		return 0;
	}
	/* Ranks start..stop from the top are indexes n-1-stop .. n-1-start, reversed. */
	lscript_push_members(L, c->s, (size_t)(n - 1 - stop), (size_t)(n - start), true, scores, 0,
			     -1);
	return 0;
}

static int lscript_zcount(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	double min, max;
	bool min_open, max_open;
	size_t from, to;

	if (lscript_key(c, a, 1) != 0 || lscript_range_end(c, a->v[2], &min, &min_open) != 0 ||
	    lscript_range_end(c, a->v[3], &max, &max_open) != 0)
		return -1;
	lscript_range(c->s, min, min_open, max, max_open, &from, &to);
	lscript_push_int(L, (long long)(to - from));
	return 0;
}

static int lscript_zscore(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	ssize_t i;

	if (lscript_key(c, a, 1) != 0)
		return -1;
	i = lstore_find(c->s, a->v[2], a->len[2]);
	if (i < 0)
		lua_pushboolean(L, 0);
	else
		lscript_push_score(L, c->s->m[i].score);
	return 0;
}

/* ZADD key score member [score member ...], no options: every score is read before any is
   added, as Redis does. What the file could not read back is refused rather than written. */
static int lscript_zadd(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	double score[LSCRIPT_ARGS_MAX];
	long long added = 0;

	if (lscript_key(c, a, 1) != 0)
		return -1;
	if ((a->n - 2) % 2 != 0)
		return lscript_fail(c, "ERR syntax error");
	for (int i = 2; i < a->n; i += 2) {
		if (!lscript_float(a->v[i], &score[i]))
			return lscript_fail(c, "ERR value is not a valid float");
		if (!isfinite(score[i]) || !lstore_name_ok(a->v[i + 1], a->len[i + 1]))
			return lscript_fail(c, "ERR pam_flowslot store: a score or member it cannot keep");
	}
	for (int i = 2; i < a->n; i += 2) {
		int r = lstore_add(c->s, score[i], a->v[i + 1], a->len[i + 1]);

		if (r < 0 && c->s->n == LSTORE_MEMBERS_MAX) {
			lscript_stop(c, LSCRIPT_FAULT_FULL);
			return lscript_fail(c, "ERR pam_flowslot store: full");
		}
		if (r < 0) {
			lscript_stop(c, LSCRIPT_FAULT_OWN);
			return lscript_fail(c, "ERR pam_flowslot store: out of memory");
		}
		added += r;
	}
	lscript_push_int(L, added);
	return 0;
}

static int lscript_zrem(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	long long removed = 0;

	if (lscript_key(c, a, 1) != 0)
		return -1;
	for (int i = 2; i < a->n; i++) {
		ssize_t at = lstore_find(c->s, a->v[i], a->len[i]);

		if (at >= 0) {
			lstore_remove(c->s, (size_t)at);
			removed++;
		}
	}
	lscript_push_int(L, removed);
	return 0;
}

static int lscript_time(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	char sec[24], usec[8];

	(void)a;
	snprintf(sec, sizeof(sec), "%lld", (long long)(c->s->now_us / 1000000));
	snprintf(usec, sizeof(usec), "%lld", (long long)(c->s->now_us % 1000000));
	lua_newtable(L);
	lua_pushstring(L, sec);
	lua_rawseti(L, -2, 1);
	lua_pushstring(L, usec);
	lua_rawseti(L, -2, 2);
	return 0;
}

/* SELECT: the file holds database 0 alone. */
static int lscript_select(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	if (strcmp(a->v[1], "0") != 0)
		return lscript_fail(c, "ERR pam_flowslot store: database 0 only");
	lscript_push_status(L, "OK");
	return 0;
}

static int lscript_type(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	if (lscript_key(c, a, 1) != 0)
		return -1;
	lscript_push_status(L, c->s->n > 0 ? "zset" : "none");
	return 0;
}

static int lscript_exists(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	if (lscript_key(c, a, 1) != 0)
		return -1;
	lscript_push_int(L, c->s->n > 0);
	return 0;
}

static int lscript_get(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	if (lscript_key(c, a, 1) != 0)
		return -1;
	if (c->s->n > 0)
		return lscript_fail(c, "WRONGTYPE Operation against a key holding the wrong kind of value");
	lua_pushboolean(L, 0);
	return 0;
}

static int lscript_del(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	bool had = c->s->n > 0;

	if (lscript_key(c, a, 1) != 0)
		return -1;
	lstore_clear(c->s);
	lscript_push_int(L, had);
	return 0;
}

/* PEXPIRE key ms, no options: the key goes ms from now, at once for ms <= 0. Redis refuses
   only an end its milliseconds cannot hold; one that our microseconds cannot is kept as the
   last they hold, which no clock reaches either. */
static int lscript_pexpire(struct lscript_ctx *c, lua_State *L, const struct lscript_args *a)
{
	int64_t now_us = c->s->now_us;
	long long ms;

	if (lscript_key(c, a, 1) != 0)
		return -1;
	if (!lscript_integer(a->v[2], &ms))
		return lscript_fail(c, "ERR value is not an integer or out of range");
	if (ms > LLONG_MAX - now_us / 1000)
		return lscript_fail(c, "ERR invalid expire time in 'pexpire' command");
	if (c->s->n == 0) {
		lscript_push_int(L, 0);
		return 0;
	}
	if (ms <= 0) {
		lstore_clear(c->s);
	} else {
		c->s->expires_us = ms > (INT64_MAX - now_us) / 1000 ? INT64_MAX : now_us + ms * 1000;
		c->s->changed = true;
	}
	lscript_push_int(L, 1);
	return 0;
}

struct lscript_cmd {
	const char *name;
	int min, max; /* arguments, the name included */
	int (*fn)(struct lscript_ctx *, lua_State *, const struct lscript_args *);
};

/* Exactly the commands slot.lua calls: any other is an error, so that a later change to the
   script cannot run on half a store. */
static const struct lscript_cmd lscript_cmds[] = {
	{ "TIME", 1, 1, lscript_time },
	{ "SELECT", 2, 2, lscript_select },
	{ "TYPE", 2, 2, lscript_type },
	{ "EXISTS", 2, 2, lscript_exists },
	{ "GET", 2, 2, lscript_get },
	{ "DEL", 2, 2, lscript_del },
	{ "PEXPIRE", 3, 3, lscript_pexpire },
	{ "ZADD", 4, LSCRIPT_ARGS_MAX, lscript_zadd },
	{ "ZCOUNT", 4, 4, lscript_zcount },
	{ "ZREM", 3, LSCRIPT_ARGS_MAX, lscript_zrem },
	{ "ZSCORE", 3, 3, lscript_zscore },
	{ "ZRANGEBYSCORE", 4, 9, lscript_zrangebyscore },
	{ "ZREVRANGE", 4, 5, lscript_zrevrange },
	{ "ZREVRANGEBYSCORE", 4, 9, lscript_zrevrangebyscore },
};

/* The arguments on the stack as strings: a number as Redis turns it into one ("%.17g"). */
static int lscript_args(struct lscript_ctx *c, lua_State *L, struct lscript_args *a)
{
	a->n = lua_gettop(L);
	if (a->n == 0)
		return lscript_fail(c, "ERR Please specify at least one argument for this redis lib call");
	if (a->n > LSCRIPT_ARGS_MAX)
		return lscript_fail(c, "ERR pam_flowslot store: too many arguments");
	for (int i = 0; i < a->n; i++) {
		if (lua_type(L, i + 1) == LUA_TNUMBER) {
			char buf[32];

			snprintf(buf, sizeof(buf), "%.17g", (double)lua_tonumber(L, i + 1));
			lua_pushstring(L, buf);
			lua_replace(L, i + 1);
		} else if (lua_type(L, i + 1) != LUA_TSTRING) {
			return lscript_fail(c, "ERR Lua redis lib command arguments must be strings or integers");
		}
		a->v[i] = lua_tolstring(L, i + 1, &a->len[i]);
	}
	return 0;
}

/* Runs one command, its reply (or an error table) pushed. Returns whether it failed. */
static bool lscript_command(lua_State *L)
{
	struct lscript_ctx *c = lscript_of(L);
	struct lscript_args a;
	const struct lscript_cmd *cmd = NULL;

	if (lscript_args(c, L, &a) == 0) {
		for (size_t i = 0; i < sizeof(lscript_cmds) / sizeof(lscript_cmds[0]); i++) {
			if (strcasecmp(a.v[0], lscript_cmds[i].name) == 0)
				cmd = &lscript_cmds[i];
		}
		if (cmd == NULL)
			lscript_fail(c, "ERR Unknown Redis command called from script");
		else if (a.n < cmd->min || a.n > cmd->max)
			snprintf(c->err, sizeof(c->err),
				 "ERR wrong number of arguments for '%s' command", cmd->name);
		else if (cmd->fn(c, L, &a) == 0)
			return false;
	}
	lua_newtable(L);
	lua_pushstring(L, c->err);
	lua_setfield(L, -2, "err");
	return true;
}

/* redis.call: an error is raised, as its error table. */
static int lscript_call(lua_State *L)
{
	if (lscript_command(L))
		return lua_error(L);
	return 1;
}

static int lscript_pcall(lua_State *L)
{
	lscript_command(L);
	return 1;
}

static int lscript_error_reply(lua_State *L)
{
	const char *msg = luaL_checkstring(L, 1);

	lua_newtable(L);
	lua_pushstring(L, msg);
	lua_setfield(L, -2, "err");
	return 1;
}

/* redis.flowslot_gone(key), what only the host can know (pam_flowslot(7), "The queue's
   promises"): the leases ("l:" members) whose holder, the process that last renewed it, is
   gone, judged in its own PID namespace only. Redis has no such function, which the script reads as "none known". */
static int lscript_flowslot_gone(lua_State *L)
{
	struct lscript_ctx *c = lscript_of(L);
	const char *key = luaL_checkstring(L, 1);
	int k = 1;

	if (strcmp(key, c->key) != 0)
		return luaL_error(L, "redis.flowslot_gone: not the script's key");
	lua_newtable(L);
	for (size_t i = 0; i < c->s->n; i++) {
		const struct lstore_member *m = &c->s->m[i];

		/* A pid is judged only in the namespace that recorded it: in another, the same
		   number is another process, or none, and the lease alone says. */
		if (m->pid > 0 && m->pidns != 0 && m->pidns == c->s->pidns &&
		    strncmp(m->name, "l:", 2) == 0 && kill(m->pid, 0) != 0 && errno == ESRCH) {
			lua_pushlstring(L, m->name, m->len);
			lua_rawseti(L, -2, k++);
		}
	}
	return 1;
}

static int lscript_sha1hex(lua_State *L)
{
	struct lscript_ctx *c = lscript_of(L);
	unsigned char md[SHA_DIGEST_LENGTH];
	char hex[2 * SHA_DIGEST_LENGTH + 1];
	SHA_CTX sha;
	size_t len;
	const char *s;

	if (lua_gettop(L) != 1)
		return luaL_error(L, "wrong number of arguments");
	s = lua_tolstring(L, 1, &len);
	if (s == NULL)
		return luaL_error(L, "redis.sha1hex: not a string");
	if (c->crypto == NULL) {
		c->crypto = dlopen(LSCRIPT_LIBCRYPTO, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		if (c->crypto == NULL)
			return luaL_error(L, "cannot load %s", LSCRIPT_LIBCRYPTO);
		*(void **)&c->sha1_init = dlsym(c->crypto, "SHA1_Init");
		*(void **)&c->sha1_update = dlsym(c->crypto, "SHA1_Update");
		*(void **)&c->sha1_final = dlsym(c->crypto, "SHA1_Final");
		if (c->sha1_init == NULL || c->sha1_update == NULL || c->sha1_final == NULL)
			return luaL_error(L, "%s has no SHA1_Init, SHA1_Update or SHA1_Final",
					  LSCRIPT_LIBCRYPTO);
	}
	if (c->sha1_init(&sha) != 1 || c->sha1_update(&sha, s, len) != 1 ||
	    c->sha1_final(md, &sha) != 1)
		return luaL_error(L, "redis.sha1hex: SHA-1 failed");
	for (size_t i = 0; i < sizeof(md); i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	lua_pushstring(L, hex);
	return 1;
}

/* What a call runs: the key, the arguments. */
struct lscript_setup {
	const char *key;
	const char *const *argv;
	int argc;
};

static void lscript_open(lua_State *L, lua_CFunction open, const char *name)
{
	lua_pushcfunction(L, open);
	lua_pushstring(L, name);
	lua_call(L, 1, 0);
}

/* Reading a global that is not there, or making one: an error, as Redis 7.0 locks its
   scripts' globals, so that a name mistyped in slot.lua fails here as it does there. */
static int lscript_global_read(lua_State *L)
{
	return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
			  lua_tostring(L, 2));
}

static int lscript_global_write(lua_State *L)
{
	return luaL_error(L, "Attempt to modify a readonly table");
}

static void lscript_lock_globals(lua_State *L)
{
	lua_newtable(L);
	lua_pushcfunction(L, lscript_global_read);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, lscript_global_write);
	lua_setfield(L, -2, "__newindex");
	lua_setmetatable(L, LUA_GLOBALSINDEX);
}

/* The state's globals: the four libraries without what loads code or prints, KEYS, ARGV and
   redis, locked. Run protected (lua_cpcall). */
static int lscript_prepare(lua_State *L)
{
	static const char *const unsafe[] = { "dofile", "loadfile", "load", "loadstring", "print",
					      "module", "require" };
	static const luaL_Reg redis[] = { { "call", lscript_call },
					  { "pcall", lscript_pcall },
					  { "error_reply", lscript_error_reply },
					  { "sha1hex", lscript_sha1hex },
					  { "flowslot_gone", lscript_flowslot_gone },
					  { NULL, NULL } };
	const struct lscript_setup *setup = lua_touserdata(L, 1);

	lscript_open(L, luaopen_base, "");
	lscript_open(L, luaopen_table, LUA_TABLIBNAME);
	lscript_open(L, luaopen_string, LUA_STRLIBNAME);
	lscript_open(L, luaopen_math, LUA_MATHLIBNAME);
	for (size_t i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++) {
		lua_pushnil(L);
		lua_setglobal(L, unsafe[i]);
	}
	lua_newtable(L);
	lua_pushstring(L, setup->key);
	lua_rawseti(L, -2, 1);
	lua_setglobal(L, "KEYS");
	lua_newtable(L);
	for (int i = 0; i < setup->argc; i++) {
		lua_pushstring(L, setup->argv[i]);
		lua_rawseti(L, -2, i + 1);
	}
	lua_setglobal(L, "ARGV");
	lua_newtable(L);
	luaL_register(L, NULL, redis);
	lua_setglobal(L, "redis");
	lscript_lock_globals(L);
	return 0;
}

/* The error a failed call left on the stack: a string, or an error table's err. */
static void lscript_error_of(lua_State *L, char *err, size_t errsz)
{
	const char *msg = NULL;

	if (lua_istable(L, -1)) {
		lua_getfield(L, -1, "err");
		msg = lua_tostring(L, -1);
	} else {
		msg = lua_tostring(L, -1);
	}
	snprintf(err, errsz, "%s", msg != NULL ? msg : "an error that is not a string");
}

/* The script's answer, as Redis turns a Lua value into a reply: an error table is an error,
   an array is read up to its first nil, and a number in it is an integer, cut toward 0. */
static int lscript_answer(lua_State *L, struct lscript_out *out, char *err, size_t errsz)
{
	if (!lua_istable(L, -1)) {
		snprintf(err, errsz, "the script's answer is not an array");
		return -1;
	}
	lua_getfield(L, -1, "err");
	if (lua_isstring(L, -1)) {
		snprintf(err, errsz, "%s", lua_tostring(L, -1));
		return -1;
	}
	lua_pop(L, 1);
	for (out->n = 0;; out->n++) {
		lua_rawgeti(L, -1, (int)out->n + 1);
		if (lua_isnil(L, -1))
			break;
		/* Past a long long (or NaN) the cast means nothing: not an answer at all. */
		if (lua_type(L, -1) != LUA_TNUMBER || out->n == LSCRIPT_OUT_MAX ||
		    !(lua_tonumber(L, -1) >= -0x1p63 && lua_tonumber(L, -1) < 0x1p63)) {
			snprintf(err, errsz, "the script's answer is not an array of integers");
			return -1;
		}
		out->v[out->n] = (long long)lua_tonumber(L, -1);
		lua_pop(L, 1);
	}
	return 0;
}

/* The script, compiled at build time (RSLOT_CHUNK, build/luadump): a compile costs a call
   about 0.5 ms of CPU, most of what it does. Its source where the chunk is foreign (a chunk
   holds the sizes and byte order of the machine that made it, which lua_load checks). */
static int lscript_load(lua_State *L)
{
	if (luaL_loadbuffer(L, RSLOT_CHUNK, sizeof(RSLOT_CHUNK) - 1, "=slot.lua") == 0)
		return 0;
	lua_pop(L, 1);
	return luaL_loadbuffer(L, RSLOT_SCRIPT, sizeof(RSLOT_SCRIPT) - 1, "=slot.lua");
}

int lscript_run(struct lstore *s, const char *key, const char *const *argv, int argc,
		int64_t deadline_us, struct lscript_out *out, char *err, size_t errsz)
{
	struct lscript_ctx c = { .s = s, .key = key, .deadline_us = deadline_us };
	struct lscript_setup setup = { .key = key, .argv = argv, .argc = argc };
	lua_State *L = lua_newstate(lscript_alloc, &c);
	int r = -1;

	memset(out, 0, sizeof(*out));
	if (L == NULL) {
		snprintf(err, errsz, "cannot make a Lua state: out of memory");
		out->fault = LSCRIPT_FAULT_OWN;
		return -1;
	}
	if (lua_cpcall(L, lscript_prepare, &setup) != 0) {
		lscript_error_of(L, err, errsz);
	} else if (lscript_load(L) != 0) {
		lscript_error_of(L, err, errsz);
	} else {
		lua_sethook(L, lscript_hook, LUA_MASKCOUNT, LSCRIPT_HOOK_EVERY);
		if (lua_pcall(L, 0, 1, 0) != 0)
			lscript_error_of(L, err, errsz);
		else
			r = lscript_answer(L, out, err, errsz);
	}
	out->steps = c.steps;
	out->fault = r == 0 ? LSCRIPT_FAULT_NONE : c.fault;
	lua_close(L);
	out->memory_peak = c.memory_peak;
	if (c.crypto != NULL)
		dlclose(c.crypto);
	return r;
}
