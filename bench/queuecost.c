/* SPDX-License-Identifier: BSD-3-Clause */
/* Measurements 7 to 9: what the queue of live waiters costs, and what it gives back.
 *
 *   queuecost calls WAIT_S[,WAIT_S...] OPTION...
 *   queuecost spread fit|fixed N SECONDS WARM_S IDLE_S WORKERS OPTION...
 *   queuecost drain queue|fixed N KILL_EVERY OPTION...
 *
 * calls: for each WAIT_S, a login (a process) that finds the schedule taken WAIT_S seconds
 * ahead reserves and waits through the module's own code path (rslot_call, queue_wait), on a
 * key of its own, all at once; the script calls it sends are counted as rnode.c formats them
 * (-Wl,--wrap=redisFormatCommandArgv), and by the server in INFO commandstats. One line per
 * login, then a total.
 *
 * spread: a queue in a steady state, as the module's waiters keep it. N places are reserved
 * in order on an empty schedule (rslot_call, a connection each, as the module's calls are),
 * so that their waits spread from 0 to N intervals, then WORKERS processes renew them for
 * WARM_S seconds and SECONDS more, measured: each place when the module would renew it (fit:
 * slot_renew_us of its last answer, and at its slot; fixed: every SLOT_RENEW_US, as before
 * the leases fit the wait), and each one admitted is replaced by a newcomer at the back, so
 * that the queue keeps its length and its spread of waits. A place's first renewal falls at
 * a random point of its first period, as in a queue that has run a while. Hours of waiting
 * cannot be simulated; a window of the steady state can. It reads the server's CPU (INFO
 * cpu) over the window (and over IDLE_S s idle, empty, before) and the script's own time
 * (INFO commandstats), used_memory before and after the places, and counts the calls made in
 * the window and how late they were.
 *
 * drain: N logins arrive 10 ms apart, in order; once all have their answer, every KILL_EVERY-th
 * (the 3rd, the 6th, ...) is killed (SIGKILL). queue: the module's queue (rslot_call,
 * queue_wait). fixed: the previous design, a fixed slot per login kept whatever became of it
 * (the script of commit c37c706, below), then a sleep until that slot. Prints when the last
 * live login was let in, from the first arrival.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "flowslot/fstime.h"
#include "flowslot/rslot.h"

#define QC_MAX_WAITS 32
#define QC_MAX_HOLD 100000
#define QC_MAX_DRAIN 1000

/* Every command rnode.c sends is formatted here first: the count of script calls. */
int __real_redisFormatCommandArgv(char **target, int argc, const char **argv,
				  const size_t *argvlen);
int __wrap_redisFormatCommandArgv(char **target, int argc, const char **argv,
				  const size_t *argvlen);
static long long qc_formatted;

int __wrap_redisFormatCommandArgv(char **target, int argc, const char **argv, const size_t *argvlen)
{
	qc_formatted++;
	return __real_redisFormatCommandArgv(target, argc, argv, argvlen);
}

/* The previous design's script (src/slot.lua at commit c37c706, comments left out): a fixed
   slot per login, kept whatever becomes of the login. */
static const char qc_fixed_lua[] =
    "local interval = tonumber(ARGV[1])\n"
    "local burst = tonumber(ARGV[2])\n"
    "local max_wait = tonumber(ARGV[3])\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local tat = tonumber(redis.call('GET', KEYS[1]))\n"
    "if not tat or tat ~= tat or tat < now or tat > now + max_wait + burst * interval then\n"
    "  tat = now\n"
    "end\n"
    "local start = tat - (burst - 1) * interval\n"
    "if start < now then\n"
    "  start = now\n"
    "end\n"
    "local wait = start - now\n"
    "local position = math.floor(wait / interval) + 1\n"
    "if wait > max_wait then\n"
    "  return {0, wait, position}\n"
    "end\n"
    "local new_tat = tat + interval\n"
    "local ttl_ms = math.ceil((new_tat - now) / 1000)\n"
    "redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', ttl_ms)\n"
    "return {1, wait, position}\n";

