/* SPDX-License-Identifier: BSD-3-Clause */
/* Measurement 1: Redis commands per admitted login, under contention.
 *
 *   contend MODE N OPTION...
 *
 * N logins (processes, one connection each) start at the same instant and each reserves one
 * slot on the schedule OPTION key= at OPTION url=, one OPTION interval= apart:
 *
 *   flowslot  the module's own code path: rslot_call() to reserve, one script call; a login
 *             that is queued then waits as the module does (queue_wait): a renewal every
 *             2 s and one at its slot, all counted
 *   watch     WATCH, GET, then MULTI/SET/EXEC pipelined, again from WATCH while EXEC fails
 *   naive     GET, then SET: read-then-write, no atomicity
 *
 * The alternatives take "now" from the client's clock (one command fewer than asking the
 * server for TIME, which the module's script does inside its one call). Commands are counted
 * twice: by the clients as they send them (for the module, every command that rnode.c
 * formats, through -Wl,--wrap=redisFormatCommandArgv), and by the server in INFO
 * commandstats, reset just before the logins start. Prints one line of name=value pairs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "flowslot/fstime.h"
#include "flowslot/rslot.h"

#define CONTEND_MAX_N 2000
#define CONTEND_MAX_ATTEMPTS 10000 /* WATCH: a login that fails this often gives up */

enum contend_mode { MODE_FLOWSLOT, MODE_WATCH, MODE_NAIVE };

struct contend_result {
	int admitted;
	int unavailable;
	long long sent;	       /* commands sent */
	long long round_trips; /* replies waited for, a pipelined batch counting once */
	long long attempts;    /* WATCH: transactions tried */
	int64_t slot_us;       /* the slot obtained: a deadline (flowslot) or a start time */
	long long renewals;    /* flowslot: script calls after the reservation */
};

struct contend {
	enum contend_mode mode;
	const struct opt *o;
	int argc; /* the module arguments, for queue_wait's renewals */
	char **argv;
	const char *key;
	struct bench_gate gate;
	struct contend_result *res; /* shared, one per login */
};

/* Every command rnode.c sends is formatted here first: the client-side count for the module. */
int __real_redisFormatCommandArgv(char **target, int argc, const char **argv,
				  const size_t *argvlen);
int __wrap_redisFormatCommandArgv(char **target, int argc, const char **argv,
				  const size_t *argvlen);
static long long contend_formatted;

int __wrap_redisFormatCommandArgv(char **target, int argc, const char **argv, const size_t *argvlen)
{
	contend_formatted++;
	return __real_redisFormatCommandArgv(target, argc, argv, argvlen);
}

