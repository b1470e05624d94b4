/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the benchmark clients in bench/: options through the module's own parser, a start
   gate that releases many processes at the same instant, results in shared memory, and
   percentiles. Not part of the module. */
#ifndef FLOWSLOT_BENCH_H
#define FLOWSLOT_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "flowslot/opt.h"
#include "flowslot/slot.h"

/* Applies opt_defaults, then each "name=value" of argv through opt_set, as the module does
   with its arguments (no configuration file is read). Exits on a bad option, and without a
   state_dir= of the caller's. */
void bench_opt(struct opt *o, int argc, char **argv);

/* A connection of our own to the server named by o->url, for INFO and the like. */
redisContext *bench_connect(const struct opt *o);

/* A place of its own for simulated login i of this process's run: a unique id (pid, i and
   the time), no who and no host. */
void bench_place(struct slot_place *p, int i);

/* One login as the module makes it: reserves on key (rslot_call) and, when queued, waits as
   the module does (queue_wait, no conversation, nothing watched), renewing the place with the
   options read afresh from argv, the module arguments o came from. Returns the verdict of
   the reservation, with its answer in res (deadline_us: the slot it promised); for SLOT_ADMIT
   and SLOT_QUEUED, *admitted_us is when the login was let in (CLOCK_MONOTONIC). */
enum slot_verdict bench_login(const struct opt *o, int argc, char **argv, const char *key,
			      const struct slot_place *place, struct slot_result *res,
			      int64_t *admitted_us);

/* Runs a command that must not fail; exits if it does. */
redisReply *bench_command(redisContext *c, const char *cmd);

/* The "calls" of every command in INFO commandstats, reset by CONFIG RESETSTAT. */
struct bench_cmdstats {
	size_t n;
	struct {
		char name[48];
		long long calls;
	} cmd[64];
};

void bench_cmdstats(redisContext *c, struct bench_cmdstats *s);
long long bench_cmdstats_calls(const struct bench_cmdstats *s, const char *name);

/* One integer field ("used_memory") of INFO; -1 when missing. */
long long bench_info_field(redisContext *c, const char *section, const char *field);

/* Memory that forked children share with the parent, zeroed. Exits when it cannot. */
void *bench_shared(size_t size);

/* The start gate: n children each call bench_gate_wait, which returns when the parent calls
   bench_gate_open; the parent's call returns only once every child is blocked in the gate (or
   after timeout_us, with the number that were), and the CLOCK_MONOTONIC time of release. */
struct bench_gate {
	int fd[2];
	int *ready; /* shared */
};

void bench_gate_init(struct bench_gate *g);
void bench_gate_wait(struct bench_gate *g);
int64_t bench_gate_open(struct bench_gate *g, int n, int64_t timeout_us, int *ready_out);

/* Forks n children, each running child(i, arg) and exiting with its return; the parent gets
   the pids in pids[]. Exits when a fork fails, after killing those already started. */
void bench_fork(int n, int (*child)(int i, void *arg), void *arg, int *pids);

/* Waits for each pid in pids[]; returns how many did not exit 0. */
int bench_reap(int n, const int *pids);

/* Nearest-rank percentile (0 to 100) of v[0..n-1], which it sorts. */
int64_t bench_percentile(int64_t *v, size_t n, double p);

/* CLOCK_REALTIME in microseconds: the clock that login hosts share, for the alternatives. */
int64_t bench_real_us(void);

#endif
