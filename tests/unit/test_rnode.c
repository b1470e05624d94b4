/* SPDX-License-Identifier: BSD-3-Clause */
/* The Sentinel and Cluster decision paths (src/rslot.c, src/rnode.c) and the node cache
   (src/ncache.c), against fake nodes: one scripted peer per address (fakepeer.c), any other
   address refused like a node that is down. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fakepeer.h"
#include "flowslot/fstime.h"
#include "flowslot/key.h"
#include "flowslot/ncache.h"
#include "flowslot/opt.h"
#include "flowslot/rslot.h"

#define KEY "flowslot:test"
#define ADMIT "*3\r\n:1\r\n:0\r\n:1\r\n"
#define OK "+OK\r\n"
#define ROLE_MASTER "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
#define ROLE_SLAVE "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6379\r\n$9\r\nconnected\r\n:0\r\n"
#define A "127.0.0.1:7001"
#define B "127.0.0.1:7002"
#define C "127.0.0.1:7003"
#define D "127.0.0.1:7004"
#define E "127.0.0.1:7005"
#define S1 "127.0.0.1:26379"
#define S2 "127.0.0.1:26380"
#define M1 "127.0.0.1:6391"
#define M2 "127.0.0.1:6392"
/* A sentinel's answer naming M1 or M2. */
#define NAMES_M1 "*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6391\r\n"
#define NAMES_M2 "*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6392\r\n"

static char dir[64]; /* state_dir, fresh for each test */

static const struct slot_place place = {
	.id = "0123456789abcdef0123456789abcdef",
	.who = "fedcba9876543210",
	.host = "",
};

