/* SPDX-License-Identifier: BSD-3-Clause */
#include "bench.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flowslot/countdown.h"
#include "flowslot/fstime.h"
#include "flowslot/hangup.h"
#include "flowslot/queue.h"
#include "flowslot/rslot.h"

void bench_opt(struct opt *o, int argc, char **argv)
{
	struct opt host;

	opt_defaults(o);
	for (int i = 0; i < argc; i++) {
		if (opt_set(o, NULL, argv[i]) != 0) {
			fprintf(stderr, "bench: bad option %s\n", argv[i]);
			exit(2);
		}
	}
	/* The default is the host's own state_dir, which a bench must leave alone. */
	opt_defaults(&host);
	if (strcmp(o->state_dir, host.state_dir) == 0) {
		fprintf(stderr, "bench: give this client a state_dir= of its own, not %s\n",
			host.state_dir);
		exit(2);
	}
	if (o->url.backend == URL_BACKEND_LOCAL) {
		fprintf(stderr, "bench: this client needs a Redis url=\n");
		exit(2);
	}
}

void bench_place(struct slot_place *p, int i)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->id, sizeof(p->id), "%08x%08x%016llx", (unsigned)getpid(), (unsigned)i,
		 (unsigned long long)fstime_mono_us());
}

enum slot_verdict bench_login(const struct opt *o, int argc, char **argv, const char *key,
			      const struct slot_place *place, struct slot_result *res,
			      int64_t *admitted_us)
{
	const char *args[64];
	/* queue_call re-reads the options from the module arguments for each renewal: with
	   none, it would renew on the default url, not this one. */
	const struct queue_login l = { .pamh = NULL,
				       .o = o,
				       .argc = argc,
				       .argv = args,
				       .key = key,
				       .place = place };
	struct hangup_watch w = { .n = 0 };
	struct countdown cd;
	struct slot_result now;
	enum slot_verdict v = rslot_call(NULL, o, SLOT_RESERVE, key, place, res);

	if (v != SLOT_ADMIT && v != SLOT_QUEUED)
		return v;
	if (argc > (int)(sizeof(args) / sizeof(args[0]))) {
		fprintf(stderr, "bench: too many options\n");
		exit(2);
	}
	for (int i = 0; i < argc; i++)
		args[i] = argv[i];
	now = *res;
	countdown_start(&cd, NULL, PAM_TEXT_INFO, 0, false, &now);
	if (queue_wait(&l, &now, &w, &cd) != QUEUE_TURN) {
		fprintf(stderr, "bench: a login with nothing watched was abandoned\n");
		exit(1);
	}
	*admitted_us = fstime_mono_us();
	return v;
}

redisContext *bench_connect(const struct opt *o)
{
	struct timeval tv = { .tv_sec = 10 };
	redisContext *c = o->url.backend == URL_BACKEND_UNIX
			      ? redisConnectUnixWithTimeout(o->url.socket, tv)
			      : redisConnectWithTimeout(o->url.host, o->url.port, tv);

	if (c == NULL || c->err) {
		fprintf(stderr, "bench: cannot connect: %s\n", c ? c->errstr : "out of memory");
		exit(1);
	}
	redisSetTimeout(c, tv);
	return c;
}

redisReply *bench_command(redisContext *c, const char *cmd)
{
	redisReply *r = redisCommand(c, cmd);

	if (r == NULL || r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "bench: %s: %s\n", cmd, r ? r->str : c->errstr);
		exit(1);
	}
	return r;
}

void bench_cmdstats(redisContext *c, struct bench_cmdstats *s)
{
	redisReply *r = bench_command(c, "INFO commandstats");
	const char *p = r->str;

	s->n = 0;
	while ((p = strstr(p, "cmdstat_")) != NULL && s->n < sizeof(s->cmd) / sizeof(s->cmd[0])) {
		const char *colon = strchr(p, ':');
		const char *calls = colon ? strstr(colon, "calls=") : NULL;
		size_t len;

		if (colon == NULL || calls == NULL)
			break;
		p += strlen("cmdstat_");
		len = (size_t)(colon - p);
		if (len >= sizeof(s->cmd[0].name))
			len = sizeof(s->cmd[0].name) - 1;
		memcpy(s->cmd[s->n].name, p, len);
		s->cmd[s->n].name[len] = '\0';
		s->cmd[s->n].calls = strtoll(calls + strlen("calls="), NULL, 10);
		s->n++;
		p = colon;
	}
	freeReplyObject(r);
}

long long bench_cmdstats_calls(const struct bench_cmdstats *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->cmd[i].name, name) == 0)
			return s->cmd[i].calls;
	return 0;
}

long long bench_info_field(redisContext *c, const char *section, const char *field)
{
	char cmd[64], pat[80];
	redisReply *r;
	const char *p;
	long long v = -1;

	snprintf(cmd, sizeof(cmd), "INFO %s", section);
	snprintf(pat, sizeof(pat), "\n%s:", field);
	r = bench_command(c, cmd);
	p = strstr(r->str, pat);
	if (p != NULL)
		v = strtoll(p + strlen(pat), NULL, 10);
	freeReplyObject(r);
	return v;
}

void *bench_shared(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("bench: mmap");
		exit(1);
	}
	return p;
}

void bench_gate_init(struct bench_gate *g)
{
	if (pipe(g->fd) != 0) {
		perror("bench: pipe");
		exit(1);
	}
	g->ready = bench_shared(sizeof(*g->ready));
}

void bench_gate_wait(struct bench_gate *g)
{
	char c;

	close(g->fd[1]);
	__atomic_add_fetch(g->ready, 1, __ATOMIC_SEQ_CST);
	/* Returns 0 (end of file) for every child at once, when the parent closes its end. */
	while (read(g->fd[0], &c, 1) < 0 && errno == EINTR)
		;
	close(g->fd[0]);
}

int64_t bench_gate_open(struct bench_gate *g, int n, int64_t timeout_us, int *ready_out)
{
	const int64_t give_up = fstime_mono_us() + timeout_us;
	const struct timespec tick = { .tv_nsec = 1000000 };
	int64_t t0;

	while (__atomic_load_n(g->ready, __ATOMIC_SEQ_CST) < n && fstime_mono_us() < give_up)
		nanosleep(&tick, NULL);
	/* The last child counted itself just before read(): give it time to get there. */
	nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
	*ready_out = __atomic_load_n(g->ready, __ATOMIC_SEQ_CST);
	t0 = fstime_mono_us();
	close(g->fd[1]);
	close(g->fd[0]);
	return t0;
}

void bench_fork(int n, int (*child)(int i, void *arg), void *arg, int *pids)
{
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(child(i, arg));
		if (pid < 0) {
			perror("bench: fork");
			for (int j = 0; j < i; j++)
				kill(pids[j], SIGKILL);
			bench_reap(i, pids);
			exit(1);
		}
		pids[i] = pid;
	}
}

int bench_reap(int n, const int *pids)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		int status;

		while (waitpid(pids[i], &status, 0) < 0) {
			if (errno != EINTR) {
				status = -1;
				break;
			}
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	}
	return bad;
}

static int bench_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t bench_percentile(int64_t *v, size_t n, double p)
{
	size_t rank;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_i64);
	/* Nearest rank: the smallest value with at least p% of the values at or below it. */
	rank = (size_t)(p * (double)n / 100.0);
	if ((double)rank * 100.0 < p * (double)n)
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

int64_t bench_real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