/* Takes the schedule's head slot AHEAD_US from the server's now, as "tat at". */
static const char qc_head_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local ahead = tonumber(ARGV[1])\n"
    "redis.call('SET', KEYS[1], string.format('%.0f %.0f', now + ahead, now), 'PX',\n"
    "  math.ceil(ahead / 1000) + 1000)\n"
    "return 1\n";

static long qc_number(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "queuecost: bad %s: %s (%ld to %ld)\n", what, s, lo, hi);
		exit(2);
	}
	return v;
}

static void qc_head(redisContext *c, const char *key, int64_t ahead_us)
{
	redisReply *r = redisCommand(c, "EVAL %s 1 %s %lld", qc_head_lua, key, (long long)ahead_us);

	if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
		fprintf(stderr, "queuecost: the head slot: %s\n",
			r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
		exit(1);
	}
	freeReplyObject(r);
}

static long long qc_dbsize(redisContext *c)
{
	redisReply *r = bench_command(c, "DBSIZE");
	long long n = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

	freeReplyObject(r);
	return n;
}

/* used_memory, asked on a connection of its own: a connection kept open would carry buffers
   that Redis grows and shrinks on its own schedule, while a fresh one costs the same each
   time. */
static long long qc_used_memory(const struct opt *o)
{
	redisContext *c = bench_connect(o);
	long long v = bench_info_field(c, "memory", "used_memory");

	redisFree(c);
	return v;
}

/* used_memory with the connection c kept open in the same state at every sample: just used
   (its input buffer allocated, which Redis frees once it has been idle a while). */
static long long qc_sample(redisContext *c, const struct opt *o)
{
	freeReplyObject(bench_command(c, "PING"));
	return qc_used_memory(o);
}

/* MEMORY USAGE (every element sampled) of the schedule's key, which holds its queue. */
static long long qc_key_bytes(redisContext *c, const char *key)
{
	redisReply *r = redisCommand(c, "MEMORY USAGE %s SAMPLES 0", key);
	long long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

	freeReplyObject(r);
	return n;
}

/* How many places ("w:") or places given up ("g:") the schedule holds: its members in the
   score range of each (src/slot.lua). */
static long long qc_fields(redisContext *c, const char *key, const char *prefix)
{
	bool places = strcmp(prefix, "w:") == 0;
	redisReply *r = redisCommand(c, "ZCOUNT %s %s %s", key, places ? "1" : "2e16",
				     places ? "(1e16" : "+inf");
	long long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

	freeReplyObject(r);
	return n;
}

static double qc_s(int64_t us)
{
	return (double)us / 1e6;
}

/* --- calls ----------------------------------------------------------------------------- */

struct qc_calls_result {
	int ok;
	long long calls;
	int64_t promised_us, waited_us;
};

struct qc_calls {
	const struct opt *o;
	int argc;
	char **argv;
	char keys[QC_MAX_WAITS][OPT_KEY_MAX + 16];
	struct bench_gate gate;
	struct qc_calls_result *res;
};

static int qc_calls_child(int i, void *arg)
{
	struct qc_calls *k = arg;
	struct qc_calls_result *r = &k->res[i];
	struct slot_result res;
	struct slot_place place;
	enum slot_verdict v;
	int64_t t0, admitted_us;

	bench_place(&place, i);
	bench_gate_wait(&k->gate);
	qc_formatted = 0;
	t0 = fstime_mono_us();
	v = bench_login(k->o, k->argc, k->argv, k->keys[i], &place, &res, &admitted_us);
	if (v != SLOT_ADMIT && v != SLOT_QUEUED)
		return 1;
	r->calls = qc_formatted; /* no password: no AUTH, every command is a script call */
	r->promised_us = res.wait_us;
	r->waited_us = admitted_us - t0;
	r->ok = 1;
	return 0;
}