static int setup(void **state)
{
	(void)state;
	fakepeer_reset();
	strcpy(dir, "/tmp/flowslot-test-rnode.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	fakepeer_reset();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* Parses "host:port" into node. */
static void node_of(const char *addr, struct url_node *node)
{
	assert_int_equal(url_parse_endpoint(addr, strlen(addr), node), 0);
}

/* Options for backend with the nodes (seeds or sentinels) named, state_dir the test's. */
static void opts(struct opt *o, enum url_backend backend, const char *nodes[], int n)
{
	opt_defaults(o);
	o->url.backend = backend;
	for (int i = 0; i < n; i++)
		node_of(nodes[i], &o->url.nodes[i]);
	o->url.n_nodes = n;
	strcpy(o->url.master, "mymaster");
	strcpy(o->state_dir, dir);
	o->slot.max_wait_us = 60000000;
	o->timeout_us = 200000;
}

static void cluster(struct opt *o, const char *seed1, const char *seed2)
{
	const char *seeds[] = { seed1, seed2 };

	opts(o, URL_BACKEND_CLUSTER, seeds, seed2 ? 2 : 1);
}

static void sentinel(struct opt *o, const char *s1, const char *s2)
{
	const char *sentinels[] = { s1, s2 };

	opts(o, URL_BACKEND_SENTINEL, sentinels, s2 ? 2 : 1);
}

static enum slot_verdict reserve(const struct opt *o)
{
	struct slot_result res = { 0 };

	return rslot_call(NULL, o, SLOT_RESERVE, KEY, &place, &res);
}

/* The cache entry's name: for the key's hash slot (cluster), or "master". */
static void entry_name(const struct opt *o, char *name)
{
	char slot[8];

	if (o->url.backend == URL_BACKEND_CLUSTER)
		snprintf(slot, sizeof(slot), "%d", key_hash_slot(KEY));
	else
		strcpy(slot, "master");
	ncache_name(&o->url, slot, name, NCACHE_NAME_MAX);
}

/* Stores addr as the entry, written age_s ago. */
static void cache(const struct opt *o, const char *addr, int age_s)
{
	char name[NCACHE_NAME_MAX], path[OPT_DIR_MAX + NCACHE_NAME_MAX + 2];
	struct url_node n;
	struct timespec times[2] = { { 0 } };

	node_of(addr, &n);
	entry_name(o, name);
	assert_int_equal(ncache_put(o->state_dir, name, &n), 0);
	snprintf(path, sizeof(path), "%s/%s", o->state_dir, name);
	times[0].tv_sec = times[1].tv_sec = time(NULL) - age_s;
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* The entry as "host:port", or "" for none to trust. */
static const char *cached(const struct opt *o)
{
	static char out[URL_HOST_MAX + 16];
	char name[NCACHE_NAME_MAX];
	struct url_node n;

	entry_name(o, name);
	out[0] = '\0';
	if (ncache_get(o->state_dir, name, 0, &n) == 0)
		snprintf(out, sizeof(out), "%s:%d", n.host, n.port);
	return out;
}

/* A file under dir, with contents text, mode mode, written age_s ago. */
static void write_file(const char *name, const char *text, mode_t mode, int age_s)
{
	char path[OPT_DIR_MAX + NCACHE_NAME_MAX + 2];
	struct timespec times[2] = { { 0 } };
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
	times[0].tv_sec = times[1].tv_sec = time(NULL) - age_s;
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* Where in s the command cmd starts (as RESP), or NULL. */
static const char *cmd_at(const char *s, const char *cmd)
{
	char resp[64];

	snprintf(resp, sizeof(resp), "$%zu\r\n%s\r\n", strlen(cmd), cmd);
	return strstr(s, resp);
}

/* The commands sent on connection i, in order, are exactly want (their names, by spaces). */
static void assert_cmds(int i, const char *want)
{
	const char *sent = fakepeer_sent(i);
	char *p = (char *)(uintptr_t)sent; /* strtol's end pointer */
	char got[256] = "";
	size_t n = 0;

	while (*p == '*') {
		long argc = strtol(p + 1, &p, 10);

		for (long a = 0; a < argc; a++) {
			long len;

			assert_true(p[0] == '\r' && p[1] == '\n' && p[2] == '$');
			len = strtol(p + 3, &p, 10);
			p += 2;
			if (a == 0)
				n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%.*s",
						      n ? " " : "", (int)len, p);
			p += len;
		}
		assert_true(p[0] == '\r' && p[1] == '\n');
		p += 2;
	}
	assert_string_equal(got, want);
}

static void assert_log_is(int errs, const char *needle)
{
	if (fakepeer_log_count(3) != errs)
		fail_msg("want %d LOG_ERR lines, log:\n%s", errs, fakepeer_log());
	if (needle != NULL && strstr(fakepeer_log(), needle) == NULL)
		fail_msg("no \"%s\" in the log:\n%s", needle, fakepeer_log());
}

/* One server, by address: A. */
static void direct(struct opt *o)
{
	opts(o, URL_BACKEND_TCP, NULL, 0);
	strcpy(o->url.host, "127.0.0.1");
	o->url.port = 7001;
}

/* A reservation that timed out (a server stopped, which may yet make it) is asked again with
   the same place id, and the answer taken: one LOG_ERR for the timeout, one NOTICE for the
   answer. */
static void test_reserve_asked_again(void **state)
{
	struct opt o;

	(void)state;
	direct(&o);
	fakepeer_add(A, ""); /* silent: the call times out */
	fakepeer_add(A, ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_int_equal(fakepeer_conns(), 2);
	/* The same place, with what is left of max_wait (60 s at first). */
	assert_non_null(strstr(fakepeer_sent(0), place.id));
	assert_non_null(strstr(fakepeer_sent(1), place.id));
	assert_non_null(strstr(fakepeer_sent(0), "$8\r\n60000000\r\n"));
	assert_non_null(strstr(fakepeer_sent(1), "$8\r\n59"));
	assert_log_is(1, "timed out");
	if (fakepeer_log_count(5) != 1 ||
	    strstr(fakepeer_log(), "answered when asked again with the same place (2 tries") ==
		NULL)
		fail_msg("no NOTICE of the answer, log:\n%s", fakepeer_log());
}

/* The answer to a reservation asked again is checked against the max_wait it was given, what
   was left: refused for a wait between that and the whole max_wait, not garbage. */
static void test_reserve_asked_again_refused(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	direct(&o);
	fakepeer_add(A, "");
	fakepeer_add(A, "*3\r\n:0\r\n:59900000\r\n:2\r\n");
	assert_int_equal(rslot_call(NULL, &o, SLOT_RESERVE, KEY, &place, &res), SLOT_REFUSE);
	assert_int_equal(res.wait_us, 59900000);
	assert_int_equal(fakepeer_conns(), 2);
}

/* Asked again while the decision's budget lasts, 4 x timeout, and then given up, its
   failures logged once. */
static void test_reserve_asked_again_within_budget(void **state)
{
	struct opt o;
	int64_t t0, took;

	(void)state;
	direct(&o);
	for (int i = 0; i < 8; i++)
		fakepeer_add(A, "");
	t0 = fstime_mono_us();
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	took = fstime_mono_us() - t0;
	assert_int_equal(fakepeer_conns(), 4);
	assert_true(took >= 4 * o.timeout_us - 10000);
	assert_true(took < 4 * o.timeout_us + 1000000);
	assert_log_is(1, "timed out");
	assert_int_equal(fakepeer_log_count(5), 0);
}

/* debug traces the errors said already, at LOG_DEBUG: the tries after the first. */
static void test_said_already_traced(void **state)
{
	struct opt o;

	(void)state;
	direct(&o);
	o.debug = true;
	for (int i = 0; i < 8; i++)
		fakepeer_add(A, "");
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_log_is(1, "timed out");
	if (fakepeer_log_count(7) < 3 || strstr(fakepeer_log(), "timed out (said already)") == NULL)
		fail_msg("the tries after the first not traced, log:\n%s", fakepeer_log());
}

/* A server that refuses the connection, or answers with an error, made nothing: no second
   try, for a reservation or a renewal. */
static void test_not_asked_again(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	direct(&o);
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE); /* refused */
	assert_int_equal(fakepeer_conns(), 1);
	fakepeer_reset();
	fakepeer_add(A, "-ERR pam_flowslot: bad arguments\r\n");
	fakepeer_add(A, ADMIT);
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_int_equal(fakepeer_conns(), 1);
	fakepeer_reset();
	fakepeer_add(A, "-ERR pam_flowslot: bad arguments\r\n");
	fakepeer_add(A, ADMIT);
	assert_int_equal(rslot_call(NULL, &o, SLOT_RENEW, KEY, &place, &res), SLOT_UNAVAILABLE);
	assert_int_equal(fakepeer_conns(), 1);
	assert_int_equal(res.tries, 1);
}

/* A renewal that timed out (a stall while the place is renewed) is asked again at once for
   the same place, with what is left of max_wait, and its answer taken: the wait keeps its
   place rather than try again 2 s later. The wait names the login (test_queue.c); here one
   LOG_ERR for the timeout, and no reservation's NOTICE. */
static void test_renew_asked_again(void **state)
{
	struct opt o;
	struct slot_result res = { 0 };

	(void)state;
	direct(&o);
	fakepeer_add(A, ""); /* silent: the call times out */
	fakepeer_add(A, "*3\r\n:2\r\n:2500000\r\n:1\r\n");
	assert_int_equal(rslot_call(NULL, &o, SLOT_RENEW, KEY, &place, &res), SLOT_QUEUED);
	assert_int_equal(res.tries, 2);
	assert_int_equal(res.wait_us, 2500000);
	assert_int_equal(fakepeer_conns(), 2);
	assert_non_null(cmd_at(fakepeer_sent(0), "renew"));
	assert_non_null(cmd_at(fakepeer_sent(1), "renew"));
	assert_non_null(strstr(fakepeer_sent(1), place.id));
	assert_non_null(strstr(fakepeer_sent(1), "$8\r\n59"));
	assert_log_is(1, "timed out");
	assert_int_equal(fakepeer_log_count(5), 0);
}

/* A renewal asked again keeps to the decision's budget, 4 x timeout, and to until_us (the try
   that keeps to the slot is over by the slot): never past either. */
static void test_renew_asked_again_within_until(void **state)
{
	struct opt o;
	struct rslot_turn turn = { .said = false };
	struct slot_result res = { 0 };
	int64_t t0, took;

	(void)state;
	direct(&o);
	for (int i = 0; i < 8; i++)
		fakepeer_add(A, "");
	t0 = fstime_mono_us();
	assert_int_equal(rslot_call(NULL, &o, SLOT_RENEW, KEY, &place, &res), SLOT_UNAVAILABLE);
	took = fstime_mono_us() - t0;
	assert_int_equal(fakepeer_conns(), 4);
	assert_int_equal(res.tries, 4);
	assert_true(took >= 4 * o.timeout_us - 10000 && took < 4 * o.timeout_us + 1000000);
	fakepeer_reset();
	for (int i = 0; i < 8; i++)
		fakepeer_add(A, "");
	t0 = fstime_mono_us();
	turn.p = o.slot;
	turn.until_us = t0 + 3 * o.timeout_us / 2; /* the slot, a timeout and a half off */
	assert_int_equal(rslot_turn_call(NULL, &o, &turn, SLOT_RENEW, KEY, &place, &res),
			 SLOT_UNAVAILABLE);
	took = fstime_mono_us() - t0;
	assert_int_equal(fakepeer_conns(), 2);
	assert_true(fstime_mono_us() >= turn.until_us - 10000);
	assert_true(took < 3 * o.timeout_us / 2 + 100000);
}

/* MOVED: the named node runs the script, and is remembered for the slot. */
static void test_moved(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-MOVED 1 " B "\r\n");
	fakepeer_add(B, OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), A "|" B);
	assert_cmds(1, "READWRITE EVALSHA");
	assert_string_equal(cached(&o), B);
	assert_log_is(0, NULL);
	assert_int_equal(fakepeer_frees(), 2);
	assert_int_equal(fakepeer_frees_without_cloexec(), 0);
}

/* MOVED to ":PORT" is the node that answered, on PORT. */
static void test_moved_same_host(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-MOVED 1234 :7002\r\n");
	fakepeer_add(B, OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), A "|" B);
	assert_string_equal(cached(&o), B);
}

/* An IPv6 node comes without brackets: "::1:7001" is host ::1, not this host. */
static void test_moved_ipv6(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-MOVED 12 ::1:7001\r\n");
	fakepeer_add("::1:7001", OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), A "|::1:7001");
	assert_string_equal(cached(&o), "::1:7001");
}

