/* SPDX-License-Identifier: BSD-3-Clause */
/* Measurements 7 to 9: what the queue of live waiters costs, and what it gives back.
 *
 *   queuecost calls WAIT_S[,WAIT_S...] OPTION...
 *   queuecost hold N SECONDS REDIS_PID OPTION...
 *   queuecost drain queue|fixed N KILL_EVERY OPTION...
 *
 * calls: for each WAIT_S, a login (a process) that finds the schedule taken WAIT_S seconds
 * ahead reserves and waits through the module's own code path (rslot_call, queue_wait), on a
 * key of its own, all at once; the script calls it sends are counted as rnode.c formats them
 * (-Wl,--wrap=redisFormatCommandArgv), and by the server in INFO commandstats. One line per
 * login, then a total.
 *
 * hold: one process reserves N places on one schedule whose head slot is taken 300 s ahead,
 * so that none comes to its slot, then renews each on its own 2 s cadence (rslot_call with
 * SLOT_RENEW, a connection each as the module does) for SECONDS; it reads the server's CPU
 * from /proc/REDIS_PID/stat and used_memory from INFO memory: empty, with the head slot, with
 * the N places, and once the places, no longer renewed, have lapsed and been dropped by the
 * next call (the places given up are then remembered for a minute, for retries).
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
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"
#include "flowslot/fstime.h"
#include "flowslot/rslot.h"

#define QC_MAX_WAITS 32
#define QC_MAX_HOLD 100000
#define QC_MAX_DRAIN 1000
#define QC_HEAD_US INT64_C(300000000)

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

/* The server's CPU time, user and system, in clock ticks; -1 when unreadable. */
static long long qc_cpu_ticks(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long utime, stime;
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	/* After "(comm)": state is field 3, utime 14 and stime 15. */
	p = strrchr(buf, ')');
	if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				&utime, &stime) != 2)
		return -1;
	return (long long)(utime + stime);
}

static double qc_cpu_us(const struct rusage *u)
{
	return (double)u->ru_utime.tv_sec * 1e6 + (double)u->ru_utime.tv_usec +
	       (double)u->ru_stime.tv_sec * 1e6 + (double)u->ru_stime.tv_usec;
}

