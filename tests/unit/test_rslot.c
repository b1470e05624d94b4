/* SPDX-License-Identifier: BSD-3-Clause */
/* The Redis slot client against a scripted peer: hiredis's connect functions are wrapped
   (-Wl,--wrap) to hand back one end of a socketpair, and the test plays the server on the
   other end with whatever bytes it wants: replies, errors, NOSCRIPT, garbage, or silence. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "flowslot/fstime.h"
#include "flowslot/ncache.h"
#include "flowslot/opt.h"
#include "flowslot/rnode.h"
#include "flowslot/rslot.h"
#include "slot_lua.h"

enum fake_connect {
	FAKE_PEER,  /* a socketpair: the test is the server */
	FAKE_NULL,  /* hiredis could not allocate */
	FAKE_ERROR, /* a context with err set */
	FAKE_EINTR, /* as hiredis 0.14 when a signal cuts its wait short, then FAKE_PEER */
};

/* Test state, reset by setup(). */
static enum fake_connect connect_mode;
static int client_end = -1;
static int peer = -1;
static int frees;
static int frees_without_cloexec;
static int connects;
static int commands_freed, commands_freed_unwiped;

redisContext *__real_redisConnectUnixWithTimeout(const char *path, const struct timeval tv);
redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv);
redisContext *__wrap_redisConnectUnixWithTimeout(const char *path, const struct timeval tv);
void __real_redisFree(redisContext *c);
void __wrap_redisFree(redisContext *c);

static redisContext *fake_connect(const struct timeval tv)
{
	int fd = client_end;
	redisContext *c;

	connects++;
	switch (connect_mode) {
	case FAKE_NULL:
		return NULL;
	case FAKE_EINTR:
		/* net.c's redisContextWaitReady: poll(2) failed, the socket closed, errno kept. */
		connect_mode = FAKE_PEER;
		c = __real_redisConnectUnixWithTimeout("/nonexistent/flowslot.sock", tv);
		assert_non_null(c);
		c->err = REDIS_ERR_IO;
		snprintf(c->errstr, sizeof(c->errstr), "poll(2): %s", strerror(EINTR));
		errno = EINTR;
		return c;
	case FAKE_PEER:
		if (fd >= 0) {
			client_end = -1;
			return redisConnectFd(fd);
		}
		/* the one peer is taken: like a node that is down */
		return __real_redisConnectUnixWithTimeout("/nonexistent/flowslot.sock", tv);
	case FAKE_ERROR:
	default:
		return __real_redisConnectUnixWithTimeout("/nonexistent/flowslot.sock", tv);
	}
}

redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv)
{
	(void)ip;
	(void)port;
	return fake_connect(tv);
}

redisContext *__wrap_redisConnectUnixWithTimeout(const char *path, const struct timeval tv)
{
	(void)path;
	return fake_connect(tv);
}

void __wrap_redisFree(redisContext *c)
{
	if (c != NULL) {
		frees++;
		if (c->fd >= 0 && !(fcntl(c->fd, F_GETFD) & FD_CLOEXEC))
			frees_without_cloexec++;
	}
	__real_redisFree(c);
}

/* Takes the place of hiredis's own for rnode.c (a definition in the program comes first):
   sees whether a command was wiped before it was freed. */
void redisFreeCommand(char *cmd)
{
	if (cmd != NULL) {
		commands_freed++;
		if (cmd[0] != '\0')
			commands_freed_unwiped++;
	}
	free(cmd);
}

static int setup(void **state)
{
	int sv[2];

	(void)state;
	connect_mode = FAKE_PEER;
	frees = frees_without_cloexec = 0;
	connects = 0;
	commands_freed = commands_freed_unwiped = 0;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	client_end = sv[0];
	peer = sv[1];
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (client_end >= 0)
		close(client_end);
	close(peer);
	return 0;
}

static void opts(struct opt *o)
{
	opt_defaults(o);
	o->url.backend = URL_BACKEND_UNIX;
	strcpy(o->url.socket, "/fake.sock");
	o->slot.max_wait_us = 60000000; /* the figures below are for 60 s */
	o->timeout_us = 300000;
}

/* Queues the server's replies; they wait in the socket until the client reads. */
static void serve(const char *bytes)
{
	size_t n = strlen(bytes);

	assert_int_equal(write(peer, bytes, n), (ssize_t)n);
}