/* ASK: ASKING, then the script, on the named node; the slot still belongs to the node that
   sent us, so the cache is not updated. */
static void test_ask(void **state)
{
	struct opt o;
	const char *sent;

	(void)state;
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-ASK 1234 " B "\r\n");
	fakepeer_add(B, OK OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), A "|" B);
	assert_cmds(0, "READWRITE EVALSHA");
	assert_cmds(1, "READWRITE ASKING EVALSHA");
	sent = fakepeer_sent(1);
	assert_true(cmd_at(sent, "ASKING") < cmd_at(sent, "EVALSHA"));
	assert_string_equal(cached(&o), "");
	assert_log_is(0, NULL);
}

/* An ASK from the remembered node leaves the entry as it was. */
static void test_ask_keeps_cache(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	cache(&o, C, 5);
	fakepeer_add(C, OK "-ASK 1234 " B "\r\n");
	fakepeer_add(B, OK OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), C "|" B);
	assert_string_equal(cached(&o), C);
}

/* MOVED then ASK: the slot's owner is the node MOVED named, and that is remembered. */
static void test_moved_then_ask(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-MOVED 1234 " B "\r\n");
	fakepeer_add(B, OK "-ASK 1234 " C "\r\n");
	fakepeer_add(C, OK OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), A "|" B "|" C);
	assert_string_equal(cached(&o), B);
}

