/* The Redis slot client against a scripted peer: hiredis's connect functions are wrapped
   (-Wl,--wrap) to hand back one end of a socketpair, and the test plays the server on the
   other end with whatever bytes it wants: replies, errors, NOSCRIPT, garbage, or silence. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "flowslot/fstime.h"
#include "flowslot/opt.h"
#include "flowslot/rslot.h"
#include "slot_lua.h"

enum fake_connect {
	FAKE_PEER,  /* a socketpair: the test is the server */
	FAKE_NULL,  /* hiredis could not allocate */
	FAKE_ERROR, /* a context with err set */
};

/* Test state, reset by setup(). */
static enum fake_connect connect_mode;
static int client_end = -1;
static int peer = -1;
static int frees;
static int frees_without_cloexec;

redisContext *__real_redisConnectUnixWithTimeout(const char *path, const struct timeval tv);
redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv);
redisContext *__wrap_redisConnectUnixWithTimeout(const char *path, const struct timeval tv);
void __real_redisFree(redisContext *c);
void __wrap_redisFree(redisContext *c);

static redisContext *fake_connect(const struct timeval tv)
{
	int fd = client_end;

	client_end = -1;
	switch (connect_mode) {
	case FAKE_NULL:
		return NULL;
	case FAKE_ERROR:
		return __real_redisConnectUnixWithTimeout("/nonexistent/flowslot.sock", tv);
	case FAKE_PEER:
	default:
		assert_true(fd >= 0);
		return redisConnectFd(fd);
	}
}

redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv)
{
	(void)ip, (void)port;
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

static int setup(void **state)
{
	int sv[2];

	(void)state;
	connect_mode = FAKE_PEER;
	frees = frees_without_cloexec = 0;
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
	o->url.backend = OPT_BACKEND_UNIX;
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

static enum slot_verdict reserve(const struct opt *o, struct slot_result *res)
{
	return rslot_reserve(NULL, o, "flowslot:test", res);
}

static void test_admitted(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };
	int64_t before = fstime_mono_us();

	(void)state;
	opts(&o);
	serve("*3\r\n:1\r\n:1500000\r\n:2\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 1500000);
	assert_int_equal(res.position, 2);
	assert_true(res.deadline_us >= before + 1500000);
	assert_true(res.deadline_us <= fstime_mono_us() + 1500000);
	/* One command: EVALSHA sha 1 key interval burst max_wait. */
	assert_string_equal(sent(), "*7\r\n$7\r\nEVALSHA\r\n$40\r\n" RSLOT_SCRIPT_SHA1 "\r\n"
				    "$1\r\n1\r\n$13\r\nflowslot:test\r\n$7\r\n7000000\r\n"
				    "$1\r\n1\r\n$8\r\n60000000\r\n");
	assert_int_equal(frees, 1);
	assert_int_equal(frees_without_cloexec, 0);
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

/* A queue others built with a longer max_wait is a refusal, not garbage (issue #7). */
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
	assert_non_null(strstr(req, "*8\r\n$7\r\nEVALSHA\r\n"));
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
	serve("-NOSCRIPT No matching script. Please use EVAL.\r\n*3\r\n:1\r\n:7000000\r\n:2\r\n");
	assert_int_equal(reserve(&o, &res), SLOT_ADMIT);
	assert_int_equal(res.wait_us, 7000000);
	req = sent();
	assert_non_null(strstr(req, "EVALSHA"));
	assert_non_null(strstr(req, "$4\r\nEVAL\r\n"));
	assert_non_null(strstr(req, "redis.call('TIME')"));
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
		"*3\r\n:2\r\n:0\r\n:1\r\n",             /* admitted neither 0 nor 1 */
		"*3\r\n:1\r\n:-5\r\n:1\r\n",            /* negative wait */
		"*3\r\n:1\r\n:0\r\n:0\r\n",             /* position 0 */
		"*3\r\n:1\r\n:0\r\n:-9223372036854775808\r\n",
		"*3\r\n:1\r\n:60000001\r\n:9\r\n",      /* admitted past max_wait */
		"*3\r\n:0\r\n:1000\r\n:1\r\n",          /* refused within max_wait */
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

static void test_read_reply_direct(void **state)
{
	struct slot_params p = { .interval_us = 1000, .max_wait_us = 5000, .burst = 1 };
	redisReply e[3] = { { .type = REDIS_REPLY_INTEGER, .integer = 1 },
			    { .type = REDIS_REPLY_INTEGER, .integer = 5000 },
			    { .type = REDIS_REPLY_INTEGER, .integer = 6 } };
	redisReply *elems[3] = { &e[0], &e[1], &e[2] };
	redisReply r = { .type = REDIS_REPLY_ARRAY, .elements = 3, .element = elems };
	struct slot_result res = { 0 };
	const char *why = NULL;

	(void)state;
	assert_int_equal(rslot_read_reply(&r, &p, &res, &why), 0);
	assert_int_equal(res.verdict, SLOT_ADMIT);
	assert_int_equal(res.wait_us, 5000);
	assert_int_equal(res.position, 6);
	e[1].integer = 5001; /* admitted, but past max_wait */
	assert_int_equal(rslot_read_reply(&r, &p, &res, &why), -1);
	assert_non_null(why);
	e[0].integer = 0; /* refused past max_wait: fine */
	assert_int_equal(rslot_read_reply(&r, &p, &res, &why), 0);
	assert_int_equal(res.verdict, SLOT_REFUSE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_admitted, setup, teardown),
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
		cmocka_unit_test(test_read_reply_direct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