static int qc_calls_main(int argc, char **argv)
{
	static int pids[QC_MAX_WAITS];
	long waits[QC_MAX_WAITS];
	struct qc_calls k = { 0 };
	struct opt o;
	struct bench_cmdstats st;
	struct slot_place warm_place;
	struct slot_result warm;
	redisContext *c;
	char list[256], *tok, *save = NULL;
	int n = 0, ready, failed;
	long long calls = 0, server;

	if (argc < 1 || strlen(argv[0]) >= sizeof(list)) {
		fprintf(stderr, "usage: queuecost calls WAIT_S[,WAIT_S...] OPTION...\n");
		return 2;
	}
	snprintf(list, sizeof(list), "%s", argv[0]);
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (n == QC_MAX_WAITS) {
			fprintf(stderr, "queuecost: at most %d waits\n", QC_MAX_WAITS);
			return 2;
		}
		waits[n++] = qc_number(tok, 0, 600, "wait");
	}
	bench_opt(&o, argc - 1, argv + 1);
	k.o = &o;
	k.argc = argc - 1;
	k.argv = argv + 1;
	k.res = bench_shared(sizeof(*k.res) * (size_t)n);
	c = bench_connect(&o);
	/* The script loaded before the count: a login after a Redis restart pays one more. */
	snprintf(k.keys[0], sizeof(k.keys[0]), "%s:warm", o.key);
	bench_place(&warm_place, -1);
	if (rslot_call(NULL, &o, SLOT_RESERVE, k.keys[0], &warm_place, &warm) != SLOT_ADMIT) {
		fprintf(stderr, "queuecost: the warm-up reservation failed\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		snprintf(k.keys[i], sizeof(k.keys[i]), "%s:%d", o.key, i);
		if (waits[i] > 0)
			qc_head(c, k.keys[i], (int64_t)waits[i] * 1000000);
	}
	freeReplyObject(bench_command(c, "CONFIG RESETSTAT"));
	bench_gate_init(&k.gate);
	bench_fork(n, qc_calls_child, &k, pids);
	bench_gate_open(&k.gate, n, 30000000, &ready);
	failed = bench_reap(n, pids);
	bench_cmdstats(c, &st);
	redisFree(c);
	server = bench_cmdstats_calls(&st, "evalsha") + bench_cmdstats_calls(&st, "eval");
	for (int i = 0; i < n; i++) {
		const struct qc_calls_result *r = &k.res[i];

		calls += r->calls;
		printf("wait_s=%ld ok=%d promised_s=%.3f waited_s=%.3f calls=%lld\n", waits[i],
		       r->ok, qc_s(r->promised_us), qc_s(r->waited_us), r->calls);
	}
	printf("total logins=%d ready=%d failed=%d calls=%lld server_script_calls=%lld\n", n,
	       ready, failed, calls, server);
	return failed != 0 || ready != n;
}

/* --- hold ------------------------------------------------------------------------------ */

/* The server's CPU time, user and system, in microseconds (INFO cpu: its getrusage, to the
   microsecond, where /proc's clock ticks are 10 ms); -1 when unreadable. */
static double qc_cpu_us(redisContext *c)
{
	redisReply *r = bench_command(c, "INFO cpu");
	const char *sys = strstr(r->str, "\nused_cpu_sys:"), *user = strstr(r->str, "\nused_cpu_user:");
	double v = -1;

	if (sys != NULL && user != NULL)
		v = (strtod(sys + strlen("\nused_cpu_sys:"), NULL) +
		     strtod(user + strlen("\nused_cpu_user:"), NULL)) * 1e6;
	freeReplyObject(r);
	return v;
}

/* The calls and the microseconds of server time of EVALSHA since CONFIG RESETSTAT (INFO
   commandstats: the script and its commands, no connection nor round trip). */