/* Three redirects are followed; a fourth is not: one LOG_ERR, and no decision. */
static void test_redirect_cap(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-MOVED 1 " B "\r\n");
	fakepeer_add(B, OK "-MOVED 1 " C "\r\n");
	fakepeer_add(C, OK "-MOVED 1 " D "\r\n");
	fakepeer_add(D, OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), A "|" B "|" C "|" D);

	teardown(state);
	setup(state);
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-MOVED 1 " B "\r\n");
	fakepeer_add(B, OK "-MOVED 1 " C "\r\n");
	fakepeer_add(C, OK "-MOVED 1 " D "\r\n");
	fakepeer_add(D, OK "-MOVED 1 " E "\r\n");
	fakepeer_add(E, OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), A "|" B "|" C "|" D);
	assert_log_is(1, "3 redis " D ": redirect: more than 3 redirects: giving up\n");
	assert_string_equal(cached(&o), "");
	assert_int_equal(fakepeer_frees(), 4);

	/* a node that sends us back to itself */
	teardown(state);
	setup(state);
	cluster(&o, A, NULL);
	for (int i = 0; i < 5; i++)
		fakepeer_add(A, OK "-MOVED 1234 " A "\r\n");
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), A "|" A "|" A "|" A);
	for (int i = 0; i < 4; i++)
		assert_cmds(i, "READWRITE EVALSHA");
	assert_log_is(1, "3 redis " A ": redirect: more than 3 redirects: giving up\n");
}

/* A node that asks and asks: ASKING ahead of the script on each hop, and the same cap. */
static void test_ask_loop(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-ASK 1234 " A "\r\n");
	for (int i = 0; i < 4; i++)
		fakepeer_add(A, OK OK "-ASK 1234 " A "\r\n");
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_int_equal(fakepeer_conns(), 4);
	assert_cmds(0, "READWRITE EVALSHA");
	for (int i = 1; i < 4; i++)
		assert_cmds(i, "READWRITE ASKING EVALSHA");
	assert_log_is(1, "3 redis " A ": redirect: more than 3 redirects: giving up\n");
}

/* A redirect to a node that is down: the next seed not yet tried decides; with none left,
   the login goes to its fallback (SLOT_UNAVAILABLE). */
static void test_redirect_to_down_node(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-MOVED 1234 " B "\r\n");
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), A "|" B);
	assert_true(fakepeer_refused(1));
	assert_log_is(1, "3 redis " B ": cannot connect: Connection refused\n");
	assert_string_equal(cached(&o), "");

	teardown(state);
	setup(state);
	cluster(&o, A, C);
	fakepeer_add(A, OK "-MOVED 1234 " B "\r\n");
	fakepeer_add(C, OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), A "|" B "|" C);
	assert_log_is(1, "3 redis " B ": cannot connect: Connection refused\n");
	assert_string_equal(cached(&o), C);
}

/* A redirect back to a node that failed this login is not followed. */
static void test_redirect_to_failed_node(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, C);
	fakepeer_add(C, OK "-MOVED 1234 " A "\r\n");
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), A "|" C);
	assert_log_is(2, "3 redis " C ": redirect: to a node that failed already\n");
}

/* Seeds down, then one that answers; all down: the fallback. */
static void test_seeds_in_order(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, B);
	fakepeer_add(B, OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), A "|" B);
	assert_log_is(1, "3 redis " A ": cannot connect");
	assert_string_equal(cached(&o), B);

	teardown(state);
	setup(state);
	cluster(&o, A, B);
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), A "|" B);
	assert_log_is(2, "3 redis " B ": cannot connect");
}

/* Redirects that do not parse, or that the node does not honour: one LOG_ERR naming the
   reply, one attempt, nothing remembered (once tests/suites/garbage.sh's RMODES). */
static void test_bad_redirects(void **state)
{
	static const char host300[] =
	    "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
	    "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
	    "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
	    "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh";
	static const struct {
		const char *reply, *log;
	} cases[] = {
		{ "-MOVED\r\n", "bad redirect: MOVED\n" },
		{ "-ASK\r\n", "bad redirect: ASK\n" },
		{ "-MOVED 12 nohostport\r\n", "bad redirect: MOVED 12 nohostport\n" },
		{ "-MOVED 12 127.0.0.1:99999\r\n", "bad redirect: MOVED 12 127.0.0.1:99999\n" },
		{ "-MOVED 12 127.0.0.1:0\r\n", "bad redirect: MOVED 12 127.0.0.1:0\n" },
		{ "-MOVED 12 bad host:1\r\n", "bad redirect: MOVED 12 bad host:1\n" },
		{ "-MOVED 12 localhost:7002\r\n", "bad redirect: MOVED 12 localhost:7002\n" },
		{ "-MOVED  127.0.0.1:1\r\n", "bad redirect: MOVED  127.0.0.1:1\n" },
		{ "-ASK x :0\r\n", "bad redirect: ASK x :0\n" },
		{ "-MOVEDX 12 " B "\r\n", "script failed: MOVEDX 12 " B "\n" },
		{ NULL, "bad redirect: MOVED 12 hhhh" }, /* a 300-byte host */
	};
	char reply[400];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct opt o;

		teardown(state);
		setup(state);
		cluster(&o, A, NULL);
		if (cases[i].reply == NULL)
			snprintf(reply, sizeof(reply), OK "-MOVED 12 %s:1\r\n", host300);
		else
			snprintf(reply, sizeof(reply), OK "%s", cases[i].reply);
		fakepeer_add(A, reply);
		fakepeer_add(B, OK OK ADMIT);
		if (reserve(&o) != SLOT_UNAVAILABLE)
			fail_msg("case %zu was followed: %s", i, reply);
		assert_string_equal(fakepeer_path(), A);
		assert_cmds(0, "READWRITE EVALSHA");
		assert_log_is(1, cases[i].log);
		assert_string_equal(cached(&o), "");
	}
}

/* ASKING refused by the node ASK named: that node fails, logged. */
static void test_asking_refused(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	fakepeer_add(A, OK "-ASK 1234 " B "\r\n");
	fakepeer_add(B, OK "-ERR not now\r\n" ADMIT);
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), A "|" B);
	assert_cmds(1, "READWRITE ASKING EVALSHA");
	assert_log_is(1, "3 redis " B ": ASKING: ERR not now\n");
	assert_string_equal(cached(&o), "");
}