/* What the client sent, as one string (RESP, binary-safe enough for these tests). */
static const char *sent(void)
{
	static char buf[8192];
	ssize_t n = recv(peer, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* The place every test login holds: its id, who and host as they travel. */
static const struct slot_place place = {
	.id = "0123456789abcdef0123456789abcdef",
	.who = "fedcba9876543210",
	.host = "",
};

/* The arguments after the script: one key, then op ... commit, for the default options. */
#define KEYS_SENT "$1\r\n1\r\n$13\r\nflowslot:test\r\n"
#define PLACE_SENT                                                                       \
	"$32\r\n0123456789abcdef0123456789abcdef\r\n$16\r\nfedcba9876543210\r\n$0\r\n\r\n"

static enum slot_verdict reserve(const struct opt *o, struct slot_result *res)
{
	return rslot_call(NULL, o, SLOT_RESERVE, "flowslot:test", &place, res);
}

static void test_admitted(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	int64_t before = fstime_mono_us();

	(void)state;
	opts(&o);
	serve("*3\r\n:1\r\n:0\r\n:1\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 0);
	assert_int_equal(res.position, 1);
	assert_true(res.deadline_us >= before);
	assert_true(res.deadline_us <= fstime_mono_us());
	/* One command: EVALSHA sha 1 key, then op interval burst max_wait db id who host
	   per_host lease commit heard age, the database always. */
	assert_string_equal(sent(), "*17\r\n$7\r\nEVALSHA\r\n$40\r\n" RSLOT_SCRIPT_SHA1
				    "\r\n" KEYS_SENT "$7\r\nreserve\r\n$7\r\n7000000\r\n$1\r\n1\r\n"
				    "$8\r\n60000000\r\n$1\r\n0\r\n" PLACE_SENT
				    "$1\r\n0\r\n$7\r\n5000000\r\n$7\r\n2000000\r\n"
				    "$1\r\n0\r\n$1\r\n0\r\n");
	assert_int_equal(frees, 1);
	assert_int_equal(frees_without_cloexec, 0);
}

/* A reservation with a wait holds a place: its slot counts from the reply. */
static void test_queued(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	int64_t before = fstime_mono_us();

	(void)state;
	opts(&o);
	serve("*3\r\n:2\r\n:1500000\r\n:2\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_QUEUED);
	assert_int_equal(res.verdict, SLOT_QUEUED);
	assert_int_equal(res.wait_us, 1500000);
	assert_int_equal(res.position, 2);
	assert_true(res.deadline_us >= before + 1500000);
	assert_true(res.deadline_us <= fstime_mono_us() + 1500000);
	assert_int_equal(frees, 1);
}

/* Renew and leave say what they are and whose place it is; per_host travels too. */
static void test_renew_and_leave_sent(void **state)
{
	static const struct slot_place other = {
		.id = "ffffffffffffffffffffffffffffff01",
		.who = "0000000000000abc",
		.host = "1111111111111def",
	};
	static const char tail[] = "$32\r\nffffffffffffffffffffffffffffff01\r\n"
				   "$16\r\n0000000000000abc\r\n$16\r\n1111111111111def\r\n"
				   "$1\r\n3\r\n$7\r\n5000000\r\n";
	struct opt o;
	struct slot_result res = { 0 };
	const char *req;

	(void)state;
	opts(&o);
	o.per_host = 3;
	/* A renewal's max_wait is what is left of the login's; the schedule's own settings
	   come back with the answer. */
	serve("*5\r\n:2\r\n:50000000\r\n:4\r\n:9000000\r\n:1\r\n");
	assert_int_equal(rslot_call(NULL, &o, SLOT_RENEW, "flowslot:test", &other, &res),
			 SLOT_QUEUED);
	assert_int_equal(res.wait_us, 50000000);
	assert_int_equal(res.position, 4);
	assert_int_equal(res.sched_interval_us, 9000000);
	assert_int_equal(res.sched_burst, 1);
	req = sent();
	assert_non_null(strstr(req, KEYS_SENT "$5\r\nrenew\r\n$7\r\n7000000\r\n"));
	assert_non_null(strstr(req, tail));
	assert_null(strstr(req, "reserve"));

	teardown(state);
	setup(state);
	serve("*3\r\n:1\r\n:0\r\n:1\r\n");
	assert_int_equal(rslot_call(NULL, &o, SLOT_LEAVE, "flowslot:test", &other, &res),
			 SLOT_ADMIT);
	req = sent();
	assert_non_null(strstr(req, KEYS_SENT "$5\r\nleave\r\n$7\r\n7000000\r\n"));
	assert_non_null(strstr(req, tail));
	assert_int_equal(frees, 1);
}

static void test_refused(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	opts(&o);
	serve("*3\r\n:0\r\n:61000000\r\n:9\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_REFUSE);
	assert_int_equal(res.wait_us, 61000000);
	assert_int_equal(res.position, 9);
}

/* A queue others built with a longer max_wait is a refusal, not garbage. */
static void test_refused_longer_queue(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	opts(&o);
	serve("*3\r\n:0\r\n:3600000000\r\n:515\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_REFUSE);
	assert_int_equal(res.wait_us, 3600000000);
}

/* A fresh peer for the next call of a test, the last one's connection closed. */
static void repeer(void)
{
	int sv[2];

	close(peer);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	client_end = sv[0];
	peer = sv[1];
}

#define QUEUED_HEARD "*7\r\n:2\r\n:9000000\r\n:2\r\n:7000000\r\n:1\r\n:6500000\r\n:0\r\n"

/* The next slot an answer names is kept in state_dir, and the next call on the schedule sends
   how far off it is now (slot.lua's ARGV[12]); a call that names none writes nothing. */
static void test_heard_kept(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	char dir[] = "/tmp/test_rslot.XXXXXX", name[NCACHE_NAME_MAX], path[128];
	const char *req, *commit = "$7\r\n2000000\r\n";
	long long heard_us = -1;

	(void)state;
	opts(&o);
	assert_non_null(mkdtemp(dir));
	strcpy(o.state_dir, dir);
	ncache_heard_name(&o.url, "flowslot:test", name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, NCACHE_HEARD_FILE);
	serve("*5\r\n:1\r\n:0\r\n:1\r\n:7000000\r\n:1\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_ADMIT);
	assert_int_equal(res.next_us, -1);
	assert_int_equal(access(path, F_OK), -1);
	/* Nothing heard yet: 0. */
	req = sent();
	assert_string_equal(strstr(req, commit) + strlen(commit), "$1\r\n0\r\n$1\r\n0\r\n");
	repeer();
	serve(QUEUED_HEARD);
	assert_int_equal(reserve(&o, &res), SLOT_QUEUED);
	assert_int_equal(res.next_us, 6500000);
	assert_int_equal(res.age_us, 0);
	assert_true(ncache_heard_get(dir, name) > 6000000);
	assert_true(ncache_heard_get(dir, name) <= 6500000);
	sent();
	repeer();
	serve(QUEUED_HEARD);
	assert_int_equal(reserve(&o, &res), SLOT_QUEUED);
	req = sent();
	assert_int_equal(sscanf(strstr(req, commit) + strlen(commit), "$7\r\n%lld", &heard_us), 1);
	assert_true(heard_us > 6000000 && heard_us <= 6500000);
	/* An answer out of range is refused, whatever it says of the next slot. */
	repeer();
	serve("*7\r\n:1\r\n:0\r\n:1\r\n:7000000\r\n:1\r\n:-5\r\n:0\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
	/* A login gone in blind tells of a later next slot, never of an earlier one. */
	rslot_heard_at_least(&o, "flowslot:test", fstime_mono_us() + 9000000);
	assert_true(ncache_heard_get(dir, name) > 8500000);
	rslot_heard_at_least(&o, "flowslot:test", fstime_mono_us() + 1000000);
	assert_true(ncache_heard_get(dir, name) > 8500000);
	/* Each schedule has its own entry, in the one table. */
	rslot_heard_at_least(&o, "flowslot:other", fstime_mono_us() + 1000000);
	assert_true(ncache_heard_get(dir, name) > 8000000);
	ncache_heard_name(&o.url, "flowslot:other", name, sizeof(name));
	assert_true(ncache_heard_get(dir, name) > 0);
	assert_true(ncache_heard_get(dir, name) <= 1000000);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void test_auth_and_db_pipelined(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	const char *req;

	(void)state;
	opts(&o);
	strcpy(o.url.user, "gate");
	strcpy(o.url.password, "pw");
	o.url.has_password = true;
	o.url.db = 5;
	serve("+OK\r\n*3\r\n:1\r\n:0\r\n:1\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_ADMIT);
	req = sent();
	/* Both commands were written before any reply was read; the database rides with the
	   script, so that a bad one cannot leave it reserving on database 0. */
	assert_non_null(strstr(req, "*3\r\n$4\r\nAUTH\r\n$4\r\ngate\r\n$2\r\npw\r\n"));
	assert_null(strstr(req, "SELECT"));
	assert_non_null(strstr(req, "*17\r\n$7\r\nEVALSHA\r\n"));
	assert_non_null(strstr(req, "$8\r\n60000000\r\n$1\r\n5\r\n"));
	assert_true(strstr(req, "AUTH") < strstr(req, "EVALSHA"));
}

static void test_auth_without_user(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	opts(&o);
	strcpy(o.url.password, "pw");
	o.url.has_password = true;
	serve("+OK\r\n*3\r\n:1\r\n:0\r\n:1\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_ADMIT);
	assert_non_null(strstr(sent(), "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n"));
}

static void test_wrong_password(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	opts(&o);
	strcpy(o.url.password, "pw");
	o.url.has_password = true;
	serve("-WRONGPASS invalid username-password pair\r\n-NOAUTH Authentication required.\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
	assert_int_equal(frees, 1);
}

static void test_noscript_then_eval(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	const char *req;

	(void)state;
	opts(&o);
	serve("-NOSCRIPT No matching script. Please use EVAL.\r\n*3\r\n:2\r\n:7000000\r\n:2\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_QUEUED);
	assert_int_equal(res.wait_us, 7000000);
	req = sent();
	assert_non_null(strstr(req, "EVALSHA"));
	assert_non_null(strstr(req, "$4\r\nEVAL\r\n"));
	/* The script itself follows EVAL (the fake peer keeps the first 8 KiB of what is sent). */
	assert_non_null(strstr(req, "-- pam_flowslot: one schedule's queue of live waiters"));
}

static void test_noscript_twice(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	opts(&o);
	serve("-NOSCRIPT x\r\n-NOSCRIPT y\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
}

/* Each reply in turn, on a fresh connection, must leave the login undecided and the context
   freed. */
static void expect_unavailable(void **state, const char *const *replies, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct opt o;
		struct slot_result res = { 0 };

		teardown(state);
		setup(state);
		opts(&o);
		serve(replies[i]);
		if (reserve(&o, &res) != SLOT_UNAVAILABLE)
			fail_msg("reply %zu was taken: %s", i, replies[i]);
		assert_int_equal(frees, 1);
	}
}

static void test_error_replies(void **state)
{
	static const char *const errors[] = {
		"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
		"-NOPERM this user has no permissions to run the 'evalsha' command\r\n",
		"-READONLY You can't write against a read only replica.\r\n",
		"-ERR pam_flowslot: bad arguments\r\n",
	};

	expect_unavailable(state, errors, sizeof(errors) / sizeof(errors[0]));
}

static void test_garbage(void **state)
{
	static const char *const garbage[] = {
		"+OK\r\n",                              /* a status */
		":1\r\n",                               /* an integer */
		"$-1\r\n",                              /* nil */
		"*2\r\n:1\r\n:0\r\n",                   /* two elements */
		"*4\r\n:1\r\n:0\r\n:1\r\n:1\r\n",       /* four */
		"*3\r\n$1\r\n1\r\n:0\r\n:1\r\n",        /* a string inside */
		"*3\r\n:4\r\n:0\r\n:1\r\n",             /* no such verdict */
		"*3\r\n:-1\r\n:0\r\n:1\r\n",            /* nor this */
		"*3\r\n:2\r\n:-5\r\n:1\r\n",            /* negative wait */
		"*3\r\n:1\r\n:0\r\n:0\r\n",             /* position 0 */
		"*3\r\n:1\r\n:0\r\n:-9223372036854775808\r\n",
		"*3\r\n:1\r\n:2000001\r\n:1\r\n",       /* admitted past the commit window */
		"*3\r\n:2\r\n:60000001\r\n:9\r\n",      /* queued past max_wait */
		"*3\r\n:0\r\n:1000\r\n:1\r\n",          /* refused within max_wait */
		"*3\r\n:3\r\n:1000\r\n:1\r\n",          /* per_host refusal with a wait */
		"*3\r\n:1\r\n:0\r\n:99999999999\r\n",   /* absurd position */
		"*3\r\n:1\r\n:nan\r\n:1\r\n",           /* not a number */
		"*3\r\n:0\r\n:3603600000001\r\n:1\r\n", /* past any schedule's horizon */
		"hello\r\n",                            /* not RESP */
		"*-1\r\n",                              /* nil array */
	};

	expect_unavailable(state, garbage, sizeof(garbage) / sizeof(garbage[0]));
}

static void test_stall_times_out(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	int64_t t0, took;

	(void)state;
	opts(&o);
	o.timeout_us = 200000;
	serve("*3\r\n:1\r\n"); /* and then nothing */
	t0 = fstime_mono_us();
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
	took = fstime_mono_us() - t0;
	assert_true(took >= 190000);
	assert_true(took < 1000000);
}

static void test_drip_bounded_by_deadline(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	int64_t t0, took;
	pid_t pid;

	(void)state;
	opts(&o);
	o.timeout_us = 300000;
	/* A server that sends one byte every 50 ms never stalls a read, yet must not hold the
	   login past the timeout. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *msg = "*3\r\n:1\r\n:0\r\n:1\r\n";

		close(client_end);
		for (const char *p = msg; *p != '\0'; p++) {
			if (write(peer, p, 1) != 1)
				break;
			usleep(50000);
		}
		_exit(0);
	}
	t0 = fstime_mono_us();
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
	took = fstime_mono_us() - t0;
	assert_true(took < 600000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The server announces header, then streams fill over and over: the call must stop at 64 KiB
   of input, long before its 5 s timeout. */
static void expect_cut_off(const char *header, const char *fill)
{
	struct opt o;
	struct slot_result res = { 0 };
	static char stream[256 * 1024];
	size_t n = strlen(fill);
	int64_t t0;

	opts(&o);
	o.timeout_us = 5000000;
	serve(header);
	for (size_t i = 0; i + n <= sizeof(stream); i += n)
		memcpy(stream + i, fill, n);
	fcntl(peer, F_SETFL, O_NONBLOCK);
	(void)!write(peer, stream, sizeof(stream) / n * n);
	t0 = fstime_mono_us();
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
	assert_true(fstime_mono_us() - t0 < 1000000);
}

static void test_huge_reply(void **state)
{
	(void)state;
	expect_cut_off("$104857600\r\n", "x");
}

/* Parsed elements leave hiredis's buffer, yet they count. */
static void test_endless_array(void **state)
{
	(void)state;
	expect_cut_off("*20000000\r\n", ":1\r\n");
}

static void test_closed_half_way(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	int64_t t0;

	(void)state;
	opts(&o);
	o.timeout_us = 5000000;
	serve("*3\r\n:1\r\n");
	shutdown(peer, SHUT_WR);
	t0 = fstime_mono_us();
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
	/* EOF is seen at once, not after the 5 s timeout. */
	assert_true(fstime_mono_us() - t0 < 1000000);
}

static void test_connect_fails(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	opts(&o);
	connect_mode = FAKE_NULL;
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
	connect_mode = FAKE_ERROR;
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
	assert_int_equal(frees, 1); /* the error context is freed; NULL needs nothing */
}

/* hiredis 0.14 callocs what an array header declares: seven of these (98 bytes) once cost a
   login 43 s of CPU, spent freeing them after its timeout. */
static void test_huge_arrays(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	struct timespec cpu0, cpu1;
	int64_t t0, cpu_us;

	(void)state;
	opts(&o);
	o.timeout_us = 300000;
	for (int i = 0; i < 7; i++)
		serve("*2147483647\r\n");
	t0 = fstime_mono_us();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
	assert_int_equal(reserve(&o, &res), SLOT_UNAVAILABLE);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
	cpu_us = (cpu1.tv_sec - cpu0.tv_sec) * 1000000 + (cpu1.tv_nsec - cpu0.tv_nsec) / 1000;
	/* Generous bounds: without the cap, tens of seconds. */
	assert_true(fstime_mono_us() - t0 < 5000000);
	assert_true(cpu_us < 3000000);
	assert_int_equal(frees, 1);
}

/* The cap itself, on a bare reader: what a master's ROLE can need passes, one more element
   does not, and neither does a total past RNODE_ELEMENTS_MAX spread over small arrays. */
static int feed_capped(const char *header, const char *fill, int n_fill, redisReply **out)
{
	redisReader *rd = redisReaderCreate();
	struct rnode_cap cap;
	void *reply = NULL;
	int rc;

	assert_non_null(rd);
	rnode_cap_reader(rd, &cap);
	redisReaderFeed(rd, header, strlen(header));
	for (int i = 0; i < n_fill; i++)
		redisReaderFeed(rd, fill, strlen(fill));
	rc = redisReaderGetReply(rd, &reply);
	assert_int_equal(cap.refused, rc != REDIS_OK);
	*out = reply;
	redisReaderFree(rd);
	return rc;
}

static void test_reader_cap(void **state)
{
	char header[64];
	redisReply *r = NULL;

	(void)state;
	snprintf(header, sizeof(header), "*%d\r\n", RNODE_ARRAY_MAX);
	assert_int_equal(feed_capped(header, ":1\r\n", RNODE_ARRAY_MAX, &r), REDIS_OK);
	assert_non_null(r);
	assert_int_equal(r->elements, RNODE_ARRAY_MAX);
	freeReplyObject(r);
	/* ROLE on a master with RNODE_ARRAY_MAX replicas: 4 * N + 3 elements in all. */
	{
		static char role[RNODE_ARRAY_MAX * 40 + 64];
		size_t n = (size_t)snprintf(role, sizeof(role), "*3\r\n$6\r\nmaster\r\n:0\r\n*%d\r\n",
					    RNODE_ARRAY_MAX);

		for (int i = 0; i < RNODE_ARRAY_MAX; i++)
			n += (size_t)snprintf(role + n, sizeof(role) - n,
					      "*3\r\n$3\r\n::1\r\n$1\r\n1\r\n$1\r\n0\r\n");
		assert_int_equal(feed_capped(role, "", 0, &r), REDIS_OK);
		assert_int_equal(r->element[2]->elements, RNODE_ARRAY_MAX);
		freeReplyObject(r);
	}
	snprintf(header, sizeof(header), "*%d\r\n", RNODE_ARRAY_MAX + 1);
	assert_int_equal(feed_capped(header, ":1\r\n", RNODE_ARRAY_MAX + 1, &r), REDIS_ERR);
	assert_int_equal(feed_capped("*2147483647\r\n", "", 0, &r), REDIS_ERR);
	/* Small arrays, nested: each passes, their total does not. */
	assert_int_equal(feed_capped("*1000\r\n", "*1000\r\n", 1000, &r), REDIS_ERR);
}

/* A slow WAIT (sync_replicas) must not push the slot later: the wait counts from the
   script's reply. */
static void test_slow_wait_keeps_deadline(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	int64_t t0;
	pid_t pid;

	(void)state;
	opts(&o);
	o.timeout_us = 3000000;
	o.sync_replicas = 1;
	serve("*3\r\n:2\r\n:1000000\r\n:2\r\n");
	t0 = fstime_mono_us();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(client_end);
		usleep(800000);
		_exit(write(peer, ":1\r\n", 4) == 4 ? 0 : 1);
	}
	assert_int_equal(reserve(&o, &res), SLOT_QUEUED);
	assert_true(fstime_mono_us() - t0 >= 800000); /* WAIT's answer was waited for */
	/* The script's reply was there at once, WAIT's 800 ms later. */
	assert_true(res.deadline_us < t0 + 800000 + 1000000);
	assert_true(res.deadline_us >= t0 + 1000000);
	assert_non_null(strstr(sent(), "WAIT"));
	waitpid(pid, NULL, 0);
}

/* Runs reserve with stderr (where log_msg writes without a PAM handle) captured in log. */
static enum slot_verdict reserve_logged(const struct opt *o, struct slot_result *res,
					char *log, size_t logsz)
{
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	enum slot_verdict v;
	size_t n;

	assert_non_null(f);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
	v = reserve(o, res);
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(f);
	n = fread(log, 1, logsz - 1, f);
	log[n] = '\0';
	fclose(f);
	return v;
}

/* With sync_replicas, a place held in the queue is a write like an admission: too few
   replicas holding it is worth a warning. A refusal writes nothing, so it is not. */
static void test_wait_counts_queued_as_written(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	char log[1024];

	(void)state;
	opts(&o);
	o.sync_replicas = 1;
	serve("*3\r\n:2\r\n:1000000\r\n:2\r\n:0\r\n");
	assert_int_equal(reserve_logged(&o, &res, log, sizeof(log)), SLOT_QUEUED);
	assert_non_null(strstr(log, "0 of 1 replicas hold the reservation"));

	teardown(state);
	setup(state);
	serve("*3\r\n:1\r\n:0\r\n:1\r\n:0\r\n");
	assert_int_equal(reserve_logged(&o, &res, log, sizeof(log)), SLOT_ADMIT);
	assert_non_null(strstr(log, "0 of 1 replicas hold the reservation"));

	teardown(state);
	setup(state);
	serve("*3\r\n:0\r\n:61000000\r\n:9\r\n:0\r\n");
	assert_int_equal(reserve_logged(&o, &res, log, sizeof(log)), SLOT_REFUSE);
	assert_null(strstr(log, "replicas hold"));
}

/* The formatted AUTH holds the password: wiped before it is freed, like every command. */
static void test_commands_wiped(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	opts(&o);
	strcpy(o.url.password, "pw");
	o.url.has_password = true;
	serve("+OK\r\n*3\r\n:1\r\n:0\r\n:1\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_ADMIT);
	assert_int_equal(commands_freed, 2);
	assert_int_equal(commands_freed_unwiped, 0);
}

/* hiredis 0.14 gives up on a connect whose wait a signal interrupts: tried again, and Redis
   decides, not the fallback. */
static void test_connect_interrupted(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	opts(&o);
	connect_mode = FAKE_EINTR;
	serve("*3\r\n:1\r\n:0\r\n:1\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_ADMIT);
	assert_int_equal(connects, 2);
	assert_int_equal(frees, 2);
}

/* peek and reset are answered {verdict, wait_us, position, waiting, since_us}, sent as
   their op with the place's arguments. */
static void test_peek_view(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	char where[64];

	(void)state;
	opts(&o);
	serve("*5\r\n:2\r\n:9000000\r\n:3\r\n:2\r\n:1500\r\n");
	assert_int_equal(rslot_call_at(NULL, &o, SLOT_PEEK, "flowslot:test", &place, &res, where,
				       sizeof(where)),
			 SLOT_QUEUED);
	assert_int_equal(res.wait_us, 9000000);
	assert_int_equal(res.position, 3);
	assert_int_equal(res.waiting, 2);
	assert_int_equal(res.since_us, 1500);
	assert_non_null(strstr(sent(), "$4\r\npeek\r\n"));
	assert_non_null(strstr(where, "redis "));
}

/* reset's answer reads as peek's; one of three, as to reserve, or out of range, is garbage.
   peek's may end in evicts, 0 or 1; reset's may not. */
static void test_view_replies(void **state)
{
	static const struct {
		enum slot_op op;
		size_t n;
		long long v[8];
		int want; /* -1: garbage */
	} cases[] = {
		{ SLOT_RESET, 5, { 1, 0, 1, 0, -1 }, SLOT_ADMIT },
		{ SLOT_RESET, 5, { 0, 70000000, 12, 11, 5 }, SLOT_REFUSE },
		{ SLOT_PEEK, 3, { 1, 0, 1 }, -1 },
		{ SLOT_PEEK, 5, { 3, 0, 1, 0, 0 }, -1 },
		{ SLOT_PEEK, 5, { 2, 10, 0, 0, 0 }, -1 },
		{ SLOT_PEEK, 5, { 2, 10, 1, -1, 0 }, -1 },
		{ SLOT_PEEK, 5, { 2, 10, 1, 0, -2 }, -1 },
		{ SLOT_RESERVE, 5, { 1, 0, 1, 0, 0 }, -1 },
		/* with the schedule's own interval and burst */
		{ SLOT_PEEK, 7, { 2, 10, 3, 2, 0, 7000000, 1 }, SLOT_QUEUED },
		{ SLOT_PEEK, 7, { 2, 10, 3, 2, 0, 3600000000, 1000 }, SLOT_QUEUED },
		{ SLOT_PEEK, 6, { 2, 10, 3, 2, 0, 7000000 }, -1 },
		{ SLOT_PEEK, 7, { 2, 10, 3, 2, 0, 0, 1 }, -1 },
		{ SLOT_PEEK, 7, { 2, 10, 3, 2, 0, 3600000001, 1 }, -1 },
		{ SLOT_PEEK, 7, { 2, 10, 3, 2, 0, 7000000, 0 }, -1 },
		{ SLOT_PEEK, 7, { 2, 10, 3, 2, 0, 7000000, 1001 }, -1 },
		/* and whether the server may evict the key */
		{ SLOT_PEEK, 8, { 2, 10, 3, 2, 0, 7000000, 1, 1 }, SLOT_QUEUED },
		{ SLOT_PEEK, 8, { 2, 10, 3, 2, 0, 7000000, 1, 0 }, SLOT_QUEUED },
		{ SLOT_PEEK, 8, { 2, 10, 3, 2, 0, 7000000, 1, 2 }, -1 },
		{ SLOT_PEEK, 8, { 2, 10, 3, 2, 0, 7000000, 1, -1 }, -1 },
		{ SLOT_RESET, 8, { 2, 10, 3, 2, 0, 7000000, 1, 0 }, -1 },
		{ SLOT_RESERVE, 8, { 2, 10, 3, 2, 0, 7000000, 1, 0 }, -1 },
	};
	const struct slot_params p = { .interval_us = 1000, .max_wait_us = 5000, .burst = 1 };
	redisReply e[8], *elems[8];
	redisReply r = { .type = REDIS_REPLY_ARRAY, .element = elems };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct slot_result res = { .verdict = SLOT_UNAVAILABLE };
		const char *why = NULL;
		int rc;

		r.elements = cases[i].n;
		for (size_t j = 0; j < 8; j++) {
			e[j] = (redisReply){ .type = REDIS_REPLY_INTEGER, .integer = cases[i].v[j] };
			elems[j] = &e[j];
		}
		rc = rslot_read_reply(&r, cases[i].op, &p, &res, &why);
		if (cases[i].want < 0) {
			if (rc != -1 || why == NULL)
				fail_msg("case %zu was taken", i);
			continue;
		}
		if (rc != 0)
			fail_msg("case %zu refused: %s", i, why);
		assert_int_equal(res.verdict, cases[i].want);
		assert_int_equal(res.waiting, cases[i].v[3]);
		assert_int_equal(res.since_us, cases[i].v[4]);
		assert_int_equal(res.sched_interval_us, cases[i].v[5]);
		assert_int_equal(res.sched_burst, cases[i].v[6]);
		assert_int_equal(res.evicts, cases[i].n == 8 && cases[i].v[7] == 1);
	}
}

/* What each op may be answered, by rslot_read_reply's rules, with max_wait 5000 us. */
static void test_read_reply_direct(void **state)
{
	static const struct {
		enum slot_op op;
		long long verdict, wait_us, position;
		int want; /* -1: refused as garbage; else the verdict read */
	} cases[] = {
		/* reserve: refused only past max_wait; admitted within max_wait and the commit
		   window; queued within max_wait */
		{ SLOT_RESERVE, 0, 5001, 9, SLOT_REFUSE },
		{ SLOT_RESERVE, 0, SLOT_HORIZON_MAX_US, 9, SLOT_REFUSE },
		{ SLOT_RESERVE, 0, SLOT_HORIZON_MAX_US + 1, 9, -1 },
		{ SLOT_RESERVE, 0, 5000, 9, -1 },
		{ SLOT_RESERVE, 0, 0, 1, -1 },
		{ SLOT_RESERVE, 1, 0, 1, SLOT_ADMIT },
		{ SLOT_RESERVE, 1, 1, 1, SLOT_ADMIT },
		{ SLOT_RESERVE, 1, 5000, 6, SLOT_ADMIT },
		{ SLOT_RESERVE, 2, 5000, 6, SLOT_QUEUED },
		{ SLOT_RESERVE, 2, 1, 2, SLOT_QUEUED },
		{ SLOT_RESERVE, 2, 0, 1, SLOT_QUEUED },
		{ SLOT_RESERVE, 2, 5001, 6, -1 },
		{ SLOT_RESERVE, 2, -1, 1, -1 },
		{ SLOT_RESERVE, 3, 0, 1, SLOT_REFUSE_HOST },
		{ SLOT_RESERVE, 3, 0, 7, SLOT_REFUSE_HOST },
		{ SLOT_RESERVE, 3, 1000, 1, -1 },
		{ SLOT_RESERVE, 4, 0, 1, -1 },
		{ SLOT_RESERVE, -1, 0, 1, -1 },
		/* renew: refused past what is left of max_wait, and queued only within it */
		{ SLOT_RENEW, 0, 5001, 9, SLOT_REFUSE },
		{ SLOT_RENEW, 0, 5000, 9, -1 },
		{ SLOT_RENEW, 1, 0, 1, SLOT_ADMIT },
		{ SLOT_RENEW, 1, 7, 1, SLOT_ADMIT }, /* to go in 7 us later */
		{ SLOT_RENEW, 1, 5000, 1, SLOT_ADMIT },
		{ SLOT_RENEW, 1, SLOT_COMMIT_US, 1, -1 }, /* past what is left of max_wait */
		{ SLOT_RENEW, 1, SLOT_COMMIT_US + 1, 1, -1 },
		{ SLOT_RESERVE, 1, 3000, 1, SLOT_ADMIT },
		{ SLOT_RESERVE, 1, 5001, 1, -1 }, /* past max_wait */
		{ SLOT_RENEW, 2, 0, 1, SLOT_QUEUED },
		{ SLOT_RENEW, 2, 5000, 3, SLOT_QUEUED },
		{ SLOT_RENEW, 2, 5001, 3, -1 },
		{ SLOT_RENEW, 2, -5, 3, -1 },
		{ SLOT_RENEW, 3, 0, 1, -1 },
		/* leave: {1, 0, 1} */
		{ SLOT_LEAVE, 1, 0, 1, SLOT_ADMIT },
		{ SLOT_LEAVE, 1, 5, 1, -1 },
		{ SLOT_LEAVE, 0, 5001, 1, -1 },
		{ SLOT_LEAVE, 2, 0, 1, -1 },
		{ SLOT_LEAVE, 2, 100, 1, -1 },
		{ SLOT_LEAVE, 3, 0, 1, -1 },
		/* positions, whatever the op */
		{ SLOT_RESERVE, 1, 0, 0, -1 },
		{ SLOT_RENEW, 2, 100, 0, -1 },
		{ SLOT_RENEW, 2, 100, -3, -1 },
		{ SLOT_RENEW, 2, 100, 1000000000, SLOT_QUEUED },
		{ SLOT_RENEW, 2, 100, 1000000001, -1 },
	};
	struct slot_params p = { .interval_us = 1000, .max_wait_us = 5000, .burst = 1 };
	redisReply e[3] = { { .type = REDIS_REPLY_INTEGER },
			    { .type = REDIS_REPLY_INTEGER },
			    { .type = REDIS_REPLY_INTEGER } };
	redisReply *elems[3] = { &e[0], &e[1], &e[2] };
	redisReply r = { .type = REDIS_REPLY_ARRAY, .elements = 3, .element = elems };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct slot_result res = { .verdict = SLOT_UNAVAILABLE, .wait_us = -7 };
		const char *why = NULL;
		int rc;

		e[0].integer = cases[i].verdict;
		e[1].integer = cases[i].wait_us;
		e[2].integer = cases[i].position;
		rc = rslot_read_reply(&r, cases[i].op, &p, &res, &why);
		if (cases[i].want < 0) {
			if (rc != -1 || why == NULL)
				fail_msg("case %zu (op %d {%lld, %lld, %lld}) was taken", i,
					 (int)cases[i].op, cases[i].verdict, cases[i].wait_us,
					 cases[i].position);
			continue;
		}
		if (rc != 0)
			fail_msg("case %zu (op %d {%lld, %lld, %lld}) refused: %s", i,
				 (int)cases[i].op, cases[i].verdict, cases[i].wait_us,
				 cases[i].position, why);
		assert_int_equal(res.verdict, cases[i].want);
		assert_int_equal(res.wait_us, cases[i].wait_us);
		assert_int_equal(res.position, cases[i].position);
	}
}

/* dry_run: the script admits every login it does not refuse, as a fixed slot up to max_wait
   away; such an answer is taken, one past max_wait is not. */
static void test_read_reply_dry_run(void **state)
{
	const struct slot_params p = { .interval_us = 1000000, .max_wait_us = 30000000,
				       .burst = 1, .dry_run = true };
	redisReply e[3] = { { .type = REDIS_REPLY_INTEGER, .integer = 1 },
			    { .type = REDIS_REPLY_INTEGER },
			    { .type = REDIS_REPLY_INTEGER, .integer = 4 } };
	redisReply *elems[3] = { &e[0], &e[1], &e[2] };
	const redisReply r = { .type = REDIS_REPLY_ARRAY, .elements = 3, .element = elems };
	struct slot_result res;
	const char *why = NULL;

	(void)state;
	assert_int_equal(slot_commit_us(&p), p.max_wait_us);
	e[1].integer = 25000000;
	assert_int_equal(rslot_read_reply(&r, SLOT_RESERVE, &p, &res, &why), 0);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 25000000);
	e[1].integer = 30000001;
	assert_int_equal(rslot_read_reply(&r, SLOT_RESERVE, &p, &res, &why), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_admitted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heard_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_and_leave_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_longer_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auth_and_db_pipelined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auth_without_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_password, setup, teardown),
		cmocka_unit_test_setup_teardown(test_noscript_then_eval, setup, teardown),
		cmocka_unit_test_setup_teardown(test_noscript_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_replies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stall_times_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drip_bounded_by_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_huge_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_endless_array, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_half_way, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_huge_arrays, setup, teardown),
		cmocka_unit_test(test_reader_cap),
		cmocka_unit_test_setup_teardown(test_slow_wait_keeps_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_counts_queued_as_written, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_commands_wiped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_interrupted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peek_view, setup, teardown),
		cmocka_unit_test(test_view_replies),
		cmocka_unit_test(test_read_reply_direct),
		cmocka_unit_test(test_read_reply_dry_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
