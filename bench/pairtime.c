/* SPDX-License-Identifier: BSD-3-Clause */
/* Measurements 2, 12 and 13: the time that a command B adds to a command A, pair by pair.
 *
 *   pairtime ROUNDS RAW LOG_A LOG_B -- A... -- B...
 *
 * Runs A and B one after the other ROUNDS times (after 5 pairs not counted), in alternating
 * order so that neither always runs second, timing each from spawn to exit on
 * CLOCK_MONOTONIC. Their output is appended to LOG_A and LOG_B; a non-zero exit is counted
 * as a failure, and why is noted in the log. RAW gets "a_us b_us a_failed b_failed a_cpu_us
 * b_cpu_us" per pair (failed: 0 or 1; cpu: the CPU time, user and system, of the command and
 * the children it waited for, which another process's load changes less than the wall time);
 * stdout a summary line of name=value pairs, over all the pairs: the medians of A and B, the
 * median of the per-pair ratio B/A, the median, p99 and extremes of the per-pair difference
 * B - A, and the medians of the CPU times and of their per-pair difference.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAIRTIME_WARMUP 5
#define PAIRTIME_MAX 100000

extern char **environ;

static int64_t pairtime_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Appends to log why a run failed: it could not start (spawned, an errno), or its status. */
static void pairtime_note(const char *log, char *const *argv, int spawned, int status)
{
	FILE *f = fopen(log, "ae");

	if (f == NULL)
		return;
	if (spawned != 0)
		fprintf(f, "pairtime: cannot start %s: %s\n", argv[0], strerror(spawned));
	else if (WIFEXITED(status))
		fprintf(f, "pairtime: %s exited with %d\n", argv[0], WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		fprintf(f, "pairtime: %s killed by signal %d\n", argv[0], WTERMSIG(status));
	fclose(f);
}

/* Runs argv with its output appended to log; returns the time it took, *cpu_us the CPU time
   (user and system) of the process and its waited-for children, and *failed (why, in the
   log). */
static int64_t pairtime_run(char **argv, const char *log, int64_t *cpu_us, int *failed)
{
	struct rusage ru = { 0 };
	posix_spawn_file_actions_t fa;
	int64_t t0, t1;
	pid_t pid;
	int status = -1, spawned;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_APPEND | O_CREAT, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	t0 = pairtime_now_us();
	spawned = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	if (spawned == 0)
		while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
			;
	t1 = pairtime_now_us();
	*cpu_us = (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
		  ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	posix_spawn_file_actions_destroy(&fa);
	*failed = spawned != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	if (*failed)
		pairtime_note(log, argv, spawned, status);
	return t1 - t0;
}

static int pairtime_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int pairtime_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest rank, on a sorted array. */
static size_t pairtime_rank(size_t n, int p)
{
	size_t r = (n * (size_t)p + 99) / 100;

	return r < 1 ? 0 : r - 1;
}

int main(int argc, char **argv)
{
	static int64_t a[PAIRTIME_MAX], b[PAIRTIME_MAX], d[PAIRTIME_MAX];
	static int64_t ca[PAIRTIME_MAX], cb[PAIRTIME_MAX], cd[PAIRTIME_MAX];
	static double ratio[PAIRTIME_MAX];
	char **cmd_a = NULL, **cmd_b = NULL;
	int rounds, fail_a = 0, fail_b = 0;
	FILE *raw;

	if (argc < 8 || (rounds = atoi(argv[1])) < 1 || rounds > PAIRTIME_MAX ||
	    strcmp(argv[5], "--") != 0) {
		fprintf(stderr, "usage: pairtime ROUNDS RAW LOG_A LOG_B -- A... -- B...\n");
		return 2;
	}
	cmd_a = argv + 6;
	for (int i = 6; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			argv[i] = NULL;
			cmd_b = argv + i + 1;
			break;
		}
	}
	if (cmd_b == NULL || cmd_b[0] == NULL) {
		fprintf(stderr, "pairtime: no command B\n");
		return 2;
	}
	raw = fopen(argv[2], "w");
	if (raw == NULL) {
		perror(argv[2]);
		return 1;
	}
	for (int i = -PAIRTIME_WARMUP; i < rounds; i++) {
		int fa, fb;
		int64_t ta, tb, ua, ub;

		if (i % 2 == 0) {
			ta = pairtime_run(cmd_a, argv[3], &ua, &fa);
			tb = pairtime_run(cmd_b, argv[4], &ub, &fb);
		} else {
			tb = pairtime_run(cmd_b, argv[4], &ub, &fb);
			ta = pairtime_run(cmd_a, argv[3], &ua, &fa);
		}
		if (i < 0)
			continue;
		fail_a += fa;
		fail_b += fb;
		a[i] = ta;
		b[i] = tb;
		d[i] = tb - ta;
		ratio[i] = (double)tb / (double)ta;
		ca[i] = ua;
		cb[i] = ub;
		cd[i] = ub - ua;
		fprintf(raw, "%" PRId64 " %" PRId64 " %d %d %" PRId64 " %" PRId64 "\n", ta, tb, fa,
			fb, ua, ub);
	}
	fclose(raw);
	qsort(a, (size_t)rounds, sizeof(a[0]), pairtime_cmp_i64);
	qsort(b, (size_t)rounds, sizeof(b[0]), pairtime_cmp_i64);
	qsort(d, (size_t)rounds, sizeof(d[0]), pairtime_cmp_i64);
	qsort(ratio, (size_t)rounds, sizeof(ratio[0]), pairtime_cmp_double);
	qsort(ca, (size_t)rounds, sizeof(ca[0]), pairtime_cmp_i64);
	qsort(cb, (size_t)rounds, sizeof(cb[0]), pairtime_cmp_i64);
	qsort(cd, (size_t)rounds, sizeof(cd[0]), pairtime_cmp_i64);
	printf("pairs=%d fail_a=%d fail_b=%d a_median_us=%" PRId64 " b_median_us=%" PRId64
	       " ratio_median=%.3f ratio_p99=%.3f diff_min_us=%" PRId64 " diff_median_us=%" PRId64
	       " diff_p99_us=%" PRId64 " diff_max_us=%" PRId64 " a_cpu_median_us=%" PRId64
	       " b_cpu_median_us=%" PRId64 " cpu_diff_median_us=%" PRId64 "\n",
	       rounds, fail_a, fail_b, a[pairtime_rank((size_t)rounds, 50)],
	       b[pairtime_rank((size_t)rounds, 50)], ratio[pairtime_rank((size_t)rounds, 50)],
	       ratio[pairtime_rank((size_t)rounds, 99)], d[0], d[pairtime_rank((size_t)rounds, 50)],
	       d[pairtime_rank((size_t)rounds, 99)], d[rounds - 1],
	       ca[pairtime_rank((size_t)rounds, 50)], cb[pairtime_rank((size_t)rounds, 50)],
	       cd[pairtime_rank((size_t)rounds, 50)]);
	return fail_a != 0 || fail_b != 0;
}