/* A remembered node is used for a minute, then the seeds are asked again. */
static void test_cluster_cache_age(void **state)
{
	struct opt o;

	(void)state;
	cluster(&o, A, NULL);
	cache(&o, C, 10);
	fakepeer_add(C, OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), C);

	teardown(state);
	setup(state);
	cluster(&o, A, NULL);
	cache(&o, C, 120);
	fakepeer_add(A, OK ADMIT);
	fakepeer_add(C, OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), A);
	assert_string_equal(cached(&o), A);
}

/* A node that is no cluster member (READWRITE refused: a standalone Redis) fails, whatever
   the script answered behind it, and the next seed is tried. */
static void test_cluster_standalone_refused(void **state)
{
	static const char standalone[] =
	    "-ERR This instance has cluster support disabled\r\n" ADMIT;
	struct opt o;

	(void)state;
	cluster(&o, A, B);
	fakepeer_add(A, standalone);
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), A "|" B);
	assert_cmds(0, "READWRITE EVALSHA");
	assert_log_is(2, "3 redis " A ": READWRITE: ERR This instance has cluster support "
			 "disabled\n");

	teardown(state);
	setup(state);
	cluster(&o, A, B);
	cache(&o, C, 5);
	fakepeer_add(C, standalone);
	fakepeer_add(A, standalone);
	fakepeer_add(B, OK ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), C "|" A "|" B);
	assert_string_equal(cached(&o), B);
}

/* Sentinel: a master cached in the last minute is asked first (ROLE ahead of the script),
   and the sentinels are not asked. */
static void test_sentinel_cached_master(void **state)
{
	struct opt o;
	const char *sent;

	(void)state;
	sentinel(&o, S1, NULL);
	cache(&o, M1, 10);
	fakepeer_add(S1, NAMES_M2);
	fakepeer_add(M1, ROLE_MASTER ADMIT);
	fakepeer_add(M2, ROLE_MASTER ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), M1);
	sent = fakepeer_sent(0);
	assert_cmds(0, "ROLE EVALSHA");
	assert_null(cmd_at(sent, "READWRITE"));
	assert_string_equal(cached(&o), M1);
	assert_log_is(0, NULL);
}

/* A cached master that is stale (or written an hour ahead: the clock was stepped back),
   garbled, unsafe (others could write it, or it is not the uid's own file) or down: the
   sentinel is asked, and its master replaces the entry (once tests/suites/garbage.sh's master
   cache cases). */
static void test_sentinel_cache_ignored(void **state)
{
	enum {
		STALE,
		FUTURE,
		GARBLED,
		NO_NEWLINE,
		MODE_0666,
		MODE_0620,
		SYMLINK,
		OWNER,
		DOWN,
		N_HOW
	};
	static const char *const how[] = { "stale",	 "future",    "garbled",
					   "no newline", "mode 0666", "mode 0620",
					   "symlink",	 "owner",     "down" };

	for (int i = 0; i < N_HOW; i++) {
		struct opt o;
		char name[NCACHE_NAME_MAX], path[OPT_DIR_MAX + NCACHE_NAME_MAX + 2];
		char target[OPT_DIR_MAX + 16];
		struct stat st;

		teardown(state);
		setup(state);
		if (i == OWNER && geteuid() != 0)
			continue;
		sentinel(&o, S1, NULL);
		entry_name(&o, name);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		snprintf(target, sizeof(target), "%s/target", dir);
		switch (i) {
		case GARBLED:
			write_file(name, "not an endpoint\n", 0600, 0);
			break;
		case NO_NEWLINE:
			write_file(name, M1, 0600, 0);
			break;
		case SYMLINK:
			write_file("target", M1 "\n", 0600, 0);
			assert_int_equal(symlink(target, path), 0);
			break;
		default:
			cache(&o, M1, i == STALE ? 120 : i == FUTURE ? -3600 : 1);
			break;
		}
		if (i == MODE_0666 || i == MODE_0620)
			assert_int_equal(chmod(path, i == MODE_0666 ? 0666 : 0620), 0);
		if (i == OWNER)
			assert_int_equal(chown(path, 65534, 65534), 0);
		if (i != DOWN)
			fakepeer_add(M1, ROLE_MASTER ADMIT);
		fakepeer_add(S1, NAMES_M2);
		fakepeer_add(M2, ROLE_MASTER ADMIT);
		if (reserve(&o) != SLOT_ADMIT)
			fail_msg("%s cache: %s", how[i], fakepeer_log());
		if (strcmp(fakepeer_path(), i == DOWN ? M1 "|" S1 "|" M2 : S1 "|" M2) != 0)
			fail_msg("%s cache: went %s", how[i], fakepeer_path());
		assert_cmds(i == DOWN ? 1 : 0, "SENTINEL");
		assert_int_equal(lstat(path, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(st.st_mode & 07777, 0600);
		assert_int_equal(st.st_uid, geteuid());
		assert_string_equal(cached(&o), M2);
		assert_log_is(i == DOWN ? 1 : 0, NULL);
		if (i == SYMLINK)
			assert_int_equal(ncache_get(dir, "target", 0, &o.url.nodes[1]), 0);
		if (i == SYMLINK)
			assert_int_equal(o.url.nodes[1].port, 6391); /* the target not written */
	}
}

/* A master whose ROLE is not master: the script's answer behind it is not taken, and the
   next sentinel is asked; with none left, the login has no decision. */
static void test_role_replica(void **state)
{
	struct opt o;

	(void)state;
	sentinel(&o, S1, S2);
	fakepeer_add(S1, NAMES_M1);
	fakepeer_add(M1, ROLE_SLAVE ADMIT);
	fakepeer_add(S2, NAMES_M2);
	fakepeer_add(M2, ROLE_MASTER ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), S1 "|" M1 "|" S2 "|" M2);
	assert_log_is(0, "5 redis " M1 ": not a master\n");
	assert_string_equal(cached(&o), M2);

	teardown(state);
	setup(state);
	sentinel(&o, S1, NULL);
	fakepeer_add(S1, NAMES_M1);
	fakepeer_add(M1, ROLE_SLAVE ADMIT);
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), S1 "|" M1);
	assert_log_is(1, "3 sentinel: no master to use: every one named failed\n");
	assert_string_equal(cached(&o), "");
}