static void qc_evalsha(redisContext *c, long long *calls, long long *usec)
{
	redisReply *r = bench_command(c, "INFO commandstats");
	const char *p = strstr(r->str, "\ncmdstat_evalsha:");

	*calls = *usec = 0;
	if (p != NULL && sscanf(p, "\ncmdstat_evalsha:calls=%lld,usec=%lld", calls, usec) != 2)
		*calls = *usec = 0;
	freeReplyObject(r);
}

/* --- spread --------------------------------------------------------------------------- */

/* One waiter of the steady queue: its place, and when it renews next. */
struct qc_waiter {
	struct slot_place place;
	int64_t due_us;
};

/* What one worker counted in the measured window, in shared memory. */
struct qc_spread_count {
	long long calls, admitted, refused, failed, late, over_margin;
	int64_t late_max_us;
	int held; /* places it holds at the end */
};

struct qc_spread {
	const struct opt *o;
	int n, workers, fit;
	int64_t window0_us, window1_us; /* CLOCK_MONOTONIC: the measured window */
	struct qc_waiter *w;		 /* all of them; worker k owns those i % workers == k */
	struct qc_spread_count *count;
};

/* When a waiter answered res by a call that began at began_us renews: as the module does
   (fit: slot_renew_us, and at its slot), or as it did before leases fit the wait (fixed:
   every SLOT_RENEW_US). */
static int64_t qc_next_due(const struct qc_spread *k, const struct slot_result *res,
			   int64_t began_us)
{
	int64_t due_us = began_us + (k->fit ? slot_renew_us(res->wait_us, res->sched_interval_us)
					    : SLOT_RENEW_US);

	return due_us < res->deadline_us ? due_us : res->deadline_us;
}

/* A min-heap of waiter indexes by due time. */
static void qc_heap_down(const struct qc_waiter *w, int *h, int n, int i)
{
	for (;;) {
		int l = 2 * i + 1, m = i, t;

		if (l < n && w[h[l]].due_us < w[h[m]].due_us)
			m = l;
		if (l + 1 < n && w[h[l + 1]].due_us < w[h[m]].due_us)
			m = l + 1;
		if (m == i)
			return;
		t = h[i], h[i] = h[m], h[m] = t;
		i = m;
	}
}

/* A newcomer in an admitted waiter's stead, at the back: the queue keeps its length, as one
   in a steady state does, where logins arrive as fast as they go in. */
static void qc_arrive(const struct qc_spread *k, int i, int serial)
{
	struct qc_waiter *w = &k->w[i];
	struct slot_result res;
	int64_t began_us = fstime_mono_us();

	bench_place(&w->place, serial);
	snprintf(w->place.who, sizeof(w->place.who), "%08x%08x", (unsigned)getpid(),
		 (unsigned)serial);
	snprintf(w->place.host, sizeof(w->place.host), "%016x", (unsigned)serial % 64);
	if (rslot_call(NULL, k->o, SLOT_RESERVE, k->o->key, &w->place, &res) == SLOT_QUEUED)
		w->due_us = qc_next_due(k, &res, began_us);
	else
		w->due_us = began_us + SLOT_RENEW_US; /* tried again as a renewal */
}

