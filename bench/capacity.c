/* SPDX-License-Identifier: BSD-3-Clause */
/* Measurement 4: decision capacity.
 *
 *   capacity P SECONDS OPTION...
 *
 * P processes call rslot_call(SLOT_RESERVE), the module's own code path (a connection, one
 * script call, a close, per decision), back to back on one schedule for SECONDS, all starting
 * at the same instant, each decision for a place of its own. A queued place is not renewed:
 * it lapses after its lease (5 s), like that of a login that died. Prints the decisions made
 * per second, by verdict, as name=value pairs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "flowslot/fstime.h"
#include "flowslot/rslot.h"

#define CAPACITY_MAX_P 1000

struct capacity_result {
	long long admit, queued, refuse, unavailable;
};

struct capacity {
	const struct opt *o;
	int64_t run_us;
	struct bench_gate gate;
	struct capacity_result *res;
};

static int capacity_child(int i, void *arg)
{
	struct capacity *k = arg;
	struct capacity_result *r = &k->res[i];
	struct slot_result res;
	struct slot_place place;
	int64_t end;
	int n = 0;

	bench_gate_wait(&k->gate);
	end = fstime_mono_us() + k->run_us;
	while (fstime_mono_us() < end) {
		bench_place(&place, i * 1000000 + n++);
		switch (rslot_call(NULL, k->o, SLOT_RESERVE, k->o->key, &place, &res)) {
		case SLOT_ADMIT:
			r->admit++;
			break;
		case SLOT_QUEUED:
			r->queued++;
			break;
		case SLOT_REFUSE:
		case SLOT_REFUSE_HOST:
			r->refuse++;
			break;
		default:
			r->unavailable++;
			break;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static int pids[CAPACITY_MAX_P];
	struct capacity k;
	struct opt o;
	struct slot_result warm;
	struct slot_place warm_place;
	long long admit = 0, queued = 0, refuse = 0, unavailable = 0;
	int p, ready, failed;
	double seconds, elapsed;
	int64_t t0;

	if (argc < 3 || (p = atoi(argv[1])) < 1 || p > CAPACITY_MAX_P ||
	    (seconds = atof(argv[2])) <= 0 || seconds > 60) {
		fprintf(stderr, "usage: capacity P SECONDS OPTION...\n");
		return 2;
	}
	bench_opt(&o, argc - 3, argv + 3);
	k.o = &o;
	k.run_us = (int64_t)(seconds * 1e6);
	k.res = bench_shared(sizeof(*k.res) * (size_t)p);
	/* The script is loaded before the clock starts. */
	bench_place(&warm_place, -1);
	if (rslot_call(NULL, &o, SLOT_RESERVE, o.key, &warm_place, &warm) != SLOT_ADMIT) {
		fprintf(stderr, "capacity: the warm-up reservation failed\n");
		return 1;
	}

	bench_gate_init(&k.gate);
	bench_fork(p, capacity_child, &k, pids);
	t0 = bench_gate_open(&k.gate, p, 30000000, &ready);
	failed = bench_reap(p, pids);
	elapsed = (double)(fstime_mono_us() - t0) / 1e6;

	for (int i = 0; i < p; i++) {
		admit += k.res[i].admit;
		queued += k.res[i].queued;
		refuse += k.res[i].refuse;
		unavailable += k.res[i].unavailable;
	}
	printf("clients=%d ready=%d failed=%d seconds=%.3f decisions=%lld admit=%lld queued=%lld "
	       "refuse=%lld unavailable=%lld per_second=%.0f\n",
	       p, ready, failed, elapsed, admit + queued + refuse, admit, queued, refuse,
	       unavailable, (double)(admit + queued + refuse) / elapsed);
	return failed != 0 || ready != p;
}
