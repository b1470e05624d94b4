/* SPDX-License-Identifier: BSD-3-Clause */
/* Measurement 6: what an option costs a decision.
 *
 *   optcost ROUNDS OPTION... -- NAME OPTION... [-- NAME OPTION...]...
 *
 * One process, one decision at a time: each round makes one decision through rslot_reserve,
 * the module's own code path, with each configuration in turn, starting from a different one
 * each round so that none always comes first, and times it on CLOCK_MONOTONIC. A
 * configuration is the shared OPTIONs then its own; the first is the baseline. The pseudo
 * option "nocache" removes the url's cached Sentinel master from state_dir before each of its
 * decisions (untimed), as after a reboot empties /run. The pseudo option "stats" also counts
 * each decision in the host's counters in state_dir (stats_record, timed with it), as the
 * module does after every login. After 20 rounds not counted, prints
 * one line of name=value pairs per configuration: the verdicts, the connections opened and
 * commands sent (counted through -Wl,--wrap, as contend.c does), and the median, p99 and
 * extremes of its times (and its p90). Module log lines go to stderr.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "flowslot/fstime.h"
#include "flowslot/ncache.h"
#include "flowslot/rslot.h"
#include "flowslot/stats.h"

#define OPTCOST_MAX_CONF 8
#define OPTCOST_MAX_ARGS 32
#define OPTCOST_MAX_ROUNDS 100000
#define OPTCOST_WARMUP 20

struct optcost_conf {
	const char *name;
	struct opt o;
	bool nocache;
	bool stats;
	char cache[OPT_DIR_MAX + NCACHE_NAME_MAX + 2]; /* nocache: the file removed */
	int64_t *us;
	long long admit, queued, refuse, unavailable, connections, commands;
};

/* Every connection rnode.c opens and every command it formats passes through these. */
redisContext *__real_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv);
redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv);
redisContext *__real_redisConnectUnixWithTimeout(const char *path, const struct timeval tv);
redisContext *__wrap_redisConnectUnixWithTimeout(const char *path, const struct timeval tv);
int __real_redisFormatCommandArgv(char **target, int argc, const char **argv,
				  const size_t *argvlen);
int __wrap_redisFormatCommandArgv(char **target, int argc, const char **argv,
				  const size_t *argvlen);
static long long optcost_connections, optcost_commands;

redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv)
{
	optcost_connections++;
	return __real_redisConnectWithTimeout(ip, port, tv);
}

redisContext *__wrap_redisConnectUnixWithTimeout(const char *path, const struct timeval tv)
{
	optcost_connections++;
	return __real_redisConnectUnixWithTimeout(path, tv);
}

int __wrap_redisFormatCommandArgv(char **target, int argc, const char **argv, const size_t *argvlen)
{
	optcost_commands++;
	return __real_redisFormatCommandArgv(target, argc, argv, argvlen);
}

int main(int argc, char **argv)
{
	static struct optcost_conf conf[OPTCOST_MAX_CONF];
	char *args[OPTCOST_MAX_ARGS];
	int rounds, n_common = 0, n_conf = 0, i = 2;

	if (argc < 5 || (rounds = atoi(argv[1])) < 1 || rounds > OPTCOST_MAX_ROUNDS) {
		fprintf(stderr, "usage: optcost ROUNDS OPTION... -- NAME OPTION... [-- ...]\n");
		return 2;
	}
	while (i < argc && strcmp(argv[i], "--") != 0)
		i++;
	n_common = i - 2;
	if (n_common > OPTCOST_MAX_ARGS / 2) {
		fprintf(stderr, "optcost: too many options\n");
		return 2;
	}
	memcpy(args, argv + 2, sizeof(args[0]) * (size_t)n_common);
	while (i < argc) { /* at "--" */
		struct optcost_conf *c = &conf[n_conf];
		int n = n_common;

		if (n_conf == OPTCOST_MAX_CONF || ++i == argc || strcmp(argv[i], "--") == 0) {
			fprintf(stderr, "optcost: a configuration needs a name (at most %d)\n",
				OPTCOST_MAX_CONF);
			return 2;
		}
		c->name = argv[i++];
		for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
			if (strcmp(argv[i], "nocache") == 0)
				c->nocache = true;
			else if (strcmp(argv[i], "stats") == 0)
				c->stats = true;
			else if (n < OPTCOST_MAX_ARGS)
				args[n++] = argv[i];
		}
		bench_opt(&c->o, n, args);
		if (c->nocache) {
			char name[NCACHE_NAME_MAX];

			ncache_name(&c->o.url, "master", name, sizeof(name));
			snprintf(c->cache, sizeof(c->cache), "%s/%s", c->o.state_dir, name);
		}
		c->us = calloc((size_t)rounds, sizeof(c->us[0]));
		if (c->us == NULL) {
			perror("optcost");
			return 1;
		}
		n_conf++;
	}
	if (n_conf == 0) {
		fprintf(stderr, "optcost: no configuration\n");
		return 2;
	}

	for (int r = -OPTCOST_WARMUP; r < rounds; r++) {
		for (int k = 0; k < n_conf; k++) {
			struct optcost_conf *c = &conf[((r + OPTCOST_WARMUP) + k) % n_conf];
			struct slot_result res;
			struct slot_place place;
			enum slot_verdict v;
			long long conns = optcost_connections, cmds = optcost_commands;
			int64_t t0;

			if (c->nocache)
				unlink(c->cache);
			bench_place(&place, (r + OPTCOST_WARMUP) * OPTCOST_MAX_CONF + k);
			t0 = fstime_mono_us();
			v = rslot_call(NULL, &c->o, SLOT_RESERVE, c->o.key, &place, &res);
			if (c->stats)
				stats_record(NULL, c->o.state_dir, c->o.key, false,
					     v == SLOT_ADMIT ? STATS_ADMITTED : STATS_WAITED, 0);
			if (r >= 0) {
				c->us[r] = fstime_mono_us() - t0;
				c->connections += optcost_connections - conns;
				c->commands += optcost_commands - cmds;
			}
			/* A place left behind would queue every decision after it: it is given
			   back, outside the time and the counts. */
			if (v == SLOT_QUEUED)
				rslot_call(NULL, &c->o, SLOT_LEAVE, c->o.key, &place, &res);
			if (r < 0)
				continue;
			if (v == SLOT_ADMIT)
				c->admit++;
			else if (v == SLOT_QUEUED)
				c->queued++;
			else if (v == SLOT_REFUSE)
				c->refuse++;
			else
				c->unavailable++;
		}
	}

	for (int k = 0; k < n_conf; k++) {
		struct optcost_conf *c = &conf[k];
		int64_t median = bench_percentile(c->us, (size_t)rounds, 50);

		/* bench_percentile sorted them. */
		printf("name=%s rounds=%d admit=%lld queued=%lld refuse=%lld unavailable=%lld "
		       "connections=%lld "
		       "commands=%lld min_us=%" PRId64 " median_us=%" PRId64 " p90_us=%" PRId64 " p99_us=%" PRId64
		       " max_us=%" PRId64 "\n",
		       c->name, rounds, c->admit, c->queued, c->refuse, c->unavailable, c->connections,
		       c->commands, c->us[0], median, bench_percentile(c->us, (size_t)rounds, 90),
		       bench_percentile(c->us, (size_t)rounds, 99),
		       c->us[rounds - 1]);
	}
	for (int k = 0; k < n_conf; k++)
		if (conf[k].unavailable != 0)
			return 1;
	return 0;
}