static int qc_spread_worker(int me, void *arg)
{
	const struct qc_spread *k = arg;
	struct qc_spread_count *c = &k->count[me];
	int *heap = calloc((size_t)k->n / (size_t)k->workers + 1, sizeof(*heap)), n = 0,
	    serial = 1 << 20;

	if (heap == NULL)
		return 1;
	for (int i = me; i < k->n; i += k->workers)
		heap[n++] = i;
	for (int i = n / 2 - 1; i >= 0; i--)
		qc_heap_down(k->w, heap, n, i);
	while (n > 0 && k->w[heap[0]].due_us < k->window1_us) {
		struct qc_waiter *w = &k->w[heap[0]];
		struct slot_result res;
		int64_t began_us, late;
		enum slot_verdict v;
		bool counted;

		fstime_sleep_until(w->due_us);
		began_us = fstime_mono_us();
		counted = began_us >= k->window0_us && began_us < k->window1_us;
		late = began_us - w->due_us;
		v = rslot_call(NULL, k->o, SLOT_RENEW, k->o->key, &w->place, &res);
		if (counted) {
			c->calls++;
			if (late > c->late_max_us)
				c->late_max_us = late;
			c->late += late > 1000000;
			c->over_margin += late > SLOT_LEASE_US - SLOT_RENEW_US;
		}
		if (v == SLOT_QUEUED) {
			w->due_us = qc_next_due(k, &res, began_us);
		} else if (v == SLOT_ADMIT) {
			c->admitted += counted;
			qc_arrive(k, heap[0], serial++);
			c->calls += counted;
		} else {
			c->refused += counted && v == SLOT_REFUSE;
			c->failed += counted && v != SLOT_REFUSE;
			qc_arrive(k, heap[0], serial++);
		}
		qc_heap_down(k->w, heap, n, 0);
	}
	c->held = n;
	free(heap);
	return 0;
}