static int qc_hold_main(int argc, char **argv)
{
	static struct slot_place places[QC_MAX_HOLD];
	static int64_t reserved_us[QC_MAX_HOLD];
	struct opt o;
	struct slot_result res;
	struct slot_place warm_place;
	struct rusage ru0, ru1;
	redisContext *c;
	char warm_key[OPT_KEY_MAX + 8];
	const double tick = (double)sysconf(_SC_CLK_TCK);
	long pid;
	int n, seconds, queued = 0, lost = 0;
	long long mem_empty, mem_head, mem_held, mem_renewed, mem_after, keys_held, keys_after;
	long long ghosts_after = 0;
	long long idle0, idle1, cpu0, cpu1, renewals = 0, renew_queued = 0, key_bytes;
	int64_t t, idle_us, run0, run1, last_renewal = 0, late_max = 0, gone_us = -1;

	if (argc < 4) {
		fprintf(stderr, "usage: queuecost hold N SECONDS REDIS_PID OPTION...\n");
		return 2;
	}
	n = (int)qc_number(argv[0], 1, QC_MAX_HOLD, "N");
	seconds = (int)qc_number(argv[1], 2, 600, "SECONDS");
	pid = qc_number(argv[2], 1, 1L << 30, "REDIS_PID");
	bench_opt(&o, argc - 3, argv + 3);
	c = bench_connect(&o);

	/* Every command involved runs once before the first sample: Redis 7 allocates a latency
	   histogram for each command at its first call. A place is held on a key of its own,
	   renewed and given up, then everything is flushed. */
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
	mem_empty = qc_sample(c, &o);
	qc_head(c, o.key, QC_HEAD_US);
	mem_head = qc_sample(c, &o);

	/* The server idle with the head slot alone, as long as the renewals will last. */
	idle0 = qc_cpu_ticks(pid);
	t = fstime_mono_us();
	fstime_sleep_until(t + (int64_t)seconds * 1000000);
	idle1 = qc_cpu_ticks(pid);
	idle_us = fstime_mono_us() - t;

	/* N places, each with a WHO and a HOST as a login's has. */
	for (int i = 0; i < n; i++) {
		bench_place(&places[i], i);
		snprintf(places[i].who, sizeof(places[i].who), "%016x", (unsigned)i);
		snprintf(places[i].host, sizeof(places[i].host), "%016x", (unsigned)i % 64);
		if (rslot_call(NULL, &o, SLOT_RESERVE, o.key, &places[i], &res) == SLOT_QUEUED)
			queued++;
		reserved_us[i] = fstime_mono_us();
	}
	mem_held = qc_sample(c, &o);
	keys_held = qc_dbsize(c);
	key_bytes = qc_key_bytes(c, o.key);

	/* Each place renewed every SLOT_RENEW_US from its reservation, for SECONDS. */
	getrusage(RUSAGE_SELF, &ru0);
	cpu0 = qc_cpu_ticks(pid);
	run0 = fstime_mono_us();
	for (int round = 1;; round++) {
		int64_t first = reserved_us[0] + round * SLOT_RENEW_US;

		if (first > run0 + (int64_t)seconds * 1000000)
			break;
		for (int i = 0; i < n; i++) {
			int64_t due = reserved_us[i] + round * SLOT_RENEW_US, late;

			fstime_sleep_until(due);
			late = fstime_mono_us() - due;
			if (late > late_max)
				late_max = late;
			if (late > SLOT_LEASE_US - SLOT_RENEW_US)
				lost++; /* its lease may have run out before this renewal */
			renewals++;
			if (rslot_call(NULL, &o, SLOT_RENEW, o.key, &places[i], &res) == SLOT_QUEUED)
				renew_queued++;
		}
	}
	last_renewal = fstime_mono_us();
	run1 = last_renewal;
	cpu1 = qc_cpu_ticks(pid);
	getrusage(RUSAGE_SELF, &ru1);
	mem_renewed = qc_sample(c, &o);

	/* No more renewals: the leases run out, and the next call on the schedule drops the
	   places (a probe that holds none, every 100 ms). */
	bench_place(&warm_place, -2);
	for (t = fstime_mono_us(); fstime_mono_us() - t < 30000000;) {
		rslot_call(NULL, &o, SLOT_LEAVE, o.key, &warm_place, &res);
		if (qc_fields(c, o.key, "w:") == 0) {
			gone_us = fstime_mono_us() - last_renewal;
			break;
		}
		fstime_sleep_until(fstime_mono_us() + 100000);
	}
	ghosts_after = qc_fields(c, o.key, "g:");
	keys_after = qc_dbsize(c);
	mem_after = qc_sample(c, &o);
	redisFree(c);

	printf("n=%d queued=%d seconds=%.3f renewals=%lld renew_queued=%lld renewals_per_s=%.1f "
	       "renew_late_max_ms=%.1f renew_late_over_lease=%d "
	       "idle_cpu_pct=%.2f idle_s=%.3f cpu_pct=%.2f cpu_us_per_renewal=%.1f "
	       "client_cpu_pct=%.2f mem_empty=%lld mem_head=%lld mem_held=%lld mem_renewed=%lld "
	       "mem_after=%lld bytes_per_waiter=%.1f keys_held=%lld keys_after=%lld "
	       "gone_after_s=%.1f ghosts_after=%lld key_bytes=%lld key_bytes_per_waiter=%.1f\n",
	       n, queued, qc_s(run1 - run0), renewals, renew_queued,
	       (double)renewals / qc_s(run1 - run0), (double)late_max / 1000.0, lost,
	       100.0 * (double)(idle1 - idle0) / tick / qc_s(idle_us), qc_s(idle_us),
	       100.0 * (double)(cpu1 - cpu0) / tick / qc_s(run1 - run0),
	       renewals > 0 ? (double)(cpu1 - cpu0) / tick * 1e6 / (double)renewals : 0.0,
	       100.0 * (qc_cpu_us(&ru1) - qc_cpu_us(&ru0)) / (double)(run1 - run0), mem_empty,
	       mem_head, mem_held, mem_renewed, mem_after,
	       (double)(mem_held - mem_head) / (double)n, keys_held, keys_after,
	       gone_us < 0 ? -1.0 : qc_s(gone_us), ghosts_after, key_bytes,
	       (double)key_bytes / (double)n);
	return queued != n || renew_queued != renewals || idle0 < 0 || gone_us < 0;
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
	if (argc >= 2 && strcmp(argv[1], "hold") == 0)
		return qc_hold_main(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "drain") == 0)
		return qc_drain_main(argc - 2, argv + 2);
	fprintf(stderr, "usage: queuecost calls|hold|drain ...\n");
	return 2;
}