/* ROLE answers other than a master's (once tests/suites/garbage.sh's role-* modes). */
static void test_role_not_master(void **state)
{
	static const struct {
		const char *role;
		int errs;
		const char *log;
	} cases[] = {
		{ "+OK\r\n", 1, "5 redis " M1 ": not a master\n" },
		{ ROLE_SLAVE, 1, "5 redis " M1 ": not a master\n" },
		{ "*0\r\n", 1, "5 redis " M1 ": not a master\n" },
		{ "*1\r\n:1\r\n", 1, "5 redis " M1 ": not a master\n" },
		{ "-ERR unknown command 'ROLE'\r\n", 2,
		  "3 redis " M1 ": ROLE: ERR unknown command 'ROLE'\n" },
	};
	char reply[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct opt o;

		teardown(state);
		setup(state);
		sentinel(&o, S1, NULL);
		fakepeer_add(S1, NAMES_M1);
		snprintf(reply, sizeof(reply), "%s" ADMIT, cases[i].role);
		fakepeer_add(M1, reply);
		if (reserve(&o) != SLOT_UNAVAILABLE)
			fail_msg("case %zu was taken as a master", i);
		assert_string_equal(fakepeer_path(), S1 "|" M1);
		assert_cmds(0, "SENTINEL");
		assert_cmds(1, "ROLE EVALSHA");
		assert_log_is(cases[i].errs, cases[i].log);
		assert_non_null(strstr(fakepeer_log(), "no master to use: every one named failed"));
		assert_string_equal(cached(&o), "");
	}
}

/* The cached master failed: a sentinel naming it again is not followed to it twice. */
static void test_sentinel_names_failed_master(void **state)
{
	struct opt o;

	(void)state;
	sentinel(&o, S1, NULL);
	cache(&o, M1, 5);
	fakepeer_add(M1, ROLE_SLAVE ADMIT);
	fakepeer_add(M1, ROLE_SLAVE ADMIT);
	fakepeer_add(S1, NAMES_M1);
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), M1 "|" S1);
	assert_log_is(1, "3 sentinel: no master to use: every one named failed\n");
}