static redisContext *contend_connect(const struct opt *o)
{
	struct timeval tv = fstime_timeval(o->timeout_us);
	redisContext *c = o->url.backend == URL_BACKEND_UNIX
			      ? redisConnectUnixWithTimeout(o->url.socket, tv)
			      : redisConnectWithTimeout(o->url.host, o->url.port, tv);

	if (c == NULL || c->err) {
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	return c;
}

/* The stored slot time, 0 for none; -1 on an error. */
static int64_t contend_get(redisContext *c, const char *key, struct contend_result *r)
{
	redisReply *rep = redisCommand(c, "GET %s", key);
	int64_t tat = -1;

	r->sent++;
	r->round_trips++;
	if (rep != NULL && rep->type == REDIS_REPLY_NIL)
		tat = 0;
	else if (rep != NULL && rep->type == REDIS_REPLY_STRING)
		tat = strtoll(rep->str, NULL, 10);
	freeReplyObject(rep);
	return tat;
}

/* As slot.lua with burst=1: the slot is max(tat, now), and the next one an interval later. */
static int64_t contend_next(int64_t tat, int64_t interval_us, int64_t *slot_us, long long *ttl_ms)
{
	int64_t now = bench_real_us();

	*slot_us = tat > now ? tat : now;
	*ttl_ms = (*slot_us + interval_us - now + 999) / 1000;
	return *slot_us + interval_us;
}

static void contend_watch(redisContext *c, const struct contend *k, struct contend_result *r)
{
	for (int attempt = 1; attempt <= CONTEND_MAX_ATTEMPTS; attempt++) {
		redisReply *rep = redisCommand(c, "WATCH %s", k->key);
		redisReply *exec = NULL;
		int64_t tat, slot, next;
		long long ttl_ms;
		int ok = rep != NULL;

		r->attempts = attempt;
		r->sent++;
		r->round_trips++;
		freeReplyObject(rep);
		if (!ok || (tat = contend_get(c, k->key, r)) < 0)
			break;
		next = contend_next(tat, k->o->slot.interval_us, &slot, &ttl_ms);
		redisAppendCommand(c, "MULTI");
		redisAppendCommand(c, "SET %s %lld PX %lld", k->key, (long long)next, ttl_ms);
		redisAppendCommand(c, "EXEC");
		r->sent += 3;
		r->round_trips++;
		for (int i = 0; i < 3 && ok; i++) {
			ok = redisGetReply(c, (void **)&rep) == REDIS_OK;
			if (i < 2)
				freeReplyObject(rep);
			else
				exec = rep;
		}
		if (!ok)
			break;
		if (exec->type == REDIS_REPLY_ARRAY) { /* committed; a nil reply: someone wrote */
			r->admitted = 1;
			r->slot_us = slot;
		}
		freeReplyObject(exec);
		if (r->admitted)
			return;
	}
	r->unavailable = !r->admitted;
}

static void contend_naive(redisContext *c, const struct contend *k, struct contend_result *r)
{
	int64_t tat = contend_get(c, k->key, r), slot, next;
	long long ttl_ms;
	redisReply *rep;

	if (tat < 0) {
		r->unavailable = 1;
		return;
	}
	next = contend_next(tat, k->o->slot.interval_us, &slot, &ttl_ms);
	rep = redisCommand(c, "SET %s %lld PX %lld", k->key, (long long)next, ttl_ms);
	r->sent++;
	r->round_trips++;
	if (rep != NULL && rep->type == REDIS_REPLY_STATUS) {
		r->admitted = 1;
		r->slot_us = slot;
	} else {
		r->unavailable = 1;
	}
	freeReplyObject(rep);
}

static int contend_child(int i, void *arg)
{
	struct contend *k = arg;
	struct contend_result *r = &k->res[i];
	struct slot_result res;
	struct slot_place place;
	redisContext *c;
	int64_t admitted_us;
	enum slot_verdict v;
	long long reserve_sent;

	bench_place(&place, i);
	bench_gate_wait(&k->gate);
	if (k->mode == MODE_FLOWSLOT) {
		contend_formatted = 0;
		v = bench_login(k->o, k->argc, k->argv, k->key, &place, &res, &admitted_us);
		if (v == SLOT_ADMIT || v == SLOT_QUEUED) {
			r->admitted = 1;
			r->slot_us = res.deadline_us; /* the slot the reservation promised */
		} else {
			r->unavailable = 1;
		}
		reserve_sent = 1; /* EVALSHA; the warm-up loaded the script */
		r->renewals = contend_formatted - reserve_sent;
		/* No password here, so no AUTH: each command is a round trip of its own. */
		r->sent = r->round_trips = contend_formatted;
		r->attempts = 1;
		return 0;
	}
	c = contend_connect(k->o);
	if (c == NULL) {
		r->unavailable = 1;
		return 0;
	}
	if (k->mode == MODE_WATCH)
		contend_watch(c, k, r);
	else
		contend_naive(c, k, r);
	redisFree(c);
	return 0;
}

static int contend_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "flowslot", "watch", "naive" };
	static int pids[CONTEND_MAX_N];
	static int64_t slots[CONTEND_MAX_N];
	struct contend k = { 0 };
	struct opt o;
	struct bench_cmdstats st;
	struct slot_result res;
	struct slot_place warm_place;
	redisContext *c;
	redisReply *rep;
	char cmd[OPT_KEY_MAX + 32];
	long long sent = 0, rts = 0, attempts = 0, attempts_max = 0, server_all = 0, server_client;
	long long renewals = 0, renewals_max = 0;
	int n, ready, failed, admitted = 0, unavailable = 0, groups = 0, largest = 0, run = 0;
	int64_t t0, t1;

	if (argc < 3) {
		fprintf(stderr, "usage: contend flowslot|watch|naive N OPTION...\n");
		return 2;
	}
	for (k.mode = MODE_FLOWSLOT; k.mode <= MODE_NAIVE; k.mode++)
		if (strcmp(argv[1], names[k.mode]) == 0)
			break;
	n = atoi(argv[2]);
	if (k.mode > MODE_NAIVE || n < 1 || n > CONTEND_MAX_N) {
		fprintf(stderr, "contend: bad mode or N\n");
		return 2;
	}
	bench_opt(&o, argc - 3, argv + 3);
	k.o = &o;
	k.argc = argc - 3;
	k.argv = argv + 3;
	k.key = o.key;
	k.res = bench_shared(sizeof(*k.res) * (size_t)n);

	c = bench_connect(&o);
	if (k.mode == MODE_FLOWSLOT) {
		/* The script is loaded once per server: that first NOSCRIPT/EVAL is not counted. */
		snprintf(cmd, sizeof(cmd), "%s:warm", o.key);
		bench_place(&warm_place, -1);
		if (rslot_call(NULL, &o, SLOT_RESERVE, cmd, &warm_place, &res) != SLOT_ADMIT) {
			fprintf(stderr, "contend: the warm-up reservation failed\n");
			return 1;
		}
	}
	rep = redisCommand(c, "DEL %s", o.key);
	freeReplyObject(rep);
	freeReplyObject(bench_command(c, "CONFIG RESETSTAT"));

	bench_gate_init(&k.gate);
	bench_fork(n, contend_child, &k, pids);
	t0 = bench_gate_open(&k.gate, n, 30000000, &ready);
	failed = bench_reap(n, pids);
	t1 = fstime_mono_us();
	bench_cmdstats(c, &st);
	redisFree(c);

	for (size_t i = 0; i < st.n; i++)
		if (strcmp(st.cmd[i].name, "info") != 0 &&
		    strcmp(st.cmd[i].name, "config|resetstat") != 0)
			server_all += st.cmd[i].calls;
	/* Commands that the script runs count in commandstats too: those are not the client's. */
	server_client = k.mode == MODE_FLOWSLOT ? bench_cmdstats_calls(&st, "evalsha") +
						      bench_cmdstats_calls(&st, "eval")
						: server_all;

	for (int i = 0; i < n; i++) {
		const struct contend_result *r = &k.res[i];

		sent += r->sent;
		renewals += r->renewals;
		if (r->renewals > renewals_max)
			renewals_max = r->renewals;
		rts += r->round_trips;
		attempts += r->attempts;
		if (r->attempts > attempts_max)
			attempts_max = r->attempts;
		unavailable += r->unavailable;
		if (r->admitted)
			slots[admitted++] = r->slot_us;
	}
	/* Slots closer than half an interval are one slot: the logins would start together. */
	qsort(slots, (size_t)admitted, sizeof(slots[0]), contend_cmp_i64);
	for (int i = 0; i < admitted; i++) {
		if (i == 0 || slots[i] - slots[i - 1] >= o.slot.interval_us / 2) {
			groups++;
			run = 0;
		}
		if (++run > largest)
			largest = run;
	}
	printf("mode=%s n=%d ready=%d admitted=%d unavailable=%d failed=%d sent=%lld "
	       "round_trips=%lld attempts=%lld attempts_max=%lld server_calls=%lld "
	       "server_client_calls=%lld server_script_calls=%lld distinct_slots=%d "
	       "shared_slot=%d largest_group=%d elapsed_ms=%.1f renewals=%lld renewals_max=%lld\n",
	       names[k.mode], n, ready, admitted, unavailable, failed, sent, rts, attempts,
	       attempts_max, server_all, server_client, server_all - server_client, groups,
	       admitted - groups, largest, (double)(t1 - t0) / 1000.0, renewals, renewals_max);
	return failed != 0 || ready != n;
}