static int qc_spread_main(int argc, char **argv)
{
	static int pids[64];
	struct qc_spread k = { 0 };
	struct qc_spread_count all = { 0 };
	struct opt o;
	struct slot_result res;
	struct slot_place warm_place;
	redisContext *c;
	char warm_key[OPT_KEY_MAX + 8];
	int seconds, warm_s, idle_s, queued = 0, failed;
	long long mem_head, mem_held, key_bytes, places_end, script_calls, script_us;
	double cpu0, cpu1, idle0, idle1;
	int64_t t, fill_us, idle_us;
	unsigned rnd = 1;

	if (argc < 6 || (strcmp(argv[0], "fit") != 0 && strcmp(argv[0], "fixed") != 0)) {
		fprintf(stderr, "usage: queuecost spread fit|fixed N SECONDS WARM_S IDLE_S WORKERS "
				"OPTION...\n");
		return 2;
	}
	k.fit = strcmp(argv[0], "fit") == 0;
	k.n = (int)qc_number(argv[1], 1, QC_MAX_HOLD, "N");
	seconds = (int)qc_number(argv[2], 1, 600, "SECONDS");
	warm_s = (int)qc_number(argv[3], 0, 600, "WARM_S");
	idle_s = (int)qc_number(argv[4], 1, 600, "IDLE_S");
	k.workers = (int)qc_number(argv[5], 1, 64, "WORKERS");
	bench_opt(&o, argc - 6, argv + 6);
	/* Past any max_wait an option allows: the longest realistic queues are the point. */
	o.slot.max_wait_us = (int64_t)(k.n + 10) * o.slot.interval_us + 3600000000LL;
	k.o = &o;
	k.w = bench_shared(sizeof(*k.w) * (size_t)k.n);
	k.count = bench_shared(sizeof(*k.count) * (size_t)k.workers);
	c = bench_connect(&o);

	/* Every command involved runs once before the first sample (Redis 7 allocates a latency
	   histogram for each at its first call); then everything is flushed. */
	snprintf(warm_key, sizeof(warm_key), "%s:warm", o.key);
	qc_head(c, warm_key, 60000000);
	bench_place(&warm_place, -1);
	if (rslot_call(NULL, &o, SLOT_RESERVE, warm_key, &warm_place, &res) != SLOT_QUEUED ||
	    qc_key_bytes(c, warm_key) <= 0 ||
	    rslot_call(NULL, &o, SLOT_RENEW, warm_key, &warm_place, &res) != SLOT_QUEUED ||
	    rslot_call(NULL, &o, SLOT_LEAVE, warm_key, &warm_place, &res) != SLOT_ADMIT) {
		fprintf(stderr, "queuecost: the warm-up place failed\n");
		return 1;
	}
	qc_dbsize(c);
	qc_sample(c, &o);
	freeReplyObject(bench_command(c, "FLUSHALL SYNC"));

	/* The server idle, empty, for a few seconds: its own tick. */
	idle0 = qc_cpu_us(c);
	t = fstime_mono_us();
	fstime_sleep_until(t + (int64_t)idle_s * 1000000);
	idle1 = qc_cpu_us(c);
	idle_us = fstime_mono_us() - t;
	mem_head = qc_sample(c, &o);

	/* N logins queue at once, in order: their waits spread from 0 to N intervals. Each
	   renews first at a random point of its first period, as in a queue that has run a
	   while, rather than all in step. */
	t = fstime_mono_us();
	for (int i = 0; i < k.n; i++) {
		struct qc_waiter *w = &k.w[i];
		int64_t began_us = fstime_mono_us(), period_us;

		bench_place(&w->place, i);
		snprintf(w->place.who, sizeof(w->place.who), "%016x", (unsigned)i);
		snprintf(w->place.host, sizeof(w->place.host), "%016x", (unsigned)i % 64);
		if (rslot_call(NULL, &o, SLOT_RESERVE, o.key, &w->place, &res) == SLOT_QUEUED)
			queued++;
		else
			res.wait_us = 0, res.deadline_us = began_us; /* admitted: due now, arrives anew */
		period_us = qc_next_due(&k, &res, began_us) - began_us;
		rnd = rnd * 1103515245u + 12345u;
		w->due_us = began_us + (int64_t)((double)(rnd >> 8) / (double)(1u << 24) *
						 (double)period_us);
	}
	fill_us = fstime_mono_us() - t;
	mem_held = qc_sample(c, &o);
	key_bytes = qc_key_bytes(c, o.key);

	k.window0_us = fstime_mono_us() + (int64_t)warm_s * 1000000;
	k.window1_us = k.window0_us + (int64_t)seconds * 1000000;
	bench_fork(k.workers, qc_spread_worker, &k, pids);
	fstime_sleep_until(k.window0_us);
	freeReplyObject(bench_command(c, "CONFIG RESETSTAT"));
	cpu0 = qc_cpu_us(c);
	fstime_sleep_until(k.window1_us);
	cpu1 = qc_cpu_us(c);
	qc_evalsha(c, &script_calls, &script_us);
	failed = bench_reap(k.workers, pids);
	places_end = qc_fields(c, o.key, "w:");
	redisFree(c);
	for (int i = 0; i < k.workers; i++) {
		all.calls += k.count[i].calls;
		all.admitted += k.count[i].admitted;
		all.refused += k.count[i].refused;
		all.failed += k.count[i].failed;
		all.late += k.count[i].late;
		all.over_margin += k.count[i].over_margin;
		if (k.count[i].late_max_us > all.late_max_us)
			all.late_max_us = k.count[i].late_max_us;
	}
	printf("mode=%s n=%d interval_s=%.3f seconds=%d warm_s=%d workers=%d queued=%d "
	       "fill_s=%.3f calls=%lld calls_per_s=%.2f admitted=%lld refused=%lld failed=%lld "
	       "late=%lld late_max_ms=%.1f over_margin=%lld places_end=%lld cpu_pct=%.3f "
	       "cpu_us_per_call=%.1f cpu_us_per_waiter_s=%.4f idle_cpu_pct=%.3f "
	       "script_calls=%lld script_us_per_call=%.1f mem_head=%lld mem_held=%lld "
	       "bytes_per_waiter=%.1f key_bytes_per_waiter=%.1f\n",
	       k.fit ? "fit" : "fixed", k.n, qc_s(o.slot.interval_us), seconds, warm_s, k.workers,
	       queued, qc_s(fill_us), all.calls, (double)all.calls / seconds, all.admitted,
	       all.refused, all.failed, all.late, (double)all.late_max_us / 1000.0,
	       all.over_margin, places_end, (cpu1 - cpu0) / 1e4 / seconds,
	       all.calls > 0 ? (cpu1 - cpu0) / (double)all.calls : 0.0,
	       (cpu1 - cpu0) / ((double)k.n * seconds), (idle1 - idle0) / 1e4 / qc_s(idle_us),
	       script_calls, script_calls > 0 ? (double)script_us / (double)script_calls : 0.0,
	       mem_head, mem_held,
	       (double)(mem_held - mem_head) / (double)k.n, (double)key_bytes / (double)k.n);
	return failed != 0 || all.failed != 0 || idle0 < 0 || cpu0 < 0;
}