/* Sentinels down, or naming nothing usable, then one that works. */
static void test_sentinels_in_order(void **state)
{
	struct opt o;
	const char *nodes[] = { S1, S2, "127.0.0.1:26381" };

	(void)state;
	opts(&o, URL_BACKEND_SENTINEL, nodes, 3);
	fakepeer_add(S2, "*-1\r\n");
	fakepeer_add("127.0.0.1:26381", NAMES_M1);
	fakepeer_add(M1, ROLE_MASTER ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_string_equal(fakepeer_path(), S1 "|" S2 "|127.0.0.1:26381|" M1);
	assert_log_is(2, "3 sentinel " S2 ": get-master-addr-by-name: no master named "
			 "\"mymaster\"\n");
	assert_non_null(strstr(fakepeer_log(), "3 sentinel " S1 ": cannot connect"));
	assert_string_equal(cached(&o), M1);
}

/* A sentinel's answers that name no usable master: one LOG_ERR naming it, then "no sentinel
   named one"; no master asked, nothing cached (once tests/suites/garbage.sh's SMODES). */
static void test_sentinel_garbage(void **state)
{
	static const char no_addr[] = "get-master-addr-by-name: not an IP address and port\n";
	static const struct {
		const char *reply;
		size_t n; /* 0: strlen */
		enum fakepeer_end end;
		const char *log;
	} cases[] = {
		{ "*-1\r\n", 0, FAKEPEER_OPEN,
		  "get-master-addr-by-name: no master named \"mymaster\"\n" },
		{ "-ERR No such master with that name\r\n", 0, FAKEPEER_OPEN,
		  "get-master-addr-by-name: ERR No such master with that name\n" },
		{ ":6379\r\n", 0, FAKEPEER_OPEN, no_addr },
		{ "*3\r\n$9\r\n127.0.0.1\r\n$4\r\n6391\r\n$1\r\nx\r\n", 0, FAKEPEER_OPEN, no_addr },
		{ "*2\r\n:127\r\n:6391\r\n", 0, FAKEPEER_OPEN, no_addr },
		{ "*2\r\n$8\r\nbad host\r\n$4\r\n6391\r\n", 0, FAKEPEER_OPEN, no_addr },
		{ "*2\r\n$9\r\n127.0.0.1\r\n$8\r\nnotaport\r\n", 0, FAKEPEER_OPEN, no_addr },
		{ "*2\r\n$9\r\n127.0.0.1\r\n$1\r\n0\r\n", 0, FAKEPEER_OPEN, no_addr },
		{ "*2\r\n$9\r\nlocalhost\r\n$4\r\n6391\r\n", 0, FAKEPEER_OPEN, no_addr },
		{ "+OK\r\n", 0, FAKEPEER_OPEN, no_addr },
		{ "*2\r\n$9\r\n127.0.0.1\r\n", 0, FAKEPEER_EOF,
		  "get-master-addr-by-name: Server closed the connection\n" },
		{ "", 0, FAKEPEER_OPEN, "get-master-addr-by-name: timed out\n" },
		{ "$100000000\r\n", 0, FAKEPEER_OPEN,
		  "get-master-addr-by-name: reply too large\n" },
		{ "", 0, FAKEPEER_GONE,
		  "sending: the server closed the connection without a word (a TLS port? use "
		  "rediss://)\n" },
		{ NULL, 0, FAKEPEER_OPEN, no_addr }, /* a 300-byte host */
	};
	static char big[70000];
	char reply[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct opt o;
		const char *r = cases[i].reply;
		size_t n;

		teardown(state);
		setup(state);
		sentinel(&o, S1, NULL);
		o.timeout_us = 100000;
		if (r == NULL) {
			char host[301];

			memset(host, 'h', 300);
			host[300] = '\0';
			n = (size_t)snprintf(reply, sizeof(reply),
					     "*2\r\n$300\r\n%s\r\n$4\r\n6391\r\n", host);
			r = reply;
		} else {
			n = strlen(r);
		}
		if (strncmp(r, "$100000000", 10) == 0) {
			memset(big, 'x', sizeof(big));
			memcpy(big, r, n);
			r = big;
			n = sizeof(big);
		}
		fakepeer_add_n(S1, r, n, cases[i].end);
		fakepeer_add(M1, ROLE_MASTER ADMIT);
		if (reserve(&o) != SLOT_UNAVAILABLE)
			fail_msg("case %zu named a master", i);
		assert_string_equal(fakepeer_path(), S1);
		if (cases[i].log != NULL) {
			char want[200];

			snprintf(want, sizeof(want), "3 sentinel " S1 ": %s", cases[i].log);
			assert_log_is(2, want);
		} else {
			assert_log_is(2, "3 sentinel " S1 ": ");
		}
		assert_non_null(strstr(fakepeer_log(),
				       "3 sentinel: no master to use: no sentinel named one\n"));
		assert_string_equal(cached(&o), "");
	}
}

/* sentinel_password: AUTH goes to the sentinel first, and a reply other than OK stops it. */
static void test_sentinel_auth(void **state)
{
	struct opt o;

	(void)state;
	sentinel(&o, S1, NULL);
	strcpy(o.sentinel_password, "secret");
	o.has_sentinel_password = true;
	fakepeer_add(S1, ":1\r\n" NAMES_M1);
	fakepeer_add(M1, ROLE_MASTER ADMIT);
	assert_int_equal(reserve(&o), SLOT_UNAVAILABLE);
	assert_string_equal(fakepeer_path(), S1);
	assert_cmds(0, "AUTH SENTINEL");
	assert_log_is(2, "3 sentinel " S1 ": AUTH: unexpected reply\n");

	teardown(state);
	setup(state);
	sentinel(&o, S1, NULL);
	strcpy(o.sentinel_password, "secret");
	o.has_sentinel_password = true;
	fakepeer_add(S1, OK NAMES_M1);
	fakepeer_add(M1, ROLE_MASTER ADMIT);
	assert_int_equal(reserve(&o), SLOT_ADMIT);
	assert_cmds(1, "ROLE EVALSHA"); /* the master gets no sentinel password */
}

/* What ncache_get reads from the entry "e" under dir, "" for nothing to trust. */
static const char *get(int max_age_s)
{
	static char out[URL_HOST_MAX + 16];
	struct url_node n = { .host = "untouched", .port = 1 };

	out[0] = '\0';
	if (ncache_get(dir, "e", max_age_s, &n) == 0)
		snprintf(out, sizeof(out), "%s:%d", n.host, n.port);
	return out;
}

/* put then get: the node comes back, in a file of the uid's own, mode 0600, and nothing
   else is left behind; a second put replaces it. */
static void test_ncache_round_trip(void **state)
{
	struct url_node n;
	char path[OPT_DIR_MAX + 8];
	struct stat st;
	char cmd[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/sub", dir);
	node_of("10.0.0.7:6380", &n);
	assert_int_equal(ncache_put(path, "e", &n), 0); /* creates the directory */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(ncache_put(dir, "e", &n), 0);
	assert_string_equal(get(60), "10.0.0.7:6380");
	snprintf(path, sizeof(path), "%s/e", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, geteuid());
	node_of("::1:7000", &n);
	assert_int_equal(ncache_put(dir, "e", &n), 0);
	assert_string_equal(get(0), "::1:7000");
	/* e and sub: no temporary file left */
	snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) = 2", dir);
	assert_int_equal(system(cmd), 0);
}

/* An entry older than max_age_s is not used; 0 is no limit. */
static void test_ncache_max_age(void **state)
{
	(void)state;
	write_file("e", "127.0.0.1:7001\n", 0600, 30);
	assert_string_equal(get(60), "127.0.0.1:7001");
	assert_string_equal(get(10), "");
	assert_string_equal(get(0), "127.0.0.1:7001");
	/* Written an hour ahead of now (the clock was stepped back since): its age is unknown,
	   and it must not outlive max_age by the size of the step. */
	write_file("e", "127.0.0.1:7001\n", 0600, -3600);
	assert_string_equal(get(60), "");
	assert_string_equal(get(0), "127.0.0.1:7001");
}

/* Contents that are no "address:port\n" are ignored. */
static void test_ncache_garbled(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"not an endpoint\n",
		"127.0.0.1:7001",
		"127.0.0.1\n",
		"127.0.0.1:0\n",
		"127.0.0.1:65536\n",
		"localhost:7001\n",
		"127.0.0.1:7001\n\n",
		"127.0.0.1:7001x\n",
		" 127.0.0.1:7001\n",
	};
	char big[400];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file("e", bad[i], 0600, 0);
		if (get(0)[0] != '\0')
			fail_msg("entry %zu taken: \"%s\"", i, bad[i]);
	}
	memset(big, '1', sizeof(big));
	strcpy(big + sizeof(big) - 16, ":7001\n");
	write_file("e", big, 0600, 0);
	assert_string_equal(get(0), "");
}

