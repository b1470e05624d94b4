/* SPDX-License-Identifier: BSD-3-Clause */
/* Measurement 3: stagger precision.
 *
 *   stagger N CSV OPTION...
 *
 * N logins (processes) start at the same instant; each reserves its slot through the module's
 * own code path (rslot_call, options as module arguments) and, when queued, waits for it with
 * queue_wait as the module does: renewing its place every 2 s, and asking to go in at its
 * slot. Each records when it arrived, when Redis answered, the slot it was promised
 * (CLOCK_MONOTONIC) and when it was let in: at once, or when the renewal at its slot said
 * admitted. Writes one CSV row per login, times in ms from the common start, and prints a
 * summary line of name=value pairs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "flowslot/fstime.h"
#include "flowslot/rslot.h"

#define STAGGER_MAX_N 2000

struct stagger_result {
	int admitted;
	int64_t arrived_us, decided_us, deadline_us, woke_us, wait_us, position;
};

struct stagger {
	const struct opt *o;
	int argc; /* the module arguments, for queue_wait's renewals */
	char **argv;
	struct bench_gate gate;
	struct stagger_result *res;
};

static int stagger_child(int i, void *arg)
{
	struct stagger *s = arg;
	struct stagger_result *r = &s->res[i];
	struct slot_result res;
	struct slot_place place;
	enum slot_verdict v;

	bench_place(&place, i);
	bench_gate_wait(&s->gate);
	r->arrived_us = fstime_mono_us();
	v = bench_login(s->o, s->argc, s->argv, s->o->key, &place, &res, &r->woke_us);
	if (v != SLOT_ADMIT && v != SLOT_QUEUED)
		return 0;
	/* The reservation's answer: its slot counts from there (rslot_call). */
	r->deadline_us = res.deadline_us;
	r->wait_us = res.wait_us;
	r->position = res.position;
	r->decided_us = res.deadline_us - res.wait_us;
	r->admitted = 1;
	return 0;
}

static int stagger_by_woke(const void *a, const void *b)
{
	const struct stagger_result *x = a, *y = b;

	return (x->woke_us > y->woke_us) - (x->woke_us < y->woke_us);
}

static double ms(int64_t us)
{
	return (double)us / 1000.0;
}

int main(int argc, char **argv)
{
	static int pids[STAGGER_MAX_N];
	static int64_t gaps[STAGGER_MAX_N], late[STAGGER_MAX_N], offset[STAGGER_MAX_N],
	    grid[STAGGER_MAX_N];
	struct stagger s;
	struct opt o;
	struct slot_result warm;
	struct slot_place warm_place;
	char warm_key[OPT_KEY_MAX + 8];
	int n, ready, failed, admitted = 0;
	int64_t t0, drift, drift_max = 0, late_max = 0, gap_min = 0, gap_max = 0, gap_med, grid_mid;
	FILE *csv;

	if (argc < 3 || (n = atoi(argv[1])) < 2 || n > STAGGER_MAX_N) {
		fprintf(stderr, "usage: stagger N(2..%d) CSV OPTION...\n", STAGGER_MAX_N);
		return 2;
	}
	bench_opt(&o, argc - 3, argv + 3);
	s.o = &o;
	s.argc = argc - 3;
	s.argv = argv + 3;
	s.res = bench_shared(sizeof(*s.res) * (size_t)n);
	/* Loads the script (NOSCRIPT, then EVAL) before the logins, on a key of its own. */
	snprintf(warm_key, sizeof(warm_key), "%s:warm", o.key);
	bench_place(&warm_place, -1);
	if (rslot_call(NULL, &o, SLOT_RESERVE, warm_key, &warm_place, &warm) != SLOT_ADMIT) {
		fprintf(stderr, "stagger: the warm-up reservation failed\n");
		return 1;
	}
	csv = fopen(argv[2], "w");
	if (csv == NULL) {
		perror(argv[2]);
		return 1;
	}

	bench_gate_init(&s.gate);
	bench_fork(n, stagger_child, &s, pids);
	t0 = bench_gate_open(&s.gate, n, 30000000, &ready);
	failed = bench_reap(n, pids);

	qsort(s.res, (size_t)n, sizeof(s.res[0]), stagger_by_woke);
	fprintf(csv,
		"# login arrived_ms decided_ms deadline_ms admitted_ms lateness_us position\n");
	for (int i = 0; i < n; i++) {
		const struct stagger_result *r = &s.res[i];

		if (!r->admitted)
			continue; /* not admitted: sorted first, with woke_us 0 */
		fprintf(csv, "%d %.3f %.3f %.3f %.3f %" PRId64 " %" PRId64 "\n", admitted + 1,
			ms(r->arrived_us - t0), ms(r->decided_us - t0), ms(r->deadline_us - t0),
			ms(r->woke_us - t0), r->woke_us - r->deadline_us, r->position);
		late[admitted] = r->woke_us - r->deadline_us;
		if (late[admitted] > late_max)
			late_max = late[admitted];
		if (admitted > 0)
			gaps[admitted - 1] = r->woke_us - s.res[i - 1].woke_us;
		offset[admitted] = r->woke_us - admitted * o.slot.interval_us;
		admitted++;
	}
	fclose(csv);
	/* Against an exact grid: whole intervals from the median offset of all the admissions. */
	memcpy(grid, offset, sizeof(grid[0]) * (size_t)admitted);
	grid_mid = bench_percentile(grid, (size_t)admitted, 50);
	for (int i = 0; i < admitted; i++) {
		drift = offset[i] - grid_mid;
		if (llabs(drift) > llabs(drift_max))
			drift_max = drift;
	}
	if (admitted > 1) {
		gap_med = bench_percentile(gaps, (size_t)admitted - 1, 50);
		gap_min = gaps[0];
		gap_max = gaps[admitted - 2];
	} else {
		gap_med = 0;
	}
	printf("n=%d ready=%d admitted=%d failed=%d interval_ms=%.3f gap_min_ms=%.3f "
	       "gap_median_ms=%.3f gap_max_ms=%.3f late_p50_us=%" PRId64 " late_p99_us=%" PRId64
	       " late_max_us=%" PRId64 " grid_drift_max_us=%" PRId64 "\n",
	       n, ready, admitted, failed, ms(o.slot.interval_us), ms(gap_min), ms(gap_med),
	       ms(gap_max), bench_percentile(late, (size_t)admitted, 50),
	       bench_percentile(late, (size_t)admitted, 99), late_max, drift_max);
	return failed != 0 || admitted != n;
}