/* --- drain ----------------------------------------------------------------------------- */

struct qc_drain_result {
	int answered; /* the reservation has its answer */
	int admitted;
	int64_t admitted_us;
	long long calls;
};

struct qc_drain {
	int fixed;
	const struct opt *o;
	int argc;
	char **argv;
	int64_t t0_us; /* the first arrival */
	struct bench_gate gate;
	struct qc_drain_result *res;
};

/* The previous design: one fixed slot, then a sleep until it. */
static int qc_drain_fixed(const struct qc_drain *k, struct qc_drain_result *r)
{
	redisContext *c = bench_connect(k->o);
	redisReply *rep;
	int64_t wait_us, deadline;

	rep = redisCommand(c, "EVAL %s 1 %s %lld 1 %lld", qc_fixed_lua, k->o->key,
			   (long long)k->o->slot.interval_us, (long long)k->o->slot.max_wait_us);
	r->calls = 1;
	if (rep == NULL || rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
	    rep->element[0]->integer != 1) {
		fprintf(stderr, "queuecost: the fixed slot: %s\n",
			rep && rep->type == REDIS_REPLY_ERROR ? rep->str : "refused or lost");
		freeReplyObject(rep);
		redisFree(c);
		return 1;
	}
	wait_us = rep->element[1]->integer;
	deadline = fstime_mono_us() + wait_us;
	freeReplyObject(rep);
	redisFree(c);
	__atomic_store_n(&r->answered, 1, __ATOMIC_SEQ_CST);
	fstime_sleep_until(deadline);
	r->admitted_us = fstime_mono_us();
	r->admitted = 1;
	return 0;
}

static int qc_drain_child(int i, void *arg)
{
	struct qc_drain *k = arg;
	struct qc_drain_result *r = &k->res[i];
	struct slot_result res;
	struct slot_place place;
	enum slot_verdict v;
	int64_t admitted_us;

	bench_place(&place, i);
	snprintf(place.who, sizeof(place.who), "%016x", (unsigned)i);
	bench_gate_wait(&k->gate);
	/* In order of i, 10 ms apart: the k-th to arrive is the k-th in line. */
	fstime_sleep_until(k->t0_us + (int64_t)i * 10000);
	if (k->fixed)
		return qc_drain_fixed(k, r);
	qc_formatted = 0;
	/* bench_login answers only once let in: a queued login is marked answered from its
	   first call on, by the renewals' count. */
	v = bench_login(k->o, k->argc, k->argv, k->o->key, &place, &res, &admitted_us);
	if (v != SLOT_ADMIT && v != SLOT_QUEUED)
		return 1;
	r->calls = qc_formatted;
	r->admitted_us = admitted_us;
	r->admitted = 1;
	return 0;
}

/* Counts the reservations answered: for the queue, from the server's script calls. */
static long long qc_script_calls(redisContext *c)
{
	struct bench_cmdstats st;

	bench_cmdstats(c, &st);
	return bench_cmdstats_calls(&st, "evalsha") + bench_cmdstats_calls(&st, "eval");
}