/* A file others could have written, or not the uid's own, or not a plain file of one link,
   is ignored; so is every entry in a directory others can write. */
static void test_ncache_unsafe(void **state)
{
	char path[OPT_DIR_MAX + 8], other[OPT_DIR_MAX + 8];

	(void)state;
	snprintf(path, sizeof(path), "%s/e", dir);
	snprintf(other, sizeof(other), "%s/o", dir);
	write_file("e", "127.0.0.1:7001\n", 0600, 0);
	assert_string_equal(get(0), "127.0.0.1:7001"); /* the control */
	assert_int_equal(chmod(path, 0666), 0);
	assert_string_equal(get(0), "");
	assert_int_equal(chmod(path, 0620), 0);
	assert_string_equal(get(0), "");
	assert_int_equal(chmod(path, 0602), 0);
	assert_string_equal(get(0), "");
	assert_int_equal(chmod(path, 0600), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_string_equal(get(0), "");
		assert_int_equal(chown(path, 0, 0), 0);
	}
	assert_int_equal(link(path, other), 0);
	assert_string_equal(get(0), ""); /* two links */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(other, path), 0);
	assert_string_equal(get(0), "");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_string_equal(get(0), "");
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rename(other, path), 0);
	assert_string_equal(get(0), "127.0.0.1:7001");
	assert_int_equal(chmod(dir, 0777), 0);
	assert_string_equal(get(0), "");
	assert_int_equal(chmod(dir, 0700), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(dir, 65534, 65534), 0);
		assert_string_equal(get(0), "");
		assert_int_equal(chown(dir, 0, 0), 0);
	}
	assert_string_equal(get(0), "127.0.0.1:7001");
}

/* put refuses a directory others can write, and does not follow a symlink at the entry. */
static void test_ncache_put_unsafe(void **state)
{
	char path[OPT_DIR_MAX + 8], target[OPT_DIR_MAX + 8];
	struct url_node n;
	struct stat st;

	(void)state;
	node_of("127.0.0.1:7001", &n);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(ncache_put(dir, "e", &n), -1);
	assert_int_equal(chmod(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/e", dir);
	snprintf(target, sizeof(target), "%s/t", dir);
	write_file("t", "127.0.0.1:9999\n", 0600, 0);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(ncache_put(dir, "e", &n), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode)); /* replaced, not written through */
	assert_string_equal(get(0), "127.0.0.1:7001");
	assert_int_equal(ncache_get(dir, "t", 0, &n), 0);
	assert_int_equal(n.port, 9999);
}

/* Entries of stacks that name other servers, or another master, do not collide. */
static void test_ncache_names(void **state)
{
	struct opt a, b;
	char na[NCACHE_NAME_MAX], nb[NCACHE_NAME_MAX];

	(void)state;
	sentinel(&a, S1, NULL);
	sentinel(&b, S1, NULL);
	ncache_name(&a.url, "master", na, sizeof(na));
	ncache_name(&b.url, "master", nb, sizeof(nb));
	assert_string_equal(na, nb);
	assert_int_equal(strncmp(na, "node.", 5), 0);
	assert_non_null(strstr(na, ".master"));
	strcpy(b.url.master, "other");
	ncache_name(&b.url, "master", nb, sizeof(nb));
	assert_string_not_equal(na, nb);
	sentinel(&b, S2, NULL);
	ncache_name(&b.url, "master", nb, sizeof(nb));
	assert_string_not_equal(na, nb);
	cluster(&b, S1, NULL);
	ncache_name(&b.url, "master", nb, sizeof(nb));
	assert_string_not_equal(na, nb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_moved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_moved_same_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_moved_ipv6, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask_keeps_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_moved_then_ask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redirect_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redirect_to_down_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redirect_to_failed_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seeds_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_redirects, setup, teardown),
		cmocka_unit_test_setup_teardown(test_asking_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cluster_cache_age, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cluster_standalone_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sentinel_cached_master, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sentinel_cache_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_role_replica, setup, teardown),
		cmocka_unit_test_setup_teardown(test_role_not_master, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sentinel_names_failed_master, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sentinels_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sentinel_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sentinel_auth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ncache_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ncache_max_age, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ncache_garbled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ncache_unsafe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ncache_put_unsafe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ncache_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserve_asked_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserve_asked_again_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserve_asked_again_within_budget, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_not_asked_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_asked_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_asked_again_within_until, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_said_already_traced, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