static int qc_drain_main(int argc, char **argv)
{
	static int pids[QC_MAX_DRAIN];
	struct qc_drain k = { 0 };
	struct opt o;
	struct slot_result res;
	struct slot_place warm_place;
	redisContext *c;
	char warm_key[OPT_KEY_MAX + 8];
	int n, every, ready, killed = 0, live = 0, admitted = 0, answered = 0, failed;
	int64_t t0, killed_at = 0, last = 0, first = 0;
	long long calls = 0;

	if (argc < 3 || (strcmp(argv[0], "queue") != 0 && strcmp(argv[0], "fixed") != 0)) {
		fprintf(stderr, "usage: queuecost drain queue|fixed N KILL_EVERY OPTION...\n");
		return 2;
	}
	k.fixed = strcmp(argv[0], "fixed") == 0;
	n = (int)qc_number(argv[1], 2, QC_MAX_DRAIN, "N");
	every = (int)qc_number(argv[2], 2, QC_MAX_DRAIN, "KILL_EVERY");
	bench_opt(&o, argc - 3, argv + 3);
	k.o = &o;
	k.argc = argc - 3;
	k.argv = argv + 3;
	k.res = bench_shared(sizeof(*k.res) * (size_t)n);
	c = bench_connect(&o);
	snprintf(warm_key, sizeof(warm_key), "%s:warm", o.key);
	bench_place(&warm_place, -1);
	if (rslot_call(NULL, &o, SLOT_RESERVE, warm_key, &warm_place, &res) != SLOT_ADMIT) {
		fprintf(stderr, "queuecost: the warm-up reservation failed\n");
		return 1;
	}
	freeReplyObject(bench_command(c, "CONFIG RESETSTAT"));

	bench_gate_init(&k.gate);
	/* The children read t0_us after the gate opens: set it a little ahead of the release. */
	k.t0_us = fstime_mono_us() + 2000000;
	bench_fork(n, qc_drain_child, &k, pids);
	t0 = bench_gate_open(&k.gate, n, 1900000, &ready);
	if (t0 > k.t0_us)
		fprintf(stderr, "queuecost: the gate opened %.3f s late\n", qc_s(t0 - k.t0_us));
	/* Until every login has its answer (at most 30 s), then the kills. */
	for (t0 = fstime_mono_us(); fstime_mono_us() - t0 < 30000000;) {
		answered = 0;
		if (k.fixed) {
			for (int i = 0; i < n; i++)
				answered += __atomic_load_n(&k.res[i].answered, __ATOMIC_SEQ_CST);
		} else {
			answered = (int)qc_script_calls(c);
		}
		if (answered >= n)
			break;
		fstime_sleep_until(fstime_mono_us() + 5000);
	}
	fstime_sleep_until(fstime_mono_us() + 100000);
	killed_at = fstime_mono_us();
	for (int i = every - 1; i < n; i += every) {
		kill(pids[i], SIGKILL);
		killed++;
	}
	failed = bench_reap(n, pids) - killed;
	redisFree(c);
	for (int i = 0; i < n; i++) {
		const struct qc_drain_result *r = &k.res[i];

		if ((i + 1) % every == 0)
			continue;
		live++;
		calls += r->calls;
		if (!r->admitted)
			continue;
		admitted++;
		if (r->admitted_us > last)
			last = r->admitted_us;
		if (first == 0 || r->admitted_us < first)
			first = r->admitted_us;
	}
	printf("mode=%s n=%d ready=%d killed=%d live=%d admitted=%d failed=%d interval_s=%.3f "
	       "killed_at_s=%.3f first_admitted_s=%.3f last_admitted_s=%.3f "
	       "ideal_last_s=%.3f calls_per_live=%.2f\n",
	       k.fixed ? "fixed" : "queue", n, ready, killed, live, admitted, failed,
	       qc_s(o.slot.interval_us), qc_s(killed_at - k.t0_us), qc_s(first - k.t0_us),
	       qc_s(last - k.t0_us), qc_s((int64_t)(live - 1) * o.slot.interval_us),
	       live > 0 ? (double)calls / live : 0.0);
	return failed != 0 || admitted != live;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "calls") == 0)
		return qc_calls_main(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "spread") == 0)
		return qc_spread_main(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "drain") == 0)
		return qc_drain_main(argc - 2, argv + 2);
	fprintf(stderr, "usage: queuecost calls|spread|drain ...\n");
	return 2;
}
